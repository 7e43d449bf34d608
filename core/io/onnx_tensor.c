/* onnx_tensor — one TensorProto into an onnx_tensor: its name, dtype and dims
 * (checked against the limits and the file's size), which of ONNX's data fields holds
 * the elements and whether their number matches the dims, and the elements copied into
 * the arena in host byte order for the five types petal-tui reads. Used for
 * initializers (onnx.c) and for attribute tensors (onnx_graph.c).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/le.h"
#include "io/onnx_impl.h"

/* "[1280, 1000]", cut when long. */
static void fmt_dims(char *buf, size_t n, const int64_t *d, size_t rank)
{
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i <= rank && k + 1 < n; i++) {
        int w;
        if (i == rank)
            w = snprintf(buf + k, n - k, "]");
        else
            w = snprintf(buf + k, n - k, "%s%lld", i ? ", " : "[", (long long)d[i]);
        if (w < 0 || (size_t)w >= n - k)
            break;
        k += (size_t)w;
    }
}

/* Bytes per element in raw_data, for every type with a fixed width; 0 for
 * STRING and unknown types. */
static size_t raw_width(int dtype)
{
    switch (dtype) {
    case ONNX_UINT8: case ONNX_INT8: case ONNX_BOOL: return 1;
    case ONNX_UINT16: case ONNX_INT16: case ONNX_FLOAT16: case ONNX_BFLOAT16: return 2;
    case ONNX_FLOAT: case ONNX_INT32: case ONNX_UINT32: return 4;
    case ONNX_INT64: case ONNX_UINT64: case ONNX_DOUBLE: case ONNX_COMPLEX64: return 8;
    case ONNX_COMPLEX128: return 16;
    default: return 0;
    }
}

/* The typed field ONNX stores a dtype in when raw_data is not used. */
enum { SRC_NONE, SRC_RAW, SRC_FLOAT, SRC_INT32, SRC_STRING, SRC_INT64, SRC_DOUBLE, SRC_UINT64 };

static const char *src_name(int s)
{
    static const char *const names[] = { "no data", "raw_data", "float_data", "int32_data",
                                         "string_data", "int64_data", "double_data",
                                         "uint64_data" };
    return names[s];
}

static int typed_src(int dtype)
{
    switch (dtype) {
    case ONNX_FLOAT: case ONNX_COMPLEX64: return SRC_FLOAT;
    case ONNX_INT32: case ONNX_INT16: case ONNX_INT8: case ONNX_UINT16: case ONNX_UINT8:
    case ONNX_BOOL: case ONNX_FLOAT16: case ONNX_BFLOAT16: return SRC_INT32;
    case ONNX_STRING: return SRC_STRING;
    case ONNX_INT64: return SRC_INT64;
    case ONNX_DOUBLE: case ONNX_COMPLEX128: return SRC_DOUBLE;
    case ONNX_UINT32: case ONNX_UINT64: return SRC_UINT64;
    default: return SRC_NONE;
    }
}

/* Values the typed field holds per element (complex numbers are two). */
static int64_t per_elem(int dtype)
{
    return dtype == ONNX_COMPLEX64 || dtype == ONNX_COMPLEX128 ? 2 : 1;
}

/* Storage forms petal-tui does not read (external files, segments), and a data type. */
static int check_storage(ld *L, const Pt__Onnx__TensorProto *tp, const char *ctx,
                         const char *name)
{
    if ((tp->has_data_location && tp->data_location == 1) || tp->n_external_data > 0)
        return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET,
                         "%stensor '%s' keeps its data in an external file (data_location "
                         "EXTERNAL); petal-tui reads only self-contained .onnx files", ctx, name);
    if (tp->has_data_location && tp->data_location != 0)
        return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' has data_location %d, "
                         "which ONNX does not define", ctx, name, (int)tp->data_location);
    if (tp->segment)
        return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' is stored in segments "
                         "(TensorProto.segment), which petal-tui does not read", ctx, name);
    if (!tp->has_data_type || tp->data_type == ONNX_UNDEFINED)
        return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' has no data type", ctx, name);
    return PT_OK;
}

/* t's rank, dims and element count, each within the limits and the file's size; dstr
 * gets the dims as text for later messages. */
static int read_dims(ld *L, const Pt__Onnx__TensorProto *tp, onnx_tensor *t, const char *ctx,
                     const char *name, char *dstr, size_t dstr_size)
{
    if (tp->n_dims > ONNX_MAX_RANK)
        return onnx_fail(L, PT_ETOOBIG, PT_NO_OFFSET, "%stensor '%s' has %zu dims; petal-tui "
                         "reads at most %d", ctx, name, tp->n_dims, ONNX_MAX_RANK);
    t->rank = (int)tp->n_dims;
    int64_t *dims = onnx_arena_alloc(L->ar, tp->n_dims * sizeof *dims);
    if (!dims)
        return onnx_oom(L);
    int zero = 0;
    for (size_t i = 0; i < tp->n_dims; i++) {
        int64_t d = tp->dims[i];
        if (d < 0)
            return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s': dim %zu is %lld "
                             "(negative)", ctx, name, i, (long long)d);
        if (d > ONNX_MAX_ELEMS)
            return onnx_fail(L, PT_ETOOBIG, PT_NO_OFFSET, "%stensor '%s': dim %zu is %lld, "
                             "beyond the limit of %lld", ctx, name, i, (long long)d,
                             (long long)ONNX_MAX_ELEMS);
        dims[i] = d;
        zero |= d == 0;
    }
    t->dims = dims;
    fmt_dims(dstr, dstr_size, dims, tp->n_dims);

    /* The product of dims, never past the limit: each factor is at most the
     * limit, so one step cannot overflow before the check. */
    int64_t count = 1;
    if (zero)
        count = 0;
    else
        for (size_t i = 0; i < tp->n_dims; i++) {
            if (count > ONNX_MAX_ELEMS / dims[i])
                return onnx_fail(L, PT_ETOOBIG, PT_NO_OFFSET, "%stensor '%s': dims %s make "
                                 "more than %lld elements", ctx, name, dstr,
                                 (long long)ONNX_MAX_ELEMS);
            count *= dims[i];
        }
    /* Every stored element takes at least a byte, whichever field holds it. */
    if ((uint64_t)count > L->file_len)
        return onnx_fail(L, PT_ETOOBIG, PT_NO_OFFSET, "%stensor '%s': dims %s make %lld "
                         "elements, more than a file of %zu bytes can hold", ctx, name, dstr,
                         (long long)count, L->file_len);
    t->count = count;
    return PT_OK;
}

/* Which field holds the data: exactly one of them (*src, with *n_vals values unless
 * raw), or none (SRC_NONE). */
static int find_source(ld *L, const Pt__Onnx__TensorProto *tp, const char *ctx,
                       const char *name, int *src_out, size_t *n_vals)
{
    int src = SRC_NONE, nsrc = 0;
    *n_vals = 0;
    struct { int src; size_t n; } have[] = {
        { SRC_FLOAT, tp->n_float_data }, { SRC_INT32, tp->n_int32_data },
        { SRC_STRING, tp->n_string_data }, { SRC_INT64, tp->n_int64_data },
        { SRC_DOUBLE, tp->n_double_data }, { SRC_UINT64, tp->n_uint64_data },
    };
    /* An empty raw_data is the same as none (some writers set it empty). */
    if (tp->has_raw_data && tp->raw_data.len > 0) {
        src = SRC_RAW;
        nsrc++;
    }
    for (size_t i = 0; i < sizeof have / sizeof have[0]; i++)
        if (have[i].n) {
            if (nsrc)
                return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' holds data in both "
                                 "%s and %s", ctx, name, src_name(src), src_name(have[i].src));
            src = have[i].src;
            *n_vals = have[i].n;
            nsrc++;
        }
    *src_out = src;
    return PT_OK;
}

/* The source fits t's dtype and holds as many elements as its dims say. */
static int check_source(ld *L, const Pt__Onnx__TensorProto *tp, const onnx_tensor *t, int src,
                        size_t n_vals, const char *ctx, const char *name, const char *dstr)
{
    const char *tname = onnx_dtype_name(t->dtype);
    int64_t count = t->count;
    size_t width = raw_width(t->dtype);
    if (src == SRC_RAW) {
        if (t->dtype == ONNX_STRING)
            return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' is STRING but holds "
                             "raw_data", ctx, name);
        if (width && (uint64_t)tp->raw_data.len != (uint64_t)count * width)
            return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' has %zu bytes of "
                             "raw_data, but dims %s of %s need %llu", ctx, name,
                             tp->raw_data.len, dstr, tname,
                             (unsigned long long)((uint64_t)count * width));
    } else if (src != SRC_NONE) {
        int want = typed_src(t->dtype);
        if (want != SRC_NONE && src != want)
            return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' is %s but holds %s "
                             "(ONNX keeps %s in %s or raw_data)", ctx, name, tname, src_name(src),
                             tname, src_name(want));
        if (want != SRC_NONE && (uint64_t)n_vals != (uint64_t)count * (uint64_t)per_elem(t->dtype))
            return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' holds %zu values in %s, "
                             "but dims %s of %s need %lld", ctx, name, n_vals, src_name(src), dstr,
                             tname, (long long)(count * per_elem(t->dtype)));
    } else if (count > 0) {
        return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s' has dims %s but no data",
                         ctx, name, dstr);
    }
    return PT_OK;
}

/* n elements of es bytes from raw_data, which is little-endian whatever wrote it. */
static void copy_raw(void *data, const Pt__Onnx__TensorProto *tp, size_t es, size_t n)
{
    const uint8_t *r = tp->raw_data.data;
    switch (es) {
    case 1:
        memcpy(data, r, n);
        break;
    case 4:
        for (size_t i = 0; i < n; i++) {
            uint32_t u = le_get_u32(r + 4 * i);
            memcpy((uint8_t *)data + 4 * i, &u, 4);
        }
        break;
    default:
        for (size_t i = 0; i < n; i++) {
            uint64_t u = le_get_u64(r + 8 * i);
            memcpy((uint8_t *)data + 8 * i, &u, 8);
        }
        break;
    }
}

/* n elements from the typed field of t's dtype. */
static int copy_typed(ld *L, const Pt__Onnx__TensorProto *tp, const onnx_tensor *t, void *data,
                      size_t n, const char *ctx, const char *name)
{
    switch (t->dtype) {
    case ONNX_FLOAT:
        memcpy(data, tp->float_data, n * sizeof(float));
        break;
    case ONNX_INT32:
        memcpy(data, tp->int32_data, n * sizeof(int32_t));
        break;
    case ONNX_INT64:
        memcpy(data, tp->int64_data, n * sizeof(int64_t));
        break;
    case ONNX_INT8:
    case ONNX_UINT8: {
        /* ONNX widens 8-bit values into int32_data; a value out of range is damage,
         * not something to wrap silently. */
        int32_t lo = t->dtype == ONNX_INT8 ? -128 : 0, hi = t->dtype == ONNX_INT8 ? 127 : 255;
        for (size_t i = 0; i < n; i++) {
            int32_t v = tp->int32_data[i];
            if (v < lo || v > hi)
                return onnx_fail(L, PT_EFORMAT, PT_NO_OFFSET, "%stensor '%s': int32_data[%zu] "
                                 "is %d, outside the range of %s", ctx, name, i, (int)v,
                                 onnx_dtype_name(t->dtype));
            if (t->dtype == ONNX_INT8)
                ((int8_t *)data)[i] = (int8_t)v;
            else
                ((uint8_t *)data)[i] = (uint8_t)v;
        }
        break;
    }
    default:
        break;
    }
    return PT_OK;
}

/* Check tp and fill t. ctx prefixes messages ("" or "node ...: attribute 'x': "). */
int onnx_read_tensor(ld *L, const Pt__Onnx__TensorProto *tp, onnx_tensor *t, const char *ctx)
{
    const char *name = tp->name ? tp->name : "";
    t->name = onnx_str_copy(L, name);
    if (!t->name)
        return onnx_oom(L);
    int rc = check_storage(L, tp, ctx, name);
    if (rc != PT_OK)
        return rc;
    t->dtype = tp->data_type;
    char dstr[160];
    rc = read_dims(L, tp, t, ctx, name, dstr, sizeof dstr);
    if (rc != PT_OK)
        return rc;
    int src = SRC_NONE;
    size_t n_vals;
    rc = find_source(L, tp, ctx, name, &src, &n_vals);
    if (rc == PT_OK)
        rc = check_source(L, tp, t, src, n_vals, ctx, name, dstr);
    if (rc != PT_OK)
        return rc;

    size_t es = onnx_dtype_size(t->dtype);
    if (!es)
        return PT_OK; /* kept, sizes checked; onnx_tensor_data() refuses it */
    /* count <= ONNX_MAX_ELEMS and es <= 8: no overflow. */
    void *data = onnx_arena_alloc(L->ar, (size_t)t->count * es);
    if (!data)
        return onnx_oom(L);
    t->data = data;
    size_t n = (size_t)t->count;
    if (n == 0)
        return PT_OK;
    if (src == SRC_RAW) {
        copy_raw(data, tp, es, n);
        return PT_OK;
    }
    return copy_typed(L, tp, t, data, n, ctx, name);
}
