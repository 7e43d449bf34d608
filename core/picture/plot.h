/* plot — a curve against a logarithmic x axis as a picture (the learning-rate
 * finder's loss against the rate, for `petal-tui lr-find --plot`): white ground,
 * axes with a tick and a label at every power of ten on x and five values on y,
 * the curve as a line (cut at the plot's edges), and vertical marks with their labels at chosen x values.
 * Text is grid.h's 5x7 font.
 *
 * Ownership: plot_logx() mallocs *out_rgb (w x h x 3); the caller frees it with
 * free(). The spec's arrays and strings stay the caller's.
 */
#ifndef PT_PLOT_H
#define PT_PLOT_H

#include <stdint.h>

typedef struct plot_mark {
    double x;                   /* > 0 */
    const char *label;          /* drawn beside the mark's line; may be NULL */
    uint8_t color[3];
} plot_mark;

typedef struct plot_spec {
    const double *x, *y;        /* n points; x > 0 and increasing; y finite */
    int n;
    const plot_mark *marks;
    int n_marks;
    const char *title, *xlabel, *ylabel;   /* may be NULL */
    double y_top;               /* > 0 and below the largest y: the axis ends there and
                                   the curve is cut at the top (0: the largest y) */
    int w, h;                   /* the picture's size: at least 320 x 200 */
} plot_spec;

/* PT_OK, PT_EUSAGE (fewer than 2 points, an x <= 0, a size outside 320x200 ..
 * 4096x4096) or PT_ENOMEM. */
int plot_logx(const plot_spec *s, uint8_t **out_rgb, int *out_w, int *out_h);

#endif
