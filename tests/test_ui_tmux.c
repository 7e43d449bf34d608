/* The workbench as a person uses it: petal-tui runs in a private, detached tmux
 * server (its own socket, no user config, no status line), keys go in with
 * send-keys and the screen comes back with capture-pane. tmux 3.3a has no sixel,
 * so these are the text-preview screens (--no-sixel says so explicitly). */
#include "tests/t.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/util.h"
#include "tests/fixtures.h"
#include "run/runfolder.h"
#include "runs.h"

typedef struct tmux_srv {
    char sock[1024];
    char conf[1024];
    char dir[1024];     /* pid and status files of the command */
} tmux_srv;

/* Runs a tmux command on the test's server; returns the exit status. */
static int tmx_cmd(const tmux_srv *t, char **out, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int tmx_cmd(const tmux_srv *t, char **out, const char *fmt, ...)
{
    char args[6000], cmd[8100];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "tmux -S '%s' -f '%s' %s", t->sock, t->conf, args);
    return t_run(cmd, out);
}

/* A server with one cols x rows pane running `command` (a shell command line)
 * with the environment assignments env. A small script around it records the
 * command's pid and, when it ends, its exit status (tmux 3.3a does not always
 * report a dead pane's status). */
static int tmx_start(tmux_srv *t, int cols, int rows, const char *env, const char *command)
{
    const char *dir = t_tmpdir();
    snprintf(t->dir, sizeof t->dir, "%s", dir);
    snprintf(t->sock, sizeof t->sock, "%s/tmux.sock", dir);
    snprintf(t->conf, sizeof t->conf, "%s/tmux.conf", dir);
    FILE *f = fopen(t->conf, "w");
    if (!f)
        return -1;
    fprintf(f, "set -g status off\nset -g default-terminal tmux-256color\n"
               "set -g remain-on-exit on\nset -g escape-time 10\n");
    fclose(f);
    char script[1200];
    snprintf(script, sizeof script, "%s/run.sh", dir);
    f = fopen(script, "w");
    if (!f)
        return -1;
    /* The wrapper catches SIGINT (Ctrl-C reaches the whole foreground group) so
     * it lives to record the status; the command gets default dispositions. */
    fprintf(f, "trap : INT\nsh -c 'echo $$ > %s/pid && exec env %s %s'\n"
               "echo $? > %s/status.tmp && mv %s/status.tmp %s/status\n",
            dir, env ? env : "", command, dir, dir, dir);
    fclose(f);
    char *out = NULL;
    int rc = tmx_cmd(t, &out, "new-session -d -x %d -y %d 'sh %s'", cols, rows, script);
    if (rc != 0)
        printf("  tmux new-session: %s\n", out);
    free(out);
    return rc;
}

/* The command's pid (0 when not known yet). */
static int tmx_pid(const tmux_srv *t)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/pid", t->dir);
    FILE *f = fopen(p, "r");
    int pid = 0;
    if (f) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return pid;
}

static void tmx_stop(tmux_srv *t)
{
    tmx_cmd(t, NULL, "kill-server");
}

/* The pane as text (trailing spaces trimmed by tmux); caller frees. With
 * escapes, colours and attributes come as SGR sequences. */
static char *tmx_screen(tmux_srv *t, int escapes)
{
    char *out = NULL;
    tmx_cmd(t, &out, "capture-pane -p %s -t 0", escapes ? "-e" : "");
    return out ? out : strdup("");
}

/* The pane as text from the start of its history (a dead pane may have
 * scrolled what was printed last out of view), wrapped lines joined (-J) for
 * long messages; caller frees. */
static char *tmx_text(tmux_srv *t)
{
    char *out = NULL;
    tmx_cmd(t, &out, "capture-pane -p -J -S - -t 0");
    return out ? out : strdup("");
}

/* How many times text occurs in s. */
static int count_of(const char *s, const char *text)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, text)) != NULL; p += strlen(text))
        n++;
    return n;
}

static void tmx_keys(tmux_srv *t, const char *keys)
{
    tmx_cmd(t, NULL, "send-keys -t 0 %s", keys);
}

/* Poll the screen until it contains text (1) or timeout seconds pass (0). */
static int tmx_wait(tmux_srv *t, const char *text, double timeout)
{
    double end = util_now() + timeout;
    do {
        char *s = tmx_screen(t, 0);
        int ok = strstr(s, text) != NULL;
        free(s);
        if (ok)
            return 1;
        usleep(100000);
    } while (util_now() < end);
    return 0;
}

/* Wait until the screen no longer contains text. */
static int tmx_wait_gone(tmux_srv *t, const char *text, double timeout)
{
    double end = util_now() + timeout;
    do {
        char *s = tmx_screen(t, 0);
        int gone = strstr(s, text) == NULL;
        free(s);
        if (gone)
            return 1;
        usleep(100000);
    } while (util_now() < end);
    return 0;
}

/* The command's exit status once it has ended, or -1 after timeout. */
static int tmx_exit_status(tmux_srv *t, double timeout)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/status", t->dir);
    double end = util_now() + timeout;
    do {
        FILE *f = fopen(p, "r");
        if (f) {
            int st = -1;
            if (fscanf(f, "%d", &st) != 1)
                st = -1;
            fclose(f);
            return st;
        }
        usleep(100000);
    } while (util_now() < end);
    return -1;
}

static void show(tmux_srv *t, const char *why)
{
    char *s = tmx_screen(t, 0);
    printf("  screen (%s):\n%s\n", why, s);
    free(s);
}

/* Every line of the screen fits in cols columns (UTF-8 aware). */
static int max_line_width(const char *s)
{
    int w = 0, best = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\n') {
            best = w > best ? w : best;
            w = 0;
        } else if ((*p & 0xc0) != 0x80) {
            w++;
        }
    }
    return w > best ? w : best;
}

#define WAIT(t, text, secs)                                                    \
    do {                                                                       \
        t_check_made();                                                        \
        if (!tmx_wait((t), (text), (secs))) {                                  \
            t_fail(__FILE__, __LINE__, "no \"%s\" on screen", (text));         \
            show((t), text);                                                   \
        }                                                                      \
    } while (0)

/* A pane of cols x rows running command (with env) whose workbench is up and
 * idle: 1, or 0 with the screen printed. For T_REQUIRE. */
static int tmx_open(tmux_srv *t, int cols, int rows, const char *env, const char *command)
{
    if (tmx_start(t, cols, rows, env, command) != 0)
        return 0;
    if (tmx_wait(t, "IDLE", 30))
        return 1;
    show(t, "IDLE");
    return 0;
}

/* s, then the run under way: 1, or 0 with the screen printed. For T_REQUIRE. */
static int tmx_start_run(tmux_srv *t)
{
    tmx_keys(t, "s");
    if (tmx_wait(t, "RUNNING", 120))
        return 1;
    show(t, "RUNNING");
    return 0;
}

/* Polls the screen (with escapes when asked) until ok(screen, arg) or timeout
 * seconds pass; returns the last screen (the caller frees it and checks ok). */
static char *tmx_poll(tmux_srv *t, int escapes, int (*ok)(const char *, const void *),
                      const void *arg, double timeout)
{
    double end = util_now() + timeout;
    char *s = tmx_screen(t, escapes);
    while (!ok(s, arg) && util_now() < end) {
        usleep(100000);
        free(s);
        s = tmx_screen(t, escapes);
    }
    return s;
}

/* q on an idle or ended workbench: it leaves with status. */
static void tmx_quit(tmux_srv *t, int status)
{
    tmx_keys(t, "q");
    T_EQ_INT(tmx_exit_status(t, 30), status);
    tmx_stop(t);
}

/* Rows of the replicas panel ("│ID   IMG/S SPARK  BUSY% IDLE% ...") that show 0
 * img/s and 0% busy; -1 when a replica row reads otherwise. */
static int replicas_idle(const char *s, const void *arg)
{
    (void)arg;
    int idle = 0;
    for (const char *line = s; line && *line;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        int id;
        double ips;
        char sp, sp2;
        if (strncmp(line, "\xe2\x94\x82", 3) != 0 ||
            sscanf(line + 3, "%d%c%lf%c", &id, &sp, &ips, &sp2) != 4 || sp != ' ' || sp2 != ' ')
            continue;
        const char *eol = strchr(line, '\n'), *pct = strchr(line, '%');
        if (!pct || (eol && pct > eol))
            continue;
        const char *num = pct;
        while (num > line && num[-1] >= '0' && num[-1] <= '9')
            num--;
        if (ips != 0 || atoi(num) != 0)
            return -1;
        idle++;
    }
    return idle;
}

TEST(ui_tmux_workbench_panels_start_pause_help_quit)
{
    T_NEED_TOOL("tmux");
    tmux_srv t;
    char cmd[4096];
    const char *run = t_tmpdir();
    /* --checkpoint-every 1000: no periodic checkpoint; the one checked below comes
     * from the pause or the stop. */
    snprintf(cmd, sizeof cmd, "%s --no-sixel --image-size 32 --checkpoint-every 1000 --out %s/run",
             t_bin(), run);
    T_REQUIRE(tmx_open(&t, 80, 24, NULL, cmd));
    char *s = tmx_screen(&t, 0);
    static const char *const panels[] = { "petal-tui", "Replicas", "Curves: loss", "Labels",
                                          "Preview", "Log", "s start", "? help", "q quit" };
    for (size_t i = 0; i < sizeof panels / sizeof panels[0]; i++)
        T_CHECKF(strstr(s, panels[i]) != NULL, "no \"%s\" on the idle screen", panels[i]);
    T_CHECKF(max_line_width(s) <= 80, "a line is %d columns wide", max_line_width(s));
    free(s);

    tmx_keys(&t, "?");
    WAIT(&t, "start training", 30);
    tmx_keys(&t, "NPage NPage"); /* 24 rows do not hold it all: it scrolls */
    WAIT(&t, "quit (asks when a run is active", 30);
    tmx_keys(&t, "Escape");
    T_CHECK(tmx_wait_gone(&t, "start training", 30));

    if (!t_slow_mode()) {
        T_REQUIRE(tmx_start_run(&t));
        WAIT(&t, "img/s", 30);
        tmx_keys(&t, "p");
        WAIT(&t, "PAUSED", 60);
        /* Paused replicas say so: 0 img/s, busy 0%, not the last running figures
         * (the snapshot that says PAUSED has them). */
        s = tmx_screen(&t, 0);
        T_CHECKF(strstr(s, "PAUSED") && replicas_idle(s, NULL) == 2,
                 "the paused replicas (%d idle):\n%s", replicas_idle(s, NULL), s);
        free(s);
        tmx_keys(&t, "q");
        WAIT(&t, "Stop it and quit?", 30);
        tmx_keys(&t, "y");
        T_EQ_INT(tmx_exit_status(&t, 60), 0);
        char ck[4200];
        snprintf(ck, sizeof ck, "%s/run/checkpoint.ckpt", run);
        T_CHECKF(util_is_file(ck), "no checkpoint at %s", ck);
        tmx_stop(&t);
    } else {
        tmx_quit(&t, 0); /* idle: quits at once */
    }
}

/* Three boxes side by side: three top-left corners on the panels' top edge (the
 * third row). */
static int three_columns(const char *s, const void *arg)
{
    (void)arg;
    const char *row = strstr(s, "\n");          /* header row 1 */
    row = row ? strstr(row + 1, "\n") : NULL; /* the panels' top edge */
    int corners = 0;
    if (row)
        for (const char *p = row + 1; *p && *p != '\n'; p++)
            corners += strncmp(p, "\xe2\x94\x8c", 3) == 0; /* U+250C */
    return corners == 3;
}

TEST(ui_tmux_80x24_resize_and_too_small)
{
    T_NEED_TOOL("tmux");
    tmux_srv t;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s --no-sixel", t_bin());
    T_REQUIRE(tmx_open(&t, 80, 24, NULL, cmd));
    /* Larger: the three-column arrangement, three boxes side by side. */
    tmx_cmd(&t, NULL, "resize-window -t 0 -x 160 -y 48");
    WAIT(&t, "Preview", 30);
    char *s = tmx_poll(&t, 0, three_columns, NULL, 30);
    T_CHECKF(three_columns(s, NULL), "no three columns at 160x48:\n%s", s);
    T_CHECK(max_line_width(s) <= 160);
    free(s);
    /* Below the minimum: a note, not a broken screen. */
    tmx_cmd(&t, NULL, "resize-window -t 0 -x 50 -y 12");
    WAIT(&t, "needs 60x16", 30);
    /* Narrower than the note: it wraps, whole (issue 30, defect 5); keys but q do
     * nothing while only the note shows: s starts no invisible run. */
    tmx_cmd(&t, NULL, "resize-window -t 0 -x 40 -y 10");
    WAIT(&t, "(q quits)", 30);
    s = tmx_screen(&t, 0);
    T_CHECKF(strstr(s, "petal-tui needs 60x16") && strstr(s, "terminal 40x10:"), "%s", s);
    free(s);
    tmx_keys(&t, "s");
    usleep(500 * 1000);
    /* Back to 80x24: the panels again, within 80 columns, and no run started. */
    tmx_cmd(&t, NULL, "resize-window -t 0 -x 80 -y 24");
    WAIT(&t, "Curves", 30);
    WAIT(&t, " idle ", 30);
    tmx_keys(&t, "C-l");
    WAIT(&t, "Labels", 30);
    s = tmx_screen(&t, 0);
    T_CHECK(max_line_width(s) <= 80 && strstr(s, "Replicas") && strstr(s, "q quit"));
    free(s);
    /* Focus and zoom: Tab moves on, Enter zooms (the other panels go), Esc back. */
    tmx_keys(&t, "Tab");
    tmx_keys(&t, "Enter");
    T_CHECK(tmx_wait_gone(&t, "Replicas", 30));
    tmx_keys(&t, "Escape");
    WAIT(&t, "Replicas", 30);
    tmx_quit(&t, 0);
}

/* 1 when an SGR sequence in s sets a colour (30-37, 38, 40-47, 48, 90-97, 100-107). */
static int has_colour_sgr(const char *s)
{
    for (const char *p = s; (p = strstr(p, "\033[")) != NULL; p += 2) {
        const char *q = p + 2;
        const char *m = q;
        while (*m && ((*m >= '0' && *m <= '9') || *m == ';'))
            m++;
        if (*m != 'm')
            continue;
        while (q < m) {
            int v = atoi(q);
            if ((v >= 30 && v <= 38) || (v >= 40 && v <= 48) || (v >= 90 && v <= 97) ||
                (v >= 100 && v <= 107))
                return 1;
            while (q < m && *q != ';')
                q++;
            q++;
        }
    }
    return 0;
}

/* Reverse video on the screen (the focus without colour). */
static int has_reverse(const char *s, const void *arg)
{
    (void)arg;
    return strstr(s, "\033[7m") != NULL || strstr(s, ";7m") != NULL;
}

TEST(ui_tmux_no_color_and_ctrl_c_exit_130)
{
    T_NEED_TOOL("tmux");
    tmux_srv t;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s", t_bin());
    /* Colour first, to know the check can see colours at all. */
    T_REQUIRE(tmx_open(&t, 100, 30, NULL, cmd));
    WAIT(&t, "Preview #", 30); /* pictures in colour too */
    char *s = tmx_screen(&t, 1);
    T_CHECK(has_colour_sgr(s));
    free(s);
    tmx_quit(&t, 0);

    T_REQUIRE(tmx_open(&t, 100, 30, "NO_COLOR=1", cmd));
    tmx_keys(&t, "Tab"); /* focus shows without colour too: in reverse video */
    s = tmx_poll(&t, 1, has_reverse, NULL, 30);
    int reverse = has_reverse(s, NULL);
    T_CHECKF(!has_colour_sgr(s), "colour on screen under NO_COLOR");
    T_CHECKF(reverse, "no reverse video for the focus under NO_COLOR");
    free(s);
    tmx_keys(&t, "C-c");
    WAIT(&t, "Interrupted", 30);
    tmx_keys(&t, "y");
    T_EQ_INT(tmx_exit_status(&t, 30), 130);
    tmx_stop(&t);
}

static const long long TRAIN[3] = { 24, 16, 20 };
static const long long VAL[3] = { 8, 6, 6 };

/* An inspect caption: OK or NO and a predicted class of fx_dataset's data. */
static int has_caption(const char *s, const void *arg)
{
    (void)arg;
    return strstr(s, "  OK flower0") || strstr(s, "  NO flower0");
}

/* A one-epoch run of data (20 validation images) in a cols x rows workbench, its
 * inspect view open on the results: 1, or 0 with the screen printed. */
static int inspect_after_an_epoch(tmux_srv *t, int cols, int rows, const char *data,
                                  const char *run)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "%s --no-sixel --data %s --out %s/a --epochs 1 --batch-per-replica 4 "
             "--replicas 2",
             t_bin(), data, run);
    if (!tmx_open(t, cols, rows, NULL, cmd))
        return 0;
    tmx_keys(t, "s");
    if (!tmx_wait(t, "DONE", 120)) {
        show(t, "DONE");
        return 0;
    }
    tmx_keys(t, "i");
    if (!tmx_wait(t, "Validation after epoch 1: 20 images", 30)) {
        show(t, "Validation after epoch 1: 20 images");
        return 0;
    }
    return 1;
}

TEST(ui_tmux_inspect_after_an_epoch_and_hangup_checkpoint)
{
    T_NEED_TOOL("tmux");
    if (t_slow_mode()) {
        t_skip("a training run per tmux pane is too slow under valgrind");
        return;
    }
    const char *data = fx_dataset(t_tmpdir(), 3, TRAIN, VAL, 0, 32, 20);
    T_REQUIRE(data != NULL);
    tmux_srv t;
    char cmd[8192];
    const char *run = t_tmpdir();
    T_REQUIRE(inspect_after_an_epoch(&t, 120, 36, data, run));
    WAIT(&t, "Per class", 30);
    WAIT(&t, "Most confused", 30);
    /* The confusion matrix beside them: counts, then % of each true class. */
    WAIT(&t, "Confusion: true by row, predicted by column, counts  [% Tab]", 30);
    tmx_keys(&t, "%");
    WAIT(&t, "predicted by column, % of row", 30);
    tmx_keys(&t, "Tab");
    tmx_keys(&t, "Tab"); /* the matrix focused: its keys in its title */
    WAIT(&t, "% of row  [% arrows]", 30);
    /* Captions as the notebooks title them: OK or NO and the predicted class. */
    char *s = tmx_poll(&t, 0, has_caption, NULL, 10);
    T_CHECKF(has_caption(s, NULL), "no OK/NO captions:\n%s", s);
    free(s);
    tmx_keys(&t, "m");
    WAIT(&t, "mistakes", 30);
    tmx_keys(&t, "i");
    WAIT(&t, "Curves", 30);
    tmx_quit(&t, 0);

    /* A dropped session mid-run: SIGHUP stops the run with a checkpoint, exit 130.
     * --checkpoint-every 1000 (the maximum) puts the first checkpoint due after the
     * 50th and last epoch: the only one that can exist is the one the signal makes. */
    snprintf(cmd, sizeof cmd,
             "%s --no-sixel --data %s --out %s/b --epochs 50 --checkpoint-every 1000 "
             "--batch-per-replica 4",
             t_bin(), data, run);
    T_REQUIRE(tmx_open(&t, 80, 24, NULL, cmd));
    T_REQUIRE(tmx_start_run(&t));
    char kill[64];
    snprintf(kill, sizeof kill, "kill -HUP %d", tmx_pid(&t));
    T_EQ_INT(t_run(kill, NULL), 0);
    T_EQ_INT(tmx_exit_status(&t, 60), 130);
    char ck[4200];
    snprintf(ck, sizeof ck, "%s/b/checkpoint.ckpt", run);
    T_CHECKF(util_is_file(ck), "no checkpoint at %s", ck);
    tmx_stop(&t);
}

/* The losses the captions show ("loss 0.42"), in screen order (rows, then
 * columns), into out; how many. Only below the view's title ("... all by loss 1-8
 * ..."): the status line above shows the training loss. */
static int caption_losses(const char *s, double *out, int max)
{
    int n = 0;
    const char *title = strstr(s, "all by loss");
    const char *from = title ? strchr(title, '\n') : NULL;
    for (const char *p = from ? strstr(from, "loss ") : NULL; p && n < max;
         p = strstr(p + 5, "loss ")) {
        char *end;
        double v = strtod(p + 5, &end);
        if (end != p + 5)
            out[n++] = v;
    }
    return n;
}

TEST(ui_tmux_inspect_top_losses_and_the_grad_cam_of_the_selected_image)
{
    T_NEED_TOOL("tmux");
    if (t_slow_mode()) {
        t_skip("a training run per tmux pane is too slow under valgrind");
        return;
    }
    const char *data = fx_dataset(t_tmpdir(), 3, TRAIN, VAL, 0, 32, 20);
    T_REQUIRE(data != NULL);
    tmux_srv t;
    T_REQUIRE(inspect_after_an_epoch(&t, 140, 44, data, t_tmpdir()));
    /* t: the images by loss, highest first, each caption with its loss. */
    tmx_keys(&t, "t");
    WAIT(&t, "all by loss 1-", 30);
    /* The captions come with the pictures, after the title: wait for two of them. */
    char *s = NULL;
    double loss[64];
    int n = 0;
    for (int tries = 0; tries < 300 && n < 2; tries++) {
        if (tries)
            usleep(100000);
        free(s);
        s = tmx_screen(&t, 0);
        n = s ? caption_losses(s, loss, 64) : 0;
    }
    T_REQUIRE(s);
    T_CHECKF(n >= 2, "fewer than two losses on screen:\n%s", s);
    for (int i = 1; i < n; i++)
        T_CHECKF(loss[i] <= loss[i - 1] + 0.01, "loss %d (%g) above loss %d (%g):\n%s", i,
                 loss[i], i - 1, loss[i - 1], s);
    free(s);
    /* Enter: the selected (first, the highest loss) image's Grad-CAM, with the
     * classes, the loss and the layer; Right follows the selection. */
    tmx_keys(&t, "Enter");
    WAIT(&t, "Grad-CAM of", 60);
    WAIT(&t, "epoch 1's weights, layer", 60);
    WAIT(&t, "1. ", 30);
    tmx_keys(&t, "Right");
    WAIT(&t, "epoch 1's weights, layer", 60);
    /* Esc: back to the images, then to the panels. */
    tmx_keys(&t, "Escape");
    WAIT(&t, "all by loss 1-", 30);
    tmx_keys(&t, "Escape");
    WAIT(&t, "Curves", 30);
    tmx_quit(&t, 0);
}

/* pattern with each '@' replaced by dir, into out (n bytes). */
static void at_dir(char *out, size_t n, const char *pattern, const char *dir)
{
    size_t k = 0;
    for (const char *p = pattern; *p && k + 1 < n; p++) {
        if (*p == '@') {
            util_copy(out + k, n - k, dir);
            k += strlen(out + k);
        } else {
            out[k++] = *p;
        }
    }
    out[k < n ? k : n - 1] = '\0';
}

/* Errors the workbench can know before it opens: the command ends at once with
 * the message, in the message form, once, and the exit status --headless gives;
 * no screen waits for keys first. '@' in the arguments is the scratch folder. */
TEST(ui_tmux_refuses_an_empty_folder_and_unusable_run_folders_before_the_screen)
{
    T_NEED_TOOL("tmux");
    const char *dir = t_tmpdir();
    char path[4200];
    util_path(path, sizeof path, "%s/empty", dir);
    T_REQUIRE(util_mkdirs(path, NULL) == PT_OK);
    util_path(path, sizeof path, "%s/held", dir);
    T_REQUIRE(util_mkdirs(path, NULL) == PT_OK);
    util_path(path, sizeof path, "%s/held/checkpoint.ckpt", dir);
    FILE *f = fopen(path, "w");
    T_REQUIRE(f != NULL);
    fclose(f);
    util_path(path, sizeof path, "%s/file", dir);
    f = fopen(path, "w");
    T_REQUIRE(f != NULL);
    fclose(f);
    static const struct {
        const char *args;
        int status;
        const char *message;
    } cases[] = {
        { "--data @/empty", 2, "petal-tui: @/empty: no dataset here: expected train/ val/ test/" },
        { "--out @/file/run", 2,
          "petal-tui: --out @/file/run: cannot create the run folder: @/file: not a folder" },
        { "--out @/held", 1,
          "petal-tui: @/held: holds a run already; continue it with --resume or choose another "
          "--out" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[2048], message[2048], cmd[4096];
        at_dir(args, sizeof args, cases[i].args, dir);
        at_dir(message, sizeof message, cases[i].message, dir);
        snprintf(cmd, sizeof cmd, "%s --no-sixel %s", t_bin(), args);
        tmux_srv t;
        T_REQUIRE(tmx_start(&t, 200, 12, NULL, cmd) == 0);
        int st = tmx_exit_status(&t, 30);
        T_CHECKF(st == cases[i].status, "%s: exit status %d, not %d", cases[i].args, st,
                 cases[i].status);
        char *s = tmx_text(&t);
        T_CHECKF(count_of(s, message) == 1, "%s: not once \"%s\" in:\n%s", cases[i].args,
                 message, s);
        free(s);
        tmx_stop(&t);
    }
}

/* The rightmost panel's text (what follows the last "││" on each row, its right
 * edge and trailing spaces cut), rows joined by one space: a message wrapped in
 * the panel reads as one line, wherever the wrap fell. Caller frees. */
static char *right_panel_text(const char *screen)
{
    char *out = calloc(strlen(screen) + 2, 1);
    size_t n = 0;
    for (const char *line = screen; *line;) {
        const char *end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        const char *from = NULL;
        for (const char *p = line; p + 6 <= end; p++)
            if (memcmp(p, "\xe2\x94\x82\xe2\x94\x82", 6) == 0)
                from = p + 6;
        if (from) {
            const char *to = end;
            if (to - from >= 3 && memcmp(to - 3, "\xe2\x94\x82", 3) == 0)
                to -= 3;
            while (from < to && *from == ' ')
                from++;
            while (to > from && to[-1] == ' ')
                to--;
            if (to > from) {
                if (n)
                    out[n++] = ' ';
                memcpy(out + n, from, (size_t)(to - from));
                n += (size_t)(to - from);
            }
        }
        line = *end ? end + 1 : end;
    }
    out[n] = 0;
    return out;
}

/* A run that fails after s (here the demo data cannot be made: its cache is under
 * a file): the preview says why instead of waiting forever, the footer offers no
 * pause for the failed run, and quitting prints the failure once, after the
 * screen is restored, with exit status 2. */
TEST(ui_tmux_a_failed_run_says_why_on_screen_and_after_it_and_exits_2)
{
    T_NEED_TOOL("tmux");
    const char *dir = t_tmpdir();
    char env[4200], cmd[4200], file[4200], message[4200];
    util_path(file, sizeof file, "%s/file", dir);
    FILE *f = fopen(file, "w");
    T_REQUIRE(f != NULL);
    fclose(f);
    util_path(env, sizeof env, "XDG_CACHE_HOME=%s/cache", file);
    util_path(cmd, sizeof cmd, "%s --no-sixel --out %s/run", t_bin(), dir);
    util_path(message, sizeof message, "%s/cache: cannot create folder: ", file);
    tmux_srv t;
    T_REQUIRE(tmx_open(&t, 120, 36, env, cmd));
    WAIT(&t, "no preview: ", 30);
    /* The preview says why; the message wraps in the panel where the scratch
     * folder's length puts it. */
    char *s = tmx_text(&t), *panel = right_panel_text(s);
    T_CHECKF(strstr(panel, "cannot create folder") && !strstr(s, "making a batch"),
             "%s\npreview panel: %s", s, panel);
    free(panel);
    free(s);
    tmx_keys(&t, "s");
    WAIT(&t, "FAILED", 60);
    s = tmx_screen(&t, 0);
    T_CHECKF(strstr(s, "q quit") && !strstr(s, "p pause"), "the hints of a failed run:\n%s", s);
    free(s);
    tmx_keys(&t, "q");
    T_EQ_INT(tmx_exit_status(&t, 30), 2);
    s = tmx_text(&t);
    char line[4300];
    util_path(line, sizeof line, "petal-tui: %s", message);
    T_CHECKF(count_of(s, line) == 1 && count_of(s, message) == 1,
             "not once \"%s\" after the screen:\n%s", line, s);
    free(s);
    tmx_stop(&t);
}

/* The first start makes the demo dataset (for the previews, before any run): when it
 * is made the footer says the workbench is ready, not the generation's last count
 * (issue 30, defect 7). */
TEST(ui_tmux_after_the_demo_generation_the_footer_says_ready)
{
    T_NEED_TOOL("tmux");
    const char *dir = t_tmpdir();
    char env[4200], cmd[4200];
    util_path(env, sizeof env, "XDG_CACHE_HOME=%s/cache", dir);
    util_path(cmd, sizeof cmd, "%s --no-sixel --out %s/run", t_bin(), dir);
    tmux_srv t;
    T_REQUIRE(tmx_open(&t, 160, 40, env, cmd));
    /* The generation's count may come and go between two looks at the screen: what
     * must show is the end of it. */
    WAIT(&t, "the demo dataset is in", 120);
    char *s = tmx_text(&t);
    T_CHECKF(strstr(s, "ready: press s to start") && !strstr(s, "generating the demo"), "%s", s);
    free(s);
    char made[4300];
    util_path(made, sizeof made, "%s/cache/petal-tui", dir);
    T_CHECKF(util_is_dir(made), "%s: no demo dataset made here", made);
    tmx_quit(&t, 0);
}

/* A run stopped after a non-finite loss ends the workbench with status 3 (as
 * --headless) and says so after the screen. */
TEST(ui_tmux_a_run_stopped_after_a_non_finite_loss_exits_3)
{
    T_NEED_TOOL("tmux");
    if (t_slow_mode()) {
        t_skip("a training run per tmux pane is too slow under valgrind");
        return;
    }
    const char *data = fx_dataset(t_tmpdir(), 3, TRAIN, VAL, 0, 32, 20);
    T_REQUIRE(data != NULL);
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "%s --no-sixel --data %s --out %s/nan --batch-per-replica 4 --replicas 2 "
             "--optimizer sgd --momentum 0.9 --lr-start 1e9 --lr-max 1e9 --lr-end 1e9 "
             "--augment none",
             t_bin(), data, t_tmpdir());
    tmux_srv t;
    T_REQUIRE(tmx_open(&t, 120, 36, NULL, cmd));
    tmx_keys(&t, "s");
    WAIT(&t, "non-finite loss", 120);
    tmx_keys(&t, "q");
    WAIT(&t, "Stop it and quit?", 30);
    tmx_keys(&t, "y");
    T_EQ_INT(tmx_exit_status(&t, 60), 3);
    char *s = tmx_text(&t);
    T_CHECKF(count_of(s, "petal-tui: stopped after a non-finite loss at update ") == 1, "%s", s);
    free(s);
    tmx_stop(&t);
}

/* --early-stop in the workbench: the log panel says when and why, and the run ends as
 * when its epochs are done, the status line saying it stopped early (the recipe of
 * tests/test_earlystop.c: a learning rate that grows until the net collapses). */
TEST(ui_tmux_an_early_stop_is_logged_and_ends_the_run_as_done)
{
    T_NEED_TOOL("tmux");
    if (t_slow_mode()) {
        t_skip("a training run per tmux pane is too slow under valgrind");
        return;
    }
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "%s --no-sixel --out %s/early --image-size 32 --replicas 1 --workers 1 "
             "--lr-start 0.002 --lr-max 0.002 --warmup 0 --lr-end 50 --epochs 8 "
             "--early-stop 2",
             t_bin(), t_tmpdir());
    tmux_srv t;
    T_REQUIRE(tmx_open(&t, 160, 45, NULL, cmd));
    T_REQUIRE(tmx_start_run(&t));
    WAIT(&t, "DONE", 180);
    WAIT(&t, "early stop at epoch", 10);
    WAIT(&t, "stopped early at epoch", 10);
    char *s = tmx_text(&t);
    T_CHECKF(s && strstr(s, "the model is epoch"), "%s", s ? s : "");
    free(s);
    tmx_quit(&t, 0);
}

/* An --image-size above the shards' is taken, with a warning that says what it
 * costs: on screen while the workbench runs, and once on the terminal after. */
TEST(ui_tmux_an_upsampling_image_size_is_accepted_with_a_warning)
{
    T_NEED_TOOL("tmux");
    char cmd[4200];
    util_path(cmd, sizeof cmd, "%s --no-sixel --image-size 512", t_bin());
    tmux_srv t;
    T_REQUIRE(tmx_open(&t, 160, 40, NULL, cmd));
    WAIT(&t, "--image-size 512 upsamples the 128 px shards", 30);
    tmx_keys(&t, "q");
    T_EQ_INT(tmx_exit_status(&t, 30), 0);
    char *s = tmx_text(&t);
    const char *w = "petal-tui: --image-size 512 upsamples the 128 px shards: 16x the compute per "
                    "image for no more detail";
    T_CHECKF(count_of(s, w) == 1, "not once \"%s\" in:\n%s", w, s);
    free(s);
    tmx_stop(&t);
}

/* A Keras-like progress line on the screen: "epoch E/N  k/T [====>....] - ETA ",
 * the bar 30 wide, the line within the pane's 100 columns. */
static int has_keras_bar(const char *s, const void *arg)
{
    (void)arg;
    for (const char *p = s; (p = strstr(p, "epoch 1/1 ")) != NULL; p++) {
        int e, n, k, t, used = 0;
        if (sscanf(p, "epoch %d/%d %d/%d [%n", &e, &n, &k, &t, &used) != 4 || !used)
            continue;
        const char *bar = p + used;
        int ok = k > 0 && k < t;
        for (int i = 0; i < 30 && ok; i++)
            ok = bar[i] == '=' || bar[i] == '>' || bar[i] == '.';
        const char *eol = strchr(p, '\n');
        if (ok && !strncmp(bar + 30, "] - ETA ", 8) && (!eol || eol - p <= 100))
            return 1;
    }
    return 0;
}

/* --headless on a terminal: the epoch's progress as Keras draws it, redrawn in
 * place; the log's lines (a line per epoch) above it; piped, no bar and no \r. */
TEST(ui_tmux_headless_draws_a_progress_bar_on_a_terminal_and_none_when_piped)
{
    T_NEED_TOOL("tmux");
    if (t_slow_mode()) {
        t_skip("a training run per tmux pane is too slow under valgrind");
        return;
    }
    char cmd[8192];
    util_path(cmd, sizeof cmd,
              "%s --headless --image-size 32 --epochs 1 --checkpoint-every 1000 --out %s/tty",
              t_bin(), t_tmpdir());
    tmux_srv t;
    T_REQUIRE(tmx_start(&t, 100, 30, NULL, cmd) == 0);
    char *s = tmx_poll(&t, 0, has_keras_bar, NULL, 120);
    T_CHECKF(has_keras_bar(s, NULL), "no progress bar mid-epoch:\n%s", s);
    free(s);
    T_EQ_INT(tmx_exit_status(&t, 120), 0);
    s = tmx_text(&t);
    T_CHECKF(count_of(s, "epoch 1/1 - 61 updates - ") == 1 && count_of(s, "done: 1 epochs") == 1,
             "%s", s);
    free(s);
    tmx_stop(&t);

    const char *data = fx_dataset(t_tmpdir(), 3, TRAIN, VAL, 0, 32, 20);
    T_REQUIRE(data != NULL);
    char *out = NULL;
    util_path(cmd, sizeof cmd,
              "%s --headless --data %s --out %s/pipe --epochs 3 --batch-per-replica 4 "
              "--replicas 2 --workers 1 2>&1 | cat",
              t_bin(), data, t_tmpdir());
    T_EQ_INT(t_run(cmd, &out), 0);
    T_CHECKF(out && !strchr(out, '\r') && !strstr(out, "[=") && !strstr(out, "ETA"), "%s", out);
    for (int e = 1; e <= 3; e++) {
        char line[64];
        snprintf(line, sizeof line, "\nepoch %d/3 - 7 updates - ", e);
        T_CHECKF(out && count_of(out, line) == 1, "not once \"%s\" in:\n%s", line + 1, out);
    }
    free(out);
}

/* Where the half-block pictures are on a screen: the first and last row and
 * column (in characters) holding U+2580, and the last row of all (a caption
 * follows the last picture row). */
typedef struct pic_box {
    int top, bottom, left, right;
} pic_box;

static pic_box pictures_on(const char *s)
{
    pic_box b = { -1, -1, 1 << 30, -1 };
    int row = 0, col = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '\n') {
            row++;
            col = 0;
            continue;
        }
        if ((*p & 0xc0) == 0x80)
            continue;
        if (!strncmp(p, "\xe2\x96\x80", 3)) {
            if (b.top < 0)
                b.top = row;
            b.bottom = row;
            b.left = col < b.left ? col : b.left;
            b.right = col > b.right ? col : b.right;
        }
        col++;
    }
    return b;
}

/* The zoomed preview at 220x60 (its inside rows 3-57, columns 1-218): the
 * pictures as far from the left edge as from the right, from the top as from
 * the bottom (below the last picture row, its captions' row), within one cell,
 * and three quarters of the width at least. */
static int zoom_centred(const char *s, const void *arg)
{
    (void)arg;
    pic_box b = pictures_on(s);
    int left = b.left - 1, right = 218 - b.right, top = b.top - 3, bottom = 57 - (b.bottom + 1);
    return b.top >= 0 && abs(left - right) <= 1 && abs(top - bottom) <= 1 &&
           b.right - b.left + 1 >= 218 * 3 / 4;
}

/* Columns [0, to) of every line of s (UTF-8 aware), lines kept; caller frees. */
static char *left_columns(const char *s, int to)
{
    char *out = malloc(strlen(s) + 1), *o = out;
    int col = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '\n') {
            *o++ = '\n';
            col = 0;
            continue;
        }
        if ((*p & 0xc0) != 0x80)
            col++;
        if (col <= to)
            *o++ = *p;
    }
    *o = 0;
    return out;
}

/* The demo's longer class names, whole in the left column (the labels panel at
 * 220 columns: 61 wide), not just in the preview's captions. */
static int names_whole(const char *s, const void *arg)
{
    (void)arg;
    static const char *const names[] = { "black-eyed susan", "purple aster", "red camellia",
                                         "white anemone", "pink cosmos" };
    char *left = left_columns(s, 61);
    int ok = 1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        ok = ok && strstr(left, names[i]) != NULL;
    free(left);
    return ok;
}

/* The inspect view on screen, with or without results yet. */
static int inspect_up(const char *s, const void *arg)
{
    (void)arg;
    return strstr(s, "Inspect validation") || strstr(s, "Validation after epoch");
}

/* 220x60: the zoomed preview centred in its panel, across and down, using most
 * of its width; the labels' class names whole; while the run goes, no "s starts"
 * anywhere. */
TEST(ui_tmux_220x60_zoomed_preview_centred_names_whole_no_s_while_running)
{
    T_NEED_TOOL("tmux");
    char cmd[4096];
    util_path(cmd, sizeof cmd,
              "%s --no-sixel --image-size 32 --epochs 1 --checkpoint-every 1000 --out %s/run",
              t_bin(), t_tmpdir());
    tmux_srv t;
    T_REQUIRE(tmx_open(&t, 220, 60, NULL, cmd));
    tmx_keys(&t, "a");
    WAIT(&t, "[n a]", 30);
    WAIT(&t, "Preview #", 30);
    /* Waited for: a screen caught while curses repaints it shows part of it. */
    char *s = tmx_poll(&t, 0, zoom_centred, NULL, 30);
    pic_box b = pictures_on(s);
    T_CHECKF(zoom_centred(s, NULL), "pictures at rows %d-%d, columns %d-%d:\n%s", b.top,
             b.bottom, b.left, b.right, s);
    free(s);
    tmx_keys(&t, "a");
    WAIT(&t, "Curves", 30);
    if (!t_slow_mode()) {
        /* Paused, the run stays under way for as long as the checks take. */
        T_REQUIRE(tmx_start_run(&t));
        tmx_keys(&t, "p");
        WAIT(&t, "PAUSED", 60);
        /* The labels, a row per class, each name whole. */
        s = tmx_poll(&t, 0, names_whole, NULL, 60);
        T_CHECKF(names_whole(s, NULL), "class names cut:\n%s", s);
        T_CHECKF(strstr(s, "PAUSED") && !strstr(s, "s start  ") && !strstr(s, "s starts"),
                 "s offered during a run:\n%s", s);
        free(s);
        tmx_keys(&t, "i");
        s = tmx_poll(&t, 0, inspect_up, NULL, 30);
        T_CHECKF(inspect_up(s, NULL) && strstr(s, "PAUSED") && !strstr(s, "s start  ") &&
                     !strstr(s, "s starts"),
                 "s offered in the inspect view during a run:\n%s", s);
        free(s);
    }
    tmx_keys(&t, "q");
    if (!t_slow_mode()) {
        tmx_keys(&t, "y");
    }
    T_CHECK(tmx_exit_status(&t, 60) == 0);
    tmx_stop(&t);
}

/* ---- comparing runs, the runs list, --open (issue 14) ------------------------------ */

#define KERAS_RUN_DIR "tf-written-tfrecords/tfevents-petals/20250321-152714"

/* The number after "after" on the screen's first line holding it; NAN when none. */
static double number_after(const char *s, const char *after)
{
    const char *p = strstr(s, after);
    return p ? strtod(p + strlen(after), NULL) : NAN;
}

TEST(ui_tmux_compare_overlays_runs_by_update_epoch_time_with_value_cursor_and_log_y)
{
    T_NEED_TOOL("tmux");
    const char *parent = fx_demo_runs();
    T_REQUIRE(parent);
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "%s --no-sixel --image-size 32 --out '%s/cur' --compare '%s/a' '%s/b'",
             t_bin(), t_tmpdir(), parent, parent);
    tmux_srv t;
    T_REQUIRE(tmx_open(&t, 120, 40, NULL, cmd));
    tmx_keys(&t, "Enter"); /* the curves (focused first) zoomed: the whole legend */
    WAIT(&t, "compared (val line, train dots): \xe2\x94\x81 a  \xe2\x94\x81 b", 30);
    char *s = tmx_screen(&t, 0);
    T_CHECK(strstr(s, "Curves: loss by update"));
    free(s);
    /* Each run in a colour of its own: the legend's names in different SGRs. */
    s = tmx_screen(&t, 1);
    const char *la = strstr(s, "\xe2\x94\x81 a"), *lb = strstr(s, "\xe2\x94\x81 b");
    T_REQUIRE(la && lb);
    char sa[32] = "", sb[32] = "";
    for (const char *p = la; p > s && p > la - 30; p--)
        if (*p == '\033') {
            util_fmt(sa, sizeof sa, "%.*s", (int)strcspn(p, "m") + 1, p);
            break;
        }
    for (const char *p = lb; p > s && p > lb - 30; p--)
        if (*p == '\033') {
            util_fmt(sb, sizeof sb, "%.*s", (int)strcspn(p, "m") + 1, p);
            break;
        }
    T_CHECKF(sa[0] && sb[0] && strcmp(sa, sb) != 0, "legend SGRs '%s' and '%s'", sa + 1, sb + 1);
    free(s);

    /* Zoomed: x cycles the axis (its end label follows), l puts the loss on a log scale. */
    tmx_keys(&t, "x");
    WAIT(&t, "Curves: loss by epoch", 30);
    WAIT(&t, "epoch 2\xe2\x94\x82", 30); /* the axis's end, at the frame */
    tmx_keys(&t, "x");
    WAIT(&t, "Curves: loss by time", 30);
    tmx_keys(&t, "x");
    WAIT(&t, "Curves: loss by update", 30);
    tmx_keys(&t, "x l");
    WAIT(&t, "Curves: loss (log) by epoch", 30);

    /* The value cursor: at the right end, then a column left; every run's values. */
    tmx_keys(&t, "Left");
    WAIT(&t, "this run: per update --", 30);
    s = tmx_screen(&t, 0);
    double x1 = number_after(s, "at epoch ");
    double va = number_after(s, "a: train "), vb = number_after(s, "b: train ");
    const char *vat = strstr(s, "a: train ");
    double val_a = vat ? number_after(vat, "val ") : NAN;
    T_CHECKF(isfinite(x1) && isfinite(va) && isfinite(vb) && isfinite(val_a), "%s", s);
    free(s);
    /* a's validation loss at that x lies between its epochs' figures around it. */
    run_figures *r;
    pt_err e;
    char dir[4300];
    util_path(dir, sizeof dir, "%s/a", parent);
    T_REQUIRE(run_load(dir, &r, &e) == PT_OK);
    const run_series *vl = &r->s[RUN_S_VAL_LOSS];
    int k = 0;
    while (k + 1 < vl->n && vl->x[RUN_X_EPOCH][k + 1] < x1)
        k++;
    /* The x range is the demo runs' two epochs: the cursor is inside it. */
    T_CHECKF(x1 > 1 && x1 <= 2, "at epoch %g", x1);
    if (k + 1 < vl->n && x1 >= vl->x[RUN_X_EPOCH][k]) {
        double lo = fmin(vl->y[k], vl->y[k + 1]), hi = fmax(vl->y[k], vl->y[k + 1]);
        T_CHECKF(val_a >= lo * 0.99 && val_a <= hi * 1.01, "a's val %g at epoch %g, not in [%g, %g]",
                 val_a, x1, lo, hi);
    }
    run_free(r);
    tmx_keys(&t, "Left Left Left Left");
    double x2 = x1;
    double end = util_now() + 30;
    while (x2 >= x1 && util_now() < end) {
        usleep(100000);
        s = tmx_screen(&t, 0);
        x2 = number_after(s, "at epoch ");
        free(s);
    }
    T_CHECKF(x2 < x1, "the cursor stayed at epoch %g", x2);
    tmx_keys(&t, "Escape");
    T_CHECK(tmx_wait_gone(&t, "at epoch ", 30));
    tmx_quit(&t, 0);
}

TEST(ui_tmux_runs_list_sorts_and_adds_a_run_to_the_comparison)
{
    T_NEED_TOOL("tmux");
    const char *parent = fx_demo_runs();
    T_REQUIRE(parent);
    char cmd[8192];
    /* The new run's folder lies beside a and b: the list shows that folder. */
    snprintf(cmd, sizeof cmd, "%s --no-sixel --image-size 32 --out '%s/cur'", t_bin(), parent);
    tmux_srv t;
    T_REQUIRE(tmx_open(&t, 140, 36, NULL, cmd));
    tmx_keys(&t, "r");
    WAIT(&t, ", by date", 30);
    char *s = tmx_screen(&t, 0);
    static const char *const heads[] = { "name", "date*", "model", "dataset", "epochs", "val F1",
                                         "options that differ" };
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
        T_CHECKF(strstr(s, heads[i]) != NULL, "no column \"%s\":\n%s", heads[i], s);
    const char *ra = strstr(s, "[ ] a "), *rb = strstr(s, "[ ] b ");
    T_CHECKF(ra && rb && rb < ra, "b (the newer) above a:\n%s", s);
    /* Only the learning rate differs; a row's model, data and epochs. */
    T_CHECKF(rb && strstr(rb, "lr-max=0.004") && strstr(rb, "small") && strstr(rb, "demo"),
             "%s", s);
    T_CHECKF(ra && strstr(ra, "lr-max=") && !strstr(s, "seed="), "%s", s);
    free(s);
    /* o: the next column; five times from date comes back to name (a above b). */
    tmx_keys(&t, "o");
    WAIT(&t, ", by model", 30);
    tmx_keys(&t, "o o o o");
    WAIT(&t, ", by name", 30);
    s = tmx_screen(&t, 0);
    ra = strstr(s, "[ ] a ");
    rb = strstr(s, "[ ] b ");
    T_CHECKF(ra && rb && ra < rb, "%s", s);
    free(s);
    /* The selection stayed on b: Space compares it. */
    tmx_keys(&t, "Space");
    WAIT(&t, "[x] b ", 30);
    tmx_keys(&t, "Escape");
    WAIT(&t, "\xe2\x94\x81 b  ", 30);
    /* Off again. */
    tmx_keys(&t, "r");
    WAIT(&t, ", by name", 30);
    WAIT(&t, "[x] b ", 30);
    tmx_keys(&t, "Down Space"); /* the list opens on its first row, a */
    WAIT(&t, "[ ] b ", 30);
    T_CHECK(tmx_wait(&t, "[ ] a ", 30));
    tmx_keys(&t, "Escape");
    T_CHECK(tmx_wait_gone(&t, "compared (val line", 30));
    tmx_quit(&t, 0);
}

TEST(ui_tmux_open_shows_a_finished_run_without_training)
{
    T_NEED_TOOL("tmux");
    const char *parent = fx_demo_runs();
    T_REQUIRE(parent);
    char cmd[8192], log[4300];
    snprintf(cmd, sizeof cmd, "%s --no-sixel --open '%s/a'", t_bin(), parent);
    util_path(log, sizeof log, "%s/a/log.txt", parent);
    uint8_t *log0;
    size_t n0;
    T_REQUIRE(util_read_file(log, &log0, &n0, NULL) == PT_OK);
    tmux_srv t;
    T_REQUIRE(tmx_start(&t, 120, 40, NULL, cmd) == 0);
    WAIT(&t, "DONE", 30);
    WAIT(&t, "-- train/epoch", 30);
    char *s = tmx_screen(&t, 0);
    T_CHECKF(strstr(s, "epoch 2/2") && strstr(s, "small 32px") && strstr(s, "done: 2 epochs"),
             "%s", s);
    T_CHECK(!strstr(s, "s start"));
    free(s);
    /* s does nothing and says why; the run stays as it was. */
    tmx_keys(&t, "s");
    WAIT(&t, "not trained here", 30);
    s = tmx_screen(&t, 0);
    T_CHECKF(strstr(s, "DONE") && !strstr(s, "RUNNING") && !strstr(s, "PREPARING"), "%s", s);
    free(s);
    uint8_t *log1;
    size_t n1;
    T_REQUIRE(util_read_file(log, &log1, &n1, NULL) == PT_OK);
    T_CHECK(n1 == n0 && !memcmp(log0, log1, n0)); /* nothing more logged: no run */
    free(log0);
    free(log1);
    /* Inspect: the last epoch's table and matrix; the images are not in the folder. */
    tmx_keys(&t, "i");
    WAIT(&t, "keeps no images", 30);
    WAIT(&t, "Confusion: true by row", 30);
    WAIT(&t, "Validation after epoch 2", 30);
    tmx_keys(&t, "i");
    T_CHECK(tmx_wait_gone(&t, "Confusion: true by row", 30));
    tmx_quit(&t, 0);
}

/* e in --open (issue 28): the run's net written as RUN/model.onnx, the log saying
 * where; while a run trains, e refuses and says why. */
TEST(ui_tmux_e_exports_an_opened_run_and_the_log_says_where)
{
    T_NEED_TOOL("tmux");
    const char *parent = fx_demo_runs();
    T_REQUIRE(parent);
    char run[4300], cmd[8192], onnx[4400];
    util_path(run, sizeof run, "%s/export-a", t_tmpdir());
    snprintf(cmd, sizeof cmd, "cp -r '%s/a' '%s'", parent, run);
    T_REQUIRE(system(cmd) == 0);
    util_path(onnx, sizeof onnx, "%s/model.onnx", run);
    snprintf(cmd, sizeof cmd, "%s --no-sixel --open '%s'", t_bin(), run);
    tmux_srv t;
    T_REQUIRE(tmx_start(&t, 120, 40, NULL, cmd) == 0);
    WAIT(&t, "DONE", 30);
    T_CHECK(!util_is_file(onnx));
    tmx_keys(&t, "e");
    WAIT(&t, "exported: the log says where", 30);
    T_CHECK(util_is_file(onnx));
    tmx_quit(&t, 0);
    uint8_t *b;
    size_t n;
    T_REQUIRE(util_read_file(onnx, &b, &n, NULL) == PT_OK);
    T_CHECK(n > 1000 && b[0] == 0x08); /* field 1 (ir_version), varint: a ModelProto */
    free(b);
}

TEST(ui_tmux_compare_and_open_the_keras_event_files)
{
    T_NEED_DATA();
    T_NEED_TOOL("tmux");
    char cmd[8192];
    tmux_srv t;
    snprintf(cmd, sizeof cmd, "%s --no-sixel --image-size 32 --out '%s/cur' --compare '%s'",
             t_bin(), t_tmpdir(), t_data(KERAS_RUN_DIR));
    T_REQUIRE(tmx_open(&t, 120, 40, NULL, cmd));
    tmx_keys(&t, "Enter");
    WAIT(&t, "\xe2\x94\x81 20250321-152714", 30);
    /* 30 epochs of 800 updates: the axis ends there by epoch and by update. */
    WAIT(&t, "upd 24000", 30);
    tmx_keys(&t, "x");
    WAIT(&t, "epoch 30", 30);
    tmx_keys(&t, "Left");
    WAIT(&t, "20250321-152714: train ", 30);
    char *s = tmx_screen(&t, 0);
    const char *row = strstr(s, "20250321-152714: train ");
    T_CHECKF(row && isfinite(number_after(row, "train ")) && isfinite(number_after(row, "val ")),
             "%s", s);
    free(s);
    tmx_quit(&t, 0);

    snprintf(cmd, sizeof cmd, "%s --no-sixel --open '%s'", t_bin(), t_data(KERAS_RUN_DIR));
    T_REQUIRE(tmx_start(&t, 120, 40, NULL, cmd) == 0);
    WAIT(&t, "DONE", 30);
    WAIT(&t, "epoch 30/30", 30);
    tmx_keys(&t, "i");
    WAIT(&t, "no validation results in this run's folder", 30);
    tmx_keys(&t, "Escape");
    tmx_quit(&t, 0);
}

/* Issue 30, defects 8 and 9 on the whole screen: a run of 104 classes opened at
 * 160x48 says its class count in Labels, and its inspect view gives the confusion
 * matrix the height the missing images leave; compared with a Keras run of 24,000
 * updates, its 13 updates would be one column at x = 0: the curves go by epoch and
 * say why. */
TEST(ui_tmux_open_104_classes_and_compare_with_a_keras_run_by_epoch)
{
    T_NEED_TOOL("tmux");
    if (t_slow_mode()) {
        t_skip("a training run per tmux pane is too slow under valgrind");
        return;
    }
    enum { K = 104 };
    long long train[K], val[K];
    for (int k = 0; k < K; k++) {
        train[k] = 4;
        val[k] = 1;
    }
    char dir[4300], run[4300], cmd[16384], *out = NULL;
    util_path(dir, sizeof dir, "%s/c104", t_tmpdir());
    util_path(run, sizeof run, "%s/c104-run", t_tmpdir());
    const char *data = fx_dataset(dir, K, train, val, 0, 32, 200);
    T_REQUIRE(data != NULL);
    snprintf(cmd, sizeof cmd, "%s --headless --data '%s' --out '%s' --epochs 1 --replicas 1",
             t_bin(), data, run);
    int rc = t_run(cmd, &out);
    T_CHECKF(rc == 0, "exit %d:\n%s", rc, out ? out : "");
    free(out);
    T_REQUIRE(rc == 0);
    snprintf(cmd, sizeof cmd, "%s --no-sixel --open '%s'", t_bin(), run);
    tmux_srv t;
    T_REQUIRE(tmx_start(&t, 160, 48, NULL, cmd) == 0);
    WAIT(&t, "DONE", 30);
    WAIT(&t, "Labels: 104 classes", 30);
    WAIT(&t, "keeps no label counts", 30);
    tmx_keys(&t, "i");
    WAIT(&t, "Confusion: true by row", 30);
    WAIT(&t, "keeps no images", 30);
    char *s = tmx_screen(&t, 0);
    /* 45 rows below the header: the text's box of 4, the matrix the rest. */
    double last = number_after(s, " rows 0-");
    T_CHECKF(last >= 34, "the matrix shows rows 0-%g:\n%s", last, s);
    free(s);
    tmx_quit(&t, 0);

    if (!t_have_data())
        return;
    snprintf(cmd, sizeof cmd, "%s --no-sixel --open '%s' --compare '%s'", t_bin(), run,
             t_data(KERAS_RUN_DIR));
    T_REQUIRE(tmx_start(&t, 160, 48, NULL, cmd) == 0);
    WAIT(&t, "Curves: loss by epoch", 30);
    WAIT(&t, "updates differ", 30);
    WAIT(&t, "\xe2\x94\x81 20250321-152714", 30);
    tmx_keys(&t, "Enter"); /* zoomed: the reason in full */
    WAIT(&t, "by epoch: the runs' updates differ", 30);
    tmx_keys(&t, "x");
    WAIT(&t, "Curves: loss by time", 30);
    T_CHECK(tmx_wait_gone(&t, "updates differ", 30));
    tmx_keys(&t, "Escape");
    tmx_quit(&t, 0);
}


/* ---- issue 42, item 11: workbench details ------------------------------------------ */

/* Line i (from 0) of screen s into buf (n bytes), without its newline; "" past the end. */
static const char *line_of(const char *s, int i, char *buf, size_t n)
{
    for (; i > 0 && s; i--) {
        s = strchr(s, '\n');
        s = s ? s + 1 : NULL;
    }
    util_fmt(buf, n, "%.*s", s ? (int)strcspn(s, "\n") : 0, s ? s : "");
    return buf;
}

/* The screen's line number holding text (the first one), or -1. */
static int line_with(const char *s, const char *text)
{
    const char *p = strstr(s, text);
    if (!p)
        return -1;
    int n = 0;
    for (const char *q = s; q < p; q++)
        n += *q == '\n';
    return n;
}

/* Columns (UTF-8 characters) from line to p. */
static int col_of(const char *line, const char *p)
{
    int c = 0;
    for (const unsigned char *q = (const unsigned char *)line; q < (const unsigned char *)p; q++)
        c += (*q & 0xc0) != 0x80;
    return c;
}

/* The part of line from column col on ("" when it is shorter). */
static const char *from_col(const char *line, int col)
{
    const unsigned char *q = (const unsigned char *)line;
    for (; *q && col > 0; col--)
        for (q++; (*q & 0xc0) == 0x80; q++)
            ;
    return (const char *)q;
}

/* The inside of the box whose top edge holds title on the screen: each row's
 * text between its left and right edges, rows (up to max) into rows[] of n bytes.
 * Returns how many rows, -1 when there is no such box. */
static int box_rows(const char *s, const char *title, char rows[][400], int max)
{
    int top = line_with(s, title);
    if (top < 0)
        return -1;
    char line[2000];
    line_of(s, top, line, sizeof line);
    const char *corner = strstr(line, title);
    while (corner > line && strncmp(corner, "\xe2\x94\x8c", 3) != 0) /* U+250C */
        corner--;
    int col = col_of(line, corner), n = 0;
    for (int y = top + 1; n < max; y++) {
        line_of(s, y, line, sizeof line);
        const char *p = from_col(line, col);
        if (strncmp(p, "\xe2\x94\x82", 3) != 0) /* U+2502: the box's left edge */
            break;
        p += 3;
        const char *end = strstr(p, "\xe2\x94\x82");
        util_fmt(rows[n++], 400, "%.*s", end ? (int)(end - p) : (int)strlen(p), p);
    }
    return n;
}

/* 11a: the value cursor at the axis's right end keeps the axis's end label whole
 * (it was "upd 24┴"), by update and by epoch; its values still show. */
TEST(ui_tmux_the_value_cursor_leaves_the_x_axis_label_whole)
{
    T_NEED_TOOL("tmux");
    const char *parent = fx_demo_runs();
    T_REQUIRE(parent);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s --no-sixel --open '%s/a'", t_bin(), parent);
    static const int size[2][2] = { { 80, 24 }, { 120, 40 } };
    for (int z = 0; z < 2; z++) {
        tmux_srv t;
        T_REQUIRE(tmx_start(&t, size[z][0], size[z][1], NULL, cmd) == 0);
        WAIT(&t, "DONE", 30);
        tmx_keys(&t, "Enter"); /* the curves, focused first, zoomed */
        WAIT(&t, "[v l x + -]", 30);
        for (int axis = 0; axis < 2; axis++) {
            const char *lead = axis == 0 ? "upd " : "epoch ";
            /* The axis row: the rule from "0", its end label before the frame. */
            char *s = tmx_screen(&t, 0);
            int ay = line_with(s, "0\xe2\x94\x80");
            char before[2000], after[2000];
            line_of(s, ay, before, sizeof before);
            free(s);
            const char *lab = strstr(before, lead);
            T_CHECKF(ay > 0 && lab, "no axis with \"%s\" at %dx%d", lead, size[z][0], size[z][1]);
            tmx_keys(&t, "Left"); /* the cursor at the right end, under the label */
            WAIT(&t, axis == 0 ? "at upd " : "at epoch ", 30);
            s = tmx_screen(&t, 0);
            line_of(s, line_with(s, "0\xe2\x94\x80"), after, sizeof after);
            T_CHECKF(lab && strstr(after, lab), "the axis was\n%s\nwith the cursor\n%s\n%s", before,
                     after, s);
            free(s);
            tmx_keys(&t, "Escape"); /* the cursor off; zoomed again, by epoch */
            T_CHECK(tmx_wait_gone(&t, "this run: ", 30));
            if (axis == 1)
                break;
            tmx_keys(&t, "Enter");
            WAIT(&t, "[v l x + -]", 30);
            tmx_keys(&t, "x");
            WAIT(&t, "Curves: loss by epoch", 30);
        }
        tmx_quit(&t, 0);
    }
}

/* 11b: inspect's per-class table holds rows, names and figures at every size
 * the workbench draws (at 60x16 it was an empty box, at 70x20 rows without
 * names); below 60x16 the note says the size needed. */
TEST(ui_tmux_inspect_per_class_table_shows_rows_at_small_sizes)
{
    T_NEED_TOOL("tmux");
    const char *parent = fx_demo_runs();
    T_REQUIRE(parent);
    char cmd[8192], dir[4300], **names;
    int n_names;
    util_path(dir, sizeof dir, "%s/a", parent);
    T_REQUIRE(runs_class_names(dir, &names, &n_names, NULL) == PT_OK && n_names > 1);
    char first[4]; /* class 0's name starts the table (by class) */
    util_fmt(first, sizeof first, "%s", names[0]);
    util_free_list(names, n_names);
    snprintf(cmd, sizeof cmd, "%s --no-sixel --open '%s'", t_bin(), dir);
    static const int size[4][2] = { { 60, 16 }, { 70, 20 }, { 80, 24 }, { 40, 12 } };
    for (int z = 0; z < 4; z++) {
        tmux_srv t;
        T_REQUIRE(tmx_start(&t, size[z][0], size[z][1], NULL, cmd) == 0);
        if (size[z][0] < 60) {
            WAIT(&t, "petal-tui needs 60x16", 30);
            tmx_quit(&t, 0);
            continue;
        }
        WAIT(&t, "DONE", 30);
        tmx_keys(&t, "i");
        WAIT(&t, "Per class", 30);
        char *s = tmx_screen(&t, 0);
        char rows[8][400];
        int n = box_rows(s, "Per class", rows, 8);
        T_CHECKF(n >= 3 && strstr(rows[0], "class") && strstr(rows[0], "F1") &&
                     strncmp(rows[1], first, strlen(first)) == 0 && strstr(rows[1], "0.") &&
                     strncmp(rows[2], "   ", 3) != 0,
                 "at %dx%d, a table of %d rows:\n%s", size[z][0], size[z][1], n, s);
        free(s);
        tmx_quit(&t, 0);
    }
}

/* 11c: the log panel at 80 columns: one rule for every line, wrapped under its
 * text; none cut with an ellipsis (the oldest one shown was). Each row is a
 * line's start (its time) or its continuation (indented). */
TEST(ui_tmux_log_lines_wrap_by_one_rule)
{
    T_NEED_TOOL("tmux");
    const char *parent = fx_demo_runs();
    T_REQUIRE(parent);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s --no-sixel --open '%s/a'", t_bin(), parent);
    static const int size[3][2] = { { 80, 24 }, { 100, 30 }, { 120, 40 } };
    for (int z = 0; z < 3; z++) {
        tmux_srv t;
        T_REQUIRE(tmx_start(&t, size[z][0], size[z][1], NULL, cmd) == 0);
        WAIT(&t, "DONE", 30);
        WAIT(&t, "opened a:", 30);
        char *s = tmx_screen(&t, 0);
        char rows[40][400];
        int n = box_rows(s, "Log ", rows, 40);
        T_CHECKF(n >= 3, "no log box at %dx%d:\n%s", size[z][0], size[z][1], s);
        int bad = 0;
        for (int i = 0; i < n && !bad; i++) {
            const char *r = rows[i];
            if (strncmp(r, "run folder: ", 12) == 0 || strncmp(r, "last checkpoint: ", 17) == 0)
                break; /* the panel's foot */
            int timed = strlen(r) > 6 && r[2] == ':' && r[5] == ' ';
            bad = strstr(r, "\xe2\x80\xa6") != NULL || (!timed && strncmp(r, "      ", 6) != 0);
        }
        T_CHECKF(!bad, "at %dx%d:\n%s", size[z][0], size[z][1], s);
        free(s);
        tmx_quit(&t, 0);
    }
}

/* 11d: an opened run starts no replicas: the panel says it is opened and how
 * many replicas it ran on, not that replicas "start with the run", and shows no
 * queue or throughput of its own. */
TEST(ui_tmux_open_says_the_run_is_opened_in_the_replicas_panel)
{
    T_NEED_TOOL("tmux");
    const char *parent = fx_demo_runs();
    T_REQUIRE(parent);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s --no-sixel --open '%s/a'", t_bin(), parent);
    tmux_srv t;
    T_REQUIRE(tmx_start(&t, 100, 30, NULL, cmd) == 0);
    WAIT(&t, "DONE", 30);
    char *s = tmx_screen(&t, 0);
    char rows[8][400];
    int n = box_rows(s, "Replicas", rows, 8);
    T_CHECKF(n >= 1 && strstr(rows[0], "opened: ran on 1 replica") &&
                 !strstr(s, "start with the run") && !strstr(s, "0 img/s"),
             "%s", s);
    free(s);
    tmx_quit(&t, 0);
}

/* 11e: the footer offers e (export) where it works: an opened run, a paused one;
 * not on an idle workbench (no run to export) nor while a run trains. */
TEST(ui_tmux_the_footer_offers_e_where_export_works)
{
    T_NEED_TOOL("tmux");
    const char *parent = fx_demo_runs();
    T_REQUIRE(parent);
    char cmd[8192], foot[2000];
    snprintf(cmd, sizeof cmd, "%s --no-sixel --open '%s/a'", t_bin(), parent);
    static const int size[2][2] = { { 80, 24 }, { 120, 40 } };
    for (int z = 0; z < 2; z++) {
        tmux_srv t;
        T_REQUIRE(tmx_start(&t, size[z][0], size[z][1], NULL, cmd) == 0);
        WAIT(&t, "DONE", 30);
        char *s = tmx_screen(&t, 0);
        line_of(s, size[z][1] - 1, foot, sizeof foot);
        T_CHECKF(strstr(foot, "e export") && strstr(foot, "q quit"), "at %dx%d:\n%s", size[z][0],
                 size[z][1], s);
        free(s);
        tmx_quit(&t, 0);
    }
    snprintf(cmd, sizeof cmd,
             "%s --no-sixel --image-size 32 --epochs 50 --checkpoint-every 1000 --out '%s/run'",
             t_bin(), t_tmpdir());
    tmux_srv t;
    T_REQUIRE(tmx_open(&t, 100, 30, NULL, cmd));
    char *s = tmx_screen(&t, 0);
    line_of(s, 29, foot, sizeof foot);
    T_CHECKF(!strstr(foot, "e export") && strstr(foot, "s start"), "idle:\n%s", s);
    free(s);
    if (t_slow_mode()) {
        tmx_quit(&t, 0);
        return;
    }
    T_REQUIRE(tmx_start_run(&t));
    WAIT(&t, "p pause", 30);
    s = tmx_screen(&t, 0);
    line_of(s, 29, foot, sizeof foot);
    T_CHECKF(!strstr(foot, "e export"), "training:\n%s", s);
    free(s);
    tmx_keys(&t, "p");
    WAIT(&t, "PAUSED", 60);
    WAIT(&t, "p resume", 30);
    s = tmx_screen(&t, 0);
    line_of(s, 29, foot, sizeof foot);
    T_CHECKF(strstr(foot, "e export"), "paused:\n%s", s);
    free(s);
    tmx_keys(&t, "q");
    WAIT(&t, "Stop it and quit?", 30);
    tmx_keys(&t, "y");
    T_EQ_INT(tmx_exit_status(&t, 60), 0);
    tmx_stop(&t);
}

/* --open of a run whose data folder has gone: the preview panel says so and why,
 * and shows no pictures (it showed the demo flowers under the run's name). */
TEST(ui_tmux_open_of_a_run_whose_data_is_gone_shows_no_other_data)
{
    T_NEED_TOOL("tmux");
    if (t_slow_mode()) {
        t_skip("a training run per tmux pane is too slow under valgrind");
        return;
    }
    long long train[3] = { 40, 40, 40 }, val[3] = { 8, 8, 8 };
    char dir[4300], moved[4400], run[4300], cmd[16384], *out = NULL;
    util_path(dir, sizeof dir, "%s/gone", t_tmpdir());
    util_path(run, sizeof run, "%s/gone-run", t_tmpdir());
    const char *data = fx_dataset(dir, 3, train, val, 0, 32, 200);
    T_REQUIRE(data != NULL);
    snprintf(cmd, sizeof cmd,
             "%s --headless --data '%s' --out '%s' --epochs 1 --replicas 1 --image-size 32",
             t_bin(), data, run);
    int rc = t_run(cmd, &out);
    T_CHECKF(rc == 0, "exit %d:\n%s", rc, out ? out : "");
    free(out);
    T_REQUIRE(rc == 0);
    util_path(moved, sizeof moved, "%s-moved", dir);
    T_REQUIRE(rename(dir, moved) == 0);
    snprintf(cmd, sizeof cmd, "%s --no-sixel --open '%s'", t_bin(), run);
    tmux_srv t;
    T_REQUIRE(tmx_start(&t, 100, 30, NULL, cmd) == 0);
    WAIT(&t, "DONE", 30);
    WAIT(&t, "no preview: the run's data cannot be opened", 30);
    usleep(1000 * 1000); /* time for a preview of other data to arrive, were one asked */
    char *s = tmx_screen(&t, 0);
    char rows[30][400];
    int n = box_rows(s, "Preview", rows, 30);
    int pictures = 0;
    for (int i = 0; i < n; i++)
        pictures += strstr(rows[i], "\xe2\x96\x80") != NULL; /* U+2580, the half blocks */
    T_CHECKF(n > 2 && pictures == 0, "%d rows of pictures:\n%s", pictures, s);
    free(s);
    tmx_quit(&t, 0);
}

/* --open of a run that trained past its model.onnx says so in the log (issue 42 item 6):
 * the export answers as the run did then. */
TEST(ui_tmux_open_says_the_export_is_older_than_the_run)
{
    T_NEED_TOOL("tmux");
    if (t_slow_mode()) {
        t_skip("a training run per tmux pane is too slow under valgrind");
        return;
    }
    long long train[3] = { 40, 40, 40 }, val[3] = { 8, 8, 8 };
    char dir[4300], run[4300], cmd[16384], *out = NULL;
    util_path(dir, sizeof dir, "%s/stale", t_tmpdir());
    util_path(run, sizeof run, "%s/stale-run", t_tmpdir());
    const char *data = fx_dataset(dir, 3, train, val, 0, 32, 200);
    T_REQUIRE(data != NULL);
    snprintf(cmd, sizeof cmd,
             "%s --headless --data '%s' --out '%s' --epochs 1 --replicas 1 --image-size 32 && "
             "%s export '%s' && %s --headless --resume '%s' --epochs 2",
             t_bin(), data, run, t_bin(), run, t_bin(), run);
    int rc = t_run(cmd, &out);
    T_CHECKF(rc == 0, "exit %d:\n%s", rc, out ? out : "");
    free(out);
    T_REQUIRE(rc == 0);
    snprintf(cmd, sizeof cmd, "%s --no-sixel --open '%s'", t_bin(), run);
    tmux_srv t;
    T_REQUIRE(tmx_start(&t, 160, 40, NULL, cmd) == 0);
    WAIT(&t, "DONE", 30);
    WAIT(&t, "model.onnx holds", 30);
    tmx_quit(&t, 0);
}

/* ---- --tty: the workbench on another terminal ------------------------------------ */

/* A pane that runs `sleep`, so that nothing there reads its keys, as a person's
 * second terminal running `sleep infinity`; its terminal device into tty. 0, or -1
 * with the reason printed. */
static int tmx_tty_pane(tmux_srv *t, int cols, int rows, char *tty, size_t n)
{
    if (tmx_start(t, cols, rows, NULL, "sleep 100000") != 0)
        return -1;
    char *out = NULL;
    int rc = tmx_cmd(t, &out, "display -p -t 0 '#{pane_tty}'");
    util_fmt(tty, n, "%.*s", out ? (int)strcspn(out, "\r\n") : 0, out ? out : "");
    if (rc != 0 || strncmp(tty, "/dev/", 5) != 0) {
        printf("  tmux display #{pane_tty}: %s\n", out ? out : "(nothing)");
        rc = -1;
    }
    free(out);
    return rc;
}

/* The environment of a workbench started away from its terminal: tmux's terminal
 * type; no TMUX (the test itself may run inside tmux, which would keep the
 * workbench from asking the pane what it can show); and a starting terminal's
 * size that must not count (the pane's does). Room for one more entry. */
static const char *tty_env[] = { "TERM=tmux-256color", "TMUX", "LINES=10", "COLUMNS=40", NULL,
                                 NULL };

/* 1 when word stands alone (between blanks) in s, as stty -a lists the modes. */
static int has_word(const char *s, const char *word)
{
    size_t k = strlen(word);
    for (const char *p = s; (p = strstr(p, word)) != NULL; p += k)
        if ((p == s || p[-1] == ' ' || p[-1] == '\n') && (p[k] == ' ' || p[k] == '\n' || !p[k]))
            return 1;
    return 0;
}

/* stty -a of the pane's terminal (caller frees). */
static char *tty_modes(const char *tty)
{
    char cmd[600], *out = NULL;
    snprintf(cmd, sizeof cmd, "stty -F '%s' -a", tty);
    t_run(cmd, &out);
    return out ? out : strdup("");
}

/* A --tty run's stdout and stderr (files) are empty: all of it went to its terminal. */
static void check_nothing_written(const char *out, const char *err)
{
    uint8_t *o = NULL, *e = NULL;
    size_t no = 0, ne = 0;
    T_REQUIRE(util_read_file(out, &o, &no, NULL) == PT_OK);
    T_REQUIRE(util_read_file(err, &e, &ne, NULL) == PT_OK);
    T_CHECKF(no == 0 && ne == 0, "stdout:\n%.*s\nstderr:\n%.*s", (int)no, (char *)o, (int)ne,
             (char *)e);
    free(o);
    free(e);
}

static void tty_plain(tmux_srv *t, pid_t *pid)
{
    char tty[256];
    T_REQUIRE(tmx_tty_pane(t, 100, 30, tty, sizeof tty) == 0);
    const char *dir = t_tmpdir();
    char run[4200], out[4200], err[4200];
    util_path(run, sizeof run, "%s/run", dir);
    util_path(out, sizeof out, "%s/tty.out", dir);
    util_path(err, sizeof err, "%s/tty.err", dir);
    /* The demo data; no --no-sixel: the terminal is asked what it can show, on
     * the pane (tmux answers DA1 without sixel). */
    const char *argv[] = { t_bin(), "--tty", tty, "--image-size", "32", "--epochs", "1",
                           "--checkpoint-every", "1000", "--out", run, NULL };
    *pid = fx_spawn(argv, tty_env, out, err);
    T_REQUIRE(*pid > 0);
    WAIT(t, "IDLE", 60);
    WAIT(t, "DA1 lists no sixel", 30);
    char *s = tmx_screen(t, 0);
    T_CHECKF(strstr(s, "Replicas") && strstr(s, "q quit") && max_line_width(s) == 100,
             "the pane's 100x30, not LINES and COLUMNS:\n%s", s);
    free(s);
    /* Keys raw while it runs: Ctrl-C there reaches the workbench as a key. */
    s = tty_modes(tty);
    T_CHECKF(has_word(s, "-isig") && has_word(s, "-icanon") && has_word(s, "-echo"), "%s", s);
    free(s);
    /* A resize of that terminal sends this process no SIGWINCH; it follows anyway. */
    tmx_cmd(t, NULL, "resize-window -t 0 -x 160 -y 48");
    s = tmx_poll(t, 0, three_columns, NULL, 30);
    T_CHECKF(three_columns(s, NULL) && max_line_width(s) == 160, "at 160x48:\n%s", s);
    free(s);
    tmx_keys(t, "s");
    WAIT(t, "DONE", 180);
    WAIT(t, "done: 1 epochs", 30);
    tmx_keys(t, "C-c");
    WAIT(t, "Interrupted. Quit the workbench?", 30);
    T_CHECKF(tmx_pid(t) > 0 && kill(tmx_pid(t), 0) == 0, "Ctrl-C ended the pane's sleep");
    tmx_keys(t, "n");
    T_CHECK(tmx_wait_gone(t, "Interrupted. Quit the workbench?", 30));
    tmx_keys(t, "q");
    int st = fx_wait_exit(*pid, 60);
    T_EQ_INT(st, 0);
    /* The terminal's modes as they were. */
    s = tty_modes(tty);
    T_CHECKF(has_word(s, "isig") && has_word(s, "icanon") && has_word(s, "echo"), "%s", s);
    free(s);
    /* Nothing on stdout or stderr: it all went to the terminal. */
    check_nothing_written(out, err);
}

TEST(ui_tmux_tty_draws_on_and_reads_keys_from_another_terminal)
{
    T_NEED_TOOL("tmux");
    tmux_srv t = { 0 };
    pid_t pid = -1;
    tty_plain(&t, &pid);
    if (pid > 0)
        fx_wait_exit(pid, 0); /* ended already, or ended now */
    if (t.sock[0])
        tmx_stop(&t);
}

/* The replicas panel's rows of rank k ("│r0 ", "│r1 ", ...). */
static int rank_rows(const char *s, int k)
{
    char row[16];
    snprintf(row, sizeof row, "\xe2\x94\x82r%d ", k);
    return count_of(s, row);
}

static void tty_job(tmux_srv *t, pid_t *pid)
{
    char tty[256];
    T_REQUIRE(tmx_tty_pane(t, 120, 36, tty, sizeof tty) == 0);
    const char *data = fx_dataset(t_tmpdir(), 3, TRAIN, VAL, 0, 32, 20);
    T_REQUIRE(data != NULL);
    const char *dir = t_tmpdir();
    char run[4200], out[4200], err[4200];
    util_path(run, sizeof run, "%s/job", dir);
    util_path(out, sizeof out, "%s/job.out", dir);
    util_path(err, sizeof err, "%s/job.err", dir);
    const char *argv[64];
    int n = 0;
    for (int i = 0; fx_mpirun[i]; i++)
        argv[n++] = fx_mpirun[i];
    const char *const rest[] = { "-np", "2", t_bin(), "--no-sixel", "--tty", tty, "--data", data,
                                 "--out", run, "--replicas", "1", "--batch-per-replica", "4",
                                 "--workers", "1", "--epochs", "2", "--checkpoint-every", "1000",
                                 NULL };
    for (int i = 0; rest[i]; i++)
        argv[n++] = rest[i];
    argv[n] = NULL;
    const char *env[8];
    int m = 0;
    for (; tty_env[m]; m++)
        env[m] = tty_env[m];
    env[m++] = fx_asan_no_leaks(); /* under make SAN=1: see fixtures.h */
    env[m] = NULL;
    *pid = fx_spawn(argv, env, out, err);
    T_REQUIRE(*pid > 0);
    WAIT(t, "IDLE", 120);
    tmx_keys(t, "s");
    WAIT(t, "DONE", 240);
    WAIT(t, "done: 2 epochs", 30);
    /* Every rank's replica, and the time in collectives per update. */
    char *s = tmx_screen(t, 0);
    T_CHECKF(strstr(s, "Replicas 2 on 2 ranks") && rank_rows(s, 0) == 1 && rank_rows(s, 1) == 1,
             "%s", s);
    const char *comm = strstr(s, "  comm ");
    T_CHECKF(comm && isfinite(number_after(comm, "comm ")) && number_after(comm, "comm ") >= 0 &&
                 strstr(comm, " ms/"),
             "no time in collectives:\n%s", s);
    free(s);
    tmx_keys(t, "q");
    T_EQ_INT(fx_wait_exit(*pid, 120), 0);
    /* Rank 0 wrote the run; nothing reached mpirun's output: rank 0's workbench
     * was on the pane, and rank 1 is silent. */
    char hist[4300];
    util_path(hist, sizeof hist, "%s/history.json", run);
    T_CHECK(util_is_file(hist));
    check_nothing_written(out, err);
}

TEST(ui_tmux_tty_is_rank_0s_workbench_in_an_mpirun_job)
{
    T_NEED_TOOL("tmux");
    T_NEED_TOOL("mpirun");
    tmux_srv t = { 0 };
    pid_t pid = -1;
    tty_job(&t, &pid);
    if (pid > 0)
        fx_wait_exit(pid, 0); /* mpirun and its ranks: ended already, or now */
    if (t.sock[0])
        tmx_stop(&t);
}

TEST(ui_tmux_tty_refuses_its_own_terminal_from_the_background)
{
    T_NEED_TOOL("tmux");
    /* `petal-tui --tty $(tty) &` with job control (as mpirun's ranks are, each in a
     * process group of its own): the shell keeps the keys; refused, not a hang. */
    char script[4200];
    util_path(script, sizeof script, "%s/bg.sh", t_tmpdir());
    FILE *f = fopen(script, "w");
    T_REQUIRE(f != NULL);
    fprintf(f, "set -m\n'%s' --no-sixel --tty \"$(tty)\" --data /nonexistent &\nwait $!\n",
            t_bin());
    fclose(f);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "sh '%s'", script);
    tmux_srv t;
    T_REQUIRE(tmx_start(&t, 100, 30, NULL, cmd) == 0);
    T_EQ_INT(tmx_exit_status(&t, 60), 1);
    char *s = tmx_text(&t);
    T_CHECKF(strstr(s, ": this process runs in the background there, which cannot read its "
                       "keys: name another terminal"),
             "%s", s);
    free(s);
    tmx_stop(&t);
}

/* The workbench's learning-rate finder key: L before s shows the finder's curve and
 * suggestion, the c dialog offers it and L there sets lr-max, q and Ctrl-C cancel a
 * finder under way, s then starts the run. */
TEST(ui_tmux_lrfind_key_shows_the_curve_and_the_c_dialog_offers_it)
{
    T_NEED_TOOL("tmux");
    if (t_slow_mode()) {
        t_skip("a hundred updates in the workbench: too slow under valgrind");
        return;
    }
    tmux_srv t;
    char cmd[9000];
    const char *run = t_tmpdir();
    char bin[4096];
    if (!realpath(t_bin(), bin)) /* the pane may start elsewhere */
        snprintf(bin, sizeof bin, "%s", t_bin());
    snprintf(cmd, sizeof cmd, "'%s' --no-sixel --image-size 32 --epochs 1 --out '%s/run'", bin,
             run);
    T_REQUIRE(tmx_start(&t, 120, 40, NULL, cmd) == 0);
    T_REQUIRE(tmx_wait(&t, "IDLE", 60));
    /* q during the finder cancels it, and the workbench stays. */
    tmx_keys(&t, "L");
    T_REQUIRE(tmx_wait(&t, "lr-find: loss against the learning rate", 30));
    tmx_keys(&t, "q");
    T_CHECK(tmx_wait(&t, "lr-find: cancelled after", 60));
    T_CHECK(tmx_wait(&t, "IDLE", 5));
    /* So does Ctrl-C, without the quit question. */
    tmx_keys(&t, "L");
    T_CHECK(tmx_wait(&t, "lr-find started", 30));
    tmx_keys(&t, "C-c");
    T_CHECK(tmx_wait(&t, "Ctrl-C): lr-find", 60));
    T_CHECK(tmx_wait(&t, "lr-find: cancelled after", 60));
    char *q = tmx_screen(&t, 0);
    T_CHECKF(!strstr(q, "Quit the workbench?"), "%s", q);
    free(q);
    tmx_keys(&t, "Escape");
    usleep(300000); /* Esc then L at once would read as Alt-L */
    /* L again: to the end, the chart with its decades and the suggestion. */
    tmx_keys(&t, "L");
    T_REQUIRE(tmx_wait(&t, "suggested --lr-max", 240));
    char *s = tmx_screen(&t, 0);
    T_CHECKF(strstr(s, "1e-7") && strstr(s, "1e-3") && strstr(s, "1e1") && strstr(s, "steepest"),
             "%s", s);
    /* braille dots: the curve */
    T_CHECKF(strstr(s, "\xe2\xa0") || strstr(s, "\xe2\xa1") || strstr(s, "\xe2\xa2") ||
                 strstr(s, "\xe2\xa3"),
             "no braille on the screen:\n%s", s);
    const char *sug = strstr(s, "suggested --lr-max ");
    double lr = sug ? atof(sug + 19) : 0;
    T_CHECKF(lr > 1e-7 && lr < 10, "%s", s);
    free(s);
    /* The c dialog's lr-max row offers it; L there sets it. */
    tmx_keys(&t, "c");
    char offer[96];
    snprintf(offer, sizeof offer, "suggested %.3g (lr-find): L uses it", lr);
    T_CHECK(tmx_wait(&t, offer, 30));
    tmx_keys(&t, "L");
    char set[96];
    snprintf(set, sizeof set, "lr-max              %.3g ", lr);
    T_CHECK(tmx_wait(&t, set, 30));
    T_CHECK(tmx_wait(&t, "changed: a applies", 5));
    tmx_keys(&t, "Escape");
    usleep(300000);
    /* s after it: the run starts; L during it only says why not. */
    tmx_keys(&t, "s");
    T_CHECK(tmx_wait(&t, "RUNNING", 120));
    tmx_keys(&t, "L");
    T_CHECK(tmx_wait(&t, "lr-find is for before a run", 30));
    tmx_keys(&t, "q");
    tmx_wait(&t, "Stop it and quit?", 30);
    tmx_keys(&t, "y");
    T_EQ_INT(tmx_exit_status(&t, 120), 0);
    tmx_stop(&t);
}
