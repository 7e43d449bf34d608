/* fuzz_jpeg — the JPEG path (core/data/jpeg.c) on any bytes, with its size limits.
 *
 * The bytes are one record's image. They go the pipeline's way: jpg_header() (the
 * limits: a side over JPG_MAX_SIDE or more than JPG_MAX_PIXELS is refused before
 * any pixel memory), then jpg_decode_sized() to a small square with the centre crop
 * and the fast IDCT, and jpg_decode_into() to an odd, stretched size with the
 * accurate one (decode-time scaling, then the resampler); an image small enough is
 * also decoded at its own size straight into the destination, and in full with
 * jpg_decode_full(). Each destination is allocated to its exact size, so a write
 * past it is caught.
 *
 * Promises checked: every error is PT_EJPEG, PT_ETOOBIG or PT_ENOMEM with a message;
 * a size that passes the header is within the limits; decode_into reports the size
 * the header gave.
 */
#include "tests/fuzz/fuzz.h"

#include "data/jpeg.h"

/* Full-size decodes above this many pixels are skipped: one input stays fast. */
#define FULL_MAX_PIXELS (512 * 512)

static jpg_codec *codec;

static void check_err(int rc, const pt_err *e, const char *what)
{
    FZ_ASSERT((rc == PT_EJPEG || rc == PT_ETOOBIG || rc == PT_ENOMEM) && rc == e->code &&
                  e->msg[0],
              "%s: %d %s", what, rc, e->msg);
}

static void decode_to(const uint8_t *data, size_t size, int w, int h, int out_w, int out_h,
                      int crop, int fast)
{
    uint8_t *out = malloc((size_t)out_w * out_h * 3);
    FZ_ASSERT(out, "out of memory");
    pt_err e;
    int rc = jpg_decode_sized(codec, data, size, w, h, out, out_w, out_h, crop, fast, &e);
    if (rc != PT_OK)
        check_err(rc, &e, "decode_sized");
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!codec) {
        codec = jpg_codec_new();
        FZ_ASSERT(codec, "no codec");
    }
    int w, h;
    pt_err e;
    int rc = jpg_header(codec, data, size, &w, &h, &e);
    if (rc != PT_OK) {
        check_err(rc, &e, "header");
        return 0;
    }
    FZ_ASSERT(w > 0 && h > 0 && w <= JPG_MAX_SIDE && h <= JPG_MAX_SIDE &&
                  (long long)w * h <= JPG_MAX_PIXELS,
              "a header of %dx%d passed the limits", w, h);

    /* The pipeline: a square with the centre crop, fast. */
    decode_to(data, size, w, h, 32, 32, 1, 1);

    /* Stretched to an odd size, accurate, through the header again. */
    uint8_t *out = malloc(37 * 23 * 3);
    FZ_ASSERT(out, "out of memory");
    int sw = 0, sh = 0;
    rc = jpg_decode_into(codec, data, size, out, 37, 23, 0, 0, &sw, &sh, &e);
    if (rc != PT_OK)
        check_err(rc, &e, "decode_into");
    else
        FZ_ASSERT(sw == w && sh == h, "decode_into says %dx%d, the header %dx%d", sw, sh, w, h);
    free(out);

    /* Its own size: straight into the destination, no resize. */
    if (w <= 64 && h <= 64)
        decode_to(data, size, w, h, w, h, 0, 0);

    if ((long long)w * h <= FULL_MAX_PIXELS) {
        const uint8_t *rgb;
        int fw, fh;
        rc = jpg_decode_full(codec, data, size, &rgb, &fw, &fh, &e);
        if (rc != PT_OK) {
            check_err(rc, &e, "decode_full");
        } else {
            FZ_ASSERT(fw == w && fh == h, "decode_full %dx%d, header %dx%d", fw, fh, w, h);
            fz_use(rgb[0] + rgb[(size_t)fw * fh * 3 - 1]);
        }
    }
    return 0;
}
