/* petal-tui ensemble: the weighted mean of several runs' class probabilities, scored
 * on a dataset's validation split (each member's and the ensemble's macro F1,
 * precision, recall) and written for its test split (submission.csv), with the
 * validation predictions and a report, into one folder.
 *
 * Each member predicts as `petal-tui predict RUN --split ...` does (infer/predict.h):
 * at its own image size, with its own weights, input handling and decoding; the
 * records line up because every member reads the same split in file order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/json.h"
#include "base/util.h"
#include "src/cli.h"
#include "src/ensemble_classes.h"
#include "src/predict_out.h"
#include "infer/infer.h"
#include "runs.h"
#include "datasets.h"

#define EN_MAX 32

static const char *const usage =
    "usage: petal-tui ensemble RUN_DIR... --data DATASET [--weights W,...] [--tta flip|none]\n"
    "        [--out DIR] [--batch N] [--replicas N] [--precision fp32|bf16|auto]\n";

static const char *const help_text =
    "Averages the class probabilities of several runs (weighted by --weights, equal by\n"
    "default) on DATASET's validation split, printing each member's and the ensemble's\n"
    "accuracy and macro F1, precision and recall; then on its test split. Writes into\n"
    "--out (default runs/ensemble-DATE): submission.csv (id,label), valid_labels.json and\n"
    "valid_preds.jsonl (the ensemble's validation predictions, as a run folder has them)\n"
    "and report.json (each member's and the ensemble's validation figures). Members may\n"
    "differ in model, image size and input normalisation. Each member's class names must\n"
    "be DATASET's (its classes.txt): other classes are refused (exit 1) before anything\n"
    "is predicted; the same names in another order are matched by name; a member that\n"
    "names no classes (an ONNX file without petal-tui's) is taken in label order. --out\n"
    "may not be a member or hold a training run; a previous ensemble's outputs there are\n"
    "replaced. --precision fp32|bf16|auto: as predict's (by default each member's own:\n"
    "a run folder's, fp32 for an .onnx file).\n";

typedef struct en_args {
    const char *data, *out, *weights;
    const char *runs[EN_MAX];
    int n;
    long long batch, replicas;
    int tta;                    /* -1 each run's, 0 none, 1 flip */
    int bf16;                   /* --precision resolved: 1 bf16; -1 each member's own */
} en_args;

static int parse_args(int argc, char **argv, en_args *a)
{
    int cores = util_cores_online();
    *a = (en_args){ .batch = 32, .replicas = cores < 8 ? cores : 8, .tta = -1, .bf16 = -1 };
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            printf("%s%s", usage, help_text);
            return -1;
        }
        if (s[0] != '-') {
            if (a->n == EN_MAX) {
                fprintf(stderr, "petal-tui: at most %d members\n", EN_MAX);
                return 1;
            }
            a->runs[a->n++] = s;
            continue;
        }
        static const char *const options[] = { "--data", "--out", "--weights", "--batch",
                                               "--replicas", "--tta", "--precision", "--help", NULL };
        if (!cli_is_option(s, options)) {
            cli_unknown("ensemble", s, options);
            return 1;
        }
        int bad = !v;
        if (bad)
            ;
        else if (!strcmp(s, "--data"))
            a->data = v;
        else if (!strcmp(s, "--out"))
            a->out = v;
        else if (!strcmp(s, "--weights"))
            a->weights = v;
        else if (!strcmp(s, "--batch"))
            bad = cli_int(s, v, 1, 4096, &a->batch);
        else if (!strcmp(s, "--replicas"))
            bad = cli_int(s, v, 1, 64, &a->replicas);
        else if (!strcmp(s, "--tta") && (!strcmp(v, "flip") || !strcmp(v, "none")))
            a->tta = !strcmp(v, "flip");
        else if (!strcmp(s, "--precision"))
            bad = cli_precision(v, &a->bf16);
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "petal-tui: bad option '%s%s%s'\n%s", s, v ? " " : "", v ? v : "",
                    usage);
            return 1;
        }
        i++;
    }
    if (a->n < 1 || !a->data) {
        fprintf(stderr, "%s", usage);
        return 1;
    }
    return 0;
}

/* --weights: n positive numbers, normalised to sum 1. */
static int parse_weights(const char *s, int n, double *w)
{
    for (int i = 0; i < n; i++)
        w[i] = 1.0 / n;
    if (!s)
        return 0;
    double sum = 0;
    int k = 0;
    for (const char *q = s; *q && k < n; k++) {
        char *end;
        w[k] = strtod(q, &end);
        if (end == q || !(w[k] > 0) || !isfinite(w[k]) || (*end && *end != ','))
            break;
        sum += w[k];
        q = *end ? end + 1 : end;
        if (k + 1 == n && *end) {
            k = -1;
            break;
        }
    }
    if (k != n) {
        fprintf(stderr, "petal-tui: --weights wants %d positive numbers, comma-separated, not "
                        "'%s'\n", n, s);
        return -1;
    }
    for (int i = 0; i < n; i++)
        w[i] /= sum;
    return 0;
}

static long long count_code(const prd_results *r, int code)
{
    long long n = 0;
    for (long long i = 0; i < r->n_errors; i++)
        n += r->errors[i].code == code;
    return n;
}

/* One member's probabilities for a split, in the dataset's class order (map: see
 * ensemble_classes.h). 0; -1 failed (said); 1 refused: the dataset has labels beyond the
 * members' classes (said once, with the first such record). */
static int member_split(const en_args *a, const rm_model *m, const int *map, const ds_split *s,
                        int labeled, prd_results *r)
{
    prd_opts o = { .batch = (int)a->batch, .replicas = (int)a->replicas,
                   .workers = (int)a->replicas, .bf16 = a->bf16 < 0 ? inf_model_bf16(m) : a->bf16,
                   .tta_flip = a->tta < 0 ? inf_model_tta_flip(m) : a->tta };
    po_progress bar;
    po_progress_init(&bar, inf_model_source(m));
    o.on_batch = po_progress_cb;
    o.ctx = &bar;
    prd *p;
    pt_err e;
    int rc = prd_new(m, &o, &p, &e);
    if (rc == PT_OK)
        rc = prd_split(p, s, labeled, r, &e);
    po_progress_end(&bar);
    prd_free(p);
    if (rc != PT_OK) {
        fprintf(stderr, "petal-tui: %s: %s\n", inf_model_source(m), e.msg);
        return -1;
    }
    for (long long i = 0; i < r->n_errors; i++)
        if (r->errors[i].code == PT_ECLASS) {
            /* Scores on the records that remain would be no answer for this dataset. */
            fprintf(stderr, "petal-tui: %s: the dataset has classes beyond the members' %d "
                            "(%lld such records): give --data the dataset the runs were "
                            "trained on\n",
                    r->errors[i].msg, r->k, count_code(r, PT_ECLASS));
            prd_results_free(r); /* the caller frees the members before this one */
            return 1;
        }
    for (long long i = 0; i < r->n_errors; i++)
        fprintf(stderr, "petal-tui: %s\n", r->errors[i].msg);
    if (enc_apply(map, r) != 0) {
        fprintf(stderr, "petal-tui: out of memory\n");
        prd_results_free(r);
        return -1;
    }
    return 0;
}

static void print_score(const char *name, const inf_score *s)
{
    printf("%-40s  acc %.4f  f1 %.4f  precision %.4f  recall %.4f  loss %.4f\n", name,
           s->acc, s->f1, s->precision, s->recall, s->loss);
}

static void report_row(json_w *j, const char *name, double weight, const inf_score *s)
{
    json_obj(j);
    json_key(j, "member");
    json_str(j, name);
    if (weight >= 0) {
        json_key(j, "weight");
        json_num(j, weight);
    }
    const char *keys[5] = { "val_loss", "val_acc", "val_precision", "val_recall", "val_f1" };
    const double v[5] = { s->loss, s->acc, s->precision, s->recall, s->f1 };
    for (int i = 0; i < 5; i++) {
        json_key(j, keys[i]);
        json_num(j, v[i]);
    }
    json_obj_end(j);
}

/* The weighted mean of the members' probabilities (n x k), malloc'd; NULL (said) when
 * the members did not predict the same records. */
static double *mix(prd_results *r, int n, const double *w)
{
    for (int i = 1; i < n; i++) {
        int same = r[i].n == r[0].n;
        for (long long j = 0; same && j < r[0].n; j++)
            same = r[i].items[j].label == r[0].items[j].label &&
                   !strcmp(r[i].items[j].id, r[0].items[j].id);
        if (!same) {
            fprintf(stderr, "petal-tui: the members did not predict the same records (%lld and "
                            "%lld): their decoding failed on different ones\n",
                    r[0].n, r[i].n);
            return NULL;
        }
    }
    size_t len = (size_t)r[0].n * r[0].k;
    double *p = calloc(len ? len : 1, sizeof *p);
    for (int i = 0; p && i < n; i++)
        for (size_t q = 0; q < len; q++)
            p[q] += w[i] * r[i].probs[q];
    if (!p)
        fprintf(stderr, "petal-tui: out of memory\n");
    return p;
}

/* What the splits' predictions need, and what they give: the outputs are written
 * together at the end, so that a failure or an interruption on the way leaves none
 * (and, in a previous ensemble's folder, no new one beside an old one). */
typedef struct en_job {
    const en_args *a;
    rm_model **m;
    int **maps;
    const double *w;
    const ds_dataset *ds;
    const char *dir;
    int replaces;           /* dir holds a previous ensemble's outputs */
    char *report;           /* report.json's text (NULL: no validation split) */
    size_t report_len;
    int32_t *labels, *preds;
    long long n_val;
    po_buf sub;             /* submission.csv (.s NULL: no test split) */
    long long n_test;
} en_job;

/* Every member's predictions of split s (0; else member_split's -1 or 1), into r. */
static int members_split(const en_job *j, const ds_split *s, int labeled, prd_results *r,
                         int *got)
{
    for (*got = 0; *got < j->a->n; (*got)++) {
        int rc = member_split(j->a, j->m[*got], j->maps[*got], s, labeled, &r[*got]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The validation split: figures printed; report.json, the labels and the ensemble's
 * predictions kept in jb. 0, -1 failed, 1 refused (said). */
static int validate(en_job *jb)
{
    const ds_dataset *ds = jb->ds;
    const ds_split *vs = datasets_split(ds, DATASETS_VAL);
    if (datasets_split_records(ds, DATASETS_VAL) <= 0) {
        printf("no validation split in %s: nothing to score\n", datasets_root(ds));
        return 0;
    }
    prd_results r[EN_MAX];
    int got = 0, n = jb->a->n;
    int status = members_split(jb, vs, 1, r, &got);
    if (status != 0)
        goto out;
    status = -1;
    double *p = mix(r, n, jb->w);
    jb->preds = malloc((size_t)(r[0].n ? r[0].n : 1) * sizeof *jb->preds);
    jb->labels = malloc((size_t)(r[0].n ? r[0].n : 1) * sizeof *jb->labels);
    if (p && jb->preds && jb->labels) {
        json_w j;
        json_init(&j, 1);
        json_arr(&j);
        inf_score s;
        printf("validation: %lld records of %s\n", r[0].n, datasets_root(ds));
        for (int i = 0; i < n; i++) {
            inf_score_probs(&r[i], r[i].probs, NULL, &s);
            print_score(inf_model_source(jb->m[i]), &s);
            report_row(&j, inf_model_source(jb->m[i]), jb->w[i], &s);
        }
        inf_score_probs(&r[0], p, jb->preds, &s);
        print_score("ensemble", &s);
        report_row(&j, "ensemble", -1, &s);
        json_arr_end(&j);
        jb->report = json_take(&j, &jb->report_len);
        json_free(&j);
        for (long long i = 0; i < r[0].n; i++)
            jb->labels[i] = r[0].items[i].label;
        jb->n_val = r[0].n;
        status = jb->report ? 0 : -1;
    }
    if (status != 0)
        fprintf(stderr, "petal-tui: out of memory\n");
    free(p);
out:
    for (int i = 0; i < got; i++)
        prd_results_free(&r[i]);
    return status;
}

/* The test split: submission.csv's text kept in jb. 0, -1 failed, 1 refused (said). */
static int test_split(en_job *jb)
{
    const ds_dataset *ds = jb->ds;
    const ds_split *ts = datasets_split(ds, DATASETS_TEST);
    if (datasets_split_records(ds, DATASETS_TEST) <= 0) {
        printf("no test split in %s: no submission.csv\n", datasets_root(ds));
        return 0;
    }
    prd_results r[EN_MAX];
    int got = 0;
    int status = members_split(jb, ts, 0, r, &got);
    if (status != 0)
        goto out;
    status = -1;
    double *p = mix(r, jb->a->n, jb->w);
    if (p) {
        po_printf(&jb->sub, "id,label\n");
        for (long long i = 0; i < r[0].n; i++) {
            po_field(&jb->sub, r[0].items[i].id);
            po_printf(&jb->sub, ",%d\n", inf_argmax(p + (size_t)i * r[0].k, r[0].k));
        }
        jb->n_test = r[0].n;
        status = 0;
    }
    free(p);
out:
    for (int i = 0; i < got; i++)
        prd_results_free(&r[i]);
    return status;
}

/* The outputs into the folder (made now), a previous ensemble's removed first. */
static int write_outputs(const en_job *jb)
{
    pt_err e;
    int rc = util_mkdirs(jb->dir, &e);
    if (rc == PT_OK && jb->replaces)
        rc = runs_ensemble_clear(jb->dir, &e);
    if (rc == PT_OK && jb->report)
        rc = runs_write_val_outputs(jb->dir, jb->report, jb->report_len, jb->labels, jb->preds,
                                    jb->n_val, &e);
    if (rc != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return -1;
    }
    if (jb->sub.s) {
        char path[4200];
        runs_submission_path(jb->dir, path, sizeof path);
        if (po_write(&jb->sub, path) != 0)
            return -1;
        printf("test: %lld images -> %s\n", jb->n_test, path);
    }
    return 0;
}

/* --out, asked before anything is predicted: not a member, not a training run's folder,
 * nothing there replaced but a previous ensemble's outputs (said, *replaces 1). 0, or 1
 * refused. */
static int check_out(const en_args *a, const char *dir, int *replaces)
{
    struct stat so, sm;
    for (int i = 0; i < a->n && stat(dir, &so) == 0; i++)
        if (stat(a->runs[i], &sm) == 0 && sm.st_dev == so.st_dev && sm.st_ino == so.st_ino) {
            fprintf(stderr, "petal-tui: %s: is the member %s: the ensemble's outputs would "
                            "replace the run's own; choose another --out (a new folder, or a "
                            "previous ensemble's)\n",
                    dir, a->runs[i]);
            return 1;
        }
    pt_err e;
    if (runs_ensemble_out(dir, replaces, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return 1;
    }
    if (*replaces)
        printf("%s holds a previous ensemble's outputs: they are replaced\n", dir);
    return 0;
}

/* The members opened, and the largest image size among them; 0 or -1 (said). */
static int open_members(const en_args *a, rm_model **m, int *size)
{
    pt_err e;
    *size = 0;
    for (int i = 0; i < a->n; i++) {
        if (inf_model_open(a->runs[i], 0, RUN_NORM_AUTO, &m[i], &e) != PT_OK) {
            fprintf(stderr, "petal-tui: %s\n", e.msg);
            return -1;
        }
        *size = inf_model_image_size(m[i]) > *size ? inf_model_image_size(m[i]) : *size;
    }
    return 0;
}

int cmd_ensemble(int argc, char **argv)
{
    en_args a;
    int pr = parse_args(argc, argv, &a);
    if (pr)
        return pr < 0 ? 0 : pr;
    double w[EN_MAX];
    if (parse_weights(a.weights, a.n, w) != 0)
        return 1;
    rm_model *m[EN_MAX];
    int *maps[EN_MAX];
    memset(m, 0, sizeof m);
    memset(maps, 0, sizeof maps);
    int status = 2, size = 0;
    pt_err e;
    ds_dataset *ds = NULL;
    if (open_members(&a, m, &size) != 0)
        goto out;
    if (datasets_open(a.data, size, &ds, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        goto out;
    }
    /* Wrong inputs are refused (exit 1) before anything is predicted or written. */
    status = 1;
    if (enc_match(m, a.n, ds, a.data, maps) != 0)
        goto out;
    char dir[4096];
    if (a.out)
        util_copy(dir, sizeof dir, a.out);
    else {
        char stamp[32];
        time_t now = time(NULL);
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
        util_fmt(dir, sizeof dir, "runs/ensemble-%s", stamp);
    }
    en_job jb = { .a = &a, .m = m, .maps = maps, .w = w, .ds = ds, .dir = dir };
    if (check_out(&a, dir, &jb.replaces) != 0)
        goto out;
    inf_init();
    int rc = validate(&jb);
    if (rc == 0)
        rc = test_split(&jb);
    if (rc == 0)
        rc = write_outputs(&jb);
    status = rc == 0 ? 0 : rc > 0 ? 1 : 2;
    if (rc == 0)
        printf("outputs in %s\n", dir);
    free(jb.report);
    free(jb.labels);
    free(jb.preds);
    free(jb.sub.s);
out:
    enc_free(maps, a.n);
    datasets_close(ds);
    for (int i = 0; i < a.n; i++)
        inf_model_close(m[i]);
    return status;
}
