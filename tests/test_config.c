/* The training options: the run folder's config text, byte for byte (a resumed run
 * reads it back, and users diff it), and every option read back from it. */
#include "tests/t.h"

#include "engine.h"

static const char DEFAULT_TEXT[] =
    "# petal-tui configuration (keys as the long options; see petal-tui(1))\n"
    "data = \n"
    "model = small\n"
    "width = 1\n"
    "image-size = 0\n"
    "epochs = 10\n"
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
    "freeze-backbone = no\n"
    "augment = perspective:0.25,flip:0.5,affine:0.15,color:0.15\n"
    "seed = 42\n"
    "deterministic = yes\n"
    "shuffle-buffer = 2048\n"
    "workers = 0\n"
    "prefetch = 4\n"
    "stop-on-data-error = no\n"
    "checkpoint-every = 1\n";

static const char OTHER_TEXT[] =
    "# petal-tui configuration (keys as the long options; see petal-tui(1))\n"
    "data = /data/petals/tfrecords-jpeg-192x192\n"
    "model = mobilenetv2\n"
    "width = 0.75\n"
    "image-size = 192\n"
    "epochs = 30\n"
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
    "freeze-backbone = yes\n"
    "augment = perspective:0.35,flip:0.5,mixup:0.2\n"
    "seed = 12345678901234\n"
    "deterministic = no\n"
    "shuffle-buffer = 4096\n"
    "workers = 3\n"
    "prefetch = 8\n"
    "stop-on-data-error = yes\n"
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
    c->image_size = 192;
    c->epochs = 30;
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
    c->freeze_backbone = 1;
    snprintf(c->augment, sizeof c->augment, "perspective:0.35,flip:0.5,mixup:0.2");
    c->seed = 12345678901234ull;
    c->deterministic = 0;
    c->shuffle_buffer = 4096;
    c->workers = 3;
    c->prefetch = 8;
    c->stop_on_data_error = 1;
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
    T_EQ_STR(a->augment, b->augment);
    T_CHECK(a->seed == b->seed);
    T_EQ_INT(a->deterministic, b->deterministic);
    T_EQ_INT(a->shuffle_buffer, b->shuffle_buffer);
    T_EQ_INT(a->workers, b->workers);
    T_EQ_INT(a->prefetch, b->prefetch);
    T_EQ_INT(a->stop_on_data_error, b->stop_on_data_error);
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

TEST(config_set_checks_values_with_the_messages_users_see)
{
    static const struct {
        const char *key, *value, *msg;
    } bad[] = {
        { "epochs", "0", "epochs wants a whole number from 1 to 1000, not '0'" },
        { "epochs", "3x", "epochs wants a whole number from 1 to 1000, not '3x'" },
        { "image-size", "16", "image-size must be 0 (the dataset's) or at least 32, not 16" },
        { "model", "resnet", "model wants small or mobilenetv2, not 'resnet'" },
        { "optimizer", "rmsprop", "optimizer wants adam or sgd, not 'rmsprop'" },
        { "schedule", "step", "schedule wants exp, linear or cosine, not 'step'" },
        { "warmup", "1.5", "warmup wants a number from 0 to 1, not '1.5'" },
        { "deterministic", "maybe", "deterministic wants yes or no, not 'maybe'" },
        { "oversample", "lots",
          "oversample wants a target count, max (the largest class) or off, not 'lots'" },
        { "bogus", "1", "unknown option 'bogus'" },
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
        { "image-size", "32" },        { "seed", "0" },
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
}
