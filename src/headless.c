/* headless — training without the workbench, for scripts, CI and SSH sessions.
 *
 * Prints the engine's log (a Keras-like line per epoch, per-replica throughput,
 * checkpoints, data errors) on stdout and, on a terminal, a live progress line on
 * stderr. How the run ended goes once, as the last line: "done: ..." on stdout, or
 * "petal-tui: WHAT: WHY" on stderr for a failure or a stop; warnings about the
 * configuration go to stderr in the same form before the run. SIGINT, SIGTERM
 * and SIGHUP stop the run at the next update boundary, which writes a
 * checkpoint. Exit status: 0 done, 1 usage, 2 data error (or any failure of the
 * run), 3 a non-finite loss, 130 interrupted. */
#include "src/headless.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
    got_signal = sig;
}

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* The log as it comes, on stdout, but for one line: the trainer logs a failure
 * ("failed: WHY", for the run folder's log.txt) just before it ends the run, and
 * the end is reported on stderr. So a "failed: " line waits in held until the
 * next line shows it was not the last, or the end shows whether it was the
 * failure (dropped) or not (printed). */
static void drain_log(eng *g, int tty, int *progress_shown, char *held, size_t held_n)
{
    char line[1200];
    while (eng_log_pop(g, line, sizeof line)) {
        if (tty && *progress_shown) {
            fprintf(stderr, "\r\033[K");
            *progress_shown = 0;
        }
        if (held[0])
            printf("%s\n", held);
        held[0] = '\0';
        if (!strncmp(line, "failed: ", 8))
            util_copy(held, held_n, line);
        else
            printf("%s\n", line);
    }
    fflush(stdout);
}

/* eng_warnings()'s lines, each in the message form. */
static void print_warnings(const char *w)
{
    while (*w) {
        int len = (int)strcspn(w, "\n");
        fprintf(stderr, "petal-tui: %.*s\n", len, w);
        w += len + (w[len] == '\n');
    }
}

int headless_run(const run_config *cfg)
{
    install();
    eng *g;
    pt_err e;
    int rc = eng_check_run_folder(cfg, &e);
    if (rc == PT_OK)
        rc = eng_create(cfg, &g, &e);
    if (rc != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return rc == PT_EUSAGE ? 1 : 2;
    }
    print_warnings(eng_warnings(g));
    eng_start(g);
    char held[1200] = "";
    int tty = isatty(2), shown = 0, stopping = 0, status = -1;
    static run_snapshot s;
    double last_progress = 0;
    for (;;) {
        int ended = eng_wait(g, 0.1);
        drain_log(g, tty, &shown, held, sizeof held);
        eng_snapshot_get(g, &s);
        if (got_signal && !stopping) {
            stopping = 1;
            fprintf(stderr, "%spetal-tui: %s: stopping at the next update and writing a "
                            "checkpoint\n",
                    tty && shown ? "\r\033[K" : "", strsignal(got_signal));
            shown = 0;
            eng_stop(g);
        }
        if (s.state == RUN_PAUSED && s.nonfinite_at > 0 && !stopping) {
            /* The log has said where; the end says what became of the run. */
            status = 3;
            stopping = 1;
            eng_stop(g);
        }
        if (ended)
            break;
        if (tty && (s.state == RUN_RUNNING || s.state == RUN_PREPARING) &&
            util_now() - last_progress > 0.25) {
            last_progress = util_now();
            if (s.state == RUN_RUNNING && s.steps_per_epoch > 0)
                fprintf(stderr, "\r\033[Kepoch %d/%d  step %lld/%lld  loss %.4f  acc %.4f  %.0f img/s  eta %.0fs",
                        s.epoch, s.epochs, s.step, s.steps_per_epoch, s.running_loss,
                        s.running_acc, s.total_images_per_sec, s.eta);
            else
                fprintf(stderr, "\r\033[K%s", s.message);
            shown = 1;
        }
    }
    drain_log(g, tty, &shown, held, sizeof held);
    eng_snapshot_get(g, &s);
    if (tty && shown)
        fprintf(stderr, "\r\033[K");
    int failed = eng_failure(g, &e) != PT_OK;
    char said[1100];
    util_fmt(said, sizeof said, "failed: %s", failed ? e.msg : "");
    if (held[0] && strcmp(held, said) != 0)
        printf("%s\n", held);
    fflush(stdout);
    if (failed)
        fprintf(stderr, "petal-tui: %s\n", e.msg);
    else if (s.state == RUN_DONE)
        printf("%s\n", s.message);
    else if (s.message[0])
        fprintf(stderr, "petal-tui: %s\n", s.message);
    if (status < 0) {
        switch (s.state) {
        case RUN_DONE: status = 0; break;
        case RUN_STOPPED: status = got_signal ? 130 : 0; break;
        default: status = 2; break;
        }
    }
    eng_destroy(g);
    return status;
}
