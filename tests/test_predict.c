/* Tests of inference: the inference-only context (nn_ctx_new_infer), opening a run
 * for inference (train/runmodel.h), the predict engine (train/predict.h) and the
 * predict and ensemble commands. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/util.h"
#include "nn/nn.h"
#include "nn/nn_models.h"
#include "t.h"

/* Inference logits of a training context and an inference one, bit for bit, and the
 * inference context's bytes against the training one's. */
static void check_infer_ctx(nn_model *m, int batch, const char *what)
{
    int h, w, ch;
    nn_model_input_shape(m, &h, &w, &ch);
    size_t px = (size_t)h * w * ch * batch;
    float *x = malloc(px * sizeof *x);
    T_REQUIRE(x != NULL);
    rng r;
    rng_seed(&r, 7);
    for (size_t i = 0; i < px; i++)
        x[i] = rng_float(&r);
    pt_err e;
    nn_ctx *ct = nn_ctx_new(m, batch, &e), *ci = nn_ctx_new_infer(m, batch, &e);
    T_REQUIRE(ct && ci);
    int k = nn_model_classes(m);
    for (int n = batch; n >= 1; n -= batch - 1) {
        const float *yt = nn_forward(ct, x, n, 0, 0, 0);
        const float *yi = nn_forward(ci, x, n, 0, 0, 0);
        T_REQUIRE(yt && yi);
        T_CHECKF(memcmp(yt, yi, (size_t)n * k * sizeof *yt) == 0,
                 "%s: inference logits differ from training's at batch %d", what, n);
        if (n == 1)
            break;
    }
    size_t bt = nn_ctx_bytes(ct), bi = nn_ctx_bytes(ci);
    printf("  %s batch %d: training context %.2f MB, inference %.2f MB (%.1f%%)\n", what, batch,
           bt / 1e6, bi / 1e6, 100.0 * bi / bt);
    T_CHECKF(bi * 2 < bt, "%s: inference context %zu bytes, training %zu", what, bi, bt);
    /* Training on an inference context is refused, never run on missing buffers. */
    T_CHECK(nn_forward(ci, x, 1, 1, 0, 0) == NULL);
    float *dl = calloc((size_t)k, sizeof *dl);
    T_CHECK(nn_backward(ci, dl) == PT_EUSAGE);
    T_CHECK(nn_grads(ci) == NULL);
    T_CHECK(nn_ctx_is_infer(ci) && !nn_ctx_is_infer(ct));
    nn_zero_grads(ci);
    free(dl);
    nn_ctx_free(ct);
    nn_ctx_free(ci);
    free(x);
}

TEST(predict_infer_ctx_small)
{
    pt_err e;
    nn_model *m = nn_build_small(32, 32, 5, 0.3f, &e);
    T_REQUIRE(m != NULL);
    nn_model_init_params(m, 3);
    check_infer_ctx(m, 8, "small 32px");
    nn_model_free(m);
    int widths[NN_SMALL_MAX_BLOCKS], strided[NN_SMALL_MAX_BLOCKS];
    int nb = nn_parse_widths("16,a,32s,48", 32, widths, strided, &e);
    T_REQUIRE(nb > 0);
    m = nn_build_small_widths(32, 32, 4, 0.2f, widths, strided, nb, 2, &e);
    T_REQUIRE(m != NULL);
    nn_model_init_params(m, 5);
    check_infer_ctx(m, 16, "small 16,a,32s,48 x2");
    nn_model_free(m);
}

TEST(predict_infer_ctx_mobilenetv2)
{
    pt_err e;
    nn_model *m = nn_build_mobilenetv2(64, 64, 10, 1.0f, 0.2f, &e);
    T_REQUIRE(m != NULL);
    nn_model_init_params(m, 11);
    check_infer_ctx(m, 4, "mobilenetv2 64px");
    nn_model_free(m);
}
