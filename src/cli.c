#include "src/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

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

int cli_input_norm(const char *opt, const char *s, int *out)
{
    /* --norm's old names, before the conventions had Keras's. */
    if (!strcmp(opt, "--norm") && !strcmp(s, "signed"))
        s = "tf";
    else if (!strcmp(opt, "--norm") && !strcmp(s, "none"))
        s = "unit";
    run_config c;
    cfg_defaults(&c);
    pt_err e;
    if (cfg_set(&c, "input-norm", s, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return -1;
    }
    *out = (int)c.input_norm;
    return 0;
}
