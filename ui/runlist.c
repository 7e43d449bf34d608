/* runlist — the runs list (see runlist.h). */
#include "ui/runlist.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "ui/chart.h"
#include "ui/draw.h"
#include "ui/panels.h"

void ui_runs_init(ui_runs *l)
{
    memset(l, 0, sizeof *l);
    l->sort = UI_RUNS_BY_DATE;
}

static void drop(ui_runs *l)
{
    runs_free(l->run, l->n);
    free(l->order);
    l->run = NULL;
    l->order = NULL;
    l->n = l->skipped = 0;
}

void ui_runs_free(ui_runs *l)
{
    drop(l);
}

const char *ui_runs_sort_name(int sort)
{
    static const char *const n[UI_RUNS_SORTS] = { "name", "date", "model", "dataset",
                                                  "epochs", "best val F1" };
    return sort >= 0 && sort < UI_RUNS_SORTS ? n[sort] : "?";
}

void ui_runs_scan(ui_runs *l, const char *dir)
{
    drop(l);
    util_copy(l->dir, sizeof l->dir, dir);
    l->err[0] = '\0';
    pt_err e;
    if (runs_scan(dir, &l->run, &l->n, &l->skipped, &e) != PT_OK) {
        util_copy(l->err, sizeof l->err, e.msg);
        l->run = NULL;
        l->n = 0;
    }
    l->order = l->n ? malloc((size_t)l->n * sizeof *l->order) : NULL;
    if (l->n && !l->order) {
        drop(l);
        util_copy(l->err, sizeof l->err, "out of memory");
    }
    for (int i = 0; i < l->n; i++)
        l->order[i] = i;
    l->sel = l->top = 0;
    ui_runs_sort(l);
    l->sel = 0; /* the first row of the new order */
}

/* qsort has no context: the list being sorted. */
static const ui_runs *g_sorting;

static int cmp_num(double a, double b)
{
    /* Largest first; NaN (none) last. */
    if (isnan(a) || isnan(b))
        return isnan(a) - isnan(b);
    return a > b ? -1 : a < b ? 1 : 0;
}

static int cmp_runs(const void *pa, const void *pb)
{
    const run_figures *a = g_sorting->run[*(const int *)pa], *b = g_sorting->run[*(const int *)pb];
    int c = 0;
    switch (g_sorting->sort) {
    case UI_RUNS_BY_DATE: c = cmp_num(a->started > 0 ? a->started : NAN,
                                      b->started > 0 ? b->started : NAN); break;
    case UI_RUNS_BY_MODEL: c = strcmp(a->model, b->model); break;
    case UI_RUNS_BY_DATASET: c = strcmp(a->dataset, b->dataset); break;
    case UI_RUNS_BY_EPOCHS: c = cmp_num(a->epochs, b->epochs); break;
    case UI_RUNS_BY_F1: c = cmp_num(a->best_val_f1, b->best_val_f1); break;
    default: break;
    }
    if (!c)
        c = strcmp(a->name, b->name);
    return c ? c : *(const int *)pa - *(const int *)pb;
}

void ui_runs_sort(ui_runs *l)
{
    if (l->n <= 0)
        return;
    int was = l->sel >= 0 && l->sel < l->n ? l->order[l->sel] : -1;
    g_sorting = l;
    qsort(l->order, (size_t)l->n, sizeof *l->order, cmp_runs);
    g_sorting = NULL;
    for (int i = 0; i < l->n; i++)
        if (l->order[i] == was)
            l->sel = i;
}

const run_figures *ui_runs_selected(const ui_runs *l)
{
    return l->n > 0 && l->sel >= 0 && l->sel < l->n ? l->run[l->order[l->sel]] : NULL;
}

int ui_runs_key(ui_runs *l, ui_act a)
{
    int page = l->rows > 1 ? l->rows - 1 : 1;
    switch (a) {
    case UI_ACT_UP: l->sel--; break;
    case UI_ACT_DOWN: l->sel++; break;
    case UI_ACT_PGUP: l->sel -= page; break;
    case UI_ACT_PGDN: l->sel += page; break;
    case UI_ACT_SORT:
        l->sort = (l->sort + 1) % UI_RUNS_SORTS;
        ui_runs_sort(l);
        break;
    default: return 0;
    }
    if (l->sel >= l->n)
        l->sel = l->n - 1;
    if (l->sel < 0)
        l->sel = 0;
    return 1;
}

ui_rect ui_runs_draw(ui_runs *l, WINDOW *w, int rows, int cols,
                     int (*in_cmp)(void *ctx, const run_figures *r), void *ctx)
{
    int bh = rows - 4 > 8 ? rows - 4 : rows, bw = cols - 4 > 40 ? cols - 4 : cols;
    ui_rect b = { (rows - bh) / 2, (cols - bw) / 2, bh, bw };
    ui_draw_clear(w, b);
    char title[4300];
    util_fmt(title, sizeof title, "Runs in %s: %d%s, by %s", l->dir, l->n,
             l->skipped ? " (and folders that are not runs)" : "", ui_runs_sort_name(l->sort));
    ui_rect in = ui_draw_box(w, b, title, 1);
    if (in.h < 3 || in.w < 30)
        return b;
    ui_rect hints = { in.y + in.h - 1, in.x + 1, 1, in.w - 2 };
    ui_frame none = { 0 };
    ui_panel_footer(w, hints, &none, UI_CTX_RUNS);
    int y = in.y, x0 = in.x + 1, W = in.w - 2;
    if (l->err[0] || l->n == 0) {
        char m[1300];
        if (l->err[0])
            util_fmt(m, sizeof m, "cannot list the runs: %s", l->err);
        else
            util_fmt(m, sizeof m, "no runs in %s yet (a run's folder holds history.json or "
                     "TensorBoard event files)", l->dir);
        ui_rect t = { y + 1, x0, in.h - 2, W };
        ui_draw_wrapped(w, t, l->err[0] ? UI_R_BAD : UI_R_DIM, m);
        return b;
    }
    /* Columns: mark 4, name, date 16, model, dataset, epochs 6, F1 6, differing
     * options (the rest). */
    int name_w = 0, model_w = 5, data_w = 7;
    for (int i = 0; i < l->n; i++) {
        int nw = ui_draw_width(l->run[i]->name), mw = ui_draw_width(l->run[i]->model),
            dw = ui_draw_width(l->run[i]->dataset);
        name_w = nw > name_w ? nw : name_w;
        model_w = mw > model_w ? mw : model_w;
        data_w = dw > data_w ? dw : data_w;
    }
    name_w = name_w < 4 ? 4 : name_w > W / 4 ? W / 4 : name_w;
    model_w = model_w > 14 ? 14 : model_w;
    data_w = data_w > 18 ? 18 : data_w;
    int cx[8];
    cx[0] = x0;
    cx[1] = cx[0] + 4;
    cx[2] = cx[1] + name_w + 2;
    cx[3] = cx[2] + 18;
    cx[4] = cx[3] + model_w + 2;
    cx[5] = cx[4] + data_w + 2;
    cx[6] = cx[5] + 7;
    cx[7] = cx[6] + 8;
    static const char *const head[8] = { "", "name", "date", "model", "dataset", "epochs",
                                         "val F1", "options that differ" };
    static const int col_sort[8] = { -1, UI_RUNS_BY_NAME, UI_RUNS_BY_DATE, UI_RUNS_BY_MODEL,
                                     UI_RUNS_BY_DATASET, UI_RUNS_BY_EPOCHS, UI_RUNS_BY_F1, -1 };
    for (int c = 1; c < 8; c++) {
        if (cx[c] >= x0 + W)
            break;
        char h[64];
        util_fmt(h, sizeof h, "%s%s", head[c], col_sort[c] == l->sort ? "*" : "");
        ui_draw_text(w, y, cx[c], x0 + W - cx[c], col_sort[c] == l->sort ? UI_R_TITLE : UI_R_DIM,
                     h);
    }
    y++;
    l->rows = in.h - 2;
    if (l->sel < l->top)
        l->top = l->sel;
    if (l->sel >= l->top + l->rows)
        l->top = l->sel - l->rows + 1;
    if (l->top < 0)
        l->top = 0;
    char diff[2048], num[16];
    for (int row = l->top; row < l->n && y < in.y + in.h - 1; row++, y++) {
        const run_figures *r = l->run[l->order[row]];
        int role = in_cmp ? in_cmp(ctx, r) : -1;
        int sel = row == l->sel;
        if (sel)
            for (int x = x0; x < x0 + W; x++)
                ui_draw_glyph(w, y, x, ' ', UI_R_SEL);
        ui_role tr = sel ? UI_R_SEL : UI_R_NORMAL;
        ui_draw_text(w, y, cx[0], 4, role >= 0 ? (ui_role)role : tr, role >= 0 ? "[x]" : "[ ]");
        ui_draw_text_cut(w, y, cx[1], name_w, role >= 0 && !sel ? (ui_role)role : tr, r->name);
        if (cx[2] < x0 + W)
            ui_draw_text(w, y, cx[2], x0 + W - cx[2], tr, r->date[0] ? r->date : "?");
        if (cx[3] < x0 + W)
            ui_draw_text_cut(w, y, cx[3], model_w, tr, r->model[0] ? r->model : r->writer);
        if (cx[4] < x0 + W)
            ui_draw_text_cut(w, y, cx[4], data_w, tr, r->dataset[0] ? r->dataset : "?");
        if (cx[5] < x0 + W)
            ui_draw_textf(w, y, cx[5], x0 + W - cx[5], tr, "%6d", r->epochs);
        ui_chart_fmt(r->best_val_f1, 6, num, sizeof num);
        if (cx[6] < x0 + W)
            ui_draw_textf(w, y, cx[6], x0 + W - cx[6], tr, "%6s", num);
        if (cx[7] < x0 + W) {
            runs_diff_text(l->run, l->n, l->order[row], diff, sizeof diff);
            ui_draw_text_cut(w, y, cx[7], x0 + W - cx[7], sel ? UI_R_SEL : UI_R_DIM, diff);
        }
    }
    return b;
}
