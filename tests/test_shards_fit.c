/* petal-tui shards --fit crop|pad|stretch and --keep-aspect (issue 31, item 4): what a
 * record keeps of a photo that is not square, read back from the records written. */
#include "tests/t.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/util.h"
#include "data/dataset.h"
#include "data/jpeg.h"
#include "data/pipeline.h"
#include "io/example.h"
#include "io/tfrecord.h"

/* A w x h photo, band px wide red on the left, blue on the right, green between;
 * tone shifts all three a little (so photos of a class differ). */
static int band_jpeg(const char *path, int w, int h, int band, int tone)
{
    uint8_t *rgb = malloc((size_t)w * h * 3);
    jpg_codec *c = jpg_codec_new();
    int rc = -1;
    if (rgb && c) {
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                uint8_t *p = rgb + ((size_t)y * w + x) * 3;
                int k = x < band ? 0 : x >= w - band ? 2 : 1;
                for (int j = 0; j < 3; j++)
                    p[j] = (uint8_t)(j == k ? 230 - tone : 10 + tone);
            }
        const uint8_t *jp;
        size_t len;
        pt_err e;
        if (jpg_encode(c, rgb, w, h, 95, &jp, &len, &e) == PT_OK &&
            util_write_file_atomic(path, jp, len, &e) == PT_OK)
            rc = 0;
    }
    jpg_codec_free(c);
    free(rgb);
    return rc;
}

typedef struct rec_img {
    uint8_t *rgb;
    int w, h, label;
} rec_img;

/* Every training record of the dataset OUT (size S): its image decoded, its class. Up to
 * max; the count, or -1. The caller frees each rgb. */
static int read_records(const char *out, int S, rec_img *recs, int max)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tfrecords-jpeg-%dx%d/train", out, S, S);
    char **files;
    int nf, n = 0;
    if (util_list_dir(dir, UTIL_LIST_FILES, &files, &nf, NULL) != PT_OK)
        return -1;
    jpg_codec *c = jpg_codec_new();
    for (int f = 0; f < nf && c; f++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, files[f]);
        tfr_reader *r;
        pt_err e;
        if (tfr_open(&r, path, &e) != PT_OK)
            continue;
        const uint8_t *data, *img, *rgb;
        size_t len, ilen;
        while (n < max && tfr_next(r, &data, &len, &e) == 1) {
            ex_example *ex;
            int64_t cls;
            if (ex_parse(data, len, &ex, path, n, 0, &e) != PT_OK)
                break;
            if (ex_get_bytes(ex, "image", &img, &ilen, &e) == PT_OK &&
                ex_get_int64(ex, "class", &cls, &e) == PT_OK &&
                jpg_decode_full(c, img, ilen, &rgb, &recs[n].w, &recs[n].h, &e) == PT_OK) {
                size_t sz = (size_t)recs[n].w * recs[n].h * 3;
                recs[n].rgb = malloc(sz);
                memcpy(recs[n].rgb, rgb, sz);
                recs[n].label = (int)cls;
                n++;
            }
            ex_free(ex);
        }
        tfr_close(r);
    }
    jpg_codec_free(c);
    util_free_list(files, nf);
    return n;
}

/* SRC/<class>/0.jpg: one band photo per shape, classes named so they sort in order. */
static const char *band_folder(const char *dir, const int (*shapes)[2], int n)
{
    static char src[1024];
    snprintf(src, sizeof src, "%s/photos", dir);
    for (int k = 0; k < n; k++) {
        char cls[2048], path[4096];
        snprintf(cls, sizeof cls, "%s/c%d", src, k);
        if (util_mkdirs(cls, NULL) != PT_OK)
            return NULL;
        snprintf(path, sizeof path, "%s/0.jpg", cls);
        int w = shapes[k][0], h = shapes[k][1];
        if (band_jpeg(path, w, h, w / 6, 0) != 0)
            return NULL;
    }
    return src;
}

/* Runs shards SRC OUT --size 32 --val 0 with the options given; exit status. */
static int shards_with(const char *src, const char *out, const char *opts, char **text)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s shards '%s' '%s' --size 32 --val 0 %s 2>&1", t_bin(), src,
             out, opts);
    return t_run(cmd, text);
}

/* The dataset one_record() wrote last. */
static char one_out[1024];

/* The one 60x40 band photo through `opts`, its record decoded into *r. */
static int one_record(const char *opts, rec_img *r)
{
    static const int wide[1][2] = { { 60, 40 } };
    const char *dir = t_tmpdir();
    const char *src = band_folder(dir, wide, 1);
    char *out = one_out, *text;
    snprintf(one_out, sizeof one_out, "%s/out", dir);
    if (!src)
        return -1;
    int rc = shards_with(src, out, opts, &text);
    if (rc != 0)
        printf("  shards %s: exit %d:\n%s\n", opts, rc, text);
    free(text);
    return rc == 0 && read_records(out, 32, r, 1) == 1 ? 0 : -1;
}

static const uint8_t *px(const rec_img *r, int x, int y)
{
    return r->rgb + ((size_t)y * r->w + x) * 3;
}

/* Which band colour pixel (x, y) is: 0 red, 1 green, 2 blue (that channel bright and
 * well above the others: 4:2:0 chroma, encoded twice, bleeds a little across a band's
 * edge), -1 none of them. */
static int band_at(const rec_img *r, int x, int y)
{
    const uint8_t *p = px(r, x, y);
    for (int k = 0; k < 3; k++)
        if (p[k] > 150 && p[(k + 1) % 3] + 80 < p[k] && p[(k + 2) % 3] + 80 < p[k])
            return k;
    return -1;
}

TEST(shards_fit_crop_drops_the_sides_of_a_wide_photo)
{
    rec_img r;
    T_REQUIRE(one_record("--fit crop", &r) == 0);
    T_EQ_INT(r.w, 32);
    T_EQ_INT(r.h, 32);
    /* The centred 40x40 window of 60x40 starts after the 10-px red band. */
    for (int y = 2; y < 30; y += 9)
        for (int x = 1; x < 31; x += 29)
            T_CHECKF(band_at(&r, x, y) == 1, "(%d, %d) is %d %d %d, not green", x, y,
                     px(&r, x, y)[0], px(&r, x, y)[1], px(&r, x, y)[2]);
    free(r.rgb);
}

TEST(shards_fit_stretch_keeps_both_sides_and_no_border)
{
    rec_img r;
    T_REQUIRE(one_record("--fit stretch", &r) == 0);
    T_EQ_INT(r.w, 32);
    T_EQ_INT(r.h, 32);
    /* The red band is 1/6 of the width: about 5 px of 32, top row to bottom row. */
    int rows[] = { 0, 16, 31 };
    for (int i = 0; i < 3; i++) {
        T_EQ_INT(band_at(&r, 1, rows[i]), 0);
        T_EQ_INT(band_at(&r, 16, rows[i]), 1);
        T_EQ_INT(band_at(&r, 30, rows[i]), 2);
    }
    free(r.rgb);
}

TEST(shards_fit_pad_keeps_the_whole_photo_on_a_border_of_its_mean_colour)
{
    rec_img r;
    T_REQUIRE(one_record("--fit pad", &r) == 0);
    T_EQ_INT(r.w, 32);
    T_EQ_INT(r.h, 32);
    /* 60x40 -> 32x21 at rows 5..25: both bands kept in the middle row. */
    T_EQ_INT(band_at(&r, 1, 16), 0);
    T_EQ_INT(band_at(&r, 16, 16), 1);
    T_EQ_INT(band_at(&r, 30, 16), 2);
    /* The photo's mean: the rows it covers, averaged. */
    double mean[3] = { 0, 0, 0 };
    for (int y = 7; y < 24; y++)
        for (int x = 0; x < 32; x++)
            for (int c = 0; c < 3; c++)
                mean[c] += px(&r, x, y)[c] / (17.0 * 32);
    /* Top and bottom borders: that colour everywhere, the corners too (edge replication
     * would put red above the red band and blue above the blue one). */
    int border_rows[] = { 0, 2, 29, 31 };
    double worst = 0;
    for (int i = 0; i < 4; i++)
        for (int x = 0; x < 32; x++)
            for (int c = 0; c < 3; c++) {
                double d = fabs(px(&r, x, border_rows[i])[c] - mean[c]);
                worst = d > worst ? d : worst;
            }
    T_CHECKF(worst < 14, "border differs from the photo's mean (%.0f %.0f %.0f) by %.0f",
             mean[0], mean[1], mean[2], worst);
    T_CHECK(band_at(&r, 1, 0) != 0 && band_at(&r, 30, 31) != 2);
    free(r.rgb);
}

TEST(shards_keep_aspect_stores_the_short_side_at_size_and_caps_the_long_side)
{
    static const int shapes[3][2] = { { 60, 40 }, { 40, 60 }, { 400, 40 } };
    const char *dir = t_tmpdir();
    const char *src = band_folder(dir, shapes, 3);
    T_REQUIRE(src != NULL);
    char out[1024], *text;
    snprintf(out, sizeof out, "%s/out", dir);
    int rc = shards_with(src, out, "--keep-aspect", &text);
    T_CHECKF(rc == 0 && strstr(text, "tfrecords-jpeg-32x32"), "exit %d: %s", rc, text);
    free(text);
    rec_img r[3];
    int n = read_records(out, 32, r, 3);
    T_REQUIRE(n == 3);
    for (int i = 0; i < n; i++) {
        int k = r[i].label;
        int want_w = k == 0 ? 48 : k == 1 ? 32 : 128; /* 400x40 is 10:1: cut to 4:1 */
        int want_h = k == 1 ? 48 : 32;
        T_CHECKF(r[i].w == want_w && r[i].h == want_h, "class %d: %dx%d, want %dx%d", k,
                 r[i].w, r[i].h, want_w, want_h);
        if (k == 0 && r[i].w == 48) { /* the whole photo: both bands */
            T_EQ_INT(band_at(&r[i], 2, 16), 0);
            T_EQ_INT(band_at(&r[i], 24, 16), 1);
            T_EQ_INT(band_at(&r[i], 45, 16), 2);
        }
        if (k == 2 && r[i].w == 128) { /* the centred 4:1 of 10:1: no band left */
            T_EQ_INT(band_at(&r[i], 1, 16), 1);
            T_EQ_INT(band_at(&r[i], 126, 16), 1);
        }
    }
    for (int i = 0; i < n; i++)
        free(r[i].rgb);
}

TEST(shards_fit_bad_values_are_refused_as_usage_errors)
{
    static const int wide[1][2] = { { 60, 40 } };
    const char *dir = t_tmpdir();
    const char *src = band_folder(dir, wide, 1);
    T_REQUIRE(src != NULL);
    char out[1024], *text;
    snprintf(out, sizeof out, "%s/out", dir);
    T_EQ_INT(shards_with(src, out, "--fit squash", &text), 1);
    T_CHECKF(strstr(text, "--fit takes crop, pad or stretch, not 'squash'") != NULL, "%s", text);
    free(text);
    T_EQ_INT(shards_with(src, out, "--fit pad --keep-aspect", &text), 1);
    T_CHECKF(strstr(text, "--keep-aspect") && strstr(text, "only with --fit crop"), "%s", text);
    free(text);
    T_CHECK(!util_is_dir(out));
    /* The help names both options. */
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "%s shards --help", t_bin());
    T_EQ_INT(t_run(cmd, &text), 0);
    T_CHECKF(strstr(text, "--fit crop|pad|stretch") && strstr(text, "--keep-aspect"), "%s",
             text);
    free(text);
}

/* Photos of 3:2 and 2:3 in two classes told apart by their band layout, written with
 * --keep-aspect at size 32, then one short epoch: training and validation read records
 * that are not square (each takes its centred square) and finish. */
TEST(shards_keep_aspect_dataset_trains_and_validates)
{
    const char *dir = t_tmpdir();
    char src[1024], out[1024], run[1024];
    snprintf(src, sizeof src, "%s/photos", dir);
    snprintf(out, sizeof out, "%s/data", dir);
    snprintf(run, sizeof run, "%s/run", dir);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 15; i++) {
            char cls[2048], path[4096];
            snprintf(cls, sizeof cls, "%s/c%d", src, k);
            T_REQUIRE(util_mkdirs(cls, NULL) == PT_OK);
            snprintf(path, sizeof path, "%s/%02d.jpg", cls, i);
            int w = i % 2 ? 72 : 48, h = i % 2 ? 48 : 72;
            T_REQUIRE(band_jpeg(path, w, h, k ? w / 3 : w / 8, i * 3) == 0);
        }
    char cmd[8192], *text;
    snprintf(cmd, sizeof cmd, "%s shards '%s' '%s' --size 32 --val 0.2 --keep-aspect 2>&1",
             t_bin(), src, out);
    int rc = t_run(cmd, &text);
    T_CHECKF(rc == 0 && strstr(text, "total: 30 records"), "exit %d: %s", rc, text);
    free(text);
    snprintf(cmd, sizeof cmd,
             "%s --headless --data '%s' --out '%s' --model small --epochs 1 --replicas 1 "
             "--workers 1 --stop-on-data-error 2>&1",
             t_bin(), out, run);
    rc = t_run(cmd, &text);
    T_CHECKF(rc == 0 && strstr(text, "24 train / 6 val") && strstr(text, "val_f1"),
             "exit %d: %s", rc, text);
    free(text);
    snprintf(cmd, sizeof cmd, "%s inspect '%s' 2>&1", t_bin(), out);
    rc = t_run(cmd, &text);
    T_CHECKF(rc == 0 && strstr(text, "48x32") && strstr(text, "32x48"), "exit %d: %s", rc, text);
    free(text);
}

/* Over passes of a keep-aspect dataset of one 60x40 band photo (a 48x32 record) at
 * 32x32: how many images showed the red band at the left edge and the blue one at the
 * right edge, with the training window (crop_anywhere) or the centred one. */
static int edges_seen(const char *out, int anywhere, int *red, int *blue)
{
    *red = *blue = 0;
    ds_dataset *d;
    pt_err e;
    int seen = 0;
    if (ds_open(out, 0, &d, &e) != PT_OK)
        return 0;
    pipe_config c;
    pipe_config_defaults(&c);
    c.split = &d->split[DS_TRAIN];
    c.labeled = 1;
    c.n_classes = 1;
    c.image_w = c.image_h = 32;
    c.batch_size = 1;
    c.repeat = 1;
    c.crop_anywhere = anywhere;
    pipeline *pl;
    if (pipe_create(&c, &pl, &e) == PT_OK) {
        for (int k = 0; k < 40; k++) {
            batch *b;
            if (pipe_next(pl, &b, &e) != 1)
                break;
            rec_img r = { .rgb = batch_image(b, 0), .w = 32, .h = 32 };
            *red += band_at(&r, 0, 16) == 0;
            *blue += band_at(&r, 31, 16) == 2;
            seen++;
            pipe_release(pl, b);
        }
        pipe_destroy(pl);
    }
    ds_free(d);
    return seen;
}

TEST(shards_keep_aspect_records_train_on_windows_all_along_the_long_side)
{
    rec_img r;
    T_REQUIRE(one_record("--keep-aspect", &r) == 0);
    T_EQ_INT(r.w, 48);
    free(r.rgb);
    const char *out = one_out;
    int red, blue;
    T_EQ_INT(edges_seen(out, 0, &red, &blue), 40);
    T_CHECKF(red == 0 && blue == 0, "centred window: red %d, blue %d of 40", red, blue);
    /* The window starts at x in 0..16 of 48; the 8-px red band covers its left edge
     * for x <= 7, the blue one (40..47) its right edge for x >= 9: about half the draws
     * each (seeded: the same counts every run). */
    T_EQ_INT(edges_seen(out, 1, &red, &blue), 40);
    T_CHECKF(red > 0 && blue > 0, "training window: red %d, blue %d of 40", red, blue);
}
