/* Input pipeline throughput and memory.
 *
 *   raw decode   TurboJPEG decode of in-memory JPEGs, one core, no framework around it
 *   pipeline     read + CRC + parse + decode (+ resize) + batch, 1 and 2 workers
 *   memory       peak RSS of a full pass over a dataset and over one 10x larger
 *
 * Datasets are made once under $PT_BENCH_DATA (default build/bench-data) from
 * ../shared/data/flower-jpegs-128 with the project's own shard writer. */
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "bench/bench_common.h"
#include "data/dataset.h"
#include "data/demo.h"
#include "data/jpeg.h"
#include "data/pipeline.h"
#include "data/shards.h"
#include "io/example.h"
#include "io/tfrecord.h"

static const char *bench_dir(void)
{
    const char *d = getenv("PT_BENCH_DATA");
    return d && *d ? d : "build/bench-data";
}

static const char *shared(void)
{
    const char *d = getenv("PT_SHARED_DATA");
    return d && *d ? d : "../shared/data";
}

/* Make (once) shards of the real photos at size s, `copies` times over. */
static int make_dataset(int size, int copies, char *root, size_t n)
{
    char out[4096];
    snprintf(out, sizeof out, "%s/photos-%d-x%d", bench_dir(), size, copies);
    util_path(root, n, "%s/tfrecords-jpeg-%dx%d", out, size, size);
    if (util_is_dir(root))
        return 0;
    pt_err e;
    if (util_mkdirs(out, &e) != PT_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return -1;
    }
    if (copies == 1) {
        char src[4096];
        snprintf(src, sizeof src, "%s/flower-jpegs-128", shared());
        shd_folder_config c = { .src_dir = src, .out_dir = out, .size = size, .val_frac = 0.2,
                                .per_shard = 256, .quality = 95, .workers = 2, .seed = 42 };
        shd_result r;
        if (shd_from_folders(&c, &r, &e) != PT_OK) {
            fprintf(stderr, "%s\n", e.msg);
            return -1;
        }
        return 0;
    }
    /* A larger dataset: the train shards of the x1 set repeated, under new names. */
    char base[4096];
    if (make_dataset(size, 1, base, sizeof base) != 0)
        return -1;
    char tmp[4096], train[4096];
    util_path(tmp, sizeof tmp, "%s.tmp", root);
    util_path(train, sizeof train, "%s/train", tmp);
    if (util_mkdirs(train, &e) != PT_OK)
        return -1;
    ds_dataset *d;
    if (ds_open(base, 0, &d, &e) != PT_OK)
        return -1;
    int k = 0;
    for (int c = 0; c < copies; c++)
        for (int i = 0; i < d->split[DS_TRAIN].n_shards; i++) {
            const ds_shard *sh = &d->split[DS_TRAIN].shards[i];
            char dst[4200];
            snprintf(dst, sizeof dst, "%s/%03d-%dx%d-%lld.tfrec", train, k++, size, size, sh->count);
            char cmd[9000];
            snprintf(cmd, sizeof cmd, "cp '%s' '%s'", sh->path, dst);
            if (system(cmd) != 0)
                return -1;
        }
    ds_free(d);
    return rename(tmp, root) == 0 ? 0 : -1;
}

/* All image payloads of a split, in memory. */
typedef struct blobs {
    uint8_t **data;
    size_t *len;
    int n;
} blobs;

static void load_blobs(const ds_split *s, blobs *b)
{
    b->n = 0;
    b->data = malloc(sizeof *b->data * (size_t)s->count);
    b->len = malloc(sizeof *b->len * (size_t)s->count);
    for (int i = 0; i < s->n_shards; i++) {
        tfr_reader *r;
        if (tfr_open(&r, s->shards[i].path, NULL) != PT_OK)
            continue;
        const uint8_t *p;
        size_t len;
        while (tfr_next(r, &p, &len, NULL) == 1 && b->n < s->count) {
            ex_example *ex;
            if (ex_parse(p, len, &ex, NULL, 0, 0, NULL) != PT_OK)
                continue;
            const uint8_t *img;
            size_t il;
            if (ex_get_bytes(ex, "image", &img, &il, NULL) == PT_OK) {
                b->data[b->n] = malloc(il);
                memcpy(b->data[b->n], img, il);
                b->len[b->n++] = il;
            }
            ex_free(ex);
        }
        tfr_close(r);
    }
}

static void free_blobs(blobs *b)
{
    for (int i = 0; i < b->n; i++)
        free(b->data[i]);
    free(b->data);
    free(b->len);
}

/* Images/s of plain decoding into a buffer of the output size. */
static double raw_decode(const blobs *b, int out, double min_seconds)
{
    jpg_codec *c = jpg_codec_new();
    uint8_t *buf = malloc((size_t)out * out * 3);
    long long n = 0;
    double t0 = util_now(), dt;
    do {
        for (int i = 0; i < b->n; i++, n++)
            jpg_decode_into(c, b->data[i], b->len[i], buf, out, out, 1, 0, NULL, NULL, NULL);
        dt = util_now() - t0;
    } while (dt < min_seconds);
    free(buf);
    jpg_codec_free(c);
    return (double)n / dt;
}

/* Images/s of the pipeline over a split, repeating until min_images. */
static double pipeline_rate(const ds_dataset *d, int out, int workers, long long min_images,
                            int n_classes)
{
    pipe_config c;
    pipe_config_defaults(&c);
    c.split = &d->split[DS_TRAIN];
    c.n_classes = n_classes;
    c.image_w = c.image_h = out;
    c.batch_size = 64;
    c.drop_remainder = 1;
    c.repeat = 1;
    c.shuffle_buffer = 512;
    c.shuffle_shards = 1;
    c.workers = workers;
    c.prefetch = 4;
    c.deterministic = 1;
    pipeline *p;
    pt_err e;
    if (pipe_create(&c, &p, &e) != PT_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return 0;
    }
    batch *b;
    /* Warm up: fill the shuffle buffer and the queue. */
    for (int i = 0; i < 8 && pipe_next(p, &b, &e) == 1; i++)
        pipe_release(p, b);
    long long n = 0;
    double t0 = util_now();
    while (n < min_images && pipe_next(p, &b, &e) == 1) {
        n += b->n;
        pipe_release(p, b);
    }
    double dt = util_now() - t0;
    pipe_destroy(p);
    return (double)n / dt;
}

/* Raw decode, 1 and 2 workers, in three alternating rounds; the best of each
 * (the machine's other load only ever slows a round down). */
static void measure_row(const char *label, const ds_dataset *d, const blobs *b, int out,
                        int n_classes)
{
    double raw = 0, p1 = 0, p2 = 0;
    for (int round = 0; round < 3; round++) {
        double r = raw_decode(b, out, 1.5);
        double a = pipeline_rate(d, out, 1, (long long)(r * 2), n_classes);
        double c = pipeline_rate(d, out, 2, (long long)(r * 3), n_classes);
        raw = r > raw ? r : raw;
        p1 = a > p1 ? a : p1;
        p2 = c > p2 ? c : p2;
    }
    printf("%-28s %10.0f %10.0f %10.0f %8.0f%% %8.2fx\n", label, raw, p1, p2, 100 * p1 / raw,
           p2 / p1);
    fflush(stdout);
}

/* Peak RSS (MiB) of a child that runs one full pass of the pipeline. */
static double pass_peak_mib(const char *root, int out, int workers, long long *images)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        ds_dataset *d;
        pt_err e;
        long long n = 0;
        if (ds_open(root, 0, &d, &e) == PT_OK) {
            pipe_config c;
            pipe_config_defaults(&c);
            c.split = &d->split[DS_TRAIN];
            c.n_classes = 5;
            c.image_w = c.image_h = out;
            c.batch_size = 64;
            c.shuffle_buffer = 512;
            c.workers = workers;
            pipeline *p;
            if (pipe_create(&c, &p, &e) == PT_OK) {
                batch *b;
                while (pipe_next(p, &b, &e) == 1) {
                    n += b->n;
                    pipe_release(p, b);
                }
                pipe_destroy(p);
            }
            ds_free(d);
        }
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        long long msg[2] = { n, (long long)ru.ru_maxrss };
        if (write(fds[1], msg, sizeof msg) != (ssize_t)sizeof msg)
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    long long msg[2] = { 0, 0 };
    if (read(fds[0], msg, sizeof msg) != (ssize_t)sizeof msg)
        msg[1] = -1024;
    close(fds[0]);
    waitpid(pid, NULL, 0);
    *images = msg[0];
    return (double)msg[1] / 1024.0;
}

int main(void)
{
    bench_header("bench_pipeline");
    printf("pipeline: batch 64, shuffle buffer 512, interleave 4, deterministic, prefetch 4\n");
    printf("best of 3 alternating rounds each (raw 1.5 s; pipelines 2x / 3x raw's images)\n");
    printf("%-28s %10s %10s %10s %9s %9s\n", "data", "raw img/s", "1w img/s", "2w img/s",
           "1w/raw", "2w/1w");
    int sizes[2] = { 128, 192 };
    for (int si = 0; si < 2; si++) {
        char root[4096];
        if (make_dataset(sizes[si], 1, root, sizeof root) != 0)
            return 1;
        ds_dataset *d;
        pt_err e;
        if (ds_open(root, 0, &d, &e) != PT_OK) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        blobs b;
        load_blobs(&d->split[DS_TRAIN], &b);
        int outs[2] = { sizes[si], sizes[si] / 2 };
        for (int oi = 0; oi < 2; oi++) {
            char label[64];
            snprintf(label, sizeof label, "photos %d -> %d", sizes[si], outs[oi]);
            measure_row(label, d, &b, outs[oi], 5);
        }
        free_blobs(&b);
        ds_free(d);
    }

    {
        /* The built-in demo data (128 px procedural flowers). */
        char demo[4096];
        pt_err e;
        ds_dataset *d;
        if (demo_ensure(NULL, demo, sizeof demo, NULL, NULL, &e) != PT_OK ||
            ds_open(demo, 0, &d, &e) != PT_OK) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        blobs b;
        load_blobs(&d->split[DS_TRAIN], &b);
        int outs[2] = { 128, 64 };
        for (int oi = 0; oi < 2; oi++) {
            char label[64];
            snprintf(label, sizeof label, "demo 128 -> %d", outs[oi]);
            measure_row(label, d, &b, outs[oi], 12);
        }
        free_blobs(&b);
        ds_free(d);
    }

    printf("\npeak memory of one full pass (2 workers, output 192, batch 64, shuffle 512):\n");
    for (int copies = 1; copies <= 10; copies += 9) {
        char root[4096];
        if (make_dataset(192, copies, root, sizeof root) != 0)
            return 1;
        long long images = 0;
        double mib = pass_peak_mib(root, 192, 2, &images);
        printf("  %6lld images (%2dx data): peak RSS %.1f MiB\n", images, copies, mib);
        fflush(stdout);
    }
    return 0;
}
