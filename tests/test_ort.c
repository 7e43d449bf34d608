/* ONNX Runtime, someone else's runtime, runs what `petal-tui export` writes and must
 * answer as petal-tui does (issue 28, "Checked by someone else's runtime").
 *
 * onnxruntime_committed_fixtures (a bare clone, no node): the committed export
 * fixtures tests/data/export/NAME.onnx, opened as predict opens them (rm_open) and fed
 * the committed pixels NAME.input.f32 through predict itself (as PNG files) and
 * through the imported net, give the outputs ONNX Runtime gave on the same pixels
 * (NAME.ort.logits.f32, NAME.ort.probabilities.f32: tests/data/export/make_ort_refs.sh).
 *
 * onnxruntime_live_* (where node and tests/ort/node_modules are: `make ort-deps`;
 * skipped and counted elsewhere): tiny trained runs of small, mobilenetv2 and (with
 * the shared data) the zoo's int8 MobileNetV2 fine-tuned with a new head. Each run is
 * exported by the CLI, predicted by the CLI from the export (--top all classes) and
 * from the run, and run by ONNX Runtime (tests/ort/ort_run.js) on exactly the pixels
 * predict decodes (decoded here by the functions predict uses); python3-onnx's
 * checker (full_check) must accept the export.
 *
 * The int8 exports (export --int8): onnxruntime_committed_int8_fixtures (a bare clone)
 * as above with INT8_TOL; onnxruntime_live_int8_* train a tiny run, export it float
 * and int8 (--calib, --out and the default name), predict both with the CLI and hold
 * predict's int8 answers against ONNX Runtime's reference arithmetic for the file and
 * its int8 kernels, the int8 top-1 against the float one, and run the checker
 * (int8_against_ort says how close each must be, and why). export_int8_refuses_* : the
 * CLI's errors.
 *
 * Tolerances: every probability within 1e-4 (absolute), the logits of an image
 * within 1e-4 x the larger of 1 and its largest |logit|, the same top-1 on every
 * image. The floor of 1: an image whose logits are all small (a narrow net after two
 * epochs gives ones near 0.3) still differs by float sums' reordering (a BN folded
 * into its conv, the runtime's own kernels), about 3e-5 absolute in MobileNetV2;
 * what a probability sees is the absolute difference of the logits, and 1e-4 of that
 * moves none by more than 1e-4.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "data/image.h"
#include "data/jpeg.h"
#include "fixtures.h"
#include "io/png.h"
#include "nn/nn.h"
#include "t.h"
#include "infer/infer.h"
#include "infer/predict.h"
#include "infer/runmodel.h"

#define ORT_TOL 1e-4
/* An int8 export against ONNX Runtime's int8 kernels (QLinearConv, QGemm, QLinearAdd,
 * ...): predict runs the same arithmetic in float (fake quantization, nn_quant.h), so
 * the two agree exactly unless a value lands within float rounding of a rounding
 * boundary (petal-tui's float sums against MLAS's exact int32 ones), where one
 * activation moves by one step, 1/255 of its tensor's range. Measured on the fixtures
 * and the live runs here: no such flip, 1e-7; the tolerance, probabilities within
 * 0.02 and logits within 2% of max(1, |logit|), holds a few flips in nets of this size
 * and still fails a wrong scale, zero point, rounding or dequantization (those move
 * every answer by tenths). */
#define INT8_TOL 0.02
#define ORT_DIR "tests/ort"
#define ORT_FIXTURES "tests/data/export"

/* ---- float32 files, pixels, outputs ---- */

/* A file of little-endian float32 values (malloc'd), *n of them; NULL (the reason
 * printed) when it cannot be read or its length is not a multiple of 4. */
static float *read_f32(const char *path, size_t *n)
{
    uint8_t *d = NULL;
    size_t len = 0;
    pt_err e;
    *n = 0;
    if (util_read_file(path, &d, &len, &e) != PT_OK) {
        printf("  %s\n", e.msg);
        return NULL;
    }
    float *v = len % 4 ? NULL : malloc(len ? len : 1);
    for (size_t i = 0; v && i < len / 4; i++) {
        const uint8_t *b = d + 4 * i;
        uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                     (uint32_t)b[3] << 24;
        memcpy(&v[i], &u, 4);
    }
    if (!v)
        printf("  %s: %zu bytes, not float32 values\n", path, len);
    else
        *n = len / 4;
    free(d);
    return v;
}

static int write_f32(const char *path, const float *v, size_t n)
{
    uint8_t *d = malloc(n * 4 + 1);
    if (!d)
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        for (int b = 0; b < 4; b++)
            d[4 * i + b] = (uint8_t)(u >> (8 * b));
    }
    pt_err e;
    int rc = util_write_file_atomic(path, d, n * 4, &e);
    if (rc != PT_OK)
        printf("  %s\n", e.msg);
    free(d);
    return rc == PT_OK ? 0 : -1;
}

/* n S x S RGB images (rows of packed bytes, as decoded) as float32 NCHW 0-255: the
 * export's input. malloc'd. */
static float *to_nchw(const uint8_t *rgb, int n, int S)
{
    size_t plane = (size_t)S * S;
    float *x = malloc((size_t)n * 3 * plane * sizeof *x);
    for (int i = 0; x && i < n; i++)
        for (int c = 0; c < 3; c++)
            for (size_t q = 0; q < plane; q++)
                x[((size_t)i * 3 + c) * plane + q] = rgb[((size_t)i * plane + q) * 3 + c];
    return x;
}

/* The reverse: -1 when a value is not a whole number in 0-255 (not decoded pixels). */
static int from_nchw(const float *x, int n, int S, uint8_t *rgb)
{
    size_t plane = (size_t)S * S;
    for (int i = 0; i < n; i++)
        for (int c = 0; c < 3; c++)
            for (size_t q = 0; q < plane; q++) {
                float v = x[((size_t)i * 3 + c) * plane + q];
                if (!(v >= 0.0f && v <= 255.0f) || v != floorf(v))
                    return -1;
                rgb[((size_t)i * plane + q) * 3 + c] = (uint8_t)v;
            }
    return 0;
}

/* The logits of m's net for n S x S RGB images, fed as predict feeds them (bytes
 * times the float 1 / 255, pool/rpool.c). n x k, malloc'd; NULL on failure. */
static float *pt_logits(const rm_model *m, const uint8_t *rgb, int n)
{
    size_t px = (size_t)m->image_size * m->image_size * 3;
    pt_err e;
    nn_ctx *ctx = nn_ctx_new_infer(m->net, n, &e);
    float *x = malloc((size_t)n * px * sizeof *x);
    float *out = malloc((size_t)n * m->n_classes * sizeof *out);
    const float *y = NULL;
    if (ctx && x && out) {
        const float s = 1.0f / 255.0f;
        for (size_t q = 0; q < (size_t)n * px; q++)
            x[q] = (float)rgb[q] * s;
        y = nn_forward(ctx, x, n, 0, 0, 0);
    }
    if (y)
        memcpy(out, y, (size_t)n * m->n_classes * sizeof *out);
    nn_ctx_free(ctx);
    free(x);
    if (!y) {
        free(out);
        return NULL;
    }
    return out;
}


static int argmax_f(const float *v, int k)
{
    int best = 0;
    for (int c = 1; c < k; c++)
        if (v[c] > v[best])
            best = c;
    return best;
}

/* How two answers for the same n images differ. */
typedef struct ort_cmp {
    double prob;            /* the largest |p - q| */
    double logit;           /* the largest max |a - b| / max(1, max |b|) of an image */
    int top1_diff;          /* images whose top-1 differs */
} ort_cmp;

static void cmp_probs(const double *p, const float *q, int n, int k, ort_cmp *c)
{
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < k; j++)
            c->prob = fmax(c->prob, fabs(p[(size_t)i * k + j] - q[(size_t)i * k + j]));
        c->top1_diff += inf_argmax(p + (size_t)i * k, k) != argmax_f(q + (size_t)i * k, k);
    }
}

static void cmp_logits(const float *a, const float *b, int n, int k, ort_cmp *c)
{
    for (int i = 0; i < n; i++) {
        double d = 0.0, s = 1.0;
        for (int j = 0; j < k; j++) {
            d = fmax(d, fabs((double)a[(size_t)i * k + j] - b[(size_t)i * k + j]));
            s = fmax(s, fabs((double)b[(size_t)i * k + j]));
        }
        c->logit = fmax(c->logit, d / s);
        c->top1_diff += argmax_f(a + (size_t)i * k, k) != argmax_f(b + (size_t)i * k, k);
    }
}

/* tol: ORT_TOL for a float export, INT8_TOL for an int8 one (above). */
static void check_cmp_tol(const char *what, const ort_cmp *c, int n, double tol)
{
    T_CHECKF(c->prob <= tol, "%s: a probability differs from ONNX Runtime's by %.3g",
             what, c->prob);
    T_CHECKF(c->logit <= tol, "%s: logits differ from ONNX Runtime's by %.3g (relative)",
             what, c->logit);
    T_CHECKF(c->top1_diff == 0, "%s: %d of %d images have another top-1 than ONNX Runtime's",
             what, c->top1_diff, n);
}

static void check_cmp(const char *what, const ort_cmp *c, int n)
{
    check_cmp_tol(what, c, n, ORT_TOL);
}

/* ---- the committed fixtures (no node needed) ---- */

/* probs (n x k) of predict itself on the pixels written as S x S PNG files (predict
 * copies an image of its size as it is). 0, or -1 with the reason printed. */
static int predict_pngs(const rm_model *m, const uint8_t *rgb, int n, double *probs)
{
    int S = m->image_size, rc = -1;
    char **files = calloc((size_t)n, sizeof *files);
    prd *p = NULL;
    prd_results r = { 0 };
    pt_err e;
    err_clear(&e);
    const char *dir = t_tmpdir();
    for (int i = 0; files && i < n; i++) {
        char path[4200];
        util_path(path, sizeof path, "%s/%02d.png", dir, i);
        files[i] = strdup(path);
        if (png_write_rgb(path, rgb + (size_t)i * S * S * 3, S, S, &e) != PT_OK)
            goto out;
    }
    prd_opts o = { .batch = n, .replicas = 2, .workers = 1 };
    if (!files || prd_new(m, &o, &p, &e) != PT_OK || prd_files(p, files, n, &r, &e) != PT_OK)
        goto out;
    if (r.n_failed == 0 && r.k == m->n_classes) {
        memcpy(probs, r.probs, (size_t)n * r.k * sizeof *probs);
        rc = 0;
    } else {
        snprintf(e.msg, sizeof e.msg, "%lld of %d PNGs failed", r.n_failed, n);
    }
out:
    if (rc)
        printf("  predict on PNGs: %s\n", e.msg);
    prd_results_free(&r);
    prd_free(p);
    for (int i = 0; files && i < n; i++)
        free(files[i]);
    free(files);
    return rc;
}

static void check_fixture(const char *name, double tol)
{
    char path[4][600];
    const char *ext[4] = { "onnx", "input.f32", "ort.logits.f32", "ort.probabilities.f32" };
    for (int i = 0; i < 4; i++)
        snprintf(path[i], sizeof path[i], "%s/%s.%s", ORT_FIXTURES, name, ext[i]);
    rm_model m;
    pt_err e;
    const int failed = t_failed_now();
    T_CHECKF(rm_open(path[0], 0, &m, &e) == PT_OK, "%s", e.msg);
    if (t_failed_now() != failed)
        return;
    const int S = m.image_size, k = m.n_classes;
    size_t nx = 0, nl = 0, np = 0;
    float *x = read_f32(path[1], &nx), *lo = read_f32(path[2], &nl), *po = read_f32(path[3], &np);
    int n = (int)(nx / (3 * (size_t)S * S));
    uint8_t *rgb = malloc(nx + 1);
    double *probs = malloc(((size_t)n * k + 1) * sizeof *probs);
    float *lg = NULL;
    T_CHECKF(x && n >= 2 && (size_t)n * 3 * S * S == nx, "%s: %zu values for [N, 3, %d, %d]",
             path[1], nx, S, S);
    T_CHECKF(lo && po && nl == (size_t)n * k && np == nl, "%s: %zu logits, %zu probabilities "
             "for %d images of %d classes", name, nl, np, n, k);
    T_CHECKF(rgb && probs && x && from_nchw(x, n, S, rgb) == 0,
             "%s: not whole numbers 0-255 (decoded pixels)", path[1]);
    if (t_failed_now() == failed && predict_pngs(&m, rgb, n, probs) == 0 &&
        (lg = pt_logits(&m, rgb, n))) {
        ort_cmp c = { 0 };
        cmp_probs(probs, po, n, k, &c);
        cmp_logits(lg, lo, n, k, &c);
        check_cmp_tol(name, &c, n, tol);
        printf("  %s: %d images, %d classes: max |p - p_ort| %.3g, logits %.3g rel\n",
               name, n, k, c.prob, c.logit);
    } else if (t_failed_now() == failed) {
        T_CHECKF(0, "%s: petal-tui could not predict the fixture's pixels", name);
    }
    free(lg);
    free(probs);
    free(rgb);
    free(x);
    free(lo);
    free(po);
    rm_close(&m);
}

TEST(onnxruntime_committed_fixtures)
{
    check_fixture("small-8-16", ORT_TOL);
    check_fixture("every-kind", ORT_TOL);
}

/* The int8 fixtures (export --int8's form: tests/test_export.c writes them), read as
 * predict reads them: int8 weights dequantized, each QuantizeLinear /
 * DequantizeLinear pair a fake quantization, against ONNX Runtime's int8 kernels. */
TEST(onnxruntime_committed_int8_fixtures)
{
    check_fixture("small-8-16-int8", INT8_TOL);
    check_fixture("every-kind-int8", INT8_TOL);
}

/* ---- live: trained runs, the CLI and ONNX Runtime itself ---- */

/* node, onnxruntime-node and jpeg-js are there; otherwise the test is skipped, saying
 * which is missing. */
static int ort_ready(void)
{
    if (!t_need_tool("node"))
        return 0;
    static const char *const pkgs[2] = { "onnxruntime-node", "jpeg-js" };
    for (int i = 0; i < 2; i++) {
        char path[256], why[512];
        snprintf(path, sizeof path, ORT_DIR "/node_modules/%s/package.json", pkgs[i]);
        if (!util_is_file(path)) {
            snprintf(why, sizeof why, "%s is not installed in " ORT_DIR "/node_modules (make "
                     "ort-deps: npm ci)", pkgs[i]);
            t_skip(why);
            return 0;
        }
    }
    return 1;
}

/* A picture of fx_dataset's class lab (red = 10 + 20 x lab, as the runs learned) of
 * w x h, its green and blue varied so decoding and resizing have work to do. */
static void draw_class(uint8_t *rgb, int w, int h, int lab)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = rgb + ((size_t)y * w + x) * 3;
            p[0] = (uint8_t)(10 + 20 * lab);
            p[1] = (uint8_t)((x * 7 + y * 3) % 200);
            p[2] = (uint8_t)(y * 255 / h);
        }
}

/* DIR/photos: for each of 3 classes a wide and a tall JPEG, a PNG, and two demo
 * flower photos: sizes that need decode-time scaling, a centre crop and a resize.
 * 0, or -1 with the reason printed. */
static int write_photos(const char *dir)
{
    pt_err e;
    jpg_codec *jc = jpg_codec_new();
    uint8_t *rgb = malloc(100 * 100 * 3);
    int rc = jc && rgb && util_mkdirs(dir, &e) == PT_OK ? 0 : -1;
    static const int size[2][2] = { { 90, 60 }, { 40, 56 } };
    for (int lab = 0; lab < 3 && rc == 0; lab++)
        for (int s = 0; s < 2 && rc == 0; s++) {
            const uint8_t *jpg;
            size_t len;
            char path[4200];
            draw_class(rgb, size[s][0], size[s][1], lab);
            util_path(path, sizeof path, "%s/class%d-%s.jpg", dir, lab, s ? "tall" : "wide");
            rc = jpg_encode(jc, rgb, size[s][0], size[s][1], 90, &jpg, &len, &e) == PT_OK &&
                 util_write_file_atomic(path, jpg, len, &e) == PT_OK ? 0 : -1;
        }
    char path[4200];
    util_path(path, sizeof path, "%s/class1.png", dir);
    draw_class(rgb, 70, 50, 1);
    if (rc == 0 && png_write_rgb(path, rgb, 70, 50, &e) != PT_OK)
        rc = -1;
    for (int k = 0; k < 2 && rc == 0; k++) {
        uint8_t *buf = NULL;
        size_t len = 0;
        util_path(path, sizeof path, "%s/demo%d.jpg", dir, k);
        if (fx_demo_jpeg(k, 3 + k, 100, &buf, &len) != 0 ||
            util_write_file_atomic(path, buf, len, &e) != PT_OK)
            rc = -1;
        free(buf);
    }
    if (rc)
        printf("  writing the photos into %s failed\n", dir);
    free(rgb);
    jpg_codec_free(jc);
    return rc;
}

/* The dataset and the photos, made once per test process. */
typedef struct live_fix {
    char data[4200];        /* tfrecords-jpeg-48x48: 3 classes */
    char photos[4200];
} live_fix;

static const live_fix *live_fixture(void)
{
    static live_fix f;
    static int made; /* 1 made, -1 failed */
    if (made)
        return made > 0 ? &f : NULL;
    made = -1;
    static const long long train[3] = { 24, 24, 24 }, val[3] = { 8, 8, 8 };
    char dir[4096];
    util_copy(dir, sizeof dir, t_tmpdir());
    const char *d = fx_dataset(dir, 3, train, val, 0, 48, 16);
    if (!d)
        return NULL;
    util_copy(f.data, sizeof f.data, d);
    util_path(f.photos, sizeof f.photos, "%s/photos", dir);
    if (write_photos(f.photos) != 0)
        return NULL;
    made = 1;
    return &f;
}

/* The files' pixels as predict decodes them for m (pipe_decode_file): a
 * JPEG by jpg_decode_into with m's crop and fast-decode settings, a PNG by
 * png_decode_rgb, img_crop_box and img_resize. n x S x S x 3 bytes, malloc'd; NULL
 * (the reason printed) when one fails. */
static uint8_t *decode_like_predict(const rm_model *m, char *const *files, long long n)
{
    const int S = m->image_size;
    const size_t px = (size_t)S * S * 3;
    uint8_t *out = malloc((size_t)n * px);
    jpg_codec *jc = jpg_codec_new();
    img_scratch sc = { 0 };
    int ok = out && jc;
    for (long long i = 0; ok && i < n; i++) {
        uint8_t *buf = NULL, *rgb = NULL;
        size_t len = 0;
        int w, h, x = 0, y = 0;
        pt_err e;
        ok = util_read_file(files[i], &buf, &len, &e) == PT_OK;
        if (ok && png_is_png(buf, len)) {
            ok = png_decode_rgb(buf, len, &rgb, &w, &h, &e) == PT_OK;
            int cw = ok ? w : 0, ch = ok ? h : 0;
            if (ok && m->crop)
                img_crop_box(w, h, S, S, &x, &y, &cw, &ch);
            ok = ok && img_resize(rgb, w * 3, x, y, cw, ch, out + i * px, S, S, &sc) == 0;
        } else if (ok) {
            ok = jpg_decode_into(jc, buf, len, out + i * px, S, S, m->crop, m->fast_decode, NULL,
                                 NULL, &e) == PT_OK;
        }
        if (!ok)
            printf("  decoding %s: %s\n", files[i], e.msg);
        free(rgb);
        free(buf);
    }
    img_scratch_free(&sc);
    jpg_codec_free(jc);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

/* ONNX Runtime's logits and probabilities (n x k each, malloc'd) for n S x S images:
 * tests/ort/ort_run.js on their NCHW floats in a file in dir, at graph optimisation
 * level opt ("all", or "disabled": an int8 file's Quantize / DequantizeLinear nodes
 * as ONNX defines them, in float). 0, or -1 with the reason printed. */
static int ort_outputs_opt(const char *model, const uint8_t *rgb, int n, int S, int k,
                           const char *dir, const char *opt, float **logits, float **probs)
{
    char in[4200], outdir[4200], cmd[16000], path[4300];
    util_path(in, sizeof in, "%s/input.f32", dir);
    util_path(outdir, sizeof outdir, "%s/ort", dir);
    float *x = to_nchw(rgb, n, S);
    int rc = x ? write_f32(in, x, (size_t)n * 3 * S * S) : -1;
    free(x);
    *logits = *probs = NULL;
    if (rc)
        return -1;
    util_path(cmd, sizeof cmd, "node " ORT_DIR "/ort_run.js '%s' '%s' %d,3,%d,%d '%s' --opt %s",
              model, in, n, S, S, outdir, opt);
    char *text = NULL;
    rc = t_run(cmd, &text);
    if (rc != 0)
        printf("  %s: exit %d:\n%s\n", cmd, rc, text ? text : "");
    free(text);
    size_t nl = 0, np = 0;
    util_path(path, sizeof path, "%s/logits.f32", outdir);
    *logits = rc ? NULL : read_f32(path, &nl);
    util_path(path, sizeof path, "%s/probabilities.f32", outdir);
    *probs = rc ? NULL : read_f32(path, &np);
    if (*logits && *probs && nl == (size_t)n * k && np == nl)
        return 0;
    printf("  ONNX Runtime gave %zu logits, %zu probabilities for %d images of %d classes\n",
           nl, np, n, k);
    free(*logits);
    free(*probs);
    *logits = *probs = NULL;
    return -1;
}

/* With the runtime's graph optimisations all on (its int8 kernels for an int8 file). */
static int ort_outputs(const char *model, const uint8_t *rgb, int n, int S, int k,
                       const char *dir, float **logits, float **probs)
{
    return ort_outputs_opt(model, rgb, n, S, k, dir, "all", logits, probs);
}

/* A field of a CSV row (no quoting: the test's paths and class names have no comma),
 * into buf; the rest of the row after it, or NULL at the row's end. */
static const char *csv_field(const char *q, char *buf, size_t n)
{
    size_t l = strcspn(q, ",\n");
    snprintf(buf, n, "%.*s", (int)l, q);
    return q[l] == ',' ? q + l + 1 : NULL;
}

/* predict's CSV (--top k: every class) into probs (n x k, the row whose path is
 * files[i] into row i) and labels; -1 (the reason printed) unless every file has a row
 * naming each class once. */
static int parse_csv(const char *csv, char *const *files, int n, const rm_model *m,
                     double *probs, int *labels)
{
    const int k = m->n_classes;
    int rows = 0;
    for (const char *line = csv ? strchr(csv, '\n') : NULL; line && line[1];
         line = strchr(line + 1, '\n')) {
        char f[4200];
        const char *q = csv_field(line + 1, f, sizeof f);
        int i = 0, seen = 0;
        while (i < n && strcmp(files[i], f))
            i++;
        if (i == n || !q) {
            printf("  predict's CSV: a row for %s, not one of the files\n", f);
            return -1;
        }
        q = csv_field(q, f, sizeof f);
        labels[i] = q ? atoi(f) : -1;
        while (q) {
            char name[256], p[64];
            q = csv_field(q, name, sizeof name);
            if (!q)
                break;
            q = csv_field(q, p, sizeof p);
            for (int c = 0; c < k; c++)
                if (!strcmp(m->class_names[c], name)) {
                    probs[(size_t)i * k + c] = atof(p);
                    seen |= 1 << c;
                }
        }
        if (seen != (1 << k) - 1) {
            printf("  predict's CSV: the row of %s does not name every class\n", files[i]);
            return -1;
        }
        rows++;
    }
    if (rows != n)
        printf("  predict's CSV has %d rows for %d files\n", rows, n);
    return rows == n ? 0 : -1;
}

/* `petal-tui ARGS`: its stdout (malloc'd) and exit status; stderr is shown on failure. */
static int cli(const char *args, char **out)
{
    char cmd[7000], errf[4200];
    util_path(errf, sizeof errf, "%s/stderr.txt", t_tmpdir());
    util_path(cmd, sizeof cmd, "%s %s 2>'%s'", t_bin(), args, errf);
    int rc = t_run(cmd, out);
    if (rc != 0) {
        char *err = fx_slurp(errf);
        printf("  petal-tui %s: exit %d: %s\n", args, rc, err ? err : "");
        free(err);
    }
    return rc;
}

/* A short run of opts on the fixture's dataset into run, exported to model. */
static int train_and_export(const live_fix *f, const char *opts, const char *run,
                            const char *model)
{
    char args[6000], *out = NULL;
    util_path(args, sizeof args,
              "--headless --data '%s' --out '%s' --replicas 1 --workers 1 "
              "--batch-per-replica 8 %s",
              f->data, run, opts);
    int rc = cli(args, &out);
    free(out);
    if (rc)
        return -1;
    util_path(args, sizeof args, "export '%s' --out '%s'", run, model);
    rc = cli(args, &out);
    free(out);
    return rc ? -1 : 0;
}

/* predict SRC PHOTOS --top k into probs and labels. */
static int predict_cli(const char *src, const live_fix *f, char *const *files, int n,
                       const rm_model *m, double *probs, int *labels)
{
    char args[9000], *csv = NULL;
    util_path(args, sizeof args, "predict '%s' '%s' --top %d", src, f->photos, m->n_classes);
    int rc = cli(args, &csv);
    if (rc == 0)
        rc = parse_csv(csv, files, n, m, probs, labels);
    free(csv);
    return rc;
}

/* Images whose label is not ONNX Runtime's top-1. */
static int top1_diff(const int *labels, const float *ort_probs, int n, int k)
{
    int d = 0;
    for (int i = 0; i < n; i++)
        d += labels[i] != argmax_f(ort_probs + (size_t)i * k, k);
    return d;
}

/* tests/ort/predict_folder.js (the README's script: jpeg-js and its own port of the
 * resize) on the photos against predict model.onnx (probs, labels): a line per JPEG
 * (the PNG is not its business) naming one of the classes. Its pixels are not
 * petal-tui's to the level (jpeg-js is not libjpeg-turbo: about 1.6 levels apart on
 * average here), which a robust net shrugs off but these nets of a few dozen updates
 * need not: with strict, the same class on every photo and the top probability within
 * 0.05 (small); otherwise the agreement is printed. Real photos: tests/ort/README.md. */
static void script_compare(const char *what, const live_fix *f, const char *model,
                           char *const *files, int n, const rm_model *m, const double *probs,
                           const int *labels, int strict)
{
    char cmd[9000], *out = NULL;
    util_path(cmd, sizeof cmd, "node " ORT_DIR "/predict_folder.js '%s' '%s'", model, f->photos);
    int rc = t_run(cmd, &out), lines = 0, same = 0;
    double worst = 0.0;
    T_CHECKF(rc == 0, "%s: %s: exit %d: %s", what, cmd, rc, out ? out : "");
    for (const char *q = out; rc == 0 && q && *q; q = strchr(q, '\n')) {
        q += *q == '\n';
        if (!*q)
            break;
        char file[4200], name[256], p[64];
        const char *r = csv_field(q, file, sizeof file);
        r = r ? csv_field(r, name, sizeof name) : NULL;
        if (r)
            csv_field(r, p, sizeof p);
        int i = 0;
        while (i < n && strcmp(files[i], file))
            i++;
        T_CHECKF(r && i < n, "%s: predict_folder.js printed \"%.200s\"", what, q);
        if (!r || i == n)
            break;
        lines++;
        int known = 0;
        for (int c = 0; c < m->n_classes; c++)
            known |= !strcmp(name, m->class_names[c]);
        T_CHECKF(known, "%s: predict_folder.js names a class \"%s\" the model has not", what,
                 name);
        same += !strcmp(name, m->class_names[labels[i]]);
        worst = fmax(worst, fabs(atof(p) - probs[(size_t)i * m->n_classes + labels[i]]));
    }
    T_CHECKF(lines == n - 1, "%s: predict_folder.js printed %d lines for %d JPEGs", what, lines,
             n - 1);
    T_CHECKF(!strict || (same == lines && worst <= 0.05),
             "%s: predict_folder.js agrees on %d of %d photos, its top probability differs by "
             "up to %.3g",
             what, same, lines, worst);
    printf("  %s: predict_folder.js: the same class on %d of %d JPEGs, top probability within "
           "%.3g\n", what, same, lines, worst);
    free(out);
}

/* The CLI's and the nets' answers on the photos against ONNX Runtime's on the same
 * pixels: predict of the export (CSV) and the export's import (logits); the run's
 * net (logits, probabilities) and predict of the run (top-1). */
static void live_compare(const char *what, const live_fix *f, const char *run,
                         const char *model, const rm_model *mr, const rm_model *mx,
                         int script_strict)
{
    const int k = mx->n_classes, S = mx->image_size;
    char *in[1] = { (char *)f->photos }, **files = NULL;
    long long n = 0, skipped = 0;
    pt_err e;
    const int failed = t_failed_now();
    T_REQUIRE(prd_list_inputs(in, 1, &files, &n, &skipped, &e) == PT_OK && n == 9);
    uint8_t *rgb = decode_like_predict(mx, files, n);
    double *pcx = calloc((size_t)n * k, sizeof *pcx), *pcr = calloc((size_t)n * k, sizeof *pcr);
    double *pin = calloc((size_t)n * k, sizeof *pin);
    int labx[16], labr[16], ok = rgb && pcx && pcr && pin;
    float *lo = NULL, *po = NULL, *lr = NULL, *lx = NULL;
    T_CHECKF(ok && predict_cli(model, f, files, n, mx, pcx, labx) == 0,
             "%s: predict model.onnx", what);
    T_CHECKF(ok && predict_cli(run, f, files, n, mr, pcr, labr) == 0, "%s: predict RUN", what);
    T_CHECKF(ok && ort_outputs(model, rgb, n, S, k, t_tmpdir(), &lo, &po) == 0,
             "%s: ONNX Runtime on the export", what);
    T_CHECKF(ok && (lr = pt_logits(mr, rgb, n)) && (lx = pt_logits(mx, rgb, n)),
             "%s: the nets' forward", what);
    if (t_failed_now() == failed) {
        ort_cmp cx = { 0 }, cr = { 0 };
        cmp_probs(pcx, po, n, k, &cx);
        cx.top1_diff += top1_diff(labx, po, n, k);
        cmp_logits(lx, lo, n, k, &cx);
        for (int i = 0; i < n; i++)
            inf_softmax(lr + (size_t)i * k, k, pin + (size_t)i * k);
        cmp_probs(pin, po, n, k, &cr);
        cmp_logits(lr, lo, n, k, &cr);
        cr.top1_diff += top1_diff(labr, po, n, k);
        char w[200];
        snprintf(w, sizeof w, "%s: predict model.onnx", what);
        check_cmp(w, &cx, n);
        snprintf(w, sizeof w, "%s: the run", what);
        check_cmp(w, &cr, n);
        /* Teeth: the photos get different answers, so matching them image by image
         * means something (a run this short may still give one top-1 to all). */
        double spread = 0.0;
        int seen = 0;
        for (int c = 0; c < k; c++) {
            double lo_p = 1.0, hi_p = 0.0;
            for (int i = 0; i < n; i++) {
                lo_p = fmin(lo_p, po[(size_t)i * k + c]);
                hi_p = fmax(hi_p, po[(size_t)i * k + c]);
            }
            spread = fmax(spread, hi_p - lo_p);
        }
        for (int c = 0; c < k; c++)
            for (int i = 0; i < n; i++)
                if (argmax_f(po + (size_t)i * k, k) == c) {
                    seen++;
                    break;
                }
        T_CHECKF(spread > 100 * ORT_TOL, "%s: ONNX Runtime's probabilities vary by %.3g over "
                 "the photos: the same answer for all", what, spread);
        printf("  %s: %lld photos, %d classes, %d px; ONNX Runtime against predict model.onnx "
               "(CSV): max |dp| %.3g, import's logits %.3g rel; against the run's net: "
               "max |dp| %.3g, logits %.3g rel; top-1 differs on %d and %d (%d classes "
               "top-1, probabilities spread %.2f)\n",
               what, n, k, S, cx.prob, cx.logit, cr.prob, cr.logit, cx.top1_diff, cr.top1_diff,
               seen, spread);
        script_compare(what, f, model, files, n, mx, pcx, labx, script_strict);
    }
    free(lo);
    free(po);
    free(lr);
    free(lx);
    free(pin);
    free(pcx);
    free(pcr);
    free(rgb);
    prd_list_free(files, n);
}

/* python3-onnx's checker, with shape inference, on the export: the test is skipped
 * (after the checks above) where python3 has no onnx module. */
static void onnx_checker(const char *what, const char *model)
{
    if (system("/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1") != 0) {
        t_skip("/usr/bin/python3 has no onnx module (Debian's python3-onnx): the ONNX "
               "checker part was not run");
        return;
    }
    char cmd[5000], *out = NULL;
    util_path(cmd, sizeof cmd,
              "/usr/bin/python3 -c 'import onnx, sys; onnx.checker.check_model("
              "onnx.load(sys.argv[1]), full_check=True)' '%s'",
              model);
    int rc = t_run(cmd, &out);
    T_CHECKF(rc == 0, "%s: onnx.checker refused %s: %s", what, model, out ? out : "");
    free(out);
}

/* A run of opts, exported, predicted and run by ONNX Runtime (above). */
static void check_live(const char *what, const char *opts, int script_strict)
{
    if (!ort_ready())
        return;
    const live_fix *f = live_fixture();
    T_REQUIRE(f != NULL);
    char run[4200], model[4200];
    util_path(run, sizeof run, "%s/run", t_tmpdir());
    util_path(model, sizeof model, "%s/model.onnx", t_tmpdir());
    T_REQUIRE(train_and_export(f, opts, run, model) == 0);
    rm_model mr, mx;
    pt_err e;
    const int failed = t_failed_now();
    T_CHECKF(rm_open(run, 0, &mr, &e) == PT_OK, "%s", e.msg);
    T_CHECKF(rm_open(model, 0, &mx, &e) == PT_OK, "%s", e.msg);
    if (t_failed_now() == failed) {
        /* The export says what the run is: names, size, and the run's decode. */
        T_EQ_INT(mx.n_classes, mr.n_classes);
        T_EQ_INT(mx.image_size, mr.image_size);
        for (int c = 0; c < mx.n_classes && c < mr.n_classes; c++)
            T_EQ_STR(mx.class_names[c], mr.class_names[c]);
        T_CHECKF(mx.crop == mr.crop && mx.fast_decode == mr.fast_decode,
                 "%s: the run decodes with crop %d fast %d, its export with %d %d", what,
                 mr.crop, mr.fast_decode, mx.crop, mx.fast_decode);
    }
    if (t_failed_now() == failed)
        live_compare(what, f, run, model, &mr, &mx, script_strict);
    rm_close(&mr);
    rm_close(&mx);
    if (t_failed_now() == failed)
        onnx_checker(what, model);
}

TEST(onnxruntime_live_small)
{
    check_live("small 16,a,32s", "--image-size 32 --widths 16,a,32s --epochs 4", 1);
}

TEST(onnxruntime_live_small_residual)
{
    check_live("small 8,a,16s,16 residual",
               "--image-size 32 --widths 8,a,16s,16 --residual yes --epochs 2", 1);
}

TEST(onnxruntime_live_mobilenetv2)
{
    check_live("mobilenetv2 0.35", "--image-size 32 --model mobilenetv2 --width 0.35 --epochs 2",
               0);
}

TEST(onnxruntime_live_zoo_int8_fine_tuned)
{
    T_NEED_DATA();
    char opts[4400];
    util_path(opts, sizeof opts, "--image-size 48 --model '%s' --epochs 1 --ema 0",
              t_data("weights/mobilenetv2-12-int8.onnx"));
    check_live("zoo int8 MobileNetV2, new head", opts, 0);
}

/* ---- export --int8 ---- */

/* n images' top-1 by probabilities p (n x k, float) against labels. */
static int agree_f(const float *p, const float *q, int n, int k)
{
    int same = 0;
    for (int i = 0; i < n; i++)
        same += argmax_f(p + (size_t)i * k, k) == argmax_f(q + (size_t)i * k, k);
    return same;
}

/* export RUN --int8 ARGS: 0 when it exits 0 and its stdout says "calibrated on
 * `images` training images" then path. */
static int export_int8(const char *run, const char *args, const char *path, long long images)
{
    char cmd[9000], want[4400], *out = NULL;
    util_path(cmd, sizeof cmd, "export '%s' --int8 %s", run, args);
    int rc = cli(cmd, &out);
    util_path(want, sizeof want, "calibrated on %lld training images\n%s\n", images, path);
    T_CHECKF(rc == 0 && out && !strcmp(out, want), "export %s: stdout \"%s\", not \"%s\"", args,
             out ? out : "", want);
    free(out);
    return rc == 0 && util_is_file(path) ? 0 : -1;
}

/* Of n images, those whose top-1 under p (n x k) leads by at least 0.1 (a net of a few
 * dozen updates leaves most photos near a tie, where any change flips the top-1):
 * *firm of them, and how many of those have the same top-1 under q. */
static int firm_agree(const float *p, const float *q, int n, int k, int *firm)
{
    int same = 0;
    *firm = 0;
    for (int i = 0; i < n; i++) {
        const float *r = p + (size_t)i * k;
        int a = argmax_f(r, k);
        float second = 0.0f;
        for (int c = 0; c < k; c++)
            if (c != a && r[c] > second)
                second = r[c];
        if (r[a] - second < 0.1f)
            continue;
        (*firm)++;
        same += a == argmax_f(q + (size_t)i * k, k);
    }
    return same;
}

/* ONNX Runtime on the photos (the pixels predict decodes) with both exports: predict's
 * answers on the int8 file against its reference arithmetic (graph optimisations off:
 * each QuantizeLinear / DequantizeLinear as ONNX defines it, in float, which is what
 * predict computes) within INT8_TOL, and against its int8 kernels (optimisations all:
 * QLinearConv, QGemm, ...) on the top-1 of the photos whose top-1 is firm; there, as
 * measured, one activation of a deep net rounded the other way (exact int32 sums
 * against float ones) cascades through the layers after it (0.1 of a logit in a
 * MobileNetV2 of two epochs), so only the firm answers must agree. The int8 export's
 * top-1 against the float export's: the same on every firm photo (with strict; a
 * MobileNetV2 of width 0.35 at 32 px after a few dozen updates loses that to int8,
 * as measured: only printed there). python3-onnx's checker on the int8 file. */
static void int8_against_ort(const char *fmodel, const char *qmodel, const rm_model *mq,
                             char *const *files, int n, const double *pq, const int *lq,
                             int strict)
{
    const int k = mq->n_classes, S = mq->image_size;
    uint8_t *rgb = decode_like_predict(mq, files, n);
    float *lr = NULL, *pr = NULL, *lo = NULL, *po = NULL, *lf = NULL, *pf = NULL, *lx = NULL;
    char d[3][4200];
    const char *sub[3] = { "ort-ref", "ort-int8", "ort-f32" };
    for (int i = 0; i < 3; i++) {
        util_path(d[i], sizeof d[i], "%s/%s", t_tmpdir(), sub[i]);
        T_REQUIRE(util_mkdirs(d[i], NULL) == PT_OK);
    }
    T_REQUIRE(rgb != NULL);
    T_CHECKF(ort_outputs_opt(qmodel, rgb, n, S, k, d[0], "disabled", &lr, &pr) == 0,
             "ONNX Runtime (no graph optimisation) on the int8 export");
    T_CHECKF(ort_outputs(qmodel, rgb, n, S, k, d[1], &lo, &po) == 0,
             "ONNX Runtime on the int8 export");
    T_CHECKF(ort_outputs(fmodel, rgb, n, S, k, d[2], &lf, &pf) == 0,
             "ONNX Runtime on the float export");
    T_CHECKF((lx = pt_logits(mq, rgb, n)) != NULL, "the int8 import's forward");
    if (lr && pr && lo && po && lf && pf && lx) {
        ort_cmp c = { 0 }, ck = { 0 };
        cmp_probs(pq, pr, n, k, &c);
        c.top1_diff += top1_diff(lq, pr, n, k);
        cmp_logits(lx, lr, n, k, &c);
        check_cmp_tol("int8: predict against ONNX Runtime's reference arithmetic", &c, n,
                      INT8_TOL);
        cmp_probs(pq, po, n, k, &ck);
        cmp_logits(lx, lo, n, k, &ck);
        int firm_k, same_k = firm_agree(po, lx, n, k, &firm_k);
        int firm_f, same_f = firm_agree(pf, po, n, k, &firm_f);
        T_CHECKF(same_k == firm_k, "int8: predict's top-1 is ONNX Runtime's int8 kernels' on %d "
                 "of the %d photos where theirs is firm", same_k, firm_k);
        T_CHECKF(!strict || same_f == firm_f, "int8: ONNX Runtime's int8 top-1 is its float "
                 "top-1 on %d of the %d photos where that is firm", same_f, firm_f);
        printf("  int8: predict against ONNX Runtime, reference arithmetic: max |dp| %.3g, "
               "logits %.3g rel; int8 kernels: max |dp| %.3g, logits %.3g rel, top-1 the same "
               "on %d of %d firm; int8 against float (ONNX Runtime): top-1 the same on %d of "
               "%d (%d of %d firm)\n", c.prob, c.logit, ck.prob, ck.logit, same_k, firm_k,
               agree_f(po, pf, n, k), n, same_f, firm_f);
    }
    float *bufs[7] = { lr, pr, lo, po, lf, pf, lx };
    for (int i = 0; i < 7; i++)
        free(bufs[i]);
    free(rgb);
    onnx_checker("int8", qmodel);
}

/* A tiny run exported float and int8 (its default name and --out, --calib), predicted
 * by the CLI from both; then ONNX Runtime, where it is installed (int8_against_ort;
 * strict there). Without node the test still runs up to there and is then counted as
 * skipped (ort_ready). */
static void check_int8(const char *what, const char *opts, int strict)
{
    const live_fix *f = live_fixture();
    T_REQUIRE(f != NULL);
    char run[4200], fmodel[4200], qmodel[4200], dflt[4300];
    util_path(run, sizeof run, "%s/run", t_tmpdir());
    util_path(fmodel, sizeof fmodel, "%s/model.onnx", t_tmpdir());
    util_path(qmodel, sizeof qmodel, "%s/model-q.onnx", t_tmpdir());
    util_path(dflt, sizeof dflt, "%s/model-int8.onnx", run);
    T_REQUIRE(train_and_export(f, opts, run, fmodel) == 0);
    char args[4400];
    util_path(args, sizeof args, "--calib 40 --out '%s'", qmodel);
    /* 72 training records: 40 asked; the default, 256, takes all 72. */
    T_REQUIRE(export_int8(run, args, qmodel, 40) == 0);
    T_CHECK(export_int8(run, "", dflt, 72) == 0);
    /* A run whose dataset is gone cannot be calibrated: exit 2, saying so. */
    char cmd[13000], tmp[4096], *out = NULL;
    util_copy(tmp, sizeof tmp, t_tmpdir());
    util_path(cmd, sizeof cmd, "cp -r '%s' '%s/gone' && sed -i 's|^data = .*|data = %s/nowhere|' "
              "'%s/gone/config' && %s export '%s/gone' --int8 2>&1", run, tmp, tmp, tmp, t_bin(),
              tmp);
    int rc = t_run(cmd, &out);
    T_CHECKF(rc == 2 && out && strstr(out, "cannot calibrate the int8 export") &&
                 strstr(out, "nowhere"),
             "%s: export --int8 of a run without its data: exit %d, \"%s\"", what, rc,
             out ? out : "");
    free(out);
    rm_model mq, mf;
    pt_err e;
    T_REQUIRE(rm_open(qmodel, 0, &mq, &e) == PT_OK);
    T_REQUIRE(rm_open(fmodel, 0, &mf, &e) == PT_OK);
    const int k = mq.n_classes;
    T_EQ_INT(k, mf.n_classes);
    T_EQ_INT(mq.image_size, mf.image_size);
    char *in[1] = { (char *)f->photos }, **files = NULL;
    long long n = 0, skipped = 0;
    T_REQUIRE(prd_list_inputs(in, 1, &files, &n, &skipped, &e) == PT_OK && n == 9);
    double *pq = calloc((size_t)n * k, sizeof *pq), *pf = calloc((size_t)n * k, sizeof *pf);
    int lq[16], lf[16], same = 0;
    T_REQUIRE(pq && pf);
    T_CHECKF(predict_cli(qmodel, f, files, n, &mq, pq, lq) == 0, "%s: predict the int8 file", what);
    T_CHECKF(predict_cli(fmodel, f, files, n, &mf, pf, lf) == 0, "%s: predict the float file", what);
    for (int i = 0; i < n; i++)
        same += lq[i] == lf[i];
    printf("  %s: predict int8 against float: the same top-1 on %d of %lld photos\n", what, same, n);
    if (ort_ready())
        int8_against_ort(fmodel, qmodel, &mq, files, (int)n, pq, lq, strict);
    free(pq);
    free(pf);
    prd_list_free(files, n);
    rm_close(&mq);
    rm_close(&mf);
}

TEST(onnxruntime_live_int8_small)
{
    check_int8("small 16,a,32s int8", "--image-size 32 --widths 16,a,32s --epochs 4", 1);
}

TEST(onnxruntime_live_int8_residual)
{
    check_int8("small residual int8",
               "--image-size 32 --widths 8,a,16s,16 --residual yes --epochs 3", 1);
}

/* What export --int8 refuses, before or instead of writing anything: exit 1 (usage)
 * with the reason; nothing exits 0. */
TEST(export_int8_refuses_bad_arguments)
{
    const char *dir = t_tmpdir();
    char onnx[4200];
    util_path(onnx, sizeof onnx, "%s/x.onnx", dir);
    T_REQUIRE(util_write_file_atomic(onnx, (const uint8_t *)"x", 1, NULL) == PT_OK);
    static const struct {
        const char *args, *says;
    } cases[] = {
        { "'%s' --int8 --calib 0", "--calib '0'" },
        { "'%s' --int8 --calib abc", "--calib 'abc'" },
        { "'%s' --int8 --calib -5", "--calib '-5'" },
        { "'%s' --int8 --calib 12x", "--calib '12x'" },
        { "'%s' --int8 --calib", "--calib needs" },
        { "'%s' --calib 5", "--calib goes with --int8" },
        { "'%s' --int8", "not a petal-tui run folder" },
        { "'%s/x.onnx' --int8", "not a run folder" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[4400], cmd[9000], *out = NULL;
        snprintf(args, sizeof args, cases[i].args, dir);
        util_path(cmd, sizeof cmd, "%s export %s 2>&1", t_bin(), args);
        int rc = t_run(cmd, &out);
        T_CHECKF(rc == 1 && out && strstr(out, cases[i].says),
                 "export %s: exit %d, \"%s\" (want exit 1 saying \"%s\")", args, rc,
                 out ? out : "", cases[i].says);
        free(out);
    }
}

TEST(onnxruntime_live_int8_mobilenetv2)
{
    check_int8("mobilenetv2 0.35 int8",
               "--image-size 32 --model mobilenetv2 --width 0.35 --epochs 4", 0);
}
