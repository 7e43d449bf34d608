/* Tests of the test runner itself: a test that makes no check fails, a test that
 * skips is counted as skipped. The runner runs itself on this file's one test with
 * PT_T_INNER set, in which case the test plays the part asked for. */
#include "tests/t.h"

#include <stdlib.h>
#include <unistd.h>

TEST(runner_fails_a_test_that_made_no_check_and_counts_skips)
{
    const char *inner = getenv("PT_T_INNER");
    if (inner) {
        if (strcmp(inner, "skip") == 0)
            t_skip("the runner's own check of skips");
        return; /* "nocheck": no check at all */
    }
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        t_skip("cannot find the runner: readlink(/proc/self/exe) failed");
        return;
    }
    self[len] = 0;
    char cmd[8400], *out = NULL;

    snprintf(cmd, sizeof cmd, "PT_T_INNER=nocheck '%s' runner_fails_a_test_that_made_no_check",
             self);
    int rc = t_run(cmd, &out);
    T_EQ_INT(rc, 1);
    T_CHECKF(strstr(out, "made no check") && strstr(out, "\n0 passed, 1 failed, 0 skipped\n"),
             "inner run: %s", out);
    free(out);

    snprintf(cmd, sizeof cmd, "PT_T_INNER=skip '%s' runner_fails_a_test_that_made_no_check",
             self);
    rc = t_run(cmd, &out);
    T_EQ_INT(rc, 0);
    T_CHECKF(!strstr(out, "made no check") && strstr(out, "\n0 passed, 0 failed, 1 skipped\n"),
             "inner run: %s", out);
    free(out);
}
