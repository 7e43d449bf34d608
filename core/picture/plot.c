/* plot — a curve on a log-x axis as a picture (see plot.h). */
#include "picture/plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "picture/grid.h"

#define SCALE 2                 /* the font's pixel size */
#define LEFT 110                /* margins: room for the y labels, title, x labels */
#define RIGHT 30
#define TOP 50
#define BOTTOM 70

static const uint8_t INK[3] = { 40, 40, 40 }, GRID[3] = { 225, 225, 225 },
                     CURVE[3] = { 31, 119, 180 };

typedef struct canvas {
    uint8_t *rgb;
    int w, h;
    int x0, y0, x1, y1;         /* the plot area, y0 at the top */
    double lx0, lx1, y_lo, y_hi;
    int clip;                   /* 1: dots outside the plot area are dropped */
} canvas;

static void dot(const canvas *c, int x, int y, const uint8_t col[3])
{
    if (x < 0 || y < 0 || x >= c->w || y >= c->h)
        return;
    if (c->clip && (x < c->x0 || x > c->x1 || y < c->y0 || y > c->y1))
        return;
    memcpy(c->rgb + ((size_t)y * c->w + x) * 3, col, 3);
}

/* A line `thick` pixels wide (Bresenham, each point a small square). */
static void line(const canvas *c, int xa, int ya, int xb, int yb, const uint8_t col[3], int thick)
{
    int dx = abs(xb - xa), dy = -abs(yb - ya), sx = xa < xb ? 1 : -1, sy = ya < yb ? 1 : -1;
    int err = dx + dy;
    for (;;) {
        for (int i = 0; i < thick; i++)
            for (int j = 0; j < thick; j++)
                dot(c, xa + i - thick / 2, ya + j - thick / 2, col);
        if (xa == xb && ya == yb)
            break;
        int e2 = 2 * err;
        if (e2 >= dy) {
            err += dy;
            xa += sx;
        }
        if (e2 <= dx) {
            err += dx;
            ya += sy;
        }
    }
}

static int px(const canvas *c, double x)
{
    return c->x0 + (int)lround((log10(x) - c->lx0) / (c->lx1 - c->lx0) * (c->x1 - c->x0));
}

static int py(const canvas *c, double y)
{
    double t = (y - c->y_lo) / (c->y_hi - c->y_lo);
    return c->y1 - (int)lround(t * (c->y1 - c->y0));
}

/* Axes, decade ticks on x ("1e-7"), five values on y, the grid behind. */
static void axes(const canvas *c)
{
    char buf[32];
    for (int d = (int)ceil(c->lx0 - 1e-9); d <= (int)floor(c->lx1 + 1e-9); d++) {
        int x = px(c, pow(10, d));
        line(c, x, c->y0, x, c->y1, GRID, 1);
        line(c, x, c->y1, x, c->y1 + 6, INK, 1);
        snprintf(buf, sizeof buf, "1e%d", d);
        grid_text(c->rgb, c->w, c->h, x - grid_text_width(buf, SCALE) / 2, c->y1 + 12, buf, INK,
                  SCALE);
    }
    for (int k = 0; k <= 4; k++) {
        double v = c->y_lo + (c->y_hi - c->y_lo) * k / 4;
        int y = py(c, v);
        line(c, c->x0, y, c->x1, y, GRID, 1);
        line(c, c->x0 - 6, y, c->x0, y, INK, 1);
        snprintf(buf, sizeof buf, "%.3g", v);
        grid_text(c->rgb, c->w, c->h, c->x0 - 10 - grid_text_width(buf, SCALE),
                  y - GRID_GLYPH_H * SCALE / 2, buf, INK, SCALE);
    }
    line(c, c->x0, c->y0, c->x0, c->y1, INK, 1);
    line(c, c->x0, c->y1, c->x1, c->y1, INK, 1);
}

/* A mark: a dashed vertical line, a dot where it meets the curve, its label. */
static void mark(const canvas *c, const plot_spec *s, const plot_mark *m, int k)
{
    int x = px(c, m->x);
    for (int y = c->y0; y < c->y1; y += 10)
        line(c, x, y, x, y + 5 < c->y1 ? y + 5 : c->y1, m->color, 2);
    for (int i = 0; i < s->n; i++)
        if (fabs(log10(s->x[i]) - log10(m->x)) < 1e-9) {
            int y = py(c, s->y[i]);
            for (int a = -5; a <= 5; a++)
                for (int b = -5; b <= 5; b++)
                    if (a * a + b * b <= 25)
                        dot(c, x + a, y + b, m->color);
        }
    if (!m->label)
        return;
    int tw = grid_text_width(m->label, SCALE);
    int tx = x + 8 + tw < c->x1 ? x + 8 : x - 8 - tw;
    grid_text(c->rgb, c->w, c->h, tx, c->y0 + 8 + k * (GRID_CELL_H * SCALE + 4), m->label,
              m->color, SCALE);
}

int plot_logx(const plot_spec *s, uint8_t **out_rgb, int *out_w, int *out_h)
{
    *out_rgb = NULL;
    if (s->n < 2 || s->w < 320 || s->h < 200 || s->w > 4096 || s->h > 4096)
        return PT_EUSAGE;
    canvas c = { .w = s->w, .h = s->h, .x0 = LEFT, .y0 = TOP, .x1 = s->w - RIGHT,
                 .y1 = s->h - BOTTOM, .y_lo = INFINITY, .y_hi = -INFINITY };
    for (int i = 0; i < s->n; i++) {
        if (!(s->x[i] > 0) || !isfinite(s->y[i]))
            return PT_EUSAGE;
        c.y_lo = fmin(c.y_lo, s->y[i]);
        c.y_hi = fmax(c.y_hi, s->y[i]);
    }
    if (s->y_top > c.y_lo && s->y_top < c.y_hi)
        c.y_hi = s->y_top;
    double pad = (c.y_hi - c.y_lo) * 0.05;
    if (pad <= 0)
        pad = fabs(c.y_hi) * 0.05 + 1e-3;
    c.y_lo -= pad;
    c.y_hi += pad;
    /* Whole decades around the points, so that every tick is a power of ten. */
    c.lx0 = floor(log10(s->x[0]) + 1e-9);
    c.lx1 = ceil(log10(s->x[s->n - 1]) - 1e-9);
    if (c.lx1 <= c.lx0)
        c.lx1 = c.lx0 + 1;
    c.rgb = malloc((size_t)s->w * s->h * 3);
    if (!c.rgb)
        return PT_ENOMEM;
    memset(c.rgb, 255, (size_t)s->w * s->h * 3);
    axes(&c);
    c.clip = 1;
    for (int i = 0; i + 1 < s->n; i++)
        line(&c, px(&c, s->x[i]), py(&c, s->y[i]), px(&c, s->x[i + 1]), py(&c, s->y[i + 1]),
             CURVE, 3);
    for (int k = 0; k < s->n_marks; k++)
        mark(&c, s, &s->marks[k], k);
    c.clip = 0;
    if (s->title)
        grid_text(c.rgb, c.w, c.h, (c.x0 + c.x1 - grid_text_width(s->title, SCALE)) / 2, 16,
                  s->title, INK, SCALE);
    if (s->xlabel)
        grid_text(c.rgb, c.w, c.h, (c.x0 + c.x1 - grid_text_width(s->xlabel, SCALE)) / 2,
                  c.h - 26, s->xlabel, INK, SCALE);
    if (s->ylabel)
        grid_text(c.rgb, c.w, c.h, 8, 16, s->ylabel, INK, SCALE);
    *out_rgb = c.rgb;
    *out_w = c.w;
    *out_h = c.h;
    return PT_OK;
}
