/* conform — an imported ONNX graph checked against PyTorch: the reference files
 * tests/data/conform/make_conform.py writes beside each .onnx (PTREF1: named float
 * tensors, layout in that script), the input both sides compute from a formula, and
 * the check itself: the eval-mode logits, then one training step as petal-tui's
 * trainer takes it (batch norm on batch statistics, softmax cross-entropy summed,
 * dlogits scaled by 1 / N) and its loss and the gradient of every parameter, mapped
 * back to the ONNX initializer it came from (nn_import_onnx_map), each compared with
 * PyTorch's.
 *
 * Used by tests/test_conform.c (the committed narrow fixtures, in `make test`) and
 * tests/conform/check.c (`make conformance`: the full-width nets). Test code: it
 * prints nothing; errors come back in a pt_err.
 *
 * Ownership: cf_ref_load() returns a cf_ref the caller frees with cf_ref_free(); its
 * tensors' names and data live in it. cf_check() frees everything it allocates.
 */
#ifndef PT_CONFORM_H
#define PT_CONFORM_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* The tolerances of issue 11: logits within 1e-4 relative, the loss and every
 * parameter's gradient within 1e-3 (norm-wise per tensor, see cf_result). */
#define CF_TOL_LOGITS 1e-4
#define CF_TOL_LOSS 1e-3
#define CF_TOL_GRAD 1e-3
/* Except where PyTorch does not agree with itself that well: each reference file
 * carries, per tensor, PyTorch's own spread (how far the same step computed in
 * float64, and in float32 through other kernels, lands from the reference; see
 * make_conform.py). Where that spread times CF_SPREAD_FACTOR exceeds CF_TOL_GRAD, the
 * tensor is held to that instead: a gradient that an activation's kink near some
 * value, or a cancellation, makes sensitive moves by more than 1e-3 between any two
 * float32 implementations (at full width, PyTorch's channels-last kernels against
 * its default ones: up to 2e-2 on DenseNet-121). */
#define CF_SPREAD_FACTOR 2.0
/* A spread above this means PyTorch cannot pin the gradient down at all: it is zero
 * but for rounding (a bias or shift in front of a training-mode batch norm, which
 * removes any constant). Such tensors are held to the spread rule like the others
 * but left out of the worst error reported. */
#define CF_UNDETERMINED 0.1

#define CF_MAX_RANK 8

typedef struct cf_tensor {
    const char *name;
    int rank;
    uint32_t dims[CF_MAX_RANK];
    size_t count;
    float *data;
} cf_tensor;

typedef struct cf_ref {
    cf_tensor *t;
    size_t n;
    char *names;        /* the names, NUL-terminated one after the other */
    float *values;      /* every tensor's data */
} cf_ref;

int cf_ref_load(const char *path, cf_ref **out, pt_err *e);
/* The tensor called name, or NULL. */
const cf_tensor *cf_ref_find(const cf_ref *r, const char *name);
void cf_ref_free(cf_ref *r);
/* n tensors into a PTREF1 file, atomically. */
int cf_ref_write(const char *path, const cf_tensor *t, size_t n, pt_err *e);

/* The input of every reference, n x hw x hw x 3 NHWC: element k is
 * (fmix32(k + 1) >> 20) / 1024 - 2 (MurmurHash3's finaliser), a multiple of 1/1024
 * in [-2, 2), which float32 holds exactly on both sides. */
void cf_input(int n, int hw, float *x);

typedef struct cf_result {
    int n, hw, classes;
    /* Logits: the largest difference relative to the largest PyTorch logit (an
     * element-wise ratio would divide by logits that happen to be near 0). */
    double logits_err;          /* eval mode */
    double train_logits_err;    /* the training step's forward */
    double loss, loss_err;      /* PyTorch's summed loss; |difference| / |loss| */
    /* Gradients, per ONNX initializer: ||g_petal - g_torch|| / ||g_torch||, norms
     * over the tensor's elements. The largest among the tensors PyTorch determines
     * (spread <= CF_UNDETERMINED), and its tensor. */
    double grad_err;
    char grad_worst[160];
    int tensors;                /* gradient tensors compared */
    int beyond;                 /* determined ones with an error above CF_TOL_GRAD */
    int undetermined;           /* tensors with a spread above CF_UNDETERMINED */
    /* The worst of error / tolerance over all tensors, the tolerance being the larger
     * of CF_TOL_GRAD and CF_SPREAD_FACTOR x the spread (within when <= 1), and its
     * tensor. */
    double grad_score;
    char grad_score_name[160];
    size_t params;              /* parameters of the model, each in some tensor */
    double import_s, step_s;    /* importing the file; the forwards and the backward */
} cf_result;

/* Called per gradient tensor: its initializer, error, share of the whole gradient's
 * norm (PyTorch's), and PyTorch's spread there (-1: unknown). */
typedef void (*cf_each_fn)(void *ctx, const char *name, double err, double share,
                           double spread);

typedef struct cf_opts {
    const char *dump_path;  /* petal-tui's side in the reference's form (setup, labels,
                               logits, train_logits, loss, grad/INIT); NULL: none */
    cf_each_fn each;        /* NULL: none */
    void *ctx;
    int input_norm;         /* 1 + the nn_norm (nn_import.h) to import with, the reference
                               having computed the graph on cf_input's values so converted
                               (Keras's raw or caffe input); 0: NN_NORM_UNIT, as they are */
} cf_opts;

/* Imports onnx_path (its own classifier, no input normalisation unless
 * o->input_norm, the reference's input size) and compares with ref_path as above; o
 * may be NULL. An error (PT_E*) when a file cannot be read or does not match: a
 * tensor missing, a shape that differs, a parameter with no gradient in the
 * reference or one the reference has and the model lacks. */
int cf_check(const char *onnx_path, const char *ref_path, const cf_opts *o, cf_result *r,
             pt_err *e);

/* 1 when every figure of r is within the tolerances above. */
int cf_pass(const cf_result *r);

#endif
