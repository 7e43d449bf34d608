/* fuzz_tfrecord — TFRecord framing (core/io/tfrecord.c) on any bytes.
 *
 * The bytes are a shard file. They are read the ways the pipeline and the dataset
 * scan read shards: tfr_next() to the end with the payload CRC checked and not,
 * tfr_skip() over the headers, then tfr_read_at() back at each header found. Then
 * the same file again with every CRC the framing reaches made right, so mutations
 * get past the checksums into the framing logic behind them.
 *
 * Promises checked: every payload lies inside the file, between its header and its
 * footer; every error names the file; after an error other than a payload CRC the
 * reader only says "end"; skipping and reading agree on offsets and lengths.
 */
#include "tests/fuzz/fuzz.h"

#include "base/crc32c.h"
#include "base/le.h"
#include "io/tfrecord.h"

#define MAX_RECORDS 4096
#define MAX_SEEK 64

static void read_through(const char *path, size_t size, int verify)
{
    tfr_reader *r;
    pt_err e;
    FZ_ASSERT(tfr_open(&r, path, &e) == PT_OK, "%s", e.msg);
    FZ_ASSERT(tfr_file_size(r) == (long long)size, "size %lld", tfr_file_size(r));
    tfr_set_verify(r, verify);
    unsigned sum = 0;
    for (int k = 0; k < MAX_RECORDS; k++) {
        const uint8_t *d;
        size_t len;
        int rc = tfr_next(r, &d, &len, &e);
        if (rc == 0)
            break;
        if (rc == 1) {
            long long at = tfr_offset(r);
            FZ_ASSERT(at >= 0 && (unsigned long long)at + TFR_OVERHEAD + len <= size,
                      "record %lld at %lld of %zu bytes in a file of %zu", tfr_index(r), at, len,
                      size);
            FZ_ASSERT(tfr_index(r) == k, "index %lld, expected %d", tfr_index(r), k);
            if (len)
                sum += d[0] + d[len - 1];
            continue;
        }
        FZ_ASSERT(rc < 0 && rc == e.code && fz_names(e.msg, path), "rc %d: %s", rc, e.msg);
        if (rc != PT_ECRC) {
            FZ_ASSERT(tfr_next(r, &d, &len, &e) == 0, "a read after '%s'", err_name(rc));
            break;
        }
    }
    fz_use(sum);
    tfr_close(r);
}

static void skip_and_seek(const char *path, size_t size)
{
    tfr_reader *r;
    pt_err e;
    FZ_ASSERT(tfr_open(&r, path, &e) == PT_OK, "%s", e.msg);
    long long where[MAX_SEEK], index[MAX_SEEK];
    size_t lens[MAX_SEEK];
    int n = 0;
    for (int k = 0; k < MAX_RECORDS; k++) {
        long long off;
        size_t len;
        int rc = tfr_skip(r, &off, &len, &e);
        if (rc <= 0) {
            FZ_ASSERT(rc == 0 || fz_names(e.msg, path), "%s", e.msg);
            break;
        }
        FZ_ASSERT(off == tfr_offset(r) && (unsigned long long)off + TFR_OVERHEAD + len <= size,
                  "skip: record at %lld of %zu bytes in a file of %zu", off, len, size);
        if (n < MAX_SEEK) {
            where[n] = off;
            index[n] = tfr_index(r);
            lens[n++] = len;
        }
    }
    /* Back to each header found, last first: the same record comes back. */
    for (int i = n - 1; i >= 0; i--) {
        const uint8_t *d;
        size_t len;
        int rc = tfr_read_at(r, where[i], index[i], &d, &len, &e);
        FZ_ASSERT(rc == 1 || rc == PT_ECRC, "read_at %lld: %d %s", where[i], rc, e.msg);
        if (rc == 1)
            FZ_ASSERT(len == lens[i] && tfr_offset(r) == where[i] && tfr_index(r) == index[i],
                      "read_at %lld: %zu bytes, skip said %zu", where[i], len, lens[i]);
    }
    /* Offsets outside the file are refused; the file's end is a clean end. */
    const uint8_t *d;
    size_t len;
    FZ_ASSERT(tfr_read_at(r, -1, 0, &d, &len, &e) == PT_EUSAGE, "offset -1");
    FZ_ASSERT(tfr_read_at(r, (long long)size + 1, 0, &d, &len, &e) == PT_EUSAGE, "offset past end");
    FZ_ASSERT(tfr_read_at(r, (long long)size, 0, &d, &len, &e) == 0, "offset at end");
    tfr_close(r);
}

/* Make every CRC the framing reaches right; 1 when something changed. */
static int repair(uint8_t *b, size_t size)
{
    int changed = 0;
    size_t at = 0;
    while (size - at >= TFR_HEADER_BYTES) {
        uint64_t n = le_get_u64(b + at);
        uint32_t want = crc32c_mask(crc32c(b + at, 8));
        if (le_get_u32(b + at + 8) != want) {
            le_put_u32(b + at + 8, want);
            changed = 1;
        }
        size_t left = size - at - TFR_HEADER_BYTES;
        if (n > left || left - n < TFR_FOOTER_BYTES)
            break;
        uint32_t pw = tfr_payload_crc(b + at + TFR_HEADER_BYTES, (size_t)n);
        if (le_get_u32(b + at + TFR_HEADER_BYTES + n) != pw) {
            le_put_u32(b + at + TFR_HEADER_BYTES + n, pw);
            changed = 1;
        }
        at += TFR_OVERHEAD + (size_t)n;
    }
    return changed;
}

static void one_file(const uint8_t *data, size_t size)
{
    const char *path = fz_file(0, data, size);
    read_through(path, size, 1);
    read_through(path, size, 0);
    skip_and_seek(path, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one_file(data, size);
    uint8_t *fixed = malloc(size ? size : 1);
    FZ_ASSERT(fixed, "out of memory");
    memcpy(fixed, data, size);
    if (repair(fixed, size))
        one_file(fixed, size);
    free(fixed);
    return 0;
}
