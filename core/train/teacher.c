/* teacher — knowledge distillation's teacher (see teacher.h): opening it, matching its
 * classes, the cache of its probabilities (predicted, or read back from the run
 * folder) and each batch's soft targets. */
#include "train/teacher.h"
#include "train/teacher_impl.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "data/image.h"
#include "infer/ensemble.h"
#include "infer/infer.h"
#include "infer/predict.h"
#include "infer/runmodel.h"
#include "pool/rpool.h"
#include "train/trainer.h"

#define TCH_CSV "teacher_probs.csv"
#define TCH_TXT "teacher.txt"

void tch_close(tch *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n_live; i++) {
        free(t->live[i].map);
        if (t->live[i].pool)
            inf_pool_free(t->live[i].pool);
        free(t->live[i].img);
    }
    ens_close(t->x);
    for (int c = 0; t->names && c < t->k; c++)
        free(t->names[c]);
    free(t->names);
    free(t->base);
    free(t->pt);
    free(t->label);
    free(t->logits);
    free(t->probs);
    free(t->mean);
    img_scratch_free(&t->scratch);
    free(t);
}

const char *tch_name(const tch *t)
{
    return t->name;
}

/* A path's last name without a trailing slash or ".onnx". */
static void short_name(const char *path, char *buf, size_t n)
{
    char tmp[PATH_MAX];
    util_copy(tmp, sizeof tmp, path);
    for (size_t k = strlen(tmp); k > 1 && tmp[k - 1] == '/'; k--)
        tmp[k - 1] = '\0';
    const char *slash = strrchr(tmp, '/');
    util_copy(buf, n, slash && slash[1] ? slash + 1 : tmp);
    char *dot = strrchr(buf, '.');
    if (dot && !strcmp(dot, ".onnx"))
        *dot = '\0';
}

void tch_header(const char *path, double t, double alpha, run_teacher_view view, char *buf,
                size_t n)
{
    char name[256];
    short_name(path, name, sizeof name);
    util_fmt(buf, n, "distilling %s T%g a%g%s", name, t, alpha,
             view == RUN_TEACHER_LIVE ? " live" : "");
}

const char *tch_about(const tch *t)
{
    return t->about;
}

const char *tch_notes(const tch *t)
{
    return t->x ? ens_notes(t->x) : "";
}

void tch_temper(const double *p, int k, double t, float *out)
{
    double mx = -INFINITY, s = 0.0;
    for (int j = 0; j < k; j++)
        if (p[j] > 0.0 && log(p[j]) / t > mx)
            mx = log(p[j]) / t;
    for (int j = 0; j < k; j++)
        s += p[j] > 0.0 ? exp(log(p[j]) / t - mx) : 0.0;
    for (int j = 0; j < k; j++)
        out[j] = p[j] > 0.0 && s > 0.0 ? (float)(exp(log(p[j]) / t - mx) / s) : 0.0f;
}

/* ---- opening ---- */

/* The teacher's identity for teacher.txt: per member its path, weight and TTA, and its
 * weights' epoch and update (a run) or its file's size and time (an .onnx). */
static void fingerprint(tch *t)
{
    size_t at = 0;
    t->print[0] = '\0';
    for (int i = 0; i < ens_members(t->x) && at + 1 < sizeof t->print; i++) {
        const rm_model *m = ens_member_model(t->x, i);
        struct stat st;
        char what[300];
        if (m->data)
            util_fmt(what, sizeof what, "run, epoch %d, update %d", m->epoch, m->update);
        else if (stat(m->source, &st) == 0)
            util_fmt(what, sizeof what, "onnx, %lld bytes, modified %lld", (long long)st.st_size,
                     (long long)st.st_mtime);
        else
            util_fmt(what, sizeof what, "onnx");
        at += (size_t)snprintf(t->print + at, sizeof t->print - at, "%s%s (%s, weight %.6g, tta %s)",
                               i ? "; " : "", ens_members(t->x) > 1 ? m->source : "", what,
                               ens_member_weight(t->x, i), ens_tta_name(ens_member_tta(t->x, i)));
    }
}

/* --teacher-data is part of what the cache is: a resume with another is refused. */
static void fingerprint_data(tch *t)
{
    if (!t->o.data || !t->o.data[0])
        return;
    char abs[PATH_MAX];
    if (!realpath(t->o.data, abs))
        util_copy(abs, sizeof abs, t->o.data);
    size_t at = strlen(t->print);
    snprintf(t->print + at, sizeof t->print - at, "; predicted on %s", abs);
}

static void describe(tch *t)
{
    const int n = ens_members(t->x);
    const rm_model *m = ens_member_model(t->x, 0);
    if (n == 1)
        util_fmt(t->about, sizeof t->about, "%s, %d px, input %s, tta %s",
                 m->data ? "a run" : "an .onnx", m->image_size, nn_norm_name(m->norm),
                 ens_tta_name(ens_member_tta(t->x, 0)));
    else
        util_fmt(t->about, sizeof t->about, "an ensemble of %d members (weights %s), %d px the "
                                            "largest",
                 n, ens_how_name(ens_weights_how(t->x)), ens_image_size(t->x));
}

static int is_csv(const char *path)
{
    size_t n = strlen(path);
    return n > 4 && !strcmp(path + n - 4, ".csv");
}

/* --teacher FILE.csv: an earlier distilled run's teacher_probs.csv, read by
 * tch_prepare; named after the folder that holds it. */
static int open_csv(tch *t, const char *path, pt_err *e)
{
    if (t->o.view == RUN_TEACHER_LIVE)
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "--teacher-view live needs the teacher's nets, and a %s holds only "
                       "their probabilities of the un-augmented photos: give --teacher the "
                       "run, .onnx file or ensemble folder that made it, or --teacher-view "
                       "cached", TCH_CSV);
    if (t->o.data && t->o.data[0])
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "--teacher-data: a teacher_probs.csv was predicted already (on the "
                       "dataset it names by shard file); leave --teacher-data out");
    struct stat st;
    if (stat(path, &st) != 0)
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET, "--teacher: cannot read it");
    t->csv = 1;
    if (!realpath(path, t->abs))
        util_copy(t->abs, sizeof t->abs, path);
    char dir[PATH_MAX];
    util_copy(dir, sizeof dir, t->abs);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir)
        *slash = '\0';
    short_name(slash && slash != dir ? dir : t->abs, t->name, sizeof t->name);
    util_fmt(t->about, sizeof t->about, "the probabilities in %s (read, not predicted)", path);
    util_fmt(t->print, sizeof t->print, "csv, %lld bytes, modified %lld", (long long)st.st_size,
             (long long)st.st_mtime);
    return PT_OK;
}

static int open_teacher(tch *t, const ds_dataset *ds, const char *data_path, pt_err *e)
{
    const char *path = t->o.path;
    if (!util_is_dir(path) && !util_is_file(path))
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "--teacher: no such run folder, .onnx file or ensemble folder");
    if (util_is_file(path) && !run_model_is_onnx(path) && !is_csv(path))
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "--teacher: not a run folder, an .onnx file or an ensemble folder");
    if (util_is_file(path) && is_csv(path))
        return open_csv(t, path, e);
    pt_err me;
    if (ens_open_path(path, &t->x, &me) != PT_OK ||
        ens_match(t->x, ds, data_path, &me) != PT_OK)
        return err_set(e, me.code == PT_ENOMEM ? PT_ENOMEM : PT_EUSAGE, NULL, PT_NO_RECORD,
                       PT_NO_OFFSET, "--teacher %s", me.msg);
    if (ens_classes(t->x) != t->k)
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "--teacher: its %d classes are not the dataset's %d", ens_classes(t->x),
                       t->k);
    if (!realpath(path, t->abs))
        util_copy(t->abs, sizeof t->abs, path);
    short_name(t->abs, t->name, sizeof t->name);
    describe(t);
    fingerprint(t);
    fingerprint_data(t);
    return PT_OK;
}

int tch_open(const tch_opts *o, const ds_dataset *ds, const char *data_path, char *const *names,
             int n_classes, tch **out, pt_err *e)
{
    *out = NULL;
    if (!o->path || !o->path[0] || !(o->t > 0) || o->replicas < 1 || o->batch < 1 ||
        n_classes < 1)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "teacher: a path, T > 0, replicas and a batch");
    tch *t = calloc(1, sizeof *t);
    if (!t)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    t->o = *o;
    t->k = n_classes;
    t->names = calloc((size_t)n_classes, sizeof *t->names);
    int rc = t->names ? PT_OK
                      : err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    for (int c = 0; rc == PT_OK && c < n_classes; c++)
        if (!(t->names[c] = strdup(names[c])))
            rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    if (rc == PT_OK)
        rc = open_teacher(t, ds, data_path, e);
    if (rc == PT_OK && o->view == RUN_TEACHER_LIVE)
        rc = tch_live_open(t, e);
    if (rc != PT_OK) {
        tch_close(t);
        return rc;
    }
    *out = t;
    return PT_OK;
}

/* ---- the cache ---- */

/* Rows for every record the split's shards count (a shard whose name undercounts it
 * grows the table when a row is past it: grow_shard). */
static int cache_alloc(tch *t, const ds_split *s, pt_err *e)
{
    t->split = s;
    free(t->base);
    free(t->pt);
    free(t->label);
    t->base = malloc(((size_t)s->n_shards + 1) * sizeof *t->base);
    t->total = 0;
    for (int i = 0; t->base && i < s->n_shards; i++) {
        t->base[i] = t->total;
        t->total += s->shards[i].count;
    }
    if (t->base)
        t->base[s->n_shards] = t->total;
    t->pt = malloc((size_t)(t->total ? t->total : 1) * t->k * sizeof *t->pt);
    t->label = malloc((size_t)(t->total ? t->total : 1) * sizeof *t->label);
    if (!t->base || !t->pt || !t->label)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    for (long long i = 0; i < t->total; i++)
        t->label[i] = -1;
    return PT_OK;
}

/* Room for record `record` of shard s: the shards after it move up. */
static int grow_shard(tch *t, int s, long long record, pt_err *e)
{
    long long have = t->base[s + 1] - t->base[s], add = record + 1 - have;
    if (add <= 0)
        return PT_OK;
    float *pt = realloc(t->pt, (size_t)(t->total + add) * t->k * sizeof *pt);
    if (pt)
        t->pt = pt;
    int32_t *lb = pt ? realloc(t->label, (size_t)(t->total + add) * sizeof *lb) : NULL;
    if (!lb)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    t->label = lb;
    long long from = t->base[s + 1];
    memmove(t->pt + (size_t)(from + add) * t->k, t->pt + (size_t)from * t->k,
            (size_t)(t->total - from) * t->k * sizeof *t->pt);
    memmove(t->label + from + add, t->label + from, (size_t)(t->total - from) * sizeof *lb);
    for (long long i = from; i < from + add; i++)
        t->label[i] = -1;
    for (int i = s + 1; i <= t->split->n_shards; i++)
        t->base[i] += add;
    t->total += add;
    return PT_OK;
}

/* One record's row: its label and its probabilities at T = 1 in the dataset's order. */
static int cache_put(tch *t, int shard, long long record, int label, const double *p, pt_err *e)
{
    if (shard < 0 || shard >= t->split->n_shards || record < 0)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "teacher: a row of no shard of the training split (%d, %lld)", shard,
                       record);
    int rc = grow_shard(t, shard, record, e);
    if (rc != PT_OK)
        return rc;
    long long i = t->base[shard] + record;
    t->label[i] = label;
    tch_temper(p, t->k, t->o.t, t->pt + (size_t)i * t->k);
    return PT_OK;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* RUN/teacher.txt: which teacher's probabilities teacher_probs.csv holds, and how many. */
static int write_txt(const tch *t, const char *dir, long long rows, pt_err *e)
{
    char buf[PATH_MAX + sizeof t->print + 256], path[PATH_MAX];
    int n = snprintf(buf, sizeof buf, "# the teacher whose probabilities teacher_probs.csv holds\n"
                                      "teacher = %s\nweights = %s\nrows = %lld\n",
                     t->abs, t->print, rows);
    util_path(path, sizeof path, "%s/%s", dir, TCH_TXT);
    return util_write_file_atomic(path, buf, (size_t)n, e);
}

/* RUN/teacher_probs.csv from the results (dataset order, at T = 1) and RUN/teacher.txt. */
static int write_csv(const tch *t, const prd_results *r, const char *dir, pt_err *e)
{
    size_t cap = 4096 + (size_t)r->n * (64 + (size_t)t->k * 18), at = 0;
    char *buf = malloc(cap);
    if (!buf)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    at += (size_t)snprintf(buf, cap, "shard_file,record,label");
    for (int c = 0; c < t->k; c++)
        at += (size_t)snprintf(buf + at, cap - at, ",%s", t->names[c]);
    at += (size_t)snprintf(buf + at, cap - at, "\n");
    long long rows = 0;
    for (long long i = 0; i < r->n && at < cap; i++) {
        const prd_item *it = &r->items[i];
        if (!it->ok)
            continue;
        rows++;
        at += (size_t)snprintf(buf + at, cap - at, "%s,%lld,%d",
                               base_name(t->split->shards[it->shard].path), it->record,
                               it->label);
        for (int c = 0; c < t->k && at < cap; c++)
            at += (size_t)snprintf(buf + at, cap - at, ",%.9g", r->probs[(size_t)i * t->k + c]);
        if (at < cap)
            at += (size_t)snprintf(buf + at, cap - at, "\n");
    }
    char path[PATH_MAX];
    util_path(path, sizeof path, "%s/%s", dir, TCH_CSV);
    int rc = at < cap ? util_write_file_atomic(path, buf, at, e)
                      : err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "too long");
    if (rc == PT_OK)
        rc = write_txt(t, dir, rows, e);
    free(buf);
    return rc;
}

/* --teacher FILE.csv: the file as it is into the run folder (a resume reads it there,
 * and PyTorch's twin too), with its teacher.txt. */
static int copy_csv(const tch *t, const char *dir, long long rows, pt_err *e)
{
    uint8_t *data;
    size_t len;
    int rc = util_read_file(t->abs, &data, &len, e);
    if (rc != PT_OK)
        return rc;
    char path[PATH_MAX];
    util_path(path, sizeof path, "%s/%s", dir, TCH_CSV);
    rc = util_write_file_atomic(path, data, len, e);
    free(data);
    return rc == PT_OK ? write_txt(t, dir, rows, e) : rc;
}

typedef struct pred_ctx {
    const tch *t;
    volatile sig_atomic_t stop;
} pred_ctx;

static void on_batch(void *ctx, long long done, long long total)
{
    pred_ctx *pc = ctx;
    if (pc->t->o.on_progress)
        pc->t->o.on_progress(pc->t->o.ctx, done, total);
    if (pc->t->o.stop && pc->t->o.stop(pc->t->o.ctx))
        pc->stop = 1;
}

/* --teacher-data: that dataset's training split, which must hold the student's
 * records at another stored size (the same classes, shard by shard the same counts);
 * its rows then stand for the student's shard and record indices. */
static int teacher_split(tch *t, const ds_split *mine, ds_dataset **tds, const ds_split **out,
                         pt_err *e)
{
    const char *path = t->o.data;
    int rc = ds_open(path, ens_image_size(t->x), tds, e);
    if (rc != PT_OK)
        return rc;
    const ds_dataset *d = *tds;
    const ds_split *s = &d->split[DS_TRAIN];
    int same = d->n_classes == t->k;
    for (int c = 0; same && d->class_names && c < t->k; c++)
        same = !strcmp(d->class_names[c], t->names[c]);
    if (!same)
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "--teacher-data: its classes are not the student's dataset's %d (%s, "
                       "...) in their order", t->k, t->names[0]);
    if (!s->dir || s->n_shards != mine->n_shards)
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "--teacher-data: %d training shards where the student's dataset has "
                       "%d: not the same records at another size (make both with `petal-tui "
                       "shards` of the same photos and the same --val)",
                       s->dir ? s->n_shards : 0, mine->n_shards);
    for (int i = 0; i < s->n_shards; i++)
        if (s->shards[i].count != mine->shards[i].count)
            return err_set(e, PT_EUSAGE, s->shards[i].path, PT_NO_RECORD, PT_NO_OFFSET,
                           "--teacher-data: %lld records where the student's %s has %lld: "
                           "not the same records at another size",
                           (long long)s->shards[i].count, mine->shards[i].path,
                           (long long)mine->shards[i].count);
    *out = s;
    return PT_OK;
}

/* The teacher predicts the training split (each member at its own size, normalisation
 * and TTA, as predict does), the rows go into the cache, and to the files when write. */
static int predict_rows(tch *t, const ds_split *s, const char *dir, int write, pt_err *e)
{
    pred_ctx pc = { .t = t };
    ens_opts eo = { .batch = t->o.batch, .replicas = t->o.replicas, .workers = t->o.workers,
                    .bf16 = -1, .on_batch = on_batch, .ctx = &pc, .stop = &pc.stop };
    prd_results r;
    int rc = ens_split(t->x, s, 1, &eo, &r, NULL, e);
    if (rc != PT_OK)
        return rc;
    if (r.stopped) {
        prd_results_free(&r);
        return err_set(e, PT_ESTOPPED, NULL, PT_NO_RECORD, PT_NO_OFFSET, "stopped");
    }
    for (long long i = 0; rc == PT_OK && i < r.n; i++)
        if (r.items[i].ok)
            rc = cache_put(t, r.items[i].shard, r.items[i].record, r.items[i].label,
                           r.probs + (size_t)i * t->k, e);
    if (rc == PT_OK && write && dir)
        rc = write_csv(t, &r, dir, e);
    prd_results_free(&r);
    return rc;
}

/* The same, of --teacher-data's split when there is one. */
static int predict_split(tch *t, const ds_split *s, const char *dir, int write, pt_err *e)
{
    ds_dataset *tds = NULL;
    if (t->o.data && t->o.data[0]) {
        int rc = teacher_split(t, s, &tds, &s, e);
        if (rc != PT_OK) {
            ds_free(tds);
            return rc;
        }
    }
    int rc = predict_rows(t, s, dir, write, e);
    ds_free(tds);
    return rc;
}

/* ---- reading the cache back (a resume) ---- */

/* teacher.txt's value of key into out ("" when absent). */
static void txt_value(const char *text, const char *key, char *out, size_t n)
{
    out[0] = '\0';
    size_t kl = strlen(key);
    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (!strncmp(l, key, kl) && !strncmp(l + kl, " = ", 3)) {
            const char *v = l + kl + 3;
            size_t len = strcspn(v, "\n");
            snprintf(out, n, "%.*s", (int)len, v);
            return;
        }
}

/* PT_OK when dir/teacher.txt names this teacher with these weights; *rows: the rows
 * it says teacher_probs.csv holds. */
static int check_same_teacher(const tch *t, const char *dir, long long *rows, pt_err *e)
{
    char path[PATH_MAX], who[PATH_MAX], print[sizeof t->print], n[32];
    util_path(path, sizeof path, "%s/%s", dir, TCH_TXT);
    uint8_t *data;
    size_t len;
    int rc = util_read_file(path, &data, &len, e);
    if (rc != PT_OK)
        return rc;
    const char *text = (const char *)data; /* util_read_file ends it with a NUL */
    txt_value(text, "teacher", who, sizeof who);
    txt_value(text, "weights", print, sizeof print);
    txt_value(text, "rows", n, sizeof n);
    free(data);
    *rows = n[0] ? atoll(n) : -1;
    if (strcmp(who, t->abs) != 0 || strcmp(print, t->print) != 0)
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "the run's %s holds the probabilities of the teacher %s (%s), not of "
                       "--teacher %s (%s): resume with the teacher it had, or start a new run",
                       TCH_CSV, who[0] ? who : "?", print[0] ? print : "?", t->abs, t->print);
    return PT_OK;
}

/* The next comma-separated field of *s (cut in place), or NULL at the line's end. */
static char *field(char **s)
{
    if (!*s)
        return NULL;
    char *f = *s, *c = strchr(f, ',');
    if (c) {
        *c = '\0';
        *s = c + 1;
    } else {
        *s = NULL;
    }
    return f;
}

static int find_shard(const ds_split *s, const char *name)
{
    for (int i = 0; i < s->n_shards; i++)
        if (!strcmp(base_name(s->shards[i].path), name))
            return i;
    return -1;
}

/* One data line (row n of the file) into the cache. */
static int read_row(tch *t, char *line, long long n, const char *path, double *p, pt_err *e)
{
    char *s = line, *f = field(&s), *end;
    int shard = f ? find_shard(t->split, f) : -1;
    if (shard < 0)
        return err_set(e, PT_EUSAGE, path, n, PT_NO_OFFSET,
                       "shard %s is not one of the training split's: the teacher predicted "
                       "another dataset; start a new run", f ? f : "?");
    f = field(&s);
    long long record = f ? strtoll(f, &end, 10) : -1;
    if (!f || *end || record < 0)
        return err_set(e, PT_EUSAGE, path, n, PT_NO_OFFSET, "a record index, not '%s'",
                       f ? f : "");
    f = field(&s);
    long label = f ? strtol(f, &end, 10) : -1;
    if (!f || *end || label < 0 || label >= t->k)
        return err_set(e, PT_EUSAGE, path, n, PT_NO_OFFSET, "a label in [0, %d), not '%s'",
                       t->k, f ? f : "");
    for (int c = 0; c < t->k; c++) {
        f = field(&s);
        p[c] = f ? strtod(f, &end) : NAN;
        if (!f || *end || !(p[c] >= 0 && p[c] <= 1))
            return err_set(e, PT_EUSAGE, path, n, PT_NO_OFFSET,
                           "%d probabilities in [0, 1], the classes' (column %d: '%s')", t->k,
                           c + 4, f ? f : "");
    }
    if (s)
        return err_set(e, PT_EUSAGE, path, n, PT_NO_OFFSET, "more than %d columns", t->k + 3);
    return cache_put(t, shard, record, (int)label, p, e);
}

/* The header: shard_file,record,label then the dataset's class names in order. */
static int check_header(const tch *t, char *line, const char *path, pt_err *e)
{
    char *s = line;
    static const char *const first[3] = { "shard_file", "record", "label" };
    for (int i = 0; i < 3; i++) {
        const char *f = field(&s);
        if (!f || strcmp(f, first[i]))
            return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, 0,
                           "not a teacher_probs.csv (its header starts shard_file,record,label)");
    }
    for (int c = 0; c <= t->k; c++) {
        const char *f = field(&s);
        if (c == t->k ? f != NULL : !f || strcmp(f, t->names[c]))
            return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, 0,
                           "its classes are not the dataset's %d (%s, ...) in their order: "
                           "start a new run", t->k, t->names[0]);
    }
    return PT_OK;
}

/* The rows of a teacher_probs.csv (path: the run's own, or --teacher's) into the
 * cache: as many as teacher.txt says (rows; -1: no count to hold it to), and at most
 * the training split's readable records (most); *got: the rows read. */
static int read_csv(tch *t, const char *path, long long rows, long long most, long long *got,
                    pt_err *e)
{
    uint8_t *data;
    size_t len;
    int rc = util_read_file(path, &data, &len, e);
    if (rc != PT_OK)
        return rc;
    char *text = (char *)data; /* util_read_file ends it with a NUL */
    double *p = malloc((size_t)t->k * sizeof *p);
    if (!p) {
        free(data);
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    long long n = 0;
    char *line = text;
    for (int head = 1; rc == PT_OK && line && *line; head = 0) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        rc = head ? check_header(t, line, path, e) : read_row(t, line, n++, path, p, e);
        line = nl ? nl + 1 : NULL;
    }
    *got = n;
    if (rc == PT_OK && rows >= 0 && n != rows)
        rc = err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                     "%lld rows where teacher.txt says %lld: cut short? start a new run", n, rows);
    /* Records that do not decode are in the label scan's count, not in the cache. */
    if (rc == PT_OK && n > most)
        rc = err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                     "%lld rows for the training split's %lld readable records: the teacher "
                     "predicted another dataset; start a new run", n, most);
    free(text);
    free(p);
    return rc;
}

int tch_prepare(tch *t, const ds_split *train, long long expect_rows, const char *dir,
                int reuse, int write, int *predicted, pt_err *e)
{
    *predicted = 0;
    if (t->o.view == RUN_TEACHER_LIVE)
        return PT_OK;
    int rc = cache_alloc(t, train, e);
    if (rc != PT_OK)
        return rc;
    char csv[PATH_MAX];
    util_path(csv, sizeof csv, "%s/%s", dir ? dir : ".", TCH_CSV);
    long long got = 0;
    if (dir && reuse && util_is_file(csv)) {
        long long rows = -1;
        if ((rc = check_same_teacher(t, dir, &rows, e)) == PT_OK)
            rc = read_csv(t, csv, rows, expect_rows, &got, e);
    } else if (t->csv) {
        *predicted = 2;
        rc = read_csv(t, t->abs, -1, expect_rows, &got, e);
        if (rc == PT_OK && got != expect_rows)
            rc = err_set(e, PT_EUSAGE, t->abs, PT_NO_RECORD, PT_NO_OFFSET,
                         "%lld rows for the training split's %lld readable records: the "
                         "probabilities of another dataset's training split", got, expect_rows);
        if (rc == PT_OK && write && dir)
            rc = copy_csv(t, dir, got, e);
    } else {
        *predicted = 1;
        rc = predict_split(t, train, dir, write, e);
    }
    /* The cache is all a cached teacher is from here on: its nets give their memory
     * back before the student's replicas take theirs. */
    if (rc == PT_OK) {
        ens_close(t->x);
        t->x = NULL;
    }
    return rc;
}

/* ---- a batch's soft targets ---- */

static int cached_row(const tch *t, const batch_src *src, const float **row, pt_err *e)
{
    long long at = -1;
    if (src->shard >= 0 && src->shard < t->split->n_shards && src->record >= 0 &&
        src->record < t->base[src->shard + 1] - t->base[src->shard])
        at = t->base[src->shard] + src->record;
    if (at < 0 || t->label[at] < 0)
        return err_set(e, PT_EUSAGE,
                       src->shard >= 0 && src->shard < t->split->n_shards
                           ? t->split->shards[src->shard].path
                           : t->split->dir,
                       (long long)src->record, (long long)src->offset,
                       "the teacher's cache has no row for this training record");
    *row = t->pt + (size_t)at * t->k;
    return PT_OK;
}

static int fill_cached(tch *t, const batch *b, float *soft, pt_err *e)
{
    for (int i = 0; i < b->n; i++) {
        const float *pa, *pb;
        int rc = cached_row(t, &b->src[i], &pa, e);
        if (rc == PT_OK)
            rc = cached_row(t, &b->src2[i], &pb, e);
        if (rc != PT_OK)
            return rc;
        long long at = t->base[b->src[i].shard] + b->src[i].record;
        if (t->label[at] != b->label[i])
            return err_set(e, PT_EUSAGE, t->split->shards[b->src[i].shard].path,
                           (long long)b->src[i].record, (long long)b->src[i].offset,
                           "label %d, but the teacher's cache says %d: another dataset?",
                           b->label[i], t->label[at]);
        const float m = b->mix[i];
        float *out = soft + (size_t)i * t->k;
        for (int c = 0; c < t->k; c++)
            out[c] = m * pa[c] + (1.0f - m) * pb[c];
    }
    return PT_OK;
}

int tch_fill(tch *t, const batch *b, float *soft, pt_err *e)
{
    return t->o.view == RUN_TEACHER_LIVE ? tch_live_fill(t, b, soft, e) : fill_cached(t, b, soft, e);
}
