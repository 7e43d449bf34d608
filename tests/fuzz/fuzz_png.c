/* fuzz_png — the PNG reader (core/io/png_read.c) on any bytes.
 *
 * The bytes are an image file given to `petal-tui classify`. png_decode_rgb() reads
 * any PNG (palette, grey, 16-bit, alpha, interlaced) into 8-bit RGB, refusing a
 * header over 16384 pixels a side or 64 Mpixels before any pixel memory. What
 * decodes is read to its last byte (the buffer is exactly w x h x 3). When a chunk's
 * CRC is wrong the file is read again with every chunk's CRC made right, so that
 * mutations get past libpng's checksums into the chunks behind them (libpng itself
 * is not instrumented: our code's coverage is all that guides the fuzzer).
 *
 * Promises checked: every error is PT_EFORMAT, PT_ETOOBIG or PT_ENOMEM with a
 * message and no image; a decoded image is within the limits.
 */
#include "tests/fuzz/fuzz.h"

#include <zlib.h>

#include "io/png.h"

static void one(const uint8_t *data, size_t size)
{
    uint8_t *rgb = (uint8_t *)1;
    int w = -1, h = -1;
    pt_err e;
    int rc = png_decode_rgb(data, size, &rgb, &w, &h, &e);
    if (rc != PT_OK) {
        FZ_ASSERT((rc == PT_EFORMAT || rc == PT_ETOOBIG || rc == PT_ENOMEM) && rc == e.code &&
                      e.msg[0] && rgb == NULL,
                  "%d: %s", rc, e.msg);
        return;
    }
    FZ_ASSERT(rgb && w > 0 && h > 0 && w <= 16384 && h <= 16384 &&
                  (long long)w * h <= 64LL * 1024 * 1024,
              "decoded %dx%d", w, h);
    fz_use(rgb[0] + rgb[(size_t)w * h * 3 - 1]);
    free(rgb);
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Make the CRC of every whole chunk right; 1 when something changed. */
static int repair(uint8_t *b, size_t size)
{
    int changed = 0;
    size_t at = 8;
    while (size >= 8 && size - at >= 12) {
        uint32_t n = be32(b + at);
        if (n > size - at - 12)
            break;
        uint32_t want = (uint32_t)crc32(0, b + at + 4, (uInt)(4 + (size_t)n));
        if (be32(b + at + 8 + n) != want) {
            for (int k = 0; k < 4; k++)
                b[at + 8 + n + (size_t)k] = (uint8_t)(want >> (24 - 8 * k));
            changed = 1;
        }
        at += 12 + (size_t)n;
    }
    return changed;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one(data, size);
    if (!png_is_png(data, size))
        return 0;
    uint8_t *fixed = malloc(size);
    FZ_ASSERT(fixed, "out of memory");
    memcpy(fixed, data, size);
    if (repair(fixed, size))
        one(fixed, size);
    free(fixed);
    return 0;
}
