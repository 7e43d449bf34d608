/* petal-tui demo: make sure the built-in demo dataset exists and print its folder. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "datasets.h"
#include "src/cli.h"

static int progress(void *ctx, long long done, long long total)
{
    (void)ctx;
    if (isatty(2))
        fprintf(stderr, "\rgenerating the demo dataset: %lld / %lld images", done, total);
    return 0;
}

int cmd_demo(int argc, char **argv)
{
    const char *cache = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cache") && i + 1 < argc)
            cache = argv[++i];
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: petal-tui demo [--cache DIR]\n"
                   "Generates the built-in demo dataset (once) and prints its folder.\n"
                   "DIR defaults to $XDG_CACHE_HOME/petal-tui or ~/.cache/petal-tui.\n");
            return 0;
        } else {
            fprintf(stderr, "petal-tui: demo: unexpected argument '%s'\n", argv[i]);
            return 1;
        }
    }
    char path[4096];
    pt_err e;
    double t0 = util_now();
    int rc = datasets_demo(cache, path, sizeof path, progress, NULL, &e);
    if (isatty(2) && util_now() - t0 > 0.5)
        fprintf(stderr, "\n");
    if (rc != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return 2;
    }
    printf("%s\n", path);
    return 0;
}
