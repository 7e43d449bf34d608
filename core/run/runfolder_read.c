/* runfolder_read — a run read back from its folder (see runfolder.h):
 * history.json by run_history_keys[], config, the event files through
 * runfolder_events.c, the summary the runs list shows, and the runs list. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/util.h"
#include "io/tbevent.h"
#include "run/runfolder_impl.h"

/* ---- growing series ------------------------------------------------------------ */

int run_push(run_figures *r, run_builder *b, int k, double y, double xu, double xe, double xt)
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

void run_free(run_figures *r)
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
/* ---- files --------------------------------------------------------------------- */

char *run_read_text(const char *path, size_t *len, pt_err *e)
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

/* The last line of the log, kept (in r->ended) when it is an end line. */
static void last_log_line(void *ctx, const char *line)
{
    run_figures *r = ctx;
    static const char *const ends[] = { "done: ", "stopped", "failed: " };
    r->ended[0] = '\0';
    for (size_t k = 0; k < sizeof ends / sizeof ends[0]; k++)
        if (!strncmp(line, ends[k], strlen(ends[k])))
            util_copy(r->ended, sizeof r->ended, line);
}

static void read_config(run_figures *r, const char *dir)
{
    char path[4200];
    if (util_path(path, sizeof path, "%s/" RUN_N_CONFIG, dir) != 0)
        return;
    char *t = run_read_text(path, NULL, NULL);
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
    const char *m = run_opt_get(r, "model"), *d = run_opt_get(r, "data"),
               *ep = run_opt_get(r, "epochs");
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

const char *run_opt_get(const run_figures *r, const char *key)
{
    for (int i = 0; i < r->n_opts; i++)
        if (!strcmp(r->opt[i].key, key))
            return r->opt[i].value;
    return NULL;
}

/* ---- history.json ----------------------------------------------------------------
 * The run's own file: an array of flat objects of numbers (null for a figure
 * that is not finite). Read strictly; any other shape is an error at its byte. */

/* An epoch's entry: the value of each of run_history_keys[] (NaN when absent). */
typedef struct hist_row {
    double v[RUN_H_COUNT];
} hist_row;

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
                   RUN_N_HISTORY ": expected %s, found %s", what, got);
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
        hist_row h;
        for (int k = 0; k < RUN_H_COUNT; k++)
            h.v[k] = NAN;
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
            for (int k = 0; k < RUN_H_COUNT; k++)
                if (!strcmp(key, run_history_keys[k].name))
                    h.v[k] = v;
            ws(&j);
        }
        if (rc != PT_OK)
            break;
        j.p++; /* '}' */
        if (!(h.v[RUN_H_EPOCH] >= 1)) {
            rc = err_set(e, PT_EFORMAT, path, j.entry, (long long)(j.p - t),
                         RUN_N_HISTORY ": an epoch without a number 1 or more");
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

/* ---- loading ------------------------------------------------------------------- */

static int from_history(run_figures *r, run_builder *b, const hist_row *h, int nh,
                        double *cum_u, double *cum_t)
{
    double u = 0, t = 0;
    for (int i = 0; i < nh; i++) {
        double du = h[i].v[RUN_H_UPDATES], dt = h[i].v[RUN_H_TIMING];
        u += isfinite(du) ? du : 0;
        t += isfinite(dt) ? dt : 0;
        cum_u[i] = u;
        cum_t[i] = t;
        for (int k = 0; k < RUN_H_COUNT; k++)
            if (run_history_keys[k].series >= 0 &&
                run_push(r, b, run_history_keys[k].series, h[i].v[k], u, h[i].v[RUN_H_EPOCH], t) !=
                    PT_OK)
                return PT_ENOMEM;
    }
    return PT_OK;
}

/* Updates at the end of epoch e (1-based) of an events-only run: the update count
 * of the validation nearest to it in epochs, at that validation's updates per
 * epoch; NaN when no validation said. */
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
        util_path(hist, sizeof hist, "%s/" RUN_N_HISTORY, sub);
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

/* A folder's history.json, event files, config, log's end and summary.json. */
static int read_folder(run_figures *r, const char *dir, const char *path, hist_row **hp_rows,
                       int *hp_n, char ***hp_files, int *hp_nf, pt_err *e)
{
    hist_row *h = NULL;
    int nh = 0, nf = 0, rc = PT_OK;
    char **files = NULL;
    char hp[4200], cfgp[4200];
    util_path(hp, sizeof hp, "%s/" RUN_N_HISTORY, dir);
    util_path(cfgp, sizeof cfgp, "%s/" RUN_N_CONFIG, dir);
    if (util_is_file(hp)) {
        char *t = run_read_text(hp, NULL, e);
        rc = t ? parse_history(hp, t, &h, &nh, e) : (e ? e->code : PT_EIO);
        free(t);
        r->from_history = rc == PT_OK;
    }
    if (rc == PT_OK)
        rc = run_event_files(dir, &files, &nf, e);
    if (rc == PT_OK && !r->from_history && nf == 0 && !util_is_file(cfgp)) {
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
    if (rc == PT_OK) {
        read_config(r, dir);
        r->run_folder = r->n_opts > 0;
        run_log_lines(dir, last_log_line, r, NULL);
        /* A damaged summary.json costs only what it says (the kept epoch). */
        r->has_outcome = run_read_outcome(dir, &r->outcome, NULL) == PT_OK;
    }
    *hp_rows = h;
    *hp_n = nh;
    *hp_files = files;
    *hp_nf = nf;
    return rc;
}

int run_load(const char *path, run_figures **out, pt_err *e)
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
        if (!strcmp(last, RUN_N_TRAIN_DIR) || !strcmp(last, RUN_N_VAL_DIR)) {
            char *s2 = strrchr(dir, '/');
            if (s2)
                *s2 = '\0';
            else
                util_copy(dir, sizeof dir, ".");
        }
    }
    base_name(is_file && !strcmp(dir, ".") ? path : dir, r->name, sizeof r->name);
    run_builder b = { { 0 } };
    char **files = NULL;
    int nf = 0, nh = 0, rc = PT_OK;
    hist_row *h = NULL;
    run_events ev = { { { 0 } }, 0 };
    double *cum_u = NULL, *cum_t = NULL, *ep_no = NULL;
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
        rc = read_folder(r, dir, path, &h, &nh, &files, &nf, e);
    }
    if (rc == PT_OK && nf > 0)
        rc = run_events_read(r, files, nf, &ev, e);
    if (rc == PT_OK && ev.started > 0)
        r->started = ev.started;
    if (rc == PT_OK && nh > 0) {
        cum_u = malloc((size_t)nh * sizeof *cum_u);
        cum_t = malloc((size_t)nh * sizeof *cum_t);
        ep_no = malloc((size_t)nh * sizeof *ep_no);
        if (!cum_u || !cum_t || !ep_no)
            rc = err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        else {
            for (int i = 0; i < nh; i++)
                ep_no[i] = h[i].v[RUN_H_EPOCH];
            if (from_history(r, &b, h, nh, cum_u, cum_t) != PT_OK)
                rc = err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        }
    }
    if (rc == PT_OK &&
        run_events_place(r, &b, &ev, !r->from_history, cum_u, cum_t, ep_no, nh) != PT_OK)
        rc = err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    if (rc == PT_OK && r->from_history)
        util_copy(r->writer, sizeof r->writer, "petal-tui");
    if (rc == PT_OK) {
        int any = 0;
        for (int k = 0; k < RUN_SERIES_COUNT; k++)
            any += r->s[k].n;
        /* A run folder stopped before its first figures still opens: it says how far
         * it got. */
        if (!any && !r->run_folder)
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
    run_events_free(&ev);
    util_free_list(files, nf);
    if (rc != PT_OK) {
        run_free(r);
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
    const char *first = run_opt_get(runs[0], key);
    for (int i = 1; i < n; i++) {
        const char *v = run_opt_get(runs[i], key);
        if (!v != !first || (v && strcmp(v, first) != 0))
            return 1;
    }
    return 0;
}

int run_diff_text(run_figures *const *runs, int n, int i, char *buf, size_t len)
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
            if (always_differs(key) || run_opt_get(r, key))
                continue;
            int seen = 0;
            for (int jj = 0; jj < j && !seen; jj++)
                seen = jj != i && run_opt_get(runs[jj], key) != NULL;
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

int run_scan(const char *parent, run_figures ***runs, int *n, int *skipped, pt_err *e)
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
            run_load(path, &v[k], NULL) != PT_OK) {
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

void run_free_list(run_figures **runs, int n)
{
    for (int i = 0; i < n; i++)
        run_free(runs[i]);
    free(runs);
}
