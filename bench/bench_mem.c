/* bench_mem — a training context's memory by layer kind, and the speed of its forward
 * plus backward, for the built-in MobileNetV2 and the imported zoo model.
 *
 *   build/bench/bench_mem [size [batch [steps [keep]]]]     (default 512 16 2)
 *
 * With `keep`, contexts keep every output (nn_set_recompute(0)), as before issue 30.
 * For each model: the bytes per image each layer kind keeps from the forward for the
 * backward, dropout's masks, the arena shared by lifetime (activation gradients and
 * the outputs the backward recomputes), the parameter gradients and the rest
 * (nn_ctx_mem_get), then the best of `steps` training forwards + backwards on one
 * thread (thread CPU seconds, one replica's share of a step) and a hash of the
 * gradient bits, which must not change when only the memory layout does. The zoo file
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

static void one(const char *kind, int size, int batch, int steps, const char *zoo)
{
    nn_model *m = build(kind, size, zoo);
    if (!m)
        return;
    pt_err e;
    nn_ctx *c = nn_ctx_new(m, batch, &e);
    if (!c) {
        fprintf(stderr, "bench_mem: %s\n", e.msg);
        nn_model_free(m);
        return;
    }
    nn_ctx_mem mem;
    nn_ctx_mem_get(c, &mem);
    const int keep = !nn_set_recompute(1);
    nn_set_recompute(!keep);
    printf("%s%s at %d px, batch %d: %.1f MiB per image in all (%.2f GiB)\n", kind,
           keep ? " (keeping every output)" : "", size, batch,
           mib(nn_ctx_bytes(c), batch), (double)nn_ctx_bytes(c) / (1 << 30));
    printf("  %-10s %10s\n", "kept", "MiB/image");
    for (int op = 0; op < NN_OP_COUNT; op++)
        if (mem.kept[op])
            printf("  %-10s %10.2f\n", nn_op_name((nn_op)op), mib(mem.kept[op], batch));
    printf("  %-10s %10.2f\n  %-10s %10.2f\n  %-10s %10.2f\n  %-10s %10.2f\n", "masks",
           mib(mem.masks, batch), "shared", mib(mem.shared, batch), "param grads",
           mib(mem.params, batch), "other", mib(mem.other, batch));
    size_t in_len = (size_t)batch * size * size * 3;
    float *x = malloc(in_len * sizeof *x), *dl = malloc((size_t)batch * CLASSES * sizeof *dl);
    rng r;
    rng_seed(&r, 7);
    for (size_t i = 0; i < in_len; i++)
        x[i] = rng_float(&r) * 2.0f - 1.0f;
    for (int i = 0; i < batch * CLASSES; i++)
        dl[i] = (rng_float(&r) - 0.5f) / (float)batch;
    double best = 1e30;
    for (int s = 0; s < steps; s++) {
        nn_zero_grads(c);
        double t0 = util_thread_cpu();
        nn_forward(c, x, batch, 1, 3, 0);
        nn_backward(c, dl);
        double dt = util_thread_cpu() - t0;
        if (dt < best)
            best = dt;
    }
    const float *g = nn_grads(c);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < nn_param_count(m); i++) {
        uint32_t u;
        memcpy(&u, &g[i], sizeof u);
        h = (h ^ u) * 1099511628211ull;
    }
    printf("  forward + backward: %.2f s (best of %d, thread CPU), %.2f img/s; gradient hash "
           "%016llx\n",
           best, steps, batch / best, (unsigned long long)h);
    free(x);
    free(dl);
    nn_ctx_free(c);
    nn_model_free(m);
}

int main(int argc, char **argv)
{
    int size = argc > 1 ? atoi(argv[1]) : 512;
    int batch = argc > 2 ? atoi(argv[2]) : 16;
    int steps = argc > 3 ? atoi(argv[3]) : 2;
    if (size < 32 || batch < 1 || steps < 1) {
        fprintf(stderr, "usage: bench_mem [size [batch [steps [keep]]]]\n");
        return 2;
    }
    if (argc > 4 && !strcmp(argv[4], "keep"))
        nn_set_recompute(0);
    bench_header("bench_mem");
    nn_init();
    char zoo[4096];
    const char *sd = getenv("PT_SHARED_DATA");
    util_path(zoo, sizeof zoo, "%s/weights/mobilenetv2-12-int8.onnx",
              sd && *sd ? sd : "../shared/data");
    one("builtin", size, batch, steps, zoo);
    if (util_is_file(zoo))
        one("import", size, batch, steps, zoo);
    else
        printf("import: %s not found, skipped\n", zoo);
    return 0;
}
