/* runfolder_format — the run folder's tables (see runfolder.h): history.json's
 * keys and the TensorBoard tags, which the writer and the reader both use. */
#include <stddef.h>
#include <string.h>

#include "run/runfolder.h"

#define K_INT(name, field) { name, offsetof(run_epoch, field), 1, -1 }
#define K_NUM(name, field, series) { name, offsetof(run_epoch, field), 0, series }

/* The order is history.json's: a change here changes every run folder written. */
const rf_key rf_history_keys[RF_H_COUNT] = {
    [RF_H_EPOCH] = K_INT("epoch", epoch),
    [RF_H_UPDATES] = K_INT("updates", updates),
    [RF_H_TRAIN_LOSS] = K_NUM("train_loss", train_loss, RUN_S_TRAIN_LOSS),
    [RF_H_TRAIN_ACC] = K_NUM("train_acc", train_acc, RUN_S_TRAIN_ACC),
    [RF_H_TRAIN_PRECISION] = K_NUM("train_precision", train_precision, -1),
    [RF_H_TRAIN_RECALL] = K_NUM("train_recall", train_recall, -1),
    [RF_H_TRAIN_F1] = K_NUM("train_f1", train_f1, RUN_S_TRAIN_F1),
    [RF_H_VAL_LOSS] = K_NUM("val_loss", val_loss, RUN_S_VAL_LOSS),
    [RF_H_VAL_ACC] = K_NUM("val_acc", val_acc, RUN_S_VAL_ACC),
    [RF_H_VAL_PRECISION] = K_NUM("val_precision", val_precision, -1),
    [RF_H_VAL_RECALL] = K_NUM("val_recall", val_recall, -1),
    [RF_H_VAL_F1] = K_NUM("val_f1", val_f1, RUN_S_VAL_F1),
    [RF_H_TIMING] = K_NUM("train_timing", seconds, -1),
};

double rf_history_get(const run_epoch *h, int k)
{
    const char *p = (const char *)h + rf_history_keys[k].offset;
    if (rf_history_keys[k].is_int) {
        int v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    double v;
    memcpy(&v, p, sizeof v);
    return v;
}

const char *const rf_tags[RF_T_COUNT] = {
    [RF_T_BATCH_LOSS] = "batch_loss",
    [RF_T_BATCH_ACC] = "batch_sparse_categorical_accuracy",
    [RF_T_BATCH_LR] = "batch_learning_rate",
    [RF_T_EPOCH_LOSS] = "epoch_loss",
    [RF_T_EPOCH_ACC] = "epoch_sparse_categorical_accuracy",
    [RF_T_EPOCH_PRECISION] = "epoch_precision",
    [RF_T_EPOCH_RECALL] = "epoch_recall",
    [RF_T_EPOCH_F1] = "epoch_f1_score",
    [RF_T_EPOCH_LR] = "epoch_learning_rate",
    [RF_T_EPOCH_IMAGES_PER_SEC] = "epoch_images_per_second",
    [RF_T_EVAL_LOSS_ITER] = "evaluation_loss_vs_iterations",
    [RF_T_EVAL_ACC_ITER] = "evaluation_sparse_categorical_accuracy_vs_iterations",
    [RF_T_AUGMENTATION_PREVIEW] = "augmentation_preview",
    [RF_T_CONFUSION_MATRIX] = "confusion_matrix",
};

/* Keras's other names for figures petal-tui writes under the names above. */
static const struct {
    const char *tag;
    int t;
} aliases[] = {
    { "epoch_accuracy", RF_T_EPOCH_ACC },
    { "epoch_categorical_accuracy", RF_T_EPOCH_ACC },
    { "batch_accuracy", RF_T_BATCH_ACC },
};

int rf_tag_of(const char *tag)
{
    for (int t = 0; t < RF_T_COUNT; t++)
        if (!strcmp(tag, rf_tags[t]))
            return t;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcmp(tag, aliases[i].tag))
            return aliases[i].t;
    return -1;
}
