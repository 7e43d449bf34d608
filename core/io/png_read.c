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

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Every chunk up to IEND must fit in the bytes there are. libpng allocates a chunk's
 * length before reading it, so without this a few bytes claiming a 2 GB text chunk
 * cost a 2 GB allocation. A file cut inside a chunk header is left to libpng. */
static int check_chunks(const uint8_t *buf, size_t len, pt_err *e)
{
    size_t at = 8;
    while (len - at >= 8) {
        uint32_t n = be32(buf + at);
        char type[5];
        for (int k = 0; k < 4; k++) {
            uint8_t c = buf[at + 4 + k];
            type[k] = (char)(c >= 0x20 && c < 0x7f ? c : '?');
        }
        type[4] = '\0';
        if (n > len - at - 8 || len - at - 8 - n < 4)
            return err_set(e, PT_EFORMAT, NULL, PT_NO_RECORD, (long long)at,
                           "PNG chunk '%s' of %u bytes needs %llu after its header (data and "
                           "CRC), the file has %zu: cut short or damaged",
                           type, n, (unsigned long long)n + 4, len - at - 8);
        if (memcmp(buf + at + 4, "IEND", 4) == 0)
            break;
        at += 12 + (size_t)n;
    }
    return PT_OK;
}

int png_decode_rgb(const uint8_t *buf, size_t len, uint8_t **rgb, int *w, int *h, pt_err *e)
{
    *rgb = NULL;
    *w = *h = 0;
    if (!png_is_png(buf, len))
        return err_set(e, PT_EFORMAT, NULL, PT_NO_RECORD, 0, "not a PNG file (no PNG signature)");
    int rc = check_chunks(buf, len, e);
    if (rc != PT_OK)
        return rc;
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&im, buf, len))
        return err_set(e, PT_EFORMAT, NULL, PT_NO_RECORD, PT_NO_OFFSET, "PNG: %s", im.message);
    if (im.width == 0 || im.height == 0 || im.width > PNG_MAX_SIDE || im.height > PNG_MAX_SIDE ||
        (long long)im.width * im.height > PNG_MAX_PIXELS) {
        rc = err_set(e, PT_ETOOBIG, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                     "PNG of %ux%u pixels: the limit is %d per side and %lld in all", im.width,
                     im.height, PNG_MAX_SIDE, PNG_MAX_PIXELS);
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
        rc = err_set(e, PT_EFORMAT, NULL, PT_NO_RECORD, PT_NO_OFFSET, "PNG: %s", im.message);
        free(out);
        png_image_free(&im);
        return rc;
    }
    *rgb = out;
    *w = (int)im.width;
    *h = (int)im.height;
    return PT_OK;
}
