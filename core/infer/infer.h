/* infer — the one inference path: images (bytes, as the input pipeline or predict's
 * file source decode, crop and resize them) forwarded on the replica pool (which
 * scales them to floats, the one normalisation), softmax in double, the test-time
 * flip, top-k. Validation (train/evaluate.c), predict and ensemble (infer/predict.h)
 * and classify (src/cmd_onnx.c) all come through here.
 *
 * Two forms of the test-time flip, each the one its callers have always given:
 * inf_logits (validation) hands back the log of the mean of the two softmaxes as
 * logits, so that the loss and the argmax downstream need nothing else; inf_probs
 * (predict) hands back the mean of the two softmaxes in double.
 *
 * Ownership: nothing here allocates what outlives a call; every array is the
 * caller's. inf_logits and inf_probs mirror the caller's images in place when asked
 * to flip.
 */
#ifndef PT_INFER_H
#define PT_INFER_H

#include <stdint.h>

#include "base/err.h"

/* The pool and the model, by name only: a door names no lower header (their calls
 * are pool/rpool.h's and nn/nn.h's, for core/ files that include those). */
typedef struct rpool rpool;
typedef struct nn_model nn_model;

/* out[c] = softmax(logits)[c] for k classes, computed in double. */
void inf_softmax(const float *logits, int k, double *out);
/* Index of the largest of k probabilities (the first on a tie). */
int inf_argmax(const double *p, int k);
/* The largest logit's class (the first on a tie) and its softmax probability. */
void inf_top1(const float *logits, int k, int *arg, float *p);
/* The n (<= k) most probable classes, most probable first, in order[0..n); of equal
 * probabilities the lower class first (as predict's CSV has always listed them). */
void inf_topk(const double *p, int k, int n, int *order);
/* Mirror each of n images (h x w x 3 bytes, packed) left to right, in place. */
void inf_flip(uint8_t *images, int n, int h, int w);
/* a[i] = log of the mean of softmax(a[i]) and softmax(b[i]) for n rows of k logits
 * (probabilities below 1e-30 are taken as 1e-30). */
void inf_mean_softmax(float *a, const float *b, int n, int k);

/* An inference-only replica pool for model m (borrowed: it must outlive the pool):
 * replicas threads of inference contexts, each forwarding up to per_replica images
 * at a time. Freed with inf_pool_free() (rpool_free()). */
int inf_pool_new(nn_model *m, int replicas, int per_replica, rpool **out, pt_err *e);
void inf_pool_free(rpool *pool);

/* Logits [n][k] of n images of h x w on the pool; with flip, the log of the mean of
 * the softmax of each image and of its mirror image (the images are mirrored, and
 * spare, room for n x k floats, is used). */
int inf_logits(rpool *pool, uint8_t *images, int n, int h, int w, int flip, float *logits,
               float *spare, pt_err *e);
/* Probabilities [n][k] in double of n images of h x w on the pool; with flip the mean
 * of the image's and its mirror image's (the images are mirrored). logits has room
 * for n x k floats. */
int inf_probs(rpool *pool, uint8_t *images, int n, int h, int w, int k, int flip,
              float *logits, double *probs, pt_err *e);

#endif
