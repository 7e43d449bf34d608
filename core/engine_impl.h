/* engine_impl — what core/engine.c shares with its helper files, not with ui/ or
 * src/: the engine's state (struct eng), the calls the sample thread's file
 * (engine_samples.c: previews, validation images, Grad-CAM) makes into engine.c,
 * and the Grad-CAM of a validation image with the run folder's model
 * (engine_explain.c).
 *
 * Ownership: struct eng is engine.c's (eng_create / eng_destroy). eng_cam_make()
 * opens the model into *cache the first time (and again when the folder or a newer
 * epoch is asked for); eng_cam_model_free() frees it. Only the sample thread calls
 * them.
 */
#ifndef PT_ENGINE_IMPL_H
#define PT_ENGINE_IMPL_H

#include <pthread.h>
#include <stdint.h>

#include "engine.h"
#include "base/err.h"
#include "data/dataset.h"
#include "data/feed.h"
#include "run.h"
#include "train/lrfind.h"
#include "train/progress.h"

typedef struct eng_cam_model eng_cam_model;

#define LOG_LINES 512
#define ITEM_QUEUE 64       /* validation images asked for and not loaded yet */
#define ITEM_CACHE 96       /* loaded validation images kept (two inspect pages) */

/* A loaded validation image (or why it could not be loaded). */
typedef struct item_slot {
    int used;
    int epoch;                      /* of the results it belongs to */
    long long index;
    int rc;
    pt_err err;
    run_val_item item;
} item_slot;

struct eng {
    run_config cfg;
    char cfg_text[16384];           /* cfg as the run folder's config file */
    char warnings[1024];            /* eng_warnings(); written before any thread */
    prg *progress;
    feed *samples;

    pthread_mutex_t lock;           /* everything below but the dataset */
    pthread_cond_t cmd_cv;          /* command changes */
    pthread_cond_t end_cv;          /* run ended */
    int started, ended;
    int cmd;                        /* TRN_GO / TRN_PAUSE / TRN_STOP */
    pthread_t run_thread;
    pt_err fail;                    /* why the run failed (code PT_OK: it has not) */

    /* log ring */
    char (*log)[1100];
    uint64_t log_head, log_tail;

    /* the dataset, opened once (run and samples share it) */
    pthread_mutex_t data_lock;
    ds_dataset *ds;
    int data_rc;
    pt_err data_err;

    /* the sample thread: previews and validation images */
    pthread_t sample_thread;
    pthread_cond_t sample_cv;
    int sample_started, sample_exit;
    int preview_want;               /* images asked for; 0 none pending */
    uint64_t preview_gen, preview_count;
    run_preview preview;
    int preview_failed;             /* the latest preview made could not be */
    pt_err preview_err;
    long long item_want[ITEM_QUEUE];
    int item_want_n;
    item_slot items[ITEM_CACHE];
    int item_next;                  /* the slot the next loaded image replaces */
    /* Grad-CAM: the latest index asked for (-1 none), the latest made, and the
     * run's model it was made with (opened again when a newer epoch is asked) */
    long long cam_want;
    item_slot cam_slot;             /* item unused: the result is cam */
    run_explain cam;
    eng_cam_model *cam_model;

    /* the learning-rate finder's thread, before a run (train/lrfind.h) */
    lrf_track finder;
    pthread_t finder_thread;
    int finder_started, finder_stop;    /* finder_stop: cancel it */
};


/* engine.c: a line for the log ring; the dataset, opened once for the run and the
 * samples. */
void eng_log_push(eng *g, const char *line);
int eng_open_data(eng *g, const ds_dataset **out, pt_err *e);

/* engine_samples.c: wake the sample thread, starting it the first time (called
 * with g->lock held; returns with it held). */
void eng_wake_samples(eng *g);

/* The Grad-CAM of item (a validation image with its label, as the sample thread
 * decodes it; results of epoch val_epoch) with the model of the run folder dir, for
 * its predicted and its true class, into out (run_explain_free). PT_OK, or an
 * error naming the folder (none yet, no checkpoint, a model that cannot be read). */
int eng_cam_make(eng_cam_model **cache, const char *dir, int val_epoch, const run_val_item *item,
                 run_explain *out, pt_err *e);
void eng_cam_model_free(eng_cam_model *m);

#endif
