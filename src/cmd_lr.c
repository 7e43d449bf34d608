/* petal-tui lr-schedule: the learning rate per update, as a table. */
#include <stdio.h>
#include <string.h>

#include "src/cli.h"
#include "engine.h"

int cmd_lr_schedule(int argc, char **argv)
{
    double lr_start = 1e-4, lr_max = 2e-3, lr_end = 1e-4, warmup = 0.1, scaling = 1.0;
    long long epochs = 10, per_epoch = 100, rows = 25;
    int kind = eng_lr_kind_parse("exp");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        double d;
        long long n;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: petal-tui lr-schedule [--epochs 10] [--updates-per-epoch 100]\n"
                   "        [--lr-start 1e-4] [--lr-max 2e-3] [--lr-end 1e-4] [--warmup 0.1]\n"
                   "        [--schedule exp|linear|cosine] [--lr-scaling 1] [--rows 25]\n"
                   "Prints the learning rate of the updates of a run: linear warmup from\n"
                   "lr-start to lr-max over the warmup fraction, then decay to lr-end,\n"
                   "times lr-scaling. --rows 0 prints every update.\n");
            return 0;
        }
        static const char *const options[] = { "--lr-start", "--lr-max", "--lr-end", "--warmup",
                                               "--lr-scaling", "--epochs", "--updates-per-epoch",
                                               "--rows", "--schedule", "--help", NULL };
        if (!cli_is_option(a, options)) {
            cli_unknown("lr-schedule", a, options);
            return 1;
        }
        if (!v) {
            fprintf(stderr, "petal-tui: lr-schedule: %s needs a value\n", a);
            return 1;
        }
        i++;
        struct {
            const char *name;
            double *dst;
            double lo, hi;
        } nums[] = { { "--lr-start", &lr_start, 0, 10 }, { "--lr-max", &lr_max, 0, 10 },
                     { "--lr-end", &lr_end, 0, 10 },     { "--warmup", &warmup, 0, 1 },
                     { "--lr-scaling", &scaling, 0, 1e4 } };
        struct {
            const char *name;
            long long *dst, lo, hi;
        } ints[] = { { "--epochs", &epochs, 1, 100000 },
                     { "--updates-per-epoch", &per_epoch, 1, 100000000 },
                     { "--rows", &rows, 0, 100000000 } };
        int known = 0;
        for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++)
            if (!strcmp(a, nums[k].name)) {
                if (cli_double(a, v, nums[k].lo, nums[k].hi, &d))
                    return 1;
                *nums[k].dst = d;
                known = 1;
            }
        for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
            if (!strcmp(a, ints[k].name)) {
                if (cli_int(a, v, ints[k].lo, ints[k].hi, &n))
                    return 1;
                *ints[k].dst = n;
                known = 1;
            }
        if (!strcmp(a, "--schedule")) {
            if ((kind = eng_lr_kind_parse(v)) < 0) {
                fprintf(stderr, "petal-tui: --schedule wants exp, linear or cosine\n");
                return 1;
            }
            known = 1;
        }
        if (!known) {
            fprintf(stderr, "petal-tui: lr-schedule: unknown option '%s'\n", a);
            return 1;
        }
    }
    long long total = epochs * per_epoch;
    eng_lr_schedule s;
    eng_lr_init(&s, kind, lr_start, lr_max, lr_end, warmup, scaling, total);
    printf("# %s schedule: %lld updates (%lld epochs x %lld), warmup %lld updates, scaling x%g\n",
           eng_lr_kind_name(kind), total, epochs, per_epoch, s.warmup_steps, scaling);
    printf("%10s %7s %14s\n", "update", "epoch", "lr");
    long long step = rows > 0 ? (total + rows - 1) / rows : 1;
    if (step < 1)
        step = 1;
    for (long long u = 0; u < total; u += step) {
        /* Always show the end of the warmup, where the curve turns. */
        if (s.warmup_steps > 0 && u > s.warmup_steps && u - step < s.warmup_steps)
            printf("%10lld %7lld %14.6e\n", s.warmup_steps, s.warmup_steps / per_epoch + 1,
                   eng_lr_at(&s, s.warmup_steps));
        printf("%10lld %7lld %14.6e\n", u, u / per_epoch + 1, eng_lr_at(&s, u));
    }
    printf("%10lld %7lld %14.6e\n", total - 1, (total - 1) / per_epoch + 1, eng_lr_at(&s, total - 1));
    return 0;
}
