/* png — 8-bit RGB images as PNG files.
 *
 * Writing (png.c) goes through libpng's simplified API: adaptive row filters and
 * zlib's deflate, so files are a fraction of the raw pixels' size. Writes are
 * atomic (temp + rename).
 * Reading (png_read.c) goes through libpng, which knows every variant of the format.
 */
#ifndef PT_PNG_H
#define PT_PNG_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* rgb: h rows of w * 3 bytes. */
int png_write_rgb(const char *path, const uint8_t *rgb, int w, int h, pt_err *e);

/* Encode into a malloc'd buffer (caller frees). PT_OK, PT_EUSAGE (a side outside
 * 1..65535), PT_ENOMEM, or PT_EFORMAT when libpng refuses. */
int png_encode_rgb(const uint8_t *rgb, int w, int h, uint8_t **out, size_t *len);

/* 1 when the bytes start with PNG's signature. */
int png_is_png(const uint8_t *buf, size_t len);

/* Decode any PNG (palette, grey, 16-bit, alpha onto black, interlaced) into 8-bit
 * RGB rows in a malloc'd *rgb the caller frees. A header over 16384 pixels a side
 * or 64 Mpixels is refused (PT_ETOOBIG) before pixels are allocated. A chunk that
 * claims more bytes than follow it is PT_EFORMAT at its byte offset, before libpng
 * allocates anything for it; any other damage is PT_EFORMAT with libpng's message.
 * Errors carry no file name: the caller adds it. */
int png_decode_rgb(const uint8_t *buf, size_t len, uint8_t **rgb, int *w, int *h, pt_err *e);

#endif
