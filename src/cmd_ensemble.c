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
#include "src/predict_out.h"
#include "infer/infer.h"
#include "infer/ensemble.h"
#include "runs.h"
#include "datasets.h"

#define EN_MAX ENS_MAX
/* --weights cv: folds of the validation records, and the seed of their order. */
#define ENS_CV_FOLDS 5
#define ENS_CV_SEED 46

static const char *const usage =
    "usage: petal-tui ensemble RUN_DIR... --data DATASET [--weights W,...|fit|cv]\n"
    "        [--tta T|T,T,...] [--export FILE.onnx]\n"
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
    "a run folder's, fp32 for an .onnx file).\n"
    "--weights fit: the weights that minimise the validation log loss of the weighted\n"
    "mean probability (EM), printed, with a warning that the validation figures of a fit\n"
    "on validation flatter it. --weights cv: the same fit, plus a 5-fold cross-validation\n"
    "of it on the validation records (a fixed seeded order; each fold scored with the\n"
    "weights fitted on the other four): the out-of-fold figures are the honest ones; the\n"
    "weights used are those fitted on all. Both need a validation split. --out also gets\n"
    "ensemble.json (the members' absolute paths, weights and TTA): the folder can be\n"
    "given where a model is taken (--teacher), and as the one RUN_DIR of ensemble (its\n"
    "members, weights and TTA; with --weights fit or cv, refitted).\n"
    "--tta none|flip|crops|flip+crops: the test-time augmentation of every member, or a\n"
    "comma list of one per member (default: each member's own: a run's --tta, none for\n"
    "an .onnx file). flip: the mean with the mirror image; crops: the mean over five\n"
    "crops, the centre and the four corners, each 7/8 of the member's side, resized back\n"
    "to it; flip+crops: those five and their mirror images (10 views).\n"
    "--export FILE.onnx: the ensemble as one ONNX file, the members' graphs side by side:\n"
    "input `image` float32 [N, 3, S, S] (S the largest member's side; RGB 0-255, as\n"
    "`petal-tui export`'s), each member's branch resized to its side (Resize, linear),\n"
    "its TTA views (Slice, Resize), its own normalisation and net, Softmax; output\n"
    "`probabilities` [N, C], the weighted sum, and `logits`, its log. Members of another\n"
    "side than S see a resize of the S image, not a decode at their side: their answers\n"
    "differ a little from ensemble's own. petal-tui's ONNX importer cannot read it back\n"
    "(predict refuses it); ONNX Runtime runs it.\n";

typedef struct en_args {
    const char *data, *out, *weights, *export;
    ens_how how;                /* --weights: given numbers, fit, cv (equal: none) */
    const char *runs[EN_MAX];
    int n;
    long long batch, replicas;
    const char *tta;            /* --tta: one value, or one per member (NULL: each's own) */
    int bf16;                   /* --precision resolved: 1 bf16; -1 each member's own */
} en_args;

static int parse_args(int argc, char **argv, en_args *a)
{
    int cores = util_cores_online();
    *a = (en_args){ .batch = 32, .replicas = cores < 8 ? cores : 8, .bf16 = -1 };
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
                                               "--replicas", "--tta", "--precision", "--export",
                                               "--help", NULL };
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
        else if (!strcmp(s, "--export"))
            a->export = v;
        else if (!strcmp(s, "--batch"))
            bad = cli_int(s, v, 1, 4096, &a->batch);
        else if (!strcmp(s, "--replicas"))
            bad = cli_int(s, v, 1, 64, &a->replicas);
        else if (!strcmp(s, "--tta"))
            a->tta = v;
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

/* --tta: one of none, flip, crops, flip+crops for every member, or a comma list of one
 * per member; tta[i] as ensemble.h's ENS_TTA_* (ENS_TTA_OWN without --tta). 0, or -1
 * (said). */
static int parse_tta(const char *s, int n, int *tta)
{
    for (int i = 0; i < n; i++)
        tta[i] = ENS_TTA_OWN;
    if (!s)
        return 0;
    char buf[4096];
    util_copy(buf, sizeof buf, s);
    int k = 0, ok = 1;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && ok;
         t = strtok_r(NULL, ",", &save)) {
        ok = k < n && (tta[k] = ens_tta_parse(t)) >= 0;
        k++;
    }
    if (ok && k == 1)
        for (int i = 1; i < n; i++)
            tta[i] = tta[0];
    else if (ok && k != n)
        ok = 0;
    if (!ok)
        fprintf(stderr, "petal-tui: --tta wants none, flip, crops or flip+crops, for all %d "
                        "members or a comma list of one per member, not '%s'\n", n, s);
    return ok ? 0 : -1;
}

/* Progress and skipped records of the members as they predict, on stderr. */
static void on_member(void *ctx, int member, const char *path)
{
    (void)member;
    po_progress_init(ctx, path);
}

static void on_member_end(void *ctx, int member)
{
    (void)member;
    po_progress_end(ctx);
}

static void on_skip(void *ctx, int member, const pt_err *why)
{
    (void)ctx;
    (void)member;
    fprintf(stderr, "petal-tui: %s\n", why->msg);
}

/* The ensemble's predictions of split s (member_probs: each member's too). 0; -1 failed,
 * 1 refused (said). */
static int ens_predict(const en_args *a, ens *x, const ds_split *s, int labeled,
                       prd_results *r, double **member_probs)
{
    po_progress bar;
    ens_opts o = { .batch = (int)a->batch, .replicas = (int)a->replicas,
                   .workers = (int)a->replicas, .bf16 = a->bf16, .on_member = on_member,
                   .on_batch = po_progress_cb, .on_member_end = on_member_end,
                   .on_skip = on_skip, .ctx = &bar };
    pt_err e;
    int rc = ens_split(x, s, labeled, &o, r, member_probs, &e);
    if (rc != PT_OK)
        fprintf(stderr, "petal-tui: %s\n", e.msg);
    return rc == PT_OK ? 0 : rc == PT_EUSAGE ? 1 : -1;
}

static void print_score(const char *name, const inf_score *s)
{
    printf("%-40s  acc %.4f  f1 %.4f  precision %.4f  recall %.4f  loss %.4f\n", name,
           s->acc, s->f1, s->precision, s->recall, s->loss);
}

/* A row of report.json, left open for more keys (the caller ends it). */
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
}

/* The ensemble's row of report.json: its figures, how its weights were got and, for
 * cv, the out-of-fold figures. */
static void report_ensemble(json_w *j, ens_how how, const inf_score *s, const inf_score *cv)
{
    report_row(j, "ensemble", -1, s);
    json_key(j, "weights");
    json_str(j, ens_how_name(how));
    if (how == ENS_W_CV) {
        const char *keys[4] = { "cv_folds", "cv_val_loss", "cv_val_acc", "cv_val_f1" };
        const double v[4] = { ENS_CV_FOLDS, cv->loss, cv->acc, cv->f1 };
        for (int i = 0; i < 4; i++) {
            json_key(j, keys[i]);
            json_num(j, v[i]);
        }
    }
    json_obj_end(j);
}

/* What the splits' predictions need, and what they give: the outputs are written
 * together at the end, so that a failure or an interruption on the way leaves none
 * (and, in a previous ensemble's folder, no new one beside an old one). */
typedef struct en_job {
    const en_args *a;
    ens *x;
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

/* --weights fit / cv: the weights fitted on the validation predictions r (each: the
 * members' rows), set on the ensemble and r's probabilities mixed with them; cv's
 * out-of-fold figures into cv. 0, or -1 (said). */
static int fit(en_job *jb, prd_results *r, const double *each, inf_score *cv)
{
    int n = ens_members(jb->x);
    double w[EN_MAX];
    pt_err e;
    if (jb->a->how == ENS_W_CV &&
        ens_cv(r, each, n, ENS_CV_FOLDS, ENS_CV_SEED, cv, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: --weights cv: %s\n", e.msg);
        return -1;
    }
    int steps = ens_fit_weights(r, each, n, NULL, 0, w);
    if (ens_set_weights(jb->x, w, jb->a->how, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return -1;
    }
    ens_mix(each, n, w, r);
    printf("weights fitted on the %lld validation records (the least log loss of the "
           "weighted mean, %d EM steps):", r->n, steps);
    for (int i = 0; i < n; i++)
        printf("%s %s %.4g", i ? "," : "", ens_member_path(jb->x, i), w[i]);
    printf("\nwarning: the weights were fitted on the validation records they are scored "
           "on, so the ensemble's validation figures below flatter it%s\n",
           jb->a->how == ENS_W_CV ? "" : "; --weights cv gives an out-of-fold figure");
    if (jb->a->how == ENS_W_CV)
        printf("cross-validated (%d folds of the validation records, each scored with the "
               "weights fitted on the others): out-of-fold acc %.4f  f1 %.4f  loss %.4f: the "
               "honest figure; the weights used and written are those fitted on all\n",
               ENS_CV_FOLDS, cv->acc, cv->f1, cv->loss);
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
    prd_results r;
    double *each;
    int status = ens_predict(jb->a, jb->x, vs, 1, &r, &each);
    if (status != 0)
        return status;
    int n = ens_members(jb->x);
    inf_score cv = { 0 };
    status = jb->a->how >= ENS_W_FIT ? fit(jb, &r, each, &cv) : 0;
    if (status != 0) {
        free(each);
        prd_results_free(&r);
        return status;
    }
    status = -1;
    jb->preds = malloc((size_t)(r.n ? r.n : 1) * sizeof *jb->preds);
    jb->labels = malloc((size_t)(r.n ? r.n : 1) * sizeof *jb->labels);
    if (jb->preds && jb->labels) {
        json_w j;
        json_init(&j, 1);
        json_arr(&j);
        inf_score s;
        printf("validation: %lld records of %s\n", r.n, datasets_root(ds));
        for (int i = 0; i < n; i++) {
            inf_score_probs(&r, each + (size_t)i * r.n * r.k, NULL, &s);
            print_score(ens_member_path(jb->x, i), &s);
            report_row(&j, ens_member_path(jb->x, i), ens_member_weight(jb->x, i), &s);
            json_obj_end(&j);
        }
        inf_score_probs(&r, r.probs, jb->preds, &s);
        print_score("ensemble", &s);
        report_ensemble(&j, ens_weights_how(jb->x), &s, &cv);
        json_arr_end(&j);
        jb->report = json_take(&j, &jb->report_len);
        json_free(&j);
        for (long long i = 0; i < r.n; i++)
            jb->labels[i] = r.items[i].label;
        jb->n_val = r.n;
        status = jb->report ? 0 : -1;
    }
    if (status != 0)
        fprintf(stderr, "petal-tui: out of memory\n");
    free(each);
    prd_results_free(&r);
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
    prd_results r;
    int status = ens_predict(jb->a, jb->x, ts, 0, &r, NULL);
    if (status != 0)
        return status;
    po_printf(&jb->sub, "id,label\n");
    for (long long i = 0; i < r.n; i++) {
        po_field(&jb->sub, r.items[i].id);
        po_printf(&jb->sub, ",%d\n", inf_argmax(r.probs + (size_t)i * r.k, r.k));
    }
    jb->n_test = r.n;
    prd_results_free(&r);
    return 0;
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
    if (rc == PT_OK)
        rc = ens_write_json(jb->x, jb->a->data, jb->dir, &e);

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
    if (jb->a->export) {
        if (ens_export(jb->x, jb->a->export, &e) != PT_OK) {
            fprintf(stderr, "petal-tui: %s\n", e.msg);
            return -1;
        }
        printf("exported: %s (%d members side by side, input %d x %d)\n", jb->a->export,
               ens_members(jb->x), ens_image_size(jb->x), ens_image_size(jb->x));
    }
    return 0;
}

/* --out, asked before anything is predicted: not a member, not a training run's folder,
 * nothing there replaced but a previous ensemble's outputs (said, *replaces 1). 0, or 1
 * refused. */
static int check_out(const ens *x, const char *dir, int *replaces)
{
    struct stat so, sm;
    for (int i = 0; i < ens_members(x) && stat(dir, &so) == 0; i++)
        if (stat(ens_member_path(x, i), &sm) == 0 && sm.st_dev == so.st_dev &&
            sm.st_ino == so.st_ino) {
            fprintf(stderr, "petal-tui: %s: is the member %s: the ensemble's outputs would "
                            "replace the run's own; choose another --out (a new folder, or a "
                            "previous ensemble's)\n",
                    dir, ens_member_path(x, i));
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

int cmd_ensemble(int argc, char **argv)
{
    en_args a;
    int pr = parse_args(argc, argv, &a);
    if (pr)
        return pr < 0 ? 0 : pr;
    double w[EN_MAX];
    a.how = !a.weights ? ENS_W_EQUAL : !strcmp(a.weights, "fit") ? ENS_W_FIT
            : !strcmp(a.weights, "cv") ? ENS_W_CV : ENS_W_GIVEN;
    if (a.how == ENS_W_GIVEN && parse_weights(a.weights, a.n, w) != 0)
        return 1;
    int tta[EN_MAX];
    if (parse_tta(a.tta, a.n, tta) != 0)
        return 1;
    int status = 2;
    pt_err e;
    ds_dataset *ds = NULL;
    ens *x = NULL;
    /* One ensemble folder alone: its members, weights and TTA (ensemble.json), the
     * weights refitted with fit or cv. */
    int folder = a.n == 1 && !a.tta && a.how != ENS_W_GIVEN;
    int rc = folder ? ens_open_path(a.runs[0], &x, &e)
                    : ens_open(a.runs, a.n, a.how == ENS_W_GIVEN ? w : NULL, tta, &x, &e);
    if (rc != PT_OK || datasets_open(a.data, ens_image_size(x), &ds, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        goto out;
    }
    /* Wrong inputs are refused (exit 1) before anything is predicted or written. */
    status = 1;
    rc = ens_match(x, ds, a.data, &e);
    printf("%s", ens_notes(x));
    if (rc != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        status = rc == PT_EUSAGE ? 1 : 2;
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
    if (a.how >= ENS_W_FIT && datasets_split_records(ds, DATASETS_VAL) <= 0) {
        fprintf(stderr, "petal-tui: --weights %s: %s has no validation split to fit the "
                        "weights on; give the weights (--weights W,...) or a dataset with one\n",
                a.weights, a.data);
        goto out;
    }
    en_job jb = { .a = &a, .x = x, .ds = ds, .dir = dir };
    if (check_out(x, dir, &jb.replaces) != 0)
        goto out;
    inf_init();
    rc = validate(&jb);
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
    datasets_close(ds);
    ens_close(x);
    return status;
}
