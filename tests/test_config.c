/* The training options: the run folder's config text, byte for byte (a resumed run
 * reads it back, and users diff it), and every option read back from it. */
#include "tests/t.h"

#include "data/augment.h"
#include "engine.h"
#include "nn/nn_import.h"
#include "nn/nn_models.h"
#include "train/schedule.h"

/* The options' table passes these enums across as ints without the headers that
 * define the modules' own (core/config.c takes none from above its floor): the
 * trainer's schedule and the importer's input convention must agree with them. */
_Static_assert(RUN_SCHED_EXP == (int)SCHED_EXP && RUN_SCHED_LINEAR == (int)SCHED_LINEAR &&
                   RUN_SCHED_COSINE == (int)SCHED_COSINE,
               "run_schedule and sched_kind must agree");
_Static_assert(RUN_NORM_IMAGENET == NN_NORM_IMAGENET + 1 && RUN_NORM_UNIT == NN_NORM_UNIT + 1 &&
                   RUN_NORM_TF == NN_NORM_TF + 1 && RUN_NORM_RAW == NN_NORM_RAW + 1 &&
                   RUN_NORM_CAFFE == NN_NORM_CAFFE + 1,
               "run_input_norm is nn_norm + 1");

static const char DEFAULT_TEXT[] =
    "# petal-tui configuration (keys as the long options; see petal-tui(1))\n"
    "data = \n"
    "model = small\n"
    "width = 1\n"
    "widths = auto\n"
    "convs = 1\n"
    "residual = no\n"
    "init = torch\n"
    "bn-momentum = 0.99\n"
    "image-size = 0\n"
    "epochs = 10\n"
    "early-stop = 0\n"
    "monitor = f1\n"
    "keep = auto\n"
    "replicas = 0\n"
    "batch-per-replica = 16\n"
    "grad-acc = 1\n"
    "oversample = off\n"
    "optimizer = adam\n"
    "lr-start = 0.0001\n"
    "lr-max = 0.002\n"
    "lr-end = 0.0001\n"
    "warmup = 0.1\n"
    "schedule = exp\n"
    "lr-scaling = 1\n"
    "momentum = 0.9\n"
    "weight-decay = 0\n"
    "dropout = 0.2\n"
    "ema = 0.99\n"
    "tta = none\n"
    "label-smoothing = 0\n"
    "teacher = \n"
    "distill-t = 4\n"
    "distill-alpha = 0.9\n"
    "teacher-data = \n"
    "teacher-view = cached\n"
    "freeze-epochs = 0\n"
    "backbone-lr-scale = 0.1\n"
    "freeze-backbone = no\n"
    "input-norm = auto\n"
    "backbone-bn = train\n"
    "reinit = no\n"
    "augment = flip:0.5,crop:1:scale=0.6:ratio=1:interp=bilinear\n"
    "seed = 42\n"
    "deterministic = yes\n"
    "shuffle-buffer = 2048\n"
    "workers = 0\n"
    "prefetch = 4\n"
    "precision = fp32\n"
    "recompute = auto\n"
    "stop-on-data-error = no\n"
    "overlap = auto\n"
    "checkpoint-every = 1\n";

static const char OTHER_TEXT[] =
    "# petal-tui configuration (keys as the long options; see petal-tui(1))\n"
    "data = /data/petals/tfrecords-jpeg-192x192\n"
    "model = mobilenetv2\n"
    "width = 0.75\n"
    "widths = 16,32,64,128,256,512\n"
    "convs = 2\n"
    "residual = yes\n"
    "init = he\n"
    "bn-momentum = 0.9\n"
    "image-size = 192\n"
    "epochs = 30\n"
    "early-stop = 4\n"
    "monitor = loss\n"
    "keep = last\n"
    "replicas = 8\n"
    "batch-per-replica = 32\n"
    "grad-acc = 8\n"
    "oversample = 500\n"
    "optimizer = sgd\n"
    "lr-start = 1e-05\n"
    "lr-max = 0.0008\n"
    "lr-end = 3.5e-06\n"
    "warmup = 0.25\n"
    "schedule = cosine\n"
    "lr-scaling = 8\n"
    "momentum = 0.95\n"
    "weight-decay = 0.0001\n"
    "dropout = 0.5\n"
    "ema = 0\n"
    "tta = flip\n"
    "label-smoothing = 0.1\n"
    "teacher = runs/zoo-teacher\n"
    "distill-t = 2.5\n"
    "distill-alpha = 0.7\n"
    "teacher-data = data/photos256\n"
    "teacher-view = live\n"
    "freeze-epochs = 2\n"
    "backbone-lr-scale = 0.25\n"
    "freeze-backbone = yes\n"
    "input-norm = tf\n"
    "backbone-bn = frozen\n"
    "reinit = yes\n"
    "augment = perspective:0.35,flip:0.5,mixup:0.2\n"
    "seed = 12345678901234\n"
    "deterministic = no\n"
    "shuffle-buffer = 4096\n"
    "workers = 3\n"
    "prefetch = 8\n"
    "precision = bf16\n"
    "recompute = no\n"
    "stop-on-data-error = yes\n"
    "overlap = no\n"
    "checkpoint-every = 5\n";

/* Every field of OTHER_TEXT set directly, so the text is checked against the struct
 * and not against the parser. */
static void other_config(run_config *c)
{
    cfg_defaults(c);
    snprintf(c->data, sizeof c->data, "/data/petals/tfrecords-jpeg-192x192");
    snprintf(c->out, sizeof c->out, "runs/not-written");
    snprintf(c->resume, sizeof c->resume, "runs/not-written-either");
    snprintf(c->model, sizeof c->model, "mobilenetv2");
    c->width = 0.75;
    snprintf(c->widths, sizeof c->widths, "16,32,64,128,256,512");
    c->convs = 2;
    c->residual = 1;
    c->init = RUN_INIT_HE;
    c->bn_momentum = 0.9;
    c->image_size = 192;
    c->epochs = 30;
    c->early_stop = 4;
    c->monitor = RUN_MON_LOSS;
    c->keep = RUN_KEEP_LAST;
    c->replicas = 8;
    c->batch_per_replica = 32;
    c->grad_acc = 8;
    c->oversample = 500;
    c->optimizer = RUN_OPT_SGD;
    c->lr_start = 1e-5;
    c->lr_max = 8e-4;
    c->lr_end = 3.5e-6;
    c->warmup = 0.25;
    c->schedule = RUN_SCHED_COSINE;
    c->lr_scaling = 8;
    c->momentum = 0.95;
    c->weight_decay = 1e-4;
    c->dropout = 0.5;
    c->ema = 0;
    c->tta = RUN_TTA_FLIP;
    c->label_smoothing = 0.1;
    snprintf(c->teacher, sizeof c->teacher, "runs/zoo-teacher");
    c->distill_t = 2.5;
    c->distill_alpha = 0.7;
    snprintf(c->teacher_data, sizeof c->teacher_data, "data/photos256");
    c->teacher_view = RUN_TEACHER_LIVE;
    c->freeze_epochs = 2;
    c->backbone_lr_scale = 0.25;
    c->freeze_backbone = 1;
    c->reinit = 1;
    c->input_norm = RUN_NORM_TF;
    c->backbone_bn = RUN_BN_FROZEN;
    snprintf(c->augment, sizeof c->augment, "perspective:0.35,flip:0.5,mixup:0.2");
    c->seed = 12345678901234ull;
    c->deterministic = 0;
    c->shuffle_buffer = 4096;
    c->workers = 3;
    c->prefetch = 8;
    c->precision = RUN_PREC_BF16;
    c->recompute = 0;
    c->stop_on_data_error = 1;
    c->overlap = 0;
    c->checkpoint_every = 5;
}

/* Reads "key = value" lines as a config file does (no comments or blanks but the
 * header), onto the defaults. */
static int parse_text(const char *text, run_config *c)
{
    cfg_defaults(c);
    char line[1024];
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len >= sizeof line) {
            t_fail(__FILE__, __LINE__, "a line of %zu bytes", len);
            return -1;
        }
        memcpy(line, p, len);
        line[len] = 0;
        p += len + (nl != NULL);
        if (line[0] == '#')
            continue;
        char *eq = strstr(line, " = ");
        if (!eq) {
            t_fail(__FILE__, __LINE__, "not key = value: %s", line);
            return -1;
        }
        *eq = 0;
        pt_err e;
        if (cfg_set(c, line, eq + 3, &e) != PT_OK) {
            t_fail(__FILE__, __LINE__, "%s: %s", line, e.msg);
            return -1;
        }
    }
    return 0;
}

/* Field by field: the padding and the bytes after a string's end do not count. */
static void same_config(const run_config *a, const run_config *b)
{
    T_EQ_STR(a->data, b->data);
    T_EQ_STR(a->model, b->model);
    T_CHECK(a->width == b->width);
    T_EQ_STR(a->widths, b->widths);
    T_EQ_INT(a->init, b->init);
    T_CHECK(a->bn_momentum == b->bn_momentum);
    T_EQ_INT(a->image_size, b->image_size);
    T_EQ_INT(a->epochs, b->epochs);
    T_EQ_INT(a->replicas, b->replicas);
    T_EQ_INT(a->batch_per_replica, b->batch_per_replica);
    T_EQ_INT(a->grad_acc, b->grad_acc);
    T_EQ_INT(a->oversample, b->oversample);
    T_EQ_INT(a->optimizer, b->optimizer);
    T_CHECK(a->lr_start == b->lr_start);
    T_CHECK(a->lr_max == b->lr_max);
    T_CHECK(a->lr_end == b->lr_end);
    T_CHECK(a->warmup == b->warmup);
    T_EQ_INT(a->schedule, b->schedule);
    T_CHECK(a->lr_scaling == b->lr_scaling);
    T_CHECK(a->momentum == b->momentum);
    T_CHECK(a->weight_decay == b->weight_decay);
    T_CHECK(a->dropout == b->dropout);
    T_EQ_INT(a->freeze_backbone, b->freeze_backbone);
    T_EQ_INT(a->freeze_epochs, b->freeze_epochs);
    T_EQ_INT(a->input_norm, b->input_norm);
    T_EQ_INT(a->reinit, b->reinit);
    T_CHECK(a->backbone_lr_scale == b->backbone_lr_scale);
    T_EQ_STR(a->teacher, b->teacher);
    T_CHECK(a->distill_t == b->distill_t);
    T_CHECK(a->distill_alpha == b->distill_alpha);
    T_EQ_STR(a->teacher_data, b->teacher_data);
    T_EQ_INT(a->teacher_view, b->teacher_view);
    T_EQ_STR(a->augment, b->augment);
    T_CHECK(a->seed == b->seed);
    T_EQ_INT(a->deterministic, b->deterministic);
    T_EQ_INT(a->shuffle_buffer, b->shuffle_buffer);
    T_EQ_INT(a->workers, b->workers);
    T_EQ_INT(a->prefetch, b->prefetch);
    T_EQ_INT(a->precision, b->precision);
    T_EQ_INT(a->recompute, b->recompute);
    T_EQ_INT(a->stop_on_data_error, b->stop_on_data_error);
    T_EQ_INT(a->overlap, b->overlap);
    T_EQ_INT(a->checkpoint_every, b->checkpoint_every);
}

TEST(config_format_writes_the_same_text_and_reads_back)
{
    static char text[16384];
    run_config c, back;
    cfg_defaults(&c);
    T_REQUIRE(cfg_format(&c, text, sizeof text) == 0);
    T_EQ_STR(text, DEFAULT_TEXT);
    T_REQUIRE(parse_text(text, &back) == 0);
    same_config(&c, &back);

    other_config(&c);
    T_REQUIRE(cfg_format(&c, text, sizeof text) == 0);
    T_EQ_STR(text, OTHER_TEXT);
    T_REQUIRE(parse_text(text, &back) == 0);
    same_config(&c, &back);
    T_EQ_STR(back.out, "");     /* out and resume are not written */
    T_EQ_STR(back.resume, "");

    /* The other spellings of oversample, and a buffer one byte short. */
    c.oversample = -1;
    T_REQUIRE(cfg_format(&c, text, sizeof text) == 0);
    T_CHECK(strstr(text, "\noversample = max\n") != NULL);
    T_REQUIRE(parse_text(text, &back) == 0);
    T_EQ_INT(back.oversample, -1);
    size_t len = strlen(text);
    T_EQ_INT(cfg_format(&c, text, len), -1);
    T_EQ_INT(cfg_format(&c, text, len + 1), 0);
}

#define WIDTHS_WANTS "widths wants auto or 1 to 8 blocks, comma-separated: channel counts " \
                     "from 1 to 4096, Cs for a strided block, a for an average pool " \
                     "(a,32,64s,128), not '"

TEST(config_set_checks_values_with_the_messages_users_see)
{
    static const struct {
        const char *key, *value, *msg;
    } bad[] = {
        { "epochs", "0", "epochs wants a whole number from 1 to 1000, not '0'" },
        { "epochs", "3x", "epochs wants a whole number from 1 to 1000, not '3x'" },
        { "image-size", "16", "image-size must be 0 (the dataset's) or at least 32, not 16" },
        { "model", "resnet", "model wants small, mobilenetv2 or a .onnx file, not 'resnet'" },
        { "optimizer", "rmsprop", "optimizer wants adam or sgd, not 'rmsprop'" },
        { "schedule", "step", "schedule wants exp, linear or cosine, not 'step'" },
        { "warmup", "1.5", "warmup wants a number from 0 to 1, not '1.5'" },
        { "deterministic", "maybe", "deterministic wants yes or no, not 'maybe'" },
        { "deterministic", "auto", "deterministic wants yes or no, not 'auto'" },
        { "overlap", "maybe", "overlap wants yes, no or auto, not 'maybe'" },
        { "oversample", "lots",
          "oversample wants a target count, max (the largest class) or off, not 'lots'" },
        { "bogus", "1", "unknown option 'bogus'" },
        { "widths", "32,,64", WIDTHS_WANTS "32,,64'" },
        { "widths", "", WIDTHS_WANTS "'" },
        { "widths", "1,2,3,4,5,6,7,8,9", WIDTHS_WANTS "1,2,3,4,5,6,7,8,9'" },
        { "widths", "64,5000", WIDTHS_WANTS "64,5000'" },
        { "widths", "64,", WIDTHS_WANTS "64,'" },
        { "init", "glorot", "init wants he or torch, not 'glorot'" },
        { "input-norm", "signed",
          "input-norm wants auto, imagenet, unit, tf, raw or caffe, not 'signed'" },
    };
    run_config c;
    cfg_defaults(&c);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pt_err e;
        T_EQ_INT(cfg_set(&c, bad[i].key, bad[i].value, &e), PT_EUSAGE);
        T_EQ_STR(e.msg, bad[i].msg);
    }
    /* The other spellings. */
    static const struct {
        const char *key, *value;
    } good[] = {
        { "schedule", "exponential" }, { "oversample", "largest" }, { "oversample", "no" },
        { "deterministic", "off" },    { "freeze-backbone", "1" },  { "augment", "none" },
        { "image-size", "32" },        { "seed", "0" },             { "init", "he" },
        { "widths", "8" },             { "overlap", "on" },
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        T_CHECKF(cfg_set(&c, good[i].key, good[i].value, NULL) == PT_OK, "%s = %s", good[i].key,
                 good[i].value);
    T_EQ_INT(c.schedule, RUN_SCHED_EXP);
    T_EQ_INT(c.oversample, 0);
    T_EQ_INT(c.deterministic, 0);
    T_EQ_INT(c.freeze_backbone, 1);
    T_EQ_STR(c.augment, "none");
    T_EQ_INT(c.image_size, 32);
    T_EQ_INT(c.init, RUN_INIT_HE);
    T_EQ_STR(c.widths, "8");
    T_EQ_INT(c.overlap, 1);
    T_REQUIRE(cfg_set(&c, "overlap", "auto", NULL) == PT_OK);
    T_EQ_INT(c.overlap, -1);
    T_REQUIRE(cfg_set(&c, "init", "pytorch", NULL) == PT_OK);
    T_EQ_INT(c.init, RUN_INIT_TORCH);
}

/* --input-norm: each name is nn_norm's of the value the importer gets (run_config's
 * value - 1), "torch" is imagenet (Keras's name for it), and each reads back from the
 * run folder's config as it was. */
TEST(config_input_norm_names_are_the_importers)
{
    const cfg_option *o = cfg_find("input-norm");
    T_REQUIRE(o && o->kind == CFG_CHOICE && (o->where & CFG_FILE) && (o->where & CFG_DIALOG));
    run_config c, back;
    cfg_defaults(&c);
    T_EQ_INT(c.input_norm, RUN_NORM_AUTO);
    for (int k = 0; k < NN_NORM_COUNT; k++) {
        const char *name = nn_norm_name((nn_norm)k);
        T_REQUIRE(cfg_set(&c, "input-norm", name, NULL) == PT_OK);
        T_CHECKF((int)c.input_norm == k + 1, "%s: %d", name, (int)c.input_norm);
        static char text[16384];
        T_REQUIRE(cfg_format(&c, text, sizeof text) == 0);
        char line[64];
        snprintf(line, sizeof line, "\ninput-norm = %s\n", name);
        T_CHECKF(strstr(text, line) != NULL, "%s", line);
        cfg_defaults(&back);
        pt_err e;
        T_CHECKF(cfg_read_text(&back, text, strlen(text), "config", &e) == PT_OK, "%s", e.msg);
        T_EQ_INT(back.input_norm, c.input_norm);
    }
    T_REQUIRE(cfg_set(&c, "input-norm", "torch", NULL) == PT_OK);
    T_EQ_INT(c.input_norm, RUN_NORM_IMAGENET);
    T_REQUIRE(cfg_set(&c, "input-norm", "auto", NULL) == PT_OK);
    T_EQ_INT(c.input_norm, RUN_NORM_AUTO);
}

/* What the table's users take for granted: each field written in its kind's type,
 * defaults that parse, names found, choices that fit, dialog places 1, 2, ... */
TEST(config_table_rows_are_consistent)
{
    size_t n;
    const cfg_option *t = cfg_options(&n);
    T_REQUIRE(n > 20);
    int places[64] = { 0 };
    run_config c;
    for (size_t i = 0; i < n; i++) {
        const cfg_option *o = &t[i];
        size_t want = 0;
        switch (o->kind) {
        case CFG_INT: case CFG_BOOL: case CFG_BOOL_AUTO: case CFG_CHOICE: want = sizeof(int); break;
        case CFG_U64: want = sizeof(uint64_t); break;
        case CFG_OVERSAMPLE: want = sizeof(long long); break;
        case CFG_NUM: want = sizeof(double); break;
        case CFG_PATH: case CFG_MODEL: case CFG_AUGMENT: case CFG_WIDTHS: want = o->size > 1 ? o->size : 0; break;
        }
        T_CHECKF(o->size == want && o->offset + o->size <= sizeof c, "%s: size %zu", o->name,
                 o->size);
        T_CHECKF(cfg_find(o->name) == o, "%s not found", o->name);
        pt_err e;
        T_CHECKF(cfg_set(&c, o->name, o->def, &e) == PT_OK, "%s default: %s", o->name, e.msg);
        T_CHECKF(o->help && o->help[0], "%s: no help line", o->name);
        T_CHECKF((o->choices != NULL) == (o->kind == CFG_MODEL || o->kind == CFG_CHOICE),
                 "%s: choices", o->name);
        for (int k = 0; o->choices && o->choices[k]; k++)
            T_CHECKF(o->kind != CFG_MODEL || strlen(o->choices[k]) < o->size, "%s", o->name);
        if (o->kind == CFG_INT || o->kind == CFG_U64 || o->kind == CFG_OVERSAMPLE)
            T_CHECKF(o->lo == (double)(long long)o->lo && o->hi == (double)(long long)o->hi,
                     "%s: limits not whole", o->name);
        T_CHECKF(o->dialog >= 0 && o->dialog < 64, "%s", o->name);
        if (o->dialog > 0)
            places[o->dialog]++;
    }
    for (int p = 1, gap = 0; p < 64; p++) {
        T_CHECKF(places[p] <= 1, "dialog place %d taken twice", p);
        T_CHECKF(!gap || !places[p], "dialog place %d after a gap", p);
        gap |= !places[p];
    }
    T_CHECK(cfg_find("no-such-option") == NULL);

    /* The schedule's names are the trainer's, in its order. */
    const cfg_option *s = cfg_find("schedule");
    T_REQUIRE(s && s->choices);
    for (int k = 0; s->choices[k]; k++) {
        T_CHECKF(!strncmp(s->choices[k], sched_kind_name((sched_kind)k),
                          strcspn(s->choices[k], " ")),
                 "schedule %d", k);
        char words[64], *save = NULL;
        snprintf(words, sizeof words, "%s", s->choices[k]);
        for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save))
            T_CHECKF(sched_kind_parse(w) == k, "schedule %s", w);
    }
}

/* Every option: its value in the non-default config differs from the default (so
 * the pinned text covers it), and reads back from its own text unchanged. */
TEST(config_every_option_round_trips_through_its_text)
{
    size_t n;
    const cfg_option *t = cfg_options(&n);
    run_config def, other, back;
    cfg_defaults(&def);
    other_config(&other);
    cfg_defaults(&back);
    for (size_t i = 0; i < n; i++) {
        const cfg_option *o = &t[i];
        char a[4200], b[4200];
        T_REQUIRE(cfg_value(&def, o, a, sizeof a) == 0);
        T_REQUIRE(cfg_value(&other, o, b, sizeof b) == 0);
        T_CHECKF(strcmp(a, b) != 0, "%s: the same in both configs (%s)", o->name, a);
        pt_err e;
        T_CHECKF(cfg_set(&back, o->name, b, &e) == PT_OK, "%s = %s: %s", o->name, b, e.msg);
        T_REQUIRE(cfg_value(&back, o, a, sizeof a) == 0);
        T_EQ_STR(a, b);
    }
    same_config(&other, &back);
    T_EQ_STR(back.out, other.out);
    T_EQ_STR(back.resume, other.resume);
    char small[4];
    T_EQ_INT(cfg_value(&other, cfg_find("model"), small, sizeof small), -1);
    T_EQ_STR(small, "mob");
}

/* --widths auto: blocks until the map is 2 pixels a side (the input's side halves per
 * block), at least the four of 32-64-128-256, then 256 channels each; from 32 px (where
 * the four still fit after it) a 2x2 average pool first. */
TEST(config_widths_auto_adds_blocks_until_the_map_is_two_pixels)
{
    static const struct {
        int side, blocks;
    } cases[] = { { 16, 4 }, { 31, 4 }, { 32, 5 }, { 63, 5 }, { 64, 5 }, { 127, 5 }, { 128, 6 },
                  { 192, 6 }, { 255, 6 }, { 256, 7 }, { 512, 8 }, { 1024, 8 } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int w[RUN_MAX_BLOCKS], st[RUN_MAX_BLOCKS];
        int side = cases[i].side;
        int n = nn_parse_widths("auto", side, w, st, NULL);
        T_CHECKF(n == cases[i].blocks, "side %d: %d blocks, want %d", side, n,
                 cases[i].blocks);
        int stem = side >= 32;
        for (int b = 0; b < n; b++) {
            int want = stem && b == 0 ? 0 : b - stem < 4 ? 32 << (b - stem) : 256;
            int kind = stem && b == 0 ? NN_BLOCK_AVGPOOL : NN_BLOCK_POOL;
            T_CHECKF(w[b] == want && st[b] == kind, "side %d block %d: %d kind %d", side, b,
                     w[b], st[b]);
        }
        /* Each block halves the map: past the first four the last one leaves at least 2
         * pixels a side, and one more would not. */
        if (n > 4 + stem && n < RUN_MAX_BLOCKS)
            T_CHECKF(side >> n >= 2 && side >> (n + 1) < 2, "side %d, %d blocks", side, n);
    }
    int w[RUN_MAX_BLOCKS], st[RUN_MAX_BLOCKS];
    T_EQ_INT(nn_parse_widths("16, 32", 128, w, st, NULL), 2);
    T_CHECK(w[0] == 16 && w[1] == 32 && !st[0] && !st[1]);
    T_EQ_INT(nn_parse_widths("16s,32,64s", 128, w, st, NULL), 3);
    T_CHECK(w[0] == 16 && st[0] == NN_BLOCK_STRIDED && w[1] == 32 && st[1] == NN_BLOCK_POOL &&
            w[2] == 64 && st[2] == NN_BLOCK_STRIDED);
    T_EQ_INT(nn_parse_widths("a,32,a,64s", 128, w, st, NULL), 4);
    T_CHECK(w[0] == 0 && st[0] == NN_BLOCK_AVGPOOL && w[1] == 32 && st[1] == NN_BLOCK_POOL &&
            w[2] == 0 && st[2] == NN_BLOCK_AVGPOOL && w[3] == 64 && st[3] == NN_BLOCK_STRIDED);
    pt_err e;
    T_EQ_INT(nn_parse_widths("16ss", 128, w, st, &e), -1);
    T_EQ_INT(nn_parse_widths("s,32", 128, w, st, &e), -1);
    T_EQ_INT(nn_parse_widths("16x", 128, w, NULL, &e), -1);
    static const char *const bad_a[] = { "aa,32", "a32", "as,32", "32a", "a,", "A,32", ",a" };
    for (size_t i = 0; i < sizeof bad_a / sizeof bad_a[0]; i++)
        T_CHECKF(nn_parse_widths(bad_a[i], 128, w, st, &e) == -1 && e.code == PT_EUSAGE,
                 "'%s' accepted", bad_a[i]);
}

/* ---- config files (cfg_read_text, cfg_read_file) ----------------------------------- */

TEST(config_file_text_reads_lines_comments_and_spaces)
{
    static const char text[] = "# a comment\n"
                               "\n"
                               "  epochs=2   # two\n"
                               "\tlr-start = 1e-5\r\n"
                               "data = /tmp/a b=c\n"
                               "schedule = cosine"; /* no newline at the end */
    run_config c;
    cfg_defaults(&c);
    pt_err e;
    T_REQUIRE(cfg_read_text(&c, text, sizeof text - 1, "my.conf", &e) == PT_OK);
    T_EQ_INT(c.epochs, 2);
    T_CHECK(c.lr_start == 1e-5);
    T_EQ_STR(c.data, "/tmp/a b=c");
    T_EQ_INT(c.schedule, RUN_SCHED_COSINE);
    /* The run folder's config reads back to the same configuration. */
    static char out[16384];
    run_config back;
    other_config(&c);
    T_REQUIRE(cfg_format(&c, out, sizeof out) == 0);
    cfg_defaults(&back);
    T_REQUIRE(cfg_read_text(&back, out, strlen(out), "run/config", &e) == PT_OK);
    same_config(&c, &back);
}

TEST(config_file_errors_name_the_file_and_the_line)
{
    static const struct {
        const char *text;
        size_t len;             /* 0: strlen */
        const char *msg;
    } bad[] = {
        { "epochs = 2\nnonsense\n", 0, "my.conf: line 2: expected key = value" },
        { "\n\nepochs = 0\n", 0, "my.conf: line 3: epochs wants a whole number from 1 to" },
        { "colour = red\n", 0, "my.conf: line 1: unknown option 'colour'" },
        /* A NUL byte is refused, not taken as the file's end. */
        { "epochs = 2\nseed = 1\0\nepochs = 3\n", 31, "my.conf: line 2: a NUL byte" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run_config c;
        cfg_defaults(&c);
        pt_err e;
        size_t len = bad[i].len ? bad[i].len : strlen(bad[i].text);
        T_EQ_INT(cfg_read_text(&c, bad[i].text, len, "my.conf", &e), PT_EUSAGE);
        T_CHECKF(strncmp(e.msg, bad[i].msg, strlen(bad[i].msg)) == 0, "'%s'", e.msg);
    }
    run_config c;
    pt_err e;
    T_EQ_INT(cfg_read_file(&c, "/nonexistent/petal.conf", &e), PT_EIO);
    T_CHECKF(strstr(e.msg, "/nonexistent/petal.conf: cannot open") != NULL, "'%s'", e.msg);
}

/* Found by fuzzing (tests/fuzz/regress/config/): a number with more than six
 * significant digits was written to the run folder's config with %g's six, so a
 * resumed run read back another value (lr-start 4096.0001 came back as 4096). */
TEST(config_numbers_read_back_exactly_from_the_run_folder_config)
{
    static const char text[] = "lr-start = 04096.0001\nlr-max = 0.0012345678\n"
                               "warmup = 0.1\nbn-momentum = 0.99\n";
    run_config c, back;
    cfg_defaults(&c);
    pt_err e;
    T_REQUIRE(cfg_read_text(&c, text, sizeof text - 1, "my.conf", &e) == PT_OK);
    static char out[16384];
    T_REQUIRE(cfg_format(&c, out, sizeof out) == 0);
    T_CHECKF(strstr(out, "\nlr-start = 4096.0001\n") && strstr(out, "\nlr-max = 0.0012345678\n"),
             "%s", out);
    /* Values that fit in six digits are written as before. */
    T_CHECK(strstr(out, "\nwarmup = 0.1\n") && strstr(out, "\nbn-momentum = 0.99\n") &&
            strstr(out, "\nlr-end = 0.0001\n"));
    cfg_defaults(&back);
    T_REQUIRE(cfg_read_text(&back, out, strlen(out), "run/config", &e) == PT_OK);
    T_CHECK(back.lr_start == c.lr_start && back.lr_max == c.lr_max);
    same_config(&c, &back);
    /* A double that needs all 17 digits. */
    char v[64];
    c.lr_max = 0.1 + 0.2;
    T_REQUIRE(cfg_value(&c, cfg_find("lr-max"), v, sizeof v) == 0);
    T_EQ_STR(v, "0.30000000000000004");
}

/* The modules that read --augment and --widths check them for the table (their
 * checks registered before main): cfg_set refuses with their messages, and the
 * augmentation default is the table's. */
TEST(config_checks_of_the_modules_that_read_the_values_are_registered)
{
    run_config c;
    cfg_defaults(&c);
    pt_err e;
    T_EQ_INT(cfg_set(&c, "augment", "bogus:0.5", &e), PT_EUSAGE);
    T_CHECKF(strstr(e.msg, "augment: unknown op 'bogus'") == e.msg, "%s", e.msg);
    T_EQ_STR(c.augment, cfg_find("augment")->def);
    T_EQ_STR(aug_default_spec(), cfg_find("augment")->def);
    pt_err e2;
    T_EQ_INT(aug_check_spec("bogus:0.5", &e2), PT_EUSAGE);
    T_EQ_STR(e.msg, e2.msg);
    T_EQ_INT(cfg_set(&c, "widths", "64,5000", &e), PT_EUSAGE);
    T_EQ_INT(nn_check_widths("64,5000", &e2), PT_EUSAGE);
    T_EQ_STR(e.msg, e2.msg);
    T_EQ_INT(nn_check_widths("a,32,64s", NULL), PT_OK);
}

/* Issue 42: --widths auto's cost grows with the image and never with its shrinking (a
 * pool only from 128 px made small cost 313 MFLOP an image at 96 px against 139 at 128).
 * Every side from 32 to 160 px, every 8th to 512, forward and forward+backward. */
TEST(config_widths_auto_cost_never_grows_as_the_image_shrinks)
{
    double prev_f = 0, prev_fb = 0;
    int slow = t_slow_mode(); /* under valgrind every 16th side: the builds are the cost */
    for (int side = 32; side <= 512; side += slow ? 16 : side < 160 ? 1 : 8) {
        int w[RUN_MAX_BLOCKS], st[RUN_MAX_BLOCKS];
        int n = nn_parse_widths("auto", side, w, st, NULL);
        T_REQUIRE(n > 0);
        pt_err e = { 0 };
        nn_model *m = nn_build_small_widths(side, side, 104, 0.f, w, st, n,
                                            NN_SMALL_CONVS_PER_BLOCK, &e);
        T_REQUIRE(m);
        double f = nn_flops(m, 1, 0), fb = nn_flops(m, 1, 1);
        nn_model_free(m);
        T_CHECKF(f >= prev_f && fb >= prev_fb,
                 "%d px costs %.1f MFLOP forward (%.1f with backward), %d px %.1f (%.1f)", side,
                 f * 1e-6, fb * 1e-6, side - 1, prev_f * 1e-6, prev_fb * 1e-6);
        prev_f = f, prev_fb = fb;
    }
}
