/* sixel — RGB pictures to sixel bytes, through libsixel.
 *
 * ui_sixel_encode() builds a palette of at most `colors` entries for the picture
 * (libsixel's median cut on a sample, no error diffusion: diffusion makes every
 * frame of a changing picture shimmer and costs time) and appends the whole DCS
 * sequence to a growable buffer. It never writes to the terminal; the preview
 * module decides where and when the bytes go (ui_term_write_at).
 *
 * Ownership: the caller owns the ui_sixel_buf; ui_sixel_buf_free() releases its
 * bytes. The input pixels are not modified (libsixel gets a copy).
 */
#ifndef PT_UI_SIXEL_H
#define PT_UI_SIXEL_H

#include <stddef.h>
#include <stdint.h>

typedef struct ui_sixel_buf {
    char *data;
    size_t len, cap;
    int oom;            /* an append failed */
} ui_sixel_buf;

/* Encode w x h packed RGB into out (replacing its contents). colors in 2..256.
 * Returns 0, or -1 (out->len is then 0). */
int ui_sixel_encode(const uint8_t *rgb, int w, int h, int colors, ui_sixel_buf *out);

void ui_sixel_buf_free(ui_sixel_buf *b);

#endif
