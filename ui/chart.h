/* chart — graphs made of characters, computed off-screen into a ui_cells grid or
 * an array of code points, so they are tested without a terminal.
 *
 * Line charts use braille (2 x 4 dots per cell), sparklines the eight lower block
 * heights, bars and gauges the eight left partial blocks. With unicode off,
 * ui_draw turns each glyph into an ASCII stand-in. Also here: the smoothing of a
 * noisy curve (the debiased exponential moving average TensorBoard uses) and the
 * compact number and duration formats the panels print next to graphs.
 *
 * Ownership: callers pass every buffer in; nothing is allocated here.
 */
#ifndef PT_UI_CHART_H
#define PT_UI_CHART_H

#include <stddef.h>
#include <stdint.h>

#include "ui/draw.h"

typedef struct ui_chart_axis {
    double lo, hi;
    int log;            /* log10 scale (y only; values <= 0 are skipped) */
} ui_chart_axis;

typedef struct ui_chart_series {
    const float *y;     /* n values; a NaN or infinite value breaks the line */
    const float *x;     /* n positions, or NULL: x = x0 + i * dx */
    double x0, dx;
    int n;
    ui_role role;
    uint32_t marker;    /* drawn in the cell of every point (0: none) */
    int scatter;        /* points only, no lines between them (a noisy raw curve) */
} ui_chart_series;

/* The y range that holds every finite value of the series, with a little room
 * above and below; lo < hi always. Returns 0, or -1 when there is no value. */
int ui_chart_yrange(const ui_chart_series *s, int ns, int logy, ui_chart_axis *out);

/* Plot the series into g (cleared first) as braille lines between consecutive
 * points; later series are drawn over earlier ones. The cell at the top of row 0
 * is ya.hi, the bottom of the last row ya.lo. */
void ui_chart_plot(ui_cells *g, ui_chart_axis xa, ui_chart_axis ya, const ui_chart_series *s,
                   int ns);

/* The series' value at x: a point's own where one sits at x, else on the line
 * between the points on either side of it (points without a finite x or y are
 * passed over, as a validation every other epoch leaves them); NaN outside the
 * points' range. The points are taken in order, their x increasing. */
double ui_chart_value_at(const ui_chart_series *s, double x);

/* The value at the vertical middle of row `row` of an h-row chart. */
double ui_chart_row_value(ui_chart_axis ya, int h, int row);

/* A sparkline of the last values of v (n of them) in w cells: one cell per value,
 * or the maximum of each bin when n > w; right-aligned, blank cells on the left
 * when n < w. Heights are scaled to vmax (<= 0: the maximum of the values). */
void ui_chart_spark(const float *v, int n, double vmax, int w, uint32_t *out);

/* A bar of w cells filled to frac (clamped to 0..1) in eighths of a cell; the
 * rest is blank. Returns the cells that are not blank. */
int ui_chart_bar(double frac, int w, uint32_t *out);

/* Debiased exponential moving average with factor s in [0, 1): out[i] =
 * m_i / (1 - s^(i+1)), m_i = s m_(i-1) + (1 - s) in[i]. Non-finite inputs are
 * copied through and skipped. in and out may be the same array. */
void ui_chart_ema(const float *in, int n, double s, float *out);

/* v in at most w characters (w >= 4), keeping as many significant digits as fit:
 * "0.123", "12.3", "1234", "12.3k", "1.2e-4". */
void ui_chart_fmt(double v, int w, char *buf, size_t n);

/* Seconds as "42s", "3:07", "1:02:03", "2d03h"; "--" when negative or unknown. */
void ui_chart_fmt_dur(double seconds, char *buf, size_t n);

#endif
