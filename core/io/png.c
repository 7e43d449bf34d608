/* png — encoding 8-bit RGB through libpng's simplified API (png_image): adaptive
 * row filters and zlib's deflate at its default level, so a preview sheet takes a
 * fraction of its raw pixels' size. */
#include "io/png.h"

#include <png.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

int png_encode_rgb(const uint8_t *rgb, int w, int h, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    if (w <= 0 || h <= 0 || w > 65535 || h > 65535)
        return PT_EUSAGE;
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    im.width = (png_uint_32)w;
    im.height = (png_uint_32)h;
    im.format = PNG_FORMAT_RGB;
    /* libpng's bound on the encoded size (raw rows and zlib's worst case): one pass. */
    size_t cap = (size_t)PNG_IMAGE_PNG_SIZE_MAX(im);
    uint8_t *buf = malloc(cap);
    if (!buf)
        return PT_ENOMEM;
    png_alloc_size_t n = cap;
    if (!png_image_write_to_memory(&im, buf, &n, 0, rgb, 0, NULL) || n > cap) {
        png_image_free(&im);
        free(buf);
        return PT_EFORMAT; /* libpng refused (im.message): not expected for 8-bit RGB */
    }
    uint8_t *fit = realloc(buf, n);
    *out = fit ? fit : buf;
    *len = (size_t)n;
    return PT_OK;
}

int png_write_rgb(const char *path, const uint8_t *rgb, int w, int h, pt_err *e)
{
    uint8_t *buf;
    size_t len;
    int rc = png_encode_rgb(rgb, w, h, &buf, &len);
    if (rc != PT_OK)
        return err_set(e, rc, path, PT_NO_RECORD, PT_NO_OFFSET, "cannot encode %dx%d PNG", w,
                       h);
    rc = util_write_file_atomic(path, buf, len, e);
    free(buf);
    return rc;
}
