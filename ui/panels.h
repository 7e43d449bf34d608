/* panels — drawing the workbench's panels from a snapshot, and their keys.
 *
 * Each function draws one panel into its rectangle from a ui_frame (a copy of
 * the engine's state that the app took for this frame, plus the UI's own log and
 * class names) and the view settings (ui_view: focus, zoom, which curve, scroll
 * positions). Drawing never asks the engine anything and never changes the
 * frame; the app collects, the panels draw. The header, the footer with the key
 * hints, the help overlay and the question dialog are here too. The panels of the
 * layout are listed in one table (ui_panel_classes): the app draws them from it
 * and offers each key to their key handlers. What they share is in panels.c;
 * each panel is in a file of its own (panel_*.c).
 *
 * Ownership: nothing is kept between calls; the caller owns the frame, the view
 * and the window.
 */
#ifndef PT_UI_PANELS_H
#define PT_UI_PANELS_H

#include "engine.h"
#include "ui/draw.h"
#include "ui/keys.h"
#include "ui/layout.h"
#include "ui/log.h"
#include "ui/sysmon.h"

enum { UI_METRIC_LOSS = 0, UI_METRIC_ACC, UI_METRIC_F1, UI_METRIC_LR, UI_METRIC_COUNT };

/* The curves' x axis: updates, epochs or wall-clock seconds (RUN_X_*'s order), or
 * the one that fits the runs shown (UI_X_AUTO, until x picks one): updates, unless
 * their update counts differ UI_X_AUTO_RATIO times or more (a Keras run of 23,200
 * beside one of 183), where one would be squeezed into x = 0: then epochs. */
enum { UI_X_AUTO = -1, UI_X_UPDATE = RUN_X_UPDATE, UI_X_EPOCH = RUN_X_EPOCH,
       UI_X_TIME = RUN_X_TIME, UI_X_COUNT = RUN_X_COUNT };
#define UI_X_AUTO_RATIO 10.0

/* Runs compared at once (each has a colour, UI_R_C1 ...). */
#define UI_MAX_COMPARE 6

#define UI_SMOOTH_STEPS 7
extern const double ui_panel_smooth[UI_SMOOTH_STEPS];

typedef struct ui_view {
    int focus;              /* a ui_panel_id */
    int zoom;               /* zoomed panel, or -1 */
    int metric;             /* UI_METRIC_* shown in the curves panel */
    int logy;               /* log scale for loss and lr */
    int smooth;             /* index into ui_panel_smooth */
    int label_bins;         /* 1: bins of classes; 0: a row per class with its name */
    int label_top;          /* first class shown in per-class rows */
    int log_back;           /* log lines scrolled back from the end (0 = follow) */
    int help_top;           /* first line of the help overlay */
    int xaxis;              /* UI_X_* of the curves; UI_X_AUTO at first */
    int cursor;             /* the zoomed curves' value cursor: a column of the plot
                               from its left, or -1 (none); clamped when drawn */
} ui_view;

void ui_panel_view_defaults(ui_view *v);

typedef struct ui_frame {
    const run_snapshot *s;
    const char *const *names;   /* class names, n_names of them; NULL or "" = unknown */
    int n_names;
    const ui_log *log;
    const char *augment;        /* the augmentation spec in use */
    const char *note;           /* a passing message for the footer, or NULL */
    int note_role;
    const char *pix;            /* how pictures are shown ("sixel", ...) */
    int ask_resume;             /* the question offers r (resume) */
    const char *run_dir;        /* the run folder's full path, or where it will be; NULL */
    const ui_sysmon *sys;       /* memory, CPU and load for the header; NULL: none */
    /* runs whose curves go over this one's, read once when they were added */
    const run_figures *const *compare;
    int n_compare;
    const char *opened;         /* --open: the finished run shown; NULL while training */
} ui_frame;

/* Role of the k-th compared run's curves and legend. */
ui_role ui_panel_compare_role(int k);

ui_role ui_panel_state_role(run_state st);
const char *ui_panel_metric_name(int metric);
/* Class k's name from the frame, or "class k" written into buf (n bytes) when
 * it is unknown. */
const char *ui_panel_class_name(const ui_frame *f, int k, char *buf, size_t n);

/* A bar (see ui_chart_bar) drawn in role, its empty part as a dim track when track. */
void ui_panel_bar(WINDOW *w, int y, int x, int width, double frac, ui_role role, int track);

void ui_panel_header(WINDOW *w, ui_rect r, const ui_frame *f);
void ui_panel_footer(WINDOW *w, ui_rect r, const ui_frame *f, ui_ctx ctx);
void ui_panel_replicas(WINDOW *w, ui_rect r, const ui_frame *f, const ui_view *v, int focused);
/* The curves: this run's per-update curve (smoothed, the raw one dotted under it)
 * and per-epoch train and validation figures, the compared runs' per-epoch ones
 * (validation as lines, train as dots, one colour per run) with a legend, on the
 * x axis v->xaxis. Zoomed, v->cursor draws a column and the values of every run
 * there under the plot. */
void ui_panel_curves(WINDOW *w, ui_rect r, const ui_frame *f, const ui_view *v, int focused);
/* The x axis the curves use (UI_X_*, never UI_X_AUTO): v->xaxis, or under UI_X_AUTO
 * the one that fits this run and the compared ones; *ratio is then how many times
 * the most updates exceed the fewest when that chose epochs, else 0. */
int ui_panel_curves_axis(const ui_frame *f, const ui_view *v, double *ratio);
void ui_panel_labels(WINDOW *w, ui_rect r, const ui_frame *f, const ui_view *v, int focused);
/* The labels panel's rows for C classes in at most rows rows (binned: v->label_bins):
 * C, or bins of equal class counts where a divisor of C allows, else of sizes that
 * differ by one; *lo and *hi the fewest and most classes in a bin. */
int ui_panel_label_bins(int C, int rows, int binned, int *lo, int *hi);
void ui_panel_log(WINDOW *w, ui_rect r, const ui_frame *f, const ui_view *v, int focused);
/* The preview panel's frame and title; returns the inside, where the pictures go. */
ui_rect ui_panel_preview(WINDOW *w, ui_rect r, const ui_frame *f, int focused, uint64_t batch);

/* ---- the table of panels ---------------------------------------------------- */

/* What a panel's key handler reads and changes: the view, the frame the keys came
 * with (its snapshot and log), the panel's rectangle in the last layout, and
 * whether it has the focus. A handler that took the key may leave a passing
 * message for the footer in note (note_role its role). */
typedef struct ui_panel_keys {
    ui_view *v;
    const ui_frame *f;
    ui_rect r;
    int focused;
    char note[128];
    int note_role;
} ui_panel_keys;

typedef void (*ui_panel_draw_fn)(WINDOW *w, ui_rect r, const ui_frame *f, const ui_view *v,
                                 int focused);
/* 1 when the panel took the key (act: keys.h's action of the main screen). */
typedef int (*ui_panel_key_fn)(ui_panel_keys *k, ui_act act);

typedef struct ui_panel_class {
    int id;                 /* its ui_panel_id: where the layout puts it and what it is
                               called (ui_layout_name) */
    ui_panel_draw_fn draw;  /* NULL: the app draws it (the preview's pictures need the
                               terminal and the preview copy) */
    ui_panel_key_fn key;    /* NULL: no keys of its own */
} ui_panel_class;

/* The panels in the order they are drawn; n gets their count. */
const ui_panel_class *ui_panel_classes(int *n);

/* The panels' key handlers (in the table): curves (v l x + -, and Left/Right move
 * the value cursor when it is zoomed), labels (b; PgUp/PgDn/Home/End when
 * focused), log (PgUp/PgDn/Home/End when focused). */
int ui_panel_curves_key(ui_panel_keys *k, ui_act act);
int ui_panel_labels_key(ui_panel_keys *k, ui_act act);
int ui_panel_log_key(ui_panel_keys *k, ui_act act);

/* The help overlay, centred, as wide as its longest line within the screen (the
 * descriptions wrap under themselves when narrower), scrolled to v->help_top
 * (clamped; the clamped value is written back). Returns the box. */
ui_rect ui_panel_help(WINDOW *w, int rows, int cols, ui_view *v);

/* A centred box with a title and up to 8 lines, and the keys of ctx under them
 * (with r only when can_resume). Returns the box. */
ui_rect ui_panel_dialog(WINDOW *w, int rows, int cols, const char *title,
                        const char *const *lines, int n, ui_ctx ctx, int can_resume);

/* The note shown on a screen below the minimum size. */
void ui_panel_too_small(WINDOW *w, int rows, int cols);

#endif
