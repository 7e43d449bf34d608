/* petal-tui events: the scalars and images of TensorBoard event files (a run's,
 * or the ones TensorFlow and Keras write), one per line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "io/tbevent.h"
#include "src/cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: petal-tui events [--tag TAG] PATH...\n"
               "Prints the scalars and images of TensorBoard event files, one per line:\n"
               "TAG STEP VALUE (an image: TAG STEP image WxH N bytes). PATH is an event\n"
               "file or a folder searched for " TBE_FILE_PREFIX "* files (a run's train/ and\n"
               "validation/). Each file starts with a line \"# FILE\". --tag TAG: that tag\n"
               "only. Histograms, graphs and other summaries are counted, not printed.\n");
}

/* A float prints in 9 significant digits (it reads back exactly), a double in 17. */
static void print_value(double v)
{
    if ((double)(float)v == v)
        printf("%.9g", v);
    else
        printf("%.17g", v);
}

/* The file's items; the number of errors met (each said once on stderr). */
static int dump(const char *path, const char *only)
{
    tbe_reader *r;
    pt_err e;
    if (tbe_open(&r, path, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return 1;
    }
    printf("# %s (%s%s%s)\n", path, tbe_file_version(r), tbe_source_writer(r)[0] ? ", " : "",
           tbe_source_writer(r));
    int errors = 0;
    long long scalars = 0, images = 0;
    tbe_item it;
    int rc;
    fflush(stdout);
    while ((rc = tbe_next(r, &it, &e)) != 0) {
        if (rc < 0) {
            fflush(stdout);
            fprintf(stderr, "petal-tui: %s\n", e.msg);
            errors++;
            continue;
        }
        if (only && strcmp(it.tag, only) != 0)
            continue;
        if (it.kind == TBE_SCALAR) {
            printf("%s %lld ", it.tag, it.step);
            print_value(it.value);
            printf("\n");
            scalars++;
        } else {
            printf("%s %lld image %dx%d %zu bytes\n", it.tag, it.step, it.width, it.height,
                   it.image_len);
            images++;
        }
    }
    printf("# %lld records: %lld scalars, %lld images%s, %lld other summaries skipped\n",
           tbe_records(r), scalars, images, only ? " of that tag" : "", tbe_skipped(r));
    fflush(stdout);
    tbe_close(r);
    return errors;
}

int cmd_events(int argc, char **argv)
{
    const char *only = NULL;
    int paths = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--tag")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "petal-tui: events: --tag wants a tag\n");
                return 1;
            }
            only = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "petal-tui: events: unknown option '%s'\n", a);
            usage(stderr);
            return 1;
        } else {
            paths++;
        }
    }
    if (!paths) {
        usage(stderr);
        return 1;
    }
    int errors = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tag")) {
            i++;
            continue;
        }
        char **files;
        int n;
        pt_err e;
        if (tbe_find_files(argv[i], &files, &n, &e) != PT_OK) {
            fprintf(stderr, "petal-tui: %s\n", e.msg);
            errors++;
            continue;
        }
        for (int k = 0; k < n; k++)
            errors += dump(files[k], only);
        util_free_list(files, n);
    }
    return errors ? 2 : 0;
}
