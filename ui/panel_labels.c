/* panel_labels — the label counts per class (or bins of classes): train,
 * oversampled and validation, and its keys. */
#include "ui/panels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/chart.h"

/* The legend row: the train (or original and oversampled) and validation bars. */
static void legend(WINDOW *w, ui_rect in, int oversampling)
{
    int x = in.x;
    ui_draw_glyph(w, in.y, x, 0x2588, UI_R_BAR_A);
    x += 1 + ui_draw_text(w, in.y, x + 1, in.w - 1, UI_R_NORMAL,
                          oversampling ? " original  " : " train  ");
    if (oversampling && x + 2 < in.x + in.w) {
        ui_draw_glyph(w, in.y, x, 0x2588, UI_R_BAR_C);
        x += 1 + ui_draw_text(w, in.y, x + 1, in.x + in.w - x - 1, UI_R_NORMAL, " oversampled  ");
    }
    if (x + 2 < in.x + in.w) {
        ui_draw_glyph(w, in.y, x, 0x2588, UI_R_BAR_B);
        ui_draw_text(w, in.y, x + 1, in.x + in.w - x - 1, UI_R_NORMAL, " validation");
    }
}

/* Room to spare: the totals, and how uneven the classes are (what oversampling
 * is for), on the last row. */
static void totals(WINDOW *w, ui_rect in, const run_snapshot *s, int C)
{
    long long tt = 0, to = 0, tv = 0, lo = -1, hi = 0;
    for (int c = 0; c < C; c++) {
        tt += s->train_counts[c];
        to += s->train_oversampled[c];
        tv += s->val_counts[c];
        if (s->train_counts[c] > 0 && (lo < 0 || s->train_counts[c] < lo))
            lo = s->train_counts[c];
        hi = s->train_counts[c] > hi ? s->train_counts[c] : hi;
    }
    char tot[160];
    if (s->oversampling)
        snprintf(tot, sizeof tot, "train %lld -> %lld oversampled, val %lld, largest/smallest %.1fx",
                 tt, to, tv, lo > 0 ? (double)hi / (double)lo : 0.0);
    else
        snprintf(tot, sizeof tot, "train %lld, val %lld, largest/smallest %.1fx, no oversampling",
                 tt, tv, lo > 0 ? (double)hi / (double)lo : 0.0);
    ui_draw_text_cut(w, in.y + in.h - 1, in.x, in.w, UI_R_DIM, tot);
}

void ui_panel_labels(WINDOW *w, ui_rect r, const ui_frame *f, const ui_view *v, int focused)
{
    const run_snapshot *s = f->s;
    int C = s->label_classes < RUN_MAX_CLASSES ? s->label_classes : RUN_MAX_CLASSES;
    ui_rect in;
    char title[128], nb[64];
    int rows_avail = r.h - 3;
    int binned = C > rows_avail && v->label_bins;
    snprintf(title, sizeof title, "Labels: %d classes%s%s", C,
             binned ? " in bins" : "", focused ? "  [b PgUp PgDn]" : "");
    in = ui_draw_box(w, r, title, focused);
    if (in.h < 2 || in.w < 20)
        return;
    if (C <= 0) {
        ui_draw_text_cut(w, in.y + in.h / 2, in.x + 1, in.w - 1, UI_R_DIM,
                         "counts come with the label scan");
        return;
    }
    legend(w, in, s->oversampling);
    int rows = in.h - 1;
    int k = 1; /* classes per row */
    if (binned)
        k = (C + rows - 1) / rows;
    int nrows = (C + k - 1) / k;
    int top = binned ? 0 : v->label_top;
    if (top > nrows - rows)
        top = nrows - rows;
    if (top < 0)
        top = 0;
    long long mt = 1, mv = 1;
    for (int row = 0; row < nrows; row++) {
        long long t = 0, vv = 0;
        for (int c = row * k; c < (row + 1) * k && c < C; c++) {
            t += s->oversampling ? s->train_oversampled[c] : s->train_counts[c];
            vv += s->val_counts[c];
        }
        mt = t > mt ? t : mt;
        mv = vv > mv ? vv : mv;
    }
    /* Names as wide as the longest shown needs, while the bars keep 12 columns
     * (a third of the panel at least); a longer name ends in an ellipsis. */
    int numw = 6;
    int longest = 0;
    for (int i = 0; i < rows && top + i < nrows; i++) {
        int c0 = (top + i) * k;
        int lw = k == 1 ? ui_draw_width(ui_panel_class_name(f, c0, nb, sizeof nb)) : 9;
        longest = lw > longest ? lw : longest;
    }
    int nw_max = in.w - 2 * numw - 2 - 12 > in.w / 3 ? in.w - 2 * numw - 2 - 12 : in.w / 3;
    int nw = longest < nw_max ? longest : nw_max;
    if (nw < 6)
        nw = 6;
    int bars = in.w - nw - 2 * numw - 2;
    int tb = bars * 3 / 5, vb = bars - tb;
    for (int i = 0; i < rows && top + i < nrows; i++) {
        int row = top + i, y = in.y + 1 + i;
        int c0 = row * k, c1 = (row + 1) * k < C ? (row + 1) * k : C;
        long long t = 0, o = 0, vv = 0;
        for (int c = c0; c < c1; c++) {
            t += s->train_counts[c];
            o += s->train_oversampled[c];
            vv += s->val_counts[c];
        }
        const char *name = nb;
        if (k == 1)
            name = ui_panel_class_name(f, c0, nb, sizeof nb);
        else
            snprintf(nb, sizeof nb, "%d-%d", c0, c1 - 1);
        ui_draw_text_cut(w, y, in.x, nw, UI_R_NORMAL, name);
        int bx = in.x + nw + 1;
        /* With oversampling, the real count is drawn over the oversampled one. */
        if (s->oversampling)
            ui_panel_bar(w, y, bx, tb, (double)o / mt, UI_R_BAR_C, 0);
        ui_panel_bar(w, y, bx, tb, (double)t / mt, UI_R_BAR_A, 0);
        char num[16];
        ui_chart_fmt((double)(s->oversampling ? o : t), numw - 1, num, sizeof num);
        ui_draw_textf(w, y, bx + tb, numw, UI_R_DIM, "%*s", numw - 1, num);
        int vx = bx + tb + numw + 1;
        ui_panel_bar(w, y, vx, vb, (double)vv / mv, UI_R_BAR_B, 0);
        ui_chart_fmt((double)vv, numw - 1, num, sizeof num);
        ui_draw_textf(w, y, vx + vb, numw, UI_R_DIM, "%*s", numw - 1, num);
    }
    if (nrows + 2 <= rows)
        totals(w, in, s, C);
    if (!binned && nrows > rows) {
        snprintf(nb, sizeof nb, " %d-%d of %d ", top + 1,
                 top + rows < nrows ? top + rows : nrows, nrows);
        ui_draw_text(w, r.y + r.h - 1, r.x + r.w - 2 - (int)strlen(nb), (int)strlen(nb), UI_R_DIM,
                     nb);
    }
}

/* ---- keys ---------------------------------------------------------------------- */

/* b acts whichever panel has the focus; PgUp/PgDn/Home/End scroll the rows (out
 * of bins) when the labels have it. */
int ui_panel_labels_key(ui_panel_keys *k, ui_act act)
{
    ui_view *v = k->v;
    if (act == UI_ACT_BINS) {
        v->label_bins = !v->label_bins;
        v->label_top = 0;
        return 1;
    }
    if (!k->focused ||
        (act != UI_ACT_PGUP && act != UI_ACT_PGDN && act != UI_ACT_HOME && act != UI_ACT_END))
        return 0;
    int page = k->r.h > 4 ? k->r.h - 3 : 1;
    v->label_bins = 0;
    int C = k->f->s->label_classes;
    if (act == UI_ACT_PGDN)
        v->label_top += page;
    else if (act == UI_ACT_PGUP)
        v->label_top -= page;
    else if (act == UI_ACT_HOME)
        v->label_top = 0;
    else
        v->label_top = C;
    if (v->label_top > C - page)
        v->label_top = C - page;
    if (v->label_top < 0)
        v->label_top = 0;
    return 1;
}
