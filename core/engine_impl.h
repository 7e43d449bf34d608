/* engine_impl — what core/engine.c hands to its helper files, not to ui/ or src/:
 * the Grad-CAM of a validation image with the run folder's model (engine_explain.c).
 *
 * Ownership: eng_cam_make() opens the model into *cache the first time (and again
 * when the folder or a newer epoch is asked for); eng_cam_model_free() frees it.
 * Only the engine's sample thread calls them.
 */
#ifndef PT_ENGINE_IMPL_H
#define PT_ENGINE_IMPL_H

#include "base/err.h"
#include "run.h"

typedef struct eng_cam_model eng_cam_model;

/* The Grad-CAM of item (a validation image with its label, as the sample thread
 * decodes it; results of epoch val_epoch) with the model of the run folder dir, for
 * its predicted and its true class, into out (run_explain_free). PT_OK, or an
 * error naming the folder (none yet, no checkpoint, a model that cannot be read). */
int eng_cam_make(eng_cam_model **cache, const char *dir, int val_epoch, const run_val_item *item,
                 run_explain *out, pt_err *e);
void eng_cam_model_free(eng_cam_model *m);

#endif
