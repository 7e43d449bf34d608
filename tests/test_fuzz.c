/* Tests of the fuzz harnesses (tests/fuzz/, issue 13): a short smoke of each.
 *
 * Each harness built by `make test` (build-fuzz/fuzz/fuzz_TARGET, clang with
 * libFuzzer, ASan and UBSan) first runs every crash reproducer kept in
 * tests/fuzz/regress/TARGET/ once, then fuzzes for about two seconds from the
 * committed seeds into a scratch folder. A crash, a leak, undefined behaviour, a
 * broken promise of the API or a hang fails the test with the harness's report.
 * Where clang could not link a libFuzzer program the harnesses are not built and
 * these tests skip, counted, saying so. The long runs are `make fuzz`. */
#include "tests/t.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define SMOKE_SECONDS 2

static const char *const TARGETS[] = {
    "checkpoint", "config", "example", "jpeg", "onnx", "png", "predict", "term", "tfrecord",
};
#define N_TARGETS (sizeof TARGETS / sizeof TARGETS[0])

/* The harness's path, or NULL (the test then skipped) when it was not built. */
static const char *harness(const char *target)
{
    static char bin[4200];
    const char *dir = getenv("PT_FUZZ_BIN");
    util_path(bin, sizeof bin, "%s/fuzz_%s", dir && *dir ? dir : "build-fuzz/fuzz", target);
    if (util_is_file(bin))
        return bin;
    char why[4400];
    snprintf(why, sizeof why, "%s is not built: it needs clang with libFuzzer (make deps "
             "installs clang and libclang-rt-14-dev)", bin);
    t_skip(why);
    return NULL;
}

/* The last lines of a harness's output, where its report is. */
static const char *tail(const char *out)
{
    size_t n = strlen(out);
    return n > 3000 ? out + n - 3000 : out;
}

static void smoke(const char *target)
{
    const char *bin = harness(target);
    if (!bin)
        return;
    char cmd[8000], dir[4200];
    char *out;

    /* The reproducers, each once: libFuzzer runs the files it is given and exits. */
    util_path(dir, sizeof dir, "tests/fuzz/regress/%s", target);
    char **names;
    int n = 0;
    pt_err e;
    if (util_is_dir(dir)) {
        T_REQUIRE(util_list_dir(dir, UTIL_LIST_FILES, &names, &n, &e) == PT_OK);
        util_free_list(names, n);
    }
    if (n > 0) {
        util_path(cmd, sizeof cmd, "'%s' -timeout=10 '%s'/*", bin, dir);
        int rc = t_run(cmd, &out);
        int ran = 0;
        for (const char *p = out; (p = strstr(p, "\nExecuted ")); p++)
            ran++;
        T_CHECKF(rc == 0 && ran == n, "%s on its %d reproducers: exit %d, %d run\n%s", target, n,
                 rc, ran, tail(out));
        free(out);
    }

    /* A short fuzz from the seeds (and the reproducers) into a scratch corpus. */
    const char *tmp = t_tmpdir();
    char corpus[4200];
    util_path(corpus, sizeof corpus, "%s/corpus", tmp);
    T_REQUIRE(util_mkdirs(corpus, &e) == PT_OK);
    char dict[300] = "";
    util_path(dict, sizeof dict, "-dict=tests/fuzz/%s.dict", target);
    if (!util_is_file(dict + 6))
        dict[0] = '\0';
    util_path(cmd, sizeof cmd,
              "'%s' -max_total_time=%d -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 "
              "-artifact_prefix='%s/' %s '%s' tests/fuzz/corpus/%s %s",
              bin, SMOKE_SECONDS, tmp, dict, corpus, target, n > 0 ? dir : "");
    int rc = t_run(cmd, &out);
    const char *units = strstr(out, "stat::number_of_executed_units:");
    long long execs = units ? atoll(units + strlen("stat::number_of_executed_units:")) : 0;
    T_CHECKF(rc == 0, "fuzz_%s exit %d (its input is kept with PT_KEEP_TMP=1 in %s):\n%s", target,
             rc, tmp, tail(out));
    T_CHECKF(execs > 0, "fuzz_%s ran no input:\n%s", target, tail(out));
    if (rc == 0)
        printf("  %s: %lld executions in %d s\n", target, execs, SMOKE_SECONDS);
    free(out);
}

TEST(fuzz_smoke_checkpoint) { smoke("checkpoint"); }
TEST(fuzz_smoke_config) { smoke("config"); }
TEST(fuzz_smoke_example) { smoke("example"); }
TEST(fuzz_smoke_jpeg) { smoke("jpeg"); }
TEST(fuzz_smoke_onnx) { smoke("onnx"); }
TEST(fuzz_smoke_png) { smoke("png"); }
TEST(fuzz_smoke_predict) { smoke("predict"); }
TEST(fuzz_smoke_term) { smoke("term"); }
TEST(fuzz_smoke_tfrecord) { smoke("tfrecord"); }

/* Every harness in tests/fuzz/ has its smoke test above, with seeds to start from. */
TEST(fuzz_every_harness_has_a_smoke_test_and_seeds)
{
    char **names;
    int n;
    pt_err e;
    T_REQUIRE(util_list_dir("tests/fuzz", UTIL_LIST_FILES, &names, &n, &e) == PT_OK);
    int harnesses = 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        if (strncmp(names[i], "fuzz_", 5) != 0 || len < 8 || strcmp(names[i] + len - 2, ".c") != 0)
            continue;
        harnesses++;
        char target[256];
        snprintf(target, sizeof target, "%.*s", (int)(len - 7), names[i] + 5);
        int listed = 0;
        for (size_t k = 0; k < N_TARGETS; k++)
            listed |= strcmp(TARGETS[k], target) == 0;
        T_CHECKF(listed, "tests/fuzz/%s has no smoke test in tests/test_fuzz.c", names[i]);
        char dir[512], **seeds;
        int n_seeds = 0;
        snprintf(dir, sizeof dir, "tests/fuzz/corpus/%s", target);
        if (util_list_dir(dir, UTIL_LIST_FILES, &seeds, &n_seeds, &e) == PT_OK)
            util_free_list(seeds, n_seeds);
        T_CHECKF(n_seeds > 0, "%s has no seeds", dir);
    }
    util_free_list(names, n);
    T_EQ_INT(harnesses, N_TARGETS);
}
