/* predict_out — see predict_out.h. */
#include "src/predict_out.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
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

int po_sink_open(po_sink *s, const char *path)
{
    memset(s, 0, sizeof *s);
    s->path = path;
    if (!path) {
        s->f = stdout;
        return 0;
    }
    if (util_path(s->partial, sizeof s->partial, "%s.partial", path) != 0) {
        fprintf(stderr, "petal-tui: %s: path too long\n", path);
        return -1;
    }
    if (!(s->f = fopen(s->partial, "w"))) {
        fprintf(stderr, "petal-tui: %s: cannot write (as %s while predicting): %s\n", path,
                s->partial, strerror(errno));
        return -1;
    }
    return 0;
}

int po_sink_put(po_sink *s, po_buf *b, long long rows)
{
    if (b->oom && !s->bad) {
        fprintf(stderr, "petal-tui: out of memory for the output\n");
        s->bad = 1;
    }
    if (!s->bad && b->len &&
        (fwrite(b->s, 1, b->len, s->f) != b->len || fflush(s->f) != 0)) {
        fprintf(stderr, "petal-tui: %s: cannot write: %s\n", s->path ? s->partial : "stdout",
                strerror(errno));
        s->bad = 1;
    }
    b->len = 0;
    b->oom = 0;
    if (!s->bad)
        s->rows += rows;
    return s->bad ? -1 : 0;
}

int po_sink_close(po_sink *s, int complete)
{
    if (!s->f)
        return -1;
    if (!s->path) {
        s->f = NULL;
        return s->bad || fflush(stdout) != 0 ? -1 : 0;
    }
    int bad = s->bad || fflush(s->f) != 0 || fsync(fileno(s->f)) != 0;
    bad |= fclose(s->f) != 0;
    s->f = NULL;
    if (bad && !s->bad)
        fprintf(stderr, "petal-tui: %s: cannot write: %s\n", s->partial, strerror(errno));
    if (bad || !complete)
        return bad ? -1 : 0;
    if (rename(s->partial, s->path) != 0) {
        fprintf(stderr, "petal-tui: %s: cannot rename %s to it: %s\n", s->path, s->partial,
                strerror(errno));
        return -1;
    }
    return 0;
}

const char *po_sink_name(const po_sink *s, int complete)
{
    return !s->path ? "stdout" : complete ? s->path : s->partial;
}

int po_write_npy(const char *path, const double *rows, long long n, int d)
{
    char head[128];
    int hl = snprintf(head, sizeof head, "{'descr': '<f4', 'fortran_order': False, 'shape': "
                      "(%lld, %d), }", n, d);
    /* Magic, version 1.0, header length, then the header padded with spaces to a
     * multiple of 64 bytes and ended by a newline (the format's rule). */
    size_t total = 10 + (size_t)hl + 1, pad = (64 - total % 64) % 64;
    size_t hsize = (size_t)hl + pad + 1, len = 10 + hsize + (size_t)n * (size_t)d * 4;
    uint8_t *buf = malloc(len);
    if (!buf) {
        fprintf(stderr, "petal-tui: out of memory for the output\n");
        return -1;
    }
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (uint8_t)(hsize & 0xff);
    buf[9] = (uint8_t)(hsize >> 8);
    memcpy(buf + 10, head, (size_t)hl);
    memset(buf + 10 + hl, ' ', pad);
    buf[10 + hsize - 1] = '\n';
    uint8_t *o = buf + 10 + hsize;
    for (size_t i = 0; i < (size_t)n * (size_t)d; i++, o += 4) {
        float f = (float)rows[i];
        uint32_t u;
        memcpy(&u, &f, 4);
        o[0] = (uint8_t)u;
        o[1] = (uint8_t)(u >> 8);
        o[2] = (uint8_t)(u >> 16);
        o[3] = (uint8_t)(u >> 24);
    }
    pt_err e;
    int rc = util_write_file_atomic(path, buf, len, &e);
    free(buf);
    if (rc != PT_OK)
        fprintf(stderr, "petal-tui: %s\n", e.msg);
    return rc == PT_OK ? 0 : -1;
}
