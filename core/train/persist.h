/* persist — the trainer's side of its run folder, through core/run/ (which owns the
 * format): the log (on screen and in log.txt; each bad record once a run), the
 * folder's making, the configuration and class names, the checkpoint's save and
 * restore (with the history and curves it carries), and the TensorBoard event files.
 * In a job of several ranks, rank 0 alone has a run folder: on the others nothing
 * here writes.
 *
 * Ownership: trn_persist lives inside the run's trn (train/trn.h); trn_persist_init
 * makes its lock, trn_persist_free destroys it. The event files are closed by
 * tb_close before the run's end is logged.
 */
#ifndef PT_TRN_PERSIST_H
#define PT_TRN_PERSIST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/err.h"
#include "run/runfolder.h"
#include "run/tboard.h"

typedef struct trn trn;

typedef struct trn_persist {
    run_handle folder;          /* the run folder (rank 0's; empty on the others) */
    tb_run events;              /* the TensorBoard event files (tboard.h) */
    char last_checkpoint[512];
    long long checkpoints;      /* written by this process */
    /* bad records: counted by the pipelines' worker threads as they meet them */
    atomic_llong data_errors;
    /* Each bad record is logged once a run: the pipeline repeats its shards every
     * pass, and meets the same ones again (hashes of the messages logged, under
     * error_lock; past 256 different ones, the rest are logged each time). */
    pthread_mutex_t error_lock;
    uint64_t errors_seen[256];
    int n_errors_seen;
} trn_persist;

void trn_persist_init(trn_persist *p);
void trn_persist_free(trn_persist *p);

/* A line for the log panel and the run folder's log.txt (there after the local
 * date and time). */
void trn_log(trn *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* How the run ended, as the last line of log.txt alone (the snapshot's message
 * says it on screen and on the headless runner's output). */
void trn_log_end(trn *r, const char *line);
/* The pipelines' on_error: count the bad record and log it (any thread). */
void trn_data_error(void *ctx, const pt_err *err);
/* The run folder made (rank 0), the temporary files a killed run left logged. */
int trn_make_run_dir(trn *r, pt_err *e);
/* The configuration and the class names (classes.txt: what predict labels with). */
int trn_write_config(trn *r, pt_err *e);
int trn_save_checkpoint(trn *r, const char *why, pt_err *e);
/* Resuming: weights, optimizer, progress and history from the run's checkpoint. */
int trn_restore_checkpoint(trn *r, pt_err *e);

#endif
