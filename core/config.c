/* config — the training options (see config.h). */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* The table names values and takes no header from the modules that read them (data/,
 * nn/, train/: floors above it). What it cannot check itself, they check: an
 * augmentation chain and a --widths list through cfg_set_check(); that
 * run_schedule is the trainer's sched_kind and run_input_norm nn_norm + 1, and that
 * RUN_MAX_BLOCKS is the small net's limit, by static assertions beside the modules'
 * enums (nn/nn_widths.c, and tests/test_config.c for the two enums). */

/* CFG_CHOICE rows store their index as an int. */
_Static_assert(sizeof(run_optimizer) == sizeof(int) && sizeof(run_schedule) == sizeof(int) &&
                   sizeof(run_tta) == sizeof(int) && sizeof(run_backbone_bn) == sizeof(int),
               "the enums of the choices must be int-sized");

/* A CFG_CHOICE row stores the index, so its list follows the enum's order. The
 * schedules are the trainer's names, with the other spelling sched_kind_parse()
 * accepts (a test holds them to it). */
static const char *const MODELS[] = { "small", "mobilenetv2", NULL };
static const char *const OPTIMIZERS[] = { "adam", "sgd", NULL };
static const char *const INITS[] = { "he", "torch pytorch", NULL };
static const char *const SCHEDULES[] = { "exp exponential", "linear", "cosine", NULL };
static const char *const TTAS[] = { "none off", "flip", NULL };
static const char *const BACKBONE_BNS[] = { "train", "frozen", NULL };
/* run_input_norm's order: auto, then nn_norm's (its names, nn_norm_name). */
static const char *const INPUT_NORMS[] = { "auto", "imagenet torch", "unit", "tf", "raw", "caffe",
                                           NULL };
_Static_assert(sizeof(run_input_norm) == sizeof(int), "run_input_norm is int-sized");
static const char *const PRECISIONS[] = { "auto", "fp32 float32", "bf16 bfloat16", NULL };
_Static_assert(sizeof(run_precision) == sizeof(int), "run_precision is int-sized");
/* run_monitor's and run_keep's order. */
static const char *const MONITORS[] = { "f1", "loss", NULL };
static const char *const KEEPS[] = { "auto", "best", "last", NULL };
static const char *const TEACHER_VIEWS[] = { "cached", "live", NULL };
_Static_assert(sizeof(run_teacher_view) == sizeof(int), "run_teacher_view is int-sized");
_Static_assert(sizeof(run_monitor) == sizeof(int) && sizeof(run_keep) == sizeof(int),
               "run_monitor and run_keep are int-sized");

/* The augmentation chain's default (aug_default_spec() reads it from here). Chosen by
 * the bench figures (bench/bench_augment.c, 192x192, one core of the 2-core AMD EPYC
 * build machine): an applied op costs about perspective 32 us, affine 28 us, colour
 * 23 us, flip 6 us, against 75 us for decoding one JPEG. Geometric ops drawn together
 * are resampled once, so the expected cost is P(perspective) 32 + P(affine only) 28 +
 * P(flip only) 6 + P(colour) 23 = 16-17 us, about 22% of a decode, inside the 25%
 * budget with some margin for noise. The notebook's perspective gets the largest
 * share; the suggested 0.35 / 0.5 / 0.5 / 0.5 would cost about 45%. */
#define AUGMENT_DEFAULT "flip:0.5,crop:1:scale=0.6:ratio=1:interp=bilinear"

/* The checks the modules that read a kind's values registered (cfg_set_check), by
 * kind; CFG_WIDTHS is the last kind. Written when the program starts, before any
 * thread; read after. */
static cfg_check_fn checks[CFG_WIDTHS + 1];

void cfg_set_check(cfg_kind kind, cfg_check_fn fn)
{
    if ((unsigned)kind <= CFG_WIDTHS)
        checks[kind] = fn;
}

static int image_size_check(long long v, pt_err *e)
{
    if (v != 0 && v < RUN_MIN_IMAGE_SIZE)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "image-size must be 0 (the dataset's) or at least %d, not %lld",
                       RUN_MIN_IMAGE_SIZE, v);
    return PT_OK;
}

#define F(field) offsetof(run_config, field), sizeof(((run_config *)0)->field)
#define ALL (CFG_CLI | CFG_FILE | CFG_DIALOG)
#define NO_FILE (CFG_CLI | CFG_DIALOG)

/* One row per option, one line per row, so that adding an option is one line here
 * (and its field in run_config). The order is the config file's; the dialog puts the
 * settings changed most often first (the dialog column), then the rest in this order.
 * Columns: name, kind, field, default, lo, hi, choices, arg, help, unset, where,
 * dialog, check. */
static const cfg_option OPTIONS[] = {
    { "data", CFG_PATH, F(data), "", 0, 0, NULL, "DIR", "dataset folder", "the built-in demo flowers", ALL, 13, NULL },
    { "out", CFG_PATH, F(out), "", 0, 0, NULL, "DIR", "run folder", "runs/MODEL-DATE", NO_FILE, 0, NULL },
    { "resume", CFG_PATH, F(resume), "", 0, 0, NULL, "DIR", "continue the run in DIR", "a new run", NO_FILE, 0, NULL },
    { "model", CFG_MODEL, F(model), "small", 0, 0, MODELS, "small|mobilenetv2|FILE.onnx", "a built-in net, or an ONNX graph to fine-tune", NULL, ALL, 1, NULL },
    { "width", CFG_NUM, F(width), "1", 0.1, 4.0, NULL, "W", "mobilenetv2 width multiplier", NULL, ALL, 0, NULL },
    { "widths", CFG_WIDTHS, F(widths), "auto", 0, 0, NULL, "auto|C,C,...", "small: channels of each conv block (one block per count; Cs: a strided block; a: a 2x2 average pool)", NULL, ALL, 0, NULL },
    { "convs", CFG_INT, F(convs), "1", 1, 2, NULL, "N", "small: 3x3 conv layers per block (2 = VGG's)", NULL, ALL, 0, NULL },
    { "residual", CFG_BOOL, F(residual), "no", 0, 0, NULL, NULL, "small: each block ResNet's basic block (two 3x3 convs and a shortcut; --convs is not read)", NULL, ALL, 0, NULL },
    { "init", CFG_CHOICE, F(init), "torch", 0, 0, INITS, NULL, "weights from scratch: He-normal (Keras) or PyTorch's default", NULL, ALL, 0, NULL },
    { "bn-momentum", CFG_NUM, F(bn_momentum), "0.99", 0, 0.9999, NULL, "M", "batch-norm running statistics: M x old + (1 - M) x batch", NULL, ALL, 0, NULL },
    { "image-size", CFG_INT, F(image_size), "0", 0, 1024, NULL, "S", "model input side; 0 = the dataset's", NULL, ALL, 0, image_size_check },
    { "epochs", CFG_INT, F(epochs), "10", 1, RUN_MAX_EPOCHS, NULL, "N", "epochs to train", NULL, ALL, 5, NULL },
    { "early-stop", CFG_INT, F(early_stop), "0", 0, RUN_MAX_EPOCHS, NULL, "N", "stop after N epochs in a row without a better --monitor value (0 = off)", NULL, ALL, 0, NULL },
    { "monitor", CFG_CHOICE, F(monitor), "f1", 0, 0, MONITORS, NULL, "what --early-stop and --keep best watch: validation macro F1 (higher is better) or validation loss (lower is better); a tie is no improvement", NULL, ALL, 0, NULL },
    { "keep", CFG_CHOICE, F(keep), "auto", 0, 0, KEEPS, NULL, "the run's model (export, predict, submission.csv): the best validated epoch's weights or the last epoch's; auto = best when --early-stop is on, else last", NULL, ALL, 0, NULL },
    { "replicas", CFG_INT, F(replicas), "0", 0, RUN_MAX_REPLICAS, NULL, "R", "replica threads; 0 = one per core the process may run on", NULL, ALL, 2, NULL },
    { "batch-per-replica", CFG_INT, F(batch_per_replica), "16", 1, 4096, NULL, "B", "examples per replica per step", NULL, ALL, 3, NULL },
    { "grad-acc", CFG_INT, F(grad_acc), "1", 1, 1024, NULL, "A", "gradient accumulation steps per update", NULL, ALL, 4, NULL },
    { "oversample", CFG_OVERSAMPLE, F(oversample), "off", 0, 1LL << 40, NULL, "N|max|off", "oversample small classes to N", NULL, ALL, 11, NULL },
    { "optimizer", CFG_CHOICE, F(optimizer), "adam", 0, 0, OPTIMIZERS, NULL, "Adam, or SGD with momentum", NULL, ALL, 0, NULL },
    { "lr-start", CFG_NUM, F(lr_start), "1e-4", 0, 1e9, NULL, "X", "learning rate before the warmup", NULL, ALL, 6, NULL },
    { "lr-max", CFG_NUM, F(lr_max), "2e-3", 0, 1e9, NULL, "X", "learning rate after the warmup", NULL, ALL, 7, NULL },
    { "lr-end", CFG_NUM, F(lr_end), "1e-4", 0, 1e9, NULL, "X", "learning rate at the end", NULL, ALL, 8, NULL },
    { "warmup", CFG_NUM, F(warmup), "0.1", 0, 1, NULL, "F", "warmup as a fraction of all updates", NULL, ALL, 9, NULL },
    { "schedule", CFG_CHOICE, F(schedule), "exp", 0, 0, SCHEDULES, NULL, "the decay after the warmup", NULL, ALL, 10, NULL },
    { "lr-scaling", CFG_NUM, F(lr_scaling), "1", 0, 1e4, NULL, "K", "multiplies every learning rate", NULL, ALL, 0, NULL },
    { "momentum", CFG_NUM, F(momentum), "0.9", 0, 0.9999, NULL, "M", "SGD momentum", NULL, ALL, 0, NULL },
    { "weight-decay", CFG_NUM, F(weight_decay), "0", 0, 1, NULL, "W", "decoupled weight decay", NULL, ALL, 0, NULL },
    { "dropout", CFG_NUM, F(dropout), "0.2", 0, 0.95, NULL, "P", "dropout rate before the dense layer", NULL, ALL, 0, NULL },
    { "ema", CFG_NUM, F(ema), "0.99", 0, 0.99999, NULL, "D", "validate and predict with a moving average of the weights, decay D (0 = off)", NULL, ALL, 0, NULL },
    { "tta", CFG_CHOICE, F(tta), "none", 0, 0, TTAS, NULL, "validate and predict each image as it is (none) or as the mean of it and its mirror image (flip)", NULL, ALL, 0, NULL },
    { "label-smoothing", CFG_NUM, F(label_smoothing), "0", 0, 0.5, NULL, "E", "train against (1 - E) x the label + E / classes", NULL, ALL, 0, NULL },
    { "teacher", CFG_PATH, F(teacher), "", 0, 0, NULL, "PATH", "knowledge distillation from a run folder, an .onnx classifier, an ensemble folder, or an earlier distilled run's teacher_probs.csv (its teacher's probabilities, not predicted again): the loss is alpha x T^2 x KL(teacher_T || student_T) + (1 - alpha) x the labels' cross-entropy", "no teacher", ALL, 0, NULL },
    { "distill-t", CFG_NUM, F(distill_t), "4", 0.05, 100, NULL, "T", "--teacher: the temperature of both softmaxes", NULL, ALL, 0, NULL },
    { "distill-alpha", CFG_NUM, F(distill_alpha), "0.9", 0, 1, NULL, "A", "--teacher: the weight of the teacher's term (1 - A: the labels')", NULL, ALL, 0, NULL },
    { "teacher-data", CFG_PATH, F(teacher_data), "", 0, 0, NULL, "DATASET", "--teacher (cached): the dataset whose training split the teacher predicts, the student's records at another stored size (shards of the same photos made with a larger --size), so that the teacher sees their detail", "the run's --data", ALL, 0, NULL },
    { "teacher-view", CFG_CHOICE, F(teacher_view), "cached", 0, 0, TEACHER_VIEWS, NULL, "--teacher: predict each training image once, un-augmented, before the first epoch (cached), or every augmented and mixed batch as the student sees it (live: exact, costlier)", NULL, ALL, 0, NULL },
    { "freeze-epochs", CFG_INT, F(freeze_epochs), "0", 0, RUN_MAX_EPOCHS, NULL, "K", "train only the new head for the first K epochs", NULL, ALL, 0, NULL },
    { "backbone-lr-scale", CFG_NUM, F(backbone_lr_scale), "0.1", 0, 1, NULL, "F", "after them, the backbone's learning rate as a fraction", NULL, ALL, 0, NULL },
    { "freeze-backbone", CFG_BOOL, F(freeze_backbone), "no", 0, 0, NULL, NULL, "train only the head", NULL, ALL, 0, NULL },
    { "input-norm", CFG_CHOICE, F(input_norm), "auto", 0, 0, INPUT_NORMS, NULL, "an ONNX model's input: pixels x in [0, 1] as (x - mean) / std (imagenet), x (unit), 2x - 1 (tf), 255x (raw), BGR 255x - mean (caffe); auto: what the model says, else imagenet", NULL, ALL, 0, NULL },
    { "backbone-bn", CFG_CHOICE, F(backbone_bn), "train", 0, 0, BACKBONE_BNS, NULL, "an ONNX model's batch norm once its backbone trains: train (batch statistics; gamma, beta and the running statistics move) or frozen (running statistics, gamma and beta kept as imported: for a handful of images per replica)", NULL, ALL, 0, NULL },
    { "reinit", CFG_BOOL, F(reinit), "no", 0, 0, NULL, NULL, "an ONNX model's architecture from scratch, not its weights", NULL, ALL, 0, NULL },
    { "augment", CFG_AUGMENT, F(augment), AUGMENT_DEFAULT, 0, 0, NULL, "SPEC", "the augmentation chain (none = off)", NULL, ALL, 12, NULL },
    { "seed", CFG_U64, F(seed), "42", 0, 1LL << 62, NULL, "S", "the random seed", NULL, ALL, 0, NULL },
    { "deterministic", CFG_BOOL, F(deterministic), "yes", 0, 0, NULL, NULL, "batches in order: same seed, same run", NULL, ALL, 0, NULL },
    { "shuffle-buffer", CFG_INT, F(shuffle_buffer), "2048", 0, 1 << 22, NULL, "N", "records in the shuffle buffer", NULL, ALL, 0, NULL },
    { "workers", CFG_INT, F(workers), "0", 0, 64, NULL, "N", "decode threads; 0 = automatic", NULL, ALL, 0, NULL },
    { "prefetch", CFG_INT, F(prefetch), "4", 1, 256, NULL, "N", "ready batches kept ahead", NULL, ALL, 0, NULL },
    { "precision", CFG_CHOICE, F(precision), "fp32", 0, 0, PRECISIONS, NULL, "the products of convolutions and dense layers: fp32, or bf16 operands with fp32 sums (mixed precision: weights, optimizer, batch norm and loss stay fp32; 1.6x for small where the CPU has AVX512_BF16); auto: bf16 where the CPU has AVX512_BF16 or AMX, else fp32", NULL, ALL, 0, NULL },
    { "recompute", CFG_BOOL_AUTO, F(recompute), "auto", 0, 0, NULL, NULL, "training: recompute batch-norm and depthwise outputs in the backward instead of keeping them (about half the memory of a MobileNetV2, about 5% slower; auto: when keeping them would take more than a quarter of the machine's memory)", NULL, ALL, 0, NULL },
    { "stop-on-data-error", CFG_BOOL, F(stop_on_data_error), "no", 0, 0, NULL, NULL, "stop at a bad record, not skip it", NULL, ALL, 0, NULL },
    { "overlap", CFG_BOOL_AUTO, F(overlap), "auto", 0, 0, NULL, NULL, "mpirun jobs: send gradients during the backward pass (--no-overlap: after it, each process stepping its slice of the optimizer; auto: overlap when the ranks span hosts)", NULL, ALL, 0, NULL },
    { "checkpoint-every", CFG_INT, F(checkpoint_every), "1", 1, RUN_MAX_EPOCHS, NULL, "N", "epochs between checkpoints", NULL, ALL, 0, NULL },
};

#define N_OPTIONS (sizeof OPTIONS / sizeof OPTIONS[0])

const cfg_option *cfg_options(size_t *n)
{
    *n = N_OPTIONS;
    return OPTIONS;
}

const cfg_option *cfg_find(const char *name)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (!strcmp(OPTIONS[i].name, name))
            return &OPTIONS[i];
    return NULL;
}

/* ---- choices: "name other-spelling ..." ---------------------------------------- */

/* The length of a choice's name (its first word). */
static int name_len(const char *choice)
{
    return (int)strcspn(choice, " ");
}

static int choice_count(const cfg_option *o)
{
    int n = 0;
    while (o->choices[n])
        n++;
    return n;
}

/* The index of the choice that v spells, or -1. */
static int choice_of(const cfg_option *o, const char *v)
{
    size_t vl = strlen(v);
    for (int i = 0; o->choices[i]; i++)
        for (const char *w = o->choices[i]; *w; w += strspn(w, " ")) {
            size_t wl = strcspn(w, " ");
            if (wl == vl && !strncmp(w, v, vl))
                return i;
            w += wl;
        }
    return -1;
}

/* "optimizer wants adam or sgd, not 'x'": the names, the last after "or". */
static int bad_choice(const cfg_option *o, const char *v, pt_err *e)
{
    char names[256];
    size_t k = 0;
    /* The model takes a file too: it is the last alternative, after "or". */
    int more = o->kind == CFG_MODEL;
    for (int i = 0; o->choices[i] && k < sizeof names; i++) {
        const char *sep = i == 0 ? "" : o->choices[i + 1] || more ? ", " : " or ";
        k += (size_t)snprintf(names + k, sizeof names - k, "%s%.*s", sep, name_len(o->choices[i]),
                              o->choices[i]);
    }
    return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "%s wants %s%s, not '%s'",
                   o->name, names, more ? " or a .onnx file" : "", v);
}

/* ---- reading values ------------------------------------------------------------- */

/* A number kind's field, in the member its kind names (CFG_INT, CFG_BOOL,
 * CFG_BOOL_AUTO and CFG_CHOICE: b; CFG_OVERSAMPLE: i; CFG_U64: u; CFG_NUM: d).
 * Copied with memcpy, as many bytes as the row's field has. */
typedef union field {
    int b;
    long long i;
    uint64_t u;
    double d;
} field;

/* The limits are whole numbers that doubles hold exactly: compared as integers, so
 * that nothing near 2^62 rounds its way in. */
static int parse_int(const cfg_option *o, const char *v, long long *out, pt_err *e)
{
    long long lo = (long long)o->lo, hi = (long long)o->hi;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || x < lo || x > hi)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "%s wants a whole number from %lld to %lld, not '%s'", o->name, lo, hi, v);
    *out = x;
    return PT_OK;
}

static int parse_num(const cfg_option *o, const char *v, double *out, pt_err *e)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= o->lo && x <= o->hi))
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "%s wants a number from %g to %g, not '%s'", o->name, o->lo, o->hi, v);
    *out = x;
    return PT_OK;
}

static int parse_bool(const cfg_option *o, const char *v, int *out, pt_err *e)
{
    if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on")) {
        *out = 1;
        return PT_OK;
    }
    if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off")) {
        *out = 0;
        return PT_OK;
    }
    return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                   "%s wants yes or no, not '%s'", o->name, v);
}

static int parse_oversample(const cfg_option *o, const char *v, long long *out, pt_err *e)
{
    if (!strcmp(v, "off") || !strcmp(v, "no")) {
        *out = 0;
        return PT_OK;
    }
    if (!strcmp(v, "max") || !strcmp(v, "largest")) {
        *out = -1;
        return PT_OK;
    }
    if (parse_int(o, v, out, NULL) == PT_OK)
        return PT_OK;
    return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                   "%s wants a target count, max (the largest class) or off, not '%s'", o->name, v);
}

/* A text kind checked by the module that reads it (cfg_set_check), then its length. */
static int parse_checked_text(const cfg_option *o, const char *v, pt_err *e)
{
    const cfg_check_fn check = checks[o->kind];
    int rc = check ? check(v, e) : PT_OK;
    if (rc != PT_OK)
        return rc;
    if (strlen(v) >= o->size)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "%s: too long", o->name);
    return PT_OK;
}

/* The value is checked whole before the field is written, so a bad one changes
 * nothing. A number kind's value is built in the member its kind names and copied
 * to the row's offset. */
static int set_option(run_config *c, const cfg_option *o, const char *v, pt_err *e)
{
    char *p = (char *)c + o->offset;
    field f = { 0 };
    long long i = 0;
    int rc = PT_OK;
    switch (o->kind) {
    case CFG_MODEL:
        if (choice_of(o, v) < 0 && !run_model_is_onnx(v))
            return bad_choice(o, v, e);
        /* fall through - a built-in name or a path, stored as text */
    case CFG_PATH:
        if (strlen(v) >= o->size)
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "%s: path too long",
                           o->name);
        util_copy(p, o->size, v);
        return PT_OK;
    case CFG_AUGMENT:
    case CFG_WIDTHS:
        if ((rc = parse_checked_text(o, v, e)) == PT_OK)
            util_copy(p, o->size, v);
        return rc;
    case CFG_CHOICE:
        if ((f.b = choice_of(o, v)) < 0)
            return bad_choice(o, v, e);
        break;
    case CFG_INT:
        if ((rc = parse_int(o, v, &i, e)) == PT_OK && o->check)
            rc = o->check(i, e);
        f.b = (int)i;
        break;
    case CFG_U64:
        rc = parse_int(o, v, &i, e);
        f.u = (uint64_t)i;
        break;
    case CFG_OVERSAMPLE:
        rc = parse_oversample(o, v, &f.i, e);
        break;
    case CFG_NUM:
        rc = parse_num(o, v, &f.d, e);
        break;
    case CFG_BOOL:
        rc = parse_bool(o, v, &f.b, e);
        break;
    case CFG_BOOL_AUTO:
        if (!strcmp(v, "auto"))
            f.b = -1;
        else if (parse_bool(o, v, &f.b, NULL) != PT_OK)
            rc = err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "%s wants yes, no or auto, not '%s'", o->name, v);
        break;
    }
    if (rc == PT_OK && o->size <= sizeof f)
        memcpy(p, &f, o->size);
    return rc;
}

int cfg_set(run_config *c, const char *key, const char *v, pt_err *e)
{
    const cfg_option *o = cfg_find(key);
    if (!o)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "unknown option '%s'",
                       key);
    return set_option(c, o, v, e);
}

void cfg_defaults(run_config *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < N_OPTIONS; i++)
        set_option(c, &OPTIONS[i], OPTIONS[i].def, NULL);
}

/* ---- config files ---------------------------------------------------------------- */

int cfg_read_text(run_config *c, const char *text, size_t len, const char *file, pt_err *e)
{
    /* A copy to cut into lines, keys and values in place. */
    char *buf = malloc(len + 1);
    if (!buf)
        return err_set(e, PT_ENOMEM, file, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    if (len)
        memcpy(buf, text, len);
    buf[len] = '\0';
    int rc = PT_OK;
    long long line_no = 0;
    for (size_t at = 0; at < len && rc == PT_OK;) {
        char *line = buf + at;
        char *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) : len - at;
        line[n] = '\0';
        at += n + 1;
        line_no++;
        if (strlen(line) != n) {
            rc = err_set(e, PT_EUSAGE, file, PT_NO_RECORD, PT_NO_OFFSET,
                         "line %lld: a NUL byte (not a text file?)", line_no);
            break;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            continue;
        char *eq = strchr(p, '=');
        if (!eq) {
            rc = err_set(e, PT_EUSAGE, file, PT_NO_RECORD, PT_NO_OFFSET,
                         "line %lld: expected key = value", line_no);
            break;
        }
        *eq = '\0';
        char *key = p, *val = eq + 1;
        for (char *k = eq - 1; k >= key && isspace((unsigned char)*k); k--)
            *k = '\0';
        while (isspace((unsigned char)*val))
            val++;
        for (char *v = val + strlen(val); v > val && isspace((unsigned char)v[-1]); v--)
            v[-1] = '\0';
        pt_err ke;
        if (cfg_set(c, key, val, &ke) != PT_OK)
            rc = err_set(e, PT_EUSAGE, file, PT_NO_RECORD, PT_NO_OFFSET, "line %lld: %s", line_no,
                         ke.msg);
    }
    free(buf);
    return rc;
}

int cfg_read_file(run_config *c, const char *path, pt_err *e)
{
    uint8_t *data;
    size_t len;
    int rc = util_read_file(path, &data, &len, e);
    if (rc != PT_OK)
        return rc;
    rc = cfg_read_text(c, (const char *)data, len, path, e);
    free(data);
    return rc;
}

/* ---- writing values ------------------------------------------------------------- */

int cfg_value(const run_config *c, const cfg_option *o, char *buf, size_t n)
{
    const char *p = (const char *)c + o->offset;
    field v = { 0 };
    memcpy(&v, p, o->size < sizeof v ? o->size : sizeof v);
    int k = -1;
    switch (o->kind) {
    case CFG_PATH:
    case CFG_MODEL:
    case CFG_AUGMENT:
    case CFG_WIDTHS:
        k = snprintf(buf, n, "%.*s", (int)strnlen(p, o->size), p);
        break;
    case CFG_CHOICE: {
        /* Out of range reads as the first, as the trainer takes it. */
        const char *name = o->choices[v.b < 0 || v.b >= choice_count(o) ? 0 : v.b];
        k = snprintf(buf, n, "%.*s", name_len(name), name);
        break;
    }
    case CFG_INT:
        k = snprintf(buf, n, "%d", v.b);
        break;
    case CFG_U64:
        k = snprintf(buf, n, "%llu", (unsigned long long)v.u);
        break;
    case CFG_OVERSAMPLE:
        k = v.i < 0 ? snprintf(buf, n, "max") : v.i == 0 ? snprintf(buf, n, "off")
                                                         : snprintf(buf, n, "%lld", v.i);
        break;
    case CFG_NUM: {
        /* %g's six digits when they read back as the same double, else as many as it
         * takes (17 at most): a run folder's config resumes with the very values. */
        int prec = 6;
        for (char tmp[64]; prec < 17; prec++) {
            snprintf(tmp, sizeof tmp, "%.*g", prec, v.d);
            if (strtod(tmp, NULL) == v.d)
                break;
        }
        k = snprintf(buf, n, "%.*g", prec, v.d);
        break;
    }
    case CFG_BOOL:
        k = snprintf(buf, n, "%s", v.b ? "yes" : "no");
        break;
    case CFG_BOOL_AUTO:
        k = snprintf(buf, n, "%s", v.b < 0 ? "auto" : v.b ? "yes" : "no");
        break;
    }
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

int cfg_format(const run_config *c, char *buf, size_t n)
{
    int k = snprintf(buf, n, "# petal-tui configuration (keys as the long options; "
                             "see petal-tui(1))\n");
    if (k < 0 || (size_t)k >= n)
        return -1;
    size_t at = (size_t)k;
    for (size_t j = 0; j < N_OPTIONS; j++) {
        const cfg_option *o = &OPTIONS[j];
        if (!(o->where & CFG_FILE))
            continue;
        k = snprintf(buf + at, n - at, "%s = ", o->name);
        if (k < 0 || (size_t)k >= n - at || cfg_value(c, o, buf + at + k, n - at - (size_t)k))
            return -1;
        at += (size_t)k + strlen(buf + at + k);
        if (n - at < 2)
            return -1;
        buf[at++] = '\n';
        buf[at] = '\0';
    }
    return 0;
}
