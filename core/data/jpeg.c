#include "data/jpeg.h"

#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "data/image.h"

struct jpg_codec {
    tjhandle dec, enc;
    tjscalingfactor *factors;
    int n_factors;
    uint8_t *rgb;       /* scaled decode buffer */
    size_t rgb_cap;
    unsigned char *jpeg; /* encode output (tjAlloc'd) */
    unsigned long jpeg_cap;
    img_scratch scratch;
};

jpg_codec *jpg_codec_new(void)
{
    jpg_codec *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->dec = tjInitDecompress();
    c->enc = tjInitCompress();
    c->factors = tjGetScalingFactors(&c->n_factors);
    if (!c->dec || !c->enc || !c->factors) {
        jpg_codec_free(c);
        return NULL;
    }
    return c;
}

void jpg_codec_free(jpg_codec *c)
{
    if (!c)
        return;
    if (c->dec)
        tjDestroy(c->dec);
    if (c->enc)
        tjDestroy(c->enc);
    free(c->rgb);
    if (c->jpeg)
        tjFree(c->jpeg);
    img_scratch_free(&c->scratch);
    free(c);
}

int jpg_is_jpeg(const uint8_t *buf, size_t len)
{
    return len >= 3 && buf[0] == 0xff && buf[1] == 0xd8 && buf[2] == 0xff;
}

/* A failed call may leave TurboJPEG's decompressor in the middle of a header
 * (libjpeg-turbo 2.1's tjDecompressHeader3 does not abort it on an error: after a
 * frame of width 0, "Empty JPEG image", every later header on the handle failed
 * with "Bogus marker length"), so the codec takes a fresh one after any failure.
 * The error's text is read before. */
static int renew_dec(jpg_codec *c, int rc)
{
    tjDestroy(c->dec);
    c->dec = tjInitDecompress();
    return rc;
}

/* The decompressor, made again when a renewal could not (out of memory then). */
static int have_dec(jpg_codec *c, pt_err *e)
{
    if (!c->dec && !(c->dec = tjInitDecompress()))
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "out of memory for a JPEG decoder");
    return PT_OK;
}

int jpg_header(jpg_codec *c, const uint8_t *buf, size_t len, int *w, int *h, pt_err *e)
{
    if (!jpg_is_jpeg(buf, len))
        return err_set(e, PT_EJPEG, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "image bytes are not a JPEG (%zu bytes, starting %02x %02x)", len,
                       len > 0 ? buf[0] : 0, len > 1 ? buf[1] : 0);
    int sub = -1, cs = -1;
    *w = *h = 0;
    int rc = have_dec(c, e);
    if (rc != PT_OK)
        return rc;
    if (tjDecompressHeader3(c->dec, buf, (unsigned long)len, w, h, &sub, &cs) != 0)
        return renew_dec(c, err_set(e, PT_EJPEG, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                                    "bad JPEG header: %s", tjGetErrorStr2(c->dec)));
    /* A header cut short can "succeed" without a frame size. */
    if (*w <= 0 || *h <= 0)
        return err_set(e, PT_EJPEG, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "JPEG header is incomplete (%zu bytes)", len);
    if (*w > JPG_MAX_SIDE || *h > JPG_MAX_SIDE ||
        (long long)*w * *h > JPG_MAX_PIXELS)
        return err_set(e, PT_ETOOBIG, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "JPEG header claims %dx%d pixels, over the limit of %d per side and "
                       "%lld in all",
                       *w, *h, JPG_MAX_SIDE, JPG_MAX_PIXELS);
    return PT_OK;
}

static int decode_err(jpg_codec *c, pt_err *e)
{
    int code = tjGetErrorCode(c->dec);
    return renew_dec(c, err_set(e, PT_EJPEG, NULL, PT_NO_RECORD, PT_NO_OFFSET, "JPEG %s: %s",
                                code == TJERR_WARNING ? "data is corrupt" : "decode failed",
                                tjGetErrorStr2(c->dec)));
}

/* Flags every decode uses: stop on libjpeg warnings (truncated or corrupt data) and
 * cap progressive scans (a crafted file cannot make us loop for minutes). */
static int decode_flags(int fast)
{
    int f = TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS;
    if (fast)
        f |= TJFLAG_FASTDCT | TJFLAG_FASTUPSAMPLE;
    return f;
}

/* Grow the codec's RGB scratch to at least need bytes; -1 when out of memory. */
static int rgb_reserve(jpg_codec *c, size_t need)
{
    if (need <= c->rgb_cap)
        return 0;
    uint8_t *nb = realloc(c->rgb, need);
    if (!nb)
        return -1;
    c->rgb = nb;
    c->rgb_cap = need;
    return 0;
}

int jpg_decode_into(jpg_codec *c, const uint8_t *buf, size_t len, uint8_t *out, int out_w,
                    int out_h, int crop, int fast, int *src_w, int *src_h, pt_err *e)
{
    int w, h;
    int rc = jpg_header(c, buf, len, &w, &h, e);
    if (rc != PT_OK)
        return rc;
    if (src_w)
        *src_w = w;
    if (src_h)
        *src_h = h;
    return jpg_decode_sized(c, buf, len, w, h, out, out_w, out_h, crop, fast, e);
}

int jpg_decode_sized(jpg_codec *c, const uint8_t *buf, size_t len, int w, int h, uint8_t *out,
                     int out_w, int out_h, int crop, int fast, pt_err *e)
{
    /* The window of the source that maps onto the target. */
    int cx = 0, cy = 0, cw = w, ch = h;
    if (crop)
        img_crop_box(w, h, out_w, out_h, &cx, &cy, &cw, &ch);
    return jpg_decode_window(c, buf, len, w, h, cx, cy, cw, ch, out, out_w, out_h, fast, e);
}

int jpg_decode_window(jpg_codec *c, const uint8_t *buf, size_t len, int w, int h, int cx, int cy,
                      int cw, int ch, uint8_t *out, int out_w, int out_h, int fast, pt_err *e)
{
    int rc = have_dec(c, e);
    if (rc != PT_OK)
        return rc;
    if (cx < 0 || cy < 0 || cw < 1 || ch < 1 || cx + cw > w || cy + ch > h)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "window %dx%d at %d,%d is not inside the %dx%d image", cw, ch, cx, cy, w,
                       h);

    /* Smallest scaling factor whose scaled window still covers the target, so the
     * final resize only ever shrinks (or is exact). */
    int best = -1;
    long long best_px = 0;
    for (int i = 0; i < c->n_factors; i++) {
        tjscalingfactor f = c->factors[i];
        if (f.num > f.denom)
            continue; /* never upscale in the decoder */
        long long sw = ((long long)cw * f.num) / f.denom;
        long long sh = ((long long)ch * f.num) / f.denom;
        if (sw < out_w || sh < out_h)
            continue;
        long long px = (long long)TJSCALED(w, f) * TJSCALED(h, f);
        if (best < 0 || px < best_px) {
            best = i;
            best_px = px;
        }
    }
    tjscalingfactor f = { 1, 1 };
    if (best >= 0)
        f = c->factors[best];
    int dw = TJSCALED(w, f), dh = TJSCALED(h, f);
    if (dw == out_w && dh == out_h && cw == w && ch == h) {
        /* Decode-time scaling lands exactly on the target: straight into out. */
        if (tjDecompress2(c->dec, buf, (unsigned long)len, out, out_w, out_w * 3, out_h,
                          TJPF_RGB, decode_flags(fast)) != 0)
            return decode_err(c, e);
        return PT_OK;
    }
    if (rgb_reserve(c, (size_t)dw * dh * 3) != 0)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "out of memory decoding %dx%d", dw, dh);
    if (tjDecompress2(c->dec, buf, (unsigned long)len, c->rgb, dw, dw * 3, dh, TJPF_RGB,
                      decode_flags(fast)) != 0)
        return decode_err(c, e);

    /* Map the crop window into the scaled image. */
    int sx = (int)((long long)cx * dw / w), sy = (int)((long long)cy * dh / h);
    int sw = (int)((long long)cw * dw / w), sh = (int)((long long)ch * dh / h);
    if (sw < 1)
        sw = 1;
    if (sh < 1)
        sh = 1;
    if (sx + sw > dw)
        sw = dw - sx;
    if (sy + sh > dh)
        sh = dh - sy;
    if (img_resize(c->rgb, dw * 3, sx, sy, sw, sh, out, out_w, out_h, &c->scratch) != 0)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory resizing");
    return PT_OK;
}

int jpg_decode_full(jpg_codec *c, const uint8_t *buf, size_t len, const uint8_t **rgb, int *w,
                    int *h, pt_err *e)
{
    int rc = jpg_header(c, buf, len, w, h, e);
    if (rc != PT_OK)
        return rc;
    if (rgb_reserve(c, (size_t)*w * *h * 3) != 0)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    if (tjDecompress2(c->dec, buf, (unsigned long)len, c->rgb, *w, *w * 3, *h, TJPF_RGB,
                      decode_flags(0)) != 0)
        return decode_err(c, e);
    *rgb = c->rgb;
    return PT_OK;
}

int jpg_encode(jpg_codec *c, const uint8_t *rgb, int w, int h, int quality, const uint8_t **out,
               size_t *len, pt_err *e)
{
    unsigned long size = c->jpeg_cap;
    if (tjCompress2(c->enc, rgb, w, w * 3, h, TJPF_RGB, &c->jpeg, &size, TJSAMP_420, quality,
                    TJFLAG_ACCURATEDCT) != 0)
        return err_set(e, PT_EJPEG, NULL, PT_NO_RECORD, PT_NO_OFFSET, "JPEG encode failed: %s",
                       tjGetErrorStr2(c->enc));
    /* TurboJPEG may have reallocated the buffer; remember its real capacity. */
    unsigned long cap = tjBufSize(w, h, TJSAMP_420);
    if (cap > c->jpeg_cap)
        c->jpeg_cap = cap;
    *out = c->jpeg;
    *len = (size_t)size;
    return PT_OK;
}
