#include "ui/draw.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

static ui_color_mode g_mode;
static int g_unicode = 1;
static attr_t g_attr[UI_R_COUNT];

/* fg colour (8-colour index, 256-colour index) and attributes for each role, in
 * colour and in attribute-only form. 256-colour terminals get softer hues. */
static const struct {
    short fg8, fg256;
    attr_t color_attr, mono_attr;
} g_roles[UI_R_COUNT] = {
    [UI_R_NORMAL] = { -1, -1, A_NORMAL, A_NORMAL },
    [UI_R_DIM] = { -1, 245, A_NORMAL, A_DIM },
    [UI_R_TITLE] = { -1, -1, A_BOLD, A_BOLD },
    [UI_R_FOCUS] = { COLOR_CYAN, 45, A_BOLD, A_BOLD | A_REVERSE },
    [UI_R_KEY] = { COLOR_CYAN, 81, A_BOLD, A_BOLD },
    [UI_R_OK] = { COLOR_GREEN, 77, A_BOLD, A_BOLD },
    [UI_R_BAD] = { COLOR_RED, 196, A_BOLD, A_BOLD | A_UNDERLINE },
    [UI_R_WARN] = { COLOR_YELLOW, 220, A_BOLD, A_BOLD },
    [UI_R_INFO] = { COLOR_CYAN, 110, A_NORMAL, A_UNDERLINE },
    [UI_R_S1] = { COLOR_CYAN, 74, A_NORMAL, A_NORMAL },
    [UI_R_S2] = { COLOR_BLUE, 33, A_BOLD, A_BOLD },
    [UI_R_S3] = { COLOR_YELLOW, 208, A_BOLD, A_BOLD },
    [UI_R_BAR_A] = { COLOR_CYAN, 74, A_NORMAL, A_NORMAL },
    [UI_R_BAR_B] = { COLOR_MAGENTA, 175, A_NORMAL, A_NORMAL },
    [UI_R_BAR_C] = { COLOR_BLUE, 61, A_NORMAL, A_DIM },
    [UI_R_SEL] = { -1, -1, A_REVERSE, A_REVERSE },
    [UI_R_C1] = { COLOR_MAGENTA, 170, A_BOLD, A_NORMAL },
    [UI_R_C2] = { COLOR_GREEN, 114, A_BOLD, A_NORMAL },
    [UI_R_C3] = { COLOR_RED, 203, A_BOLD, A_NORMAL },
    [UI_R_C4] = { COLOR_WHITE, 252, A_BOLD, A_NORMAL },
    [UI_R_C5] = { COLOR_BLUE, 69, A_BOLD, A_NORMAL },
    [UI_R_C6] = { COLOR_YELLOW, 186, A_NORMAL, A_NORMAL },
};

/* Heat levels 1..5 off the diagonal (reds) and on it (greens): background and
 * text colours in 256 colours; the 8-colour form shows 1-2 as coloured text and
 * 3-5 on a coloured background. */
static const short g_heat_bg[2][5] = { { 52, 88, 124, 160, 196 }, { 22, 28, 34, 40, 46 } };
static const short g_heat_fg[2][5] = { { 231, 231, 231, 231, 231 }, { 231, 231, 231, 16, 16 } };
static attr_t g_heat[2][6];

static void heat_setup(ui_color_mode mode)
{
    for (int d = 0; d < 2; d++) {
        g_heat[d][0] = A_DIM;
        for (int l = 1; l <= 5; l++) {
            short pair = (short)(UI_R_COUNT + 1 + d * 5 + (l - 1));
            short hue = d ? COLOR_GREEN : COLOR_RED;
            attr_t a;
            if (mode == UI_COLOR_NONE)
                a = l >= 5 ? A_REVERSE | A_BOLD : l >= 3 ? A_BOLD : A_NORMAL;
            else if (mode >= UI_COLOR_256 && COLORS >= 256 &&
                     init_pair(pair, g_heat_fg[d][l - 1], g_heat_bg[d][l - 1]) == OK)
                a = COLOR_PAIR(pair);
            else if (l <= 2 && init_pair(pair, hue, -1) == OK)
                a = COLOR_PAIR(pair);
            else if (l > 2 && init_pair(pair, l >= 4 && d ? COLOR_BLACK : COLOR_WHITE, hue) == OK)
                a = COLOR_PAIR(pair);
            else
                a = l >= 5 ? A_REVERSE | A_BOLD : l >= 3 ? A_BOLD : A_NORMAL;
            g_heat[d][l] = a;
        }
    }
}

attr_t ui_draw_heat(int level, int diagonal)
{
    level = level < 0 ? 0 : level > 5 ? 5 : level;
    return g_heat[diagonal ? 1 : 0][level];
}

void ui_draw_setup(ui_color_mode mode, int unicode)
{
    g_mode = mode;
    g_unicode = unicode;
    heat_setup(mode);
    for (int r = 0; r < UI_R_COUNT; r++) {
        if (mode == UI_COLOR_NONE) {
            g_attr[r] = g_roles[r].mono_attr;
            continue;
        }
        short fg = mode >= UI_COLOR_256 && COLORS >= 256 ? g_roles[r].fg256 : g_roles[r].fg8;
        if (r == UI_R_DIM && fg < 0) {
            g_attr[r] = A_DIM;
            continue;
        }
        attr_t a = g_roles[r].color_attr;
        if (fg >= 0 && init_pair((short)(r + 1), fg, -1) == OK)
            a |= COLOR_PAIR(r + 1);
        else if (fg >= 0)
            a = g_roles[r].mono_attr;
        g_attr[r] = a;
    }
}

ui_color_mode ui_draw_color_mode(void)
{
    return g_mode;
}

int ui_draw_unicode(void)
{
    return g_unicode;
}

attr_t ui_draw_attr(ui_role r)
{
    return r >= 0 && r < UI_R_COUNT ? g_attr[r] : A_NORMAL;
}

/* ASCII stand-ins for the glyphs the panels use, for terminals without UTF-8. */
static uint32_t ascii_of(uint32_t c)
{
    if (c < 0x80)
        return c;
    if (c >= 0x2800 && c <= 0x28ff) {       /* braille: where the dots sit */
        unsigned b = c - 0x2800;
        int top = (b & 0x1b) != 0, bottom = (b & 0xe4) != 0;
        return top && bottom ? ':' : top ? '\'' : bottom ? '.' : ' ';
    }
    if (c >= 0x2581 && c <= 0x2588) {       /* lower blocks, by height */
        static const char ramp[] = "_.-=+*##";
        return (uint32_t)ramp[c - 0x2581];
    }
    if (c >= 0x2589 && c <= 0x258f)          /* left partial blocks */
        return c <= 0x258c ? '#' : '|';
    switch (c) {
    case 0x2591: case 0x2592: case 0x00b7: return '.';
    case 0x2593: return '#';
    case 0x2500: return '-';
    case 0x2502: return '|';
    case 0x25cf: case 0x2022: return 'o';
    case 0x2192: return '>';
    case 0x2190: return '<';
    case 0x2191: return '^';
    case 0x2193: return 'v';
    case 0x2580: return '"';
    case 0x2026: return '~';
    default: return '?';
    }
}

void ui_draw_glyph(WINDOW *w, int y, int x, uint32_t ch, ui_role r)
{
    if (!g_unicode)
        ch = ascii_of(ch);
    if (ch == 0)
        ch = ' ';
    wchar_t wc[2] = { (wchar_t)ch, 0 };
    cchar_t cc;
    /* setcchar takes the colour as its own argument and ignores the pair bits
     * of the attributes. */
    attr_t a = ui_draw_attr(r);
    if (setcchar(&cc, wc, a & ~A_COLOR, (short)PAIR_NUMBER(a), NULL) == OK)
        mvwadd_wch(w, y, x, &cc);
}

void ui_draw_hline(WINDOW *w, int y, int x, int n, uint32_t ch, ui_role r)
{
    for (int i = 0; i < n; i++)
        ui_draw_glyph(w, y, x + i, ch, r);
}

/* Decodes the character at s (len bytes left) into *wc and returns its length
 * in bytes: an invalid or cut sequence is taken as one byte '?' (and the state
 * reset); 0 at a NUL, where the text ends. */
static size_t next_char(const char *s, size_t len, mbstate_t *st, wchar_t *wc)
{
    size_t k = mbrtowc(wc, s, len, st);
    if (k == (size_t)-1 || k == (size_t)-2) {
        memset(st, 0, sizeof *st);
        k = 1;
        *wc = '?';
    }
    return k;
}

int ui_draw_width(const char *s)
{
    mbstate_t st;
    memset(&st, 0, sizeof st);
    int cols = 0;
    size_t len = strlen(s);
    while (len > 0) {
        wchar_t wc;
        size_t k = next_char(s, len, &st, &wc);
        if (k == 0)
            break;
        int cw = wcwidth(wc);
        cols += cw > 0 ? cw : 0;
        s += k;
        len -= k;
    }
    return cols;
}

int ui_draw_text(WINDOW *w, int y, int x, int maxw, ui_role r, const char *s)
{
    if (maxw <= 0 || !s)
        return 0;
    wchar_t buf[512];
    int n = 0, cols = 0;
    mbstate_t st;
    memset(&st, 0, sizeof st);
    size_t len = strlen(s);
    while (len > 0 && n < (int)(sizeof buf / sizeof buf[0]) - 1) {
        wchar_t wc;
        size_t k = next_char(s, len, &st, &wc);
        if (k == 0)
            break;
        if (!g_unicode && (uint32_t)wc >= 0x80)
            wc = (wchar_t)ascii_of((uint32_t)wc);
        if (wc < 0x20)
            wc = ' ';
        int cw = wcwidth(wc);
        if (cw < 0)
            cw = 1, wc = '?';
        if (cols + cw > maxw)
            break;
        buf[n++] = wc;
        cols += cw;
        s += k;
        len -= k;
    }
    buf[n] = 0;
    if (n == 0)
        return 0;
    wattrset(w, ui_draw_attr(r));
    mvwaddnwstr(w, y, x, buf, n);
    wattrset(w, A_NORMAL);
    return cols;
}

/* The first line of s in width columns: its length in bytes (up to the last
 * space that fits, or as much of a word wider than the line as fits). Leading
 * spaces are skipped first (*lead gets how many). 0 at the end of s. */
static size_t wrap_line(const char *s, int width, size_t *lead)
{
    *lead = strspn(s, " ");
    s += *lead;
    mbstate_t st;
    memset(&st, 0, sizeof st);
    size_t len = strlen(s), fit = 0, space = 0;
    int cols = 0;
    while (fit < len) {
        wchar_t wc;
        size_t k = next_char(s + fit, len - fit, &st, &wc);
        int cw = wcwidth(wc);
        if (k == 0 || cols + (cw > 0 ? cw : 1) > width)
            break;
        if (wc == ' ')
            space = fit;
        cols += cw > 0 ? cw : 1;
        fit += k;
    }
    if (fit < len && space > 0 && s[fit] != ' ')
        fit = space;
    return fit;
}

int ui_draw_wrap_count(const char *s, int width)
{
    int lines = 0;
    size_t lead, n;
    while (width > 0 && *s && (n = wrap_line(s, width, &lead)) > 0) {
        lines++;
        s += lead + n;
        s += strspn(s, " ");
    }
    return lines;
}

int ui_draw_wrapped_from(WINDOW *w, ui_rect r, ui_role role, const char *s, int skip, int ell)
{
    int lines = 0, index = 0;
    size_t lead, n;
    while (*s && lines < r.h && r.w > 0 && (n = wrap_line(s, r.w, &lead)) > 0) {
        s += lead;
        if (index++ >= skip) {
            char line[1024];
            size_t k = n < sizeof line - 1 ? n : sizeof line - 1;
            memcpy(line, s, k);
            line[k] = '\0';
            const char *rest = s + n + strspn(s + n, " ");
            if (ell && lines == r.h - 1 && *rest) {
                /* More than fits: this last line ends in an ellipsis. */
                char more[1100];
                snprintf(more, sizeof more, "%s %s", line, rest);
                ui_draw_text_cut(w, r.y + lines, r.x, r.w, role, more);
            } else {
                ui_draw_text(w, r.y + lines, r.x, r.w, role, line);
            }
            lines++;
        }
        s += n;
    }
    return lines;
}

int ui_draw_wrapped(WINDOW *w, ui_rect r, ui_role role, const char *s)
{
    return ui_draw_wrapped_from(w, r, role, s, 0, 0);
}

int ui_draw_text_cut(WINDOW *w, int y, int x, int maxw, ui_role r, const char *s)
{
    if (maxw <= 0 || !s)
        return 0;
    if (ui_draw_width(s) <= maxw)
        return ui_draw_text(w, y, x, maxw, r, s);
    const char *ell = g_unicode ? "\xe2\x80\xa6" : "...";
    int ew = g_unicode ? 1 : 3;
    if (maxw <= ew)
        return ui_draw_text(w, y, x, maxw, r, ell);
    /* The characters that fit before the ellipsis, without the spaces at their end. */
    char buf[1024];
    mbstate_t st;
    memset(&st, 0, sizeof st);
    size_t len = strlen(s), fit = 0;
    int cols = 0;
    while (fit < len && fit < sizeof buf - 4) {
        wchar_t wc;
        size_t k = next_char(s + fit, len - fit, &st, &wc);
        int cw = wcwidth(wc);
        if (k == 0 || cols + (cw > 0 ? cw : 1) > maxw - ew)
            break;
        cols += cw > 0 ? cw : 1;
        fit += k;
    }
    while (fit > 0 && s[fit - 1] == ' ')
        fit--;
    memcpy(buf, s, fit);
    memcpy(buf + fit, ell, strlen(ell) + 1);
    return ui_draw_text(w, y, x, maxw, r, buf);
}

/* Byte offsets of s's characters: *n of them (at most max), off[i] where
 * character i starts and col[i] the columns before it; off[*n] is the end. */
static void char_offsets(const char *s, size_t *off, int *col, int max, int *n)
{
    mbstate_t st;
    memset(&st, 0, sizeof st);
    size_t len = strlen(s), at = 0;
    int k = 0, cols = 0;
    while (at < len && k < max) {
        wchar_t wc;
        size_t b = next_char(s + at, len - at, &st, &wc);
        if (b == 0)
            break;
        off[k] = at;
        col[k++] = cols;
        int cw = wcwidth(wc);
        cols += cw > 0 ? cw : 0;
        at += b;
    }
    off[k] = at;
    col[k] = cols;
    *n = k;
}

const char *ui_draw_elide_middle(const char *s, int maxw, char *out, size_t n)
{
    enum { MAXC = 512 };
    size_t off[MAXC + 1];
    int col[MAXC + 1], nc;
    const char *ell = g_unicode ? "\xe2\x80\xa6" : "...";
    int ew = g_unicode ? 1 : 3;
    char_offsets(s, off, col, MAXC, &nc);
    if (col[nc] <= maxw || maxw <= ew + 1) {
        /* Whole; or, with no room for an ellipsis and a character each side, its
         * first columns. */
        int k = nc;
        while (k > 0 && col[k] > maxw)
            k--;
        snprintf(out, n, "%.*s", (int)off[k], s);
        return out;
    }
    /* The head keeps the odd column: the start of a name tells more. */
    int keep = maxw - ew, head = (keep + 1) / 2, tail = keep - head;
    int h = 0;
    while (h < nc && col[h + 1] <= head)
        h++;
    int t = nc;
    while (t > h && col[nc] - col[t - 1] <= tail)
        t--;
    snprintf(out, n, "%.*s%s%s", (int)off[h], s, ell, s + off[t]);
    return out;
}

int ui_draw_textf(WINDOW *w, int y, int x, int maxw, ui_role r, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return ui_draw_text(w, y, x, maxw, r, buf);
}

void ui_draw_clear(WINDOW *w, ui_rect r)
{
    wattrset(w, A_NORMAL);
    for (int y = 0; y < r.h; y++)
        mvwhline(w, r.y + y, r.x, ' ', r.w);
}

ui_rect ui_draw_box(WINDOW *w, ui_rect r, const char *title, int focused)
{
    ui_rect in = { r.y + 1, r.x + 1, r.h - 2, r.w - 2 };
    if (r.h < 2 || r.w < 2)
        return (ui_rect){ r.y, r.x, 0, 0 };
    attr_t a = focused ? ui_draw_attr(UI_R_FOCUS) & ~A_REVERSE : ui_draw_attr(UI_R_DIM);
    wattrset(w, a);
    mvwhline(w, r.y, r.x + 1, ACS_HLINE, r.w - 2);
    mvwhline(w, r.y + r.h - 1, r.x + 1, ACS_HLINE, r.w - 2);
    mvwvline(w, r.y + 1, r.x, ACS_VLINE, r.h - 2);
    mvwvline(w, r.y + 1, r.x + r.w - 1, ACS_VLINE, r.h - 2);
    mvwaddch(w, r.y, r.x, ACS_ULCORNER);
    mvwaddch(w, r.y, r.x + r.w - 1, ACS_URCORNER);
    mvwaddch(w, r.y + r.h - 1, r.x, ACS_LLCORNER);
    mvwaddch(w, r.y + r.h - 1, r.x + r.w - 1, ACS_LRCORNER);
    wattrset(w, A_NORMAL);
    if (title && *title && r.w > 6) {
        char t[256];
        snprintf(t, sizeof t, " %s ", title);
        /* Focus shows in reverse video, so it is visible without colour too. */
        ui_draw_text_cut(w, r.y, r.x + 2, r.w - 4, focused ? UI_R_SEL : UI_R_TITLE, t);
    }
    return in;
}

int ui_draw_cells_init(ui_cells *g, int h, int w)
{
    g->h = h > 0 ? h : 0;
    g->w = w > 0 ? w : 0;
    g->c = calloc((size_t)g->h * (size_t)g->w + 1, sizeof *g->c);
    if (!g->c) {
        g->h = g->w = 0;
        return -1;
    }
    ui_draw_cells_clear(g);
    return 0;
}

void ui_draw_cells_clear(ui_cells *g)
{
    for (int i = 0; i < g->h * g->w; i++) {
        g->c[i].ch = ' ';
        g->c[i].role = UI_R_NORMAL;
    }
}

void ui_draw_cells_free(ui_cells *g)
{
    free(g->c);
    g->c = NULL;
    g->h = g->w = 0;
}

void ui_draw_cells(WINDOW *w, int y, int x, const ui_cells *g)
{
    for (int r = 0; r < g->h; r++)
        for (int c = 0; c < g->w; c++) {
            const ui_cell *k = &g->c[r * g->w + c];
            ui_draw_glyph(w, y + r, x + c, k->ch ? k->ch : ' ', (ui_role)k->role);
        }
}
