/* The picture, back to front: a background (gradient, mottling, blurred leaves and
 * stems), sometimes a second flower out of focus, the flower's stem, sometimes a leaf,
 * the flower (petal rings and a centre disk), then the camera (light falloff,
 * vignette, exposure, white balance, highlight roll-off, noise).
 *
 * Every shape is an implicit function evaluated once per pixel; its value over its
 * gradient in pixel space is the distance to the edge, which gives analytic
 * anti-aliasing (a 1 px ramp) or, with a wider ramp, defocus blur. Petals live in
 * angular sectors: a pixel looks at the petal of its own sector and both neighbours,
 * so the cost does not grow with the petal count. */
#include "data/flowers.h"

#include <math.h> /* sqrtf only: correctly rounded everywhere */
#include <stddef.h>

#include "base/rng.h"

/* Bit-exact floats: no fused multiply-add. GCC does not contract in ISO C mode
 * (-std=c11, as the Makefile builds); clang contracts by default where the target
 * has FMA (aarch64, -march=native), so it is switched off here. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* ---- the classes ------------------------------------------------------------------ */

typedef struct cls {
    const char *name;
    flw_shape shape;
    const char *colour_word, *centre_word;
    int petals, jitter, rings;
    float ring_scale;   /* each inner ring's petal length relative to the ring outside it */
    float base;         /* where petals start, as a fraction of the flower radius */
    float width;        /* half width relative to the sector's half width at mid-petal */
    float taper;        /* > 0 narrows toward the tip (pointed), < 0 widens (obovate) */
    float notch;        /* notch radius at the tip relative to the half width; 0: none */
    float rim;          /* edge darkening, so overlapping petals stay apart */
    float veins;        /* strength of lengthwise veins */
    float spots;        /* dark speckles on the inner half (lilies) */
    float gloss;        /* a light band across the petal (buttercups) */
    unsigned char tip_lo[3], tip_hi[3]; /* petal colour range */
    unsigned char base_col[3];          /* colour toward the petal base */
    float base_len;                     /* how far along the petal the base colour reaches */
    float centre;                       /* disk radius, fraction of the flower radius */
    unsigned char ctr_lo[3], ctr_hi[3]; /* disk colour range */
    unsigned char ring_col[3];          /* disk rim colour */
    float ring;                         /* disk rim starts here (fraction of disk radius); 1: none */
    float texture;                      /* speckle on the disk */
    float fuzz;                         /* stamen fringe on the disk edge */
    float dome;                         /* how round the disk looks under the light */
} cls;

/* Field order: name, shape, colour words; petals, jitter, rings, ring_scale, base,
 * width, taper, notch, rim, veins, spots, gloss; tip_lo, tip_hi, base_col, base_len;
 * centre, ctr_lo, ctr_hi, ring_col, ring, texture, fuzz, dome. */
static const cls classes[] = {
    { "white daisy", FLW_SHAPE_RAY, "white", "yellow",
      21, 1, 1, 1.0f, 0.12f, 0.62f, 0.15f, 0.0f, 0.18f, 0.10f, 0.0f, 0.0f,
      { 232, 232, 226 }, { 255, 255, 252 }, { 214, 214, 196 }, 0.25f,
      0.24f, { 232, 168, 18 }, { 252, 208, 44 }, { 200, 130, 10 }, 0.85f, 0.35f, 0.0f, 0.45f },
    { "sunflower", FLW_SHAPE_POINTED, "golden yellow", "dark brown",
      17, 1, 2, 0.92f, 0.30f, 0.80f, 0.60f, 0.0f, 0.25f, 0.12f, 0.0f, 0.0f,
      { 255, 206, 24 }, { 248, 170, 6 }, { 222, 128, 8 }, 0.30f,
      0.42f, { 62, 36, 14 }, { 96, 58, 20 }, { 120, 70, 18 }, 0.78f, 0.65f, 0.0f, 0.25f },
    { "black-eyed susan", FLW_SHAPE_ELLIPTIC, "orange-yellow", "black",
      13, 1, 1, 1.0f, 0.15f, 0.80f, -0.10f, 0.22f, 0.20f, 0.12f, 0.0f, 0.0f,
      { 255, 184, 18 }, { 250, 152, 0 }, { 196, 82, 8 }, 0.28f,
      0.22f, { 34, 18, 10 }, { 66, 38, 18 }, { 40, 22, 10 }, 1.0f, 0.30f, 0.0f, 0.70f },
    { "pink cosmos", FLW_SHAPE_NOTCHED, "magenta", "yellow",
      8, 1, 1, 1.0f, 0.10f, 0.85f, -0.35f, 0.30f, 0.15f, 0.14f, 0.0f, 0.0f,
      { 214, 48, 146 }, { 236, 96, 186 }, { 176, 24, 108 }, 0.22f,
      0.15f, { 236, 186, 26 }, { 255, 214, 60 }, { 210, 150, 10 }, 0.80f, 0.40f, 0.10f, 0.40f },
    { "buttercup", FLW_SHAPE_ROUND, "bright yellow", "green",
      5, 1, 1, 1.0f, 0.08f, 1.25f, -0.25f, 0.0f, 0.22f, 0.06f, 0.0f, 0.35f,
      { 255, 228, 22 }, { 250, 200, 0 }, { 232, 176, 0 }, 0.30f,
      0.17f, { 170, 182, 40 }, { 130, 160, 36 }, { 230, 200, 30 }, 0.70f, 0.35f, 0.18f, 0.35f },
    { "wild rose", FLW_SHAPE_NOTCHED, "pale pink", "yellow",
      5, 1, 1, 1.0f, 0.08f, 1.20f, -0.30f, 0.45f, 0.18f, 0.10f, 0.0f, 0.0f,
      { 250, 186, 206 }, { 238, 146, 178 }, { 255, 246, 236 }, 0.40f,
      0.20f, { 240, 200, 40 }, { 222, 168, 30 }, { 200, 150, 20 }, 0.75f, 0.45f, 0.22f, 0.35f },
    { "borage", FLW_SHAPE_POINTED, "blue", "black",
      5, 1, 1, 1.0f, 0.08f, 0.95f, 0.75f, 0.0f, 0.18f, 0.10f, 0.0f, 0.0f,
      { 66, 104, 226 }, { 104, 142, 246 }, { 232, 232, 250 }, 0.14f,
      0.13f, { 28, 20, 40 }, { 60, 40, 70 }, { 20, 14, 30 }, 1.0f, 0.30f, 0.08f, 0.40f },
    { "tiger lily", FLW_SHAPE_POINTED, "orange", "green",
      6, 1, 1, 1.0f, 0.06f, 0.70f, 0.50f, 0.0f, 0.20f, 0.12f, 1.0f, 0.0f,
      { 250, 112, 20 }, { 238, 80, 10 }, { 244, 156, 44 }, 0.35f,
      0.08f, { 100, 112, 36 }, { 130, 130, 50 }, { 80, 60, 20 }, 1.0f, 0.20f, 0.0f, 0.30f },
    { "purple aster", FLW_SHAPE_RAY, "lavender", "yellow",
      18, 1, 2, 0.90f, 0.14f, 0.60f, 0.15f, 0.0f, 0.18f, 0.08f, 0.0f, 0.0f,
      { 150, 108, 222 }, { 178, 140, 238 }, { 120, 80, 190 }, 0.25f,
      0.20f, { 240, 188, 30 }, { 255, 214, 64 }, { 210, 140, 20 }, 0.80f, 0.40f, 0.0f, 0.40f },
    { "red camellia", FLW_SHAPE_ROUND, "red", "yellow",
      7, 1, 2, 0.72f, 0.05f, 1.25f, -0.20f, 0.0f, 0.28f, 0.10f, 0.0f, 0.0f,
      { 200, 20, 36 }, { 226, 40, 52 }, { 150, 10, 26 }, 0.30f,
      0.14f, { 250, 210, 60 }, { 236, 186, 40 }, { 200, 140, 20 }, 0.70f, 0.40f, 0.28f, 0.30f },
    { "marigold", FLW_SHAPE_ROUND, "orange", "orange-brown",
      11, 1, 3, 0.76f, 0.05f, 1.20f, -0.30f, 0.25f, 0.18f, 0.06f, 0.0f, 0.0f,
      { 255, 152, 0 }, { 248, 120, 0 }, { 226, 96, 0 }, 0.30f,
      0.09f, { 180, 80, 10 }, { 210, 110, 20 }, { 140, 60, 10 }, 1.0f, 0.40f, 0.15f, 0.30f },
    { "white anemone", FLW_SHAPE_ELLIPTIC, "white", "black",
      6, 1, 1, 1.0f, 0.08f, 1.10f, 0.0f, 0.0f, 0.16f, 0.08f, 0.0f, 0.0f,
      { 240, 240, 246 }, { 255, 255, 255 }, { 218, 212, 234 }, 0.30f,
      0.22f, { 20, 20, 30 }, { 44, 42, 64 }, { 10, 10, 16 }, 0.70f, 0.35f, 0.25f, 0.40f },
};

#define NCLASS ((int)(sizeof classes / sizeof classes[0]))

int flw_class_count(void)
{
    return NCLASS;
}

const char *flw_class_name(int k)
{
    return k >= 0 && k < NCLASS ? classes[k].name : NULL;
}

int flw_class_info(int k, flw_info *out)
{
    if (k < 0 || k >= NCLASS || !out)
        return -1;
    const cls *c = &classes[k];
    out->name = c->name;
    out->petals = c->petals;
    out->rings = c->rings;
    out->shape = c->shape;
    out->colour = c->colour_word;
    out->centre = c->centre_word;
    for (int i = 0; i < 3; i++) {
        out->petal_rgb[i] = (uint8_t)((c->tip_lo[i] + c->tip_hi[i] + 1) / 2);
        out->centre_rgb[i] = (uint8_t)((c->ctr_lo[i] + c->ctr_hi[i] + 1) / 2);
    }
    return 0;
}

/* ---- exact-everywhere arithmetic helpers -------------------------------------------- */

#define PI_D 3.14159265358979323846
#define PI_F 3.14159265f

/* sin by Taylor series after reduction to [-pi/2, pi/2]; error < 1e-9. Only used
 * while setting up a scene, in double, so the per-pixel path never needs it. */
static double dsin(double x)
{
    double k = x / (2.0 * PI_D);
    long long n = (long long)(k >= 0.0 ? k + 0.5 : k - 0.5);
    x -= (double)n * (2.0 * PI_D);
    if (x > PI_D / 2.0)
        x = PI_D - x;
    else if (x < -PI_D / 2.0)
        x = -PI_D - x;
    double x2 = x * x;
    return x * (1.0 - x2 / 6.0 * (1.0 - x2 / 20.0 * (1.0 - x2 / 42.0 * (1.0 - x2 / 72.0 *
           (1.0 - x2 / 110.0 * (1.0 - x2 / 156.0 * (1.0 - x2 / 210.0)))))));
}

static double dcos(double x)
{
    return dsin(x + PI_D / 2.0);
}

static float absf(float x)
{
    return x < 0.0f ? -x : x;
}

static float clampf(float x, float lo, float hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

static float sstep(float e0, float e1, float x)
{
    float t = clampf((x - e0) / (e1 - e0), 0.0f, 1.0f);
    return t * t * (3.0f - 2.0f * t);
}

/* floor for the small magnitudes used here (well inside int range). */
static int ifloor(float x)
{
    int i = (int)x;
    return i - (x < (float)i);
}

/* Triangle wave of period 1: 0 at integers, 1 at half-integers. */
static float tri(float x)
{
    float f = x - (float)ifloor(x);
    return f < 0.5f ? 2.0f * f : 2.0f - 2.0f * f;
}

/* atan2 in (-pi, pi] from a minimax polynomial; error about 1e-5 rad, enough to pick
 * the petal sector (petal shapes themselves use exact rotations). */
static float fatan2(float y, float x)
{
    float ax = absf(x), ay = absf(y);
    float mx = ax > ay ? ax : ay, mn = ax > ay ? ay : ax;
    if (mx == 0.0f)
        return 0.0f;
    float a = mn / mx, s = a * a;
    float r = ((-0.0464964749f * s + 0.15931422f) * s - 0.327622764f) * s * a + a;
    if (ay > ax)
        r = 1.57079637f - r;
    if (x < 0.0f)
        r = 3.14159274f - r;
    return y < 0.0f ? -r : r;
}

static uint32_t hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

static uint32_t hash3(uint32_t a, uint32_t b, uint32_t c)
{
    return hash32(a + hash32(b + hash32(c)));
}

static float hash_unit(uint32_t h)
{
    return (float)(h >> 8) * (1.0f / 16777216.0f);
}

/* Smooth value noise in [0, 1) on the integer lattice. */
static float vnoise(float x, float y, uint32_t salt)
{
    int ix = ifloor(x), iy = ifloor(y);
    float fx = x - (float)ix, fy = y - (float)iy;
    fx = fx * fx * (3.0f - 2.0f * fx);
    fy = fy * fy * (3.0f - 2.0f * fy);
    float v00 = hash_unit(hash3(salt, (uint32_t)ix, (uint32_t)iy));
    float v10 = hash_unit(hash3(salt, (uint32_t)ix + 1u, (uint32_t)iy));
    float v01 = hash_unit(hash3(salt, (uint32_t)ix, (uint32_t)iy + 1u));
    float v11 = hash_unit(hash3(salt, (uint32_t)ix + 1u, (uint32_t)iy + 1u));
    float a = v00 + (v10 - v00) * fx, b = v01 + (v11 - v01) * fx;
    return a + (b - a) * fy;
}

static void mix3(float *col, const float *c, float a)
{
    col[0] += (c[0] - col[0]) * a;
    col[1] += (c[1] - col[1]) * a;
    col[2] += (c[2] - col[2]) * a;
}

/* ---- scene ----------------------------------------------------------------------- */

#define MAXN 40   /* petals per ring, after jitter */
#define MAXR 3

/* One petal (or leaf): an egg-shaped ellipse in its own frame, u along the axis from
 * the flower centre, v across. Coverage comes from the implicit function's value
 * over its screen-space gradient, i.e. the distance to the edge in pixels. */
typedef struct petal {
    float m00, m01, m10, m11; /* pixel offset from the flower centre -> (u, v) */
    float uc, a, b0, s;       /* centre along u, half length, half width, taper */
    float nu, nr;             /* notch circle centre (along u) and radius; nr 0: none */
    float ia, ks;             /* 1 / a and b0 * s / a, to spare divisions per pixel */
    float xlim;               /* |du / a| beyond this is clear of the edge ramp */
    float vlim;               /* |v| beyond this is clear of the edge ramp */
    float nlim2;              /* squared distance from the notch centre worth testing */
    float veins;              /* vein contrast, faded out where veins would alias */
    float shade;
    float depth;              /* paint order inside a ring */
} petal;

typedef struct pstyle {
    float tip[3], base[3];
    float base_len, rim, spots, gloss;
    uint32_t salt;
} pstyle;

typedef struct flower {
    float cx, cy, R;
    float blur;               /* edge ramp in pixels: 1 = sharp and anti-aliased */
    float a00, a01, a10, a11; /* pixel offset -> disk plane, in flower radii */
    float x0, y0, x1, y1;     /* bounding box, pixels */
    float reach2;             /* squared disk-plane radius beyond which nothing is drawn */
    int n, rings;
    float phase[MAXR];
    float ring_reach2[MAXR];
    petal p[MAXR][MAXN];
    pstyle st;
    float rc, fuzz, fuzz_n, ring, texture, dome;
    float ctr[3], ctr2[3], ring_col[3];
    float lx, ly;             /* light direction in the disk plane */
} flower;

typedef struct blob {
    float cx, cy, m00, m01, m10, m11; /* pixel offset -> unit ellipse */
    float soft, op;
    float col[3];
    float x0, y0, x1, y1;
} blob;

typedef struct stem {
    float x0, y0, dx, dy, len, hw, blur;
    float col[3];
    float bx0, by0, bx1, by1;
} stem;

#define MAXBLOB 8
#define MAXSTEM 3
#define NGRID 6

typedef struct scene {
    int size;
    float g0[3], g1[3], gx, gy, goff;
    float grid[NGRID + 2][NGRID + 2];
    float mottle;
    int nblob, nstem;
    blob b[MAXBLOB];
    stem s[MAXSTEM];
    int has_back, has_leaf; /* has_leaf: 1 behind the flower, 2 in front of it */
    flower back, main;
    stem main_stem;
    petal leaf;
    pstyle leaf_st;
    float leaf_cx, leaf_cy;
    float lx, ly, lk, vignette;
    float contrast, bright, wb[3], noise;
    uint32_t salt;
} scene;

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

/* Edge ramp: pixel distance d -> coverage, for the implicit value g with pixel-space
 * gradient length^2 gl2. Returns -1 when the pixel is fully outside. */
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

static void petal_paint(const petal *p, const pstyle *st, float blur, float dx, float dy,
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

static void flower_paint(const flower *f, float px, float py, float *col)
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

static void stem_paint(const stem *s, float px, float py, float lx, float ly, float *col)
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

static void scene_setup(scene *sc, const cls *c, uint64_t seed, int k, int size)
{
    rng r;
    rng_derive(&r, seed, (uint64_t)k, 0x666c6f776572ULL);
    float S = (float)size;
    sc->size = size;
    sc->salt = (uint32_t)rng_u64(&r);

    /* Light from a random side. */
    double la = rng_double(&r) * 2.0 * PI_D;
    double ldx = dcos(la), ldy = dsin(la);
    sc->lx = (float)ldx;
    sc->ly = (float)ldy;
    sc->lk = rng_uniform(&r, 0.0f, 0.45f);
    sc->vignette = rng_uniform(&r, 0.0f, 0.35f);
    sc->contrast = rng_uniform(&r, 0.8f, 1.2f);
    sc->bright = rng_uniform(&r, -0.08f, 0.08f);
    for (int i = 0; i < 3; i++)
        sc->wb[i] = rng_uniform(&r, 0.93f, 1.07f);
    sc->noise = rng_uniform(&r, 1.0f, 7.0f);

    float leaf_lo[3], leaf_hi[3];
    pick_palette(&r, sc->g0, sc->g1, leaf_lo, leaf_hi);
    double ga = rng_double(&r) * 2.0 * PI_D;
    sc->gx = (float)dcos(ga) / S;
    sc->gy = (float)dsin(ga) / S;
    sc->goff = 0.5f - 0.5f * (sc->gx + sc->gy) * S;
    sc->mottle = rng_uniform(&r, 0.05f, 0.3f);
    for (int i = 0; i < NGRID + 2; i++)
        for (int j = 0; j < NGRID + 2; j++)
            sc->grid[i][j] = rng_uniform(&r, -1.0f, 1.0f);

    /* Out-of-focus leaves: soft ellipses. */
    sc->nblob = rng_int(&r, 2, MAXBLOB + 1);
    for (int i = 0; i < sc->nblob; i++) {
        blob *b = &sc->b[i];
        b->cx = rng_uniform(&r, -0.1f, 1.1f) * S;
        b->cy = rng_uniform(&r, -0.1f, 1.1f) * S;
        float ra = rng_uniform(&r, 0.08f, 0.35f) * S, rb = ra * rng_uniform(&r, 0.3f, 0.8f);
        double ang = rng_double(&r) * PI_D;
        double cs = dcos(ang), sn = dsin(ang);
        b->m00 = (float)(cs / ra);
        b->m01 = (float)(sn / ra);
        b->m10 = (float)(-sn / rb);
        b->m11 = (float)(cs / rb);
        b->soft = rng_uniform(&r, 0.3f, 0.9f);
        b->op = rng_uniform(&r, 0.3f, 0.85f);
        float t = rng_float(&r);
        for (int j = 0; j < 3; j++)
            b->col[j] = leaf_lo[j] + (leaf_hi[j] - leaf_lo[j]) * t;
        b->x0 = b->cx - ra;
        b->x1 = b->cx + ra;
        b->y0 = b->cy - ra;
        b->y1 = b->cy + ra;
    }
    /* Blurred stems behind everything. */
    sc->nstem = rng_int(&r, 0, MAXSTEM + 1);
    for (int i = 0; i < sc->nstem; i++) {
        float col[3], t = rng_float(&r);
        for (int j = 0; j < 3; j++)
            col[j] = (leaf_lo[j] + (leaf_hi[j] - leaf_lo[j]) * t) * 0.9f;
        /* One draw per statement: the order in which function arguments (or
         * initialisers) are evaluated is unspecified and differs between compilers. */
        float x0 = rng_uniform(&r, 0.0f, 1.0f) * S;
        float y0 = rng_uniform(&r, -0.1f, 0.6f) * S;
        double ang = PI_D / 2.0 + rng_uniform(&r, -0.6f, 0.6f);
        float len = rng_uniform(&r, 0.4f, 1.2f) * S;
        float hw = rng_uniform(&r, 0.006f, 0.02f) * S;
        float blur = rng_uniform(&r, 0.01f, 0.03f) * S + 1.0f;
        stem_setup(&sc->s[i], x0, y0, ang, len, hw, blur, col);
    }

    /* The flower: size, place (may be cropped by the frame), blur 1 px. */
    float R = rng_uniform(&r, 0.22f, 0.5f) * S;
    float cx = (0.5f + rng_uniform(&r, -0.2f, 0.2f)) * S;
    float cy = (0.5f + rng_uniform(&r, -0.2f, 0.2f)) * S;

    /* Sometimes a second, smaller flower of the same class, out of focus behind. */
    sc->has_back = rng_float(&r) < 0.35f;
    if (sc->has_back) {
        double ba = rng_double(&r) * 2.0 * PI_D;
        float dist = R * rng_uniform(&r, 1.0f, 1.6f);
        float bx = cx + (float)dcos(ba) * dist, by = cy + (float)dsin(ba) * dist;
        float br = R * rng_uniform(&r, 0.4f, 0.65f);
        float blur = rng_uniform(&r, 0.015f, 0.035f) * S;
        float dim = rng_uniform(&r, 0.7f, 0.9f);
        flower_setup(&sc->back, c, &r, bx, by, br, blur, dim, ldx, ldy);
    }

    float stem_col[3];
    stem_col[0] = rng_uniform(&r, 0.2f, 0.35f);
    stem_col[1] = rng_uniform(&r, 0.4f, 0.55f);
    stem_col[2] = rng_uniform(&r, 0.12f, 0.22f);
    double stem_ang = PI_D / 2.0 + rng_uniform(&r, -0.5f, 0.5f);
    float stem_hw = rng_uniform(&r, 0.012f, 0.025f) * S;
    stem_setup(&sc->main_stem, cx, cy, stem_ang, 1.2f * S, stem_hw, 1.0f, stem_col);

    /* Sometimes a leaf in focus near the flower, now and then hiding part of it. */
    sc->has_leaf = rng_float(&r) < 0.35f;
    if (sc->has_leaf) {
        if (rng_float(&r) < 0.3f)
            sc->has_leaf = 2;
        petal *lf = &sc->leaf;
        sc->leaf_cx = cx + rng_uniform(&r, -0.3f, 0.3f) * S;
        sc->leaf_cy = cy + rng_uniform(&r, 0.05f, 0.35f) * S;
        float L = rng_uniform(&r, 0.2f, 0.4f) * S;
        double A[4] = { 1.0 / L, 0.0, 0.0, 1.0 / L };
        petal_frame(lf, rng_double(&r) * 2.0 * PI_D, A);
        lf->a = 0.5f;
        lf->uc = 0.5f;
        lf->b0 = rng_uniform(&r, 0.15f, 0.25f);
        lf->s = 0.4f;
        lf->nr = 0.0f;
        lf->nu = 0.0f;
        lf->ia = 2.0f;
        lf->ks = lf->b0 * lf->s * lf->ia;
        lf->xlim = 1.0f + 4.0f / (0.5f * L);
        lf->vlim = lf->b0 * (1.0f + lf->s) + 4.0f / L;
        lf->nlim2 = 0.0f;
        lf->shade = rng_uniform(&r, 0.8f, 1.0f);
        lf->depth = 0.0f;
        lf->veins = 0.15f * sstep(2.5f, 5.0f, 0.4f * lf->b0 * L);
        float t = rng_float(&r);
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

    flower_setup(&sc->main, c, &r, cx, cy, R, 1.0f, 1.0f, ldx, ldy);
}

static void background(const scene *sc, float px, float py, float *col)
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
        stem_paint(&sc->s[i], px, py, sc->lx, sc->ly, col);
}

void flw_render(int k, uint64_t seed, int size, uint8_t *rgb)
{
    if (k < 0 || k >= NCLASS || size < FLW_SIZE_MIN || size > FLW_SIZE_MAX || !rgb)
        return;
    scene sc;
    scene_setup(&sc, &classes[k], seed, k, size);
    float S = (float)size, half = 0.5f * S;
    for (int y = 0; y < size; y++) {
        float py = (float)y + 0.5f;
        for (int x = 0; x < size; x++) {
            float px = (float)x + 0.5f;
            float col[3];
            background(&sc, px, py, col);
            if (sc.has_back)
                flower_paint(&sc.back, px, py, col);
            stem_paint(&sc.main_stem, px, py, sc.lx, sc.ly, col);
            if (sc.has_leaf == 1)
                petal_paint(&sc.leaf, &sc.leaf_st, 1.0f, px - sc.leaf_cx, py - sc.leaf_cy, col);
            flower_paint(&sc.main, px, py, col);
            if (sc.has_leaf == 2)
                petal_paint(&sc.leaf, &sc.leaf_st, 1.0f, px - sc.leaf_cx, py - sc.leaf_cy, col);

            /* Camera: directional light, vignette, exposure, white balance, noise. */
            float ox = (px - half) / S, oy = (py - half) / S;
            float light = 1.0f + sc.lk * (ox * sc.lx + oy * sc.ly) -
                          sc.vignette * (ox * ox + oy * oy);
            uint32_t h = hash3(sc.salt, (uint32_t)x, (uint32_t)y);
            float lum = ((float)(h >> 24) + (float)((h >> 16) & 0xffu)) * (1.0f / 255.0f) - 1.0f;
            uint8_t *o = rgb + ((size_t)y * (size_t)size + (size_t)x) * 3;
            for (int i = 0; i < 3; i++) {
                float v = (col[i] * light * sc.wb[i] - 0.5f) * sc.contrast + 0.5f + sc.bright;
                /* Soft shoulder, as film and phone cameras roll off highlights, so white
                 * petals keep their shading instead of clipping flat. */
                if (v > 0.8f) {
                    float over = v - 0.8f;
                    v = 0.8f + 0.2f * over / (over + 0.2f);
                }
                float chroma = (float)((h >> (i * 5)) & 31u) * (1.0f / 31.0f) - 0.5f;
                v = v * 255.0f + (lum + 0.5f * chroma) * sc.noise;
                v = clampf(v, 0.0f, 255.0f);
                o[i] = (uint8_t)(v + 0.5f);
            }
        }
    }
}
