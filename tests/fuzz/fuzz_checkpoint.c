/* fuzz_checkpoint — the checkpoint loader (core/run/checkpoint.c) on any bytes.
 *
 * The bytes are a run folder's checkpoint.ckpt. ckpt_load() reads it for a model
 * whose sizes match the file's own sections (as when resuming the same run), and
 * for a small fixed model without the second optimizer moment (another model, or
 * SGD). When the trailing CRC32C is wrong, the file is loaded again with it made
 * right, so mutations reach the section walk behind the checksum. The caller's
 * arrays are allocated to their exact sizes, so a copy past them is caught.
 *
 * Promises checked: an error names the file and leaves nothing allocated in the
 * result; a load that succeeds has a NUL-terminated config, a square confusion
 * matrix with its class count, and history bytes that can be read in full.
 */
#include "tests/fuzz/fuzz.h"

#include "base/crc32c.h"
#include "base/le.h"
#include "run/checkpoint.h"

/* Caller arrays above this many floats are not allocated: the load then meets a
 * size it does not expect, which is also a path worth taking. */
#define MAX_FLOATS (1 << 16)

typedef struct sizes {
    size_t params, buffers, opt;
    int with_v;
} sizes;

/* The float counts of the file's weight sections (1 .. 4), as a matching model has. */
static sizes file_sizes(const uint8_t *d, size_t n)
{
    sizes s = { 0, 0, 0, 0 };
    if (n < 20 || memcmp(d, "PETALCK1", 8) != 0)
        return s;
    size_t at = 16, end = n - 4;
    uint32_t nsec = le_get_u32(d + 12);
    for (uint32_t k = 0; k < nsec && at + 12 <= end; k++) {
        uint32_t tag = le_get_u32(d + at);
        uint64_t len = le_get_u64(d + at + 4);
        if (len > end - at - 12)
            break;
        size_t floats = len % 4 == 0 && len / 4 <= MAX_FLOATS ? (size_t)(len / 4) : 0;
        if (tag == 1)
            s.params = floats;
        else if (tag == 2)
            s.buffers = floats;
        else if (tag == 3 || tag == 4) {
            s.opt = floats;
            s.with_v |= tag == 4;
        }
        at += 12 + (size_t)len;
    }
    return s;
}

static float *floats(size_t n)
{
    float *p = malloc(n ? n * sizeof(float) : 1);
    FZ_ASSERT(p, "out of memory");
    return p;
}

static void load(const char *path, sizes s)
{
    float *params = floats(s.params), *buffers = floats(s.buffers), *m = floats(s.opt);
    float *v = s.with_v ? floats(s.opt) : NULL;
    ckpt_loaded l;
    pt_err e;
    int rc = ckpt_load(path, params, s.params, buffers, s.buffers, m, v, s.opt, &l, &e);
    if (rc != PT_OK) {
        FZ_ASSERT(rc == e.code && fz_names(e.msg, path), "%d: %s", rc, e.msg);
        FZ_ASSERT(!l.confusion && !l.history && !l.config, "an error left allocations");
    } else {
        unsigned long long sum = 0;
        FZ_ASSERT((l.confusion != NULL) == (l.n_classes > 0), "confusion %p with %d classes",
                  (void *)l.confusion, l.n_classes);
        for (long long i = 0; i < (long long)l.n_classes * l.n_classes; i++)
            sum += (unsigned long long)l.confusion[i];
        for (size_t i = 0; i < l.history_bytes; i++)
            sum += ((const uint8_t *)l.history)[i];
        if (l.config)
            sum += strlen(l.config);
        fz_use(sum);
        ckpt_free_loaded(&l);
    }
    free(params);
    free(buffers);
    free(m);
    free(v);
}

static void both_models(const char *path, const uint8_t *d, size_t n)
{
    load(path, file_sizes(d, n));
    sizes other = { 3, 1, 3, 0 };
    load(path, other);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    both_models(fz_file(0, data, size), data, size);
    if (size >= 20 && le_get_u32(data + size - 4) != crc32c(data, size - 4)) {
        uint8_t *fixed = malloc(size);
        FZ_ASSERT(fixed, "out of memory");
        memcpy(fixed, data, size);
        le_put_u32(fixed + size - 4, crc32c(fixed, size - 4));
        both_models(fz_file(1, fixed, size), fixed, size);
        free(fixed);
    }
    return 0;
}
