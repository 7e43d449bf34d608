/* petal-tui: the entry point. Subcommands first; otherwise the training options
 * and either the workbench (default) or the headless runner (--headless). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cpu.h"
#include "src/args.h"
#include "src/blas_core.h"
#include "src/cli.h"
#include "src/headless.h"
#include "engine.h"
#include "ui/ui.h"

/* --help's option rows: "--name ARG" from column 2, the help line and the default
 * from HELP_COL, wrapped at word breaks to stay within HELP_WIDTH columns. */
enum { HELP_COL = 27, HELP_WIDTH = 79 };

/* The words of s from column *x, a new line at HELP_COL when the next does not fit. */
static void help_words(const char *s, int *x)
{
    for (s += strspn(s, " "); *s; s += strspn(s, " ")) {
        int len = (int)strcspn(s, " ");
        int first = *x <= HELP_COL;
        if (!first && *x + 1 + len > HELP_WIDTH) {
            printf("\n%*s", HELP_COL, "");
            *x = HELP_COL;
            first = 1;
        }
        printf("%s%.*s", first ? "" : " ", len, s);
        *x += !first + len;
        s += len;
    }
}

static void help_row(const char *lhs, const char *text, const char *dflt)
{
    int x = printf("  %s", lhs);
    if (x >= HELP_COL) {
        printf("\n");
        x = 0;
    }
    printf("%*s", HELP_COL - x, "");
    x = HELP_COL;
    help_words(text, &x);
    if (dflt) {
        char unit[640];
        int len = snprintf(unit, sizeof unit, "(default: %s)", dflt);
        /* The default whole on the next line rather than split, where it fits there. */
        if (x > HELP_COL && x + 1 + len > HELP_WIDTH && HELP_COL + len <= HELP_WIDTH) {
            printf("\n%*s", HELP_COL, "");
            x = HELP_COL;
        }
        help_words(unit, &x);
    }
    printf("\n");
}

/* One row per CFG_CLI option of the table, its default from cfg_defaults(). */
static void help_options(void)
{
    run_config d;
    cfg_defaults(&d);
    size_t n;
    const cfg_option *t = cfg_options(&n);
    for (size_t i = 0; i < n; i++) {
        const cfg_option *o = &t[i];
        if (!(o->where & CFG_CLI))
            continue;
        char lhs[256], dflt[600];
        int k = snprintf(lhs, sizeof lhs, "--%s%s%s", o->name,
                         o->kind == CFG_BOOL ? "" : o->kind == CFG_BOOL_AUTO ? "[=yes|no|auto]" : " ",
                         o->arg ? o->arg : "");
        for (int c = 0; !o->arg && o->choices && o->choices[c] && k < (int)sizeof lhs; c++)
            k += snprintf(lhs + k, sizeof lhs - (size_t)k, "%s%.*s", c ? "|" : "",
                          (int)strcspn(o->choices[c], " "), o->choices[c]);
        cfg_value(&d, o, dflt, sizeof dflt);
        help_row(lhs, o->help, dflt[0] ? dflt : o->unset);
    }
    help_row("--no-NAME", "sets a yes/no option to no: --no-deterministic", NULL);
    help_row("--config FILE", "options file", "$XDG_CONFIG_HOME/petal-tui/config");
}

static void help(void)
{
    printf("petal-tui %s - train image classifiers from TFRecord shards in a terminal\n"
           "\n"
           "usage:\n"
           "  petal-tui [OPTIONS]                open the workbench (demo data unless --data)\n"
           "  petal-tui --headless [OPTIONS]     train without the workbench\n"
           "  petal-tui --open RUN_DIR           a finished run in the workbench, no training\n"
           "  mpirun -np N petal-tui --headless [OPTIONS]   one model on N processes or\n"
           "                                     hosts (Open MPI; see petal-tui(1), DATA PARALLEL)\n"
           "  mpirun -np N petal-tui --tty /dev/pts/M [OPTIONS]   the same, with rank 0's\n"
           "                                     workbench on that terminal (see --tty)\n"
           "  petal-tui inspect PATH             what is in a shard, folder or dataset\n"
           "  petal-tui shards SRC_DIR OUT_DIR   class folders of JPEGs -> TFRecord shards\n"
           "  petal-tui demo [--cache DIR]       generate the demo dataset, print its folder\n"
           "  petal-tui lr-schedule [OPTIONS]    print a learning-rate schedule\n"
           "  petal-tui lr-find [OPTIONS] [--plot FILE.png] [--csv FILE]\n"
           "                                     suggest --lr-max (fastai's lr_find)\n"
           "  petal-tui preview [OPTIONS] --out FILE.png   augmentation preview grid\n"
           "  petal-tui classify MODEL.onnx IMAGE...   top ImageNet classes of JPEGs\n"
           "  petal-tui model MODEL.onnx [--classes N]   the layers an ONNX graph becomes\n"
           "  petal-tui events PATH...           the scalars of TensorBoard event files\n"
           "  petal-tui predict RUN_DIR|MODEL.onnx INPUT...\n"
           "                                     classes of photos, folders or records, as CSV\n"
           "  petal-tui export RUN_DIR [--out FILE.onnx] [--int8 [--calib N]]\n"
           "                                     the trained net as an ONNX file (int8: QDQ)\n"
           "  petal-tui explain RUN_DIR|MODEL.onnx IMAGE... --out DIR  [--top-losses N]\n"
           "                                     Grad-CAM heat maps of images or top losses\n"
           "  petal-tui ensemble RUN_DIR... --data DATASET\n"
           "                                     runs' mean probabilities: scores, submission\n"
           "  petal-tui --help | --version\n"
           "\n"
           "training options (also keys of the config file, without the dashes):\n",
           PT_VERSION);
    help_options();
    printf("workbench options:\n");
    help_row("--no-sixel", "text (half-block) previews even on sixel terminals", NULL);
    help_row("--no-color", "no colours (also when NO_COLOR is set)", NULL);
    help_row("--compare RUN_DIR...", "overlay earlier runs' curves (petal-tui run folders or "
             "Keras TensorBoard event files), a colour each", NULL);
    help_row("--open RUN_DIR", "show a finished run (curves, inspect, confusion, log) without "
             "training", NULL);
    help_row("--tty PATH", "draw on and read keys from that terminal (what `tty` prints in "
             "another terminal or tmux pane, left running `sleep infinity`) instead of "
             "stdin/stdout; under mpirun, rank 0's workbench", NULL);
    printf("\n"
           "workbench keys: ? lists them all. s start, p pause/resume, i inspect (there Tab\n"
           "focuses the images, the per-class table or the confusion matrix, the arrows\n"
           "scroll it, %% shows counts or percentages of each row), a/n augmentation\n"
           "preview, c configure, r runs list (compare earlier runs, o sorts), e export the\n"
           "ended or opened run's model (RUN/model.onnx), x curves by update/epoch/time,\n"
           "l log scale, Left/Right the zoomed curves' value cursor, L lr-find (before s:\n"
           "the loss against the rate, the suggested lr-max), q quit. --headless\n"
           "draws a Keras-like progress bar on a terminal.\n");
    printf("\n"
           "exit status (the workbench's too): 0 done, 1 usage, 2 data error or failed run,\n"
           "3 non-finite loss, 4 lr-find without a suggestion, 130 interrupted or hung up.\n"
           "Errors go to stderr, once, as \"petal-tui: WHAT: WHY\". Each subcommand takes\n"
           "--help. See petal-tui(1).\n");
}

/* Started by mpirun: one rank of a data-parallel run (train/dist.h). Rank 0 reports
 * as a plain run does: the workbench on --tty's terminal, or where its input and
 * output are a terminal (which mpirun's forwarding never gives it), else headless
 * with a line saying how to get the workbench. The other ranks are headless and
 * silent but for errors, whatever --tty says (its PATH is rank 0's host's). A rank
 * whose run failed ends the whole job, so no other waits for it. */
static int run_in_job(const args *a)
{
    pt_err e;
    if (eng_job_init(&e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return 2;
    }
    int status;
    if (!a->headless && eng_job_rank() == 0 && (a->tty || (isatty(0) && isatty(1)))) {
        ui_options uo = { .no_sixel = a->no_sixel, .no_color = a->no_color,
                          .compare = a->compare, .n_compare = a->n_compare, .tty = a->tty };
        status = ui_run(&a->cfg, &uo);
    } else {
        if (!a->headless && eng_job_rank() == 0)
            fprintf(stderr, "petal-tui: rank 0 has no terminal (mpirun forwards its input and "
                            "output): training headless; for the workbench run `tty` in another "
                            "terminal and pass --tty /dev/pts/N as it prints, or --headless to "
                            "say this is meant\n");
        status = headless_run(&a->cfg);
    }
    if (status == 0 || status == 3 || status == 130)
        eng_job_finalize();
    else
        eng_job_abort(status);
    return status;
}

int main(int argc, char **argv)
{
    /* A file-size limit (ulimit -f) reached makes a write fail with EFBIG, which is
     * reported like a full disk, instead of killing the program half-way through a
     * file. */
    signal(SIGXFSZ, SIG_IGN);
    blas_core_pick(argv);
    if (argc > 1) {
        const char *c = argv[1];
        if (!strcmp(c, "--version")) {
            printf("petal-tui %s\nOpenBLAS kernels: %s%s\n", PT_VERSION, eng_blas_corename(),
                   getenv("PT_BLAS_PICKED")      ? " (picked for this CPU's features: "
                                                   "OpenBLAS fell back to Prescott)"
                   : getenv("OPENBLAS_CORETYPE") ? " (OPENBLAS_CORETYPE)"
                                                 : "");
            char feats[256];
            cpu_text(cpu_hw(), feats, sizeof feats);
            printf("CPU features: %s\n", feats[0] ? feats : "(none that petal-tui looks for)");
            char prec[256];
            eng_precision_text(RUN_PREC_AUTO, prec, sizeof prec);
            printf("--precision auto: %s\n", prec);
            return 0;
        }
        if (!strcmp(c, "--help") || !strcmp(c, "-h")) {
            help();
            return 0;
        }
        if (!strcmp(c, "inspect"))
            return cmd_inspect(argc - 1, argv + 1);
        if (!strcmp(c, "shards"))
            return cmd_shards(argc - 1, argv + 1);
        if (!strcmp(c, "demo"))
            return cmd_demo(argc - 1, argv + 1);
        if (!strcmp(c, "preview"))
            return cmd_preview(argc - 1, argv + 1);
        if (!strcmp(c, "lr-schedule"))
            return cmd_lr_schedule(argc - 1, argv + 1);
        if (!strcmp(c, "lr-find"))
            return cmd_lrfind(argc - 1, argv + 1);
        if (!strcmp(c, "classify"))
            return cmd_classify(argc - 1, argv + 1);
        if (!strcmp(c, "model"))
            return cmd_model(argc - 1, argv + 1);
        if (!strcmp(c, "events"))
            return cmd_events(argc - 1, argv + 1);
        if (!strcmp(c, "predict"))
            return cmd_predict(argc - 1, argv + 1);
        if (!strcmp(c, "export"))
            return cmd_export(argc - 1, argv + 1);
        if (!strcmp(c, "explain"))
            return cmd_explain(argc - 1, argv + 1);
        if (!strcmp(c, "ensemble"))
            return cmd_ensemble(argc - 1, argv + 1);
        if (c[0] != '-') {
            fprintf(stderr, "petal-tui: unknown command '%s' (try --help)\n", c);
            return 1;
        }
    }
    args a;
    if (args_parse(argc, argv, &a) != 0)
        return 1;
    if (a.headless && (a.n_compare || a.open || a.tty)) {
        fprintf(stderr, "petal-tui: --%s is for the workbench, not --headless\n",
                a.open ? "open" : a.tty ? "tty" : "compare");
        return 1;
    }
    if (eng_job_launched()) {
        if (a.open) {
            fprintf(stderr, "petal-tui: --open shows a finished run: start it without mpirun\n");
            return 1;
        }
        return run_in_job(&a);
    }
    if (a.headless)
        return headless_run(&a.cfg);
    ui_options uo = { .no_sixel = a.no_sixel, .no_color = a.no_color,
                      .compare = a.compare, .n_compare = a.n_compare, .open = a.open,
                      .tty = a.tty };
    return ui_run(&a.cfg, &uo);
}
