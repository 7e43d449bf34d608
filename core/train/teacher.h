/* teacher — knowledge distillation's teacher (--teacher): a trained model whose
 * probabilities, softened at temperature T, are the student's soft targets
 * (Hinton et al.; the loss is nn/nn.h's nn_distill_ce).
 *
 * A teacher is what infer/ensemble.h opens (ens_open_path): a run folder, an .onnx
 * classifier (a one-member ensemble) or an ensemble folder (its members, weights and
 * TTA); its classes matched to the dataset's by ens_match; each member at its own
 * image size, input normalisation and test-time augmentation; the answer the
 * weighted mean of the members' probabilities. Two views (--teacher-view):
 *   cached  before the first epoch the teacher predicts every training record once,
 *           un-augmented, as `petal-tui predict TEACHER --split train` would (the
 *           validation pipeline at the teacher's size); kept by (shard, record) and
 *           written to RUN/teacher_probs.csv (the probabilities at T = 1, classes in
 *           the dataset's order) with RUN/teacher.txt (which teacher, so that a resume
 *           can tell it changed). A resumed run reads them back instead of predicting
 *           again. A MixUp / CutMix example's target is mix x p_T(a) + (1 - mix) x
 *           p_T(b), its two sources' (batch.src, batch.src2).
 *           Two more sources of a cached teacher's probabilities:
 *           - a teacher_probs.csv as --teacher (an earlier distilled run's): read,
 *             not predicted (copied into the run folder with its teacher.txt), so
 *             that several students share one teacher's predictions;
 *           - --teacher-data DATASET: the teacher predicts that dataset's training
 *             split instead of the student's: the same records at another stored
 *             size (`petal-tui shards PHOTOS OUT --size 256` beside --size 128), so
 *             that a teacher at 224 px sees the photos' detail while the student
 *             trains on 128 px ones. Its split must have the student's shards'
 *             record counts, shard by shard (refused otherwise), and each record's
 *             label is checked against the student's as batches come.
 *   live    every batch as the student sees it (augmented and mixed), each image
 *           resized (bilinear) to each member's side and forwarded on that member's
 *           own inference pool (its flip, not its crops: teacher_live.c): exact,
 *           and costlier.
 *
 * Threads: one caller at a time (the trainer's thread).
 * Ownership: tch_open() makes a tch that tch_close() frees with everything it holds
 * (safe with NULL); it copies the class names; the split given to tch_prepare and the
 * options' path are borrowed for its life.
 */
#ifndef PT_TEACHER_H
#define PT_TEACHER_H

#include <signal.h>

#include "base/err.h"
#include "data/batch.h"
#include "data/dataset.h"
#include "run.h"

typedef struct tch tch;

typedef struct tch_opts {
    const char *path;           /* --teacher */
    const char *data;           /* --teacher-data: the dataset the teacher predicts
                                   (NULL or "": the student's) */
    double t;                   /* --distill-t, > 0 */
    run_teacher_view view;
    int replicas;               /* the teacher's forward threads, >= 1 */
    int batch;                  /* cached: images per forward pass; live: the most
                                   examples a batch holds */
    int workers;                /* cached: decode threads (0: 2) */
    /* cached: called as the teacher predicts (done of total training images) */
    void (*on_progress)(void *ctx, long long done, long long total);
    void *ctx;
    /* nonzero: stop predicting (tch_prepare then returns PT_ESTOPPED) */
    int (*stop)(void *ctx);
} tch_opts;

/* Opens the teacher (infer/ensemble.h's ens_open_path: a run folder, an .onnx file,
 * an ensemble folder) for dataset ds (data_path: as the user named it, for messages)
 * of n_classes named names[0..n_classes) (the run's names: teacher_probs.csv's
 * header). PT_EUSAGE naming the path when it is missing, not a classifier, or its
 * classes are not the dataset's (ens_match's message). */
int tch_open(const tch_opts *o, const ds_dataset *ds, const char *data_path, char *const *names,
             int n_classes, tch **out, pt_err *e);
void tch_close(tch *t);

/* A short name for the header and the log: the run folder's or file's base name. */
const char *tch_name(const tch *t);
/* What it is, in words: "a run, 32 px, input unit, tta none" / "an ensemble of 3
 * members (weights fit), 224 px the largest". */
const char *tch_about(const tch *t);
/* How its classes were matched to the dataset's (ens_notes: lines, "" for nothing). */
const char *tch_notes(const tch *t);

/* cached: the teacher's probabilities of every record of the training split. With
 * dir (the run folder) and reuse, read from dir/teacher_probs.csv when it is there
 * (refused, PT_EUSAGE, when it is another teacher's, other classes', not the split's
 * shards, or more rows than expect_rows, the split's readable records); otherwise
 * predicted, then written there when write
 * (rank 0 of a job). *predicted: 1 predicted, 0 read back, 2 read from --teacher's
 * teacher_probs.csv (refused unless it has a row for every readable training record,
 * expect_rows; copied into dir when write). Once the cache is made the
 * teacher's nets are closed (the cache is all tch_fill reads). live: nothing to do. */
int tch_prepare(tch *t, const ds_split *train, long long expect_rows, const char *dir,
                int reuse, int write, int *predicted, pt_err *e);

/* The soft targets of a batch's b->n examples into soft (b->n x classes, each row the
 * teacher's probabilities at T). cached: PT_EUSAGE naming the record when the cache
 * has no row for it, or a row of another label. b's images are not changed. */
int tch_fill(tch *t, const batch *b, float *soft, pt_err *e);

/* The header's words for a teacher at path: "distilling NAME T4 a0.9" (" live" after
 * with the live view), NAME the folder's or file's base name without ".onnx". */
void tch_header(const char *path, double t, double alpha, run_teacher_view view, char *buf,
                size_t n);

/* The probabilities at T of probabilities p at T = 1 (k of them): softmax(log p / T),
 * a class of probability 0 staying 0. */
void tch_temper(const double *p, int k, double t, float *out);

#endif
