/* ensemble (ens_) — a set of trained models whose weighted mean probability is one
 * answer: what `petal-tui ensemble` (src/cmd_ensemble.c) scores and writes, and what
 * the trainer's teacher (--teacher, issue 46) asks for its probabilities.
 *
 * Members are run folders or .onnx files, each opened as `petal-tui predict` opens
 * it (inf_model_open) and predicting as predict does (prd_split): at its own image
 * size, input normalisation and decoding, with its own test-time augmentation. The
 * records line up because every member reads the same split in file order; members
 * that did not predict the same records (their decoding failed on different ones)
 * are refused.
 *
 * Classes (ens_match; the module's second prefix, enc_, in ensemble_classes.c): the
 * reference is the dataset's class names (its classes.txt); a dataset without one
 * takes the first member's that names its classes (said in ens_notes). A member whose
 * names are the reference's in order needs nothing; the same names in another order
 * are matched by name (said), since a name, not a position, is what a run learned; a
 * member that names no classes ("class 0", "class 1", ...: an ONNX file without
 * petal-tui's class_names metadata) is matched by position when it has as many
 * outputs as the reference has classes (said). Any other difference is refused
 * (PT_EUSAGE), naming the member and what only each side has.
 *
 * An ensemble folder (`petal-tui ensemble ... --out DIR`) holds ensemble.json
 * (run/runfolder.h's RUN_F_ENSEMBLE), written by ens_write_json:
 *   {"data": "<path as given>", "members": [{"path": "<absolute path>", "weight": 0.25,
 *    "tta": "none|flip|crops|flip+crops"}, ...], "weights": "equal|given|fit|cv"}
 * and read back by ens_open_path, which opens the same members with the same weights
 * and TTA.
 *
 * This header is a door (tests/test_source.c): src/ and core/train/ include it; it
 * names the dataset by name only (datasets.h opens one).
 *
 * Threads: an ens predicts one split at a time, on the calling thread (prd_split).
 * Ownership: ens_open / ens_open_path give an ens freed by ens_close (which closes its
 * members). ens_split fills r (prd_results_free) and *member_probs (malloc'd; free()).
 * The strings the accessors return belong to the ens.
 */
#ifndef PT_ENSEMBLE_H
#define PT_ENSEMBLE_H

#include <signal.h>
#include <stdint.h>

#include "base/err.h"
#include "infer/infer.h"

typedef struct ens ens;
typedef struct ds_dataset ds_dataset;

/* At most this many members. */
#define ENS_MAX 32

/* A member's test-time augmentation: bits of ENS_TTA_FLIP (the mean with the mirror
 * image) and ENS_TTA_CROPS (prd_opts.tta_crops: the mean over the centre and the four
 * corner crops); ENS_TTA_OWN: the member's own (a run's --tta, none for an .onnx). */
enum { ENS_TTA_OWN = -1, ENS_TTA_NONE = 0, ENS_TTA_FLIP = 1, ENS_TTA_CROPS = 2 };

/* "none", "flip", "crops", "flip+crops" <-> the bits; parse gives -1 for another text. */
const char *ens_tta_name(int tta);
int ens_tta_parse(const char *s);

/* How the weights were got (ensemble.json's "weights", report.json's). */
typedef enum ens_how { ENS_W_EQUAL, ENS_W_GIVEN, ENS_W_FIT, ENS_W_CV } ens_how;
const char *ens_how_name(ens_how h);

/* path: a run folder, an .onnx file (a one-member ensemble, weight 1, its own TTA), or
 * an ensemble folder (ensemble.json). A folder that is none of these is refused
 * (PT_EUSAGE naming it and what it lacks). */
int ens_open_path(const char *path, ens **out, pt_err *e);
/* n members (1 .. ENS_MAX) given by path (run folders or .onnx files); weights (NULL:
 * equal) positive and finite, normalised to sum 1; tta per member (NULL: each
 * member's own; ENS_TTA_OWN for one member: its own). Errors name the member. */
int ens_open(const char *const *paths, int n, const double *weights, const int *tta,
             ens **out, pt_err *e);
void ens_close(ens *x);                 /* safe with NULL */

int ens_members(const ens *x);
/* The largest member's side (the size a dataset is opened at for it). */
int ens_image_size(const ens *x);
/* What it was opened from (a path; "N members" for several), for messages. */
const char *ens_name(const ens *x);
/* Member i's path as given, its model (borrowed), its weight (sum 1), its TTA as it
 * predicts (ENS_TTA_OWN resolved). */
const char *ens_member_path(const ens *x, int i);
const rm_model *ens_member_model(const ens *x, int i);
double ens_member_weight(const ens *x, int i);
int ens_member_tta(const ens *x, int i);
ens_how ens_weights_how(const ens *x);
/* New weights (n of them, positive, normalised here) and how they were got. */
int ens_set_weights(ens *x, const double *w, ens_how how, pt_err *e);

/* The members' classes matched to the dataset's (see above): PT_EUSAGE naming the
 * member and the classes when they differ. After it the probabilities of ens_split come
 * out in the dataset's class order, and ens_classes / ens_class_names are the
 * reference's. data_path: the dataset as the user named it, for messages. What was
 * decided on the way (classes matched by name or position) is in ens_notes. */
int ens_match(ens *x, const ds_dataset *ds, const char *data_path, pt_err *e);
/* Lines (each ending "\n") saying how classes were matched; "" when nothing was. */
const char *ens_notes(const ens *x);
/* Classes of the answer and their names (NULL when nothing names them); before
 * ens_match, the first member's. */
int ens_classes(const ens *x);
char *const *ens_class_names(const ens *x);

typedef struct ens_opts {
    int batch;              /* images per forward pass, >= 1 */
    int replicas;           /* forward threads, >= 1 */
    int workers;            /* decode threads; 0: 2 */
    int bf16;               /* 1 bf16, 0 fp32, -1 each member's own (a run's, fp32 .onnx) */
    /* Called before member i predicts, then on_batch as prd_opts's, then on_member_end
     * (any may be NULL). */
    void (*on_member)(void *ctx, int member, const char *path);
    void (*on_batch)(void *ctx, long long done, long long total);
    void (*on_member_end)(void *ctx, int member);
    /* A record a member's pipeline skipped (a damaged record): why (NULL: none). */
    void (*on_skip)(void *ctx, int member, const pt_err *why);
    void *ctx;
    volatile sig_atomic_t *stop;    /* as prd_opts.stop: PT_ESTOPPED when it fires */
} ens_opts;

/* The weighted mean of the members' probabilities for the records of split s in file
 * order (labels when labeled, else ids): r as prd_split gives it, its probs the
 * ensemble's (in the dataset's class order once ens_match was called); with
 * member_probs, *member_probs = members x r->n x r->k doubles, member i's rows at
 * i * r->n * r->k. Refused (PT_EUSAGE): a labeled record beyond the members' classes
 * (naming the first), members that did not predict the same records. Records the
 * pipeline skipped are in r->errors (member 0's) and told to o->on_skip. */
int ens_split(ens *x, const ds_split *s, int labeled, const ens_opts *o, prd_results *r,
              double **member_probs, pt_err *e);

/* ---- weights from labeled predictions (ensemble_fit.c) ----
 * member_probs as ens_split gives them (n members x r->n x r->k), r's labels. */

/* r->probs = the mean of the members' rows weighted by w (n of them). */
void ens_mix(const double *member_probs, int n, const double *w, prd_results *r);
/* The weights (n, into w, sum 1) that minimise the log loss of the weighted mean
 * probability over the records rows[0..m) (rows NULL: all of r's): the EM update
 * w_i <- mean over records of w_i p_i(y) / sum_j w_j p_j(y), from equal weights, which
 * lowers the loss at every step, until no weight moves by 1e-10 (at most 20,000
 * steps; p_i(y) taken as at least 1e-30). The iterations done. */
int ens_fit_weights(const prd_results *r, const double *member_probs, int n,
                    const long long *rows, long long m, double *w);
/* folds-fold cross-validation of that fit: the records in an order shuffled by seed
 * (fold f: the records at f, f + folds, ... of it), each fold predicted with the
 * weights fitted on the others; out = the figures of those out-of-fold predictions.
 * PT_EUSAGE when there are fewer records than folds. */
int ens_cv(const prd_results *r, const double *member_probs, int n, int folds, uint64_t seed,
           inf_score *out, pt_err *e);

/* DIR/ensemble.json (see above) for x, data the --data argument as given; atomically. */
int ens_write_json(const ens *x, const char *data, const char *dir, pt_err *e);

#endif
