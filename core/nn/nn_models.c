/* nn_models — small (VGG-style) and MobileNetV2, built through the nn builder. */
#include <stdlib.h>

#include "nn/nn_models.h"

int nn_add_input_normalization(nn_model *m, int input)
{
    float scale[3] = {2.0f, 2.0f, 2.0f}, shift[3] = {-1.0f, -1.0f, -1.0f};
    int h, w, c;
    nn_model_input_shape(m, &h, &w, &c);
    if (c != 3)
        return PT_EUSAGE;
    return nn_affine(m, input, scale, shift);
}

int nn_add_head(nn_model *m, int features, int n_classes, float dropout)
{
    int x = nn_gap(m, features);
    x = nn_dropout(m, x, dropout);
    return nn_dense(m, x, n_classes);
}

static nn_model *finish(nn_model *m, int out, pt_err *e)
{
    if (nn_model_finalize(m, out, e) != PT_OK) {
        nn_model_free(m);
        return NULL;
    }
    return m;
}

static nn_model *start(int h, int w, int n_classes, int min_hw, int *x, pt_err *e)
{
    if (n_classes < 1) {
        err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "nn: %d classes", n_classes);
        return NULL;
    }
    if (h < min_hw || w < min_hw) {
        err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                "nn: input %dx%d is too small for this net: it needs at least %dx%d", h, w,
                min_hw, min_hw);
        return NULL;
    }
    nn_model *m = nn_model_new(h, w, 3);
    if (!m) {
        err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "nn: out of memory");
        return NULL;
    }
    *x = nn_add_input_normalization(m, nn_input(m));
    return m;
}

/* convs x (3x3 conv -> BN -> ReLU), the first at the block's stride. */
static int plain_block(nn_model *m, int x, int cout, int stride, int convs)
{
    for (int k = 0; k < convs; k++) {
        x = nn_conv2d(m, x, cout, 3, 3, k == 0 ? stride : 1, NN_PAD_SAME, 1, 0);
        x = nn_batchnorm(m, x);
        x = nn_relu(m, x);
    }
    return x;
}

/* ResNet's basic block: the shortcut's 1x1 conv where the channels or the stride change
 * (its "same" padding is none at stride 1 and 2 on even sides, as PyTorch's). */
static int basic_block(nn_model *m, int x, int cin, int cout, int stride)
{
    int y = nn_conv2d(m, x, cout, 3, 3, stride, NN_PAD_SAME, 1, 0);
    y = nn_relu(m, nn_batchnorm(m, y));
    y = nn_batchnorm(m, nn_conv2d(m, y, cout, 3, 3, 1, NN_PAD_SAME, 1, 0));
    if (stride != 1 || cin != cout)
        x = nn_batchnorm(m, nn_conv2d(m, x, cout, 1, 1, stride, NN_PAD_SAME, 1, 0));
    return nn_relu(m, nn_add(m, x, y));
}

nn_model *nn_build_small_widths(int h, int w, int n_classes, float dropout, const int *widths,
                                const int *strided, int n_blocks, int convs_per_block,
                                pt_err *e)
{
    if (convs_per_block < 1 || convs_per_block > NN_SMALL_RESIDUAL) {
        err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                "nn: small takes 1 or 2 convs per block or residual blocks, not %d",
                convs_per_block);
        return NULL;
    }
    if (n_blocks < 1 || n_blocks > NN_SMALL_MAX_BLOCKS) {
        err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                "nn: small takes 1 to %d blocks, not %d", NN_SMALL_MAX_BLOCKS, n_blocks);
        return NULL;
    }
    for (int b = 0; b < n_blocks; b++) {
        int kind = strided ? strided[b] : NN_BLOCK_POOL;
        if (kind < NN_BLOCK_POOL || kind > NN_BLOCK_AVGPOOL) {
            err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                    "nn: small's block %d is of kind %d", b + 1, kind);
            return NULL;
        }
        if (kind != NN_BLOCK_AVGPOOL && (widths[b] < 1 || widths[b] > NN_SMALL_MAX_WIDTH)) {
            err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                    "nn: small's block %d has %d channels (1 to %d)", b + 1, widths[b],
                    NN_SMALL_MAX_WIDTH);
            return NULL;
        }
    }
    int x, c = 3;
    nn_model *m = start(h, w, n_classes, 1 << n_blocks, &x, e);
    if (!m)
        return NULL;
    for (int b = 0; b < n_blocks; b++) {
        int kind = strided ? strided[b] : NN_BLOCK_POOL;
        if (kind == NN_BLOCK_AVGPOOL) {
            x = nn_avgpool(m, x, 2, 2, 0);
            continue;
        }
        int stride = kind == NN_BLOCK_STRIDED ? 2 : 1;
        if (convs_per_block == NN_SMALL_RESIDUAL)
            x = basic_block(m, x, c, widths[b], stride);
        else
            x = plain_block(m, x, widths[b], stride, convs_per_block);
        c = widths[b];
        if (kind == NN_BLOCK_POOL)
            x = nn_maxpool(m, x, 2, 2, 0);
    }
    return finish(m, nn_add_head(m, x, n_classes, dropout), e);
}

nn_model *nn_build_small_ex(int h, int w, int n_classes, float dropout, int convs_per_block,
                            pt_err *e)
{
    static const int widths[4] = {32, 64, 128, 256};
    return nn_build_small_widths(h, w, n_classes, dropout, widths, NULL, 4, convs_per_block, e);
}

nn_model *nn_build_small(int h, int w, int n_classes, float dropout, pt_err *e)
{
    return nn_build_small_ex(h, w, n_classes, dropout, NN_SMALL_CONVS_PER_BLOCK, e);
}

/* keras.applications' _make_divisible: nearest multiple of 8, never below 8 and
 * never more than 10% under v. */
static int make_divisible(double v)
{
    int d = 8;
    int nv = (int)(v + d / 2.0) / d * d;
    if (nv < d)
        nv = d;
    if (nv < 0.9 * v)
        nv += d;
    return nv;
}

static int conv_bn(nn_model *m, int x, int cout, int k, int stride, int groups, int relu6)
{
    x = nn_conv2d(m, x, cout, k, k, stride, NN_PAD_SAME, groups, 0);
    x = nn_batchnorm(m, x);
    return relu6 ? nn_relu6(m, x) : x;
}

static int inverted_residual(nn_model *m, int x, int cin, int cout, int stride, int expansion)
{
    int in = x;
    int mid = cin * expansion;
    if (expansion != 1)
        x = conv_bn(m, x, mid, 1, 1, 1, 1);
    x = conv_bn(m, x, mid, 3, stride, mid, 1);
    x = conv_bn(m, x, cout, 1, 1, 1, 0);
    if (stride == 1 && cin == cout)
        x = nn_add(m, in, x);
    return x;
}

nn_model *nn_build_mobilenetv2(int h, int w, int n_classes, float alpha, float dropout,
                               pt_err *e)
{
    if (!(alpha > 0.0f && alpha <= 4.0f)) {
        err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "nn: alpha %g not supported",
                (double)alpha);
        return NULL;
    }
    int x;
    nn_model *m = start(h, w, n_classes, 32, &x, e);
    if (!m)
        return NULL;
    /* (expansion, output channels, repeats, first stride), from the paper's Table 2. */
    static const int cfg[7][4] = {
        {1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
        {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1},
    };
    int c = make_divisible(32.0 * alpha);
    x = conv_bn(m, x, c, 3, 2, 1, 1);
    for (int s = 0; s < 7; s++) {
        int cout = make_divisible((double)(int)(cfg[s][1] * alpha));
        for (int r = 0; r < cfg[s][2]; r++) {
            x = inverted_residual(m, x, c, cout, r == 0 ? cfg[s][3] : 1, cfg[s][0]);
            c = cout;
        }
    }
    int last = alpha > 1.0f ? make_divisible(1280.0 * alpha) : 1280;
    x = conv_bn(m, x, last, 1, 1, 1, 1);
    return finish(m, nn_add_head(m, x, n_classes, dropout), e);
}
