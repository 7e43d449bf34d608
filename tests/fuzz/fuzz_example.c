/* fuzz_example — tf.train.Example decoding (core/io/example.c) on any bytes.
 *
 * The bytes are one record's payload. What parses is walked in full (every key,
 * kind, value), looked up the ways the pipeline and the dataset scan look it up
 * (image, class, id; every key with every kind), and written back with the builder:
 * the copy must parse to the same features and values.
 *
 * Promises checked: an error names the file and the record; lookups agree with the
 * listing (the last of a repeated key wins); a typed lookup fails exactly when the
 * feature is missing, of another kind or empty; the builder's bytes read back equal.
 */
#include "tests/fuzz/fuzz.h"

#include "io/example.h"

#define FILE_NAME "fuzz.tfrec"

/* The bytes of a float, so NaNs compare equal to themselves. */
static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void lookups(const ex_example *ex, const char *key)
{
    long i = ex_find(ex, key);
    const uint8_t *b;
    size_t len;
    int64_t iv;
    float fv;
    pt_err e;
    int rb = ex_get_bytes(ex, key, &b, &len, &e);
    int ri = ex_get_int64(ex, key, &iv, &e);
    int rf = ex_get_float(ex, key, &fv, &e);
    if (i < 0) {
        FZ_ASSERT(rb == PT_EFEATURE && ri == PT_EFEATURE && rf == PT_EFEATURE, "missing '%s'", key);
        return;
    }
    FZ_ASSERT(strcmp(ex_key(ex, (size_t)i), key) == 0, "ex_find('%s') gave '%s'", key,
              ex_key(ex, (size_t)i));
    for (size_t j = (size_t)i + 1; j < ex_count(ex); j++)
        FZ_ASSERT(strcmp(ex_key(ex, j), key) != 0, "'%s' repeats after the one found", key);
    ex_kind k = ex_kind_at(ex, (size_t)i);
    int has = ex_len_at(ex, (size_t)i) > 0;
    FZ_ASSERT((rb == PT_OK) == (k == EX_BYTES && has), "bytes '%s': %d", key, rb);
    FZ_ASSERT((ri == PT_OK) == (k == EX_INT64 && has), "int64 '%s': %d", key, ri);
    FZ_ASSERT((rf == PT_OK) == (k == EX_FLOAT && has), "float '%s': %d", key, rf);
    if (rb == PT_OK) {
        const uint8_t *b0;
        size_t l0;
        ex_bytes_at(ex, (size_t)i, 0, &b0, &l0);
        FZ_ASSERT(b == b0 && len == l0, "bytes '%s' is not the first value", key);
    }
    if (ri == PT_OK)
        FZ_ASSERT(iv == ex_int64_at(ex, (size_t)i, 0), "int64 '%s'", key);
    if (rf == PT_OK)
        FZ_ASSERT(fbits(fv) == fbits(ex_float_at(ex, (size_t)i, 0)), "float '%s'", key);
}

/* Every feature into a builder; 0 when a feature cannot be written (an empty kind). */
static int rebuild(const ex_example *ex, uint8_t **out, size_t *out_len)
{
    ex_builder *b = ex_builder_new();
    FZ_ASSERT(b, "out of memory");
    int ok = 1;
    for (size_t i = 0; i < ex_count(ex) && ok; i++) {
        size_t n = ex_len_at(ex, i);
        const char *key = ex_key(ex, i);
        int rc = PT_OK;
        switch (ex_kind_at(ex, i)) {
        case EX_BYTES: {
            const void **vals = calloc(n ? n : 1, sizeof *vals);
            size_t *lens = calloc(n ? n : 1, sizeof *lens);
            FZ_ASSERT(vals && lens, "out of memory");
            for (size_t j = 0; j < n; j++) {
                const uint8_t *d;
                ex_bytes_at(ex, i, j, &d, &lens[j]);
                vals[j] = d;
            }
            rc = ex_add_bytes_list(b, key, (const void *const *)vals, lens, n);
            free(vals);
            free(lens);
            break;
        }
        case EX_INT64: {
            int64_t *v = calloc(n ? n : 1, sizeof *v);
            FZ_ASSERT(v, "out of memory");
            for (size_t j = 0; j < n; j++)
                v[j] = ex_int64_at(ex, i, j);
            rc = ex_add_int64(b, key, v, n);
            free(v);
            break;
        }
        case EX_FLOAT: {
            float *v = calloc(n ? n : 1, sizeof *v);
            FZ_ASSERT(v, "out of memory");
            for (size_t j = 0; j < n; j++)
                v[j] = ex_float_at(ex, i, j);
            rc = ex_add_float(b, key, v, n);
            free(v);
            break;
        }
        default:
            ok = 0;
            break;
        }
        FZ_ASSERT(rc == PT_OK, "builder: %d", rc);
    }
    if (ok)
        FZ_ASSERT(ex_serialize(b, out, out_len) == PT_OK, "serialize failed");
    ex_builder_free(b);
    return ok;
}

static void same(const ex_example *a, const ex_example *b)
{
    FZ_ASSERT(ex_count(a) == ex_count(b), "%zu features written, %zu read", ex_count(a),
              ex_count(b));
    for (size_t i = 0; i < ex_count(a); i++) {
        size_t n = ex_len_at(a, i);
        FZ_ASSERT(strcmp(ex_key(a, i), ex_key(b, i)) == 0 && ex_kind_at(a, i) == ex_kind_at(b, i) &&
                      n == ex_len_at(b, i),
                  "feature %zu '%s' changed", i, ex_key(a, i));
        for (size_t j = 0; j < n; j++)
            switch (ex_kind_at(a, i)) {
            case EX_BYTES: {
                const uint8_t *da, *db;
                size_t la, lb;
                ex_bytes_at(a, i, j, &da, &la);
                ex_bytes_at(b, i, j, &db, &lb);
                FZ_ASSERT(la == lb && (la == 0 || memcmp(da, db, la) == 0), "'%s'[%zu]",
                          ex_key(a, i), j);
                break;
            }
            case EX_INT64:
                FZ_ASSERT(ex_int64_at(a, i, j) == ex_int64_at(b, i, j), "'%s'[%zu]", ex_key(a, i), j);
                break;
            case EX_FLOAT:
                FZ_ASSERT(fbits(ex_float_at(a, i, j)) == fbits(ex_float_at(b, i, j)), "'%s'[%zu]",
                          ex_key(a, i), j);
                break;
            default:
                break;
            }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ex_example *ex;
    pt_err e;
    int rc = ex_parse(data, size, &ex, FILE_NAME, 7, 1234, &e);
    if (rc != PT_OK) {
        FZ_ASSERT(rc == e.code && ex == NULL && fz_names(e.msg, FILE_NAME) &&
                      e.record == 7 && e.offset == 1234 && strstr(e.msg, "record 7"),
                  "%d: %s", rc, e.msg);
        return 0;
    }
    unsigned long long sum = 0;
    for (size_t i = 0; i < ex_count(ex); i++) {
        const char *key = ex_key(ex, i);
        FZ_ASSERT(key != NULL, "feature %zu has no key", i);
        sum += strlen(key);
        size_t n = ex_len_at(ex, i);
        ex_kind k = ex_kind_at(ex, i);
        FZ_ASSERT(k != EX_NONE || n == 0, "an empty kind with %zu values", n);
        for (size_t j = 0; j < n; j++) {
            if (k == EX_BYTES) {
                const uint8_t *d;
                size_t len;
                ex_bytes_at(ex, i, j, &d, &len);
                if (len)
                    sum += d[0] + d[len - 1];
            } else if (k == EX_INT64) {
                sum += (unsigned long long)ex_int64_at(ex, i, j);
            } else {
                sum += fbits(ex_float_at(ex, i, j));
            }
        }
        lookups(ex, key);
    }
    fz_use(sum);
    lookups(ex, "image");
    lookups(ex, "class");
    lookups(ex, "id");

    uint8_t *again;
    size_t again_len;
    if (rebuild(ex, &again, &again_len)) {
        ex_example *back;
        rc = ex_parse(again, again_len, &back, FILE_NAME, 0, 0, &e);
        FZ_ASSERT(rc == PT_OK, "the builder's bytes do not parse: %s", e.msg);
        same(ex, back);
        ex_free(back);
        free(again);
    }
    ex_free(ex);
    return 0;
}
