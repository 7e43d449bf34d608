/* The test runner: runs every registered test (or those whose name contains one of
 * the arguments), each under an alarm so a hang becomes a failure, and prints
 * "N passed, N failed, N skipped" last. A test that neither made a check nor
 * skipped fails ("made no check"). */
#include "tests/t.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"

static int g_failed_checks;
static int g_checks;            /* checks made by the running test */
static int g_skipped;           /* the running test called t_skip() */
static const char *g_current;
static char g_root[1024];      /* scratch root for this run */
static int g_tmp_serial;

void t_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("  FAIL %s (%s:%d): %s\n", g_current ? g_current : "?", file, line, msg);
    fflush(stdout);
    g_failed_checks++;
}

void t_check_made(void)
{
    g_checks++;
}

int t_failed_now(void)
{
    return g_failed_checks;
}

static const char *ring(void)
{
    static char bufs[8][4096];
    static int i;
    i = (i + 1) % 8;
    return bufs[i];
}

/* The shared data: $PT_SHARED_DATA, else the first shared/data found going up
 * from the repository (../shared/data where the checkout sits beside it). */
static const char *data_root(void)
{
    static char root[1024];
    if (root[0])
        return root;
    const char *env = getenv("PT_SHARED_DATA");
    if (env && *env) {
        snprintf(root, sizeof root, "%s", env);
        return root;
    }
    const char *ups[] = { "..", "../..", "../../..", "../../../.." };
    for (size_t i = 0; i < sizeof ups / sizeof ups[0]; i++) {
        char probe[1100];
        snprintf(probe, sizeof probe, "%s/shared/data/flower-jpegs-128", ups[i]);
        if (util_is_dir(probe)) {
            snprintf(root, sizeof root, "%s/shared/data", ups[i]);
            return root;
        }
    }
    snprintf(root, sizeof root, "../shared/data");
    return root;
}

const char *t_data(const char *rel)
{
    char *p = (char *)ring();
    snprintf(p, 4096, "%s%s%s", data_root(), rel && *rel ? "/" : "", rel ? rel : "");
    return p;
}

int t_have_data(void)
{
    return util_is_dir(t_data("flower-jpegs-128"));
}

const char *t_tmpdir(void)
{
    char *p = (char *)ring();
    snprintf(p, 4096, "%s/t%03d", g_root, ++g_tmp_serial);
    pt_err e;
    if (util_mkdirs(p, &e) != 0) {
        fprintf(stderr, "cannot create %s: %s\n", p, e.msg);
        exit(2);
    }
    return p;
}

const char *t_bin(void)
{
    const char *b = getenv("PT_BIN");
    return b && *b ? b : "build/petal-tui";
}

void t_skip(const char *why)
{
    g_skipped = 1;
    printf("  skipped: %s\n", why);
}

int t_need_tool(const char *name)
{
    char cmd[512], why[512];
    snprintf(cmd, sizeof cmd, "command -v '%s' >/dev/null 2>&1", name);
    if (system(cmd) == 0)
        return 1;
    snprintf(why, sizeof why, "needs %s, which is not on PATH", name);
    t_skip(why);
    return 0;
}

int t_slow_mode(void)
{
    const char *v = getenv("PT_VALGRIND");
    return v && *v && strcmp(v, "0") != 0;
}

int t_run(const char *cmd, char **out)
{
    char full[8192];
    snprintf(full, sizeof full, "(%s) 2>&1", cmd);
    FILE *f = popen(full, "r");
    if (!f) {
        if (out)
            *out = strdup("");
        return -1;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (n + 1024 > cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        if (got == 0)
            break;
        n += got;
    }
    buf[n] = 0;
    int st = pclose(f);
    if (out)
        *out = buf;
    else
        free(buf);
    if (st == -1)
        return -1;
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return -1;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char m[] = "\n  FAIL: test timed out (alarm)\n";
    if (write(1, m, sizeof m - 1) < 0) {
        /* nothing more to do */
    }
    _exit(3);
}

static int matches(const char *name, int argc, char **argv)
{
    if (argc <= 1)
        return 1;
    for (int i = 1; i < argc; i++)
        if (strstr(name, argv[i]))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *build = getenv("PT_TEST_TMP");
    snprintf(g_root, sizeof g_root, "%s/pt-test-%ld", build && *build ? build : "/tmp",
             (long)getpid());
    pt_err e;
    if (util_mkdirs(g_root, &e) != 0) {
        fprintf(stderr, "%s\n", e.msg);
        return 2;
    }
    signal(SIGALRM, on_alarm);
    signal(SIGPIPE, SIG_IGN);
    int per_test = t_slow_mode() ? 1800 : 300;
    if (!t_have_data())
        printf("note: shared data not found at %s; tests that need it are skipped\n",
               t_data(""));

    int passed = 0, failed = 0, skipped = 0;
    double t_all = util_now();
    for (const struct t_case *c = t_cases; c->name; c++) {
        if (!matches(c->name, argc, argv))
            continue;
        g_current = c->name;
        int before = g_failed_checks;
        g_skipped = 0;
        g_checks = 0;
        double t0 = util_now();
        alarm((unsigned)per_test);
        c->fn();
        alarm(0);
        double dt = util_now() - t0;
        if (!g_checks && !g_skipped && g_failed_checks == before) {
            printf("  FAIL %s (%s): made no check\n", c->name, c->file);
            g_failed_checks++;
        }
        if (g_failed_checks != before) {
            failed++;
            printf("FAIL %-44s %7.2fs\n", c->name, dt);
        } else if (g_skipped) {
            skipped++;
            printf("skip %-44s %7.2fs\n", c->name, dt);
        } else {
            passed++;
            printf("ok   %-44s %7.2fs\n", c->name, dt);
        }
    }
    char rm[1200];
    snprintf(rm, sizeof rm, "rm -rf '%s'", g_root);
    if (!getenv("PT_KEEP_TMP") && system(rm) != 0)
        fprintf(stderr, "could not remove %s\n", g_root);
    printf("total time %.1fs\n", util_now() - t_all);
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
