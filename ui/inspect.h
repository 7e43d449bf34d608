/* inspect — the validation view (`i`): validation images with their true and
 * predicted class, marked OK, or NO in red as the notebooks' display_batch_of_
 * images does; a filter for mistakes only; the list ordered by loss, highest first
 * (fastai's top losses); a selected image (Left/Right) whose Grad-CAM Enter shows;
 * per-class precision, recall and F1;
 * the confusion matrix as a heat map (true class by row, predicted by column;
 * counts, or percentages of each row) beside the most confused class pairs.
 * Tab moves the focus between the images, the per-class table and the matrix;
 * the arrows and PgUp/PgDn act on the focused part, so a matrix of 104 classes
 * is read by scrolling.
 *
 * Data collection apart from drawing: ui_inspect_work() copies from the engine,
 * once per frame, the latest validation report, the label and prediction of
 * every validation example (needed for the mistakes filter) and the images of the
 * page on screen as the engine's sample thread loads them (it never waits for a
 * file); ui_inspect_draw() draws only what was collected. A new epoch's results
 * restart the collection.
 *
 * Ownership: ui_inspect_init() / ui_inspect_free(); the report and the page's
 * items are the engine's copies, freed here.
 */
#ifndef PT_UI_INSPECT_H
#define PT_UI_INSPECT_H

#include "engine.h"
#include "ui/keys.h"
#include "ui/panels.h"
#include "ui/preview.h"

#define UI_INSPECT_PAGE_MAX 48

typedef struct ui_inspect_pair {
    int truth, pred;
    long long count;
} ui_inspect_pair;

/* The off-diagonal cells of a k x k confusion matrix ([true][pred]) with the
 * largest counts, largest first (ties: lower true class, then lower predicted);
 * zero counts are left out. Returns how many were written (<= max). */
int ui_inspect_confusions(const long long *confusion, int k, ui_inspect_pair *out, int max);

/* Class indices in table order: by class, or by F1 from the worst (ties by
 * class). order has k entries. */
void ui_inspect_order(const double *f1, int k, int by_f1, int *order);

/* One cell of a k x k confusion matrix ([true][pred]) as the heat map shows it:
 * its text ("12", or with percent the share of the true class's row, "45"; "."
 * for none) and its heat, 0 (none) to 5, relative to the largest count off the
 * diagonal or on it (counts), or to the whole row (percent). */
int ui_inspect_cm_cell(const long long *confusion, int k, int truth, int pred, int percent,
                       char *text, size_t n);

enum { UI_INSPECT_IMAGES = 0, UI_INSPECT_TABLE, UI_INSPECT_MATRIX, UI_INSPECT_PARTS };

typedef struct ui_inspect {
    int open;
    int focus;                  /* UI_INSPECT_IMAGES, _TABLE or _MATRIX */
    int mistakes;               /* show mistakes only */
    int by_loss;                /* the list ordered by loss, highest first */
    int by_f1;                  /* per-class table sorted by F1 */
    int table_top, table_rows;  /* first row shown; rows that fit (last draw) */
    int percent;                /* the matrix in percentages of each row */
    int cm_top, cm_left;        /* first true class (row) and predicted class shown */
    int cm_rows, cm_cols;       /* how many fit (last draw) */
    long long pos;              /* first entry of the list shown */
    int per_page;               /* images that fit, from the last draw */
    int seen_history;           /* snapshot history_n the report belongs to */
    run_val_report rep;         /* epoch 0: no validation yet */
    /* validation examples: n in all, scanned of them with label and prediction
     * read; the indices of the mistakes among those, in order */
    long long n, scanned;
    int *wrong;
    long long n_wrong;
    /* each example's loss (NULL: not known, as in an opened run) and the list's
     * two orders by loss: all examples, and the mistakes */
    float *loss;
    int *loss_all, *loss_wrong;
    long long sel;              /* the selected list position */
    /* the Grad-CAM view of the selected image (Enter; inspect_cam.c): cam_state 0
     * while asked for, 1 shown, -1 failed (cam_err says why) */
    int cam_open, cam_state;
    long long cam_index;
    run_explain cam;
    char cam_err[1024];
    uint64_t cam_id;            /* changes whenever cam's pictures change */
    /* the page on screen: n_slots images asked for, the first n_items of them
     * loaded (drawn); loaded[i] when item[i] holds a copy (or a failed read) */
    run_val_item item[UI_INSPECT_PAGE_MAX];
    long long item_index[UI_INSPECT_PAGE_MAX];
    int loaded[UI_INSPECT_PAGE_MAX];
    int n_slots, n_items;
    long long page_pos;
    int page_key;               /* what the page was fetched for */
    uint64_t page_id;           /* changes whenever the page's images change */
    char err[1024];
    char no_images[512];        /* why there are no images to show (an opened run), or "" */
} ui_inspect;

void ui_inspect_init(ui_inspect *v);
void ui_inspect_free(ui_inspect *v);

/* Collect from the engine. history_n: the snapshot's count of finished epochs
 * (a change means new results). */
void ui_inspect_work(ui_inspect *v, eng *g, int history_n);

/* Results read from a finished run's folder (--open) instead of the engine: the
 * report (taken over: freed here) and every label and prediction (copied). The
 * folder keeps no images: the images part shows no_images instead. */
void ui_inspect_set_results(ui_inspect *v, run_val_report *rep, const int *labels,
                            const int *preds, long long n, const char *no_images);

/* The validation index of the selected image (-1 when there is none). */
long long ui_inspect_selected(const ui_inspect *v);

/* Number of entries in the list shown (all, or the mistakes found so far). */
long long ui_inspect_count(const ui_inspect *v);

/* A key of the inspect context (paging, filter, sort, table scroll). */
void ui_inspect_key(ui_inspect *v, ui_act a);

/* The Grad-CAM view (inspect_cam.c): open it on the selected image (0 when there
 * is none: a run's folder keeps no images), close it, follow the selection, collect
 * from the engine (called by ui_inspect_work) and draw it inside the images' box. */
int ui_inspect_cam_open(ui_inspect *v);
void ui_inspect_cam_close(ui_inspect *v);
void ui_inspect_cam_follow(ui_inspect *v);
void ui_inspect_cam_work(ui_inspect *v, eng *g);
void ui_inspect_cam_draw(ui_inspect *v, WINDOW *w, ui_rect in, const ui_frame *f, ui_preview *pv);

/* Draw the view into body; the images go through pv (mode set by the app). */
void ui_inspect_draw(ui_inspect *v, WINDOW *w, ui_rect body, const ui_frame *f, ui_preview *pv);

#endif
