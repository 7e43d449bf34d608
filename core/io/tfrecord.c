#include "io/tfrecord.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/le.h"
#include "base/util.h"
#include "base/crc32c.h"

/* The reader keeps its own buffer: large read()s, and payloads handed out in
 * place (no second copy, no stdio locking per record). */
#define CHUNK (256 * 1024)

struct tfr_reader {
    int fd;
    char path[512];
    long long size;      /* file size at open */
    long long pos;       /* offset of the next header */
    long long index;     /* index of the next record */
    long long last_index, last_offset;
    int verify;
    int dead;            /* framing lost or file ended: no more records */
    uint8_t *buf;        /* file bytes [buf_off, buf_off + len) */
    size_t cap, start, len;
    long long buf_off;   /* file offset of buf[0] */
};

int tfr_open(tfr_reader **out, const char *path, pt_err *e)
{
    *out = NULL;
    tfr_reader *r = calloc(1, sizeof *r);
    if (!r)
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    snprintf(r->path, sizeof r->path, "%s", path);
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        int saved = errno;
        free(r);
        return err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET, "cannot open: %s",
                       strerror(saved));
    }
    struct stat st;
    if (fstat(r->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(r->fd);
        free(r);
        return err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET, "not a regular file");
    }
    r->size = (long long)st.st_size;
    r->verify = 1;
    r->last_index = r->last_offset = -1;
    *out = r;
    return PT_OK;
}

void tfr_close(tfr_reader *r)
{
    if (!r)
        return;
    close(r->fd);
    free(r->buf);
    free(r);
}

long long tfr_index(const tfr_reader *r) { return r->last_index; }
long long tfr_offset(const tfr_reader *r) { return r->last_offset; }
long long tfr_file_size(const tfr_reader *r) { return r->size; }
const char *tfr_path(const tfr_reader *r) { return r->path; }
void tfr_set_verify(tfr_reader *r, int verify) { r->verify = verify; }

/* Make bytes [at, at + n) of the file available in the buffer; returns a pointer to
 * them, or NULL (with e set) when the file cannot give them. The caller has already
 * checked that the file is long enough. */
static const uint8_t *want(tfr_reader *r, long long at, size_t n, pt_err *e)
{
    long long have_lo = r->buf_off + (long long)r->start;
    long long have_hi = r->buf_off + (long long)(r->start + r->len);
    if (at >= have_lo && at + (long long)n <= have_hi)
        return r->buf + (at - r->buf_off);
    /* Keep what is already there from `at` on, move it to the front, read more. */
    size_t keep = 0;
    if (at >= have_lo && at < have_hi) {
        keep = (size_t)(have_hi - at);
        memmove(r->buf, r->buf + (at - r->buf_off), keep);
    }
    size_t need = n > CHUNK ? n : CHUNK;
    if (need > r->cap) {
        uint8_t *nb = realloc(r->buf, need);
        if (!nb) {
            err_set(e, PT_ENOMEM, r->path, r->index, at, "out of memory for %zu bytes", n);
            return NULL;
        }
        r->buf = nb;
        r->cap = need;
    }
    r->buf_off = at;
    r->start = 0;
    r->len = keep;
    while (r->len < n) {
        ssize_t got = pread(r->fd, r->buf + r->len, r->cap - r->len, at + (long long)r->len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            err_set(e, got < 0 ? PT_EIO : PT_ETRUNC, r->path, r->index, at, "%s",
                    got < 0 ? strerror(errno) : "file shrank while reading");
            return NULL;
        }
        r->len += (size_t)got;
    }
    return r->buf;
}

/* Read the header at r->pos. 1 ok (len filled), 0 clean end, < 0 error (reader dead). */
static int read_header(tfr_reader *r, uint64_t *len, pt_err *e)
{
    if (r->dead)
        return 0;
    long long at = r->pos;
    r->last_index = r->index;
    r->last_offset = at;
    if (at == r->size) {
        r->dead = 1;
        return 0;
    }
    if (r->size - at < TFR_HEADER_BYTES) {
        r->dead = 1;
        return err_set(e, PT_ETRUNC, r->path, r->index, at,
                       "truncated: file ends %lld bytes into a 12-byte record header",
                       r->size - at);
    }
    const uint8_t *hdr = want(r, at, TFR_HEADER_BYTES, e);
    if (!hdr) {
        r->dead = 1;
        return e ? e->code : PT_EIO;
    }
    uint64_t n = le_get_u64(hdr);
    uint32_t stored = le_get_u32(hdr + 8);
    uint32_t have = crc32c_mask(crc32c(hdr, 8));
    if (stored != have) {
        r->dead = 1;
        return err_set(e, PT_ECRC, r->path, r->index, at,
                       "length crc mismatch (stored 0x%08x, computed 0x%08x); framing lost, "
                       "rest of file skipped",
                       stored, have);
    }
    long long remain = r->size - at - TFR_HEADER_BYTES;
    if (n > (uint64_t)remain || (uint64_t)remain - n < TFR_FOOTER_BYTES) {
        r->dead = 1;
        return err_set(e, PT_ETRUNC, r->path, r->index, at,
                       "truncated: record of %llu bytes needs %llu more bytes, file has %lld",
                       (unsigned long long)n, (unsigned long long)n + TFR_FOOTER_BYTES, remain);
    }
    *len = n;
    return 1;
}

int tfr_next(tfr_reader *r, const uint8_t **data, size_t *len, pt_err *e)
{
    uint64_t n;
    int rc = read_header(r, &n, e);
    if (rc <= 0)
        return rc;
    long long at = r->pos;
    const uint8_t *p = want(r, at + TFR_HEADER_BYTES, (size_t)n + TFR_FOOTER_BYTES, e);
    if (!p) {
        r->dead = 1;
        return e ? e->code : PT_EIO;
    }
    /* Move on first: a bad payload CRC still leaves the framing intact. */
    r->pos += TFR_OVERHEAD + (long long)n;
    r->index++;
    if (r->verify) {
        uint32_t stored = le_get_u32(p + n);
        uint32_t have = crc32c_mask(crc32c(p, (size_t)n));
        if (stored != have)
            return err_set(e, PT_ECRC, r->path, r->last_index, at,
                           "payload crc mismatch (stored 0x%08x, computed 0x%08x) in %llu "
                           "bytes; record skipped",
                           stored, have, (unsigned long long)n);
    }
    *data = p;
    *len = (size_t)n;
    return 1;
}

int tfr_skip(tfr_reader *r, long long *offset, size_t *len, pt_err *e)
{
    uint64_t n;
    int rc = read_header(r, &n, e);
    if (rc <= 0)
        return rc;
    *offset = r->pos;
    *len = (size_t)n;
    r->pos += TFR_OVERHEAD + (long long)n;
    r->index++;
    return 1;
}

int tfr_read_at(tfr_reader *r, long long offset, long long index, const uint8_t **data,
                size_t *len, pt_err *e)
{
    if (offset < 0 || offset > r->size)
        return err_set(e, PT_EUSAGE, r->path, index, offset, "offset outside the file");
    r->pos = offset;
    r->index = index;
    r->dead = 0;
    return tfr_next(r, data, len, e);
}

/* ------------------------------------------------------------------------------ */

struct tfr_writer {
    FILE *f;
    char path[4200];
    char tmp[4300];
    long long count;
    int live;            /* writes path itself: no temporary file, no rename */
};

void tfr_frame_header(uint8_t hdr[TFR_HEADER_BYTES], uint64_t len)
{
    le_put_u64(hdr, len);
    le_put_u32(hdr + 8, crc32c_mask(crc32c(hdr, 8)));
}

uint32_t tfr_payload_crc(const void *data, size_t len)
{
    return crc32c_mask(crc32c(data, len));
}

int tfr_writer_open(tfr_writer **out, const char *path, pt_err *e)
{
    *out = NULL;
    tfr_writer *w = calloc(1, sizeof *w);
    if (!w)
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    if (util_path(w->path, sizeof w->path, "%s", path) != 0 ||
        util_path(w->tmp, sizeof w->tmp, "%s.tmp", path) != 0) {
        free(w);
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
    }
    w->f = fopen(w->tmp, "wb");
    if (!w->f) {
        int saved = errno;
        free(w);
        return err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET, "cannot create: %s",
                       strerror(saved));
    }
    *out = w;
    return PT_OK;
}

int tfr_writer_open_live(tfr_writer **out, const char *path, pt_err *e)
{
    *out = NULL;
    tfr_writer *w = calloc(1, sizeof *w);
    if (!w)
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    if (util_path(w->path, sizeof w->path, "%s", path) != 0) {
        free(w);
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
    }
    w->live = 1;
    w->f = fopen(w->path, "wbx");
    if (!w->f) {
        int saved = errno;
        free(w);
        return err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET, "cannot create: %s",
                       strerror(saved));
    }
    *out = w;
    return PT_OK;
}

int tfr_writer_flush(tfr_writer *w, pt_err *e)
{
    if (fflush(w->f) != 0 || fsync(fileno(w->f)) != 0)
        return err_set(e, PT_EIO, w->path, PT_NO_RECORD, PT_NO_OFFSET, "flush failed: %s",
                       strerror(errno));
    return PT_OK;
}

int tfr_write(tfr_writer *w, const void *data, size_t len, pt_err *e)
{
    uint8_t hdr[TFR_HEADER_BYTES], foot[TFR_FOOTER_BYTES];
    tfr_frame_header(hdr, len);
    le_put_u32(foot, tfr_payload_crc(data, len));
    if (fwrite(hdr, 1, sizeof hdr, w->f) != sizeof hdr ||
        (len && fwrite(data, 1, len, w->f) != len) ||
        fwrite(foot, 1, sizeof foot, w->f) != sizeof foot)
        return err_set(e, PT_EIO, w->path, w->count, PT_NO_OFFSET, "write failed: %s",
                       strerror(errno));
    w->count++;
    return PT_OK;
}

long long tfr_writer_count(const tfr_writer *w) { return w->count; }

int tfr_writer_close(tfr_writer *w, pt_err *e)
{
    int rc = PT_OK;
    if (fflush(w->f) != 0 || fsync(fileno(w->f)) != 0)
        rc = err_set(e, PT_EIO, w->path, PT_NO_RECORD, PT_NO_OFFSET, "flush failed: %s",
                     strerror(errno));
    if (fclose(w->f) != 0 && rc == PT_OK)
        rc = err_set(e, PT_EIO, w->path, PT_NO_RECORD, PT_NO_OFFSET, "close failed: %s",
                     strerror(errno));
    if (rc == PT_OK && !w->live && rename(w->tmp, w->path) != 0)
        rc = err_set(e, PT_EIO, w->path, PT_NO_RECORD, PT_NO_OFFSET, "rename failed: %s",
                     strerror(errno));
    if (rc != PT_OK && !w->live)
        unlink(w->tmp);
    free(w);
    return rc;
}

void tfr_writer_abort(tfr_writer *w)
{
    if (!w)
        return;
    fclose(w->f);
    if (!w->live)
        unlink(w->tmp);
    free(w);
}
