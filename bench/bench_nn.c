/* bench_nn — speed of the nn library on one thread: the sgemm peak it is measured
 * against, training steps (forward + backward) of the built-in models, and a per-layer
 * breakdown of `small`. Prints, never asserts.
 *
 * Times are the calling thread's CPU time (everything, sgemm included, runs on it),
 * best of a few runs: on a shared machine that is the figure that does not depend on
 * what else runs. The wall time of the same runs is printed beside it.
 *
 *   bench_nn            everything (about a minute on a 2-core VM)
 *   bench_nn quick      batch 8 and fewer repeats (a smoke run)
 *   bench_nn small      only `small` at 128x128 and its breakdown (for tuning)
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/util.h"
#include "bench/bench_common.h"
#include "nn/nn.h"
#include "nn/nn_models.h"

static float *rand_buf(size_t n, uint64_t seed)
{
    float *p = util_aligned_alloc(n * sizeof *p);
    rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        p[i] = rng_uniform(&r, -1.0f, 1.0f);
    return p;
}

/* Best GFLOP/s of C = op(A) B over a few runs. trans_a: A stored K x M. */
static double sgemm_rate(int M, int N, int K, int trans_a, int reps)
{
    float *a = rand_buf((size_t)M * K, 1), *b = rand_buf((size_t)K * N, 2),
          *c = rand_buf((size_t)M * N, 3);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = util_thread_cpu();
        if (trans_a)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, M, N, K, 1.0f, a, M, b, N, 1.0f,
                        c, N);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a, K, b, N, 0.0f,
                        c, N);
        t = util_thread_cpu() - t;
        if (t < best)
            best = t;
    }
    util_aligned_free(a);
    util_aligned_free(b);
    util_aligned_free(c);
    return 2.0 * M * N * K / best * 1e-9;
}

typedef struct step_result {
    double sec;        /* per training step (forward + backward), thread CPU time */
    double wall;       /* the same step's wall time */
    double fwd_sec;    /* per inference forward, thread CPU time */
    double mib;        /* context size */
} step_result;

static step_result time_steps(nn_model *m, int batch, int reps, int profile, nn_ctx **keep)
{
    step_result r = {0, 0, 0, 0};
    int h, w, c;
    nn_model_input_shape(m, &h, &w, &c);
    const int k = nn_model_classes(m);
    nn_ctx *ctx = nn_ctx_new(m, batch, NULL);
    if (!ctx) {
        printf("  (no memory for a context of batch %d)\n", batch);
        return r;
    }
    float *x = rand_buf((size_t)batch * h * w * c, 4);
    for (size_t i = 0; i < (size_t)batch * h * w * c; i++)
        x[i] = 0.5f + 0.5f * x[i];
    float *dl = rand_buf((size_t)batch * k, 5);
    for (int i = 0; i < batch * k; i++)
        dl[i] *= 1e-3f;
    /* Warm-up: first touch of every buffer, OpenBLAS's own buffers. */
    nn_forward(ctx, x, batch, 1, 1, 0);
    nn_backward(ctx, dl);
    nn_ctx_set_profile(ctx, profile);
    nn_ctx_reset_profile(ctx);
    double best = 1e30;
    for (int i = 0; i < reps; i++) {
        double w0 = util_now(), t = util_thread_cpu();
        nn_forward(ctx, x, batch, 1, 1, 0);
        nn_backward(ctx, dl);
        t = util_thread_cpu() - t;
        if (t < best) {
            best = t;
            r.wall = util_now() - w0;
        }
    }
    r.sec = best;
    nn_ctx_set_profile(ctx, 0);
    r.fwd_sec = 1e30;
    for (int i = 0; i < reps; i++) {
        double t = util_thread_cpu();
        nn_forward(ctx, x, batch, 0, 0, 0);
        t = util_thread_cpu() - t;
        if (t < r.fwd_sec)
            r.fwd_sec = t;
    }
    r.mib = (double)nn_ctx_bytes(ctx) / (1 << 20);
    util_aligned_free(x);
    util_aligned_free(dl);
    if (keep)
        *keep = ctx;
    else
        nn_ctx_free(ctx);
    return r;
}

/* Time per kind of layer (summed over nodes), for spotting where a model's time goes. */
static void kind_summary(nn_model *m, nn_ctx *ctx, int batch, int reps)
{
    enum { K1x1, K3x3, KDW, KBN, KPOOL, KOTHER, NK };
    static const char *names[NK] = {"conv1x1", "conv kxk", "depthwise", "batchnorm(+act)",
                                    "pool", "other"};
    double t[NK] = {0}, f[NK] = {0};
    for (int i = 0; i < nn_node_count(m); i++) {
        nn_node_info ni;
        nn_node_get(m, i, &ni);
        double tf, tb;
        nn_ctx_node_time(ctx, i, &tf, &tb);
        int k = KOTHER;
        if (ni.op == NN_OP_CONV)
            k = ni.groups > 1 && ni.groups == ni.c ? KDW : ni.kh == 1 && ni.kw == 1 ? K1x1 : K3x3;
        else if (ni.op == NN_OP_BN || ni.op == NN_OP_RELU || ni.op == NN_OP_RELU6)
            k = KBN;
        else if (ni.op == NN_OP_MAXPOOL || ni.op == NN_OP_AVGPOOL || ni.op == NN_OP_GAP)
            k = KPOOL;
        t[k] += (tf + tb) / reps;
        f[k] += nn_node_flops(m, i, batch, 1);
    }
    printf("      by kind:");
    for (int k = 0; k < NK; k++)
        if (t[k] > 0)
            printf(" %s %.0f ms%s", names[k], t[k] * 1e3, f[k] > 0 ? "" : ";");
    printf("\n      GFLOP/s:");
    for (int k = 0; k < NK; k++)
        if (f[k] > 0)
            printf(" %s %.1f;", names[k], f[k] / t[k] * 1e-9);
    printf("\n");
}

static void layer_breakdown(nn_model *m, nn_ctx *ctx, int batch, int reps, double peak)
{
    printf("    %-4s %-18s %-12s %9s %9s %9s %9s\n", "node", "layer", "output", "fwd ms", "GFLOP/s",
           "bwd ms", "GFLOP/s");
    double tot_f = 0, tot_b = 0, conv_f = 0, conv_b = 0;
    for (int i = 0; i < nn_node_count(m); i++) {
        nn_node_info ni;
        nn_node_get(m, i, &ni);
        double tf, tb;
        nn_ctx_node_time(ctx, i, &tf, &tb);
        tf /= reps;
        tb /= reps;
        tot_f += tf;
        tot_b += tb;
        if (tf + tb < 1e-5)
            continue;
        double ff = nn_node_flops(m, i, batch, 0), fb = nn_node_flops(m, i, batch, 1) - ff;
        char name[40], shape[32];
        if (ni.op == NN_OP_CONV)
            snprintf(name, sizeof name, "conv %dx%d/%d%s", ni.kh, ni.kw, ni.stride,
                     ni.groups > 1 ? " dw" : "");
        else
            snprintf(name, sizeof name, "%s", nn_op_name(ni.op));
        snprintf(shape, sizeof shape, "%dx%dx%d", ni.h, ni.w, ni.c);
        if (ff > 0) {
            conv_f += tf;
            conv_b += tb;
            printf("    %-4d %-18s %-12s %9.2f %9.1f %9.2f %9.1f\n", i, name, shape, tf * 1e3,
                   ff / tf * 1e-9, tb * 1e3, tb > 0 ? fb / tb * 1e-9 : 0.0);
        } else {
            printf("    %-4d %-18s %-12s %9.2f %9s %9.2f %9s\n", i, name, shape, tf * 1e3, "",
                   tb * 1e3, "");
        }
    }
    double fl = nn_flops(m, batch, 1);
    printf("    total %.1f ms forward + %.1f ms backward; conv/dense %.1f ms (%.0f%%), other "
           "layers %.1f ms; %.1f GFLOP/s = %.0f%% of peak\n",
           tot_f * 1e3, tot_b * 1e3, (conv_f + conv_b) * 1e3,
           100.0 * (conv_f + conv_b) / (tot_f + tot_b), (tot_f + tot_b - conv_f - conv_b) * 1e3,
           fl / (tot_f + tot_b) * 1e-9, 100.0 * fl / (tot_f + tot_b) * 1e-9 / peak);
}

int main(int argc, char **argv)
{
    int quick = 0, only_small = 0;
    for (int i = 1; i < argc; i++) {
        quick |= strcmp(argv[i], "quick") == 0;
        only_small |= strcmp(argv[i], "small") == 0;
    }
    const int batch = quick ? 8 : 32, reps = quick ? 1 : 3;
    nn_init();
    char cpu[256];
    bench_cpu(cpu, sizeof cpu);
    printf("bench_nn: OpenBLAS core %s, CPU %s, 1 thread, batch %d\n\n", nn_blas_corename(), cpu,
           batch);

    printf("sgemm (row-major, single thread, best of 5), core %s:\n", nn_blas_corename());
    double peak = sgemm_rate(1024, 1024, 1024, 0, 5);
    printf("  %-44s %7.1f GFLOP/s  <- peak used below\n", "1024 x 1024 x 1024", peak);
    static const struct {
        const char *what;
        int M, N, K, ta;
    } shapes[] = {
        {"small conv1 fwd   M=8192 N=32  K=27", 8192, 32, 27, 0},
        {"small conv1 dW    M=27   N=32  K=8192 (A^T)", 27, 32, 8192, 1},
        {"small conv2 fwd   M=4096 N=64  K=288", 4096, 64, 288, 0},
        {"small conv4 fwd   M=910  N=256 K=1152", 910, 256, 1152, 0},
        {"small conv2 dW    M=288  N=64  K=3640 (A^T)", 288, 64, 3640, 1},
        {"mnv2 expand 16->96    M=16384 N=96 K=16", 16384, 96, 16, 0},
        {"mnv2 project 144->24  M=16384 N=24 K=144", 16384, 24, 144, 0},
        {"mnv2 expand 24->144   M=16384 N=144 K=24", 16384, 144, 24, 0},
        {"mnv2 1x1 320->1280    M=512  N=1280 K=320", 512, 1280, 320, 0},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        double g = sgemm_rate(shapes[i].M, shapes[i].N, shapes[i].K, shapes[i].ta, 5);
        printf("  %-44s %7.1f GFLOP/s (%3.0f%%)\n", shapes[i].what, g, 100.0 * g / peak);
    }

    printf("\ntraining step = forward + backward, batch %d, 1 thread, core %s, peak %.1f GFLOP/s\n",
           batch, nn_blas_corename(), peak);
    printf("  %-16s %5s %10s %8s %8s %8s %7s %9s %12s %8s\n", "model", "size", "GFLOP/img",
           "ms/img", "img/s", "GFLOP/s", "%peak", "wall img/s", "infer img/s", "ctx MiB");
    static const struct {
        const char *name;
        int kind;
        float alpha;
    } models[] = {{"small", 0, 0}, {"mobilenetv2 1.0", 1, 1.0f}, {"mobilenetv2 0.5", 1, 0.5f}};
    const int sizes[2] = {128, 192};
    nn_model *prof_model = NULL;
    nn_ctx *prof_ctx = NULL;
    for (size_t mi = 0; mi < (only_small ? 1u : 3u); mi++)
        for (int si = 0; si < (only_small ? 1 : 2); si++) {
            int hw = sizes[si];
            nn_model *m = models[mi].kind == 0
                              ? nn_build_small(hw, hw, 104, 0.2f, NULL)
                              : nn_build_mobilenetv2(hw, hw, 104, models[mi].alpha, 0.2f, NULL);
            if (!m)
                continue;
            const int want_profile = mi == 0 && si == 0;
            nn_ctx *keep = NULL;
            step_result r = time_steps(m, batch, reps, 1, &keep);
            if (r.sec <= 0) {
                nn_ctx_free(keep);
                nn_model_free(m);
                continue;
            }
            double fl = nn_flops(m, batch, 1);
            printf("  %-16s %5d %10.3f %8.2f %8.1f %8.1f %6.0f%% %9.1f %12.1f %8.0f\n",
                   models[mi].name, hw, fl / batch * 1e-9, r.sec / batch * 1e3, batch / r.sec,
                   fl / r.sec * 1e-9, 100.0 * fl / r.sec * 1e-9 / peak, batch / r.wall,
                   batch / r.fwd_sec, r.mib);
            kind_summary(m, keep, batch, reps);
            if (want_profile) {
                prof_model = m;
                prof_ctx = keep;
            } else {
                nn_ctx_free(keep);
                nn_model_free(m);
            }
        }

    if (prof_model) {
        printf("\nper-layer breakdown, small 128x128, batch %d (mean of %d steps), core %s:\n",
               batch, reps, nn_blas_corename());
        layer_breakdown(prof_model, prof_ctx, batch, reps, peak);
        nn_ctx_free(prof_ctx);
        nn_model_free(prof_model);
    }
    return 0;
}
