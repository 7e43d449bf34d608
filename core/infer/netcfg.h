/* netcfg — the net a run's configuration builds, and the input side it builds it
 * for: the one place the trainer (which trains the net) and runmodel (which opens a
 * trained run for inference) both use, so a run predicts with the graph it trained.
 * It sits on the infer/ floor, below train/, so neither caller includes the other.
 *
 * Ownership: netcfg_build returns a model the caller frees (nn_free); the
 * configuration and dataset are borrowed.
 */
#ifndef PT_NETCFG_H
#define PT_NETCFG_H

#include "base/err.h"
#include "data/dataset.h"
#include "nn/nn.h"
#include "nn/nn_import.h"
#include "run.h"

/* The model's input side: cfg->image_size, or the dataset's image size (from its
 * folder name, else from the first training record). */
int netcfg_image_size(const run_config *cfg, const ds_dataset *ds, int *img, pt_err *e);

/* The net of a run of cfg for img x img images and k classes: small (its widths and
 * convs), mobilenetv2 (its width), or the ONNX model with a new head of k classes
 * (info filled then; may be NULL). Weights as built: the trainer then initialises
 * them, predict loads the checkpoint's. */
nn_model *netcfg_build(const run_config *cfg, int img, int k, nn_import_info *info, pt_err *e);

#endif
