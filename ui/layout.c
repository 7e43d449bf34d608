#include "ui/layout.h"

#include <limits.h>

/* v within [lo, hi]; lo wins when they cross. */
static int clampi(int v, int lo, int hi)
{
    if (v > hi)
        v = hi;
    if (v < lo)
        v = lo;
    return v;
}

static ui_rect rect(int y, int x, int h, int w)
{
    ui_rect r = { y, x, h, w };
    return r;
}

void ui_layout_compute(ui_layout *l, int rows, int cols, int zoom, int replicas)
{
    *l = (ui_layout){ 0 };
    l->rows = rows;
    l->cols = cols;
    l->zoom = zoom >= 0 && zoom < UI_P_COUNT ? zoom : -1;
    if (rows < UI_LAYOUT_MIN_ROWS || cols < UI_LAYOUT_MIN_COLS) {
        l->too_small = 1;
        l->zoom = -1;
        return;
    }
    l->header = rect(0, 0, 2, cols);
    l->footer = rect(rows - 1, 0, 1, cols);
    l->body = rect(2, 0, rows - 3, cols);
    const ui_rect b = l->body;
    if (l->zoom >= 0) {
        l->panel[l->zoom] = b;
        return;
    }
    /* The replicas panel: borders, a column header, one row per replica, the queue
     * and the totals. Beyond its share of the column it lists what fits. */
    int rep_want = replicas + 5;
    if (cols >= 120 && rows >= 30) {
        l->wide = 1;
        int c1 = cols * 28 / 100, c3 = cols * 36 / 100;
        int c2 = cols - c1 - c3;
        int rep_h = clampi(rep_want, 6, b.h / 2);
        l->panel[UI_P_REPLICAS] = rect(b.y, 0, rep_h, c1);
        l->panel[UI_P_LABELS] = rect(b.y + rep_h, 0, b.h - rep_h, c1);
        int cur_h = b.h * 3 / 5;
        l->panel[UI_P_CURVES] = rect(b.y, c1, cur_h, c2);
        l->panel[UI_P_LOG] = rect(b.y + cur_h, c1, b.h - cur_h, c2);
        l->panel[UI_P_PREVIEW] = rect(b.y, c1 + c2, b.h, c3);
        return;
    }
    int lw = cols / 2, rw = cols - lw;
    int rep_h = clampi(rep_want, b.h < 16 ? 5 : 6, b.h * 2 / 5);
    int log_h = clampi(b.h / 3, 4, 10);
    int lab_h = b.h - rep_h - log_h;
    l->panel[UI_P_REPLICAS] = rect(b.y, 0, rep_h, lw);
    l->panel[UI_P_LABELS] = rect(b.y + rep_h, 0, lab_h, lw);
    l->panel[UI_P_LOG] = rect(b.y + rep_h + lab_h, 0, log_h, lw);
    int cur_h = (b.h + 1) / 2;
    l->panel[UI_P_CURVES] = rect(b.y, lw, cur_h, rw);
    l->panel[UI_P_PREVIEW] = rect(b.y + cur_h, lw, b.h - cur_h, rw);
}

int ui_layout_visible(const ui_layout *l, int p)
{
    return p >= 0 && p < UI_P_COUNT && l->panel[p].h > 0 && l->panel[p].w > 0;
}

int ui_layout_overlap(ui_rect a, ui_rect b)
{
    if (a.h <= 0 || a.w <= 0 || b.h <= 0 || b.w <= 0)
        return 0;
    return a.y < b.y + b.h && b.y < a.y + a.h && a.x < b.x + b.w && b.x < a.x + a.w;
}

/* Length of the overlap of [a0, a0+an) and [b0, b0+bn). */
static int span_overlap(int a0, int an, int b0, int bn)
{
    int lo = a0 > b0 ? a0 : b0;
    int hi = a0 + an < b0 + bn ? a0 + an : b0 + bn;
    return hi > lo ? hi - lo : 0;
}

int ui_layout_neighbor(const ui_layout *l, int from, ui_dir dir)
{
    if (!ui_layout_visible(l, from))
        return from;
    ui_rect a = l->panel[from];
    int best = from, best_gap = INT_MAX, best_ov = -1;
    for (int p = 0; p < UI_P_COUNT; p++) {
        if (p == from || !ui_layout_visible(l, p))
            continue;
        ui_rect c = l->panel[p];
        int gap, ov;
        switch (dir) {
        case UI_DIR_UP:
            gap = a.y - (c.y + c.h);
            ov = span_overlap(a.x, a.w, c.x, c.w);
            break;
        case UI_DIR_DOWN:
            gap = c.y - (a.y + a.h);
            ov = span_overlap(a.x, a.w, c.x, c.w);
            break;
        case UI_DIR_LEFT:
            gap = a.x - (c.x + c.w);
            ov = span_overlap(a.y, a.h, c.y, c.h);
            break;
        default:
            gap = c.x - (a.x + a.w);
            ov = span_overlap(a.y, a.h, c.y, c.h);
            break;
        }
        /* Adjacent panels touch (gap 0); the nearest wins, then the one sharing
         * the longest edge with the focused panel. */
        if (gap < 0 || ov <= 0)
            continue;
        if (gap < best_gap || (gap == best_gap && ov > best_ov)) {
            best = p;
            best_gap = gap;
            best_ov = ov;
        }
    }
    return best;
}

const char *ui_layout_name(int p)
{
    static const char *const names[UI_P_COUNT] = { "Replicas", "Curves", "Labels", "Preview",
                                                   "Log" };
    return p >= 0 && p < UI_P_COUNT ? names[p] : "?";
}
