/* Augmentations (exact geometry, labels of MixUp/CutMix, determinism, spec parsing)
 * and the preview-grid composer. */
#include "tests/t.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/rng.h"
#include "data/augment.h"
#include "data/batch.h"
#include "picture/grid.h"

/* Random bytes, so any misplaced pixel shows. */
static void fill_random(uint8_t *p, size_t n, uint64_t seed)
{
    rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rng_u64(&r);
}

static const uint8_t *px(const uint8_t *img, int w, int y, int x)
{
    return img + ((size_t)y * w + x) * 3;
}

static int same_px(const uint8_t *a, const uint8_t *b)
{
    return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

static uint8_t *dup(const uint8_t *p, size_t n)
{
    uint8_t *q = malloc(n);
    memcpy(q, p, n);
    return q;
}

static const aug_point *corners(int h, int w, aug_point out[4])
{
    out[0] = (aug_point){0, 0};
    out[1] = (aug_point){w, 0};
    out[2] = (aug_point){w, h};
    out[3] = (aug_point){0, h};
    return out;
}

/* --- parsing ------------------------------------------------------------------------ */

TEST(aug_parse_format_roundtrip)
{
    pt_err e;
    aug_chain *c = NULL, *c2 = NULL;
    char buf[2048], buf2[2048];
    T_REQUIRE(aug_parse(aug_default_spec(), &c, &e) == PT_OK);
    T_CHECK(aug_count(c) >= 2);
    T_REQUIRE(aug_format(c, buf, sizeof buf) == PT_OK);
    T_REQUIRE(aug_parse(buf, &c2, &e) == PT_OK);
    T_REQUIRE(aug_format(c2, buf2, sizeof buf2) == PT_OK);
    T_EQ_STR(buf, buf2);
    aug_free(c);
    aug_free(c2);

    /* Spaces, an omitted probability, parameters, enum values. */
    T_REQUIRE(aug_parse(" perspective:0.35 , flip , affine:0.8:rot=20:interp=bilinear,mixup:0.2",
                        &c, &e) == PT_OK);
    T_EQ_INT(aug_count(c), 4);
    T_REQUIRE(aug_format(c, buf, sizeof buf) == PT_OK);
    T_CHECKF(strstr(buf, "perspective:0.35:jitter=0.25:rot90=1:reflect=1:interp=nearest") == buf,
             "%s", buf);
    T_CHECKF(strstr(buf, ",flip:1:axis=h,") != NULL, "%s", buf);
    T_CHECKF(strstr(buf, "affine:0.8:rot=20:shear=5:zoom=0.1:shift=0.1:interp=bilinear") != NULL,
             "%s", buf);
    T_CHECKF(strstr(buf, "mixup:0.2:alpha=1") != NULL, "%s", buf);
    /* Too small a buffer is an error, and the buffer stays a string. */
    T_CHECK(aug_format(c, buf, 10) == PT_EUSAGE);
    T_CHECK(strlen(buf) < 10);
    aug_free(c);

    T_REQUIRE(aug_parse("none", &c, &e) == PT_OK);
    T_EQ_INT(aug_count(c), 0);
    T_REQUIRE(aug_format(c, buf, sizeof buf) == PT_OK);
    T_EQ_STR(buf, "none");
    aug_free(c);
    T_REQUIRE(aug_parse("  ", &c, &e) == PT_OK);
    T_EQ_INT(aug_count(c), 0);
    aug_free(c);

    const char *names[32];
    size_t n = aug_names(names, 32);
    T_CHECK(n >= 13);
    for (size_t i = 0; i < n && i < 32; i++) {
        T_CHECKF(aug_help(names[i]) != NULL, "no help for %s", names[i]);
        /* Every op parses alone with its defaults. */
        T_CHECKF(aug_parse(names[i], &c, &e) == PT_OK, "%s: %s", names[i], e.msg);
        aug_free(c);
    }
    T_CHECK(aug_help("nope") == NULL);
    T_CHECKF(strstr(aug_help("affine"), "rot=15 [0,180]") != NULL, "%s", aug_help("affine"));
}

TEST(aug_parse_errors_name_the_bad_token)
{
    static const struct {
        const char *spec, *needle;
    } bad[] = {
        {"perspectiv:0.5", "'perspectiv'"},
        {"flip:1.5", "'1.5'"},
        {"flip:-0.1", "'-0.1'"},
        {"flip:abc", "'abc'"},
        {"affine:0.5:rott=3", "'rott'"},
        {"affine:0.5:rot=abc", "'abc'"},
        {"affine:0.5:rot=500", "'500'"},
        {"affine:0.5:interp=cubic", "'cubic'"},
        {"cutout:1:count=1.5", "'1.5'"},
        {"flip:0.5,,affine", "empty op"},
        {"none,flip", "'none'"},
        {"flip:0.5:axis", "'axis'"},
        {"gridmask:1:dmin=0.5:dmax=0.3", "dmin > dmax"},
        {"flip:nan", "'nan'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        aug_chain *c = (aug_chain *)1;
        pt_err e;
        err_clear(&e);
        T_CHECKF(aug_parse(bad[i].spec, &c, &e) == PT_EUSAGE, "accepted %s", bad[i].spec);
        T_CHECKF(c == NULL, "%s: chain left set", bad[i].spec);
        T_CHECKF(strstr(e.msg, bad[i].needle) != NULL, "%s: message \"%s\" lacks %s", bad[i].spec,
                 e.msg, bad[i].needle);
    }
}

/* --- exact geometry ------------------------------------------------------------------ */

TEST(aug_probability_zero_is_identity)
{
    int n = 6, h = 24, w = 20;
    batch *b = batch_new(n, h, w);
    T_REQUIRE(b);
    b->n = n;
    fill_random(b->images, (size_t)n * h * w * 3, 1);
    for (int i = 0; i < n; i++)
        b->label[i] = i;
    batch_clear_mix(b);
    uint8_t *before = dup(b->images, (size_t)n * h * w * 3);
    pt_err e;
    aug_chain *c;
    T_REQUIRE(aug_parse("perspective:0,flip:0,affine:0,crop:0,color:0,brightness:0,contrast:0,"
                        "saturation:0,hue:0,cutout:0,gridmask:0,mixup:0,cutmix:0",
                        &c, &e) == PT_OK);
    aug_workspace *ws = aug_workspace_new(n, h, w);
    T_REQUIRE(ws);
    for (uint64_t seq = 0; seq < 5; seq++) {
        b->seq = seq;
        T_CHECK(aug_apply(c, b, 99, ws) == PT_OK);
    }
    T_CHECK(memcmp(before, b->images, (size_t)n * h * w * 3) == 0);
    for (int i = 0; i < n; i++) {
        T_EQ_INT(b->label[i], i);
        T_EQ_INT(b->label2[i], i);
        T_CHECK(b->mix[i] == 1.0f);
    }
    free(before);
    aug_free(c);
    aug_workspace_free(ws);
    batch_free(b);
}

TEST(aug_perspective_unmoved_corners_is_identity)
{
    int h = 37, w = 53; /* not square, not even */
    size_t sz = (size_t)h * w * 3;
    uint8_t *img = malloc(sz), *ref = malloc(sz);
    fill_random(ref, sz, 2);
    aug_workspace *ws = aug_workspace_new(1, h, w);
    T_REQUIRE(ws);
    aug_point p[4];
    for (int interp = 0; interp < 2; interp++) {
        memcpy(img, ref, sz);
        T_REQUIRE(aug_perspective_points(img, h, w, corners(h, w, p), interp, ws) == PT_OK);
        T_CHECKF(memcmp(img, ref, sz) == 0, "interp %d changed the image", interp);
    }
    /* The chain op with no jitter, shift or reflection too. */
    batch *b = batch_new(1, h, w);
    b->n = 1;
    memcpy(b->images, ref, sz);
    batch_clear_mix(b);
    pt_err e;
    aug_chain *c;
    T_REQUIRE(aug_parse("perspective:1:jitter=0:rot90=0:reflect=0", &c, &e) == PT_OK);
    T_CHECK(aug_apply(c, b, 5, ws) == PT_OK);
    T_CHECK(memcmp(b->images, ref, sz) == 0);
    aug_free(c);
    batch_free(b);
    aug_workspace_free(ws);
    free(img);
    free(ref);
}

TEST(aug_perspective_cyclic_shift_turns_90_degrees)
{
    int s = 31;
    size_t sz = (size_t)s * s * 3;
    uint8_t *ref = malloc(sz), *img = malloc(sz);
    fill_random(ref, sz, 3);
    aug_workspace *ws = aug_workspace_new(1, s, s);
    aug_point c4[4], t[4];
    corners(s, s, c4);
    for (int interp = 0; interp < 2; interp++) {
        for (int shift = 1; shift < 4; shift++) {
            memcpy(img, ref, sz);
            aug_perspective_reorder(c4, shift, 0, t);
            T_REQUIRE(aug_perspective_points(img, s, s, t, interp, ws) == PT_OK);
            int bad = 0;
            for (int y = 0; y < s; y++)
                for (int x = 0; x < s; x++) {
                    /* Source (x, y) after `shift` clockwise quarter turns. */
                    int sx = x, sy = y;
                    for (int k = 0; k < shift; k++) {
                        int nx = s - 1 - sy, ny = sx;
                        sx = nx;
                        sy = ny;
                    }
                    bad += !same_px(px(img, s, sy, sx), px(ref, s, y, x));
                }
            T_CHECKF(bad == 0, "shift %d interp %d: %d pixels misplaced", shift, interp, bad);
        }
    }
    /* A known pixel: top-left goes to top-right on a clockwise turn. */
    memcpy(img, ref, sz);
    aug_perspective_reorder(c4, 1, 0, t);
    T_REQUIRE(aug_perspective_points(img, s, s, t, AUG_NEAREST, ws) == PT_OK);
    T_CHECK(same_px(px(img, s, 0, s - 1), px(ref, s, 0, 0)));
    T_CHECK(same_px(px(img, s, s - 1, s - 1), px(ref, s, 0, s - 1)));
    aug_workspace_free(ws);
    free(ref);
    free(img);
}

TEST(aug_perspective_reflections_mirror)
{
    int h = 20, w = 33;
    size_t sz = (size_t)h * w * 3;
    uint8_t *ref = malloc(sz), *img = malloc(sz);
    fill_random(ref, sz, 4);
    aug_workspace *ws = aug_workspace_new(1, h, w);
    aug_point c4[4], t[4];
    corners(h, w, c4);
    for (int interp = 0; interp < 2; interp++) {
        for (int refl = 1; refl <= 2; refl++) {
            memcpy(img, ref, sz);
            aug_perspective_reorder(c4, 0, refl, t);
            T_REQUIRE(aug_perspective_points(img, h, w, t, interp, ws) == PT_OK);
            int bad = 0;
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    int sy = refl == 1 ? h - 1 - y : y, sx = refl == 2 ? w - 1 - x : x;
                    bad += !same_px(px(img, w, y, x), px(ref, w, sy, sx));
                }
            T_CHECKF(bad == 0, "reflection %d interp %d: %d pixels misplaced", refl, interp, bad);
        }
    }
    /* A half turn then an up-down reflection is a left-right mirror. */
    memcpy(img, ref, sz);
    aug_perspective_reorder(c4, 2, 1, t);
    T_REQUIRE(aug_perspective_points(img, h, w, t, AUG_NEAREST, ws) == PT_OK);
    T_CHECK(same_px(px(img, w, 3, 0), px(ref, w, 3, w - 1)));
    T_CHECK(same_px(px(img, w, h - 1, 5), px(ref, w, h - 1, w - 6)));
    aug_workspace_free(ws);
    free(ref);
    free(img);
}

/* A white image warped to a quadrilateral: white inside, black outside (checked away
 * from the edges, where nearest sampling legitimately decides either way). */
TEST(aug_perspective_fills_the_target_quad)
{
    int h = 64, w = 64;
    size_t sz = (size_t)h * w * 3;
    uint8_t *img = malloc(sz);
    aug_workspace *ws = aug_workspace_new(1, h, w);
    aug_point t[4] = {{10, 4}, {60, 12}, {55, 58}, {3, 50}};
    memset(img, 255, sz);
    T_REQUIRE(aug_perspective_points(img, h, w, t, AUG_NEAREST, ws) == PT_OK);
    int bad = 0, inside_n = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double cx = x + 0.5, cy = y + 0.5, dmin = 1e9;
            int inside = 1;
            for (int k = 0; k < 4; k++) {
                aug_point a = t[k], b = t[(k + 1) % 4];
                double ex = b.x - a.x, ey = b.y - a.y, len = sqrt(ex * ex + ey * ey);
                /* Clockwise on screen (y down): inside is to the right of each edge. */
                double d = (ex * (cy - a.y) - ey * (cx - a.x)) / len;
                inside &= d > 0;
                dmin = fmin(dmin, fabs(d));
            }
            if (dmin < 1.5)
                continue;
            const uint8_t *p = px(img, w, y, x);
            inside_n += inside;
            bad += inside ? !(p[0] == 255 && p[1] == 255 && p[2] == 255)
                          : !(p[0] == 0 && p[1] == 0 && p[2] == 0);
        }
    T_CHECKF(bad == 0, "%d pixels on the wrong side", bad);
    T_CHECK(inside_n > 1500);
    /* Three collinear points are refused. */
    aug_point col[4] = {{0, 0}, {10, 10}, {20, 20}, {0, 30}};
    T_CHECK(aug_perspective_points(img, h, w, col, AUG_NEAREST, ws) == PT_EUSAGE);
    aug_workspace_free(ws);
    free(img);
}

TEST(aug_perspective_random_points_follow_the_notebook)
{
    rng r;
    rng_seed(&r, 7);
    int h = 192, w = 160;
    int seen_lo = 0, seen_hi = 0;
    for (int it = 0; it < 2000; it++) {
        aug_point p[4];
        aug_perspective_random(&r, h, w, 0.25, 0, 0, p);
        double cx[4] = {0, w, w, 0}, cy[4] = {0, 0, h, h};
        for (int k = 0; k < 4; k++) {
            double dx = p[k].x - cx[k], dy = p[k].y - cy[k];
            T_CHECK(dx == floor(dx) && dy == floor(dy));
            T_CHECKF(dx >= -w / 4 && dx < w / 4 && dy >= -h / 4 && dy < h / 4,
                     "corner %d moved by %g, %g", k, dx, dy);
            seen_lo |= dx == -w / 4;
            seen_hi |= dx == w / 4 - 1;
        }
    }
    T_CHECK(seen_lo && seen_hi);
    /* With the shift and reflection, the points are the corners' jittered points in
     * one of the 12 orders of the notebook: every order shows up. */
    int orders[12] = {0};
    for (int it = 0; it < 600; it++) {
        aug_point p[4];
        aug_perspective_random(&r, h, w, 0, 1, 1, p);
        aug_point c4[4], q[4];
        corners(h, w, c4);
        int found = 0;
        for (int sft = 0; sft < 4; sft++)
            for (int rf = 0; rf < 3; rf++) {
                aug_perspective_reorder(c4, sft, rf, q);
                int eq = 1;
                for (int k = 0; k < 4; k++)
                    eq &= q[k].x == p[k].x && q[k].y == p[k].y;
                if (eq) {
                    orders[sft * 3 + rf]++;
                    found = 1;
                }
            }
        T_CHECK(found);
    }
    /* Some orders coincide (a half turn of an up-down mirror is a left-right one),
     * so count distinct point sets: the 8 symmetries of the square's corners. */
    int distinct = 0;
    for (int k = 0; k < 12; k++)
        distinct += orders[k] > 0;
    T_CHECKF(distinct >= 8, "only %d orders seen", distinct);
}

TEST(aug_affine_identity_and_exact_moves)
{
    int h = 29, w = 41;
    size_t sz = (size_t)h * w * 3;
    uint8_t *ref = malloc(sz), *img = malloc(sz);
    fill_random(ref, sz, 5);
    aug_workspace *ws = aug_workspace_new(1, h, w);
    aug_affine_params id = {0, 0, 1, 1, 0, 0};
    for (int interp = 0; interp < 2; interp++) {
        memcpy(img, ref, sz);
        T_REQUIRE(aug_affine(img, h, w, &id, interp, ws) == PT_OK);
        T_CHECKF(memcmp(img, ref, sz) == 0, "interp %d", interp);
    }
    /* An integer shift moves pixels exactly and lets black in. */
    aug_affine_params sh = {0, 0, 1, 1, 5, -3};
    int bad = 0;
    for (int interp = 0; interp < 2; interp++) {
        memcpy(img, ref, sz);
        T_REQUIRE(aug_affine(img, h, w, &sh, interp, ws) == PT_OK);
        bad = 0;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int sx = x - 5, sy = y + 3;
                static const uint8_t black[3] = {0, 0, 0};
                const uint8_t *want =
                    sx >= 0 && sx < w && sy >= 0 && sy < h ? px(ref, w, sy, sx) : black;
                bad += !same_px(px(img, w, y, x), want);
            }
        T_CHECKF(bad == 0, "shift, interp %d: %d pixels wrong", interp, bad);
    }
    /* 90 degrees counter-clockwise on a square image: the top-right corner comes to
     * the top-left. */
    int s = 24;
    size_t ss = (size_t)s * s * 3;
    fill_random(ref, ss, 6);
    memcpy(img, ref, ss);
    aug_affine_params rot = {90, 0, 1, 1, 0, 0};
    T_REQUIRE(aug_affine(img, s, s, &rot, AUG_NEAREST, ws) == PT_OK);
    bad = 0;
    for (int y = 0; y < s; y++)
        for (int x = 0; x < s; x++)
            bad += !same_px(px(img, s, y, x), px(ref, s, x, s - 1 - y));
    T_CHECKF(bad == 0, "rot 90: %d pixels wrong", bad);
    /* Zoom 2 about the centre: the centre pixel stays, a pixel 4 right of it
     * comes from 2 right of it. */
    memcpy(img, ref, ss);
    aug_affine_params z = {0, 0, 2, 2, 0, 0};
    T_REQUIRE(aug_affine(img, s, s, &z, AUG_NEAREST, ws) == PT_OK);
    T_CHECK(same_px(px(img, s, 12, 12), px(ref, s, 12, 12)));
    T_CHECK(same_px(px(img, s, 12, 16), px(ref, s, 12, 14)));
    aug_workspace_free(ws);
    free(ref);
    free(img);
}

TEST(aug_flips_and_fused_geometry)
{
    int h = 9, w = 14;
    size_t sz = (size_t)h * w * 3;
    uint8_t *ref = malloc(sz), *img = malloc(sz);
    fill_random(ref, sz, 8);
    memcpy(img, ref, sz);
    aug_flip(img, h, w, 1, 0);
    int bad = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            bad += !same_px(px(img, w, y, x), px(ref, w, y, w - 1 - x));
    aug_flip(img, h, w, 1, 1);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            bad += !same_px(px(img, w, y, x), px(ref, w, h - 1 - y, x));
    T_EQ_INT(bad, 0);

    /* Through the chain: one flip mirrors, and consecutive flips (composed into one
     * matrix) that undo each other give the identity; a flip composed with a
     * shift-free 90-degree perspective turn lands where both would put it (below). */
    batch *b = batch_new(1, h, w);
    aug_workspace *ws = aug_workspace_new(1, h, w);
    b->n = 1;
    batch_clear_mix(b);
    pt_err e;
    aug_chain *c;
    T_REQUIRE(aug_parse("flip:1", &c, &e) == PT_OK);
    memcpy(b->images, ref, sz);
    T_CHECK(aug_apply(c, b, 1, ws) == PT_OK);
    T_CHECK(same_px(px(b->images, w, 2, 0), px(ref, w, 2, w - 1)));
    aug_free(c);
    T_REQUIRE(aug_parse("flip:1,flip:1:axis=v,flip:1,flip:1:axis=v", &c, &e) == PT_OK);
    memcpy(b->images, ref, sz);
    T_CHECK(aug_apply(c, b, 1, ws) == PT_OK);
    T_CHECK(memcmp(b->images, ref, sz) == 0);
    aug_free(c);
    aug_workspace_free(ws);
    batch_free(b);
    free(ref);
    free(img);

    /* A left-right flip then a shift-free (jitter 0, no reflection) perspective turn,
     * composed into one matrix, on a square image: every pixel lands where the mirror
     * and then k clockwise quarter turns put it, for the k the seed drew; over the
     * seeds, real turns (k > 0) do happen. */
    int s = 11;
    size_t ssz = (size_t)s * s * 3;
    uint8_t *sq = malloc(ssz);
    fill_random(sq, ssz, 9);
    b = batch_new(1, s, s);
    ws = aug_workspace_new(1, s, s);
    b->n = 1;
    T_REQUIRE(aug_parse("flip:1,perspective:1:jitter=0:rot90=1:reflect=0", &c, &e) == PT_OK);
    int turns[4] = { 0 };
    for (uint64_t seed = 1; seed <= 16; seed++) {
        batch_clear_mix(b);
        memcpy(b->images, sq, ssz);
        T_CHECK(aug_apply(c, b, seed, ws) == PT_OK);
        int found = -1;
        for (int k = 0; k < 4 && found < 0; k++) {
            int off = 0;
            for (int y = 0; y < s; y++)
                for (int x = 0; x < s; x++) {
                    int sx = s - 1 - x, sy = y; /* after the mirror */
                    for (int q = 0; q < k; q++) {
                        int nx = s - 1 - sy, ny = sx;
                        sx = nx;
                        sy = ny;
                    }
                    off += !same_px(px(b->images, s, sy, sx), px(sq, s, y, x));
                }
            if (off == 0)
                found = k;
        }
        T_CHECKF(found >= 0, "seed %d: not a turn of the mirrored image", (int)seed);
        if (found >= 0)
            turns[found]++;
    }
    T_CHECKF(turns[1] + turns[2] + turns[3] > 0, "no seed turned the image");
    aug_free(c);
    aug_workspace_free(ws);
    batch_free(b);
    free(sq);
}

/* Extreme and random matrices (huge zooms, points beyond the horizon, nearly
 * singular) on an image with guard bytes around it: nothing outside is touched,
 * nothing is read outside (ASan / valgrind check that part). */
TEST(aug_warp_stays_in_bounds)
{
    int h = 17, w = 23, guard = 64;
    size_t sz = (size_t)h * w * 3;
    uint8_t *buf = malloc(sz + 2 * guard);
    uint8_t *img = buf + guard;
    memset(buf, 0xA5, sz + 2 * guard);
    aug_workspace *ws = aug_workspace_new(1, h, w);
    rng r;
    rng_seed(&r, 11);
    int n = t_slow_mode() ? 200 : 2000;
    for (int it = 0; it < n; it++) {
        double m[9];
        for (int k = 0; k < 9; k++) {
            double scale = k == 2 || k == 5 ? 40 : k >= 6 && k < 8 ? 0.1 : 2;
            m[k] = (rng_double(&r) * 2 - 1) * scale;
            if (it % 7 == 0)
                m[k] *= 1e6;
            if (it % 11 == 0 && k >= 6)
                m[k] = 0;
        }
        fill_random(img, sz, (uint64_t)it);
        T_CHECK(aug_warp(img, h, w, m, it % 2, ws) == PT_OK);
    }
    for (int i = 0; i < guard; i++) {
        T_CHECK(buf[i] == 0xA5);
        T_CHECK(buf[guard + sz + i] == 0xA5);
    }
    double inf[9] = {1, 0, 0, 0, 1, 0, 0, 0, INFINITY};
    T_CHECK(aug_warp(img, h, w, inf, AUG_NEAREST, ws) == PT_EUSAGE);
    /* An image larger than the workspace is refused. */
    double idm[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    T_CHECK(aug_warp(img, h + 1, w, idm, AUG_NEAREST, ws) == PT_EUSAGE);
    aug_workspace_free(ws);
    free(buf);
}

/* --- colour, cutout, GridMask ---------------------------------------------------------- */

TEST(aug_color_exact_cases)
{
    int h = 13, w = 37; /* 481 pixels: vector groups plus scalar ends */
    size_t sz = (size_t)h * w * 3;
    uint8_t *ref = malloc(sz), *img = malloc(sz);
    fill_random(ref, sz, 9);
    memcpy(img, ref, sz);
    T_CHECK(aug_color(img, h, w, 0, 1, 1, 0) == PT_OK);
    T_CHECK(memcmp(img, ref, sz) == 0);
    /* +0.2 brightness adds 51 and saturates. */
    memcpy(img, ref, sz);
    T_CHECK(aug_color(img, h, w, 0.2, 1, 1, 0) == PT_OK);
    int bad = 0;
    for (size_t i = 0; i < sz; i++)
        bad += img[i] != (ref[i] + 51 > 255 ? 255 : ref[i] + 51);
    T_EQ_INT(bad, 0);
    /* Saturation 0: grey (the luma), within rounding. */
    memcpy(img, ref, sz);
    T_CHECK(aug_color(img, h, w, 0, 1, 0, 0) == PT_OK);
    bad = 0;
    for (size_t i = 0; i < sz; i += 3) {
        double y = 0.299 * ref[i] + 0.587 * ref[i + 1] + 0.114 * ref[i + 2];
        for (int c = 0; c < 3; c++)
            bad += fabs(img[i + c] - y) > 1.01;
    }
    T_EQ_INT(bad, 0);
    /* A hue turn keeps greys. */
    for (size_t i = 0; i < sz; i += 3)
        img[i] = img[i + 1] = img[i + 2] = ref[i];
    uint8_t *grey = dup(img, sz);
    T_CHECK(aug_color(img, h, w, 0, 1, 1, 77) == PT_OK);
    bad = 0;
    for (size_t i = 0; i < sz; i++)
        bad += abs(img[i] - grey[i]) > 1;
    T_EQ_INT(bad, 0);
    /* The vector and scalar paths agree byte for byte: the whole image against each
     * pixel alone (too small for the vector path). Contrast off: it uses the mean. */
    for (int k = 0; k < 3; k++) {
        double br = 0.1 * k - 0.1, sat = 0.6 + 0.4 * k, hue = 40.0 * k - 50;
        memcpy(img, ref, sz);
        T_CHECK(aug_color(img, h, w, br, 1, sat, hue) == PT_OK);
        bad = 0;
        for (size_t i = 0; i < sz; i += 3) {
            uint8_t one[3] = {ref[i], ref[i + 1], ref[i + 2]};
            aug_color(one, 1, 1, br, 1, sat, hue);
            bad += !same_px(one, img + i);
        }
        T_CHECKF(bad == 0, "case %d: %d pixels differ", k, bad);
    }
    /* Contrast 0 makes every channel the mean level. */
    memcpy(img, ref, sz);
    T_CHECK(aug_color(img, h, w, 0, 0, 1, 0) == PT_OK);
    double mean = 0;
    for (size_t i = 0; i < sz; i++)
        mean += ref[i];
    mean /= (double)sz;
    bad = 0;
    for (size_t i = 0; i < sz; i++)
        bad += fabs(img[i] - mean) > 0.51;
    T_EQ_INT(bad, 0);
    free(grey);
    free(ref);
    free(img);
}

TEST(aug_cutout_and_gridmask)
{
    int h = 100, w = 100, guard = 32;
    size_t sz = (size_t)h * w * 3;
    uint8_t *buf = malloc(sz + 2 * guard), *img = buf + guard;
    memset(buf, 0xA5, sz + 2 * guard);
    memset(img, 200, sz);
    aug_cutout(img, h, w, -10, 90, 20, 130); /* clipped to x [0, 20), y [90, 100) */
    int black = 0;
    for (size_t i = 0; i < sz; i += 3)
        black += img[i] == 0;
    T_EQ_INT(black, 20 * 10);
    T_CHECK(px(img, w, 95, 5)[1] == 0 && px(img, w, 89, 5)[1] == 200 && px(img, w, 95, 20)[1] == 200);

    /* GridMask without rotation: period 10, stripes of 5 kept: exactly a quarter black,
     * in squares. */
    memset(img, 200, sz);
    T_CHECK(aug_gridmask(img, h, w, 10, 5, 0, 0, 0) == PT_OK);
    black = 0;
    for (size_t i = 0; i < sz; i += 3)
        black += img[i] == 0;
    T_EQ_INT(black, h * w / 4);
    T_CHECK(px(img, w, 7, 7)[0] == 0 && px(img, w, 7, 2)[0] == 200 && px(img, w, 2, 7)[0] == 200);
    /* Rotated: against the definition evaluated per pixel (in doubles, so a few
     * pixels right on a stripe's edge may go either way). */
    static const double angles[] = {33, -71, 90, 180, 0.5};
    for (size_t k = 0; k < sizeof angles / sizeof angles[0]; k++) {
        int d = 13 + (int)k * 4, keep = 5 + (int)k, ox = (int)k * 3, oy = 7;
        memset(img, 200, sz);
        T_CHECK(aug_gridmask(img, h, w, d, keep, ox, oy, angles[k]) == PT_OK);
        double t = -angles[k] * 3.14159265358979323846 / 180, c = cos(t), s = sin(t);
        int wrong = 0;
        black = 0;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                double dx = x + 0.5 - w * 0.5, dy = y + 0.5 - h * 0.5;
                double u = c * dx + s * dy + w * 0.5 + ox, v = -s * dx + c * dy + h * 0.5 + oy;
                double um = u - floor(u / d) * d, vm = v - floor(v / d) * d;
                int want = um >= keep && vm >= keep;
                int got = px(img, w, y, x)[0] == 0;
                wrong += want != got;
                black += got;
            }
        T_CHECKF(wrong < h * w / 200, "angle %g: %d pixels differ", angles[k], wrong);
        double frac = (double)(d - keep) * (d - keep) / ((double)d * d);
        T_CHECKF(fabs(black - frac * h * w) < h * w / 20, "angle %g: %d black", angles[k], black);
    }
    for (int i = 0; i < guard; i++)
        T_CHECK(buf[i] == 0xA5 && buf[guard + sz + i] == 0xA5);
    free(buf);
}

/* --- MixUp, CutMix --------------------------------------------------------------------- */

/* A batch whose image i is one flat colour (value 10 + 30 i) with label 100 + i. */
static batch *flat_batch(int n, int h, int w)
{
    batch *b = batch_new(n, h, w);
    b->n = n;
    for (int i = 0; i < n; i++) {
        memset(batch_image(b, i), 10 + 30 * i, (size_t)h * w * 3);
        b->label[i] = 100 + i;
    }
    batch_clear_mix(b);
    return b;
}

TEST(aug_mixup_labels_match_the_pixels)
{
    int n = 8, h = 12, w = 10;
    batch *b = flat_batch(n, h, w);
    aug_workspace *ws = aug_workspace_new(n, h, w);
    pt_err e;
    aug_chain *c;
    T_REQUIRE(aug_parse("mixup:1", &c, &e) == PT_OK);
    T_REQUIRE(aug_apply(c, b, 42, ws) == PT_OK);
    int partners[8] = {0};
    for (int i = 0; i < n; i++) {
        int j = b->label2[i] - 100;
        T_REQUIRE(b->label[i] == 100 + i);
        T_REQUIRE(j >= 0 && j < n);
        T_CHECKF(j != i, "example %d mixed with itself", i);
        partners[j]++;
        float m = b->mix[i];
        T_CHECK(m >= 0 && m <= 1);
        /* Own weight + partner weight == 1, and the weight is what was blended. */
        int wa = (int)(m * 256);
        T_CHECK((float)wa / 256 == m);
        int want = ((10 + 30 * i) * wa + (10 + 30 * j) * (256 - wa) + 128) >> 8;
        const uint8_t *p = batch_image(b, i);
        int bad = 0;
        for (size_t k = 0; k < (size_t)h * w * 3; k++)
            bad += p[k] != want;
        T_CHECKF(bad == 0, "example %d: %d bytes differ from %d", i, bad, want);
        T_EQ_INT(batch_dominant_label(b, i), m >= 0.5f ? 100 + i : 100 + j);
    }
    /* A permutation: every example is somebody's partner exactly once. */
    for (int j = 0; j < n; j++)
        T_EQ_INT(partners[j], 1);
    aug_free(c);
    aug_workspace_free(ws);
    batch_free(b);
}

TEST(aug_cutmix_weight_is_the_pasted_area)
{
    int n = 6, h = 40, w = 30;
    aug_workspace *ws = aug_workspace_new(n, h, w);
    pt_err e;
    aug_chain *c;
    T_REQUIRE(aug_parse("cutmix:1:alpha=0.7", &c, &e) == PT_OK);
    int nontrivial = 0;
    for (uint64_t seq = 0; seq < 8; seq++) {
        batch *b = flat_batch(n, h, w);
        b->seq = seq;
        T_REQUIRE(aug_apply(c, b, 3, ws) == PT_OK);
        for (int i = 0; i < n; i++) {
            int j = b->label2[i] - 100;
            T_REQUIRE(j >= 0 && j < n && j != i);
            const uint8_t *p = batch_image(b, i);
            int own = 0, other = 0, stray = 0;
            for (size_t k = 0; k < (size_t)h * w; k++) {
                own += p[k * 3] == 10 + 30 * i;
                other += p[k * 3] == 10 + 30 * j;
                stray += p[k * 3] != 10 + 30 * i && p[k * 3] != 10 + 30 * j;
            }
            T_EQ_INT(stray, 0);
            T_EQ_INT(own + other, h * w);
            T_NEAR(b->mix[i], 1.0 - (double)other / (h * w), 1e-6);
            T_EQ_INT(b->label[i], 100 + i); /* label stays the own one, weight mix[i] */
            nontrivial += other > 0 && own > 0;
        }
        batch_free(b);
    }
    T_CHECK(nontrivial > 10);
    /* Unlabeled examples are never mixed. */
    batch *b = flat_batch(n, h, w);
    for (int i = 0; i < n; i++)
        b->label[i] = b->label2[i] = -1;
    T_REQUIRE(aug_apply(c, b, 3, ws) == PT_OK);
    for (int i = 0; i < n; i++)
        T_CHECK(b->mix[i] == 1.0f && b->label2[i] == -1);
    batch_free(b);
    aug_free(c);
    aug_workspace_free(ws);
}

/* --- determinism ---------------------------------------------------------------------- */

static void run_chain(const aug_chain *c, batch *b, const uint8_t *src, uint64_t seed,
                      uint64_t seq, aug_workspace *ws)
{
    memcpy(b->images, src, (size_t)b->cap * b->h * b->w * 3);
    b->n = b->cap;
    b->seq = seq;
    for (int i = 0; i < b->n; i++)
        b->label[i] = i % 5;
    batch_clear_mix(b);
    aug_apply(c, b, seed, ws);
}

TEST(aug_same_seed_same_batch)
{
    int n = 8, h = 48, w = 40;
    size_t sz = (size_t)n * h * w * 3;
    uint8_t *src = malloc(sz), *first = malloc(sz);
    fill_random(src, sz, 12);
    batch *b = batch_new(n, h, w);
    pt_err e;
    aug_chain *c;
    char spec[512];
    snprintf(spec, sizeof spec, "%s,crop:0.5,cutout:0.3,gridmask:0.3,mixup:0.3,cutmix:0.3",
             aug_default_spec());
    T_REQUIRE(aug_parse(spec, &c, &e) == PT_OK);
    aug_workspace *ws = aug_workspace_new(n, h, w), *ws2 = aug_workspace_new(n + 3, h + 5, w);
    run_chain(c, b, src, 77, 3, ws);
    memcpy(first, b->images, sz);
    float mix[8];
    int32_t l2[8];
    memcpy(mix, b->mix, sizeof mix);
    memcpy(l2, b->label2, sizeof l2);
    T_CHECK(memcmp(first, src, sz) != 0);
    /* Same seed and position, another (bigger, used) workspace: the same batch. */
    run_chain(c, b, src, 1, 0, ws2);
    run_chain(c, b, src, 77, 3, ws2);
    T_CHECK(memcmp(first, b->images, sz) == 0);
    T_CHECK(memcmp(mix, b->mix, sizeof mix) == 0);
    T_CHECK(memcmp(l2, b->label2, sizeof l2) == 0);
    /* Another seed or another batch position: different. */
    run_chain(c, b, src, 78, 3, ws);
    T_CHECK(memcmp(first, b->images, sz) != 0);
    run_chain(c, b, src, 77, 4, ws);
    T_CHECK(memcmp(first, b->images, sz) != 0);
    /* Through the pipeline adapter, which makes its own workspace. */
    void *slot = NULL;
    memcpy(b->images, src, sz);
    b->seq = 3;
    for (int i = 0; i < n; i++)
        b->label[i] = i % 5;
    batch_clear_mix(b);
    aug_pipe_hook(c, b, 77, &slot);
    T_CHECK(slot != NULL);
    T_CHECK(memcmp(first, b->images, sz) == 0);
    aug_pipe_ws_free(slot);
    /* A batch bigger than the workspace is refused untouched. */
    aug_workspace *small = aug_workspace_new(n - 1, h, w);
    memcpy(b->images, src, sz);
    T_CHECK(aug_apply(c, b, 77, small) == PT_EUSAGE);
    T_CHECK(memcmp(src, b->images, sz) == 0);
    aug_workspace_free(small);
    aug_workspace_free(ws);
    aug_workspace_free(ws2);
    aug_free(c);
    batch_free(b);
    free(src);
    free(first);
}

/* The vector kernels (SSE2 / SSSE3 / AVX2, whatever this CPU has) and the portable
 * code give the same bytes, for odd sizes too (vector bodies plus scalar tails). */
TEST(aug_vector_and_portable_paths_agree)
{
    static const int sizes[][2] = {{192, 192}, {37, 61}, {5, 100}, {64, 17}};
    static const char *specs[] = {
        "perspective:1", "affine:1:rot=30:zoom=0.3", "flip:1", "flip:1:axis=hv",
        "color:1:brightness=0.3:contrast=0.5:saturation=0.5:hue=60",
        "perspective:1,affine:1,color:1", "crop:1,saturation:1",
        "perspective:1:interp=bilinear", "affine:1:interp=bilinear:rot=40", "mixup:1",
    };
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int h = sizes[si][0], w = sizes[si][1], n = 4;
        size_t sz = (size_t)n * h * w * 3;
        batch *b = batch_new(n, h, w);
        aug_workspace *ws = aug_workspace_new(n, h, w);
        uint8_t *src = malloc(sz), *vec = malloc(sz);
        fill_random(src, sz, 20 + si);
        for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
            pt_err e;
            aug_chain *c;
            T_REQUIRE(aug_parse(specs[k], &c, &e) == PT_OK);
            for (int pass = 0; pass < 2; pass++) {
                int prev = aug_vector_paths(pass == 0);
                memcpy(b->images, src, sz);
                b->n = n;
                b->seq = k;
                batch_clear_mix(b);
                T_CHECK(aug_apply(c, b, 31, ws) == PT_OK);
                aug_vector_paths(prev);
                if (pass == 0)
                    memcpy(vec, b->images, sz);
            }
            size_t diff = 0;
            for (size_t i = 0; i < sz; i++)
                diff += vec[i] != b->images[i];
            T_CHECKF(diff == 0, "%s at %dx%d: %zu bytes differ", specs[k], w, h, diff);
            T_CHECKF(memcmp(vec, src, sz) != 0, "%s at %dx%d did nothing", specs[k], w, h);
            aug_free(c);
        }
        free(src);
        free(vec);
        aug_workspace_free(ws);
        batch_free(b);
    }
    T_EQ_INT(aug_vector_paths(-1), 1);
}

/* --- grid ----------------------------------------------------------------------------- */

static int count_color(const uint8_t *rgb, int w, int x0, int y0, int x1, int y1, const uint8_t c[3])
{
    int n = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++)
            n += same_px(px(rgb, w, y, x), c);
    return n;
}

TEST(grid_font_covers_printable_ascii)
{
    for (int c = 33; c < 127; c++) {
        const uint8_t *g = grid_glyph((unsigned char)c);
        int on = 0;
        for (int r = 0; r < GRID_GLYPH_H; r++) {
            T_CHECKF((g[r] & ~0x1f) == 0, "glyph %c row %d wider than 5", c, r);
            on += g[r] != 0;
        }
        T_CHECKF(on > 0, "glyph %c is empty", c);
    }
    /* Distinct glyphs for the letters and digits. */
    for (int a = '0'; a <= 'z'; a++)
        for (int b = a + 1; b <= 'z'; b++)
            if (isalnum(a) && isalnum(b))
                T_CHECKF(memcmp(grid_glyph((unsigned char)a), grid_glyph((unsigned char)b),
                                GRID_GLYPH_H) != 0,
                         "%c and %c look the same", a, b);
    T_CHECK(grid_glyph(200) == grid_glyph('?'));
    T_EQ_INT(grid_text_width("abc", 1), 17);
    T_EQ_INT(grid_text_width("ab\nabcd", 2), 46);
    T_EQ_INT(grid_text_width("", 1), 0);
}

TEST(grid_text_draws_and_clips)
{
    int w = 40, h = 20, guard = 64;
    size_t sz = (size_t)w * h * 3;
    uint8_t *buf = malloc(sz + 2 * guard), *img = buf + guard;
    memset(buf, 0xA5, sz + 2 * guard);
    memset(img, 0, sz);
    const uint8_t white[3] = {255, 255, 255};
    grid_text(img, w, h, 1, 1, "I", white, 1);
    /* 'I': a 3-pixel bar on top and bottom, a 1-pixel stem. */
    T_EQ_INT(count_color(img, w, 0, 0, w, h, white), 3 + 5 + 3);
    T_CHECK(same_px(px(img, w, 1, 2), white) && same_px(px(img, w, 4, 3), white));
    T_CHECK(!same_px(px(img, w, 4, 2), white));
    memset(img, 0, sz);
    grid_text(img, w, h, 1, 1, "I", white, 2);
    T_EQ_INT(count_color(img, w, 0, 0, w, h, white), 4 * 11);
    /* Partly and wholly outside, huge coordinates, long strings: clipped. */
    grid_text(img, w, h, -7, -3, "Hello, world! 0123456789", white, 2);
    grid_text(img, w, h, 35, 15, "WWWWWWWWWWWWWWWWWWWWWWWW\nWWW", white, 3);
    grid_text(img, w, h, 2147483600, -2147483600, "xyz", white, 1);
    grid_text(img, w, h, -2147483600, 5, "xyz", white, 100000);
    for (int i = 0; i < guard; i++)
        T_CHECK(buf[i] == 0xA5 && buf[guard + sz + i] == 0xA5);
    free(buf);
}

TEST(grid_compose_layout_and_captions)
{
    int n = 5, th = 20, tw = 30, cols = 3;
    uint8_t *tiles[10];
    const uint8_t *o[5], *a[5];
    for (int k = 0; k < 2 * n; k++) {
        tiles[k] = malloc((size_t)th * tw * 3);
        memset(tiles[k], 40 + 20 * k, (size_t)th * tw * 3);
    }
    for (int k = 0; k < n; k++) {
        o[k] = tiles[k];
        a[k] = tiles[n + k];
    }
    const char *caps[5] = {"daisy", NULL, "a very long class name indeed", "", "rose"};
    uint8_t *rgb = NULL;
    int W = 0, H = 0, W2 = 0, H2 = 0;
    T_REQUIRE(grid_compose(o, a, caps, n, th, tw, cols, &rgb, &W, &H) == PT_OK);
    T_REQUIRE(grid_size(n, th, tw, cols, &W2, &H2) == PT_OK);
    T_EQ_INT(W, W2);
    T_EQ_INT(H, H2);
    /* Two panels of 3 columns, 2 rows. */
    T_CHECK(W > 2 * 3 * tw && W < 2 * 3 * tw + 80);
    T_CHECK(H > 2 * th + 2 * GRID_GLYPH_H && H < 2 * th + 80);

    /* Find each tile by its colour: the original at the left, the augmented one at
     * the same place in the right half, same row. */
    int dx0 = 0;
    for (int k = 0; k < n; k++) {
        uint8_t co[3] = {(uint8_t)(40 + 20 * k), (uint8_t)(40 + 20 * k), (uint8_t)(40 + 20 * k)};
        uint8_t ca[3] = {(uint8_t)(40 + 20 * (n + k)), (uint8_t)(40 + 20 * (n + k)),
                         (uint8_t)(40 + 20 * (n + k))};
        int ox = -1, oy = -1, ax = -1, ay = -1;
        for (int y = 0; y < H && ox < 0; y++)
            for (int x = 0; x < W; x++)
                if (same_px(px(rgb, W, y, x), co)) {
                    ox = x;
                    oy = y;
                    break;
                }
        for (int y = 0; y < H && ax < 0; y++)
            for (int x = 0; x < W; x++)
                if (same_px(px(rgb, W, y, x), ca)) {
                    ax = x;
                    ay = y;
                    break;
                }
        T_REQUIRE(ox >= 0 && ax >= 0);
        T_CHECK(ox + tw <= W / 2 && ax >= W / 2);
        T_EQ_INT(ay, oy);
        /* The right panel is the left one moved by one constant offset. */
        if (k == 0)
            dx0 = ax - ox;
        T_EQ_INT(ax - ox, dx0);
        T_CHECK(dx0 >= 3 * tw + 2 * 6);
        T_EQ_INT(count_color(rgb, W, ox, oy, ox + tw, oy + th, co), tw * th);
        T_EQ_INT(count_color(rgb, W, ax, ay, ax + tw, ay + th, ca), tw * th);
        T_EQ_INT(oy, 6 + GRID_GLYPH_H + 6 + (k / cols) * (th + GRID_GLYPH_H + 6 + 6));
        /* The caption band under the tile: text pixels iff there is a caption. */
        const uint8_t fgc[3] = {235, 235, 235};
        int ink = count_color(rgb, W, ox, oy + th, ox + tw, oy + th + GRID_GLYPH_H + 6, fgc);
        int ink2 = count_color(rgb, W, ax, ay + th, ax + tw, ay + th + GRID_GLYPH_H + 6, fgc);
        T_EQ_INT(ink, ink2);
        if (caps[k] && caps[k][0])
            T_CHECKF(ink > 10, "tile %d: caption not drawn", k);
        else
            T_EQ_INT(ink, 0);
        /* Nothing of a caption spills past its tile (the long one is cut to fit). */
        T_EQ_INT(count_color(rgb, W, ox + tw, oy + th, ox + tw + 6, oy + th + GRID_GLYPH_H + 6, fgc),
                 0);
    }
    free(rgb);

    /* Truncation at GRID_CAPTION_MAX characters under a wide tile. */
    int bw = 300;
    uint8_t *wide = calloc((size_t)bw * th * 3, 1);
    const uint8_t *wo[1] = {wide}, *wa[1] = {wide};
    const char *lc[1] = {"ABCDEFGHIJKLMNOPQRSTUVWXYZ"};
    T_REQUIRE(grid_compose(wo, wa, lc, 1, th, bw, 0, &rgb, &W, &H) == PT_OK);
    const uint8_t fgc[3] = {235, 235, 235};
    int scale = 2, y0 = 6 + GRID_GLYPH_H * scale + 6 + th;
    int cut = 6 + GRID_CAPTION_MAX * GRID_CELL_W * scale;
    T_CHECK(count_color(rgb, W, 6, y0, cut, H, fgc) > 100);
    T_EQ_INT(count_color(rgb, W, cut, y0, 6 + bw, H, fgc), 0);
    free(rgb);
    free(wide);

    T_CHECK(grid_compose(o, a, caps, 0, th, tw, 3, &rgb, &W, &H) == PT_EUSAGE);
    T_CHECK(rgb == NULL);
    T_CHECK(grid_compose(o, a, caps, n, 0, tw, 3, &rgb, &W, &H) == PT_EUSAGE);
    T_CHECK(grid_size(1, 16384, 16384, 1, &W, &H) == PT_EUSAGE);
    for (int k = 0; k < 2 * n; k++)
        free(tiles[k]);
}

/* The confusion picture: each cell shaded by its share of its row (a share of 1
 * brightest, 0 darkest, no count drawn in an empty cell), rows top to bottom. */
TEST(grid_confusion_shades_cells_by_their_share_of_the_row)
{
    const long long cm[9] = { 10, 0, 0, 4, 4, 0, 0, 0, 0 };
    const char *names[3] = { "daisy", "rose", "tulip" };
    uint8_t *rgb;
    int W, H;
    T_REQUIRE(grid_confusion(cm, 3, names, "epoch 1", &rgb, &W, &H) == PT_OK);
    const uint8_t high[3] = { 90, 170, 255 }, mid[3] = { 67, 107, 155 }, low[3] = { 44, 44, 54 };
    int nh = count_color(rgb, W, 0, 0, W, H, high), nm = count_color(rgb, W, 0, 0, W, H, mid),
        nl = count_color(rgb, W, 0, 0, W, H, low);
    /* Cells of 47 x 47 pixels and a 1-pixel gap; counts drawn in the non-empty ones. */
    T_CHECKF(nh > 1500 && nh < 47 * 47, "%d", nh);
    T_CHECKF(nm > 2 * 1500 && nm < 2 * 47 * 47, "%d", nm);
    T_EQ_INT(nl, 6 * 47 * 47);
    /* The share-1 cell (row 0) lies above the half cells (row 1), and left of one. */
    double yh = 0, ym = 0, xh = 0, xm_min = 1e9;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            if (same_px(px(rgb, W, y, x), high)) {
                yh += y;
                xh += x;
            }
            if (same_px(px(rgb, W, y, x), mid)) {
                ym += y;
                xm_min = x < xm_min ? x : xm_min;
            }
        }
    T_CHECKF(yh / nh + 40 < ym / nm, "%g %g %g %g", yh / nh, ym / nm, xh / nh, xm_min);
    T_CHECK(fabs(xh / nh - (xm_min + 23)) < 3); /* row 1's first cell is under it */
    /* The names in the left strip, the title on top. */
    const uint8_t fgc[3] = { 235, 235, 235 }, head[3] = { 150, 200, 255 };
    T_CHECK(count_color(rgb, W, 0, 30, 80, H, fgc) > 50);
    T_CHECK(count_color(rgb, W, 0, 0, W, 20, head) > 20);
    free(rgb);

    /* 104 classes: small cells, indices instead of names, a picture of ~560 pixels. */
    long long *big = calloc(104 * 104, sizeof *big);
    T_REQUIRE(big);
    for (int i = 0; i < 104; i++)
        big[i * 104 + i] = 5;
    T_REQUIRE(grid_confusion(big, 104, NULL, NULL, &rgb, &W, &H) == PT_OK);
    T_CHECKF(W > 500 && W < 620 && H > 500 && H < 620, "%dx%d", W, H);
    T_CHECK(count_color(rgb, W, 0, 0, W, H, high) >= 104 * 4);
    free(rgb);
    free(big);
    T_EQ_INT(grid_confusion(cm, 0, NULL, NULL, &rgb, &W, &H), PT_EUSAGE);
    T_CHECK(rgb == NULL);
    T_EQ_INT(grid_confusion(NULL, 3, NULL, NULL, &rgb, &W, &H), PT_EUSAGE);
    T_EQ_INT(grid_confusion(cm, 2049, NULL, NULL, &rgb, &W, &H), PT_EUSAGE);
}
