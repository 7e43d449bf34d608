/* trainer — one run from start to end (see trainer.h): prepare (plan.c), the
 * updates (loop.c), the test predictions (validate.c), and how the run ended. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "train/distill.h"
#include "train/loop.h"
#include "train/plan.h"
#include "train/publish.h"
#include "train/trn.h"

static void free_run(trn *r)
{
    trn_parts_free(&r->parts);
    trn_plan_free(&r->plan);
    trn_loop_free(&r->loop);
    crv_free(&r->curves);
    trn_persist_free(&r->persist);
    free(r);
}

/* summary.json's stop, from the end message (a failure to write it is logged: the run
 * itself is done). */
static void write_outcome(trn *r, run_stop stop)
{
    char msg[sizeof(((run_snapshot *)0)->message)];
    run_snapshot *s = prg_lock(r->env->progress);
    util_copy(msg, sizeof msg, s->message);
    prg_unlock(r->env->progress);
    if (stop == RUN_STOP_EARLY)
        util_fmt(msg, sizeof msg,
                 "early stop at epoch %d after %d epoch%s without improvement (the best %s, "
                 "%.4f, at epoch %d)",
                 r->loop.epoch, r->keep.since, r->keep.since == 1 ? "" : "s",
                 run_monitor_key(r->cfg->monitor),
                 r->keep.best_value, r->keep.best_epoch);
    else if (stop == RUN_STOP_EPOCHS)
        util_fmt(msg, sizeof msg, "epochs done: %d of %d", r->loop.epoch, r->cfg->epochs);
    pt_err oe;
    if (trn_keep_write_outcome(r, stop, msg, &oe) != PT_OK)
        trn_log(r, "the run's summary could not be written: %s", oe.msg);
}

/* The test predictions with the kept epoch's weights (the last epoch's afterwards). */
static int predict_test(trn *r, pt_err *e)
{
    float *last;
    int rc = trn_keep_use_best(r, &last, e);
    if (rc != PT_OK)
        return rc;
    rc = trn_predict_test(r, e);
    trn_keep_use_last(r, last);
    return rc;
}

/* After the loop ended well: a stop's message, or the test predictions and the done
 * message. RUN_STOPPED, RUN_DONE, or RUN_FAILED with *rc the predictions' error. */
static run_state finish(trn *r, int stopped, int *rc, pt_err *e)
{
    if (stopped == 2 && !r->persist.last_checkpoint[0])
        trn_set_state(r, RUN_STOPPED,
                      "stopped after a non-finite loss at update %lld; no checkpoint had been "
                      "written yet",
                      r->loop.update + 1);
    else if (stopped == 2)
        trn_set_state(r, RUN_STOPPED,
                      "stopped after a non-finite loss at update %lld; the last good "
                      "checkpoint is %s",
                      r->loop.update + 1, r->persist.last_checkpoint);
    else if (stopped)
        trn_set_state(r, RUN_STOPPED, "stopped at update %lld; continue with --resume %s",
                      r->loop.update, r->persist.folder.dir);
    if (stopped) {
        if (r->loop.update > 0 || r->cfg->resume[0])
            write_outcome(r, RUN_STOP_USER);
        return RUN_STOPPED;
    }
    trn_set_state(r, RUN_RUNNING, "predicting the test split");
    if ((*rc = predict_test(r, e)) != PT_OK)
        return RUN_FAILED;
    /* The figures of the run's model: the kept epoch's. */
    int kept_epoch = trn_keep_epoch_kept(r);
    const run_epoch *kept = NULL;
    for (int i = 0; i < r->curves.hist_n; i++)
        if (r->curves.hist[i].epoch == kept_epoch)
            kept = &r->curves.hist[i];
    /* A resumed run: the whole run's training time, and this process's. */
    char here[64] = "", early[200] = "", model[200] = "";
    if (r->loop.elapsed_before > 0)
        snprintf(here, sizeof here, " (%.0fs since the resume)",
                 trn_elapsed(r) - r->loop.elapsed_before);
    if (r->keep.early)
        util_fmt(early, sizeof early,
                 ", stopped early at epoch %d of %d (%d epoch%s without a better %s than epoch "
                 "%d's)",
                 r->loop.epoch, r->cfg->epochs, r->keep.since, r->keep.since == 1 ? "" : "s",
                 run_monitor_key(r->cfg->monitor),
                 r->keep.best_epoch);
    trn_keep_text(r, model, sizeof model);
    if (model[0])
        util_fmt(model + strlen(model), sizeof model - strlen(model), ": ");
    char distilled[4400] = "";
    trn_distill_text(r, distilled + 2, sizeof distilled - 2);
    if (distilled[2])
        memcpy(distilled, "; ", 2);
    trn_set_state(r, RUN_DONE,
                  "done: %d epochs in %.0fs%s%s; %sval_acc %.4f, val_f1 %.4f%s; outputs in %s",
                  r->loop.epoch, trn_elapsed(r), here, early, model, kept ? kept->val_acc : 0,
                  kept ? kept->val_f1 : 0, distilled, r->persist.folder.dir);
    write_outcome(r, r->keep.early ? RUN_STOP_EARLY : RUN_STOP_EPOCHS);
    return RUN_DONE;
}

/* The run's end in the snapshot and the log, and a new run stopped before its first
 * update leaves no half folder behind. Returns the final state. */
static run_state close_run(trn *r, run_state final, int rc, pt_err *e)
{
    /* Closed before the end is logged, so that the run's last log line is its end
     * (a failure to flush the events is said before it). */
    tb_close(&r->persist.events);
    if (rc == PT_ESTOPPED) {
        /* Stopped while preparing (e.g. during the demo data's generation). */
        final = RUN_STOPPED;
        trn_set_state(r, RUN_STOPPED, "stopped before training began%s%s",
                      r->loop.stopped_in ? ", in the step: " : "",
                      r->loop.stopped_in ? r->loop.stopped_in : "");
    } else if (rc != PT_OK) {
        final = RUN_FAILED;
        if (r->persist.folder.dir[0])
            trn_log(r, "failed: %s", e ? e->msg : "error");
        trn_set_state(r, RUN_FAILED, "failed: %s", e ? e->msg : "error");
    }
    /* log.txt ends with how the run ended (a failure is logged as it happens). */
    if (final != RUN_FAILED) {
        char msg[sizeof(((run_snapshot *)0)->message)];
        run_snapshot *s = prg_lock(r->env->progress);
        util_copy(msg, sizeof msg, s->message);
        prg_unlock(r->env->progress);
        trn_log_end(r, msg);
    }
    /* A new run stopped or failed before its first update leaves no half folder behind
     * (a bad --model or --data made runs/NAME and left it): the failure is said on stderr
     * and in the snapshot, and the folder held nothing else. Only a folder this run
     * made (run_discard checks), never a resumed one. */
    if ((final == RUN_STOPPED || final == RUN_FAILED) && r->loop.update == 0 &&
        !r->cfg->resume[0] && run_discard(&r->persist.folder)) {
        run_snapshot *s = prg_lock(r->env->progress);
        size_t k = strlen(s->message);
        util_fmt(s->message + k, sizeof s->message - k, "; nothing kept (%s removed)",
                 r->persist.folder.dir);
        prg_unlock(r->env->progress);
    }
    trn_publish_history(r);
    return final;
}

run_state trn_run(const trn_env *env, pt_err *e)
{
    trn *r = calloc(1, sizeof *r);
    if (!r) {
        err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        prg_set_state(env->progress, RUN_FAILED, "failed: out of memory");
        return RUN_FAILED;
    }
    trn_persist_init(&r->persist);
    r->cfg = env->cfg;
    r->env = env;
    r->loop.run_start = r->loop.epoch_start = util_now();
    tlm_start(&r->telemetry, r->loop.run_start);
    run_state final = RUN_FAILED;
    /* 0 running, 1 stopped on request, 2 stopped after a non-finite loss */
    int stopped = 0;
    int rc = trn_prepare(r, e);
    if (rc == PT_OK)
        rc = trn_train(r, &stopped, e);
    if (rc == PT_OK)
        final = finish(r, stopped, &rc, e);
    final = close_run(r, final, rc, e);
    free_run(r);
    return final;
}
