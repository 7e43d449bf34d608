/* petal-tui events: the scalars and images of TensorBoard event files (a run's,
 * or the ones TensorFlow and Keras write), one per line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "runs.h"
#include "src/cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: petal-tui events [--tag TAG] [--images DIR] PATH...\n"
               "Prints the scalars and images of TensorBoard event files, one per line:\n"
               "TAG STEP VALUE (an image: TAG STEP image WxH N bytes). PATH is an event\n"
               "file or a folder searched for " RUNS_EVENT_FILE_PREFIX "* files (a run's train/ and\n"
               "validation/). Each file starts with a line \"# FILE\". --tag TAG: that tag\n"
               "only. --images DIR: also save each image as DIR/TAG-STEP.png (or .jpg, ...).\n"
               "Histograms, graphs and other summaries are counted, not printed. A torn last\n"
               "record (a run killed mid-write) is noted once and the rest printed (exit 0);\n"
               "other damage is named with its file, record and byte (exit 2).\n");
}

/* A float prints in 9 significant digits (it reads back exactly), a double in 17. */
static void print_value(double v)
{
    if ((double)(float)v == v)
        printf("%.9g", v);
    else
        printf("%.17g", v);
}

/* An image's bytes as DIR/TAG-STEP.EXT (a '/' in the tag becomes '_'); 0 or -1. */
static int save_image(const char *dir, const runs_event *it)
{
    char tag[256], path[4400];
    util_copy(tag, sizeof tag, it->tag);
    for (char *c = tag; *c; c++)
        if (*c == '/')
            *c = '_';
    const char *ext = runs_event_image_ext(it);
    pt_err e;
    if (util_path(path, sizeof path, "%s/%s-%lld.%s", dir, tag, it->step, ext) != 0 ||
        util_mkdirs(dir, &e) != PT_OK ||
        util_write_file_atomic(path, it->image, it->image_len, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s: cannot save the image %s at step %lld\n", dir, it->tag,
                it->step);
        return -1;
    }
    return 0;
}

/* A file that a writer killed at its start leaves: named as event files are, and empty
 * or its first record cut (a file of another name is more likely not an event file at
 * all). Said once as a note, with the "# FILE" lines; 1, or 0 when it is not that. */
static int crash_left(const char *path, int rc, const pt_err *e)
{
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
    int named = !strncmp(name, RUNS_EVENT_FILE_PREFIX, strlen(RUNS_EVENT_FILE_PREFIX));
    if (!named)
        return 0;
    if (rc == PT_ETRUNC)
        fprintf(stderr, "petal-tui: %s: the first record is torn at byte %lld (the run was "
                        "stopped mid-write, or is still writing); no record before it\n",
                path, e->offset < 0 ? 0 : e->offset);
    else if (rc == PT_ENODATA)
        fprintf(stderr, "petal-tui: %s: empty (the run was stopped before its first record, "
                        "or is just starting); nothing to print\n", path);
    else
        return 0;
    printf("# %s (no whole record)\n# 0 records: 0 scalars and 0 images printed, 0 other "
           "summaries skipped\n", path);
    fflush(stdout);
    return 1;
}

/* The file's items; the number of errors met (each said once on stderr). A torn last
 * record is no error: it is said once and what came before it stands. */
static int dump(const char *path, const char *only, const char *images)
{
    runs_events *r;
    pt_err e;
    int rc = runs_events_open(path, &r, &e);
    if (rc != PT_OK)
        return crash_left(path, rc, &e) ? 0 : (fprintf(stderr, "petal-tui: %s\n", e.msg), 1);
    printf("# %s (%s%s%s)\n", path, runs_events_version(r), runs_events_writer(r)[0] ? ", " : "",
           runs_events_writer(r));
    int errors = 0;
    long long scalars = 0, n_images = 0;
    runs_event it;
    fflush(stdout);
    while ((rc = runs_events_next(r, &it, &e)) != 0) {
        if (rc == PT_ETRUNC) {
            /* TFRecord framing only reports a cut at the file's end (a cut length in the
             * middle is a length CRC mismatch, below): the tail a crash leaves. */
            fflush(stdout);
            fprintf(stderr, "petal-tui: %s: the last record is torn at byte %lld (the run was "
                            "stopped mid-write, or is still writing); the %lld records before "
                            "it were read\n",
                    path, e.offset, runs_events_records(r));
            break;
        }
        if (rc < 0) {
            fflush(stdout);
            fprintf(stderr, "petal-tui: %s\n", e.msg);
            errors++;
            continue;
        }
        if (only && strcmp(it.tag, only) != 0)
            continue;
        if (!it.is_image) {
            printf("%s %lld ", it.tag, it.step);
            print_value(it.value);
            printf("\n");
            scalars++;
        } else {
            printf("%s %lld image %dx%d %zu bytes\n", it.tag, it.step, it.width, it.height,
                   it.image_len);
            n_images++;
            fflush(stdout);
            if (images && save_image(images, &it) != 0)
                errors++;
        }
    }
    printf("# %lld records: %lld scalars and %lld images printed, %lld other summaries "
           "skipped\n",
           runs_events_records(r), scalars, n_images, runs_events_skipped(r));
    fflush(stdout);
    runs_events_close(r);
    return errors;
}

int cmd_events(int argc, char **argv)
{
    const char *only = NULL, *images = NULL;
    int paths = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--tag") || !strcmp(a, "--images")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "petal-tui: events: %s wants %s\n", a,
                        a[2] == 't' ? "a tag" : "a folder");
                return 1;
            }
            if (a[2] == 't')
                only = argv[++i];
            else
                images = argv[++i];
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
        if (!strcmp(argv[i], "--tag") || !strcmp(argv[i], "--images")) {
            i++;
            continue;
        }
        char **files;
        int n;
        pt_err e;
        if (runs_events_find(argv[i], &files, &n, &e) != PT_OK) {
            fprintf(stderr, "petal-tui: %s\n", e.msg);
            errors++;
            continue;
        }
        for (int k = 0; k < n; k++)
            errors += dump(files[k], only, images);
        util_free_list(files, n);
    }
    return errors ? 2 : 0;
}
