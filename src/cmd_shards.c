/* petal-tui shards SRC OUT: a folder of class folders of JPEGs and PNGs -> competition
 * layout. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "config.h"
#include "datasets.h"
#include "src/cli.h"

static int progress(void *ctx, long long done, long long total)
{
    (void)ctx;
    if (isatty(2))
        fprintf(stderr, "\r  %lld / %lld images", done, total);
    return 0;
}

static void skipped(void *ctx, const pt_err *why)
{
    (void)ctx;
    fprintf(stderr, "%spetal-tui: %s (skipped)\n", isatty(2) ? "\r" : "", why->msg);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: petal-tui shards SRC_DIR OUT_DIR [--size 192] [--val 0.2] [--test 0.0]\n"
            "                        [--fit crop|pad|stretch] [--keep-aspect]\n"
            "                        [--per-shard 256] [--seed 42] [--quality 95] [--workers N]\n"
            "Turns SRC_DIR/<class>/*.jpg (and .jpeg, .png) into\n"
            "OUT_DIR/tfrecords-jpeg-SIZExSIZE/{train,val,test}/NN-SIZExSIZE-COUNT.tfrec with a\n"
            "stratified, seeded split, each photo resized to SIZE x SIZE, and\n"
            "OUT_DIR/classes.txt. Test records carry a 9-hex-digit id instead of a class.\n"
            "  --size S        32 (the smallest side training takes) to 4096\n"
            "  --fit crop      the largest centred square of the photo (the default)\n"
            "  --fit pad       the whole photo, long side SIZE, centred on a square filled\n"
            "                  with the photo's mean colour\n"
            "  --fit stretch   the whole photo squeezed to a square, aspect ratio ignored\n"
            "  --keep-aspect   the whole photo, SHORT side SIZE, long side in proportion (at\n"
            "                  most 4 x SIZE); validation takes its centred square, training\n"
            "                  a square at a random place. Goes only with --fit crop.\n");
}

int cmd_shards(int argc, char **argv)
{
    datasets_shards_config c = {
        .size = 192, .val_frac = 0.2, .test_frac = 0.0, .per_shard = 256, .quality = 95,
        .workers = util_cores(), .seed = 42,
        .progress = progress, .on_skip = skipped,
    };
    const char *pos[2] = { NULL, NULL };
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long long v;
        double f;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--size") && i + 1 < argc) {
            /* The smallest side training takes (--image-size's). */
            if (cli_int(a, argv[++i], RUN_MIN_IMAGE_SIZE, 4096, &v))
                return 1;
            c.size = (int)v;
        } else if (!strcmp(a, "--fit") && i + 1 < argc) {
            c.fit = datasets_fit_parse(argv[++i]);
            if (c.fit < 0) {
                fprintf(stderr, "petal-tui: shards: --fit takes crop, pad or stretch, not '%s'\n",
                        argv[i]);
                return 1;
            }
        } else if (!strcmp(a, "--keep-aspect")) {
            c.keep_aspect = 1;
        } else if (!strcmp(a, "--val") && i + 1 < argc) {
            if (cli_double(a, argv[++i], 0, 0.99, &f))
                return 1;
            c.val_frac = f;
        } else if (!strcmp(a, "--test") && i + 1 < argc) {
            if (cli_double(a, argv[++i], 0, 0.99, &f))
                return 1;
            c.test_frac = f;
        } else if (!strcmp(a, "--per-shard") && i + 1 < argc) {
            if (cli_int(a, argv[++i], 1, 1000000, &v))
                return 1;
            c.per_shard = (int)v;
        } else if (!strcmp(a, "--seed") && i + 1 < argc) {
            if (cli_int(a, argv[++i], 0, (1LL << 62), &v))
                return 1;
            c.seed = (uint64_t)v;
        } else if (!strcmp(a, "--quality") && i + 1 < argc) {
            if (cli_int(a, argv[++i], 1, 100, &v))
                return 1;
            c.quality = (int)v;
        } else if (!strcmp(a, "--workers") && i + 1 < argc) {
            if (cli_int(a, argv[++i], 1, 64, &v))
                return 1;
            c.workers = (int)v;
        } else if (a[0] == '-' || npos == 2) {
            fprintf(stderr, "petal-tui: shards: unexpected argument '%s'\n", a);
            usage(stderr);
            return 1;
        } else {
            pos[npos++] = a;
        }
    }
    if (npos != 2) {
        usage(stderr);
        return 1;
    }
    if (c.keep_aspect && c.fit != DATASETS_FIT_CROP) {
        fprintf(stderr, "petal-tui: shards: --keep-aspect keeps each photo's shape; it goes "
                        "only with --fit crop, not --fit %s\n", datasets_fit_name(c.fit));
        return 1;
    }
    c.src_dir = pos[0];
    c.out_dir = pos[1];
    pt_err e;
    int existed = util_is_dir(c.out_dir);
    if (util_mkdirs(c.out_dir, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return 1;
    }
    datasets_shards_result r;
    double t0 = util_now();
    int rc = datasets_shards_from_folders(&c, &r, &e);
    if (isatty(2))
        fprintf(stderr, "\n");
    if (rc != PT_OK) {
        if (!existed)
            rmdir(c.out_dir); /* ours, and empty: the writer leaves nothing on failure */
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return rc == PT_EUSAGE ? 1 : 2;
    }
    printf("wrote %s in %.1fs (fit %s%s)\n", r.root, util_now() - t0,
           datasets_fit_name(c.fit), c.keep_aspect ? ", keep aspect" : "");
    for (int s = 0; s < DATASETS_NSPLITS; s++)
        if (r.shards[s])
            printf("  %-5s %6lld records in %d shards\n", s == DATASETS_TRAIN ? "train" : s == DATASETS_VAL ? "val" : "test",
                   r.written[s], r.shards[s]);
    if (r.skipped)
        printf("  skipped %lld files (not an image, or unreadable)\n", r.skipped);
    printf("total: %lld records\n", r.written[0] + r.written[1] + r.written[2]);
    return 0;
}
