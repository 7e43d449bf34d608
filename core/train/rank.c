/* rank — the trainer's part of a job of several ranks (see rank.h and
 * train/dist.h): the configuration check, sharing rank 0's state, agreeing on
 * commands, the training confusion matrix, the weight check and the gathering of
 * predictions. Alone (one process), every function here does nothing. */
#include <stdlib.h>
#include <string.h>

#include "base/crc32c.h"
#include "base/util.h"
#include "train/dist.h"
#include "train/rank.h"
#include "train/trn.h"

int trn_dist_join(trn *r, pt_err *e)
{
    /* The other ranks of a job train one run and end: a second run of the
     * workbench on rank 0 would wait for them forever. */
    static int runs;
    if (dist_on() && runs++ > 0)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "a job started by mpirun trains one run: start the job again for another");
    r->plan.rank = dist_rank();
    r->plan.ranks = dist_size();
    r->plan.job_replicas = r->plan.max_replicas = r->plan.replicas;
    r->plan.first_replica = 0;
    tlm_set_shown(&r->telemetry, r->plan.replicas);
    if (r->plan.ranks == 1)
        return PT_OK;
    typedef struct {
        uint32_t crc;
        int replicas;
    } who;
    const char *text = r->env->cfg_text ? r->env->cfg_text : "";
    who mine = { crc32c(text, strlen(text)), r->plan.replicas };
    who *all = malloc((size_t)r->plan.ranks * sizeof *all);
    if (!all)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int rc = dist_allgather(&mine, all, sizeof mine, e);
    r->plan.job_replicas = 0;
    for (int k = 0; rc == PT_OK && k < r->plan.ranks; k++) {
        if (all[k].crc != all[0].crc) {
            rc = err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "rank %d on %s has other options than rank 0 on %s: start every rank "
                         "with the same options and config file",
                         k, dist_host_of(k), dist_host_of(0));
            break;
        }
        if (k < r->plan.rank)
            r->plan.first_replica += all[k].replicas;
        for (int q = 0; q < all[k].replicas && r->plan.job_replicas + q < RUN_MAX_REPLICAS; q++)
            tlm_set_home(&r->telemetry, r->plan.job_replicas + q, k, dist_host_of(k));
        r->plan.job_replicas += all[k].replicas;
        if (all[k].replicas > r->plan.max_replicas)
            r->plan.max_replicas = all[k].replicas;
    }
    free(all);
    if (r->plan.rank == 0)
        tlm_set_shown(&r->telemetry, r->plan.job_replicas);
    return rc;
}

/* What a resumed run restores besides arrays. */
typedef struct shared_progress {
    long long update, in_epoch, examples, correct;
    int epoch;
    double loss_sum, epoch_time_before, elapsed_before;
} shared_progress;

int trn_dist_share_state(trn *r, pt_err *e)
{
    if (r->plan.ranks == 1)
        return PT_OK;
    shared_progress p = { r->loop.update, r->loop.in_epoch, r->loop.examples, r->loop.correct,
                          r->loop.epoch, r->loop.loss_sum, r->loop.epoch_time_before,
                          r->loop.elapsed_before };
    size_t k2 = (size_t)r->plan.n_classes * r->plan.n_classes;
    int rc = dist_bcast(&p, sizeof p, 0, e);
    if (rc == PT_OK)
        rc = dist_bcast(nn_params(r->parts.model), nn_param_count(r->parts.model) * sizeof(float),
                        0, e);
    if (rc == PT_OK)
        rc = dist_bcast(nn_buffers(r->parts.model), nn_buffer_count(r->parts.model) * sizeof(float),
                        0, e);
    if (rc == PT_OK)
        rc = dist_bcast(r->parts.optimizer.m, r->parts.optimizer.n * sizeof(float), 0, e);
    if (rc == PT_OK && r->parts.optimizer.v)
        rc = dist_bcast(r->parts.optimizer.v, r->parts.optimizer.n * sizeof(float), 0, e);
    if (rc == PT_OK && ema_on(&r->parts.average))
        rc = dist_bcast(r->parts.average.avg,
                        (r->parts.average.n_params + r->parts.average.n_buffers) * sizeof(float), 0,
                        e);
    if (rc == PT_OK)
        rc = dist_bcast(r->loop.train_cm, k2 * sizeof *r->loop.train_cm, 0, e);
    if (rc == PT_OK)
        rc = dist_bcast(&r->keep, sizeof r->keep, 0, e);
    if (rc != PT_OK)
        return rc;
    r->loop.update = p.update;
    r->loop.in_epoch = p.in_epoch;
    r->loop.examples = p.examples;
    r->loop.correct = p.correct;
    r->loop.epoch = p.epoch;
    r->loop.loss_sum = p.loss_sum;
    r->loop.epoch_time_before = p.epoch_time_before;
    r->loop.elapsed_before = p.elapsed_before;
    return PT_OK;
}

int trn_dist_overlap(const trn *r)
{
    if (r->cfg->overlap >= 0)
        return r->cfg->overlap;
    return dist_host_count() > 1;
}

int trn_dist_control(trn *r, int c, pt_err *e)
{
    if (r->plan.ranks == 1)
        return c;
    int rc = dist_max_int(&c, e);
    return rc == PT_OK ? c : rc;
}

int trn_dist_decision(trn *r, int c, pt_err *e)
{
    if (r->plan.ranks == 1)
        return c;
    int rc = dist_bcast(&c, sizeof c, 0, e);
    return rc == PT_OK ? c : rc;
}

int trn_dist_train_cm(trn *r, batch *const *batches, pt_err *e)
{
    if (r->plan.ranks == 1)
        return PT_OK;
    /* Every rank's pairs in a record of the largest update slice a rank can have
     * (update_size pairs, the rest -1). */
    size_t per = (size_t)r->plan.max_replicas * r->plan.batch_per_replica * r->plan.grad_acc;
    int32_t *mine = malloc(2 * per * sizeof *mine);
    int32_t *all = malloc((size_t)r->plan.ranks * 2 * per * sizeof *all);
    if (!mine || !all) {
        free(mine);
        free(all);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    for (size_t i = 0; i < 2 * per; i++)
        mine[i] = -1;
    size_t k = 0;
    for (int a = 0; a < r->plan.grad_acc; a++) {
        const batch *b = batches[a];
        for (int i = 0; i < b->n && k < per; i++, k++) {
            mine[2 * k] = batch_dominant_label(b, i);
            mine[2 * k + 1] = r->loop.preds[k];
        }
    }
    int rc = dist_allgather(mine, all, 2 * per * sizeof *mine, e);
    for (size_t i = 0; rc == PT_OK && i < (size_t)r->plan.ranks * per; i++) {
        int t = all[2 * i], p = all[2 * i + 1];
        if (t >= 0 && t < r->plan.n_classes && p >= 0 && p < r->plan.n_classes)
            r->loop.train_cm[(size_t)t * r->plan.n_classes + p]++;
    }
    free(mine);
    free(all);
    return rc;
}

int trn_dist_check_weights(trn *r, pt_err *e)
{
    if (r->plan.ranks == 1)
        return PT_OK;
    uint32_t sum =
        crc32c(nn_params(r->parts.model), nn_param_count(r->parts.model) * sizeof(float));
    sum = crc32c_extend(sum, nn_buffers(r->parts.model),
                        nn_buffer_count(r->parts.model) * sizeof(float));
    uint32_t *all = malloc((size_t)r->plan.ranks * sizeof *all);
    if (!all)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int rc = dist_allgather(&sum, all, sizeof sum, e);
    for (int k = 1; rc == PT_OK && k < r->plan.ranks; k++)
        if (all[k] != all[0])
            rc = err_set(e, PT_EIO, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "the weights of rank %d on %s differ from rank 0's on %s after %lld "
                         "updates (checksums %08x and %08x): the ranks no longer train one "
                         "model",
                         k, dist_host_of(k), dist_host_of(0), r->loop.update, (unsigned)all[k],
                         (unsigned)all[0]);
    free(all);
    return rc;
}

/* A rank's replica figures as they travel to rank 0. */
typedef struct rank_tel {
    int replicas;
    int gap;                /* rank 0's: updates to the next gather */
    float ips[RUN_MAX_REPLICAS], busy[RUN_MAX_REPLICAS], idle[RUN_MAX_REPLICAS],
        mxu[RUN_MAX_REPLICAS];
} rank_tel;

/* Seconds between gathers. */
#define TEL_PERIOD 0.5

int trn_dist_telemetry(trn *r, pt_err *e)
{
    if (r->plan.ranks == 1 || !tlm_gather_due(&r->telemetry, r->loop.update))
        return PT_OK;
    rank_tel mine;
    memset(&mine, 0, sizeof mine);
    mine.replicas = r->plan.replicas < RUN_MAX_REPLICAS ? r->plan.replicas : RUN_MAX_REPLICAS;
    for (int q = 0; q < mine.replicas; q++) {
        mine.ips[q] = (float)r->telemetry.rep[q].ips;
        mine.busy[q] = (float)r->telemetry.rep[q].busy_pct;
        mine.idle[q] = (float)r->telemetry.rep[q].idle_pct;
        mine.mxu[q] = (float)r->telemetry.rep[q].mxu_pct;
    }
    mine.gap = tlm_gather_gap(&r->telemetry, TEL_PERIOD);
    rank_tel *all = malloc((size_t)r->plan.ranks * sizeof *all);
    if (!all)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int rc = dist_allgather(&mine, all, sizeof mine, e);
    if (rc == PT_OK) {
        /* Rank 0 paces the gathers: every rank meets the next at the same update. */
        tlm_gather_at(&r->telemetry, r->loop.update + all[0].gap);
        /* Rank 0 keeps its own replicas' live figures; the others' as gathered. */
        int g = r->plan.replicas;
        for (int k = 1; r->plan.rank == 0 && k < r->plan.ranks; k++)
            for (int q = 0; q < all[k].replicas && g < r->telemetry.shown; q++, g++)
                tlm_set_figures(&r->telemetry, g, all[k].ips[q], all[k].busy[q], all[k].idle[q],
                                all[k].mxu[q]);
    }
    free(all);
    return rc;
}

/* One example as it travels to rank 0: its label, source, id and logits. */
static size_t record_bytes(const trn *r)
{
    return sizeof(int32_t) + sizeof(batch_src) + BATCH_ID_MAX +
           (size_t)r->plan.n_classes * sizeof(float);
}

int trn_dist_gather(trn *r, const batch *b, const float *logits, trn_gathered *g, pt_err *e)
{
    size_t rb = record_bytes(r), k = (size_t)r->plan.n_classes;
    int cap = r->plan.job_replicas * r->plan.predict_batch,
        mine = r->plan.replicas * r->plan.predict_batch;
    if (!g->pack) {
        g->pack = malloc((size_t)mine * rb);
        g->all = r->plan.rank == 0 ? malloc((size_t)cap * rb) : NULL;
        g->label = malloc((size_t)cap * sizeof *g->label);
        g->src = malloc((size_t)cap * sizeof *g->src);
        g->id = malloc((size_t)cap * sizeof *g->id);
        g->logits = malloc((size_t)cap * k * sizeof *g->logits);
        if (!g->pack || (r->plan.rank == 0 && !g->all) || !g->label || !g->src || !g->id ||
            !g->logits)
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    int n = b->n < mine ? b->n : mine;
    for (int i = 0; i < n; i++) {
        uint8_t *q = g->pack + (size_t)i * rb;
        memcpy(q, &b->label[i], sizeof(int32_t));
        memcpy(q + 4, &b->src[i], sizeof(batch_src));
        memcpy(q + 4 + sizeof(batch_src), b->id[i], BATCH_ID_MAX);
        memcpy(q + 4 + sizeof(batch_src) + BATCH_ID_MAX, logits + (size_t)i * k, k * sizeof(float));
    }
    size_t total = 0;
    int rc = dist_gatherv(g->pack, (size_t)n * rb, g->all, g->all ? (size_t)cap * rb : 0, &total,
                          0, e);
    g->count = 0;
    if (rc != PT_OK || r->plan.rank != 0)
        return rc;
    /* Every rank's slice, one after the other in rank order: the batch as one
     * process would hold it. */
    g->count = (int)(total / rb);
    for (int i = 0; i < g->count; i++) {
        const uint8_t *q = g->all + (size_t)i * rb;
        memcpy(&g->label[i], q, sizeof(int32_t));
        memcpy(&g->src[i], q + 4, sizeof(batch_src));
        memcpy(g->id[i], q + 4 + sizeof(batch_src), BATCH_ID_MAX);
        memcpy(g->logits + (size_t)i * k, q + 4 + sizeof(batch_src) + BATCH_ID_MAX,
               k * sizeof(float));
    }
    return PT_OK;
}

void trn_gathered_free(trn_gathered *g)
{
    free(g->pack);
    free(g->all);
    free(g->label);
    free(g->src);
    free(g->id);
    free(g->logits);
    memset(g, 0, sizeof *g);
}
