/* app_impl — internals shared by app.c, app_draw.c and app_keys.c, not for other
 * modules.
 *
 * app.c owns the app's life and the loop: it makes the app and its engine,
 * collects from the engine, handles the signals and frees it all (ui_run(), see
 * ui.h). app_draw.c draws the frame and the pictures (app_frame()). app_keys.c
 * turns keys and Ctrl-C into view changes and engine commands (app_key(),
 * app_on_interrupt()).
 *
 * Ownership: one app per ui_run(), calloc'd and freed there (free_app() in
 * app.c). It owns the engine, the snapshot copy, the class names, the log, the
 * preview copy, both picture views and --tty's terminal (its fds and FILEs); the key handling only changes fields in
 * place and replaces the engine through app_make_engine().
 */
#ifndef PT_UI_APP_IMPL_H
#define PT_UI_APP_IMPL_H

#include <stdint.h>
#include <stdio.h>

#include "engine.h"
#include "ui/settings.h"
#include "ui/draw.h"
#include "ui/inspect.h"
#include "ui/layout.h"
#include "ui/log.h"
#include "ui/panels.h"
#include "ui/preview.h"
#include "ui/runlist.h"
#include "ui/sysmon.h"
#include "ui/term.h"
#include "ui/ui.h"

enum { MODAL_NONE = 0, MODAL_HELP, MODAL_QUIT, MODAL_INT, MODAL_CONFIG, MODAL_RUNS, MODAL_LRFIND };

/* Who writes what: app.c makes it (ui_run()), replaces the engine and what came
 * from it (app_make_engine(), also called by the keys for s after a run and for
 * an applied configuration), copies the snapshot, names and preview in
 * (collect()); app_frame() lays out and draws. The keys write the view, the
 * modal, the dialog, the note and the end flags, open and close the inspect
 * view, and ask for a repaint (on a resize they also set the pictures' cell
 * size); the loop reads the end flags. */
typedef struct app {
    run_config cfg;
    ui_options opt;
    eng *g;
    run_snapshot *snap;
    double t0;
    /* class names, copied from the engine once known */
    char (*name)[RUN_NAME_MAX];
    const char *name_ptr[RUN_MAX_CLASSES];
    int n_names;
    double names_at;
    ui_log *log;
    ui_sysmon sys;          /* read in collect(), at most once per UI_SYSMON_PERIOD */
    run_state seen_state;   /* the state of the last snapshot (its end goes to the log) */
    char run_dir_src[4096]; /* what run_dir was made from */
    char run_dir[4600];     /* the run folder's full path, or where it will be */
    /* the terminal: keys from in, the screen and pictures to out; stdin and stdout,
     * or --tty's device (ui_run() opens it once and closes it at the end) */
    int in, out;
    FILE *in_f, *out_f;     /* for newterm() */
    int own_tty;            /* in/out and their FILEs are --tty's, to close */
    ui_view view;           /* the keys; app_frame() moves the focus off a hidden panel */
    ui_layout layout;       /* app_frame(); the keys read it to move the focus and scroll */
    ui_term_caps caps;
    ui_color_mode cmode;
    ui_pix_mode pix;
    char pix_label[64];
    /* preview */
    run_preview pv;
    uint64_t pv_seen;
    int pv_asked;           /* the most images asked for since this engine was made */
    char pv_err[1024];      /* why the latest preview could not be made, or "" */
    ui_preview pview;
    /* inspect */
    ui_inspect insp;
    ui_preview iview;
    /* compared runs (read once each, owned here) and the runs list */
    run_figures *cmp[UI_MAX_COMPARE];
    int n_cmp;
    ui_runs runs;
    /* --open: the finished run shown (its snapshot made once from it); NULL when
     * this workbench trains */
    run_figures *opened;
    char open_nodata[1400]; /* why its data cannot be previewed, or "": the preview
                               panel says so rather than show other data */
    /* the learning-rate finder (L): the engine's latest copy, kept after it ends
     * for the configure dialog's lr-max row */
    run_lrfind lrf;
    /* dialogs */
    int modal;
    int int_paused;         /* Ctrl-C paused the run */
    ui_settings cfgd;
    /* the screen */
    uint64_t scene;
    int repaint;            /* set by the keys and SIGCONT, cleared by app_frame() */
    char note[512];         /* the keys' last message, shown until note_until */
    int note_role;
    double note_until;
    /* the end */
    int stopping;           /* eng_stop() sent; leave when the run has ended */
    int done;
    int status;
} app;

/* app.c */

/* Seconds since the app was made. */
double app_now(const app *a);

/* The run is preparing, running or paused. */
int app_active(run_state s);

/* A new engine for cfg, its run folder checked first (eng_check_run_folder());
 * the old one goes only when the new one exists. */
int app_make_engine(app *a, const run_config *cfg, pt_err *e);

/* Asks the engine for a preview batch of n images (clamped to 1..64). */
void app_ask_preview(app *a, int n);

/* Where the runs list looks: the folder of --open's or --out's run, else runs/. */
void app_runs_dir(const app *a, char *buf, size_t n);

/* app_draw.c */

/* Lay out and draw one frame from the app's copies, then flush curses and the
 * pictures (a full repaint when asked for or when the scene changed). */
void app_frame(app *a);

/* app_keys.c */

/* One key from curses (Ctrl-C comes through app_on_interrupt()). */
void app_key(app *a, int ch);

/* Ctrl-C, as a signal or a key: pause the run and ask; a second one quits. */
void app_on_interrupt(app *a);

#endif
