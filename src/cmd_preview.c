/* petal-tui preview: a PNG sheet of training images before and after augmentation,
 * made by the engine's own preview path (the one the workbench shows). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "engine.h"
#include "src/cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: petal-tui preview [--data DIR] [--augment SPEC] [--count 8] [--seed S]\n"
               "                         [--image-size S] [--cols C] --out FILE.png\n"
               "Writes a grid: originals on the left, the same images augmented on the\n"
               "right, class names under each tile. Without --data: the demo flowers.\n");
}

int cmd_preview(int argc, char **argv)
{
    run_config cfg;
    cfg_defaults(&cfg);
    const char *out = NULL;
    long long count = 8, cols = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (strncmp(a, "--", 2) || i + 1 >= argc) {
            fprintf(stderr, "petal-tui: preview: unexpected argument '%s'\n", a);
            usage(stderr);
            return 1;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--out"))
            out = v;
        else if (!strcmp(a, "--count")) {
            if (cli_int(a, v, 1, 64, &count))
                return 1;
        } else if (!strcmp(a, "--cols")) {
            if (cli_int(a, v, 1, 64, &cols))
                return 1;
        } else if (!strcmp(a, "--data") || !strcmp(a, "--augment") || !strcmp(a, "--seed") ||
                   !strcmp(a, "--image-size")) {
            pt_err e;
            if (cfg_set(&cfg, a + 2, v, &e) != PT_OK) {
                fprintf(stderr, "petal-tui: %s\n", e.msg);
                return 1;
            }
        } else {
            fprintf(stderr, "petal-tui: preview: unknown option '%s'\n", a);
            return 1;
        }
    }
    if (!out) {
        usage(stderr);
        return 1;
    }
    eng *g;
    pt_err e;
    if (eng_create(&cfg, &g, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return e.code == PT_EUSAGE ? 1 : 2;
    }
    eng_preview_request(g, (int)count);
    run_preview p;
    uint64_t seen = 0;
    int got = 0;
    /* The first preview may generate the demo dataset: allow it time. */
    for (int i = 0; i < 6000 && !got; i++) {
        got = eng_preview_get(g, &seen, &p);
        if (!got) {
            if (eng_preview_error(g, &e)) {
                fprintf(stderr, "petal-tui: %s\n", e.msg);
                eng_destroy(g);
                return 2;
            }
            usleep(50000);
        }
    }
    if (!got) {
        fprintf(stderr, "petal-tui: no images after 5 minutes\n");
        eng_destroy(g);
        return 2;
    }
    int w = 0, h = 0, rc = 2;
    if (eng_preview_sheet(g, &p, (int)cols, out, &w, &h, &e) == PT_OK) {
        printf("wrote %s: %d images, %dx%d pixels, augment %s\n", out, p.n, w, h, cfg.augment);
        rc = 0;
    } else if (e.msg[0]) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
    }
    run_preview_free(&p);
    eng_destroy(g);
    return rc;
}
