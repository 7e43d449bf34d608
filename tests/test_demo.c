/* The built-in demo dataset: generated as configured, identical every time. */
#include "tests/t.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "base/util.h"
#include "data/dataset.h"
#include "data/demo.h"
#include "data/flowers.h"
#include "data/sampler.h"

/* cksum of the demo dataset's first validation shard (gcc and clang builds agree). */
#define DEMO_GOLDEN "3660734194 871434"

/* Counts the progress calls (the writer's threads make them). */
static int count_progress(void *ctx, long long done, long long total)
{
    (void)done;
    (void)total;
    atomic_fetch_add((_Atomic long *)ctx, 1);
    return 0;
}

TEST(demo_dataset_is_generated_as_configured_and_identically)
{
    demo_params p;
    pt_err e;
    T_REQUIRE(demo_params_get(&p, &e) == PT_OK);
    T_EQ_INT(p.n_classes, flw_class_count());
    T_CHECK(p.n_classes >= 10);
    /* Deliberately imbalanced, like the competition (18..782). */
    int lo = 1 << 30, hi = 0;
    for (int k = 0; k < p.n_classes; k++) {
        lo = p.counts[k] < lo ? p.counts[k] : lo;
        hi = p.counts[k] > hi ? p.counts[k] : hi;
    }
    T_CHECK(hi >= 10 * lo);

    char a[4096], b[4096];
    const char *ca = t_tmpdir(), *cb = t_tmpdir();
    _Atomic long made = 0;
    T_REQUIRE(demo_ensure(ca, a, sizeof a, count_progress, &made, &e) == PT_OK);
    T_CHECK(made > 0);
    /* A second call finds the cache: it makes no image (how fast that is is a
     * benchmark's business, not a test's). */
    made = 0;
    char again[4096];
    T_REQUIRE(demo_ensure(ca, again, sizeof again, count_progress, &made, &e) == PT_OK);
    T_EQ_STR(a, again);
    T_EQ_INT(made, 0);

    ds_dataset *d;
    T_REQUIRE(ds_open(a, 0, &d, &e) == PT_OK);
    T_EQ_INT(d->n_classes, p.n_classes);
    T_EQ_INT(d->names_source, DS_NAMES_FILE);
    T_EQ_STR(ds_class_name(d, 0), flw_class_name(0));
    T_EQ_INT(d->image_w, p.image_size);
    long long labeled = 0;
    for (int k = 0; k < p.n_classes; k++)
        labeled += p.counts[k];
    T_EQ_INT(d->split[DS_TRAIN].count + d->split[DS_VAL].count, labeled);
    T_EQ_INT(d->split[DS_TEST].count, (long long)p.test_per_class * p.n_classes);
    int32_t *labels;
    long long n, bad;
    T_REQUIRE(ds_scan_labels(&d->split[DS_TRAIN], &labels, &n, &bad, NULL, NULL, NULL, &e) == PT_OK);
    T_EQ_INT(bad, 0);
    long long cnt[64];
    smp_count_labels(labels, (size_t)n, p.n_classes, cnt);
    for (int k = 0; k < p.n_classes; k++) {
        long long nv = (long long)(p.counts[k] * p.val_fraction + 0.5);
        T_CHECKF(cnt[k] >= p.counts[k] - nv - 1 && cnt[k] <= p.counts[k] - nv + 1,
                 "class %d: %lld training images", k, cnt[k]);
    }
    free(labels);
    ds_free(d);

    if (!t_slow_mode()) {
        /* Generated again elsewhere: the same bytes in every file. */
        T_REQUIRE(demo_ensure(cb, b, sizeof b, NULL, NULL, &e) == PT_OK);
        char cmd[9000], *out;
        util_path(cmd, sizeof cmd, "diff -r '%s' '%s' && echo same", a, b);
        T_EQ_INT(t_run(cmd, &out), 0);
        T_CHECK(strstr(out, "same") != NULL);
        free(out);
    }
    /* And the same bytes on every machine: a checksum of the first validation shard
     * (libjpeg-turbo's integer DCT and Huffman coding are exact). */
    char cmd[9000], *out;
    util_path(cmd, sizeof cmd, "cksum '%s'/tfrecords-jpeg-*/val/00-*.tfrec | cut -d' ' -f1,2", a);
    T_REQUIRE(t_run(cmd, &out) == 0);
    printf("  demo val shard 00 cksum: %s", out);
    T_CHECKF(strncmp(out, DEMO_GOLDEN, strlen(DEMO_GOLDEN)) == 0, "cksum %s, expected %s", out,
             DEMO_GOLDEN);
    free(out);
}

static int stop_at_once(void *ctx, long long done, long long total)
{
    (void)total;
    *(long long *)ctx = done;
    return 1;
}

TEST(demo_generation_stops_on_request_and_leaves_nothing)
{
    const char *cache = t_tmpdir();
    char path[4096];
    long long seen = 0;
    pt_err e;
    T_EQ_INT(demo_ensure(cache, path, sizeof path, stop_at_once, &seen, &e), PT_ESTOPPED);
    T_CHECK(seen > 0);
    char cmd[4200], *out;
    util_path(cmd, sizeof cmd, "ls -A '%s' | wc -l", cache);
    T_REQUIRE(t_run(cmd, &out) == 0);
    T_CHECKF(atoi(out) == 0, "left behind: %s", out);
    free(out);
}
