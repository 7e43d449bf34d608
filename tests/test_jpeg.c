/* Tests of core/data/jpeg and core/data/image on real photos and on damaged input. */
#include "tests/t.h"
#include "tests/fixtures.h"

#include <stdlib.h>

#include "base/util.h"
#include "data/image.h"
#include "data/jpeg.h"
#include "io/example.h"
#include "io/tfrecord.h"

/* The real photo of ../shared/data; the tests that need no camera photo use a demo
 * flower encoded by libjpeg-turbo (fx_demo_jpeg), so they run on any clone. */
static const char *DAISY = "flower-jpegs-128/daisy/100080576_f52e8ee070_n.jpg";

static double psnr(const uint8_t *a, const uint8_t *b, size_t n)
{
    double se = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        se += d * d;
    }
    if (se == 0)
        return 99;
    return 10 * log10(255.0 * 255.0 / (se / n));
}

TEST(jpeg_decodes_real_photo_at_native_size)
{
    T_NEED_DATA();
    uint8_t *buf;
    size_t len;
    pt_err e;
    T_REQUIRE(util_read_file(t_data(DAISY), &buf, &len, &e) == PT_OK);
    jpg_codec *c = jpg_codec_new();
    int w, h;
    T_REQUIRE(jpg_header(c, buf, len, &w, &h, &e) == PT_OK);
    T_EQ_INT(w, 128);
    T_EQ_INT(h, 128);
    uint8_t *out = malloc(128 * 128 * 3);
    T_REQUIRE(jpg_decode_into(c, buf, len, out, 128, 128, 1, 0, &w, &h, &e) == PT_OK);
    /* Same pixels as the full decode path. */
    const uint8_t *full;
    T_REQUIRE(jpg_decode_full(c, buf, len, &full, &w, &h, &e) == PT_OK);
    T_CHECK(memcmp(out, full, 128 * 128 * 3) == 0);
    /* A real photo: not flat. */
    long sum = 0, sq = 0;
    for (int i = 0; i < 128 * 128 * 3; i++) {
        sum += out[i];
        sq += (long)out[i] * out[i];
    }
    double mean = (double)sum / (128 * 128 * 3);
    double var = (double)sq / (128 * 128 * 3) - mean * mean;
    T_CHECK(mean > 20 && mean < 235 && var > 100);
    free(out);
    free(buf);
    jpg_codec_free(c);
}

TEST(jpeg_scaled_decode_matches_full_decode_then_resize)
{
    /* 64x64 from a 128x128 JPEG uses decode-time 1/2 scaling; it should be close to
     * decoding fully and area-resizing (the two differ only by IDCT rounding). */
    uint8_t *buf;
    size_t len;
    pt_err e;
    T_REQUIRE(fx_demo_jpeg(0, 7, 128, &buf, &len) == 0);
    jpg_codec *c = jpg_codec_new();
    uint8_t scaled[64 * 64 * 3], ref[64 * 64 * 3];
    int w, h;
    T_REQUIRE(jpg_decode_into(c, buf, len, scaled, 64, 64, 1, 0, &w, &h, &e) == PT_OK);
    const uint8_t *full;
    T_REQUIRE(jpg_decode_full(c, buf, len, &full, &w, &h, &e) == PT_OK);
    img_scratch s = { 0 };
    T_REQUIRE(img_resize(full, 128 * 3, 0, 0, 128, 128, ref, 64, 64, &s) == 0);
    double p = psnr(scaled, ref, sizeof ref);
    T_CHECKF(p > 30, "psnr %.1f dB", p);
    /* 96x96 (no exact factor: decode at 1 then shrink) and 192x192 (upscale) work. */
    uint8_t *o96 = malloc(96 * 96 * 3), *o192 = malloc(192 * 192 * 3);
    T_CHECK(jpg_decode_into(c, buf, len, o96, 96, 96, 1, 0, &w, &h, &e) == PT_OK);
    T_CHECK(jpg_decode_into(c, buf, len, o192, 192, 192, 1, 1, &w, &h, &e) == PT_OK);
    free(o96);
    free(o192);
    img_scratch_free(&s);
    free(buf);
    jpg_codec_free(c);
}

TEST(jpeg_encode_decode_roundtrip_quality)
{
    uint8_t *buf;
    size_t len;
    pt_err e;
    T_REQUIRE(fx_demo_jpeg(0, 7, 128, &buf, &len) == 0);
    jpg_codec *c = jpg_codec_new();
    const uint8_t *rgb;
    int w, h;
    T_REQUIRE(jpg_decode_full(c, buf, len, &rgb, &w, &h, &e) == PT_OK);
    uint8_t *orig = malloc((size_t)w * h * 3);
    memcpy(orig, rgb, (size_t)w * h * 3);
    const uint8_t *enc;
    size_t elen;
    T_REQUIRE(jpg_encode(c, orig, w, h, 95, &enc, &elen, &e) == PT_OK);
    T_CHECK(jpg_is_jpeg(enc, elen));
    uint8_t *copy = malloc(elen);
    memcpy(copy, enc, elen);
    T_REQUIRE(jpg_decode_full(c, copy, elen, &rgb, &w, &h, &e) == PT_OK);
    double p = psnr(orig, rgb, (size_t)w * h * 3);
    T_CHECKF(p > 33, "psnr %.1f dB", p);
    free(copy);
    free(orig);
    free(buf);
    jpg_codec_free(c);
}

TEST(jpeg_rejects_non_jpeg_bytes)
{
    jpg_codec *c = jpg_codec_new();
    pt_err e;
    uint8_t out[16 * 16 * 3];
    const uint8_t png[] = { 0x89, 'P', 'N', 'G', 13, 10, 26, 10, 0, 0 };
    T_EQ_INT(jpg_decode_into(c, png, sizeof png, out, 16, 16, 1, 0, NULL, NULL, &e), PT_EJPEG);
    T_CHECK(strstr(e.msg, "not a JPEG") != NULL);
    T_EQ_INT(jpg_decode_into(c, png, 0, out, 16, 16, 1, 0, NULL, NULL, &e), PT_EJPEG);
    jpg_codec_free(c);
}

TEST(jpeg_truncated_is_an_error_at_every_cut)
{
    uint8_t *buf;
    size_t len;
    pt_err e;
    T_REQUIRE(fx_demo_jpeg(0, 7, 128, &buf, &len) == 0);
    jpg_codec *c = jpg_codec_new();
    uint8_t *out = malloc(128 * 128 * 3);
    int ok = 0, bad = 0;
    size_t step = t_slow_mode() ? 401 : 101;
    int cuts = 0;
    for (size_t cut = 1; cut < len - 2; cut += step, cuts++) {
        int rc = jpg_decode_into(c, buf, cut, out, 128, 128, 1, 0, NULL, NULL, &e);
        if (rc == PT_OK)
            ok++;
        else {
            bad++;
            T_CHECKF(rc == PT_EJPEG, "cut %zu: rc %d: %s", cut, rc, e.msg);
        }
    }
    T_EQ_INT(ok, 0);
    T_EQ_INT(bad, cuts);
    T_CHECK(cuts > 5);
    free(out);
    free(buf);
    jpg_codec_free(c);
}

/* Find the SOF0/SOF2 marker and overwrite height and width. */
static int patch_sof(uint8_t *buf, size_t len, int w, int h)
{
    for (size_t i = 2; i + 9 < len; i++) {
        if (buf[i] == 0xff && (buf[i + 1] == 0xc0 || buf[i + 1] == 0xc2)) {
            buf[i + 5] = (uint8_t)(h >> 8);
            buf[i + 6] = (uint8_t)h;
            buf[i + 7] = (uint8_t)(w >> 8);
            buf[i + 8] = (uint8_t)w;
            return 1;
        }
    }
    return 0;
}

TEST(jpeg_header_claiming_huge_size_is_refused_before_decoding)
{
    uint8_t *buf;
    size_t len;
    pt_err e;
    T_REQUIRE(fx_demo_jpeg(0, 7, 128, &buf, &len) == 0);
    T_REQUIRE(patch_sof(buf, len, 65000, 65000));
    jpg_codec *c = jpg_codec_new();
    uint8_t out[64 * 64 * 3];
    double t0 = util_now();
    int rc = jpg_decode_into(c, buf, len, out, 64, 64, 1, 0, NULL, NULL, &e);
    T_EQ_INT(rc, PT_ETOOBIG);
    T_CHECKF(strstr(e.msg, "65000x65000") != NULL, "%s", e.msg);
    /* 20000 x 4000 = 80M pixels: under the side limit, over the pixel limit. */
    T_REQUIRE(patch_sof(buf, len, 16000, 4500));
    T_EQ_INT(jpg_decode_into(c, buf, len, out, 64, 64, 1, 0, NULL, NULL, &e), PT_ETOOBIG);
    /* A size within limits but wrong for the data is a corrupt-data error, not a hang. */
    T_REQUIRE(patch_sof(buf, len, 4000, 3000));
    rc = jpg_decode_into(c, buf, len, out, 64, 64, 1, 0, NULL, NULL, &e);
    T_EQ_INT(rc, PT_EJPEG);
    T_CHECK(util_now() - t0 < 30);
    free(buf);
    jpg_codec_free(c);
}

/* Found by fuzzing (tests/fuzz/regress/jpeg/): a frame of width or height 0 failed
 * its header ("Empty JPEG image") and left TurboJPEG's decompressor half way through
 * a header, so every later image on the codec was refused ("Bogus marker length"):
 * in the pipeline, good records after a bad one were skipped. */
TEST(jpeg_codec_stays_usable_after_a_frame_of_size_zero)
{
    jpg_codec *c = jpg_codec_new();
    T_REQUIRE(c);
    uint8_t rgb[16 * 16 * 3];
    for (size_t i = 0; i < sizeof rgb; i++)
        rgb[i] = (uint8_t)(i * 5);
    const uint8_t *enc;
    size_t len;
    pt_err e;
    T_REQUIRE(jpg_encode(c, rgb, 16, 16, 90, &enc, &len, &e) == PT_OK);
    uint8_t *good = malloc(len), *bad = malloc(len);
    T_REQUIRE(good && bad);
    memcpy(good, enc, len);
    uint8_t out[8 * 8 * 3];
    int w, h;
    const int sizes[][2] = { { 0, 16 }, { 16, 0 }, { 0, 0 } };
    for (int k = 0; k < 3; k++) {
        memcpy(bad, good, len);
        T_REQUIRE(patch_sof(bad, len, sizes[k][0], sizes[k][1]));
        T_EQ_INT(jpg_header(c, bad, len, &w, &h, &e), PT_EJPEG);
        T_CHECKF(strstr(e.msg, "Empty JPEG image") != NULL, "%s", e.msg);
        /* The next images on the same codec: header, both decodes. */
        T_EQ_INT(jpg_header(c, good, len, &w, &h, &e), PT_OK);
        T_CHECK(w == 16 && h == 16);
        T_EQ_INT(jpg_decode_sized(c, bad, len, 16, 16, out, 8, 8, 1, 0, &e), PT_EJPEG);
        T_EQ_INT(jpg_decode_sized(c, good, len, 16, 16, out, 8, 8, 1, 0, &e), PT_OK);
        T_EQ_INT(jpg_decode_into(c, bad, len, out, 8, 8, 0, 1, NULL, NULL, &e), PT_EJPEG);
        T_EQ_INT(jpg_decode_into(c, good, len, out, 8, 8, 0, 1, NULL, NULL, &e), PT_OK);
    }
    free(good);
    free(bad);
    jpg_codec_free(c);
}

TEST(jpeg_deeplab_tf_written_records_decode)
{
    T_NEED_DATA();
    const char *path = t_data("tf-written-tfrecords/tf-models-testdata/"
                              "deeplab_pascal_voc_seg_val-00000-of-00001.tfrecord");
    tfr_reader *r;
    pt_err e;
    T_REQUIRE(tfr_open(&r, path, &e) == PT_OK);
    jpg_codec *c = jpg_codec_new();
    const uint8_t *p;
    size_t n;
    int rec = 0;
    const int want_h[3] = { 366, 335, 333 };
    const char *want_keys[] = { "image/encoded", "image/filename", "image/format",
                                "image/height", "image/width", "image/channels",
                                "image/segmentation/class/encoded",
                                "image/segmentation/class/format" };
    while (tfr_next(r, &p, &n, &e) == 1) {
        ex_example *ex;
        T_REQUIRE(ex_parse(p, n, &ex, path, rec, tfr_offset(r), &e) == PT_OK);
        T_EQ_INT(ex_count(ex), 8);
        for (size_t k = 0; k < 8; k++)
            T_CHECKF(ex_find(ex, want_keys[k]) >= 0, "missing %s", want_keys[k]);
        int64_t hh, ww;
        T_REQUIRE(ex_get_int64(ex, "image/height", &hh, &e) == PT_OK);
        T_REQUIRE(ex_get_int64(ex, "image/width", &ww, &e) == PT_OK);
        T_EQ_INT(ww, 500);
        T_EQ_INT(hh, want_h[rec]);
        const uint8_t *img;
        size_t ilen;
        T_REQUIRE(ex_get_bytes(ex, "image/encoded", &img, &ilen, &e) == PT_OK);
        const uint8_t *rgb;
        int w, h;
        T_CHECKF(jpg_decode_full(c, img, ilen, &rgb, &w, &h, &e) == PT_OK, "%s", e.msg);
        T_EQ_INT(w, 500);
        T_EQ_INT(h, want_h[rec]);
        ex_free(ex);
        rec++;
    }
    T_EQ_INT(rec, 3);
    jpg_codec_free(c);
    tfr_close(r);
}

TEST(image_resize_constant_stays_constant_and_crop_box_is_centred)
{
    uint8_t src[50 * 30 * 3], dst[17 * 11 * 3];
    for (int i = 0; i < 50 * 30 * 3; i++)
        src[i] = (uint8_t)(i % 3 == 0 ? 200 : i % 3 == 1 ? 10 : 99);
    img_scratch s = { 0 };
    T_REQUIRE(img_resize(src, 50 * 3, 0, 0, 50, 30, dst, 17, 11, &s) == 0);
    for (int i = 0; i < 17 * 11; i++)
        T_REQUIRE(dst[3 * i] == 200 && dst[3 * i + 1] == 10 && dst[3 * i + 2] == 99);
    int x, y, cw, ch;
    img_crop_box(500, 366, 192, 192, &x, &y, &cw, &ch);
    T_EQ_INT(cw, 366);
    T_EQ_INT(ch, 366);
    T_EQ_INT(x, 67);
    T_EQ_INT(y, 0);
    img_crop_box(100, 300, 50, 50, &x, &y, &cw, &ch);
    T_CHECK(cw == 100 && ch == 100 && x == 0 && y == 100);
    /* A 2x downscale of a checkerboard averages to grey (no aliasing). */
    uint8_t cb[64 * 64 * 3], half[32 * 32 * 3];
    for (int yy = 0; yy < 64; yy++)
        for (int xx = 0; xx < 64; xx++)
            memset(cb + (yy * 64 + xx) * 3, ((xx + yy) & 1) ? 255 : 0, 3);
    T_REQUIRE(img_resize(cb, 64 * 3, 0, 0, 64, 64, half, 32, 32, &s) == 0);
    for (int i = 0; i < 32 * 32 * 3; i++)
        T_REQUIRE(half[i] > 100 && half[i] < 155);
    img_scratch_free(&s);
}
