/* layout — where each panel of the workbench goes for a terminal size.
 *
 * Pure geometry: no curses, no engine. The app recomputes the layout on every
 * frame (it is a handful of integer operations) from the screen size, the panel
 * that is zoomed, and the number of replicas (the replicas panel is as tall as
 * its rows need, within limits). Two arrangements: a two-column one that works
 * down to 80x24, and a three-column one from 120x30 up that gives the preview its
 * own column. Focus moves between panels by direction (ui_layout_neighbor).
 *
 * Ownership: plain values; nothing to free.
 */
#ifndef PT_UI_LAYOUT_H
#define PT_UI_LAYOUT_H

/* A rectangle of cells; h or w 0 means empty. */
typedef struct ui_rect {
    int y, x, h, w;
} ui_rect;

typedef enum ui_panel_id {
    UI_P_REPLICAS = 0,
    UI_P_CURVES,
    UI_P_LABELS,
    UI_P_PREVIEW,
    UI_P_LOG,
    UI_P_COUNT
} ui_panel_id;

typedef enum ui_dir { UI_DIR_UP = 0, UI_DIR_DOWN, UI_DIR_LEFT, UI_DIR_RIGHT } ui_dir;

/* The smallest screen the workbench draws on; below it shows only a note. */
#define UI_LAYOUT_MIN_COLS 60
#define UI_LAYOUT_MIN_ROWS 16

typedef struct ui_layout {
    int rows, cols;
    int too_small;               /* below the minimum: nothing but a note */
    int wide;                    /* the three-column arrangement */
    int zoom;                    /* zoomed panel or -1 */
    ui_rect header;              /* two rows at the top */
    ui_rect footer;              /* key hints, last row */
    ui_rect body;                /* between them */
    ui_rect panel[UI_P_COUNT];   /* a panel not shown has h == 0 */
} ui_layout;

/* Fill *l for a rows x cols screen. zoom: a panel id that takes the whole body,
 * or -1. replicas: how many replica rows the replicas panel wants. */
void ui_layout_compute(ui_layout *l, int rows, int cols, int zoom, int replicas);

/* 1 when panel p is shown. */
int ui_layout_visible(const ui_layout *l, int p);

/* The panel next to `from` in direction dir (the nearest one whose rectangle lies
 * that way and overlaps in the other axis), or `from` itself when there is none. */
int ui_layout_neighbor(const ui_layout *l, int from, ui_dir dir);

/* Title of a panel ("Replicas", ...). */
const char *ui_layout_name(int p);

/* 1 when two rectangles share a cell. */
int ui_layout_overlap(ui_rect a, ui_rect b);

#endif
