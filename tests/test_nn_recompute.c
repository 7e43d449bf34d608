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

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/rng.h"
#include "nn/nn.h"
#include "nn/nn_impl.h"
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

/* Finalizes m with output out, its parameters drawn from seed and running statistics
 * that differ from a batch's (so a frozen BN is not a training one by accident);
 * NULL, m freed, when it does not finalize. */
static nn_model *finish(nn_model *m, int out, uint64_t seed)
{
    if (nn_model_finalize(m, out, NULL) != PT_OK) {
        nn_model_free(m);
        return NULL;
    }
    nn_model_init_params(m, seed);
    fill(nn_buffers(m), nn_buffer_count(m), seed + 1, 0.5f, 1.5f);
    return m;
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
    return finish(m, *bn_out, 9);
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

/* MobileNet-like blocks at 40 x 40 x 96, large enough that the readers of a BN left to
 * them (NN_READERS) compute its output in more than one block: a depthwise conv at
 * stride 1 and 2 in two bands of rows, a 1x1 conv in two chunks of rows (batch 2).
 *   in -> 1x1 -> BN+ReLU6 -> dw -> BN+ReLU6 -> 1x1 -> BN -> 1x1 -> BN+ReLU -> dw/2 ->
 *   BN+ReLU6 -> (3x3 conv) + (dw -> BN -> 1x1) -> gap -> dense
 * ids[] gets the BNs, then the depthwise convs. */
static nn_model *xform_graph(int ids[9])
{
    nn_model *m = nn_model_new(40, 40, 3);
    int x = nn_input(m);
    int e = nn_conv2d(m, x, 96, 1, 1, 1, 0, 1, 0);
    ids[0] = nn_batchnorm(m, e);
    ids[6] = nn_conv2d(m, nn_relu6(m, ids[0]), 96, 3, 3, 1, NN_PAD_SAME, 96, 0);
    ids[1] = nn_batchnorm(m, ids[6]);
    int p = nn_conv2d(m, nn_relu6(m, ids[1]), 24, 1, 1, 1, 0, 1, 0);
    ids[2] = nn_batchnorm(m, p);
    int e2 = nn_conv2d(m, ids[2], 96, 1, 1, 1, 0, 1, 0);
    ids[3] = nn_batchnorm(m, e2);
    ids[7] = nn_conv2d(m, nn_relu(m, ids[3]), 96, 3, 3, 2, NN_PAD_SAME, 96, 0);
    ids[4] = nn_batchnorm(m, ids[7]);
    int r5 = nn_relu6(m, ids[4]);
    int f = nn_conv2d(m, r5, 16, 3, 3, 1, NN_PAD_SAME, 1, 1);
    ids[8] = nn_conv2d(m, r5, 96, 3, 3, 1, NN_PAD_SAME, 96, 1);
    ids[5] = nn_batchnorm(m, ids[8]);
    int p2 = nn_conv2d(m, ids[5], 16, 1, 1, 1, 0, 1, 0);
    return finish(m, nn_dense(m, nn_gap(m, nn_add(m, f, p2)), 4), 5);
}

TEST(nn_recompute_bn_left_to_its_readers_same_bits)
{
    int ids[9];
    nn_model *m = xform_graph(ids);
    T_REQUIRE(m != NULL);
    /* What each output becomes: the BNs read only by depthwise and 1x1 convs are left
     * to them; one read by a 3x3 conv is replayed, as are the depthwise convs at
     * stride 1; the one at stride 2 is kept (a quarter of its input, read whole to
     * make it). */
    const int want[9] = { NN_READERS, NN_READERS, NN_READERS, NN_READERS, NN_REPLAYED,
                          NN_READERS, NN_REPLAYED, NN_KEPT, NN_REPLAYED };
    nn_ctx *c = ctx_with(m, 2, 1), *k = ctx_with(m, 2, 0);
    T_REQUIRE(c != NULL && k != NULL);
    for (int j = 0; j < 9; j++) {
        T_CHECKF(nn_ctx_keep(c, ids[j]) == want[j], "node %d: %d, not %d", ids[j],
                 nn_ctx_keep(c, ids[j]), want[j]);
        T_CHECK(nn_ctx_keep(k, ids[j]) == NN_KEPT);
    }
    nn_ctx_free(c);
    nn_ctx_free(k);
    for (int portable = 0; portable < 2; portable++) {
        nn_simd_force_portable(portable);
        int bad = same_bits(m, 2);
        T_CHECKF(bad == 0, "trained (portable %d): %d results differ", portable, bad);
    }
    nn_simd_force_portable(0);
    T_CHECK(nn_model_freeze_backbone(m) == PT_OK);
    nn_model_set_input_grad(m, 1);
    int bad = same_bits(m, 2);
    T_CHECKF(bad == 0, "frozen, with the input gradient: %d results differ", bad);
    nn_model_unfreeze(m);
    bad = same_bits(m, 1);
    T_CHECKF(bad == 0, "one example, with the input gradient: %d results differ", bad);
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

/* A BN's output and what its readers compute of it (nn_xform) come from one function,
 * whose AVX2 and portable forms must give the same bits, NaN, -0, 6 and infinities
 * included, with a channel count that leaves a tail after the vectors. */
TEST(nn_scale_shift_act_avx2_and_portable_same_bits)
{
    enum { ROWS = 7, C = 13 };
    const float special[] = { 0.0f, -0.0f, 6.0f, -6.0f, 5.9999995f, 1e-40f, -1e-40f,
                              3.4e38f, -3.4e38f, (float)INFINITY, -(float)INFINITY, NAN };
    const int ns = (int)(sizeof special / sizeof *special);
    float x[ROWS * C], a[C], b[C], y[2][ROWS * C];
    fill(x, ROWS * C, 3, -8.0f, 8.0f);
    fill(a, C, 4, -2.0f, 2.0f);
    fill(b, C, 5, -1.0f, 1.0f);
    for (int i = 0; i < ROWS * C; i += 3)
        x[i] = special[(i / 3) % ns];
    a[1] = 0.0f;
    a[2] = 1.0f;
    b[2] = 0.0f;
    b[3] = -0.0f;
    int bad = 0;
    for (int act = NN_ACT_NONE; act <= NN_ACT_RELU6; act++) {
        for (int portable = 0; portable < 2; portable++) {
            nn_simd_force_portable(portable);
            nn_scale_shift_act(ROWS, C, x, a, b, act, y[portable]);
        }
        bad += memcmp(y[0], y[1], sizeof y[0]) != 0;
    }
    nn_simd_force_portable(0);
    T_CHECKF(bad == 0, "%d of 3 activations differ", bad);
}
