/* runfolder_events — a run's TensorBoard event files read back (see
 * runfolder.h): their scalars by run_tag_of(), placed on the three x axes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "io/tbevent.h"
#include "run/runfolder_impl.h"

/* y at x by linear interpolation in a table of n increasing xs (clamped at the
 * ends: extrapolated with the last segment's slope); NaN when n == 0. */
static double interp(const double *xs, const double *ys, int n, double x)
{
    if (n <= 0 || !isfinite(x))
        return NAN;
    if (n == 1)
        return xs[0] > 0 ? ys[0] * x / xs[0] : ys[0];
    int i = 1;
    while (i < n - 1 && xs[i] < x)
        i++;
    double x0 = xs[i - 1], x1 = xs[i];
    if (x <= xs[0]) {
        /* Before the first entry: from 0 (the run's start) to it. */
        return xs[0] > 0 ? ys[0] * x / xs[0] : ys[0];
    }
    return x1 > x0 ? ys[i - 1] + (ys[i] - ys[i - 1]) * (x - x0) / (x1 - x0) : ys[i];
}

static int ev_push(run_ev_list *l, long long step, double wall, double value)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        run_ev_point *nv = realloc(l->v, (size_t)cap * sizeof *nv);
        if (!nv)
            return PT_ENOMEM;
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = (run_ev_point){ step, wall, value };
    return PT_OK;
}


/* Which list a tag goes to (-1: none), for a train/ or a validation/ file. */
static int tag_slot(const char *tag, int val)
{
    switch (run_tag_of(tag)) {
    case RUN_T_EPOCH_LOSS:
        return val ? EV_V_LOSS : EV_T_LOSS;
    case RUN_T_EPOCH_ACC:
        return val ? EV_V_ACC : EV_T_ACC;
    case RUN_T_EPOCH_F1:
        return val ? EV_V_F1 : EV_T_F1;
    case RUN_T_EVAL_LOSS_ITER:
        return val ? EV_ITER : -1;
    case RUN_T_BATCH_LOSS:
        return val ? -1 : EV_B_LOSS;
    case RUN_T_BATCH_ACC:
        return val ? -1 : EV_B_ACC;
    case RUN_T_BATCH_LR:
        return val ? -1 : EV_B_LR;
    default:
        return -1;
    }
}

/* 1 when the file lies in a folder named validation (Keras's layout). */
static int in_validation(const char *file)
{
    const char *slash = strrchr(file, '/');
    if (!slash)
        return 0;
    const char *p = slash;
    while (p > file && p[-1] != '/')
        p--;
    return (size_t)(slash - p) == strlen(RUN_N_VAL_DIR) &&
           !strncmp(p, RUN_N_VAL_DIR, strlen(RUN_N_VAL_DIR));
}

/* A file that ends inside a record is what a crash (or a writer still at work) leaves:
 * what came before it stands. Noted once, for the log; PT_OK. */
static int torn_end(run_figures *r, const pt_err *e)
{
    if (r->torn++ == 0 && e)
        util_fmt(r->note, sizeof r->note, "%s; read up to it (a crash, or a run still writing, "
                 "leaves a torn end)", e->msg);
    return PT_OK;
}

int run_events_read(run_figures *r, char **files, int nf, run_events *evs, pt_err *e)
{
    run_ev_list *ev = evs->l;
    double *started = &evs->started;
    *started = 0;
    for (int f = 0; f < nf; f++) {
        tbe_reader *rd;
        int rc = tbe_open(&rd, files[f], e);
        if (rc == PT_ETRUNC || rc == PT_ENODATA) {
            torn_end(r, e); /* created, then killed before its first record was whole */
            continue;
        }
        if (rc != PT_OK)
            return rc;
        if (!r->writer[0] || strcmp(tbe_source_writer(rd), "petal-tui") == 0)
            util_copy(r->writer, sizeof r->writer,
                      tbe_source_writer(rd)[0] ? tbe_source_writer(rd) : "TensorBoard");
        double ft = tbe_file_time(rd);
        if (ft > 0 && (*started == 0 || ft < *started))
            *started = ft;
        int val = in_validation(files[f]);
        tbe_item it;
        while ((rc = tbe_next(rd, &it, e)) == 1) {
            if (it.kind != TBE_SCALAR)
                continue;
            int k = tag_slot(it.tag, val);
            if (k >= 0 && ev_push(&ev[k], it.step, it.wall_time, it.value) != PT_OK) {
                rc = err_set(e, PT_ENOMEM, files[f], it.record, it.offset, "out of memory");
                break;
            }
        }
        tbe_close(rd);
        if (rc == PT_ETRUNC)
            rc = torn_end(r, e);
        if (rc < 0)
            return rc;
        r->event_files++;
    }
    return PT_OK;
}

int run_event_files(const char *dir, char ***files, int *n, pt_err *e)
{
    *files = NULL;
    *n = 0;
    const char *subs[3] = { "", "/" RUN_N_TRAIN_DIR, "/" RUN_N_VAL_DIR };
    for (int s = 0; s < 3; s++) {
        char d[4200];
        if (util_path(d, sizeof d, "%s%s", dir, subs[s]) != 0 || !util_is_dir(d))
            continue;
        char **names;
        int nn;
        if (util_list_dir(d, UTIL_LIST_FILES, &names, &nn, e) != PT_OK) {
            util_free_list(*files, *n);
            return e ? e->code : PT_EIO;
        }
        for (int i = 0; i < nn; i++) {
            if (strncmp(names[i], TBE_FILE_PREFIX, strlen(TBE_FILE_PREFIX)) != 0)
                continue;
            char **nf = realloc(*files, (size_t)(*n + 1) * sizeof *nf);
            char path[4400];
            if (!nf || util_path(path, sizeof path, "%s/%s", d, names[i]) != 0 ||
                !(nf[*n] = strdup(path))) {
                if (nf)
                    *files = nf;
                util_free_list(names, nn);
                util_free_list(*files, *n);
                return err_set(e, PT_ENOMEM, dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
            }
            *files = nf;
            (*n)++;
        }
        util_free_list(names, nn);
    }
    return PT_OK;
}

/* Updates at the end of epoch e (1-based) of an events-only run: the update count
 * of the validation nearest to it in epochs, at that validation's updates per
 * epoch; NaN when no validation said. */
static double updates_at(const run_ev_list *it, const run_ev_list *vl, double epoch)
{
    int n = it->n < vl->n ? it->n : vl->n;
    double best = NAN, dist = INFINITY;
    for (int i = 0; i < n; i++) {
        double ve = (double)vl->v[i].step + 1;
        double d = fabs(ve - epoch);
        if (d < dist && it->v[i].step > 0) {
            dist = d;
            best = (double)it->v[i].step / ve * epoch;
        }
    }
    return best;
}

int run_events_place(run_figures *r, run_builder *b, const run_events *evs, int with_epochs,
                    const double *cum_u, const double *cum_t, const double *ep_no, int nh)
{
    const run_ev_list *ev = evs->l;
    double started = evs->started;
    static const int map[6][2] = { { EV_T_LOSS, RUN_S_TRAIN_LOSS }, { EV_V_LOSS, RUN_S_VAL_LOSS },
                                   { EV_T_ACC, RUN_S_TRAIN_ACC },   { EV_V_ACC, RUN_S_VAL_ACC },
                                   { EV_T_F1, RUN_S_TRAIN_F1 },     { EV_V_F1, RUN_S_VAL_F1 } };
    /* Updates per epoch, where a validation said (for the per-update points' epochs). */
    double upe = NAN;
    {
        int n = ev[EV_ITER].n < ev[EV_V_LOSS].n ? ev[EV_ITER].n : ev[EV_V_LOSS].n;
        if (n > 0 && ev[EV_ITER].v[n - 1].step > 0)
            upe = (double)ev[EV_ITER].v[n - 1].step / ((double)ev[EV_V_LOSS].v[n - 1].step + 1);
    }
    for (int m = 0; with_epochs && m < 6; m++) {
        const run_ev_list *l = &ev[map[m][0]];
        for (int i = 0; i < l->n; i++) {
            double epoch = (double)l->v[i].step + 1;
            double u = updates_at(&ev[EV_ITER], &ev[EV_V_LOSS], epoch);
            double t = started > 0 ? l->v[i].wall - started : NAN;
            if (run_push(r, b, map[m][1], l->v[i].value, u, epoch, t) != PT_OK)
                return PT_ENOMEM;
        }
    }
    static const int bmap[3][2] = { { EV_B_LOSS, RUN_S_BATCH_LOSS }, { EV_B_ACC, RUN_S_BATCH_ACC },
                                    { EV_B_LR, RUN_S_BATCH_LR } };
    for (int m = 0; m < 3; m++) {
        const run_ev_list *l = &ev[bmap[m][0]];
        for (int i = 0; i < l->n; i++) {
            double u = (double)l->v[i].step;
            double epoch, t;
            if (nh > 0) {
                /* The history's table, as the workbench places the current run's. */
                epoch = interp(cum_u, ep_no, nh, u);
                t = interp(cum_u, cum_t, nh, u);
            } else {
                epoch = upe > 0 ? u / upe : NAN;
                t = started > 0 ? l->v[i].wall - started : NAN;
            }
            if (run_push(r, b, bmap[m][1], l->v[i].value, u, epoch, t) != PT_OK)
                return PT_ENOMEM;
        }
    }
    return PT_OK;
}

void run_events_free(run_events *ev)
{
    for (int k = 0; k < EV_N; k++)
        free(ev->l[k].v);
}
