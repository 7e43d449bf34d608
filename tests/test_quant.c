/* quant: the int8 arithmetic (nn_quant.h), the fake-quantization layer (nn_fakequant:
 * forward, refused for training, written and read back as a QuantizeLinear /
 * DequantizeLinear pair), the forward's per-node observer and the calibration ranges
 * it gathers, and the int8 export's form (nn_export.h) read back by the importer:
 * int8 weights dequantized exactly, a fake-quantization layer per activation pair.
 * ONNX Runtime's answers on int8 exports: tests/test_ort.c. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "io/onnx.h"
#include "nn/nn.h"
#include "nn/nn_export.h"
#include "nn/nn_import.h"
#include "nn/nn_layer.h"
#include "nn/nn_quant.h"
#include "tests/t.h"

TEST(quant_fake_quant_rounds_half_to_even_and_saturates)
{
    /* scale 0.5, zero point 10, uint8: x / 0.5 + 10 rounded, clamped to [0, 255]. */
    const float x[] = { 0.0f, 0.25f, 0.75f, 1.25f, -0.25f, -5.0f, -5.5f, 122.5f, 123.0f,
                        1000.0f, -1000.0f, NAN };
    const float want[] = { 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, -5.0f, -5.0f, 122.5f, 122.5f,
                           122.5f, -5.0f, NAN };
    float y[12];
    nn_fake_quant(x, y, 12, 0.5f, 10, 0, 255);
    for (int i = 0; i < 12; i++) {
        if (isnan(want[i]))
            T_CHECKF(isnan(y[i]), "x %g: %g, not NaN", (double)x[i], (double)y[i]);
        else
            T_CHECKF(y[i] == want[i], "x %g: %g, want %g", (double)x[i], (double)y[i],
                     (double)want[i]);
    }
    /* int8's range, in place. */
    float z[3] = { 1.0f, -100.0f, 100.0f };
    nn_fake_quant(z, z, 3, 0.25f, 0, -128, 127);
    T_CHECK(z[0] == 1.0f && z[1] == -32.0f && z[2] == 31.75f);
}

TEST(quant_u8_parameters_hold_zero_exactly)
{
    float s;
    int zp;
    nn_quant_u8(0.0f, 5.1f, &s, &zp);
    T_CHECK(zp == 0 && fabsf(s - 0.02f) < 1e-7f);
    nn_quant_u8(2.0f, 3.0f, &s, &zp); /* widened to [0, 3] */
    T_CHECK(zp == 0 && fabsf(s - 3.0f / 255.0f) < 1e-7f);
    nn_quant_u8(-1.0f, 1.0f, &s, &zp); /* 1 / s in float is a hair off 127.5 */
    T_CHECK((zp == 127 || zp == 128) && fabsf(s - 2.0f / 255.0f) < 1e-7f);
    nn_quant_u8(-3.0f, -1.0f, &s, &zp); /* widened to [-3, 0] */
    T_CHECK(zp == 255 && fabsf(s - 3.0f / 255.0f) < 1e-7f);
    nn_quant_u8(0.0f, 0.0f, &s, &zp);
    T_CHECK(s == 1.0f && zp == 0);
    /* 0 quantizes exactly, whatever the range. */
    for (int k = 0; k < 50; k++) {
        float lo = -0.37f * (float)k, hi = 0.11f * (float)(k + 1), y, zero = 0.0f;
        nn_quant_u8(lo, hi, &s, &zp);
        nn_fake_quant(&zero, &y, 1, s, zp, 0, 255);
        T_CHECKF(y == 0.0f, "[%g, %g]: 0 comes back as %g", (double)lo, (double)hi, (double)y);
    }
}

TEST(quant_s8_rows_symmetric_per_channel)
{
    const float w[3][4] = { { 1.0f, -2.0f, 0.5f, 0.0f }, { 0.0f, 0.0f, 0.0f, 0.0f },
                            { 0.01f, 0.02f, -0.03f, 0.015f } };
    float s[3];
    int8_t q[12];
    nn_quant_s8_rows(&w[0][0], 3, 4, s, q);
    T_CHECK(fabsf(s[0] - 2.0f / 127.0f) < 1e-8f && s[1] == 1.0f);
    T_CHECK(q[1] == -127 && q[0] == 64 && q[2] == 32 && q[3] == 0); /* 63.5 -> 64 (even) */
    T_CHECK(q[4] == 0 && q[7] == 0 && q[10] == -127 && q[9] == 85);
    for (int c = 0; c < 3; c++)
        for (int j = 0; j < 4; j++)
            T_CHECK(fabsf(q[c * 4 + j] * s[c] - w[c][j]) <= 0.5f * s[c] + 1e-9f);
    T_EQ_INT(nn_quant_bias(1.0f, 0.01f, 0.5f), 200);
    T_EQ_INT(nn_quant_bias(1e30f, 1e-10f, 1e-10f), INT32_MAX);
}

/* input -> fakequant -> gap -> dense. */
static nn_model *quant_net(float scale, int zp, int lo, int hi, pt_err *e)
{
    nn_model *m = nn_model_new(4, 4, 3);
    if (!m)
        return NULL;
    int x = nn_fakequant(m, nn_input(m), scale, zp, lo, hi);
    x = nn_dense(m, nn_gap(m, x), 3);
    if (nn_model_finalize(m, x, e) != PT_OK) {
        nn_model_free(m);
        return NULL;
    }
    nn_model_init_params(m, 7);
    return m;
}

TEST(quant_layer_forward_inference_only_and_round_trip)
{
    pt_err e;
    T_CHECK(quant_net(0.0f, 0, 0, 255, &e) == NULL);
    T_CHECKF(strstr(e.msg, "scale") != NULL, "%s", e.msg);
    T_CHECK(quant_net(0.1f, 300, 0, 255, &e) == NULL);
    nn_model *m = quant_net(0.05f, 20, 0, 255, &e);
    T_REQUIRE(m != NULL);
    /* Training is refused, naming the layer; inference runs. */
    T_CHECK(nn_ctx_new(m, 2, &e) == NULL);
    T_CHECKF(e.code == PT_EUSAGE && strstr(e.msg, "quant") && strstr(e.msg, "inference"),
             "%s", e.msg);
    nn_ctx *c = nn_ctx_new_infer(m, 2, &e);
    T_REQUIRE(c != NULL);
    float x[2 * 48], fq[2 * 48];
    rng r;
    rng_seed(&r, 3);
    for (int i = 0; i < 96; i++)
        x[i] = rng_uniform(&r, -2.0f, 14.0f);
    T_REQUIRE(nn_forward(c, x, 2, 0, 0, 0) != NULL);
    nn_fake_quant(x, fq, 96, 0.05f, 20, 0, 255);
    nn_node_info ni;
    nn_node_get(m, 1, &ni);
    T_CHECK(ni.op == NN_OP_QUANT && ni.q_scale == 0.05f && ni.q_zp == 20 && ni.q_hi == 255);
    /* The fake-quantized input is what the gap averaged. */
    const float *y = nn_ctx_output(c, nn_output_node(m));
    T_REQUIRE(y != NULL);
    uint8_t *buf = NULL;
    size_t len = 0;
    T_REQUIRE(nn_export_onnx(m, NULL, &buf, &len, &e) == PT_OK);
    onnx_model *om = NULL;
    T_REQUIRE(onnx_load_mem(buf, len, "quant.onnx", &om, &e) == PT_OK);
    nn_import_opts o = { .h = 4, .w = 4, .norm = NN_NORM_RAW };
    nn_import_info info;
    nn_model *back = nn_import_onnx(om, &o, &info, &e);
    T_CHECKF(back != NULL, "%s", e.msg);
    if (back) {
        int found = 0;
        for (int i = 0; i < nn_node_count(back); i++) {
            nn_node_get(back, i, &ni);
            found += ni.op == NN_OP_QUANT && ni.q_scale == 0.05f && ni.q_zp == 20;
        }
        T_EQ_INT(found, 1);
        T_CHECK(info.quantized == 1);
        nn_ctx *c2 = nn_ctx_new_infer(back, 2, &e);
        const float *y2 = c2 ? nn_forward(c2, x, 2, 0, 0, 0) : NULL;
        T_REQUIRE(y2 != NULL);
        for (int i = 0; i < 6; i++)
            T_CHECKF(fabsf(y2[i] - y[i]) <= 1e-5f * fmaxf(1.0f, fabsf(y[i])),
                     "logit %d: %g back, %g before", i, (double)y2[i], (double)y[i]);
        nn_ctx_free(c2);
    }
    nn_model_free(back);
    onnx_free(om);
    free(buf);
    nn_ctx_free(c);
    nn_model_free(m);
}

/* conv + BN + ReLU (fused), maxpool, conv, add, gap, dense: calibrated on random
 * images. */
static nn_model *calib_net(pt_err *e)
{
    nn_model *m = nn_model_new(8, 8, 3);
    if (!m)
        return NULL;
    int a = nn_relu(m, nn_batchnorm(m, nn_conv2d(m, nn_input(m), 6, 3, 3, 1, NN_PAD_SAME, 1, 1)));
    int p = nn_maxpool(m, a, 2, 2, 0);
    int b = nn_conv2d(m, p, 6, 3, 3, 1, NN_PAD_SAME, 1, 1);
    int x = nn_dense(m, nn_gap(m, nn_relu(m, nn_add(m, b, p))), 4);
    if (nn_model_finalize(m, x, e) != PT_OK) {
        nn_model_free(m);
        return NULL;
    }
    nn_model_init_params(m, 11);
    float *B = nn_buffers(m);
    for (size_t i = 0; i < nn_buffer_count(m); i++)
        B[i] = 0.3f + 0.1f * (float)(i % 7);
    return m;
}

static void calibrate(nn_model *m, nn_calib *cal, const float *x, int n)
{
    pt_err e;
    T_REQUIRE(nn_calib_init(cal, m, &e) == PT_OK);
    nn_ctx *c = nn_ctx_new_infer(m, n, &e);
    T_REQUIRE(c != NULL);
    nn_ctx_on_node(c, nn_calib_observe, cal);
    T_REQUIRE(nn_forward(c, x, n, 0, 0, 0) != NULL);
    cal->images = n;
    nn_ctx_free(c);
}

TEST(quant_observer_sees_every_node)
{
    pt_err e;
    nn_model *m = calib_net(&e);
    T_REQUIRE(m != NULL);
    enum { N = 6 };
    float x[N * 192];
    rng r;
    rng_seed(&r, 5);
    for (int i = 0; i < N * 192; i++)
        x[i] = rng_float(&r);
    nn_calib cal;
    calibrate(m, &cal, x, N);
    float lo = 1.0f, hi = 0.0f;
    for (int i = 0; i < N * 192; i++) {
        lo = fminf(lo, x[i]);
        hi = fmaxf(hi, x[i]);
    }
    T_CHECK(cal.seen[0] && cal.lo[0] == lo && cal.hi[0] == hi);
    for (int i = 0; i < nn_node_count(m); i++) {
        nn_node_info ni;
        nn_node_get(m, i, &ni);
        T_CHECKF(cal.seen[i], "node %d (%s) not observed", i, nn_op_name(ni.op));
        if (ni.op == NN_OP_RELU || ni.op == NN_OP_MAXPOOL)
            T_CHECKF(cal.lo[i] >= 0.0f && cal.hi[i] > 0.0f, "node %d (%s): [%g, %g]", i,
                     nn_op_name(ni.op), (double)cal.lo[i], (double)cal.hi[i]);
    }
    nn_calib_free(&cal);
    nn_calib_free(&cal); /* safe twice */
    nn_model_free(m);
}

/* The producer of value name in om, or NULL. */
static const onnx_node *producer(const onnx_model *om, const char *name)
{
    return onnx_producer(om, name);
}

/* Checks the int8 form of om: every Conv / Gemm weight an int8 DequantizeLinear of
 * axis 0 with a scale per output channel, its bias int32, its activation input a
 * DequantizeLinear of a QuantizeLinear (uint8); *pairs gets the activation pairs. */
static void check_int8_form(const onnx_model *om, int *pairs)
{
    int products = 0;
    *pairs = 0;
    for (size_t i = 0; i < om->n_nodes; i++) {
        const onnx_node *n = &om->nodes[i];
        if (!strcmp(n->op_type, "QuantizeLinear")) {
            const onnx_tensor *z = onnx_find_tensor(om, n->inputs[2]);
            T_CHECKF(z && z->dtype == ONNX_UINT8, "%s: zero point not uint8", n->name);
            (*pairs)++;
        }
        if (strcmp(n->op_type, "Conv") && strcmp(n->op_type, "Gemm"))
            continue;
        products++;
        const onnx_node *x = producer(om, n->inputs[0]), *w = producer(om, n->inputs[1]);
        const onnx_node *b = n->n_inputs > 2 ? producer(om, n->inputs[2]) : NULL;
        T_CHECKF(x && !strcmp(x->op_type, "DequantizeLinear") &&
                     producer(om, x->inputs[0]) &&
                     !strcmp(producer(om, x->inputs[0])->op_type, "QuantizeLinear"),
                 "%s: its input is not a QuantizeLinear / DequantizeLinear pair's", n->name);
        T_REQUIRE(w && !strcmp(w->op_type, "DequantizeLinear"));
        const onnx_tensor *q = onnx_find_tensor(om, w->inputs[0]);
        const onnx_tensor *s = onnx_find_tensor(om, w->inputs[1]);
        T_CHECKF(q && q->dtype == ONNX_INT8 && s && s->count == q->dims[0] &&
                     onnx_attr_int(w, "axis", 1) == 0,
                 "%s: weights not int8 per output channel", n->name);
        if (b) {
            const onnx_tensor *bq = onnx_find_tensor(om, b->inputs[0]);
            T_CHECKF(!strcmp(b->op_type, "DequantizeLinear") && bq && bq->dtype == ONNX_INT32,
                     "%s: bias not int32", n->name);
        }
    }
    T_CHECK(products > 0);
}

/* The first Conv of om against the first conv of back: its weights are the file's
 * int8 values times their channel's scale, exactly (OIHW -> HWIO). */
static void check_dequantized(const onnx_model *om, nn_model *back)
{
    const onnx_node *cv = NULL;
    for (size_t i = 0; i < om->n_nodes && !cv; i++)
        if (!strcmp(om->nodes[i].op_type, "Conv"))
            cv = &om->nodes[i];
    T_REQUIRE(cv != NULL);
    const onnx_node *w = onnx_producer(om, cv->inputs[1]);
    T_REQUIRE(w != NULL);
    const onnx_tensor *q = onnx_find_tensor(om, w->inputs[0]), *s = onnx_find_tensor(om, w->inputs[1]);
    T_REQUIRE(q && s && q->rank == 4);
    nn_node_info ni = { 0 };
    for (int i = 0; i < nn_node_count(back); i++) {
        nn_node_get(back, i, &ni);
        if (ni.op == NN_OP_CONV)
            break;
    }
    T_REQUIRE(ni.op == NN_OP_CONV && (int64_t)ni.weight_count == q->count);
    const float *P = nn_params(back) + ni.param_offset;
    const int8_t *qd = q->data;
    const float *sd = s->data;
    int64_t co = q->dims[0], cg = q->dims[1], kh = q->dims[2], kw = q->dims[3], bad = 0;
    for (int64_t o = 0; o < co; o++)
        for (int64_t c = 0; c < cg; c++)
            for (int64_t y = 0; y < kh; y++)
                for (int64_t x = 0; x < kw; x++)
                    bad += P[((y * kw + x) * cg + c) * co + o] !=
                           (float)qd[((o * cg + c) * kh + y) * kw + x] * sd[o];
    T_CHECKF(bad == 0, "%lld weights are not q x scale", (long long)bad);
}

TEST(quant_int8_export_form_and_import)
{
    pt_err e;
    nn_model *m = calib_net(&e);
    T_REQUIRE(m != NULL);
    enum { N = 16 };
    float *x = malloc(N * 192 * sizeof *x);
    T_REQUIRE(x != NULL);
    rng r;
    rng_seed(&r, 9);
    for (int i = 0; i < N * 192; i++)
        x[i] = rng_float(&r);
    nn_calib cal;
    calibrate(m, &cal, x, N);
    nn_export_quant q = { cal.lo, cal.hi, cal.images, "random images" };
    nn_export_meta meta = { .image_size = 8, .epoch = 2, .update = 20, .quant = &q };
    uint8_t *buf = NULL;
    size_t len = 0;
    T_REQUIRE(nn_export_onnx(m, &meta, &buf, &len, &e) == PT_OK);
    onnx_model *om = NULL;
    T_REQUIRE(onnx_load_mem(buf, len, "int8.onnx", &om, &e) == PT_OK);
    int pairs = 0;
    check_int8_form(om, &pairs);
    const char *qp = onnx_prop(om, "quantization");
    T_CHECKF(qp && strstr(qp, "int8 QDQ") && strstr(qp, "16 random images"), "%s",
             qp ? qp : "(none)");
    T_CHECK(om->inputs[0].elem_type == ONNX_FLOAT && !strcmp(om->outputs[0].name, "logits"));
    nn_import_opts o = { .h = 8, .w = 8, .norm = NN_NORM_RAW };
    nn_import_info info;
    nn_model *back = nn_import_onnx(om, &o, &info, &e);
    T_CHECKF(back != NULL, "%s", e.msg);
    if (back) {
        int fq = 0;
        for (int i = 0; i < nn_node_count(back); i++) {
            nn_node_info ni;
            nn_node_get(back, i, &ni);
            fq += ni.op == NN_OP_QUANT;
        }
        T_CHECKF(fq == pairs && info.quantized, "%d fake-quantization layers for %d pairs", fq,
                 pairs);
        check_dequantized(om, back);
        /* Close to the float net: each activation moved by half a step at most. */
        nn_ctx *c1 = nn_ctx_new_infer(m, N, &e), *c2 = nn_ctx_new_infer(back, N, &e);
        T_REQUIRE(c1 && c2);
        const float *a = nn_forward(c1, x, N, 0, 0, 0), *b = nn_forward(c2, x, N, 0, 0, 0);
        T_REQUIRE(a && b);
        double d = 0.0, s = 1e-6;
        for (int i = 0; i < N * 4; i++) {
            d = fmax(d, fabs((double)a[i] - b[i]));
            s = fmax(s, fabs((double)a[i]));
        }
        T_CHECKF(d <= 0.05 * s, "int8 logits differ from float by %.3g (largest %.3g)", d, s);
        printf("  int8 net against float: max |logit difference| %.3g of %.3g; %d pairs\n", d,
               s, pairs);
        nn_ctx_free(c1);
        nn_ctx_free(c2);
    }
    nn_model_free(back);
    onnx_free(om);
    free(buf);
    free(x);
    nn_calib_free(&cal);
    nn_model_free(m);
}
