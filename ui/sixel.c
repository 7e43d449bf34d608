#include "ui/sixel.h"

#include <sixel.h>
#include <stdlib.h>
#include <string.h>

/* libsixel's write callback: append to the buffer. */
static int sink(char *data, int size, void *priv)
{
    ui_sixel_buf *b = priv;
    if (size <= 0)
        return 0;
    if (b->len + (size_t)size > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->len + (size_t)size)
            cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) {
            b->oom = 1;
            return -1;
        }
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, (size_t)size);
    b->len += (size_t)size;
    return 0;
}

int ui_sixel_encode(const uint8_t *rgb, int w, int h, int colors, ui_sixel_buf *out)
{
    out->len = 0;
    out->oom = 0;
    if (!rgb || w <= 0 || h <= 0)
        return -1;
    if (colors < 2)
        colors = 2;
    if (colors > 256)
        colors = 256;
    size_t n = (size_t)w * (size_t)h * 3;
    unsigned char *px = malloc(n);
    if (!px)
        return -1;
    memcpy(px, rgb, n);
    sixel_output_t *o = NULL;
    sixel_dither_t *d = NULL;
    int rc = -1;
    if (SIXEL_FAILED(sixel_output_new(&o, sink, out, NULL)))
        goto done;
    sixel_output_set_encode_policy(o, SIXEL_ENCODEPOLICY_FAST);
    if (SIXEL_FAILED(sixel_dither_new(&d, colors, NULL)))
        goto done;
    if (SIXEL_FAILED(sixel_dither_initialize(d, px, w, h, SIXEL_PIXELFORMAT_RGB888,
                                             SIXEL_LARGE_NORM, SIXEL_REP_AVERAGE_COLORS,
                                             SIXEL_QUALITY_LOW)))
        goto done;
    sixel_dither_set_diffusion_type(d, SIXEL_DIFFUSE_NONE);
    if (SIXEL_FAILED(sixel_encode(px, w, h, 3, d, o)) || out->oom)
        goto done;
    rc = 0;
done:
    if (d)
        sixel_dither_unref(d);
    if (o)
        sixel_output_unref(o);
    free(px);
    if (rc != 0)
        out->len = 0;
    return rc;
}

void ui_sixel_buf_free(ui_sixel_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
