/* petal-tui lr-find [training options] [--plot FILE.png] [--csv FILE]: the
 * learning-rate finder (engine.h's eng_lrfind_*) on the run the same options would
 * start, headless. Prints a row every few updates, the suggestion and a command
 * line that uses it; writes no run folder. Exit status: 0 a suggestion, 1 usage,
 * 2 the finder failed (data, model, a file not written), 4 no suggestion (the loss
 * never fell), 130 interrupted. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "engine.h"
#include "src/args.h"
#include "src/cli.h"

#define ROW_EVERY 10

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
    got_signal = sig;
}

static void usage(void)
{
    printf("usage: petal-tui lr-find [TRAINING OPTIONS] [--plot FILE.png] [--csv FILE]\n"
           "fastai's learning-rate finder on the run the training options describe (its\n"
           "data, model, replicas, batch, augmentation, optimizer, precision, freeze\n"
           "settings): 100 updates with the rate growing exponentially from 1e-7 to 10,\n"
           "stopping when the smoothed loss passes 4x its best. Prints the loss every %d\n"
           "updates, the suggested --lr-max (fastai's valley rule, divided by --lr-scaling)\n"
           "and the steepest point, and a command line that trains with it. Nothing is\n"
           "written in runs/: the finder's model is its own and thrown away.\n"
           "  --plot FILE.png   the smoothed loss against the rate (log axis), both\n"
           "                    suggestions marked\n"
           "  --csv FILE        update,lr,loss,smoothed, one row per update\n"
           "Exit status: 0 a suggestion, 1 usage, 2 failed, 4 no suggestion (the loss\n"
           "never fell), 130 interrupted. Training options: petal-tui --help.\n",
           ROW_EVERY);
}

/* An argument as a shell reads it back: single-quoted unless plain. */
static void print_arg(const char *a)
{
    int plain = a[0] != '\0';
    for (const char *p = a; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=:,+-@%",
                    *p))
            plain = 0;
    if (plain) {
        printf(" %s", a);
        return;
    }
    printf(" '");
    for (const char *p = a; *p; p++)
        printf(*p == '\'' ? "'\\''" : "%c", *p);
    printf("'");
}

/* The command that trains with the suggestion: the training options as given, but
 * --lr-max. */
static void print_command(int argc, char **argv, double lr_max)
{
    printf("  petal-tui --headless");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--lr-max")) {
            i++;
            continue;
        }
        if (strncmp(argv[i], "--lr-max=", 9) && strcmp(argv[i], "--headless"))
            print_arg(argv[i]);
    }
    printf(" --lr-max %.2e\n", lr_max);
}

static int write_csv(const run_lrfind *f, const char *path)
{
    FILE *fp = fopen(path, "w");
    if (!fp) {
        fprintf(stderr, "petal-tui: lr-find: %s: cannot write the CSV\n", path);
        return 2;
    }
    fprintf(fp, "update,lr,loss,smoothed\n");
    for (int i = 0; i < f->n; i++)
        fprintf(fp, "%d,%.9g,%.9g,%.9g\n", i + 1, f->lr[i], f->loss[i], f->smooth[i]);
    if (fclose(fp) != 0) {
        fprintf(stderr, "petal-tui: lr-find: %s: cannot write the CSV\n", path);
        return 2;
    }
    return 0;
}

/* Runs the finder to its end: rows every ROW_EVERY updates, the engine's log on
 * stderr; a signal cancels it. */
static void follow(eng *g, run_lrfind *f)
{
    char line[1200];
    int shown = 0, stopping = 0;
    printf("%6s  %-9s  %-9s  %s\n", "update", "lr", "loss", "smoothed");
    for (;;) {
        usleep(100000);
        while (eng_log_pop(g, line, sizeof line))
            fprintf(stderr, "%s\n", line);
        if (got_signal && !stopping) {
            stopping = 1;
            eng_lrfind_stop(g);
        }
        eng_lrfind_get(g, f);
        int ended = f->state != RUN_LRF_PREPARING && f->state != RUN_LRF_RUNNING;
        for (; shown < f->n; shown++)
            if ((shown + 1) % ROW_EVERY == 0 || shown == 0 || (ended && shown == f->n - 1))
                printf("%6d  %-9.2e  %-9.4f  %.4f\n", shown + 1, f->lr[shown], f->loss[shown],
                       f->smooth[shown]);
        fflush(stdout);
        if (ended)
            break;
    }
    while (eng_log_pop(g, line, sizeof line))
        fprintf(stderr, "%s\n", line);
}

/* The finder's end: the suggestion and the files. The exit status. */
static int report(const run_lrfind *f, int argc, char **argv, const char *plot, const char *csv)
{
    if (f->state == RUN_LRF_STOPPED) {
        fprintf(stderr, "petal-tui: lr-find: interrupted after %d updates\n", f->n);
        return 130;
    }
    if (f->state != RUN_LRF_DONE) {
        fprintf(stderr, "petal-tui: %s\n", f->message);
        return 2;
    }
    if (f->why_end == 1)
        printf("stopped at update %d: the smoothed loss passed 4x its best\n", f->n);
    else if (f->why_end == 2)
        printf("stopped at update %d: the loss was not finite\n", f->n + 1);
    pt_err e;
    int rc = csv ? write_csv(f, csv) : 0;
    if (rc == 0 && plot && f->n >= 2 && eng_lrfind_plot(f, plot, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: lr-find: %s\n", e.msg);
        rc = 2;
    }
    if (!f->found) {
        fprintf(stderr,
                "petal-tui: lr-find: no suggestion: the smoothed loss never fell over the %d "
                "updates (a rate too low for this data? too few examples per update?)\n",
                f->n);
        return rc ? rc : 4;
    }
    printf("suggested --lr-max %.2e (valley); steepest %.2e\n", f->lr_max, f->steep);
    print_command(argc, argv, f->lr_max);
    if (rc == 0 && plot)
        printf("plot: %s\n", plot);
    return rc;
}

int cmd_lrfind(int argc, char **argv)
{
    const char *plot = NULL, *csv = NULL;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest)
        return 2;
    int n = 0;
    rest[n++] = "petal-tui";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage();
            free(rest);
            return 0;
        }
        if (!strcmp(argv[i], "--plot") || !strcmp(argv[i], "--csv")) {
            if (i + 1 >= argc || !argv[i + 1][0]) {
                fprintf(stderr, "petal-tui: lr-find: %s needs a file name\n", argv[i]);
                free(rest);
                return 1;
            }
            const char **slot = argv[i][2] == 'p' ? &plot : &csv;
            *slot = argv[++i];
            continue;
        }
        rest[n++] = argv[i];
    }
    args a;
    int rc = args_parse(n, rest, &a);
    if (rc == 0 && (a.n_compare || a.open || a.tty)) {
        fprintf(stderr, "petal-tui: lr-find: --%s is for the workbench\n",
                a.open ? "open" : a.tty ? "tty" : "compare");
        rc = 1;
    }
    if (rc != 0) {
        free(rest);
        return 1;
    }
    /* The finder does not open a teacher (its prepare steps leave it out: a pass over
     * the training set would cost more than its 100 updates): said, so that the rate
     * is not taken for the distilled loss's. */
    if (a.cfg.teacher[0])
        printf("lr-find: --teacher is ignored: the rate is found on the labels' loss\n");
    eng *g;
    pt_err e;
    if ((rc = eng_create(&a.cfg, &g, &e)) == PT_OK && (rc = eng_lrfind_start(g, &e)) != PT_OK)
        eng_destroy(g);
    if (rc != PT_OK) {
        fprintf(stderr, "petal-tui: lr-find: %s\n", e.msg);
        free(rest);
        return rc == PT_EUSAGE ? 1 : 2;
    }
    for (const char *w = eng_warnings(g); *w;) {
        int len = (int)strcspn(w, "\n");
        fprintf(stderr, "petal-tui: %.*s\n", len, w);
        w += len + (w[len] == '\n');
    }
    cli_catch_stops(on_signal, 0);
    static run_lrfind f;
    follow(g, &f);
    eng_destroy(g);
    rc = report(&f, n, rest, plot, csv);
    free(rest);
    return rc;
}
