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
 * Inputs that do not start like a JPEG are spliced into one: the first four bytes
 * are the frame's height and width (big-endian, as SOF holds them), the rest its
 * entropy-coded data, behind the tables of a 16 x 16 baseline JPEG that the encoder
 * made at quality 75 (the standard Huffman tables) and before an EOI. Mutating a
 * whole file mostly breaks its tables, so this is how the fuzzer reaches the
 * entropy decoder, every image size and the limits (libjpeg-turbo itself is not
 * instrumented: our code's coverage is all that guides it).
 *
 * Promises checked: every error is PT_EJPEG, PT_ETOOBIG or PT_ENOMEM with a message;
 * a size that passes the header is within the limits; decode_into reports the size
 * the header gave; after each input the codec still reads a good JPEG (a failure
 * must not leave it broken for the pipeline's next record).
 */
#include "tests/fuzz/fuzz.h"

#include "data/jpeg.h"

/* Full-size decodes above this many pixels are skipped: one input stays fast. */
#define FULL_MAX_PIXELS (512 * 512)

static jpg_codec *codec;
static uint8_t *good;   /* the template: a whole, good JPEG */
static size_t good_len;
static size_t head_len, sof_at; /* its bytes up to the end of the SOS segment; its SOF */

/* The template: a flat 16 x 16 JPEG at quality 75, cut after its SOS header. */
static void make_template(void)
{
    uint8_t rgb[16 * 16 * 3];
    memset(rgb, 128, sizeof rgb);
    const uint8_t *j;
    size_t len;
    pt_err e;
    FZ_ASSERT(jpg_encode(codec, rgb, 16, 16, 75, &j, &len, &e) == PT_OK, "%s", e.msg);
    size_t at = 2;
    while (at + 4 <= len && j[at] == 0xff) {
        uint8_t marker = j[at + 1];
        size_t seg = (size_t)j[at + 2] << 8 | j[at + 3];
        if (marker == 0xc0)
            sof_at = at;
        at += 2 + seg;
        if (marker == 0xda)
            break;
    }
    FZ_ASSERT(sof_at && at <= len, "no SOF0 or SOS in the encoder's JPEG");
    good = malloc(len);
    FZ_ASSERT(good, "out of memory");
    memcpy(good, j, len);
    good_len = len;
    head_len = at;
}

/* head + the data after the input's four size bytes + EOI, with SOF's size set. */
static uint8_t *splice(const uint8_t *data, size_t size, size_t *len)
{
    size_t body = size - 4;
    *len = head_len + body + 2;
    uint8_t *j = malloc(*len);
    FZ_ASSERT(j, "out of memory");
    memcpy(j, good, head_len);
    memcpy(j + sof_at + 5, data, 4); /* FF C0, length, precision, then height, width */
    memcpy(j + head_len, data + 4, body);
    j[*len - 2] = 0xff;
    j[*len - 1] = 0xd9;
    return j;
}

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

static void one(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!codec) {
        codec = jpg_codec_new();
        FZ_ASSERT(codec, "no codec");
        make_template();
    }
    if (jpg_is_jpeg(data, size) || size < 4) {
        one(data, size);
    } else {
        size_t len;
        uint8_t *j = splice(data, size, &len);
        one(j, len);
        free(j);
    }
    int w, h;
    pt_err e;
    FZ_ASSERT(jpg_header(codec, good, good_len, &w, &h, &e) == PT_OK && w == 16 && h == 16,
              "the codec no longer reads a good JPEG: %s", e.msg);
    return 0;
}

static void one(const uint8_t *data, size_t size)
{
    int w, h;
    pt_err e;
    int rc = jpg_header(codec, data, size, &w, &h, &e);
    if (rc != PT_OK) {
        check_err(rc, &e, "header");
        return;
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
}
