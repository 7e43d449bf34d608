/* predict_out — what predict and ensemble share on the command line: a growing text
 * buffer, CSV fields, the progress bar, reading a model, and the prediction table's
 * rows (label, class, probability, then the next best classes). */
#ifndef PT_PREDICT_OUT_H
#define PT_PREDICT_OUT_H

#include <stddef.h>
#include <stdio.h>

#include "infer/infer.h"

typedef struct po_buf {
    char *s;
    size_t len, cap;
    int oom;
} po_buf;

void po_printf(po_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A CSV field: quoted (quotes doubled) when it holds a comma, a quote or a line break. */
void po_field(po_buf *b, const char *s);
/* To path atomically, or to stdout when path is NULL. 0, or -1 (said on stderr). */
int po_write(const po_buf *b, const char *path);

/* The header of the table: first column's name, then label,class,probability and
 * top2_class,top2_probability ... up to top. */
void po_header(po_buf *b, const char *first, int top);
/* One row: key, then the classes of probs (k of them) by rank, top of them. */
void po_row(po_buf *b, const char *key, const double *probs, char *const *names, int k,
            int top);

/* Rows as they are made (issue 42: an interrupted predict keeps what it did): to
 * stdout, flushed after each put, or to PATH.partial, renamed to PATH by
 * po_sink_close(complete 1) and left as PATH.partial otherwise, so that a file at
 * PATH is always a whole run's and an interrupted one says it is partial. */
typedef struct po_sink {
    FILE *f;
    const char *path;           /* NULL: stdout */
    char partial[4200];         /* path + ".partial" */
    long long rows;             /* rows put */
    int bad;                    /* a write failed (said) */
} po_sink;
/* 0, or -1 (said on stderr) when PATH.partial cannot be created. */
int po_sink_open(po_sink *s, const char *path);
/* b's text (then emptied), rows of it; flushed. 0, or -1 (said once). */
int po_sink_put(po_sink *s, po_buf *b, long long rows);
/* The file closed; complete: renamed into place. 0, or -1 (said). */
int po_sink_close(po_sink *s, int complete);
/* What holds the rows: PATH.partial, PATH or "stdout". */
const char *po_sink_name(const po_sink *s, int complete);

/* n rows of d float32 values as a .npy file ([n, d], little-endian '<f4', C order)
 * at path, atomically. 0, or -1 (said). */
int po_write_npy(const char *path, const double *rows, long long n, int d);

/* A progress bar on stderr (images, img/s, ETA) when stderr is a terminal: pass as
 * prd_opts.on_batch with a po_progress as ctx; po_progress_end ends its line. */
typedef struct po_progress {
    int on;
    double t0, last;
    const char *what;
} po_progress;
void po_progress_init(po_progress *p, const char *what);
void po_progress_cb(void *ctx, long long done, long long total);
void po_progress_end(po_progress *p);

#endif
