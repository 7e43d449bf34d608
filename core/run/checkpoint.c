#include "run/checkpoint.h"

#include <stdlib.h>
#include <string.h>

#include "base/le.h"
#include "base/util.h"
#include "base/crc32c.h"

#define MAGIC "PETALCK1"
#define VERSION 1

enum {
    SEC_PARAMS = 1,
    SEC_BUFFERS = 2,
    SEC_OPT_M = 3,
    SEC_OPT_V = 4,
    SEC_PROGRESS = 5,
    SEC_CONFUSION = 6,
    SEC_HISTORY = 7,
    SEC_CONFIG = 8,
    SEC_EMA = 9, /* the moving average of the weights, then of the buffers (--ema) */
    SEC_BEST = 10, /* early stopping's state (ckpt_best) */
};

typedef struct out_buf {
    uint8_t *p;
    size_t n, cap;
    int oom;
} out_buf;

static void put(out_buf *b, const void *data, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->n + n)
            nc *= 2;
        uint8_t *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    if (n)
        memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_u32(out_buf *b, uint32_t v)
{
    uint8_t x[4];
    le_put_u32(x, v);
    put(b, x, 4);
}

static void put_u64(out_buf *b, uint64_t v)
{
    uint8_t x[8];
    le_put_u64(x, v);
    put(b, x, 8);
}

static void section(out_buf *b, uint32_t tag, const void *data, size_t n)
{
    put_u32(b, tag);
    put_u64(b, n);
    put(b, data, n);
}

int ckpt_save(const char *path, const ckpt_data *d, pt_err *e)
{
    out_buf b = { 0 };
    uint32_t nsec = 5 + (d->opt_v ? 1 : 0) + (d->confusion ? 1 : 0) + (d->config ? 1 : 0) +
                    (d->ema ? 1 : 0) + (d->best ? 1 : 0);
    put(&b, MAGIC, 8);
    put_u32(&b, VERSION);
    put_u32(&b, nsec);
    section(&b, SEC_PARAMS, d->params, d->n_params * sizeof(float));
    section(&b, SEC_BUFFERS, d->buffers, d->n_buffers * sizeof(float));
    section(&b, SEC_OPT_M, d->opt_m, d->n_opt * sizeof(float));
    if (d->opt_v)
        section(&b, SEC_OPT_V, d->opt_v, d->n_opt * sizeof(float));
    /* Little-endian hosts only (x86-64, arm64); the magic's version would change if
     * that ever had to differ. */
    section(&b, SEC_PROGRESS, &d->progress, sizeof d->progress);
    if (d->confusion) {
        put_u32(&b, SEC_CONFUSION);
        put_u64(&b, 4 + (size_t)d->n_classes * d->n_classes * sizeof(long long));
        put_u32(&b, (uint32_t)d->n_classes);
        put(&b, d->confusion, (size_t)d->n_classes * d->n_classes * sizeof(long long));
    }
    section(&b, SEC_HISTORY, d->history, d->history_bytes);
    if (d->config)
        section(&b, SEC_CONFIG, d->config, strlen(d->config));
    if (d->ema)
        section(&b, SEC_EMA, d->ema, d->n_ema * sizeof(float));
    if (d->best)
        section(&b, SEC_BEST, d->best, sizeof *d->best);
    put_u32(&b, crc32c(b.p, b.n));
    if (b.oom) {
        free(b.p);
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "out of memory building the checkpoint");
    }
    int rc = util_write_file_atomic(path, b.p, b.n, e);
    free(b.p);
    return rc;
}

static int want_size(const char *path, uint32_t tag, uint64_t len, size_t want, long long at,
                     pt_err *e)
{
    if (len != want)
        return err_set(e, PT_EFORMAT, path, PT_NO_RECORD, at,
                       "checkpoint section %u holds %llu bytes, this model needs %zu (a different "
                       "model or configuration?)",
                       tag, (unsigned long long)len, want);
    return PT_OK;
}

/* The whole file, its magic, checksum and version checked; *data is the caller's. */
static int read_checked(const char *path, uint8_t **data, size_t *len, pt_err *e)
{
    int rc = util_read_file(path, data, len, e);
    if (rc != PT_OK)
        return rc;
    if (*len < 20 || memcmp(*data, MAGIC, 8) != 0) {
        rc = err_set(e, PT_EFORMAT, path, PT_NO_RECORD, 0, "not a petal-tui checkpoint");
    } else {
        uint32_t stored = le_get_u32(*data + *len - 4), have = crc32c(*data, *len - 4);
        uint32_t version = le_get_u32(*data + 8);
        if (stored != have)
            rc = err_set(e, PT_ECRC, path, PT_NO_RECORD, (long long)(*len - 4),
                         "checkpoint checksum mismatch (stored 0x%08x, computed 0x%08x): the "
                         "file is damaged",
                         stored, have);
        else if (version != VERSION)
            rc = err_set(e, PT_EFORMAT, path, PT_NO_RECORD, 8,
                         "checkpoint version %u, expected %u", version, VERSION);
    }
    if (rc != PT_OK) {
        free(*data);
        *data = NULL;
    }
    return rc;
}

/* The header of the section at offset at (tag, body length), checked to fit before
 * end. */
static int section_at(const char *path, const uint8_t *data, size_t at, size_t end,
                      uint32_t *tag, uint64_t *sl, pt_err *e)
{
    if (at + 12 > end)
        return err_set(e, PT_EFORMAT, path, PT_NO_RECORD, (long long)at, "section header cut off");
    *tag = le_get_u32(data + at);
    *sl = le_get_u64(data + at + 4);
    if (*sl > end - (at + 12))
        return err_set(e, PT_EFORMAT, path, PT_NO_RECORD, (long long)at,
                       "section %u runs past the end", *tag);
    return PT_OK;
}

/* Walks every section of a checked file's bytes (each must lie within the file) and
 * gives the last one tagged want: its payload's offset (*off, past the 12-byte
 * header) and size; *off 0 when the file has none. */
static int find_section(const char *path, const uint8_t *data, size_t len, uint32_t want,
                        size_t *off, uint64_t *size, pt_err *e)
{
    uint32_t nsec = le_get_u32(data + 12);
    size_t at = 16, end = len - 4;
    *off = 0;
    *size = 0;
    for (uint32_t s = 0; s < nsec; s++) {
        uint32_t tag;
        uint64_t sl;
        int rc = section_at(path, data, at, end, &tag, &sl, e);
        if (rc != PT_OK)
            return rc;
        if (tag == want) {
            *off = at + 12;
            *size = sl;
        }
        at += 12 + sl;
    }
    return PT_OK;
}

int ckpt_peek_classes(const char *path, int *n_classes, pt_err *e)
{
    uint8_t *data;
    size_t len, off;
    uint64_t sl;
    int rc = read_checked(path, &data, &len, e);
    if (rc != PT_OK)
        return rc;
    *n_classes = 0;
    rc = find_section(path, data, len, SEC_CONFUSION, &off, &sl, e);
    if (rc == PT_OK && off && sl >= 4)
        *n_classes = (int)le_get_u32(data + off);
    free(data);
    if (rc == PT_OK && (*n_classes < 1 || *n_classes > 65536))
        rc = err_set(e, PT_EFORMAT, path, PT_NO_RECORD, PT_NO_OFFSET,
                     "checkpoint does not say its class count");
    return rc;
}

int ckpt_peek(const char *path, ckpt_progress *progress, pt_err *e)
{
    uint8_t *data;
    size_t len, off;
    uint64_t sl;
    int rc = read_checked(path, &data, &len, e);
    if (rc != PT_OK)
        return rc;
    rc = find_section(path, data, len, SEC_PROGRESS, &off, &sl, e);
    if (rc == PT_OK && off &&
        (rc = want_size(path, SEC_PROGRESS, sl, sizeof *progress, (long long)(off - 12), e)) ==
            PT_OK)
        memcpy(progress, data + off, sizeof *progress);
    free(data);
    if (rc == PT_OK && !off)
        rc = err_set(e, PT_EFORMAT, path, PT_NO_RECORD, PT_NO_OFFSET, "checkpoint lacks progress");
    return rc;
}

/* A section whose copy the loaded checkpoint owns (malloc'd into out): the confusion
 * matrix, the history, the configuration text, the moving average. at: the section's
 * offset, for errors. */
static int load_owned(const char *path, uint32_t tag, const uint8_t *p, uint64_t sl,
                      long long at, ckpt_loaded *out, pt_err *e)
{
    int rc = PT_OK;
    switch (tag) {
    case SEC_CONFUSION: {
        uint32_t k = sl >= 4 ? le_get_u32(p) : 0;
        if (k == 0 || k > 65536 || sl != 4 + (uint64_t)k * k * sizeof(long long)) {
            rc = err_set(e, PT_EFORMAT, path, PT_NO_RECORD, at,
                         "bad confusion matrix section");
            break;
        }
        out->confusion = malloc((size_t)k * k * sizeof(long long));
        if (!out->confusion) {
            rc = err_set(e, PT_ENOMEM, path, PT_NO_RECORD, at, "out of memory");
            break;
        }
        memcpy(out->confusion, p + 4, (size_t)k * k * sizeof(long long));
        out->n_classes = (int)k;
        break;
    }
    case SEC_HISTORY:
        out->history = malloc(sl ? sl : 1);
        if (!out->history) {
            rc = err_set(e, PT_ENOMEM, path, PT_NO_RECORD, at, "out of memory");
            break;
        }
        memcpy(out->history, p, sl);
        out->history_bytes = sl;
        break;
    case SEC_CONFIG:
        out->config = malloc(sl + 1);
        if (!out->config) {
            rc = err_set(e, PT_ENOMEM, path, PT_NO_RECORD, at, "out of memory");
            break;
        }
        memcpy(out->config, p, sl);
        out->config[sl] = '\0';
        break;
    case SEC_EMA:
        if (sl % sizeof(float) != 0) {
            rc = err_set(e, PT_EFORMAT, path, PT_NO_RECORD, at,
                         "bad moving-average section");
            break;
        }
        out->ema = malloc(sl ? sl : 1);
        if (!out->ema) {
            rc = err_set(e, PT_ENOMEM, path, PT_NO_RECORD, at, "out of memory");
            break;
        }
        memcpy(out->ema, p, sl);
        out->n_ema = sl / sizeof(float);
        break;
    default:
        break;
    }
    return rc;
}

int ckpt_load(const char *path, float *params, size_t n_params, float *buffers,
              size_t n_buffers, float *opt_m, float *opt_v, size_t n_opt, ckpt_loaded *out,
              pt_err *e)
{
    memset(out, 0, sizeof *out);
    uint8_t *data;
    size_t len;
    int rc = read_checked(path, &data, &len, e);
    if (rc != PT_OK)
        return rc;
    uint32_t nsec = le_get_u32(data + 12);
    size_t at = 16, end = len - 4;
    int seen_params = 0, seen_progress = 0;
    unsigned seen = 0; /* the known sections met, one bit per tag */
    rc = PT_OK;
    for (uint32_t s = 0; s < nsec && rc == PT_OK; s++) {
        uint32_t tag;
        uint64_t sl;
        if ((rc = section_at(path, data, at, end, &tag, &sl, e)) != PT_OK)
            break;
        size_t body = at + 12;
        const uint8_t *p = data + body;
        if (tag >= SEC_PARAMS && tag <= SEC_BEST) {
            /* A writer puts each section once; a second copy is damage. */
            if (seen & (1u << tag)) {
                rc = err_set(e, PT_EFORMAT, path, PT_NO_RECORD, (long long)at,
                             "checkpoint section %u appears twice", tag);
                break;
            }
            seen |= 1u << tag;
        }
        switch (tag) {
        case SEC_PARAMS:
            if ((rc = want_size(path, tag, sl, n_params * sizeof(float), (long long)at, e)) == PT_OK)
                memcpy(params, p, sl);
            seen_params = 1;
            break;
        case SEC_BUFFERS:
            if ((rc = want_size(path, tag, sl, n_buffers * sizeof(float), (long long)at, e)) == PT_OK)
                memcpy(buffers, p, sl);
            break;
        case SEC_OPT_M:
            if (opt_m &&
                (rc = want_size(path, tag, sl, n_opt * sizeof(float), (long long)at, e)) == PT_OK)
                memcpy(opt_m, p, sl);
            break;
        case SEC_OPT_V:
            if (opt_v && (rc = want_size(path, tag, sl, n_opt * sizeof(float), (long long)at, e)) ==
                             PT_OK)
                memcpy(opt_v, p, sl);
            break;
        case SEC_PROGRESS:
            if ((rc = want_size(path, tag, sl, sizeof out->progress, (long long)at, e)) == PT_OK)
                memcpy(&out->progress, p, sl);
            seen_progress = 1;
            break;
        case SEC_CONFUSION:
        case SEC_HISTORY:
        case SEC_CONFIG:
        case SEC_EMA:
            rc = load_owned(path, tag, p, sl, (long long)at, out, e);
            break;
        case SEC_BEST:
            if ((rc = want_size(path, tag, sl, sizeof out->best, (long long)at, e)) == PT_OK) {
                memcpy(&out->best, p, sl);
                out->has_best = 1;
            }
            break;
        default:
            break; /* unknown sections from newer writers are skipped */
        }
        at = body + sl;
    }
    free(data);
    if (rc == PT_OK && (!seen_params || !seen_progress))
        rc = err_set(e, PT_EFORMAT, path, PT_NO_RECORD, PT_NO_OFFSET,
                     "checkpoint lacks weights or progress");
    if (rc != PT_OK)
        ckpt_free_loaded(out);
    return rc;
}

void ckpt_free_loaded(ckpt_loaded *l)
{
    free(l->confusion);
    free(l->history);
    free(l->config);
    free(l->ema);
    memset(l, 0, sizeof *l);
}
