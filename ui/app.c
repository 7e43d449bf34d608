/* The workbench's main loop (see ui.h). Collect (snapshot, log, names, preview,
 * inspect data), draw (app_draw.c: panels from the copies, then curses and the
 * pictures flushed), read keys (handled in app_keys.c) and signals; about ten
 * times a second. */
#include "ui/ui.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/util.h"
#include "ui/app_impl.h"
#include "ui/chart.h"
#include "ui/settings.h"
#include "ui/draw.h"
#include "ui/inspect.h"
#include "ui/keys.h"
#include "ui/layout.h"
#include "ui/log.h"
#include "ui/rowmove.h"
#include "ui/panels.h"
#include "ui/preview.h"
#include "ui/term.h"

#define TICK 0.1            /* seconds between frames */

static volatile sig_atomic_t g_sig_int, g_sig_hup, g_sig_cont;

static void on_int(int s)
{
    (void)s;
    g_sig_int = 1;
}

static void on_hup(int s)
{
    (void)s;
    g_sig_hup = 1;
}

static void on_cont(int s)
{
    (void)s;
    g_sig_cont = 1;
}

double app_now(const app *a)
{
    return util_now() - a->t0;
}

int app_active(run_state s)
{
    return s == RUN_PREPARING || s == RUN_RUNNING || s == RUN_PAUSED;
}

/* A new engine for cfg, its run folder checked first (eng_check_run_folder());
 * the old one goes only when the new one exists. */
int app_make_engine(app *a, const run_config *cfg, pt_err *e)
{
    eng *g;
    /* Every engine here is for a run the user may start: its folder is checked
     * now, not when s fails. */
    int rc = eng_check_run_folder(cfg, e);
    if (rc == PT_OK)
        rc = eng_create(cfg, &g, e);
    if (rc != PT_OK)
        return rc;
    if (a->g)
        eng_destroy(a->g);
    a->g = g;
    a->cfg = *cfg;
    run_preview_free(&a->pv);
    a->pv_seen = 0;
    a->pv_asked = 0;
    a->n_names = 0;
    a->names_at = -1;
    ui_inspect_free(&a->insp);
    int open = a->insp.open;
    ui_inspect_init(&a->insp);
    a->insp.open = open;
    ui_preview_hide(&a->pview);
    ui_preview_hide(&a->iview);
    a->pv_err[0] = '\0';
    memset(&a->lrf, 0, sizeof a->lrf); /* lr-find's suggestion was for the old settings */
    eng_snapshot_get(a->g, a->snap);
    /* Warnings about the settings stay in the log, in the warning colour, and
     * the first shows in the footer for a while. */
    const char *warn = eng_warnings(a->g);
    if (*warn) {
        util_fmt(a->note, sizeof a->note, "%.*s", (int)strcspn(warn, "\n"), warn);
        a->note_role = UI_R_WARN;
        a->note_until = app_now(a) + 10;
    }
    for (const char *w = warn; *w;) {
        char line[1100];
        int len = (int)strcspn(w, "\n");
        util_fmt(line, sizeof line, "%.*s", len, w);
        ui_log_add(a->log, app_now(a), UI_R_WARN, line);
        w += len + (w[len] == '\n');
    }
    return PT_OK;
}

/* ---- collect -------------------------------------------------------------------- */

/* The run folder in full: the snapshot's once the run has made it, else the one
 * --resume or --out names, else where runs go. Worked out when its source
 * changes, not every frame. */
static void run_folder(app *a)
{
    const run_snapshot *s = a->snap;
    const char *src = s->run_dir[0] ? s->run_dir : a->cfg.resume[0] ? a->cfg.resume : a->cfg.out;
    if (a->run_dir[0] && !strcmp(src, a->run_dir_src))
        return;
    util_copy(a->run_dir_src, sizeof a->run_dir_src, src);
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        util_copy(cwd, sizeof cwd, ".");
    char *real = src[0] ? realpath(src, NULL) : NULL;
    if (real)
        util_fmt(a->run_dir, sizeof a->run_dir, "%s", real);
    else if (src[0] == '/')
        util_fmt(a->run_dir, sizeof a->run_dir, "%s", src);
    else if (src[0])
        util_fmt(a->run_dir, sizeof a->run_dir, "%s/%s", cwd,
                 strncmp(src, "./", 2) ? src : src + 2);
    else
        util_fmt(a->run_dir, sizeof a->run_dir, "made when the run starts, in %s/runs", cwd);
    free(real);
}

static void collect(app *a)
{
    /* An opened run's snapshot was made once from its folder (open_run()). */
    if (!a->opened)
        eng_snapshot_get(a->g, a->snap);
    char line[1200];
    while (eng_log_pop(a->g, line, sizeof line))
        ui_log_add(a->log, app_now(a), -1, line);
    /* How the run ended goes to the log too, where it is read in full (the
     * footer has one line). */
    run_state st = a->snap->state;
    if (st != a->seen_state && (st == RUN_DONE || st == RUN_STOPPED || st == RUN_FAILED) &&
        a->snap->message[0]) {
        const ui_log_line *last = a->log->n ? ui_log_get(a->log, a->log->n - 1) : NULL;
        if (!last || strcmp(last->text, a->snap->message) != 0)
            ui_log_add(a->log, app_now(a), st == RUN_DONE ? UI_R_OK : -1, a->snap->message);
    }
    a->seen_state = st;
    run_folder(a);
    ui_sysmon_update(&a->sys, app_now(a), UI_SYSMON_PERIOD);
    /* Names appear once the data is open (a preview or the label scan). */
    int want = a->snap->n_classes > a->snap->label_classes ? a->snap->n_classes
                                                           : a->snap->label_classes;
    int settled = a->n_names >= want && a->n_names > 0 && a->snap->state > RUN_PREPARING;
    for (int k = 0; settled && k < a->n_names; k++)
        settled = a->name[k][0] != 0;
    if (!settled && app_now(a) - a->names_at >= 1.0) {
        a->names_at = app_now(a);
        int k = 0;
        for (; k < RUN_MAX_CLASSES; k++) {
            const char *n = eng_class_name(a->g, k);
            if (!n)
                break;
            snprintf(a->name[k], RUN_NAME_MAX, "%s", n);
            a->name_ptr[k] = a->name[k];
        }
        a->n_names = k;
    }
    run_preview nv;
    if (eng_preview_get(a->g, &a->pv_seen, &nv)) {
        run_preview_free(&a->pv);
        a->pv = nv;
    }
    pt_err pe;
    if (eng_preview_error(a->g, &pe))
        util_copy(a->pv_err, sizeof a->pv_err, pe.msg);
    else
        a->pv_err[0] = '\0';
    if (a->insp.open && a->modal == MODAL_NONE && !a->opened)
        ui_inspect_work(&a->insp, a->g, a->snap->history_n);
}

/* ---- --open ----------------------------------------------------------------------- */

static void open_log_line(void *ctx, const char *line)
{
    app *a = ctx;
    ui_log_add(a->log, app_now(a), -1, line);
}

/* The opened run's class names, from its classes.txt (what it was trained with,
 * whatever its data folder now holds): its class count before any results. */
static void open_names(app *a, const char *dir)
{
    char **lines;
    int n;
    if (runs_class_names(dir, &lines, &n, NULL) != PT_OK)
        return;
    int k = n < RUN_MAX_CLASSES ? n : RUN_MAX_CLASSES;
    for (int i = 0; i < k; i++) {
        util_fmt(a->name[i], RUN_NAME_MAX, "%s", lines[i]);
        a->name_ptr[i] = a->name[i];
    }
    util_free_list(lines, n);
    if (k < 2)
        return; /* not a run's list of classes */
    a->n_names = k;
    if (a->snap->n_classes <= 0)
        a->snap->n_classes = k;
}

/* The opened run's replica count is its config's: the engine made for its
 * previews would put this machine's count for "auto" (0), which need not be the
 * one the run had; then the update size is not known either. */
static void opened_replicas(app *a)
{
    int n = 0;
    for (int i = 0; i < a->opened->n_opts; i++)
        if (strcmp(a->opened->opt[i].key, "replicas") == 0)
            n = atoi(a->opened->opt[i].value);
    if (n <= 0) {
        a->snap->replicas = 0;
        a->snap->update_size = 0;
    }
}

/* --open RUN_DIR: read the run; an engine for its configuration (class names and
 * the augmentation preview of its data), never started; the snapshot, the log and
 * the inspect view's results from the folder. */
static int open_run(app *a, const run_config *cfg, const char *dir, pt_err *e)
{
    int rc = runs_open(dir, &a->opened, e);
    if (rc != PT_OK)
        return rc;
    run_config c = *cfg;
    char path[4200];
    char why[1200] = "";
    pt_err ce;
    if (runs_config_path(dir, path, sizeof path) == 1 && runs_read_config(dir, &c, &ce) != PT_OK) {
        util_fmt(why, sizeof why, "the run's configuration cannot be read (%s)", ce.msg);
        c = *cfg;
    }
    c.out[0] = c.resume[0] = '\0';
    if (app_make_engine(a, &c, &ce) != PT_OK) {
        util_fmt(why, sizeof why, "the run's data cannot be opened (%s)", ce.msg);
        c = *cfg;
        c.out[0] = c.resume[0] = '\0';
        if ((rc = app_make_engine(a, &c, e)) != PT_OK)
            return rc;
    }
    eng_run_snapshot(a->opened, a->snap);
    opened_replicas(a);
    open_names(a, dir);
    if (runs_log_lines(dir, open_log_line, a, &ce) < 0)
        ui_log_add(a->log, app_now(a), UI_R_DIM, "no log.txt in the run's folder");
    if (a->opened->note[0])
        ui_log_add(a->log, app_now(a), UI_R_WARN, a->opened->note);
    char stale[9000];
    if (runs_export_stale(dir, stale, sizeof stale))
        ui_log_add(a->log, app_now(a), UI_R_WARN, stale);
    if (why[0]) {
        /* Not the default data's pictures under this run's name: none, and why. */
        util_copy(a->open_nodata, sizeof a->open_nodata, why);
        char m[1400];
        util_fmt(m, sizeof m, "%s: no preview", why);
        ui_log_add(a->log, app_now(a), UI_R_WARN, m);
    }
    run_val_report rep;
    int *lab, *pred;
    long long n;
    if (runs_val_load(dir, 0, &rep, &lab, &pred, &n, &ce) == PT_OK) {
        a->snap->n_classes = rep.n_classes;
        ui_inspect_set_results(&a->insp, &rep, lab, pred, n,
                               "The run's folder keeps no images: inspect shows the last "
                               "epoch's per-class scores and confusion matrix, from "
                               "valid_labels.json and valid_preds.jsonl.");
        free(lab);
        free(pred);
    } else if (ce.code != PT_ENODATA) {
        ui_log_add(a->log, app_now(a), UI_R_WARN, ce.msg);
    }
    return PT_OK;
}

void app_ask_preview(app *a, int n)
{
    if (a->open_nodata[0])
        return;
    if (n < 1)
        n = 1;
    if (n > 64)
        n = 64;
    eng_preview_request(a->g, n);
    if (n > a->pv_asked)
        a->pv_asked = n;
}

/* ---- set-up --------------------------------------------------------------------- */

/* The terminal: stdin and stdout, or --tty's device, opened once for keys and the
 * screen. O_NOCTTY: it must not become this process's controlling terminal (whose
 * hang-up and job-control signals would then come here); O_NONBLOCK only while
 * opening (a serial line would wait for its carrier). 0, or 1 with the message
 * printed: a usage error. */
static int open_terminal(app *a)
{
    a->in = STDIN_FILENO;
    a->out = STDOUT_FILENO;
    a->in_f = stdin;
    a->out_f = stdout;
    const char *path = a->opt.tty;
    if (!path)
        return 0;
    int fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) /* what was meant is still a terminal */
            fprintf(stderr, "petal-tui: %s: not a terminal\n", path);
        else
            fprintf(stderr, "petal-tui: %s: cannot open it: %s\n", path, strerror(errno));
        return 1;
    }
    if (!isatty(fd)) {
        fprintf(stderr, "petal-tui: %s: not a terminal\n", path);
        close(fd);
        return 1;
    }
    /* This process's own terminal, with another job in its foreground (`petal-tui
     * --tty $(tty) &`, or mpirun's ranks, each in a process group of its own): its
     * reads would stop the process or fail, and its keys belong to that job. */
    pid_t fg = tcgetpgrp(fd);
    if (fg > 0 && fg != getpgrp()) {
        fprintf(stderr, "petal-tui: %s: this process runs in the background there, which "
                        "cannot read its keys: name another terminal, one running `sleep "
                        "infinity`\n", path);
        close(fd);
        return 1;
    }
    int flags = fcntl(fd, F_GETFL);
    int out = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    FILE *fin = NULL, *fout = NULL;
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 || out < 0 ||
        !(fin = fdopen(fd, "r")) || !(fout = fdopen(out, "w"))) {
        fprintf(stderr, "petal-tui: %s: cannot use it: %s\n", path, strerror(errno));
        if (fin)
            fclose(fin);
        else
            close(fd);
        if (out >= 0)
            close(out);
        return 1;
    }
    a->in = fd;
    a->out = out;
    a->in_f = fin;
    a->out_f = fout;
    a->own_tty = 1;
    return 0;
}

static void close_terminal(app *a)
{
    if (!a->own_tty)
        return;
    fclose(a->in_f);
    fclose(a->out_f);
    a->own_tty = 0;
}

/* A resize of a terminal that is not this process's controlling one sends no
 * SIGWINCH here: its size is read each turn, and a change resizes curses, which
 * queues KEY_RESIZE as the signal would. */
static void follow_size(const app *a)
{
    struct winsize ws;
    if (ioctl(a->out, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0 &&
        (ws.ws_row != LINES || ws.ws_col != COLS))
        resizeterm(ws.ws_row, ws.ws_col);
}

static ui_color_mode color_mode(const ui_options *opt)
{
    const char *nc = getenv("NO_COLOR");
    if (opt->no_color || (nc && *nc) || !has_colors())
        return UI_COLOR_NONE;
    if (start_color() != OK)
        return UI_COLOR_NONE;
    use_default_colors();
    const char *ct = getenv("COLORTERM");
    if (ct && (strstr(ct, "truecolor") || strstr(ct, "24bit")))
        return UI_COLOR_DIRECT;
    return COLORS >= 256 ? UI_COLOR_256 : UI_COLOR_8;
}

static void pick_pictures(app *a)
{
    if (a->caps.sixel && !a->opt.no_sixel) {
        a->pix = UI_PIX_SIXEL;
        snprintf(a->pix_label, sizeof a->pix_label, "sixel");
    } else {
        a->pix = a->cmode == UI_COLOR_DIRECT ? UI_PIX_DIRECT
                 : a->cmode == UI_COLOR_256  ? UI_PIX_256
                                             : UI_PIX_ASCII;
        snprintf(a->pix_label, sizeof a->pix_label, "%s", ui_preview_mode_name(a->pix));
    }
    uint8_t bg[3] = { 0, 0, 0 };
    if (a->caps.bg_known)
        memcpy(bg, a->caps.bg, 3);
    ui_preview_init(&a->pview, a->pix, a->caps.cell_w, a->caps.cell_h, a->caps.sixel_colors,
                    a->caps.sixel_max_w, bg);
    ui_preview_init(&a->iview, a->pix, a->caps.cell_w, a->caps.cell_h, a->caps.sixel_colors,
                    a->caps.sixel_max_w, bg);
    char m[300];
    if (a->pix == UI_PIX_SIXEL)
        snprintf(m, sizeof m, "pictures: sixel, %d colours, %dx%d-pixel cells", a->caps.sixel_colors,
                 a->caps.cell_w, a->caps.cell_h);
    else
        snprintf(m, sizeof m, "pictures: %s (sixel: %s)", ui_preview_mode_name(a->pix),
                 a->caps.why[0] ? a->caps.why : "no");
    ui_log_add(a->log, app_now(a), UI_R_DIM, m);
}

void app_runs_dir(const app *a, char *buf, size_t n)
{
    const char *run = a->opt.open ? a->opt.open : a->cfg.resume[0] ? a->cfg.resume : a->cfg.out;
    if (!run[0]) {
        util_copy(buf, n, "runs");
        return;
    }
    size_t len = strlen(run);
    while (len > 1 && run[len - 1] == '/')
        len--;
    size_t at = len;
    while (at > 0 && run[at - 1] != '/')
        at--;
    if (at == 0)
        util_copy(buf, n, ".");
    else
        util_fmt(buf, n, "%.*s", (int)(at > 1 ? at - 1 : 1), run);
}

static void free_app(app *a)
{
    close_terminal(a);
    for (int i = 0; i < a->n_cmp; i++)
        runs_close(a->cmp[i]);
    runs_close(a->opened);
    ui_runs_free(&a->runs);
    ui_preview_free(&a->pview);
    ui_preview_free(&a->iview);
    ui_inspect_free(&a->insp);
    run_preview_free(&a->pv);
    if (a->g)
        eng_destroy(a->g);
    free(a->snap);
    free(a->name);
    free(a->log);
    free(a);
}

/* eng_warnings()'s lines on stderr, each in the message form. Before the screen
 * opens, so they are there to read again after it closes. */
static void print_warnings(const char *w)
{
    while (*w) {
        int len = (int)strcspn(w, "\n");
        fprintf(stderr, "petal-tui: %.*s\n", len, w);
        w += len + (w[len] == '\n');
    }
}

/* How the workbench ends, told after the screen is restored (so it stays on the
 * terminal) and in the exit status: a failed run (2, as --headless) or a run
 * stopped after a non-finite loss (3) outrank how the user left; otherwise
 * status as the keys or signals set it. */
static int report_end(app *a, int status, int hung_up)
{
    pt_err e;
    eng_snapshot_get(a->g, a->snap);
    const run_snapshot *s = a->snap;
    if (eng_failure(a->g, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return 2;
    }
    if (s->state == RUN_STOPPED && s->nonfinite_at > 0) {
        fprintf(stderr, "petal-tui: %s\n", s->message);
        return 3;
    }
    if (!hung_up && s->last_checkpoint[0] && a->stopping)
        fprintf(stderr, "petal-tui: checkpoint written: %s\n", s->last_checkpoint);
    return status;
}

/* What the engine can check (options, the dataset, the run folder) and --compare's
 * runs (one that cannot be read is refused), before the screen opens, with the
 * exit status --headless gives; then that there is a terminal. 0, or the status. */
static int prepare(app *a, const run_config *cfg, const ui_options *opt)
{
    pt_err e;
    int rc = opt->open ? open_run(a, cfg, opt->open, &e) : app_make_engine(a, cfg, &e);
    if (rc != PT_OK) {
        fprintf(stderr, "petal-tui: %s\n", e.msg);
        return rc == PT_EUSAGE ? 1 : 2;
    }
    for (int i = 0; i < opt->n_compare && a->n_cmp < UI_MAX_COMPARE; i++) {
        if (runs_open(opt->compare[i], &a->cmp[a->n_cmp], &e) != PT_OK) {
            fprintf(stderr, "petal-tui: %s\n", e.msg);
            return 2;
        }
        if (a->cmp[a->n_cmp]->note[0])
            ui_log_add(a->log, app_now(a), UI_R_WARN, a->cmp[a->n_cmp]->note);
        a->n_cmp++;
    }
    if (!isatty(a->in) || !isatty(a->out)) {
        fprintf(stderr, "petal-tui: the workbench needs a terminal; --headless trains without one\n");
        return 1;
    }
    return 0;
}

/* The screen: the terminal asked first (before curses reads the keyboard), then
 * curses on it, its colours and how pictures are shown. NULL with the message
 * printed when the terminal type is unusable. */
static SCREEN *open_screen(app *a, const ui_options *opt)
{
    ui_term_probe(a->in, a->out, !opt->no_sixel, 0.5, &a->caps);
    setlocale(LC_ALL, "");
    /* LINES and COLUMNS in the environment are the size of the terminal that
     * started this one, not of --tty's. */
    if (a->own_tty)
        use_env(FALSE);
    SCREEN *scr = newterm(NULL, a->out_f, a->in_f);
    if (!scr) {
        fprintf(stderr, "petal-tui: cannot use terminal type '%s'\n",
                getenv("TERM") ? getenv("TERM") : "(unset)");
        return NULL;
    }
    set_term(scr);
    /* On --tty's terminal every key is the workbench's: Ctrl-C, Ctrl-Z and Ctrl-\ come
     * as keys rather than as signals to whatever holds that terminal. */
    if (a->own_tty)
        raw();
    else
        cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    a->cmode = color_mode(opt);
    const char *cs = nl_langinfo(CODESET);
    ui_draw_setup(a->cmode, cs && !strcmp(cs, "UTF-8"));
    pick_pictures(a);
    return scr;
}

/* The signals the loop handles, and the handlers they had before (put back by
 * restore_signals()). */
typedef struct saved_signals {
    struct sigaction intr, hup, term, cont;
} saved_signals;

static void catch_signals(saved_signals *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_int;
    sigaction(SIGINT, &sa, &old->intr);
    sa.sa_handler = on_hup;
    sigaction(SIGHUP, &sa, &old->hup);
    sigaction(SIGTERM, &sa, &old->term);
    sa.sa_handler = on_cont;
    sigaction(SIGCONT, &sa, &old->cont);
    g_sig_int = g_sig_hup = g_sig_cont = 0;
}

static void restore_signals(const saved_signals *old)
{
    sigaction(SIGINT, &old->intr, NULL);
    sigaction(SIGHUP, &old->hup, NULL);
    sigaction(SIGTERM, &old->term, NULL);
    sigaction(SIGCONT, &old->cont, NULL);
}

/* Keys and signals until the workbench ends: about ten frames a second, and one
 * after any key. 1 when the terminal hung up. */
static int loop(app *a)
{
    double next = 0;
    collect(a);
    while (!a->done) {
        follow_size(a);
        double t = util_now();
        int wait_ms = next > t ? (int)((next - t) * 1000) + 1 : 0;
        wtimeout(stdscr, wait_ms > 100 ? 100 : wait_ms);
        int ch = wgetch(stdscr);
        int keyed = 0;
        /* Several keys may be waiting (a paste, key repeat): take them all. */
        for (int i = 0; ch != ERR && i < 64; i++) {
            if (ch == ('c' & 0x1f))
                g_sig_int = 1; /* in case the terminal sends ^C as a key */
            else
                app_key(a, ch);
            keyed = 1;
            wtimeout(stdscr, 0);
            ch = wgetch(stdscr);
        }
        /* A terminal lost without a SIGHUP (ignored, or caught by a parent; the
         * pty closed) reads EOF or EIO at once, which curses reports as no key:
         * the loop would spin and the run train on unseen. It is a hang-up. */
        if (g_sig_hup || (ch == ERR && ui_term_gone(a->in)))
            return 1;
        if (g_sig_int) {
            g_sig_int = 0;
            app_on_interrupt(a);
            keyed = 1;
        }
        if (g_sig_cont) {
            g_sig_cont = 0;
            a->repaint = 1;
            keyed = 1;
        }
        if (a->stopping && eng_wait(a->g, 0))
            break;
        if (a->done)
            break;
        if (keyed || util_now() >= next) {
            collect(a);
            app_frame(a);
            next = util_now() + TICK;
        }
    }
    return 0;
}

int ui_run(const run_config *cfg, const ui_options *opt)
{
    app *a = calloc(1, sizeof *a);
    if (!a)
        return 1;
    a->t0 = util_now();
    a->opt = *opt;
    a->snap = calloc(1, sizeof *a->snap);
    a->name = calloc(RUN_MAX_CLASSES, sizeof *a->name);
    a->log = malloc(sizeof *a->log);
    if (!a->snap || !a->name || !a->log) {
        free_app(a);
        fprintf(stderr, "petal-tui: out of memory\n");
        return 1;
    }
    ui_log_init(a->log);
    ui_sysmon_init(&a->sys);
    ui_runs_init(&a->runs);
    ui_panel_view_defaults(&a->view);
    ui_inspect_init(&a->insp);
    /* --tty's terminal first: a wrong PATH is a usage error, said before the
     * dataset is read. */
    int rc = open_terminal(a);
    if (rc == 0)
        rc = prepare(a, cfg, opt);
    if (rc != 0) {
        free_app(a);
        return rc;
    }
    print_warnings(eng_warnings(a->g));
    SCREEN *scr = open_screen(a, opt);
    if (!scr) {
        free_app(a);
        return 1;
    }
    saved_signals old;
    catch_signals(&old);
    int hung_up = loop(a);
    if (hung_up) {
        /* The terminal may be gone: nothing more is drawn. The engine finishes
         * the update and writes the checkpoint; then leave. */
        eng_stop(a->g);
        eng_wait(a->g, -1);
        a->status = 130;
    }
    endwin();
    delscreen(scr);
    ui_rows_free();
    restore_signals(&old);
    int status = report_end(a, a->status, hung_up);
    free_app(a);
    return status;
}
