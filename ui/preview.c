#include "ui/preview.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/sixel.h"
#include "ui/term.h"

#define GAP_IN 1    /* columns between the images of a group */
#define GAP_OUT 2   /* columns between groups */

const char *ui_preview_mode_name(ui_pix_mode m)
{
    switch (m) {
    case UI_PIX_SIXEL: return "sixel";
    case UI_PIX_DIRECT: return "24-bit half blocks";
    case UI_PIX_256: return "256-colour half blocks";
    default: return "text";
    }
}

int ui_preview_fit(int cols, int rows, int cell_w, int cell_h, int group, int caption, int want,
                   int px_min, int px_max, ui_preview_geom *g)
{
    ui_preview_geom best = { 0 };
    if (cell_w <= 0 || cell_h <= 0 || group <= 0 || px_min <= 0)
        return -1;
    int step = px_max >= 64 ? 8 : 2;
    for (int px = px_max; px >= px_min; px -= step) {
        ui_preview_geom t = { 0 };
        t.group = group;
        t.caption = caption;
        t.cell_w = cell_w;
        t.cell_h = cell_h;
        t.tile_px = px;
        t.tile_cols = (px + cell_w - 1) / cell_w;
        t.tile_rows = (px + cell_h - 1) / cell_h;
        t.group_cols = group * t.tile_cols + (group - 1) * GAP_IN;
        t.per_row = (cols + GAP_OUT) / (t.group_cols + GAP_OUT);
        t.rows = rows / (t.tile_rows + caption);
        t.count = t.per_row * t.rows;
        /* The largest tile that shows what is wanted; failing that, the most
         * picture area among layouts that show at least half of it; failing
         * that, the most groups. */
        if (want > 0 && t.count >= want) {
            *g = t;
            return 0;
        }
        int need = (want + 1) / 2;
        long area = (long)t.count * px * px;
        long best_area = (long)best.count * best.tile_px * best.tile_px;
        int ok = t.count >= need, best_ok = best.count >= need;
        if (t.count > 0 && ((ok && (!best_ok || area > best_area)) ||
                            (!ok && !best_ok && t.count > best.count)))
            best = t;
    }
    if (best.count <= 0)
        return -1;
    *g = best;
    return 0;
}

void ui_preview_scale(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh)
{
    if (sw <= 0 || sh <= 0 || dw <= 0 || dh <= 0)
        return;
    /* The largest centred part of the source with the target's aspect. */
    double cw = sw, ch = sh, cx = 0, cy = 0;
    if ((double)sw * dh > (double)sh * dw) {
        cw = (double)sh * dw / dh;
        cx = (sw - cw) / 2;
    } else {
        ch = (double)sw * dh / dw;
        cy = (sh - ch) / 2;
    }
    double fx = cw / dw, fy = ch / dh;
    int shrink = fx > 1.0 || fy > 1.0;
    for (int y = 0; y < dh; y++) {
        for (int x = 0; x < dw; x++) {
            uint8_t *o = dst + ((size_t)y * dw + x) * 3;
            if (shrink) {
                int x0 = (int)(cx + x * fx), x1 = (int)(cx + (x + 1) * fx);
                int y0 = (int)(cy + y * fy), y1 = (int)(cy + (y + 1) * fy);
                if (x1 <= x0)
                    x1 = x0 + 1;
                if (y1 <= y0)
                    y1 = y0 + 1;
                if (x1 > sw)
                    x1 = sw;
                if (y1 > sh)
                    y1 = sh;
                unsigned sum[3] = { 0, 0, 0 }, n = 0;
                for (int yy = y0; yy < y1; yy++)
                    for (int xx = x0; xx < x1; xx++) {
                        const uint8_t *s = src + ((size_t)yy * sw + xx) * 3;
                        sum[0] += s[0];
                        sum[1] += s[1];
                        sum[2] += s[2];
                        n++;
                    }
                for (int c = 0; c < 3; c++)
                    o[c] = (uint8_t)(n ? (sum[c] + n / 2) / n : 0);
            } else {
                double sx = cx + (x + 0.5) * fx - 0.5, sy = cy + (y + 0.5) * fy - 0.5;
                if (sx < 0)
                    sx = 0;
                if (sy < 0)
                    sy = 0;
                int ix = (int)sx, iy = (int)sy;
                int ix1 = ix + 1 < sw ? ix + 1 : sw - 1, iy1 = iy + 1 < sh ? iy + 1 : sh - 1;
                double ax = sx - ix, ay = sy - iy;
                for (int c = 0; c < 3; c++) {
                    double a = src[((size_t)iy * sw + ix) * 3 + c];
                    double b = src[((size_t)iy * sw + ix1) * 3 + c];
                    double d = src[((size_t)iy1 * sw + ix) * 3 + c];
                    double e = src[((size_t)iy1 * sw + ix1) * 3 + c];
                    double v = (a * (1 - ax) + b * ax) * (1 - ay) + (d * (1 - ax) + e * ax) * ay;
                    o[c] = (uint8_t)(v + 0.5);
                }
            }
        }
    }
}

static int cube_level(int v)
{
    return v < 48 ? 0 : v < 115 ? 1 : (v - 35) / 40;
}

int ui_preview_xterm256(const uint8_t rgb[3])
{
    static const int lv[6] = { 0, 95, 135, 175, 215, 255 };
    int r = cube_level(rgb[0]), g = cube_level(rgb[1]), b = cube_level(rgb[2]);
    int dc = (lv[r] - rgb[0]) * (lv[r] - rgb[0]) + (lv[g] - rgb[1]) * (lv[g] - rgb[1]) +
             (lv[b] - rgb[2]) * (lv[b] - rgb[2]);
    int avg = (rgb[0] + rgb[1] + rgb[2]) / 3;
    int gi = avg < 8 ? 0 : avg > 238 ? 23 : (avg - 8 + 5) / 10;
    if (gi > 23)
        gi = 23;
    int gv = 8 + 10 * gi;
    int dg = (gv - rgb[0]) * (gv - rgb[0]) + (gv - rgb[1]) * (gv - rgb[1]) +
             (gv - rgb[2]) * (gv - rgb[2]);
    return dg < dc ? 232 + gi : 16 + 36 * r + 6 * g + b;
}

void ui_preview_init(ui_preview *p, ui_pix_mode mode, int cell_w, int cell_h, int colors,
                     int max_w, const uint8_t bg[3])
{
    memset(p, 0, sizeof *p);
    p->mode = mode;
    p->cell_w = cell_w > 0 ? cell_w : 8;
    p->cell_h = cell_h > 0 ? cell_h : 16;
    p->colors = colors > 0 ? colors : 256;
    p->max_w = max_w;
    if (bg)
        memcpy(p->bg, bg, 3);
}

static void drop(ui_preview *p)
{
    free(p->cap);
    free(p->fg);
    free(p->bgc);
    free(p->used);
    p->cap = NULL;
    p->fg = p->bgc = p->used = NULL;
    for (int i = 0; i < p->n_ov; i++)
        p->ov[i].len = 0;
    p->n_ov = 0;
    p->groups = 0;
}

void ui_preview_free(ui_preview *p)
{
    drop(p);
    for (int i = 0; i < UI_PREVIEW_MAX_OV; i++) {
        free(p->ov[i].data);
        p->ov[i].data = NULL;
        p->ov[i].cap = 0;
    }
    p->content = 0;
}

void ui_preview_hide(ui_preview *p)
{
    drop(p);
    p->content = 0;
    memset(&p->area, 0, sizeof p->area);
}

static int ov_append(ui_preview *p, int i, const char *s, size_t n)
{
    if (p->ov[i].len + n > p->ov[i].cap) {
        size_t cap = p->ov[i].cap ? p->ov[i].cap : 16384;
        while (cap < p->ov[i].len + n)
            cap *= 2;
        char *d = realloc(p->ov[i].data, cap);
        if (!d)
            return -1;
        p->ov[i].data = d;
        p->ov[i].cap = cap;
    }
    memcpy(p->ov[i].data + p->ov[i].len, s, n);
    p->ov[i].len += n;
    return 0;
}

/* Paint the row of groups `row` into a W x H picture (bg first): images at their
 * tile positions, scaled into px x px squares centred in the tile. Pixel units:
 * cw x ch per cell. */
static void compose_row(const ui_preview *p, const ui_preview_image *imgs, int row, int cw, int ch,
                        int px, uint8_t *pic, int W, int H, uint8_t *tmp)
{
    const ui_preview_geom *g = &p->geom;
    for (int i = 0; i < W * H; i++)
        memcpy(pic + (size_t)i * 3, p->bg, 3);
    for (int gx = 0; gx < g->per_row; gx++) {
        int gi = row * g->per_row + gx;
        if (gi >= p->groups)
            break;
        for (int k = 0; k < g->group; k++) {
            const ui_preview_image *im = &imgs[gi * g->group + k];
            if (!im->rgb || im->w <= 0 || im->h <= 0)
                continue;
            int bx = (gx * (g->group_cols + GAP_OUT) + k * (g->tile_cols + GAP_IN)) * cw;
            int ox = bx + (g->tile_cols * cw - px) / 2, oy = (g->tile_rows * ch - px) / 2;
            ui_preview_scale(im->rgb, im->w, im->h, tmp, px, px);
            for (int y = 0; y < px; y++) {
                if (oy + y < 0 || oy + y >= H)
                    continue;
                int n = px;
                if (ox + n > W)
                    n = W - ox;
                if (n > 0 && ox >= 0)
                    memcpy(pic + ((size_t)(oy + y) * W + ox) * 3, tmp + (size_t)y * px * 3,
                           (size_t)n * 3);
            }
        }
    }
}

static int luminance(const uint8_t *c)
{
    return (c[0] * 299 + c[1] * 587 + c[2] * 114) / 1000;
}

/* A row of groups composed into a picture, for its overlays or cells. */
typedef struct pic_row {
    const uint8_t *pic;     /* W x H RGB */
    int W, H, cw;           /* its pixels; pixels per cell across */
    int total_w, ox;        /* the grid's columns, and its offset in the area */
    int y0, row;            /* the row's first cell row in the area; its index */
    int groups;             /* groups in the whole grid */
} pic_row;

/* A sixel row: as many groups per image as the terminal takes in one (max_w). */
static void sixel_row(ui_preview *p, const pic_row *q)
{
    const ui_preview_geom *g = &p->geom;
    int cw = q->cw, H = q->H;
    int step = g->group_cols + GAP_OUT;
    int per = p->max_w > 0 ? (p->max_w / cw + GAP_OUT) / step : g->per_row;
    if (per < 1)
        per = 1;
    for (int g0 = 0; g0 < g->per_row && q->row * g->per_row + g0 < q->groups; g0 += per) {
        int o = p->n_ov;
        if (o >= UI_PREVIEW_MAX_OV)
            break;
        int ng = g->per_row - g0 < per ? g->per_row - g0 : per;
        int c0 = g0 * step, cols = ng * step - GAP_OUT;
        if (c0 + cols > q->total_w)
            cols = q->total_w - c0;
        const uint8_t *part = q->pic;
        uint8_t *own = NULL;
        if (cols < q->total_w) {
            own = malloc((size_t)cols * cw * H * 3);
            if (!own)
                break;
            for (int y = 0; y < H; y++)
                memcpy(own + (size_t)y * cols * cw * 3,
                       q->pic + ((size_t)y * q->W + (size_t)c0 * cw) * 3, (size_t)cols * cw * 3);
            part = own;
        }
        ui_sixel_buf sb = { p->ov[o].data, 0, p->ov[o].cap, 0 };
        int rc = ui_sixel_encode(part, cols * cw, H, p->colors, &sb);
        free(own);
        p->ov[o].data = sb.data;
        p->ov[o].cap = sb.cap;
        p->ov[o].len = rc == 0 ? sb.len : 0;
        p->ov[o].row = p->area.y + q->y0;
        p->ov[o].col = p->area.x + q->ox + c0;
        p->ov[o].rows = g->tile_rows;
        p->ov[o].cols = cols;
        p->ov[o].shown = 0;
        p->n_ov = o + 1;
    }
}

/* One cell row of an image tile at column bx, in half blocks: 24-bit escapes into
 * overlay o, or 256-colour pairs or ASCII into the cell arrays. */
static void blocks_line(ui_preview *p, int o, const pic_row *q, int bx, int cy)
{
    const ui_preview_geom *g = &p->geom;
    ui_rect area = p->area;
    char s[96];
    int last[6] = { -1, -1, -1, -1, -1, -1 };
    if (p->mode == UI_PIX_DIRECT) {
        int k2 = snprintf(s, sizeof s, "\033[%d;%dH", area.y + q->y0 + cy + 1,
                          area.x + q->ox + bx + 1);
        ov_append(p, o, s, (size_t)k2);
    }
    for (int cx = bx; cx < bx + g->tile_cols && cx < q->total_w; cx++) {
        const uint8_t *t = q->pic + ((size_t)(cy * 2) * q->W + cx) * 3;
        const uint8_t *u = q->pic + ((size_t)(cy * 2 + 1) * q->W + cx) * 3;
        if (p->mode == UI_PIX_DIRECT) {
            int now[6] = { t[0], t[1], t[2], u[0], u[1], u[2] };
            int k2 = 0;
            if (memcmp(now, last, sizeof now) != 0) {
                k2 = snprintf(s, sizeof s, "\033[38;2;%d;%d;%d;48;2;%d;%d;%dm", t[0], t[1], t[2],
                              u[0], u[1], u[2]);
                memcpy(last, now, sizeof now);
            }
            memcpy(s + k2, "\xe2\x96\x80", 3); /* U+2580 upper half block */
            ov_append(p, o, s, (size_t)k2 + 3);
            continue;
        }
        size_t cell = (size_t)(q->y0 + cy) * area.w + (size_t)(q->ox + cx);
        p->used[cell] = 1;
        if (p->mode == UI_PIX_256) {
            p->fg[cell] = (uint8_t)ui_preview_xterm256(t);
            p->bgc[cell] = (uint8_t)ui_preview_xterm256(u);
        } else {
            static const char ramp[] = " .:-=+*#%@";
            int l = (luminance(t) + luminance(u)) / 2;
            p->fg[cell] = (uint8_t)ramp[l * 10 / 256];
        }
    }
    if (p->mode == UI_PIX_DIRECT)
        ov_append(p, o, "\033[0m", 4);
}

/* A half-block row: only the cells of image tiles; gaps stay blank. 24-bit
 * pictures make one overlay of the row. */
static void blocks_row(ui_preview *p, const pic_row *q)
{
    const ui_preview_geom *g = &p->geom;
    int o = p->n_ov;
    int nbox = 0;
    for (int gx = 0; gx < g->per_row && q->row * g->per_row + gx < q->groups; gx++)
        nbox += g->group;
    for (int b = 0; b < nbox; b++) {
        int gx = b / g->group, k = b % g->group;
        int bx = gx * (g->group_cols + GAP_OUT) + k * (g->tile_cols + GAP_IN);
        for (int cy = 0; cy < g->tile_rows && q->y0 + cy < p->area.h; cy++)
            blocks_line(p, o, q, bx, cy);
    }
    if (p->mode == UI_PIX_DIRECT) {
        p->ov[o].row = p->area.y + q->y0;
        p->ov[o].col = p->area.x + q->ox;
        p->ov[o].rows = g->tile_rows;
        p->ov[o].cols = q->total_w;
        p->ov[o].shown = 0;
        p->n_ov = o + 1;
    }
}

int ui_preview_set(ui_preview *p, uint64_t content, ui_rect area, const ui_preview_geom *geom,
                   const ui_preview_image *imgs, const ui_preview_caption *caps, int groups)
{
    if (groups > geom->count)
        groups = geom->count;
    if (content == p->content && memcmp(&area, &p->area, sizeof area) == 0 &&
        memcmp(geom, &p->geom, sizeof *geom) == 0 && groups == p->groups) {
        /* Same pictures: captions are text (class names may arrive later), so
         * they change without touching the pictures. */
        if (caps && p->cap)
            memcpy(p->cap, caps, sizeof *p->cap * (size_t)groups);
        return 0;
    }
    drop(p);
    p->content = content;
    p->area = area;
    p->geom = *geom;
    p->groups = groups;
    ui_preview_geom *g = &p->geom;
    if (g->rows > UI_PREVIEW_MAX_ROWS)
        g->rows = UI_PREVIEW_MAX_ROWS;
    int total_w = g->per_row * g->group_cols + (g->per_row - 1) * GAP_OUT;
    if (g->per_row <= 0 || g->rows <= 0 || total_w > area.w) {
        p->content = 0;
        return -1;
    }
    int ox = (area.w - total_w) / 2;
    p->cap = calloc((size_t)(groups > 0 ? groups : 1), sizeof *p->cap);
    if (!p->cap)
        goto fail;
    if (caps)
        memcpy(p->cap, caps, sizeof *p->cap * (size_t)groups);

    int sixel = p->mode == UI_PIX_SIXEL;
    int cw = sixel ? p->cell_w : 1, ch = sixel ? p->cell_h : 2;
    int px = sixel ? g->tile_px : g->tile_cols; /* half blocks: one pixel per column */
    if (!sixel && px > g->tile_rows * 2)
        px = g->tile_rows * 2;
    int W = total_w * cw, H = g->tile_rows * ch;
    uint8_t *pic = malloc((size_t)W * H * 3), *tmp = malloc((size_t)px * px * 3 + 3);
    if (!pic || !tmp) {
        free(pic);
        free(tmp);
        goto fail;
    }
    if (p->mode == UI_PIX_256 || p->mode == UI_PIX_ASCII) {
        size_t cells = (size_t)area.h * area.w;
        p->fg = calloc(cells, 1);
        p->bgc = calloc(cells, 1);
        p->used = calloc(cells, 1);
        if (!p->fg || !p->bgc || !p->used) {
            free(pic);
            free(tmp);
            goto fail;
        }
    }
    int rows_used = (groups + g->per_row - 1) / g->per_row;
    for (int r = 0; r < g->rows && r < rows_used; r++) {
        pic_row q = { pic, W, H, cw, total_w, ox, r * (g->tile_rows + g->caption), r, groups };
        compose_row(p, imgs, r, cw, ch, px, pic, W, H, tmp);
        if (sixel)
            sixel_row(p, &q);
        else if (p->mode == UI_PIX_DIRECT && p->n_ov >= UI_PREVIEW_MAX_OV)
            break;
        else
            blocks_row(p, &q);
    }
    free(pic);
    free(tmp);
    return 1;
fail:
    drop(p);
    p->content = 0;
    return -1;
}

void ui_preview_draw(const ui_preview *p, WINDOW *w)
{
    if (!p->content)
        return;
    const ui_preview_geom *g = &p->geom;
    const ui_rect a = p->area;
    int total_w = g->per_row * g->group_cols + (g->per_row - 1) * GAP_OUT;
    int ox = (a.w - total_w) / 2;
    if (p->used) {
        for (int y = 0; y < a.h; y++)
            for (int x = 0; x < a.w; x++) {
                size_t cell = (size_t)y * a.w + x;
                if (!p->used[cell])
                    continue;
                if (p->mode == UI_PIX_256) {
                    int pair = alloc_pair(p->fg[cell], p->bgc[cell]);
                    cchar_t cc;
                    wchar_t wc[2] = { 0x2580, 0 };
                    if (pair > 0 && setcchar(&cc, wc, A_NORMAL, 0, &pair) == OK)
                        mvwadd_wch(w, a.y + y, a.x + x, &cc);
                } else {
                    mvwaddch(w, a.y + y, a.x + x, (chtype)p->fg[cell]);
                }
            }
    }
    /* Under overlays, blanks of their own kind: text drawn over them (a dialog)
     * differs from them in every cell, and they in every cell from it. */
    for (int i = 0; i < p->n_ov; i++)
        for (int y = 0; y < p->ov[i].rows; y++)
            mvwhline(w, p->ov[i].row + y, p->ov[i].col, ' ' | A_INVIS, p->ov[i].cols);
    for (int i = 0; i < p->groups; i++) {
        int gy = i / g->per_row, gx = i % g->per_row;
        int y = a.y + gy * (g->tile_rows + g->caption) + g->tile_rows;
        int x = a.x + ox + gx * (g->group_cols + GAP_OUT);
        for (int k = 0; k < g->caption && k < 2; k++) {
            const char *t = p->cap[i].text[k];
            int tw = ui_draw_width(t);
            int pad = tw < g->group_cols ? (g->group_cols - tw) / 2 : 0;
            ui_draw_text_cut(w, y + k, x + pad, g->group_cols, (ui_role)p->cap[i].role[k], t);
        }
    }
}

size_t ui_preview_flush(ui_preview *p, int fd, int force, ui_rect cover)
{
    if (!p->content)
        return 0;
    size_t total = 0;
    for (int i = 0; i < p->n_ov; i++) {
        if (!p->ov[i].len)
            continue;
        if (force)
            p->ov[i].shown = 0;
        ui_rect r = { p->ov[i].row, p->ov[i].col, p->ov[i].rows, p->ov[i].cols };
        if (ui_layout_overlap(r, cover)) {
            /* Part of it is under the dialog now, and blank once the dialog goes. */
            p->ov[i].shown = 0;
            continue;
        }
        if (p->ov[i].shown)
            continue;
        if (ui_term_write_at(fd, p->ov[i].row, p->ov[i].col, p->ov[i].data, p->ov[i].len) != 0)
            break;
        p->ov[i].shown = 1;
        total += p->ov[i].len;
    }
    return total;
}
