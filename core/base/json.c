#include "base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void json_init(json_w *j, int pretty)
{
    memset(j, 0, sizeof *j);
    j->pretty = pretty;
    j->first[0] = 1;
}

void json_free(json_w *j)
{
    free(j->buf);
    j->buf = NULL;
}

char *json_take(json_w *j, size_t *len)
{
    if (j->oom) {
        json_free(j);
        return NULL;
    }
    char *b = j->buf;
    if (len)
        *len = j->n;
    j->buf = NULL;
    return b;
}

static void raw(json_w *j, const char *s, size_t n)
{
    if (j->oom)
        return;
    if (j->n + n + 1 > j->cap) {
        size_t nc = j->cap ? j->cap : 1024;
        while (nc < j->n + n + 1)
            nc *= 2;
        char *nb = realloc(j->buf, nc);
        if (!nb) {
            j->oom = 1;
            return;
        }
        j->buf = nb;
        j->cap = nc;
    }
    memcpy(j->buf + j->n, s, n);
    j->n += n;
    j->buf[j->n] = '\0';
}

static void indent(json_w *j)
{
    if (!j->pretty)
        return;
    raw(j, "\n", 1);
    for (int i = 0; i < j->depth; i++)
        raw(j, "  ", 2);
}

/* Before any value or key: the comma and line break that separate it. */
static void before(json_w *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (!j->first[j->depth])
        raw(j, ",", 1);
    j->first[j->depth] = 0;
    if (j->depth > 0)
        indent(j);
}

static void begin(json_w *j, const char *c)
{
    before(j);
    raw(j, c, 1);
    if (j->depth + 1 < JSON_MAX_DEPTH)
        j->depth++;
    j->first[j->depth] = 1;
}

static void close_(json_w *j, const char *c)
{
    int empty = j->first[j->depth];
    if (j->depth > 0)
        j->depth--;
    if (!empty)
        indent(j);
    raw(j, c, 1);
}

void json_obj(json_w *j) { begin(j, "{"); }
void json_obj_end(json_w *j) { close_(j, "}"); }
void json_arr(json_w *j) { begin(j, "["); }
void json_arr_end(json_w *j) { close_(j, "]"); }

static void quoted(json_w *j, const char *s)
{
    raw(j, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            raw(j, esc, 2);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            raw(j, esc, 6);
        } else {
            raw(j, (const char *)p, 1);
        }
    }
    raw(j, "\"", 1);
}

void json_key(json_w *j, const char *k)
{
    before(j);
    quoted(j, k);
    raw(j, j->pretty ? ": " : ":", j->pretty ? 2 : 1);
    j->after_key = 1;
}

void json_str(json_w *j, const char *s)
{
    before(j);
    quoted(j, s);
}

void json_num(json_w *j, double v)
{
    before(j);
    if (!isfinite(v)) {
        raw(j, "null", 4);
        return;
    }
    char t[40];
    int n = snprintf(t, sizeof t, "%.10g", v);
    raw(j, t, (size_t)n);
}

void json_int(json_w *j, long long v)
{
    before(j);
    char t[32];
    int n = snprintf(t, sizeof t, "%lld", v);
    raw(j, t, (size_t)n);
}
