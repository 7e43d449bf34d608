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
#include "infer/infer.h"
#include "data/batch.h"
#include "data/dataset.h"
#include "infer/runmodel.h"

#define PRD_MAX_FILE_BYTES (256LL * 1024 * 1024)

/* Its types and calls (prd_opts, prd_results, prd_new, prd_split, prd_files, ...) are
 * declared in infer/infer.h, the door src/ includes. */

#endif
