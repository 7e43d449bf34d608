/* panel_labels — the label counts per class (or bins of classes): train,
 * oversampled and validation, and its keys. */
#include "ui/panels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/chart.h"

/* The legend row: the train (or original and oversampled) and validation bars,
 * and that a bin's bars are its mean per class. */
static void legend(WINDOW *w, ui_rect in, int oversampling, int per_class)
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
        x += 1 + ui_draw_text(w, in.y, x + 1, in.x + in.w - x - 1, UI_R_NORMAL, " validation");
    }
    if (per_class && x + 2 < in.x + in.w)
        ui_draw_text(w, in.y, x, in.x + in.w - x, UI_R_DIM, "  (mean per class)");
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

/* How C classes go into at most rows rows: one a row, or bins. Bins hold equal
 * numbers of classes where a divisor of C allows (up to twice the fewest per
 * bin); otherwise their sizes differ by one at most (row r holds classes
 * [r * C / n, (r + 1) * C / n)). Returns the rows n; *lo and *hi: the fewest and
 * most classes in a bin. */
int ui_panel_label_bins(int C, int rows, int binned, int *lo, int *hi)
{
    *lo = *hi = 1;
    if (!binned || C <= rows || rows < 1)
        return C;
    int k = (C + rows - 1) / rows;
    for (int d = k; d <= 2 * k; d++)
        if (C % d == 0) {
            *lo = *hi = d;
            return C / d;
        }
    int n = (C + k - 1) / k;
    *lo = C / n;
    *hi = (C + n - 1) / n;
    return n;
}

/* Classes [*c0, *c1) of row `row` of n rows. */
static void bin_range(int row, int n, int C, int *c0, int *c1)
{
    *c0 = (int)((long long)row * C / n);
    *c1 = (int)((long long)(row + 1) * C / n);
}

/* No counts yet: the class count when it is known (the dataset's names, an
 * opened run's), and why there are no counts. */
static void no_counts(WINDOW *w, ui_rect r, const ui_frame *f, int focused)
{
    const run_snapshot *s = f->s;
    int known = s->n_classes > 0 ? s->n_classes : f->n_names;
    char title[96];
    if (known > 0)
        snprintf(title, sizeof title, "Labels: %d classes", known);
    else
        snprintf(title, sizeof title, "Labels");
    ui_rect in = ui_draw_box(w, r, title, focused);
    if (in.h < 1 || in.w < 20)
        return;
    const char *m = f->opened ? "the run's folder keeps no label counts (i: validation per class)"
                    : s->state == RUN_IDLE ? "counts per class come with the label scan, when the "
                                             "run starts (s)"
                                           : "counts per class come with the label scan";
    int n = ui_draw_wrap_count(m, in.w - 1);
    ui_draw_wrapped(w, (ui_rect){ in.y + (in.h - n) / 2, in.x + 1, n, in.w - 1 }, UI_R_DIM, m);
}

void ui_panel_labels(WINDOW *w, ui_rect r, const ui_frame *f, const ui_view *v, int focused)
{
    const run_snapshot *s = f->s;
    int C = s->label_classes < RUN_MAX_CLASSES ? s->label_classes : RUN_MAX_CLASSES;
    if (C <= 0) {
        no_counts(w, r, f, focused);
        return;
    }
    ui_rect in;
    char title[128], nb[64];
    int rows_avail = r.h - 3;
    int lo, hi;
    int nrows = ui_panel_label_bins(C, rows_avail, v->label_bins, &lo, &hi);
    int binned = nrows < C;
    char bins[48] = "";
    if (binned && lo == hi)
        snprintf(bins, sizeof bins, " in bins of %d", lo);
    else if (binned)
        snprintf(bins, sizeof bins, " in bins of %d-%d", lo, hi);
    snprintf(title, sizeof title, "Labels: %d classes%s%s", C, bins,
             focused ? "  [b PgUp PgDn]" : "");
    in = ui_draw_box(w, r, title, focused);
    if (in.h < 2 || in.w < 20)
        return;
    legend(w, in, s->oversampling, binned);
    int rows = in.h - 1;
    int top = binned ? 0 : v->label_top;
    if (top > nrows - rows)
        top = nrows - rows;
    if (top < 0)
        top = 0;
    /* A bin's bar and figure are its mean per class: a bin of fewer classes reads
     * as what its classes hold, not as a smaller bin. */
    double mt = 1, mv = 1;
    for (int row = 0; row < nrows; row++) {
        int c0, c1;
        bin_range(row, nrows, C, &c0, &c1);
        double t = 0, vv = 0;
        for (int c = c0; c < c1; c++) {
            t += (double)(s->oversampling ? s->train_oversampled[c] : s->train_counts[c]);
            vv += (double)s->val_counts[c];
        }
        mt = t / (c1 - c0) > mt ? t / (c1 - c0) : mt;
        mv = vv / (c1 - c0) > mv ? vv / (c1 - c0) : mv;
    }
    /* Names as wide as the longest shown needs, while the bars keep 12 columns
     * (a third of the panel at least); a longer name ends in an ellipsis. */
    int numw = 6;
    int longest = 0;
    for (int i = 0; i < rows && top + i < nrows; i++) {
        int lw = !binned ? ui_draw_width(ui_panel_class_name(f, top + i, nb, sizeof nb)) : 9;
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
        int c0, c1;
        bin_range(row, nrows, C, &c0, &c1);
        double t = 0, o = 0, vv = 0;
        for (int c = c0; c < c1; c++) {
            t += (double)s->train_counts[c];
            o += (double)s->train_oversampled[c];
            vv += (double)s->val_counts[c];
        }
        t /= c1 - c0;
        o /= c1 - c0;
        vv /= c1 - c0;
        const char *name = nb;
        if (!binned)
            name = ui_panel_class_name(f, c0, nb, sizeof nb);
        else
            snprintf(nb, sizeof nb, "%d-%d", c0, c1 - 1);
        ui_draw_text_cut(w, y, in.x, nw, UI_R_NORMAL, name);
        int bx = in.x + nw + 1;
        /* With oversampling, the real count is drawn over the oversampled one. */
        if (s->oversampling)
            ui_panel_bar(w, y, bx, tb, o / mt, UI_R_BAR_C, 0);
        ui_panel_bar(w, y, bx, tb, t / mt, UI_R_BAR_A, 0);
        char num[16];
        ui_chart_fmt(s->oversampling ? o : t, numw - 1, num, sizeof num);
        ui_draw_textf(w, y, bx + tb, numw, UI_R_DIM, "%*s", numw - 1, num);
        int vx = bx + tb + numw + 1;
        ui_panel_bar(w, y, vx, vb, vv / mv, UI_R_BAR_B, 0);
        ui_chart_fmt(vv, numw - 1, num, sizeof num);
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
