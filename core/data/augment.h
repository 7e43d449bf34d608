/* augment — batch-wise image augmentations: a chain of ops, each applied per example
 * with a probability, on whole batches on the pipeline's worker threads.
 *
 * The chain comes from a spec string (command line `--augment`, config `augment =`):
 *
 *   spec   := "none" | op ("," op)*
 *   op     := name [":" prob] (":" key "=" value)*
 *
 * prob is the per-example probability in [0, 1] (1 when left out); keys are per op,
 * in any order, each optional. Spaces around tokens are ignored. Example:
 * "perspective:0.35,flip:0.5,affine:0.8:rot=20:interp=bilinear,mixup:0.2".
 * aug_format() writes the canonical form with every parameter spelled out, so a saved
 * config reproduces a run even if the defaults change. The ops (defaults shown;
 * aug_help() gives the ranges):
 *
 *   flip         axis=h            h: left-right, v: up-down, hv: one of h, v, both
 *   perspective  jitter=0.25 rot90=1 reflect=1 interp=nearest
 *                the notebook's 4-point transform: each corner moves by integers in
 *                [-jitter*side, jitter*side); rot90: random cyclic shift of the
 *                points (a turn by 0/90/180/270 degrees); reflect: none, up-down or
 *                left-right
 *   affine       rot=15 shear=5 zoom=0.1 shift=0.1 interp=nearest
 *                rotation and shear uniform in +-degrees, zoom uniform in [1-z, 1+z],
 *                shift uniform in +-shift*side per axis, all in one transform
 *   crop         scale=0.5 ratio=0.75 interp=nearest
 *                random resized crop: area fraction in [scale, 1], aspect ratio
 *                log-uniform in [ratio, 1/ratio], stretched back to h x w
 *   color        brightness=0.2 contrast=0.2 saturation=0.2 hue=10
 *                all four below in that order, in one pass
 *   brightness   delta=0.2         adds U(-delta, delta) * 255
 *   contrast     delta=0.2         factor U(1-delta, 1+delta) around the mean level
 *   saturation   delta=0.2         factor U(1-delta, 1+delta) of the distance to grey
 *   hue          deg=10            rotation around the grey axis by U(-deg, deg)
 *   cutout       size=0.25 count=1 black boxes of size*h x size*w, centres uniform
 *   gridmask     dmin=0.2 dmax=0.3 ratio=0.5 rot=45
 *                period d in [dmin, dmax] * shorter side, stripes of ratio*d kept,
 *                the (d - ratio*d)^2 squares between them black, grid turned by
 *                U(-rot, rot) degrees and offset at random
 *   mixup        alpha=1           pixels lambda*own + (1-lambda)*partner,
 *                lambda ~ Beta(alpha, alpha) (alpha 1: uniform)
 *   cutmix       alpha=1           a box of 1-lambda of the area from the partner
 *
 * Geometry. Pixel (X, Y) covers [X, X+1) x [Y, Y+1); its centre X+0.5, Y+0.5 is mapped
 * back through the inverse (output -> source) 3x3 matrix, and nearest sampling takes
 * the source pixel containing that point (floor; the notebook's tf.cast truncation
 * of integer pixel coordinates, shifted half a pixel so that the corners (0,0),
 * (w,0), (w,h), (0,h) are the image's outer edges and 90-degree turns and
 * reflections are exact pixel permutations). Points outside the source are black.
 * Consecutive geometric ops of a chain (flip, perspective, affine, crop) are
 * composed into one matrix and resampled once: sharper, and faster, than one
 * resampling per op (content an earlier op pushed out of the frame can come back if
 * a later one zooms out); such a group resamples bilinearly if any op in it asks
 * for it. Likewise consecutive colour ops are folded into one 3x4 colour matrix
 * applied in one pass. Points whose homogeneous weight is below 1% of the output
 * centre's lie beyond the horizon and are black too.
 *
 * Speed: nearest resampling and the colour matrix have SSE2/SSSE3/AVX2 kernels
 * picked at run time (aug_vector_paths()); every path gives the same bytes. On one
 * core of the 2-core build machine (AMD EPYC) an applied op costs about 32 us
 * (perspective), 28 (affine, crop), 23 (colour), 6 (flip) per 192x192 image,
 * bilinear about 5 times nearest; bench/bench_augment.c measures them.
 *
 * The whole op is applied with its probability: unlike the notebook, whose
 * probability only gates the jitter of the points (its shift and reflection always
 * happen), perspective:0 leaves an image alone.
 *
 * Ops run in chain order; MixUp and CutMix act on the whole batch at their place in
 * the chain, the other ops example by example.
 *
 * Labels. MixUp and CutMix pair example i with example perm[i] of the same batch
 * (a seeded cyclic permutation, so never with itself) and set label[i] = own,
 * label2[i] = partner's, mix[i] = own weight, exactly as mixed into the pixels. An
 * example is mixed at most once per batch; unlabeled examples (label < 0) are never
 * mixed. batch_dominant_label() gives the label for the metrics.
 *
 * Determinism: aug_apply() depends only on (chain, batch contents, b->n, seed,
 * b->seq): every (op, example) pair draws from its own stream
 * rng_derive(seed, seq, ...), never from a stream shared with other threads.
 *
 * Ownership: aug_parse() allocates the chain, aug_free() releases it; a chain is
 * read-only after parsing and may be shared by threads. Each thread owns its
 * aug_workspace (aug_workspace_new / aug_workspace_free). All image buffers belong
 * to the caller. Library code never prints or aborts; errors come back as PT_E*.
 */
#ifndef PT_AUGMENT_H
#define PT_AUGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/rng.h"
#include "data/batch.h"

typedef struct aug_chain aug_chain;
typedef struct aug_workspace aug_workspace;

enum { AUG_NEAREST = 0, AUG_BILINEAR = 1 };

/* --- chains ------------------------------------------------------------------------ */

/* Parse a spec ("none" or "" gives an empty chain). On error *out is NULL and e names
 * the bad token. */
int aug_parse(const char *spec, aug_chain **out, pt_err *e);
void aug_free(aug_chain *c);
/* The default chain's spec: the options' table's default for augment (core/config.c
 * says why it is what it is). */
const char *aug_default_spec(void);
/* Whether spec parses (aug_parse, the chain freed): PT_OK, or PT_EUSAGE with its
 * message. The options' table runs it on an --augment value (registered with
 * cfg_set_check when the program starts). */
int aug_check_spec(const char *spec, pt_err *e);
/* Canonical spec ("none" for an empty chain). Returns PT_OK, or PT_EUSAGE when buf is
 * too small (buf then holds a truncated, NUL-terminated string). */
int aug_format(const aug_chain *c, char *buf, size_t n);
/* Number of ops in the chain (0 for none / NULL). */
int aug_count(const aug_chain *c);
/* 1 when the chain mixes examples of a batch (MixUp, CutMix): it needs the whole
 * batch, not a slice of it. */
int aug_mixes(const aug_chain *c);
/* Known op names (fills up to max, returns how many there are). */
size_t aug_names(const char **names, size_t max);
/* One line for --help: "key=default [lo,hi] ..." for the op, or NULL if unknown. */
const char *aug_help(const char *name);

/* --- applying a chain --------------------------------------------------------------- */

/* Scratch for one thread: a padded copy of one image, row buffers, and (allocated on
 * first use by MixUp/CutMix) room for the partner images of one batch. Batches up
 * to max_n images of up to h x w. NULL when out of memory or arguments bad. */
aug_workspace *aug_workspace_new(int max_n, int h, int w);
void aug_workspace_free(aug_workspace *ws);

/* Augment the first b->n images of b in place, and b->label/label2/mix for MixUp and
 * CutMix. Example i draws from its own streams of (seed, b->seq, b->first + i), so a
 * slice of a batch (b->first > 0) is augmented as in the whole one; MixUp and CutMix
 * pair examples within b alone. PT_OK; PT_EUSAGE when b does not fit ws; PT_ENOMEM when the MixUp/CutMix
 * buffer cannot be allocated (the batch is then partly augmented). A NULL or empty
 * chain leaves b untouched. */
int aug_apply(const aug_chain *c, batch *b, uint64_t seed, aug_workspace *ws);

/* Vector code (SSE2/SSSE3/AVX2, chosen by the CPU) on (1, the default) or off (0,
 * portable C only); -1 only asks. Returns the previous setting. Both give the same
 * bytes. Process-wide and not synchronized: for tests and benchmarks. */
int aug_vector_paths(int enable);

/* Adapters with the pipeline's hook signatures (pipe_augment_fn, pipe_ws_free_fn):
 * ctx is the aug_chain; *ws is created on first use for b->cap images of b's size. */
void aug_pipe_hook(void *ctx, batch *b, uint64_t seed, void **ws);
void aug_pipe_ws_free(void *ws);

/* --- single transforms with explicit parameters -------------------------------------
 * Each works in place on one h x w RGB image (rows packed); the resampling ones need
 * a workspace made for at least h x w. The int ones return PT_OK or PT_EUSAGE. */

typedef struct aug_point {
    double x, y;    /* x to the right, y down, in pixels; corners at 0, w and h */
} aug_point;

/* Resample img through m, the row-major 3x3 matrix taking an output point
 * (x, y, 1) to a source point. interp: AUG_NEAREST or AUG_BILINEAR (7-bit weights). */
int aug_warp(uint8_t *img, int h, int w, const double m[9], int interp, aug_workspace *ws);

/* The notebook's 4-point transform: the source corners (0,0), (w,0), (w,h), (0,h)
 * (top-left, top-right, bottom-right, bottom-left) go to tgt[0..3]. PT_EUSAGE when
 * three target points are collinear. */
int aug_perspective_points(uint8_t *img, int h, int w, const aug_point tgt[4], int interp,
                           aug_workspace *ws);
/* The notebook's random target points: each corner moved by integers drawn in
 * [-s, s) per axis, s = floor(jitter * side) (jitter 0.25: "within a quarter of the
 * side"), then aug_perspective_reorder() with a random shift in [0, 4) (when rot90)
 * and reflection in [0, 3) (when reflect). */
void aug_perspective_random(rng *r, int h, int w, double jitter, int rot90, int reflect,
                            aug_point out[4]);
/* The notebook's index tricks on the 4 target points: out[j] = in[(j + shift) % 4]
 * (shift 1 turns the image 90 degrees clockwise), then reflection 1 (up-down) takes
 * the points in order 3,2,1,0 and reflection 2 (left-right) in order 1,0,3,2. */
void aug_perspective_reorder(const aug_point in[4], int shift, int reflection,
                             aug_point out[4]);

typedef struct aug_affine_params {
    double rot;             /* degrees, positive turns the picture counter-clockwise */
    double shear;           /* degrees; x' = x + tan(shear) * y about the centre */
    double zoom_x, zoom_y;  /* > 1 enlarges */
    double shift_x, shift_y;/* pixels, positive moves the picture right / down */
} aug_affine_params;

/* Rotation, shear, zoom (about the image centre) and shift in one transform. */
int aug_affine(uint8_t *img, int h, int w, const aug_affine_params *p, int interp,
               aug_workspace *ws);
/* The output -> source matrix aug_affine() uses. */
void aug_affine_matrix(int h, int w, const aug_affine_params *p, double m[9]);

/* Mirror left-right (lr) and/or up-down (ud). Needs no workspace. */
void aug_flip(uint8_t *img, int h, int w, int lr, int ud);

/* Colour jitter in one pass: brightness adds delta * 255; contrast scales around the
 * image's mean level; saturation scales the distance to the pixel's grey (luma);
 * hue rotates colours around the grey axis by hue_deg degrees. 0, 1, 1, 0 is the
 * identity. Coefficients are applied in 16-bit fixed point (13 fractional bits). */
int aug_color(uint8_t *img, int h, int w, double brightness, double contrast,
              double saturation, double hue_deg);

/* Black rectangle [x0, x1) x [y0, y1), clipped to the image. */
void aug_cutout(uint8_t *img, int h, int w, int x0, int y0, int x1, int y1);
/* GridMask: a grid of period d pixels, rotated by angle_deg about the centre and
 * offset by (ox, oy); in each d x d unit an (d - keep) x (d - keep) square is black,
 * the stripes of width keep are kept. */
int aug_gridmask(uint8_t *img, int h, int w, int d, int keep, int ox, int oy,
                 double angle_deg);

/* MixUp of two images of nbytes: out = a * wa + b * (1 - wa) with wa = round(lambda
 * * 256) / 256; returns wa, the weight actually used. out may be a. */
float aug_mixup_pixels(uint8_t *out, const uint8_t *a, const uint8_t *b, size_t nbytes,
                       double lambda);
/* CutMix: copy the box [x0, x1) x [y0, y1) (clipped) of src into dst; returns the own
 * weight of dst, 1 - pasted area / image area. */
float aug_cutmix_pixels(uint8_t *dst, const uint8_t *src, int h, int w, int x0, int y0,
                        int x1, int y1);

#endif
