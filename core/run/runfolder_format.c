/* runfolder_format — the run folder's tables (see runfolder.h): its file names,
 * history.json's keys and the TensorBoard tags, which the writer and the reader both use. */
#include <stddef.h>
#include <string.h>

#include "run/runfolder_impl.h"

static const char *const file_names[RUN_F_COUNT] = {
    [RUN_F_CONFIG] = RUN_N_CONFIG,
    [RUN_F_HISTORY] = RUN_N_HISTORY,
    [RUN_F_LOG] = RUN_N_LOG,
    [RUN_F_VALID_LABELS] = RUN_N_VALID_LABELS,
    [RUN_F_VALID_PREDS] = RUN_N_VALID_PREDS,
    [RUN_F_TEST_PREDS] = RUN_N_TEST_PREDS,
    [RUN_F_SUBMISSION] = RUN_N_SUBMISSION,
    [RUN_F_CHECKPOINT] = RUN_N_CHECKPOINT,
    [RUN_F_CLASSES] = RUN_N_CLASSES,
    [RUN_F_EXPORT] = RUN_N_EXPORT,
    [RUN_F_REPORT] = RUN_N_REPORT,
    [RUN_F_TRAIN_DIR] = RUN_N_TRAIN_DIR,
    [RUN_F_VAL_DIR] = RUN_N_VAL_DIR,
    [RUN_F_SOURCE] = RUN_N_SOURCE,
    [RUN_F_EXPORT_INT8] = RUN_N_EXPORT_INT8,
    [RUN_F_BEST] = RUN_N_BEST,
    [RUN_F_SUMMARY] = RUN_N_SUMMARY,
    [RUN_F_ENSEMBLE] = RUN_N_ENSEMBLE,
};

const char *run_file_name(run_file f)
{
    return f >= 0 && f < RUN_F_COUNT ? file_names[f] : "";
}

#define K_INT(name, field) { name, offsetof(run_epoch, field), 1, -1 }
#define K_NUM(name, field, series) { name, offsetof(run_epoch, field), 0, series }

/* The order is history.json's: a change here changes every run folder written. */
const run_key run_history_keys[RUN_H_COUNT] = {
    [RUN_H_EPOCH] = K_INT("epoch", epoch),
    [RUN_H_UPDATES] = K_INT("updates", updates),
    [RUN_H_TRAIN_LOSS] = K_NUM("train_loss", train_loss, RUN_S_TRAIN_LOSS),
    [RUN_H_TRAIN_ACC] = K_NUM("train_acc", train_acc, RUN_S_TRAIN_ACC),
    [RUN_H_TRAIN_PRECISION] = K_NUM("train_precision", train_precision, -1),
    [RUN_H_TRAIN_RECALL] = K_NUM("train_recall", train_recall, -1),
    [RUN_H_TRAIN_F1] = K_NUM("train_f1", train_f1, RUN_S_TRAIN_F1),
    [RUN_H_VAL_LOSS] = K_NUM("val_loss", val_loss, RUN_S_VAL_LOSS),
    [RUN_H_VAL_ACC] = K_NUM("val_acc", val_acc, RUN_S_VAL_ACC),
    [RUN_H_VAL_PRECISION] = K_NUM("val_precision", val_precision, -1),
    [RUN_H_VAL_RECALL] = K_NUM("val_recall", val_recall, -1),
    [RUN_H_VAL_F1] = K_NUM("val_f1", val_f1, RUN_S_VAL_F1),
    [RUN_H_TIMING] = K_NUM("train_timing", seconds, -1),
};

double run_history_get(const run_epoch *h, int k)
{
    const char *p = (const char *)h + run_history_keys[k].offset;
    if (run_history_keys[k].is_int) {
        int v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    double v;
    memcpy(&v, p, sizeof v);
    return v;
}

const char *const run_tags[RUN_T_COUNT] = {
    [RUN_T_BATCH_LOSS] = "batch_loss",
    [RUN_T_BATCH_ACC] = "batch_sparse_categorical_accuracy",
    [RUN_T_BATCH_LR] = "batch_learning_rate",
    [RUN_T_EPOCH_LOSS] = "epoch_loss",
    [RUN_T_EPOCH_ACC] = "epoch_sparse_categorical_accuracy",
    [RUN_T_EPOCH_PRECISION] = "epoch_precision",
    [RUN_T_EPOCH_RECALL] = "epoch_recall",
    [RUN_T_EPOCH_F1] = "epoch_f1_score",
    [RUN_T_EPOCH_LR] = "epoch_learning_rate",
    [RUN_T_EPOCH_IMAGES_PER_SEC] = "epoch_images_per_second",
    [RUN_T_EVAL_LOSS_ITER] = "evaluation_loss_vs_iterations",
    [RUN_T_EVAL_ACC_ITER] = "evaluation_sparse_categorical_accuracy_vs_iterations",
    [RUN_T_AUGMENTATION_PREVIEW] = "augmentation_preview",
    [RUN_T_CONFUSION_MATRIX] = "confusion_matrix",
};

/* Keras's other names for figures petal-tui writes under the names above. */
static const struct {
    const char *tag;
    int t;
} aliases[] = {
    { "epoch_accuracy", RUN_T_EPOCH_ACC },
    { "epoch_categorical_accuracy", RUN_T_EPOCH_ACC },
    { "batch_accuracy", RUN_T_BATCH_ACC },
};

int run_tag_of(const char *tag)
{
    for (int t = 0; t < RUN_T_COUNT; t++)
        if (!strcmp(tag, run_tags[t]))
            return t;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcmp(tag, aliases[i].tag))
            return aliases[i].t;
    return -1;
}
