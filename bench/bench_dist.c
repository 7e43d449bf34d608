/* bench_dist — data parallelism across processes (issue 15): what one job of 2 ranks x
 * 1 replica costs against one process of 2 replicas on this machine, and a model of
 * the gradient exchange on 8, 32 and 128 hosts.
 *
 *   1. training: for `small` and MobileNetV2 x1.0 at 128 px (the demo data, 16 per
 *      replica, two epochs), `petal-tui --headless --replicas 2 --workers 2`,
 *      `mpirun -np 2 petal-tui --headless --replicas 1 --workers 1 --no-overlap` (the
 *      optimizer sliced across the ranks: what --overlap auto, the default, takes on
 *      one host) and the same with --overlap (auto's choice across hosts) in turn, five rounds; ms per update is the second epoch's own line (the first one's holds
 *      the start: threads, caches, the first batches), without validation, and the
 *      time in collectives its throughput line's (waits for the other rank
 *      included). A round's overhead is (2 ranks - 1 process) / 1 process; the
 *      figure to read is the median of the rounds' overheads, as two runs in turn on
 *      2 cores wander by 10-20% each.
 *   2. the exchange alone: mpirun -np 2 of this program, timing for each model's
 *      parameter count dist_sum_floats() (the sum --overlap's buckets make) and
 *      dist_reduce_scatter_floats() + dist_allgather_floats() (--no-overlap's sum
 *      of the slices, then the gather of the weights): the best of 30.
 *   3. the model: gradient bytes per update 4 x parameters; a ring allreduce (the
 *      same volume as dist's reduce-scatter + allgather) takes 2 (N-1)/N x bytes /
 *      bandwidth + 2 (N-1) x latency; against the compute time per update of one host
 *      like this one (2 cores, 2 replicas x 16, the 1-process figure of part 1), with
 *      the exchange after the backward pass (--no-overlap) and during it, in the
 *      strategy's buckets (--overlap, auto's choice across hosts).
 *
 * Run it as `build/bench/bench_dist` (it starts mpirun itself; as root with
 * --allow-run-as-root). PT_BIN names the program (default build/petal-tui). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "bench/bench_common.h"
#include "nn/nn.h"
#include "nn/nn_import.h"
#include "train/dist.h"

#define ROUNDS 5

static const char *bin(void)
{
    const char *b = getenv("PT_BIN");
    return b && *b ? b : "build/petal-tui";
}

static const char *root_flag(void)
{
    return getuid() == 0 ? "--allow-run-as-root " : "";
}

/* ---- part 2, in each rank ---- */

static int child(int argc, char **argv)
{
    pt_err e;
    if (dist_init(&e) != PT_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        size_t n = (size_t)atoll(argv[i]);
        float *v = malloc(n * sizeof *v);
        if (!v)
            break;
        /* The sum as --overlap's buckets do it (dist_sum_floats), and as the sliced
         * optimizer does: the reduce-scatter, then (after the step) the gather of
         * the weights. */
        double best = 1e9, best_rs = 1e9, best_ag = 1e9;
        for (int k = 0; k < 33; k++) {
            for (size_t j = 0; j < n; j++)
                v[j] = (float)(j % 97) * 1e-3f;
            double t0 = util_now();
            if (dist_sum_floats(v, n, &e) != PT_OK) {
                fprintf(stderr, "%s\n", e.msg);
                dist_abort(1);
            }
            double t1 = util_now();
            if (dist_reduce_scatter_floats(v, n, &e) != PT_OK) {
                fprintf(stderr, "%s\n", e.msg);
                dist_abort(1);
            }
            double t2 = util_now();
            if (dist_allgather_floats(v, n, &e) != PT_OK) {
                fprintf(stderr, "%s\n", e.msg);
                dist_abort(1);
            }
            double t3 = util_now();
            if (k >= 3) {
                best = t1 - t0 < best ? t1 - t0 : best;
                best_rs = t2 - t1 < best_rs ? t2 - t1 : best_rs;
                best_ag = t3 - t2 < best_ag ? t3 - t2 : best_ag;
            }
        }
        if (dist_rank() == 0)
            printf("exchange %zu %.6f %.6f %.6f\n", n, best, best_rs, best_ag);
        free(v);
    }
    fflush(stdout);
    dist_finalize();
    return 0;
}

/* ---- part 1 ---- */

typedef struct figures {
    double ms_update, comm_ms;
    long long params;
} figures;

/* Runs one training and reads its figures from its output. */
static int train(const char *model, int ranks, int overlap, const char *dir, figures *f)
{
    char cmd[8192], out[4200];
    util_path(out, sizeof out, "%s/run-%s-%d", dir, model, ranks);
    util_remove_tree(out);
    snprintf(cmd, sizeof cmd,
             "%s%s '%s' --headless --model %s --image-size 128 --batch-per-replica 16 "
             "--epochs 2 --replicas %d --workers %d%s --out '%s' 2>&1",
             ranks > 1 ? "mpirun -np 2 " : "", ranks > 1 ? root_flag() : "", bin(), model,
             ranks > 1 ? 1 : 2, ranks > 1 ? 1 : 2, ranks == 1 ? "" : overlap ? " --overlap" : " --no-overlap", out);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char line[2048];
    memset(f, 0, sizeof *f);
    while (fgets(line, sizeof line, p)) {
        const char *q;
        if ((q = strstr(line, "ms/update - loss"))) {
            const char *s = q;
            while (s > line && s[-1] != ' ')
                s--;
            f->ms_update = atof(s);
        }
        if ((q = strstr(line, "collectives ")))
            f->comm_ms = atof(q + 12);
        if (!strncmp(line, "model ", 6) && (q = strstr(line, ": ")))
            f->params = atoll(q + 2);
    }
    int st = pclose(p);
    return st == 0 && f->ms_update > 0 ? 0 : -1;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    if (dist_launched())
        return child(argc, argv);
    bench_header("bench_dist");
    double load[3] = { 0 };
    if (getloadavg(load, 3) > 0)
        printf("load average before: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
    char dir[4200];
    util_path(dir, sizeof dir, "build/bench-dist");
    pt_err e;
    util_mkdirs(dir, &e);

    static const char *const models[2] = { "small", "mobilenetv2" };
    double one[2] = { 0 }, two[2] = { 0 }, comm[2] = { 0 };
    long long params[3] = { 0 };
    printf("\n1. training, 128 px, 16 per replica, the demo data's 2nd epoch (61 updates);\n"
           "   2 x 1 with the gradient sent after the backward and the optimizer sliced\n"
           "   (--no-overlap), and during it (--overlap); overhead against 1 x 2, comm =\n"
           "   time in collectives\n");
    printf("%-12s %5s %10s %10s %10s %9s %9s %8s %8s\n", "model", "round", "1x2 ms",
           "no-ovl ms", "overlap ms", "no-ovl", "overlap", "no-ovl", "overlap");
    for (int m = 0; m < 2; m++) {
        double a[ROUNDS], b[ROUNDS], c[ROUNDS], over[ROUNDS];
        double bn[ROUNDS], cn[ROUNDS], overn[ROUNDS];
        int ok = 1;
        for (int k = 0; k < ROUNDS && ok; k++) {
            figures fa, fb, fn;
            ok = train(models[m], 1, 0, dir, &fa) == 0 && train(models[m], 2, 0, dir, &fb) == 0 &&
                 train(models[m], 2, 1, dir, &fn) == 0;
            if (!ok)
                break;
            a[k] = fa.ms_update;
            b[k] = fb.ms_update;
            c[k] = fb.comm_ms;
            bn[k] = fn.ms_update;
            cn[k] = fn.comm_ms;
            over[k] = 100 * (b[k] - a[k]) / a[k];
            overn[k] = 100 * (bn[k] - a[k]) / a[k];
            params[m] = fa.params;
            printf("%-12s %5d %10.1f %10.1f %10.1f %8.1f%% %8.1f%% %8.1f %8.1f\n", models[m],
                   k + 1, a[k], b[k], bn[k], over[k], overn[k], c[k], cn[k]);
        }
        if (!ok) {
            printf("%s: a run failed (is mpirun installed?)\n", models[m]);
            return 1;
        }
        one[m] = median(a, ROUNDS);
        two[m] = median(b, ROUNDS);
        comm[m] = median(c, ROUNDS);
        double twon = median(bn, ROUNDS), commn = median(cn, ROUNDS);
        printf("%-12s %5s %10.1f %10.1f %10.1f %8.1f%% %8.1f%% %8.1f %8.1f\n", models[m], "med",
               one[m], two[m], twon, median(over, ROUNDS), median(overn, ROUNDS), comm[m], commn);
    }

    /* The largest imported backbone: the shared data's MobileNetV2 (int8, dequantized)
     * with a 104-class head, where the shared data is. */
    const char *sd = getenv("PT_SHARED_DATA");
    char onnx[4200];
    util_path(onnx, sizeof onnx, "%s/weights/mobilenetv2-12-int8.onnx",
              sd && *sd ? sd : "../shared/data");
    if (util_is_file(onnx)) {
        nn_import_opts o = { .h = 224, .w = 224, .n_classes = 104, .dropout = 0.2f,
                             .norm = NN_NORM_IMAGENET };
        nn_import_info info;
        nn_model *mm = nn_import_onnx_file(onnx, &o, &info, &e);
        if (mm) {
            params[2] = (long long)nn_param_count(mm);
            nn_model_free(mm);
        }
    }

    printf("\n2. the gradient exchange alone, 2 ranks, best of 30: dist_sum_floats (what\n"
           "   --overlap's buckets do), and --no-overlap's reduce-scatter of the gradient\n"
           "   then gather of the weights\n");
    char cmd[1024];
    int n = snprintf(cmd, sizeof cmd, "mpirun -np 2 %s'%s'", root_flag(), argv[0]);
    for (int m = 0; m < 3; m++)
        if (params[m] > 0)
            n += snprintf(cmd + n, sizeof cmd - (size_t)n, " %lld", params[m]);
    double ex[3] = { 0 }, rs[3] = { 0 }, ag[3] = { 0 };
    FILE *p = popen(cmd, "r");
    char line[512];
    while (p && fgets(line, sizeof line, p)) {
        long long cnt;
        double s, s_rs, s_ag;
        if (sscanf(line, "exchange %lld %lf %lf %lf", &cnt, &s, &s_rs, &s_ag) == 4)
            for (int m = 0; m < 3; m++)
                if (params[m] == cnt) {
                    ex[m] = s;
                    rs[m] = s_rs;
                    ag[m] = s_ag;
                }
    }
    if (p)
        pclose(p);
    static const char *const names[3] = { "small", "mobilenetv2", "onnx mnv2 int8" };
    printf("%-16s %12s %12s %10s %12s %10s %10s\n", "model", "parameters", "MB/update",
           "sum ms", "algbw GB/s", "r-s ms", "gather ms");
    for (int m = 0; m < 3; m++) {
        if (params[m] <= 0)
            continue;
        double bytes = 4.0 * (double)params[m];
        printf("%-16s %12lld %12.2f %10.3f %12.2f %10.3f %10.3f\n", names[m], params[m],
               bytes / 1e6, 1e3 * ex[m], ex[m] > 0 ? bytes / ex[m] / 1e9 : 0, 1e3 * rs[m],
               1e3 * ag[m]);
    }

    printf("\n3. model: ring allreduce 2(N-1)/N x bytes / bandwidth + 2(N-1) x 50 us, against\n"
           "   one host like this one computing an update of 2 x 16 (part 1's 1-process\n"
           "   ms/update; the ONNX backbone taken as mobilenetv2's x 224/128 squared).\n"
           "   After the backward (--no-overlap): all of it is exposed. During it (--overlap): the\n"
           "   gradient in B buckets of up to 131,072 floats (at most 16), each its own\n"
           "   allreduce, one after another on the link, hidden behind the backward pass\n"
           "   (2/3 of the compute) except the last bucket's: exposed = max(one bucket,\n"
           "   all buckets - 2/3 compute)\n");
    printf("%-16s %6s %6s %3s %10s %10s %10s %10s %10s\n", "model", "hosts", "Gbit/s", "B",
           "comm ms", "compute", "eff after", "exposed", "eff during");
    static const int hosts[3] = { 8, 32, 128 };
    static const double gbit[2] = { 10, 25 };
    for (int m = 0; m < 3; m++) {
        if (params[m] <= 0)
            continue;
        double tc = m < 2 ? one[m] : one[1] * (224.0 * 224.0) / (128.0 * 128.0);
        double bytes = 4.0 * (double)params[m];
        int nb = (int)((params[m] + 131071) / 131072);
        nb = nb < 1 ? 1 : nb > 16 ? 16 : nb;
        for (int h = 0; h < 3; h++)
            for (int g = 0; g < 2; g++) {
                double N = hosts[h], bw = gbit[g] * 1e9 / 8;
                double t = 2 * (N - 1) / N * bytes / bw + 2 * (N - 1) * 50e-6;
                double tb = 2 * (N - 1) / N * bytes / nb / bw + 2 * (N - 1) * 50e-6;
                double all = 1e3 * nb * tb, hidden = 2.0 / 3.0 * tc;
                double exposed = all - hidden > 1e3 * tb ? all - hidden : 1e3 * tb;
                printf("%-16s %6d %6.0f %3d %10.2f %10.1f %9.1f%% %10.2f %9.1f%%\n", names[m],
                       hosts[h], gbit[g], nb, 1e3 * t, tc, 100 * tc / (tc + 1e3 * t), exposed,
                       100 * tc / (tc + exposed));
            }
    }
    if (getloadavg(load, 3) > 0)
        printf("\nload average after: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
    return 0;
}
