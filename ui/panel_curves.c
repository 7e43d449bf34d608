/* panel_curves — the curves panel: this run's and the compared runs' curves as
 * one series type (run_series), drawn in stages, and its keys. */
#include "ui/panels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/chart.h"

/* A run's updates: the furthest update any of its series reaches (0: none). */
static double run_updates(const run_figures *r)
{
    double u = 0;
    for (int k = 0; k < RUN_SERIES_COUNT; k++)
        for (int i = 0; i < r->s[k].n; i++) {
            double x = r->s[k].x[RUN_X_UPDATE][i];
            u = isfinite(x) && x > u ? x : u;
        }
    return u;
}

int ui_panel_curves_axis(const ui_frame *f, const ui_view *v, double *ratio)
{
    *ratio = 0;
    if (v->xaxis >= 0 && v->xaxis < UI_X_COUNT)
        return v->xaxis;
    /* This run's whole length (planned), so the axis does not flip as it trains. */
    const run_snapshot *s = f->s;
    double lo = 0, hi = 0, u = s ? (double)(s->total_steps > 0 ? s->total_steps : s->update) : 0;
    int nc = f->compare ? (f->n_compare < UI_MAX_COMPARE ? f->n_compare : UI_MAX_COMPARE) : 0;
    for (int k = -1; k < nc; k++) {
        if (k >= 0)
            u = run_updates(f->compare[k]);
        if (u <= 0)
            continue;
        lo = lo <= 0 || u < lo ? u : lo;
        hi = u > hi ? u : hi;
    }
    if (lo <= 0 || hi / lo < UI_X_AUTO_RATIO)
        return UI_X_UPDATE;
    *ratio = hi / lo;
    return UI_X_EPOCH;
}

static double smoothing(const ui_view *v)
{
    return ui_panel_smooth[v->smooth >= 0 && v->smooth < UI_SMOOTH_STEPS ? v->smooth : 0];
}

/* The series of a metric (RUN_S_*, -1: none): per update, and per epoch train and
 * validation. A compared run's lr is its per-update one, drawn as its "val" line. */
static int update_series(int metric)
{
    return metric == UI_METRIC_LOSS ? RUN_S_BATCH_LOSS
           : metric == UI_METRIC_ACC ? RUN_S_BATCH_ACC
           : metric == UI_METRIC_LR  ? RUN_S_BATCH_LR
                                     : -1;
}

static void epoch_series(int metric, int *train, int *val)
{
    *train = *val = -1;
    if (metric == UI_METRIC_LOSS) {
        *train = RUN_S_TRAIN_LOSS;
        *val = RUN_S_VAL_LOSS;
    } else if (metric == UI_METRIC_ACC) {
        *train = RUN_S_TRAIN_ACC;
        *val = RUN_S_VAL_ACC;
    } else if (metric == UI_METRIC_F1) {
        *train = RUN_S_TRAIN_F1;
        *val = RUN_S_VAL_F1;
    } else {
        *val = RUN_S_BATCH_LR;
    }
}

static void fmt_x(int axis, double x, char *buf, size_t n)
{
    char num[16];
    if (axis == UI_X_TIME) {
        ui_chart_fmt_dur(x, num, sizeof num);
        snprintf(buf, n, "%s", num);
    } else {
        ui_chart_fmt(x, 6, num, sizeof num);
        snprintf(buf, n, "%s %s", axis == UI_X_EPOCH ? "epoch" : "upd", num);
    }
}

enum { YW = 7, MAX_SERIES = 4 + 2 * UI_MAX_COMPARE };

/* What the stages share: the settings, the plot's place, this run's series (from
 * its snapshot) and every series drawn, all of them run_series on one x axis. */
typedef struct curves {
    WINDOW *w;
    const ui_frame *f;
    const ui_view *v;
    int metric, axis, logy, nc, mono, cursor_on;
    double sm;
    double auto_ratio;                  /* > 0: epochs chosen, the runs' updates differ so */
    ui_rect in;
    int ph, pw, legend_rows, readout;
    run_series live[RUN_SERIES_COUNT];  /* this run's (eng_snapshot_series) */
    int n, ne;                          /* its per-update points of the metric; epochs */
    float smooth[RUN_CURVE_POINTS];
    ui_chart_series ser[MAX_SERIES];
    int ns;
    /* which of ser is what: this run's raw, smoothed, train and val curves; the
     * compared runs' train and val (-1: not drawn) */
    int raw_k, smooth_k, et_k, ev_k, cmp_k[UI_MAX_COMPARE][2];
    ui_chart_axis xa, ya;
    double xmax;
    /* the axis row's text, in plot columns: the end label from label_x on, the
     * reason for epochs over [why_x0, why_x1); the cursor's mark keeps off them */
    int label_x, why_x0, why_x1;
} curves;

/* Every series reaches the plot this way: its values (y, or the series' own) at
 * its positions on the chosen x axis. Returns its index in c->ser. */
static int add(curves *c, const float *y, const run_series *se, ui_role role, uint32_t marker,
               int scatter)
{
    c->ser[c->ns] = (ui_chart_series){ y ? y : se->y, se->x[c->axis], 0, 0, se->n, role,
                                       marker, scatter };
    return c->ns++;
}

/* The box with its title, and the rows under the plot: the x axis, the legend (a
 * second one for the compared runs when there is room), and with the cursor a row
 * per run. 0 when the box is too small for a plot. */
static int place(curves *c, ui_rect r, int focused)
{
    static const char *const axis_name[UI_X_COUNT] = { "update", "epoch", "time" };
    char title[160];
    snprintf(title, sizeof title, "Curves: %s%s by %s  smooth %.2g%s%s",
             ui_panel_metric_name(c->metric), c->logy ? " (log)" : "", axis_name[c->axis],
             c->sm, c->nc ? "  + compared" : "", focused ? "  [v l x + -]" : "");
    c->in = ui_draw_box(c->w, r, title, focused);
    if (c->in.h < 4 || c->in.w < 16)
        return 0;
    c->cursor_on = c->v->cursor >= 0 && c->v->zoom == UI_P_CURVES;
    c->legend_rows = c->nc > 0 && c->in.h >= 10 ? 2 : 1;
    /* The cursor's values: a row per run as far as 3 plot rows allow; with no row
     * to spare, this run's values take the legend's row (see cursor()). */
    c->readout = c->cursor_on ? 1 + c->nc : 0;
    if (c->readout > c->in.h - 1 - c->legend_rows - 3)
        c->readout = c->in.h - 1 - c->legend_rows - 3;
    if (c->readout < 0)
        c->readout = 0;
    c->ph = c->in.h - 1 - c->legend_rows - c->readout;
    c->pw = c->in.w - YW;
    return 1;
}

/* This run's per-update curve smoothed into c->smooth (lr is not smoothed). */
static void smooth(curves *c, const run_series *se)
{
    ui_chart_ema(se->y, se->n, c->metric == UI_METRIC_LR ? 0 : c->sm, c->smooth);
}

/* This run's: the per-update curve smoothed, the raw one dotted under it (not for
 * lr, which is not smoothed), and the epochs' train and validation figures. */
static void gather_live(curves *c)
{
    int u = update_series(c->metric), tr, vl;
    epoch_series(c->metric, &tr, &vl);
    c->n = u >= 0 ? c->live[u].n : 0;
    c->ne = c->live[RUN_S_TRAIN_LOSS].n;
    if (c->n > 0)
        smooth(c, &c->live[u]);
    if (c->n > 0 && c->sm > 0 && c->metric != UI_METRIC_LR)
        c->raw_k = add(c, NULL, &c->live[u], UI_R_DIM, 0, 1);
    if (c->n > 0)
        c->smooth_k = add(c, c->smooth, &c->live[u], UI_R_S1, 0, 0);
    if (c->ne > 0 && c->metric != UI_METRIC_LR) {
        c->et_k = add(c, NULL, &c->live[tr], UI_R_S2, c->mono ? 't' : 0, 0);
        c->ev_k = add(c, NULL, &c->live[vl], UI_R_S3, c->mono ? 'v' : 0, 0);
    }
}

/* The compared runs' epoch figures: validation as lines, train as dots, a colour
 * each (a digit each without colours). */
static void gather_compared(curves *c)
{
    int tr, vl;
    epoch_series(c->metric, &tr, &vl);
    for (int k = 0; k < c->nc; k++) {
        const run_figures *r = c->f->compare[k];
        ui_role role = ui_panel_compare_role(k);
        c->cmp_k[k][0] = c->cmp_k[k][1] = -1;
        if (tr >= 0 && r->s[tr].n > 0)
            c->cmp_k[k][0] = add(c, NULL, &r->s[tr], role, 0, 1);
        if (vl >= 0 && r->s[vl].n > 0)
            c->cmp_k[k][1] = add(c, NULL, &r->s[vl], role, c->mono ? (uint32_t)('1' + k) : 0, 0);
    }
}

/* Nothing to draw: why, in the middle of the plot. */
static void say_empty(const curves *c)
{
    const char *msg = c->metric == UI_METRIC_F1    ? "macro F1 comes after the first epoch"
                      : c->f->s->state == RUN_IDLE ? "no updates yet: s starts the run"
                                                   : "waiting for the first update";
    if (c->f->opened)
        msg = "the run's folder holds no such curve";
    int mw = ui_draw_width(msg);
    ui_draw_text(c->w, c->in.y + c->ph / 2, c->in.x + (c->in.w > mw ? (c->in.w - mw) / 2 : 0),
                 c->in.w, UI_R_DIM, msg);
}

/* The y range follows what is drawn; the raw curve's outliers would squash the
 * smoothed one, so the range comes from the others. */
static void y_range(curves *c)
{
    ui_chart_series rs[MAX_SERIES];
    int nr = 0;
    for (int k = 0; k < c->ns; k++)
        if (k != c->raw_k)
            rs[nr++] = c->ser[k];
    ui_chart_yrange(rs, nr, c->logy, &c->ya);
}

/* The x range: 0 to the furthest point (by updates, this run's update at least). */
static void x_range(curves *c)
{
    double xmax = c->axis == UI_X_EPOCH ? 1 : c->axis == UI_X_TIME ? 10 : 1;
    for (int k = 0; k < c->ns; k++)
        for (int i = 0; i < c->ser[k].n; i++)
            if (isfinite(c->ser[k].x[i]) && c->ser[k].x[i] > xmax)
                xmax = c->ser[k].x[i];
    if (c->axis == UI_X_UPDATE && (double)c->f->s->update > xmax)
        xmax = (double)c->f->s->update;
    c->xmax = xmax;
    c->xa = (ui_chart_axis){ 0, xmax, 0 };
}

static int plot(const curves *c)
{
    ui_cells g;
    if (ui_draw_cells_init(&g, c->ph, c->pw) != 0)
        return -1;
    ui_chart_plot(&g, c->xa, c->ya, c->ser, c->ns);
    ui_draw_cells(c->w, c->in.y, c->in.x + YW, &g);
    ui_draw_cells_free(&g);
    return 0;
}

/* The y axis with three values; the x axis, a rule with a tick at every epoch's
 * end of this run, 0 and the end. */
static void ticks(curves *c)
{
    WINDOW *w = c->w;
    ui_rect in = c->in;
    char num[16];
    int label_rows[3] = { 0, c->ph / 2, c->ph - 1 };
    for (int i = 0; i < 3; i++) {
        if (i > 0 && label_rows[i] == label_rows[i - 1])
            continue;
        double val = ui_chart_row_value(c->ya, c->ph, label_rows[i]);
        ui_chart_fmt(val, YW - 1, num, sizeof num);
        ui_draw_textf(w, in.y + label_rows[i], in.x, YW - 1, UI_R_DIM, "%*s", YW - 1, num);
    }
    for (int y = 0; y < c->ph; y++)
        ui_draw_glyph(w, in.y + y, in.x + YW - 1, 0x2502, UI_R_DIM);
    int ay = in.y + c->ph;
    ui_draw_hline(w, ay, in.x + YW, c->pw, 0x2500, UI_R_DIM);
    const float *ex = c->live[RUN_S_TRAIN_LOSS].x[c->axis];
    for (int i = 0; i < c->ne; i++) {
        if (!isfinite(ex[i]))
            continue;
        int tx = (int)lround(ex[i] / c->xmax * (c->pw * 2 - 1)) / 2;
        if (tx >= 0 && tx < c->pw)
            ui_draw_glyph(w, ay, in.x + YW + tx, '+', UI_R_DIM);
    }
    ui_draw_text(w, ay, in.x + YW - 1, 2, UI_R_DIM, "0");
    char lab[48];
    fmt_x(c->axis, c->xmax, lab, sizeof lab);
    int lw = (int)strlen(lab);
    ui_draw_text(w, ay, in.x + in.w - lw, lw, UI_R_DIM, lab);
    c->label_x = in.w - YW - lw;
    c->why_x0 = c->why_x1 = 0;
    if (c->auto_ratio > 0) {
        /* Why epochs: on the rule, the long form where it fits. */
        char why[96];
        snprintf(why, sizeof why, " by epoch: the runs' updates differ %.0fx (x changes it) ",
                 c->auto_ratio);
        if ((int)strlen(why) > c->pw - lw - 4)
            snprintf(why, sizeof why, " updates differ %.0fx ", c->auto_ratio);
        if ((int)strlen(why) > c->pw - lw - 4)
            snprintf(why, sizeof why, " updates %.0fx ", c->auto_ratio);
        int ww = (int)strlen(why);
        if (ww <= c->pw - lw - 4) {
            c->why_x0 = (c->pw - lw - ww) / 2;
            c->why_x1 = c->why_x0 + ww;
            ui_draw_text(w, ay, in.x + YW + c->why_x0, ww, UI_R_TITLE, why);
        }
    }
}

static double value_at(const curves *c, int k, double x)
{
    return k >= 0 ? ui_chart_value_at(&c->ser[k], x) : NAN;
}

/* The value cursor: a column, marked on the axis where no label is, and the
 * values of every run there, a row each under the legend (this run's alone on the
 * legend's row when the box has no other). Returns 1 when it took the legend's row. */
static int cursor(const curves *c)
{
    WINDOW *w = c->w;
    ui_rect in = c->in;
    int ay = in.y + c->ph, pw = c->pw;
    int col = c->v->cursor < pw ? c->v->cursor : pw - 1;
    double xc = pw > 1 ? c->xmax * (2.0 * col + 0.5) / (pw * 2 - 1) : 0;
    for (int y = 0; y < c->ph; y++) {
        chtype here = mvwinch(w, in.y + y, in.x + YW + col) & A_CHARTEXT;
        if (here == ' ')
            ui_draw_glyph(w, in.y + y, in.x + YW + col, 0x2506, UI_R_TITLE);
    }
    if (col < c->label_x && (col < c->why_x0 || col >= c->why_x1))
        ui_draw_glyph(w, ay, in.x + YW + col, 0x2534, UI_R_TITLE);
    int ry = ay + 1 + c->legend_rows, rows = c->readout;
    if (rows == 0) {
        ry = ay + 1;
        rows = 1;
    }
    char line[512], xs[48], a1[16], a2[16], a3[16];
    fmt_x(c->axis, xc, xs, sizeof xs);
    for (int k = -1; k < c->nc && k + 1 < rows; k++) {
        ui_role role = k < 0 ? UI_R_NORMAL : ui_panel_compare_role(k);
        if (k < 0) {
            ui_chart_fmt(value_at(c, c->smooth_k, xc), 6, a1, sizeof a1);
            ui_chart_fmt(value_at(c, c->et_k, xc), 6, a2, sizeof a2);
            ui_chart_fmt(value_at(c, c->ev_k, xc), 6, a3, sizeof a3);
            snprintf(line, sizeof line, "at %s  this run: %s %s  train %s  val %s", xs,
                     c->metric == UI_METRIC_LR ? "lr" : "per update", a1, a2, a3);
        } else {
            ui_chart_fmt(value_at(c, c->cmp_k[k][0], xc), 6, a2, sizeof a2);
            ui_chart_fmt(value_at(c, c->cmp_k[k][1], xc), 6, a3, sizeof a3);
            if (c->metric == UI_METRIC_LR)
                snprintf(line, sizeof line, "%s: lr %s", c->f->compare[k]->name, a3);
            else
                snprintf(line, sizeof line, "%s: train %s  val %s", c->f->compare[k]->name,
                         a2, a3);
        }
        ui_draw_text_cut(w, ry, in.x, in.w, role, line);
        ry++;
    }
    return c->readout == 0;
}

/* The compared runs' part of the legend, from x on row ly. */
static void legend_compared(const curves *c, int ly, int lx)
{
    WINDOW *w = c->w;
    ui_rect in = c->in;
    /* Each item: its mark, the name, what is missing, two spaces. The names share
     * what the lead and the marks leave (the lead shorter when they do not fit); a
     * longer one keeps its start and end. */
    const char *miss[UI_MAX_COMPARE];
    int fixed = 0, names = 0;
    for (int k = 0; k < c->nc; k++) {
        int drawn = (c->cmp_k[k][0] >= 0 || c->cmp_k[k][1] >= 0);
        int on_axis = 0;
        for (int j = 0; j < 2; j++)
            for (int i = 0; c->cmp_k[k][j] >= 0 && i < c->ser[c->cmp_k[k][j]].n && !on_axis; i++)
                on_axis = isfinite(c->ser[c->cmp_k[k][j]].x[i]);
        miss[k] = !drawn ? " (none)" : !on_axis ? " (no x)" : "";
        fixed += 2 + (int)strlen(miss[k]) + 2;
        names += ui_draw_width(c->f->compare[k]->name);
    }
    const char *lead =
        c->metric == UI_METRIC_LR ? "compared: " : "compared (val line, train dots): ";
    if ((int)strlen(lead) + fixed + names > in.x + in.w - lx)
        lead = "compared: ";
    lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, UI_R_DIM, lead);
    int room = in.x + in.w - lx - fixed, share = names;
    if (names > room && c->nc > 0) {
        /* The fair share, and what short names leave over for the long ones. */
        share = room / c->nc;
        int spare = 0, longer = 0;
        for (int k = 0; k < c->nc; k++) {
            int nw = ui_draw_width(c->f->compare[k]->name);
            spare += nw < share ? share - nw : 0;
            longer += nw > share;
        }
        share += longer > 0 ? spare / longer : 0;
    }
    for (int k = 0; k < c->nc && lx < in.x + in.w; k++) {
        char item[400], name[300];
        ui_draw_elide_middle(c->f->compare[k]->name, share > 7 ? share : 7, name, sizeof name);
        snprintf(item, sizeof item, "%s%s %s%s  ", c->mono ? "" : "\xe2\x94\x81",
                 c->mono ? (char[2]){ (char)('1' + k), 0 } : "", name, miss[k]);
        lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, ui_panel_compare_role(k), item);
    }
}

/* The legend under the x axis: this run's curves and its last validation figure,
 * then the compared runs (on a row of their own when there is room). */
static void legend(const curves *c)
{
    WINDOW *w = c->w;
    ui_rect in = c->in;
    int lx = in.x, ly = in.y + c->ph + 1;
    if (c->metric != UI_METRIC_F1 && c->n > 0)
        lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, UI_R_S1,
                           c->metric == UI_METRIC_LR ? "-- lr per update  " : "-- train/update  ");
    if (c->metric != UI_METRIC_LR && c->ne > 0) {
        lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, UI_R_S2,
                           c->mono ? "t train/epoch  " : "-- train/epoch  ");
        lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, UI_R_S3,
                           c->mono ? "v val/epoch  " : "-- val/epoch  ");
        int tr, vl;
        epoch_series(c->metric, &tr, &vl);
        float lv = c->live[vl].y[c->ne - 1];
        if (isfinite(lv)) {
            char num[16], last[48];
            ui_chart_fmt(lv, 6, num, sizeof num);
            snprintf(last, sizeof last, "val %s  ", num);
            lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, UI_R_S3, last);
        }
    }
    if (c->nc > 0) {
        if (c->legend_rows > 1) {
            ly++;
            lx = in.x;
        }
        legend_compared(c, ly, lx);
    }
}

static void draw(curves *c, ui_rect r, int focused)
{
    if (!place(c, r, focused))
        return;
    eng_snapshot_series(c->f->s, c->live);
    gather_live(c);
    gather_compared(c);
    if (c->ns == 0) {
        say_empty(c);
        return;
    }
    y_range(c);
    x_range(c);
    if (plot(c) != 0)
        return;
    ticks(c);
    if (!(c->cursor_on && cursor(c)))
        legend(c);
}

void ui_panel_curves(WINDOW *w, ui_rect r, const ui_frame *f, const ui_view *v, int focused)
{
    curves c;
    memset(&c, 0, sizeof c);
    c.w = w;
    c.f = f;
    c.v = v;
    c.metric = v->metric;
    c.axis = ui_panel_curves_axis(f, v, &c.auto_ratio);
    c.logy = v->logy && (c.metric == UI_METRIC_LOSS || c.metric == UI_METRIC_LR);
    c.sm = smoothing(v);
    c.nc = f->compare ? (f->n_compare < UI_MAX_COMPARE ? f->n_compare : UI_MAX_COMPARE) : 0;
    c.mono = ui_draw_color_mode() == UI_COLOR_NONE;
    c.raw_k = c.smooth_k = c.et_k = c.ev_k = -1;
    draw(&c, r, focused);
    eng_series_free(c.live);
}

/* ---- keys ---------------------------------------------------------------------- */

/* Left/Right on the zoomed curves: the value cursor, one column at a time; it
 * starts at the right end (the latest figures). */
static void move_cursor(ui_view *v, ui_rect r, int step)
{
    int pw = r.w - 2 - 7;
    if (pw < 1)
        return;
    if (v->cursor < 0 || v->cursor >= pw)
        v->cursor = pw - 1;
    else
        v->cursor += step;
    if (v->cursor < 0)
        v->cursor = 0;
    if (v->cursor >= pw)
        v->cursor = pw - 1;
}

/* The curves' view keys act whichever panel has the focus; Left/Right only
 * while the curves are zoomed (else they move the focus). */
int ui_panel_curves_key(ui_panel_keys *k, ui_act act)
{
    static const char *const names[UI_X_COUNT] = { "updates", "epochs",
                                                   "wall-clock time since each run began" };
    ui_view *v = k->v;
    switch (act) {
    case UI_ACT_LEFT:
    case UI_ACT_RIGHT:
        if (v->zoom != UI_P_CURVES)
            return 0;
        move_cursor(v, k->r, act == UI_ACT_LEFT ? -1 : 1);
        return 1;
    case UI_ACT_XAXIS: {
        double ratio;
        v->xaxis = (ui_panel_curves_axis(k->f, v, &ratio) + 1) % UI_X_COUNT;
        snprintf(k->note, sizeof k->note, "curves by %s", names[v->xaxis]);
        k->note_role = UI_R_DIM;
        return 1;
    }
    case UI_ACT_METRIC:
        v->metric = (v->metric + 1) % UI_METRIC_COUNT;
        return 1;
    case UI_ACT_LOGSCALE:
        v->logy = !v->logy;
        return 1;
    case UI_ACT_SMOOTH_MORE:
        if (v->smooth + 1 < UI_SMOOTH_STEPS)
            v->smooth++;
        return 1;
    case UI_ACT_SMOOTH_LESS:
        if (v->smooth > 0)
            v->smooth--;
        return 1;
    default:
        return 0;
    }
}
