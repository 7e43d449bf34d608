/* app_keys — the workbench's key handling (see app_impl.h): one key at a time,
 * through the modal that is open (help, the quit and Ctrl-C questions, the
 * configure dialog) or else the main screen or the inspect view, looked up in
 * the key table (keys.h) and turned into view changes and engine commands. A
 * panel's own keys are in its file (panels.h's table); the global ones here. */
#include "ui/app_impl.h"

#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ui/settings.h"
#include "ui/inspect.h"
#include "ui/keys.h"
#include "ui/layout.h"
#include "ui/log.h"
#include "ui/panels.h"
#include "ui/preview.h"
#include "ui/term.h"

static void note(app *a, int role, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void note(app *a, int role, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->note, sizeof a->note, fmt, ap);
    va_end(ap);
    a->note_role = role;
    a->note_until = app_now(a) + 4;
}

static int ended(run_state s)
{
    return s == RUN_DONE || s == RUN_FAILED || s == RUN_STOPPED;
}

static int first_visible(const ui_layout *L, int from, int step)
{
    for (int i = 1; i <= UI_P_COUNT; i++) {
        int p = ((from + step * i) % UI_P_COUNT + UI_P_COUNT) % UI_P_COUNT;
        if (ui_layout_visible(L, p))
            return p;
    }
    return from;
}

static void start(app *a)
{
    if (a->opened) {
        note(a, UI_R_WARN, "an opened run is not trained here: petal-tui --resume %s continues it",
             a->opened->path);
        return;
    }
    run_state st = a->snap->state;
    if (app_active(st)) {
        note(a, UI_R_DIM, "the run is already %s", run_state_name(st));
        return;
    }
    if (ended(st)) {
        /* A new run with the same settings. */
        pt_err e;
        run_config c = a->cfg;
        c.resume[0] = 0;
        if (app_make_engine(a, &c, &e) != PT_OK) {
            /* In the log too: the note passes. */
            note(a, UI_R_BAD, "%s", e.msg);
            ui_log_add(a->log, app_now(a), UI_R_BAD, e.msg);
            return;
        }
    }
    if (eng_start(a->g) != PT_OK)
        note(a, UI_R_BAD, "could not start the run");
    else
        ui_log_add(a->log, app_now(a), UI_R_OK, "run started");
    a->int_paused = 0;
}

static void pause_resume(app *a)
{
    run_state st = a->snap->state;
    if (st == RUN_PAUSED) {
        eng_resume(a->g);
        note(a, UI_R_OK, "resumed");
    } else if (st == RUN_RUNNING || st == RUN_PREPARING) {
        eng_pause(a->g);
        note(a, UI_R_WARN, "pausing at the end of this update (a checkpoint is written)");
    } else {
        note(a, UI_R_DIM, "nothing to pause: the run is %s", run_state_name(st));
    }
}

static void quit(app *a, int status)
{
    a->status = status;
    if (a->snap->state != RUN_IDLE && !ended(a->snap->state)) {
        eng_stop(a->g);
        a->stopping = 1;
    } else {
        a->done = 1;
    }
}

/* Space/Enter in the runs list: the selected run into the comparison, or out. */
static void toggle_compared(app *a)
{
    const run_figures *r = ui_runs_selected(&a->runs);
    if (!r)
        return;
    char *rp = realpath(r->path, NULL);
    for (int i = 0; i < a->n_cmp; i++) {
        char *cp = realpath(a->cmp[i]->path, NULL);
        int same = rp && cp && !strcmp(rp, cp);
        free(cp);
        if (!same)
            continue;
        note(a, UI_R_DIM, "%s is no longer compared", a->cmp[i]->name);
        runs_close(a->cmp[i]);
        for (int k = i + 1; k < a->n_cmp; k++)
            a->cmp[k - 1] = a->cmp[k];
        a->n_cmp--;
        free(rp);
        return;
    }
    free(rp);
    if (a->n_cmp >= UI_MAX_COMPARE) {
        note(a, UI_R_WARN, "at most %d runs are compared: take one off first", UI_MAX_COMPARE);
        return;
    }
    pt_err e;
    if (runs_open(r->path, &a->cmp[a->n_cmp], &e) != PT_OK) {
        note(a, UI_R_BAD, "%s", e.msg);
        return;
    }
    note(a, UI_R_OK, "comparing %s", a->cmp[a->n_cmp]->name);
    if (a->cmp[a->n_cmp]->note[0])
        note(a, UI_R_WARN, "%s", a->cmp[a->n_cmp]->note);
    a->n_cmp++;
}

/* The key to the panels' own handlers (panels.h's table); 1 when one took it. */
static int key_panels(app *a, ui_act act)
{
    ui_frame f = { 0 };
    f.s = a->snap;
    f.log = a->log;
    f.compare = (const run_figures *const *)a->cmp; /* the curves' axis follows the runs */
    f.n_compare = a->n_cmp;
    int n;
    const ui_panel_class *pc = ui_panel_classes(&n);
    for (int i = 0; i < n; i++) {
        if (!pc[i].key)
            continue;
        ui_panel_keys k = { &a->view, &f, a->layout.panel[pc[i].id], a->view.focus == pc[i].id,
                            "", UI_R_DIM };
        if (!pc[i].key(&k, act))
            continue;
        if (k.note[0])
            note(a, k.note_role, "%s", k.note);
        return 1;
    }
    return 0;
}

/* The inspect view's keys while it is open; 1 when it took the key. */
static int key_inspect(app *a, ui_act act)
{
    switch (act) {
    case UI_ACT_BACK:
        if (a->insp.cam_open)
            ui_inspect_cam_close(&a->insp);
        else
            a->insp.open = 0;
        return 1;
    case UI_ACT_TOP_LOSSES:
        if (!a->insp.loss_all && a->insp.n > 0)
            note(a, UI_R_WARN, a->opened ? "top losses: a run's folder keeps no losses"
                                         : "top losses: the losses are still being read");
        ui_inspect_key(&a->insp, act);
        return 1;
    case UI_ACT_ZOOM:
        if (!a->insp.cam_open && (a->insp.no_images[0] || ui_inspect_selected(&a->insp) < 0))
            note(a, UI_R_WARN, a->opened ? "Grad-CAM: a run's folder keeps no images (explain "
                                           "RUN IMAGE... makes it headless)"
                                         : "Grad-CAM: no image selected");
        else if (!a->insp.cam_open && a->insp.focus != UI_INSPECT_IMAGES)
            a->insp.focus = UI_INSPECT_IMAGES;
        ui_inspect_key(&a->insp, act);
        return 1;
    case UI_ACT_PGDN: case UI_ACT_PGUP: case UI_ACT_HOME: case UI_ACT_MISTAKES:
    case UI_ACT_SORT: case UI_ACT_UP: case UI_ACT_DOWN: case UI_ACT_NEXT:
    case UI_ACT_LEFT: case UI_ACT_RIGHT: case UI_ACT_FOCUS_NEXT: case UI_ACT_FOCUS_PREV:
    case UI_ACT_PERCENT:
        ui_inspect_key(&a->insp, act);
        return 1;
    default:
        return 0;
    }
}

static void key_main(app *a, int ch);

/* L: the learning-rate finder, before a run; its overlay shows it (and a finished
 * one's curve again). */
static void lrfind(app *a)
{
    run_state st = a->snap->state;
    if (a->opened || app_active(st) || ended(st)) {
        note(a, UI_R_WARN, "lr-find is for before a run: %s",
             a->opened    ? "this one is opened, not trained here"
             : ended(st)  ? "this one has ended (c then a, or s, makes a new one)"
                          : "this one is training");
        return;
    }
    if (a->lrf.state == RUN_LRF_NONE || a->lrf.state == RUN_LRF_STOPPED ||
        a->lrf.state == RUN_LRF_FAILED || a->modal == MODAL_LRFIND) {
        pt_err e;
        if (eng_lrfind_start(a->g, &e) != PT_OK) {
            note(a, UI_R_BAD, "%s", e.msg);
            return;
        }
        ui_log_add(a->log, app_now(a), UI_R_INFO, "lr-find started");
        eng_lrfind_get(a->g, &a->lrf);
    }
    a->modal = MODAL_LRFIND;
}

/* A key in the finder's overlay: q, Esc and Ctrl-C cancel one under way; when it
 * has ended, s and c go on as on the main screen, L runs it again, Esc closes. */
static void key_lrfind(app *a, int ch)
{
    ui_act act = ui_keys_action(UI_CTX_MAIN, ch);
    int active = a->lrf.state == RUN_LRF_PREPARING || a->lrf.state == RUN_LRF_RUNNING;
    if (active) {
        if (act == UI_ACT_QUIT || act == UI_ACT_BACK) {
            eng_lrfind_stop(a->g);
            note(a, UI_R_WARN, "lr-find: cancelling (the run is unchanged)");
        } else {
            note(a, UI_R_DIM, "lr-find is running: q or Esc cancels it");
        }
        return;
    }
    if (act == UI_ACT_START || act == UI_ACT_CONFIG || act == UI_ACT_QUIT || act == UI_ACT_BACK) {
        a->modal = MODAL_NONE;
        if (act != UI_ACT_BACK && act != UI_ACT_QUIT)
            key_main(a, ch);
    } else if (act == UI_ACT_LRFIND) {
        lrfind(a);
    }
}

static void configure(app *a)
{
    if (a->opened) {
        note(a, UI_R_WARN, "an opened run's settings are its own: --resume %s continues it",
             a->opened->path);
    } else if (app_active(a->snap->state)) {
        note(a, UI_R_WARN, "configure is for before a run: q stops this one");
    } else {
        ui_settings_open(&a->cfgd, &a->cfg);
        if (a->lrf.state == RUN_LRF_DONE && a->lrf.found)
            a->cfgd.suggested = a->lrf.lr_max;
        a->modal = MODAL_CONFIG;
    }
}

static void open_runs(app *a)
{
    char dir[4096];
    app_runs_dir(a, dir, sizeof dir);
    ui_runs_scan(&a->runs, dir);
    a->runs.open = 1;
    a->modal = MODAL_RUNS;
}

/* e: the run's trained net as RUN/model.onnx, once it has a checkpoint to export and
 * no update is changing it (ended, paused, or an opened run). */
static void export_run(app *a)
{
    const char *dir = a->opened ? a->opened->path : a->run_dir;
    run_state s = a->snap->state;
    if (!a->opened && !ended(s) && s != RUN_PAUSED) {
        note(a, UI_R_WARN, s == RUN_IDLE ? "export: no run yet (s starts one)"
                                         : "export: the run is training; p pauses it, or "
                                           "export when it has ended");
        return;
    }
    char msg[4600];
    pt_err e;
    if (runs_export_msg(dir, msg, sizeof msg, &e) != PT_OK) {
        ui_log_add(a->log, app_now(a), UI_R_BAD, e.msg);
        note(a, UI_R_BAD, "export failed: see the log");
        return;
    }
    char line[4700];
    snprintf(line, sizeof line, "exported %s", msg);
    ui_log_add(a->log, app_now(a), UI_R_OK, line);
    note(a, UI_R_OK, "exported: the log says where");
}

/* The main screen's keys: the inspect view's while it is open, then the panels'
 * own (each in its file), then the global ones here. */
static void key_main(app *a, int ch)
{
    ui_view *v = &a->view;
    ui_act act = ui_keys_action(a->insp.open ? UI_CTX_INSPECT : UI_CTX_MAIN, ch);
    if ((a->insp.open && key_inspect(a, act)) || key_panels(a, act))
        return;
    switch (act) {
    case UI_ACT_START:
        start(a);
        break;
    case UI_ACT_PAUSE:
        pause_resume(a);
        break;
    case UI_ACT_INSPECT:
        a->insp.open = 1;
        break;
    case UI_ACT_AUGMENT:
        if (v->zoom == UI_P_PREVIEW) {
            v->zoom = -1;
        } else {
            v->zoom = UI_P_PREVIEW;
            v->focus = UI_P_PREVIEW;
        }
        break;
    case UI_ACT_NEXT:
        app_ask_preview(a, a->pv_asked > a->pv.n ? a->pv_asked : a->pv.n);
        break;
    case UI_ACT_CONFIG:
        configure(a);
        break;
    case UI_ACT_FOCUS_NEXT:
    case UI_ACT_FOCUS_PREV:
        v->focus = first_visible(&a->layout, v->focus, act == UI_ACT_FOCUS_NEXT ? 1 : -1);
        break;
    case UI_ACT_UP:
    case UI_ACT_DOWN:
    case UI_ACT_LEFT:
    case UI_ACT_RIGHT: {
        static const ui_dir dir[] = { UI_DIR_UP, UI_DIR_DOWN, UI_DIR_LEFT, UI_DIR_RIGHT };
        v->focus = ui_layout_neighbor(&a->layout, v->focus, dir[act - UI_ACT_UP]);
        break;
    }
    case UI_ACT_ZOOM:
        v->zoom = v->zoom == v->focus ? -1 : v->focus;
        v->cursor = -1;
        break;
    case UI_ACT_BACK:
        v->zoom = -1;
        v->cursor = -1;
        break;
    case UI_ACT_RUNS:
        open_runs(a);
        break;
    case UI_ACT_EXPORT:
        export_run(a);
        break;
    case UI_ACT_LRFIND:
        lrfind(a);
        break;
    case UI_ACT_PGUP: case UI_ACT_PGDN: case UI_ACT_HOME: case UI_ACT_END:
        /* no panel with the focus scrolls */
        note(a, UI_R_DIM, "PgUp/PgDn scroll the labels and log panels");
        break;
    case UI_ACT_REDRAW:
        a->repaint = 1;
        break;
    case UI_ACT_HELP:
        a->modal = MODAL_HELP;
        break;
    case UI_ACT_QUIT:
        if (app_active(a->snap->state))
            a->modal = MODAL_QUIT;
        else
            quit(a, 0);
        break;
    default:
        break;
    }
}

void app_key(app *a, int ch)
{
    if (ch == KEY_RESIZE) {
        int cw, chh;
        if (a->pix == UI_PIX_SIXEL && ui_term_cell_px(a->out, &cw, &chh)) {
            a->pview.cell_w = a->iview.cell_w = cw;
            a->pview.cell_h = a->iview.cell_h = chh;
        }
        ui_preview_hide(&a->pview);
        ui_preview_hide(&a->iview);
        a->repaint = 1;
        return;
    }
    if (a->stopping)
        return;
    if (a->layout.too_small) {
        /* Only the note shows: no key may start or change what cannot be seen. q
         * quits as q then y would (a run stops with its checkpoint); Ctrl-C still
         * asks, and its question shows once the terminal is large enough. */
        if (ui_keys_action(UI_CTX_MAIN, ch) == UI_ACT_QUIT) {
            a->modal = MODAL_NONE;
            quit(a, 0);
        }
        return;
    }
    switch (a->modal) {
    case MODAL_HELP: {
        ui_act act = ui_keys_action(UI_CTX_CONFIG, ch); /* Up/Down/PgUp/PgDn */
        if (act == UI_ACT_UP)
            a->view.help_top--;
        else if (act == UI_ACT_DOWN)
            a->view.help_top++;
        else if (act == UI_ACT_PGUP)
            a->view.help_top -= 10;
        else if (act == UI_ACT_PGDN)
            a->view.help_top += 10;
        else
            a->modal = MODAL_NONE;
        return;
    }
    case MODAL_QUIT:
    case MODAL_INT: {
        ui_act act = ui_keys_action(UI_CTX_ASK, ch);
        int was = a->modal;
        if (act == UI_ACT_YES) {
            a->modal = MODAL_NONE;
            quit(a, was == MODAL_INT ? 130 : 0);
        } else if (act == UI_ACT_NO) {
            a->modal = MODAL_NONE;
        } else if (act == UI_ACT_RESUME && was == MODAL_INT) {
            a->modal = MODAL_NONE;
            if (a->int_paused || a->snap->state == RUN_PAUSED)
                eng_resume(a->g);
            a->int_paused = 0;
        }
        return;
    }
    case MODAL_LRFIND:
        key_lrfind(a, ch);
        return;
    case MODAL_RUNS: {
        ui_act act = ui_keys_action(UI_CTX_RUNS, ch);
        if (act == UI_ACT_BACK) {
            a->modal = MODAL_NONE;
            a->runs.open = 0;
        } else if (act == UI_ACT_TOGGLE) {
            toggle_compared(a);
        } else if (act == UI_ACT_NEXT) {
            ui_runs_scan(&a->runs, a->runs.dir);
        } else {
            ui_runs_key(&a->runs, act);
        }
        return;
    }
    case MODAL_CONFIG: {
        int r = ui_settings_key(&a->cfgd, ch);
        if (r == UI_SETTINGS_CANCEL) {
            a->modal = MODAL_NONE;
        } else if (r == UI_SETTINGS_APPLY) {
            pt_err e;
            if (app_make_engine(a, &a->cfgd.work, &e) != PT_OK) {
                snprintf(a->cfgd.error, sizeof a->cfgd.error, "%s", e.msg);
            } else {
                a->modal = MODAL_NONE;
                ui_log_add(a->log, app_now(a), UI_R_INFO, "configuration applied");
            }
        }
        return;
    }
    default:
        key_main(a, ch);
    }
}

void app_on_interrupt(app *a)
{
    if (a->stopping)
        return;
    if (a->modal == MODAL_INT) {
        /* A second Ctrl-C means it. */
        a->modal = MODAL_NONE;
        quit(a, 130);
        return;
    }
    if (a->lrf.state == RUN_LRF_PREPARING || a->lrf.state == RUN_LRF_RUNNING) {
        /* Ctrl-C during lr-find: the finder is cancelled, nothing is asked. */
        eng_lrfind_stop(a->g);
        ui_log_add(a->log, app_now(a), UI_R_WARN, "interrupted (Ctrl-C): lr-find cancelled");
        return;
    }
    if (a->snap->state == RUN_RUNNING || a->snap->state == RUN_PREPARING) {
        eng_pause(a->g);
        a->int_paused = 1;
    }
    a->modal = MODAL_INT;
    ui_log_add(a->log, app_now(a), UI_R_WARN, "interrupted (Ctrl-C)");
}
