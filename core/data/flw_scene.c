/* flw_scene — scene set-up for the flower renderer: every random choice of one image
 * is drawn here, once, from the (class, seed) stream, in a fixed order: light and
 * camera, background palette, gradient and mottling, out-of-focus leaves and stems,
 * the flower's size and place, the second flower, the main stem, the leaf, then the
 * flower itself (tilt, petal rings, petal and disk colours). The result is a plain
 * scene struct that the per-pixel code (flw_shapes.c, flowers.c) only reads; angles
 * and frames are worked out in double and rounded to float once, at the store.
 * Changing the order or the number of draws changes the images (bump
 * FLW_RENDER_VERSION). */
#include "data/flw_impl.h"

#include "base/rng.h"

/* No fused multiply-add, so floats stay bit-exact: see this pragma in flowers.c. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

static void rgb_of(float *out, const unsigned char *c)
{
    for (int i = 0; i < 3; i++)
        out[i] = (float)c[i] * (1.0f / 255.0f);
}

static void rgb_range(rng *r, float *out, const unsigned char *lo, const unsigned char *hi,
                      float jitter)
{
    float t = rng_float(r);
    for (int i = 0; i < 3; i++) {
        float v = ((float)lo[i] + ((float)hi[i] - (float)lo[i]) * t) * (1.0f / 255.0f);
        out[i] = clampf(v + rng_uniform(r, -jitter, jitter), 0.0f, 1.0f);
    }
}

/* Fills p's frame: axis at angle th in the disk plane whose map from pixels is A.
 * Setup math stays in double and is rounded to float once, at the store: GCC 12 at
 * -O3 with AVX was seen to skip a float rounding in a double -> float -> double
 * chain here, which changed the last bits. */
static void petal_frame(petal *p, double th, const double *A)
{
    double c = dcos(th), s = dsin(th);
    p->m00 = (float)(c * A[0] + s * A[2]);
    p->m01 = (float)(c * A[1] + s * A[3]);
    p->m10 = (float)(-s * A[0] + c * A[2]);
    p->m11 = (float)(-s * A[1] + c * A[3]);
}

/* The flower's colours: petal tip and base, the centre and its ring, darkened by dim
 * (the rng is drawn from after the shape's draws, as always). */
static void flower_colours(flower *f, const cls *c, rng *r, float dim)
{
    rgb_range(r, f->st.tip, c->tip_lo, c->tip_hi, 0.035f);
    rgb_of(f->st.base, c->base_col);
    for (int i = 0; i < 3; i++)
        f->st.base[i] = clampf(f->st.base[i] + (f->st.tip[i] - f->st.base[i]) * 0.3f *
                               rng_float(r), 0.0f, 1.0f);
    f->st.base_len = c->base_len * rng_uniform(r, 0.8f, 1.2f);
    f->st.rim = c->rim;
    f->st.spots = c->spots;
    f->st.gloss = c->gloss;
    f->st.salt = (uint32_t)rng_u64(r);

    f->rc = c->centre * rng_uniform(r, 0.9f, 1.1f);
    rgb_range(r, f->ctr, c->ctr_lo, c->ctr_hi, 0.03f);
    for (int i = 0; i < 3; i++)
        f->ctr2[i] = f->ctr[i] * 0.7f;
    rgb_of(f->ring_col, c->ring_col);
    f->ring = c->ring;
    f->texture = c->texture;
    f->fuzz = c->fuzz;
    f->fuzz_n = (float)rng_int(r, 22, 34) / (2.0f * PI_F);
    f->dome = c->dome;
    for (int i = 0; i < 3; i++) {
        f->ctr[i] *= dim;
        f->ctr2[i] *= dim;
        f->ring_col[i] *= dim;
    }
}

static void flower_setup(flower *f, const cls *c, rng *r, float cx, float cy, float R,
                         float blur, float dim, double lx, double ly)
{
    f->cx = cx;
    f->cy = cy;
    f->R = R;
    f->blur = blur;

    /* Tilt: squash the disk along a random axis, as a flower seen at an angle. */
    double tilt = rng_double(r) * 2.0 * PI_D;
    float u = rng_float(r);
    double squash = 1.0 - 0.45 * (double)(u * u);
    double tc = dcos(tilt), ts = dsin(tilt);
    double A[4] = { tc / R, ts / R, -ts / (R * squash), tc / (R * squash) };
    f->a00 = (float)A[0];
    f->a01 = (float)A[1];
    f->a10 = (float)A[2];
    f->a11 = (float)A[3];
    /* 2 ramp widths, in disk-plane units (one pixel spans at most 1 / (R squash)). */
    float margin = 2.0f * blur * (float)(1.0 / (R * squash));
    double llx = tc * lx + ts * ly, lly = -ts * lx + tc * ly;
    f->lx = (float)llx;
    f->ly = (float)lly;

    int n = c->petals;
    if (c->jitter)
        n += rng_int(r, -1, 2);
    if (n > MAXN)
        n = MAXN;
    f->n = n;
    f->rings = c->rings;
    double phase0 = rng_double(r) * 2.0 * PI_D;
    double sector = 2.0 * PI_D / n;
    float reach = 0.0f;
    for (int ring = 0; ring < c->rings; ring++) {
        double ph = phase0 + (ring & 1 ? sector * 0.5 : 0.0) + ring * 0.37;
        ph -= 2.0 * PI_D * (double)(long long)(ph / (2.0 * PI_D));
        f->phase[ring] = (float)ph;
        float len_ring = 1.0f;
        for (int i = 0; i < ring; i++)
            len_ring *= c->ring_scale;
        float ring_max = 0.0f;
        for (int j = 0; j < n; j++) {
            petal *p = &f->p[ring][j];
            double th = ph + (j + 0.5) * sector + rng_uniform(r, -0.12f, 0.12f) * sector;
            petal_frame(p, th, A);
            float len = len_ring * rng_uniform(r, 0.9f, 1.06f);
            float u0 = c->base * len_ring;
            p->a = 0.5f * (len - u0);
            p->uc = u0 + p->a;
            p->b0 = c->width * (float)dsin(sector * 0.5) * p->uc * rng_uniform(r, 0.9f, 1.1f);
            p->s = c->taper;
            p->nr = c->notch * p->b0;
            p->nu = p->uc + p->a + 0.35f * p->nr;
            p->ia = 1.0f / p->a;
            p->ks = p->b0 * p->s * p->ia;
            p->xlim = 1.0f + margin * p->ia;
            p->vlim = p->b0 * (1.0f + absf(p->s)) + margin;
            p->nlim2 = (p->nr + margin) * (p->nr + margin);
            /* Veins repeat every 0.4 half widths; below ~3 px they would only alias. */
            p->veins = c->veins * sstep(2.5f, 5.0f, 0.4f * p->b0 * R * (float)squash / blur);
            /* Petals facing the light are brighter; each also varies a little. */
            float facing = (float)(dcos(th) * llx + dsin(th) * lly);
            p->shade = dim * (1.0f + 0.08f * facing) * rng_uniform(r, 0.93f, 1.05f);
            p->depth = rng_float(r);
            if (len > ring_max)
                ring_max = len;
        }
        float rr = ring_max + margin + 0.05f;
        f->ring_reach2[ring] = rr * rr;
        if (rr > reach)
            reach = rr;
    }
    f->reach2 = reach * reach;
    float box = reach * R + 2.0f * blur;
    f->x0 = cx - box;
    f->x1 = cx + box;
    f->y0 = cy - box;
    f->y1 = cy + box;

    flower_colours(f, c, r, dim);
}

static void stem_setup(stem *s, float x0, float y0, double ang, float len, float hw, float blur,
                       const float *col)
{
    s->x0 = x0;
    s->y0 = y0;
    s->dx = (float)dcos(ang);
    s->dy = (float)dsin(ang);
    s->len = len;
    s->hw = hw;
    s->blur = blur;
    for (int i = 0; i < 3; i++)
        s->col[i] = col[i];
    float x1 = x0 + s->dx * len, y1 = y0 + s->dy * len, m = hw + blur;
    s->bx0 = (x0 < x1 ? x0 : x1) - m;
    s->bx1 = (x0 < x1 ? x1 : x0) + m;
    s->by0 = (y0 < y1 ? y0 : y1) - m;
    s->by1 = (y0 < y1 ? y1 : y0) + m;
}

/* Background palettes: gradient ends and the leaf colours that go with them. */
static void pick_palette(rng *r, float *g0, float *g1, float *leaf_lo, float *leaf_hi)
{
    static const unsigned char pal[][4][3] = {
        /* foliage */
        { { 46, 84, 30 }, { 110, 150, 60 }, { 30, 70, 20 }, { 130, 170, 70 } },
        /* dark shade */
        { { 12, 24, 10 }, { 40, 60, 30 }, { 20, 50, 18 }, { 60, 90, 40 } },
        /* sky */
        { { 96, 150, 220 }, { 200, 222, 240 }, { 50, 100, 40 }, { 235, 240, 245 } },
        /* soil and bark */
        { { 70, 50, 32 }, { 140, 112, 80 }, { 60, 90, 30 }, { 110, 84, 56 } },
        /* pale stone / wall */
        { { 150, 146, 136 }, { 210, 204, 190 }, { 70, 110, 50 }, { 180, 170, 150 } },
    };
    static const int weight[] = { 8, 4, 3, 3, 2 };
    int total = 0, pick;
    for (int i = 0; i < 5; i++)
        total += weight[i];
    pick = rng_int(r, 0, total);
    int p = 0;
    while (pick >= weight[p]) {
        pick -= weight[p];
        p++;
    }
    float j = rng_uniform(r, 0.75f, 1.2f);
    for (int i = 0; i < 3; i++) {
        g0[i] = clampf((float)pal[p][0][i] / 255.0f * j + rng_uniform(r, -0.04f, 0.04f), 0.0f, 1.0f);
        g1[i] = clampf((float)pal[p][1][i] / 255.0f * j + rng_uniform(r, -0.04f, 0.04f), 0.0f, 1.0f);
        leaf_lo[i] = (float)pal[p][2][i] / 255.0f;
        leaf_hi[i] = (float)pal[p][3][i] / 255.0f;
    }
}

/* Light from a random side, then the camera's look: vignette, contrast, white balance,
 * sensor noise. The light's direction comes back in double for the flowers' shading. */
static void setup_light(scene *sc, rng *r, double *ldx, double *ldy)
{
    double la = rng_double(r) * 2.0 * PI_D;
    *ldx = dcos(la);
    *ldy = dsin(la);
    sc->lx = (float)*ldx;
    sc->ly = (float)*ldy;
    sc->lk = rng_uniform(r, 0.0f, 0.45f);
    sc->vignette = rng_uniform(r, 0.0f, 0.35f);
    sc->contrast = rng_uniform(r, 0.8f, 1.2f);
    sc->bright = rng_uniform(r, -0.08f, 0.08f);
    for (int i = 0; i < 3; i++)
        sc->wb[i] = rng_uniform(r, 0.93f, 1.07f);
    sc->noise = rng_uniform(r, 1.0f, 7.0f);
}

/* Background palette, its gradient and mottling grid; the palette's leaf colours come
 * back for the blurred leaves and stems. */
static void setup_background(scene *sc, rng *r, float S, float *leaf_lo, float *leaf_hi)
{
    pick_palette(r, sc->g0, sc->g1, leaf_lo, leaf_hi);
    double ga = rng_double(r) * 2.0 * PI_D;
    sc->gx = (float)dcos(ga) / S;
    sc->gy = (float)dsin(ga) / S;
    sc->goff = 0.5f - 0.5f * (sc->gx + sc->gy) * S;
    sc->mottle = rng_uniform(r, 0.05f, 0.3f);
    for (int i = 0; i < NGRID + 2; i++)
        for (int j = 0; j < NGRID + 2; j++)
            sc->grid[i][j] = rng_uniform(r, -1.0f, 1.0f);
}

/* Out-of-focus leaves: soft ellipses. */
static void setup_blobs(scene *sc, rng *r, float S, const float *leaf_lo, const float *leaf_hi)
{
    sc->nblob = rng_int(r, 2, MAXBLOB + 1);
    for (int i = 0; i < sc->nblob; i++) {
        blob *b = &sc->b[i];
        b->cx = rng_uniform(r, -0.1f, 1.1f) * S;
        b->cy = rng_uniform(r, -0.1f, 1.1f) * S;
        float ra = rng_uniform(r, 0.08f, 0.35f) * S, rb = ra * rng_uniform(r, 0.3f, 0.8f);
        double ang = rng_double(r) * PI_D;
        double cs = dcos(ang), sn = dsin(ang);
        b->m00 = (float)(cs / ra);
        b->m01 = (float)(sn / ra);
        b->m10 = (float)(-sn / rb);
        b->m11 = (float)(cs / rb);
        b->soft = rng_uniform(r, 0.3f, 0.9f);
        b->op = rng_uniform(r, 0.3f, 0.85f);
        float t = rng_float(r);
        for (int j = 0; j < 3; j++)
            b->col[j] = leaf_lo[j] + (leaf_hi[j] - leaf_lo[j]) * t;
        b->x0 = b->cx - ra;
        b->x1 = b->cx + ra;
        b->y0 = b->cy - ra;
        b->y1 = b->cy + ra;
    }
}

/* Blurred stems behind everything. */
static void setup_back_stems(scene *sc, rng *r, float S, const float *leaf_lo,
                             const float *leaf_hi)
{
    sc->nstem = rng_int(r, 0, MAXSTEM + 1);
    for (int i = 0; i < sc->nstem; i++) {
        float col[3], t = rng_float(r);
        for (int j = 0; j < 3; j++)
            col[j] = (leaf_lo[j] + (leaf_hi[j] - leaf_lo[j]) * t) * 0.9f;
        /* One draw per statement: the order in which function arguments (or
         * initialisers) are evaluated is unspecified and differs between compilers. */
        float x0 = rng_uniform(r, 0.0f, 1.0f) * S;
        float y0 = rng_uniform(r, -0.1f, 0.6f) * S;
        double ang = PI_D / 2.0 + rng_uniform(r, -0.6f, 0.6f);
        float len = rng_uniform(r, 0.4f, 1.2f) * S;
        float hw = rng_uniform(r, 0.006f, 0.02f) * S;
        float blur = rng_uniform(r, 0.01f, 0.03f) * S + 1.0f;
        stem_setup(&sc->s[i], x0, y0, ang, len, hw, blur, col);
    }
}

/* Sometimes a second, smaller flower of the same class, out of focus behind the main
 * one at (cx, cy) of radius R. */
static void setup_back_flower(scene *sc, const cls *c, rng *r, float S, float cx, float cy,
                              float R, double ldx, double ldy)
{
    sc->has_back = rng_float(r) < 0.35f;
    if (!sc->has_back)
        return;
    double ba = rng_double(r) * 2.0 * PI_D;
    float dist = R * rng_uniform(r, 1.0f, 1.6f);
    float bx = cx + (float)dcos(ba) * dist, by = cy + (float)dsin(ba) * dist;
    float br = R * rng_uniform(r, 0.4f, 0.65f);
    float blur = rng_uniform(r, 0.015f, 0.035f) * S;
    float dim = rng_uniform(r, 0.7f, 0.9f);
    flower_setup(&sc->back, c, r, bx, by, br, blur, dim, ldx, ldy);
}

/* The main flower's stem, from its centre down and out of the frame. */
static void setup_main_stem(scene *sc, rng *r, float S, float cx, float cy)
{
    float stem_col[3];
    stem_col[0] = rng_uniform(r, 0.2f, 0.35f);
    stem_col[1] = rng_uniform(r, 0.4f, 0.55f);
    stem_col[2] = rng_uniform(r, 0.12f, 0.22f);
    double stem_ang = PI_D / 2.0 + rng_uniform(r, -0.5f, 0.5f);
    float stem_hw = rng_uniform(r, 0.012f, 0.025f) * S;
    stem_setup(&sc->main_stem, cx, cy, stem_ang, 1.2f * S, stem_hw, 1.0f, stem_col);
}

/* Sometimes a leaf in focus near the flower at (cx, cy), now and then hiding part of
 * it (has_leaf 2): drawn as one wide petal with its own style. */
static void setup_leaf(scene *sc, rng *r, float S, float cx, float cy)
{
    sc->has_leaf = rng_float(r) < 0.35f;
    if (!sc->has_leaf)
        return;
    if (rng_float(r) < 0.3f)
        sc->has_leaf = 2;
    petal *lf = &sc->leaf;
    sc->leaf_cx = cx + rng_uniform(r, -0.3f, 0.3f) * S;
    sc->leaf_cy = cy + rng_uniform(r, 0.05f, 0.35f) * S;
    float L = rng_uniform(r, 0.2f, 0.4f) * S;
    double A[4] = { 1.0 / L, 0.0, 0.0, 1.0 / L };
    petal_frame(lf, rng_double(r) * 2.0 * PI_D, A);
    lf->a = 0.5f;
    lf->uc = 0.5f;
    lf->b0 = rng_uniform(r, 0.15f, 0.25f);
    lf->s = 0.4f;
    lf->nr = 0.0f;
    lf->nu = 0.0f;
    lf->ia = 2.0f;
    lf->ks = lf->b0 * lf->s * lf->ia;
    lf->xlim = 1.0f + 4.0f / (0.5f * L);
    lf->vlim = lf->b0 * (1.0f + lf->s) + 4.0f / L;
    lf->nlim2 = 0.0f;
    lf->shade = rng_uniform(r, 0.8f, 1.0f);
    lf->depth = 0.0f;
    lf->veins = 0.15f * sstep(2.5f, 5.0f, 0.4f * lf->b0 * L);
    float t = rng_float(r);
    for (int j = 0; j < 3; j++) {
        sc->leaf_st.tip[j] = 0.12f + 0.25f * t * (j == 1 ? 1.6f : 0.7f);
        sc->leaf_st.base[j] = sc->leaf_st.tip[j] * 0.8f;
    }
    sc->leaf_st.tip[1] += 0.15f;
    sc->leaf_st.base_len = 0.3f;
    sc->leaf_st.rim = 0.1f;
    sc->leaf_st.spots = 0.0f;
    sc->leaf_st.gloss = 0.0f;
    sc->leaf_st.salt = 0;
}

/* The steps run in the order the file's top comment gives; each draws from r in turn,
 * so moving a step (or a draw inside one) changes every image. */
void flw_scene_setup(scene *sc, const cls *c, uint64_t seed, int k, int size)
{
    rng r;
    rng_derive(&r, seed, (uint64_t)k, 0x666c6f776572ULL);
    float S = (float)size;
    sc->size = size;
    sc->salt = (uint32_t)rng_u64(&r);

    double ldx, ldy;
    setup_light(sc, &r, &ldx, &ldy);
    float leaf_lo[3], leaf_hi[3];
    setup_background(sc, &r, S, leaf_lo, leaf_hi);
    setup_blobs(sc, &r, S, leaf_lo, leaf_hi);
    setup_back_stems(sc, &r, S, leaf_lo, leaf_hi);

    /* The flower: size, place (may be cropped by the frame), blur 1 px. */
    float R = rng_uniform(&r, 0.22f, 0.5f) * S;
    float cx = (0.5f + rng_uniform(&r, -0.2f, 0.2f)) * S;
    float cy = (0.5f + rng_uniform(&r, -0.2f, 0.2f)) * S;

    setup_back_flower(sc, c, &r, S, cx, cy, R, ldx, ldy);
    setup_main_stem(sc, &r, S, cx, cy);
    setup_leaf(sc, &r, S, cx, cy);
    flower_setup(&sc->main, c, &r, cx, cy, R, 1.0f, 1.0f, ldx, ldy);
}
