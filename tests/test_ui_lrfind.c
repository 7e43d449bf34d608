/* The workbench's learning-rate finder key as a person uses it: petal-tui in a
 * private, detached tmux server (as test_ui_tmux.c drives it), L before s shows the
 * finder's curve and suggestion, the c dialog offers it and L there sets lr-max, q
 * cancels a finder under way, s then starts the run. */
#include "tests/t.h"

#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/util.h"

typedef struct tmux_srv {
    char sock[1024], conf[1024], dir[1024];
} tmux_srv;

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

/* A server with one cols x rows pane running command; its exit status is written
 * to DIR/status when it ends. */
static int tmx_start(tmux_srv *t, int cols, int rows, const char *command)
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
    if (!(f = fopen(script, "w")))
        return -1;
    fprintf(f, "trap : INT\n%s\necho $? > %s/status.tmp && mv %s/status.tmp %s/status\n", command,
            dir, dir, dir);
    fclose(f);
    return tmx_cmd(t, NULL, "new-session -d -x %d -y %d 'sh %s'", cols, rows, script);
}

static char *tmx_screen(tmux_srv *t)
{
    char *out = NULL;
    tmx_cmd(t, &out, "capture-pane -p -t 0");
    return out ? out : strdup("");
}

static void tmx_keys(tmux_srv *t, const char *keys)
{
    tmx_cmd(t, NULL, "send-keys -t 0 %s", keys);
}

/* Polls the screen until it holds text: 1, or 0 with the screen printed. */
static int tmx_wait(tmux_srv *t, const char *text, double timeout)
{
    double end = util_now() + timeout;
    do {
        char *s = tmx_screen(t);
        int ok = strstr(s, text) != NULL;
        if (ok || util_now() >= end) {
            if (!ok)
                printf("  no \"%s\" on the screen:\n%s\n", text, s);
            free(s);
            return ok;
        }
        free(s);
        usleep(100000);
    } while (1);
}

static int tmx_status(tmux_srv *t, double timeout)
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
    T_REQUIRE(tmx_start(&t, 120, 40, cmd) == 0);
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
    char *q = tmx_screen(&t);
    T_CHECKF(!strstr(q, "Quit the workbench?"), "%s", q);
    free(q);
    tmx_keys(&t, "Escape");
    usleep(300000); /* Esc then L at once would read as Alt-L */
    /* L again: to the end, the chart with its decades and the suggestion. */
    tmx_keys(&t, "L");
    T_REQUIRE(tmx_wait(&t, "suggested --lr-max", 240));
    char *s = tmx_screen(&t);
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
    T_EQ_INT(tmx_status(&t, 120), 0);
    tmx_cmd(&t, NULL, "kill-server");
}
