/* onnx_writer — see onnx_writer.h. Messages are built inside out: each nested one in
 * its own buffer, then written into its parent as a length-delimited field. */
#include "tests/onnx_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/util.h"

typedef struct ob {
    uint8_t *p;
    size_t len, cap;
    int oom;
} ob;

static void ob_put(ob *b, const void *d, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 256) + n;
        uint8_t *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
}

static void ob_varint(ob *b, uint64_t v)
{
    do {
        uint8_t c = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            c |= 0x80;
        ob_put(b, &c, 1);
    } while (v);
}

static void ob_int(ob *b, unsigned field, int64_t v)
{
    ob_varint(b, (uint64_t)field << 3);
    ob_varint(b, (uint64_t)v);
}

static void ob_bytes(ob *b, unsigned field, const void *d, size_t n)
{
    ob_varint(b, (uint64_t)field << 3 | 2);
    ob_varint(b, n);
    ob_put(b, d, n);
}

static void ob_str(ob *b, unsigned field, const char *s)
{
    ob_bytes(b, field, s, strlen(s));
}

/* Sub-message m into b as field, then m freed. */
static void ob_msg(ob *b, unsigned field, ob *m)
{
    b->oom |= m->oom;
    ob_bytes(b, field, m->p, m->len);
    free(m->p);
    memset(m, 0, sizeof *m);
}

/* NodeProto: inputs, one output, op; attributes added by the caller into *attrs. */
static void node(ob *g, const char *op, const char *const *in, int n_in, const char *out,
                 ob *attrs)
{
    ob n = { 0 };
    for (int i = 0; i < n_in; i++)
        ob_str(&n, 1, in[i]);
    ob_str(&n, 2, out);
    ob_str(&n, 3, out);
    ob_str(&n, 4, op);
    if (attrs) {
        n.oom |= attrs->oom;
        ob_put(&n, attrs->p, attrs->len);
        free(attrs->p);
        memset(attrs, 0, sizeof *attrs);
    }
    ob_msg(g, 1, &n);
}

/* AttributeProto of ints (type INTS = 7) or one int (INT = 2) into attrs. */
static void attr_ints(ob *attrs, const char *name, const int64_t *v, int n, int one)
{
    ob a = { 0 };
    ob_str(&a, 1, name);
    if (one)
        ob_int(&a, 3, v[0]);
    for (int i = 0; !one && i < n; i++)
        ob_int(&a, 8, v[i]);
    ob_int(&a, 20, one ? 2 : 7);
    ob_msg(attrs, 5, &a);
}

/* A float initializer (TensorProto) of rank dims; values from the generator or v. */
static void tensor(ob *g, const char *name, const int64_t *dims, int rank, const float *v)
{
    ob t = { 0 };
    size_t count = 1;
    for (int i = 0; i < rank; i++) {
        ob_int(&t, 1, dims[i]);
        count *= (size_t)dims[i];
    }
    ob_int(&t, 2, 1);
    ob_str(&t, 8, name);
    ob_bytes(&t, 9, v, count * sizeof *v); /* little-endian hosts only, as the tests run */
    ob_msg(g, 5, &t);
}

static void rand_tensor(ob *g, const char *name, const int64_t *dims, int rank, float scale,
                        uint64_t *seed)
{
    size_t count = 1;
    for (int i = 0; i < rank; i++)
        count *= (size_t)dims[i];
    float *v = malloc(count * sizeof *v);
    if (!v) {
        g->oom = 1;
        return;
    }
    for (size_t i = 0; i < count; i++) {
        *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
        v[i] = scale * ((float)(*seed >> 40) / (float)(1 << 24) * 2.0f - 1.0f);
    }
    tensor(g, name, dims, rank, v);
    free(v);
}

/* ValueInfoProto of a float tensor; a dim of -1 is the symbol "N". */
static void value_info(ob *g, unsigned field, const char *name, const int64_t *dims, int rank)
{
    ob shape = { 0 }, tt = { 0 }, type = { 0 }, vi = { 0 };
    for (int i = 0; i < rank; i++) {
        ob d = { 0 };
        if (dims[i] < 0)
            ob_str(&d, 2, "N");
        else
            ob_int(&d, 1, dims[i]);
        ob_msg(&shape, 1, &d);
    }
    ob_int(&tt, 1, 1);
    ob_msg(&tt, 2, &shape);
    ob_msg(&type, 1, &tt);
    ob_str(&vi, 1, name);
    ob_msg(&vi, 2, &type);
    ob_msg(g, field, &vi);
}

static void conv(ob *g, const char *in, const char *w, const char *b, const char *out)
{
    static const int64_t k[2] = { 3, 3 }, s[2] = { 2, 2 }, p[4] = { 1, 1, 1, 1 };
    ob at = { 0 };
    attr_ints(&at, "kernel_shape", k, 2, 0);
    attr_ints(&at, "strides", s, 2, 0);
    attr_ints(&at, "pads", p, 4, 0);
    const char *ins[3] = { in, w, b };
    node(g, "Conv", ins, 3, out, &at);
}

int ow_keras_net(const char *path, int S, ow_head head, int k, uint64_t seed)
{
    ob g = { 0 }, m = { 0 }, op = { 0 }, at = { 0 };
    static const int64_t nchw[4] = { 0, 3, 1, 2 }, nhwc[4] = { 0, 2, 3, 1 }, axes[2] = { 1, 2 };
    static const int64_t zero = 0, one = 1, w1[4] = { 8, 3, 3, 3 }, w2[4] = { 16, 8, 3, 3 };
    static const int64_t b1 = 8, b2 = 16;
    const float scale = 1.0f / 127.5f, shift = -1.0f;
    int side = (S + 1) / 2, last = (side + 1) / 2, feat = head == OW_FLATTEN ? 16 * last * last : 16;
    attr_ints(&at, "perm", nchw, 4, 0);
    node(&g, "Transpose", (const char *const[]){ "input" }, 1, "x_nchw", &at);
    node(&g, "Mul", (const char *const[]){ "x_nchw", "scale" }, 2, "x_scaled", NULL);
    node(&g, "Add", (const char *const[]){ "x_scaled", "shift" }, 2, "x_norm", NULL);
    conv(&g, "x_norm", "w1", "b1", "c1");
    node(&g, "Relu", (const char *const[]){ "c1" }, 1, "r1", NULL);
    conv(&g, "r1", "w2", "b2", "c2");
    node(&g, "Relu", (const char *const[]){ "c2" }, 1, "r2", NULL);
    const char *vec = head == OW_NOTOP ? "features" : "pooled";
    if (head == OW_FLATTEN) {
        attr_ints(&at, "axis", &one, 1, 1);
        node(&g, "Flatten", (const char *const[]){ "r2" }, 1, vec, &at);
    } else {
        attr_ints(&at, "perm", nhwc, 4, 0);
        node(&g, "Transpose", (const char *const[]){ "r2" }, 1, "r2_nhwc", &at);
        attr_ints(&at, "axes", axes, 2, 0);
        attr_ints(&at, "keepdims", &zero, 1, 1);
        node(&g, "ReduceMean", (const char *const[]){ "r2_nhwc" }, 1, vec, &at);
    }
    if (head != OW_NOTOP) {
        node(&g, "MatMul", (const char *const[]){ vec, "wd" }, 2, "logits_mm", NULL);
        node(&g, "Add", (const char *const[]){ "logits_mm", "bd" }, 2, "logits", NULL);
        attr_ints(&at, "axis", &one, 1, 1);
        node(&g, "Softmax", (const char *const[]){ "logits" }, 1, "probs", &at);
    }
    ob_str(&g, 2, "keras_net");
    tensor(&g, "scale", NULL, 0, &scale);
    tensor(&g, "shift", NULL, 0, &shift);
    uint64_t s = seed;
    rand_tensor(&g, "w1", w1, 4, 0.4f, &s);
    rand_tensor(&g, "b1", &b1, 1, 0.1f, &s);
    rand_tensor(&g, "w2", w2, 4, 0.25f, &s);
    rand_tensor(&g, "b2", &b2, 1, 0.1f, &s);
    const int64_t wd[2] = { feat, k }, bd = k;
    if (head != OW_NOTOP) {
        rand_tensor(&g, "wd", wd, 2, head == OW_FLATTEN ? 0.05f : 1.5f, &s);
        rand_tensor(&g, "bd", &bd, 1, 0.1f, &s);
    }
    const int64_t in[4] = { -1, S, S, 3 }, probs[2] = { -1, k }, fdims[2] = { -1, 16 };
    value_info(&g, 11, "input", in, 4);
    if (head == OW_NOTOP)
        value_info(&g, 12, "features", fdims, 2);
    else
        value_info(&g, 12, "probs", probs, 2);
    ob_int(&m, 1, 8);
    ob_str(&m, 2, "tf2onnx");
    ob_int(&op, 2, 13);
    ob_str(&op, 1, "");
    ob_msg(&m, 8, &op);
    ob_msg(&m, 7, &g);
    pt_err e;
    int rc = m.oom ? -1 : util_write_file_atomic(path, m.p, m.len, &e) == PT_OK ? 0 : -2;
    if (rc)
        printf("  %s: %s\n", path, rc == -1 ? "out of memory" : e.msg);
    free(m.p);
    return rc ? -1 : 0;
}
