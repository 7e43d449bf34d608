/* imgfile — image files to S x S RGB (see imgfile.h). */
#include "data/imgfile.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <turbojpeg.h>

#include "io/png.h"

int imf_is_image_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg") ||
                   !strcasecmp(dot, ".png"));
}

/* A full-size RGB image at S x S, centre-cropped (crop) or stretched. */
static int rgb_to_size(const uint8_t *rgb, int w, int h, uint8_t *out, int S, int crop,
                       img_scratch *s, pt_err *e)
{
    int x = 0, y = 0, cw = w, ch = h;
    if (crop)
        img_crop_box(w, h, S, S, &x, &y, &cw, &ch);
    if (img_resize(rgb, w * 3, x, y, cw, ch, out, S, S, s) != 0)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    return PT_OK;
}

static int png_to_size(const uint8_t *buf, size_t len, uint8_t *out, int S, int crop,
                       img_scratch *s, pt_err *e)
{
    uint8_t *rgb;
    int w, h;
    int rc = png_decode_rgb(buf, len, &rgb, &w, &h, e);
    if (rc != PT_OK)
        return rc;
    rc = rgb_to_size(rgb, w, h, out, S, crop, s, e);
    free(rgb);
    return rc;
}

/* A CMYK or YCCK JPEG: libjpeg converts neither to RGB, so it is decoded to CMYK and
 * converted here as libjpeg-turbo's own tools do (R = C x K / 255 on the stored,
 * Adobe-inverted values), then sized as the rest. PT_EJPEG (why kept) for any other.
 * Such files are rare: the decompressor is made for the call. */
static int cmyk_jpeg(const uint8_t *buf, size_t len, uint8_t *out, int S, int crop,
                     img_scratch *s, pt_err *why)
{
    int w, h, sub, cs;
    tjhandle tj = tjInitDecompress();
    if (!tj)
        return err_set(why, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    if (tjDecompressHeader3(tj, buf, (unsigned long)len, &w, &h, &sub, &cs) != 0 ||
        (cs != TJCS_CMYK && cs != TJCS_YCCK)) {
        tjDestroy(tj);
        return PT_EJPEG;
    }
    /* jpg_header already held the size to the limits. */
    uint8_t *cmyk = malloc((size_t)w * h * 4), *rgb = malloc((size_t)w * h * 3);
    int rc = PT_OK;
    if (!cmyk || !rgb)
        rc = err_set(why, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    else if (tjDecompress2(tj, buf, (unsigned long)len, cmyk, w, w * 4, h, TJPF_CMYK, 0) != 0)
        rc = err_set(why, PT_EJPEG, NULL, PT_NO_RECORD, PT_NO_OFFSET, "CMYK JPEG: %s",
                     tjGetErrorStr2(tj));
    if (rc == PT_OK) {
        for (size_t i = 0; i < (size_t)w * h; i++) {
            const uint8_t *c = cmyk + i * 4;
            for (int j = 0; j < 3; j++)
                rgb[i * 3 + j] = (uint8_t)((c[j] * c[3] + 127) / 255);
        }
        rc = rgb_to_size(rgb, w, h, out, S, crop, s, why);
    }
    free(cmyk);
    free(rgb);
    tjDestroy(tj);
    return rc;
}

int imf_decode(jpg_codec *jc, img_scratch *s, const uint8_t *buf, size_t len, uint8_t *out,
               int S, int crop, int fast, pt_err *why)
{
    if (len == 0)
        return err_set(why, PT_EJPEG, NULL, PT_NO_RECORD, PT_NO_OFFSET, "empty file");
    if (png_is_png(buf, len))
        return png_to_size(buf, len, out, S, crop, s, why);
    if (!jpg_is_jpeg(buf, len))
        return err_set(why, PT_EJPEG, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "not a JPEG or PNG image");
    int rc = jpg_decode_into(jc, buf, len, out, S, S, crop, fast, NULL, NULL, why);
    if (rc == PT_EJPEG && cmyk_jpeg(buf, len, out, S, crop, s, why) == PT_OK)
        rc = PT_OK;
    return rc;
}
