#include "src/cli.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "engine.h"

int cli_int(const char *opt, const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "petal-tui: %s wants a whole number from %lld to %lld, not '%s'\n", opt,
                lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_double(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "petal-tui: %s wants a number from %g to %g, not '%s'\n", opt, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* One option's value read as the option table reads it, into the defaults in c: 0, or
 * -1 with the table's message on stderr. */
static int table_value(const char *key, const char *value, run_config *c)
{
    cfg_defaults(c);
    pt_err e;
    if (cfg_set(c, key, value, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return -1;
    }
    return 0;
}

int cli_input_norm(const char *opt, const char *s, int *out)
{
    /* --norm's old names, before the conventions had Keras's. */
    if (!strcmp(opt, "--norm") && !strcmp(s, "signed"))
        s = "tf";
    else if (!strcmp(opt, "--norm") && !strcmp(s, "none"))
        s = "unit";
    run_config c;
    if (table_value("input-norm", s, &c) != 0)
        return -1;
    *out = (int)c.input_norm;
    return 0;
}

int cli_precision(const char *s, int *bf16)
{
    run_config c;
    if (table_value("precision", s, &c) != 0)
        return -1;
    *bf16 = eng_precision_bf16(c.precision);
    return 0;
}

void cli_precision_note(const char *cmd, int bf16)
{
    if (!bf16)
        return;
    char t[256];
    eng_precision_text(RUN_PREC_BF16, t, sizeof t);
    fprintf(stderr, "petal-tui: %s: %s; the probabilities differ from fp32's (and an "
                    "export's) by bf16's rounding\n", cmd, t);
}

/* Edits (insert, delete, replace) from a to b, for the few-letter option names. */
static size_t edits(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b), row[64];
    if (na >= 64 || nb >= 64)
        return 64;
    for (size_t j = 0; j <= nb; j++)
        row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[nb];
}

int cli_is_option(const char *opt, const char *const *known)
{
    for (int k = 0; known[k]; k++)
        if (!strcmp(opt, known[k]))
            return 1;
    return 0;
}

void cli_unknown(const char *cmd, const char *opt, const char *const *known)
{
    /* The options opt begins (getopt_long takes a unique one; several make it
     * ambiguous), else those within two letters of it. */
    char near[320] = "";
    size_t len = 0, n = strcspn(opt, "=");
    int begun = 0, shown = 0;
    for (int k = 0; known[k]; k++)
        begun += n > 2 && !strncmp(opt, known[k], n);
    for (int k = 0; known[k]; k++) {
        int prefix = n > 2 && !strncmp(opt, known[k], n);
        if (begun ? !prefix : edits(opt, known[k]) > 2)
            continue;
        if (shown++ == 8) {
            len += (size_t)snprintf(near + len, sizeof near - len, ", ...");
            break;
        }
        len += (size_t)snprintf(near + len, sizeof near - len, "%s%s", len ? ", " : "",
                                known[k]);
    }
    char where[64] = "";
    if (cmd)
        snprintf(where, sizeof where, "%s: ", cmd);
    char help[64];
    snprintf(help, sizeof help, "petal-tui %s%s--help", cmd ? cmd : "", cmd ? " " : "");
    if (begun > 1)
        fprintf(stderr, "petal-tui: %soption '%.*s' is ambiguous: it begins %s (%s lists "
                "them)\n", where, (int)n, opt, near, help);
    else if (len)
        fprintf(stderr, "petal-tui: %sunknown option '%.*s' (did you mean %s? %s lists them)\n",
                where, (int)n, opt, near, help);
    else
        fprintf(stderr, "petal-tui: %sunknown option '%.*s' (%s lists them)\n", where, (int)n,
                opt, help);
}

void cli_catch_stops(void (*fn)(int), int usr1)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (usr1)
        sigaction(SIGUSR1, &sa, NULL);
}
