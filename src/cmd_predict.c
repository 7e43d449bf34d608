/* petal-tui predict: a trained model's classes for photos or a dataset's records, as
 * CSV (infer/predict.h does the work; src/predict_out.h writes it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "src/cli.h"
#include "src/predict_out.h"
#include "infer/infer.h"
#include "datasets.h"

static const char *const usage =
    "usage: petal-tui predict RUN_DIR|MODEL.onnx INPUT... [--out FILE.csv] [--top K]\n"
    "        [--tta flip|none] [--batch N] [--replicas N] [--split val|train|test]\n"
    "        [--submission FILE] [--size S]\n"
    "        [--input-norm auto|imagenet|unit|tf|raw|caffe]\n";

static const char *const help_text =
    "Predicts the class of each image with a trained model: a run folder (the weights\n"
    "validation used, the run's image size, class names and decoding) or an ONNX file:\n"
    "a petal-tui export (its class names and size from its metadata, pixels 0-255) or\n"
    "any classifier the importer takes (ImageNet's names for 1,000 classes).\n"
    "INPUT: JPEG or PNG files, folders (walked recursively in sorted order), or one\n"
    "dataset / shards folder (its test split, or --split).\n"
    "Writes CSV to stdout or --out (written whole, atomically): path (id for records),\n"
    "label, class, probability, then top2_class, top2_probability ... up to --top K\n"
    "(default 1). A record's id is its test id, or its index in the split in file order.\n"
    "  --tta flip|none   average with the mirror image (default: the run's --tta)\n"
    "  --batch N         images per forward pass (default 32)\n"
    "  --replicas N      forward threads (default: the cores, at most 8)\n"
    "  --submission FILE id,label for a test split (the competition's submission.csv)\n"
    "  --size S          the side to predict at (default: the run's or export's; else 224)\n"
    "  --input-norm N    an ONNX file's input convention (imagenet, unit, tf, raw, caffe;\n"
    "                    see petal-tui model --help); auto, the default: raw for a\n"
    "                    petal-tui export or a graph that normalises itself, else\n"
    "                    imagenet. A run folder uses the one it trained with.\n"
    "Decoded: grayscale and CMYK JPEGs, PNGs of every kind (alpha onto black, 16 bits to\n"
    "8). Refused, each named on stderr with why while the rest are predicted: files that\n"
    "are neither, damaged or truncated images, unreadable files, files over 256 MiB,\n"
    "images over 16384 pixels a side or 64 Mpixels, folders without images.\n"
    "Exit status: 0 all predicted, 1 some input failed, 2 the model or the usage.\n";

typedef struct pr_args {
    const char *model, *out, *submission, *split;
    char **inputs;
    int n_inputs;
    long long top, batch, replicas, size;
    int tta;                    /* -1 the run's, 0 none, 1 flip */
    int norm;                   /* --input-norm: run_input_norm (auto: the model's own) */
} pr_args;

/* 0 go on, 2 usage error (said), -1 help printed. */
static int parse_args(int argc, char **argv, pr_args *a)
{
    int cores = util_cores_online();
    *a = (pr_args){ .top = 1, .batch = 32, .replicas = cores < 8 ? cores : 8, .tta = -1,
                    .split = "test" };
    a->inputs = calloc((size_t)argc, sizeof *a->inputs);
    if (!a->inputs)
        return 2;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            printf("%s%s", usage, help_text);
            return -1;
        }
        if (s[0] == '-' && s[1] && i + 1 >= argc) {
            fprintf(stderr, "petal-tui: %s needs a value (or is unknown)\n%s", s, usage);
            return 2;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(s, "--out"))
            a->out = v;
        else if (!strcmp(s, "--submission"))
            a->submission = v;
        else if (!strcmp(s, "--top"))
            bad = cli_int(s, v, 1, 1000, &a->top);
        else if (!strcmp(s, "--batch"))
            bad = cli_int(s, v, 1, 4096, &a->batch);
        else if (!strcmp(s, "--replicas"))
            bad = cli_int(s, v, 1, 64, &a->replicas);
        else if (!strcmp(s, "--size"))
            bad = cli_int(s, v, 16, 1024, &a->size);
        else if (!strcmp(s, "--input-norm"))
            bad = cli_input_norm(s, v, &a->norm);
        else if (!strcmp(s, "--tta") && (!strcmp(v, "flip") || !strcmp(v, "none")))
            a->tta = !strcmp(v, "flip");
        else if (!strcmp(s, "--split") &&
                 (!strcmp(v, "val") || !strcmp(v, "train") || !strcmp(v, "test")))
            a->split = v;
        else if (s[0] == '-' && s[1]) {
            fprintf(stderr, "petal-tui: bad option '%s %s'\n%s", s, v, usage);
            return 2;
        } else {
            if (!a->model)
                a->model = s;
            else
                a->inputs[a->n_inputs++] = argv[i];
            continue;
        }
        if (bad)
            return 2;
        i++;
    }
    if (!a->model || a->n_inputs == 0) {
        fprintf(stderr, "%s", usage);
        return 2;
    }
    return 0;
}

/* A folder that is a dataset (some split has shards), opened; NULL otherwise. */
static ds_dataset *as_dataset(const char *path)
{
    if (!util_is_dir(path))
        return NULL;
    ds_dataset *ds = NULL;
    if (datasets_open(path, 0, &ds, NULL) != PT_OK)
        return NULL;
    for (int s = 0; s < DATASETS_NSPLITS; s++)
        if (datasets_split_shards(ds, s) > 0)
            return ds;
    datasets_close(ds);
    return NULL;
}

static int split_id(const char *name)
{
    return !strcmp(name, "train") ? DATASETS_TRAIN
           : !strcmp(name, "val") ? DATASETS_VAL
                                  : DATASETS_TEST;
}

/* The table (and the submission) of a dataset split's records. */
static int write_records(const pr_args *a, const rm_model *m, const prd_results *r, int test)
{
    po_buf b = { 0 }, sub = { 0 };
    po_header(&b, "id", (int)a->top);
    po_printf(&sub, "id,label\n");
    for (long long i = 0; i < r->n; i++) {
        char key[64];
        if (test)
            util_copy(key, sizeof key, r->items[i].id);
        else
            util_fmt(key, sizeof key, "%lld", i);
        const double *p = r->probs + (size_t)i * r->k;
        po_row(&b, key, p, inf_model_class_names(m), r->k, (int)a->top);
        po_field(&sub, key);
        po_printf(&sub, ",%d\n", inf_argmax(p, r->k));
    }
    int rc = po_write(&b, a->out);
    if (rc == 0 && a->submission)
        rc = po_write(&sub, a->submission);
    free(b.s);
    free(sub.s);
    return rc;
}

static int predict_dataset(const pr_args *a, const rm_model *m, prd *p, ds_dataset *ds,
                           po_progress *bar)
{
    int sid = split_id(a->split), test = sid == DATASETS_TEST;
    if (a->submission && !test) {
        fprintf(stderr, "petal-tui: --submission is for the test split, not %s\n", a->split);
        return 2;
    }
    bar->what = a->split;
    prd_results r;
    pt_err e;
    int rc = prd_split(p, datasets_split(ds, sid), !test, &r, &e);
    po_progress_end(bar);
    if (rc != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return 2;
    }
    for (long long i = 0; i < r.n_errors; i++)
        fprintf(stderr, "petal-tui: %s\n", r.errors[i].msg);
    int status = write_records(a, m, &r, test) != 0 ? 2 : r.n_failed > 0;
    prd_results_free(&r);
    return status;
}

/* Every input's image files; a folder without any is a failed input (said). */
static int gather(const pr_args *a, char ***files, long long *n, int *failed)
{
    *files = NULL;
    *n = 0;
    for (int i = 0; i < a->n_inputs; i++) {
        char **f;
        long long c, skipped = 0;
        pt_err e;
        if (prd_list_inputs(&a->inputs[i], 1, &f, &c, &skipped, &e) != PT_OK) {
            fprintf(stderr, "petal-tui: %s\n", e.msg);
            *failed = 1;
            continue;
        }
        if (skipped)
            fprintf(stderr, "petal-tui: %s: left out %lld files not named .jpg, .jpeg or .png\n",
                    a->inputs[i], skipped);
        if (c == 0) {
            fprintf(stderr, "petal-tui: %s: no .jpg, .jpeg or .png files in the folder\n",
                    a->inputs[i]);
            *failed = 1;
        }
        char **all = realloc(*files, (size_t)(*n + c + 1) * sizeof *all);
        if (!all) {
            prd_list_free(f, c);
            return -1;
        }
        *files = all;
        if (c > 0)
            memcpy(all + *n, f, (size_t)c * sizeof *f);
        *n += c;
        free(f); /* the names moved into all */
    }
    return 0;
}

static int predict_files(const pr_args *a, const rm_model *m, prd *p, po_progress *bar)
{
    if (a->submission) {
        fprintf(stderr, "petal-tui: --submission is for a dataset's test split\n");
        return 2;
    }
    char **files;
    long long n;
    int failed = 0;
    if (gather(a, &files, &n, &failed) != 0) {
        fprintf(stderr, "petal-tui: out of memory\n");
        return 2;
    }
    prd_results r;
    pt_err e;
    int rc = prd_files(p, files, n, &r, &e);
    po_progress_end(bar);
    if (rc != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        prd_list_free(files, n);
        return 2;
    }
    po_buf b = { 0 };
    po_header(&b, "path", (int)a->top);
    for (long long i = 0; i < n; i++) {
        if (!r.items[i].ok) {
            fprintf(stderr, "petal-tui: %s\n", r.items[i].err.msg);
            failed = 1;
            continue;
        }
        po_row(&b, files[i], r.probs + (size_t)i * r.k, inf_model_class_names(m), r.k, (int)a->top);
    }
    int status = po_write(&b, a->out) != 0 ? 2 : failed;
    free(b.s);
    prd_results_free(&r);
    prd_list_free(files, n);
    return status;
}

int cmd_predict(int argc, char **argv)
{
    pr_args a;
    int pr = parse_args(argc, argv, &a);
    if (pr) {
        free(a.inputs);
        return pr < 0 ? 0 : pr;
    }
    ds_dataset *ds = NULL;
    for (int i = 0; i < a.n_inputs && !ds; i++)
        ds = as_dataset(a.inputs[i]);
    if (ds && a.n_inputs > 1) {
        fprintf(stderr, "petal-tui: a dataset is predicted alone, not beside other inputs\n");
        datasets_close(ds);
        free(a.inputs);
        return 2;
    }
    rm_model *m = NULL;
    pt_err e;
    int status = 2;
    if (inf_model_open(a.model, (int)a.size, (run_input_norm)a.norm, &m, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        goto out;
    }
    inf_init();
    if (a.top > inf_model_classes(m))
        a.top = inf_model_classes(m);
    prd_opts o = { .batch = (int)a.batch, .replicas = (int)a.replicas,
                   .workers = (int)a.replicas, .tta_flip = a.tta < 0 ? inf_model_tta_flip(m) : a.tta };
    po_progress bar;
    po_progress_init(&bar, "predict");
    o.on_batch = po_progress_cb;
    o.ctx = &bar;
    prd *p;
    if (prd_new(m, &o, &p, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        inf_model_close(m);
        goto out;
    }
    status = ds ? predict_dataset(&a, m, p, ds, &bar) : predict_files(&a, m, p, &bar);
    prd_free(p);
    inf_model_close(m);
out:
    datasets_close(ds);
    free(a.inputs);
    return status;
}
