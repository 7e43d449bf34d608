/* tboard — a run's TensorBoard event files (see tboard.h). */
#include "run/tboard.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "picture/grid.h"
#include "run/runfolder_impl.h"

enum { PREVIEW_IMAGES = 8 };

int tb_init(tb_run *t, int n_classes)
{
    t->n_classes = n_classes;
    t->val_cm = calloc((size_t)n_classes * n_classes, sizeof *t->val_cm);
    return t->val_cm ? PT_OK : PT_ENOMEM;
}

/* A failure: said once, and no more events are written (the run goes on). */
static void give_up(tb_run *t, const pt_err *e)
{
    char line[1200];
    snprintf(line, sizeof line, "TensorBoard events: %s; no more are written", e->msg);
    t->h.log(t->h.ctx, line);
    t->off = 1;
    tbe_writer_close(t->train, NULL);
    tbe_writer_close(t->val, NULL);
    t->train = t->val = NULL;
}

/* The writer of train/ or validation/, opened on first use. */
static tbe_writer *writer(tb_run *t, int val)
{
    tbe_writer **w = val ? &t->val : &t->train;
    if (t->off || *w)
        return *w;
    char dir[4200];
    pt_err e;
    if (util_path(dir, sizeof dir, "%s/%s", t->dir, val ? RUN_N_VAL_DIR : RUN_N_TRAIN_DIR) != 0) {
        err_set(&e, PT_EUSAGE, t->dir, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
        give_up(t, &e);
        return NULL;
    }
    if (tbe_writer_open(w, dir, &e) != PT_OK) {
        give_up(t, &e);
        return NULL;
    }
    return *w;
}

void tb_open(tb_run *t, int on, const char *dir, const tb_hooks *h)
{
    t->off = !on;
    t->dir = dir;
    t->h = *h;
    writer(t, 0);
}

static void scalar(tb_run *t, int val, int tag, long long step, double v)
{
    tbe_writer *w = writer(t, val);
    pt_err e;
    if (w && tbe_write_scalar(w, run_tags[tag], step, v, &e) != PT_OK)
        give_up(t, &e);
}

static void image(tb_run *t, int val, int tag, long long step, const uint8_t *rgb, int width,
                  int height)
{
    tbe_writer *w = writer(t, val);
    pt_err e;
    if (w && tbe_write_image(w, run_tags[tag], step, rgb, width, height, &e) != PT_OK)
        give_up(t, &e);
}

void tb_update(tb_run *t, long long update, double loss, double acc, double lr)
{
    scalar(t, 0, RUN_T_BATCH_LOSS, update, loss);
    scalar(t, 0, RUN_T_BATCH_ACC, update, acc);
    scalar(t, 0, RUN_T_BATCH_LR, update, lr);
}

/* The augmentation preview of this epoch: the grid `petal-tui preview` draws. */
static void preview_image(tb_run *t, long long step)
{
    run_preview p;
    pt_err e;
    if (t->h.preview(t->h.ctx, PREVIEW_IMAGES, (uint64_t)step + 1, &p, &e) != PT_OK) {
        char line[1200];
        snprintf(line, sizeof line,
                 "TensorBoard events: no augmentation preview after epoch %lld: %s", step + 1,
                 e.msg);
        t->h.log(t->h.ctx, line);
        return;
    }
    const uint8_t *orig[PREVIEW_IMAGES], *aug[PREVIEW_IMAGES];
    const char *caps[PREVIEW_IMAGES];
    char names[PREVIEW_IMAGES][RUN_NAME_MAX];
    size_t px = (size_t)p.h * p.w * 3;
    int n = p.n < PREVIEW_IMAGES ? p.n : PREVIEW_IMAGES;
    for (int i = 0; i < n; i++) {
        orig[i] = p.original + i * px;
        aug[i] = p.augmented + i * px;
        if (p.label[i] >= 0 && p.label[i] < t->n_classes)
            t->h.class_name(t->h.ctx, p.label[i], names[i], sizeof names[i]);
        else
            util_fmt(names[i], sizeof names[i], "label %d", p.label[i]);
        caps[i] = names[i];
    }
    uint8_t *sheet;
    int w, h;
    if (grid_compose(orig, aug, caps, n, p.h, p.w, 0, &sheet, &w, &h) == PT_OK) {
        image(t, 0, RUN_T_AUGMENTATION_PREVIEW, step, sheet, w, h);
        free(sheet);
    }
    run_preview_free(&p);
}

static void confusion_image(tb_run *t, long long step)
{
    int k = t->n_classes;
    char title[128];
    util_fmt(title, sizeof title, "epoch %lld: rows true, columns predicted (shade: share of row)",
             step + 1);
    char (*names)[RUN_NAME_MAX] = calloc((size_t)k, sizeof *names);
    const char **np = calloc((size_t)k, sizeof *np);
    uint8_t *rgb = NULL;
    int w, h;
    if (names && np) {
        for (int c = 0; c < k; c++) {
            t->h.class_name(t->h.ctx, c, names[c], sizeof names[c]);
            np[c] = names[c];
        }
        if (grid_confusion(t->val_cm, k, np, title, &rgb, &w, &h) == PT_OK)
            image(t, 1, RUN_T_CONFUSION_MATRIX, step, rgb, w, h);
    }
    free(rgb);
    free(np);
    free(names);
}

void tb_set_confusion(tb_run *t, const long long *cm, int epoch)
{
    memcpy(t->val_cm, cm, (size_t)t->n_classes * t->n_classes * sizeof *cm);
    t->val_cm_epoch = epoch;
}

void tb_epoch(tb_run *t, const run_epoch *row, long long update, double lr,
              double images_per_sec)
{
    if (t->off)
        return;
    long long step = row->epoch - 1;
    scalar(t, 0, RUN_T_EPOCH_LOSS, step, row->train_loss);
    scalar(t, 0, RUN_T_EPOCH_ACC, step, row->train_acc);
    scalar(t, 0, RUN_T_EPOCH_PRECISION, step, row->train_precision);
    scalar(t, 0, RUN_T_EPOCH_RECALL, step, row->train_recall);
    scalar(t, 0, RUN_T_EPOCH_F1, step, row->train_f1);
    scalar(t, 0, RUN_T_EPOCH_LR, step, lr);
    scalar(t, 0, RUN_T_EPOCH_IMAGES_PER_SEC, step, images_per_sec);
    if (!t->off)
        preview_image(t, step);
    if (!isnan(row->val_loss)) {
        scalar(t, 1, RUN_T_EVAL_LOSS_ITER, update, row->val_loss);
        scalar(t, 1, RUN_T_EVAL_ACC_ITER, update, row->val_acc);
        scalar(t, 1, RUN_T_EPOCH_LOSS, step, row->val_loss);
        scalar(t, 1, RUN_T_EPOCH_ACC, step, row->val_acc);
        scalar(t, 1, RUN_T_EPOCH_PRECISION, step, row->val_precision);
        scalar(t, 1, RUN_T_EPOCH_RECALL, step, row->val_recall);
        scalar(t, 1, RUN_T_EPOCH_F1, step, row->val_f1);
        if (!t->off && t->val_cm && t->val_cm_epoch == row->epoch)
            confusion_image(t, step);
    }
    tb_flush(t);
}

void tb_flush(tb_run *t)
{
    pt_err e;
    if (t->train && tbe_writer_flush(t->train, &e) != PT_OK)
        give_up(t, &e);
    if (t->val && tbe_writer_flush(t->val, &e) != PT_OK)
        give_up(t, &e);
}

void tb_close(tb_run *t)
{
    pt_err e;
    int rc = tbe_writer_close(t->train, &e);
    t->train = NULL;
    if (rc != PT_OK && !t->off)
        give_up(t, &e);
    rc = tbe_writer_close(t->val, &e);
    t->val = NULL;
    if (rc != PT_OK && !t->off)
        give_up(t, &e);
    free(t->val_cm);
    t->val_cm = NULL;
}
