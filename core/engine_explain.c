/* engine_explain — the workbench's Grad-CAM (eng_explain_get): a validation image
 * through the run folder's model, as `petal-tui explain RUN` sees it (infer's xpl_
 * calls). The model is the one the folder gives predict and export (rm_open): its
 * last checkpoint, the weights validation used when the checkpoint follows every
 * epoch (--checkpoint-every 1, the default), or with --keep best the best epoch's;
 * the view says which epoch it is. */
#include "engine_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "infer/infer.h"
#include "infer/runmodel.h"
#include "nn/nn.h"

struct eng_cam_model {
    char dir[512];
    int for_epoch;          /* the validation epoch it was opened after */
    rm_model rm;
    xpl *x;
};

void eng_cam_model_free(eng_cam_model *m)
{
    if (!m)
        return;
    xpl_free(m->x);
    rm_close(&m->rm);
    free(m);
}

/* The cached model, opened again for another folder or after a later epoch's
 * validation (the folder's checkpoint, or its kept best weights, may have changed). */
static int cam_model(eng_cam_model **cache, const char *dir, int val_epoch, pt_err *e)
{
    eng_cam_model *m = *cache;
    if (m && !strcmp(m->dir, dir) && m->for_epoch == val_epoch)
        return PT_OK;
    eng_cam_model_free(m);
    *cache = NULL;
    if (!dir[0])
        return err_set(e, PT_ENODATA, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "Grad-CAM: the run has no folder yet");
    m = calloc(1, sizeof *m);
    if (!m)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    util_copy(m->dir, sizeof m->dir, dir);
    m->for_epoch = val_epoch;
    int rc = rm_open(dir, 0, &m->rm, e);
    if (rc == PT_OK)
        rc = xpl_new(&m->rm, &m->x, e);
    if (rc != PT_OK) {
        eng_cam_model_free(m);
        return rc;
    }
    *cache = m;
    return PT_OK;
}

/* The centre square of rgb (h x w x 3), side x side, into a new array. */
static uint8_t *centre_square(const uint8_t *rgb, int h, int w, int side)
{
    uint8_t *out = malloc((size_t)side * side * 3);
    if (!out)
        return NULL;
    int y0 = (h - side) / 2, x0 = (w - side) / 2;
    for (int y = 0; y < side; y++)
        memcpy(out + (size_t)y * side * 3, rgb + ((size_t)(y0 + y) * w + x0) * 3,
               (size_t)side * 3);
    return out;
}

static void describe_layer(const rm_model *rm, const xpl_view *v, char *buf, size_t n)
{
    nn_node_info info;
    if (nn_node_get(rm->net, v->layer, &info) == PT_OK)
        snprintf(buf, n, "%d (%s, %dx%dx%d)", v->layer, nn_op_name(info.op), info.h, info.w,
                 info.c);
    else
        snprintf(buf, n, "%d", v->layer);
}

int eng_cam_make(eng_cam_model **cache, const char *dir, int val_epoch, const run_val_item *item,
                 run_explain *out, pt_err *e)
{
    memset(out, 0, sizeof *out);
    int rc = cam_model(cache, dir, val_epoch, e);
    if (rc != PT_OK)
        return rc;
    eng_cam_model *m = *cache;
    const int k = m->rm.n_classes;
    if (item->label < 0 || item->label >= k)
        return err_set(e, PT_EUSAGE, dir, PT_NO_RECORD, PT_NO_OFFSET,
                       "Grad-CAM: class %d is not one of the model's %d", item->label, k);
    xpl_view v;
    rc = xpl_view_image(m->x, item->rgb, item->h, item->w, -1, item->label, &v, e);
    if (rc != PT_OK)
        return rc;
    const int side = v.side;
    const size_t bytes = (size_t)side * side * 3;
    out->h = out->w = side;
    out->photo = centre_square(item->rgb, item->h, item->w, side);
    out->cam[0] = malloc(bytes);
    out->cam[1] = malloc(bytes);
    out->heat = malloc(bytes);
    if (!out->photo || !out->cam[0] || !out->cam[1] || !out->heat ||
        xpl_heat(v.map[0], v.mh, v.mw, NULL, side, side, out->heat) != PT_OK) {
        xpl_view_free(&v);
        run_explain_free(out);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    memcpy(out->cam[0], v.overlay[0], bytes);
    memcpy(out->cam[1], v.overlay[1], bytes);
    out->label = item->label;
    out->pred = v.pred;
    out->cls[0] = v.pred;
    out->cls[1] = item->label;
    out->prob[0] = (float)v.probs[v.pred];
    out->prob[1] = (float)v.probs[item->label];
    out->loss = (float)-log(v.probs[item->label] > 1e-30 ? v.probs[item->label] : 1e-30);
    out->n_top = k < RUN_EXPLAIN_TOP ? k : RUN_EXPLAIN_TOP;
    inf_topk(v.probs, k, out->n_top, out->top);
    for (int i = 0; i < out->n_top; i++)
        out->top_p[i] = (float)v.probs[out->top[i]];
    out->epoch = m->rm.epoch;
    describe_layer(&m->rm, &v, out->layer, sizeof out->layer);
    xpl_view_free(&v);
    return PT_OK;
}
