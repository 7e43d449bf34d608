/* imgfile — an image file's bytes to RGB of a chosen size, whatever a user's photo
 * folder holds: JPEG (RGB, grayscale, CMYK and YCCK) and PNG (every colour type and
 * depth, as io/png decodes it). predict reads its inputs and shards its photos
 * through it, so both take the same files and size them the same way.
 *
 * How a photo fits a record (imf_fit, `petal-tui shards --fit`, `--keep-aspect`):
 *   crop     the largest centred square, resized to S x S (what predict does)
 *   pad      the whole photo, long side S, centred on an S x S canvas whose border is
 *            the photo's mean colour (imf_decode_fit says why not edge replication)
 *   stretch  the whole photo resized to S x S, the aspect ratio ignored
 *   keep_aspect (crop only): the whole photo, SHORT side S and the long side in
 *            proportion (at most IMF_MAX_ASPECT x S; a longer one is centre-cropped to
 *            that). Validation, predict and the previews centre-crop a record to
 *            their square input, so short side S gives them crop's pixels at full
 *            resolution; training takes its square at a random place along the long
 *            side (pipeline's crop_anywhere), so over the epochs it sees the whole
 *            photo. A long side of S would leave a centre square of only 3/4 S of a
 *            4:3 photo, upsampled back to the model's input.
 * Every resize is img_resize()'s area / bilinear resampler (or libjpeg-turbo's
 * decode-time scaling in front of it).
 *
 * Ownership: the caller owns the codec (one per thread), the scratch and out; nothing
 * is kept between calls but what the codec and scratch hold for reuse.
 */
#ifndef PT_IMGFILE_H
#define PT_IMGFILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/image.h"
#include "data/jpeg.h"

/* 1 when name ends in .jpg, .jpeg or .png (any case): the files taken as images. */
int imf_is_image_name(const char *name);

/* buf (len bytes) decoded into out (S x S x 3), centre-cropped to a square (crop) or
 * stretched; fast: the JPEG decoder's faster IDCT. PT_EJPEG (why says: "empty file",
 * "not a JPEG or PNG image", the decoder's reason) or PT_ENOMEM; why names no file: the
 * caller adds it. */
int imf_decode(jpg_codec *jc, img_scratch *s, const uint8_t *buf, size_t len, uint8_t *out,
               int S, int crop, int fast, pt_err *why);

/* Fit modes: crop (0) is the default everywhere. */
typedef enum imf_fit_mode { IMF_FIT_CROP = 0, IMF_FIT_PAD, IMF_FIT_STRETCH } imf_fit_mode;

/* Longest side / shortest side that keep_aspect stores (4:1). */
#define IMF_MAX_ASPECT 4

typedef struct imf_fit {
    int size;            /* S, >= 1 */
    imf_fit_mode mode;
    int keep_aspect;     /* 1: short side S, long side in proportion; mode must be crop */
} imf_fit;

/* "crop", "pad", "stretch" -> the mode; -1 for anything else. */
int imf_fit_parse(const char *name);
const char *imf_fit_name(imf_fit_mode mode);

/* The record's size for a w x h photo: S x S, or with keep_aspect S on the short side. */
void imf_fit_size(const imf_fit *f, int w, int h, int *out_w, int *out_h);

/* buf (len bytes) decoded and fitted as f says into *out, *out_w x *out_h RGB: *out is
 * the caller's buffer of *cap bytes, grown with realloc when too small (start with
 * NULL and 0; the caller frees it). Accurate IDCT. Errors as imf_decode(). */
int imf_decode_fit(jpg_codec *jc, img_scratch *s, const uint8_t *buf, size_t len,
                   const imf_fit *f, uint8_t **out, size_t *cap, int *out_w, int *out_h,
                   pt_err *why);

#endif
