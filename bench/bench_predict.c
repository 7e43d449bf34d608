/* bench_predict — inference speed against ONNX Runtime (issue 28). For `small` at
 * 128 px and MobileNetV2 at 128 and 224 px (seeded weights, 104 classes):
 *   - the time to export the model to ONNX;
 *   - the forward pass alone, img/s, petal-tui's inference contexts (a batch split
 *     over T replica threads) against ONNX Runtime running the exported file on the
 *     same input (onnxruntime-node, graph optimisations all on, T intra-op threads),
 *     T = 1 and 2, batch 1 and 32; best of a few runs after a warm-up, wall time, in
 *     three rounds that alternate the two sides (the VM's speed wanders);
 *   - `petal-tui predict FILE.onnx FOLDER` end to end on real photos (JPEG decode
 *     included), img/s and peak RSS, beside the context memory training and
 *     inference need for the same batch; and on every photo of flower-jpegs-320, predict
 *     beside the README's Node script on ONNX Runtime (tests/ort/predict_folder.js).
 * Prints, never asserts. ONNX Runtime is tests/ort (make ort-deps); without it the
 * peer's cells say so.
 *
 *   bench_predict            everything (a few minutes on 2 cores)
 *   bench_predict quick      fewer repeats, small only
 *   bench_predict layers NET SIZE BATCH   every node's forward time in the export read
 *                            back (thread CPU time), for tuning (PT_BENCH_UNPACKED=1:
 *                            the weights read in place, not packed as predict packs them)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/rng.h"
#include "base/util.h"
#include "bench/bench_common.h"
#include "nn/nn.h"
#include "nn/nn_export.h"
#include "nn/nn_impl.h"
#include "nn/nn_models.h"
#include "infer/infer.h"
#include "infer/runmodel.h"
#include "pool/rpool.h"

#define ORT_SCRIPT "tests/ort/ort_run.js"
#define ROUNDS 4
#define ORT_MODULE "tests/ort/node_modules/onnxruntime-node/package.json"

static double now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

/* Best seconds of one forward of `batch` images on what predict runs: an inference
 * pool of `threads` replicas (persistent threads; a batch of fewer images than
 * replicas runs on one with the others as its team), from the images as bytes. */
static double petal_forward(nn_model *m, const uint8_t *x, int s, int nb, int threads,
                            int reps)
{
    rpool *pool;
    pt_err e;
    const int per = (nb + threads - 1) / threads;
    if (inf_pool_new(m, threads, per, 0, &pool, &e) != PT_OK) {
        fprintf(stderr, "bench_predict: %s\n", e.msg);
        return -1;
    }
    float *logits = malloc((size_t)nb * nn_model_classes(m) * sizeof *logits);
    double best = 1e30;
    (void)s;
    for (int r = 0; r <= reps && logits; r++) {
        double t0 = now();
        if (rpool_infer(pool, x, nb, logits, &e) != PT_OK) {
            fprintf(stderr, "bench_predict: %s\n", e.msg);
            break;
        }
        double dt = now() - t0;
        if (r > 0 && dt < best) /* run 0 warms up */
            best = dt;
    }
    free(logits);
    inf_pool_free(pool);
    return best;
}

/* ONNX Runtime's best seconds for the same forward, or -1 when it cannot run. */
static double ort_forward(const char *onnx, const char *input, int s, int nb, int threads,
                          int reps)
{
    if (access(ORT_MODULE, R_OK) != 0)
        return -1;
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "node " ORT_SCRIPT " %s %s %d,3,%d,%d /tmp/bench_predict/ort-out --threads %d "
             "--repeat %d",
             onnx, input, nb, s, s, threads, reps);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char line[1024] = "";
    if (!fgets(line, sizeof line, p))
        line[0] = '\0';
    pclose(p);
    const char *k = strstr(line, "\"seconds\":");
    return k ? atof(k + 10) : -1;
}

/* The first `batch` images of x (NHWC, [0, 1]) as ONNX Runtime's input: NCHW, 0-255. */
static int write_nchw(const char *path, const float *x, int s, int nb)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    for (int n = 0; n < nb; n++)
        for (int c = 0; c < 3; c++)
            for (int i = 0; i < s * s; i++) {
                float v = x[((size_t)n * s * s + i) * 3 + c] * 255.0f;
                fwrite(&v, sizeof v, 1, f);
            }
    return fclose(f);
}

/* `petal-tui predict` on a folder: wall seconds and the child's peak RSS (MiB). */
static int predict_run(const char *bin, const char *onnx, const char *dir, int threads,
                       double *secs, double *rss_mib)
{
    char reps[16];
    snprintf(reps, sizeof reps, "%d", threads);
    fflush(stdout); /* the child must not print the parent's buffered lines again */
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        execl(bin, bin, "predict", onnx, dir, "--batch", "32", "--replicas", reps, (char *)NULL);
        _exit(127);
    }
    int st;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &st, 0, &ru) < 0)
        return -1;
    *secs = now() - t0;
    *rss_mib = ru.ru_maxrss / 1024.0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* End to end on every photo of a folder (decode included): `petal-tui predict` with
 * its defaults beside the README's Node script on ONNX Runtime (one photo at a time,
 * the runtime's default threads), img/s. */
static void node_beside(const char *bin, const char *onnx, const char *dir)
{
    char cmd[2048];
    int files = 0;
    snprintf(cmd, sizeof cmd, "find %s -iname '*.jp*g' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    if (p) {
        if (fscanf(p, "%d", &files) != 1)
            files = 0;
        pclose(p);
    }
    if (files <= 0 || access(ORT_MODULE, R_OK) != 0) {
        printf("%-16s end to end beside ONNX Runtime: skipped (no %s or no onnxruntime-node)\n",
               "", dir);
        return;
    }
    fflush(stdout);
    snprintf(cmd, sizeof cmd, "%s predict %s %s > /dev/null 2>&1", bin, onnx, dir);
    double t0 = now();
    int rc1 = system(cmd);
    const double pt = now() - t0;
    snprintf(cmd, sizeof cmd, "node tests/ort/predict_folder.js %s %s > /dev/null", onnx, dir);
    t0 = now();
    int rc2 = system(cmd);
    const double ot = now() - t0;
    printf("%-16s %s (%d JPEGs), end to end: petal-tui predict %.1f img/s%s, the README's Node "
           "script on ONNX Runtime %.1f img/s%s: %.2fx\n",
           "", dir, files, files / pt, rc1 ? " (exit != 0)" : "", files / ot,
           rc2 ? " (exit != 0)" : "", ot / pt);
}

typedef struct net {
    const char *name;
    int size;
} net;

/* The net with seeded weights (the same in every mode), or NULL with the reason
 * printed. */
static nn_model *build(const net *n)
{
    pt_err e;
    nn_model *m;
    if (!strcmp(n->name, "small")) {
        int w[NN_SMALL_MAX_BLOCKS], st[NN_SMALL_MAX_BLOCKS];
        int k = nn_parse_widths("auto", n->size, w, st, &e);
        m = k < 0 ? NULL : nn_build_small_widths(n->size, n->size, 104, 0.2f, w, st, k, 1, &e);
    } else {
        m = nn_build_mobilenetv2(n->size, n->size, 104, 1.0f, 0.2f, &e);
    }
    if (!m)
        fprintf(stderr, "bench_predict: %s\n", e.msg);
    else
        nn_model_init_params(m, 7);
    return m;
}

/* The cores' float32 peak as petal-tui's own kernels reach it: GFLOP/s of one core
 * on a 512 x 512 x 512 product (nn_gemm_nn), best over a second; what each cell's GFLOP/s
 * is set against. */
static double fp32_peak(void)
{
    const int n = 512;
    const size_t bytes = (size_t)n * n * sizeof(float);
    float *a = util_aligned_alloc(bytes), *b = util_aligned_alloc(bytes),
          *c = util_aligned_alloc(bytes);
    for (int i = 0; i < n * n; i++)
        a[i] = b[i] = (float)(i % 17) * 0.01f;
    const nn_gemm_out o = { 0, NULL, 0, NULL, 0, NULL };
    double best = 1e30, start = now();
    for (int r = 0; r < 12 || now() - start < 1.0; r++) {
        double t0 = now();
        nn_gemm_nn(n, n, n, a, n, b, n, c, n, &o);
        double dt = now() - t0;
        best = dt < best ? dt : best;
    }
    util_aligned_free(a);
    util_aligned_free(b);
    util_aligned_free(c);
    return 2.0 * n * n * n / best * 1e-9;
}

/* The `layers` mode: each node of the export read back, forward ms and GFLOP/s. */
static int layers(const net *n, int nb)
{
    pt_err e;
    nn_model *m = build(n);
    if (!m)
        return 1;
    const char *onnx = "/tmp/bench_predict/layers.onnx";
    rm_model rm;
    nn_export_meta meta = { .image_size = n->size, .epoch = -1, .update = -1 };
    if (nn_export_onnx_file(m, &meta, onnx, &e) != PT_OK || rm_open(onnx, 0, &rm, &e) != PT_OK) {
        fprintf(stderr, "bench_predict: %s\n", e.msg);
        return 1;
    }
    size_t img = (size_t)n->size * n->size * 3;
    float *x = util_aligned_alloc(nb * img * sizeof *x);
    for (size_t i = 0; i < nb * img; i++)
        x[i] = (float)(i % 251) / 251.0f;
    nn_ctx *c = nn_ctx_new_infer(rm.net, nb, &e);
    if (c && !getenv("PT_BENCH_UNPACKED")) /* as predict's pool: the weights packed once */
        nn_ctx_pack_weights(c, &e);
    const int reps = 20;
    nn_forward(c, x, nb, 0, 0, 0);
    nn_ctx_set_profile(c, 1);
    nn_ctx_reset_profile(c);
    for (int r = 0; r < reps; r++)
        nn_forward(c, x, nb, 0, 0, 0);
    double tot = 0;
    printf("%s@%d batch %d, forward of the export read back:\n", n->name, n->size, nb);
    printf("  %-4s %-10s %-12s %-12s %8s %8s\n", "node", "layer", "input", "output", "ms",
           "GFLOP/s");
    for (int i = 0; i < nn_node_count(rm.net); i++) {
        nn_node_info ni, src;
        nn_node_get(rm.net, i, &ni);
        double f, b;
        nn_ctx_node_time(c, i, &f, &b);
        f /= reps;
        tot += f;
        if (f < 1e-6 || ni.in[0] < 0)
            continue;
        nn_node_get(rm.net, ni.in[0], &src);
        char name[32], in[32], out[32];
        if (ni.op == NN_OP_CONV)
            snprintf(name, sizeof name, "%s %dx%d/%d", ni.groups > 1 ? "dw" : "conv", ni.kh,
                     ni.kw, ni.stride);
        else
            snprintf(name, sizeof name, "%s", nn_op_name(ni.op));
        snprintf(in, sizeof in, "%dx%dx%d", src.h, src.w, src.c);
        snprintf(out, sizeof out, "%dx%dx%d", ni.h, ni.w, ni.c);
        printf("  %-4d %-10s %-12s %-12s %8.3f %8.1f\n", i, name, in, out, f * 1e3,
               nn_node_flops(rm.net, i, nb, 0) / f * 1e-9);
    }
    printf("  total %.2f ms = %.1f img/s on one thread\n", tot * 1e3, nb / tot);
    nn_ctx_free(c);
    util_aligned_free(x);
    rm_close(&rm);
    nn_model_free(m);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 4 && !strcmp(argv[1], "layers")) {
        nn_init();
        mkdir("/tmp/bench_predict", 0755);
        const net n = { argv[2], atoi(argv[3]) };
        return layers(&n, atoi(argv[4]));
    }
    int quick = argc > 1 && !strcmp(argv[1], "quick");
    const char *bin = getenv("PT_BIN") ? getenv("PT_BIN") : "build/petal-tui";
    const char *all_photos = getenv("PT_ALL_PHOTOS") ? getenv("PT_ALL_PHOTOS")
                                                     : "../shared/data/flower-jpegs-320";
    const char *photos = getenv("PT_PHOTOS") ? getenv("PT_PHOTOS")
                                             : "../shared/data/flower-jpegs-320/daisy";
    nn_init();
    bench_header("bench_predict");
    mkdir("/tmp/bench_predict", 0755);
    const net nets[] = { { "small", 128 }, { "mobilenetv2", 128 }, { "mobilenetv2", 224 } };
    int n_nets = quick ? 1 : 3, reps = quick ? 3 : 8;
    const double peak = fp32_peak();
    printf("fp32 peak: %.0f GFLOP/s a core (petal-tui's kernels, a 512^3 product)\n", peak);
    printf("forward alone, img/s (best of %d runs, 12x as many at batch 1, x %d alternated "
           "rounds, wall): petal-tui | ONNX Runtime, same file and input; petal-tui's GFLOP/s "
           "and %% of T cores' peak\n",
           reps, ROUNDS);
    printf("%-16s %7s %5s %3s %10s %10s %7s %8s %6s\n", "model", "export", "batch", "T",
           "petal-tui", "ORT", "ratio", "GFLOP/s", "peak");
    for (int k = 0; k < n_nets; k++) {
        const net *n = &nets[k];
        pt_err e;
        nn_model *m = build(n);
        if (!m)
            return 1;
        char onnx[256], input[256];
        snprintf(onnx, sizeof onnx, "/tmp/bench_predict/%s-%d.onnx", n->name, n->size);
        double t0 = now();
        nn_export_meta meta = { .image_size = n->size, .epoch = -1, .update = -1 };
        if (nn_export_onnx_file(m, &meta, onnx, &e) != PT_OK) {
            fprintf(stderr, "bench_predict: %s\n", e.msg);
            return 1;
        }
        double t_export = now() - t0;
        /* What `petal-tui predict FILE.onnx` runs: the export read back (batch norm
         * folded into the convolutions, dropout gone), as ONNX Runtime runs it. */
        rm_model rm;
        if (rm_open(onnx, 0, &rm, &e) != PT_OK) {
            fprintf(stderr, "bench_predict: %s\n", e.msg);
            return 1;
        }
        size_t img = (size_t)n->size * n->size * 3;
        float *x = util_aligned_alloc(32 * img * sizeof *x);
        uint8_t *xb = malloc(32 * img);
        rng r;
        rng_seed(&r, 11);
        for (size_t i = 0; i < 32 * img; i++) {
            xb[i] = (uint8_t)(int)rng_uniform(&r, 0.0f, 255.999f);
            x[i] = xb[i] / 255.0f;
        }
        printf("%-16s %.1f MFLOP/img forward\n", n->name, nn_flops(rm.net, 1, 0) * 1e-6);
        const int batches[2] = { 1, 32 };
        for (int b = 0; b < 2; b++) {
            snprintf(input, sizeof input, "/tmp/bench_predict/x%d-%d.f32", batches[b], n->size);
            write_nchw(input, x, n->size, batches[b]);
            for (int t = 1; t <= 2; t++) {
                /* The VM's speed wanders by tens of % from minute to minute: both sides
                 * are measured in alternation, ROUNDS times, and each keeps its best. */
                double pt = 1e30, ot = -1;
                for (int round = 0; round < ROUNDS; round++) {
                    /* A forward of one image takes a millisecond or two: its best of
                     * many, over as long a window as a batch's few. */
                    const int rb = batches[b] == 1 ? 12 * reps : reps;
                    double p1 = petal_forward(rm.net, xb, n->size, batches[b], t, rb);
                    double o1 = ort_forward(onnx, input, n->size, batches[b], t, rb);
                    pt = p1 > 0 && p1 < pt ? p1 : pt;
                    ot = o1 > 0 && (ot < 0 || o1 < ot) ? o1 : ot;
                }
                char name[32];
                snprintf(name, sizeof name, "%s@%d", n->name, n->size);
                printf("%-16s %6.0fms %5d %3d %10.1f ", name, t_export * 1e3, batches[b], t,
                       batches[b] / pt);
                const double gf = nn_flops(rm.net, 1, 0) * batches[b] / pt * 1e-9;
                if (ot > 0)
                    printf("%10.1f %6.2fx", batches[b] / ot, ot / pt);
                else
                    printf("%10s %7s", "n/a", "");
                printf(" %8.1f %5.0f%%\n", gf, 100 * gf / (peak * t));
                fflush(stdout);
            }
        }
        pt_err ce;
        nn_ctx *tc = nn_ctx_new(m, 32, &ce), *ic = nn_ctx_new_infer(rm.net, 32, &ce);
        printf("%-16s context memory at batch 32: training %.0f MiB, inference (the export "
               "read back) %.0f MiB\n", "",
               tc ? nn_ctx_bytes(tc) / 1048576.0 : -1.0, ic ? nn_ctx_bytes(ic) / 1048576.0 : -1.0);
        nn_ctx_free(tc);
        nn_ctx_free(ic);
        if (access(photos, R_OK) == 0)
            for (int t = 1; t <= 2; t++) {
                double secs = 0, rss = 0;
                int rc = predict_run(bin, onnx, photos, t, &secs, &rss);
                char cnt[512];
                snprintf(cnt, sizeof cnt, "ls %s | wc -l", photos);
                FILE *p = popen(cnt, "r");
                int files = 0;
                if (p) {
                    if (fscanf(p, "%d", &files) != 1)
                        files = 0;
                    pclose(p);
                }
                printf("%-16s predict %s (%d JPEGs, decode included), %d replica(s): %.1f img/s, "
                       "peak RSS %.0f MiB%s\n",
                       "", photos, files, t, files / secs, rss, rc == 0 ? "" : " (exit != 0)");
            }
        else
            printf("%-16s predict end to end: skipped (no %s; set PT_PHOTOS)\n", "", photos);
        if (!quick)
            node_beside(bin, onnx, all_photos);
        util_aligned_free(x);
        free(xb);
        rm_close(&rm);
        nn_model_free(m);
    }
    return 0;
}
