/* image — resizing and cropping of 8-bit RGB images.
 *
 * img_resize() is a separable resampler with a triangle (linear) filter whose
 * support widens with the downscale ratio, so shrinking averages every source pixel
 * (no aliasing) and enlarging is plain bilinear. Weights are precomputed per call.
 * img_crop_box() gives the centred source window with the target's aspect ratio.
 *
 * Ownership: the caller owns all pixel buffers. img_resize() needs scratch memory:
 * pass an img_scratch the caller keeps per thread (grown as needed, freed with
 * img_scratch_free), so steady-state resizing allocates nothing.
 */
#ifndef PT_IMAGE_H
#define PT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct img_scratch {
    void *mem;
    size_t cap;
} img_scratch;

void img_scratch_free(img_scratch *s);

/* Resize the sw x sh window at (sx, sy) of src (row pitch src_pitch bytes) into
 * dst (dw x dh, packed rows). Returns 0, or -1 when out of memory. */
int img_resize(const uint8_t *src, int src_pitch, int sx, int sy, int sw, int sh,
               uint8_t *dst, int dw, int dh, img_scratch *s);

/* Largest centred window of a w x h image with the aspect ratio dw:dh. */
void img_crop_box(int w, int h, int dw, int dh, int *x, int *y, int *cw, int *ch);

#endif
