/* runlog — a run's figures read back from its folder (see runlog.h). */
#include "train/runlog.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/util.h"
#include "io/tbevent.h"
#include "train/metrics.h"

/* ---- growing series ------------------------------------------------------------ */

typedef struct builder {
    int cap[RUN_SERIES_COUNT];
} builder;

static int push(run_figures *r, builder *b, int k, double y, double xu, double xe, double xt)
{
    run_series *s = &r->s[k];
    if (s->n == b->cap[k]) {
        int cap = b->cap[k] ? 2 * b->cap[k] : 64;
        float *ny = realloc(s->y, (size_t)cap * sizeof *ny);
        if (!ny)
            return PT_ENOMEM;
        s->y = ny;
        for (int a = 0; a < RUN_X_COUNT; a++) {
            float *nx = realloc(s->x[a], (size_t)cap * sizeof *nx);
            if (!nx)
                return PT_ENOMEM;
            s->x[a] = nx;
        }
        b->cap[k] = cap;
    }
    s->y[s->n] = (float)y;
    s->x[RUN_X_UPDATE][s->n] = (float)xu;
    s->x[RUN_X_EPOCH][s->n] = (float)xe;
    s->x[RUN_X_TIME][s->n] = (float)xt;
    s->n++;
    return PT_OK;
}

void rlog_free(run_figures *r)
{
    if (!r)
        return;
    for (int k = 0; k < RUN_SERIES_COUNT; k++) {
        free(r->s[k].y);
        for (int a = 0; a < RUN_X_COUNT; a++)
            free(r->s[k].x[a]);
    }
    free(r);
}

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

/* ---- files --------------------------------------------------------------------- */

/* path's contents, NUL-terminated; NULL when it is not there. */
static char *read_text(const char *path, size_t *len, pt_err *e)
{
    uint8_t *d;
    size_t n;
    if (util_read_file(path, &d, &n, e) != PT_OK)
        return NULL;
    char *t = malloc(n + 1);
    if (!t) {
        free(d);
        err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        return NULL;
    }
    memcpy(t, d, n);
    t[n] = '\0';
    free(d);
    if (len)
        *len = n;
    return t;
}

static void base_name(const char *path, char *out, size_t n)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    size_t at = len;
    while (at > 0 && path[at - 1] != '/')
        at--;
    util_fmt(out, n, "%.*s", (int)(len - at), path + at);
}

/* ---- config -------------------------------------------------------------------- */

static void read_config(run_figures *r, const char *dir)
{
    char path[4200];
    if (util_path(path, sizeof path, "%s/config", dir) != 0)
        return;
    char *t = read_text(path, NULL, NULL);
    if (!t)
        return;
    for (char *line = t; *line && r->n_opts < RUN_MAX_OPTS;) {
        size_t ll = strcspn(line, "\n");
        char save = line[ll];
        line[ll] = '\0';
        char *eq = strchr(line, '=');
        if (line[0] != '#' && eq) {
            char *k = line, *v = eq + 1, *ke = eq;
            while (*k == ' ' || *k == '\t')
                k++;
            while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t'))
                ke--;
            while (*v == ' ' || *v == '\t')
                v++;
            size_t vl = strlen(v);
            while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t' || v[vl - 1] == '\r'))
                vl--;
            if (ke > k) {
                run_opt *o = &r->opt[r->n_opts++];
                util_fmt(o->key, sizeof o->key, "%.*s", (int)(ke - k), k);
                util_fmt(o->value, sizeof o->value, "%.*s", (int)vl, v);
            }
        }
        line[ll] = save;
        line += ll + (save == '\n');
    }
    free(t);
    const char *m = rlog_opt_get(r, "model"), *d = rlog_opt_get(r, "data"),
               *ep = rlog_opt_get(r, "epochs");
    if (m) {
        /* A path to an .onnx file: its name, as run folders and the header say. */
        const char *slash = strrchr(m, '/');
        util_copy(r->model, sizeof r->model, slash ? slash + 1 : m);
    }
    if (d)
        util_copy(r->dataset, sizeof r->dataset, d[0] ? d : "demo");
    if (ep)
        r->epochs_planned = atoi(ep);
    struct stat st;
    if (!r->started && stat(path, &st) == 0)
        r->started = (double)st.st_mtime;
}

const char *rlog_opt_get(const run_figures *r, const char *key)
{
    for (int i = 0; i < r->n_opts; i++)
        if (!strcmp(r->opt[i].key, key))
            return r->opt[i].value;
    return NULL;
}

/* ---- history.json ----------------------------------------------------------------
 * The run's own file: an array of flat objects of numbers (null for a figure
 * that is not finite). Read strictly; any other shape is an error at its byte. */

typedef struct hist_row {
    double epoch, updates, timing;
    double v[6]; /* RUN_S_TRAIN_LOSS .. RUN_S_VAL_F1 */
} hist_row;

static const char *const hist_keys[6] = { "train_loss", "val_loss", "train_acc",
                                          "val_acc",    "train_f1", "val_f1" };

typedef struct jp {
    const char *t, *p, *path;
    long long entry;
    pt_err *e;
} jp;

static void ws(jp *j)
{
    while (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t')
        j->p++;
}

static int fail(jp *j, const char *what)
{
    char got[16];
    if (!*j->p)
        util_copy(got, sizeof got, "the end");
    else
        util_fmt(got, sizeof got, "'%c'", isprint((unsigned char)*j->p) ? *j->p : '?');
    return err_set(j->e, PT_EFORMAT, j->path, j->entry, (long long)(j->p - j->t),
                   "history.json: expected %s, found %s", what, got);
}

static int expect(jp *j, char c, const char *what)
{
    ws(j);
    if (*j->p != c)
        return fail(j, what);
    j->p++;
    return PT_OK;
}

/* A JSON string at j->p into buf (escapes kept as written: the keys are plain). */
static int string(jp *j, char *buf, size_t n)
{
    int rc = expect(j, '"', "a '\"'");
    if (rc != PT_OK)
        return rc;
    const char *s = j->p;
    while (*j->p && *j->p != '"') {
        if (*j->p == '\\' && j->p[1])
            j->p++;
        j->p++;
    }
    if (*j->p != '"')
        return fail(j, "the end of a string");
    util_fmt(buf, n, "%.*s", (int)(j->p - s), s);
    j->p++;
    return PT_OK;
}

/* A number or null (NaN) at j->p. */
static int number(jp *j, double *v)
{
    ws(j);
    if (!strncmp(j->p, "null", 4)) {
        j->p += 4;
        *v = NAN;
        return PT_OK;
    }
    char *end;
    *v = strtod(j->p, &end);
    if (end == j->p || !(*j->p == '-' || isdigit((unsigned char)*j->p)))
        return fail(j, "a number or null");
    j->p = end;
    return PT_OK;
}

static int parse_history(const char *path, const char *t, hist_row **rows, int *nrows, pt_err *e)
{
    jp j = { t, t, path, PT_NO_RECORD, e };
    *rows = NULL;
    *nrows = 0;
    int cap = 0, rc = expect(&j, '[', "'[' (an array of epochs)");
    ws(&j);
    int first = 1;
    while (rc == PT_OK && *j.p != ']') {
        if (!first && (rc = expect(&j, ',', "',' or ']'")) != PT_OK)
            break;
        first = 0;
        j.entry = *nrows;
        if ((rc = expect(&j, '{', "'{' (an epoch)")) != PT_OK)
            break;
        hist_row h = { NAN, NAN, NAN, { NAN, NAN, NAN, NAN, NAN, NAN } };
        ws(&j);
        int firstk = 1;
        while (rc == PT_OK && *j.p != '}') {
            char key[64];
            double v;
            if (!firstk && (rc = expect(&j, ',', "',' or '}'")) != PT_OK)
                break;
            firstk = 0;
            if ((rc = string(&j, key, sizeof key)) != PT_OK ||
                (rc = expect(&j, ':', "':'")) != PT_OK || (rc = number(&j, &v)) != PT_OK)
                break;
            if (!strcmp(key, "epoch"))
                h.epoch = v;
            else if (!strcmp(key, "updates"))
                h.updates = v;
            else if (!strcmp(key, "train_timing"))
                h.timing = v;
            for (int k = 0; k < 6; k++)
                if (!strcmp(key, hist_keys[k]))
                    h.v[k] = v;
            ws(&j);
        }
        if (rc != PT_OK)
            break;
        j.p++; /* '}' */
        if (!(h.epoch >= 1)) {
            rc = err_set(e, PT_EFORMAT, path, j.entry, (long long)(j.p - t),
                         "history.json: an epoch without a number 1 or more");
            break;
        }
        if (*nrows == cap) {
            cap = cap ? 2 * cap : 32;
            hist_row *nr = realloc(*rows, (size_t)cap * sizeof *nr);
            if (!nr) {
                rc = err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
                break;
            }
            *rows = nr;
        }
        (*rows)[(*nrows)++] = h;
        ws(&j);
    }
    if (rc == PT_OK) {
        j.p++; /* ']' */
        j.entry = PT_NO_RECORD;
        ws(&j);
        if (*j.p)
            rc = fail(&j, "nothing after the array");
    }
    if (rc != PT_OK) {
        free(*rows);
        *rows = NULL;
        *nrows = 0;
    }
    return rc;
}

/* ---- event files ------------------------------------------------------------------ */

typedef struct ev_point {
    long long step;
    double wall, value;
} ev_point;

typedef struct ev_list {
    ev_point *v;
    int n, cap;
} ev_list;

enum { EV_T_LOSS, EV_T_ACC, EV_T_F1, EV_V_LOSS, EV_V_ACC, EV_V_F1, EV_ITER, EV_B_LOSS,
       EV_B_ACC, EV_B_LR, EV_N };

static int ev_push(ev_list *l, long long step, double wall, double value)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        ev_point *nv = realloc(l->v, (size_t)cap * sizeof *nv);
        if (!nv)
            return PT_ENOMEM;
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = (ev_point){ step, wall, value };
    return PT_OK;
}

/* Which list a tag goes to (-1: none), for a train/ or a validation/ file. */
static int tag_slot(const char *tag, int val)
{
    if (!strcmp(tag, "epoch_loss"))
        return val ? EV_V_LOSS : EV_T_LOSS;
    if (!strcmp(tag, "epoch_sparse_categorical_accuracy") || !strcmp(tag, "epoch_accuracy") ||
        !strcmp(tag, "epoch_categorical_accuracy"))
        return val ? EV_V_ACC : EV_T_ACC;
    if (!strcmp(tag, "epoch_f1_score"))
        return val ? EV_V_F1 : EV_T_F1;
    if (val && !strcmp(tag, "evaluation_loss_vs_iterations"))
        return EV_ITER;
    if (val)
        return -1;
    if (!strcmp(tag, "batch_loss"))
        return EV_B_LOSS;
    if (!strcmp(tag, "batch_sparse_categorical_accuracy") || !strcmp(tag, "batch_accuracy"))
        return EV_B_ACC;
    if (!strcmp(tag, "batch_learning_rate"))
        return EV_B_LR;
    return -1;
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
    return (size_t)(slash - p) == 10 && !strncmp(p, "validation", 10);
}

static int read_events(run_figures *r, char **files, int nf, ev_list *ev, double *started,
                       pt_err *e)
{
    *started = 0;
    for (int f = 0; f < nf; f++) {
        tbe_reader *rd;
        int rc = tbe_open(&rd, files[f], e);
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
        if (rc < 0)
            return rc;
        r->event_files++;
    }
    return PT_OK;
}

/* The event files of a run at dir: dir's own, then train/'s and validation/'s. */
static int run_event_files(const char *dir, char ***files, int *n, pt_err *e)
{
    *files = NULL;
    *n = 0;
    const char *subs[3] = { "", "/train", "/validation" };
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

/* ---- loading ------------------------------------------------------------------- */

static int from_history(run_figures *r, builder *b, const hist_row *h, int nh, double *cum_u,
                        double *cum_t)
{
    double u = 0, t = 0;
    for (int i = 0; i < nh; i++) {
        u += isfinite(h[i].updates) ? h[i].updates : 0;
        t += isfinite(h[i].timing) ? h[i].timing : 0;
        cum_u[i] = u;
        cum_t[i] = t;
        for (int k = 0; k < 6; k++)
            if (push(r, b, k, h[i].v[k], u, h[i].epoch, t) != PT_OK)
                return PT_ENOMEM;
    }
    return PT_OK;
}

/* Updates at the end of epoch e (1-based) of an events-only run: the update count
 * of the validation nearest to it in epochs, at that validation's updates per
 * epoch; NaN when no validation said. */
static double updates_at(const ev_list *it, const ev_list *vl, double epoch)
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

static int from_events(run_figures *r, builder *b, ev_list *ev, int with_epochs,
                       const double *cum_u, const double *cum_t, const double *ep_no, int nh,
                       double started)
{
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
        const ev_list *l = &ev[map[m][0]];
        for (int i = 0; i < l->n; i++) {
            double epoch = (double)l->v[i].step + 1;
            double u = updates_at(&ev[EV_ITER], &ev[EV_V_LOSS], epoch);
            double t = started > 0 ? l->v[i].wall - started : NAN;
            if (push(r, b, map[m][1], l->v[i].value, u, epoch, t) != PT_OK)
                return PT_ENOMEM;
        }
    }
    static const int bmap[3][2] = { { EV_B_LOSS, RUN_S_BATCH_LOSS }, { EV_B_ACC, RUN_S_BATCH_ACC },
                                    { EV_B_LR, RUN_S_BATCH_LR } };
    for (int m = 0; m < 3; m++) {
        const ev_list *l = &ev[bmap[m][0]];
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
            if (push(r, b, bmap[m][1], l->v[i].value, u, epoch, t) != PT_OK)
                return PT_ENOMEM;
        }
    }
    return PT_OK;
}

static void summarise(run_figures *r)
{
    r->best_val_f1 = r->best_val_acc = NAN;
    int ep = 0;
    for (int k = 0; k < 6; k++)
        for (int i = 0; i < r->s[k].n; i++) {
            double e = r->s[k].x[RUN_X_EPOCH][i];
            if (isfinite(e) && e > ep)
                ep = (int)e;
        }
    r->epochs = ep;
    for (int i = 0; i < r->s[RUN_S_VAL_F1].n; i++) {
        double v = r->s[RUN_S_VAL_F1].y[i];
        if (isfinite(v) && !(v <= r->best_val_f1))
            r->best_val_f1 = v;
    }
    for (int i = 0; i < r->s[RUN_S_VAL_ACC].n; i++) {
        double v = r->s[RUN_S_VAL_ACC].y[i];
        if (isfinite(v) && !(v <= r->best_val_acc))
            r->best_val_acc = v;
    }
    if (r->started > 0) {
        time_t t = (time_t)r->started;
        struct tm tm;
        if (localtime_r(&t, &tm))
            strftime(r->date, sizeof r->date, "%Y-%m-%d %H:%M", &tm);
    }
}

/* Names of up to three subfolders of dir that hold runs, for the message that dir
 * holds runs rather than being one. */
static int runs_inside(const char *dir, char *buf, size_t n)
{
    char **names;
    int nn, found = 0;
    buf[0] = '\0';
    if (util_list_dir(dir, UTIL_LIST_DIRS, &names, &nn, NULL) != PT_OK)
        return 0;
    for (int i = 0; i < nn; i++) {
        char sub[4400], **files;
        int nf;
        if (util_path(sub, sizeof sub, "%s/%s", dir, names[i]) != 0)
            continue;
        char hist[4500];
        util_path(hist, sizeof hist, "%s/history.json", sub);
        int is_run = util_is_file(hist);
        if (!is_run && run_event_files(sub, &files, &nf, NULL) == PT_OK) {
            is_run = nf > 0;
            util_free_list(files, nf);
        }
        if (!is_run)
            continue;
        if (found < 3) {
            size_t used = strlen(buf);
            util_fmt(buf + used, n - used, "%s%s", found ? ", " : "", names[i]);
        }
        found++;
    }
    util_free_list(names, nn);
    return found;
}

int rlog_load(const char *path, run_figures **out, pt_err *e)
{
    *out = NULL;
    int is_file = util_is_file(path);
    if (!is_file && !util_is_dir(path))
        return err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET, "no such file or folder");
    run_figures *r = calloc(1, sizeof *r);
    if (!r)
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    util_copy(r->path, sizeof r->path, path);
    char dir[4096];
    util_copy(dir, sizeof dir, path);
    if (is_file) {
        /* One event file: its run is the folder above train/ or validation/. */
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            util_copy(dir, sizeof dir, ".");
        char last[256];
        base_name(dir, last, sizeof last);
        if (!strcmp(last, "train") || !strcmp(last, "validation")) {
            char *s2 = strrchr(dir, '/');
            if (s2)
                *s2 = '\0';
            else
                util_copy(dir, sizeof dir, ".");
        }
    }
    base_name(is_file && !strcmp(dir, ".") ? path : dir, r->name, sizeof r->name);
    builder b = { { 0 } };
    char **files = NULL;
    int nf = 0, nh = 0, rc = PT_OK;
    hist_row *h = NULL;
    ev_list ev[EV_N] = { { 0 } };
    double *cum_u = NULL, *cum_t = NULL, *ep_no = NULL, started = 0;
    if (is_file) {
        files = malloc(sizeof *files);
        if (!files || !(files[0] = strdup(path))) {
            free(files);
            files = NULL;
            rc = err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        } else {
            nf = 1;
        }
    } else {
        char hp[4200];
        util_path(hp, sizeof hp, "%s/history.json", dir);
        if (util_is_file(hp)) {
            char *t = read_text(hp, NULL, e);
            rc = t ? parse_history(hp, t, &h, &nh, e) : (e ? e->code : PT_EIO);
            free(t);
            r->from_history = rc == PT_OK;
        }
        if (rc == PT_OK)
            rc = run_event_files(dir, &files, &nf, e);
        if (rc == PT_OK && !r->from_history && nf == 0) {
            char inside[600];
            int k = runs_inside(dir, inside, sizeof inside);
            if (k > 0)
                rc = err_set(e, PT_ENODATA, path, PT_NO_RECORD, PT_NO_OFFSET,
                             "holds %d run%s (%s%s), not one: name one of them", k,
                             k == 1 ? "" : "s", inside, k > 3 ? ", ..." : "");
            else
                rc = err_set(e, PT_ENODATA, path, PT_NO_RECORD, PT_NO_OFFSET,
                             "not a run: no history.json and no TensorBoard event files "
                             "(" TBE_FILE_PREFIX "*) here or in train/ and validation/");
        }
        if (rc == PT_OK)
            read_config(r, dir);
    }
    if (rc == PT_OK && nf > 0)
        rc = read_events(r, files, nf, ev, &started, e);
    if (rc == PT_OK && started > 0)
        r->started = started;
    if (rc == PT_OK && nh > 0) {
        cum_u = malloc((size_t)nh * sizeof *cum_u);
        cum_t = malloc((size_t)nh * sizeof *cum_t);
        ep_no = malloc((size_t)nh * sizeof *ep_no);
        if (!cum_u || !cum_t || !ep_no)
            rc = err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        else {
            for (int i = 0; i < nh; i++)
                ep_no[i] = h[i].epoch;
            if (from_history(r, &b, h, nh, cum_u, cum_t) != PT_OK)
                rc = err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        }
    }
    if (rc == PT_OK &&
        from_events(r, &b, ev, !r->from_history, cum_u, cum_t, ep_no, nh, started) != PT_OK)
        rc = err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    if (rc == PT_OK && r->from_history)
        util_copy(r->writer, sizeof r->writer, "petal-tui");
    if (rc == PT_OK) {
        int any = 0;
        for (int k = 0; k < RUN_SERIES_COUNT; k++)
            any += r->s[k].n;
        if (!any)
            rc = err_set(e, PT_ENODATA, path, PT_NO_RECORD, PT_NO_OFFSET,
                         "no loss, accuracy or F1 in its %lld event file%s (epoch_* or batch_* "
                         "scalars)",
                         r->event_files, r->event_files == 1 ? "" : "s");
    }
    if (rc == PT_OK)
        summarise(r);
    free(h);
    free(cum_u);
    free(cum_t);
    free(ep_no);
    for (int k = 0; k < EV_N; k++)
        free(ev[k].v);
    util_free_list(files, nf);
    if (rc != PT_OK) {
        rlog_free(r);
        return rc;
    }
    *out = r;
    return PT_OK;
}

/* ---- the runs list -------------------------------------------------------------- */

static int always_differs(const char *key)
{
    return !strcmp(key, "out") || !strcmp(key, "resume") || !strcmp(key, "data");
}

static int key_differs(run_figures *const *runs, int n, const char *key)
{
    const char *first = rlog_opt_get(runs[0], key);
    for (int i = 1; i < n; i++) {
        const char *v = rlog_opt_get(runs[i], key);
        if (!v != !first || (v && strcmp(v, first) != 0))
            return 1;
    }
    return 0;
}

int rlog_diff_text(run_figures *const *runs, int n, int i, char *buf, size_t len)
{
    if (len)
        buf[0] = '\0';
    if (n < 2 || i < 0 || i >= n)
        return 0;
    int count = 0;
    size_t used = 0;
    const run_figures *r = runs[i];
    for (int k = 0; k < r->n_opts; k++) {
        const run_opt *o = &r->opt[k];
        if (always_differs(o->key) || !key_differs(runs, n, o->key))
            continue;
        count++;
        if (used < len) {
            int w = snprintf(buf + used, len - used, "%s%s=%s", used ? " " : "", o->key,
                             o->value[0] ? o->value : "\"\"");
            used += w > 0 ? (size_t)w : 0;
        }
    }
    /* Keys this run lacks that others have. */
    for (int j = 0; j < n; j++) {
        if (j == i)
            continue;
        for (int k = 0; k < runs[j]->n_opts; k++) {
            const char *key = runs[j]->opt[k].key;
            if (always_differs(key) || rlog_opt_get(r, key))
                continue;
            int seen = 0;
            for (int jj = 0; jj < j && !seen; jj++)
                seen = jj != i && rlog_opt_get(runs[jj], key) != NULL;
            if (seen)
                continue;
            count++;
            if (used < len) {
                int w = snprintf(buf + used, len - used, "%s%s=?", used ? " " : "", key);
                used += w > 0 ? (size_t)w : 0;
            }
        }
    }
    return count;
}

int rlog_scan(const char *parent, run_figures ***runs, int *n, int *skipped, pt_err *e)
{
    *runs = NULL;
    *n = 0;
    if (skipped)
        *skipped = 0;
    char **names;
    int nn;
    int rc = util_list_dir(parent, UTIL_LIST_DIRS, &names, &nn, e);
    if (rc != PT_OK)
        return rc;
    run_figures **v = nn ? calloc((size_t)nn, sizeof *v) : NULL;
    if (nn && !v) {
        util_free_list(names, nn);
        return err_set(e, PT_ENOMEM, parent, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    int k = 0;
    for (int i = 0; i < nn; i++) {
        char path[4400];
        if (util_path(path, sizeof path, "%s/%s", parent, names[i]) != 0 ||
            rlog_load(path, &v[k], NULL) != PT_OK) {
            if (skipped)
                (*skipped)++;
            continue;
        }
        k++;
    }
    util_free_list(names, nn);
    *runs = v;
    *n = k;
    return PT_OK;
}

void rlog_free_list(run_figures **runs, int n)
{
    for (int i = 0; i < n; i++)
        rlog_free(runs[i]);
    free(runs);
}

/* ---- validation results ------------------------------------------------------------ */

/* The integers of a JSON array starting at or after t (at most cap); their count,
 * or -1 when the text is not such an array (*at: the byte where it goes wrong). */
static long long int_array(const char *t, const char *from, int *out, long long cap,
                           long long *at)
{
    const char *p = from;
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    if (*p != '[') {
        *at = p - t;
        return -1;
    }
    p++;
    long long n = 0;
    for (;;) {
        while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
            p++;
        if (*p == ']' && n == 0)
            return 0;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v >= RUN_MAX_CLASSES || n >= cap) {
            *at = p - t;
            return -1;
        }
        out[n++] = (int)v;
        p = end;
        while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
            p++;
        if (*p == ']')
            return n;
        if (*p != ',') {
            *at = p - t;
            return -1;
        }
        p++;
    }
}

int rlog_val_load(const char *run_dir, int n_classes, run_val_report *rep, int **labels,
                  int **preds, long long *n, pt_err *e)
{
    memset(rep, 0, sizeof *rep);
    *labels = *preds = NULL;
    *n = 0;
    char lp[4200], pp[4200];
    util_path(lp, sizeof lp, "%s/valid_labels.json", run_dir);
    util_path(pp, sizeof pp, "%s/valid_preds.jsonl", run_dir);
    if (!util_is_file(lp) || !util_is_file(pp))
        return err_set(e, PT_ENODATA, run_dir, PT_NO_RECORD, PT_NO_OFFSET,
                       "no valid_labels.json and valid_preds.jsonl (validation results)");
    size_t llen, plen;
    char *lt = read_text(lp, &llen, e);
    if (!lt)
        return e ? e->code : PT_EIO;
    char *pt = read_text(pp, &plen, e);
    if (!pt) {
        free(lt);
        return e ? e->code : PT_EIO;
    }
    long long cap = (long long)llen / 2 + 1, at = 0, line_no = 0;
    int *lab = malloc((size_t)cap * sizeof *lab), *pred = malloc((size_t)cap * sizeof *pred);
    int rc = PT_OK;
    long long nl = -1, np = -1;
    int epoch = 0;
    if (!lab || !pred)
        rc = err_set(e, PT_ENOMEM, run_dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    if (rc == PT_OK && (nl = int_array(lt, lt, lab, cap, &at)) < 0)
        rc = err_set(e, PT_EFORMAT, lp, PT_NO_RECORD, at, "not an array of class numbers");
    if (rc == PT_OK) {
        /* The last line that is whole: {"epoch":N,"preds":[...]}. */
        const char *last = NULL;
        for (const char *l = pt; *l;) {
            size_t ll = strcspn(l, "\n");
            if (ll > 0 && l[ll] == '\n') {
                last = l;
                line_no++;
            }
            l += ll + (l[ll] == '\n');
        }
        const char *ep = last ? strstr(last, "\"epoch\":") : NULL;
        const char *pr = last ? strstr(last, "\"preds\":") : NULL;
        if (!ep || !pr)
            rc = err_set(e, PT_EFORMAT, pp, line_no > 0 ? line_no - 1 : PT_NO_RECORD,
                         last ? last - pt : 0, "no line {\"epoch\":N,\"preds\":[...]}");
        else {
            epoch = atoi(ep + 8);
            if ((np = int_array(pt, pr + 8, pred, cap, &at)) < 0)
                rc = err_set(e, PT_EFORMAT, pp, line_no - 1, at, "not an array of class numbers");
            else if (np != nl)
                rc = err_set(e, PT_EFORMAT, pp, line_no - 1, last - pt,
                             "%lld predictions for %lld labels of valid_labels.json", np, nl);
        }
    }
    int k = n_classes;
    for (long long i = 0; rc == PT_OK && i < nl; i++) {
        if (lab[i] >= k)
            k = lab[i] + 1;
        if (pred[i] >= k)
            k = pred[i] + 1;
    }
    if (rc == PT_OK && k <= 0)
        rc = err_set(e, PT_ENODATA, lp, PT_NO_RECORD, PT_NO_OFFSET, "no validation examples");
    if (rc == PT_OK) {
        rep->n_classes = k;
        rep->n = nl;
        rep->epoch = epoch > 0 ? epoch : 1;
        rep->precision = malloc((size_t)k * sizeof(double));
        rep->recall = malloc((size_t)k * sizeof(double));
        rep->f1 = malloc((size_t)k * sizeof(double));
        rep->support = malloc((size_t)k * sizeof(long long));
        rep->confusion = malloc((size_t)k * k * sizeof(long long));
        int32_t *l32 = malloc((size_t)(nl ? nl : 1) * sizeof *l32),
                *p32 = malloc((size_t)(nl ? nl : 1) * sizeof *p32);
        if (!rep->precision || !rep->recall || !rep->f1 || !rep->support || !rep->confusion ||
            !l32 || !p32) {
            rc = err_set(e, PT_ENOMEM, run_dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        } else {
            for (long long i = 0; i < nl; i++) {
                l32[i] = lab[i];
                p32[i] = pred[i];
            }
            met_confusion(l32, p32, (size_t)nl, k, rep->confusion);
            met_summary ms;
            met_from_confusion(rep->confusion, k, &ms, rep->precision, rep->recall, rep->f1,
                               rep->support);
        }
        free(l32);
        free(p32);
    }
    free(lt);
    free(pt);
    if (rc != PT_OK) {
        free(lab);
        free(pred);
        run_val_report_free(rep);
        memset(rep, 0, sizeof *rep);
        return rc;
    }
    *labels = lab;
    *preds = pred;
    *n = nl;
    return PT_OK;
}

int rlog_log_lines(const char *run_dir, void (*fn)(void *ctx, const char *line), void *ctx,
                   pt_err *e)
{
    char path[4200];
    util_path(path, sizeof path, "%s/log.txt", run_dir);
    char *t = read_text(path, NULL, e);
    if (!t)
        return e ? e->code : PT_EIO;
    int n = 0;
    for (char *l = t; *l;) {
        size_t ll = strcspn(l, "\n");
        char save = l[ll];
        l[ll] = '\0';
        const char *text = l;
        /* "YYYY-MM-DD HH:MM:SS " */
        if (ll >= 20 && l[4] == '-' && l[7] == '-' && l[10] == ' ' && l[13] == ':' &&
            l[16] == ':' && l[19] == ' ')
            text = l + 20;
        fn(ctx, text);
        n++;
        l[ll] = save;
        l += ll + (save == '\n');
    }
    free(t);
    return n;
}
