/* fuzz_png — the PNG reader (core/io/png_read.c) on any bytes.
 *
 * The bytes are an image file given to `petal-tui classify`. png_decode_rgb() reads
 * any PNG (palette, grey, 16-bit, alpha, interlaced) into 8-bit RGB, refusing a
 * header over 16384 pixels a side or 64 Mpixels before any pixel memory. What
 * decodes is read to its last byte (the buffer is exactly w x h x 3).
 *
 * Promises checked: every error is PT_EFORMAT, PT_ETOOBIG or PT_ENOMEM with a
 * message and no image; a decoded image is within the limits.
 */
#include "tests/fuzz/fuzz.h"

#include "io/png.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *rgb = (uint8_t *)1;
    int w = -1, h = -1;
    pt_err e;
    int rc = png_decode_rgb(data, size, &rgb, &w, &h, &e);
    if (rc != PT_OK) {
        FZ_ASSERT((rc == PT_EFORMAT || rc == PT_ETOOBIG || rc == PT_ENOMEM) && rc == e.code &&
                      e.msg[0] && rgb == NULL,
                  "%d: %s", rc, e.msg);
        return 0;
    }
    FZ_ASSERT(rgb && w > 0 && h > 0 && w <= 16384 && h <= 16384 &&
                  (long long)w * h <= 64LL * 1024 * 1024,
              "decoded %dx%d", w, h);
    fz_use(rgb[0] + rgb[(size_t)w * h * 3 - 1]);
    free(rgb);
    return 0;
}
