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
#include <time.h>

#include "base/json.h"
#include "base/util.h"
#include "src/cli.h"
#include "src/predict_out.h"
#include "infer/infer.h"
#include "runs.h"
#include "datasets.h"

#define EN_MAX 32

static const char *const usage =
    "usage: petal-tui ensemble RUN_DIR... --data DATASET [--weights W,...] [--tta flip|none]\n"
    "        [--out DIR] [--batch N] [--replicas N]\n";

static const char *const help_text =
    "Averages the class probabilities of several runs (weighted by --weights, equal by\n"
    "default) on DATASET's validation split, printing each member's and the ensemble's\n"
    "accuracy and macro F1, precision and recall; then on its test split. Writes into\n"
    "--out (default runs/ensemble-DATE): submission.csv (id,label), valid_labels.json and\n"
    "valid_preds.jsonl (the ensemble's validation predictions, as a run folder has them)\n"
    "and report.json (each member's and the ensemble's validation figures). Members may\n"
    "differ in model, image size and input normalisation; they must share class names.\n";

typedef struct en_args {
    const char *data, *out, *weights;
    const char *runs[EN_MAX];
    int n;
    long long batch, replicas;
    int tta;                    /* -1 each run's, 0 none, 1 flip */
} en_args;

static int parse_args(int argc, char **argv, en_args *a)
{
    int cores = util_cores_online();
    *a = (en_args){ .batch = 32, .replicas = cores < 8 ? cores : 8, .tta = -1 };
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            printf("%s%s", usage, help_text);
            return -1;
        }
        if (s[0] != '-') {
            if (a->n == EN_MAX) {
                fprintf(stderr, "petal-tui: at most %d members\n", EN_MAX);
                return 2;
            }
            a->runs[a->n++] = s;
            continue;
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
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "petal-tui: bad option '%s%s%s'\n%s", s, v ? " " : "", v ? v : "",
                    usage);
            return 2;
        }
        i++;
    }
    if (a->n < 1 || !a->data) {
        fprintf(stderr, "%s", usage);
        return 2;
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

/* Every member's class names equal the first's, or a refusal naming the difference. */
static int same_classes(rm_model *const *m, int n)
{
    const int k = inf_model_classes(m[0]);
    char *const *names = inf_model_class_names(m[0]);
    const char *first = inf_model_source(m[0]);
    for (int i = 1; i < n; i++) {
        if (inf_model_classes(m[i]) != k) {
            fprintf(stderr, "petal-tui: %s has %d classes and %s %d: an ensemble's members "
                            "must share their classes\n",
                    first, k, inf_model_source(m[i]), inf_model_classes(m[i]));
            return -1;
        }
        for (int c = 0; c < k; c++)
            if (strcmp(inf_model_class_names(m[i])[c], names[c])) {
                fprintf(stderr, "petal-tui: class %d is '%s' in %s but '%s' in %s: an "
                                "ensemble's members must share their class names\n",
                        c, names[c], first, inf_model_class_names(m[i])[c],
                        inf_model_source(m[i]));
                return -1;
            }
    }
    return 0;
}

/* One member's probabilities for a split. */
static int member_split(const en_args *a, const rm_model *m, const ds_split *s, int labeled,
                        prd_results *r)
{
    prd_opts o = { .batch = (int)a->batch, .replicas = (int)a->replicas,
                   .workers = (int)a->replicas, .tta_flip = a->tta < 0 ? inf_model_tta_flip(m) : a->tta };
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
        fprintf(stderr, "petal-tui: %s\n", r->errors[i].msg);
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

/* The validation split: figures printed, valid_labels.json, valid_preds.jsonl and
 * report.json written. */
static int validate(const en_args *a, rm_model *const *m, const double *w,
                    const ds_dataset *ds, const char *dir)
{
    const ds_split *vs = datasets_split(ds, DATASETS_VAL);
    if (datasets_split_records(ds, DATASETS_VAL) <= 0) {
        printf("no validation split in %s: nothing to score\n", datasets_root(ds));
        return 0;
    }
    prd_results r[EN_MAX];
    int got = 0, status = -1;
    for (; got < a->n; got++)
        if (member_split(a, m[got], vs, 1, &r[got]) != 0)
            goto out;
    double *p = mix(r, a->n, w);
    int32_t *preds = malloc((size_t)(r[0].n ? r[0].n : 1) * sizeof *preds);
    int32_t *labels = malloc((size_t)(r[0].n ? r[0].n : 1) * sizeof *labels);
    if (p && preds && labels) {
        json_w j;
        json_init(&j, 1);
        json_arr(&j);
        inf_score s;
        printf("validation: %lld records of %s\n", r[0].n, datasets_root(ds));
        for (int i = 0; i < a->n; i++) {
            inf_score_probs(&r[i], r[i].probs, NULL, &s);
            print_score(inf_model_source(m[i]), &s);
            report_row(&j, inf_model_source(m[i]), w[i], &s);
        }
        inf_score_probs(&r[0], p, preds, &s);
        print_score("ensemble", &s);
        report_row(&j, "ensemble", -1, &s);
        json_arr_end(&j);
        size_t len;
        char *text = json_take(&j, &len);
        for (long long i = 0; i < r[0].n; i++)
            labels[i] = r[0].items[i].label;
        pt_err e;
        status = text && runs_write_val_outputs(dir, text, len, labels, preds, r[0].n, &e) ==
                             PT_OK
                     ? 0
                     : -1;
        if (text && status != 0)
            fprintf(stderr, "petal-tui: %s\n", e.msg);
        free(text);
        json_free(&j);
    }
    free(p);
    free(preds);
    free(labels);
out:
    for (int i = 0; i < got; i++)
        prd_results_free(&r[i]);
    return status;
}

/* The test split: submission.csv. */
static int test_split(const en_args *a, rm_model *const *m, const double *w,
                      const ds_dataset *ds, const char *dir)
{
    const ds_split *ts = datasets_split(ds, DATASETS_TEST);
    if (datasets_split_records(ds, DATASETS_TEST) <= 0) {
        printf("no test split in %s: no submission.csv\n", datasets_root(ds));
        return 0;
    }
    prd_results r[EN_MAX];
    int got = 0, status = -1;
    for (; got < a->n; got++)
        if (member_split(a, m[got], ts, 0, &r[got]) != 0)
            goto out;
    double *p = mix(r, a->n, w);
    if (p) {
        po_buf b = { 0 };
        po_printf(&b, "id,label\n");
        for (long long i = 0; i < r[0].n; i++) {
            po_field(&b, r[0].items[i].id);
            po_printf(&b, ",%d\n", inf_argmax(p + (size_t)i * r[0].k, r[0].k));
        }
        char path[4200];
        runs_submission_path(dir, path, sizeof path);
        status = po_write(&b, path);
        if (status == 0)
            printf("test: %lld images -> %s\n", r[0].n, path);
        free(b.s);
        free(p);
    }
out:
    for (int i = 0; i < got; i++)
        prd_results_free(&r[i]);
    return status;
}

int cmd_ensemble(int argc, char **argv)
{
    en_args a;
    int pr = parse_args(argc, argv, &a);
    if (pr)
        return pr < 0 ? 0 : pr;
    double w[EN_MAX];
    if (parse_weights(a.weights, a.n, w) != 0)
        return 2;
    rm_model *m[EN_MAX];
    memset(m, 0, sizeof m);
    int status = 2, size = 0;
    pt_err e;
    ds_dataset *ds = NULL;
    for (int i = 0; i < a.n; i++) {
        if (inf_model_open(a.runs[i], 0, RUN_NORM_AUTO, &m[i], &e) != PT_OK) {
            fprintf(stderr, "petal-tui: %s\n", e.msg);
            goto out;
        }
        size = inf_model_image_size(m[i]) > size ? inf_model_image_size(m[i]) : size;
    }
    if (same_classes(m, a.n) != 0)
        goto out;
    if (datasets_open(a.data, size, &ds, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        goto out;
    }
    char dir[4096];
    if (a.out)
        util_copy(dir, sizeof dir, a.out);
    else {
        char stamp[32];
        time_t now = time(NULL);
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
        util_fmt(dir, sizeof dir, "runs/ensemble-%s", stamp);
    }
    if (util_mkdirs(dir, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        goto out;
    }
    inf_init();
    if (validate(&a, m, w, ds, dir) == 0 && test_split(&a, m, w, ds, dir) == 0) {
        printf("outputs in %s\n", dir);
        status = 0;
    }
out:
    datasets_close(ds);
    for (int i = 0; i < a.n; i++)
        inf_model_close(m[i]);
    return status;
}
