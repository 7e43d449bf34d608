/* nn: a training context recomputes the cheap outputs (BN, depthwise conv) in the
 * backward instead of keeping them, and keeps none that no backward reads (nn_ctx.c,
 * issue 30). Against a context that keeps every output (nn_set_recompute(0)): the
 * logits, the parameter and input gradients and the BN records must be the same bits,
 * on the built-in MobileNetV2 and on a graph with every case the planner tells apart
 * (a BN with a fused activation read by a depthwise conv and an add, a depthwise conv
 * with a fused ReLU6 and no BN, BN after BN, a BN or a conv only an add reads, an add
 * a dropout reads, a BN as the output), trained, frozen and with the input gradient;
 * and the built-in MobileNetV2's training context must keep no BN output and take at
 * most 55% of the memory. */
#include "tests/t.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/rng.h"
#include "nn/nn.h"
#include "nn/nn_models.h"

static void fill(float *p, size_t n, uint64_t seed, float lo, float hi)
{
    rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        p[i] = rng_uniform(&r, lo, hi);
}

static nn_ctx *ctx_with(const nn_model *m, int n, int recompute)
{
    int was = nn_set_recompute(recompute);
    nn_ctx *c = nn_ctx_new(m, n, NULL);
    nn_set_recompute(was);
    return c;
}

/* Two training steps (with an inference forward between them, as validation does) on
 * a keeping and a recomputing context: every result the same bits. Returns the
 * number of mismatching results. */
static int same_bits(nn_model *m, int n)
{
    int h, w, ch;
    nn_model_input_shape(m, &h, &w, &ch);
    const int k = nn_model_classes(m);
    const size_t in_len = (size_t)n * h * w * ch, np = nn_param_count(m);
    const size_t nrec = nn_bn_record_count(m);
    float *x = malloc(in_len * sizeof *x), *dl = malloc((size_t)n * k * sizeof *dl);
    double *ra = calloc(nrec + 1, sizeof *ra), *rb = calloc(nrec + 1, sizeof *rb);
    nn_ctx *keep = ctx_with(m, n, 0), *re = ctx_with(m, n, 1);
    int bad = 0;
    if (!x || !dl || !ra || !rb || !keep || !re) {
        bad = 1000;
        goto done;
    }
    for (int step = 0; step < 2; step++) {
        fill(x, in_len, 10 + (uint64_t)step, -2.0f, 2.0f);
        fill(dl, (size_t)n * k, 20 + (uint64_t)step, -0.5f, 0.5f);
        nn_zero_grads(keep);
        nn_zero_grads(re);
        const float *ya = nn_forward(keep, x, n, 1, 5, 100);
        const float *yb = nn_forward(re, x, n, 1, 5, 100);
        if (!ya || !yb) {
            bad += 100;
            break;
        }
        bad += memcmp(ya, yb, (size_t)n * k * sizeof *ya) != 0;
        bad += nn_backward(keep, dl) != PT_OK;
        bad += nn_backward(re, dl) != PT_OK;
        bad += memcmp(nn_grads(keep), nn_grads(re), np * sizeof(float)) != 0;
        const float *ga = nn_ctx_input_grad(keep), *gb = nn_ctx_input_grad(re);
        bad += (ga == NULL) != (gb == NULL);
        if (ga && gb)
            bad += memcmp(ga, gb, in_len * sizeof *ga) != 0;
        nn_bn_records_take(&keep, 1, ra);
        nn_bn_records_take(&re, 1, rb);
        bad += memcmp(ra, rb, nrec * sizeof *ra) != 0;
        ya = nn_forward(keep, x, n, 0, 0, 0);
        yb = nn_forward(re, x, n, 0, 0, 0);
        bad += !ya || !yb || memcmp(ya, yb, (size_t)n * k * sizeof *ya) != 0;
    }
done:
    nn_ctx_free(keep);
    nn_ctx_free(re);
    free(x);
    free(dl);
    free(ra);
    free(rb);
    return bad;
}

TEST(nn_recompute_mobilenetv2_same_bits)
{
    nn_model *m = nn_build_mobilenetv2(32, 32, 5, 0.35f, 0.2f, NULL);
    T_REQUIRE(m != NULL);
    nn_model_init_params(m, 3);
    /* Running statistics that differ from the batch's, so a frozen BN is not a
     * training one by accident. */
    fill(nn_buffers(m), nn_buffer_count(m), 4, 0.5f, 1.5f);
    int bad = same_bits(m, 3);
    T_CHECKF(bad == 0, "trained: %d results differ", bad);
    T_CHECK(nn_model_freeze_backbone(m) == PT_OK);
    nn_model_set_input_grad(m, 1);
    bad = same_bits(m, 3);
    T_CHECKF(bad == 0, "frozen, with the input gradient: %d results differ", bad);
    nn_model_unfreeze(m);
    bad = same_bits(m, 2);
    T_CHECKF(bad == 0, "unfrozen, with the input gradient: %d results differ", bad);
    nn_model_free(m);
}

/* in -> conv -> BN+ReLU -> (dw conv+ReLU6 -> conv -> BN) + that ReLU -> BN -> BN ->
 * (+ a 1x1 conv of it) -> dropout -> conv -> gap -> dense -> BN (the output). */
static nn_model *odd_graph(int *bn_relu, int *dw, int *bn_add, int *conv_add, int *bn_drop,
                           int *bn_out)
{
    nn_model *m = nn_model_new(6, 6, 4);
    int x = nn_input(m);
    int a = nn_conv2d(m, x, 8, 3, 3, 1, NN_PAD_SAME, 1, 0);
    *bn_relu = nn_batchnorm(m, a);
    int r = nn_relu(m, *bn_relu);
    *dw = nn_conv2d(m, r, 8, 3, 3, 1, NN_PAD_SAME, 8, 1);
    int r6 = nn_relu6(m, *dw);
    int p = nn_conv2d(m, r6, 8, 1, 1, 1, 0, 1, 0);
    *bn_add = nn_batchnorm(m, p);
    int s = nn_add(m, *bn_add, r);
    int b3 = nn_batchnorm(m, s);
    int b4 = nn_batchnorm(m, b3);
    *conv_add = nn_conv2d(m, b4, 8, 1, 1, 1, 0, 1, 1);
    *bn_drop = nn_add(m, *conv_add, b4);
    int d = nn_dropout(m, *bn_drop, 0.3f);
    int c = nn_conv2d(m, d, 6, 3, 3, 2, NN_PAD_SAME, 1, 1);
    int g = nn_gap(m, c);
    int fc = nn_dense(m, g, 4);
    *bn_out = nn_batchnorm(m, fc);
    if (nn_model_finalize(m, *bn_out, NULL) != PT_OK) {
        nn_model_free(m);
        return NULL;
    }
    nn_model_init_params(m, 9);
    fill(nn_buffers(m), nn_buffer_count(m), 8, 0.5f, 1.5f);
    return m;
}

TEST(nn_recompute_odd_graph_same_bits)
{
    int bn_relu, dw, bn_add, conv_add, add_drop, bn_out;
    nn_model *m = odd_graph(&bn_relu, &dw, &bn_add, &conv_add, &add_drop, &bn_out);
    T_REQUIRE(m != NULL);
    int bad = same_bits(m, 3);
    T_CHECKF(bad == 0, "trained: %d results differ", bad);
    nn_model_set_input_grad(m, 1);
    bad = same_bits(m, 2);
    T_CHECKF(bad == 0, "with the input gradient: %d results differ", bad);
    T_CHECK(nn_model_freeze_backbone(m) == PT_OK);
    bad = same_bits(m, 3);
    T_CHECKF(bad == 0, "frozen: %d results differ", bad);
    /* What is recomputed, or read by no backward (a BN or conv only an add reads),
     * shows no output: it is not kept. An add a dropout reads and the output BN are. */
    nn_ctx *c = ctx_with(m, 2, 1);
    T_REQUIRE(c != NULL);
    float x[2 * 6 * 6 * 4];
    fill(x, sizeof x / sizeof *x, 1, -1.0f, 1.0f);
    T_REQUIRE(nn_forward(c, x, 2, 1, 1, 0) != NULL);
    T_CHECK(nn_ctx_output(c, bn_relu) == NULL);
    T_CHECK(nn_ctx_output(c, dw) == NULL);
    T_CHECK(nn_ctx_output(c, bn_add) == NULL);
    T_CHECK(nn_ctx_output(c, conv_add) == NULL);
    T_CHECK(nn_ctx_output(c, add_drop) != NULL);
    T_CHECK(nn_ctx_output(c, bn_out) != NULL);
    nn_ctx_free(c);
    nn_model_free(m);
}

TEST(nn_recompute_halves_mobilenetv2_training_memory)
{
    nn_model *m = nn_build_mobilenetv2(128, 128, 5, 1.0f, 0.2f, NULL);
    T_REQUIRE(m != NULL);
    nn_ctx *keep = ctx_with(m, 16, 0), *re = ctx_with(m, 16, 1);
    T_REQUIRE(keep != NULL && re != NULL);
    nn_ctx_mem a, b;
    nn_ctx_mem_get(keep, &a);
    nn_ctx_mem_get(re, &b);
    T_CHECK(a.kept[NN_OP_BN] > 0);
    T_CHECKF(b.kept[NN_OP_BN] == 0, "%zu bytes of BN outputs kept", b.kept[NN_OP_BN]);
    size_t sa = a.masks + a.shared + a.params + a.other;
    size_t sb = b.masks + b.shared + b.params + b.other;
    for (int op = 0; op < NN_OP_COUNT; op++) {
        sa += a.kept[op];
        sb += b.kept[op];
    }
    T_CHECK(sa == nn_ctx_bytes(keep) && sb == nn_ctx_bytes(re));
    T_CHECKF(nn_ctx_bytes(re) * 100 <= nn_ctx_bytes(keep) * 55, "%zu bytes against %zu",
             nn_ctx_bytes(re), nn_ctx_bytes(keep));
    nn_ctx_free(keep);
    nn_ctx_free(re);
    nn_model_free(m);
}
