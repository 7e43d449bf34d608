#include "data/augment.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AUG_X86 1
#include <immintrin.h>
#endif

#define AUG_MAX_OPS 32
#define MAX_PARAMS 5
#define PI 3.14159265358979323846

/* ===================================================================================
 * The op table
 * =================================================================================== */

enum { K_GEOM, K_COLOR, K_PIXEL, K_MIX };

enum {
    OP_FLIP,
    OP_PERSPECTIVE,
    OP_AFFINE,
    OP_CROP,
    OP_COLOR,
    OP_BRIGHTNESS,
    OP_CONTRAST,
    OP_SATURATION,
    OP_HUE,
    OP_CUTOUT,
    OP_GRIDMASK,
    OP_MIXUP,
    OP_CUTMIX,
    OP_COUNT
};

typedef struct param_def {
    const char *key;
    double def, lo, hi;
    const char *const *choices; /* an enum when set: the value is the index */
    int integer;
} param_def;

typedef struct op_def {
    const char *name;
    int kind;
    int nparams;
    param_def params[MAX_PARAMS];
} op_def;

static const char *const interp_names[] = {"nearest", "bilinear", NULL};
static const char *const axis_names[] = {"h", "v", "hv", NULL};
static const char *const bool_names[] = {"0", "1", NULL};

/* Order of params is the order of the canonical form. */
static const op_def ops[OP_COUNT] = {
    [OP_FLIP] = {"flip", K_GEOM, 1, {{"axis", 0, 0, 2, axis_names, 1}}},
    [OP_PERSPECTIVE] = {"perspective", K_GEOM, 4,
                        {{"jitter", 0.25, 0, 0.5, NULL, 0},
                         {"rot90", 1, 0, 1, bool_names, 1},
                         {"reflect", 1, 0, 1, bool_names, 1},
                         {"interp", AUG_NEAREST, 0, 1, interp_names, 1}}},
    [OP_AFFINE] = {"affine", K_GEOM, 5,
                   {{"rot", 15, 0, 180, NULL, 0},
                    {"shear", 5, 0, 45, NULL, 0},
                    {"zoom", 0.1, 0, 0.9, NULL, 0},
                    {"shift", 0.1, 0, 0.5, NULL, 0},
                    {"interp", AUG_NEAREST, 0, 1, interp_names, 1}}},
    [OP_CROP] = {"crop", K_GEOM, 3,
                 {{"scale", 0.5, 0.05, 1, NULL, 0},
                  {"ratio", 0.75, 0.2, 1, NULL, 0},
                  {"interp", AUG_NEAREST, 0, 1, interp_names, 1}}},
    [OP_COLOR] = {"color", K_COLOR, 4,
                  {{"brightness", 0.2, 0, 1, NULL, 0},
                   {"contrast", 0.2, 0, 0.9, NULL, 0},
                   {"saturation", 0.2, 0, 0.9, NULL, 0},
                   {"hue", 10, 0, 180, NULL, 0}}},
    [OP_BRIGHTNESS] = {"brightness", K_COLOR, 1, {{"delta", 0.2, 0, 1, NULL, 0}}},
    [OP_CONTRAST] = {"contrast", K_COLOR, 1, {{"delta", 0.2, 0, 0.9, NULL, 0}}},
    [OP_SATURATION] = {"saturation", K_COLOR, 1, {{"delta", 0.2, 0, 0.9, NULL, 0}}},
    [OP_HUE] = {"hue", K_COLOR, 1, {{"deg", 10, 0, 180, NULL, 0}}},
    [OP_CUTOUT] = {"cutout", K_PIXEL, 2,
                   {{"size", 0.25, 0.01, 1, NULL, 0}, {"count", 1, 1, 16, NULL, 1}}},
    [OP_GRIDMASK] = {"gridmask", K_PIXEL, 4,
                     {{"dmin", 0.2, 0.02, 1, NULL, 0},
                      {"dmax", 0.3, 0.02, 1, NULL, 0},
                      {"ratio", 0.5, 0.05, 0.95, NULL, 0},
                      {"rot", 45, 0, 180, NULL, 0}}},
    [OP_MIXUP] = {"mixup", K_MIX, 1, {{"alpha", 1, 0.05, 10, NULL, 0}}},
    [OP_CUTMIX] = {"cutmix", K_MIX, 1, {{"alpha", 1, 0.05, 10, NULL, 0}}},
};

typedef struct aug_op {
    int id;
    double prob;
    double p[MAX_PARAMS];
} aug_op;

struct aug_chain {
    int n;
    aug_op op[AUG_MAX_OPS];
};

const char *aug_default_spec(void)
{
    return AUG_DEFAULT_SPEC;
}

int aug_count(const aug_chain *c)
{
    return c ? c->n : 0;
}

size_t aug_names(const char **names, size_t max)
{
    for (size_t i = 0; i < OP_COUNT && i < max; i++)
        names[i] = ops[i].name;
    return OP_COUNT;
}

static int find_op(const char *s, size_t len)
{
    for (int i = 0; i < OP_COUNT; i++)
        if (strlen(ops[i].name) == len && memcmp(ops[i].name, s, len) == 0)
            return i;
    return -1;
}

/* Shortest %g that reads back as the same double, so canonical specs stay readable
 * ("0.35", not "0.34999999999999998") and still round-trip exactly. */
static void fmt_num(char *buf, size_t n, double v)
{
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

static void fmt_param(char *buf, size_t n, const param_def *pd, double v)
{
    if (pd->choices)
        snprintf(buf, n, "%s", pd->choices[(int)v]);
    else
        fmt_num(buf, n, v);
}

static char help_lines[OP_COUNT][320];
static pthread_once_t help_once = PTHREAD_ONCE_INIT;

static void build_help(void)
{
    for (int i = 0; i < OP_COUNT; i++) {
        char *s = help_lines[i];
        size_t cap = sizeof help_lines[i], len = 0;
        len += (size_t)snprintf(s + len, cap - len, "%s:PROB", ops[i].name);
        for (int k = 0; k < ops[i].nparams && len < cap; k++) {
            const param_def *pd = &ops[i].params[k];
            char def[32], lo[32], hi[32];
            fmt_param(def, sizeof def, pd, pd->def);
            if (pd->choices) {
                len += (size_t)snprintf(s + len, cap - len, ":%s=%s (", pd->key, def);
                for (int c = 0; pd->choices[c] && len < cap; c++)
                    len += (size_t)snprintf(s + len, cap - len, "%s%s", c ? "|" : "",
                                            pd->choices[c]);
                if (len < cap)
                    len += (size_t)snprintf(s + len, cap - len, ")");
            } else {
                fmt_num(lo, sizeof lo, pd->lo);
                fmt_num(hi, sizeof hi, pd->hi);
                len += (size_t)snprintf(s + len, cap - len, ":%s=%s [%s,%s]", pd->key, def, lo,
                                        hi);
            }
        }
    }
}

const char *aug_help(const char *name)
{
    if (!name)
        return NULL;
    int id = find_op(name, strlen(name));
    if (id < 0)
        return NULL;
    pthread_once(&help_once, build_help);
    return help_lines[id];
}

/* ===================================================================================
 * Parsing and formatting
 * =================================================================================== */

static void trim(const char **s, size_t *len)
{
    while (*len > 0 && isspace((unsigned char)**s)) {
        (*s)++;
        (*len)--;
    }
    while (*len > 0 && isspace((unsigned char)(*s)[*len - 1]))
        (*len)--;
}

/* A finite number filling the whole token. */
static int parse_num(const char *s, size_t len, double *out)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = 0;
    char *end = NULL;
    double v = strtod(buf, &end);
    if (end != buf + len || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int parse_item(const char *item, size_t ilen, aug_op *op, pt_err *e)
{
    /* Split on ':' by hand: the item is not NUL-terminated. */
    const char *tok[2 + MAX_PARAMS * 2];
    size_t tlen[2 + MAX_PARAMS * 2];
    int nt = 0;
    const char *p = item, *end = item + ilen;
    for (;;) {
        const char *c = memchr(p, ':', (size_t)(end - p));
        const char *stop = c ? c : end;
        if (nt == (int)(sizeof tok / sizeof tok[0]))
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "augment: too many fields in '%.*s'", (int)ilen, item);
        tok[nt] = p;
        tlen[nt] = (size_t)(stop - p);
        trim(&tok[nt], &tlen[nt]);
        nt++;
        if (!c)
            break;
        p = c + 1;
    }
    int id = find_op(tok[0], tlen[0]);
    if (id < 0) {
        char known[256];
        size_t kl = 0;
        for (int i = 0; i < OP_COUNT && kl < sizeof known; i++)
            kl += (size_t)snprintf(known + kl, sizeof known - kl, "%s%s", i ? ", " : "",
                                   ops[i].name);
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "augment: unknown op '%.*s' in '%.*s' (known: none, %s)", (int)tlen[0],
                       tok[0], (int)ilen, item, known);
    }
    const op_def *od = &ops[id];
    op->id = id;
    op->prob = 1.0;
    for (int k = 0; k < od->nparams; k++)
        op->p[k] = od->params[k].def;
    int t = 1;
    if (t < nt && !memchr(tok[t], '=', tlen[t])) {
        double v;
        if (parse_num(tok[t], tlen[t], &v) != 0 || v < 0 || v > 1)
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "augment: bad probability '%.*s' in '%.*s' (want a number in [0, 1])",
                           (int)tlen[t], tok[t], (int)ilen, item);
        op->prob = v;
        t++;
    }
    for (; t < nt; t++) {
        const char *eq = memchr(tok[t], '=', tlen[t]);
        if (!eq)
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "augment: '%.*s' in '%.*s' is not key=value", (int)tlen[t], tok[t],
                           (int)ilen, item);
        const char *key = tok[t], *val = eq + 1;
        size_t klen = (size_t)(eq - key), vlen = tlen[t] - klen - 1;
        trim(&key, &klen);
        trim(&val, &vlen);
        int k = 0;
        while (k < od->nparams &&
               !(strlen(od->params[k].key) == klen && memcmp(od->params[k].key, key, klen) == 0))
            k++;
        if (k == od->nparams) {
            char keys[128];
            size_t kl = 0;
            for (int i = 0; i < od->nparams && kl < sizeof keys; i++)
                kl += (size_t)snprintf(keys + kl, sizeof keys - kl, "%s%s", i ? ", " : "",
                                       od->params[i].key);
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "augment: unknown key '%.*s' for %s in '%.*s' (keys: %s)", (int)klen,
                           key, od->name, (int)ilen, item, keys);
        }
        const param_def *pd = &od->params[k];
        if (pd->choices) {
            int c = 0;
            while (pd->choices[c] &&
                   !(strlen(pd->choices[c]) == vlen && memcmp(pd->choices[c], val, vlen) == 0))
                c++;
            if (!pd->choices[c])
                return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                               "augment: bad value '%.*s' for %s %s in '%.*s'", (int)vlen, val,
                               od->name, pd->key, (int)ilen, item);
            op->p[k] = c;
        } else {
            double v;
            if (parse_num(val, vlen, &v) != 0 || v < pd->lo || v > pd->hi ||
                (pd->integer && v != floor(v))) {
                char lo[32], hi[32];
                fmt_num(lo, sizeof lo, pd->lo);
                fmt_num(hi, sizeof hi, pd->hi);
                return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                               "augment: bad value '%.*s' for %s %s in '%.*s' (want %s in [%s, %s])",
                               (int)vlen, val, od->name, pd->key, (int)ilen, item,
                               pd->integer ? "an integer" : "a number", lo, hi);
            }
            op->p[k] = v;
        }
    }
    if (id == OP_GRIDMASK && op->p[0] > op->p[1])
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "augment: gridmask dmin > dmax in '%.*s'", (int)ilen, item);
    return PT_OK;
}

int aug_parse(const char *spec, aug_chain **out, pt_err *e)
{
    if (out)
        *out = NULL;
    if (!spec || !out)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "augment: no spec");
    aug_chain *c = calloc(1, sizeof *c);
    if (!c)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "augment: out of memory");
    const char *all = spec;
    size_t alen = strlen(spec);
    trim(&all, &alen);
    if (alen == 0 || (alen == 4 && memcmp(all, "none", 4) == 0)) {
        *out = c;
        return PT_OK;
    }
    const char *p = all, *end = all + alen;
    for (;;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        const char *item = p;
        size_t ilen = (size_t)(stop - p);
        trim(&item, &ilen);
        int rc = PT_OK;
        if (ilen == 0)
            rc = err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "augment: empty op after %d op(s) in '%s'", c->n, spec);
        else if (ilen == 4 && memcmp(item, "none", 4) == 0)
            rc = err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "augment: 'none' cannot be combined with other ops in '%s'", spec);
        else if (c->n == AUG_MAX_OPS)
            rc = err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "augment: more than %d ops in '%s'", AUG_MAX_OPS, spec);
        else
            rc = parse_item(item, ilen, &c->op[c->n++], e);
        if (rc != PT_OK) {
            free(c);
            return rc;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    *out = c;
    return PT_OK;
}

void aug_free(aug_chain *c)
{
    free(c);
}

int aug_format(const aug_chain *c, char *buf, size_t n)
{
    if (!buf || n == 0)
        return PT_EUSAGE;
    buf[0] = 0;
    size_t len = 0;
    int trunc = 0;
    if (!c || c->n == 0) {
        len = (size_t)snprintf(buf, n, "none");
        return len >= n ? PT_EUSAGE : PT_OK;
    }
    for (int i = 0; i < c->n && !trunc; i++) {
        const aug_op *op = &c->op[i];
        const op_def *od = &ops[op->id];
        char num[32];
        fmt_num(num, sizeof num, op->prob);
        size_t w = (size_t)snprintf(buf + len, n - len, "%s%s:%s", i ? "," : "", od->name, num);
        if (w >= n - len) {
            trunc = 1;
            break;
        }
        len += w;
        for (int k = 0; k < od->nparams; k++) {
            char val[32];
            fmt_param(val, sizeof val, &od->params[k], op->p[k]);
            w = (size_t)snprintf(buf + len, n - len, ":%s=%s", od->params[k].key, val);
            if (w >= n - len) {
                trunc = 1;
                break;
            }
            len += w;
        }
    }
    return trunc ? PT_EUSAGE : PT_OK;
}

/* ===================================================================================
 * Workspace
 * =================================================================================== */

/* Bytes past the padded image: the 4-byte pixel loads of the gather may read one
 * byte beyond the last pixel. */
#define PAD_SLACK 64

struct aug_workspace {
    int max_n, h, w;
    uint8_t *pad;       /* (h + 2) x (w + 2) pixels: the image inside a black border */
    int32_t *idx;       /* 3 x (w + 16): source offsets (and weights) for one row */
    uint8_t *mixbuf;    /* partner images for MixUp / CutMix, allocated on first use */
    int32_t *perm, *slot, *plabel;
};

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
    ws->pad = util_aligned_alloc((size_t)(h + 2) * (size_t)(w + 2) * 3 + PAD_SLACK);
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

static int ws_fits(const aug_workspace *ws, int h, int w)
{
    return ws && h > 0 && w > 0 && h <= ws->h && w <= ws->w;
}

/* ===================================================================================
 * 3x3 matrices (row-major, acting on column vectors (x, y, 1))
 * =================================================================================== */

static void m3_mul(const double a[9], const double b[9], double out[9])
{
    double t[9];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            t[r * 3 + c] = a[r * 3] * b[c] + a[r * 3 + 1] * b[3 + c] + a[r * 3 + 2] * b[6 + c];
    memcpy(out, t, sizeof t);
}

static void m3_identity(double m[9])
{
    static const double id[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    memcpy(m, id, sizeof id);
}

static void m3_translate(double m[9], double tx, double ty)
{
    m3_identity(m);
    m[2] = tx;
    m[5] = ty;
}

/* Inverse by the adjugate; 0 when (nearly) singular. */
static int m3_inv(const double a[9], double out[9])
{
    double c00 = a[4] * a[8] - a[5] * a[7];
    double c01 = a[5] * a[6] - a[3] * a[8];
    double c02 = a[3] * a[7] - a[4] * a[6];
    double det = a[0] * c00 + a[1] * c01 + a[2] * c02;
    double scale = 0;
    for (int i = 0; i < 9; i++)
        scale = fmax(scale, fabs(a[i]));
    if (!(fabs(det) > 1e-12 * scale * scale * scale))
        return 0;
    double t[9] = {c00,
                   a[2] * a[7] - a[1] * a[8],
                   a[1] * a[5] - a[2] * a[4],
                   c01,
                   a[0] * a[8] - a[2] * a[6],
                   a[2] * a[3] - a[0] * a[5],
                   c02,
                   a[1] * a[6] - a[0] * a[7],
                   a[0] * a[4] - a[1] * a[3]};
    for (int i = 0; i < 9; i++)
        out[i] = t[i] / det;
    return 1;
}

/* The notebook's get_transformation_mat_2D: the matrix taking the basis vectors and
 * (1, 1, 1) to the four points (in homogeneous coordinates). */
static int basis_to_points(const aug_point p[4], double m[9])
{
    double a[9] = {p[0].x, p[1].x, p[2].x, p[0].y, p[1].y, p[2].y, 1, 1, 1};
    double ai[9];
    if (!m3_inv(a, ai))
        return 0;
    double s[3], smax = 0;
    for (int r = 0; r < 3; r++) {
        s[r] = ai[r * 3] * p[3].x + ai[r * 3 + 1] * p[3].y + ai[r * 3 + 2];
        smax = fmax(smax, fabs(s[r]));
    }
    /* A zero scale: the fourth point is on a line through two of the others. */
    for (int r = 0; r < 3; r++)
        if (!(fabs(s[r]) > 1e-9 * smax))
            return 0;
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            m[r * 3 + c] = a[r * 3 + c] * s[c];
    return 1;
}

/* Output -> source matrix of the 4-point transform (source corners -> tgt). */
static int perspective_matrix(int h, int w, const aug_point tgt[4], double m[9])
{
    aug_point src[4] = {{0, 0}, {w, 0}, {w, h}, {0, h}};
    double ms[9], mt[9], mti[9];
    if (!basis_to_points(src, ms) || !basis_to_points(tgt, mt) || !m3_inv(mt, mti))
        return 0;
    m3_mul(ms, mti, m);
    return 1;
}

/* ===================================================================================
 * Resampling kernels
 * =================================================================================== */

/* Copy img into ws->pad with a one-pixel black border, so the kernels need no edge
 * cases: a source point just outside the image reads black. */
static void pad_image(const uint8_t *img, int h, int w, uint8_t *pad)
{
    size_t ps = (size_t)(w + 2) * 3, rb = (size_t)w * 3;
    memset(pad, 0, ps);
    for (int y = 0; y < h; y++) {
        uint8_t *row = pad + (size_t)(y + 1) * ps;
        row[0] = row[1] = row[2] = 0;
        memcpy(row + 3, img + (size_t)y * rb, rb);
        row[3 + rb] = row[4 + rb] = row[5 + rb] = 0;
    }
    memset(pad + (size_t)(h + 1) * ps, 0, ps + PAD_SLACK);
}

/* The columns of an output row whose source point t = (u/q, v/q) lies in
 * [tlo, thx) x [tlo, thy) and whose q is at least qmin: multiplied out by q > 0,
 * each limit is a + b X >= 0, a per row, b per image. With b > 0 it bounds X from
 * below (X >= -a/b), with b < 0 from above, with b = 0 it holds for every X or
 * none. The b are sorted into those kinds once per image, so the per-row work is
 * a multiply and a min or max per limit, without data-dependent branches. */
typedef struct span_ctx {
    double rb[5];       /* 1 / b */
    int kind[5];        /* 1: lower bound, -1: upper bound, 0: b == 0 */
    double tlo, thx, thy, qmin;
} span_ctx;

static void span_init(span_ctx *c, const double P[9], double tlo, double thx, double thy)
{
    c->tlo = tlo;
    c->thx = thx;
    c->thy = thy;
    /* Points with a tiny homogeneous weight are far beyond the horizon: outside.
     * Keeping q away from 0 also keeps the float division accurate. */
    c->qmin = 1e-2;
    double b[5] = {P[6], P[0] - tlo * P[6], thx * P[6] - P[0], P[3] - tlo * P[6],
                   thy * P[6] - P[3]};
    for (int k = 0; k < 5; k++) {
        c->kind[k] = b[k] > 0 ? 1 : b[k] < 0 ? -1 : 0;
        c->rb[k] = b[k] != 0 ? 1 / b[k] : 0;
    }
}

/* floor of a value already clamped to [-1, 2^30]. */
static inline int floor_small(double r)
{
    return (int)(r + 2.0) - 2;
}

static void span_row(const span_ctx *c, double u0, double v0, double q0, int w, int *lo,
                     int *hi)
{
    double a[5] = {q0 - c->qmin, u0 - c->tlo * q0, c->thx * q0 - u0, v0 - c->tlo * q0,
                   c->thy * q0 - v0};
    int l = 0, h = w;
    for (int k = 0; k < 5; k++) {
        if (c->kind[k] == 0) {
            h = a[k] >= 0 ? h : 0;
            continue;
        }
        double r = -a[k] * c->rb[k];
        /* Clamp first: r may be huge (a NaN, which cannot come from finite
         * matrices, would end up as -1). */
        r = r > -1 ? r : -1;
        r = r < w + 1 ? r : w + 1;
        int f = floor_small(r);
        if (c->kind[k] > 0) {
            int ce = f < r ? f + 1 : f;
            l = ce > l ? ce : l;
        } else {
            h = f + 1 < h ? f + 1 : h;
        }
    }
    l = l < w ? l : w;
    *lo = l;
    *hi = h > l ? h : l;
}

/* Rows of the nearest kernel: one output row's source byte offsets into the padded
 * image, in blocks of 8 so the compiler vectorizes them (fixed trip count), then a
 * gather of 4-byte loads and stores (the 4th byte is overwritten by the next pixel;
 * the last pixel of the row is stored with 3). The caller guarantees that every
 * coordinate in [lo, hi) is inside the padded image; the offset is clamped anyway
 * so that no rounding can ever read outside it. */
#define NB 8

typedef struct near_row_args {
    float u0, du, v0, dv, q0, dq;
    int32_t stride, maxo;
} near_row_args;

/* The fields are copied to locals first: idx could alias *a as far as the compiler
 * knows, and reloading them after every store keeps it from vectorizing. */
#define NEAR_IDX_BODY(PROJ)                                                              \
    do {                                                                                 \
        const float u0 = a->u0, du = a->du, v0 = a->v0, dv = a->dv, q0 = a->q0,          \
                    dq = a->dq;                                                          \
        const int32_t stride = a->stride, maxo = a->maxo;                                \
        int last = hi - 1;                                                               \
        for (int X = lo; X < hi; X += NB) {                                              \
            int32_t *out = idx + (X - lo);                                               \
            for (int j = 0; j < NB; j++) {                                               \
                int xx = X + j < last ? X + j : last;                                    \
                float fx = (float)xx;                                                    \
                float sx = u0 + fx * du, sy = v0 + fx * dv;                              \
                if (PROJ) {                                                              \
                    float r = 1.0f / (q0 + fx * dq);                                     \
                    sx *= r;                                                             \
                    sy *= r;                                                             \
                }                                                                        \
                int32_t o = (int32_t)sy * stride + (int32_t)sx * 3;                      \
                o = o < 0 ? 0 : o;                                                       \
                o = o > maxo ? maxo : o;                                                 \
                out[j] = o;                                                              \
            }                                                                            \
        }                                                                                \
    } while (0)

static void near_idx_affine(int32_t *idx, int lo, int hi, const near_row_args *a)
{
    NEAR_IDX_BODY(0);
}

static void near_idx_proj(int32_t *idx, int lo, int hi, const near_row_args *a)
{
    NEAR_IDX_BODY(1);
}

/* Which vector code may run: 0 portable C only; 1 SSE2 (every x86-64); 2 SSSE3 too;
 * 3 AVX2 too. Every path gives the same bytes; the tests hold them to that. */
static int simd_detected = -1, simd_enabled = 1;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

static void cpu_init(void)
{
    simd_detected = 0;
#ifdef AUG_X86
    __builtin_cpu_init();
    simd_detected = __builtin_cpu_supports("avx2") ? 3 : __builtin_cpu_supports("ssse3") ? 2 : 1;
#endif
}

static int simd(void)
{
    pthread_once(&cpu_once, cpu_init);
    return simd_enabled ? simd_detected : 0;
}

int aug_vector_paths(int enable)
{
    pthread_once(&cpu_once, cpu_init);
    int prev = simd_enabled;
    if (enable >= 0)
        simd_enabled = enable != 0;
    return prev;
}

#ifdef AUG_X86
/* One output row of nearest resampling in AVX2: offsets for 8 pixels (the same float
 * operations in the same order as NEAR_IDX_BODY, so the same bytes), a hardware
 * gather of 8 4-byte pixels, and a shuffle packing them to 24 bytes. The last
 * (hi - lo) % 8 pixels go through the portable code. */
__attribute__((target("avx2"))) static void near_row_avx2(const uint8_t *pad, uint8_t *row,
                                                           int lo, int hi, int proj,
                                                           const near_row_args *a)
{
    const __m256 u0 = _mm256_set1_ps(a->u0), du = _mm256_set1_ps(a->du);
    const __m256 v0 = _mm256_set1_ps(a->v0), dv = _mm256_set1_ps(a->dv);
    const __m256 q0 = _mm256_set1_ps(a->q0), dq = _mm256_set1_ps(a->dq);
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256i stride = _mm256_set1_epi32(a->stride), maxo = _mm256_set1_epi32(a->maxo);
    const __m256i zero = _mm256_setzero_si256(), step = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i pack = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1, 0,
                                          1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
    const __m256i join = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7);
    uint8_t *o = row + (size_t)lo * 3;
    int X = lo;
    for (; X + 8 <= hi; X += 8, o += 24) {
        __m256 fx = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_set1_epi32(X), step));
        __m256 sx = _mm256_add_ps(u0, _mm256_mul_ps(fx, du));
        __m256 sy = _mm256_add_ps(v0, _mm256_mul_ps(fx, dv));
        if (proj) {
            __m256 r = _mm256_div_ps(one, _mm256_add_ps(q0, _mm256_mul_ps(fx, dq)));
            sx = _mm256_mul_ps(sx, r);
            sy = _mm256_mul_ps(sy, r);
        }
        __m256i ix = _mm256_cvttps_epi32(sx), iy = _mm256_cvttps_epi32(sy);
        __m256i off = _mm256_add_epi32(_mm256_mullo_epi32(iy, stride),
                                       _mm256_add_epi32(ix, _mm256_add_epi32(ix, ix)));
        off = _mm256_min_epi32(_mm256_max_epi32(off, zero), maxo);
        __m256i px = _mm256_i32gather_epi32((const int *)(const void *)pad, off, 1);
        px = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(px, pack), join);
        _mm_storeu_si128((__m128i *)(void *)o, _mm256_castsi256_si128(px));
        _mm_storel_epi64((__m128i *)(void *)(o + 16), _mm256_extracti128_si256(px, 1));
    }
    if (X < hi) {
        int32_t idx[NB];
        if (proj)
            near_idx_proj(idx, X, hi, a);
        else
            near_idx_affine(idx, X, hi, a);
        for (int k = 0; k < hi - X; k++)
            memcpy(o + k * 3, pad + idx[k], 3);
    }
}
#endif

static void gather_row(const uint8_t *pad, const int32_t *idx, int n, uint8_t *out)
{
    int k = 0;
    for (; k < n - 1; k++) {
        uint32_t px;
        memcpy(&px, pad + idx[k], 4);
        memcpy(out + (size_t)k * 3, &px, 4);
    }
    if (n > 0)
        memcpy(out + (size_t)k * 3, pad + idx[k], 3);
}

/* Nearest resampling of img through P, which takes an output pixel index (X, Y, 1)
 * to a point of the padded image whose floor is the padded pixel index. */
static void warp_nearest(uint8_t *img, int h, int w, const double P[9], int proj,
                         aug_workspace *ws)
{
    pad_image(img, h, w, ws->pad);
    near_row_args a;
    a.stride = (w + 2) * 3;
    a.maxo = (h + 2) * a.stride - 3;
    a.du = (float)P[0];
    a.dv = (float)P[3];
    a.dq = (float)P[6];
    void (*fn)(int32_t *, int, int, const near_row_args *) =
        proj ? near_idx_proj : near_idx_affine;
    int level = simd();
    /* In-range columns, with half a pixel of margin around the exact limits
     * [1, w+1) x [1, h+1): the margin absorbs float rounding and what lies in it
     * reads the black border, which is what the exact limits would give. */
    span_ctx sc;
    span_init(&sc, P, 0.5, w + 1.5, h + 1.5);
    for (int Y = 0; Y < h; Y++) {
        uint8_t *row = img + (size_t)Y * w * 3;
        double u0 = P[1] * Y + P[2], v0 = P[4] * Y + P[5], q0 = P[7] * Y + P[8];
        int lo, hi;
        span_row(&sc, u0, v0, q0, w, &lo, &hi);
        if (lo >= hi) {
            memset(row, 0, (size_t)w * 3);
            continue;
        }
        a.u0 = (float)u0;
        a.v0 = (float)v0;
        a.q0 = (float)q0;
        memset(row, 0, (size_t)lo * 3);
#ifdef AUG_X86
        if (level >= 3)
            near_row_avx2(ws->pad, row, lo, hi, proj, &a);
        else
#endif
        {
            fn(ws->idx, lo, hi, &a);
            gather_row(ws->pad, ws->idx, hi - lo, row + (size_t)lo * 3);
        }
        memset(row + (size_t)hi * 3, 0, (size_t)(w - hi) * 3);
    }
}

/* Bilinear: per block of 8 pixels the offset of the top-left neighbour (clamped so
 * the 2x2 neighbourhood is inside the padded image) and 8-bit weights, vectorized
 * like the nearest offsets; then the blend, 3 channels of 4 taps in integers. */
typedef struct bil_row_args {
    float u0, du, v0, dv, q0, dq;
    int32_t stride, maxx, maxy;
} bil_row_args;

#define BIL_IDX_BODY(PROJ)                                                               \
    do {                                                                                 \
        const float u0 = a->u0, du = a->du, v0 = a->v0, dv = a->dv, q0 = a->q0,          \
                    dq = a->dq;                                                          \
        const int32_t stride = a->stride, maxx = a->maxx, maxy = a->maxy;                \
        int last = hi - 1;                                                               \
        for (int X = lo; X < hi; X += NB) {                                              \
            int32_t *restrict oo = off + (X - lo), *restrict ox = wx + (X - lo);         \
            int32_t *restrict oy = wy + (X - lo);                                        \
            for (int j = 0; j < NB; j++) {                                               \
                int xx = X + j < last ? X + j : last;                                    \
                float fx = (float)xx;                                                    \
                float tx = u0 + fx * du, ty = v0 + fx * dv;                              \
                if (PROJ) {                                                              \
                    float r = 1.0f / (q0 + fx * dq);                                     \
                    tx *= r;                                                             \
                    ty *= r;                                                             \
                }                                                                        \
                int32_t x0 = (int32_t)tx, y0 = (int32_t)ty;                              \
                int32_t kx = (int32_t)((tx - (float)x0) * 128.0f + 0.5f);                \
                int32_t ky = (int32_t)((ty - (float)y0) * 128.0f + 0.5f);                \
                x0 = x0 < 0 ? 0 : x0 > maxx ? maxx : x0;                                 \
                y0 = y0 < 0 ? 0 : y0 > maxy ? maxy : y0;                                 \
                oo[j] = y0 * stride + x0 * 3;                                            \
                ox[j] = kx < 0 ? 0 : kx > 128 ? 128 : kx;                                \
                oy[j] = ky < 0 ? 0 : ky > 128 ? 128 : ky;                                \
            }                                                                            \
        }                                                                                \
    } while (0)

static void bil_idx_affine(int32_t *restrict off, int32_t *restrict wx,
                           int32_t *restrict wy, int lo, int hi, const bil_row_args *a)
{
    BIL_IDX_BODY(0);
}

static void bil_idx_proj(int32_t *restrict off, int32_t *restrict wx,
                         int32_t *restrict wy, int lo, int hi, const bil_row_args *a)
{
    BIL_IDX_BODY(1);
}

/* The blend, in the integer steps the SSE2 version takes: 7-bit weights, the two
 * rows first (v <= 255 * 128 fits int16), then the two columns, each term
 * truncated as pmulhuw does, then rounded. */
static void bil_blend_scalar(const uint8_t *pad, int32_t stride, const int32_t *off,
                             const int32_t *wx, const int32_t *wy, int n, uint8_t *out)
{
    for (int k = 0; k < n; k++, out += 3) {
        const uint8_t *p = pad + off[k], *q = p + stride;
        int fx = wx[k], fy = wy[k], gx = 128 - fx, gy = 128 - fy;
        int v[6];
        for (int c = 0; c < 6; c++)
            v[c] = p[c] * gy + q[c] * fy;
        for (int c = 0; c < 3; c++)
            out[c] = (uint8_t)(((v[c] * gx >> 7) + (v[c + 3] * fx >> 7) + 64) >> 7);
    }
}

#ifdef AUG_X86
static void bil_blend_sse2(const uint8_t *pad, int32_t stride, const int32_t *off,
                           const int32_t *wx, const int32_t *wy, int n, uint8_t *out)
{
    const __m128i z = _mm_setzero_si128(), half = _mm_set1_epi16(64);
    /* 4-byte stores: all but the last pixel (its 4th byte is the next pixel's). */
    int k = 0;
    for (; k < n - 1; k++, out += 3) {
        const uint8_t *p = pad + off[k];
        __m128i a = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(const void *)p), z);
        __m128i b =
            _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(const void *)(p + stride)), z);
        __m128i v = _mm_add_epi16(_mm_mullo_epi16(a, _mm_set1_epi16((short)(128 - wy[k]))),
                                  _mm_mullo_epi16(b, _mm_set1_epi16((short)wy[k])));
        /* floor(v * g / 128) as the high half of (2v) * (g << 8): both fit 16 bits
         * unsigned, g = 128 included. */
        v = _mm_add_epi16(v, v);
        __m128i l = _mm_mulhi_epu16(v, _mm_set1_epi16((short)((128 - wx[k]) << 8)));
        __m128i r = _mm_mulhi_epu16(_mm_srli_si128(v, 6), _mm_set1_epi16((short)(wx[k] << 8)));
        __m128i o = _mm_srli_epi16(_mm_add_epi16(_mm_add_epi16(l, r), half), 7);
        uint32_t px = (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(o, o));
        memcpy(out, &px, 4);
    }
    if (k < n)
        bil_blend_scalar(pad, stride, off + k, wx + k, wy + k, n - k, out);
}
#endif

static void bil_blend_row(const uint8_t *pad, int32_t stride, const int32_t *off,
                          const int32_t *wx, const int32_t *wy, int n, uint8_t *out)
{
#ifdef AUG_X86
    if (simd() >= 1) {
        bil_blend_sse2(pad, stride, off, wx, wy, n, out);
        return;
    }
#endif
    bil_blend_scalar(pad, stride, off, wx, wy, n, out);
}

/* P takes an output pixel index to padded-image pixel-centre coordinates (padded
 * pixel k has its centre at k). */
static void warp_bilinear(uint8_t *img, int h, int w, const double P[9], int proj,
                          aug_workspace *ws)
{
    pad_image(img, h, w, ws->pad);
    bil_row_args a;
    a.stride = (w + 2) * 3;
    a.maxx = w;
    a.maxy = h;
    a.du = (float)P[0];
    a.dv = (float)P[3];
    a.dq = (float)P[6];
    /* Output is non-zero for t in (0, w + 1); within 1/512 of those ends the weight
     * rounds to 0 anyway, and that margin absorbs float rounding. */
    span_ctx sc;
    span_init(&sc, P, 1.0 / 512, w + 1 - 1.0 / 512, h + 1 - 1.0 / 512);
    int32_t *off = ws->idx, *wx = ws->idx + ws->w + 16, *wy = ws->idx + 2 * (ws->w + 16);
    for (int Y = 0; Y < h; Y++) {
        uint8_t *row = img + (size_t)Y * w * 3;
        double u0 = P[1] * Y + P[2], v0 = P[4] * Y + P[5], q0 = P[7] * Y + P[8];
        int lo, hi;
        span_row(&sc, u0, v0, q0, w, &lo, &hi);
        if (lo >= hi) {
            memset(row, 0, (size_t)w * 3);
            continue;
        }
        a.u0 = (float)u0;
        a.v0 = (float)v0;
        a.q0 = (float)q0;
        if (proj)
            bil_idx_proj(off, wx, wy, lo, hi, &a);
        else
            bil_idx_affine(off, wx, wy, lo, hi, &a);
        memset(row, 0, (size_t)lo * 3);
        bil_blend_row(ws->pad, a.stride, off, wx, wy, hi - lo, row + (size_t)lo * 3);
        memset(row + (size_t)hi * 3, 0, (size_t)(w - hi) * 3);
    }
}

static int near_equal(const double a[9], const double b[9])
{
    for (int i = 0; i < 9; i++)
        if (!(fabs(a[i] - b[i]) <= 1e-9 * (1 + fabs(b[i]))))
            return 0;
    return 1;
}

static void flip_lr_scalar(uint8_t *row, int w)
{
    uint8_t *a = row, *b = row + (size_t)(w - 1) * 3;
    for (; a < b; a += 3, b -= 3) {
        uint8_t t0 = a[0], t1 = a[1], t2 = a[2];
        a[0] = b[0];
        a[1] = b[1];
        a[2] = b[2];
        b[0] = t0;
        b[1] = t1;
        b[2] = t2;
    }
}

#ifdef AUG_X86
/* Mirror rows 16 pixels (48 bytes, 3 vectors) at a time: output byte k of a block
 * is input byte 3 * (15 - k / 3) + k % 3, gathered from at most 3 input vectors with
 * pshufb masks built once. Each row goes through a row buffer. */
__attribute__((target("ssse3"))) static void flip_lr_ssse3(uint8_t *img, int h, int w)
{
    uint8_t tmp[4096 * 3];
    __m128i m[3][3];
    for (int ov = 0; ov < 3; ov++)
        for (int iv = 0; iv < 3; iv++) {
            int8_t mk[16];
            for (int j = 0; j < 16; j++) {
                int k = ov * 16 + j, in = 3 * (15 - k / 3) + k % 3;
                mk[j] = (int8_t)(in / 16 == iv ? in % 16 : -128);
            }
            memcpy(&m[ov][iv], mk, 16);
        }
    int blocks = w / 16;
    size_t rb = (size_t)w * 3;
    for (int y = 0; y < h; y++) {
        uint8_t *row = img + (size_t)y * rb;
        /* Source block k (from the left) lands at output pixel w - 16 (k + 1). */
        for (int k = 0; k < blocks; k++) {
            const uint8_t *src = row + (size_t)k * 48;
            __m128i in[3];
            for (int iv = 0; iv < 3; iv++)
                in[iv] = _mm_loadu_si128((const __m128i *)(const void *)(src + 16 * iv));
            uint8_t *dst = tmp + (size_t)(w - 16 * (k + 1)) * 3;
            for (int ov = 0; ov < 3; ov++) {
                __m128i o = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(in[0], m[ov][0]),
                                                      _mm_shuffle_epi8(in[1], m[ov][1])),
                                         _mm_shuffle_epi8(in[2], m[ov][2]));
                _mm_storeu_si128((__m128i *)(void *)(dst + 16 * ov), o);
            }
        }
        for (int x = blocks * 16; x < w; x++)
            memcpy(tmp + (size_t)(w - 1 - x) * 3, row + (size_t)x * 3, 3);
        memcpy(row, tmp, rb);
    }
}
#endif

static void flip_lr(uint8_t *img, int h, int w)
{
#ifdef AUG_X86
    if (simd() >= 2 && w >= 16 && w <= 4096) {
        flip_lr_ssse3(img, h, w);
        return;
    }
#endif
    for (int y = 0; y < h; y++)
        flip_lr_scalar(img + (size_t)y * w * 3, w);
}

static void flip_ud(uint8_t *img, int h, int w)
{
    size_t rb = (size_t)w * 3;
    uint8_t tmp[512];
    for (int y = 0; y < h / 2; y++) {
        uint8_t *a = img + (size_t)y * rb, *b = img + (size_t)(h - 1 - y) * rb;
        for (size_t off = 0; off < rb; off += sizeof tmp) {
            size_t n = rb - off < sizeof tmp ? rb - off : sizeof tmp;
            memcpy(tmp, a + off, n);
            memcpy(a + off, b + off, n);
            memcpy(b + off, tmp, n);
        }
    }
}

void aug_flip(uint8_t *img, int h, int w, int lr, int ud)
{
    if (!img || h <= 0 || w <= 0)
        return;
    if (lr)
        flip_lr(img, h, w);
    if (ud)
        flip_ud(img, h, w);
}

/* Resample through C (output point -> source point, edge coordinates). */
static void warp_matrix(uint8_t *img, int h, int w, const double Cin[9], int interp,
                        aug_workspace *ws)
{
    double C[9];
    memcpy(C, Cin, sizeof C);
    /* Scale so the homogeneous weight q at the output centre is 1 (and positive):
     * the kernels treat q below 1% of that as beyond the horizon. Should the centre
     * itself be on the horizon, the corner with the largest |q| sets the scale. */
    double qc = C[6] * w * 0.5 + C[7] * h * 0.5 + C[8];
    if (!(fabs(qc) > 1e-12 * (fabs(C[6]) * w + fabs(C[7]) * h + fabs(C[8])))) {
        qc = 0;
        for (int k = 0; k < 4; k++) {
            double q = C[6] * (k & 1 ? w : 0) + C[7] * (k & 2 ? h : 0) + C[8];
            qc = fabs(q) > fabs(qc) ? q : qc;
        }
        if (qc == 0) {
            memset(img, 0, (size_t)h * w * 3);
            return;
        }
    }
    for (int i = 0; i < 9; i++)
        C[i] /= qc;
    double id[9], lr[9], ud[9], both[9];
    m3_identity(id);
    m3_identity(lr);
    lr[0] = -1;
    lr[2] = w;
    m3_identity(ud);
    ud[4] = -1;
    ud[5] = h;
    m3_mul(lr, ud, both);
    /* Exact pixel permutations skip the resampling (and bilinear's half-pixel blur
     * would not happen for them either: the centres land on centres). */
    if (near_equal(C, id))
        return;
    if (near_equal(C, lr) || near_equal(C, ud) || near_equal(C, both)) {
        aug_flip(img, h, w, C[0] < 0, C[4] < 0);
        return;
    }
    int proj = !(C[6] == 0 && C[7] == 0);
    double pre[9], post[9], P[9];
    /* Output index X -> centre X + 0.5. */
    m3_translate(pre, 0.5, 0.5);
    /* Source point -> padded coordinates: +1 for the border, and for bilinear -0.5
     * to move from edge to centre coordinates. */
    if (interp == AUG_BILINEAR)
        m3_translate(post, 0.5, 0.5);
    else
        m3_translate(post, 1, 1);
    m3_mul(post, C, P);
    m3_mul(P, pre, P);
    if (interp == AUG_BILINEAR)
        warp_bilinear(img, h, w, P, proj, ws);
    else
        warp_nearest(img, h, w, P, proj, ws);
}

int aug_warp(uint8_t *img, int h, int w, const double m[9], int interp, aug_workspace *ws)
{
    if (!img || !m || !ws_fits(ws, h, w) || (interp != AUG_NEAREST && interp != AUG_BILINEAR))
        return PT_EUSAGE;
    for (int i = 0; i < 9; i++)
        if (!isfinite(m[i]))
            return PT_EUSAGE;
    warp_matrix(img, h, w, m, interp, ws);
    return PT_OK;
}

/* ===================================================================================
 * Geometric ops: perspective, affine, crop, flip
 * =================================================================================== */

void aug_perspective_reorder(const aug_point in[4], int shift, int reflection,
                             aug_point out[4])
{
    static const int refl[3][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 0, 3, 2}};
    aug_point t[4];
    int s = ((shift % 4) + 4) % 4;
    int r = reflection >= 0 && reflection < 3 ? reflection : 0;
    for (int j = 0; j < 4; j++)
        t[j] = in[(j + s) % 4];
    for (int j = 0; j < 4; j++)
        out[j] = t[refl[r][j]];
}

static int draw_offset(rng *r, int s)
{
    return s > 0 ? rng_int(r, -s, s) : 0;
}

void aug_perspective_random(rng *r, int h, int w, double jitter, int rot90, int reflect,
                            aug_point out[4])
{
    int sy = (int)floor(jitter * h), sx = (int)floor(jitter * w);
    /* Draw order of the notebook: y1, x1, y2, x2, y3, x3, y4, x4. */
    aug_point p[4];
    p[0].y = draw_offset(r, sy);
    p[0].x = draw_offset(r, sx);
    p[1].y = draw_offset(r, sy);
    p[1].x = w + draw_offset(r, sx);
    p[2].y = h + draw_offset(r, sy);
    p[2].x = w + draw_offset(r, sx);
    p[3].y = h + draw_offset(r, sy);
    p[3].x = draw_offset(r, sx);
    int shift = rot90 ? rng_int(r, 0, 4) : 0;
    int refl = reflect ? rng_int(r, 0, 3) : 0;
    aug_perspective_reorder(p, shift, refl, out);
}

int aug_perspective_points(uint8_t *img, int h, int w, const aug_point tgt[4], int interp,
                           aug_workspace *ws)
{
    double m[9];
    if (!tgt || !perspective_matrix(h, w, tgt, m))
        return PT_EUSAGE;
    return aug_warp(img, h, w, m, interp, ws);
}

void aug_affine_matrix(int h, int w, const aug_affine_params *p, double m[9])
{
    double cx = w * 0.5, cy = h * 0.5;
    double th = p->rot * PI / 180, sh = p->shear * PI / 180;
    double c = cos(th), s = sin(th), t = tan(sh);
    /* Forward map about the centre: translate(centre + shift) . rotate . shear .
     * zoom . translate(-centre). Rotation is counter-clockwise on screen (y down). */
    double f[9], a[9];
    m3_translate(f, -cx, -cy);
    double z[9] = {p->zoom_x, 0, 0, 0, p->zoom_y, 0, 0, 0, 1};
    double shm[9] = {1, t, 0, 0, 1, 0, 0, 0, 1};
    double rot[9] = {c, s, 0, -s, c, 0, 0, 0, 1};
    m3_mul(z, f, f);
    m3_mul(shm, f, f);
    m3_mul(rot, f, f);
    m3_translate(a, cx + p->shift_x, cy + p->shift_y);
    m3_mul(a, f, f);
    if (!m3_inv(f, m))
        m3_identity(m);
}

int aug_affine(uint8_t *img, int h, int w, const aug_affine_params *p, int interp,
               aug_workspace *ws)
{
    if (!p || !(p->zoom_x > 0) || !(p->zoom_y > 0))
        return PT_EUSAGE;
    double m[9];
    aug_affine_matrix(h, w, p, m);
    return aug_warp(img, h, w, m, interp, ws);
}

/* The random output -> source matrix of one geometric op; 0 when it is a no-op. */
static int geom_matrix(const aug_op *op, rng *r, int h, int w, double m[9])
{
    switch (op->id) {
    case OP_FLIP: {
        /* axis h, v, or hv: left-right, up-down or both, a third each. */
        int axis = (int)op->p[0], pick = axis == 2 ? rng_int(r, 0, 3) : axis;
        int lr = pick != 1, ud = pick != 0;
        m3_identity(m);
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
    case OP_PERSPECTIVE: {
        aug_point t[4];
        aug_perspective_random(r, h, w, op->p[0], op->p[1] != 0, op->p[2] != 0, t);
        return perspective_matrix(h, w, t, m);
    }
    case OP_AFFINE: {
        aug_affine_params a;
        a.rot = rng_uniform(r, (float)-op->p[0], (float)op->p[0]);
        a.shear = rng_uniform(r, (float)-op->p[1], (float)op->p[1]);
        a.zoom_x = a.zoom_y = rng_uniform(r, (float)(1 - op->p[2]), (float)(1 + op->p[2]));
        a.shift_x = rng_uniform(r, (float)-op->p[3], (float)op->p[3]) * w;
        a.shift_y = rng_uniform(r, (float)-op->p[3], (float)op->p[3]) * h;
        aug_affine_matrix(h, w, &a, m);
        return 1;
    }
    case OP_CROP: {
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
    case OP_PERSPECTIVE:
        return (int)op->p[3];
    case OP_AFFINE:
        return (int)op->p[4];
    case OP_CROP:
        return (int)op->p[2];
    }
    return AUG_NEAREST;
}

/* ===================================================================================
 * Colour
 * =================================================================================== */

/* x -> A x + o on RGB values in [0, 255]. */
typedef struct color_map {
    double a[9];
    double o[3];
} color_map;

static void cm_identity(color_map *c)
{
    m3_identity(c->a);
    c->o[0] = c->o[1] = c->o[2] = 0;
}

/* c <- (M x + b) after c. */
static void cm_then(color_map *c, const double m[9], const double b[3])
{
    double a[9], o[3];
    m3_mul(m, c->a, a);
    for (int r = 0; r < 3; r++)
        o[r] = m[r * 3] * c->o[0] + m[r * 3 + 1] * c->o[1] + m[r * 3 + 2] * c->o[2] + b[r];
    memcpy(c->a, a, sizeof a);
    memcpy(c->o, o, sizeof o);
}

static void cm_brightness(color_map *c, double delta)
{
    double m[9], b[3] = {delta * 255, delta * 255, delta * 255};
    m3_identity(m);
    cm_then(c, m, b);
}

/* Contrast around `mean`, the mean level of the image the op sees. */
static void cm_contrast(color_map *c, double f, double mean)
{
    double m[9] = {f, 0, 0, 0, f, 0, 0, 0, f};
    double k = (1 - f) * mean, b[3] = {k, k, k};
    cm_then(c, m, b);
}

static void cm_saturation(color_map *c, double s)
{
    static const double luma[3] = {0.299, 0.587, 0.114};
    double m[9], b[3] = {0, 0, 0};
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            m[r * 3 + k] = (r == k ? s : 0) + (1 - s) * luma[k];
    cm_then(c, m, b);
}

/* The SVG/CSS hue-rotate matrix: a rotation around the grey axis that keeps greys. */
static void cm_hue(color_map *c, double deg)
{
    double t = deg * PI / 180, cs = cos(t), sn = sin(t);
    double m[9] = {0.213 + cs * 0.787 - sn * 0.213, 0.715 - cs * 0.715 - sn * 0.715,
                   0.072 - cs * 0.072 + sn * 0.928, 0.213 - cs * 0.213 + sn * 0.143,
                   0.715 + cs * 0.285 + sn * 0.140, 0.072 - cs * 0.072 - sn * 0.283,
                   0.213 - cs * 0.213 - sn * 0.787, 0.715 - cs * 0.715 + sn * 0.715,
                   0.072 + cs * 0.928 + sn * 0.072};
    double b[3] = {0, 0, 0};
    cm_then(c, m, b);
}

static int cm_is_identity(const color_map *c)
{
    double id[9];
    m3_identity(id);
    for (int i = 0; i < 9; i++)
        if (fabs(c->a[i] - id[i]) > 1e-6)
            return 0;
    return fabs(c->o[0]) < 1e-4 && fabs(c->o[1]) < 1e-4 && fabs(c->o[2]) < 1e-4;
}

/* Channel sums of nblocks 48-byte blocks (16 pixels) into 48 lane totals: uint16
 * lanes for up to 256 blocks at a time (255 * 256 < 65536), a fixed-trip inner loop
 * the compiler vectorizes, then widened. */
#define LANE_SUM_BODY                                                                    \
    do {                                                                                 \
        while (nblocks > 0) {                                                            \
            size_t chunk = nblocks < 256 ? nblocks : 256;                                \
            uint16_t acc[48] = {0};                                                      \
            for (size_t b = 0; b < chunk; b++, p += 48)                                  \
                for (int j = 0; j < 48; j++)                                             \
                    acc[j] = (uint16_t)(acc[j] + p[j]);                                  \
            for (int j = 0; j < 48; j++)                                                 \
                tot[j] += acc[j];                                                        \
            nblocks -= chunk;                                                            \
        }                                                                                \
    } while (0)

static void lane_sums(const uint8_t *p, size_t nblocks, uint64_t tot[48])
{
    LANE_SUM_BODY;
}

#ifdef AUG_X86
/* The same in AVX2 intrinsics: the compiler keeps the C version's 48 counters in
 * memory. Three registers of 16 uint16 counters, lane j of register c counting
 * byte 16 c + j of each block. */
__attribute__((target("avx2"))) static void lane_sums_avx2(const uint8_t *p, size_t nblocks,
                                                            uint64_t tot[48])
{
    while (nblocks > 0) {
        size_t chunk = nblocks < 256 ? nblocks : 256;
        __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0;
        for (size_t b = 0; b < chunk; b++, p += 48) {
            a0 = _mm256_add_epi16(a0, _mm256_cvtepu8_epi16(
                                          _mm_loadu_si128((const __m128i *)(const void *)p)));
            a1 = _mm256_add_epi16(a1, _mm256_cvtepu8_epi16(_mm_loadu_si128(
                                          (const __m128i *)(const void *)(p + 16))));
            a2 = _mm256_add_epi16(a2, _mm256_cvtepu8_epi16(_mm_loadu_si128(
                                          (const __m128i *)(const void *)(p + 32))));
        }
        uint16_t lanes[48];
        _mm256_storeu_si256((__m256i *)(void *)lanes, a0);
        _mm256_storeu_si256((__m256i *)(void *)(lanes + 16), a1);
        _mm256_storeu_si256((__m256i *)(void *)(lanes + 32), a2);
        for (int j = 0; j < 48; j++)
            tot[j] += lanes[j];
        nblocks -= chunk;
    }
}
#endif

/* Per-channel means of an image. */
static void channel_means(const uint8_t *img, int h, int w, double mean[3])
{
    size_t n = (size_t)h * w * 3, nb = n / 48;
    uint64_t tot[48] = {0}, sum[3] = {0, 0, 0};
#ifdef AUG_X86
    if (simd() >= 3)
        lane_sums_avx2(img, nb, tot);
    else
#endif
        lane_sums(img, nb, tot);
    for (int j = 0; j < 48; j++)
        sum[j % 3] += tot[j];
    for (size_t i = nb * 48; i < n; i++)
        sum[i % 3] += img[i];
    for (int c = 0; c < 3; c++)
        mean[c] = (double)sum[c] / ((double)h * w);
}

/* Fixed point: every term is floor((v << 7) * c13 / 2^16) = floor(v * c13 / 512),
 * i.e. v * coef in 1/16 units with coef in 13 fractional bits; the offset is in 1/16
 * units too, with the rounding half added. This is exactly what SSE2's pmulhw
 * computes, so the scalar and vector paths give the same bytes. */
typedef struct color_fixed {
    int32_t c13[9];
    int32_t o4[3];
    int fits16; /* every partial sum fits in int16: the vector path may run */
} color_fixed;

static void cm_fix(const color_map *c, color_fixed *f)
{
    f->fits16 = 1;
    for (int r = 0; r < 3; r++) {
        double bound = 0;
        for (int k = 0; k < 3; k++) {
            double v = floor(c->a[r * 3 + k] * 8192 + 0.5);
            if (v > 1e6)
                v = 1e6;
            if (v < -1e6)
                v = -1e6;
            f->c13[r * 3 + k] = (int32_t)v;
            if (fabs(v) > 32767)
                f->fits16 = 0;
            bound += fabs(v) * 255 / 512 + 1;
        }
        double o = floor(c->o[r] * 16 + 0.5) + 8;
        if (o > 1e6)
            o = 1e6;
        if (o < -1e6)
            o = -1e6;
        f->o4[r] = (int32_t)o;
        bound += fabs(o);
        if (bound > 32000)
            f->fits16 = 0;
    }
}

static inline int32_t mulhi16(int32_t a, int32_t b)
{
    int64_t p = (int64_t)a * b;
    return (int32_t)(p >= 0 ? p >> 16 : -((-p + 65535) >> 16));
}

static void color_pixels_scalar(uint8_t *p, size_t npx, const color_fixed *f)
{
    for (size_t i = 0; i < npx; i++, p += 3) {
        int32_t v[3] = {(int32_t)p[0] << 7, (int32_t)p[1] << 7, (int32_t)p[2] << 7};
        for (int r = 0; r < 3; r++) {
            int32_t acc = f->o4[r] + mulhi16(v[0], f->c13[r * 3]) +
                          mulhi16(v[1], f->c13[r * 3 + 1]) + mulhi16(v[2], f->c13[r * 3 + 2]);
            acc = acc < 0 ? 0 : acc >> 4;
            p[r] = (uint8_t)(acc > 255 ? 255 : acc);
        }
    }
}

#ifdef AUG_X86
/* The colour matrix on interleaved RGB, 8 output bytes per 128-bit lane: a lane
 * loads the 16 bytes from 2 before its first output byte, and three pshufb masks
 * give each 16-bit lane the R, G and B of its own pixel (zero-extended); then
 * 3 multiplies by that lane's coefficients, exactly the scalar code's steps. A
 * 48-byte group (16 pixels) is 6 lanes, so the masks and coefficients of lane L
 * are the same in every group. */
typedef struct color_lanes {
    uint8_t mask[6][3][16];
    int16_t coef[6][3][8];
    int16_t off[6][8];
} color_lanes;

static void color_lanes_init(const color_fixed *f, color_lanes *t)
{
    for (int L = 0; L < 6; L++)
        for (int j = 0; j < 8; j++) {
            int b = 8 * L + j, ch = b % 3;
            for (int q = 0; q < 3; q++) {
                t->mask[L][q][2 * j] = (uint8_t)(j + 2 - ch + q);
                t->mask[L][q][2 * j + 1] = 0x80;
                t->coef[L][q][j] = (int16_t)f->c13[ch * 3 + q];
            }
            t->off[L][j] = (int16_t)f->o4[ch];
        }
}

/* In place on 48-byte groups: every load of a group comes before its stores, and
 * the loads reach 2 bytes before and 6 after the group (never used, but read),
 * hence the caller keeps the first and last group for the scalar code. */
__attribute__((target("ssse3"))) static void color_groups_ssse3(uint8_t *p, size_t ngroups,
                                                                 const color_lanes *t)
{
    __m128i m[6][3], c[6][3], o[6];
    for (int L = 0; L < 6; L++) {
        for (int q = 0; q < 3; q++) {
            m[L][q] = _mm_loadu_si128((const __m128i *)(const void *)t->mask[L][q]);
            c[L][q] = _mm_loadu_si128((const __m128i *)(const void *)t->coef[L][q]);
        }
        o[L] = _mm_loadu_si128((const __m128i *)(const void *)t->off[L]);
    }
    for (size_t g = 0; g < ngroups; g++, p += 48) {
        __m128i r[6];
        for (int L = 0; L < 6; L++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 8 * L - 2));
            __m128i acc = o[L];
            for (int q = 0; q < 3; q++) {
                __m128i x = _mm_slli_epi16(_mm_shuffle_epi8(v, m[L][q]), 7);
                acc = _mm_add_epi16(acc, _mm_mulhi_epi16(x, c[L][q]));
            }
            r[L] = _mm_srai_epi16(acc, 4);
        }
        for (int k = 0; k < 3; k++)
            _mm_storeu_si128((__m128i *)(void *)(p + 16 * k),
                             _mm_packus_epi16(r[2 * k], r[2 * k + 1]));
    }
}

/* The same with two lanes per 256-bit register (lanes 2k and 2k + 1). */
__attribute__((target("avx2"))) static void color_groups_avx2(uint8_t *p, size_t ngroups,
                                                               const color_lanes *t)
{
    __m256i m[3][3], c[3][3], o[3];
    for (int k = 0; k < 3; k++) {
        for (int q = 0; q < 3; q++) {
            m[k][q] = _mm256_loadu2_m128i((const __m128i *)(const void *)t->mask[2 * k + 1][q],
                                          (const __m128i *)(const void *)t->mask[2 * k][q]);
            c[k][q] = _mm256_loadu2_m128i((const __m128i *)(const void *)t->coef[2 * k + 1][q],
                                          (const __m128i *)(const void *)t->coef[2 * k][q]);
        }
        o[k] = _mm256_loadu2_m128i((const __m128i *)(const void *)t->off[2 * k + 1],
                                   (const __m128i *)(const void *)t->off[2 * k]);
    }
    /* Written out: -O2 does not unroll these short loops, and the loop version
     * keeps the partial results in memory. */
#define COLOR_TERM256(k, q)                                                              \
    acc = _mm256_add_epi16(                                                              \
        acc, _mm256_mulhi_epi16(_mm256_slli_epi16(_mm256_shuffle_epi8(v, m[k][q]), 7), c[k][q]))
#define COLOR_LANES256(k)                                                                \
    do {                                                                                 \
        __m256i v = _mm256_loadu2_m128i((const __m128i *)(const void *)(p + 16 * (k) + 6),  \
                                        (const __m128i *)(const void *)(p + 16 * (k) - 2)); \
        __m256i acc = o[k];                                                              \
        COLOR_TERM256(k, 0);                                                             \
        COLOR_TERM256(k, 1);                                                             \
        COLOR_TERM256(k, 2);                                                             \
        r##k = _mm256_srai_epi16(acc, 4);                                                \
    } while (0)
    for (size_t g = 0; g < ngroups; g++, p += 48) {
        __m256i r0, r1, r2;
        COLOR_LANES256(0);
        COLOR_LANES256(1);
        COLOR_LANES256(2);
        __m256i r[3] = {r0, r1, r2};
        /* packus works within 128-bit halves: (r0, r1) gives lanes 0, 2, 1, 3. */
        __m256i p01 = _mm256_permute4x64_epi64(_mm256_packus_epi16(r[0], r[1]), 0xD8);
        __m256i p22 = _mm256_permute4x64_epi64(_mm256_packus_epi16(r[2], r[2]), 0xD8);
        _mm256_storeu_si256((__m256i *)(void *)p, p01);
        _mm_storeu_si128((__m128i *)(void *)(p + 32), _mm256_castsi256_si128(p22));
    }
#undef COLOR_LANES256
#undef COLOR_TERM256
}
#endif

/* Apply a colour map to n pixels. */
static void color_apply(uint8_t *img, size_t npx, const color_map *c)
{
    color_fixed f;
    cm_fix(c, &f);
#ifdef AUG_X86
    size_t groups = npx / 16;
    int level = simd();
    if (f.fits16 && groups >= 3 && level >= 2) {
        color_lanes t;
        color_lanes_init(&f, &t);
        color_pixels_scalar(img, 16, &f);
        if (level >= 3)
            color_groups_avx2(img + 48, groups - 2, &t);
        else
            color_groups_ssse3(img + 48, groups - 2, &t);
        color_pixels_scalar(img + (groups - 1) * 48, npx - (groups - 1) * 16, &f);
        return;
    }
#endif
    color_pixels_scalar(img, npx, &f);
}

int aug_color(uint8_t *img, int h, int w, double brightness, double contrast,
              double saturation, double hue_deg)
{
    if (!img || h <= 0 || w <= 0 || !isfinite(brightness) || !isfinite(contrast) ||
        !isfinite(saturation) || !isfinite(hue_deg))
        return PT_EUSAGE;
    color_map c;
    cm_identity(&c);
    cm_brightness(&c, brightness);
    if (contrast != 1) {
        double mean[3];
        channel_means(img, h, w, mean);
        /* The mean the contrast op sees is that of the brightened image. */
        double lvl = (mean[0] + mean[1] + mean[2]) / 3 + brightness * 255;
        cm_contrast(&c, contrast, lvl);
    }
    cm_saturation(&c, saturation);
    cm_hue(&c, hue_deg);
    if (!cm_is_identity(&c))
        color_apply(img, (size_t)h * w, &c);
    return PT_OK;
}

/* ===================================================================================
 * Cutout, GridMask
 * =================================================================================== */

void aug_cutout(uint8_t *img, int h, int w, int x0, int y0, int x1, int y1)
{
    if (!img)
        return;
    x0 = x0 < 0 ? 0 : x0;
    y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > w ? w : x1;
    y1 = y1 > h ? h : y1;
    if (x0 >= x1 || y0 >= y1)
        return;
    for (int y = y0; y < y1; y++)
        memset(img + ((size_t)y * w + x0) * 3, 0, (size_t)(x1 - x0) * 3);
}

static int64_t floor_mod64(int64_t a, int64_t m)
{
    int64_t r = a % m;
    return r < 0 ? r + m : r;
}

/* Runs of a row where one grid coordinate is in the dropped part of its period:
 * m(X) = (m0 + X * dm) mod D >= K, in 16.16 fixed point with |dm| < D. Instead of
 * testing every pixel, each step jumps to where m next crosses K or wraps around:
 * a few steps per period, and exactly the pixels a per-pixel test would pick. */
typedef struct grid_runs {
    int64_t m, dm, D, K;
    int x, w;
} grid_runs;

/* Next run [*a, *b) with m >= K; 0 when the row is done. */
static int grid_next(grid_runs *g, int *a, int *b)
{
    while (g->x < g->w) {
        int in = g->m >= g->K;
        int64_t n;
        if (g->dm == 0) {
            n = g->w - g->x;
        } else if (g->dm > 0) {
            int64_t target = in ? g->D : g->K;
            n = (target - g->m + g->dm - 1) / g->dm;
        } else {
            int64_t floor_ = in ? g->K : 0;
            n = (g->m - floor_) / -g->dm + 1;
        }
        if (n > g->w - g->x)
            n = g->w - g->x;
        int start = g->x;
        g->x += (int)n;
        g->m += n * g->dm;
        g->m = g->m >= g->D ? g->m - g->D : g->m < 0 ? g->m + g->D : g->m;
        if (in) {
            *a = start;
            *b = g->x;
            return 1;
        }
    }
    return 0;
}

int aug_gridmask(uint8_t *img, int h, int w, int d, int keep, int ox, int oy,
                 double angle_deg)
{
    if (!img || h <= 0 || w <= 0 || d < 2 || keep < 0 || !isfinite(angle_deg))
        return PT_EUSAGE;
    if (keep >= d)
        return PT_OK;
    /* Grid coordinates (u, v) of the pixel centre: rotate about the image centre,
     * then offset. A pixel is black where both are in the dropped part of their
     * period; along a row both advance linearly, so the black pixels are the
     * intersections of two lists of runs. */
    double t = -angle_deg * PI / 180, c = cos(t), s = sin(t);
    double cx = w * 0.5, cy = h * 0.5;
    const int64_t one = 65536, D = (int64_t)d * one, K = (int64_t)keep * one;
    int64_t du = (int64_t)floor(c * one + 0.5), dv = (int64_t)floor(-s * one + 0.5);
    for (int y = 0; y < h; y++) {
        double dx = 0.5 - cx, dy = y + 0.5 - cy;
        double u = c * dx + s * dy + cx + ox, v = -s * dx + c * dy + cy + oy;
        grid_runs gu = {floor_mod64((int64_t)floor(u * one + 0.5), D), du, D, K, 0, w};
        grid_runs gv = {floor_mod64((int64_t)floor(v * one + 0.5), D), dv, D, K, 0, w};
        uint8_t *row = img + (size_t)y * w * 3;
        int ua, ub, va, vb;
        int hu = grid_next(&gu, &ua, &ub), hv = grid_next(&gv, &va, &vb);
        while (hu && hv) {
            int a0 = ua > va ? ua : va, a1 = ub < vb ? ub : vb;
            if (a0 < a1)
                memset(row + (size_t)a0 * 3, 0, (size_t)(a1 - a0) * 3);
            if (ub < vb)
                hu = grid_next(&gu, &ua, &ub);
            else
                hv = grid_next(&gv, &va, &vb);
        }
    }
    return PT_OK;
}

/* ===================================================================================
 * MixUp, CutMix
 * =================================================================================== */

float aug_mixup_pixels(uint8_t *out, const uint8_t *a, const uint8_t *b, size_t nbytes,
                       double lambda)
{
    if (!(lambda >= 0))
        lambda = 0;
    if (lambda > 1)
        lambda = 1;
    int wa = (int)floor(lambda * 256 + 0.5), wb = 256 - wa;
    size_t i = 0;
    /* Fixed-trip blocks into a local buffer (out may be a): the compiler vectorizes
     * them, in 16-bit lanes since a * wa + b * wb + 128 <= 65408. */
    for (; i + 32 <= nbytes; i += 32) {
        uint8_t t[32];
        for (int j = 0; j < 32; j++)
            t[j] = (uint8_t)((uint16_t)(a[i + j] * wa + b[i + j] * wb + 128) >> 8);
        memcpy(out + i, t, 32);
    }
    for (; i < nbytes; i++)
        out[i] = (uint8_t)((a[i] * wa + b[i] * wb + 128) >> 8);
    return (float)wa / 256.0f;
}

float aug_cutmix_pixels(uint8_t *dst, const uint8_t *src, int h, int w, int x0, int y0,
                        int x1, int y1)
{
    x0 = x0 < 0 ? 0 : x0;
    y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > w ? w : x1;
    y1 = y1 > h ? h : y1;
    if (x0 >= x1 || y0 >= y1)
        return 1.0f;
    for (int y = y0; y < y1; y++) {
        size_t off = ((size_t)y * w + x0) * 3;
        memcpy(dst + off, src + off, (size_t)(x1 - x0) * 3);
    }
    double area = (double)(x1 - x0) * (y1 - y0);
    return (float)(1.0 - area / ((double)h * w));
}

/* Gamma(alpha) by Marsaglia and Tsang (alpha < 1 through alpha + 1). */
static double gamma_draw(rng *r, double alpha)
{
    double boost = 1;
    if (alpha < 1) {
        double u = rng_double(r);
        boost = pow(u > 0 ? u : 1e-300, 1 / alpha);
        alpha += 1;
    }
    double d = alpha - 1.0 / 3, c = 1 / sqrt(9 * d);
    for (;;) {
        double x = rng_normal(r), v = 1 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        double u = rng_double(r);
        if (u < 1 - 0.0331 * x * x * x * x || log(u > 0 ? u : 1e-300) < 0.5 * x * x + d * (1 - v + log(v)))
            return d * v * boost;
    }
}

static double beta_draw(rng *r, double alpha)
{
    if (alpha == 1)
        return rng_double(r);
    double a = gamma_draw(r, alpha), b = gamma_draw(r, alpha);
    return a + b > 0 ? a / (a + b) : 0.5;
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
    color_map color;
    int color_pending;
} img_state;

static void flush_geom(img_state *s, aug_workspace *ws)
{
    if (!s->geom_pending)
        return;
    warp_matrix(s->img, s->h, s->w, s->geom, s->bilinear ? AUG_BILINEAR : AUG_NEAREST, ws);
    m3_identity(s->geom);
    s->geom_pending = 0;
    s->bilinear = 0;
}

static void flush_color(img_state *s)
{
    if (!s->color_pending)
        return;
    if (!cm_is_identity(&s->color))
        color_apply(s->img, (size_t)s->h * s->w, &s->color);
    cm_identity(&s->color);
    s->color_pending = 0;
}

/* The mean level of the image as the pending colour map would leave it. */
static double pending_mean(img_state *s)
{
    double m[3];
    channel_means(s->img, s->h, s->w, m);
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
    case OP_COLOR:
        /* Always the same order, each part drawn whether or not it is zero, so a
         * parameter change does not shift the other parts' draws. */
        cm_brightness(&s->color, rng_uniform(r, (float)-op->p[0], (float)op->p[0]));
        f = rng_uniform(r, (float)(1 - op->p[1]), (float)(1 + op->p[1]));
        if (f != 1)
            cm_contrast(&s->color, f, pending_mean(s));
        cm_saturation(&s->color, rng_uniform(r, (float)(1 - op->p[2]), (float)(1 + op->p[2])));
        cm_hue(&s->color, rng_uniform(r, (float)-op->p[3], (float)op->p[3]));
        break;
    case OP_BRIGHTNESS:
        cm_brightness(&s->color, rng_uniform(r, (float)-op->p[0], (float)op->p[0]));
        break;
    case OP_CONTRAST:
        f = rng_uniform(r, (float)(1 - op->p[0]), (float)(1 + op->p[0]));
        if (f != 1)
            cm_contrast(&s->color, f, pending_mean(s));
        break;
    case OP_SATURATION:
        cm_saturation(&s->color, rng_uniform(r, (float)(1 - op->p[0]), (float)(1 + op->p[0])));
        break;
    case OP_HUE:
        cm_hue(&s->color, rng_uniform(r, (float)-op->p[0], (float)op->p[0]));
        break;
    }
    s->color_pending = 1;
}

static void pixel_op(const aug_op *op, rng *r, img_state *s)
{
    int h = s->h, w = s->w;
    if (op->id == OP_CUTOUT) {
        int ch = (int)floor(op->p[0] * h + 0.5), cw = (int)floor(op->p[0] * w + 0.5);
        for (int k = 0; k < (int)op->p[1]; k++) {
            int cy = rng_int(r, 0, h), cx = rng_int(r, 0, w);
            aug_cutout(s->img, h, w, cx - cw / 2, cy - ch / 2, cx - cw / 2 + cw,
                       cy - ch / 2 + ch);
        }
    } else if (op->id == OP_GRIDMASK) {
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
    m3_identity(s.geom);
    s.geom_pending = s.bilinear = 0;
    cm_identity(&s.color);
    s.color_pending = 0;
    for (int k = k0; k < k1; k++) {
        const aug_op *op = &c->op[k];
        rng r;
        rng_derive(&r, seed, b->seq, stream_id(k, i));
        if (!(rng_double(&r) < op->prob))
            continue;
        switch (ops[op->id].kind) {
        case K_GEOM: {
            double m[9];
            flush_color(&s);
            if (geom_matrix(op, &r, s.h, s.w, m)) {
                m3_mul(s.geom, m, s.geom);
                s.geom_pending = 1;
                s.bilinear |= geom_interp(op) == AUG_BILINEAR;
            }
            break;
        }
        case K_COLOR:
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
            double lam = beta_draw(&r, op->p[0]);
            const uint8_t *partner = ws->mixbuf + (size_t)slot[j] * isz;
            uint8_t *img = batch_image(b, i);
            float own;
            if (op->id == OP_MIXUP) {
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

int aug_apply(const aug_chain *c, batch *b, uint64_t seed, aug_workspace *ws)
{
    if (!b)
        return PT_EUSAGE;
    if (!c || c->n == 0 || b->n <= 0)
        return PT_OK;
    if (!ws_fits(ws, b->h, b->w) || b->n > ws->max_n || b->n > b->cap)
        return PT_EUSAGE;
    int k = 0;
    while (k < c->n) {
        if (ops[c->op[k].id].kind == K_MIX) {
            int rc = apply_mix(c, k, b, seed, ws);
            if (rc != PT_OK)
                return rc;
            k++;
            continue;
        }
        int end = k;
        while (end < c->n && ops[c->op[end].id].kind != K_MIX)
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
