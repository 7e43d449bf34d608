/* preview — pictures in a panel: a grid of RGB images shown as sixel, as 24-bit
 * or 256-colour half blocks, or as an ASCII luminance ramp.
 *
 * Images come in groups laid side by side (an original beside its augmented copy
 * in the preview panel; one validation image in the inspect view), each group
 * with one or two caption rows of text under it. ui_preview_fit() picks the
 * largest tile that still shows the wanted number of groups in a rectangle.
 *
 * A ui_preview keeps what it last built: captions and half-block colours (drawn
 * through curses every frame, so curses repaints them by itself), and for sixel
 * and 24-bit pictures the bytes of one overlay per row of groups. Overlays are
 * written straight to the terminal by ui_preview_flush() after doupdate(): when
 * they were rebuilt, and when the caller says the screen was repainted (a full
 * repaint wipes them). Curses only ever sees blanks under an overlay, and each
 * overlay always covers the same cells for the same geometry (a new batch
 * repaints every pixel), so no stale pixels survive a new picture. Sixel rows end
 * above a caption row, which keeps a free text row under every image; a row wider
 * than the terminal takes in one image (max_w) goes as several.
 *
 * A dialog over the pictures: the blanks under overlays carry an attribute of
 * their own (A_INVIS), so curses writes every cell of a dialog drawn over them,
 * and then every blank again where the dialog was. Overlays that share a cell
 * with the dialog (the cover given to ui_preview_flush()) are held back while it
 * is there, and sent again once it is gone; the others are left alone.
 *
 * Ownership: ui_preview_init() / ui_preview_free(); ui_preview_set() copies the
 * pixels it needs, so the caller may free its images right after.
 */
#ifndef PT_UI_PREVIEW_H
#define PT_UI_PREVIEW_H

#include <stddef.h>
#include <stdint.h>

#include "ui/draw.h"
#include "ui/layout.h"

typedef enum ui_pix_mode {
    UI_PIX_ASCII = 0,   /* luminance as " .:-=+*#%@" */
    UI_PIX_256,         /* upper half blocks, 256-colour pairs through curses */
    UI_PIX_DIRECT,      /* upper half blocks, 24-bit SGR written around curses */
    UI_PIX_SIXEL
} ui_pix_mode;

const char *ui_preview_mode_name(ui_pix_mode m);

typedef struct ui_preview_geom {
    int group;              /* images per group, side by side */
    int caption;            /* caption rows under each group */
    int tile_cols, tile_rows; /* cells per image */
    int tile_px;            /* side of the square picture inside a tile, pixels */
    int cell_w, cell_h;     /* pixels per cell (1 x 2 for half blocks) */
    int per_row, rows;      /* groups across, rows of groups */
    int count;              /* per_row * rows */
    int group_cols;         /* cells one group takes (without the gap) */
} ui_preview_geom;

/* Fit groups into cols x rows cells. Tile sides px_min..px_max pixels are tried
 * from large to small; the first that shows at least `want` groups wins, else
 * the one that shows the most. Returns 0, or -1 when not even one group fits. */
int ui_preview_fit(int cols, int rows, int cell_w, int cell_h, int group, int caption, int want,
                   int px_min, int px_max, ui_preview_geom *g);

/* Scale sw x sh RGB into a dw x dh RGB picture (area average when shrinking,
 * bilinear when growing); the source's centre is cropped to the target's aspect. */
void ui_preview_scale(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh);

/* The xterm 256-colour index nearest to an RGB colour (cube or grey ramp). */
int ui_preview_xterm256(const uint8_t rgb[3]);

typedef struct ui_preview_image {
    const uint8_t *rgb;     /* h x w x 3; NULL: an empty tile */
    int w, h;
} ui_preview_image;

typedef struct ui_preview_caption {
    char text[2][128];
    uint8_t role[2];        /* ui_role of each line */
} ui_preview_caption;

#define UI_PREVIEW_MAX_ROWS 64
#define UI_PREVIEW_MAX_OV 128

typedef struct ui_preview {
    ui_pix_mode mode;
    int cell_w, cell_h;     /* sixel: the terminal's cell size */
    int colors;             /* sixel colour registers */
    int max_w;              /* sixel: widest image the terminal takes; 0 = any */
    uint8_t bg[3];          /* fills the gaps in sixel and 24-bit pictures */
    /* what was built */
    uint64_t content;       /* the caller's id of the images; 0 = nothing */
    ui_rect area;
    ui_preview_geom geom;
    int groups;             /* groups with images (<= geom.count) */
    ui_preview_caption *cap;
    /* half blocks through curses: per cell of the area, top / bottom colour
     * (256 mode) or the ramp character (ASCII mode); used[] marks picture cells */
    uint8_t *fg, *bgc, *used;
    /* sixel / 24-bit: one overlay per row of groups (or per part of a row) */
    struct {
        int row, col, rows, cols;   /* the cells it covers */
        char *data;
        size_t len, cap;
        int shown;                  /* written, and not wiped or covered since */
    } ov[UI_PREVIEW_MAX_OV];
    int n_ov;
} ui_preview;

void ui_preview_init(ui_preview *p, ui_pix_mode mode, int cell_w, int cell_h, int colors,
                     int max_w, const uint8_t bg[3]);
void ui_preview_free(ui_preview *p);

/* Show `groups` groups (geom.group images each, row-major in imgs) with their
 * captions in `area`, laid out by geom. Rebuilds only when content, area or
 * geometry differ from what is shown (new captions alone are just taken);
 * returns 1 when it rebuilt, 0 when not, -1 on failure (nothing shown). */
int ui_preview_set(ui_preview *p, uint64_t content, ui_rect area, const ui_preview_geom *geom,
                   const ui_preview_image *imgs, const ui_preview_caption *caps, int groups);

/* Forget what is shown (the area is hidden, or the scene changed). */
void ui_preview_hide(ui_preview *p);

/* The curses part: captions, half blocks, blanks under overlays. */
void ui_preview_draw(const ui_preview *p, WINDOW *w);

/* The raw part, after doupdate(): writes the overlays that are not on screen
 * (rebuilt, or all of them when force says a full repaint wiped them), except
 * those sharing a cell with cover (a dialog; h 0: none), which wait until it is
 * gone. Returns the bytes written. */
size_t ui_preview_flush(ui_preview *p, int fd, int force, ui_rect cover);

#endif
