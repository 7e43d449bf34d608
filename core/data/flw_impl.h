/* flw_impl — internals shared by the flower renderer's sources (flowers.c, flw_scene.c,
 * flw_shapes.c; not for other modules): the class description, the scene structs
 * (petal, petal style, flower, blob, stem, scene), the exact-everywhere arithmetic
 * helpers as static inline functions, and the functions one source calls in another.
 *
 * Ownership: nothing here allocates. A scene is plain data filled by
 * flw_scene_setup() into storage the caller owns (flw_render keeps it on its stack);
 * the painters only read it and write the caller's colour. The class table itself
 * stays in flowers.c; scene set-up gets a pointer to one row.
 */
#ifndef PT_FLW_IMPL_H
#define PT_FLW_IMPL_H

#include <stdint.h>

#include "data/flowers.h"

/* No FMA contraction, for bit-exact floats (the reason is beside this pragma in flowers.c).
 * Set here too so that the inline helpers below are covered whatever the includer's
 * order; it stays in effect for the rest of each source that includes this header. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* ---- a class, as a row of the table in flowers.c ------------------------------------ */

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

/* ---- exact-everywhere arithmetic helpers -------------------------------------------- */

#define PI_D 3.14159265358979323846
#define PI_F 3.14159265f

/* sin by Taylor series after reduction to [-pi/2, pi/2]; error < 1e-9. Only used
 * while setting up a scene, in double, so the per-pixel path never needs it. */
static inline double dsin(double x)
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

static inline double dcos(double x)
{
    return dsin(x + PI_D / 2.0);
}

static inline float absf(float x)
{
    return x < 0.0f ? -x : x;
}

static inline float clampf(float x, float lo, float hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

static inline float sstep(float e0, float e1, float x)
{
    float t = clampf((x - e0) / (e1 - e0), 0.0f, 1.0f);
    return t * t * (3.0f - 2.0f * t);
}

/* floor for the small magnitudes used here (well inside int range). */
static inline int ifloor(float x)
{
    int i = (int)x;
    return i - (x < (float)i);
}

/* Triangle wave of period 1: 0 at integers, 1 at half-integers. */
static inline float tri(float x)
{
    float f = x - (float)ifloor(x);
    return f < 0.5f ? 2.0f * f : 2.0f - 2.0f * f;
}

/* atan2 in (-pi, pi] from a minimax polynomial; error about 1e-5 rad, enough to pick
 * the petal sector (petal shapes themselves use exact rotations). */
static inline float fatan2(float y, float x)
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

static inline uint32_t hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

static inline uint32_t hash3(uint32_t a, uint32_t b, uint32_t c)
{
    return hash32(a + hash32(b + hash32(c)));
}

static inline float hash_unit(uint32_t h)
{
    return (float)(h >> 8) * (1.0f / 16777216.0f);
}

/* Smooth value noise in [0, 1) on the integer lattice. */
static inline float vnoise(float x, float y, uint32_t salt)
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

static inline void mix3(float *col, const float *c, float a)
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

/* ---- across the sources ------------------------------------------------------------ */

/* flw_scene.c: draws every random choice of one image (class c, variation seed, class
 * index k for the stream, size in pixels) into *sc. */
void flw_scene_setup(scene *sc, const cls *c, uint64_t seed, int k, int size);

/* flw_shapes.c: flw_background writes the backdrop of scene sc (gradient, mottling,
 * blurred leaves and stems) at pixel centre (px, py) into col (RGB in [0, 1]); the
 * others paint one shape over col, at the pixel centre or, for a lone petal, at
 * offset (dx, dy) from the petal frame's origin. */
void flw_background(const scene *sc, float px, float py, float *col);
void flw_petal_paint(const petal *p, const pstyle *st, float blur, float dx, float dy,
                     float *col);
void flw_flower_paint(const flower *f, float px, float py, float *col);
void flw_stem_paint(const stem *s, float px, float py, float lx, float ly, float *col);

#endif
