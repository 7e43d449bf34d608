/* Tests of core/data/pipeline (with dataset, sampler and shard writer underneath). */
#include "tests/t.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/util.h"
#include "data/augment.h"
#include "data/dataset.h"
#include "data/jpeg.h"
#include "data/pipeline.h"
#include "data/sampler.h"
#include "data/shards.h"
#include "io/example.h"
#include "io/tfrecord.h"
#include "tests/fixtures.h"

static const long long COUNTS[5] = { 40, 7, 23, 3, 12 }; /* 85 train, imbalanced */
static const long long VCOUNTS[5] = { 4, 2, 3, 1, 2 };

/* The shared fixture, written once per run (no test changes its files). */
static ds_dataset *open_fixture(const char **root_out)
{
    static char root[4096];
    if (!root[0]) {
        const char *r = fx_dataset(t_tmpdir(), 5, COUNTS, VCOUNTS, 9, 32, 20);
        if (!r)
            return NULL;
        util_copy(root, sizeof root, r);
    }
    ds_dataset *d;
    pt_err e;
    if (ds_open(root, 0, &d, &e) != PT_OK) {
        printf("  %s\n", e.msg);
        return NULL;
    }
    if (root_out)
        *root_out = root;
    return d;
}

static pipe_config base_config(const ds_dataset *d, ds_split_id s, int batch_size)
{
    pipe_config c;
    pipe_config_defaults(&c);
    c.split = &d->split[s];
    c.labeled = s != DS_TEST;
    c.n_classes = d->n_classes;
    c.image_w = c.image_h = 32;
    c.batch_size = batch_size;
    return c;
}

TEST(dataset_discovers_layout_counts_and_class_names)
{
    const char *root;
    ds_dataset *d = open_fixture(&root);
    T_REQUIRE(d);
    T_EQ_INT(d->image_w, 32);
    T_EQ_INT(d->split[DS_TRAIN].count, 85);
    T_EQ_INT(d->split[DS_TRAIN].n_shards, 5); /* 85 / 20 -> 5 shards of 17 */
    T_CHECK(d->split[DS_TRAIN].shards[0].count_from_name);
    T_EQ_INT(d->split[DS_VAL].count, 12);
    T_EQ_INT(d->split[DS_TEST].count, 9);
    T_EQ_INT(d->n_classes, 5);
    T_EQ_INT(d->names_source, DS_NAMES_FILE);
    T_EQ_STR(ds_class_name(d, 3), "flower03");
    /* The parent folder (holding tfrecords-jpeg-32x32) opens the same dataset. */
    char parent[4096];
    snprintf(parent, sizeof parent, "%s/..", root);
    ds_dataset *d2;
    pt_err e;
    T_REQUIRE(ds_open(parent, 0, &d2, &e) == PT_OK);
    T_EQ_INT(d2->split[DS_TRAIN].count, 85);
    ds_free(d2);
    /* Labels scan agrees with what was written. */
    int32_t *labels;
    long long n, bad;
    T_REQUIRE(ds_scan_labels(&d->split[DS_TRAIN], &labels, &n, &bad, NULL, NULL, NULL, &e) == PT_OK);
    T_EQ_INT(n, 85);
    T_EQ_INT(bad, 0);
    long long cnt[5];
    smp_count_labels(labels, (size_t)n, 5, cnt);
    for (int k = 0; k < 5; k++)
        T_EQ_INT(cnt[k], COUNTS[k]);
    free(labels);
    ds_free(d);
}

TEST(dataset_count_from_name_and_errors)
{
    T_EQ_INT(ds_count_from_name("/x/00-192x192-798.tfrec"), 798);
    T_EQ_INT(ds_count_from_name("flowers00-230.tfrec"), 230);
    T_EQ_INT(ds_count_from_name("train.tfrecord"), -1);
    T_EQ_INT(ds_count_from_name("a-b.tfrec"), -1);
    T_EQ_INT(ds_count_from_name("val-00000-of-00001.tfrecord"), -1);
    ds_dataset *d;
    pt_err e;
    T_EQ_INT(ds_open(t_tmpdir(), 0, &d, &e), PT_ENODATA);
    T_CHECK(strstr(e.msg, "no dataset here") != NULL);
    T_EQ_INT(ds_open("/nonexistent/folder", 0, &d, &e), PT_ENODATA);
}

TEST(dataset_104_classes_get_the_competition_names)
{
    ds_dataset *d = open_fixture(NULL);
    T_REQUIRE(d);
    /* Remove classes.txt's effect by asking for more classes than it lists. */
    pt_err e;
    T_REQUIRE(ds_set_classes(d, 104, &e) == PT_OK);
    T_EQ_INT(d->names_source, DS_NAMES_COMPETITION);
    T_EQ_STR(ds_class_name(d, 0), "pink primrose");
    T_EQ_STR(ds_class_name(d, 103), "wild rose");
    T_REQUIRE(ds_set_classes(d, 7, &e) == PT_OK);
    T_EQ_INT(d->names_source, DS_NAMES_GENERATED);
    T_EQ_STR(ds_class_name(d, 6), "class 6");
    ds_free(d);
}

/* Reads a whole (non-repeating) stream; returns examples seen and checks labels. */
static long long drain(pipeline *p, long long *per_class, int n_classes, int *label_mismatch,
                       int *batches)
{
    batch *b;
    pt_err e;
    long long total = 0;
    int rc;
    *batches = 0;
    while ((rc = pipe_next(p, &b, &e)) == 1) {
        for (int i = 0; i < b->n; i++) {
            int lab = b->label[i];
            if (lab >= 0 && lab < n_classes)
                per_class[lab]++;
            if (fx_label_of(batch_image(b, i), b->w, b->h) != lab)
                (*label_mismatch)++;
        }
        total += b->n;
        (*batches)++;
        pipe_release(p, b);
    }
    T_CHECKF(rc == 0, "stream ended with %d: %s", rc, e.msg);
    return total;
}

TEST(pipeline_reads_every_record_once_with_its_label)
{
    ds_dataset *d = open_fixture(NULL);
    T_REQUIRE(d);
    for (int workers = 1; workers <= 3; workers++) {
        pipe_config c = base_config(d, DS_TRAIN, 7);
        c.workers = workers;
        c.shuffle_buffer = 16;
        pipeline *p;
        pt_err e;
        T_REQUIRE(pipe_create(&c, &p, &e) == PT_OK);
        long long per[5] = { 0 };
        int mism = 0, nb;
        T_EQ_INT(drain(p, per, 5, &mism, &nb), 85);
        T_EQ_INT(nb, 13); /* 12 full + 1 partial of 1 */
        T_EQ_INT(mism, 0);
        for (int k = 0; k < 5; k++)
            T_EQ_INT(per[k], COUNTS[k]);
        pipe_stats st;
        pipe_get_stats(p, &st);
        T_EQ_INT(st.errors, 0);
        T_EQ_INT(st.records_read, 85);
        pipe_destroy(p);
    }
    ds_free(d);
}

TEST(pipeline_drop_remainder_gives_full_batches_only)
{
    ds_dataset *d = open_fixture(NULL);
    T_REQUIRE(d);
    pipe_config c = base_config(d, DS_TRAIN, 10);
    c.drop_remainder = 1;
    pipeline *p;
    pt_err e;
    T_REQUIRE(pipe_create(&c, &p, &e) == PT_OK);
    batch *b;
    int nb = 0;
    while (pipe_next(p, &b, &e) == 1) {
        T_EQ_INT(b->n, 10);
        nb++;
        pipe_release(p, b);
    }
    T_EQ_INT(nb, 8);
    pipe_destroy(p);
    ds_free(d);
}

/* Signature of a stream: the (shard, record) of every example, batch by batch. */
static int signature(const ds_dataset *d, pipe_config c, int nbatches, long long *sig)
{
    pipeline *p;
    pt_err e;
    if (pipe_create(&c, &p, &e) != PT_OK)
        return -1;
    int k = 0;
    batch *b;
    for (int i = 0; i < nbatches && pipe_next(p, &b, &e) == 1; i++) {
        for (int j = 0; j < b->n; j++)
            sig[k++] = (long long)b->src[j].shard * 100000 + b->src[j].record;
        pipe_release(p, b);
    }
    pipe_destroy(p);
    (void)d;
    return k;
}

TEST(pipeline_same_seed_same_stream_other_seed_other_stream)
{
    ds_dataset *d = open_fixture(NULL);
    T_REQUIRE(d);
    pipe_config c = base_config(d, DS_TRAIN, 8);
    c.shuffle_buffer = 32;
    c.shuffle_shards = 1;
    c.repeat = 1;
    c.workers = 3;
    c.seed = 123;
    long long a[400], b2[400], x[400];
    int na = signature(d, c, 40, a);
    int nb = signature(d, c, 40, b2);
    c.seed = 124;
    int nx = signature(d, c, 40, x);
    T_EQ_INT(na, 320);
    T_CHECK(na == nb && memcmp(a, b2, sizeof(long long) * (size_t)na) == 0);
    T_CHECK(nx == na && memcmp(a, x, sizeof(long long) * (size_t)na) != 0);
    ds_free(d);
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

#define ROW_MAX 8 /* batch size of the rows below */

static int cmp_row(const void *a, const void *b)
{
    const long long *x = a, *y = b;
    for (int k = 0; k < ROW_MAX; k++)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    return 0;
}

/* The batches of a whole (non-repeating) stream as a canonical table: each batch a
 * row of its examples' (shard, record), sorted within the row and padded with
 * LLONG_MAX, the rows sorted. Returns the number of rows (batches), -1 on error. */
static int batch_rows(pipe_config c, int max_rows, long long (*rows)[ROW_MAX], int *examples)
{
    pipeline *p;
    pt_err e;
    if (c.batch_size > ROW_MAX || pipe_create(&c, &p, &e) != PT_OK)
        return -1;
    int n = 0;
    *examples = 0;
    batch *b;
    while (n < max_rows && pipe_next(p, &b, &e) == 1) {
        for (int j = 0; j < ROW_MAX; j++)
            rows[n][j] = j < b->n ? (long long)b->src[j].shard * 100000 + b->src[j].record
                                  : LLONG_MAX;
        qsort(rows[n], (size_t)b->n, sizeof rows[n][0], cmp_ll);
        *examples += b->n;
        n++;
        pipe_release(p, b);
    }
    pipe_destroy(p);
    qsort(rows, (size_t)n, sizeof rows[0], cmp_row);
    return n;
}

TEST(pipeline_fast_mode_same_batches_any_order)
{
    ds_dataset *d = open_fixture(NULL);
    T_REQUIRE(d);
    pipe_config c = base_config(d, DS_TRAIN, 5);
    c.shuffle_buffer = 20;
    c.workers = 3;
    c.deterministic = 1;
    long long det[40][ROW_MAX], fast[40][ROW_MAX];
    int e1, e2;
    int n1 = batch_rows(c, 40, det, &e1);
    c.deterministic = 0;
    int n2 = batch_rows(c, 40, fast, &e2);
    T_EQ_INT(e1, 85);
    T_EQ_INT(e2, 85);
    T_EQ_INT(n1, 17);
    T_EQ_INT(n2, 17);
    /* Every batch holds the same examples in both modes (pipeline.h: the plan is
     * the same; fast mode may hand the batches out in another order). */
    T_CHECK(n1 == n2 && memcmp(det, fast, sizeof det[0] * (size_t)(n1 > 0 ? n1 : 0)) == 0);
    /* The same examples, too (a check that does not depend on the batching). */
    long long all1[85], all2[85];
    int k1 = 0, k2 = 0;
    for (int i = 0; i < n1; i++)
        for (int j = 0; j < ROW_MAX && det[i][j] != LLONG_MAX && k1 < 85; j++)
            all1[k1++] = det[i][j];
    for (int i = 0; i < n2; i++)
        for (int j = 0; j < ROW_MAX && fast[i][j] != LLONG_MAX && k2 < 85; j++)
            all2[k2++] = fast[i][j];
    T_EQ_INT(k1, 85);
    T_EQ_INT(k2, 85);
    qsort(all1, (size_t)k1, sizeof all1[0], cmp_ll);
    qsort(all2, (size_t)k2, sizeof all2[0], cmp_ll);
    T_CHECK(k1 == k2 && memcmp(all1, all2, sizeof all1[0] * (size_t)k1) == 0);
    ds_free(d);
}

TEST(pipeline_oversampling_balances_classes_within_a_few_percent)
{
    /* The notebook's claim: with N = the largest class, every class lands near N. */
    const char *dir = t_tmpdir();
    long long counts[6] = { 300, 18, 60, 150, 33, 240 };
    const char *root = fx_dataset(dir, 6, counts, NULL, 0, 16, 200);
    T_REQUIRE(root);
    ds_dataset *d;
    pt_err e;
    T_REQUIRE(ds_open(root, 0, &d, &e) == PT_OK);
    smp_table t;
    T_REQUIRE(smp_build(&t, counts, 6, 0) == 0);
    T_EQ_INT(t.target, 300);
    T_NEAR(t.repeat[1], 300.0 / 18, 1e-12);
    T_NEAR(t.repeat[0], 1.0, 0);
    pipe_config c;
    pipe_config_defaults(&c);
    c.split = &d->split[DS_TRAIN];
    c.n_classes = 6;
    c.image_w = c.image_h = 16;
    c.batch_size = 32;
    c.oversample = &t;
    c.shuffle_buffer = 100;
    pipeline *p;
    T_REQUIRE(pipe_create(&c, &p, &e) == PT_OK);
    long long per[6] = { 0 };
    int mism = 0, nb;
    long long total = drain(p, per, 6, &mism, &nb);
    T_EQ_INT(mism, 0);
    for (int k = 0; k < 6; k++)
        T_CHECKF(per[k] >= 300 * 0.95 && per[k] <= 300 * 1.05, "class %d: %lld", k, per[k]);
    long long expect = smp_expected_total(&t, counts);
    T_CHECKF(llabs(total - expect) < expect / 20, "total %lld vs expected %lld", total, expect);
    /* The label counter's simulation of a pass agrees in the same way. */
    int32_t *labels;
    long long n, bad;
    T_REQUIRE(ds_scan_labels(&d->split[DS_TRAIN], &labels, &n, &bad, NULL, NULL, NULL, &e) == PT_OK);
    long long sim[6];
    smp_count_pass(&t, labels, (size_t)n, 5, sim);
    for (int k = 0; k < 6; k++)
        T_CHECKF(sim[k] >= 285 && sim[k] <= 315, "sim class %d: %lld", k, sim[k]);
    /* A target below the largest class leaves big classes alone. */
    smp_table t2;
    T_REQUIRE(smp_build(&t2, counts, 6, 100) == 0);
    T_NEAR(t2.repeat[0], 1.0, 0);
    T_NEAR(t2.repeat[1], 100.0 / 18, 1e-12);
    smp_free(&t2);
    free(labels);
    pipe_destroy(p);
    smp_free(&t);
    ds_free(d);
}

TEST(pipeline_repeat_cycles_through_the_data)
{
    ds_dataset *d = open_fixture(NULL);
    T_REQUIRE(d);
    pipe_config c = base_config(d, DS_VAL, 4);
    c.repeat = 1;
    c.shuffle_buffer = 5;
    pipeline *p;
    pt_err e;
    T_REQUIRE(pipe_create(&c, &p, &e) == PT_OK);
    long long per[5] = { 0 };
    batch *b;
    for (int i = 0; i < 30; i++) { /* 120 examples = 10 passes of 12 */
        T_REQUIRE(pipe_next(p, &b, &e) == 1);
        for (int j = 0; j < b->n; j++)
            per[b->label[j]]++;
        pipe_release(p, b);
    }
    for (int k = 0; k < 5; k++)
        T_CHECKF(llabs(per[k] - VCOUNTS[k] * 10) <= VCOUNTS[k] + 4, "class %d: %lld", k, per[k]);
    pipe_destroy(p);
    ds_free(d);
}

TEST(pipeline_resume_continues_exactly_where_it_stopped)
{
    ds_dataset *d = open_fixture(NULL);
    T_REQUIRE(d);
    pipe_config c = base_config(d, DS_TRAIN, 6);
    c.shuffle_buffer = 25;
    c.shuffle_shards = 1;
    c.repeat = 1;
    c.workers = 2;
    long long full[600], rest[600];
    int nf = signature(d, c, 50, full);
    c.start_batch = 17;
    int nr = signature(d, c, 33, rest);
    T_EQ_INT(nf, 300);
    T_EQ_INT(nr, 198);
    T_CHECK(memcmp(full + 17 * 6, rest, sizeof(long long) * 198) == 0);
    ds_free(d);
}

/* Every batch of a pipeline, copied (n, first, labels, mix, sources, images). */
typedef struct saved_batch {
    int n, first;
    int32_t label[8], label2[8];
    float mix[8];
    batch_src src[8];
    uint8_t img[8][32 * 32 * 3];
} saved_batch;

static int save_stream(pipe_config c, saved_batch *out, int max)
{
    pipeline *p;
    pt_err e;
    if (pipe_create(&c, &p, &e) != PT_OK)
        return -1;
    int k = 0;
    batch *b;
    while (k < max && pipe_next(p, &b, &e) == 1) {
        saved_batch *s = &out[k++];
        s->n = b->n;
        s->first = b->first;
        for (int i = 0; i < b->n && i < 8; i++) {
            s->label[i] = b->label[i];
            s->label2[i] = b->label2[i];
            s->mix[i] = b->mix[i];
            s->src[i] = b->src[i];
            memcpy(s->img[i], batch_image(b, i), sizeof s->img[i]);
        }
        pipe_release(p, b);
    }
    pipe_destroy(p);
    return k;
}

/* Three "ranks" each decoding their slice (3, 3 and 2 of 8) get exactly the examples,
 * pixels and mixing of the whole batches, with and without a chain that mixes
 * examples across the batch; at the end of a pass a slice past the last example
 * comes out empty rather than missing, so every rank sees as many batches. */
TEST(pipeline_slices_of_a_batch_are_the_whole_batch_cut_up)
{
    ds_dataset *d = open_fixture(NULL);
    T_REQUIRE(d);
    static const char *const specs[2] = { "flip:0.5,crop:1:scale=0.6,color:0.5",
                                          "flip:0.5,mixup:0.7" };
    static saved_batch whole[12], part[12];
    for (int k = 0; k < 2; k++) {
        aug_chain *chain;
        pt_err e;
        T_REQUIRE(aug_parse(specs[k], &chain, &e) == PT_OK);
        pipe_config c = base_config(d, DS_TRAIN, 8);
        c.shuffle_buffer = 20;
        c.shuffle_shards = 1;
        c.workers = 2;
        c.augment = aug_pipe_hook;
        c.augment_ctx = chain;
        c.augment_ws_free = aug_pipe_ws_free;
        c.augment_whole = aug_mixes(chain);
        T_EQ_INT(c.augment_whole, k);
        int nw = save_stream(c, whole, 12);
        T_EQ_INT(nw, 11); /* 85 examples: 10 of 8 and one of 5 */
        int mixed = 0;
        for (int r = 0; r < 3; r++) {
            c.slice_first = 3 * r;
            c.slice_count = r < 2 ? 3 : 2;
            int np = save_stream(c, part, 12);
            T_EQ_INT(np, nw);
            for (int j = 0; j < np && j < nw; j++) {
                int want = whole[j].n - c.slice_first;
                want = want < 0 ? 0 : want > c.slice_count ? c.slice_count : want;
                T_EQ_INT(part[j].n, want);
                for (int i = 0; i < part[j].n && i < want; i++) {
                    const saved_batch *w = &whole[j];
                    int g = c.slice_first + i;
                    T_CHECK(part[j].src[i].record == w->src[g].record &&
                            part[j].src[i].shard == w->src[g].shard);
                    T_CHECK(part[j].label[i] == w->label[g] && part[j].label2[i] == w->label2[g] &&
                            part[j].mix[i] == w->mix[g]);
                    T_CHECK(memcmp(part[j].img[i], w->img[g], sizeof w->img[g]) == 0);
                    mixed += part[j].mix[i] < 1.0f;
                }
            }
        }
        if (k == 1)
            T_CHECKF(mixed > 10, "only %d examples mixed", mixed);
        aug_free(chain);
    }
    ds_free(d);
}

TEST(pipeline_test_split_carries_ids_in_file_order)
{
    const char *root;
    ds_dataset *d = open_fixture(&root);
    T_REQUIRE(d);
    pipe_config c = base_config(d, DS_TEST, 4);
    c.workers = 2;
    pipeline *p;
    pt_err e;
    T_REQUIRE(pipe_create(&c, &p, &e) == PT_OK);
    /* File order: read the ids straight from the shard for comparison. */
    char want[9][16];
    tfr_reader *r;
    T_REQUIRE(tfr_open(&r, d->split[DS_TEST].shards[0].path, &e) == PT_OK);
    const uint8_t *pl;
    size_t len;
    int k = 0;
    while (k < 9 && tfr_next(r, &pl, &len, &e) == 1) {
        ex_example *ex;
        const uint8_t *id;
        size_t idl;
        T_REQUIRE(ex_parse(pl, len, &ex, NULL, 0, 0, &e) == PT_OK);
        T_REQUIRE(ex_get_bytes(ex, "id", &id, &idl, &e) == PT_OK);
        T_EQ_INT(idl, 9);
        memcpy(want[k], id, idl);
        want[k][idl] = 0;
        T_CHECK(ex_find(ex, "class") < 0);
        ex_free(ex);
        k++;
    }
    tfr_close(r);
    T_EQ_INT(k, 9);
    batch *b;
    int got = 0;
    while (pipe_next(p, &b, &e) == 1) {
        for (int i = 0; i < b->n; i++, got++) {
            T_EQ_INT(b->label[i], -1);
            T_EQ_STR(b->id[i], want[got]);
        }
        pipe_release(p, b);
    }
    T_EQ_INT(got, 9);
    pipe_destroy(p);
    ds_free(d);
}

/* Writes one Example record: "class" as the int64 cls (as the float *fcls instead
 * when fcls is given) and, when img is given, "image" with its ilen bytes. */
static void write_example(tfr_writer *w, int64_t cls, const float *fcls, const uint8_t *img,
                          size_t ilen)
{
    ex_builder *b = ex_builder_new();
    if (fcls)
        ex_add_float(b, "class", fcls, 1);
    else
        ex_add_int64(b, "class", &cls, 1);
    if (img)
        ex_add_bytes(b, "image", img, ilen);
    uint8_t *buf;
    size_t len;
    pt_err e;
    ex_serialize(b, &buf, &len);
    tfr_write(w, buf, len, &e);
    free(buf);
    ex_builder_free(b);
}

static void write_good(tfr_writer *w, const uint8_t *jpeg, size_t jlen)
{
    write_example(w, 1, NULL, jpeg, jlen);
}

/* A shard with one good record between each kind of bad one. */
/* The messages a pipeline's on_error received (from its worker threads). */
typedef struct error_log {
    pthread_mutex_t lock;
    char msg[64][1100];
    int n;
} error_log;

static void collect_error(void *ctx, const pt_err *err)
{
    error_log *log = ctx;
    pthread_mutex_lock(&log->lock);
    if (log->n < 64)
        snprintf(log->msg[log->n++], sizeof log->msg[0], "%s", err->msg);
    pthread_mutex_unlock(&log->lock);
}

static void write_bad_shard(const char *dir, const uint8_t *jpeg, size_t jlen,
                            long long *good_out, long long *bad_out)
{
    char path[4096];
    util_path(path, sizeof path, "%s/00-32x32-bad.tfrec", dir);
    tfr_writer *w;
    pt_err e;
    tfr_writer_open(&w, path, &e);
    long long good = 0, bad = 0;
    write_good(w, jpeg, jlen);
    good++;
    /* not an Example */
    tfr_write(w, "\xff\xff\xff\xff garbage", 13, &e);
    bad++;
    write_good(w, jpeg, jlen);
    good++;
    /* missing image */
    write_example(w, 1, NULL, NULL, 0);
    bad++;
    /* class of the wrong type, class out of range, non-JPEG bytes, huge header,
     * truncated JPEG data, a frame of width 0 (found by fuzzing: it left the header
     * reader's decompressor broken, and every later record was refused with it) */
    for (int kind = 0; kind < 6; kind++) {
        int64_t cls = kind == 1 ? 99 : 2;
        float fcls = 2.0f;
        uint8_t *img = malloc(jlen);
        memcpy(img, jpeg, jlen);
        size_t ilen = jlen;
        if (kind == 2)
            memcpy(img, "GIF89a", 6);
        if (kind == 3)
            for (size_t i = 2; i + 9 < jlen; i++)
                if (img[i] == 0xff && img[i + 1] == 0xc0) {
                    img[i + 5] = 0xfe;
                    img[i + 7] = 0xfe;
                    break;
                }
        if (kind == 4)
            ilen = jlen * 2 / 3;
        if (kind == 5)
            for (size_t i = 2; i + 9 < jlen; i++)
                if (img[i] == 0xff && img[i + 1] == 0xc0) {
                    img[i + 7] = 0;
                    img[i + 8] = 0;
                    break;
                }
        write_example(w, cls, kind == 0 ? &fcls : NULL, img, ilen);
        free(img);
        bad++;
        write_good(w, jpeg, jlen);
        good++;
    }
    tfr_writer_close(w, &e);
    *good_out = good;
    *bad_out = bad;
}

TEST(pipeline_skips_and_reports_every_kind_of_bad_record)
{
    const char *dir = t_tmpdir();
    char split[4096];
    snprintf(split, sizeof split, "%s/train", dir);
    pt_err e;
    T_REQUIRE(util_mkdirs(split, &e) == PT_OK);
    /* A real 32x32 JPEG. */
    jpg_codec *codec = jpg_codec_new();
    uint8_t rgb[32 * 32 * 3];
    for (int i = 0; i < 32 * 32 * 3; i++)
        rgb[i] = (uint8_t)(i % 3 == 0 ? 30 : (i * 13) & 255); /* red 30: label 1 */
    const uint8_t *jp;
    size_t jlen;
    T_REQUIRE(jpg_encode(codec, rgb, 32, 32, 90, &jp, &jlen, &e) == PT_OK);
    uint8_t *jpeg = malloc(jlen);
    memcpy(jpeg, jp, jlen);
    jpg_codec_free(codec);
    long long good, bad;
    write_bad_shard(split, jpeg, jlen, &good, &bad);
    /* A second shard whose tail is cut off. */
    char cut[4096];
    util_path(cut, sizeof cut, "%s/01-32x32-cut.tfrec", split);
    {
        tfr_writer *w;
        tfr_writer_open(&w, cut, &e);
        write_good(w, jpeg, jlen);
        write_good(w, jpeg, jlen);
        tfr_writer_close(w, &e);
        FILE *f = fopen(cut, "r+b");
        fseek(f, 0, SEEK_END);
        long sz = ftell(f);
        fclose(f);
        T_REQUIRE(truncate(cut, sz - 10) == 0);
        good += 1;
        bad += 1;
    }
    ds_dataset *d;
    T_REQUIRE(ds_open(dir, 0, &d, &e) == PT_OK);
    T_REQUIRE(ds_set_classes(d, 3, &e) == PT_OK);
    pipe_config c = base_config(d, DS_TRAIN, 4);
    c.interleave = 2;
    error_log log;
    memset(&log, 0, sizeof log);
    pthread_mutex_init(&log.lock, NULL);
    c.on_error = collect_error;
    c.error_ctx = &log;
    pipeline *p;
    T_REQUIRE(pipe_create(&c, &p, &e) == PT_OK);
    long long per[3] = { 0 };
    int mism = 0, nb;
    long long total = drain(p, per, 3, &mism, &nb);
    T_EQ_INT(total, good);
    T_EQ_INT(mism, 0);
    pipe_stats st;
    pipe_get_stats(p, &st);
    T_EQ_INT(st.errors, bad);
    /* Every message names the file, the record and the byte offset. */
    int nmsg = 0, saw[9] = { 0 };
    const char *needles[9] = { "not a tf.train.Example", "'image' is missing",
                               "'class' is float, expected int64", "class 99 outside 0..2",
                               "not a JPEG", "over the limit", "JPEG data is corrupt",
                               "truncated", "Empty JPEG image" };
    for (int m = 0; m < log.n; m++) {
        const char *msg = log.msg[m];
        nmsg++;
        T_CHECKF(strstr(msg, ".tfrec: record ") && strstr(msg, " at byte "), "%s", msg);
        for (int k = 0; k < 9; k++)
            if (strstr(msg, needles[k]))
                saw[k] = 1;
    }
    T_EQ_INT(nmsg, bad);
    for (int k = 0; k < 9; k++)
        T_CHECKF(saw[k], "no message about: %s", needles[k]);
    pipe_destroy(p);

    /* stop_on_error: the first bad record ends the stream with its message. */
    c.stop_on_error = 1;
    c.interleave = 1;
    T_REQUIRE(pipe_create(&c, &p, &e) == PT_OK);
    batch *b;
    int rc;
    while ((rc = pipe_next(p, &b, &e)) == 1)
        pipe_release(p, b);
    T_EQ_INT(rc, PT_EPARSE);
    T_EQ_INT(e.record, 1);
    T_CHECK(e.offset > 0 && strstr(e.msg, "00-32x32-bad.tfrec") != NULL);
    pipe_destroy(p);
    free(jpeg);
    ds_free(d);
}

TEST(pipeline_destroy_while_workers_wait_does_not_hang_or_leak)
{
    ds_dataset *d = open_fixture(NULL);
    T_REQUIRE(d);
    pipe_config c = base_config(d, DS_TRAIN, 4);
    c.repeat = 1;
    c.workers = 3;
    c.prefetch = 2;
    for (int i = 0; i < 5; i++) {
        pipeline *p;
        pt_err e;
        T_REQUIRE(pipe_create(&c, &p, &e) == PT_OK);
        batch *b;
        if (i % 2 == 0) {
            T_REQUIRE(pipe_next(p, &b, &e) == 1); /* keep one batch out */
        }
        usleep(20000);
        pipe_destroy(p);
    }
    ds_free(d);
}

TEST(pipeline_endless_stream_of_undecodable_images_ends_in_an_error)
{
    /* Every record's JPEG has a good header but is cut off: nothing decodes. A
     * repeating stream must say so instead of skipping empty batches forever. */
    const char *dir = t_tmpdir();
    char split[4096];
    util_path(split, sizeof split, "%s/train", dir);
    pt_err e;
    T_REQUIRE(util_mkdirs(split, &e) == PT_OK);
    jpg_codec *codec = jpg_codec_new();
    uint8_t rgb[32 * 32 * 3];
    for (int i = 0; i < 32 * 32 * 3; i++)
        rgb[i] = (uint8_t)(i * 7);
    const uint8_t *jp;
    size_t jlen;
    T_REQUIRE(jpg_encode(codec, rgb, 32, 32, 90, &jp, &jlen, &e) == PT_OK);
    char path[4200];
    util_path(path, sizeof path, "%s/00-32x32-20.tfrec", split);
    tfr_writer *w;
    T_REQUIRE(tfr_writer_open(&w, path, &e) == PT_OK);
    for (int i = 0; i < 20; i++)
        write_example(w, i % 2, NULL, jp, jlen * 3 / 4);
    T_REQUIRE(tfr_writer_close(w, &e) == PT_OK);
    jpg_codec_free(codec);
    ds_dataset *d;
    T_REQUIRE(ds_open(dir, 0, &d, &e) == PT_OK);
    T_REQUIRE(ds_set_classes(d, 2, &e) == PT_OK);
    pipe_config c = base_config(d, DS_TRAIN, 4);
    c.repeat = 1;
    pipeline *p;
    T_REQUIRE(pipe_create(&c, &p, &e) == PT_OK);
    batch *b;
    int rc = pipe_next(p, &b, &e);
    T_EQ_INT(rc, PT_EJPEG);
    T_CHECKF(strstr(e.msg, "no decodable image") != NULL, "%s", e.msg);
    pipe_stats st;
    pipe_get_stats(p, &st);
    T_CHECK(st.errors > 20);
    pipe_destroy(p);
    ds_free(d);
}

TEST(class_name_tables_compiled_in_from_assets)
{
    /* The competition's flowers, in the notebooks' order. */
    T_EQ_INT((long long)ds_competition_class_count, 104);
    T_EQ_STR(ds_competition_classes[0], "pink primrose");
    T_EQ_STR(ds_competition_classes[103], "wild rose");
    /* ImageNet-1k in index order, as pretrained backbones predict: 985 is the
     * daisy the ONNX import's conformance check looks for. */
    T_EQ_INT((long long)ds_imagenet_class_count, 1000);
    T_EQ_STR(ds_imagenet_classes[0], "tench");
    T_EQ_STR(ds_imagenet_classes[985], "daisy");
    T_EQ_STR(ds_imagenet_classes[999], "toilet tissue");
    for (size_t i = 0; i < ds_imagenet_class_count; i++)
        T_CHECKF(ds_imagenet_classes[i][0] != '\0', "class %zu has no name", i);
}

/* The file source (predict's): the files in order, batch after batch; a file that
 * fails keeps its place (black, label -1) with its error in file_errors, the others
 * decoded as pipe_decode_file decodes them. */
TEST(pipeline_file_source_keeps_order_and_each_files_error)
{
    const char *dir = t_tmpdir();
    char paths[5][4200];
    const char *names[5] = { "a.jpg", "b.jpg", "c.jpg", "d", "e.jpg" };
    for (int i = 0; i < 5; i++)
        snprintf(paths[i], sizeof paths[i], "%s/%s", dir, names[i]);
    pt_err e;
    for (int i = 0; i < 5; i += 2) {
        uint8_t *buf;
        size_t len;
        T_REQUIRE(fx_demo_jpeg(i, 7, 40, &buf, &len) == PT_OK);
        T_REQUIRE(util_write_file_atomic(paths[i], buf, len, &e) == PT_OK);
        free(buf);
    }
    T_REQUIRE(util_write_file_atomic(paths[1], "not an image", 12, &e) == PT_OK);
    T_REQUIRE(util_mkdirs(paths[3], &e) == PT_OK);
    char *files[5] = { paths[0], paths[1], paths[2], paths[3], paths[4] };
    pt_err errs[5];
    pipe_config c;
    pipe_config_defaults(&c);
    c.files = files;
    c.n_files = 5;
    c.file_errors = errs;
    c.labeled = 0;
    c.image_w = c.image_h = 16;
    c.batch_size = 2;
    c.workers = 2;
    pipeline *p;
    T_REQUIRE(pipe_create(&c, &p, &e) == PT_OK);
    jpg_codec *jc = jpg_codec_new();
    img_scratch sc = { 0 };
    uint8_t want[16 * 16 * 3];
    batch *b;
    long long next = 0;
    int got;
    while ((got = pipe_next(p, &b, &e)) == 1) {
        T_EQ_INT(b->n, next < 4 ? 2 : 1);
        for (int i = 0; i < b->n; i++, next++) {
            T_EQ_INT((int)b->src[i].record, (int)next);
            T_EQ_INT(b->label[i], -1);
            int ok = pipe_decode_file(jc, &sc, files[next], 0, want, 16, 1, 0, &e) == PT_OK;
            T_EQ_INT(errs[next].code == PT_OK, ok);
            if (ok)
                T_CHECK(memcmp(batch_image(b, i), want, sizeof want) == 0);
            else
                T_EQ_STR(errs[next].file, files[next]);
        }
        pipe_release(p, b);
    }
    T_EQ_INT(got, 0);
    T_EQ_INT((int)next, 5);
    T_CHECK(errs[1].code != PT_OK && errs[3].code != PT_OK);
    T_CHECK(strstr(errs[3].msg, "a folder") != NULL);
    pipe_destroy(p);
    jpg_codec_free(jc);
    img_scratch_free(&sc);
}
