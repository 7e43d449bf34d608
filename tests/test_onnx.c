/* Tests of core/io/onnx: the ONNX reader, on real files only.
 *
 * The fixtures in tests/data/onnx/ were written by make_fixtures.py there (torch's
 * exporter, onnx.helper, and one file encoded by hand); their weights follow
 * formulas, recomputed here, so no expected value comes from the script's output.
 * The zoo's int8 MobileNetV2 is read from the shared data when present; its
 * values below were read with the onnx package's numpy_helper. */
#include "tests/t.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/rng.h"
#include "base/util.h"
#include "data/jpeg.h"
#include "io/onnx.h"

#define FX "tests/data/onnx/"
#define ZOO "weights/mobilenetv2-12-int8.onnx"

/* Element k of weight tensor j in make_fixtures.py. */
static float fval(int j, int k)
{
    return (float)(((k * 7 + j * 3) % 17) - 8) / 16.0f;
}

static int has(const char *s, const char *needle)
{
    return s && strstr(s, needle) != NULL;
}

static int dims_are(const int64_t *d, int rank, int want_rank, const int64_t *want)
{
    if (rank != want_rank)
        return 0;
    for (int i = 0; i < rank; i++)
        if (d[i] != want[i])
            return 0;
    return 1;
}

static const onnx_node *node_named(const onnx_model *m, const char *name)
{
    for (size_t i = 0; i < m->n_nodes; i++)
        if (strcmp(m->nodes[i].name, name) == 0)
            return &m->nodes[i];
    return NULL;
}

static const float *f32(const onnx_model *m, const char *name, int64_t count)
{
    const onnx_tensor *t = onnx_find_tensor(m, name);
    const void *d;
    pt_err e;
    if (!t || t->count != count || onnx_tensor_data(m, t, ONNX_FLOAT, &d, &e) != PT_OK)
        return NULL;
    return d;
}

/* ---- convnet.onnx: torch.onnx.export of conv -> bn -> relu -> gap -> gemm ------------ */

static void check_convnet(const char *path)
{
    onnx_model *m;
    pt_err e;
    T_REQUIRE(onnx_load(path, &m, &e) == PT_OK);
    T_EQ_INT(m->ir_version, 7);
    T_EQ_INT(m->opset, 12);
    T_EQ_STR(m->producer_name, "pytorch");
    T_EQ_STR(m->path, path);

    const char *ops[] = { "Conv", "BatchNormalization", "Relu", "GlobalAveragePool", "Flatten",
                          "Gemm" };
    T_REQUIRE(m->n_nodes == 6);
    for (size_t i = 0; i < 6; i++) {
        T_EQ_STR(m->nodes[i].op_type, ops[i]);
        T_EQ_STR(m->nodes[i].domain, "");
        T_EQ_INT(m->nodes[i].index, (long long)i);
    }

    /* Inputs and outputs, with the symbolic batch. */
    T_REQUIRE(m->n_inputs == 1 && m->n_outputs == 1);
    const onnx_value_info *in = &m->inputs[0];
    T_EQ_STR(in->name, "image");
    T_EQ_INT(in->elem_type, ONNX_FLOAT);
    T_CHECK(dims_are(in->dims, in->rank, 4, (const int64_t[]){ -1, 3, 8, 8 }));
    T_EQ_STR(in->dim_params[0], "batch");
    T_EQ_STR(in->dim_params[1], "");
    T_EQ_STR(m->outputs[0].name, "logits");
    T_CHECK(dims_are(m->outputs[0].dims, m->outputs[0].rank, 2, (const int64_t[]){ -1, 3 }));
    T_CHECK(onnx_find_value_info(m, "image") == in);

    /* Attributes through the typed getters. */
    const onnx_node *conv = &m->nodes[0];
    T_EQ_STR(conv->name, "/conv/Conv");
    T_REQUIRE(conv->n_inputs == 3);
    T_EQ_STR(conv->inputs[0], "image");
    T_EQ_STR(conv->inputs[1], "conv.weight");
    T_EQ_STR(conv->inputs[2], "conv.bias");
    T_EQ_INT(onnx_attr_int(conv, "group", 99), 1);
    T_EQ_INT(onnx_attr_int(conv, "no_such", 99), 99);
    size_t n;
    const int64_t *pads = onnx_attr_ints(conv, "pads", &n);
    T_CHECK(n == 4 && pads && pads[0] == 1 && pads[3] == 1);
    const int64_t *ks = onnx_attr_ints(conv, "kernel_shape", &n);
    T_CHECK(n == 2 && ks[0] == 3 && ks[1] == 3);
    T_CHECK(onnx_attr_ints(conv, "group", &n) == NULL && n == 0); /* INT, not INTS */
    const onnx_node *bn = &m->nodes[1];
    T_CHECK(onnx_attr_float(bn, "epsilon", 0) == 1e-5f);
    T_CHECK(onnx_attr_float(bn, "momentum", 0) == 0.9f);
    T_EQ_INT(onnx_attr_int(&m->nodes[4], "axis", 0), 1);
    T_EQ_INT(onnx_attr_int(&m->nodes[5], "transB", 0), 1);
    T_CHECK(onnx_attr_float(&m->nodes[5], "alpha", 0) == 1.0f);

    /* Every weight, element by element. */
    struct { const char *name; int64_t count; } w[] = {
        { "conv.weight", 108 }, { "conv.bias", 4 }, { "bn.weight", 4 }, { "bn.bias", 4 },
        { "bn.running_mean", 4 }, { "fc.weight", 12 }, { "fc.bias", 3 },
    };
    T_EQ_INT(m->n_initializers, 8);
    for (int j = 0; j < 7; j++) {
        const float *v = f32(m, w[j].name, w[j].count);
        T_CHECKF(v != NULL, "%s: missing or not FLOAT[%lld]", w[j].name, (long long)w[j].count);
        for (int k = 0; v && k < w[j].count; k++)
            T_CHECKF(v[k] == fval(j, k), "%s[%d] = %g, want %g", w[j].name, k, (double)v[k],
                     (double)fval(j, k));
    }
    const float *var = f32(m, "bn.running_var", 4);
    T_CHECK(var && var[0] == 0.5f && var[1] == 0.75f && var[2] == 1.0f && var[3] == 1.25f);
    const onnx_tensor *cw = onnx_find_tensor(m, "conv.weight");
    T_REQUIRE(cw);
    T_CHECK(dims_are(cw->dims, cw->rank, 4, (const int64_t[]){ 4, 3, 3, 3 }));
    T_EQ_STR(cw->name, "conv.weight");

    /* Lookups. */
    const onnx_node *p = onnx_producer(m, "/relu/Relu_output_0");
    T_CHECK(p == &m->nodes[2]);
    T_CHECK(onnx_producer(m, "image") == NULL);
    T_CHECK(onnx_producer(m, "conv.weight") == NULL);
    T_CHECK(onnx_producer(m, "no such value") == NULL);
    T_CHECK(onnx_find_tensor(m, "/relu/Relu_output_0") == NULL);
    T_EQ_INT(onnx_consumers(m, "conv.weight"), 1);
    T_EQ_INT(onnx_consumers(m, "image"), 1);
    T_EQ_INT(onnx_consumers(m, "logits"), 1); /* the graph output */
    T_EQ_INT(onnx_consumers(m, ""), 0);
    T_EQ_INT(onnx_consumers(m, "nothing"), 0);

    /* Asking for the wrong type names the tensor and both types. */
    const void *d;
    T_EQ_INT(onnx_tensor_data(m, cw, ONNX_INT8, &d, &e), PT_EFORMAT);
    T_CHECK(d == NULL);
    T_CHECKF(has(e.msg, path) && has(e.msg, "'conv.weight'") && has(e.msg, "FLOAT") &&
             has(e.msg, "INT8"), "%s", e.msg);
    /* and a wrong attribute type names the node. */
    T_EQ_INT(onnx_attr_check(m, conv, "group", ONNX_ATTR_INT, &e), PT_OK);
    T_EQ_INT(onnx_attr_check(m, conv, "absent", ONNX_ATTR_INT, &e), PT_OK);
    T_EQ_INT(onnx_attr_check(m, conv, "pads", ONNX_ATTR_INT, &e), PT_EFORMAT);
    T_CHECKF(has(e.msg, "node 0 '/conv/Conv' (Conv)") && has(e.msg, "'pads' is INTS") &&
             has(e.msg, "expected INT"), "%s", e.msg);
    onnx_free(m);
}

TEST(onnx_torch_export_reads_graph_and_exact_weights)
{
    check_convnet(FX "convnet.onnx");
}

TEST(onnx_typed_fields_read_the_same_as_raw_data)
{
    /* Same model, weights in float_data instead of raw_data. */
    check_convnet(FX "convnet_typed.onnx");
}

/* ---- constant.onnx: Constant outputs, every attribute kind, absent optionals -------- */

TEST(onnx_constants_attributes_and_optional_inputs)
{
    onnx_model *m;
    pt_err e;
    T_REQUIRE(onnx_load(FX "constant.onnx", &m, &e) == PT_OK);
    T_EQ_INT(m->ir_version, 8);
    T_EQ_INT(m->opset, 13);
    T_EQ_INT(m->n_opsets, 2);
    T_EQ_STR(m->producer_name, "make_fixtures.py");
    T_EQ_STR(m->graph_name, "constants");
    T_EQ_INT(m->n_nodes, 10);

    /* Constant outputs are tensors named after the output. */
    const onnx_tensor *t = onnx_find_tensor(m, "shape");
    T_REQUIRE(t);
    T_EQ_STR(t->name, "shape");
    T_EQ_INT(t->dtype, ONNX_INT64);
    T_CHECK(dims_are(t->dims, t->rank, 1, (const int64_t[]){ 3 }));
    const int64_t *sv = t->data;
    T_CHECK(sv[0] == -1 && sv[1] == 3 && sv[2] == 4);
    t = onnx_find_tensor(m, "half");
    T_REQUIRE(t);
    T_CHECK(t->dtype == ONNX_FLOAT && t->rank == 0 && t->count == 1);
    T_CHECK(*(const float *)t->data == 0.5f);
    const float *b4 = f32(m, "bias4", 4);
    T_CHECK(b4 && b4[0] == 1.0f && b4[1] == -2.0f && b4[2] == 0.25f && b4[3] == 8.0f);
    t = onnx_find_tensor(m, "axes");
    T_REQUIRE(t);
    T_CHECK(t->dtype == ONNX_INT64 && t->rank == 1 && t->count == 1 &&
            *(const int64_t *)t->data == 3);
    const float *cmax = f32(m, "cmax", 1);
    T_CHECK(cmax && *cmax == 6.0f);
    T_CHECK(onnx_producer(m, "shape") == node_named(m, "c_shape"));

    /* "ai.onnx" is the default domain; an unnamed node keeps "". */
    const onnx_node *mul = node_named(m, "mul");
    T_REQUIRE(mul);
    T_EQ_STR(mul->domain, "");
    const onnx_node *add = onnx_producer(m, "a");
    T_REQUIRE(add);
    T_EQ_STR(add->name, "");
    T_EQ_STR(add->op_type, "Add");
    T_EQ_INT(onnx_consumers(m, "a"), 2);

    /* Clip's absent min is "". */
    const onnx_node *clip = node_named(m, "clip");
    T_REQUIRE(clip && clip->n_inputs == 3);
    T_EQ_STR(clip->inputs[1], "");
    T_EQ_STR(clip->inputs[2], "cmax");

    /* One attribute of each kind. */
    const onnx_node *aa = node_named(m, "all_attrs");
    T_REQUIRE(aa);
    T_EQ_STR(aa->domain, "petal.test");
    T_REQUIRE(aa->n_outputs == 2);
    T_EQ_STR(aa->outputs[1], "");
    T_EQ_INT(aa->n_attrs, 9);
    T_CHECK(onnx_attr_float(aa, "f", 0) == -1.5f);
    T_EQ_INT(onnx_attr_int(aa, "i", 0), -7);
    T_EQ_INT(onnx_attr_int(aa, "f", 42), 42); /* FLOAT is not INT */
    T_EQ_STR(onnx_attr_string(aa, "s", NULL), "same");
    T_EQ_INT(onnx_attr_find(aa, "s")->s_len, 4);
    T_EQ_STR(onnx_attr_string(aa, "i", "dflt"), "dflt");
    size_t n;
    const int64_t *iv = onnx_attr_ints(aa, "ints", &n);
    T_CHECK(n == 3 && iv[0] == 1 && iv[1] == -2 && iv[2] == (int64_t)1 << 40);
    const float *fv = onnx_attr_floats(aa, "floats", &n);
    T_CHECK(n == 2 && fv[0] == 0.5f && fv[1] == -0.25f);
    const char *const *sv2 = onnx_attr_strings(aa, "strings", &n);
    T_REQUIRE(n == 3);
    T_EQ_STR(sv2[0], "ab");
    T_EQ_STR(sv2[1], "");
    T_EQ_STR(sv2[2], "xyz");
    const onnx_tensor *at = onnx_attr_tensor(aa, "t");
    T_REQUIRE(at);
    T_EQ_STR(at->name, "t_attr");
    T_CHECK(at->dtype == ONNX_INT32 && at->count == 2);
    T_CHECK(((const int32_t *)at->data)[0] == 5 && ((const int32_t *)at->data)[1] == -6);
    const onnx_attr *ts = onnx_attr_find(aa, "tensors");
    T_REQUIRE(ts && ts->type == ONNX_ATTR_TENSORS && ts->n == 2);
    T_CHECK(ts->tensors[0].dtype == ONNX_FLOAT && *(const float *)ts->tensors[0].data == 2.5f);
    T_CHECK(ts->tensors[1].dtype == ONNX_INT64 && ts->tensors[1].rank == 0 &&
            *(const int64_t *)ts->tensors[1].data == 9);
    /* A subgraph is kept by name and type only. */
    const onnx_attr *g = onnx_attr_find(aa, "g");
    T_REQUIRE(g);
    T_EQ_INT(g->type, ONNX_ATTR_GRAPH);
    T_EQ_INT(onnx_attr_check(m, aa, "g", ONNX_ATTR_TENSOR, &e), PT_EFORMAT);
    T_CHECKF(has(e.msg, "node 9 'all_attrs' (AllAttrs)") && has(e.msg, "GRAPH"), "%s", e.msg);

    /* value_info shapes. */
    const onnx_value_info *r = onnx_find_value_info(m, "r");
    T_REQUIRE(r);
    T_CHECK(dims_are(r->dims, r->rank, 3, (const int64_t[]){ -1, 3, 4 }));
    T_EQ_STR(r->dim_params[0], "batch");
    T_CHECK(onnx_find_value_info(m, "m") == NULL);
    onnx_free(m);
}

/* ---- quant.onnx: 8-bit and integer tensors in every storage form ---------------------- */

/* ---- Identity of an initializer: one tensor under two names ------------------------- */

TEST(onnx_identity_of_an_initializer_is_that_tensor)
{
    /* torch.onnx.export writes one initializer for equal tensors and an Identity of it
     * for each other user; tests/data/conform/make_conform.py makes quirks' convs b
     * and c have equal biases (made there, not here: only torch writes this). */
    onnx_model *m;
    pt_err e;
    T_REQUIRE(onnx_load("tests/data/conform/quirks-folded.onnx", &m, &e) == PT_OK);
    const onnx_tensor *b = onnx_find_tensor(m, "b.bias"), *c = onnx_find_tensor(m, "c.bias");
    T_REQUIRE(b && c);
    T_CHECK(b == c);
    T_EQ_STR(c->name, "b.bias");
    T_CHECK(onnx_producer(m, "c.bias") && !strcmp(onnx_producer(m, "c.bias")->op_type, "Identity"));
    T_EQ_INT(onnx_consumers(m, "c.bias"), 1);
    onnx_free(m);
}

TEST(onnx_quantized_tensors_in_raw_and_typed_fields)
{
    onnx_model *m;
    pt_err e;
    T_REQUIRE(onnx_load(FX "quant.onnx", &m, &e) == PT_OK);
    const void *d;
#define DATA(name, type)                                                               \
    (onnx_find_tensor(m, name) &&                                                      \
             onnx_tensor_data(m, onnx_find_tensor(m, name), type, &d, &e) == PT_OK     \
         ? d                                                                           \
         : NULL)
    const float *xs = DATA("x_scale", ONNX_FLOAT);
    T_CHECK(xs && *xs == 0.125f);
    const uint8_t *xzp = DATA("x_zp", ONNX_UINT8);
    T_CHECK(xzp && *xzp == 200);
    const int8_t *w = DATA("w", ONNX_INT8);
    T_REQUIRE(w);
    T_CHECK(dims_are(onnx_find_tensor(m, "w")->dims, 4, 4, (const int64_t[]){ 2, 1, 3, 3 }));
    for (int k = 0; k < 18; k++)
        T_CHECKF(w[k] == ((k * 15) % 256) - 128, "w[%d] = %d", k, w[k]);
    T_CHECK(w[0] == -128 && w[17] == 127);
    const float *ws = DATA("w_scale", ONNX_FLOAT);
    T_CHECK(ws && ws[0] == 0.5f && ws[1] == 0.25f);
    const int8_t *wzp = DATA("w_zp", ONNX_INT8);
    T_CHECK(wzp && wzp[0] == 0 && wzp[1] == 0);
    const uint8_t *yzp = DATA("y_zp", ONNX_UINT8);
    T_CHECK(yzp && *yzp == 3);
    const float *ys = DATA("y_scale", ONNX_FLOAT);
    T_CHECK(ys && *ys == 0.0625f);
    const int32_t *bias = DATA("bias", ONNX_INT32);
    T_CHECK(bias && bias[0] == -100000 && bias[1] == 123456);
    const int32_t *i32 = DATA("i32raw", ONNX_INT32);
    T_CHECK(i32 && i32[0] == INT32_MIN && i32[1] == INT32_MAX);
    const int64_t *i64 = DATA("i64", ONNX_INT64);
    T_CHECK(i64 && i64[0] == -((int64_t)1 << 40) && i64[1] == 7);
    const int64_t *i64r = DATA("i64raw", ONNX_INT64);
    T_CHECK(i64r && i64r[0] == -((int64_t)1 << 62) && i64r[1] == 1);
    const int8_t *i8 = DATA("i8typed", ONNX_INT8);
    T_CHECK(i8 && i8[0] == -128 && i8[1] == 0 && i8[2] == 127);
    const uint8_t *u8r = DATA("u8raw", ONNX_UINT8), *u8t = DATA("u8typed", ONNX_UINT8);
    T_CHECK(u8r && u8r[0] == 0 && u8r[1] == 128 && u8r[2] == 255);
    T_CHECK(u8t && u8t[0] == 0 && u8t[1] == 128 && u8t[2] == 255);
#undef DATA

    const onnx_node *qc = node_named(m, "qconv");
    T_REQUIRE(qc);
    T_EQ_STR(qc->op_type, "QLinearConv");
    T_EQ_INT(qc->n_inputs, 9);
    T_EQ_STR(qc->inputs[8], "bias");
    T_EQ_INT(onnx_consumers(m, "x_scale"), 2);
    T_EQ_INT(onnx_consumers(m, "y_zp"), 2);
    T_CHECK(onnx_producer(m, "yq") == qc);
    onnx_free(m);
}

/* ---- wire.onnx: protobuf encodings python's writer does not produce ---------------- */

TEST(onnx_reads_packed_dims_unpacked_data_and_any_field_order)
{
    onnx_model *m;
    pt_err e;
    T_REQUIRE(onnx_load(FX "wire.onnx", &m, &e) == PT_OK);
    T_EQ_INT(m->ir_version, 7);
    T_EQ_INT(m->opset, 13);
    T_EQ_STR(m->graph_name, "wire");
    const onnx_tensor *w = onnx_find_tensor(m, "W");
    T_REQUIRE(w);
    T_CHECK(dims_are(w->dims, w->rank, 2, (const int64_t[]){ 2, 2 }));
    const float *wv = f32(m, "W", 4);
    T_CHECK(wv && wv[0] == 1.5f && wv[1] == -2.0f && wv[2] == 0.25f && wv[3] == 1024.0f);
    const onnx_tensor *k = onnx_find_tensor(m, "K");
    T_REQUIRE(k && k->dtype == ONNX_INT64 && k->count == 3);
    const int64_t *kv = k->data;
    T_CHECK(kv[0] == -5 && kv[1] == 0 && kv[2] == (int64_t)1 << 33);
    T_REQUIRE(m->n_nodes == 2);
    T_EQ_STR(m->nodes[0].op_type, "Add");
    T_EQ_STR(m->nodes[1].op_type, "Transpose");
    size_t n;
    const int64_t *perm = onnx_attr_ints(&m->nodes[1], "perm", &n);
    T_CHECK(n == 2 && perm[0] == 1 && perm[1] == 0);
    T_CHECK(dims_are(m->inputs[0].dims, m->inputs[0].rank, 2, (const int64_t[]){ 2, 2 }));
    onnx_free(m);
}

/* ---- broken files --------------------------------------------------------------------- */

TEST(onnx_each_broken_fixture_fails_with_a_precise_message)
{
    static const struct {
        const char *file;
        int code;
        const char *says[3];
    } cases[] = {
        { "bad_raw_size.onnx", PT_EFORMAT, { "tensor 'w'", "20 bytes of raw_data", "[2, 3]" } },
        { "bad_float_count.onnx", PT_EFORMAT, { "tensor 'w'", "5 values in float_data", "need 6" } },
        { "external.onnx", PT_EFORMAT,
          { "tensor 'w' keeps its data in an external file (data_location EXTERNAL); petal-tui "
            "reads only self-contained .onnx files", "", "" } },
        { "no_op_type.onnx", PT_EFORMAT, { "node 1 'nameless_op'", "has no op_type", "" } },
        { "negative_dim.onnx", PT_EFORMAT, { "tensor 'w'", "dim 0 is -2 (negative)", "" } },
        { "huge_dims.onnx", PT_ETOOBIG, { "tensor 'w'", "[100000, 100000]", "more than" } },
        { "dims_beyond_file.onnx", PT_ETOOBIG, { "tensor 'w'", "1000000 elements", "file of" } },
        { "uint8_range.onnx", PT_EFORMAT, { "tensor 'zp'", "300", "UINT8" } },
        { "undefined_input.onnx", PT_EFORMAT, { "node 1 'add' (Add)", "'nowhere'", "earlier" } },
        { "unknown_domain.onnx", PT_EFORMAT, { "node 0 'fancy' (Fancy)", "'com.example'", "" } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, FX "%s", cases[i].file);
        onnx_model *m = (onnx_model *)1;
        pt_err e;
        int rc = onnx_load(path, &m, &e);
        T_CHECKF(rc == cases[i].code, "%s: rc %d (%s), want %d", path, rc, e.msg, cases[i].code);
        T_CHECK(m == NULL);
        T_CHECKF(has(e.msg, path), "%s: message does not name the file: %s", path, e.msg);
        for (int k = 0; k < 3; k++)
            T_CHECKF(has(e.msg, cases[i].says[k]), "%s: message lacks \"%s\": %s", path,
                     cases[i].says[k], e.msg);
        if (rc == PT_OK)
            onnx_free(m);
    }
}

TEST(onnx_unsupported_type_loads_and_refuses_when_read)
{
    onnx_model *m;
    pt_err e;
    T_REQUIRE(onnx_load(FX "float16.onnx", &m, &e) == PT_OK);
    const onnx_tensor *t = onnx_find_tensor(m, "half");
    T_REQUIRE(t);
    T_EQ_INT(t->dtype, ONNX_FLOAT16);
    T_CHECK(t->data == NULL && t->count == 2);
    const void *d;
    T_EQ_INT(onnx_tensor_data(m, t, ONNX_FLOAT, &d, &e), PT_EFORMAT);
    T_CHECKF(has(e.msg, "float16.onnx") && has(e.msg, "'half'") && has(e.msg, "FLOAT16"), "%s",
             e.msg);
    onnx_free(m);
}

TEST(onnx_non_onnx_files_are_refused)
{
    const char *dir = t_tmpdir();
    char path[4200];
    onnx_model *m;
    pt_err e;

    /* Text. */
    util_path(path, sizeof path, "%s/notes.onnx", dir);
    const char *text = "This is not a model.\nJust some text.\n";
    T_REQUIRE(util_write_file_atomic(path, text, strlen(text), &e) == PT_OK);
    int rc = onnx_load(path, &m, &e);
    T_CHECKF(rc == PT_EPARSE && has(e.msg, path) && has(e.msg, "not an ONNX model"), "%d %s",
             rc, e.msg);

    /* A JPEG. */
    jpg_codec *c = jpg_codec_new();
    T_REQUIRE(c);
    uint8_t rgb[16 * 16 * 3];
    for (size_t i = 0; i < sizeof rgb; i++)
        rgb[i] = (uint8_t)(i * 7);
    const uint8_t *jpg;
    size_t jlen;
    T_REQUIRE(jpg_encode(c, rgb, 16, 16, 90, &jpg, &jlen, &e) == PT_OK);
    util_path(path, sizeof path, "%s/photo.onnx", dir);
    T_REQUIRE(util_write_file_atomic(path, jpg, jlen, &e) == PT_OK);
    jpg_codec_free(c);
    rc = onnx_load(path, &m, &e);
    T_CHECKF(rc == PT_EPARSE && has(e.msg, path), "%d %s", rc, e.msg);

    /* Empty, missing, a folder. */
    util_path(path, sizeof path, "%s/empty.onnx", dir);
    T_REQUIRE(util_write_file_atomic(path, "", 0, &e) == PT_OK);
    rc = onnx_load(path, &m, &e);
    T_CHECKF(rc == PT_EPARSE && has(e.msg, path) && has(e.msg, "empty"), "%d %s", rc, e.msg);
    util_path(path, sizeof path, "%s/missing.onnx", dir);
    T_EQ_INT(onnx_load(path, &m, &e), PT_EIO);
    T_CHECK(has(e.msg, path));
    T_CHECK(onnx_load(dir, &m, &e) < 0);

    /* A valid protobuf that is not a ModelProto: a TensorProto (no graph). */
    uint8_t buf[64];
    size_t k = 0;
    buf[k++] = 0x08; buf[k++] = 2;          /* dims: 2 */
    buf[k++] = 0x10; buf[k++] = 1;          /* data_type: FLOAT */
    buf[k++] = 0x42; buf[k++] = 1; buf[k++] = 'w'; /* name: "w" */
    rc = onnx_load_mem(buf, k, "tensor.pb", &m, &e);
    T_CHECKF(rc == PT_EPARSE && has(e.msg, "tensor.pb"), "%d %s", rc, e.msg);
    /* ... and a ModelProto with a graph but no opset (what a cut before it leaves). */
    k = 0;
    buf[k++] = 0x08; buf[k++] = 7;          /* ir_version 7 */
    buf[k++] = 0x3a; buf[k++] = 0;          /* graph: empty */
    rc = onnx_load_mem(buf, k, "noopset.onnx", &m, &e);
    T_CHECKF(rc == PT_EPARSE && has(e.msg, "opset_import"), "%d %s", rc, e.msg);
}

/* A few protobuf bytes written by hand, for shapes no writer produces. */
typedef struct pb {
    uint8_t *p;
    size_t n, cap;
} pb;

static void pb_byte(pb *b, uint8_t v)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 256;
        b->p = realloc(b->p, b->cap);
    }
    b->p[b->n++] = v;
}

static void pb_varint(pb *b, uint64_t v)
{
    for (; v >= 0x80; v >>= 7)
        pb_byte(b, (uint8_t)(v | 0x80));
    pb_byte(b, (uint8_t)v);
}

/* Field `field`, length-delimited, holding len bytes of p. */
static void pb_ld(pb *b, unsigned field, const void *p, size_t len)
{
    pb_varint(b, field << 3 | 2);
    pb_varint(b, len);
    for (size_t i = 0; i < len; i++)
        pb_byte(b, ((const uint8_t *)p)[i]);
}

/* ir_version 7 and opset_import { version 13 }. */
static void pb_model_head(pb *b)
{
    static const uint8_t opset[] = { 0x10, 13 };
    pb_byte(b, 0x08);
    pb_byte(b, 7);
    pb_ld(b, 8, opset, sizeof opset);
}

TEST(onnx_repeated_singular_fields_and_inner_damage_are_refused)
{
    onnx_model *m;
    pt_err e;
    /* The graph field 20,000 times over: protobuf-c would merge the copies in
     * quadratic time; the reader refuses at the second, naming its byte. */
    pb b = { 0 }, node = { 0 }, graph = { 0 };
    static const uint8_t relu[] = { 0x22, 4, 'R', 'e', 'l', 'u' }; /* op_type */
    pb_ld(&node, 1, relu, sizeof relu);
    pb_model_head(&b);
    size_t second = 0;
    for (int i = 0; i < 20000; i++) {
        if (i == 1)
            second = b.n;
        pb_ld(&b, 7, node.p, node.n);
    }
    int rc = onnx_load_mem(b.p, b.n, "dup.onnx", &m, &e);
    T_CHECKF(rc == PT_EPARSE && has(e.msg, "(graph)") && has(e.msg, "twice") &&
             e.offset == (long long)second, "%d %s", rc, e.msg);

    /* A value's type given twice, inside the graph. */
    b.n = 0;
    pb vi = { 0 };
    static const uint8_t tensor_type[] = { 0x0a, 2, 0x08, 1 }; /* tensor_type { elem_type 1 } */
    pb_ld(&vi, 1, "v", 1);
    pb_ld(&vi, 2, tensor_type, sizeof tensor_type);
    pb_ld(&vi, 2, tensor_type, sizeof tensor_type);
    pb_ld(&graph, 11, vi.p, vi.n);
    pb_model_head(&b);
    pb_ld(&b, 7, graph.p, graph.n);
    rc = onnx_load_mem(b.p, b.n, "duptype.onnx", &m, &e);
    T_CHECKF(rc == PT_EPARSE && has(e.msg, "(type) of a ValueInfoProto") && has(e.msg, "twice"),
             "%d %s", rc, e.msg);

    /* A node whose length runs past the end of the graph holding it: damage, not
     * truncation, since the file itself is whole. */
    b.n = 0;
    graph.n = 0;
    pb_ld(&graph, 1, relu, sizeof relu);
    graph.p[1] = 0x7f; /* the node's length, now past the graph's end */
    pb_model_head(&b);
    size_t graph_at = b.n;
    pb_ld(&b, 7, graph.p, graph.n);
    rc = onnx_load_mem(b.p, b.n, "inner.onnx", &m, &e);
    T_CHECKF(rc == PT_EPARSE && has(e.msg, "damaged") && has(e.msg, "(node) of a GraphProto") &&
             e.offset == (long long)graph_at + 2, "%d %s", rc, e.msg);
    free(b.p);
    free(node.p);
    free(graph.p);
    free(vi.p);
}

/* ---- damage: every cut, random flips ------------------------------------------------- */

/* Touch everything a loaded model hands out, so the sanitizers see any bad pointer. */
static unsigned long long walk(const onnx_model *m)
{
    unsigned long long h = 0;
    const onnx_value_info *lists[] = { m->inputs, m->outputs, m->value_info };
    size_t counts[] = { m->n_inputs, m->n_outputs, m->n_value_info };
    for (int l = 0; l < 3; l++)
        for (size_t i = 0; i < counts[l]; i++) {
            const onnx_value_info *v = &lists[l][i];
            h += strlen(v->name) + (unsigned)v->elem_type;
            for (int k = 0; k < v->rank; k++)
                h += (unsigned long long)v->dims[k] + strlen(v->dim_params[k]);
        }
    for (size_t i = 0; i < m->n_initializers; i++) {
        const onnx_tensor *t = &m->initializers[i];
        for (int k = 0; k < t->rank; k++)
            h += (unsigned long long)t->dims[k];
        if (t->data) {
            const uint8_t *b = t->data;
            size_t bytes = (size_t)t->count * onnx_dtype_size(t->dtype);
            for (size_t k = 0; k < bytes; k++)
                h += b[k];
        }
        h += onnx_find_tensor(m, t->name) == t;
    }
    for (size_t i = 0; i < m->n_nodes; i++) {
        const onnx_node *n = &m->nodes[i];
        h += strlen(n->name) + strlen(n->op_type) + strlen(n->domain);
        for (size_t k = 0; k < n->n_inputs; k++)
            h += (unsigned)onnx_consumers(m, n->inputs[k]) + (onnx_find_tensor(m, n->inputs[k]) != NULL);
        for (size_t k = 0; k < n->n_outputs; k++)
            h += onnx_producer(m, n->outputs[k]) != NULL;
        for (size_t k = 0; k < n->n_attrs; k++) {
            const onnx_attr *a = &n->attrs[k];
            h += strlen(a->name) + (unsigned)a->type + a->n;
            if (a->type == ONNX_ATTR_STRING)
                h += strlen(a->s);
            if (a->type == ONNX_ATTR_INTS)
                for (size_t j = 0; j < a->n; j++)
                    h += (unsigned long long)a->ints[j];
            if (a->type == ONNX_ATTR_STRINGS)
                for (size_t j = 0; j < a->n; j++)
                    h += strlen(a->strings[j]);
            if (a->type == ONNX_ATTR_TENSOR && a->t->data && a->t->count)
                h += ((const uint8_t *)a->t->data)[0];
        }
    }
    return h;
}

/* Loads every prefix of the file: each must fail, name the file, and leave no model. */
static void every_cut(const char *path, size_t stride)
{
    uint8_t *buf;
    size_t len;
    pt_err e;
    T_REQUIRE(util_read_file(path, &buf, &len, &e) == PT_OK);
    char cut_path[4200];
    util_path(cut_path, sizeof cut_path, "%s/cut.onnx", t_tmpdir());
    int fails = 0, truncs = 0;
    for (size_t cut = 0; cut < len; cut += stride) {
        onnx_model *m = (onnx_model *)1;
        int rc = onnx_load_mem(buf, cut, path, &m, &e);
        if (rc == PT_OK || m != NULL || !has(e.msg, path)) {
            fails++;
            if (fails <= 5)
                t_fail(__FILE__, __LINE__, "%s cut at %zu: rc %d, %s", path, cut, rc, e.msg);
            if (rc == PT_OK)
                onnx_free(m);
        }
        truncs += rc == PT_ETRUNC;
        /* The same through a real file, every so often (the message names that file). */
        if (cut % (stride * 97) == 0) {
            T_REQUIRE(util_write_file_atomic(cut_path, buf, cut, &e) == PT_OK);
            rc = onnx_load(cut_path, &m, &e);
            T_CHECKF(rc < 0 && m == NULL && has(e.msg, cut_path), "%s cut at %zu: rc %d %s",
                     path, cut, rc, e.msg);
        }
    }
    T_CHECKF(fails == 0, "%s: %d cuts loaded or gave a bad message", path, fails);
    /* Most cuts land inside the graph field and are reported as truncation. */
    T_CHECKF(truncs * 10 >= (int)(len / stride) * 9, "%s: only %d of %zu cuts say truncated",
             path, truncs, len / stride);
    free(buf);
}

TEST(onnx_every_cut_of_the_fixtures_fails_cleanly)
{
    const char *files[] = { FX "convnet.onnx", FX "constant.onnx", FX "quant.onnx",
                            FX "wire.onnx" };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        every_cut(files[i], 1);
}

/* Flips 1-4 random bytes per round, within the first span bytes (0: anywhere): the
 * reader must load or refuse, never crash; what loads is walked in full. */
static void flips(const char *path, size_t span, int rounds, uint64_t seed, int *loaded,
                  int *refused)
{
    uint8_t *orig, *buf;
    size_t len;
    pt_err e;
    *loaded = *refused = 0;
    T_REQUIRE(util_read_file(path, &orig, &len, &e) == PT_OK);
    T_REQUIRE(len > 0);
    buf = malloc(len);
    T_REQUIRE(buf);
    rng r;
    rng_seed(&r, seed);
    for (int round = 0; round < rounds; round++) {
        memcpy(buf, orig, len);
        int nflip = rng_int(&r, 1, 4);
        for (int k = 0; k < nflip; k++) {
            size_t at = (size_t)rng_below(&r, span && span < len ? span : len);
            /* Half the time a single bit, else a whole random byte. */
            buf[at] ^= rng_below(&r, 2) ? (uint8_t)(1u << rng_below(&r, 8))
                                         : (uint8_t)rng_int(&r, 1, 255);
        }
        onnx_model *m;
        int rc = onnx_load_mem(buf, len, path, &m, &e);
        if (rc == PT_OK) {
            (*loaded)++;
            (void)walk(m);
            onnx_free(m);
        } else {
            (*refused)++;
            if (!has(e.msg, path) || m != NULL) {
                t_fail(__FILE__, __LINE__, "%s round %d: rc %d, %s", path, round, rc, e.msg);
                break;
            }
        }
    }
    free(buf);
    free(orig);
}

TEST(onnx_random_byte_flips_never_crash)
{
    const char *files[] = { FX "convnet.onnx", FX "constant.onnx", FX "quant.onnx",
                            FX "wire.onnx" };
    int rounds = t_slow_mode() ? 300 : 3000;
    int total_loaded = 0, total_refused = 0;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        int loaded, refused;
        flips(files[i], 0, rounds, 1234 + i, &loaded, &refused);
        total_loaded += loaded;
        total_refused += refused;
    }
    printf("  %d damaged copies loaded, %d refused\n", total_loaded, total_refused);
    /* Both outcomes happen: flips in weights load, flips in structure are refused. */
    T_CHECK(total_loaded > 0 && total_refused > 0);
}

/* ---- the ONNX zoo's int8 MobileNetV2 (shared data) ------------------------------------- */

TEST(onnx_zoo_mobilenetv2_int8_loads_with_its_known_structure)
{
    T_NEED_DATA();
    const char *path = t_data(ZOO);
    onnx_model *m;
    pt_err e;
    T_REQUIRE(onnx_load(path, &m, &e) == PT_OK);
    T_EQ_INT(m->ir_version, 7);
    T_EQ_INT(m->opset, 12);
    T_EQ_STR(m->producer_name, "onnx.quantize");
    T_EQ_STR(m->producer_version, "0.1.0");
    T_EQ_STR(m->graph_name, "torch-jit-export");
    T_EQ_INT(m->n_nodes, 73);
    T_EQ_INT(m->n_initializers, 348);
    T_EQ_INT(m->n_opsets, 7);

    static const struct { const char *op; int n; } want[] = {
        { "QuantizeLinear", 1 }, { "QLinearConv", 52 }, { "QLinearAdd", 11 },
        { "QLinearGlobalAveragePool", 1 }, { "QLinearMatMul", 1 }, { "DequantizeLinear", 2 },
        { "Shape", 1 }, { "Gather", 1 }, { "Unsqueeze", 1 }, { "Concat", 1 }, { "Reshape", 1 },
    };
    int total = 0, microsoft = 0;
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        int n = 0;
        for (size_t i = 0; i < m->n_nodes; i++)
            n += strcmp(m->nodes[i].op_type, want[k].op) == 0;
        T_CHECKF(n == want[k].n, "%s: %d nodes, want %d", want[k].op, n, want[k].n);
        total += n;
    }
    T_EQ_INT(total, 73);
    /* QLinearAdd and QLinearGlobalAveragePool are onnxruntime's contrib ops. */
    for (size_t i = 0; i < m->n_nodes; i++)
        if (strcmp(m->nodes[i].domain, "com.microsoft") == 0) {
            microsoft++;
            T_CHECK(strcmp(m->nodes[i].op_type, "QLinearAdd") == 0 ||
                    strcmp(m->nodes[i].op_type, "QLinearGlobalAveragePool") == 0);
        }
    T_EQ_INT(microsoft, 12);

    T_REQUIRE(m->n_inputs == 1 && m->n_outputs == 1);
    T_EQ_STR(m->inputs[0].name, "input");
    T_EQ_INT(m->inputs[0].elem_type, ONNX_FLOAT);
    T_CHECK(dims_are(m->inputs[0].dims, m->inputs[0].rank, 4, (const int64_t[]){ -1, 3, 224, 224 }));
    T_EQ_STR(m->inputs[0].dim_params[0], "batch_size");
    T_EQ_STR(m->outputs[0].name, "output");
    T_CHECK(dims_are(m->outputs[0].dims, m->outputs[0].rank, 2, (const int64_t[]){ -1, 1000 }));

    /* Tensors in each of the file's storage forms (values from onnx's numpy_helper). */
    const onnx_tensor *t = onnx_find_tensor(m, "classifier.1.weight_quantized");
    T_REQUIRE(t && t->dtype == ONNX_INT8);
    T_CHECK(dims_are(t->dims, t->rank, 2, (const int64_t[]){ 1280, 1000 }));
    const int8_t *cw = t->data;
    long long sum = 0;
    for (int64_t i = 0; i < t->count; i++)
        sum += cw[i];
    T_CHECK(cw[0] == -25 && cw[1] == -14 && cw[2] == -4 && cw[3] == -9 && cw[t->count - 1] == -16);
    T_EQ_INT(sum, -11125);
    const onnx_tensor *b = onnx_find_tensor(m, "476_quantized"); /* INT32 raw_data */
    T_REQUIRE(b && b->dtype == ONNX_INT32 && b->count == 32);
    T_CHECK(((const int32_t *)b->data)[0] == -108921 && ((const int32_t *)b->data)[31] == 48637);
    const onnx_tensor *s = onnx_find_tensor(m, "input_scale"); /* FLOAT float_data */
    T_REQUIRE(s && s->dtype == ONNX_FLOAT && s->rank == 0);
    T_CHECK(*(const float *)s->data == 0.01865844801068306f);
    const onnx_tensor *zp = onnx_find_tensor(m, "input_zero_point"); /* UINT8 int32_data */
    T_REQUIRE(zp && zp->dtype == ONNX_UINT8);
    T_EQ_INT(*(const uint8_t *)zp->data, 114);
    const onnx_tensor *shp = onnx_find_tensor(m, "630"); /* INT64 raw_data */
    T_REQUIRE(shp && shp->dtype == ONNX_INT64 && shp->count == 1);
    T_EQ_INT(*(const int64_t *)shp->data, -1);

    const onnx_node *c0 = node_named(m, "Conv_0_quant");
    T_REQUIRE(c0 && c0->index == 1 && c0->n_inputs == 9);
    size_t n;
    const int64_t *st = onnx_attr_ints(c0, "strides", &n);
    T_CHECK(n == 2 && st[0] == 2 && st[1] == 2);
    T_EQ_INT(onnx_attr_int(c0, "group", 0), 1);
    T_EQ_INT(onnx_consumers(m, "input_scale"), 2);
    T_CHECK(onnx_producer(m, "output") == &m->nodes[72]);
    (void)walk(m);
    onnx_free(m);
}

TEST(onnx_zoo_mobilenetv2_cuts_and_flips_fail_cleanly)
{
    T_NEED_DATA();
    const char *path = t_data(ZOO);
    /* About 700 cuts, spread over the 3.6 MB; most stop at the top-level scan. */
    every_cut(path, 5227);
    /* Flips anywhere mostly hit weights; the nodes, where the structure is, sit in
     * the first 20 KB. */
    int loaded, refused, loaded2, refused2;
    flips(path, 0, t_slow_mode() ? 5 : 40, 99, &loaded, &refused);
    flips(path, 20000, t_slow_mode() ? 20 : 200, 100, &loaded2, &refused2);
    printf("  zoo: %d damaged copies loaded, %d refused\n", loaded + loaded2, refused + refused2);
    T_CHECK(refused2 > 0);
}
