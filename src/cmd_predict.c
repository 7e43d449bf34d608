/* petal-tui predict: a trained model's classes for photos or a dataset's records, as
 * CSV (infer/predict.h does the work; src/predict_out.h writes it). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "src/cli.h"
#include "src/predict_out.h"
#include "infer/infer.h"
#include "infer/ensemble.h"
#include "datasets.h"
#include "runs.h"

static const char *const usage =
    "usage: petal-tui predict RUN_DIR|MODEL.onnx INPUT... [--out FILE.csv] [--top K]\n"
    "        [--tta none|flip|crops|flip+crops] [--batch N] [--replicas N]\n"
    "        [--split val|train|test] [--submission FILE] [--size S]\n"
    "        [--input-norm auto|imagenet|unit|tf|raw|caffe] [--features]\n"
    "        [--precision fp32|bf16|auto]\n";

static const char *const help_text =
    "Predicts the class of each image with a trained model: a run folder (the weights\n"
    "validation used, the run's image size, class names and decoding) or an ONNX file:\n"
    "a petal-tui export (its class names and size from its metadata, pixels 0-255) or\n"
    "any classifier the importer takes (ImageNet's names for 1,000 classes).\n"
    "INPUT: JPEG or PNG files, folders (walked recursively in sorted order), or one\n"
    "dataset / shards folder (its test split, or --split).\n"
    "Writes CSV to stdout or --out: path (id for records), label, class, probability,\n"
    "then top2_class, top2_probability ... up to --top K (default 1). A record's id is\n"
    "its test id, or its index in the split in file order. Rows are written as each\n"
    "batch is done: stdout gets them as they come; --out FILE gets FILE.partial, renamed\n"
    "to FILE when every image is done. Ctrl-C stops after the batch in hand, keeps the\n"
    "rows done (FILE.partial stays, saying it is partial), says \"stopped after N of M\n"
    "images\" and exits 130; a second Ctrl-C ends it at once.\n"
    "An ONNX file runs at the size its graph declares (else 224; --size overrides where\n"
    "the graph can run at another size, and is refused where it cannot); stderr says\n"
    "which size and why. A graph with no classifier (a feature extractor) is refused.\n"
    "  --features        each image's feature vector instead of classes (an .onnx\n"
    "                    file): what its Gemm / MatMul classifier reads, or a feature\n"
    "                    extractor's output. CSV: path (or id), f0, f1, ...; with\n"
    "                    --out X.npy a float32 .npy [N, D] and X.paths.txt, its rows'\n"
    "                    paths, one a line (failed images left out of both)\n"
    "  --tta T           none, flip (the mean with the mirror image), crops (the mean\n"
    "                    over five crops, the centre and the four corners, each 7/8 of\n"
    "                    the side, resized back to the model's) or flip+crops (those\n"
    "                    five and their mirror images: 10 views). Default: the run's\n"
    "                    --tta (flip or none)\n"
    "  --precision P     fp32, or bf16 operands with fp32 sums (faster where the CPU\n"
    "                    has AVX512_BF16 or AMX; auto: bf16 there). Default: a run\n"
    "                    folder's own (so its validation images predict what it\n"
    "                    logged), fp32 for an .onnx file (ONNX Runtime's answers)\n"
    "  --batch N         images per forward pass (default 32)\n"
    "  --replicas N      forward threads (default: the cores, at most 8); a batch of\n"
    "                    fewer images than that splits each convolution across them\n"
    "  --submission FILE id,label for a test split (the competition's submission.csv)\n"
    "  --size S          the side to predict at (default: the run's or export's, else\n"
    "                    the size the graph declares, else 224)\n"
    "  --input-norm N    an ONNX file's input convention (imagenet, unit, tf, raw, caffe;\n"
    "                    see petal-tui model --help); auto, the default: raw for a\n"
    "                    petal-tui export or a graph that normalises itself, what the\n"
    "                    file's doc string or metadata states, else imagenet (called a\n"
    "                    guess for a tf2onnx graph). A run folder uses its own.\n"
    "Decoded: grayscale and CMYK JPEGs, PNGs of every kind (alpha onto black, 16 bits to\n"
    "8). Refused, each named on stderr with why while the rest are predicted: files that\n"
    "are neither, damaged or truncated images, unreadable files, files over 256 MiB,\n"
    "images over 16384 pixels a side or 64 Mpixels, folders without images.\n"
    "Exit status (as every petal-tui command's): 0 all predicted, 1 a usage error or a\n"
    "model of the wrong kind, 2 a model or an input that could not be read (the other\n"
    "inputs are predicted), 130 stopped by Ctrl-C.\n";

typedef struct pr_args {
    const char *model, *out, *submission, *split;
    char **inputs;
    int n_inputs;
    long long top, batch, replicas, size;
    int tta;                    /* -1 the run's, else ENS_TTA_* bits (infer/ensemble.h) */
    int norm;                   /* --input-norm: run_input_norm (auto: the model's own) */
    int features;               /* --features: feature vectors instead of classes */
    int bf16;                   /* --precision resolved: 1 bf16; -1 the model's own */
} pr_args;

static int ends_npy(const char *path)
{
    size_t n = strlen(path);
    return n >= 4 && !strcmp(path + n - 4, ".npy");
}

/* 0 go on, 1 usage error (said), -1 help printed. */
static int parse_args(int argc, char **argv, pr_args *a)
{
    int cores = util_cores_online();
    *a = (pr_args){ .top = 1, .batch = 32, .replicas = cores < 8 ? cores : 8, .tta = -1,
                    .split = "test", .bf16 = -1 };
    a->inputs = calloc((size_t)argc, sizeof *a->inputs);
    if (!a->inputs)
        return 1;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            printf("%s%s", usage, help_text);
            return -1;
        }
        if (!strcmp(s, "--features")) {
            a->features = 1;
            continue;
        }
        static const char *const options[] = { "--out", "--submission", "--top", "--batch",
                                               "--replicas", "--size", "--input-norm", "--tta",
                                               "--split", "--features", "--precision",
                                               "--help", NULL };
        if (s[0] == '-' && s[1] && !cli_is_option(s, options)) {
            cli_unknown("predict", s, options);
            return 1;
        }
        if (s[0] == '-' && s[1] && i + 1 >= argc) {
            fprintf(stderr, "petal-tui: predict: %s needs a value\n%s", s, usage);
            return 1;
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
        else if (!strcmp(s, "--precision"))
            bad = cli_precision(v, &a->bf16);
        else if (!strcmp(s, "--tta") && ens_tta_parse(v) >= 0)
            a->tta = ens_tta_parse(v);
        else if (!strcmp(s, "--split") &&
                 (!strcmp(v, "val") || !strcmp(v, "train") || !strcmp(v, "test")))
            a->split = v;
        else if (s[0] == '-' && s[1]) { /* --tta or --split with another value */
            fprintf(stderr, "petal-tui: predict: %s wants %s, not '%s'\n", s,
                    !strcmp(s, "--tta") ? "none, flip, crops or flip+crops"
                                        : "test, val or train", v);
            return 1;
        } else {
            if (!a->model)
                a->model = s;
            else
                a->inputs[a->n_inputs++] = argv[i];
            continue;
        }
        if (bad)
            return 1;
        i++;
    }
    if (!a->model || a->n_inputs == 0) {
        fprintf(stderr, "%s", usage);
        return 1;
    }
    if (a->features && (a->tta >= 0 || a->submission || a->top != 1)) {
        fprintf(stderr, "petal-tui: --features writes vectors: --tta, --top and --submission "
                "are for classes\n");
        return 1;
    }
    if (!a->features && a->out && ends_npy(a->out)) {
        fprintf(stderr, "petal-tui: --out %s: a .npy file is for --features; the classes "
                "are CSV\n", a->out);
        return 1;
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

/* Ctrl-C: the first stops the prediction after the batch in hand (the rows done are
 * kept, issue 42); SA_RESETHAND makes a second one end the program at once. */
static volatile sig_atomic_t stop_flag;

static void on_sigint(int sig)
{
    (void)sig;
    stop_flag = 1;
}

/* Where the rows go as the batches finish (prd_opts.on_rows): CSV rows through a
 * po_sink, or with --out X.npy the vectors kept for X.npy and X.paths.txt. */
typedef struct pr_out {
    const pr_args *a;
    const rm_model *m;
    char *const *files;         /* the files predicted; NULL: a split's records */
    int test;                   /* records of the test split: keyed by their ids */
    po_sink sink;
    po_buf b, sub, paths;       /* rows to put, the submission, the .npy's paths */
    double *vec;                /* --out X.npy: the rows so far */
    long long n_vec, cap_vec;
    int npy, failed, oom;
} pr_out;

static void keep_vec(pr_out *o, const double *v, int d)
{
    if (o->n_vec == o->cap_vec) {
        long long cap = o->cap_vec ? 2 * o->cap_vec : 256;
        double *nv = realloc(o->vec, (size_t)cap * (size_t)d * sizeof *nv);
        if (!nv) {
            o->oom = 1;
            return;
        }
        o->vec = nv;
        o->cap_vec = cap;
    }
    memcpy(o->vec + (size_t)o->n_vec++ * d, v, (size_t)d * sizeof *v);
}

static void on_rows(void *ctx, const prd_results *r, long long lo, long long n)
{
    pr_out *o = ctx;
    long long rows = 0;
    for (long long i = lo; i < lo + n; i++) {
        const prd_item *it = &r->items[i];
        if (!it->ok) {
            fprintf(stderr, "petal-tui: %s\n", it->err.msg);
            o->failed = 1;
            continue;
        }
        char key[64];
        if (o->test)
            util_copy(key, sizeof key, it->id);
        else
            util_fmt(key, sizeof key, "%lld", i);
        const char *k = o->files ? o->files[i] : key;
        const double *p = r->probs + (size_t)i * r->k;
        rows++;
        if (o->npy) {
            keep_vec(o, p, r->k);
            po_printf(&o->paths, "%s\n", k);
        } else if (o->a->features) {
            po_field(&o->b, k);
            for (int j = 0; j < r->k; j++)
                po_printf(&o->b, ",%.7g", p[j]);
            po_printf(&o->b, "\n");
        } else {
            po_row(&o->b, k, p, inf_model_class_names(o->m), r->k, (int)o->a->top);
            po_field(&o->sub, k);
            po_printf(&o->sub, ",%d\n", inf_argmax(p, r->k));
        }
    }
    if (!o->npy)
        po_sink_put(&o->sink, &o->b, rows);
    else
        o->sink.rows += rows;
}

static int out_open(pr_out *o, const pr_args *a, const rm_model *m, char *const *files, int test)
{
    memset(o, 0, sizeof *o);
    o->a = a;
    o->m = m;
    o->files = files;
    o->test = test;
    o->npy = a->features && a->out && ends_npy(a->out);
    if (o->npy)
        return 0;
    if (po_sink_open(&o->sink, a->out) != 0)
        return -1;
    const char *first = files ? "path" : "id";
    if (a->features) {
        po_printf(&o->b, "%s", first);
        for (int j = 0; j < inf_model_classes(m); j++)
            po_printf(&o->b, ",f%d", j);
        po_printf(&o->b, "\n");
    } else {
        po_header(&o->b, first, (int)a->top);
    }
    po_printf(&o->sub, "id,label\n");
    return po_sink_put(&o->sink, &o->b, 0);
}

/* --out X.npy's files: X.npy and X.paths.txt (each + ".partial" when stopped). */
static int write_npy(pr_out *o, int complete, char *npy, size_t n)
{
    char paths[4200];
    size_t len = strlen(o->a->out) - 4;
    util_fmt(npy, n, "%s%s", o->a->out, complete ? "" : ".partial");
    util_fmt(paths, sizeof paths, "%.*s.paths.txt%s", (int)len, o->a->out,
             complete ? "" : ".partial");
    if (o->oom || o->paths.oom) {
        fprintf(stderr, "petal-tui: out of memory for the output\n");
        return -1;
    }
    if (po_write_npy(npy, o->vec, o->n_vec, inf_model_classes(o->m)) != 0)
        return -1;
    return po_write(&o->paths, paths);
}

/* After the prediction: the output closed (renamed into place when complete), the
 * submission written, and what an interruption left said. The exit status. */
static int out_close(pr_out *o, const prd_results *r, int rc)
{
    int complete = rc == PT_OK && !r->stopped, bad = 0;
    char npy[4200] = "";
    if (o->npy && rc == PT_OK)
        bad = write_npy(o, complete, npy, sizeof npy) != 0;
    else if (!o->npy)
        bad = po_sink_close(&o->sink, complete) != 0;
    if (rc != PT_OK && o->sink.path)
        remove(o->sink.partial);
    if (complete && !bad && o->a->submission)
        bad = po_write(&o->sub, o->a->submission) != 0;
    if (rc == PT_OK && r->stopped) {
        fprintf(stderr, "petal-tui: predict: stopped after %lld of %lld images; %s holds the "
                "%lld rows done%s\n", r->n, r->planned,
                o->npy ? npy : po_sink_name(&o->sink, 0), o->sink.rows,
                o->a->out ? " (--out's file is written only when every image is done)" : "");
    }
    free(o->b.s);
    free(o->sub.s);
    free(o->paths.s);
    free(o->vec);
    if (rc != PT_OK)
        return 2;
    if (r->stopped)
        return 130;
    return bad || o->failed || r->n_failed > 0 ? 2 : 0;
}

static int predict_dataset(const pr_args *a, const rm_model *m, prd *p, pr_out *o,
                           ds_dataset *ds, po_progress *bar)
{
    int sid = split_id(a->split), test = sid == DATASETS_TEST;
    if (a->submission && !test) {
        fprintf(stderr, "petal-tui: --submission is for the test split, not %s\n", a->split);
        return 1;
    }
    bar->what = a->split;
    if (out_open(o, a, m, NULL, test) != 0)
        return 2;
    prd_results r;
    pt_err e;
    int rc = prd_split(p, datasets_split(ds, sid), !test, &r, &e);
    po_progress_end(bar);
    if (rc != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        memset(&r, 0, sizeof r);
    }
    for (long long i = 0; i < r.n_errors; i++)
        fprintf(stderr, "petal-tui: %s\n", r.errors[i].msg);
    int status = out_close(o, &r, rc);
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

static int predict_files(const pr_args *a, const rm_model *m, prd *p, pr_out *o,
                         po_progress *bar)
{
    if (a->submission) {
        fprintf(stderr, "petal-tui: --submission is for a dataset's test split\n");
        return 1;
    }
    char **files;
    long long n;
    int failed = 0;
    if (gather(a, &files, &n, &failed) != 0) {
        fprintf(stderr, "petal-tui: out of memory\n");
        return 2;
    }
    if (out_open(o, a, m, files, 0) != 0) {
        prd_list_free(files, n);
        return 2;
    }
    prd_results r;
    pt_err e;
    int rc = prd_files(p, files, n, &r, &e);
    po_progress_end(bar);
    if (rc != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        memset(&r, 0, sizeof r);
    }
    int status = out_close(o, &r, rc);
    if (status == 0 && failed)
        status = 2;
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
        return 1;
    }
    rm_model *m = NULL;
    pt_err e;
    int status = 2;
    if (inf_model_open_features(a.model, (int)a.size, (run_input_norm)a.norm, a.features, &m,
                                &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        status = e.code == PT_EUSAGE ? 1 : 2; /* a model of the wrong kind, or unreadable */
        goto out;
    }
    /* An export the run has moved past answers as the run did then, not as it does
     * now: said, since README promises the two agree. */
    char stale[9000];
    if (inf_model_export_stale(m, stale, sizeof stale) ||
        (util_is_dir(a.model) && runs_export_stale(a.model, stale, sizeof stale)))
        fprintf(stderr, "petal-tui: predict: note: %s\n", stale);
    if (inf_model_weights(m)[0])
        fprintf(stderr, "petal-tui: predict: the run's epoch %d weights (%s)\n",
                inf_model_epoch(m), inf_model_weights(m));
    if (inf_model_size_why(m)[0])
        fprintf(stderr, "petal-tui: predict: %s at %dx%d: %s\n", a.model,
                inf_model_image_size(m), inf_model_image_size(m), inf_model_size_why(m));
    if (a.features)
        fprintf(stderr, "petal-tui: predict: %d-value vectors: %s\n", inf_model_classes(m),
                inf_model_features(m) ? "what the graph's classifier reads"
                                      : "the graph's output (it has no Gemm / MatMul classifier)");
    inf_init();
    if (a.bf16 < 0)
        a.bf16 = inf_model_bf16(m);
    cli_precision_note("predict", a.bf16);
    if (a.top > inf_model_classes(m))
        a.top = inf_model_classes(m);
    prd_opts o = { .batch = (int)a.batch, .replicas = (int)a.replicas,
                   .workers = (int)a.replicas, .raw = a.features, .bf16 = a.bf16,
                   .tta_flip = a.features ? 0 : a.tta < 0 ? inf_model_tta_flip(m)
                                                          : (a.tta & ENS_TTA_FLIP) != 0,
                   .tta_crops = !a.features && a.tta > 0 && (a.tta & ENS_TTA_CROPS),
                   .on_rows = on_rows, .stop = &stop_flag };
    pr_out out_ctx;
    o.rows_ctx = &out_ctx;
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
    struct sigaction sa, old_sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESTART | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_sa);
    status = ds ? predict_dataset(&a, m, p, &out_ctx, ds, &bar)
                : predict_files(&a, m, p, &out_ctx, &bar);
    sigaction(SIGINT, &old_sa, NULL);
    prd_free(p);
    inf_model_close(m);
out:
    datasets_close(ds);
    free(a.inputs);
    return status;
}
