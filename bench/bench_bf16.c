/* bench_bf16 — what --precision bf16 buys: training img/s of petal-tui in fp32 and in
 * bf16, side by side with PyTorch 1.13 in fp32 and with bf16 autocast (each at its
 * better memory layout: bench/torch_bf16_speed.py), on `small` (auto widths at 128 px,
 * a,32,64,128,256,256: the default net) and the built-in MobileNetV2 x1.0 at 128 and
 * 224 px, 2 replicas x 16 images (PyTorch: 2 threads, batch 32), synthetic batches;
 * then the memory of a MobileNetV2 training context at 512 px, and inference img/s
 * (batch 32 a replica) in both precisions.
 *
 * The four sides of a cell are measured interleaved (round by round, a few seconds
 * apart), the best round kept. Prints the CPU, its bf16 / AMX features, the bf16
 * engine and openblas_get_corename(). Prints, never asserts.
 *
 *   bench_bf16 [MIN_S [ROUNDS]]   seconds per measurement (3), rounds (3)
 */
#include <stdlib.h>

#include "base/cpu.h"
#include "base/rng.h"
#include "base/util.h"
#include "bench/bench_common.h"
#include "bench/bench_peer.h"
#include "data/batch.h"
#include "nn/nn.h"
#include "nn/nn_models.h"
#include "nn/optim.h"
#include "pool/rpool.h"
#include "train/trainer.h"

#define CLASSES 5
#define BATCH 16
#define REPLICAS 2
#define MAX_ROUNDS 9
#define TORCH_SCRIPT "bench/torch_bf16_speed.py"

static nn_model *build(const char *net, int size)
{
    pt_err e;
    nn_model *m = NULL;
    if (!strcmp(net, "small")) {
        int w[NN_SMALL_MAX_BLOCKS], st[NN_SMALL_MAX_BLOCKS];
        const int nb = nn_parse_widths("auto", size, w, st, &e);
        if (nb > 0)
            m = nn_build_small_widths(size, size, CLASSES, 0.2f, w, st, nb,
                                      NN_SMALL_CONVS_PER_BLOCK, &e);
    } else {
        m = nn_build_mobilenetv2(size, size, CLASSES, 1.0f, 0.2f, &e);
    }
    if (!m)
        fprintf(stderr, "bench_bf16: %s\n", e.msg);
    else
        nn_model_init_params(m, 1);
    return m;
}

static batch *random_batch(int n, int size)
{
    batch *b = batch_new(n, size, size);
    if (!b)
        return NULL;
    rng r;
    rng_seed(&r, 1);
    b->n = n;
    for (size_t i = 0; i < (size_t)n * size * size * 3; i++)
        b->images[i] = (uint8_t)rng_below(&r, 256);
    for (int i = 0; i < n; i++) {
        b->label[i] = b->label2[i] = i % CLASSES;
        b->mix[i] = 1;
    }
    return b;
}

/* Training img/s of whole updates (forward, loss, backward, reduce, Adam). */
static double train_rate(const char *net, int size, int bf16, double min_s)
{
    nn_model *m = build(net, size);
    if (!m)
        return 0;
    opt o;
    opt_init(&o, OPT_ADAM, nn_param_count(m), 0, 0);
    rpool_config c = { .model = m, .optimizer = &o, .replicas = REPLICAS,
                       .batch_per_replica = BATCH, .grad_acc = 1, .recompute = 0, .bf16 = bf16 };
    rpool *s;
    pt_err e;
    batch *b = random_batch(REPLICAS * BATCH, size);
    double ips = 0;
    if (b && rpool_new(&c, &s, &e) == PT_OK) {
        rpool_result sr;
        for (int i = 0; i < 2; i++)
            rpool_update(s, &b, 1e-4, i + 1, 7, &sr, NULL, &e);
        int n = 0;
        double t0 = util_now(), dt;
        do {
            rpool_update(s, &b, 1e-4, n + 3, 7, &sr, NULL, &e);
            n++;
            dt = util_now() - t0;
        } while (dt < min_s);
        ips = (double)n * REPLICAS * BATCH / dt;
        rpool_free(s);
    }
    batch_free(b);
    opt_free(&o);
    nn_model_free(m);
    return ips;
}

/* Inference img/s, 32 images a replica. */
static double infer_rate(const char *net, int size, int bf16, double min_s)
{
    nn_model *m = build(net, size);
    if (!m)
        return 0;
    const int per = 32;
    rpool_config c = { .model = m, .replicas = REPLICAS, .predict_batch = per, .bf16 = bf16 };
    rpool *s;
    pt_err e;
    batch *b = random_batch(REPLICAS * per, size);
    float *logits = malloc(sizeof(float) * REPLICAS * per * CLASSES);
    double ips = 0;
    if (b && logits && rpool_new(&c, &s, &e) == PT_OK) {
        rpool_infer(s, b->images, b->n, logits, &e);
        int n = 0;
        double t0 = util_now(), dt;
        do {
            rpool_infer(s, b->images, b->n, logits, &e);
            n++;
            dt = util_now() - t0;
        } while (dt < min_s);
        ips = (double)n * b->n / dt;
        rpool_free(s);
    }
    free(logits);
    batch_free(b);
    nn_model_free(m);
    return ips;
}

static double torch_rate(peer *p, const char *net, int size, const char *prec, double min_s,
                         char *layout)
{
    char line[128], reply[256];
    snprintf(line, sizeof line, "%s %d %d %s %.3f\n", !strcmp(net, "small") ? "small" : "mnv2",
             size, REPLICAS, prec, min_s);
    double v = 0;
    layout[0] = 0;
    if (peer_ask(p, line, reply, sizeof reply) == 0 && sscanf(reply, "ok %lf %7s", &v, layout) != 2) {
        fprintf(stderr, "bench_bf16: torch: %s", reply);
        v = 0;
    }
    return v;
}

static double best(const double *v, int n)
{
    double b = 0;
    for (int i = 0; i < n; i++)
        b = v[i] > b ? v[i] : b;
    return b;
}

int main(int argc, char **argv)
{
    const double min_s = argc > 1 ? atof(argv[1]) : 3.0;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    rounds = rounds < 1 ? 1 : rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;
    bench_header("bench_bf16");
    char feats[256];
    cpu_text(cpu_hw(), feats, sizeof feats);
    const cpu_features *f = cpu_hw();
    printf("cpu features: %s\navx512_bf16 %s, amx-bf16 %s; petal-tui's bf16 engine: %s\n", feats,
           f->avx512_bf16 ? "yes" : "no", f->amx_bf16 ? "yes" : "no", nn_bf16_engine_name());
    printf("single-core peaks: sgemm %.1f GFLOP/s (OpenBLAS %s), bf16 %.1f GFLOP/s\n",
           trn_sgemm_peak(1.0, 0), openblas_get_corename(), trn_sgemm_peak(1.0, 1));
    peer p;
    const int have = peer_start(&p, TORCH_SCRIPT) == 0;
    printf("PyTorch: %s\n", have ? p.header : "(not there: /usr/bin/python3 has no torch)");
    static const struct {
        const char *net;
        int size;
    } cells[] = { { "small", 128 }, { "mobilenetv2", 128 }, { "mobilenetv2", 224 } };
    printf("training img/s, %d replicas x %d (PyTorch: %d threads, batch %d), best of %d rounds "
           "of %.0f s\n", REPLICAS, BATCH, REPLICAS, REPLICAS * BATCH, rounds, min_s);
    printf("%-12s %4s %9s %9s %7s %12s %12s %9s %9s\n", "net", "px", "pt fp32", "pt bf16",
           "bf16/fp32", "torch fp32", "torch bf16", "pt/torch", "(bf16)");
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
        double v[4][MAX_ROUNDS] = { { 0 } };
        char lay[2][8] = { "", "" };
        for (int r = 0; r < rounds; r++) {
            v[0][r] = train_rate(cells[i].net, cells[i].size, 0, min_s);
            v[1][r] = train_rate(cells[i].net, cells[i].size, 1, min_s);
            if (have) {
                v[2][r] = torch_rate(&p, cells[i].net, cells[i].size, "fp32", min_s, lay[0]);
                v[3][r] = torch_rate(&p, cells[i].net, cells[i].size, "bf16", min_s, lay[1]);
            }
        }
        const double a = best(v[0], rounds), b = best(v[1], rounds);
        const double c = best(v[2], rounds), d = best(v[3], rounds);
        char tc[32] = "-", td[32] = "-", r1[16] = "-", r2[16] = "-";
        if (have) {
            snprintf(tc, sizeof tc, "%.1f %s", c, lay[0]);
            snprintf(td, sizeof td, "%.1f %s", d, lay[1]);
            snprintf(r1, sizeof r1, "%.2fx", c > 0 ? a / c : 0);
            snprintf(r2, sizeof r2, "%.2fx", d > 0 ? b / d : 0);
        }
        printf("%-12s %4d %9.1f %9.1f %8.2fx %12s %12s %9s %9s\n", cells[i].net, cells[i].size, a,
               b, a > 0 ? b / a : 0, tc, td, r1, r2);
        fflush(stdout);
    }
    peer_stop(&p);
    printf("inference img/s (%d replicas x 32), best of %d:\n", REPLICAS, rounds);
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
        double a[MAX_ROUNDS], b[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) {
            a[r] = infer_rate(cells[i].net, cells[i].size, 0, min_s);
            b[r] = infer_rate(cells[i].net, cells[i].size, 1, min_s);
        }
        printf("%-12s %4d  fp32 %8.1f  bf16 %8.1f  %.2fx\n", cells[i].net, cells[i].size,
               best(a, rounds), best(b, rounds), best(a, rounds) > 0 ? best(b, rounds) / best(a, rounds) : 0);
    }
    /* A training context's memory: MobileNetV2 at 512 px, 16 images. */
    nn_model *m = build("mobilenetv2", 512);
    if (m) {
        nn_ctx *c = nn_ctx_new(m, BATCH, NULL);
        if (c) {
            const size_t fp = nn_ctx_bytes(c);
            nn_ctx_set_precision(c, NN_BF16, NULL);
            printf("mobilenetv2 512 px, %d images, training context: fp32 %.0f MiB, bf16 %.0f MiB "
                   "(%.0f%%)\n", BATCH, fp / 1048576.0, nn_ctx_bytes(c) / 1048576.0,
                   100.0 * (double)nn_ctx_bytes(c) / (double)fp);
            nn_ctx_free(c);
        }
        nn_model_free(m);
    }
    return 0;
}
