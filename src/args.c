/* args — the training options of the workbench and the headless runner.
 *
 * Precedence, lowest first: built-in defaults; the config file (--config FILE, or
 * $XDG_CONFIG_HOME/petal-tui/config when it exists); when resuming, the run's saved
 * configuration; then the command line. Config files hold "key = value" lines with
 * the long options' names; '#' starts a comment.
 *
 * The command line is read with getopt_long, its options built from the options'
 * table (core/config.h), before any file: the files' values must come first, and
 * --config and --resume name them. */
#include "src/args.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "runs.h"
#include "src/cli.h"

/* getopt_long's codes for the options outside the table; table row i is ROW + i,
 * and the "no-" form of a yes/no row ROW + n + i. */
enum { OPT_CONFIG = 256, OPT_HEADLESS, OPT_NO_SIXEL, OPT_NO_COLOR, OPT_COMPARE, OPT_OPEN,
       OPT_TTY, ROW };

/* A yes/no row (auto too): a flag with an optional "=value", and a "no-" form. */
static int is_flag(cfg_kind k)
{
    return k == CFG_BOOL || k == CFG_BOOL_AUTO;
}

/* getopt_long's table: every CFG_CLI row (a yes/no row takes an optional "=value";
 * a following yes or no is read by hand), "no-NAME" for every yes/no row, and the
 * options outside the table. One allocation: the "no-" names follow the array. */
static struct option *long_options(const cfg_option *t, size_t n)
{
    static const struct option extra[] = {
        { "config", required_argument, NULL, OPT_CONFIG },
        { "headless", no_argument, NULL, OPT_HEADLESS },
        { "no-sixel", no_argument, NULL, OPT_NO_SIXEL },
        { "no-color", no_argument, NULL, OPT_NO_COLOR },
        { "compare", required_argument, NULL, OPT_COMPARE },
        { "open", required_argument, NULL, OPT_OPEN },
        { "tty", required_argument, NULL, OPT_TTY },
    };
    const size_t n_extra = sizeof extra / sizeof extra[0];
    size_t count = n_extra + 1, bytes = 0;
    for (size_t i = 0; i < n; i++)
        if (t[i].where & CFG_CLI) {
            count++;
            if (is_flag(t[i].kind)) {
                count++;
                bytes += strlen(t[i].name) + 4;
            }
        }
    struct option *lo = calloc(1, count * sizeof *lo + bytes);
    if (!lo)
        return NULL;
    char *names = (char *)(lo + count);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(t[i].where & CFG_CLI))
            continue;
        int flag = is_flag(t[i].kind);
        lo[k++] = (struct option){ t[i].name, flag ? optional_argument : required_argument, NULL,
                                   ROW + (int)i };
        if (flag) {
            size_t len = strlen(t[i].name) + 4;
            snprintf(names, len, "no-%s", t[i].name);
            lo[k++] = (struct option){ names, no_argument, NULL, ROW + (int)(n + i) };
            names += len;
        }
    }
    memcpy(lo + k, extra, sizeof extra);
    return lo; /* calloc left the terminating entry zero */
}

/* The long option whose code is val, for messages. */
static const char *name_of(const struct option *lo, int val)
{
    for (; lo->name; lo++)
        if (lo->val == val)
            return lo->name;
    return "?";
}

/* An option getopt_long did not take: unknown, or the prefix of several; cli_unknown
 * names the ones meant. */
static void say_unknown(const struct option *lo, const char *arg)
{
    size_t n = 0;
    while (lo[n].name)
        n++;
    char **known = calloc(n + 1, sizeof *known);
    size_t k = 0;
    for (size_t i = 0; known && i < n; i++) {
        size_t len = strlen(lo[i].name) + 3;
        if ((known[k] = malloc(len)))
            snprintf(known[k++], len, "--%s", lo[i].name);
    }
    if (known)
        cli_unknown(NULL, arg, (const char *const *)known);
    else
        fprintf(stderr, "petal-tui: unknown option '%s' (try --help)\n", arg);
    for (size_t i = 0; i < k; i++)
        free(known[i]);
    free(known);
}

/* Whether s is a value that a yes/no option takes (so a bare flag may be followed
 * by it). Set on a scratch copy: only the answer counts. */
static int is_yes_no(const cfg_option *o, const char *s)
{
    run_config scratch;
    return s[0] != '-' && cfg_set(&scratch, o->name, s, NULL) == PT_OK;
}

typedef struct setting {
    const cfg_option *o;
    const char *value;
} setting;

/* One pass of getopt_long over argv: the training options into set (in order, to
 * apply after the files), --config and --resume, the workbench's flags into a.
 * 0, or 1 after printing a usage error. */
static int read_command_line(int argc, char **argv, const struct option *lo, args *a,
                             setting *set, size_t *n_set, const char **cfile, const char **resume)
{
    size_t n;
    const cfg_option *t = cfg_options(&n);
    opterr = 0;
    optind = 0; /* GNU: start afresh even if something read argv before */
    for (;;) {
        int at = optind > 0 ? optind : 1; /* the argument this call reads */
        int c = getopt_long(argc, argv, "+:", lo, NULL);
        if (c == -1) {
            /* Not the end of the options, as getopt takes it: an unknown option. */
            if (at < argc && optind == at + 1 && !strcmp(argv[at], "--")) {
                fprintf(stderr, "petal-tui: unknown option '--' (try --help)\n");
                return 1;
            }
            break;
        }
        if (c == ':') {
            fprintf(stderr, "petal-tui: --%s needs a value\n", name_of(lo, optopt));
            return 1;
        }
        if (c == '?') {
            if (optopt == 0) /* unknown, or a prefix of several */
                say_unknown(lo, argv[at]);
            else if (optopt >= OPT_CONFIG)
                fprintf(stderr, "petal-tui: --%s takes no value (try --help)\n",
                        name_of(lo, optopt));
            else /* a short option: there are none */
                fprintf(stderr, "petal-tui: unexpected argument '%s' (try --help)\n", argv[at]);
            return 1;
        }
        if (c == OPT_CONFIG) {
            *cfile = optarg;
        } else if (c == OPT_HEADLESS) {
            a->headless = 1;
        } else if (c == OPT_NO_SIXEL) {
            a->no_sixel = 1;
        } else if (c == OPT_NO_COLOR) {
            a->no_color = 1;
        } else if (c == OPT_OPEN) {
            a->open = optarg;
        } else if (c == OPT_TTY) {
            a->tty = optarg;
        } else if (c == OPT_COMPARE) {
            /* --compare A B C: the folders up to the next option. */
            const char *p = optarg;
            for (;;) {
                if (a->n_compare == ARGS_MAX_COMPARE) {
                    fprintf(stderr, "petal-tui: --compare: at most %d runs\n", ARGS_MAX_COMPARE);
                    return 1;
                }
                a->compare[a->n_compare++] = p;
                if (optind >= argc || argv[optind][0] == '-')
                    break;
                p = argv[optind++];
            }
        } else if (c >= ROW + (int)n) {
            set[(*n_set)++] = (setting){ &t[c - ROW - (int)n], "no" };
        } else {
            const cfg_option *o = &t[c - ROW];
            const char *v = optarg;
            /* A bare yes/no option means yes, unless a yes or no follows. */
            if (!v && is_flag(o->kind))
                v = optind < argc && is_yes_no(o, argv[optind]) ? argv[optind++] : "yes";
            if (!strcmp(o->name, "resume"))
                *resume = v;
            set[(*n_set)++] = (setting){ o, v };
        }
    }
    if (optind < argc) {
        fprintf(stderr, "petal-tui: unexpected argument '%s' (try --help)\n", argv[optind]);
        return 1;
    }
    return 0;
}

/* The config file, the resumed run's config, then the command line's settings. */
static int apply(args *a, const char *cfile, const char *resume, const setting *set,
                 size_t n_set)
{
    pt_err e;
    char def[4096];
    if (!cfile) {
        const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
        if (xdg && *xdg)
            util_path(def, sizeof def, "%s/petal-tui/config", xdg);
        else if (home && *home)
            util_path(def, sizeof def, "%s/.config/petal-tui/config", home);
        else
            def[0] = '\0';
        if (def[0] && util_is_file(def))
            cfile = def;
    }
    if (cfile) {
        if (cfg_read_file(&a->cfg, cfile, &e) != PT_OK) {
            fprintf(stderr, "petal-tui: %s\n", e.msg);
            return 1;
        }
        util_copy(a->config_file, sizeof a->config_file, cfile);
    }
    if (resume) {
        char path[4200];
        int has = runs_config_path(resume, path, sizeof path);
        if (has != 1 && util_is_dir(resume)) {
            /* A run killed in its first moments, before its configuration was written,
             * left nothing to continue: its folder takes a new run. */
            fprintf(stderr,
                    "petal-tui: %s: no config file to resume from (a run that ended before "
                    "writing one is started again with --out %s)\n",
                    resume, resume);
            return 1;
        }
        if (has != 1) {
            fprintf(stderr, "petal-tui: %s: no run folder with a config file to resume\n", resume);
            return 1;
        }
        if (runs_read_config(resume, &a->cfg, &e) != PT_OK) {
            fprintf(stderr, "petal-tui: %s\n", e.msg);
            return 1;
        }
    }
    int data_given = 0;
    for (size_t i = 0; i < n_set; i++) {
        if (cfg_set(&a->cfg, set[i].o->name, set[i].value, &e) != PT_OK) {
            fprintf(stderr, "petal-tui: %s\n", e.msg);
            return 1;
        }
        data_given |= !strcmp(set[i].o->name, "data");
    }
    /* The run's dataset gone (moved, deleted, another machine): said as the run's, with
     * what overrides it, not as a --data the user never typed. */
    if (resume && !data_given && a->cfg.data[0] && !util_is_dir(a->cfg.data)) {
        fprintf(stderr,
                "petal-tui: %s: the run's dataset %s (its config's data) is not there: moved "
                "or deleted? --data DIR resumes it on the dataset where it is now\n",
                resume, a->cfg.data);
        return 1;
    }
    /* Stored whole in the new run's config, so that predict, export and resume work
     * from any folder. */
    runs_config_absolute(&a->cfg);
    return 0;
}

int args_parse(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    cfg_defaults(&a->cfg);
    size_t n;
    const cfg_option *t = cfg_options(&n);
    struct option *lo = long_options(t, n);
    setting *set = calloc((size_t)(argc > 0 ? argc : 1), sizeof *set);
    const char *cfile = NULL, *resume = NULL;
    size_t n_set = 0;
    int rc = 1;
    if (!lo || !set)
        fprintf(stderr, "petal-tui: out of memory\n");
    else if (read_command_line(argc, argv, lo, a, set, &n_set, &cfile, &resume) == 0)
        rc = apply(a, cfile, resume, set, n_set);
    free(lo);
    free(set);
    return rc;
}
