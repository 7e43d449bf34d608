/* draw — the drawing vocabulary the panels share.
 *
 * Colour roles (what a piece of text *is*: a title, a good value, a series of a
 * chart) mapped once to curses attributes: colour pairs on colour terminals, and
 * bold / dim / reverse / underline when colour is off (NO_COLOR, --no-color, a
 * monochrome terminal), so every screen stays readable without colour. Clipped
 * UTF-8 text in a rectangle, boxes with titles, and a cell grid (ui_cells) that
 * charts fill without touching curses, blitted here.
 *
 * Module state: the role table set by ui_draw_setup() (one UI per process; the
 * UI thread only). Ownership: ui_cells buffers come from ui_draw_cells_init() and
 * go back with ui_draw_cells_free().
 */
#ifndef PT_UI_DRAW_H
#define PT_UI_DRAW_H

#include <curses.h>
#include <stdint.h>

#include "ui/layout.h"

typedef enum ui_role {
    UI_R_NORMAL = 0,
    UI_R_DIM,        /* axes, units, secondary text */
    UI_R_TITLE,      /* panel titles */
    UI_R_FOCUS,      /* the focused panel's border and title */
    UI_R_KEY,        /* key names in the footer and help */
    UI_R_OK,         /* running, OK predictions, good values */
    UI_R_BAD,        /* failed, NO predictions, data errors */
    UI_R_WARN,       /* paused, idle-on-input */
    UI_R_INFO,       /* done, checkpoints */
    UI_R_S1,         /* chart series: train per update */
    UI_R_S2,         /* train per epoch */
    UI_R_S3,         /* validation per epoch */
    UI_R_BAR_A,      /* bars: train counts, busy */
    UI_R_BAR_B,      /* bars: validation counts */
    UI_R_BAR_C,      /* bars: oversampled extra */
    UI_R_SEL,        /* a selected row in a list */
    UI_R_C1,         /* compared runs' curves, one colour each (C1 .. C6) */
    UI_R_C2,
    UI_R_C3,
    UI_R_C4,
    UI_R_C5,
    UI_R_C6,
    UI_R_COUNT
} ui_role;

/* What the terminal can show, from least to most. */
typedef enum ui_color_mode {
    UI_COLOR_NONE = 0,  /* attributes only */
    UI_COLOR_8,         /* the 8 ANSI colours */
    UI_COLOR_256,
    UI_COLOR_DIRECT     /* 24-bit (COLORTERM=truecolor); text still uses the 8 */
} ui_color_mode;

/* One character cell of a picture made off-screen (charts, sparklines). */
typedef struct ui_cell {
    uint32_t ch;        /* a Unicode code point; 0 or ' ' = blank */
    uint8_t role;       /* a ui_role */
} ui_cell;

typedef struct ui_cells {
    int h, w;
    ui_cell *c;         /* h * w, rows packed */
} ui_cells;

/* Set the role table for this colour mode (after start_color() when mode is not
 * NONE). unicode: 0 draws block and braille glyphs as ASCII. */
void ui_draw_setup(ui_color_mode mode, int unicode);
ui_color_mode ui_draw_color_mode(void);
int ui_draw_unicode(void);
attr_t ui_draw_attr(ui_role r);
/* The attribute of a heat-map cell, level 0 (nothing) to 5 (the most), on the
 * diagonal (what is right: greens) or off it (confusions: reds); bold and
 * reverse video without colour. */
attr_t ui_draw_heat(int level, int diagonal);

/* Text clipped to maxw columns at (y, x); returns the columns written. */
int ui_draw_text(WINDOW *w, int y, int x, int maxw, ui_role r, const char *utf8);
int ui_draw_textf(WINDOW *w, int y, int x, int maxw, ui_role r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
/* Text over the lines of r, broken at spaces (a word wider than r, a long path,
 * is broken where the line ends); returns the lines used. What does not fit in
 * r.h lines is left out. */
int ui_draw_wrapped(WINDOW *w, ui_rect r, ui_role role, const char *utf8);
/* ui_draw_wrapped from the text's line `skip` on; with ell, when the text goes
 * on past r.h lines, the last line drawn ends in an ellipsis. Returns the lines
 * drawn. */
int ui_draw_wrapped_from(WINDOW *w, ui_rect r, ui_role role, const char *utf8, int skip, int ell);
/* The lines ui_draw_wrapped() breaks text into at width columns. */
int ui_draw_wrap_count(const char *utf8, int width);
/* Text in at most maxw columns: whole when it fits, else cut with an ellipsis
 * ("\u2026", or "..." without UTF-8) as its last column(s). Returns the columns
 * written. */
int ui_draw_text_cut(WINDOW *w, int y, int x, int maxw, ui_role r, const char *utf8);
/* s in at most maxw columns, into out (n bytes): whole when it fits, else its
 * start and its end with an ellipsis between ("2025032\u202615271-xyz"), so that
 * names that differ at either end stay apart. Returns out. */
const char *ui_draw_elide_middle(const char *s, int maxw, char *out, size_t n);
/* Display columns of a UTF-8 string. */
int ui_draw_width(const char *utf8);
/* One code point at (y, x) (ASCII stand-in when it cannot be shown). */
void ui_draw_glyph(WINDOW *w, int y, int x, uint32_t ch, ui_role r);
/* n copies of a code point. */
void ui_draw_hline(WINDOW *w, int y, int x, int n, uint32_t ch, ui_role r);

/* Blank the rectangle with the normal attribute. */
void ui_draw_clear(WINDOW *w, ui_rect r);
/* A box around r with " title " on the top edge; focused boxes use UI_R_FOCUS.
 * Returns the inside rectangle. */
ui_rect ui_draw_box(WINDOW *w, ui_rect r, const char *title, int focused);

int ui_draw_cells_init(ui_cells *g, int h, int w);
void ui_draw_cells_clear(ui_cells *g);
void ui_draw_cells_free(ui_cells *g);
void ui_draw_cells(WINDOW *w, int y, int x, const ui_cells *g);

#endif
