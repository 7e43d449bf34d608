/* predict — a trained model's class probabilities for images: files (JPEG or PNG) or
 * the records of a dataset split.
 *
 * Images are made as validation makes them: a record goes through the input pipeline
 * itself (data/pipeline.h, in file order, with the run's crop and fast-decode
 * settings), so a run's validation record predicts exactly what validation logged; a
 * file goes through the pipeline's file source (pipe_decode_file: a JPEG by the same
 * jpg_decode_into(), a PNG by png_decode_rgb(), then the same centre crop and resize).
 * The replica pool scales bytes to floats as training feeds them.
 *
 * Work: the pipeline's workers read and decode (batches ahead of the one being
 * forwarded); each batch's forward pass runs on an inference-only replica pool
 * (pool/rpool.h, o.replicas contexts from nn_ctx_new_infer); infer/infer.h gives the
 * softmax in double and, with tta_flip, the mean of the probabilities of the image
 * and its mirror image. predict makes no thread of its own.
 *
 * Inputs that cannot be predicted fail alone, each with a pt_err naming the file (and
 * the record and byte offset in a shard) and why; the rest are predicted:
 *   - a file that is neither JPEG nor PNG, a truncated or corrupt JPEG (libjpeg's
 *     warnings are errors, as in training), a damaged PNG, an unreadable file;
 *   - a file over PRD_MAX_FILE_BYTES, an image whose header claims more than
 *     JPG_MAX_SIDE pixels a side or JPG_MAX_PIXELS pixels (refused before decoding);
 *   decoded (converted to RGB): grayscale and CMYK / YCCK JPEGs (TurboJPEG converts
 *   them), PNGs of every kind (palette, grey, 16 bits, alpha composed onto black).
 *
 * Threads: one prd runs one prediction at a time; prd_progress() may be called from
 * any thread while it runs.
 *
 * Ownership: prd_new() borrows the rm_model (it must outlive the prd); prd_free().
 * prd_results hold malloc'd arrays freed by prd_results_free(). prd_list_inputs()
 * gives a malloc'd list freed by prd_list_free().
 */
#ifndef PT_PREDICT_H
#define PT_PREDICT_H

#include <stdint.h>

#include "base/err.h"
#include "data/batch.h"
#include "data/dataset.h"
#include "infer/runmodel.h"

#define PRD_MAX_FILE_BYTES (256LL * 1024 * 1024)

typedef struct prd_opts {
    int batch;              /* images per forward pass, >= 1 */
    int replicas;           /* forward threads, >= 1 */
    int workers;            /* decode threads; 0: 2 */
    int tta_flip;           /* average with the mirror image */
    /* Called on the calling thread after each batch (NULL: none). */
    void (*on_batch)(void *ctx, long long done, long long total);
    void *ctx;
} prd_opts;

typedef struct prd_item {
    int ok;                 /* 1: its row of probs holds its probabilities */
    int label;              /* a labeled record's class; -1 otherwise */
    char id[BATCH_ID_MAX];  /* a test record's id; "" otherwise */
    pt_err err;             /* !ok: why */
} prd_item;

typedef struct prd_results {
    int k;                  /* classes */
    long long n;            /* items: one per file, or per record predicted */
    prd_item *items;
    double *probs;          /* n x k; a failed item's row is all 0 */
    long long n_failed;     /* files that failed (items with !ok) plus records skipped */
    long long n_errors;     /* records the pipeline skipped (not items): their errors */
    pt_err *errors;
} prd_results;

typedef struct prd prd;

int prd_new(const rm_model *m, const prd_opts *o, prd **out, pt_err *e);
void prd_free(prd *p);

/* One item per path, in order. An error only for what stops the whole run (memory). */
int prd_files(prd *p, char *const *paths, long long n, prd_results *out, pt_err *e);
/* The records of a split in file order: labels with labeled, else ids. Bad records
 * are skipped (counted, their errors kept); an error when the split cannot be read. */
int prd_split(prd *p, const ds_split *split, int labeled, prd_results *out, pt_err *e);
void prd_results_free(prd_results *r);

/* Images done and planned so far, seconds since the prediction began. */
void prd_progress(const prd *p, long long *done, long long *total, double *seconds);

/* The image files under the given paths: a file is taken as it is; a folder is walked
 * recursively in sorted order, taking files ending .jpg, .jpeg or .png (any case),
 * following symbolic links but entering no folder twice (no loops). *skipped counts
 * the other files met in folders. An empty result is not an error here. A path that
 * does not exist, or a folder that cannot be listed, is an error naming it. */
int prd_list_inputs(char *const *paths, int n, char ***files, long long *count,
                    long long *skipped, pt_err *e);
void prd_list_free(char **files, long long count);

#endif
