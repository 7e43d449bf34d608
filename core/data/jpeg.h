/* jpeg — JPEG decoding and encoding through libjpeg-turbo's TurboJPEG API.
 *
 * A jpg_codec holds one TurboJPEG decompressor and compressor plus scratch memory;
 * it is not shared between threads (each pipeline worker has its own).
 *
 * jpg_decode_into() is the pipeline's path: it reads the header, refuses images
 * whose header claims more than JPG_MAX_PIXELS or a side over JPG_MAX_SIDE, picks
 * the smallest decode-time scaling factor (1/8 ... 1) that still covers the target,
 * decodes, and resizes to exactly the target size (centre-cropping to the target's
 * aspect first when asked). When the image already has the target size it decodes
 * straight into the destination, with no copy. Libjpeg warnings (a truncated or
 * corrupt stream) are errors: a half-grey image must not train silently.
 *
 * Errors come back as PT_EJPEG / PT_ETOOBIG with libjpeg's own text and no file
 * context; the caller adds file, record and offset. A failure leaves the codec as
 * good as new for the next image (its decompressor is made again).
 */
#ifndef PT_JPEG_H
#define PT_JPEG_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define JPG_MAX_SIDE 16384
#define JPG_MAX_PIXELS (64LL * 1024 * 1024)

typedef struct jpg_codec jpg_codec;

jpg_codec *jpg_codec_new(void);
void jpg_codec_free(jpg_codec *c);

/* Header only: size, after the limit checks. Cheap (no decoding). */
int jpg_header(jpg_codec *c, const uint8_t *buf, size_t len, int *w, int *h, pt_err *e);

/* Decode and resize to exactly out_w x out_h RGB (packed rows) in out. crop: centre
 * crop to the target aspect before resizing (otherwise stretch). fast: use the
 * faster, slightly less accurate IDCT and upsampling. Reports the source size. */
int jpg_decode_into(jpg_codec *c, const uint8_t *buf, size_t len, uint8_t *out, int out_w,
                    int out_h, int crop, int fast, int *src_w, int *src_h, pt_err *e);

/* As jpg_decode_into() for a JPEG whose size a jpg_header() call on the same bytes
 * already gave (and checked): skips parsing the header again. */
int jpg_decode_sized(jpg_codec *c, const uint8_t *buf, size_t len, int w, int h, uint8_t *out,
                     int out_w, int out_h, int crop, int fast, pt_err *e);

/* As jpg_decode_sized() for the source window of ww x wh pixels at (wx, wy) (inside the
 * w x h image), resized to out_w x out_h whatever its aspect. */
int jpg_decode_window(jpg_codec *c, const uint8_t *buf, size_t len, int w, int h, int wx, int wy,
                      int ww, int wh, uint8_t *out, int out_w, int out_h, int fast, pt_err *e);

/* Decode at full size into codec-owned memory valid until the next call. */
int jpg_decode_full(jpg_codec *c, const uint8_t *buf, size_t len, const uint8_t **rgb, int *w,
                    int *h, pt_err *e);

/* Encode w x h RGB at quality 1..100 with 4:2:0 chroma. *out is codec-owned memory
 * valid until the next encode. */
int jpg_encode(jpg_codec *c, const uint8_t *rgb, int w, int h, int quality, const uint8_t **out,
               size_t *len, pt_err *e);

/* 1 when the bytes start like a JPEG (SOI marker). */
int jpg_is_jpeg(const uint8_t *buf, size_t len);

#endif
