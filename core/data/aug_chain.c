/* aug_chain — applying a chain to a batch: the per-thread workspaces, one random
 * stream per (op, example), the random matrix or colour change each op draws,
 * consecutive geometric ops composed into one resampling and colour ops into one
 * colour pass, MixUp / CutMix across the batch, aug_apply, and the adapters with the
 * pipeline's hook signatures (aug_pipe_hook, aug_pipe_ws_free).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "data/aug_impl.h"

/* ===================================================================================
 * Workspace
 * =================================================================================== */

aug_workspace *aug_workspace_new(int max_n, int h, int w)
{
    if (max_n <= 0 || h <= 0 || w <= 0 || h > 16384 || w > 16384)
        return NULL;
    aug_workspace *ws = calloc(1, sizeof *ws);
    if (!ws)
        return NULL;
    ws->max_n = max_n;
    ws->h = h;
    ws->w = w;
    ws->pad = util_aligned_alloc((size_t)(h + 2) * (size_t)(w + 2) * 3 + AUG_PAD_SLACK);
    ws->idx = calloc(3 * ((size_t)w + 16), sizeof *ws->idx);
    ws->perm = calloc((size_t)max_n, sizeof *ws->perm);
    ws->slot = calloc((size_t)max_n, sizeof *ws->slot);
    ws->plabel = calloc((size_t)max_n, sizeof *ws->plabel);
    if (!ws->pad || !ws->idx || !ws->perm || !ws->slot || !ws->plabel) {
        aug_workspace_free(ws);
        return NULL;
    }
    return ws;
}

void aug_workspace_free(aug_workspace *ws)
{
    if (!ws)
        return;
    util_aligned_free(ws->pad);
    util_aligned_free(ws->mixbuf);
    free(ws->idx);
    free(ws->perm);
    free(ws->slot);
    free(ws->plabel);
    free(ws);
}

/* ===================================================================================
 * Geometric ops: the random matrix of one op
 * =================================================================================== */

/* The random output -> source matrix of one geometric op; 0 when it is a no-op. */
static int geom_matrix(const aug_op *op, rng *r, int h, int w, double m[9])
{
    switch (op->id) {
    case AUG_OP_FLIP: {
        /* axis h, v, or hv: left-right, up-down or both, a third each. */
        int axis = (int)op->p[0], pick = axis == 2 ? rng_int(r, 0, 3) : axis;
        int lr = pick != 1, ud = pick != 0;
        aug_m3_identity(m);
        if (lr) {
            m[0] = -1;
            m[2] = w;
        }
        if (ud) {
            m[4] = -1;
            m[5] = h;
        }
        return 1;
    }
    case AUG_OP_PERSPECTIVE: {
        aug_point t[4];
        aug_perspective_random(r, h, w, op->p[0], op->p[1] != 0, op->p[2] != 0, t);
        return aug_perspective_matrix(h, w, t, m);
    }
    case AUG_OP_AFFINE: {
        aug_affine_params a;
        a.rot = rng_uniform(r, (float)-op->p[0], (float)op->p[0]);
        a.shear = rng_uniform(r, (float)-op->p[1], (float)op->p[1]);
        a.zoom_x = a.zoom_y = rng_uniform(r, (float)(1 - op->p[2]), (float)(1 + op->p[2]));
        a.shift_x = rng_uniform(r, (float)-op->p[3], (float)op->p[3]) * w;
        a.shift_y = rng_uniform(r, (float)-op->p[3], (float)op->p[3]) * h;
        aug_affine_matrix(h, w, &a, m);
        return 1;
    }
    case AUG_OP_CROP: {
        /* torchvision's RandomResizedCrop: area fraction in [scale, 1], aspect ratio
         * log-uniform in [ratio, 1/ratio], then the window is stretched to h x w. */
        double area = op->p[0] + (1 - op->p[0]) * rng_double(r);
        double lr = log(op->p[1]);
        double ar = exp(lr + (-2 * lr) * rng_double(r));
        double cw = sqrt(area * ar) * w, ch = sqrt(area / ar) * h;
        if (cw > w)
            cw = w;
        if (ch > h)
            ch = h;
        double x0 = (w - cw) * rng_double(r), y0 = (h - ch) * rng_double(r);
        double mm[9] = {cw / w, 0, x0, 0, ch / h, y0, 0, 0, 1};
        memcpy(m, mm, sizeof mm);
        return 1;
    }
    }
    return 0;
}

static int geom_interp(const aug_op *op)
{
    switch (op->id) {
    case AUG_OP_PERSPECTIVE:
        return (int)op->p[3];
    case AUG_OP_AFFINE:
        return (int)op->p[4];
    case AUG_OP_CROP:
        return (int)op->p[2];
    }
    return AUG_NEAREST;
}

/* ===================================================================================
 * Applying a chain
 * =================================================================================== */

static uint64_t stream_id(int op, int example)
{
    return ((uint64_t)(op + 1) << 32) | (uint32_t)example;
}

#define STREAM_BATCH 0xffffffffu

typedef struct img_state {
    uint8_t *img;
    int h, w;
    double geom[9];
    int geom_pending, bilinear;
    aug_color_map color;
    int color_pending;
} img_state;

static void flush_geom(img_state *s, aug_workspace *ws)
{
    if (!s->geom_pending)
        return;
    aug_warp_matrix(s->img, s->h, s->w, s->geom, s->bilinear ? AUG_BILINEAR : AUG_NEAREST, ws);
    aug_m3_identity(s->geom);
    s->geom_pending = 0;
    s->bilinear = 0;
}

static void flush_color(img_state *s)
{
    if (!s->color_pending)
        return;
    if (!aug_cm_is_identity(&s->color))
        aug_color_apply(s->img, (size_t)s->h * s->w, &s->color);
    aug_cm_identity(&s->color);
    s->color_pending = 0;
}

/* The mean level of the image as the pending colour map would leave it. */
static double pending_mean(img_state *s)
{
    double m[3];
    aug_channel_means(s->img, s->h, s->w, m);
    double lvl = 0;
    for (int r = 0; r < 3; r++)
        lvl += s->color.a[r * 3] * m[0] + s->color.a[r * 3 + 1] * m[1] +
               s->color.a[r * 3 + 2] * m[2] + s->color.o[r];
    return lvl / 3;
}

static void color_op(const aug_op *op, rng *r, img_state *s)
{
    double f;
    switch (op->id) {
    case AUG_OP_COLOR:
        /* Always the same order, each part drawn whether or not it is zero, so a
         * parameter change does not shift the other parts' draws. */
        aug_cm_brightness(&s->color, rng_uniform(r, (float)-op->p[0], (float)op->p[0]));
        f = rng_uniform(r, (float)(1 - op->p[1]), (float)(1 + op->p[1]));
        if (f != 1)
            aug_cm_contrast(&s->color, f, pending_mean(s));
        aug_cm_saturation(&s->color, rng_uniform(r, (float)(1 - op->p[2]), (float)(1 + op->p[2])));
        aug_cm_hue(&s->color, rng_uniform(r, (float)-op->p[3], (float)op->p[3]));
        break;
    case AUG_OP_BRIGHTNESS:
        aug_cm_brightness(&s->color, rng_uniform(r, (float)-op->p[0], (float)op->p[0]));
        break;
    case AUG_OP_CONTRAST:
        f = rng_uniform(r, (float)(1 - op->p[0]), (float)(1 + op->p[0]));
        if (f != 1)
            aug_cm_contrast(&s->color, f, pending_mean(s));
        break;
    case AUG_OP_SATURATION:
        aug_cm_saturation(&s->color, rng_uniform(r, (float)(1 - op->p[0]), (float)(1 + op->p[0])));
        break;
    case AUG_OP_HUE:
        aug_cm_hue(&s->color, rng_uniform(r, (float)-op->p[0], (float)op->p[0]));
        break;
    }
    s->color_pending = 1;
}

static void pixel_op(const aug_op *op, rng *r, img_state *s)
{
    int h = s->h, w = s->w;
    if (op->id == AUG_OP_CUTOUT) {
        int ch = (int)floor(op->p[0] * h + 0.5), cw = (int)floor(op->p[0] * w + 0.5);
        for (int k = 0; k < (int)op->p[1]; k++) {
            int cy = rng_int(r, 0, h), cx = rng_int(r, 0, w);
            aug_cutout(s->img, h, w, cx - cw / 2, cy - ch / 2, cx - cw / 2 + cw,
                       cy - ch / 2 + ch);
        }
    } else if (op->id == AUG_OP_GRIDMASK) {
        int side = h < w ? h : w;
        int dmin = (int)floor(op->p[0] * side + 0.5), dmax = (int)floor(op->p[1] * side + 0.5);
        dmin = dmin < 2 ? 2 : dmin;
        dmax = dmax < dmin ? dmin : dmax;
        int d = rng_int(r, dmin, dmax + 1);
        int keep = (int)floor(op->p[2] * d + 0.5);
        keep = keep < 1 ? 1 : keep;
        int ox = rng_int(r, 0, d), oy = rng_int(r, 0, d);
        double ang = rng_uniform(r, (float)-op->p[3], (float)op->p[3]);
        aug_gridmask(s->img, h, w, d, keep, ox, oy, ang);
    }
}

/* The per-example ops [k0, k1) on example i. */
static void apply_segment(const aug_chain *c, int k0, int k1, batch *b, int i, uint64_t seed,
                          aug_workspace *ws)
{
    img_state s;
    s.img = batch_image(b, i);
    s.h = b->h;
    s.w = b->w;
    aug_m3_identity(s.geom);
    s.geom_pending = s.bilinear = 0;
    aug_cm_identity(&s.color);
    s.color_pending = 0;
    for (int k = k0; k < k1; k++) {
        const aug_op *op = &c->op[k];
        rng r;
        rng_derive(&r, seed, b->seq, stream_id(k, b->first + i));
        if (!(rng_double(&r) < op->prob))
            continue;
        switch (aug_ops[op->id].kind) {
        case AUG_K_GEOM: {
            double m[9];
            flush_color(&s);
            if (geom_matrix(op, &r, s.h, s.w, m)) {
                aug_m3_mul(s.geom, m, s.geom);
                s.geom_pending = 1;
                s.bilinear |= geom_interp(op) == AUG_BILINEAR;
            }
            break;
        }
        case AUG_K_COLOR:
            flush_geom(&s, ws);
            color_op(op, &r, &s);
            break;
        default:
            flush_geom(&s, ws);
            flush_color(&s);
            pixel_op(op, &r, &s);
            break;
        }
    }
    flush_geom(&s, ws);
    flush_color(&s);
}

static int unmixed(const batch *b, int i)
{
    return b->label[i] >= 0 && b->label2[i] == b->label[i] && b->mix[i] == 1.0f;
}

static int apply_mix(const aug_chain *c, int k, batch *b, uint64_t seed, aug_workspace *ws)
{
    const aug_op *op = &c->op[k];
    int n = b->n;
    if (n < 2)
        return PT_OK;
    size_t isz = (size_t)b->h * b->w * 3;
    /* A random cyclic permutation (Sattolo): nobody is paired with itself. */
    rng rb;
    rng_derive(&rb, seed, b->seq, stream_id(k, (int)STREAM_BATCH));
    int32_t *perm = ws->perm, *slot = ws->slot, *plabel = ws->plabel;
    for (int i = 0; i < n; i++) {
        perm[i] = i;
        slot[i] = -1;
        plabel[i] = batch_dominant_label(b, i);
    }
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(&rb, (uint64_t)i);
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    /* Two passes over the examples, each drawing from the example's own stream: the
     * first decides who is mixed and copies those partners' pixels before anything
     * changes (so a partner mixed itself still gives its own picture), the second
     * mixes. An example's labels change only in its own step, so both passes
     * decide alike. */
    int nslots = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            int j = perm[i];
            rng r;
            rng_derive(&r, seed, b->seq, stream_id(k, i));
            if (!(rng_double(&r) < op->prob && unmixed(b, i) && plabel[j] >= 0))
                continue;
            if (pass == 0) {
                if (slot[j] < 0)
                    slot[j] = nslots++;
                continue;
            }
            double lam = aug_beta_draw(&r, op->p[0]);
            const uint8_t *partner = ws->mixbuf + (size_t)slot[j] * isz;
            uint8_t *img = batch_image(b, i);
            float own;
            if (op->id == AUG_OP_MIXUP) {
                own = aug_mixup_pixels(img, img, partner, isz, lam);
            } else {
                /* The box covers 1 - lambda of the image before clipping; the label
                 * weight is what was actually pasted. */
                double cut = sqrt(1 - lam);
                int cw = (int)(b->w * cut), ch = (int)(b->h * cut);
                int cx = rng_int(&r, 0, b->w), cy = rng_int(&r, 0, b->h);
                own = aug_cutmix_pixels(img, partner, b->h, b->w, cx - cw / 2, cy - ch / 2,
                                        cx - cw / 2 + cw, cy - ch / 2 + ch);
            }
            b->label2[i] = plabel[j];
            b->src2[i] = b->src[j];
            b->mix[i] = own;
        }
        if (pass == 0) {
            if (nslots == 0)
                return PT_OK;
            if (!ws->mixbuf) {
                ws->mixbuf = util_aligned_alloc((size_t)ws->max_n * (size_t)ws->h * ws->w * 3);
                if (!ws->mixbuf)
                    return PT_ENOMEM;
            }
            for (int j = 0; j < n; j++)
                if (slot[j] >= 0)
                    memcpy(ws->mixbuf + (size_t)slot[j] * isz, batch_image(b, j), isz);
        }
    }
    return PT_OK;
}

int aug_mixes(const aug_chain *c)
{
    for (int k = 0; c && k < c->n; k++)
        if (aug_ops[c->op[k].id].kind == AUG_K_MIX)
            return 1;
    return 0;
}

int aug_apply(const aug_chain *c, batch *b, uint64_t seed, aug_workspace *ws)
{
    if (!b)
        return PT_EUSAGE;
    if (!c || c->n == 0 || b->n <= 0)
        return PT_OK;
    if (!aug_ws_fits(ws, b->h, b->w) || b->n > ws->max_n || b->n > b->cap)
        return PT_EUSAGE;
    int k = 0;
    while (k < c->n) {
        if (aug_ops[c->op[k].id].kind == AUG_K_MIX) {
            int rc = apply_mix(c, k, b, seed, ws);
            if (rc != PT_OK)
                return rc;
            k++;
            continue;
        }
        int end = k;
        while (end < c->n && aug_ops[c->op[end].id].kind != AUG_K_MIX)
            end++;
        for (int i = 0; i < b->n; i++)
            apply_segment(c, k, end, b, i, seed, ws);
        k = end;
    }
    return PT_OK;
}

void aug_pipe_hook(void *ctx, batch *b, uint64_t seed, void **ws)
{
    const aug_chain *c = ctx;
    if (!c || c->n == 0 || !b || !ws)
        return;
    aug_workspace *w = *ws;
    if (w && (w->h < b->h || w->w < b->w || w->max_n < b->cap)) {
        aug_workspace_free(w);
        w = *ws = NULL;
    }
    if (!w) {
        w = aug_workspace_new(b->cap, b->h, b->w);
        *ws = w;
        if (!w)
            return; /* out of memory: the batch goes through unaugmented */
    }
    aug_apply(c, b, seed, w);
}

void aug_pipe_ws_free(void *ws)
{
    aug_workspace_free(ws);
}
