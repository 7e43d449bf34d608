/* png_read — PNG decoding through libpng's simplified API (png_image), for images
 * a person passes by name (`petal-tui classify`). Any bit depth, palette, grey or
 * alpha comes back as 8-bit RGB; alpha is composited onto black, as libpng does
 * for a format without alpha. */
#include "io/png.h"

#include <png.h>
#include <stdlib.h>
#include <string.h>

/* The limits of the JPEG path (data/jpeg.h): a header claiming more is refused
 * before any pixel memory is allocated. */
#define PNG_MAX_SIDE 16384
#define PNG_MAX_PIXELS (64LL * 1024 * 1024)

int png_is_png(const uint8_t *buf, size_t len)
{
    static const uint8_t sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    return len >= 8 && memcmp(buf, sig, 8) == 0;
}

int png_decode_rgb(const uint8_t *buf, size_t len, uint8_t **rgb, int *w, int *h, pt_err *e)
{
    *rgb = NULL;
    *w = *h = 0;
    if (!png_is_png(buf, len))
        return err_set(e, PT_EFORMAT, NULL, PT_NO_RECORD, 0, "not a PNG file (no PNG signature)");
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&im, buf, len))
        return err_set(e, PT_EFORMAT, NULL, PT_NO_RECORD, PT_NO_OFFSET, "PNG: %s", im.message);
    if (im.width == 0 || im.height == 0 || im.width > PNG_MAX_SIDE || im.height > PNG_MAX_SIDE ||
        (long long)im.width * im.height > PNG_MAX_PIXELS) {
        int rc = err_set(e, PT_ETOOBIG, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "PNG of %ux%u pixels: the limit is %d per side and %lld in all",
                         im.width, im.height, PNG_MAX_SIDE, PNG_MAX_PIXELS);
        png_image_free(&im);
        return rc;
    }
    im.format = PNG_FORMAT_RGB;
    size_t n = (size_t)PNG_IMAGE_SIZE(im);
    uint8_t *out = malloc(n);
    if (!out) {
        png_image_free(&im);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    png_color black = { 0, 0, 0 };
    if (!png_image_finish_read(&im, &black, out, 0, NULL)) {
        int rc = err_set(e, PT_EFORMAT, NULL, PT_NO_RECORD, PT_NO_OFFSET, "PNG: %s", im.message);
        free(out);
        png_image_free(&im);
        return rc;
    }
    *rgb = out;
    *w = (int)im.width;
    *h = (int)im.height;
    return PT_OK;
}
