/* predict_out — see predict_out.h. */
#include "src/predict_out.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "infer/infer.h"

void po_printf(po_buf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)n;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

void po_field(po_buf *b, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        po_printf(b, "%s", s);
        return;
    }
    po_printf(b, "\"");
    for (const char *q = s; *q; q++)
        po_printf(b, *q == '"' ? "\"\"" : "%c", *q);
    po_printf(b, "\"");
}

int po_write(const po_buf *b, const char *path)
{
    if (b->oom) {
        fprintf(stderr, "petal-tui: out of memory for the output\n");
        return -1;
    }
    if (!path) {
        if (b->len && fwrite(b->s, 1, b->len, stdout) != b->len) {
            fprintf(stderr, "petal-tui: cannot write the output\n");
            return -1;
        }
        return fflush(stdout) == 0 ? 0 : -1;
    }
    pt_err e;
    if (util_write_file_atomic(path, b->s ? b->s : "", b->len, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return -1;
    }
    return 0;
}

void po_header(po_buf *b, const char *first, int top)
{
    po_printf(b, "%s,label,class,probability", first);
    for (int t = 2; t <= top; t++)
        po_printf(b, ",top%d_class,top%d_probability", t, t);
    po_printf(b, "\n");
}

void po_row(po_buf *b, const char *key, const double *probs, char *const *names, int k, int top)
{
    /* The top classes, the first of equals first. */
    int order[top > 0 ? top : 1];
    inf_topk(probs, k, top, order);
    po_field(b, key);
    po_printf(b, ",%d,", order[0]);
    po_field(b, names[order[0]]);
    po_printf(b, ",%.6f", probs[order[0]]);
    for (int t = 1; t < top; t++) {
        po_printf(b, ",");
        po_field(b, names[order[t]]);
        po_printf(b, ",%.6f", probs[order[t]]);
    }
    po_printf(b, "\n");
}

void po_progress_init(po_progress *p, const char *what)
{
    p->on = isatty(2);
    p->t0 = util_now();
    p->last = 0;
    p->what = what;
}

void po_progress_cb(void *ctx, long long done, long long total)
{
    po_progress *p = ctx;
    if (!p->on)
        return;
    double now = util_now(), s = now - p->t0;
    if (now - p->last < 0.1 && done < total)
        return;
    p->last = now;
    double rate = s > 0 ? done / s : 0;
    int width = 30, fill = total > 0 ? (int)(width * (double)done / total) : 0;
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    fprintf(stderr, "\r%s [%s] %lld/%lld images  %.0f img/s  ETA %.0f s ", p->what, bar, done,
            total, rate, rate > 0 && total > done ? (double)(total - done) / rate : 0.0);
    fflush(stderr);
}

void po_progress_end(po_progress *p)
{
    if (p->on)
        fprintf(stderr, "\n");
}
