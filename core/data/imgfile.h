/* imgfile — an image file's bytes to S x S RGB, whatever a user's photo folder holds:
 * JPEG (RGB, grayscale, CMYK and YCCK) and PNG (every colour type and depth, as
 * io/png decodes it). predict reads its inputs and shards its photos through it, so
 * both take the same files and size them the same way.
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

#endif
