/* panel_log — the log lines, the run folder and the last checkpoint, and its
 * keys. */
#include "ui/panels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/chart.h"

/* "update N, why" of the snapshot's last checkpoint ("PATH (update N, why)"), or
 * the whole of it when it has another form. */
static const char *checkpoint_what(const char *last, char *buf, size_t n)
{
    const char *u = strstr(last, " (update ");
    size_t len = strlen(last);
    if (!u || len < 2 || last[len - 1] != ')')
        return last;
    snprintf(buf, n, "%.*s", (int)(last + len - 1 - (u + 2)), u + 2);
    return buf;
}

void ui_panel_log(WINDOW *w, ui_rect r, const ui_frame *f, const ui_view *v, int focused)
{
    const run_snapshot *s = f->s;
    char title[160];
    snprintf(title, sizeof title, "Log  %lld data error%s  %lld checkpoint%s", s->data_errors,
             s->data_errors == 1 ? "" : "s", s->checkpoints, s->checkpoints == 1 ? "" : "s");
    ui_rect in = ui_draw_box(w, r, title, focused);
    if (in.h <= 0 || in.w < 10)
        return;
    if (s->data_errors > 0) {
        /* Errors are what must not be missed: their count stays in red. */
        char e[48];
        snprintf(e, sizeof e, "%lld data error%s", s->data_errors, s->data_errors == 1 ? "" : "s");
        ui_draw_text(w, r.y, r.x + 2 + 6, r.w - 10, UI_R_BAD, e);
    }
    /* At the bottom, where they stay: the run folder in full (wrapped over up to
     * three lines) and the last checkpoint; the log lines above them. */
    int rows = in.h;
    char where[1200] = "";
    if (f->run_dir && f->run_dir[0])
        snprintf(where, sizeof where, "run folder: %s", f->run_dir);
    int where_h = where[0] ? ui_draw_wrap_count(where, in.w) : 0;
    int keep = rows >= 4 ? 2 : rows - 1; /* rows left to the log and the checkpoint */
    if (where_h > rows - keep)
        where_h = rows - keep > 0 ? rows - keep : 0;
    if (where_h > 3)
        where_h = 3;
    rows -= where_h;
    if (where_h > 0)
        ui_draw_wrapped_from(w, (ui_rect){ in.y + rows, in.x, where_h, in.w }, UI_R_INFO, where,
                             0, 1);
    if (s->last_checkpoint[0] && rows >= 2) {
        rows--;
        char what[512];
        int x = in.x;
        x += ui_draw_text(w, in.y + rows, x, in.w, UI_R_DIM, "last checkpoint: ");
        ui_draw_text_cut(w, in.y + rows, x, in.x + in.w - x, UI_R_INFO,
                         checkpoint_what(s->last_checkpoint, what, sizeof what));
    }
    int n = f->log ? f->log->n : 0;
    int back = v->log_back < 0 ? 0 : v->log_back;
    if (back > n - 1)
        back = n - 1 > 0 ? n - 1 : 0;
    /* One rule for every line: it wraps under its text (its time before its
     * first row), newest at the bottom. As in a terminal, the rows go up until
     * the box's top, which may hold the end of the oldest line shown. */
    const int tw = 6, textw = in.w - tw;
    int y = in.y + rows;
    for (int i = n - 1 - back; i >= 0 && y > in.y; i--) {
        const ui_log_line *ln = ui_log_get(f->log, i);
        int all = ui_draw_wrap_count(ln->text, textw);
        if (all < 1)
            all = 1;
        int h = all > y - in.y ? y - in.y : all;
        y -= h;
        if (h == all) {
            char t[16];
            int sec = (int)ln->t;
            snprintf(t, sizeof t, "%02d:%02d ", sec / 60 % 100, sec % 60);
            ui_draw_text(w, y, in.x, tw, UI_R_DIM, t);
        }
        ui_draw_wrapped_from(w, (ui_rect){ y, in.x + tw, h, textw }, (ui_role)ln->role, ln->text,
                             all - h, 0);
    }
    if (n == 0 && rows > 0)
        ui_draw_text(w, in.y, in.x, in.w, UI_R_DIM, "messages, data errors and checkpoints");
    if (back > 0) {
        char b[32];
        snprintf(b, sizeof b, " -%d ", back);
        ui_draw_text(w, r.y + r.h - 1, r.x + r.w - 2 - (int)strlen(b), (int)strlen(b), UI_R_DIM, b);
    }
}

/* ---- keys ---------------------------------------------------------------------- */

/* PgUp/PgDn/Home/End scroll the log back and forth when it has the focus. */
int ui_panel_log_key(ui_panel_keys *k, ui_act act)
{
    if (!k->focused ||
        (act != UI_ACT_PGUP && act != UI_ACT_PGDN && act != UI_ACT_HOME && act != UI_ACT_END))
        return 0;
    ui_view *v = k->v;
    int page = k->r.h > 4 ? k->r.h - 3 : 1;
    int n = k->f->log->n;
    if (act == UI_ACT_PGUP)
        v->log_back += page;
    else if (act == UI_ACT_PGDN)
        v->log_back -= page;
    else if (act == UI_ACT_HOME)
        v->log_back = n;
    else
        v->log_back = 0;
    if (v->log_back > n - page)
        v->log_back = n - page;
    if (v->log_back < 0)
        v->log_back = 0;
    return 1;
}
