/* explain — Grad-CAM (explain.h): the maps of one image on a training context of
 * batch 1 that runs the inference forward with a backward (nn_forward_eval_grad), the
 * layer's output and its gradient taken by nn's observers; the colour map and the
 * bilinear upsampling. The sheets and top losses are explain_sheet.c's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "data/image.h"
#include "infer/explain.h"
#include "infer/runmodel.h"
#include "nn/nn.h"

struct xpl {
    const rm_model *m;
    nn_ctx *ctx;
    int S, k;
    float *x;           /* the image as floats, S x S x 3 */
    float *dl;          /* dlogits: one-hot */
    int layer;          /* the node the observers watch */
    size_t len;         /* its output's floats */
    float *A, *G;       /* its output and output gradient in the last pass */
    int got_a, got_g;
    int input_grad;     /* the model's setting before xpl_new, put back by xpl_free */
};

void xpl_free(xpl *x)
{
    if (!x)
        return;
    nn_model_set_input_grad(x->m->net, x->input_grad);
    nn_ctx_free(x->ctx);
    free(x->x);
    free(x->dl);
    free(x->A);
    free(x->G);
    free(x);
}

int xpl_new(const rm_model *m, xpl **out, pt_err *e)
{
    *out = NULL;
    if (!m || !m->net)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "explain: no model");
    int oc, oh, ow;
    nn_node_info o;
    nn_node_get(m->net, nn_output_node(m->net), &o);
    oh = o.h, ow = o.w, oc = o.c;
    if (oh != 1 || ow != 1 || oc < 2)
        return err_set(e, PT_EUSAGE, m->source, PT_NO_RECORD, PT_NO_OFFSET,
                       "not a classifier: its output is %d x %d x %d, Grad-CAM needs class "
                       "scores (1 x 1 x classes, at least 2)", oh, ow, oc);
    xpl *x = calloc(1, sizeof *x);
    if (!x)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    x->m = m;
    x->S = m->image_size;
    x->k = m->n_classes;
    x->layer = -1;
    /* Every node carries a gradient, so any layer's can be read. */
    x->input_grad = nn_model_input_grad(m->net);
    nn_model_set_input_grad(m->net, 1);
    x->x = malloc((size_t)x->S * x->S * 3 * sizeof *x->x);
    x->dl = calloc((size_t)x->k, sizeof *x->dl);
    if (!x->x || !x->dl) {
        xpl_free(x);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    x->ctx = nn_ctx_new(m->net, 1, e);
    if (!x->ctx) {
        xpl_free(x);
        if (e->code == PT_EUSAGE) /* an inference-only layer: an int8 file's rounding */
            return err_set(e, PT_EUSAGE, m->source, PT_NO_RECORD, PT_NO_OFFSET,
                           "Grad-CAM needs gradients, and an int8 file's quantization has "
                           "none: explain the float model (the run folder or its model.onnx)");
        return e->code;
    }
    *out = x;
    return PT_OK;
}

const rm_model *xpl_model(const xpl *x)
{
    return x->m;
}

int xpl_nodes(const rm_model *m)
{
    return nn_node_count(m->net);
}

/* A node's output shape; 0 when it is not a live node. */
static int shape(const rm_model *m, int layer, int *h, int *w, int *c)
{
    nn_node_info in;
    if (layer < 0 || layer >= nn_node_count(m->net) || nn_node_get(m->net, layer, &in) != PT_OK)
        return 0;
    *h = in.h, *w = in.w, *c = in.c;
    return 1;
}

/* Whether node i is one the output depends on: the nodes walked back from it. */
static int on_path(const rm_model *m, int node)
{
    const int n = nn_node_count(m->net);
    uint8_t *seen = calloc((size_t)n, 1);
    if (!seen)
        return 0;
    seen[nn_output_node(m->net)] = 1;
    for (int i = n - 1; i >= 0; i--) {
        nn_node_info in;
        if (!seen[i] || nn_node_get(m->net, i, &in) != PT_OK)
            continue;
        for (int k = 0; k < 2; k++)
            if (in.in[k] >= 0)
                seen[in.in[k]] = 1;
    }
    int r = seen[node];
    free(seen);
    return r;
}

int xpl_default_layer(const rm_model *m)
{
    const int n = nn_node_count(m->net);
    int last_map = -1;
    for (int i = n - 1; i >= 0; i--) {
        nn_node_info in;
        if (nn_node_get(m->net, i, &in) != PT_OK || !on_path(m, i))
            continue;
        /* The map the global pooling reads: its input node shows the activated values
         * of a BN or conv with a fused activation (nn_ctx_on_node). One of 1 x 1 (a
         * MobileNetV2 at 32 px) would be no map: then the last one larger. */
        int h, w, c;
        if (in.op == NN_OP_GAP && shape(m, in.in[0], &h, &w, &c) && h * w > 1)
            return in.in[0];
        if (last_map < 0 && in.h * in.w > 1 && in.op != NN_OP_INPUT)
            last_map = i;
    }
    return last_map;
}

int xpl_layer_check(const rm_model *m, int layer, pt_err *e)
{
    int h, w, c;
    const int n = nn_node_count(m->net);
    if (!shape(m, layer, &h, &w, &c) || !on_path(m, layer))
        return err_set(e, PT_EUSAGE, m->source, PT_NO_RECORD, PT_NO_OFFSET,
                       "no layer %d: the net has nodes 0-%d (`petal-tui model` lists them), "
                       "of which those the output depends on can be chosen (default %d)",
                       layer, n - 1, xpl_default_layer(m));
    if (h * w < 2)
        return err_set(e, PT_EUSAGE, m->source, PT_NO_RECORD, PT_NO_OFFSET,
                       "layer %d: its output is %d x %d x %d, not a map: choose a node of "
                       "0-%d whose output is larger than 1 x 1 (default %d)",
                       layer, h, w, c, n - 1, xpl_default_layer(m));
    return PT_OK;
}

void xpl_layer_shape(const rm_model *m, int layer, int *h, int *w, int *c)
{
    if (!shape(m, layer, h, w, c))
        *h = *w = *c = 0;
}

int xpl_class_parse(const rm_model *m, const char *s)
{
    for (int c = 0; c < m->n_classes; c++)
        if (!strcmp(s, m->class_names[c]))
            return c;
    char *end;
    long v = strtol(s, &end, 10);
    if (end != s && !*end && v >= 0 && v < m->n_classes)
        return (int)v;
    return -1;
}

/* The observers: the watched node's output (forward) and its gradient (backward). */
static void take(float *dst, size_t len, const float *y, size_t count, int *got)
{
    if (count == len) {
        memcpy(dst, y, len * sizeof *y);
        *got = 1;
    }
}

static void on_out(void *arg, int node, const float *y, size_t count)
{
    xpl *x = arg;
    if (node == x->layer)
        take(x->A, x->len, y, count, &x->got_a);
}

static void on_grad(void *arg, int node, const float *y, size_t count)
{
    xpl *x = arg;
    if (node == x->layer)
        take(x->G, x->len, y, count, &x->got_g);
}

static int watch(xpl *x, int layer, pt_err *e)
{
    int h, w, c;
    xpl_layer_shape(x->m, layer, &h, &w, &c);
    size_t len = (size_t)h * w * c;
    if (len > x->len) {
        float *A = realloc(x->A, len * sizeof *A);
        if (A)
            x->A = A;
        float *G = A ? realloc(x->G, len * sizeof *G) : NULL;
        if (!G)
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        x->G = G;
    }
    x->len = len;
    x->layer = layer;
    return PT_OK;
}

/* alpha_k = the mean over the map of the gradient of channel k; map = ReLU(sum_k
 * alpha_k A_k), divided by its maximum (an all-zero map stays zero). In double. */
static int grad_cam(const float *A, const float *G, int h, int w, int c, float *map)
{
    const size_t hw = (size_t)h * w;
    double *alpha = calloc((size_t)c, sizeof *alpha), *v = malloc(hw * sizeof *v), mx = 0;
    if (!alpha || !v) {
        free(alpha);
        free(v);
        return PT_ENOMEM;
    }
    for (size_t p = 0; p < hw; p++)
        for (int k = 0; k < c; k++)
            alpha[k] += G[p * c + k];
    for (int k = 0; k < c; k++)
        alpha[k] /= (double)hw;
    for (size_t p = 0; p < hw; p++) {
        double s = 0;
        for (int k = 0; k < c; k++)
            s += alpha[k] * A[p * c + k];
        v[p] = s > 0 ? s : 0;
        mx = v[p] > mx ? v[p] : mx;
    }
    for (size_t p = 0; p < hw; p++)
        map[p] = mx > 0 ? (float)(v[p] / mx) : 0.0f;
    free(v);
    free(alpha);
    return PT_OK;
}

int xpl_cam(xpl *x, const uint8_t *img, int layer, int cls, double *probs, float *map,
            pt_err *e)
{
    int rc = xpl_layer_check(x->m, layer, e);
    if (rc != PT_OK)
        return rc;
    if (cls < 0 || cls >= x->k)
        return err_set(e, PT_EUSAGE, x->m->source, PT_NO_RECORD, PT_NO_OFFSET,
                       "no class %d: the model has classes 0-%d", cls, x->k - 1);
    if ((rc = watch(x, layer, e)) != PT_OK)
        return rc;
    const size_t px = (size_t)x->S * x->S * 3;
    const float s = 1.0f / 255.0f; /* as the replica pool feeds bytes (pool/rpool.c) */
    for (size_t i = 0; i < px; i++)
        x->x[i] = (float)img[i] * s;
    x->got_a = x->got_g = 0;
    nn_ctx_on_node(x->ctx, on_out, x);
    nn_ctx_on_node_grad(x->ctx, on_grad, x);
    const float *y = nn_forward_eval_grad(x->ctx, x->x, 1);
    if (!y)
        rc = err_set(e, PT_EUSAGE, x->m->source, PT_NO_RECORD, PT_NO_OFFSET,
                     "the forward pass failed");
    if (rc == PT_OK && probs)
        inf_softmax(y, x->k, probs);
    /* The gradient of class cls's score (the logit, before the softmax). */
    memset(x->dl, 0, (size_t)x->k * sizeof *x->dl);
    x->dl[cls] = 1.0f;
    if (rc == PT_OK)
        rc = nn_backward(x->ctx, x->dl);
    nn_ctx_on_node(x->ctx, NULL, NULL);
    nn_ctx_on_node_grad(x->ctx, NULL, NULL);
    if (rc != PT_OK)
        return err_set(e, rc, x->m->source, PT_NO_RECORD, PT_NO_OFFSET,
                       "the backward pass failed");
    if (!x->got_a || !x->got_g)
        return err_set(e, PT_EUSAGE, x->m->source, PT_NO_RECORD, PT_NO_OFFSET,
                       "layer %d: no %s reached it", layer, x->got_a ? "gradient" : "output");
    int h, w, c;
    xpl_layer_shape(x->m, layer, &h, &w, &c);
    if (grad_cam(x->A, x->G, h, w, c, map) != PT_OK)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    return PT_OK;
}

/* ---- pictures ---- */

/* matplotlib's jet: dark blue, blue, cyan, yellow, red, dark red. */
void xpl_jet(float v, uint8_t rgb[3])
{
    v = v < 0 ? 0 : v > 1 ? 1 : v;
    const float t[3] = { 4 * v - 3, 4 * v - 2, 4 * v - 1 };
    for (int k = 0; k < 3; k++) {
        float f = 1.5f - fabsf(t[k]);
        f = f < 0 ? 0 : f > 1 ? 1 : f;
        rgb[k] = (uint8_t)lrintf(f * 255.0f);
    }
}

void xpl_upsample(const float *map, int mh, int mw, float *out, int h, int w)
{
    /* Half-pixel centres (align_corners false), edges clamped. */
    for (int y = 0; y < h; y++) {
        float sy = ((float)y + 0.5f) * (float)mh / (float)h - 0.5f;
        sy = sy < 0 ? 0 : sy > (float)(mh - 1) ? (float)(mh - 1) : sy;
        const int y0 = (int)sy, y1 = y0 + 1 < mh ? y0 + 1 : y0;
        const float fy = sy - (float)y0;
        for (int x = 0; x < w; x++) {
            float sx = ((float)x + 0.5f) * (float)mw / (float)w - 0.5f;
            sx = sx < 0 ? 0 : sx > (float)(mw - 1) ? (float)(mw - 1) : sx;
            const int x0 = (int)sx, x1 = x0 + 1 < mw ? x0 + 1 : x0;
            const float fx = sx - (float)x0;
            const float a = map[y0 * mw + x0] * (1 - fx) + map[y0 * mw + x1] * fx;
            const float b = map[y1 * mw + x0] * (1 - fx) + map[y1 * mw + x1] * fx;
            out[(size_t)y * w + x] = a * (1 - fy) + b * fy;
        }
    }
}

int xpl_heat(const float *map, int mh, int mw, const uint8_t *rgb, int h, int w, uint8_t *out)
{
    float *up = malloc((size_t)h * w * sizeof *up);
    if (!up)
        return PT_ENOMEM;
    xpl_upsample(map, mh, mw, up, h, w);
    for (size_t p = 0; p < (size_t)h * w; p++) {
        uint8_t c[3];
        xpl_jet(up[p], c);
        for (int k = 0; k < 3; k++)
            /* The Keras example's 0.4 of the colour map over the photo. */
            out[p * 3 + k] = rgb ? (uint8_t)lrintf(0.6f * rgb[p * 3 + k] + 0.4f * c[k]) : c[k];
    }
    free(up);
    return PT_OK;
}

int xpl_prepare(const rm_model *m, const uint8_t *rgb, int h, int w, uint8_t *out)
{
    int x0, y0, cw, ch;
    const int S = m->image_size;
    img_crop_box(w, h, S, S, &x0, &y0, &cw, &ch);
    img_scratch s = { 0 };
    int rc = img_resize(rgb, w * 3, x0, y0, cw, ch, out, S, S, &s);
    img_scratch_free(&s);
    return rc ? PT_ENOMEM : PT_OK;
}

void xpl_view_free(xpl_view *v)
{
    if (!v)
        return;
    free(v->probs);
    for (int k = 0; k < 2; k++) {
        free(v->map[k]);
        free(v->overlay[k]);
    }
    memset(v, 0, sizeof *v);
}

/* The centre square of rgb at full resolution (what the model sees, before resizing). */
static int centre(const uint8_t *rgb, int h, int w, uint8_t *out, int side)
{
    int x0, y0, cw, ch;
    img_crop_box(w, h, side, side, &x0, &y0, &cw, &ch);
    img_scratch s = { 0 };
    int rc = img_resize(rgb, w * 3, x0, y0, cw, ch, out, side, side, &s);
    img_scratch_free(&s);
    return rc ? PT_ENOMEM : PT_OK;
}

int xpl_view_image(xpl *x, const uint8_t *rgb, int h, int w, int layer, int cls, xpl_view *v,
                   pt_err *e)
{
    memset(v, 0, sizeof *v);
    if (layer < 0)
        layer = xpl_default_layer(x->m);
    int mh, mw, mc;
    xpl_layer_shape(x->m, layer, &mh, &mw, &mc);
    const int side = h < w ? h : w;
    const size_t S = (size_t)x->S;
    uint8_t *img = malloc(S * S * 3), *sq = malloc((size_t)side * side * 3);
    v->probs = malloc((size_t)x->k * sizeof *v->probs);
    int rc = img && sq && v->probs ? PT_OK
                                   : err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                                             "out of memory");
    if (rc == PT_OK && (xpl_prepare(x->m, rgb, h, w, img) || centre(rgb, h, w, sq, side)))
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    v->layer = layer, v->mh = mh, v->mw = mw, v->side = side, v->cls = cls;
    for (int k = 0; k < 2 && rc == PT_OK; k++) {
        if (k == 1 && cls < 0)
            break;
        v->map[k] = malloc((size_t)mh * mw * sizeof **v->map);
        v->overlay[k] = malloc((size_t)side * side * 3);
        if (!v->map[k] || !v->overlay[k]) {
            rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
            break;
        }
        if (k == 0) {
            /* The prediction first: class 0's pass says which class to explain. */
            if ((rc = xpl_cam(x, img, layer, 0, v->probs, v->map[0], e)) != PT_OK)
                break;
            v->pred = inf_argmax(v->probs, x->k);
        }
        if (k || v->pred != 0)
            rc = xpl_cam(x, img, layer, k ? cls : v->pred, NULL, v->map[k], e);
        if (rc == PT_OK && xpl_heat(v->map[k], mh, mw, sq, side, side, v->overlay[k]))
            rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    free(img);
    free(sq);
    if (rc != PT_OK)
        xpl_view_free(v);
    return rc;
}
