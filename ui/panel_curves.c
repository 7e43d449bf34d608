/* panel_curves — the curves panel: this run's and the compared runs' curves as
 * one series type (run_series), drawn in stages, and its keys. */
#include "ui/panels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/chart.h"

/* ---- curves -------------------------------------------------------------------- */

static float epoch_value(const run_epoch *e, int metric, int val)
{
    switch (metric) {
    case UI_METRIC_LOSS: return (float)(val ? e->val_loss : e->train_loss);
    case UI_METRIC_ACC: return (float)(val ? e->val_acc : e->train_acc);
    case UI_METRIC_F1: return (float)(val ? e->val_f1 : e->train_f1);
    default: return NAN;
    }
}

/* The compared runs' series of a metric: train, validation (RUN_S_*). */
static void compare_series(int metric, int *train, int *val)
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

/* This run's x positions: an update's epoch (fraction) and wall-clock second,
 * from the epochs' ends (cumulative updates and seconds) and, inside the epoch
 * under way, its pace so far. */
typedef struct xmap {
    const float *cu, *ct;   /* ne epochs' ends: updates, seconds */
    int ne;
    double spe;             /* updates per epoch */
    double now_u, now_t;    /* the run's update and elapsed seconds */
} xmap;

static double xmap_of(const xmap *m, int axis, double u)
{
    if (axis == UI_X_UPDATE)
        return u;
    double pu = 0, pv = 0; /* the epoch end before u */
    for (int i = 0; i < m->ne; i++) {
        double cu = m->cu[i], cv = axis == UI_X_EPOCH ? i + 1 : m->ct[i];
        if (u <= cu)
            return cu > pu ? pv + (cv - pv) * (u - pu) / (cu - pu) : cv;
        pu = cu;
        pv = cv;
    }
    if (axis == UI_X_EPOCH)
        return m->spe > 0 ? pv + (u - pu) / m->spe : NAN;
    /* Inside the epoch under way: at the pace since the last epoch's end. */
    if (m->now_u > pu && m->now_t > pv)
        return pv + (m->now_t - pv) * (u - pu) / (m->now_u - pu);
    return m->ne > 0 && pu > 0 ? pv / pu * u : NAN;
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

void ui_panel_curves(WINDOW *w, ui_rect r, const ui_frame *f, const ui_view *v, int focused)
{
    const run_snapshot *s = f->s;
    int metric = v->metric;
    int axis = v->xaxis >= 0 && v->xaxis < UI_X_COUNT ? v->xaxis : UI_X_UPDATE;
    int logy = v->logy && (metric == UI_METRIC_LOSS || metric == UI_METRIC_LR);
    double sm = ui_panel_smooth[v->smooth >= 0 && v->smooth < UI_SMOOTH_STEPS ? v->smooth : 0];
    int nc = f->compare ? (f->n_compare < UI_MAX_COMPARE ? f->n_compare : UI_MAX_COMPARE) : 0;
    static const char *const axis_name[UI_X_COUNT] = { "update", "epoch", "time" };
    char title[160];
    snprintf(title, sizeof title, "Curves: %s%s by %s  smooth %.2g%s%s",
             ui_panel_metric_name(metric), logy ? " (log)" : "", axis_name[axis], sm,
             nc ? "  + compared" : "", focused ? "  [v l x + -]" : "");
    ui_rect in = ui_draw_box(w, r, title, focused);
    if (in.h < 4 || in.w < 16)
        return;
    const int yw = 7;
    int cursor_on = v->cursor >= 0 && v->zoom == UI_P_CURVES;
    /* Rows under the plot: the x axis, the legend (a second one for the compared
     * runs when there is room), and with the cursor a row per run. */
    int legend_rows = nc > 0 && in.h >= 10 ? 2 : 1;
    int readout = cursor_on ? 1 + nc : 0;
    if (in.h - 1 - legend_rows - readout < 3)
        readout = 0;
    int ph = in.h - 1 - legend_rows - readout, pw = in.w - yw;

    static float smooth[RUN_CURVE_POINTS], cx[RUN_CURVE_POINTS];
    static float ex[RUN_MAX_EPOCHS], et[RUN_MAX_EPOCHS], ev[RUN_MAX_EPOCHS];
    static float cu[RUN_MAX_EPOCHS], ct[RUN_MAX_EPOCHS];
    int n = s->curve_n < RUN_CURVE_POINTS ? s->curve_n : RUN_CURVE_POINTS;
    const float *src = metric == UI_METRIC_LOSS ? s->curve_loss
                       : metric == UI_METRIC_ACC ? s->curve_acc
                       : metric == UI_METRIC_LR  ? s->curve_lr
                                                 : NULL;
    if (!src)
        n = 0;
    int stride = s->curve_stride > 0 ? s->curve_stride : 1;
    if (n > 0)
        ui_chart_ema(src, n, metric == UI_METRIC_LR ? 0 : sm, smooth);
    int ne = s->history_n < RUN_MAX_EPOCHS ? s->history_n : RUN_MAX_EPOCHS;
    double cum = 0, secs = 0;
    for (int i = 0; i < ne; i++) {
        long long upd = s->history[i].updates > 0 ? s->history[i].updates : s->steps_per_epoch;
        cum += (double)upd;
        secs += s->history[i].seconds > 0 ? s->history[i].seconds : 0;
        cu[i] = (float)cum;
        ct[i] = (float)secs;
        et[i] = metric == UI_METRIC_LR ? NAN : epoch_value(&s->history[i], metric, 0);
        ev[i] = metric == UI_METRIC_LR ? NAN : epoch_value(&s->history[i], metric, 1);
    }
    xmap xm = { cu, ct, ne, (double)s->steps_per_epoch, (double)s->update, s->elapsed };
    for (int i = 0; i < ne; i++)
        ex[i] = (float)xmap_of(&xm, axis, cu[i]);
    for (int i = 0; i < n; i++)
        cx[i] = (float)xmap_of(&xm, axis, (double)(i + 1) * stride);
    int mono = ui_draw_color_mode() == UI_COLOR_NONE;
    ui_chart_series ser[4 + 2 * UI_MAX_COMPARE];
    int ns = 0;
    int raw_k = -1, smooth_k = -1, et_k = -1, ev_k = -1, cmp_k[UI_MAX_COMPARE][2];
    if (n > 0 && sm > 0 && metric != UI_METRIC_LR) {
        raw_k = ns;
        ser[ns++] = (ui_chart_series){ src, cx, 0, 0, n, UI_R_DIM, 0, 1 };
    }
    if (n > 0) {
        smooth_k = ns;
        ser[ns++] = (ui_chart_series){ smooth, cx, 0, 0, n, UI_R_S1, 0, 0 };
    }
    if (ne > 0 && metric != UI_METRIC_LR) {
        et_k = ns;
        ser[ns++] = (ui_chart_series){ et, ex, 0, 0, ne, UI_R_S2, mono ? 't' : 0, 0 };
        ev_k = ns;
        ser[ns++] = (ui_chart_series){ ev, ex, 0, 0, ne, UI_R_S3, mono ? 'v' : 0, 0 };
    }
    int ctr, cvl;
    compare_series(metric, &ctr, &cvl);
    for (int k = 0; k < nc; k++) {
        const run_figures *c = f->compare[k];
        ui_role role = ui_panel_compare_role(k);
        cmp_k[k][0] = cmp_k[k][1] = -1;
        if (ctr >= 0 && c->s[ctr].n > 0) {
            cmp_k[k][0] = ns;
            ser[ns++] = (ui_chart_series){ c->s[ctr].y, c->s[ctr].x[axis], 0, 0, c->s[ctr].n,
                                           role, 0, 1 };
        }
        if (cvl >= 0 && c->s[cvl].n > 0) {
            cmp_k[k][1] = ns;
            ser[ns++] = (ui_chart_series){ c->s[cvl].y, c->s[cvl].x[axis], 0, 0, c->s[cvl].n,
                                           role, mono ? (uint32_t)('1' + k) : 0, 0 };
        }
    }
    if (ns == 0) {
        const char *msg = metric == UI_METRIC_F1 ? "macro F1 comes after the first epoch"
                          : s->state == RUN_IDLE  ? "no updates yet: s starts the run"
                                                  : "waiting for the first update";
        if (f->opened)
            msg = "the run's folder holds no such curve";
        int mw = ui_draw_width(msg);
        ui_draw_text(w, in.y + ph / 2, in.x + (in.w > mw ? (in.w - mw) / 2 : 0), in.w, UI_R_DIM,
                     msg);
        return;
    }
    ui_chart_axis ya, xa = { 0, 1, 0 };
    /* The y range follows what is drawn; the raw curve's outliers would squash
     * the smoothed one, so the range comes from the others. */
    {
        ui_chart_series rs[4 + 2 * UI_MAX_COMPARE];
        int nr = 0;
        for (int k = 0; k < ns; k++)
            if (k != raw_k)
                rs[nr++] = ser[k];
        ui_chart_yrange(rs, nr, logy, &ya);
    }
    double xmax = axis == UI_X_EPOCH ? 1 : axis == UI_X_TIME ? 10 : 1;
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < ser[k].n; i++)
            if (isfinite(ser[k].x[i]) && ser[k].x[i] > xmax)
                xmax = ser[k].x[i];
    if (axis == UI_X_UPDATE && (double)s->update > xmax)
        xmax = (double)s->update;
    xa.hi = xmax;
    ui_cells g;
    if (ui_draw_cells_init(&g, ph, pw) != 0)
        return;
    ui_chart_plot(&g, xa, ya, ser, ns);
    ui_draw_cells(w, in.y, in.x + yw, &g);
    ui_draw_cells_free(&g);
    char num[16];
    int label_rows[3] = { 0, ph / 2, ph - 1 };
    for (int i = 0; i < 3; i++) {
        if (i > 0 && label_rows[i] == label_rows[i - 1])
            continue;
        double val = ui_chart_row_value(ya, ph, label_rows[i]);
        ui_chart_fmt(val, yw - 1, num, sizeof num);
        ui_draw_textf(w, in.y + label_rows[i], in.x, yw - 1, UI_R_DIM, "%*s", yw - 1, num);
    }
    for (int y = 0; y < ph; y++)
        ui_draw_glyph(w, in.y + y, in.x + yw - 1, 0x2502, UI_R_DIM);
    /* x axis: a rule with a tick at every epoch's end of this run, 0 and the end. */
    int ay = in.y + ph;
    ui_draw_hline(w, ay, in.x + yw, pw, 0x2500, UI_R_DIM);
    for (int i = 0; i < ne; i++) {
        if (!isfinite(ex[i]))
            continue;
        int tx = (int)lround(ex[i] / xmax * (pw * 2 - 1)) / 2;
        if (tx >= 0 && tx < pw)
            ui_draw_glyph(w, ay, in.x + yw + tx, '+', UI_R_DIM);
    }
    ui_draw_text(w, ay, in.x + yw - 1, 2, UI_R_DIM, "0");
    char lab[48];
    fmt_x(axis, xmax, lab, sizeof lab);
    int lw = (int)strlen(lab);
    ui_draw_text(w, ay, in.x + in.w - lw, lw, UI_R_DIM, lab);
    /* The value cursor: a column, and the values of every run there. */
    if (cursor_on) {
        int col = v->cursor < pw ? v->cursor : pw - 1;
        double xc = pw > 1 ? xmax * (2.0 * col + 0.5) / (pw * 2 - 1) : 0;
        for (int y = 0; y < ph; y++) {
            chtype here = mvwinch(w, in.y + y, in.x + yw + col) & A_CHARTEXT;
            if (here == ' ')
                ui_draw_glyph(w, in.y + y, in.x + yw + col, 0x2506, UI_R_TITLE);
        }
        ui_draw_glyph(w, ay, in.x + yw + col, 0x2534, UI_R_TITLE);
        int ry = ay + 1 + legend_rows;
        char line[512], xs[48], a1[16], a2[16], a3[16];
        fmt_x(axis, xc, xs, sizeof xs);
        for (int k = -1; k < nc && readout > 0; k++) {
            int len = 0;
            ui_role role = k < 0 ? UI_R_NORMAL : ui_panel_compare_role(k);
            if (k < 0) {
                double su = smooth_k >= 0 ? ui_chart_value_at(&ser[smooth_k], xc) : NAN;
                double tv = et_k >= 0 ? ui_chart_value_at(&ser[et_k], xc) : NAN;
                double vv = ev_k >= 0 ? ui_chart_value_at(&ser[ev_k], xc) : NAN;
                ui_chart_fmt(su, 6, a1, sizeof a1);
                ui_chart_fmt(tv, 6, a2, sizeof a2);
                ui_chart_fmt(vv, 6, a3, sizeof a3);
                len = snprintf(line, sizeof line, "at %s  this run: %s %s  train %s  val %s", xs,
                               metric == UI_METRIC_LR ? "lr" : "per update", a1, a2, a3);
            } else {
                double tv = cmp_k[k][0] >= 0 ? ui_chart_value_at(&ser[cmp_k[k][0]], xc) : NAN;
                double vv = cmp_k[k][1] >= 0 ? ui_chart_value_at(&ser[cmp_k[k][1]], xc) : NAN;
                ui_chart_fmt(tv, 6, a2, sizeof a2);
                ui_chart_fmt(vv, 6, a3, sizeof a3);
                if (metric == UI_METRIC_LR)
                    len = snprintf(line, sizeof line, "%s: lr %s", f->compare[k]->name, a3);
                else
                    len = snprintf(line, sizeof line, "%s: train %s  val %s",
                                   f->compare[k]->name, a2, a3);
            }
            (void)len;
            ui_draw_text_cut(w, ry, in.x, in.w, role, line);
            ry++;
        }
    }
    /* legend */
    int lx = in.x, ly = ay + 1;
    if (metric != UI_METRIC_F1 && n > 0)
        lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, UI_R_S1,
                           metric == UI_METRIC_LR ? "-- lr per update  " : "-- train/update  ");
    if (metric != UI_METRIC_LR && ne > 0) {
        lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, UI_R_S2,
                           mono ? "t train/epoch  " : "-- train/epoch  ");
        lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, UI_R_S3,
                           mono ? "v val/epoch  " : "-- val/epoch  ");
        const run_epoch *e = &s->history[ne - 1];
        float lv = epoch_value(e, metric, 1);
        if (isfinite(lv)) {
            ui_chart_fmt(lv, 6, num, sizeof num);
            char last[48];
            snprintf(last, sizeof last, "val %s  ", num);
            lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, UI_R_S3, last);
        }
    }
    if (nc > 0) {
        if (legend_rows > 1) {
            ly++;
            lx = in.x;
        }
        lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, UI_R_DIM,
                           metric == UI_METRIC_LR ? "compared: " : "compared (val line, train dots): ");
        for (int k = 0; k < nc && lx < in.x + in.w; k++) {
            char item[300];
            const run_figures *c = f->compare[k];
            int drawn = (cmp_k[k][0] >= 0 || cmp_k[k][1] >= 0);
            int on_axis = 0;
            for (int j = 0; j < 2; j++)
                for (int i = 0; cmp_k[k][j] >= 0 && i < ser[cmp_k[k][j]].n && !on_axis; i++)
                    on_axis = isfinite(ser[cmp_k[k][j]].x[i]);
            snprintf(item, sizeof item, "%s%s %s%s  ", mono ? "" : "\xe2\x94\x81",
                     mono ? (char[2]){ (char)('1' + k), 0 } : "", c->name,
                     !drawn ? " (none)" : !on_axis ? " (no x)" : "");
            lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, ui_panel_compare_role(k), item);
        }
    }
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
    case UI_ACT_XAXIS:
        v->xaxis = (v->xaxis + 1) % UI_X_COUNT;
        snprintf(k->note, sizeof k->note, "curves by %s", names[v->xaxis]);
        k->note_role = UI_R_DIM;
        return 1;
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
