/* panels — what the panels share: the view's defaults, the roles of states and
 * compared runs, the metrics' and classes' names, the bar, and the table of the
 * panels that the app draws from and offers keys to (see panels.h). Each panel
 * is in a file of its own: panel_header.c, panel_replicas.c, panel_curves.c,
 * panel_labels.c, panel_log.c; the footer, the preview's frame, help, the
 * dialog and the too-small note in panel_overlays.c. */
#include "ui/panels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/chart.h"

const double ui_panel_smooth[UI_SMOOTH_STEPS] = { 0, 0.3, 0.6, 0.8, 0.9, 0.95, 0.99 };

void ui_panel_view_defaults(ui_view *v)
{
    memset(v, 0, sizeof *v);
    v->focus = UI_P_CURVES;
    v->zoom = -1;
    v->metric = UI_METRIC_LOSS;
    v->smooth = 3;
    v->label_bins = 1;
    v->cursor = -1;
    v->xaxis = UI_X_AUTO;
}

ui_role ui_panel_state_role(run_state st)
{
    switch (st) {
    case RUN_RUNNING: return UI_R_OK;
    case RUN_PREPARING: return UI_R_INFO;
    case RUN_PAUSED: return UI_R_WARN;
    case RUN_DONE: return UI_R_INFO;
    case RUN_FAILED: return UI_R_BAD;
    case RUN_STOPPED: return UI_R_WARN;
    default: return UI_R_DIM;
    }
}

const char *ui_panel_metric_name(int m)
{
    static const char *const n[UI_METRIC_COUNT] = { "loss", "accuracy", "macro F1",
                                                    "learning rate" };
    return m >= 0 && m < UI_METRIC_COUNT ? n[m] : "?";
}

const char *ui_panel_class_name(const ui_frame *f, int k, char *buf, size_t n)
{
    if (f->names && k >= 0 && k < f->n_names && f->names[k] && f->names[k][0])
        return f->names[k];
    snprintf(buf, n, "class %d", k);
    return buf;
}

void ui_panel_bar(WINDOW *w, int y, int x, int width, double frac, ui_role role, int track)
{
    uint32_t g[256];
    if (width > 256)
        width = 256;
    if (width <= 0)
        return;
    ui_chart_bar(frac, width, g);
    for (int i = 0; i < width; i++) {
        if (g[i] == ' ' && track)
            ui_draw_glyph(w, y, x + i, 0x00b7, UI_R_DIM);
        else if (g[i] != ' ')
            ui_draw_glyph(w, y, x + i, g[i], role);
    }
}

ui_role ui_panel_compare_role(int k)
{
    static const ui_role r[UI_MAX_COMPARE] = { UI_R_C1, UI_R_C2, UI_R_C3,
                                               UI_R_C4, UI_R_C5, UI_R_C6 };
    return r[(k % UI_MAX_COMPARE + UI_MAX_COMPARE) % UI_MAX_COMPARE];
}

const ui_panel_class *ui_panel_classes(int *n)
{
    /* In the order they were always drawn: the preview last. */
    static const ui_panel_class c[] = {
        { UI_P_REPLICAS, ui_panel_replicas, NULL },
        { UI_P_CURVES, ui_panel_curves, ui_panel_curves_key },
        { UI_P_LABELS, ui_panel_labels, ui_panel_labels_key },
        { UI_P_LOG, ui_panel_log, ui_panel_log_key },
        { UI_P_PREVIEW, NULL, NULL },
    };
    *n = (int)(sizeof c / sizeof c[0]);
    return c;
}
