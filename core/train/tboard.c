/* tboard — a run's TensorBoard event files (see trainer_impl.h for the tags and
 * steps): the run folder's train/ and validation/ written as Keras's TensorBoard
 * callback writes them, so `tensorboard --logdir runs` shows every run, and the
 * competition's Keras runs beside them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "data/grid.h"
#include "train/trainer_impl.h"

enum { PREVIEW_IMAGES = 8 };

/* A failure: said once, and no more events are written (the run goes on). */
static void give_up(trn *r, const pt_err *e)
{
    trn_log(r, "TensorBoard events: %s; no more are written", e->msg);
    r->tb_off = 1;
    tbe_writer_close(r->tb_train, NULL);
    tbe_writer_close(r->tb_val, NULL);
    r->tb_train = r->tb_val = NULL;
}

/* The writer of sub ("train" or "validation"), opened on first use. */
static tbe_writer *writer(trn *r, int val)
{
    tbe_writer **w = val ? &r->tb_val : &r->tb_train;
    if (r->tb_off || *w)
        return *w;
    char dir[4200];
    pt_err e;
    if (util_path(dir, sizeof dir, "%s/%s", r->folder.dir, val ? RF_VAL_DIR : RF_TRAIN_DIR) != 0) {
        err_set(&e, PT_EUSAGE, r->folder.dir, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
        give_up(r, &e);
        return NULL;
    }
    if (tbe_writer_open(w, dir, &e) != PT_OK) {
        give_up(r, &e);
        return NULL;
    }
    return *w;
}

void trn_tb_open(trn *r)
{
    writer(r, 0);
}

static void scalar(trn *r, int val, const char *tag, long long step, double v)
{
    tbe_writer *w = writer(r, val);
    pt_err e;
    if (w && tbe_write_scalar(w, tag, step, v, &e) != PT_OK)
        give_up(r, &e);
}

static void image(trn *r, int val, const char *tag, long long step, const uint8_t *rgb, int width,
                  int height)
{
    tbe_writer *w = writer(r, val);
    pt_err e;
    if (w && tbe_write_image(w, tag, step, rgb, width, height, &e) != PT_OK)
        give_up(r, &e);
}

void trn_tb_update(trn *r, double loss, double acc, double lr)
{
    scalar(r, 0, "batch_loss", r->update, loss);
    scalar(r, 0, "batch_sparse_categorical_accuracy", r->update, acc);
    scalar(r, 0, "batch_learning_rate", r->update, lr);
}

/* The augmentation preview of this epoch: the grid `petal-tui preview` draws. */
static void preview_image(trn *r, long long step)
{
    run_preview p;
    pt_err e;
    if (sam_preview(r->env->samples, r->ds, r->img, PREVIEW_IMAGES, (uint64_t)step + 1, &p, &e) !=
        PT_OK) {
        trn_log(r, "TensorBoard events: no augmentation preview after epoch %lld: %s", step + 1,
                e.msg);
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
        if (p.label[i] >= 0 && p.label[i] < r->n_classes)
            trn_class_name(r, p.label[i], names[i], sizeof names[i]);
        else
            util_fmt(names[i], sizeof names[i], "label %d", p.label[i]);
        caps[i] = names[i];
    }
    uint8_t *sheet;
    int w, h;
    if (grid_compose(orig, aug, caps, n, p.h, p.w, 0, &sheet, &w, &h) == PT_OK) {
        image(r, 0, "augmentation_preview", step, sheet, w, h);
        free(sheet);
    }
    run_preview_free(&p);
}

static void confusion_image(trn *r, long long step)
{
    int k = r->n_classes;
    char title[128];
    util_fmt(title, sizeof title, "epoch %lld: rows true, columns predicted (shade: share of row)",
             step + 1);
    char (*names)[RUN_NAME_MAX] = calloc((size_t)k, sizeof *names);
    const char **np = calloc((size_t)k, sizeof *np);
    uint8_t *rgb = NULL;
    int w, h;
    if (names && np) {
        for (int c = 0; c < k; c++) {
            trn_class_name(r, c, names[c], sizeof names[c]);
            np[c] = names[c];
        }
        if (grid_confusion(r->val_cm, k, np, title, &rgb, &w, &h) == PT_OK)
            image(r, 1, "confusion_matrix", step, rgb, w, h);
    }
    free(rgb);
    free(np);
    free(names);
}

void trn_tb_epoch(trn *r, const run_epoch *row, double images_per_sec)
{
    if (r->tb_off)
        return;
    long long step = row->epoch - 1;
    double lr = sched_lr(&r->sch, r->update > 0 ? r->update - 1 : 0);
    scalar(r, 0, "epoch_loss", step, row->train_loss);
    scalar(r, 0, "epoch_sparse_categorical_accuracy", step, row->train_acc);
    scalar(r, 0, "epoch_precision", step, row->train_precision);
    scalar(r, 0, "epoch_recall", step, row->train_recall);
    scalar(r, 0, "epoch_f1_score", step, row->train_f1);
    scalar(r, 0, "epoch_learning_rate", step, lr);
    scalar(r, 0, "epoch_images_per_second", step, images_per_sec);
    if (!r->tb_off)
        preview_image(r, step);
    if (!isnan(row->val_loss)) {
        scalar(r, 1, "evaluation_loss_vs_iterations", r->update, row->val_loss);
        scalar(r, 1, "evaluation_sparse_categorical_accuracy_vs_iterations", r->update,
               row->val_acc);
        scalar(r, 1, "epoch_loss", step, row->val_loss);
        scalar(r, 1, "epoch_sparse_categorical_accuracy", step, row->val_acc);
        scalar(r, 1, "epoch_precision", step, row->val_precision);
        scalar(r, 1, "epoch_recall", step, row->val_recall);
        scalar(r, 1, "epoch_f1_score", step, row->val_f1);
        if (!r->tb_off && r->val_cm && r->val_cm_epoch == row->epoch)
            confusion_image(r, step);
    }
    trn_tb_flush(r);
}

void trn_tb_flush(trn *r)
{
    pt_err e;
    if (r->tb_train && tbe_writer_flush(r->tb_train, &e) != PT_OK)
        give_up(r, &e);
    if (r->tb_val && tbe_writer_flush(r->tb_val, &e) != PT_OK)
        give_up(r, &e);
}

void trn_tb_close(trn *r)
{
    pt_err e;
    int rc = tbe_writer_close(r->tb_train, &e);
    r->tb_train = NULL;
    if (rc != PT_OK && !r->tb_off)
        give_up(r, &e);
    rc = tbe_writer_close(r->tb_val, &e);
    r->tb_val = NULL;
    if (rc != PT_OK && !r->tb_off)
        give_up(r, &e);
}
