/* runmodel — a trained model opened for inference: a petal-tui run folder (its config,
 * class names and checkpoint) or an ONNX file, as one rm_model that predict and
 * ensemble use alike.
 *
 * A run folder gives the weights validation used (the moving average when the run
 * kept one) of the epoch the run keeps as its model (--keep: its best.ckpt, or the
 * last epoch's checkpoint), the run's image size (its config's, else its dataset's),
 * its class names (classes.txt; for runs made before it existed the dataset's names,
 * else "class N") and its validation decode settings. A run of an imported ONNX model
 * needs that file again to rebuild the graph: a missing one is an error naming it, and
 * the run's --input-norm is the one it trained with. An ONNX file is imported with its
 * own classifier, with the input convention asked for, or by default the file's own
 * (nn_import_norm_auto: a petal-tui export or a graph that normalises itself takes
 * pixels 0-255, anything else ImageNet's mean and std).
 *
 * Ownership: rm_open() fills a caller-owned rm_model whose net, class_names and source
 * are malloc'd; rm_close() frees them (and is safe on a zeroed or failed one).
 */
#ifndef PT_RUNMODEL_H
#define PT_RUNMODEL_H

#include "base/err.h"
#include "nn/nn.h"
#include "nn/nn_import.h"
#include "data/pipeline.h"
#include "run.h"

typedef struct rm_model {
    nn_model *net;          /* validation's weights (the moving average when kept) */
    int image_size;         /* S: the net's input is S x S x 3, RGB in [0, 1] */
    int n_classes;
    char **class_names;     /* n_classes, malloc'd */
    int fast_decode, crop;  /* the run's validation decode settings */
    char *source;           /* the run folder or file */
    int epoch;              /* epochs done (-1 unknown) */
    int update;             /* optimizer updates done (-1 unknown) */
    char *source_run;       /* an export: the run folder it came from ("" none), malloc'd */
    int ema;                /* 1: the moving average is in net */
    char weights[200];      /* a run folder: which of its epochs epoch is, in words ("the
                               best val_f1, 0.8123, of 7 epochs", "the last"); "" for an
                               ONNX file */
    int tta_flip;           /* the run validated with --tta flip */
    int precision;          /* a run folder's --precision (run.h's run_precision); an
                               ONNX file: RUN_PREC_FP32 */
    char *data;             /* the run's dataset folder ("" for the demo data), malloc'd;
                               NULL for an ONNX file */
    nn_norm norm;           /* the input convention the net's first layer applies */
    char norm_why[160];     /* why that one ("as asked", "the run's --input-norm", ...) */
    char size_why[200];     /* an ONNX file: why image_size ("declared by the graph", ...) */
    int features;           /* opened for features: 1 the vector its classifier reads,
                               0 the graph's output (a feature extractor's) */
} rm_model;

/* path: a run folder or an .onnx file. image_size_override > 0 builds the net for
 * that side instead of the run's (an ONNX file's default: its export's image_size,
 * else the size the graph declares, else 224). */
int rm_open(const char *path, int image_size_override, rm_model *out, pt_err *e);
/* The same with an ONNX file's input convention: RUN_NORM_AUTO for the file's own,
 * else the one named. A run folder takes only RUN_NORM_AUTO (it trained with its
 * own): another is PT_EUSAGE naming the folder. */
int rm_open_norm(const char *path, int image_size_override, run_input_norm norm,
                 rm_model *out, pt_err *e);
/* The same for feature vectors (features 1, an .onnx file only): the net ends at
 * what the graph's classifier reads (or at the graph's output when it has no Gemm /
 * MatMul classifier); n_classes is the vector's length, its names f0, f1, ... */
int rm_open_features(const char *path, int image_size_override, run_input_norm norm,
                     int features, rm_model *out, pt_err *e);
void rm_close(rm_model *m);

/* The dataset folder a run's data option names ("" is the demo data, made in the
 * cache when missing), into buf. */
int rm_data_path(const char *data, char *buf, size_t n, pt_err *e);

/* ---- export (runexport.c) ---- */

typedef struct rm_export_info {
    char path[4200];        /* the file written */
    long long bytes;
    int classes, image_size, epoch, update;
    int ema;                /* 1: the moving average of the weights was written */
    char weights[200];      /* whose weights, in words (rm_model's) */
    double seconds;         /* opening the run (calibrating) and writing the file */
    long long calibrated;   /* an int8 export: the training images calibrated on; else 0 */
} rm_export_info;

/* Writes run_dir's trained net (as rm_open gives it) as an ONNX file at out, or at
 * the run folder's export file (run/runfolder.h's RUN_F_EXPORT, model.onnx) when out
 * is NULL or "": atomically, with the run's class names, image size, folder and
 * epoch in its metadata (nn/nn_export.h). A run folder only;
 * a net the exporter cannot write is refused naming what, and nothing is written.
 * info (may be NULL) says what was written. */
int rm_export(const char *run_dir, const char *out, rm_export_info *info, pt_err *e);
/* The same in the int8 QDQ form (nn/nn_export.h, nn/nn_quant.h), at the run folder's
 * RUN_F_EXPORT_INT8 (model-int8.onnx) when out is NULL or "": its activations'
 * ranges measured on the first calib (>= 1; RM_CALIB_DEFAULT is the CLI's default)
 * training images of the run's dataset, or all of them when it has fewer, decoded as
 * validation decodes (the run's image size, crop and decode settings) after a shuffle
 * of a fixed seed. A run whose dataset cannot be read, or has no training record, is
 * refused naming it. */
#define RM_CALIB_DEFAULT 256
int rm_export_int8(const char *run_dir, const char *out, int calib, rm_export_info *info,
                   pt_err *e);

/* An export older than its run: m is an ONNX file petal-tui exported (its metadata's
 * source_run, update, epoch) and that run's checkpoint has moved past it (another
 * update; for exports before updates were written, another epoch). 1 with msg saying
 * both and the command that refreshes it; 0 when current, or nothing to compare (not
 * an export, its run gone). */
int rm_export_stale(const rm_model *m, char *msg, size_t n);
/* The same for run_dir's own export (RUN_F_EXPORT, model.onnx) when it has one. */
int rm_run_export_stale(const char *run_dir, char *msg, size_t n);

/* A pipeline configuration that makes images as m's validation makes them (its image
 * size, crop and decode settings), deterministic, prefetch 2: the rest (source, batch,
 * workers, labels) the caller's. */
void rm_pipe_config(const rm_model *m, pipe_config *c);

#endif
