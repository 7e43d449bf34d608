/* imgfile — image files to S x S RGB (see imgfile.h). */
#include "data/imgfile.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <turbojpeg.h>

#include "io/png.h"

int imf_is_image_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg") ||
                   !strcasecmp(dot, ".png"));
}

int imf_fit_parse(const char *name)
{
    static const char *const names[] = { "crop", "pad", "stretch" };
    for (int m = 0; m < 3; m++)
        if (!strcmp(name, names[m]))
            return m;
    return -1;
}

const char *imf_fit_name(imf_fit_mode mode)
{
    return mode == IMF_FIT_PAD ? "pad" : mode == IMF_FIT_STRETCH ? "stretch" : "crop";
}

void imf_fit_size(const imf_fit *f, int w, int h, int *out_w, int *out_h)
{
    *out_w = *out_h = f->size;
    if (!f->keep_aspect || w == h)
        return;
    long long lo = w < h ? w : h, hi = w < h ? h : w;
    long long side = (f->size * hi + lo / 2) / lo;
    if (side > (long long)IMF_MAX_ASPECT * f->size)
        side = (long long)IMF_MAX_ASPECT * f->size;
    if (w > h)
        *out_w = (int)side;
    else
        *out_h = (int)side;
}

/* Where a w x h photo goes: an ow x oh record, the photo resized into its iw x ih
 * window at (ix, iy) (the whole record but for pad), centre-cropped to that window's
 * aspect first unless stretched. */
typedef struct plan {
    int ow, oh, ix, iy, iw, ih, crop;
} plan;

static void make_plan(const imf_fit *f, int w, int h, plan *p)
{
    imf_fit_size(f, w, h, &p->ow, &p->oh);
    p->ix = p->iy = 0;
    p->iw = p->ow;
    p->ih = p->oh;
    p->crop = f->mode != IMF_FIT_STRETCH;
    if (f->mode != IMF_FIT_PAD || f->keep_aspect || w == h)
        return;
    long long S = f->size, lo = w < h ? w : h, hi = w < h ? h : w;
    int shortside = (int)((S * lo + hi / 2) / hi);
    if (shortside < 1)
        shortside = 1;
    if (w > h)
        p->ih = shortside;
    else
        p->iw = shortside;
    p->ix = (p->ow - p->iw) / 2;
    p->iy = (p->oh - p->ih) / 2;
}

static int padded(const plan *p)
{
    return p->iw != p->ow || p->ih != p->oh;
}

/* The record around the photo's window: every border pixel is the window's mean
 * colour. Not edge replication: repeating the outermost row or column draws stripes
 * across the border, texture the photo never had (a petal cut by the frame becomes a
 * band as long as the border) that a net can learn; a flat fill holds no structure
 * at all, and its colour, the photo's own average, is the least contrast one value
 * can have against it (a black or grey frame is a hard edge on a bright photo). */
static void frame(const uint8_t *inner, const plan *p, uint8_t *out)
{
    double sum[3] = { 0, 0, 0 };
    size_t n = (size_t)p->iw * p->ih;
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++)
            sum[c] += inner[i * 3 + c];
    uint8_t mean[3];
    for (int c = 0; c < 3; c++)
        mean[c] = (uint8_t)(sum[c] / (double)n + 0.5);
    for (size_t i = 0; i < (size_t)p->ow * p->oh; i++)
        memcpy(out + i * 3, mean, 3);
    for (int y = 0; y < p->ih; y++)
        memcpy(out + ((size_t)(p->iy + y) * p->ow + p->ix) * 3, inner + (size_t)y * p->iw * 3,
               (size_t)p->iw * 3);
}

/* The photo's window, straight into out or, for pad, into a window framed after. */
static uint8_t *window_buf(const plan *p, uint8_t *out)
{
    return padded(p) ? malloc((size_t)p->iw * p->ih * 3) : out;
}

static int window_done(const plan *p, uint8_t *win, uint8_t *out)
{
    if (win != out) {
        frame(win, p, out);
        free(win);
    }
    return PT_OK;
}

/* A full-size RGB image fitted into out as p says. */
static int rgb_fit(const uint8_t *rgb, int w, int h, const plan *p, uint8_t *out,
                   img_scratch *s, pt_err *e)
{
    int x = 0, y = 0, cw = w, ch = h;
    if (p->crop)
        img_crop_box(w, h, p->iw, p->ih, &x, &y, &cw, &ch);
    uint8_t *win = window_buf(p, out);
    if (!win || img_resize(rgb, w * 3, x, y, cw, ch, win, p->iw, p->ih, s) != 0) {
        if (win != out)
            free(win);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    return window_done(p, win, out);
}

/* A JPEG of w x h (its header read) fitted into out, scaled while decoding. */
static int jpeg_fit(jpg_codec *jc, const uint8_t *buf, size_t len, int w, int h, const plan *p,
                    uint8_t *out, int fast, pt_err *why)
{
    uint8_t *win = window_buf(p, out);
    if (!win)
        return err_set(why, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int rc = jpg_decode_sized(jc, buf, len, w, h, win, p->iw, p->ih, p->crop, fast, why);
    if (rc != PT_OK) {
        if (win != out)
            free(win);
        return rc;
    }
    return window_done(p, win, out);
}

/* Where the fitted pixels go: a fixed S x S buffer (imf_decode), or the caller's
 * growable one (imf_decode_fit). */
typedef struct sink {
    uint8_t *fixed;
    uint8_t **grow;
    size_t *cap;
    int *out_w, *out_h;
} sink;

static uint8_t *sink_get(sink *k, const plan *p)
{
    if (k->fixed)
        return k->fixed;
    size_t need = (size_t)p->ow * p->oh * 3;
    if (need > *k->cap) {
        uint8_t *nb = realloc(*k->grow, need);
        if (!nb)
            return NULL;
        *k->grow = nb;
        *k->cap = need;
    }
    *k->out_w = p->ow;
    *k->out_h = p->oh;
    return *k->grow;
}

static int rgb_to_sink(const uint8_t *rgb, int w, int h, const imf_fit *f, sink *k,
                       img_scratch *s, pt_err *e)
{
    plan p;
    make_plan(f, w, h, &p);
    uint8_t *out = sink_get(k, &p);
    if (!out)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    return rgb_fit(rgb, w, h, &p, out, s, e);
}

static int png_to_sink(const uint8_t *buf, size_t len, const imf_fit *f, sink *k,
                       img_scratch *s, pt_err *e)
{
    uint8_t *rgb;
    int w, h;
    int rc = png_decode_rgb(buf, len, &rgb, &w, &h, e);
    if (rc != PT_OK)
        return rc;
    rc = rgb_to_sink(rgb, w, h, f, k, s, e);
    free(rgb);
    return rc;
}
/* A CMYK or YCCK JPEG: libjpeg converts neither to RGB, so it is decoded to CMYK and
 * converted here as libjpeg-turbo's own tools do (R = C x K / 255 on the stored,
 * Adobe-inverted values), then sized as the rest. PT_EJPEG (why kept) for any other.
 * Such files are rare: the decompressor is made for the call. */
static int cmyk_jpeg(const uint8_t *buf, size_t len, const imf_fit *f, sink *k,
                     img_scratch *s, pt_err *why)
{
    int w, h, sub, cs;
    tjhandle tj = tjInitDecompress();
    if (!tj)
        return err_set(why, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    if (tjDecompressHeader3(tj, buf, (unsigned long)len, &w, &h, &sub, &cs) != 0 ||
        (cs != TJCS_CMYK && cs != TJCS_YCCK)) {
        tjDestroy(tj);
        return PT_EJPEG;
    }
    /* jpg_header already held the size to the limits. */
    uint8_t *cmyk = malloc((size_t)w * h * 4), *rgb = malloc((size_t)w * h * 3);
    int rc = PT_OK;
    if (!cmyk || !rgb)
        rc = err_set(why, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    else if (tjDecompress2(tj, buf, (unsigned long)len, cmyk, w, w * 4, h, TJPF_CMYK, 0) != 0)
        rc = err_set(why, PT_EJPEG, NULL, PT_NO_RECORD, PT_NO_OFFSET, "CMYK JPEG: %s",
                     tjGetErrorStr2(tj));
    if (rc == PT_OK) {
        for (size_t i = 0; i < (size_t)w * h; i++) {
            const uint8_t *c = cmyk + i * 4;
            for (int j = 0; j < 3; j++)
                rgb[i * 3 + j] = (uint8_t)((c[j] * c[3] + 127) / 255);
        }
        rc = rgb_to_sink(rgb, w, h, f, k, s, why);
    }
    free(cmyk);
    free(rgb);
    tjDestroy(tj);
    return rc;
}

/* Any image file through f into the sink. */
static int decode_to_sink(jpg_codec *jc, img_scratch *s, const uint8_t *buf, size_t len,
                          const imf_fit *f, int fast, sink *k, pt_err *why)
{
    if (len == 0)
        return err_set(why, PT_EJPEG, NULL, PT_NO_RECORD, PT_NO_OFFSET, "empty file");
    if (png_is_png(buf, len))
        return png_to_sink(buf, len, f, k, s, why);
    if (!jpg_is_jpeg(buf, len))
        return err_set(why, PT_EJPEG, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "not a JPEG or PNG image");
    int w, h;
    int rc = jpg_header(jc, buf, len, &w, &h, why);
    if (rc == PT_OK) {
        plan p;
        make_plan(f, w, h, &p);
        uint8_t *out = sink_get(k, &p);
        rc = out ? jpeg_fit(jc, buf, len, w, h, &p, out, fast, why)
                 : err_set(why, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    if (rc == PT_EJPEG && cmyk_jpeg(buf, len, f, k, s, why) == PT_OK)
        rc = PT_OK;
    return rc;
}

int imf_decode(jpg_codec *jc, img_scratch *s, const uint8_t *buf, size_t len, uint8_t *out,
               int S, int crop, int fast, pt_err *why)
{
    imf_fit f = { .size = S, .mode = crop ? IMF_FIT_CROP : IMF_FIT_STRETCH };
    sink k = { .fixed = out };
    return decode_to_sink(jc, s, buf, len, &f, fast, &k, why);
}

int imf_decode_fit(jpg_codec *jc, img_scratch *s, const uint8_t *buf, size_t len,
                   const imf_fit *f, uint8_t **out, size_t *cap, int *out_w, int *out_h,
                   pt_err *why)
{
    if (f->size < 1 || (f->keep_aspect && f->mode != IMF_FIT_CROP))
        return err_set(why, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "bad fit: size %d, %s%s", f->size, imf_fit_name(f->mode),
                       f->keep_aspect ? " with keep-aspect" : "");
    sink k = { .grow = out, .cap = cap, .out_w = out_w, .out_h = out_h };
    return decode_to_sink(jc, s, buf, len, f, 0, &k, why);
}
