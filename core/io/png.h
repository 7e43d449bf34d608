/* png — write 8-bit RGB images as PNG files, with no library beyond libc.
 *
 * The image data is stored in uncompressed ("stored") deflate blocks: files are
 * larger than a compressing writer's, but valid PNG that every viewer opens, and
 * the writer stays small and dependency-free. Writes are atomic (temp + rename).
 */
#ifndef PT_PNG_H
#define PT_PNG_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* rgb: h rows of w * 3 bytes. */
int png_write_rgb(const char *path, const uint8_t *rgb, int w, int h, pt_err *e);

/* Encode into a malloc'd buffer (caller frees). */
int png_encode_rgb(const uint8_t *rgb, int w, int h, uint8_t **out, size_t *len);

#endif
