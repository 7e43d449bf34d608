/* The workbench's own costs.
 *
 *   sixel encode   a 4 x 4 grid of 96-pixel demo flowers (384 x 384), 256 colours,
 *                  through the workbench's encoder (goal: under 30 ms)
 *   UI thread CPU  petal-tui in a private detached tmux (the text preview: tmux
 *                  3.3a has no sixel) training on the demo data; the main thread,
 *                  which is the UI thread, is read from /proc/PID/task/PID/stat
 *                  over a window while the run goes on (goal: under 3% of a core)
 *   ... with three runs overlaid   the same with --compare over three earlier
 *                  runs (short headless demo runs made first), their curves drawn
 *                  in every frame beside this run's (goal: under 3% of a core)
 *
 * Benchmarks link the core library only, so the encoder's one source file is
 * compiled in here. The binary is $BUILD/petal-tui (or $PT_BIN). */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/util.h"
#include "bench/bench_common.h"
#include "data/flowers.h"
#include "ui/sixel.c"

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void bench_sixel(void)
{
    enum { TILE = 96, GRID = 4, W = TILE * GRID, RUNS = 25 };
    uint8_t *img = malloc((size_t)W * W * 3), *tile = malloc((size_t)TILE * TILE * 3);
    if (!img || !tile)
        return;
    for (int t = 0; t < GRID * GRID; t++) {
        flw_render(t % flw_class_count(), (uint64_t)t * 977, TILE, tile);
        for (int y = 0; y < TILE; y++)
            memcpy(img + ((size_t)((t / GRID) * TILE + y) * W + (t % GRID) * TILE) * 3,
                   tile + (size_t)y * TILE * 3, TILE * 3);
    }
    ui_sixel_buf b = { 0 };
    double ms[RUNS];
    for (int i = 0; i < RUNS; i++) {
        double t0 = util_now();
        if (ui_sixel_encode(img, W, W, 256, &b) != 0) {
            printf("sixel encode failed\n");
            return;
        }
        ms[i] = (util_now() - t0) * 1e3;
    }
    qsort(ms, RUNS, sizeof ms[0], cmpd);
    printf("sixel encode %dx%d (4x4 tiles of %d px, 256 colours): median %.1f ms, "
           "min %.1f, max %.1f over %d runs, %zu bytes\n",
           W, W, TILE, ms[RUNS / 2], ms[0], ms[RUNS - 1], RUNS, b.len);
    ui_sixel_buf_free(&b);
    free(img);
    free(tile);
}

static int sh(const char *cmd)
{
    return system(cmd);
}

/* utime + stime of one thread, in seconds. */
static double thread_cpu(int pid, int tid)
{
    char p[128], buf[2048];
    snprintf(p, sizeof p, "/proc/%d/task/%d/stat", pid, tid);
    FILE *f = fopen(p, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* Fields after the command name (which may hold spaces) start after ')'. */
    char *s = strrchr(buf, ')');
    if (!s)
        return -1;
    unsigned long long ut = 0, st = 0;
    /* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
    if (sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* utime + stime of the whole process. */
static double all_cpu(int pid)
{
    char p[128], buf[2048];
    snprintf(p, sizeof p, "/proc/%d/stat", pid);
    FILE *f = fopen(p, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *s = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    if (!s || sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int screen_has(const char *tmux, const char *text)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s capture-pane -p -t 0 2>/dev/null | grep -q '%s'", tmux, text);
    return sh(cmd) == 0;
}

/* extra: more options for the workbench ("" none); what: how the result is named. */
static void bench_ui_cpu(const char *extra, const char *what)
{
    const char *bin = getenv("PT_BIN");
    char binbuf[1024];
    if (!bin || !*bin) {
        const char *b = getenv("BUILD");
        snprintf(binbuf, sizeof binbuf, "%s/petal-tui", b && *b ? b : "build");
        bin = binbuf;
    }
    char dir[] = "/tmp/pt-bench-ui-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return;
    }
    char tmux[1200], cmd[4096], path[1200];
    snprintf(tmux, sizeof tmux, "tmux -S %s/sock -f %s/conf", dir, dir);
    snprintf(path, sizeof path, "%s/conf", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f, "set -g status off\nset -g default-terminal tmux-256color\n");
    fclose(f);
    snprintf(path, sizeof path, "%s/run.sh", dir);
    f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f, "echo $$ > %s/pid\nexec %s --no-sixel --out %s/run %s\n", dir, bin, dir, extra);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s new-session -d -x 120 -y 36 'sh %s/run.sh'", tmux, dir);
    if (sh(cmd) != 0) {
        printf("UI CPU: cannot start tmux\n");
        return;
    }
    int pid = 0;
    for (int i = 0; i < 100 && !pid; i++) {
        usleep(100000);
        snprintf(path, sizeof path, "%s/pid", dir);
        f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%d", &pid) != 1)
                pid = 0;
            fclose(f);
        }
    }
    int ok = pid > 0;
    for (int i = 0; ok && i < 300 && !screen_has(tmux, "IDLE"); i++)
        usleep(100000);
    double idle_t0 = util_now(), idle_c0 = thread_cpu(pid, pid);
    sleep(5);
    double idle_pct = (thread_cpu(pid, pid) - idle_c0) / (util_now() - idle_t0) * 100;
    snprintf(cmd, sizeof cmd, "%s send-keys -t 0 s", tmux);
    sh(cmd);
    int running = 0;
    for (int i = 0; ok && i < 1200 && !(running = screen_has(tmux, "RUNNING")); i++)
        usleep(100000);
    if (!running) {
        printf("UI CPU: the run did not start\n");
    } else {
        sleep(3); /* past the first updates */
        const double window = 20;
        double t0 = util_now(), c0 = thread_cpu(pid, pid), p0 = all_cpu(pid);
        sleep((unsigned)window);
        double t1 = util_now(), c1 = thread_cpu(pid, pid), p1 = all_cpu(pid);
        printf("UI thread CPU while training%s (demo data, 120x36, text preview, %.0f s): "
               "%.2f%% of one core (idle workbench: %.2f%%); whole process %.0f%%\n",
               what, t1 - t0, (c1 - c0) / (t1 - t0) * 100, idle_pct,
               (p1 - p0) / (t1 - t0) * 100);
    }
    snprintf(cmd, sizeof cmd, "%s send-keys -t 0 q; sleep 0.5; %s send-keys -t 0 y", tmux, tmux);
    sh(cmd);
    for (int i = 0; i < 300 && kill(pid, 0) == 0; i++)
        usleep(100000);
    snprintf(cmd, sizeof cmd, "%s kill-server 2>/dev/null; rm -rf %s", tmux, dir);
    sh(cmd);
}

/* Three short headless demo runs in a scratch folder, for --compare; the options
 * naming them ("--compare A B C"), or "" when one failed. */
static void three_runs(char *dir, char *opts, size_t n)
{
    const char *bin = getenv("PT_BIN");
    char binbuf[1024], cmd[4096];
    if (!bin || !*bin) {
        const char *b = getenv("BUILD");
        snprintf(binbuf, sizeof binbuf, "%s/petal-tui", b && *b ? b : "build");
        bin = binbuf;
    }
    opts[0] = 0;
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return;
    }
    static const char *const lr[3] = { "0.001", "0.002", "0.004" };
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd,
                 "%s --headless --out %s/r%d --image-size 32 --epochs 3 --replicas 1 --workers 1 "
                 "--lr-max %s >/dev/null 2>&1",
                 bin, dir, i, lr[i]);
        if (sh(cmd) != 0) {
            printf("UI CPU with three runs overlaid: the run %s/r%d failed\n", dir, i);
            return;
        }
    }
    snprintf(opts, n, "--compare %s/r0 %s/r1 %s/r2", dir, dir, dir);
}

int main(void)
{
    bench_header("bench_ui");
    bench_sixel();
    bench_ui_cpu("", "");
    char dir[] = "/tmp/pt-bench-cmp-XXXXXX", opts[256], cmd[300];
    three_runs(dir, opts, sizeof opts);
    if (opts[0])
        bench_ui_cpu(opts, " with three runs overlaid");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    sh(cmd);
    return 0;
}
