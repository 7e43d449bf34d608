/* series — a run's curves as one type both ways (see series.h). */
#include "series.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "engine.h"
#include "run/runfolder.h"

/* ---- a live run's series ----------------------------------------------------- */

static int per_update(int k)
{
    return k == RUN_S_BATCH_LOSS || k == RUN_S_BATCH_ACC || k == RUN_S_BATCH_LR;
}

void ser_free(run_series set[RUN_SERIES_COUNT])
{
    for (int k = 0; k < RUN_SERIES_COUNT; k++) {
        free(set[k].y); /* one block: y, then the x arrays */
        memset(&set[k], 0, sizeof set[k]);
    }
}

/* Every series of the set at its largest: a block of y and the three x arrays. */
static int reserve(run_series set[RUN_SERIES_COUNT])
{
    for (int k = 0; k < RUN_SERIES_COUNT; k++) {
        if (set[k].y)
            continue;
        size_t cap = per_update(k) ? RUN_CURVE_POINTS : RUN_MAX_EPOCHS;
        float *b = malloc((RUN_X_COUNT + 1) * cap * sizeof *b);
        if (!b) {
            ser_free(set);
            return PT_ENOMEM;
        }
        set[k].n = 0;
        set[k].y = b;
        for (int a = 0; a < RUN_X_COUNT; a++)
            set[k].x[a] = b + cap * (size_t)(a + 1);
    }
    return PT_OK;
}

/* A live run's x positions: an update's epoch (fraction) and wall-clock second,
 * from the epochs' ends (cumulative updates and seconds) and, inside the epoch
 * under way, its pace so far. */
typedef struct xmap {
    const float *cu, *ct;   /* ne epochs' ends: updates, seconds */
    int ne;
    double spe;             /* updates per epoch */
    double now_u, now_t;    /* the run's update and elapsed seconds */
} xmap;

static double xmap_of(const xmap *m, int axis, double u)
{
    if (axis == RUN_X_UPDATE)
        return u;
    double pu = 0, pv = 0; /* the epoch end before u */
    for (int i = 0; i < m->ne; i++) {
        double cu = m->cu[i], cv = axis == RUN_X_EPOCH ? i + 1 : m->ct[i];
        if (u <= cu)
            return cu > pu ? pv + (cv - pv) * (u - pu) / (cu - pu) : cv;
        pu = cu;
        pv = cv;
    }
    if (axis == RUN_X_EPOCH)
        return m->spe > 0 ? pv + (u - pu) / m->spe : NAN;
    /* Inside the epoch under way: at the pace since the last epoch's end. */
    if (m->now_u > pu && m->now_t > pv)
        return pv + (m->now_t - pv) * (u - pu) / (m->now_u - pu);
    return m->ne > 0 && pu > 0 ? pv / pu * u : NAN;
}

/* The history key whose field is epoch curve k (run folder's table: one place says
 * which run_epoch field each curve is). Every epoch curve has one. */
static int epoch_key(int k)
{
    int j = 0;
    while (j < RUN_H_COUNT - 1 && run_history_keys[j].series != k)
        j++;
    return j;
}

/* The epochs' series: a point at each epoch's end (the x arrays are the same for
 * all six: worked out once). */
static void epoch_series(const run_snapshot *s, const xmap *xm,
                         run_series set[RUN_SERIES_COUNT])
{
    int ne = xm->ne;
    run_series *first = &set[RUN_S_TRAIN_LOSS];
    for (int a = 0; a < RUN_X_COUNT; a++)
        for (int i = 0; i < ne; i++)
            first->x[a][i] = (float)xmap_of(xm, a, xm->cu[i]);
    for (int k = 0; k < RUN_SERIES_COUNT; k++) {
        if (per_update(k))
            continue;
        set[k].n = ne;
        for (int i = 0; i < ne; i++)
            set[k].y[i] = (float)run_history_get(&s->history[i], epoch_key(k));
        if (k != RUN_S_TRAIN_LOSS)
            for (int a = 0; a < RUN_X_COUNT; a++)
                memcpy(set[k].x[a], first->x[a], (size_t)ne * sizeof(float));
    }
}

/* The per-update series: point i at update (i + 1) * stride. */
static void update_series(const run_snapshot *s, const xmap *xm, run_series set[RUN_SERIES_COUNT])
{
    int n = s->curve_n < RUN_CURVE_POINTS ? s->curve_n : RUN_CURVE_POINTS;
    if (n < 0)
        n = 0;
    int stride = s->curve_stride > 0 ? s->curve_stride : 1;
    static const int kind[3] = { RUN_S_BATCH_LOSS, RUN_S_BATCH_ACC, RUN_S_BATCH_LR };
    const float *src[3] = { s->curve_loss, s->curve_acc, s->curve_lr };
    run_series *first = &set[kind[0]];
    for (int a = 0; a < RUN_X_COUNT; a++)
        for (int i = 0; i < n; i++)
            first->x[a][i] = (float)xmap_of(xm, a, (double)(i + 1) * stride);
    for (int j = 0; j < 3; j++) {
        run_series *se = &set[kind[j]];
        se->n = n;
        memcpy(se->y, src[j], (size_t)n * sizeof(float));
        if (j > 0)
            for (int a = 0; a < RUN_X_COUNT; a++)
                memcpy(se->x[a], first->x[a], (size_t)n * sizeof(float));
    }
}

int ser_from_snapshot(const run_snapshot *s, run_series set[RUN_SERIES_COUNT])
{
    if (reserve(set) != PT_OK)
        return PT_ENOMEM;
    float cu[RUN_MAX_EPOCHS], ct[RUN_MAX_EPOCHS];
    int ne = s->history_n < RUN_MAX_EPOCHS ? s->history_n : RUN_MAX_EPOCHS;
    if (ne < 0)
        ne = 0;
    double cum = 0, secs = 0;
    for (int i = 0; i < ne; i++) {
        long long upd = s->history[i].updates > 0 ? s->history[i].updates : s->steps_per_epoch;
        cum += (double)upd;
        secs += s->history[i].seconds > 0 ? s->history[i].seconds : 0;
        cu[i] = (float)cum;
        ct[i] = (float)secs;
    }
    xmap xm = { cu, ct, ne, (double)s->steps_per_epoch, (double)s->update, s->elapsed };
    epoch_series(s, &xm, set);
    update_series(s, &xm, set);
    return PT_OK;
}

/* ---- a run read back, as a snapshot ------------------------------------------- */

/* How the run read back ended, and how far it got: a petal-tui run's log says (its last
 * line), and its config says how many epochs it was to train. A run without an end
 * line was killed, or is still training. */
static void open_state(const run_figures *r, run_snapshot *s, int ne)
{
    int planned = r->epochs_planned > ne ? r->epochs_planned : ne;
    int finished = !r->run_folder || !strncmp(r->ended, "done: ", 6) ||
                   (!r->ended[0] && planned > 0 && ne >= planned);
    if (finished) {
        s->state = RUN_DONE;
        util_fmt(s->message, sizeof s->message,
                 "opened %s: a finished run, shown without training (petal-tui --resume %s "
                 "--epochs N, N above %d, continues it)",
                 r->name, r->path, planned);
        return;
    }
    s->state = !strncmp(r->ended, "failed: ", 8) ? RUN_FAILED : RUN_STOPPED;
    s->epochs = planned;
    /* Updates per epoch are known once an epoch ended; before, the bar stays empty. */
    s->total_steps = s->steps_per_epoch > 0 ? (long long)planned * s->steps_per_epoch : 0;
    s->epoch = ne;
    s->step = ne > 0 ? s->steps_per_epoch : 0;
    char how[340];
    if (r->ended[0])
        util_fmt(how, sizeof how, "its log ends \"%s\"", r->ended);
    else
        util_fmt(how, sizeof how, "its log has no end: killed, or still training");
    util_fmt(s->message, sizeof s->message,
             "opened %s: unfinished, %d of %d epochs, update %lld; %s. petal-tui --resume %s "
             "continues it",
             r->name, ne, planned, s->update, how, r->path);
}

/* The epochs' figures, the per-update curves (averaged down to the snapshot's
 * points), the totals. */
void ser_to_snapshot(const run_figures *r, run_snapshot *s)
{
    s->state = RUN_DONE;
    static const int row_of[6] = { RUN_S_TRAIN_LOSS, RUN_S_VAL_LOSS, RUN_S_TRAIN_ACC,
                                   RUN_S_VAL_ACC,    RUN_S_TRAIN_F1, RUN_S_VAL_F1 };
    double cum_u[RUN_MAX_EPOCHS], cum_t[RUN_MAX_EPOCHS];
    int ne = 0;
    for (int i = 0; i < RUN_MAX_EPOCHS; i++) {
        run_epoch *h = &s->history[i];
        memset(h, 0, sizeof *h);
        h->epoch = i + 1;
        h->train_loss = h->train_acc = h->train_f1 = h->val_loss = h->val_acc = h->val_f1 = NAN;
        h->train_precision = h->train_recall = h->val_precision = h->val_recall = NAN;
        cum_u[i] = cum_t[i] = NAN;
    }
    for (int k = 0; k < 6; k++) {
        const run_series *se = &r->s[row_of[k]];
        for (int i = 0; i < se->n; i++) {
            double ex = se->x[RUN_X_EPOCH][i];
            if (!isfinite(ex) || ex < 1 || ex > RUN_MAX_EPOCHS)
                continue;
            int e = (int)lround(ex) - 1;
            run_epoch *h = &s->history[e];
            double v = se->y[i];
            memcpy((char *)h + run_history_keys[epoch_key(row_of[k])].offset, &v, sizeof v);
            if (isfinite(se->x[RUN_X_UPDATE][i]))
                cum_u[e] = se->x[RUN_X_UPDATE][i];
            if (isfinite(se->x[RUN_X_TIME][i]))
                cum_t[e] = se->x[RUN_X_TIME][i];
            ne = e + 1 > ne ? e + 1 : ne;
        }
    }
    double pu = 0, pt = 0;
    for (int i = 0; i < ne; i++) {
        run_epoch *h = &s->history[i];
        h->updates = isfinite(cum_u[i]) ? (int)lround(cum_u[i] - pu) : 0;
        h->seconds = isfinite(cum_t[i]) ? cum_t[i] - pt : 0;
        pu = isfinite(cum_u[i]) ? cum_u[i] : pu;
        pt = isfinite(cum_t[i]) ? cum_t[i] : pt;
    }
    s->history_n = ne;
    s->epoch = s->epochs = ne;
    s->update = s->total_steps = (long long)pu;
    s->steps_per_epoch = ne > 0 ? s->history[ne - 1].updates : 0;
    s->step = s->steps_per_epoch;
    s->elapsed = pt;
    s->eta = -1;
    if (ne > 0) {
        s->running_loss = s->last_loss = s->history[ne - 1].train_loss;
        s->running_acc = s->last_acc = s->history[ne - 1].train_acc;
    }
    /* The per-update curves, averaged in groups of stride when there are more than
     * the snapshot holds (a point stands at update (i + 1) * stride). */
    const run_series *bl = &r->s[RUN_S_BATCH_LOSS], *ba = &r->s[RUN_S_BATCH_ACC],
                      *br = &r->s[RUN_S_BATCH_LR];
    int n = bl->n;
    int stride = n > RUN_CURVE_POINTS ? (n + RUN_CURVE_POINTS - 1) / RUN_CURVE_POINTS : 1;
    s->curve_stride = stride;
    s->curve_n = n / stride;
    for (int i = 0; i < s->curve_n; i++) {
        double l = 0, c = 0, q = 0;
        for (int j = i * stride; j < (i + 1) * stride; j++) {
            l += bl->y[j];
            c += j < ba->n ? ba->y[j] : NAN;
            q += j < br->n ? br->y[j] : NAN;
        }
        s->curve_loss[i] = (float)(l / stride);
        s->curve_acc[i] = (float)(c / stride);
        s->curve_lr[i] = (float)(q / stride);
    }
    s->lr = br->n > 0 ? br->y[br->n - 1] : 0;
    if (s->curve_n > 0 && s->update < (long long)s->curve_n * stride)
        s->update = s->total_steps = (long long)s->curve_n * stride;
    util_copy(s->model, sizeof s->model, r->model[0] ? r->model : r->writer);
    util_copy(s->dataset, sizeof s->dataset, r->dataset[0] ? r->dataset : "?");
    util_copy(s->run_dir, sizeof s->run_dir, r->path);
    open_state(r, s, ne);
}

/* ---- the engine's wrappers (engine.h) ------------------------------------------ */

int eng_snapshot_series(const run_snapshot *s, run_series set[RUN_SERIES_COUNT])
{
    return ser_from_snapshot(s, set);
}

void eng_series_free(run_series set[RUN_SERIES_COUNT])
{
    ser_free(set);
}

void eng_run_snapshot(const run_figures *r, run_snapshot *s)
{
    ser_to_snapshot(r, s);
}
