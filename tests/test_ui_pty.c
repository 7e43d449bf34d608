/* The workbench on a pseudo-terminal the test owns, for what tmux cannot do: lose
 * the terminal under the program. The master side is read (the screen's bytes)
 * and written (keys) here, then closed. */
#include "tests/t.h"

#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "tests/fixtures.h"

/* The screen's bytes so far, the newest kept when they outgrow it. */
typedef struct pty_out {
    char buf[1 << 16];
    size_t n;
} pty_out;

/* 1 when text is among the n bytes at buf (which may hold NULs). */
static int has_bytes(const char *buf, size_t n, const char *text)
{
    size_t k = strlen(text);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(buf + i, text, k))
            return 1;
    return 0;
}

/* Read what the program wrote until text appears in it (1) or timeout seconds
 * pass (0). */
static int pty_wait(int master, pty_out *o, const char *text, double timeout)
{
    double end = util_now() + timeout;
    do {
        struct pollfd p = { .fd = master, .events = POLLIN };
        if (poll(&p, 1, 100) > 0) {
            if (o->n > sizeof o->buf / 2) {
                size_t keep = sizeof o->buf / 4;
                memmove(o->buf, o->buf + o->n - keep, keep);
                o->n = keep;
            }
            ssize_t k = read(master, o->buf + o->n, sizeof o->buf - 1 - o->n);
            if (k < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (k <= 0)
                return 0; /* the program is gone */
            o->n += (size_t)k;
            o->buf[o->n] = '\0';
            if (has_bytes(o->buf, o->n, text))
                return 1;
        }
    } while (util_now() < end);
    return 0;
}

/* Keep the screen's bytes flowing (a full pty would stop the program) until the
 * file at path holds text (1) or timeout seconds pass (0). */
static int pty_wait_file(int master, pty_out *o, const char *path, const char *text,
                         double timeout)
{
    double end = util_now() + timeout;
    do {
        uint8_t *data;
        size_t len;
        if (util_read_file(path, &data, &len, NULL) == PT_OK) {
            int found = strstr((char *)data, text) != NULL;
            free(data);
            if (found)
                return 1;
        }
        pty_wait(master, o, "\x01\x02 never", 0.1);
    } while (util_now() < end);
    return 0;
}

/* The wait status of pid once it has ended, or -1 after timeout seconds. */
static int wait_exit(pid_t pid, double timeout)
{
    double end = util_now() + timeout;
    do {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (r < 0)
            return -1;
        usleep(50000);
    } while (util_now() < end);
    return -1;
}

static const long long TRAIN[3] = { 24, 16, 20 };
static const long long VAL[3] = { 8, 6, 6 };

/* A terminal that goes away without a SIGHUP reaching the workbench: its reads
 * give EOF or EIO. The workbench must take that as a hang-up, stop the run with a
 * checkpoint and leave, not train on unseen. The pty is not the program's
 * controlling terminal (its own session, opened without TIOCSCTTY), so closing
 * the master sends no SIGHUP at all, whatever the program does with the signal;
 * it is ignored as well, as under nohup. */
TEST(ui_pty_lost_terminal_without_sighup_writes_a_checkpoint_and_exits)
{
    if (t_slow_mode()) {
        t_skip("a training run is too slow under valgrind");
        return;
    }
    const char *data = fx_dataset(t_tmpdir(), 3, TRAIN, VAL, 0, 32, 20);
    T_REQUIRE(data != NULL);
    char out[4200], log[4300], ckpt[4300];
    util_path(out, sizeof out, "%s/run", t_tmpdir());
    util_path(log, sizeof log, "%s/log.txt", out);
    util_path(ckpt, sizeof ckpt, "%s/checkpoint.ckpt", out);
    struct winsize ws = { .ws_row = 24, .ws_col = 80 };
    int master, slave;
    T_REQUIRE(openpty(&master, &slave, NULL, NULL, &ws) == 0);
    pid_t pid = fork();
    T_REQUIRE(pid >= 0);
    if (pid == 0) {
        setsid(); /* no controlling terminal: the pty's close signals no one */
        dup2(slave, 0);
        dup2(slave, 1);
        dup2(slave, 2);
        close(slave);
        close(master);
        signal(SIGHUP, SIG_IGN);
        setenv("TERM", "xterm", 1);
        /* --checkpoint-every 1000 (the maximum) puts the first checkpoint due after
         * the last of 1000 epochs: the only one that can exist is the stop's. */
        execl(t_bin(), t_bin(), "--no-sixel", "--data", data, "--out", out, "--epochs", "1000",
              "--checkpoint-every", "1000", "--batch-per-replica", "4", "--replicas", "2",
              (char *)NULL);
        _exit(127);
    }
    close(slave);
    static pty_out o;
    o.n = 0;
    int idle = pty_wait(master, &o, "IDLE", 30);
    T_CHECKF(idle, "no IDLE on the screen; it showed:\n%.2000s", o.buf);
    if (idle) {
        T_CHECK(write(master, "s", 1) == 1);
        /* The model is logged at the end of preparing: updates come next. */
        T_CHECKF(pty_wait_file(master, &o, log, "model small", 120), "the run did not start");
    }
    close(master);
    int st = wait_exit(pid, 30);
    T_CHECKF(st != -1, "the workbench still runs 30 s after its terminal closed");
    if (st == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return;
    }
    T_CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 130, "wait status 0x%x, not exit 130", st);
    if (idle)
        T_CHECKF(util_is_file(ckpt), "no checkpoint at %s", ckpt);
}
