/* grid_cm — a confusion matrix as a picture (see grid.h): a heat map of each
 * row's shares, drawn with the grid's font on the preview sheet's colours. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "picture/grid.h"

enum { CM_MARGIN = 8, CM_PAD = 4, CM_SIDE = 560, CM_NAME_CHARS = 14 };

static const uint8_t cm_bg[3] = { 28, 28, 32 };
static const uint8_t cm_fg[3] = { 235, 235, 235 };
static const uint8_t cm_head[3] = { 150, 200, 255 };
static const uint8_t cm_dark[3] = { 20, 20, 24 };
static const uint8_t cm_low[3] = { 44, 44, 54 };      /* a share of 0 */
static const uint8_t cm_high[3] = { 90, 170, 255 };   /* a share of 1 */

static void fill(uint8_t *rgb, int w, int h, int x0, int y0, int x1, int y1, const uint8_t c[3])
{
    x0 = x0 < 0 ? 0 : x0;
    y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > w ? w : x1;
    y1 = y1 > h ? h : y1;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++)
            memcpy(rgb + ((size_t)y * w + x) * 3, c, 3);
}

static int digits(long long v)
{
    int d = 1;
    for (; v >= 10; v /= 10)
        d++;
    return d;
}

/* Every how many rows / columns a label fits in cells of `cell` pixels. */
static int label_every(int cell, int need)
{
    int s = 1;
    while (s * cell < need)
        s = s < 5 ? 5 : s * 2;
    return s;
}

int grid_confusion(const long long *cm, int k, const char *const *names, const char *title,
                   uint8_t **out_rgb, int *out_w, int *out_h)
{
    if (out_rgb)
        *out_rgb = NULL;
    if (!cm || !out_rgb || k < 1 || k > 2048)
        return PT_EUSAGE;
    int cell = CM_SIDE / k;
    cell = cell < 1 ? 1 : cell > 48 ? 48 : cell;
    /* Row labels: the names where a row is a text line high, else every few indices. */
    int named = names && cell >= GRID_CELL_H;
    int row_every = named ? 1 : label_every(cell, GRID_CELL_H);
    int col_every = label_every(cell, digits(k - 1) * GRID_CELL_W + 2);
    int label_w = (named ? CM_NAME_CHARS : digits(k - 1)) * GRID_CELL_W + CM_PAD;
    int title_h = title ? GRID_CELL_H + CM_PAD : 0;
    int top_h = GRID_CELL_H + CM_PAD;
    int x0 = CM_MARGIN + label_w, y0 = CM_MARGIN + title_h + top_h;
    int W = x0 + k * cell + CM_MARGIN, H = y0 + k * cell + CM_MARGIN;
    if (title) {
        int tw = CM_MARGIN * 2 + grid_text_width(title, 1);
        W = tw > W ? tw : W;
    }
    uint8_t *img = malloc((size_t)W * H * 3);
    if (!img)
        return PT_ENOMEM;
    fill(img, W, H, 0, 0, W, H, cm_bg);
    if (title)
        grid_text(img, W, H, CM_MARGIN, CM_MARGIN, title, cm_head, 1);
    long long most = 0;
    for (long long i = 0; i < (long long)k * k; i++)
        most = cm[i] > most ? cm[i] : most;
    /* Counts inside the cells when they fit. */
    int counts = cell >= digits(most) * GRID_CELL_W + 2 && cell >= GRID_CELL_H + 2;
    char buf[32];
    for (int t = 0; t < k; t++) {
        long long row = 0;
        for (int p = 0; p < k; p++)
            row += cm[(size_t)t * k + p];
        int y = y0 + t * cell;
        if (t % row_every == 0) {
            if (named) {
                snprintf(buf, sizeof buf, "%.*s", CM_NAME_CHARS - 1, names[t] ? names[t] : "");
                for (char *c = buf; *c; c++)
                    *c = (unsigned char)*c < 32 ? ' ' : *c;
            } else {
                snprintf(buf, sizeof buf, "%d", t);
            }
            grid_text(img, W, H, CM_MARGIN, y + (cell - GRID_GLYPH_H) / 2, buf, cm_fg, 1);
        }
        for (int p = 0; p < k; p++) {
            long long n = cm[(size_t)t * k + p];
            double share = row > 0 ? (double)n / (double)row : 0;
            uint8_t c[3];
            for (int j = 0; j < 3; j++)
                c[j] = (uint8_t)(cm_low[j] + share * (cm_high[j] - cm_low[j]) + 0.5);
            int x = x0 + p * cell, gap = cell >= 6 ? 1 : 0;
            fill(img, W, H, x, y, x + cell - gap, y + cell - gap, c);
            if (counts && n > 0) {
                snprintf(buf, sizeof buf, "%lld", n);
                int tx = x + (cell - gap - grid_text_width(buf, 1)) / 2;
                grid_text(img, W, H, tx, y + (cell - gap - GRID_GLYPH_H) / 2, buf,
                          share > 0.55 ? cm_dark : cm_fg, 1);
            }
        }
    }
    for (int p = 0; p < k; p += col_every) {
        snprintf(buf, sizeof buf, "%d", p);
        int tx = x0 + p * cell + (cell - grid_text_width(buf, 1)) / 2;
        grid_text(img, W, H, tx < x0 ? x0 : tx, y0 - top_h + 1, buf, cm_fg, 1);
    }
    *out_rgb = img;
    if (out_w)
        *out_w = W;
    if (out_h)
        *out_h = H;
    return PT_OK;
}
