/* lrfind — the learning-rate finder overlay (see lrfind.h). */
#include "ui/lrfind.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ui/chart.h"

#define YW 8                    /* the y labels' columns */

void ui_lrf_summary(const run_lrfind *f, char *buf, size_t n)
{
    if (f->state == RUN_LRF_DONE && f->found)
        snprintf(buf, n, "suggested --lr-max %.2e (valley); steepest %.2e", f->lr_max, f->steep);
    else if (f->state == RUN_LRF_DONE)
        snprintf(buf, n, "no suggestion: the smoothed loss never fell");
    else
        snprintf(buf, n, "%s", f->message);
}

/* The chart in r: the curve, the two suggestions' lines, the y values, the decades. */
static void chart(WINDOW *w, ui_rect r, const run_lrfind *f)
{
    int ph = r.h - 1, pw = r.w - YW;
    if (ph < 3 || pw < 20 || f->n < 1)
        return;
    float x[RUN_LRF_POINTS], y[RUN_LRF_POINTS];
    for (int i = 0; i < f->n; i++) {
        x[i] = (float)log10(f->lr[i]);
        y[i] = (float)f->smooth[i];
    }
    ui_chart_series curve = { .y = y, .x = x, .n = f->n, .role = UI_R_S1 }, s[3];
    ui_chart_axis xa = { log10(f->start_lr), log10(f->end_lr), 0 }, ya;
    if (ui_chart_yrange(&curve, 1, 0, &ya) != 0)
        return;
    /* The climb at the end can reach 4x the best loss and flatten the part that
     * matters: the top is half the fall above the first loss (the climb leaves the
     * box; `lr-find --plot` does the same). */
    double top = f->smooth[0] + 0.5 * (f->smooth[0] - ya.lo);
    if (f->n > 1 && ya.hi > top && top > ya.lo)
        ya.hi = top;
    /* Each suggestion a vertical line over the whole height, under the curve. */
    float vx[2][2], vy[2] = { (float)ya.lo, (float)ya.hi };
    double at[2] = { f->valley, f->steep };
    ui_role role[2] = { UI_R_BAD, UI_R_WARN };
    int ns = 0;
    for (int k = 0; f->found && k < 2; k++) {
        vx[k][0] = vx[k][1] = (float)log10(at[k]);
        s[ns++] = (ui_chart_series){ .y = vy, .x = vx[k], .n = 2, .role = role[k] };
    }
    s[ns++] = curve;
    ui_cells g;
    if (ui_draw_cells_init(&g, ph, pw) != 0)
        return;
    ui_chart_plot(&g, xa, ya, s, ns);
    ui_draw_cells(w, r.y, r.x + YW, &g);
    ui_draw_cells_free(&g);
    char num[16];
    int rows3[3] = { 0, ph / 2, ph - 1 };
    for (int i = 0; i < 3; i++) {
        ui_chart_fmt(ui_chart_row_value(ya, ph, rows3[i]), YW - 1, num, sizeof num);
        ui_draw_textf(w, r.y + rows3[i], r.x, YW - 1, UI_R_DIM, "%*s", YW - 1, num);
    }
    /* A decade's label where the chart puts its dots: column lround(t (2 pw - 1)) / 2. */
    for (int d = (int)ceil(xa.lo); d <= (int)floor(xa.hi); d++) {
        double t = (d - xa.lo) / (xa.hi - xa.lo);
        int cx = (int)lround(t * (2 * pw - 1)) / 2;
        snprintf(num, sizeof num, "1e%d", d);
        int lx = cx - (int)strlen(num) / 2;
        if (lx < 0)
            lx = 0;
        if (lx + (int)strlen(num) > pw)
            lx = pw - (int)strlen(num);
        ui_draw_text(w, r.y + ph, r.x + YW + lx, (int)strlen(num), UI_R_DIM, num);
    }
}

ui_rect ui_lrf_draw(WINDOW *w, int rows, int cols, const run_lrfind *f)
{
    int wd = cols - 4 < 100 ? cols - 4 : 100, h = rows - 2 < 26 ? rows - 2 : 26;
    ui_rect b = { (rows - h) / 2, (cols - wd) / 2, h, wd };
    ui_draw_clear(w, b);
    ui_rect in = ui_draw_box(w, b, "lr-find: loss against the learning rate (log)", 1);
    if (in.h < 6 || in.w < 30)
        return b;
    int active = f->state == RUN_LRF_PREPARING || f->state == RUN_LRF_RUNNING;
    ui_role mrole = f->state == RUN_LRF_FAILED ? UI_R_BAD : active ? UI_R_WARN : UI_R_DIM;
    ui_draw_text_cut(w, in.y, in.x + 1, in.w - 2, mrole, f->message);
    chart(w, (ui_rect){ in.y + 1, in.x + 1, in.h - 4, in.w - 2 }, f);
    char line[256];
    ui_lrf_summary(f, line, sizeof line);
    if (f->state == RUN_LRF_DONE)
        ui_draw_text_cut(w, in.y + in.h - 3, in.x + 1, in.w - 2, f->found ? UI_R_OK : UI_R_BAD,
                         line);
    if (f->state == RUN_LRF_DONE && f->found)
        ui_draw_text_cut(w, in.y + in.h - 2, in.x + 1, in.w - 2, UI_R_DIM,
                         "red: the valley (the suggestion), yellow: the steepest point");
    ui_draw_text_cut(w, in.y + in.h - 1, in.x + 1, in.w - 2, UI_R_KEY,
                     active ? "q, Esc or Ctrl-C cancels; nothing of the run changes"
                            : "s starts the run, c configures (L there uses it), L reruns, "
                              "Esc closes");
    return b;
}
