/* bench_finetune — training speed of the ONNX zoo's MobileNetV2 as petal-tui imports
 * it for fine-tuning (mobilenetv2-12-int8.onnx, 5 classes), side by side with
 * PyTorch on the same graph; then where petal-tui's time goes, per kind of layer.
 *
 * Training img/s as the trainer runs it: whole optimizer updates (forward, loss,
 * backward, gradient reduce, Adam) through the replica strategy, 16 images per
 * replica, synthetic batches, at 128 and 192 px with 1 and 2 replicas. PyTorch
 * (bench/torch_finetune_speed.py, Debian's python3-torch seen by /usr/bin/python3)
 * trains the same graph (torchvision's MobileNetV2 with every BN folded into its
 * conv, ReLU6, a new 5-class head) with as many threads as petal-tui has replicas
 * and 16 images per thread, in NCHW and channels-last, the better kept. The
 * built-in mobilenetv2 x1.0 (with BN) runs beside unfused torchvision the same way.
 *
 * The machine may be shared, so the two sides are measured interleaved: PyTorch
 * runs as a child process that serves one measurement per request, and each round
 * measures every cell on both sides, petal-tui then PyTorch. A cell's figure is its
 * best round, the spread of the rounds is printed as the noise, and beside the ratio
 * of the best figures goes the median of the rounds' own ratios (each pair measured
 * a few seconds apart, under the same load); each round prints the load average.
 *
 *   bench_finetune [MIN_S [ROUNDS [import|builtin]]]   seconds per measurement (3),
 *                                   rounds (3), only one of the models (both)
 *   bench_finetune layers [KIND [SIZE [BATCH]]]   every node's time, for tuning (KIND
 *                                   import, builtin or small; PT_BENCH_PRECISION=bf16
 *                                   runs it in bf16)
 *
 * The zoo file is $PT_SHARED_DATA/weights/mobilenetv2-12-int8.onnx (default
 * ../shared/data): without it the imported model is skipped, without python3-torch
 * the PyTorch side.
 */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/rng.h"
#include "base/util.h"
#include "bench/bench_common.h"
#include "bench/bench_peer.h"
#include "data/batch.h"
#include "nn/nn.h"
#include "nn/nn_import.h"
#include "nn/nn_models.h"
#include "nn/optim.h"
#include "pool/rpool.h"
#include "train/trainer.h"

#define CLASSES 5
#define BATCH 16
#define MAX_ROUNDS 16
#define TORCH_SCRIPT "bench/torch_finetune_speed.py"

static char zoo_path[4096];

/* "import": the zoo file imported with a new head; "builtin": nn_build_mobilenetv2. */
static nn_model *build(const char *kind, int size, double *import_s)
{
    pt_err e;
    nn_model *m;
    if (!strcmp(kind, "import")) {
        nn_import_opts o = { .h = size, .w = size, .n_classes = CLASSES, .dropout = 0.2f,
                             .norm = NN_NORM_IMAGENET, .seed = 42 };
        nn_import_info info;
        m = nn_import_onnx_file(zoo_path, &o, &info, &e);
        if (m && import_s)
            *import_s = info.seconds;
    } else if (!strcmp(kind, "small")) {
        int w[NN_SMALL_MAX_BLOCKS], st[NN_SMALL_MAX_BLOCKS];
        const int nb = nn_parse_widths("auto", size, w, st, &e);
        m = nb > 0 ? nn_build_small_widths(size, size, CLASSES, 0.2f, w, st, nb,
                                           NN_SMALL_CONVS_PER_BLOCK, &e)
                   : NULL;
    } else {
        m = nn_build_mobilenetv2(size, size, CLASSES, 1.0f, 0.2f, &e);
    }
    if (!m)
        fprintf(stderr, "bench_finetune: %s\n", e.msg);
    return m;
}

/* CPU seconds of the whole process (every thread). */
static double process_cpu(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
           (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
}

/* Images/s of optimizer updates with R replicas of BATCH, after two warm-up updates;
 * 0 on failure. *gflops: per replica; *cpu_ips: images per CPU-second of the process. */
static double petal_rate(const char *kind, int size, int R, double min_s, double *gflops,
                         double *cpu_ips)
{
    nn_model *m = build(kind, size, NULL);
    if (!m)
        return 0;
    pt_err e;
    opt o;
    opt_init(&o, OPT_ADAM, nn_param_count(m), 0, 0);
    rpool_config c = { .model = m, .optimizer = &o, .replicas = R, .batch_per_replica = BATCH,
                       .grad_acc = 1 };
    rpool *s;
    if (rpool_new(&c, &s, &e) != PT_OK) {
        fprintf(stderr, "bench_finetune: %s\n", e.msg);
        opt_free(&o);
        nn_model_free(m);
        return 0;
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
        rpool_update(s, &b, 1e-4, i + 1, 7, &sr, NULL, &e);
    int n = 0;
    double t0 = util_now(), c0 = process_cpu(), dt;
    do {
        rpool_update(s, &b, 1e-4, n + 3, 7, &sr, NULL, &e);
        n++;
        dt = util_now() - t0;
    } while (dt < min_s);
    double ips = (double)n * R * BATCH / dt;
    if (cpu_ips)
        *cpu_ips = (double)n * R * BATCH / (process_cpu() - c0);
    if (gflops)
        *gflops = nn_flops(m, BATCH, 1) * n / dt * 1e-9;
    batch_free(b);
    rpool_free(s);
    opt_free(&o);
    nn_model_free(m);
    return ips;
}

/* Images/s by the wall clock (and per CPU-second of the child into *cpu_ips); 0 when
 * the child cannot say. */
static double peer_rate(peer *p, const char *model, int size, int threads, const char *layout,
                        double min_s, double *cpu_ips)
{
    *cpu_ips = 0;
    if (p->pid < 0)
        return 0;
    char line[600];
    fprintf(p->to, "%s %d %d %s %.3f\n", model, size, threads, layout, min_s);
    fflush(p->to);
    if (!fgets(line, sizeof line, p->from))
        return 0;
    double v = 0;
    if (sscanf(line, "ok %lf %lf", &v, cpu_ips) != 2) {
        fprintf(stderr, "bench_finetune: torch: %s", line);
        return 0;
    }
    return v;
}

/* ---- the side-by-side table ---- */

typedef struct cell {
    const char *kind;       /* petal-tui's model */
    const char *peer;       /* PyTorch's */
    int size, threads;
    double petal[MAX_ROUNDS], gflops[MAX_ROUNDS];
    double nchw[MAX_ROUNDS], nhwc[MAX_ROUNDS];
    double petal_cpu[MAX_ROUNDS], nchw_cpu[MAX_ROUNDS], nhwc_cpu[MAX_ROUNDS];
} cell;

static double best_of(const double *v, int n)
{
    double b = 0;
    for (int i = 0; i < n; i++)
        b = v[i] > b ? v[i] : b;
    return b;
}

static double worst_of(const double *v, int n)
{
    double w = 1e300;
    for (int i = 0; i < n; i++)
        w = v[i] < w ? v[i] : w;
    return n ? w : 0;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Per round, petal-tui's figure over PyTorch's better layout measured right after it
 * (a pair the load of the machine touched alike): the median over the rounds, and
 * the lowest and highest. */
static void paired_ratio(const cell *c, int rounds, double *med, double *lo, double *hi)
{
    double r[MAX_ROUNDS];
    int n = 0;
    for (int i = 0; i < rounds; i++) {
        const double t = fmax(c->nchw[i], c->nhwc[i]);
        if (t > 0 && c->petal[i] > 0)
            r[n++] = c->petal[i] / t;
    }
    *med = *lo = *hi = 0;
    if (!n)
        return;
    qsort(r, (size_t)n, sizeof r[0], by_value);
    *med = n % 2 ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2]);
    *lo = r[0];
    *hi = r[n - 1];
}

/* The rounds' spread as a % of the best: how noisy this cell was. */
static double spread(const double *v, int n)
{
    double b = best_of(v, n);
    return b > 0 ? 100.0 * (b - worst_of(v, n)) / b : 0;
}

static void print_cell(const cell *c, int rounds, int have_peer, double peak)
{
    const double p = best_of(c->petal, rounds), a = best_of(c->nchw, rounds),
                 b = best_of(c->nhwc, rounds), t = a > b ? a : b;
    const double *tv = a > b ? c->nchw : c->nhwc;
    char tor[64] = "-", ratio[16] = "-", paired[48] = "-", cpu[64] = "-";
    if (have_peer) {
        util_fmt(tor, sizeof tor, "%7.1f %-4s %3.0f%%", t, a > b ? "nchw" : "nhwc",
                 spread(tv, rounds));
        util_fmt(ratio, sizeof ratio, "%.2fx", t > 0 ? p / t : 0);
        double med, lo, hi;
        paired_ratio(c, rounds, &med, &lo, &hi);
        util_fmt(paired, sizeof paired, "%.2fx (%.2f-%.2f)", med, lo, hi);
    }
    /* Per CPU-second on one thread: what the other processes on a shared machine
     * disturb least (a torch thread waiting for its peer spins, so not on two). */
    if (c->threads == 1) {
        const double pc = best_of(c->petal_cpu, rounds);
        const double tc = fmax(best_of(c->nchw_cpu, rounds), best_of(c->nhwc_cpu, rounds));
        if (have_peer)
            util_fmt(cpu, sizeof cpu, "%6.1f %6.1f %5.2fx", pc, tc, tc > 0 ? pc / tc : 0);
        else
            util_fmt(cpu, sizeof cpu, "%6.1f", pc);
    }
    const double g = best_of(c->gflops, rounds);
    printf("%-8s %5d %3d %8.1f %4.0f%% %19s %8.1f %8.1f %7s %19s %20s %6.1f (%2.0f%%)\n",
           c->kind, c->size, c->threads, p, spread(c->petal, rounds), tor, a, b, ratio, paired,
           cpu, g, peak > 0 ? 100 * g / peak : 0);
    fflush(stdout);
}

/* The 1-minute load average, to see what else ran during a round. */
static double loadavg(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

/* kinds: bit 0 the imported model, bit 1 the built-in one. */
static void side_by_side(double min_s, int rounds, int kinds_wanted, double peak)
{
    peer pr;
    const int have_peer = peer_start(&pr, TORCH_SCRIPT) == 0;
    if (have_peer)
        printf("PyTorch: %s\n", pr.header);
    else
        printf("PyTorch: %s or %s with torch unavailable: petal-tui's side only\n", PYTHON,
               TORCH_SCRIPT);
    cell cells[8];
    int nc = 0;
    const char *kinds[2] = { "import", "builtin" }, *peers[2] = { "fused", "bn" };
    for (int k = 0; k < 2; k++) {
        if (!(kinds_wanted & (1 << k)))
            continue;
        for (int size = 128; size <= 192; size += 64)
            for (int t = 1; t <= 2; t++) {
                cell *c = &cells[nc++];
                memset(c, 0, sizeof *c);
                c->kind = kinds[k];
                c->peer = peers[k];
                c->size = size;
                c->threads = t;
            }
    }
    for (int r = 0; r < rounds; r++) {
        printf("round %d/%d (load %.1f):", r + 1, rounds, loadavg());
        for (int i = 0; i < nc; i++) {
            cell *c = &cells[i];
            c->petal[r] = petal_rate(c->kind, c->size, c->threads, min_s, &c->gflops[r],
                                     &c->petal_cpu[r]);
            c->nchw[r] = peer_rate(&pr, c->peer, c->size, c->threads, "nchw", min_s,
                                   &c->nchw_cpu[r]);
            c->nhwc[r] = peer_rate(&pr, c->peer, c->size, c->threads, "nhwc", min_s,
                                   &c->nhwc_cpu[r]);
            printf(" %.0f/%.0f", c->petal[r], c->nchw[r] > c->nhwc[r] ? c->nchw[r] : c->nhwc[r]);
            fflush(stdout);
        }
        printf("  (petal/torch img/s; load now %.1f)\n", loadavg());
    }
    peer_stop(&pr);
    char cpu[256];
    bench_cpu(cpu, sizeof cpu);
    printf("\ntraining img/s, best of %d interleaved rounds of %.0f s (spread = (best - worst) / "
           "best; paired = petal-tui / PyTorch within each round, median (lowest-highest); on "
           "one thread also images per CPU-second of each process);\n"
           "petal-tui: cpu \"%s\", openblas core %s; PyTorch: %s\n",
           rounds, min_s, cpu, openblas_get_corename(), have_peer ? pr.header : "-");
    printf("import = the zoo file imported (vs torchvision with BN folded, 'fused'); builtin = "
           "mobilenetv2 x1.0 with BN (vs torchvision)\n");
    printf("%-8s %5s %3s %8s %5s %19s %8s %8s %7s %19s %20s %12s\n", "model", "size", "thr",
           "petal", "sprd", "torch best  sprd", "NCHW", "NHWC", "ratio", "paired",
           "per CPU-s: pt  torch", "GFLOP/s/rep");
    for (int i = 0; i < nc; i++)
        print_cell(&cells[i], rounds, have_peer, peak);
}

/* ---- where the time goes ---- */

enum { K_STEM, K_PW, K_DW, K_ACT, K_BN, K_ADD, K_OTHER, NK };
static const char *kind_names[NK] = { "conv kxk", "conv 1x1", "depthwise", "relu6/relu",
                                      "batchnorm", "add", "other" };

static int kind_of(const nn_node_info *ni)
{
    if (ni->op == NN_OP_CONV)
        return ni->groups > 1 && ni->groups == ni->c ? K_DW
               : ni->kh == 1 && ni->kw == 1      ? K_PW
                                                 : K_STEM;
    if (ni->op == NN_OP_RELU || ni->op == NN_OP_RELU6 || ni->op == NN_OP_CLIP)
        return K_ACT;
    if (ni->op == NN_OP_BN)
        return K_BN;
    if (ni->op == NN_OP_ADD)
        return K_ADD;
    return K_OTHER;
}

/* Every node's forward and backward ms and GFLOP/s, for tuning (the `layers` mode). */
static void node_table(const nn_model *m, const nn_ctx *ctx, int nb, int reps)
{
    printf("  %-4s %-10s %-12s %-12s %8s %8s %8s %8s\n", "node", "layer", "input", "output",
           "fwd ms", "GFLOP/s", "bwd ms", "GFLOP/s");
    for (int i = 0; i < nn_node_count(m); i++) {
        nn_node_info ni, src;
        nn_node_get(m, i, &ni);
        double f, b;
        nn_ctx_node_time(ctx, i, &f, &b);
        f /= reps;
        b /= reps;
        if (f + b < 1e-5 || ni.in[0] < 0)
            continue;
        nn_node_get(m, ni.in[0], &src);
        const double ff = nn_node_flops(m, i, nb, 0), fb = nn_node_flops(m, i, nb, 1) - ff;
        char name[32], in[32], out[32];
        if (ni.op == NN_OP_CONV)
            util_fmt(name, sizeof name, "%s %dx%d/%d", kind_of(&ni) == K_DW ? "dw" : "conv",
                     ni.kh, ni.kw, ni.stride);
        else
            util_fmt(name, sizeof name, "%s", nn_op_name(ni.op));
        util_fmt(in, sizeof in, "%dx%dx%d", src.h, src.w, src.c);
        util_fmt(out, sizeof out, "%dx%dx%d", ni.h, ni.w, ni.c);
        printf("  %-4d %-10s %-12s %-12s %8.2f %8.1f %8.2f %8.1f\n", i, name, in, out, f * 1e3,
               f > 0 ? ff / f * 1e-9 : 0, b * 1e3, b > 0 ? fb / b * 1e-9 : 0);
    }
}

/* One replica's forward + backward of a batch of nb, per kind of layer (thread CPU
 * time, mean of reps steps after a warm-up; a layer fused into the one before it
 * counts there). The loss and optimizer are not in it. nodes: every node too. */
static void kind_split(const char *kind, int size, int nb, int reps, int nodes)
{
    nn_model *m = build(kind, size, NULL);
    if (!m)
        return;
    nn_ctx *ctx = nn_ctx_new(m, nb, NULL);
    const char *prec = getenv("PT_BENCH_PRECISION");
    if (ctx && prec && !strcmp(prec, "bf16"))
        nn_ctx_set_precision(ctx, NN_BF16, NULL);
    const size_t in = (size_t)nb * size * size * 3;
    float *x = util_aligned_alloc(in * sizeof *x), *dl = util_aligned_alloc((size_t)nb * CLASSES * sizeof *dl);
    if (!ctx || !x || !dl) {
        printf("  (no memory)\n");
        goto out;
    }
    rng r;
    rng_seed(&r, 3);
    for (size_t i = 0; i < in; i++)
        x[i] = rng_float(&r);
    for (int i = 0; i < nb * CLASSES; i++)
        dl[i] = rng_uniform(&r, -1e-2f, 1e-2f);
    nn_forward(ctx, x, nb, 1, 1, 0);
    nn_backward(ctx, dl);
    nn_ctx_set_profile(ctx, 1);
    nn_ctx_reset_profile(ctx);
    for (int i = 0; i < reps; i++) {
        nn_forward(ctx, x, nb, 1, 1, 0);
        nn_backward(ctx, dl);
    }
    double tf[NK] = { 0 }, tb[NK] = { 0 }, tot = 0;
    for (int i = 0; i < nn_node_count(m); i++) {
        nn_node_info ni;
        nn_node_get(m, i, &ni);
        double f, b;
        nn_ctx_node_time(ctx, i, &f, &b);
        tf[kind_of(&ni)] += f / reps;
        tb[kind_of(&ni)] += b / reps;
        tot += (f + b) / reps;
    }
    printf("%-8s %4d px: %6.1f ms/step =", kind, size, tot * 1e3);
    for (int k = 0; k < NK; k++)
        if (tf[k] + tb[k] > 0)
            printf(" %s %.1f+%.1f (%.0f%%);", kind_names[k], tf[k] * 1e3, tb[k] * 1e3,
                   100 * (tf[k] + tb[k]) / tot);
    printf("\n");
    if (nodes)
        node_table(m, ctx, nb, reps);
    fflush(stdout);
out:
    util_aligned_free(x);
    util_aligned_free(dl);
    nn_ctx_free(ctx);
    nn_model_free(m);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "layers")) {
        /* bench_finetune layers [KIND [SIZE [BATCH]]]: the per-node table alone, for tuning. */
        nn_init();
        const char *sd = getenv("PT_SHARED_DATA");
        util_path(zoo_path, sizeof zoo_path, "%s/weights/mobilenetv2-12-int8.onnx",
                  sd && *sd ? sd : "../shared/data");
        kind_split(argc > 2 ? argv[2] : "import", argc > 3 ? atoi(argv[3]) : 128,
                   argc > 4 ? atoi(argv[4]) : BATCH, 5, 1);
        return 0;
    }
    const double min_s = argc > 1 ? atof(argv[1]) : 3.0;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    const char *which = argc > 3 ? argv[3] : "all";
    rounds = rounds < 1 ? 1 : rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;
    signal(SIGPIPE, SIG_IGN);   /* a PyTorch child that dies must not take us along */
    bench_header("bench_finetune");
    nn_init();
    const char *sd = getenv("PT_SHARED_DATA");
    util_path(zoo_path, sizeof zoo_path, "%s/weights/mobilenetv2-12-int8.onnx",
              sd && *sd ? sd : "../shared/data");
    double import_s = 0;
    const int with_import = util_is_file(zoo_path);
    if (with_import) {
        nn_model *m = build("import", 128, &import_s);
        nn_model_free(m);
        printf("model: %s, imported in %.2f s\n", zoo_path, import_s);
    } else {
        printf("model: %s missing: the imported model is skipped\n", zoo_path);
    }
    const double peak = trn_sgemm_peak(1.0, 0);
    printf("single-core sgemm peak (512^3, best of 1 s): %.1f GFLOP/s, core %s\n", peak,
           openblas_get_corename());
    const int kinds = (with_import && strcmp(which, "builtin") ? 1 : 0) |
                      (strcmp(which, "import") ? 2 : 0);
    side_by_side(min_s, rounds, kinds, peak);

    char cpu[256];
    bench_cpu(cpu, sizeof cpu);
    printf("\nper kind of layer, one replica, batch %d, forward+backward ms (thread CPU, mean of "
           "5 steps), cpu \"%s\", core %s:\n",
           BATCH, cpu, openblas_get_corename());
    for (int size = 128; size <= 192; size += 64) {
        if (kinds & 1)
            kind_split("import", size, BATCH, 5, 0);
        if (kinds & 2)
            kind_split("builtin", size, BATCH, 5, 0);
    }
    return 0;
}
