/* infer — the one inference path: images (bytes, as the input pipeline or predict's
 * file source decode, crop and resize them) forwarded on the replica pool (which
 * scales them to floats, the one normalisation), softmax in double, the test-time
 * flip, top-k. Validation (train/validate.c), predict and ensemble (infer/predict.h)
 * and classify (src/cmd_onnx.c) all come through here.
 *
 * Two forms of the test-time flip, each the one its callers have always given:
 * inf_logits (validation) hands back the log of the mean of the two softmaxes as
 * logits, so that the loss and the argmax downstream need nothing else; inf_probs
 * (predict) hands back the mean of the two softmaxes in double.
 *
 * It is also the door src/ includes for a trained model's answers (issue 41): predict
 * and ensemble (prd_, inf_model_, inf_score_probs; bodies in predict.c and
 * core/models.c), classify and model (inf_onnx_, inf_classify_; classify.c). As a door
 * it names no lower header: the pool, the model, a dataset's split are names only.
 *
 * Ownership: the inference calls allocate nothing that outlives a call; every array is
 * the caller's. inf_logits and inf_probs mirror the caller's images in place when
 * asked to flip. What the door's opens and news give is freed by the matching close
 * or free, as each says; prd_results by prd_results_free().
 */
#ifndef PT_INFER_H
#define PT_INFER_H

#include <signal.h>
#include <stdint.h>

#include "base/err.h"
#include "run.h"

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
/* Cross-entropy of one row of k logits against class label: -log softmax(logits)[label],
 * in double (a row with a non-finite logit gives a non-finite loss). */
double inf_xent(const float *logits, int k, int label);
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
 * at a time, in bf16 (nn.h's NN_BF16) when bf16 is 1. Freed with inf_pool_free() (rpool_free()). */
int inf_pool_new(nn_model *m, int replicas, int per_replica, int bf16, rpool **out, pt_err *e);
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

/* ---- predict: a trained model's probabilities for files or a dataset's split ----
 * The calls' bodies are core/infer/predict.c's (its header, infer/predict.h, says how
 * images are made); a model is opened with inf_model_open() (core/models.c). */

/* A test record's id, at most this long with its terminator (data/batch.h's). */
#define INF_ID_MAX 32

/* A trained model opened for inference (infer/runmodel.h's) and a dataset's split
 * (data/dataset.h's; datasets.h opens datasets), by name only. */
typedef struct rm_model rm_model;
typedef struct ds_split ds_split;

struct prd_results;

typedef struct prd_opts {
    int batch;              /* images per forward pass, >= 1 */
    int replicas;           /* forward threads, >= 1 */
    int workers;            /* decode threads; 0: 2 */
    int tta_flip;           /* average with the mirror image */
    int tta_crops;          /* average over five crops: the centre and the four corners,
                               each PRD_CROP_NUM/PRD_CROP_DEN of the side (prd_crop_side),
                               resized back to the model's side; with tta_flip each with
                               its mirror image too (10 views) */
    int bf16;               /* the products in bf16 (nn.h's NN_BF16); 0 fp32 */
    int raw;                /* the net's outputs as they are (feature vectors): no
                               softmax and no flip; probs then holds them */
    /* Called on the calling thread after each batch (NULL: none). */
    void (*on_batch)(void *ctx, long long done, long long total);
    void *ctx;
    /* Called on the calling thread after each batch: items [lo, lo + n) of r (and their
     * rows of probs) are final, in order (NULL: none). */
    void (*on_rows)(void *ctx, const struct prd_results *r, long long lo, long long n);
    void *rows_ctx;
    /* When it becomes non-zero (a signal handler's flag), the prediction stops after
     * the batch in hand: r->n is then the items done and r->stopped 1 (NULL: never). */
    volatile sig_atomic_t *stop;
} prd_opts;

typedef struct prd_item {
    int ok;                 /* 1: its row of probs holds its probabilities */
    int label;              /* a labeled record's class; -1 otherwise */
    char id[INF_ID_MAX];  /* a test record's id; "" otherwise */
    int shard;              /* prd_split: the split's shard index of the record (batch_src's);
                               -1 for a file */
    long long record;       /* prd_split: the record's index in that shard; for a file, its
                               index in the list */
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
    long long planned;      /* the images there were to predict */
    int stopped;            /* 1: stopped by prd_opts.stop; n items were done */
} prd_results;

typedef struct prd prd;

/* tta_crops' views: PRD_CROPS crops of PRD_CROP_NUM/PRD_CROP_DEN of the side. */
#define PRD_CROPS 5
#define PRD_CROP_NUM 7
#define PRD_CROP_DEN 8
/* The side of tta_crops' crops of an S x S image: 7/8 of S, rounded. */
int prd_crop_side(int S);

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


/* ---- a trained model for src/ (bodies in core/models.c) ---- */

/* Makes the kernels ready (nn_init); before the first forward pass. */
void inf_init(void);
/* path: a run folder or an .onnx file; image_size > 0 builds the net for that side;
 * norm: an ONNX file's input convention (RUN_NORM_AUTO: the file's own; a run folder
 * takes only that). Freed with inf_model_close() (safe with NULL). */
int inf_model_open(const char *path, int image_size, run_input_norm norm, rm_model **out,
                   pt_err *e);
/* The same for feature vectors (features 1; an .onnx file only, a run folder is
 * refused saying to export it): the net ends at the vector its Gemm / MatMul
 * classifier reads, or at the graph's output when it has none (a feature extractor);
 * inf_model_classes() is then the vector's length. */
int inf_model_open_features(const char *path, int image_size, run_input_norm norm,
                            int features, rm_model **out, pt_err *e);
void inf_model_close(rm_model *m);
int inf_model_classes(const rm_model *m);
/* The side of the square images its net takes. */
int inf_model_image_size(const rm_model *m);
char *const *inf_model_class_names(const rm_model *m);
/* An .onnx file's: why that side ("declared by the graph", ...); "" for a run. */
const char *inf_model_size_why(const rm_model *m);
/* Opened for features: 1 the vector its classifier reads, 0 the graph's output. */
int inf_model_features(const rm_model *m);
/* 1 when m is a petal-tui export whose run has moved past it (another update), with
 * msg saying both and the command that refreshes it (infer/runmodel.h). */
int inf_model_export_stale(const rm_model *m, char *msg, size_t n);
/* The run folder or file it was opened from. */
const char *inf_model_source(const rm_model *m);
/* A run folder's: the epoch whose weights it holds (-1 unknown), and which of the run's
 * epochs that is in words ("the best val_f1, 0.8123, of 7 epochs", "the last"); "" for
 * an .onnx file. */
int inf_model_epoch(const rm_model *m);
const char *inf_model_weights(const rm_model *m);
/* 1 when the run validated with --tta flip. */
int inf_model_tta_flip(const rm_model *m);
/* 1 when the run validated in bf16 (its --precision on this CPU); 0 for an ONNX file. */
int inf_model_bf16(const rm_model *m);

/* ---- ensemble's figures ---- */

/* Validation figures of probabilities (n x k) against labels: macro precision, recall
 * and F1 (train/metrics.h's), accuracy, and the mean cross-entropy. */
typedef struct inf_score {
    double acc, precision, recall, f1;
    double loss;            /* NAN when n is 0 */
} inf_score;

/* The figures of probs (r->n x r->k) against r's items' labels; preds (may be NULL)
 * gets each row's argmax. */
void inf_score_probs(const prd_results *r, const double *probs, int32_t *preds,
                     inf_score *out);

/* ---- an ONNX file as it is: `petal-tui model` and `classify` (core/infer/classify.c) ----
 * The graph imported with its own classifier (n_classes 0) or a new head of n_classes,
 * at size x size, with the input convention asked for (RUN_NORM_AUTO: its own). */

typedef struct inf_onnx inf_onnx;

/* What the import found, for `petal-tui model`. */
typedef struct inf_onnx_info {
    int onnx_nodes;         /* nodes in the file */
    int mapped;             /* layers of the library they became */
    int quantized;          /* 1 when weights were dequantized */
    int cut_from;           /* the first ONNX node cut for the new head; -1 none */
    char cut[512];          /* what was cut */
    int feature_c;          /* channels of the features the head reads */
    const char *norm_name, *norm_formula;  /* the input convention (static strings) */
    char norm_why[160];     /* why that one */
    int size;               /* the side it was built for */
    int decl_h, decl_w;     /* the size the graph declares (0: free) */
    char size_why[160];     /* why that side */
    int classifier;         /* 1: the graph ends in a classifier; 0: a feature extractor */
    char head_why[160];     /* why it is taken for one */
    double seconds;         /* reading and importing the file */
    size_t params, trainable;
    double mflop;           /* forward, per image */
} inf_onnx_info;

/* size 0: the size the graph declares, else 224 (one it fixes and cannot run at
 * otherwise is refused at another). With n_classes 0 and classifier set, a feature
 * extractor is refused (PT_EUSAGE, saying how to get a classifier from it); without,
 * the graph's output is kept whatever it is. Freed with inf_onnx_close() (safe with
 * NULL). */
int inf_onnx_open(const char *path, int size, int n_classes, int classifier,
                  run_input_norm norm, inf_onnx **out, pt_err *e);
void inf_onnx_close(inf_onnx *g);
void inf_onnx_about(const inf_onnx *g, inf_onnx_info *out);
/* Its outputs: the classes of its classifier. */
int inf_onnx_classes(const inf_onnx *g);
/* The layers it became as text (malloc'd; the caller frees it), NULL out of memory. */
char *inf_onnx_summary(const inf_onnx *g);
/* ImageNet's name of class cls when the graph has ImageNet's 1,000 outputs, else "". */
const char *inf_onnx_class_name(const inf_onnx *g, int cls);

/* Classify one image at a time: a file (JPEG, or PNG centre-cropped to a square)
 * decoded and resized to the graph's size, then forwarded on an inference pool of one.
 * inf_classify_new() fails only out of memory; freed with inf_classify_free(). */
typedef struct inf_classify inf_classify;
int inf_classify_new(inf_onnx *g, inf_classify **out, pt_err *e);
void inf_classify_free(inf_classify *c);
/* Reads and decodes the image file at path; e says why not, naming the file. */
int inf_classify_load(inf_classify *c, const char *path, pt_err *e);
/* The loaded image's class probabilities (inf_onnx_classes() of them) into probs. */
int inf_classify_run(inf_classify *c, double *probs, pt_err *e);

/* ---- explain: Grad-CAM (core/infer/explain.c, explain_sheet.c; infer/explain.h) ----
 * Why a model gave a class: Grad-CAM (Selvaraju et al.; the Keras example "Grad-CAM
 * class activation visualization"). For class c at layer L, with A [h][w][k] L's
 * output as the inference forward computes it (BN on its running statistics, dropout
 * off; a conv or BN with a fused activation: the activated values) and G the gradient
 * of c's logit (before the softmax) with respect to A: alpha_k = the mean of G over h
 * and w, map = ReLU(sum_k alpha_k A_k), divided by its maximum (an all-zero map stays
 * zero). The layer is a node id as `petal-tui model` lists them; the default is the
 * map the global pooling reads (xpl_default_layer). Float32, no test-time flip. */

typedef struct xpl xpl;

/* An explainer of m (borrowed: it must outlive it): a training context of batch 1.
 * It turns on m's input gradient (nn_model_set_input_grad, so every node carries
 * one) until xpl_free puts the setting back: neither while another thread runs a pass
 * on m's net (a live run's model: a training backward would run down to the input). A net whose output is not
 * class scores (1 x 1 x k, k >= 2) is refused (PT_EUSAGE, naming the model), as is an
 * int8 export (its fake quantization has no backward). Freed with xpl_free (NULL ok). */
int xpl_new(const rm_model *m, xpl **out, pt_err *e);
void xpl_free(xpl *x);
/* Nodes of m's net (valid layers lie in 0 .. that - 1). */
int xpl_nodes(const rm_model *m);
/* The map the last global average pooling reads (its input node); without one, or
 * when that is 1 x 1, the last node with an output larger than 1 x 1 that the output
 * depends on; -1 when there is none. */
int xpl_default_layer(const rm_model *m);
/* PT_OK when layer is a node the output depends on with an output larger than 1 x 1;
 * else PT_EUSAGE saying the range and the default. */
int xpl_layer_check(const rm_model *m, int layer, pt_err *e);
/* The layer's output shape (the map is h x w); zeros for no such node. */
void xpl_layer_shape(const rm_model *m, int layer, int *h, int *w, int *c);
/* A class by its name or its index: the class, or -1. */
int xpl_class_parse(const rm_model *m, const char *s);
/* Any RGB image (h x w x 3 bytes) as the model takes it: centre-cropped to a square
 * and resized to its S x S (out: S x S x 3). PT_OK or PT_ENOMEM. */
int xpl_prepare(const rm_model *m, const uint8_t *rgb, int h, int w, uint8_t *out);
/* The Grad-CAM map (layer's h x w floats in [0, 1]) of class cls for img (S x S x 3
 * bytes, as validation decodes it), and the softmax of the logits into probs (k
 * doubles; may be NULL). Errors name the model: a bad layer or class (PT_EUSAGE). */
int xpl_cam(xpl *x, const uint8_t *img, int layer, int cls, double *probs, float *map,
            pt_err *e);
/* The map upsampled bilinearly to h x w and coloured with jet, laid over rgb (h x w
 * x 3) at 0.4 (the Keras example's weight), or the colours alone when rgb is NULL,
 * into out (h x w x 3). PT_OK or PT_ENOMEM. */
int xpl_heat(const float *map, int mh, int mw, const uint8_t *rgb, int h, int w, uint8_t *out);

/* One image explained, for the workbench: an RGB image of any size, its predicted
 * class's map and overlay and, with a class given, that class's. */
typedef struct xpl_view {
    double *probs;          /* k */
    int pred;               /* the most probable class */
    int cls;                /* the class given, or -1 */
    int layer, mh, mw;      /* the layer and its map's size */
    float *map[2];          /* [0] the predicted class's, [1] cls's (NULL without) */
    int side;               /* the overlays: the image's centre square, side x side */
    uint8_t *overlay[2];    /* side x side x 3, as map[] */
} xpl_view;
/* rgb: h x w x 3 bytes, centre-cropped and resized to the model's input (xpl_prepare);
 * the overlays are over its centre square at full resolution (side = min(h, w)).
 * layer < 0: the default. v's arrays are malloc'd; xpl_view_free frees them. */
int xpl_view_image(xpl *x, const uint8_t *rgb, int h, int w, int layer, int cls, xpl_view *v,
                   pt_err *e);
void xpl_view_free(xpl_view *v);

/* `petal-tui explain`: one image file's sheet (explain_sheet.c). */
typedef struct xpl_opts {
    int layer;              /* < 0: the default */
    int cls;                /* a class to explain besides the prediction, or -1 */
    int top;                /* classes listed, >= 1 */
    int in_order;           /* xpl_top_losses: the first n records in file order (a
                               fixed choice of images), not the n highest losses */
} xpl_opts;
typedef struct xpl_answer {
    int pred;
    double prob;
    int layer, mh, mw;
} xpl_answer;
/* Decodes image as validation decodes a file (predict's decode: the run's crop and
 * decode settings) and writes png: the photo, the predicted class's heat map and its
 * overlay (a second row for opts->cls when >= 0), the top classes and probabilities
 * as text. Errors name the image (unreadable, not an image) or the file written. */
int xpl_file(xpl *x, const char *image, const char *png, const xpl_opts *o, xpl_answer *a,
             pt_err *e);

/* `petal-tui explain RUN --top-losses N`: a run's validation images with the highest
 * cross-entropy loss. */
typedef struct xpl_loss {
    long long index;        /* the record's place in the validation split, file order */
    int label, pred;
    double prob;            /* of the predicted class */
    double loss;            /* -log p(label) */
} xpl_loss;
/* Forwards every validation record of the run x was opened on (its dataset, decoded
 * as validation decodes it, without the test-time flip), keeps the n with the highest
 * loss (highest first; equal losses in record order) into out (room for n) and *got,
 * and writes png: a contact sheet, a tile per image with its Grad-CAM overlay of the
 * predicted class at o->layer and the caption true / predicted / probability / loss.
 * An ONNX file, or a run whose dataset is gone or has no validation records, is
 * refused naming it and saying what to do. */
/* With o->in_order, the first n records instead, in file order (the sheet's title
 * says which). */
int xpl_top_losses(xpl *x, int n, const char *png, const xpl_opts *o, xpl_loss *out,
                   int *got, pt_err *e);

#endif
