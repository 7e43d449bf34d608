/* config — the training options (see config.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "data/augment.h"
#include "train/schedule.h"

/* The config's schedule names are the trainer's: the values are passed across. */
_Static_assert(RUN_SCHED_EXP == (int)SCHED_EXP && RUN_SCHED_LINEAR == (int)SCHED_LINEAR &&
                   RUN_SCHED_COSINE == (int)SCHED_COSINE,
               "run_schedule and sched_kind must agree");

void cfg_defaults(run_config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->model, sizeof c->model, "small");
    c->width = 1.0;
    c->image_size = 0;
    c->epochs = 10;
    c->replicas = 0;
    c->batch_per_replica = 16;
    c->grad_acc = 1;
    c->oversample = 0;
    c->optimizer = RUN_OPT_ADAM;
    c->lr_start = 1e-4;
    c->lr_max = 2e-3;
    c->lr_end = 1e-4;
    c->warmup = 0.1;
    c->lr_scaling = 1.0;
    c->schedule = RUN_SCHED_EXP;
    c->momentum = 0.9;
    c->weight_decay = 0.0;
    c->dropout = 0.2;
    c->freeze_backbone = 0;
    util_copy(c->augment, sizeof c->augment, aug_default_spec());
    c->seed = 42;
    c->deterministic = 1;
    c->shuffle_buffer = 2048;
    c->workers = 0;
    c->prefetch = 4;
    c->stop_on_data_error = 0;
    c->checkpoint_every = 1;
}

static const char *const KEYS[] = {
    "data", "out", "resume", "model", "width", "image-size", "epochs", "replicas",
    "batch-per-replica", "grad-acc", "oversample", "optimizer", "lr-start", "lr-max", "lr-end",
    "warmup", "schedule", "lr-scaling", "momentum", "weight-decay", "dropout",
    "freeze-backbone", "augment", "seed", "deterministic", "shuffle-buffer", "workers",
    "prefetch", "stop-on-data-error", "checkpoint-every",
};

size_t cfg_keys(const char **keys, size_t max)
{
    size_t n = sizeof KEYS / sizeof KEYS[0];
    for (size_t i = 0; i < n && i < max; i++)
        keys[i] = KEYS[i];
    return n;
}

static int parse_int(const char *key, const char *v, long long lo, long long hi, long long *out,
                     pt_err *e)
{
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || x < lo || x > hi)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "%s wants a whole number from %lld to %lld, not '%s'", key, lo, hi, v);
    *out = x;
    return PT_OK;
}

static int parse_num(const char *key, const char *v, double lo, double hi, double *out, pt_err *e)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= lo && x <= hi))
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "%s wants a number from %g to %g, not '%s'", key, lo, hi, v);
    *out = x;
    return PT_OK;
}

static int parse_bool(const char *key, const char *v, int *out, pt_err *e)
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
                   "%s wants yes or no, not '%s'", key, v);
}

static int set_path(char *dst, size_t n, const char *key, const char *v, pt_err *e)
{
    if (strlen(v) >= n)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "%s: path too long", key);
    snprintf(dst, n, "%s", v);
    return PT_OK;
}

int cfg_set(run_config *c, const char *key, const char *v, pt_err *e)
{
    long long i;
    double d;
    int rc = PT_OK;
    if (!strcmp(key, "data"))
        return set_path(c->data, sizeof c->data, key, v, e);
    if (!strcmp(key, "out"))
        return set_path(c->out, sizeof c->out, key, v, e);
    if (!strcmp(key, "resume"))
        return set_path(c->resume, sizeof c->resume, key, v, e);
    if (!strcmp(key, "model")) {
        if (strcmp(v, "small") && strcmp(v, "mobilenetv2"))
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "model wants small or mobilenetv2, not '%s'", v);
        util_copy(c->model, sizeof c->model, v);
        return PT_OK;
    }
    if (!strcmp(key, "width")) {
        if ((rc = parse_num(key, v, 0.1, 4.0, &d, e)) == PT_OK)
            c->width = d;
        return rc;
    }
    if (!strcmp(key, "image-size")) {
        if ((rc = parse_int(key, v, 0, 1024, &i, e)) == PT_OK) {
            if (i != 0 && i < 32)
                return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                               "image-size must be 0 (the dataset's) or at least 32, not %lld", i);
            c->image_size = (int)i;
        }
        return rc;
    }
    if (!strcmp(key, "epochs")) {
        if ((rc = parse_int(key, v, 1, RUN_MAX_EPOCHS, &i, e)) == PT_OK)
            c->epochs = (int)i;
        return rc;
    }
    if (!strcmp(key, "replicas")) {
        if ((rc = parse_int(key, v, 0, RUN_MAX_REPLICAS, &i, e)) == PT_OK)
            c->replicas = (int)i;
        return rc;
    }
    if (!strcmp(key, "batch-per-replica")) {
        if ((rc = parse_int(key, v, 1, 4096, &i, e)) == PT_OK)
            c->batch_per_replica = (int)i;
        return rc;
    }
    if (!strcmp(key, "grad-acc")) {
        if ((rc = parse_int(key, v, 1, 1024, &i, e)) == PT_OK)
            c->grad_acc = (int)i;
        return rc;
    }
    if (!strcmp(key, "oversample")) {
        if (!strcmp(v, "off") || !strcmp(v, "no")) {
            c->oversample = 0;
            return PT_OK;
        }
        if (!strcmp(v, "max") || !strcmp(v, "largest")) {
            c->oversample = -1;
            return PT_OK;
        }
        if ((rc = parse_int(key, v, 0, 1LL << 40, &i, e)) == PT_OK)
            c->oversample = i;
        else
            err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                    "oversample wants a target count, max (the largest class) or off, not '%s'", v);
        return rc;
    }
    if (!strcmp(key, "optimizer")) {
        if (!strcmp(v, "adam"))
            c->optimizer = RUN_OPT_ADAM;
        else if (!strcmp(v, "sgd"))
            c->optimizer = RUN_OPT_SGD;
        else
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "optimizer wants adam or sgd, not '%s'", v);
        return PT_OK;
    }
    struct {
        const char *k;
        double *dst, lo, hi;
    } nums[] = {
        { "lr-start", &c->lr_start, 0, 1e9 },  { "lr-max", &c->lr_max, 0, 1e9 },
        { "lr-end", &c->lr_end, 0, 1e9 },      { "warmup", &c->warmup, 0, 1 },
        { "lr-scaling", &c->lr_scaling, 0, 1e4 }, { "momentum", &c->momentum, 0, 0.9999 },
        { "weight-decay", &c->weight_decay, 0, 1 }, { "dropout", &c->dropout, 0, 0.95 },
    };
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++)
        if (!strcmp(key, nums[k].k)) {
            if ((rc = parse_num(key, v, nums[k].lo, nums[k].hi, &d, e)) == PT_OK)
                *nums[k].dst = d;
            return rc;
        }
    if (!strcmp(key, "schedule")) {
        int k = sched_kind_parse(v);
        if (k < 0)
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "schedule wants exp, linear or cosine, not '%s'", v);
        c->schedule = (run_schedule)k;
        return PT_OK;
    }
    if (!strcmp(key, "freeze-backbone"))
        return parse_bool(key, v, &c->freeze_backbone, e);
    if (!strcmp(key, "deterministic"))
        return parse_bool(key, v, &c->deterministic, e);
    if (!strcmp(key, "stop-on-data-error"))
        return parse_bool(key, v, &c->stop_on_data_error, e);
    if (!strcmp(key, "augment")) {
        if (strcmp(v, "none") != 0) {
            aug_chain *ch;
            if ((rc = aug_parse(v, &ch, e)) != PT_OK)
                return rc;
            aug_free(ch);
        }
        if (strlen(v) >= sizeof c->augment)
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "augment: too long");
        util_copy(c->augment, sizeof c->augment, v);
        return PT_OK;
    }
    if (!strcmp(key, "seed")) {
        if ((rc = parse_int(key, v, 0, (1LL << 62), &i, e)) == PT_OK)
            c->seed = (uint64_t)i;
        return rc;
    }
    if (!strcmp(key, "shuffle-buffer")) {
        if ((rc = parse_int(key, v, 0, 1 << 22, &i, e)) == PT_OK)
            c->shuffle_buffer = (int)i;
        return rc;
    }
    if (!strcmp(key, "workers")) {
        if ((rc = parse_int(key, v, 0, 64, &i, e)) == PT_OK)
            c->workers = (int)i;
        return rc;
    }
    if (!strcmp(key, "prefetch")) {
        if ((rc = parse_int(key, v, 1, 256, &i, e)) == PT_OK)
            c->prefetch = (int)i;
        return rc;
    }
    if (!strcmp(key, "checkpoint-every")) {
        if ((rc = parse_int(key, v, 1, RUN_MAX_EPOCHS, &i, e)) == PT_OK)
            c->checkpoint_every = (int)i;
        return rc;
    }
    return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "unknown option '%s'", key);
}

int cfg_format(const run_config *c, char *buf, size_t n)
{
    const char *opt = c->optimizer == RUN_OPT_SGD ? "sgd" : "adam";
    const char *sch = sched_kind_name((sched_kind)c->schedule);
    char os[32];
    if (c->oversample < 0)
        snprintf(os, sizeof os, "max");
    else if (c->oversample == 0)
        snprintf(os, sizeof os, "off");
    else
        snprintf(os, sizeof os, "%lld", c->oversample);
    int k = snprintf(buf, n,
                     "# petal-tui configuration (keys as the long options; see petal-tui(1))\n"
                     "data = %s\nmodel = %s\nwidth = %g\nimage-size = %d\nepochs = %d\n"
                     "replicas = %d\nbatch-per-replica = %d\ngrad-acc = %d\noversample = %s\n"
                     "optimizer = %s\nlr-start = %g\nlr-max = %g\nlr-end = %g\nwarmup = %g\n"
                     "schedule = %s\nlr-scaling = %g\nmomentum = %g\nweight-decay = %g\n"
                     "dropout = %g\nfreeze-backbone = %s\naugment = %s\nseed = %llu\n"
                     "deterministic = %s\nshuffle-buffer = %d\nworkers = %d\nprefetch = %d\n"
                     "stop-on-data-error = %s\ncheckpoint-every = %d\n",
                     c->data, c->model, c->width, c->image_size, c->epochs, c->replicas,
                     c->batch_per_replica, c->grad_acc, os, opt, c->lr_start, c->lr_max,
                     c->lr_end, c->warmup, sch, c->lr_scaling, c->momentum, c->weight_decay,
                     c->dropout, c->freeze_backbone ? "yes" : "no", c->augment,
                     (unsigned long long)c->seed, c->deterministic ? "yes" : "no",
                     c->shuffle_buffer, c->workers, c->prefetch,
                     c->stop_on_data_error ? "yes" : "no", c->checkpoint_every);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

