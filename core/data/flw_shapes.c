/* flw_shapes — what the flower renderer evaluates per pixel: the edge ramp that turns
 * an implicit function's value over its pixel-space gradient into anti-aliased (or
 * defocused) coverage, then petals (shape, notch, shading, veins, gloss, speckles),
 * the centre disk, a whole flower (its disk and petal rings composited front to back,
 * looking only at the petals of the pixel's own sector and its neighbours), stems,
 * blurred leaves, and the background they lie on (gradient and mottling). Each
 * painter reads the scene set up by flw_scene.c and blends into the caller's colour;
 * nothing here draws random numbers or keeps state. */
#include "data/flw_impl.h"

#include <math.h> /* sqrtf only: correctly rounded everywhere */

/* No fused multiply-add, so floats stay bit-exact: see this pragma in flowers.c. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* Edge ramp: the signed pixel distance to the edge of the implicit shape g < 0, from
 * g and its pixel-space gradient length^2 gl2. Beyond half the ramp width w it
 * returns 1e30 (fully outside) or -1e30 (fully inside), skipping the square root. */
static float ramp_dist(float g, float gl2, float w)
{
    float lim = 0.25f * w * w * gl2;
    if (g * g >= lim)
        return g >= 0.0f ? 1e30f : -1e30f;
    return g / sqrtf(gl2);
}

/* Colour (out) and coverage (returned; 0 when the pixel misses) of petal p at pixel
 * offset (dx, dy) from the petal frame's origin. */
static float petal_eval(const petal *p, const pstyle *st, float blur, float dx, float dy,
                        float *out)
{
    float u = p->m00 * dx + p->m01 * dy;
    float xr = (u - p->uc) * p->ia;
    if (xr < -p->xlim || xr > p->xlim)
        return 0.0f;
    float v = p->m10 * dx + p->m11 * dy;
    if (v < -p->vlim || v > p->vlim)
        return 0.0f;
    float bb = p->b0 * (1.0f - p->s * xr);
    if (bb < 0.05f * p->b0)
        bb = 0.05f * p->b0;
    float ib = 1.0f / bb;
    float yr = v * ib;
    float q2 = xr * xr + yr * yr;
    float g = q2 - 1.0f;
    /* d/du and d/dv of g, with the taper's effect on the width. */
    float gu = 2.0f * (xr * p->ia + yr * yr * p->ks * ib);
    float gv = 2.0f * yr * ib;
    float sx = p->m00 * gu + p->m10 * gv, sy = p->m01 * gu + p->m11 * gv;
    float d = ramp_dist(g, sx * sx + sy * sy, blur);
    if (d > 1e29f)
        return 0.0f;
    if (p->nr > 0.0f) {
        float nu = u - p->nu;
        float nd2 = nu * nu + v * v;
        if (nd2 < p->nlim2 && nd2 > 0.0f) {
            float nd = sqrtf(nd2);
            float ex = -nu / nd, ey = -v / nd;
            float nx = p->m00 * ex + p->m10 * ey, ny = p->m01 * ex + p->m11 * ey;
            float gl2 = nx * nx + ny * ny;
            if (gl2 > 0.0f) {
                float dn = (p->nr - nd) / sqrtf(gl2);
                if (dn > d)
                    d = dn;
            }
        }
    }
    float alpha = clampf(0.5f - d / blur, 0.0f, 1.0f);
    if (alpha <= 0.0f)
        return 0.0f;

    float t = 0.5f * (xr + 1.0f);
    float bt = sstep(0.0f, st->base_len, t);
    float shade = p->shade;
    shade *= 1.0f - st->rim * sstep(0.55f, 1.0f, q2);
    shade *= 0.8f + 0.2f * sstep(0.0f, 0.3f, t);
    if (p->veins > 0.0f)
        shade *= 1.0f - p->veins * (1.0f - tri(yr * 2.5f + 0.5f)) * sstep(0.1f, 0.5f, t);
    if (st->gloss > 0.0f)
        shade += st->gloss * (1.0f - sstep(0.0f, 0.3f, absf(t - 0.6f))) *
                 (1.0f - sstep(0.2f, 0.9f, absf(yr)));
    float pc[3];
    for (int i = 0; i < 3; i++)
        pc[i] = st->base[i] + (st->tip[i] - st->base[i]) * bt;
    if (st->spots > 0.0f && t < 0.7f) {
        /* Speckles on a lattice in the petal frame: one jittered dot per cell. */
        float fu = u * 16.0f, fv = v * 16.0f;
        int iu = ifloor(fu), iv = ifloor(fv);
        uint32_t h = hash3(st->salt, (uint32_t)iu, (uint32_t)iv);
        if ((h & 3u) == 0u) {
            float ox = fu - (float)iu - 0.3f - 0.4f * hash_unit(h * 0x9e3779b9u);
            float oy = fv - (float)iv - 0.5f;
            float dd = ox * ox + oy * oy;
            float sp = st->spots * (1.0f - sstep(0.05f, 0.1f, dd)) * sstep(0.1f, 0.25f, t);
            for (int i = 0; i < 3; i++)
                pc[i] *= 1.0f - 0.85f * sp;
        }
    }
    for (int i = 0; i < 3; i++)
        out[i] = clampf(pc[i] * shade, 0.0f, 1.0f);
    return alpha;
}

void flw_petal_paint(const petal *p, const pstyle *st, float blur, float dx, float dy,
                     float *col)
{
    float pc[3];
    float alpha = petal_eval(p, st, blur, dx, dy, pc);
    if (alpha > 0.0f)
        mix3(col, pc, alpha);
}

static float disk_eval(const flower *f, float X, float Y, float th, float *out)
{
    float rc = f->rc;
    if (f->fuzz > 0.0f)
        rc *= 1.0f + f->fuzz * (tri(th * f->fuzz_n) - 0.5f);
    float r2 = X * X + Y * Y;
    float g = r2 - rc * rc;
    float gx = 2.0f * (f->a00 * X + f->a10 * Y), gy = 2.0f * (f->a01 * X + f->a11 * Y);
    float d = ramp_dist(g, gx * gx + gy * gy, f->blur);
    if (d > 1e29f)
        return 0.0f;
    float alpha = clampf(0.5f - d / f->blur, 0.0f, 1.0f);
    if (alpha <= 0.0f)
        return 0.0f;
    float rr = sqrtf(r2) / f->rc;
    float nz = vnoise(X / f->rc * 5.0f, Y / f->rc * 5.0f, f->st.salt ^ 0x5eedu);
    float pc[3];
    for (int i = 0; i < 3; i++)
        pc[i] = f->ctr[i] + (f->ctr2[i] - f->ctr[i]) * f->texture * nz;
    if (f->ring < 1.0f)
        mix3(pc, f->ring_col, sstep(f->ring - 0.1f, f->ring + 0.05f, rr));
    float shade = 1.0f + f->dome * ((X * f->lx + Y * f->ly) / f->rc - 0.5f * rr * rr);
    for (int i = 0; i < 3; i++)
        out[i] = clampf(pc[i] * shade, 0.0f, 1.0f);
    return alpha;
}

/* Adds a layer under what is already accumulated (front-to-back "under" compositing):
 * the same result as painting back to front, but a pixel is done once covered. */
static void under(float *acc, float *trans, const float *c, float alpha)
{
    float w = *trans * alpha;
    acc[0] += w * c[0];
    acc[1] += w * c[1];
    acc[2] += w * c[2];
    *trans *= 1.0f - alpha;
}

void flw_flower_paint(const flower *f, float px, float py, float *col)
{
    if (px < f->x0 || px > f->x1 || py < f->y0 || py > f->y1)
        return;
    float dx = px - f->cx, dy = py - f->cy;
    float X = f->a00 * dx + f->a01 * dy, Y = f->a10 * dx + f->a11 * dy;
    float r2 = X * X + Y * Y;
    if (r2 > f->reach2)
        return;
    float th = fatan2(Y, X);
    float acc[3] = { 0.0f, 0.0f, 0.0f }, trans = 1.0f, lc[3], alpha;
    /* Front to back: the disk, then the rings from the innermost out. */
    alpha = disk_eval(f, X, Y, th, lc);
    if (alpha > 0.0f)
        under(acc, &trans, lc, alpha);
    int n = f->n;
    float per = (float)n / (2.0f * PI_F);
    for (int ring = f->rings - 1; ring >= 0 && trans > 0.0f; ring--) {
        if (r2 > f->ring_reach2[ring])
            continue;
        int k = ifloor((th - f->phase[ring]) * per);
        k %= n;
        if (k < 0)
            k += n;
        const petal *ps[3];
        int m = 0;
        for (int o = -1; o <= 1; o++) {
            int j = (k + o + n) % n;
            int dup = 0;
            for (int i = 0; i < m; i++)
                dup |= ps[i] == &f->p[ring][j];
            if (!dup)
                ps[m++] = &f->p[ring][j];
        }
        /* Front (highest depth) first. */
        for (int i = 1; i < m; i++)
            for (int j = i; j > 0 && ps[j - 1]->depth < ps[j]->depth; j--) {
                const petal *t = ps[j];
                ps[j] = ps[j - 1];
                ps[j - 1] = t;
            }
        for (int i = 0; i < m && trans > 0.0f; i++) {
            alpha = petal_eval(ps[i], &f->st, f->blur, dx, dy, lc);
            if (alpha > 0.0f)
                under(acc, &trans, lc, alpha);
        }
    }
    for (int i = 0; i < 3; i++)
        col[i] = acc[i] + trans * col[i];
}

void flw_stem_paint(const stem *s, float px, float py, float lx, float ly, float *col)
{
    if (px < s->bx0 || px > s->bx1 || py < s->by0 || py > s->by1)
        return;
    float rx = px - s->x0, ry = py - s->y0;
    float t = clampf(rx * s->dx + ry * s->dy, 0.0f, s->len);
    float qx = rx - t * s->dx, qy = ry - t * s->dy;
    float q = sqrtf(qx * qx + qy * qy);
    float alpha = clampf(0.5f - (q - s->hw) / s->blur, 0.0f, 1.0f);
    if (alpha <= 0.0f)
        return;
    /* Round stem: lit on the side facing the light. */
    float across = (qx * lx + qy * ly) / (s->hw + 1e-3f);
    float shade = 1.0f + 0.25f * clampf(across, -1.0f, 1.0f);
    float pc[3];
    for (int i = 0; i < 3; i++)
        pc[i] = clampf(s->col[i] * shade, 0.0f, 1.0f);
    mix3(col, pc, alpha);
}

static void blob_paint(const blob *b, float px, float py, float *col)
{
    if (px < b->x0 || px > b->x1 || py < b->y0 || py > b->y1)
        return;
    float dx = px - b->cx, dy = py - b->cy;
    float X = b->m00 * dx + b->m01 * dy, Y = b->m10 * dx + b->m11 * dy;
    float q2 = X * X + Y * Y;
    if (q2 >= 1.0f)
        return;
    mix3(col, b->col, b->op * sstep(1.0f, 1.0f - b->soft, q2));
}

/* The backdrop: gradient, mottling, then the blurred leaves and stems. */
void flw_background(const scene *sc, float px, float py, float *col)
{
    float t = clampf(px * sc->gx + py * sc->gy + sc->goff, 0.0f, 1.0f);
    for (int i = 0; i < 3; i++)
        col[i] = sc->g0[i] + (sc->g1[i] - sc->g0[i]) * t;
    float gxp = px / (float)sc->size * NGRID, gyp = py / (float)sc->size * NGRID;
    int ix = ifloor(gxp), iy = ifloor(gyp);
    if (ix > NGRID)
        ix = NGRID;
    if (iy > NGRID)
        iy = NGRID;
    float fx = gxp - (float)ix, fy = gyp - (float)iy;
    fx = fx * fx * (3.0f - 2.0f * fx);
    fy = fy * fy * (3.0f - 2.0f * fy);
    float a = sc->grid[iy][ix] + (sc->grid[iy][ix + 1] - sc->grid[iy][ix]) * fx;
    float b = sc->grid[iy + 1][ix] + (sc->grid[iy + 1][ix + 1] - sc->grid[iy + 1][ix]) * fx;
    float m = 1.0f + sc->mottle * (a + (b - a) * fy);
    for (int i = 0; i < 3; i++)
        col[i] *= m;
    for (int i = 0; i < sc->nblob; i++)
        blob_paint(&sc->b[i], px, py, col);
    for (int i = 0; i < sc->nstem; i++)
        flw_stem_paint(&sc->s[i], px, py, sc->lx, sc->ly, col);
}
