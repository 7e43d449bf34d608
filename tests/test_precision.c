/* --precision through the program (issue 43): --version says what auto is here; a
 * headless run in bf16 writes it to its config and log and is deterministic (the same
 * seed, the same history to the bit), and its history is the same bits whether the
 * products run on the AVX512_BF16 kernels or, under PT_GEMM_AVX2=1 (no AVX-512 for
 * petal-tui's kernels), on the portable C engine (not so for AMX's, whose sums are
 * ordered by the tile unit); fp32 differs from it; predict of the
 * run folder takes the run's precision (its validation images predict what the run
 * logged) and says so, --precision overrides it, a bad value is refused. Real
 * tfrecords of JPEGs (fixtures.c), the real binary. */
#include "tests/t.h"

#include <stdlib.h>

#include "base/util.h"
#include "nn/nn.h"
#include "tests/fixtures.h"

static const long long TRAIN[3] = { 24, 24, 24 }, VAL[3] = { 8, 8, 8 };

/* Runs the binary with args (prefix: environment settings, or ""); stdout and stderr
 * into *out; the exit status. */
static int run(const char *prefix, const char *args, char **out)
{
    char cmd[16384];
    util_path(cmd, sizeof cmd, "%s %s %s", prefix, t_bin(), args);
    return t_run(cmd, out);
}

/* A 2-epoch run of small 32,64 at 32 px (the 32 -> 64 conv's products are bf16's) on
 * data into dir; 0 when it finished. */
static int train(const char *prefix, const char *data, const char *dir, const char *prec)
{
    char args[12000], *out;
    util_path(args, sizeof args,
              "--headless --data '%s' --out '%s' --epochs 2 --replicas 2 --workers 1 "
              "--batch-per-replica 8 --widths 32,64 --precision %s --seed 5",
              data, dir, prec);
    const int rc = run(prefix, args, &out);
    if (rc != 0)
        printf("  %s: exit %d:\n%s\n", dir, rc, out);
    free(out);
    return rc;
}

static char *file_of(const char *dir, const char *name)
{
    char p[4200];
    util_path(p, sizeof p, "%s/%s", dir, name);
    return fx_slurp(p);
}

/* The text with its lines that name a time ("train_timing", ...) taken out. */
static void drop_times(char *s)
{
    char *w = s;
    for (char *line = s; *line;) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
        char keep[4096];
        snprintf(keep, sizeof keep, "%.*s", (int)(len < sizeof keep ? len : sizeof keep - 1),
                 line);
        if (!strstr(keep, "tim")) {
            memmove(w, line, len);
            w += len;
        }
        line += len;
    }
    *w = '\0';
}

/* Whether two runs' histories are the same bits (every loss and figure to the digits
 * history.json keeps, which are float32's and more), times aside. */
static int same_history(const char *a, const char *b)
{
    char *x = file_of(a, "history.json"), *y = file_of(b, "history.json");
    int same = 0;
    if (x && y) {
        drop_times(x);
        drop_times(y);
        same = strcmp(x, y) == 0 && strstr(x, "val_loss") != NULL;
    }
    free(x), free(y);
    return same;
}

TEST(precision_version_says_what_auto_runs_here)
{
    char *out;
    T_REQUIRE(run("", "--version", &out) == 0);
    /* As the features the program itself found say (under valgrind this process
     * sees valgrind's CPU, the child the real one). */
    const char *feats = strstr(out, "CPU features:");
    const char *eol = feats ? strchr(feats, '\n') : NULL;
    char line[512] = "";
    if (feats && eol)
        snprintf(line, sizeof line, "%.*s", (int)(eol - feats), feats);
    const int has = strstr(line, "avx512_bf16") || strstr(line, "amx-bf16");
    const char *want = has ? "--precision auto: bf16 operands, fp32 sums ("
                           : "--precision auto: fp32 (auto: this CPU has no";
    T_CHECKF(strstr(out, want) != NULL, "%s", out);
    free(out);
    /* Without AVX-512 for petal-tui's kernels auto is fp32. */
    T_REQUIRE(run("PT_GEMM_AVX2=1", "--version", &out) == 0);
    T_CHECKF(strstr(out, "--precision auto: fp32 (auto: this CPU has no") != NULL, "%s", out);
    free(out);
}

TEST(precision_bf16_run_is_deterministic_logged_and_engine_independent)
{
    const char *tmp = t_tmpdir();
    const char *data = fx_dataset(tmp, 3, TRAIN, VAL, 6, 32, 16);
    T_REQUIRE(data);
    char a[4200], b[4200], c[4200], f[4200];
    util_path(a, sizeof a, "%s/bf16-a", tmp);
    util_path(b, sizeof b, "%s/bf16-b", tmp);
    util_path(c, sizeof c, "%s/bf16-portable", tmp);
    util_path(f, sizeof f, "%s/fp32", tmp);
    T_REQUIRE(train("", data, a, "bf16") == 0);
    T_REQUIRE(train("", data, b, "bf16") == 0);
    T_REQUIRE(train("PT_GEMM_AVX2=1", data, c, "bf16") == 0);
    T_REQUIRE(train("", data, f, "fp32") == 0);
    T_CHECK(same_history(a, b));
    /* AMX sums a tile's products in an order of its own (nn_bf16.h): there the two
     * runs agree to rounding, not to the bit, and that is checked on the kernels
     * (test_bf16.c). */
    if (strcmp(nn_bf16_engine_name(), "amx") != 0)
        T_CHECKF(same_history(a, c),
                 "the portable engine's run differs from the %s engine's", nn_bf16_engine_name());
    T_CHECK(!same_history(a, f));
    char *cfg = file_of(a, "config"), *log = file_of(a, "log.txt"), *logc = file_of(c, "log.txt");
    char *logf = file_of(f, "log.txt");
    T_REQUIRE(cfg && log && logc && logf);
    T_CHECK(strstr(cfg, "precision = bf16\n") != NULL);
    T_CHECKF(strstr(log, "precision: bf16 operands, fp32 sums") != NULL, "%s", log);
    T_CHECKF(strstr(logc, "precision: bf16 operands, fp32 sums (emulated: this CPU has no "
                          "AVX512_BF16") != NULL, "%s", logc);
    T_CHECK(strstr(logf, "precision: fp32\n") != NULL);
    free(cfg), free(log), free(logc), free(logf);

    /* predict of the bf16 run: in bf16 by default, saying so; --precision fp32 not. */
    char args[12000], *out;
    util_path(args, sizeof args, "predict '%s' '%s' --split val", a, data);
    T_CHECK(run("", args, &out) == 0);
    T_CHECKF(strstr(out, "predict: bf16 operands, fp32 sums") != NULL, "%s", out);
    free(out);
    util_path(args, sizeof args, "predict '%s' '%s' --split val --precision fp32", a, data);
    T_CHECK(run("", args, &out) == 0);
    T_CHECK(strstr(out, "bf16") == NULL);
    free(out);
    util_path(args, sizeof args, "predict '%s' '%s' --precision bf17", a, data);
    T_CHECK(run("", args, &out) == 1);
    T_CHECKF(strstr(out, "precision") && strstr(out, "bf17"), "%s", out);
    free(out);
}
