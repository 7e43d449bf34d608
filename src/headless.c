/* headless — training without the workbench, for scripts, CI and SSH sessions.
 *
 * Prints the engine's log (a Keras-like line per epoch, per-replica throughput,
 * checkpoints, data errors) on stdout and, on a terminal, the epoch's progress on
 * stderr as Keras draws it ("23/61 [=========>....] - ETA 7s - loss ... - acc
 * ..."), redrawn in place with \r a few times a second and cleared before each log
 * line; piped, the output is the log alone, a line per epoch. How the run ended goes once, as the last line: "done: ..." on stdout, or
 * "petal-tui: WHAT: WHY" on stderr for a failure or a stop; warnings about the
 * configuration go to stderr in the same form before the run. SIGINT, SIGTERM
 * and SIGHUP stop the run at the next update boundary, which writes a
 * checkpoint. Exit status: 0 done, 1 usage, 2 data error (or any failure of the
 * run), 3 a non-finite loss, 130 interrupted.
 *
 * One rank of a job started by mpirun (train/dist.h): SIGUSR1 (which mpirun
 * forwards to every rank) stops it too; rank 0 reports as above;
 * the others print nothing but a failure, and every failure line names the rank
 * and its host ("petal-tui: rank 1 of 2 on HOST: WHY"). */
#include "src/headless.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/util.h"
#include "engine.h"
#include "src/cli.h"

/* Seconds between redraws of the progress line: a few a second at most. */
#define PROGRESS_PERIOD 0.3
#define BAR_WIDTH 30

static volatile sig_atomic_t got_signal;
/* A rank other than 0 of a job: nothing on stdout, only failures on stderr. */
static int quiet;
/* "petal-tui: ", or in a job "petal-tui: rank K of N on HOST: ". */
static char who[320] = "petal-tui: ";

static void on_signal(int sig)
{
    got_signal = sig;
}

static void install(void)
{
    /* In a job, mpirun passes SIGUSR1 on to every rank and nothing else: the way to
     * stop them all with no deadline (its SIGTERM kills them a moment later). */
    cli_catch_stops(on_signal, eng_job_on());
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
        if (held[0] && !quiet)
            printf("%s\n", held);
        held[0] = '\0';
        if (!strncmp(line, "failed: ", 8))
            util_copy(held, held_n, line);
        else if (!quiet)
            printf("%s\n", line);
    }
    fflush(stdout);
}

/* Where the epoch under way was first seen, for its ETA. */
typedef struct epoch_clock {
    int epoch;
    long long step;
    double t;
} epoch_clock;

/* "12s", "3m05s", "1h02m". */
static void fmt_eta(double sec, char *buf, size_t n)
{
    long s = sec > 0 ? (long)(sec + 0.5) : 0;
    if (s < 60)
        snprintf(buf, n, "%lds", s);
    else if (s < 3600)
        snprintf(buf, n, "%ldm%02lds", s / 60, s % 60);
    else
        snprintf(buf, n, "%ldh%02ldm", s / 3600, s / 60 % 60);
}

/* The Keras-like line of the epoch under way, within width columns:
 * "epoch 2/10 23/61 [=========>....................] - ETA 7s - loss 2.1043 - acc 0.2011
 * - 310 img/s"; the ETA from this epoch's pace since it was first seen. */
static void progress_line(const run_snapshot *s, epoch_clock *c, double now, int width,
                          char *out, size_t n)
{
    if (s->state != RUN_RUNNING && s->state != RUN_PAUSED) {
        util_fmt(out, n, "%s", s->message);
    } else {
        if (c->epoch != s->epoch || s->step < c->step) {
            c->epoch = s->epoch;
            c->step = s->step;
            c->t = now;
        }
        long long total = s->steps_per_epoch > 0 ? s->steps_per_epoch : 1;
        long long done = s->step < total ? s->step : total;
        char bar[BAR_WIDTH + 1];
        int full = (int)(BAR_WIDTH * done / total);
        for (int i = 0; i < BAR_WIDTH; i++)
            bar[i] = i < full ? '=' : '.';
        if (full > 0 && full < BAR_WIDTH)
            bar[full - 1] = '>';
        bar[BAR_WIDTH] = '\0';
        char what[64];
        if (s->state == RUN_PAUSED) {
            util_fmt(what, sizeof what, "paused");
        } else if (done == total) {
            util_fmt(what, sizeof what, "validating");
        } else if (s->step > c->step && now > c->t) {
            char eta[32];
            fmt_eta((now - c->t) / (double)(s->step - c->step) * (double)(total - done), eta,
                    sizeof eta);
            util_fmt(what, sizeof what, "ETA %s", eta);
        } else {
            util_fmt(what, sizeof what, "ETA --");
        }
        int k = snprintf(out, n, "epoch %d/%d %*lld/%lld [%s] - %s", s->epoch, s->epochs,
                         (int)snprintf(NULL, 0, "%lld", total), done, total, bar, what);
        if (s->step > 0 && k > 0 && (size_t)k < n)
            k += snprintf(out + k, n - (size_t)k, " - loss %.4f - acc %.4f", s->running_loss,
                          s->running_acc);
        if (s->state == RUN_RUNNING && k > 0 && (size_t)k < n)
            snprintf(out + k, n - (size_t)k, " - %.0f img/s", s->total_images_per_sec);
    }
    /* A line that wraps cannot be redrawn in place. */
    if (width > 1 && (int)strlen(out) > width - 1)
        out[width - 1] = '\0';
}

/* Columns of the terminal on fd (80 when it does not say). */
static int term_cols(int fd)
{
    struct winsize ws;
    return ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
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
    quiet = eng_job_rank() != 0;
    if (eng_job_on())
        snprintf(who, sizeof who, "petal-tui: %s: ", eng_job_who());
    eng *g;
    pt_err e;
    /* Rank 0 alone writes the run folder. */
    int rc = quiet ? PT_OK : eng_check_run_folder(cfg, &e);
    if (rc == PT_OK)
        rc = eng_create(cfg, &g, &e);
    if (rc != PT_OK) {
        fprintf(stderr, "%s%s\n", who, e.msg);
        return rc == PT_EUSAGE ? 1 : 2;
    }
    if (!quiet)
        print_warnings(eng_warnings(g));
    eng_start(g);
    char held[1200] = "";
    int tty = !quiet && isatty(2), shown = 0, stopping = 0, status = -1;
    static run_snapshot s;
    double last_progress = 0;
    epoch_clock clock = { -1, 0, 0 };
    char shown_line[512] = "";
    for (;;) {
        int ended = eng_wait(g, 0.1);
        drain_log(g, tty, &shown, held, sizeof held);
        eng_snapshot_get(g, &s);
        if (got_signal && !stopping) {
            stopping = 1;
            if (!quiet)
                fprintf(stderr, "%spetal-tui: %s: %s\n", tty && shown ? "\r\033[K" : "",
                        strsignal(got_signal),
                        s.state == RUN_PREPARING
                            ? "stopping before training begins (nothing is kept)"
                            : "stopping at the next update and writing a checkpoint");
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
        /* On a terminal, the epoch's progress redrawn in place a few times a
         * second; piped, nothing but the log's lines. */
        if (tty && (s.state == RUN_RUNNING || s.state == RUN_PREPARING ||
                    s.state == RUN_PAUSED) &&
            util_now() - last_progress >= PROGRESS_PERIOD) {
            last_progress = util_now();
            char line[512];
            progress_line(&s, &clock, util_now(), term_cols(2), line, sizeof line);
            if (!shown || strcmp(line, shown_line) != 0) {
                fprintf(stderr, "\r\033[K%s", line);
                util_copy(shown_line, sizeof shown_line, line);
            }
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
    if (held[0] && strcmp(held, said) != 0 && !quiet)
        printf("%s\n", held);
    fflush(stdout);
    if (failed)
        fprintf(stderr, "%s%s\n", who, e.msg);
    else if (!quiet && s.state == RUN_DONE)
        printf("%s\n", s.message);
    else if (!quiet && s.message[0])
        fprintf(stderr, "petal-tui: %s\n", s.message);
    if (status < 0) {
        switch (s.state) {
        case RUN_DONE: status = 0; break;
        case RUN_STOPPED: status = got_signal ? 130 : 0; break;
        default: status = failed && e.code == PT_EUSAGE ? 1 : 2; break; /* EXIT STATUS */
        }
    }
    eng_destroy(g);
    return status;
}
