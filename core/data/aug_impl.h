/* aug_impl — internals shared by the core/data/aug_*.c sources (not for other
 * modules): the op table, the chain and workspace structs, and the functions one of
 * those sources provides to another. Everything else is in augment.h.
 *
 *   aug_spec.c   the op table, parsing and formatting specs, help text
 *   aug_warp.c   3x3 matrices, resampling (nearest, bilinear) with its SIMD kernels
 *                and the CPU detection, flips, perspective / affine transforms
 *   aug_color.c  the colour matrix, applied in fixed point (portable, SSSE3, AVX2)
 *   aug_mask.c   cutout, GridMask, MixUp / CutMix pixels, the Beta draw
 *   aug_chain.c  workspaces, applying a chain to a batch, the pipeline hook
 *
 * Ownership is as in augment.h: a chain is read-only once aug_parse() has returned
 * it; a workspace belongs to one thread, and only aug_chain.c allocates and frees it
 * (mixbuf on first use by MixUp / CutMix). The functions below never allocate: the
 * warp uses the workspace's pad and idx as scratch, and every image belongs to the
 * caller. They do not check their arguments; the public functions of augment.h do
 * that before calling them.
 */
#ifndef PT_AUG_IMPL_H
#define PT_AUG_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"
#include "data/augment.h"

/* x86-64 with GCC or clang: the SSE2/SSSE3/AVX2 kernels are compiled, and aug_simd()
 * picks among them at run time. Sources with kernels include <immintrin.h>; the
 * SSSE3 and AVX2 functions carry their own target attribute (SSE2 is baseline). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AUG_X86 1
#endif

#define AUG_MAX_OPS 32
#define AUG_MAX_PARAMS 5
#define AUG_PI 3.14159265358979323846

/* ---- the op table (aug_spec.c) ---- */

/* How aug_apply() treats an op: consecutive geometric ops are composed into one
 * matrix, consecutive colour ops into one colour matrix; pixel ops run one by one;
 * mix ops act on the whole batch. */
enum { AUG_K_GEOM, AUG_K_COLOR, AUG_K_PIXEL, AUG_K_MIX };

enum {
    AUG_OP_FLIP,
    AUG_OP_PERSPECTIVE,
    AUG_OP_AFFINE,
    AUG_OP_CROP,
    AUG_OP_COLOR,
    AUG_OP_BRIGHTNESS,
    AUG_OP_CONTRAST,
    AUG_OP_SATURATION,
    AUG_OP_HUE,
    AUG_OP_CUTOUT,
    AUG_OP_GRIDMASK,
    AUG_OP_MIXUP,
    AUG_OP_CUTMIX,
    AUG_OP_COUNT
};

typedef struct aug_param_def {
    const char *key;
    double def, lo, hi;
    const char *const *choices; /* an enum when set: the value is the index */
    int integer;
} aug_param_def;

typedef struct aug_op_def {
    const char *name;
    int kind;
    int nparams;
    aug_param_def params[AUG_MAX_PARAMS];
} aug_op_def;

/* Indexed by AUG_OP_*. */
extern const aug_op_def aug_ops[AUG_OP_COUNT];

/* One op of a chain: p[k] is the value of aug_ops[id].params[k]. */
typedef struct aug_op {
    int id;
    double prob;
    double p[AUG_MAX_PARAMS];
} aug_op;

struct aug_chain {
    int n;
    aug_op op[AUG_MAX_OPS];
};

/* ---- the workspace (allocated in aug_chain.c) ---- */

/* Bytes past the padded image: the 4-byte pixel loads of the gather may read one
 * byte beyond the last pixel. */
#define AUG_PAD_SLACK 64

struct aug_workspace {
    int max_n, h, w;
    uint8_t *pad;       /* (h + 2) x (w + 2) pixels: the image inside a black border */
    int32_t *idx;       /* 3 x (w + 16): source offsets (and weights) for one row */
    uint8_t *mixbuf;    /* partner images for MixUp / CutMix, allocated on first use */
    int32_t *perm, *slot, *plabel;
};

static inline int aug_ws_fits(const aug_workspace *ws, int h, int w)
{
    return ws && h > 0 && w > 0 && h <= ws->h && w <= ws->w;
}

/* ---- geometry and resampling (aug_warp.c) ---- */

/* 3x3 matrices are row-major and act on column vectors (x, y, 1). out may be a or b. */
void aug_m3_mul(const double a[9], const double b[9], double out[9]);
void aug_m3_identity(double m[9]);
/* Output -> source matrix of the 4-point transform (source corners -> tgt); 0 when
 * three of the points are collinear. */
int aug_perspective_matrix(int h, int w, const aug_point tgt[4], double m[9]);
/* Resample img in place through C (output point -> source point, edge coordinates);
 * ws must fit h x w. */
void aug_warp_matrix(uint8_t *img, int h, int w, const double C[9], int interp,
                     aug_workspace *ws);
/* Which vector code may run: 0 portable C only; 1 SSE2; 2 SSSE3 too; 3 AVX2 too
 * (the CPU's level, or 0 after aug_vector_paths(0)). */
int aug_simd(void);

/* ---- colour (aug_color.c) ---- */

/* x -> A x + o on RGB values in [0, 255]. */
typedef struct aug_color_map {
    double a[9];
    double o[3];
} aug_color_map;

/* Each aug_cm_* but the first two composes its change after c's. */
void aug_cm_identity(aug_color_map *c);
int aug_cm_is_identity(const aug_color_map *c);
void aug_cm_brightness(aug_color_map *c, double delta);
/* Contrast around `mean`, the mean level of the image the op sees. */
void aug_cm_contrast(aug_color_map *c, double f, double mean);
void aug_cm_saturation(aug_color_map *c, double s);
void aug_cm_hue(aug_color_map *c, double deg);
/* Apply a colour map to npx pixels. */
void aug_color_apply(uint8_t *img, size_t npx, const aug_color_map *c);
/* Per-channel means of an image. */
void aug_channel_means(const uint8_t *img, int h, int w, double mean[3]);

/* ---- masks and mixing (aug_mask.c) ---- */

/* Beta(alpha, alpha). */
double aug_beta_draw(rng *r, double alpha);

#endif
