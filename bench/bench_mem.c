/* bench_mem — a training context's memory by layer kind, and the speed of its forward
 * plus backward, for the built-in MobileNetV2 and the imported zoo model, keeping
 * every output (nn_set_recompute(0), as before issue 30) beside recomputing the cheap
 * ones (the default).
 *
 *   build/bench/bench_mem [size [batch [steps [model]]]]  (default 512 16 4 both)
 *
 * model: builtin, import or both.
 *
 * For each model and both layouts: the bytes per image each layer kind keeps from the
 * forward for the backward, dropout's masks, the arena shared by lifetime (activation
 * gradients and the outputs the backward recomputes), the parameter gradients and the
 * rest (nn_ctx_mem_get); then `steps` training forwards + backwards of each, the two
 * layouts in turn on one thread (thread CPU seconds: one replica's share of a step;
 * median and best), and a hash of each one's gradient bits, which must be the same. The zoo file
 * is $PT_SHARED_DATA/weights/mobilenetv2-12-int8.onnx (default ../shared/data). */
#include <stdint.h>
#include <stdlib.h>

#include "base/rng.h"
#include "base/util.h"
#include "bench/bench_common.h"
#include "nn/nn.h"
#include "nn/nn_import.h"
#include "nn/nn_models.h"

#define CLASSES 5

static nn_model *build(const char *kind, int size, const char *zoo)
{
    pt_err e;
    nn_model *m;
    if (!strcmp(kind, "import")) {
        nn_import_opts o = { .h = size, .w = size, .n_classes = CLASSES, .dropout = 0.2f,
                             .norm = NN_NORM_IMAGENET, .seed = 42 };
        nn_import_info info;
        m = nn_import_onnx_file(zoo, &o, &info, &e);
    } else {
        m = nn_build_mobilenetv2(size, size, CLASSES, 1.0f, 0.2f, &e);
        if (m)
            nn_model_init_params(m, 42);
    }
    if (!m)
        fprintf(stderr, "bench_mem: %s\n", e.msg);
    return m;
}

static double mib(size_t bytes, int batch)
{
    return (double)bytes / (1024.0 * 1024.0) / batch;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t grad_hash(nn_ctx *c, size_t np)
{
    const float *g = nn_grads(c);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < np; i++) {
        uint32_t u;
        memcpy(&u, &g[i], sizeof u);
        h = (h ^ u) * 1099511628211ull;
    }
    return h;
}

/* One training forward + backward on c: thread CPU seconds. */
static double step(nn_ctx *c, const float *x, const float *dl, int batch)
{
    nn_zero_grads(c);
    double t0 = util_thread_cpu();
    nn_forward(c, x, batch, 1, 3, 0);
    nn_backward(c, dl);
    return util_thread_cpu() - t0;
}

static void print_mem(const char *kind, int size, int batch, nn_ctx *const ctx[2])
{
    nn_ctx_mem mem[2];
    for (int v = 0; v < 2; v++)
        nn_ctx_mem_get(ctx[v], &mem[v]);
    printf("%s at %d px, batch %d, MiB per image: keeping every output | recomputing\n", kind,
           size, batch);
    for (int op = 0; op < NN_OP_COUNT; op++)
        if (mem[0].kept[op] || mem[1].kept[op])
            printf("  kept %-10s %8.2f | %8.2f\n", nn_op_name((nn_op)op),
                   mib(mem[0].kept[op], batch), mib(mem[1].kept[op], batch));
    printf("  %-15s %8.2f | %8.2f\n", "dropout masks", mib(mem[0].masks, batch),
           mib(mem[1].masks, batch));
    printf("  %-15s %8.2f | %8.2f\n", "shared arena", mib(mem[0].shared, batch),
           mib(mem[1].shared, batch));
    printf("  %-15s %8.2f | %8.2f\n", "param grads", mib(mem[0].params, batch),
           mib(mem[1].params, batch));
    printf("  %-15s %8.2f | %8.2f\n", "other", mib(mem[0].other, batch),
           mib(mem[1].other, batch));
    printf("  %-15s %8.2f | %8.2f   (%.2f | %.2f GiB; %.0f%%)\n", "all",
           mib(nn_ctx_bytes(ctx[0]), batch), mib(nn_ctx_bytes(ctx[1]), batch),
           (double)nn_ctx_bytes(ctx[0]) / (1 << 30), (double)nn_ctx_bytes(ctx[1]) / (1 << 30),
           100.0 * (double)nn_ctx_bytes(ctx[1]) / (double)nn_ctx_bytes(ctx[0]));
}

static void one(const char *kind, int size, int batch, int steps, const char *zoo)
{
    nn_model *m = build(kind, size, zoo);
    if (!m)
        return;
    pt_err e;
    nn_ctx *ctx[2] = { NULL, NULL };
    for (int v = 0; v < 2 && (v == 0 || ctx[0]); v++) {
        int was = nn_set_recompute(v);
        ctx[v] = nn_ctx_new(m, batch, &e);
        nn_set_recompute(was);
    }
    if (!ctx[0] || !ctx[1]) {
        fprintf(stderr, "bench_mem: %s\n", e.msg);
        nn_ctx_free(ctx[0]);
        nn_model_free(m);
        return;
    }
    print_mem(kind, size, batch, ctx);
    size_t in_len = (size_t)batch * size * size * 3;
    float *x = malloc(in_len * sizeof *x), *dl = malloc((size_t)batch * CLASSES * sizeof *dl);
    double *t = malloc(2 * (size_t)steps * sizeof *t);
    rng r;
    rng_seed(&r, 7);
    for (size_t i = 0; i < in_len; i++)
        x[i] = rng_float(&r) * 2.0f - 1.0f;
    for (int i = 0; i < batch * CLASSES; i++)
        dl[i] = (rng_float(&r) - 0.5f) / (float)batch;
    /* One warm-up each, then the two in turn, so both see the same neighbours. */
    step(ctx[0], x, dl, batch);
    step(ctx[1], x, dl, batch);
    for (int s = 0; s < steps; s++)
        for (int v = 0; v < 2; v++)
            t[v * steps + s] = step(ctx[(s + v) % 2], x, dl, batch);
    /* t[0..steps) alternate keep/recompute starting with keep; sort them apart. */
    double tv[2][64];
    int nv[2] = { 0, 0 };
    for (int s = 0; s < steps; s++)
        for (int v = 0; v < 2; v++) {
            int which = (s + v) % 2;
            if (nv[which] < 64)
                tv[which][nv[which]++] = t[v * steps + s];
        }
    double med[2], best[2];
    for (int v = 0; v < 2; v++) {
        qsort(tv[v], (size_t)nv[v], sizeof(double), cmp_double);
        med[v] = tv[v][nv[v] / 2];
        best[v] = tv[v][0];
    }
    printf("  forward + backward, thread CPU s over %d steps each, in turn: keeping median %.3f "
           "best %.3f | recomputing median %.3f best %.3f (%+.1f%% median, %+.1f%% best)\n",
           steps, med[0], best[0], med[1], best[1], 100.0 * (med[1] / med[0] - 1.0),
           100.0 * (best[1] / best[0] - 1.0));
    /* Where the time goes, by kind (a replay counts in its node's backward). */
    double tf[2][NN_OP_COUNT] = { { 0 } }, tb[2][NN_OP_COUNT] = { { 0 } };
    for (int v = 0; v < 2; v++) {
        nn_ctx_set_profile(ctx[v], 1);
        nn_ctx_reset_profile(ctx[v]);
    }
    for (int s = 0; s < steps; s++)
        for (int v = 0; v < 2; v++)
            step(ctx[(s + v) % 2], x, dl, batch);
    for (int v = 0; v < 2; v++)
        for (int i = 0; i < nn_node_count(m); i++) {
            nn_node_info ni;
            double f, b;
            nn_node_get(m, i, &ni);
            nn_ctx_node_time(ctx[v], i, &f, &b);
            tf[v][ni.op] += f / steps;
            tb[v][ni.op] += b / steps;
        }
    printf("  per step by kind, forward / backward s: keeping | recomputing\n");
    for (int op = 0; op < NN_OP_COUNT; op++)
        if (tf[0][op] + tb[0][op] + tf[1][op] + tb[1][op] > 0.001)
            printf("    %-10s %.3f / %.3f | %.3f / %.3f\n", nn_op_name((nn_op)op), tf[0][op],
                   tb[0][op], tf[1][op], tb[1][op]);
    uint64_t h0 = grad_hash(ctx[0], nn_param_count(m)), h1 = grad_hash(ctx[1], nn_param_count(m));
    printf("  gradient hash %016llx | %016llx: %s\n", (unsigned long long)h0,
           (unsigned long long)h1, h0 == h1 ? "the same bits" : "DIFFERENT");
    free(x);
    free(dl);
    free(t);
    nn_ctx_free(ctx[0]);
    nn_ctx_free(ctx[1]);
    nn_model_free(m);
}

int main(int argc, char **argv)
{
    int size = argc > 1 ? atoi(argv[1]) : 512;
    int batch = argc > 2 ? atoi(argv[2]) : 16;
    int steps = argc > 3 ? atoi(argv[3]) : 4;
    const char *which = argc > 4 ? argv[4] : "both";
    if (size < 32 || batch < 1 || steps < 1 || steps > 64 ||
        (strcmp(which, "both") && strcmp(which, "builtin") && strcmp(which, "import"))) {
        fprintf(stderr,
                "usage: bench_mem [size [batch [steps (1..64) [builtin|import|both]]]]\n");
        return 2;
    }
    bench_header("bench_mem");
    nn_init();
    char zoo[4096];
    const char *sd = getenv("PT_SHARED_DATA");
    util_path(zoo, sizeof zoo, "%s/weights/mobilenetv2-12-int8.onnx",
              sd && *sd ? sd : "../shared/data");
    if (strcmp(which, "import"))
        one("builtin", size, batch, steps, zoo);
    if (!strcmp(which, "builtin"))
        return 0;
    if (util_is_file(zoo))
        one("import", size, batch, steps, zoo);
    else
        printf("import: %s not found, skipped\n", zoo);
    return 0;
}
