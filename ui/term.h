/* term — what the terminal can do, asked before curses starts, and the raw
 * writes that go around curses.
 *
 * ui_term_probe() puts the tty in raw mode and asks: DA1 (`CSI c`; a `4` among
 * the attributes means sixel), then, when sixel is there, XTSMGRAPHICS for the
 * colour registers and the largest image, `CSI 16 t` for the cell size when
 * TIOCGWINSZ has no pixel fields, and OSC 11 for the background colour. Every query is followed by DA1 as a fence, so a
 * terminal that ignores a query costs nothing but the fence's round trip. It asks
 * nothing under tmux ($TMUX: no sixel in tmux 3.3a, and images would not stay)
 * or when sixel is turned off, and it drops any late reply before curses starts,
 * so no reply turns into keys. The reply parsers are public for the tests.
 *
 * ui_term_write_at() writes bytes at a cell, wrapped in DECSC / CUP / DECRC so
 * curses' idea of the cursor, attributes and charset stays true. Call it only
 * after doupdate(), from the UI thread.
 *
 * Ownership: plain values; nothing to free.
 */
#ifndef PT_UI_TERM_H
#define PT_UI_TERM_H

#include <stddef.h>

typedef struct ui_term_caps {
    int asked;              /* the terminal was asked at all */
    int answered;           /* DA1 came back */
    int sixel;              /* images can be sent */
    int sixel_colors;       /* colour registers for one image */
    int sixel_max_w;        /* largest image in pixels; 0 = unknown */
    int sixel_max_h;
    int cell_w, cell_h;     /* pixels per cell; 0 = unknown */
    int bg_known;           /* the background colour came back (OSC 11) */
    unsigned char bg[3];    /* so pictures' gaps match the terminal */
    char why[96];           /* why there is no sixel, for the log */
} ui_term_caps;

/* Ask the terminal on fds in/out (usually 0 and 1). allow_sixel 0 skips every
 * query (--no-sixel). timeout: seconds to wait for each reply. */
void ui_term_probe(int in, int out, int allow_sixel, double timeout, ui_term_caps *caps);

/* Cell size in pixels from TIOCGWINSZ on fd; 0 and both zero when unknown. */
int ui_term_cell_px(int fd, int *cell_w, int *cell_h);

/* Parsers: each looks for its reply in buf[0..n) and returns 1 when found.
 * DA1: `ESC [ ? a;b;...c` -> the first attribute numbers, at most max and at most
 * UI_TERM_DA1_MAX; *count says how many were stored. */
#define UI_TERM_DA1_MAX 64
int ui_term_parse_da1(const char *buf, size_t n, int *attrs, int max, int *count);
/* XTSMGRAPHICS: `ESC [ ? item ; status ; v1 [; v2] S` for the given item. */
int ui_term_parse_xtsm(const char *buf, size_t n, int item, int *status, int *v1, int *v2);
/* OSC 11 reply: `ESC ] 11 ; rgb:RRRR/GGGG/BBBB` (1 to 4 hex digits each). */
int ui_term_parse_bg(const char *buf, size_t n, unsigned char rgb[3]);
/* CSI 16 t reply: `ESC [ 6 ; height ; width t`. */
int ui_term_parse_cell(const char *buf, size_t n, int *cell_h, int *cell_w);

/* 1 when the terminal on fd is gone: hung up (its pty closed, its line dropped)
 * or unusable, so reads give only EOF or EIO. It does not read: what is waiting
 * stays for curses. */
int ui_term_gone(int fd);

/* Write all n bytes to fd (retrying short writes); 0 or -1. */
int ui_term_write(int fd, const void *data, size_t n);
/* DECSC, cursor to (row, col) counted from 0, data, DECRC. */
int ui_term_write_at(int fd, int row, int col, const void *data, size_t n);

#endif
