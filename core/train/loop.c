/* loop — the updates and the end of each epoch (see loop.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "train/dist.h"
#include "train/distill.h"
#include "train/metrics.h"
#include "train/plan.h"
#include "train/publish.h"
#include "train/rank.h"
#include "train/trn.h"

static void end_of_epoch_row(trn *r, run_epoch *row)
{
    memset(row, 0, sizeof *row);
    row->epoch = r->loop.epoch + 1;
    row->updates = (int)r->plan.updates_per_epoch;
    row->seconds = trn_epoch_elapsed(r);
    met_summary ms;
    met_from_confusion(r->loop.train_cm, r->plan.n_classes, &ms, NULL, NULL, NULL, NULL);
    row->train_loss = r->loop.examples ? r->loop.loss_sum / (double)r->loop.examples : NAN;
    row->train_acc = r->loop.examples ? (double)r->loop.correct / (double)r->loop.examples : NAN;
    row->train_precision = ms.precision;
    row->train_recall = ms.recall;
    row->train_f1 = ms.f1;
}

/* Wait for the user (pause = 1: pause first, the trainer's own decision). Paused
 * time is not training time. */
static int wait_user(trn *r, int pause, pt_err *e)
{
    double t_pause = util_now();
    /* In a job, rank 0 (the terminal, the workbench) decides for every rank. */
    int c = r->plan.rank == 0 ? r->env->wait(r->env->ctx, pause) : TRN_STOP;
    c = trn_dist_decision(r, c, e);
    double away = util_now() - t_pause;
    r->loop.epoch_start += away;
    r->loop.run_start += away;
    tlm_resume(&r->telemetry, util_now());
    return c;
}

/* At an update boundary: obey a pause or a stop; each writes a checkpoint. */
static int pause_point(trn *r, pt_err *e, int *stopped)
{
    int c = trn_dist_control(r, r->env->control(r->env->ctx), e);
    if (c < 0)
        return c;
    if (c == TRN_GO)
        return PT_OK;
    if (c == TRN_PAUSE) {
        trn_telemetry_idle(r);
        trn_set_state(r, RUN_PAUSED,
                      "paused at update %lld (epoch %d, step %lld); writing a checkpoint",
                      r->loop.update, r->loop.epoch + 1, r->loop.in_epoch);
        int rc = trn_save_checkpoint(r, "pause", e);
        if (rc != PT_OK)
            return rc;
        trn_set_state(r, RUN_PAUSED, "paused at update %lld (epoch %d, step %lld)", r->loop.update,
                      r->loop.epoch + 1, r->loop.in_epoch);
        if ((c = wait_user(r, 0, e)) < 0)
            return c;
        if (c == TRN_GO) {
            trn_set_state(r, RUN_RUNNING, "running");
            return PT_OK;
        }
    }
    *stopped = 1;
    /* Nothing trained yet in a new run: nothing to keep (trn_run removes its folder). */
    if (r->loop.update == 0 && !r->cfg->resume[0])
        return PT_OK;
    return trn_save_checkpoint(r, "stop", e);
}

/* One update: A batches from the pipeline, forward, backward, reduce, optimizer
 * step, then the training figures. *finite is 0 when the loss was not finite
 * (the replica pool then leaves the weights as they were). */
int trn_next_batches(trn *r, batch **batches, pt_err *e)
{
    for (int a = 0; a < r->plan.grad_acc; a++) {
        int rc = pipe_next(r->parts.pipeline, &batches[a], e);
        if (rc != 1) {
            for (int k = 0; k < a; k++)
                pipe_release(r->parts.pipeline, batches[k]);
            return rc == 0 ? err_set(e, PT_ENODATA, r->ds->root, PT_NO_RECORD, PT_NO_OFFSET,
                                     "the training stream ended (every record unreadable?)")
                           : rc;
        }
    }
    return PT_OK;
}

static int step(trn *r, batch **batches, int *finite, pt_err *e)
{
    const run_config *cfg = r->cfg;
    double t0 = util_now();
    int rc = trn_next_batches(r, batches, e);
    if (rc != PT_OK)
        return rc;
    /* The teacher's time (live: its forward passes) is the update's, not idle. */
    double idle = util_now() - t0;
    if ((rc = trn_distill_fill(r, batches, e)) != PT_OK) {
        trn_distill_release(r, batches);
        for (int a = 0; a < r->plan.grad_acc; a++)
            pipe_release(r->parts.pipeline, batches[a]);
        return rc;
    }
    double comm0 = dist_comm_seconds();
    double lr = sched_lr(&r->plan.schedule, r->loop.update);
    rpool_result res;
    rc = rpool_update(r->parts.pool, batches, lr, r->loop.update + 1,
                          cfg->seed ^ (uint64_t)r->loop.update * 0x9e3779b97f4a7c15ULL, &res,
                          r->loop.preds, e);
    if (rc == PT_OK && res.finite && r->plan.ranks > 1) {
        rc = trn_dist_train_cm(r, batches, e);
    } else if (rc == PT_OK && res.finite) {
        long long off = 0;
        for (int a = 0; a < r->plan.grad_acc; a++) {
            const batch *b = batches[a];
            for (int i = 0; i < b->n; i++) {
                int t = batch_dominant_label(b, i), p = r->loop.preds[off + i];
                if (t >= 0 && t < r->plan.n_classes && p >= 0 && p < r->plan.n_classes)
                    r->loop.train_cm[(size_t)t * r->plan.n_classes + p]++;
            }
            off += b->n;
        }
    }
    trn_distill_release(r, batches);
    for (int a = 0; a < r->plan.grad_acc; a++)
        pipe_release(r->parts.pipeline, batches[a]);
    *finite = rc == PT_OK && res.finite;
    if (rc != PT_OK || !res.finite)
        return rc;
    r->loop.update++;
    ema_update(&r->parts.average, r->loop.update, nn_params(r->parts.model),
               nn_buffers(r->parts.model));
    r->loop.in_epoch++;
    r->loop.loss_sum += res.loss_sum;
    r->loop.examples += res.examples;
    r->loop.correct += res.correct;
    double dt = util_now() - t0;
    tlm_note_update(&r->telemetry, dt);
    double loss = res.examples ? res.loss_sum / (double)res.examples : 0;
    double acc = res.examples ? (double)res.correct / (double)res.examples : 0;
    crv_push(&r->curves, loss, acc, lr);
    tlm_sample(&r->telemetry, r->parts.pool, r->plan.replicas, r->plan.sgemm_peak, idle);
    if ((rc = trn_dist_telemetry(r, e)) != PT_OK)
        return rc;
    double comm = dist_comm_seconds() - comm0;
    tlm_note_comm(&r->telemetry, r->loop.update, comm);
    trn_publish_progress(r, lr, loss, acc);
    tb_update(&r->persist.events, r->loop.update, loss, acc, lr);
    return PT_OK;
}

/* A non-finite loss: the update was skipped and the weights are unchanged. Say
 * so, pause, and let the user decide (lower the learning rate and resume, or
 * stop). No checkpoint is written: the last good one is kept. TRN_GO or TRN_STOP. */
static int on_nonfinite(trn *r, pt_err *e)
{
    run_snapshot *s = prg_lock(r->env->progress);
    s->nonfinite_at = r->loop.update + 1;
    prg_unlock(r->env->progress);
    trn_log(r,
            "non-finite loss at update %lld (epoch %d, step %lld): the update was skipped; the "
            "last good checkpoint is kept%s%s",
            r->loop.update + 1, r->loop.epoch + 1, r->loop.in_epoch + 1,
            r->persist.last_checkpoint[0] ? ": " : "", r->persist.last_checkpoint);
    trn_telemetry_idle(r);
    trn_set_state(r, RUN_PAUSED,
                  "non-finite loss at update %lld (epoch %d, step %lld); paused, weights "
                  "unchanged (lower the learning rate?)",
                  r->loop.update + 1, r->loop.epoch + 1, r->loop.in_epoch + 1);
    int c = wait_user(r, 1, e);
    if (c < 0)
        return c;
    if (c != TRN_GO)
        return TRN_STOP; /* nonfinite_at stays: the headless runner's exit status says it */
    s = prg_lock(r->env->progress);
    s->nonfinite_at = 0;
    prg_unlock(r->env->progress);
    trn_set_state(r, RUN_RUNNING, "running");
    return TRN_GO;
}

/* End of an epoch: validation, history, outputs, checkpoint. */
static int end_epoch(trn *r, int *stopped, pt_err *e)
{
    const run_config *cfg = r->cfg;
    run_epoch row;
    int rc = trn_dist_check_weights(r, e);
    if (rc != PT_OK)
        return rc;
    end_of_epoch_row(r, &row);
    double images_per_sec = row.seconds > 0 ? (double)r->loop.examples / row.seconds : 0;
    trn_set_state(r, RUN_RUNNING, "validating after epoch %d", r->loop.epoch + 1);
    rc = trn_validate(r, &row, e);
    if (rc == PT_ESTOPPED) {
        *stopped = 1;
        return trn_save_checkpoint(r, "stop", e);
    }
    if (rc != PT_OK)
        return rc;
    crv_add_epoch(&r->curves, &row);
    r->loop.epoch++;
    r->loop.in_epoch = 0;
    r->loop.loss_sum = 0;
    r->loop.examples = r->loop.correct = 0;
    memset(r->loop.train_cm, 0, (size_t)r->plan.n_classes * r->plan.n_classes * sizeof(long long));
    /* An epoch begun before a resume: its time is both processes'; this one's
     * part is said too. */
    char here[64] = "";
    if (r->loop.epoch_time_before > 0)
        snprintf(here, sizeof here, " (%.1fs since the resume)",
                 row.seconds - r->loop.epoch_time_before);
    r->loop.epoch_time_before = 0;
    r->loop.epoch_start = util_now();
    if ((rc = run_write_history(&r->persist.folder, r->curves.hist, r->curves.hist_n, e)) != PT_OK)
        return rc;
    tb_epoch(&r->persist.events, &row, r->loop.update,
             sched_lr(&r->plan.schedule, r->loop.update > 0 ? r->loop.update - 1 : 0),
             images_per_sec);
    trn_log(r,
            "epoch %d/%d - %d updates - %.1fs%s - %.0fms/update - loss %.4f - acc %.4f - val_loss "
            "%.4f - val_acc %.4f - val_f1 %.4f",
            row.epoch, cfg->epochs, row.updates, row.seconds, here,
            1000.0 * row.seconds / (row.updates ? row.updates : 1), row.train_loss, row.train_acc,
            row.val_loss, row.val_acc, row.val_f1);
    char line[1100];
    int k = snprintf(line, sizeof line, "  throughput:");
    for (int q = 0; q < r->telemetry.shown && k < 1000; q++) {
        char where[64] = "";
        if (r->plan.ranks > 1)
            snprintf(where, sizeof where, " (rank %d on %.32s)", r->telemetry.rank[q],
                     r->telemetry.host[q]);
        k += snprintf(line + k, sizeof line - (size_t)k,
                      " replica %d%s %.0f img/s (busy %.0f%%, idle %.0f%%, MXU %.0f%%);", q, where,
                      r->telemetry.rep[q].ips, 100 * r->telemetry.rep[q].busy_pct,
                      100 * r->telemetry.rep[q].idle_pct, 100 * r->telemetry.rep[q].mxu_pct);
    }
    if (r->plan.ranks > 1 && k < 1000) {
        int nb;
        long long sent, early;
        rpool_get_overlap(r->parts.pool, &nb, &sent, &early);
        k += snprintf(line + k, sizeof line - (size_t)k, " collectives %.1f ms/update",
                      1000 * r->telemetry.comm_per_update);
        if (nb > 0 && sent > 0)
            snprintf(line + k, sizeof line - (size_t)k,
                     " (%.0f%% of gradient buckets sent during the backward pass)",
                     100.0 * (double)early / (double)sent);
    }
    trn_log(r, "%s", line);
    if ((rc = trn_keep_epoch(r, &row, e)) != PT_OK)
        return rc;
    /* A checkpoint that cannot be written (a full disk) ends the run: the previous
     * one is intact, and training on without one would risk more than it saves. */
    if ((r->loop.epoch % (cfg->checkpoint_every > 0 ? cfg->checkpoint_every : 1) == 0 ||
         r->loop.epoch == cfg->epochs || r->keep.early) &&
        (rc = trn_save_checkpoint(r, "epoch", e)) != PT_OK)
        return rc;
    trn_set_freeze(r);
    trn_publish_history(r);
    trn_set_state(r, RUN_RUNNING, "running");
    return PT_OK;
}

int trn_train(trn *r, int *stopped, pt_err *e)
{
    batch **batches = calloc((size_t)r->plan.grad_acc, sizeof *batches);
    if (!batches)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    trn_set_state(r, RUN_RUNNING, "running");
    r->loop.run_start = r->loop.epoch_start = util_now();
    tlm_resume(&r->telemetry, r->loop.run_start);
    int rc = PT_OK;
    while (rc == PT_OK && !*stopped && !r->keep.early && r->loop.epoch < r->cfg->epochs) {
        while (r->loop.in_epoch < r->plan.updates_per_epoch) {
            if ((rc = pause_point(r, e, stopped)) != PT_OK || *stopped)
                break;
            int finite;
            if ((rc = step(r, batches, &finite, e)) != PT_OK)
                break;
            if (!finite && (rc = on_nonfinite(r, e)) != TRN_GO) {
                if (rc >= 0) {
                    rc = PT_OK;
                    *stopped = 2;
                }
                break;
            }
        }
        if (rc == PT_OK && !*stopped)
            rc = end_epoch(r, stopped, e);
    }
    free(batches);
    return rc;
}

void trn_loop_free(trn_loop *l)
{
    free(l->train_cm);
    free(l->preds);
}
