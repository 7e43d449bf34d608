/* grid — compose preview sheets: originals on the left, their augmented versions on
 * the right, a caption under every tile, drawn with a small built-in 5x7 bitmap font
 * (printable ASCII; other bytes are drawn as '?').
 *
 * Layout of grid_compose(): two panels of `cols` columns side by side, "original"
 * and "augmented" headers above them, tile k at the same place in both panels:
 *
 *   +--------------------------------------------------+
 *   | original               augmented                 |
 *   | [o0] [o1] [o2]         [a0] [a1] [a2]            |
 *   | cap0 cap1 cap2         cap0 cap1 cap2            |
 *   | [o3] ...               [a3] ...                  |
 *   +--------------------------------------------------+
 *
 * Captions are cut to GRID_CAPTION_MAX characters and to the tile's width. Text is
 * drawn at scale 2 under tiles at least 192 pixels wide, at scale 1 otherwise.
 *
 * grid_confusion() (grid_cm.c) draws a confusion matrix: rows the true classes,
 * columns the predictions, each cell shaded by its share of its row (dark 0, bright
 * blue 1: the diagonal is each class's recall), its count written in it when the
 * cell is wide enough, the class names on the left when a row is a text line high
 * (else every few indices), the column indices on top, a title line above.
 *
 * Ownership: grid_compose() and grid_confusion() malloc *out_rgb; the caller frees it with free(). The
 * tiles and captions stay the caller's. grid_text() draws into the caller's image
 * and clips at its edges, so it never writes outside it.
 */
#ifndef PT_GRID_H
#define PT_GRID_H

#include <stdint.h>

#define GRID_CAPTION_MAX 16
#define GRID_GLYPH_W 5          /* glyph pixels; a character cell is 6 x 8 */
#define GRID_GLYPH_H 7
#define GRID_CELL_W 6
#define GRID_CELL_H 8

/* Size of the sheet grid_compose() makes (cols <= 0: min(n, 4) columns). PT_OK or
 * PT_EUSAGE for bad arguments or a sheet over 2^28 pixels. */
int grid_size(int n, int tile_h, int tile_w, int cols, int *out_w, int *out_h);

/* Compose n pairs of h x w RGB tiles (orig[k], aug[k]) with captions[k] (captions
 * or any entry may be NULL: no caption). PT_OK, PT_EUSAGE or PT_ENOMEM. */
int grid_compose(const uint8_t *const *orig, const uint8_t *const *aug,
                 const char *const *captions, int n, int tile_h, int tile_w, int cols,
                 uint8_t **out_rgb, int *out_w, int *out_h);

/* The k x k confusion matrix cm ([true][pred] counts) as a picture; names (k of
 * them) and title may be NULL. PT_OK, PT_EUSAGE (k outside 1..2048) or PT_ENOMEM. */
int grid_confusion(const long long *cm, int k, const char *const *names, const char *title,
                   uint8_t **out_rgb, int *out_w, int *out_h);

/* Draw s with its top-left corner at (x, y) (1 pixel is scale x scale; scale < 1 is
 * 1), clipped to the w x h image rgb. '\n' starts a new line. */
void grid_text(uint8_t *rgb, int w, int h, int x, int y, const char *s, const uint8_t color[3],
               int scale);

/* Width in pixels of the widest line of s at a scale (no trailing spacing). */
int grid_text_width(const char *s, int scale);

/* The 7 rows of the glyph for c (5 bits each, bit 4 the leftmost pixel). */
const uint8_t *grid_glyph(unsigned char c);

#endif
