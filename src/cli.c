#include "src/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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
