/* panel_overlays — what is not a panel of the layout: the footer's key hints,
 * the preview panel's frame, the help overlay, the question dialog and the
 * too-small note. */
#include "ui/panels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/chart.h"

/* ---- footer -------------------------------------------------------------------- */

void ui_panel_footer(WINDOW *w, ui_rect r, const ui_frame *f, ui_ctx ctx)
{
    size_t nk;
    const ui_key *keys = ui_keys_table(&nk);
    int state = f->s ? (int)f->s->state : RUN_IDLE;
    int end = r.x + r.w;
    if (f->note && *f->note) {
        int nw = ui_draw_width(f->note);
        int room = r.w / 2 > 40 ? r.w / 2 : 40;
        if (nw > room)
            nw = room;
        if (nw > r.w)
            nw = r.w;
        ui_draw_text_cut(w, r.y, end - nw, nw, (ui_role)f->note_role, f->note);
        end -= nw + 2;
    }
    /* Hints for this context, dropping the less useful ones until they fit:
     * importance is the position in this list. */
    static const ui_act rank[] = { UI_ACT_QUIT, UI_ACT_HELP, UI_ACT_START, UI_ACT_PAUSE,
                                   UI_ACT_YES, UI_ACT_NO, UI_ACT_RESUME, UI_ACT_EDIT,
                                   UI_ACT_APPLY, UI_ACT_BACK, UI_ACT_INSPECT, UI_ACT_EXPORT,
                                   UI_ACT_MISTAKES,
                                   UI_ACT_RIGHT, UI_ACT_LEFT, UI_ACT_PERCENT, UI_ACT_NEXT,
                                   UI_ACT_AUGMENT, UI_ACT_CONFIG, UI_ACT_SORT, UI_ACT_ZOOM,
                                   UI_ACT_FOCUS_NEXT, UI_ACT_TOGGLE, UI_ACT_RUNS };
    int show[64] = { 0 }, ns = 0;
    int width = 0;
    for (size_t ri = 0; ri < sizeof rank / sizeof rank[0]; ri++) {
        for (size_t i = 0; i < nk && ns < 64; i++) {
            const ui_key *k = &keys[i];
            if (k->ctx != ctx || !k->hint || k->act != rank[ri])
                continue;
            if (ctx == UI_CTX_MAIN && k->act == UI_ACT_START && state != RUN_IDLE)
                continue;
            if (ctx == UI_CTX_MAIN && k->act == UI_ACT_CONFIG && state != RUN_IDLE)
                continue;
            /* p applies only to a run under way, not to one that has ended. */
            if (ctx == UI_CTX_MAIN && k->act == UI_ACT_PAUSE && state != RUN_PREPARING &&
                state != RUN_RUNNING && state != RUN_PAUSED)
                continue;
            /* e where export works: an opened run, an ended or paused one. */
            if (ctx == UI_CTX_MAIN && k->act == UI_ACT_EXPORT && !f->opened &&
                state != RUN_DONE && state != RUN_FAILED && state != RUN_STOPPED &&
                state != RUN_PAUSED)
                continue;
            if (ctx == UI_CTX_ASK && k->act == UI_ACT_RESUME && !f->ask_resume)
                continue;
            int kw = ui_draw_width(k->name) + 1 + ui_draw_width(k->hint) + 2;
            if (width + kw > end - r.x)
                continue;
            width += kw;
            show[ns++] = (int)i;
        }
    }
    /* Print in table order. */
    int x = r.x;
    for (size_t i = 0; i < nk; i++) {
        int on = 0;
        for (int j = 0; j < ns; j++)
            if (show[j] == (int)i)
                on = 1;
        if (!on)
            continue;
        const ui_key *k = &keys[i];
        const char *hint = k->hint;
        if (k->act == UI_ACT_PAUSE && state == RUN_PAUSED)
            hint = "resume";
        x += ui_draw_text(w, r.y, x, end - x, UI_R_KEY, k->name);
        x += ui_draw_text(w, r.y, x, end - x, UI_R_NORMAL, " ");
        x += ui_draw_text(w, r.y, x, end - x, UI_R_NORMAL, hint);
        x += 2;
    }
}

/* ---- preview frame ------------------------------------------------------------- */

ui_rect ui_panel_preview(WINDOW *w, ui_rect r, const ui_frame *f, int focused, uint64_t batch)
{
    char title[256];
    const char *aug = f->augment && *f->augment ? f->augment : "default";
    if (batch)
        snprintf(title, sizeof title, "Preview #%llu: original | augmented (%s)%s",
                 (unsigned long long)batch, aug, focused ? "  [n a]" : "");
    else
        snprintf(title, sizeof title, "Preview: original | augmented (%s)", aug);
    ui_rect in = ui_draw_box(w, r, title, focused);
    if (f->pix && in.w > 20 && in.h > 0) {
        char m[64];
        snprintf(m, sizeof m, " %s ", f->pix);
        int mw = (int)strlen(m);
        if (mw < r.w - 4)
            ui_draw_text(w, r.y + r.h - 1, r.x + r.w - 2 - mw, mw, UI_R_DIM, m);
    }
    return in;
}

/* ---- overlays ------------------------------------------------------------------ */

static ui_rect centred(int rows, int cols, int h, int wd)
{
    if (wd > cols - 2)
        wd = cols - 2;
    if (h > rows - 2)
        h = rows - 2;
    ui_rect r = { (rows - h) / 2, (cols - wd) / 2, h, wd };
    return r;
}

ui_rect ui_panel_help(WINDOW *w, int rows, int cols, ui_view *v)
{
    enum { LINE_N = 200, MAXL = 128, KEYW = 16 };
    /* Entries: a title, a key with its description, a blank, a note. */
    static char key[MAXL][KEYW + 1], text[MAXL][LINE_N];
    static ui_role role[MAXL];
    static char lines[MAXL][LINE_N];
    int n = 0;
    for (int c = 0; c < UI_CTX_COUNT && n < MAXL - 2; c++) {
        if (n > 0) {
            key[n][0] = text[n][0] = 0;
            role[n++] = UI_R_NORMAL;
        }
        key[n][0] = 0;
        snprintf(text[n], LINE_N, "%s", ui_keys_ctx_name((ui_ctx)c));
        role[n++] = UI_R_TITLE;
        int got = ui_keys_help((ui_ctx)c, KEYW, &lines[0][0], LINE_N, MAXL - n - 1);
        for (int i = 0; i < got; i++, n++) {
            /* "NAMES<pad> description": the names are the first KEYW columns. */
            snprintf(key[n], sizeof key[n], "%.*s", KEYW, lines[i]);
            for (int k = (int)strlen(key[n]); k > 0 && key[n][k - 1] == ' '; k--)
                key[n][k - 1] = 0;
            snprintf(text[n], LINE_N, "%s", lines[i] + (strlen(lines[i]) > KEYW ? KEYW + 1 : 0));
            role[n] = UI_R_NORMAL;
        }
        if (c == UI_CTX_INSPECT && n < MAXL) {
            snprintf(key[n], sizeof key[n], "s p ? q ^L");
            snprintf(text[n], LINE_N, "work here too");
            role[n++] = UI_R_NORMAL;
        }
    }
    if (n < MAXL - 2) {
        key[n][0] = text[n][0] = 0;
        role[n++] = UI_R_NORMAL;
        key[n][0] = 0;
        snprintf(text[n], LINE_N, "Ctrl-C pauses the run and asks; a hang-up writes a checkpoint "
                                  "and exits.");
        role[n++] = UI_R_DIM;
    }
    /* As wide as the longest line needs, within the screen; descriptions wrap
     * under themselves when narrower. */
    int need = 0;
    for (int i = 0; i < n; i++) {
        int lw = (key[i][0] ? KEYW + 1 : 0) + ui_draw_width(text[i]);
        need = lw > need ? lw : need;
    }
    int bw = need + 4; /* the borders and a column of margin each side */
    ui_rect b = centred(rows, cols, 3, bw);
    int dw = b.w - KEYW - 5; /* description columns */
    if (dw < 10)
        dw = 10;
    static int row_of[MAXL + 1];
    int total = 0;
    for (int i = 0; i < n; i++) {
        row_of[i] = total;
        int h = ui_draw_wrap_count(text[i], key[i][0] ? dw : b.w - 4);
        total += h > 0 ? h : 1;
    }
    row_of[n] = total;
    b = centred(rows, cols, total + 2, bw);
    ui_draw_clear(w, b);
    ui_rect in = ui_draw_box(w, b, "Help: Up/Down/PgUp/PgDn scroll, any other key closes", 1);
    if (in.h <= 0)
        return b;
    int maxtop = total - in.h > 0 ? total - in.h : 0;
    if (v->help_top > maxtop)
        v->help_top = maxtop;
    if (v->help_top < 0)
        v->help_top = 0;
    for (int i = 0; i < n; i++) {
        int y = in.y + row_of[i] - v->help_top;
        int h = row_of[i + 1] - row_of[i];
        /* The rows of this entry on screen: from skip, at most fit. */
        int skip = y < in.y ? in.y - y : 0;
        int fit = in.y + in.h - (y + skip);
        if (skip >= h || fit <= 0)
            continue;
        if (fit > h - skip)
            fit = h - skip;
        if (key[i][0]) {
            if (skip == 0)
                ui_draw_text(w, y, in.x + 1, KEYW, UI_R_KEY, key[i]);
            ui_draw_wrapped_from(w, (ui_rect){ y + skip, in.x + KEYW + 2, fit, dw }, UI_R_NORMAL,
                                 text[i], skip, 0);
        } else {
            ui_draw_wrapped_from(w, (ui_rect){ y + skip, in.x + 1, fit, in.w - 2 }, role[i],
                                 text[i], skip, 0);
        }
    }
    if (maxtop > 0) {
        char m[32];
        snprintf(m, sizeof m, " %d/%d ", v->help_top + in.h < total ? v->help_top + in.h : total,
                 total);
        ui_draw_text(w, b.y + b.h - 1, b.x + b.w - 2 - (int)strlen(m), (int)strlen(m), UI_R_DIM, m);
    }
    return b;
}

ui_rect ui_panel_dialog(WINDOW *w, int rows, int cols, const char *title,
                        const char *const *lines, int n, ui_ctx ctx, int can_resume)
{
    if (n > 8)
        n = 8;
    int wd = ui_draw_width(title) + 6;
    for (int i = 0; i < n; i++)
        if (ui_draw_width(lines[i]) + 4 > wd)
            wd = ui_draw_width(lines[i]) + 4;
    if (wd < 40)
        wd = 40;
    ui_rect b = centred(rows, cols, n + 4, wd);
    ui_draw_clear(w, b);
    ui_rect in = ui_draw_box(w, b, title, 1);
    for (int i = 0; i < n && i < in.h; i++)
        ui_draw_text(w, in.y + i, in.x + 1, in.w - 2, UI_R_NORMAL, lines[i]);
    ui_rect hints = { in.y + in.h - 1, in.x + 1, 1, in.w - 2 };
    ui_frame none = { 0 };
    none.ask_resume = can_resume;
    ui_panel_footer(w, hints, &none, ctx);
    return b;
}

void ui_panel_too_small(WINDOW *w, int rows, int cols)
{
    /* One line when it fits, else its three parts on lines of their own (each fits
     * from 22 columns); centred. */
    char whole[96], size[32], need[32];
    snprintf(size, sizeof size, "terminal %dx%d:", cols, rows);
    snprintf(need, sizeof need, "petal-tui needs %dx%d", UI_LAYOUT_MIN_COLS, UI_LAYOUT_MIN_ROWS);
    snprintf(whole, sizeof whole, "%s %s (q quits)", size, need);
    const char *one[1] = { whole }, *three[3] = { size, need, "(q quits)" };
    int n = (int)strlen(whole) <= cols ? 1 : 3;
    const char *const *lines = n == 1 ? one : three;
    int top = (rows - n) / 2 > 0 ? (rows - n) / 2 : 0;
    for (int i = 0; i < n && top + i < rows; i++) {
        int mw = (int)strlen(lines[i]);
        ui_draw_text(w, top + i, cols > mw ? (cols - mw) / 2 : 0, cols, UI_R_WARN, lines[i]);
    }
}
