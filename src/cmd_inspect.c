/* petal-tui inspect PATH: what is in a shard, a folder of shards, or a dataset (the
 * report is datasets.h's datasets_inspect). Exit status 0 when all is well, 2 when
 * damage was found, 1 on a usage error. */
#include <stdio.h>
#include <string.h>

#include "datasets.h"
#include "src/cli.h"

#define INSPECT_USAGE "usage: petal-tui inspect [--records N] PATH\n"

/* The command line into *path and *show (-1: the default for the kind of PATH); -1 to
 * go on, else the exit status (0 after --help). */
static int parse_args(int argc, char **argv, const char **path, int *show)
{
    *path = NULL;
    *show = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--records") == 0 && i + 1 < argc) {
            long long v;
            if (cli_int(argv[i], argv[i + 1], 0, 1000000, &v))
                return 1;
            *show = (int)v;
            i++;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf(INSPECT_USAGE
                   "PATH: a TFRecord file, a folder of them, or a dataset folder.\n"
                   "--records N  show the features of the first N records of each file\n"
                   "             (default 3 for a single file, 0 otherwise)\n");
            return 0;
        } else if (!*path && argv[i][0] != '-')
            *path = argv[i];
        else {
            fprintf(stderr, "petal-tui: inspect: unexpected argument '%s'\n", argv[i]);
            return 1;
        }
    }
    if (!*path) {
        fprintf(stderr, INSPECT_USAGE);
        return 1;
    }
    return -1;
}

int cmd_inspect(int argc, char **argv)
{
    const char *path;
    int show;
    int rc = parse_args(argc, argv, &path, &show);
    if (rc >= 0)
        return rc;
    int damaged;
    pt_err e;
    rc = datasets_inspect(path, show, stdout, &damaged, &e);
    if (rc != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return rc == PT_EUSAGE ? 1 : 2;
    }
    return damaged ? 2 : 0;
}
