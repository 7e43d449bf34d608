/* Training throughput: images/s of whole optimizer updates (forward, loss, backward,
 * gradient reduce, Adam) through the replica strategy, for both built-in models at
 * 128 and 192 pixels with 1 and 2 replicas; the achieved GFLOP/s per replica next to
 * the single-core sgemm peak measured in this run; the scaling from 1 to 2 replicas.
 * Then a real run of the engine on photo shards (small, 192 px, 2 replicas) for its
 * input-idle telemetry. Batches are synthetic in the first part so that only the
 * training step is timed. */
#include <stdlib.h>
#include <unistd.h>

#include "base/rng.h"
#include "base/util.h"
#include "bench/bench_common.h"
#include "data/batch.h"
#include "data/shards.h"
#include "engine.h"
#include "nn/nn.h"
#include "nn/nn_models.h"
#include "nn/optim.h"
#include "pool/rpool.h"
#include "train/trainer.h"

#define CLASSES 5
#define BATCH 16

typedef struct result {
    double ips, gflops_per_replica;
} result;

static result measure(const char *model, double width, int size, int R, double min_s)
{
    result res = { 0, 0 };
    pt_err e;
    nn_model *m = !strcmp(model, "small")
                      ? nn_build_small(size, size, CLASSES, 0.2f, &e)
                      : nn_build_mobilenetv2(size, size, CLASSES, (float)width, 0.2f, &e);
    if (!m) {
        fprintf(stderr, "%s\n", e.msg);
        return res;
    }
    opt o;
    opt_init(&o, OPT_ADAM, nn_param_count(m), 0, 0);
    rpool_config c = { .model = m, .optimizer = &o, .replicas = R, .batch_per_replica = BATCH,
                       .grad_acc = 1 };
    rpool *s;
    if (rpool_new(&c, &s, &e) != PT_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return res;
    }
    batch *b = batch_new(R * BATCH, size, size);
    rng r;
    rng_seed(&r, 1);
    b->n = R * BATCH;
    for (size_t i = 0; i < (size_t)b->n * size * size * 3; i++)
        b->images[i] = (uint8_t)rng_below(&r, 256);
    for (int i = 0; i < b->n; i++) {
        b->label[i] = b->label2[i] = i % CLASSES;
        b->mix[i] = 1;
    }
    rpool_result sr;
    for (int i = 0; i < 2; i++)
        rpool_update(s, &b, 1e-3, i + 1, 7, &sr, NULL, &e);
    int n = 0;
    double t0 = util_now(), dt;
    do {
        rpool_update(s, &b, 1e-3, n + 3, 7, &sr, NULL, &e);
        n++;
        dt = util_now() - t0;
    } while (dt < min_s);
    res.ips = (double)n * R * BATCH / dt;
    res.gflops_per_replica = nn_flops(m, BATCH, 1) * n / dt * 1e-9;
    batch_free(b);
    rpool_free(s);
    opt_free(&o);
    nn_model_free(m);
    return res;
}

static const char *bench_dir(void)
{
    const char *d = getenv("PT_BENCH_DATA");
    return d && *d ? d : "build/bench-data";
}

static void idle_on_input(double peak)
{
    char out[4096], root[4200];
    util_path(out, sizeof out, "%s/photos-192-x1", bench_dir());
    util_path(root, sizeof root, "%s/tfrecords-jpeg-192x192", out);
    pt_err e;
    if (!util_is_dir(root)) {
        const char *sd = getenv("PT_SHARED_DATA");
        char src[4096];
        util_path(src, sizeof src, "%s/flower-jpegs-128", sd && *sd ? sd : "../shared/data");
        util_mkdirs(out, &e);
        shd_folder_config c = { .src_dir = src, .out_dir = out, .size = 192, .val_frac = 0.2,
                                .per_shard = 256, .quality = 95, .workers = 2, .seed = 42 };
        shd_result r;
        if (shd_from_folders(&c, &r, &e) != PT_OK) {
            fprintf(stderr, "%s\n", e.msg);
            return;
        }
    }
    run_config c;
    cfg_defaults(&c);
    util_copy(c.data, sizeof c.data, root);
    util_path(c.out, sizeof c.out, "%s/run-%ld", bench_dir(), (long)getpid());
    c.epochs = 1;
    c.replicas = 2;
    c.batch_per_replica = BATCH;
    eng *g;
    if (eng_create(&c, &g, &e) != PT_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return;
    }
    eng_start(g);
    static run_snapshot s;
    double busy[2] = { 0 }, idle[2] = { 0 }, mxu[2] = { 0 }, ips = 0;
    int samples = 0;
    /* Sample the live telemetry over the middle of the epoch. */
    while (!eng_wait(g, 0.5)) {
        eng_snapshot_get(g, &s);
        if (s.state == RUN_RUNNING && s.step > 10 && s.step < s.steps_per_epoch - 5) {
            for (int q = 0; q < 2; q++) {
                busy[q] += s.replica[q].busy_pct;
                idle[q] += s.replica[q].idle_pct;
                mxu[q] += s.replica[q].mxu_pct;
            }
            ips += s.total_images_per_sec;
            samples++;
        }
    }
    eng_snapshot_get(g, &s);
    eng_destroy(g);
    if (!samples) {
        printf("  (no telemetry samples)\n");
        return;
    }
    printf("engine on real photo shards, small, 192 px, 2 replicas x %d, default augmentation:\n",
           BATCH);
    for (int q = 0; q < 2; q++)
        printf("  replica %d: busy %.1f%%  idle-on-input %.1f%%  MXU %.1f%% (peak %.1f GFLOP/s)\n",
               q, busy[q] / samples, idle[q] / samples, mxu[q] / samples, peak);
    printf("  total %.1f img/s; epoch: %s\n", ips / samples, s.message);
}

int main(int argc, char **argv)
{
    double min_s = argc > 1 ? atof(argv[1]) : 4.0;
    bench_header("bench_train");
    double peak = trn_sgemm_peak(1.0, 0);
    printf("single-core sgemm peak (512^3, best of 1 s): %.1f GFLOP/s\n", peak);
    printf("per-replica batch %d, Adam, %d classes; GFLOP/s per replica (%% of peak)\n", BATCH,
           CLASSES);
    printf("%-18s %5s %12s %12s %16s %16s %8s\n", "model", "size", "R=1 img/s", "R=2 img/s",
           "R=1 GFLOP/s", "R=2 GFLOP/s", "scaling");
    struct {
        const char *name;
        double width;
    } models[] = { { "small", 1.0 }, { "mobilenetv2", 1.0 }, { "mobilenetv2", 0.5 } };
    int sizes[2] = { 128, 192 };
    for (size_t mi = 0; mi < sizeof models / sizeof models[0]; mi++)
        for (int si = 0; si < 2; si++) {
            result r1 = measure(models[mi].name, models[mi].width, sizes[si], 1, min_s);
            result r2 = measure(models[mi].name, models[mi].width, sizes[si], 2, min_s);
            char name[32];
            if (!strcmp(models[mi].name, "small"))
                util_copy(name, sizeof name, "small");
            else
                util_fmt(name, sizeof name, "mobilenetv2 x%.1f", models[mi].width);
            char g1[32], g2[32];
            util_fmt(g1, sizeof g1, "%.1f (%.0f%%)", r1.gflops_per_replica,
                     100 * r1.gflops_per_replica / peak);
            util_fmt(g2, sizeof g2, "%.1f (%.0f%%)", r2.gflops_per_replica,
                     100 * r2.gflops_per_replica / peak);
            printf("%-18s %5d %12.1f %12.1f %16s %16s %7.2fx\n", name, sizes[si], r1.ips, r2.ips,
                   g1, g2, r1.ips > 0 ? r2.ips / r1.ips : 0);
            fflush(stdout);
        }
    idle_on_input(peak);
    return 0;
}
