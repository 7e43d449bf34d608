#include "ui/chart.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double fwd(double v, int logy)
{
    return logy ? log10(v) : v;
}

static double inv(double v, int logy)
{
    return logy ? pow(10.0, v) : v;
}

static int usable(double v, int logy)
{
    return isfinite(v) && (!logy || v > 0);
}

int ui_chart_yrange(const ui_chart_series *s, int ns, int logy, ui_chart_axis *out)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < s[k].n; i++) {
            double v = s[k].y[i];
            if (!usable(v, logy) || (s[k].x && !isfinite(s[k].x[i])))
                continue;
            v = fwd(v, logy);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    out->log = logy;
    if (!(lo <= hi)) {
        out->lo = logy ? 0.1 : 0;
        out->hi = 1;
        return -1;
    }
    double span = hi - lo, raw_lo = lo;
    if (span <= 0)
        span = fabs(hi) > 0 ? fabs(hi) * 0.2 : 1;
    /* A little room so the extremes do not sit on the frame; a curve of
     * non-negative values (accuracy, lr) keeps 0 as its floor. */
    lo -= span * 0.05;
    hi += span * 0.05;
    if (!logy && raw_lo >= 0 && lo < 0)
        lo = 0;
    out->lo = inv(lo, logy);
    out->hi = inv(hi, logy);
    return 0;
}

double ui_chart_row_value(ui_chart_axis ya, int h, int row)
{
    int H = h * 4;
    double py = row * 4 + 1.5;
    double t = H > 1 ? 1.0 - py / (H - 1) : 0.5;
    double a = fwd(ya.lo, ya.log), b = fwd(ya.hi, ya.log);
    return inv(a + t * (b - a), ya.log);
}

static const uint8_t braille_bit[4][2] = {
    { 0x01, 0x08 }, { 0x02, 0x10 }, { 0x04, 0x20 }, { 0x40, 0x80 }
};

/* The dots accumulate in the cell's own glyph: a cleared cell is a space, below
 * the braille block, so its first dot starts from the empty pattern U+2800. */
static void dot(ui_cells *g, int px, int py, ui_role role)
{
    if (px < 0 || py < 0 || px >= g->w * 2 || py >= g->h * 4)
        return;
    ui_cell *c = &g->c[(py / 4) * g->w + px / 2];
    if (c->ch < 0x2800u || c->ch > 0x28ffu)
        c->ch = 0x2800u;
    c->ch |= braille_bit[py % 4][px % 2];
    c->role = (uint8_t)role;
}

static void line(ui_cells *g, int x0, int y0, int x1, int y1, ui_role role)
{
    int dx = x1 > x0 ? x1 - x0 : x0 - x1, sx = x0 < x1 ? 1 : -1;
    int dy = y1 > y0 ? y0 - y1 : y1 - y0, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    for (;;) {
        dot(g, x0, y0, role);
        if (x0 == x1 && y0 == y1)
            break;
        int e2 = 2 * err;
        if (e2 >= dy) {
            err += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            err += dx;
            y0 += sy;
        }
    }
}

void ui_chart_plot(ui_cells *g, ui_chart_axis xa, ui_chart_axis ya, const ui_chart_series *s,
                   int ns)
{
    ui_draw_cells_clear(g);
    if (g->h <= 0 || g->w <= 0)
        return;
    int W = g->w * 2, H = g->h * 4;
    double ylo = fwd(ya.lo, ya.log), yhi = fwd(ya.hi, ya.log);
    double xspan = xa.hi - xa.lo, yspan = yhi - ylo;
    for (int k = 0; k < ns; k++) {
        int have = 0, lx = 0, ly = 0;
        for (int i = 0; i < s[k].n; i++) {
            double v = s[k].y[i];
            double x = s[k].x ? s[k].x[i] : s[k].x0 + i * s[k].dx;
            if (!usable(v, ya.log) || !isfinite(x)) {
                have = 0;
                continue;
            }
            double tx = xspan > 0 ? (x - xa.lo) / xspan : 0;
            double ty = yspan > 0 ? (fwd(v, ya.log) - ylo) / yspan : 0.5;
            int px = (int)lround(tx * (W - 1));
            int py = (H - 1) - (int)lround(ty * (H - 1));
            if (have && !s[k].scatter)
                line(g, lx, ly, px, py, s[k].role);
            else
                dot(g, px, py, s[k].role);
            have = 1;
            lx = px;
            ly = py;
        }
    }
    for (int k = 0; k < ns; k++) {
        if (!s[k].marker)
            continue;
        for (int i = 0; i < s[k].n; i++) {
            double v = s[k].y[i];
            double x = s[k].x ? s[k].x[i] : s[k].x0 + i * s[k].dx;
            if (!usable(v, ya.log) || !isfinite(x))
                continue;
            double tx = xspan > 0 ? (x - xa.lo) / xspan : 0;
            double ty = yspan > 0 ? (fwd(v, ya.log) - ylo) / yspan : 0.5;
            int cx = (int)lround(tx * (W - 1)) / 2;
            int cy = ((H - 1) - (int)lround(ty * (H - 1))) / 4;
            if (cx >= 0 && cy >= 0 && cx < g->w && cy < g->h) {
                g->c[cy * g->w + cx].ch = s[k].marker;
                g->c[cy * g->w + cx].role = (uint8_t)s[k].role;
            }
        }
    }
}

void ui_chart_spark(const float *v, int n, double vmax, int w, uint32_t *out)
{
    if (w <= 0)
        return;
    if (vmax <= 0) {
        for (int i = 0; i < n; i++)
            if (isfinite(v[i]) && v[i] > vmax)
                vmax = v[i];
    }
    int lead = n < w ? w - n : 0;
    for (int i = 0; i < lead; i++)
        out[i] = ' ';
    int cells = w - lead;
    for (int j = 0; j < cells; j++) {
        /* Bin j covers values [a, b) of the n; max keeps short spikes visible. */
        int a = n <= w ? j : (int)((long long)j * n / cells);
        int b = n <= w ? j + 1 : (int)((long long)(j + 1) * n / cells);
        double m = -1;
        for (int i = a; i < b && i < n; i++)
            if (isfinite(v[i]) && v[i] > m)
                m = v[i];
        uint32_t ch = ' ';
        if (m > 0 && vmax > 0) {
            int level = (int)ceil(m / vmax * 8.0);
            level = level < 1 ? 1 : level > 8 ? 8 : level;
            ch = 0x2580u + (uint32_t)level;
        } else if (m == 0) {
            ch = 0x2581u;
        }
        out[lead + j] = ch;
    }
}

int ui_chart_bar(double frac, int w, uint32_t *out)
{
    if (w <= 0)
        return 0;
    if (!(frac > 0))
        frac = 0;
    if (frac > 1)
        frac = 1;
    long eighths = lround(frac * w * 8);
    int full = (int)(eighths / 8), rem = (int)(eighths % 8), used = 0;
    for (int i = 0; i < w; i++) {
        if (i < full)
            out[i] = 0x2588u;
        else if (i == full && rem)
            out[i] = 0x2590u - (uint32_t)rem;
        else
            out[i] = ' ';
        if (out[i] != ' ')
            used++;
    }
    return used;
}

void ui_chart_ema(const float *in, int n, double s, float *out)
{
    if (!(s > 0))
        s = 0;
    if (s >= 1)
        s = 0.999;
    double m = 0, sk = 1;
    for (int i = 0; i < n; i++) {
        double v = in[i];
        if (!isfinite(v)) {
            out[i] = in[i];
            continue;
        }
        m = s * m + (1 - s) * v;
        sk *= s;
        out[i] = (float)(sk < 1 ? m / (1 - sk) : v);
    }
}

void ui_chart_fmt(double v, int w, char *buf, size_t n)
{
    char t[64];
    if (n == 0)
        return;
    if (!isfinite(v)) {
        snprintf(buf, n, "--");
        return;
    }
    if (w < 4)
        w = 4;
    double a = fabs(v);
    if (a == 0) {
        snprintf(buf, n, "0");
        return;
    }
    if (a >= 100 && a < 1e5) {
        snprintf(t, sizeof t, "%.0f", v);
        if ((int)strlen(t) <= w) {
            snprintf(buf, n, "%s", t);
            return;
        }
    }
    if (a >= 1000) {
        static const struct { double div; char suf; } su[] = { { 1e3, 'k' }, { 1e6, 'M' },
                                                               { 1e9, 'G' }, { 1e12, 'T' } };
        for (size_t k = 0; k < sizeof su / sizeof su[0]; k++) {
            if (a / su[k].div >= 999.5 && k + 1 < sizeof su / sizeof su[0])
                continue;
            for (int p = 2; p >= 0; p--) {
                double m = v / su[k].div;
                int digits = fabs(m) >= 100 ? 0 : fabs(m) >= 10 ? 1 : 2;
                int pp = p < digits ? p : digits;
                snprintf(t, sizeof t, "%.*f%c", pp, m, su[k].suf);
                if ((int)strlen(t) <= w) {
                    snprintf(buf, n, "%s", t);
                    return;
                }
            }
            break;
        }
    } else {
        /* Plain decimals or e-notation: whichever keeps more significant digits
         * (0.123 but 3.2e-4 rather than 0.0003); plain on a tie. */
        char plain[64] = "", expo[64] = "";
        int pp = 0, ed = -1;
        for (int p = 3; p >= 1 && !pp; p--) {
            snprintf(t, sizeof t, "%.*g", p, v);
            if (!strchr(t, 'e') && (int)strlen(t) <= w) {
                snprintf(plain, sizeof plain, "%s", t);
                pp = p;
            }
        }
        int ex = (int)floor(log10(a));
        for (int d = 2; d >= 0 && ed < 0; d--) {
            double m = v / pow(10.0, ex);
            int e2 = ex;
            snprintf(t, sizeof t, "%.*f", d, m);
            if (fabs(atof(t)) >= 10) { /* 9.99 rounded up to 10.0 */
                m /= 10;
                e2++;
            }
            snprintf(t, sizeof t, "%.*fe%d", d, m, e2);
            if ((int)strlen(t) <= w) {
                snprintf(expo, sizeof expo, "%s", t);
                ed = d;
            }
        }
        /* "0.0003" carries one digit even when %g asked for more. */
        int plain_sig = 0;
        for (const char *c = plain, *nz = NULL; *c; c++) {
            if (*c >= '1' && *c <= '9' && !nz)
                nz = c;
            if (nz && *c >= '0' && *c <= '9')
                plain_sig++;
        }
        if (pp && (ed < 0 || plain_sig >= ed + 1 || a >= 0.01)) {
            snprintf(buf, n, "%s", plain);
            return;
        }
        if (ed >= 0) {
            snprintf(buf, n, "%s", expo);
            return;
        }
    }
    {
        int ex = (int)floor(log10(a));
        snprintf(t, sizeof t, "%.0fe%d", v / pow(10.0, ex), ex);
    }
    snprintf(buf, n, "%.*s", w, t);
}

void ui_chart_fmt_dur(double s, char *buf, size_t n)
{
    if (!isfinite(s) || s < 0) {
        snprintf(buf, n, "--");
        return;
    }
    long long t = (long long)llround(s);
    if (t < 60)
        snprintf(buf, n, "%llds", t);
    else if (t < 3600)
        snprintf(buf, n, "%lld:%02lld", t / 60, t % 60);
    else if (t < 100 * 3600)
        snprintf(buf, n, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, n, "%lldd%02lldh", t / 86400, t / 3600 % 24);
}

double ui_chart_value_at(const ui_chart_series *s, double x)
{
    int have = 0;
    double px = 0, py = 0;
    for (int i = 0; i < s->n; i++) {
        double v = s->y[i];
        double xi = s->x ? s->x[i] : s->x0 + i * s->dx;
        if (!isfinite(v) || !isfinite(xi))
            continue;
        if (xi == x)
            return v;
        if (have && px < x && x < xi)
            return py + (v - py) * (x - px) / (xi - px);
        have = 1;
        px = xi;
        py = v;
    }
    return NAN;
}
