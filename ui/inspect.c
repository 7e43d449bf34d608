#include "ui/inspect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "ui/chart.h"

int ui_inspect_confusions(const long long *c, int k, ui_inspect_pair *out, int max)
{
    int n = 0;
    for (int t = 0; t < k; t++)
        for (int p = 0; p < k; p++) {
            long long v = c[(size_t)t * k + p];
            if (t == p || v <= 0)
                continue;
            /* Insertion into the sorted top list. */
            int at = n;
            while (at > 0 && out[at - 1].count < v)
                at--;
            if (at >= max)
                continue;
            int last = n < max ? n : max - 1;
            for (int i = last; i > at; i--)
                out[i] = out[i - 1];
            out[at] = (ui_inspect_pair){ t, p, v };
            if (n < max)
                n++;
        }
    return n;
}

static const double *g_sort_f1;

static int by_f1_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    double fx = g_sort_f1[x], fy = g_sort_f1[y];
    if (fx < fy)
        return -1;
    if (fx > fy)
        return 1;
    return x - y;
}

void ui_inspect_order(const double *f1, int k, int by_f1, int *order)
{
    for (int i = 0; i < k; i++)
        order[i] = i;
    if (by_f1 && f1) {
        g_sort_f1 = f1; /* qsort has no context argument; the UI thread only */
        qsort(order, (size_t)k, sizeof *order, by_f1_cmp);
        g_sort_f1 = NULL;
    }
}

int ui_inspect_cm_cell(const long long *c, int k, int t, int p, int percent, char *text,
                       size_t n)
{
    long long v = c[(size_t)t * k + p];
    if (v <= 0) {
        snprintf(text, n, ".");
        return 0;
    }
    double heat;
    if (percent) {
        long long row = 0;
        for (int j = 0; j < k; j++)
            row += c[(size_t)t * k + j];
        double share = (double)v / (double)row;
        snprintf(text, n, "%.0f", 100 * share);
        heat = share;
    } else {
        /* Against the largest count of its kind: right (the diagonal) or wrong. */
        long long max = 1;
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++)
                if ((i == j) == (t == p) && c[(size_t)i * k + j] > max)
                    max = c[(size_t)i * k + j];
        if (v < 1000)
            snprintf(text, n, "%lld", v);
        else
            ui_chart_fmt((double)v, 3, text, n);
        heat = (double)v / (double)max;
    }
    int level = (int)(heat * 5 + 0.999);
    return level < 1 ? 1 : level > 5 ? 5 : level;
}

void ui_inspect_init(ui_inspect *v)
{
    memset(v, 0, sizeof *v);
    v->seen_history = -1;
}

static void drop_page(ui_inspect *v)
{
    for (int i = 0; i < v->n_slots; i++) {
        if (v->loaded[i])
            run_val_item_free(&v->item[i]);
        v->loaded[i] = 0;
    }
    v->n_items = v->n_slots = 0;
    v->page_id++;
}

static void free_losses(ui_inspect *v)
{
    free(v->loss);
    free(v->loss_all);
    free(v->loss_wrong);
    v->loss = NULL;
    v->loss_all = v->loss_wrong = NULL;
}

static const float *g_sort_loss;

/* Highest loss first; a NaN loss last; ties in validation order. */
static int by_loss_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    float lx = g_sort_loss[x], ly = g_sort_loss[y];
    int nx = lx != lx, ny = ly != ly;
    if (nx != ny)
        return nx - ny;
    if (!nx && lx != ly)
        return lx > ly ? -1 : 1;
    return x - y;
}

/* The two orders by loss, once the labels, predictions and losses of all n
 * examples are read. */
static void order_by_loss(ui_inspect *v, const int *label, const int *pred)
{
    v->loss_all = malloc(sizeof(int) * (size_t)v->n);
    v->loss_wrong = malloc(sizeof(int) * (size_t)(v->n_wrong > 0 ? v->n_wrong : 1));
    if (!v->loss_all || !v->loss_wrong) {
        free_losses(v);
        return;
    }
    for (long long i = 0; i < v->n; i++)
        v->loss_all[i] = (int)i;
    g_sort_loss = v->loss; /* qsort has no context argument; the UI thread only */
    qsort(v->loss_all, (size_t)v->n, sizeof *v->loss_all, by_loss_cmp);
    g_sort_loss = NULL;
    long long k = 0;
    for (long long i = 0; i < v->n; i++) {
        int j = v->loss_all[i];
        if (k < v->n_wrong && label[j] != pred[j])
            v->loss_wrong[k++] = j;
    }
}

void ui_inspect_free(ui_inspect *v)
{
    ui_inspect_cam_close(v);
    drop_page(v);
    run_val_report_free(&v->rep);
    free(v->wrong);
    v->wrong = NULL;
    free_losses(v);
    v->n = v->scanned = v->n_wrong = 0;
}

long long ui_inspect_count(const ui_inspect *v)
{
    return v->mistakes ? v->n_wrong : v->n;
}

/* The validation index at list position pos (-1 when there is none yet). */
static long long index_at(const ui_inspect *v, long long pos)
{
    if (v->by_loss && v->loss_all) {
        if (pos < 0 || pos >= (v->mistakes ? v->n_wrong : v->n))
            return -1;
        return v->mistakes ? v->loss_wrong[pos] : v->loss_all[pos];
    }
    if (!v->mistakes)
        return pos < v->n ? pos : -1;
    return pos >= 0 && pos < v->n_wrong ? v->wrong[pos] : -1;
}

long long ui_inspect_selected(const ui_inspect *v)
{
    return v->sel < ui_inspect_count(v) ? index_at(v, v->sel) : -1;
}

void ui_inspect_set_results(ui_inspect *v, run_val_report *rep, const int *labels,
                            const int *preds, long long n, const char *no_images)
{
    ui_inspect_free(v);
    v->rep = *rep;
    memset(rep, 0, sizeof *rep);
    snprintf(v->no_images, sizeof v->no_images, "%s", no_images);
    v->wrong = n > 0 ? malloc(sizeof(int) * (size_t)n) : NULL;
    if (n > 0 && !v->wrong)
        return;
    v->n = v->scanned = n;
    for (long long i = 0; i < n; i++)
        if (labels[i] != preds[i])
            v->wrong[v->n_wrong++] = (int)i;
}

void ui_inspect_work(ui_inspect *v, eng *g, int history_n)
{
    if (history_n != v->seen_history) {
        /* New results: start the collection over. */
        v->seen_history = history_n;
        run_val_report_free(&v->rep);
        if (eng_val_report_get(g, &v->rep) != PT_OK)
            memset(&v->rep, 0, sizeof v->rep);
        drop_page(v);
        free(v->wrong);
        v->wrong = NULL;
        free_losses(v);
        v->n = v->scanned = v->n_wrong = 0;
        v->err[0] = 0;
        if (v->rep.epoch > 0 && v->rep.n > 0) {
            int *label = malloc(sizeof(int) * (size_t)v->rep.n);
            int *pred = malloc(sizeof(int) * (size_t)v->rep.n);
            v->wrong = malloc(sizeof(int) * (size_t)v->rep.n);
            v->loss = malloc(sizeof(float) * (size_t)v->rep.n);
            if (label && pred && v->wrong && v->loss) {
                v->n = v->rep.n;
                /* Every label and prediction at once, from memory: the mistakes
                 * filter and its count need no image reads. They stay as they
                 * are until the next results, so the mistakes are listed once. */
                v->scanned = eng_val_preds(g, 0, (int)v->n, label, pred, NULL, v->loss);
                for (long long i = 0; i < v->scanned; i++)
                    if (label[i] != pred[i])
                        v->wrong[v->n_wrong++] = (int)i;
                if (v->scanned == v->n)
                    order_by_loss(v, label, pred);
                else
                    free_losses(v);
            } else {
                free(v->wrong);
                v->wrong = NULL;
                free_losses(v);
            }
            free(label);
            free(pred);
        }
        if (v->pos >= v->n)
            v->pos = 0;
        v->sel = v->pos;
        if (v->cam_open && ui_inspect_cam_open(v) == 0)
            ui_inspect_cam_close(v); /* asked again, for the new results */
    }
    ui_inspect_cam_work(v, g);
    if (v->n == 0)
        return;
    /* The page on screen: ask for every image on it at once (the engine loads
     * them on its sample thread) and show the loaded ones from the top. */
    int want = v->per_page < UI_INSPECT_PAGE_MAX ? v->per_page : UI_INSPECT_PAGE_MAX;
    int same = v->n_slots == want;
    for (int i = 0; i < v->n_slots && same; i++)
        if (v->item_index[i] != index_at(v, v->pos + i))
            same = 0;
    if (!same) {
        drop_page(v);
        v->n_slots = 0;
        while (v->n_slots < want && index_at(v, v->pos + v->n_slots) >= 0) {
            v->item_index[v->n_slots] = index_at(v, v->pos + v->n_slots);
            v->n_slots++;
        }
    }
    int got = 0;
    for (int i = 0; i < v->n_slots; i++) {
        if (v->loaded[i])
            continue;
        pt_err e;
        run_val_item *it = &v->item[i];
        int rc = eng_val_item_get(g, v->item_index[i], it, &e);
        if (rc == 0)
            continue; /* still loading */
        if (rc < 0) {
            snprintf(v->err, sizeof v->err, "%s", e.msg);
            memset(it, 0, sizeof *it);
            it->label = it->pred = -1;
        }
        v->loaded[i] = 1;
        got = 1;
    }
    int top = 0;
    while (top < v->n_slots && v->loaded[top])
        top++;
    if (got && top != v->n_items)
        v->page_id++;
    v->n_items = top;
}

/* The matrix scrolled by (dy, dx), within its classes. */
static void cm_scroll(ui_inspect *v, int dy, int dx)
{
    int k = v->rep.n_classes;
    v->cm_top += dy;
    v->cm_left += dx;
    int maxtop = k - (v->cm_rows > 0 ? v->cm_rows : 1), maxleft = k - (v->cm_cols > 0 ? v->cm_cols : 1);
    v->cm_top = v->cm_top > maxtop ? maxtop : v->cm_top;
    v->cm_left = v->cm_left > maxleft ? maxleft : v->cm_left;
    v->cm_top = v->cm_top < 0 ? 0 : v->cm_top;
    v->cm_left = v->cm_left < 0 ? 0 : v->cm_left;
}

void ui_inspect_key(ui_inspect *v, ui_act a)
{
    long long count = ui_inspect_count(v);
    int page = v->per_page > 0 ? v->per_page : 1;
    int rows = v->cm_rows > 1 ? v->cm_rows : 1, trows = v->table_rows > 1 ? v->table_rows : 1;
    if (v->focus == UI_INSPECT_MATRIX) {
        switch (a) {
        case UI_ACT_UP: cm_scroll(v, -1, 0); return;
        case UI_ACT_DOWN: cm_scroll(v, 1, 0); return;
        case UI_ACT_LEFT: cm_scroll(v, 0, -1); return;
        case UI_ACT_RIGHT: cm_scroll(v, 0, 1); return;
        case UI_ACT_PGUP: cm_scroll(v, -rows, 0); return;
        case UI_ACT_PGDN: cm_scroll(v, rows, 0); return;
        case UI_ACT_HOME: v->cm_top = v->cm_left = 0; return;
        default: break;
        }
    } else if (v->focus == UI_INSPECT_TABLE) {
        switch (a) {
        case UI_ACT_PGUP: v->table_top = v->table_top > trows ? v->table_top - trows : 0; return;
        case UI_ACT_PGDN: v->table_top += trows; return; /* clamped when drawn */
        case UI_ACT_HOME: v->table_top = 0; return;
        default: break;
        }
    }
    switch (a) {
    case UI_ACT_RIGHT:
    case UI_ACT_LEFT:
    case UI_ACT_PGDN:
    case UI_ACT_PGUP:
        if (v->focus == UI_INSPECT_IMAGES && (a == UI_ACT_RIGHT || a == UI_ACT_LEFT)) {
            /* The selection moves by one image, turning the page at its ends. */
            long long s = v->sel + (a == UI_ACT_RIGHT ? 1 : -1);
            if (s >= 0 && s < count) {
                v->sel = s;
                if (s >= v->pos + page)
                    v->pos += page;
                else if (s < v->pos)
                    v->pos = v->pos >= page ? v->pos - page : 0;
            }
        } else if (a == UI_ACT_PGDN || a == UI_ACT_RIGHT) {
            /* (Left and Right with the table focused turn the images' pages.) */
            if (v->pos + page < count)
                v->pos += page;
            v->sel = v->pos;
        } else {
            v->pos = v->pos >= page ? v->pos - page : 0;
            v->sel = v->pos;
        }
        break;
    case UI_ACT_HOME:
        v->pos = v->sel = 0;
        break;
    case UI_ACT_MISTAKES:
        v->mistakes = !v->mistakes;
        v->pos = v->sel = 0;
        break;
    case UI_ACT_TOP_LOSSES:
        v->by_loss = !v->by_loss && v->loss_all;
        v->pos = v->sel = 0;
        break;
    case UI_ACT_ZOOM:
        if (v->cam_open)
            ui_inspect_cam_close(v);
        else
            ui_inspect_cam_open(v);
        return;
    case UI_ACT_SORT:
        v->by_f1 = !v->by_f1;
        v->table_top = 0;
        break;
    case UI_ACT_UP:
        if (v->table_top > 0)
            v->table_top--;
        break;
    case UI_ACT_DOWN:
        v->table_top++;
        break;
    case UI_ACT_FOCUS_NEXT:
        v->focus = (v->focus + 1) % UI_INSPECT_PARTS;
        break;
    case UI_ACT_FOCUS_PREV:
        v->focus = (v->focus + UI_INSPECT_PARTS - 1) % UI_INSPECT_PARTS;
        break;
    case UI_ACT_PERCENT:
        v->percent = !v->percent;
        break;
    case UI_ACT_NEXT:
        v->seen_history = -1; /* collect again */
        break;
    default:
        break;
    }
    ui_inspect_cam_follow(v);
}

/* The per-class table's columns for a box w wide: P and R go first, then n,
 * when the names would get fewer than 8 columns (4 at the last). Sets the
 * widths (0: not shown) and returns the names' width, or 0 when even F1 does
 * not fit. */
static int table_columns(int w, int nw_n, int *pr, int *nn)
{
    *pr = 12;
    *nn = nw_n;
    if (w - *pr - 6 - *nn >= 8)
        return w - *pr - 6 - *nn;
    *pr = 0;
    if (w - 6 - *nn >= 6)
        return w - 6 - *nn;
    *nn = 0;
    return w - 6 >= 4 ? w - 6 : 0;
}

static void draw_table(ui_inspect *v, WINDOW *w, ui_rect r, const ui_frame *f)
{
    char title[96];
    int focused = v->focus == UI_INSPECT_TABLE;
    snprintf(title, sizeof title, "Per class, by %s  [o Up Down%s]", v->by_f1 ? "F1" : "class",
             focused ? " PgUp PgDn" : "");
    ui_rect in = ui_draw_box(w, r, title, focused);
    if (in.h <= 0 || in.w <= 0)
        return;
    int k = v->rep.n_classes;
    long long most = 0;
    for (int c = 0; c < k; c++)
        most = v->rep.support[c] > most ? v->rep.support[c] : most;
    char num[32];
    int nw_n = snprintf(num, sizeof num, " %lld", most);
    nw_n = nw_n < 3 ? 3 : nw_n;
    int pr, nn;
    int nw = table_columns(in.w, nw_n, &pr, &nn);
    if (in.h < 2 || nw == 0) {
        /* Never an empty box: what it would show, and how to get it. */
        ui_draw_text_cut(w, in.y, in.x, in.w, UI_R_DIM, "enlarge the terminal for the table");
        v->table_rows = 1;
        return;
    }
    int x = in.x;
    x += ui_draw_textf(w, in.y, x, nw, UI_R_DIM, "%-*s", nw, "class");
    if (pr)
        x += ui_draw_textf(w, in.y, x, pr, UI_R_DIM, " %5s %5s", "P", "R");
    x += ui_draw_textf(w, in.y, x, 6, UI_R_DIM, " %5s", "F1");
    if (nn)
        ui_draw_textf(w, in.y, x, nn, UI_R_DIM, "%*s", nn, "n");
    int *order = malloc(sizeof(int) * (size_t)(k > 0 ? k : 1));
    if (!order)
        return;
    ui_inspect_order(v->rep.f1, k, v->by_f1, order);
    int rows = in.h - 1;
    v->table_rows = rows;
    if (v->table_top > k - rows)
        v->table_top = k - rows > 0 ? k - rows : 0;
    for (int i = 0; i < rows && v->table_top + i < k; i++) {
        int c = order[v->table_top + i], y = in.y + 1 + i;
        char nb[48], line[256];
        ui_draw_text_cut(w, y, in.x, nw - 1, UI_R_NORMAL, ui_panel_class_name(f, c, nb, sizeof nb));
        x = in.x + nw;
        if (pr) {
            snprintf(line, sizeof line, " %5.2f %5.2f", v->rep.precision[c], v->rep.recall[c]);
            x += ui_draw_text(w, y, x, pr, UI_R_NORMAL, line);
        }
        double f1 = v->rep.f1[c];
        snprintf(line, sizeof line, " %5.2f", f1);
        x += ui_draw_text(w, y, x, 6, f1 < 0.5 ? UI_R_BAD : f1 < 0.8 ? UI_R_WARN : UI_R_OK, line);
        if (nn) {
            snprintf(line, sizeof line, "%*lld", nn, v->rep.support[c]);
            ui_draw_text(w, y, x, nn, UI_R_DIM, line);
        }
    }
    free(order);
}

static void draw_pairs(ui_inspect *v, WINDOW *w, ui_rect r, const ui_frame *f)
{
    ui_rect in = ui_draw_box(w, r, "Most confused: true -> predicted", 0);
    if (in.h < 1 || in.w < 16)
        return;
    ui_inspect_pair top[32];
    int n = ui_inspect_confusions(v->rep.confusion, v->rep.n_classes, top,
                                  in.h < 32 ? in.h : 32);
    if (n == 0)
        ui_draw_text(w, in.y, in.x, in.w, UI_R_DIM, "no confusions");
    for (int i = 0; i < n; i++) {
        char a[48], b[48], line[160];
        snprintf(line, sizeof line, "%s -> %s", ui_panel_class_name(f, top[i].truth, a, sizeof a),
                 ui_panel_class_name(f, top[i].pred, b, sizeof b));
        char cnt[24];
        snprintf(cnt, sizeof cnt, " %lld", top[i].count);
        int cw = (int)strlen(cnt);
        ui_draw_text_cut(w, in.y + i, in.x, in.w - cw, UI_R_NORMAL, line);
        ui_draw_text(w, in.y + i, in.x + in.w - cw, cw, UI_R_BAD, cnt);
    }
}

/* The confusion matrix as a heat map: a row per true class (its index and
 * name), a column per predicted class (its index), scrolled to cm_top/cm_left. */
static void draw_matrix(ui_inspect *v, WINDOW *w, ui_rect r, const ui_frame *f)
{
    int k = v->rep.n_classes, focused = v->focus == UI_INSPECT_MATRIX;
    char title[160];
    snprintf(title, sizeof title, "Confusion: true by row, predicted by column, %s  [%% %s]",
             v->percent ? "% of row" : "counts", focused ? "arrows" : "Tab");
    ui_rect in = ui_draw_box(w, r, title, focused);
    if (in.h < 2 || in.w < 16 || k <= 0 || !v->rep.confusion) {
        v->cm_rows = v->cm_cols = 1;
        return;
    }
    char num[32], nb[64];
    int digits = snprintf(num, sizeof num, "%d", k - 1);
    int cw = digits + 1 > 4 ? digits + 1 : 4; /* a cell: 3 digits and a space at least */
    /* Row labels: the index and as much of the name as a third of the box allows. */
    int longest = 0;
    for (int c = 0; c < k; c++) {
        int nw = ui_draw_width(ui_panel_class_name(f, c, nb, sizeof nb));
        longest = nw > longest ? nw : longest;
    }
    int lw = digits + 1 + longest + 1;
    int lw_max = in.w / 3 > digits + 6 ? in.w / 3 : digits + 6;
    lw = lw < lw_max ? lw : lw_max;
    v->cm_rows = in.h - 1;
    v->cm_cols = (in.w - lw) / cw > 1 ? (in.w - lw) / cw : 1;
    cm_scroll(v, 0, 0); /* within the classes for this size */
    int y = in.y, x0 = in.x + lw;
    ui_draw_textf(w, y, in.x, lw, UI_R_DIM, "%*s", lw - 1, "pred");
    for (int j = 0; j < v->cm_cols && v->cm_left + j < k; j++)
        ui_draw_textf(w, y, x0 + j * cw, cw, UI_R_DIM, "%*d", cw, v->cm_left + j);
    for (int i = 0; i < v->cm_rows && v->cm_top + i < k; i++) {
        int t = v->cm_top + i;
        y = in.y + 1 + i;
        ui_draw_textf(w, y, in.x, digits + 1, UI_R_DIM, "%*d", digits, t);
        ui_draw_text_cut(w, y, in.x + digits + 1, lw - digits - 2, UI_R_NORMAL,
                         ui_panel_class_name(f, t, nb, sizeof nb));
        for (int j = 0; j < v->cm_cols && v->cm_left + j < k; j++) {
            int p = v->cm_left + j;
            char cell[16], text[24];
            int heat = ui_inspect_cm_cell(v->rep.confusion, k, t, p, v->percent, cell, sizeof cell);
            snprintf(text, sizeof text, "%*s ", cw - 1, cell);
            wattrset(w, ui_draw_heat(heat, t == p));
            mvwaddnstr(w, y, x0 + j * cw, text, cw);
            wattrset(w, A_NORMAL);
        }
    }
    /* Where the view is, when the matrix does not fit. */
    if (k > v->cm_rows || k > v->cm_cols) {
        char where[96];
        int last_r = v->cm_top + v->cm_rows < k ? v->cm_top + v->cm_rows : k;
        int last_c = v->cm_left + v->cm_cols < k ? v->cm_left + v->cm_cols : k;
        snprintf(where, sizeof where, " rows %d-%d, columns %d-%d of %d ", v->cm_top, last_r - 1,
                 v->cm_left, last_c - 1, k);
        int ww = (int)strlen(where);
        if (ww < r.w - 4)
            ui_draw_text(w, r.y + r.h - 1, r.x + r.w - 2 - ww, ww, UI_R_DIM, where);
    }
}

/* Images and the per-class table above; the confusion matrix beside the most
 * confused pairs below, as tall as the classes need within two fifths. Without
 * images (a run's folder keeps none), the images' box is as tall as its text and
 * the matrix takes the rest of the height. */
static void place(const ui_inspect *v, ui_rect body, ui_rect *left, ui_rect *table,
                  ui_rect *matrix, ui_rect *pairs)
{
    int tw = body.w >= 100 ? 48 : body.w * 2 / 5;
    int sh = v->rep.n_classes + 3;
    int sh_max = body.h * 2 / 5;
    sh = sh > sh_max ? sh_max : sh < 6 ? 6 : sh;
    *table = (ui_rect){ body.y, body.x + body.w - tw, body.h - sh, tw };
    *pairs = (ui_rect){ body.y + body.h - sh, body.x + body.w - tw, sh, tw };
    int lh = body.h - sh;
    if (v->no_images[0]) {
        /* The text's lines and the box; the matrix keeps 6 rows at least. */
        int want = ui_draw_wrap_count(v->no_images, body.w - tw - 4) + 2;
        lh = want < body.h - 6 ? want : body.h - 6;
        lh = lh < 3 ? 3 : lh;
    }
    *left = (ui_rect){ body.y, body.x, lh, body.w - tw };
    *matrix = (ui_rect){ body.y + lh, body.x, body.h - lh, body.w - tw };
}

/* The images' box with the results in its title; returns its inside. */
static ui_rect draw_images_box(ui_inspect *v, WINDOW *w, ui_rect left)
{
    long long count = ui_inspect_count(v);
    long long right = v->scanned - v->n_wrong;
    char title[256], acc[32] = "";
    if (v->scanned == v->n && v->n > 0)
        snprintf(acc, sizeof acc, ", accuracy %.1f%%", 100.0 * (double)right / (double)v->n);
    long long last = v->pos + v->per_page < count ? v->pos + v->per_page : count;
    if (v->no_images[0])
        /* No pages to turn: how many were wrong instead. */
        snprintf(title, sizeof title, "Validation after epoch %d: %lld images%s, %lld wrong",
                 v->rep.epoch, v->n, acc, v->n_wrong);
    else
        snprintf(title, sizeof title,
                 "Validation after epoch %d: %lld images%s | %s%s %lld-%lld of %lld%s",
                 v->rep.epoch, v->n, acc, v->mistakes ? "mistakes" : "all",
                 v->by_loss ? " by loss" : "",
                 count ? v->pos + 1 : 0, last, count, v->scanned < v->n ? " (reading)" : "");
    return ui_draw_box(w, left, title, v->focus == UI_INSPECT_IMAGES);
}

void ui_inspect_draw(ui_inspect *v, WINDOW *w, ui_rect body, const ui_frame *f, ui_preview *pv)
{
    if (v->rep.epoch <= 0 || v->n == 0) {
        ui_rect in = ui_draw_box(w, body, "Inspect validation", 1);
        /* s is offered only where it starts a run. */
        run_state st = f->s ? f->s->state : RUN_IDLE;
        const char *m = f->opened ? "no validation results in this run's folder (petal-tui "
                                    "writes valid_labels.json and valid_preds.jsonl; a Keras "
                                    "run's event files hold none)"
                        : st == RUN_IDLE ? "validation results come after the first epoch "
                                         "(s starts the run)"
                        : st == RUN_PREPARING || st == RUN_RUNNING || st == RUN_PAUSED
                            ? "validation results come after the first epoch"
                            : "no validation results: the run ended before its first epoch "
                              "(s starts a new one)";
        int mw = ui_draw_width(m);
        int mx = in.w > mw ? (in.w - mw) / 2 : 0;
        ui_draw_wrapped(w, (ui_rect){ in.y + in.h / 2, in.x + mx, in.h - in.h / 2, in.w - mx },
                        UI_R_DIM, m);
        ui_preview_hide(pv);
        return;
    }
    ui_rect left, table, matrix, pairs;
    place(v, body, &left, &table, &matrix, &pairs);
    draw_table(v, w, table, f);
    draw_matrix(v, w, matrix, f);
    draw_pairs(v, w, pairs, f);
    ui_rect in = draw_images_box(v, w, left);
    if (v->no_images[0]) {
        ui_preview_hide(pv);
        v->per_page = 1;
        ui_draw_wrapped(w, (ui_rect){ in.y, in.x + 1, in.h, in.w - 2 }, UI_R_DIM, v->no_images);
        return;
    }
    if (in.h < 4 || in.w < 10) {
        ui_preview_hide(pv);
        return;
    }
    if (v->cam_open) {
        ui_inspect_cam_draw(v, w, in, f, pv);
        return;
    }
    long long count = ui_inspect_count(v);
    ui_preview_geom g;
    int sixel = pv->mode == UI_PIX_SIXEL;
    int cw = sixel ? pv->cell_w : 1, ch = sixel ? pv->cell_h : 2;
    int cols = in.w;
    int px_max = sixel ? 128 : 24;
    if (sixel && pv->max_w > 0 && px_max + cw > pv->max_w)
        px_max = pv->max_w - cw; /* one image within what the terminal takes */
    if (ui_preview_fit(cols, in.h, cw, ch, 1, 2, 8, sixel ? 32 : 8, px_max, &g) != 0) {
        ui_preview_hide(pv);
        v->per_page = 1;
        return;
    }
    v->per_page = g.count < UI_INSPECT_PAGE_MAX ? g.count : UI_INSPECT_PAGE_MAX;
    if (count == 0) {
        ui_draw_text(w, in.y + in.h / 2, in.x + 2, in.w - 2, UI_R_DIM,
                     v->scanned < v->n ? "looking for mistakes..." : "no mistakes");
        ui_preview_hide(pv);
        return;
    }
    ui_preview_image im[UI_INSPECT_PAGE_MAX];
    ui_preview_caption cap[UI_INSPECT_PAGE_MAX];
    int n = v->n_items < v->per_page ? v->n_items : v->per_page;
    for (int i = 0; i < n; i++) {
        const run_val_item *it = &v->item[i];
        im[i] = (ui_preview_image){ it->rgb, it->w, it->h };
        char a[48], b[48];
        int ok = it->label == it->pred;
        /* The notebooks' title: "pred [OK]" or "pred [NO -> true]". */
        snprintf(cap[i].text[0], sizeof cap[i].text[0], "%s %s", ok ? "OK" : "NO",
                 ui_panel_class_name(f, it->pred, a, sizeof a));
        cap[i].role[0] = ok ? UI_R_OK : UI_R_BAD;
        if (ok)
            snprintf(cap[i].text[1], sizeof cap[i].text[1], "%.0f%% sure", it->confidence * 100);
        else
            snprintf(cap[i].text[1], sizeof cap[i].text[1], "was %s",
                     ui_panel_class_name(f, it->label, b, sizeof b));
        cap[i].role[1] = ok ? UI_R_DIM : UI_R_NORMAL;
        if (v->by_loss) {
            /* fastai's top losses: predicted / true / loss / probability. */
            if (ok)
                snprintf(cap[i].text[1], sizeof cap[i].text[1], "loss %.2f", it->loss);
            else
                snprintf(cap[i].text[1], sizeof cap[i].text[1], "loss %.2f, was %s", it->loss,
                         ui_panel_class_name(f, it->label, b, sizeof b));
            snprintf(cap[i].text[0], sizeof cap[i].text[0], "%s %s %.0f%%", ok ? "OK" : "NO",
                     ui_panel_class_name(f, it->pred, a, sizeof a), it->confidence * 100);
        }
        if (v->pos + i == v->sel)
            cap[i].role[0] = UI_R_SEL; /* the image Enter explains */
    }
    ui_rect area = { in.y, in.x, in.h, cols };
    ui_preview_set(pv, v->page_id + 1, area, &g, im, cap, n);
    ui_preview_draw(pv, w);
}
