/* runlist — the runs list (r): the run folders in one folder (runs/, or the one the
 * run's --out or --open lies in) with model, dataset, date, epochs, best
 * validation F1 and the options that differ between them; sorted by a column the
 * user picks; the selected run goes into the curves' comparison or out of it.
 *
 * The folder is read when the list opens (and on n), never per frame: the rows
 * are the summaries runs_scan (core/runs.h) made then. Drawing only reads
 * them.
 *
 * Ownership: ui_runs_init() / ui_runs_free(); the runs read belong to the list.
 * The app's compared runs are separate copies (runs_open()) it owns.
 */
#ifndef PT_UI_RUNS_H
#define PT_UI_RUNS_H

#include <curses.h>

#include "engine.h"
#include "runs.h"
#include "ui/keys.h"
#include "ui/layout.h"

enum { UI_RUNS_BY_NAME = 0, UI_RUNS_BY_DATE, UI_RUNS_BY_MODEL, UI_RUNS_BY_DATASET,
       UI_RUNS_BY_EPOCHS, UI_RUNS_BY_F1, UI_RUNS_SORTS };

typedef struct ui_runs {
    int open;
    char dir[4096];         /* the folder listed */
    run_figures **run;
    int n, skipped;         /* runs read; folders that are not runs */
    int *order;             /* n indices into run, in the sort's order */
    int sort;               /* UI_RUNS_BY_* */
    int sel, top, rows;     /* selected row, first row shown, rows that fit (last draw) */
    char err[1024];         /* why the folder could not be read, or "" */
} ui_runs;

void ui_runs_init(ui_runs *l);
void ui_runs_free(ui_runs *l);

/* Read dir's runs (replacing those read before), sorted by l->sort. */
void ui_runs_scan(ui_runs *l, const char *dir);

/* Order the runs by l->sort (name and the text columns ascending; date, epochs and
 * F1 from the largest, runs without an F1 last); the selection stays on its run. */
void ui_runs_sort(ui_runs *l);

/* The selected run, or NULL when there is none. */
const run_figures *ui_runs_selected(const ui_runs *l);

/* Up, Down, PgUp, PgDn and the sort key; 1 when handled. */
int ui_runs_key(ui_runs *l, ui_act a);

/* The list as a box over most of the screen; in_cmp(ctx, run) says whether a run
 * is compared now (its colour role then, else -1). Returns the box. */
ui_rect ui_runs_draw(ui_runs *l, WINDOW *w, int rows, int cols,
                     int (*in_cmp)(void *ctx, const run_figures *r), void *ctx);

/* The column name of a sort ("name", "date", ...). */
const char *ui_runs_sort_name(int sort);

#endif
