/* --backbone-bn frozen: nn_model_freeze_bn runs every batch norm on its running
 * statistics in a training forward too, keeps gamma, beta and the statistics as they
 * are, and lets the convolutions and the head learn. */
#include "tests/t.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

TEST(nn_frozen_bn_trains_on_running_statistics_and_keeps_them)
{
    pt_err e;
    nn_model *m = nn_model_new(8, 8, 3);
    T_REQUIRE(m != NULL);
    int x = nn_conv2d(m, nn_input(m), 6, 3, 3, 1, 1, 1, 0);
    x = nn_relu(m, nn_batchnorm(m, x));
    x = nn_dense(m, nn_gap(m, x), 4);
    T_REQUIRE(nn_model_finalize(m, x, &e) == PT_OK);
    nn_model_init_params(m, 7);
    nn_model_set_bn_warm_start(m, 0);
    size_t np = nn_param_count(m), nb = nn_buffer_count(m);
    float *bufs = nn_buffers(m);
    for (size_t i = 0; i < nb; i++) /* running mean 0.2, variance 1.5: not the batch's */
        bufs[i] = i < nb / 2 ? 0.2f : 1.5f;
    float *P = nn_params(m);
    for (size_t i = 0; i < np; i++)
        if (P[i] == 1.0f) /* gamma: something other than identity */
            P[i] = 0.8f;
    float in[4 * 8 * 8 * 3];
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        in[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    nn_ctx *c = nn_ctx_new(m, 4, &e);
    T_REQUIRE(c != NULL);

    const float *y = nn_forward(c, in, 4, 0, 1, 0);
    T_REQUIRE(y != NULL);
    float eval[16], train[16];
    memcpy(eval, y, sizeof eval);
    /* Trained as imported: a training forward normalises by the batch, unlike eval. */
    y = nn_forward(c, in, 4, 1, 1, 0);
    memcpy(train, y, sizeof train);
    T_CHECK(memcmp(eval, train, sizeof eval) != 0);
    /* That forward's statistics are folded in, as the trainer does after each update;
     * then the running statistics set back. */
    nn_model_update_bn(m, &c, 1, 1);
    for (size_t i = 0; i < nb; i++)
        bufs[i] = i < nb / 2 ? 0.2f : 1.5f;

    nn_model_freeze_bn(m);
    size_t trainable = nn_trainable_count(m);
    T_CHECKF(trainable == np - 12, "%zu of %zu trainable", trainable, np);
    y = nn_forward(c, in, 4, 1, 1, 0);
    memcpy(train, y, sizeof train);
    T_CHECK(memcmp(eval, train, sizeof eval) == 0);
    float dl[16];
    for (int i = 0; i < 16; i++)
        dl[i] = (float)(i % 5) * 0.1f - 0.2f;
    nn_zero_grads(c);
    T_REQUIRE(nn_backward(c, dl) == PT_OK);
    const float *g = nn_grads(c);
    double conv = 0, bn = 0;
    for (size_t i = 0; i < np; i++) {
        if (nn_param_trainable(m, i))
            conv += fabs(g[i]);
        else
            bn += fabs(g[i]);
    }
    T_CHECKF(conv > 0 && bn == 0, "trainable gradients %g, batch norm's %g", conv, bn);
    float before[64];
    T_REQUIRE(nb <= 64);
    memcpy(before, bufs, nb * sizeof *bufs);
    nn_model_update_bn(m, &c, 1, 5);
    T_CHECK(memcmp(before, bufs, nb * sizeof *bufs) == 0);
    nn_ctx_free(c);
    nn_model_free(m);
}

#include "base/util.h"
#include "config.h"
#include "engine.h"

/* --backbone-bn frozen keeps pretrained statistics: a net from scratch has none. */
TEST(nn_frozen_bn_is_refused_without_pretrained_weights)
{
    run_config c;
    cfg_defaults(&c);
    T_REQUIRE(cfg_set(&c, "backbone-bn", "frozen", NULL) == PT_OK);
    eng *g = NULL;
    pt_err e;
    T_EQ_INT(eng_create(&c, &g, &e), PT_EUSAGE);
    T_CHECKF(strstr(e.msg, "--backbone-bn frozen") && strstr(e.msg, "built-in net"), "%s", e.msg);
    util_copy(c.model, sizeof c.model, "tests/data/import/blocks.onnx");
    c.reinit = 1;
    T_EQ_INT(eng_create(&c, &g, &e), PT_EUSAGE);
    T_CHECKF(strstr(e.msg, "--reinit") != NULL, "%s", e.msg);
    c.reinit = 0;
    T_EQ_INT(eng_create(&c, &g, &e), PT_OK);
    eng_destroy(g);
}
