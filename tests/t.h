/* t — the test harness.
 *
 * A test is `TEST(name) { ... }` at the start of a line in any test file (tests/, .c); the
 * Makefile collects them into a registry in file order. Checks record a failure and
 * go on (T_CHECK) or return from the test (T_REQUIRE). The runner prints one line
 * per failed check and ends with "N passed, N failed, N skipped". A test that ends
 * without having made a single check, and without skipping, fails ("made no check"):
 * a test that checks nothing proves nothing. A test that needs
 * the shared data starts with T_NEED_DATA(): without it (a bare clone) the test is
 * skipped and counted as such, never passed silently.
 *
 * Shared data lives in ../shared/data relative to the repository (found further up
 * too; override with PT_SHARED_DATA); t_data() builds a path into it, t_tmpdir() a fresh scratch folder
 * under the build folder that the runner removes at exit.
 */
#ifndef PT_TEST_H
#define PT_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

struct t_case {
    const char *name;
    const char *file;
    void (*fn)(void);
};

extern const struct t_case t_cases[];

#define TEST(name) void t_##name(void); void t_##name(void)

void t_fail(const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int t_failed_now(void);
/* Counts one check made by the running test. Every T_ macro calls it; a test that
 * ends having made no check (and did not skip) fails: "made no check". */
void t_check_made(void);

#define T_CHECK(cond)                                                          \
    do {                                                                       \
        t_check_made();                                                        \
        if (!(cond))                                                           \
            t_fail(__FILE__, __LINE__, "check failed: %s", #cond);             \
    } while (0)

#define T_CHECKF(cond, ...)                                                    \
    do {                                                                       \
        t_check_made();                                                        \
        if (!(cond))                                                           \
            t_fail(__FILE__, __LINE__, __VA_ARGS__);                           \
    } while (0)

#define T_REQUIRE(cond)                                                        \
    do {                                                                       \
        t_check_made();                                                        \
        if (!(cond)) {                                                         \
            t_fail(__FILE__, __LINE__, "required: %s", #cond);                 \
            return;                                                            \
        }                                                                      \
    } while (0)

#define T_EQ_INT(a, b)                                                         \
    do {                                                                       \
        t_check_made();                                                        \
        long long t_a_ = (long long)(a), t_b_ = (long long)(b);                \
        if (t_a_ != t_b_)                                                      \
            t_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, t_a_, t_b_); \
    } while (0)

#define T_EQ_STR(a, b)                                                         \
    do {                                                                       \
        t_check_made();                                                        \
        const char *t_a_ = (a), *t_b_ = (b);                                   \
        if (!t_a_ || !t_b_ || strcmp(t_a_, t_b_) != 0)                          \
            t_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,    \
                   t_a_ ? t_a_ : "(null)", t_b_ ? t_b_ : "(null)");            \
    } while (0)

#define T_NEAR(a, b, tol)                                                      \
    do {                                                                       \
        t_check_made();                                                        \
        double t_a_ = (double)(a), t_b_ = (double)(b);                         \
        if (!(fabs(t_a_ - t_b_) <= (tol)))                                     \
            t_fail(__FILE__, __LINE__, "%s ~ %s: %.9g vs %.9g (tol %g)", #a, #b, \
                   t_a_, t_b_, (double)(tol));                                 \
    } while (0)

/* Mark the running test skipped (why is printed); it then counts neither as passed
 * nor failed. */
void t_skip(const char *why);

#define T_NEED_DATA()                                                          \
    do {                                                                       \
        if (!t_have_data()) {                                                  \
            t_skip("needs the shared data (../shared/data)");                  \
            return;                                                            \
        }                                                                      \
    } while (0)

/* 1 when the program name is on PATH. Otherwise marks the running test skipped,
 * naming the program, and returns 0: a check that needs a missing tool is counted
 * as skipped, never passed silently. */
int t_need_tool(const char *name);

#define T_NEED_TOOL(name)                                                      \
    do {                                                                       \
        if (!t_need_tool(name))                                                \
            return;                                                            \
    } while (0)

/* Path into the shared data folder ("" returns the folder). Static buffer ring. */
const char *t_data(const char *rel);
/* 1 when the shared data folder is present. */
int t_have_data(void);
/* A fresh empty folder for this test. Static buffer ring. */
const char *t_tmpdir(void);
/* The built petal-tui binary. */
const char *t_bin(void);
/* Run a shell command, capture stdout+stderr (malloc'd, caller frees) and the exit
 * status (the code, or 128+signal). Returns the status. */
int t_run(const char *cmd, char **out);
/* 1 when running under valgrind (PT_VALGRIND set): tests may shrink their work. */
int t_slow_mode(void);

#endif
