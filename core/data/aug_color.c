/* aug_color — colour jitter as one 3x4 colour matrix: composing brightness, contrast,
 * saturation and hue into it (aug_cm_*), the per-channel means that contrast needs,
 * and applying it in 16-bit fixed point, portable or SSSE3/AVX2 with the same bytes
 * (aug_color_apply); aug_color() is the public single transform. Drawing the random
 * factors of a chain's colour ops is aug_chain.c's.
 */
#include <math.h>
#include <string.h>

#include "data/aug_impl.h"

#ifdef AUG_X86
#include <immintrin.h>
#endif

/* ===================================================================================
 * Colour
 * =================================================================================== */

void aug_cm_identity(aug_color_map *c)
{
    aug_m3_identity(c->a);
    c->o[0] = c->o[1] = c->o[2] = 0;
}

/* c <- (M x + b) after c. */
static void cm_then(aug_color_map *c, const double m[9], const double b[3])
{
    double a[9], o[3];
    aug_m3_mul(m, c->a, a);
    for (int r = 0; r < 3; r++)
        o[r] = m[r * 3] * c->o[0] + m[r * 3 + 1] * c->o[1] + m[r * 3 + 2] * c->o[2] + b[r];
    memcpy(c->a, a, sizeof a);
    memcpy(c->o, o, sizeof o);
}

void aug_cm_brightness(aug_color_map *c, double delta)
{
    double m[9], b[3] = {delta * 255, delta * 255, delta * 255};
    aug_m3_identity(m);
    cm_then(c, m, b);
}

/* Contrast around `mean`, the mean level of the image the op sees. */
void aug_cm_contrast(aug_color_map *c, double f, double mean)
{
    double m[9] = {f, 0, 0, 0, f, 0, 0, 0, f};
    double k = (1 - f) * mean, b[3] = {k, k, k};
    cm_then(c, m, b);
}

void aug_cm_saturation(aug_color_map *c, double s)
{
    static const double luma[3] = {0.299, 0.587, 0.114};
    double m[9], b[3] = {0, 0, 0};
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            m[r * 3 + k] = (r == k ? s : 0) + (1 - s) * luma[k];
    cm_then(c, m, b);
}

/* The SVG/CSS hue-rotate matrix: a rotation around the grey axis that keeps greys. */
void aug_cm_hue(aug_color_map *c, double deg)
{
    double t = deg * AUG_PI / 180, cs = cos(t), sn = sin(t);
    double m[9] = {0.213 + cs * 0.787 - sn * 0.213, 0.715 - cs * 0.715 - sn * 0.715,
                   0.072 - cs * 0.072 + sn * 0.928, 0.213 - cs * 0.213 + sn * 0.143,
                   0.715 + cs * 0.285 + sn * 0.140, 0.072 - cs * 0.072 - sn * 0.283,
                   0.213 - cs * 0.213 - sn * 0.787, 0.715 - cs * 0.715 + sn * 0.715,
                   0.072 + cs * 0.928 + sn * 0.072};
    double b[3] = {0, 0, 0};
    cm_then(c, m, b);
}

int aug_cm_is_identity(const aug_color_map *c)
{
    double id[9];
    aug_m3_identity(id);
    for (int i = 0; i < 9; i++)
        if (fabs(c->a[i] - id[i]) > 1e-6)
            return 0;
    return fabs(c->o[0]) < 1e-4 && fabs(c->o[1]) < 1e-4 && fabs(c->o[2]) < 1e-4;
}

/* Channel sums of nblocks 48-byte blocks (16 pixels) into 48 lane totals: uint16
 * lanes for up to 256 blocks at a time (255 * 256 < 65536), a fixed-trip inner loop
 * the compiler vectorizes, then widened. */
#define LANE_SUM_BODY                                                                    \
    do {                                                                                 \
        while (nblocks > 0) {                                                            \
            size_t chunk = nblocks < 256 ? nblocks : 256;                                \
            uint16_t acc[48] = {0};                                                      \
            for (size_t b = 0; b < chunk; b++, p += 48)                                  \
                for (int j = 0; j < 48; j++)                                             \
                    acc[j] = (uint16_t)(acc[j] + p[j]);                                  \
            for (int j = 0; j < 48; j++)                                                 \
                tot[j] += acc[j];                                                        \
            nblocks -= chunk;                                                            \
        }                                                                                \
    } while (0)

static void lane_sums(const uint8_t *p, size_t nblocks, uint64_t tot[48])
{
    LANE_SUM_BODY;
}

#ifdef AUG_X86
/* The same in AVX2 intrinsics: the compiler keeps the C version's 48 counters in
 * memory. Three registers of 16 uint16 counters, lane j of register c counting
 * byte 16 c + j of each block. */
__attribute__((target("avx2"))) static void lane_sums_avx2(const uint8_t *p, size_t nblocks,
                                                            uint64_t tot[48])
{
    while (nblocks > 0) {
        size_t chunk = nblocks < 256 ? nblocks : 256;
        __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0;
        for (size_t b = 0; b < chunk; b++, p += 48) {
            a0 = _mm256_add_epi16(a0, _mm256_cvtepu8_epi16(
                                          _mm_loadu_si128((const __m128i *)(const void *)p)));
            a1 = _mm256_add_epi16(a1, _mm256_cvtepu8_epi16(_mm_loadu_si128(
                                          (const __m128i *)(const void *)(p + 16))));
            a2 = _mm256_add_epi16(a2, _mm256_cvtepu8_epi16(_mm_loadu_si128(
                                          (const __m128i *)(const void *)(p + 32))));
        }
        uint16_t lanes[48];
        _mm256_storeu_si256((__m256i *)(void *)lanes, a0);
        _mm256_storeu_si256((__m256i *)(void *)(lanes + 16), a1);
        _mm256_storeu_si256((__m256i *)(void *)(lanes + 32), a2);
        for (int j = 0; j < 48; j++)
            tot[j] += lanes[j];
        nblocks -= chunk;
    }
}
#endif

/* Per-channel means of an image. */
void aug_channel_means(const uint8_t *img, int h, int w, double mean[3])
{
    size_t n = (size_t)h * w * 3, nb = n / 48;
    uint64_t tot[48] = {0}, sum[3] = {0, 0, 0};
#ifdef AUG_X86
    if (aug_simd() >= 3)
        lane_sums_avx2(img, nb, tot);
    else
#endif
        lane_sums(img, nb, tot);
    for (int j = 0; j < 48; j++)
        sum[j % 3] += tot[j];
    for (size_t i = nb * 48; i < n; i++)
        sum[i % 3] += img[i];
    for (int c = 0; c < 3; c++)
        mean[c] = (double)sum[c] / ((double)h * w);
}

/* Fixed point: every term is floor((v << 7) * c13 / 2^16) = floor(v * c13 / 512),
 * i.e. v * coef in 1/16 units with coef in 13 fractional bits; the offset is in 1/16
 * units too, with the rounding half added. This is exactly what SSE2's pmulhw
 * computes, so the scalar and vector paths give the same bytes. */
typedef struct color_fixed {
    int32_t c13[9];
    int32_t o4[3];
    int fits16; /* every partial sum fits in int16: the vector path may run */
} color_fixed;

static void cm_fix(const aug_color_map *c, color_fixed *f)
{
    f->fits16 = 1;
    for (int r = 0; r < 3; r++) {
        double bound = 0;
        for (int k = 0; k < 3; k++) {
            double v = floor(c->a[r * 3 + k] * 8192 + 0.5);
            if (v > 1e6)
                v = 1e6;
            if (v < -1e6)
                v = -1e6;
            f->c13[r * 3 + k] = (int32_t)v;
            if (fabs(v) > 32767)
                f->fits16 = 0;
            bound += fabs(v) * 255 / 512 + 1;
        }
        double o = floor(c->o[r] * 16 + 0.5) + 8;
        if (o > 1e6)
            o = 1e6;
        if (o < -1e6)
            o = -1e6;
        f->o4[r] = (int32_t)o;
        bound += fabs(o);
        if (bound > 32000)
            f->fits16 = 0;
    }
}

static inline int32_t mulhi16(int32_t a, int32_t b)
{
    int64_t p = (int64_t)a * b;
    return (int32_t)(p >= 0 ? p >> 16 : -((-p + 65535) >> 16));
}

static void color_pixels_scalar(uint8_t *p, size_t npx, const color_fixed *f)
{
    for (size_t i = 0; i < npx; i++, p += 3) {
        int32_t v[3] = {(int32_t)p[0] << 7, (int32_t)p[1] << 7, (int32_t)p[2] << 7};
        for (int r = 0; r < 3; r++) {
            int32_t acc = f->o4[r] + mulhi16(v[0], f->c13[r * 3]) +
                          mulhi16(v[1], f->c13[r * 3 + 1]) + mulhi16(v[2], f->c13[r * 3 + 2]);
            acc = acc < 0 ? 0 : acc >> 4;
            p[r] = (uint8_t)(acc > 255 ? 255 : acc);
        }
    }
}

#ifdef AUG_X86
/* The colour matrix on interleaved RGB, 8 output bytes per 128-bit lane: a lane
 * loads the 16 bytes from 2 before its first output byte, and three pshufb masks
 * give each 16-bit lane the R, G and B of its own pixel (zero-extended); then
 * 3 multiplies by that lane's coefficients, exactly the scalar code's steps. A
 * 48-byte group (16 pixels) is 6 lanes, so the masks and coefficients of lane L
 * are the same in every group. */
typedef struct color_lanes {
    uint8_t mask[6][3][16];
    int16_t coef[6][3][8];
    int16_t off[6][8];
} color_lanes;

static void color_lanes_init(const color_fixed *f, color_lanes *t)
{
    for (int L = 0; L < 6; L++)
        for (int j = 0; j < 8; j++) {
            int b = 8 * L + j, ch = b % 3;
            for (int q = 0; q < 3; q++) {
                t->mask[L][q][2 * j] = (uint8_t)(j + 2 - ch + q);
                t->mask[L][q][2 * j + 1] = 0x80;
                t->coef[L][q][j] = (int16_t)f->c13[ch * 3 + q];
            }
            t->off[L][j] = (int16_t)f->o4[ch];
        }
}

/* In place on 48-byte groups: every load of a group comes before its stores, and
 * the loads reach 2 bytes before and 6 after the group (never used, but read),
 * hence the caller keeps the first and last group for the scalar code. */
__attribute__((target("ssse3"))) static void color_groups_ssse3(uint8_t *p, size_t ngroups,
                                                                 const color_lanes *t)
{
    __m128i m[6][3], c[6][3], o[6];
    for (int L = 0; L < 6; L++) {
        for (int q = 0; q < 3; q++) {
            m[L][q] = _mm_loadu_si128((const __m128i *)(const void *)t->mask[L][q]);
            c[L][q] = _mm_loadu_si128((const __m128i *)(const void *)t->coef[L][q]);
        }
        o[L] = _mm_loadu_si128((const __m128i *)(const void *)t->off[L]);
    }
    for (size_t g = 0; g < ngroups; g++, p += 48) {
        __m128i r[6];
        for (int L = 0; L < 6; L++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 8 * L - 2));
            __m128i acc = o[L];
            for (int q = 0; q < 3; q++) {
                __m128i x = _mm_slli_epi16(_mm_shuffle_epi8(v, m[L][q]), 7);
                acc = _mm_add_epi16(acc, _mm_mulhi_epi16(x, c[L][q]));
            }
            r[L] = _mm_srai_epi16(acc, 4);
        }
        for (int k = 0; k < 3; k++)
            _mm_storeu_si128((__m128i *)(void *)(p + 16 * k),
                             _mm_packus_epi16(r[2 * k], r[2 * k + 1]));
    }
}

/* The same with two lanes per 256-bit register (lanes 2k and 2k + 1). */
__attribute__((target("avx2"))) static void color_groups_avx2(uint8_t *p, size_t ngroups,
                                                               const color_lanes *t)
{
    __m256i m[3][3], c[3][3], o[3];
    for (int k = 0; k < 3; k++) {
        for (int q = 0; q < 3; q++) {
            m[k][q] = _mm256_loadu2_m128i((const __m128i *)(const void *)t->mask[2 * k + 1][q],
                                          (const __m128i *)(const void *)t->mask[2 * k][q]);
            c[k][q] = _mm256_loadu2_m128i((const __m128i *)(const void *)t->coef[2 * k + 1][q],
                                          (const __m128i *)(const void *)t->coef[2 * k][q]);
        }
        o[k] = _mm256_loadu2_m128i((const __m128i *)(const void *)t->off[2 * k + 1],
                                   (const __m128i *)(const void *)t->off[2 * k]);
    }
    /* Written out: -O2 does not unroll these short loops, and the loop version
     * keeps the partial results in memory. */
#define COLOR_TERM256(k, q)                                                              \
    acc = _mm256_add_epi16(                                                              \
        acc, _mm256_mulhi_epi16(_mm256_slli_epi16(_mm256_shuffle_epi8(v, m[k][q]), 7), c[k][q]))
#define COLOR_LANES256(k)                                                                \
    do {                                                                                 \
        __m256i v = _mm256_loadu2_m128i((const __m128i *)(const void *)(p + 16 * (k) + 6),  \
                                        (const __m128i *)(const void *)(p + 16 * (k) - 2)); \
        __m256i acc = o[k];                                                              \
        COLOR_TERM256(k, 0);                                                             \
        COLOR_TERM256(k, 1);                                                             \
        COLOR_TERM256(k, 2);                                                             \
        r##k = _mm256_srai_epi16(acc, 4);                                                \
    } while (0)
    for (size_t g = 0; g < ngroups; g++, p += 48) {
        __m256i r0, r1, r2;
        COLOR_LANES256(0);
        COLOR_LANES256(1);
        COLOR_LANES256(2);
        __m256i r[3] = {r0, r1, r2};
        /* packus works within 128-bit halves: (r0, r1) gives lanes 0, 2, 1, 3. */
        __m256i p01 = _mm256_permute4x64_epi64(_mm256_packus_epi16(r[0], r[1]), 0xD8);
        __m256i p22 = _mm256_permute4x64_epi64(_mm256_packus_epi16(r[2], r[2]), 0xD8);
        _mm256_storeu_si256((__m256i *)(void *)p, p01);
        _mm_storeu_si128((__m128i *)(void *)(p + 32), _mm256_castsi256_si128(p22));
    }
#undef COLOR_LANES256
#undef COLOR_TERM256
}
#endif

/* Apply a colour map to n pixels. */
void aug_color_apply(uint8_t *img, size_t npx, const aug_color_map *c)
{
    color_fixed f;
    cm_fix(c, &f);
#ifdef AUG_X86
    size_t groups = npx / 16;
    int level = aug_simd();
    if (f.fits16 && groups >= 3 && level >= 2) {
        color_lanes t;
        color_lanes_init(&f, &t);
        color_pixels_scalar(img, 16, &f);
        if (level >= 3)
            color_groups_avx2(img + 48, groups - 2, &t);
        else
            color_groups_ssse3(img + 48, groups - 2, &t);
        color_pixels_scalar(img + (groups - 1) * 48, npx - (groups - 1) * 16, &f);
        return;
    }
#endif
    color_pixels_scalar(img, npx, &f);
}

int aug_color(uint8_t *img, int h, int w, double brightness, double contrast,
              double saturation, double hue_deg)
{
    if (!img || h <= 0 || w <= 0 || !isfinite(brightness) || !isfinite(contrast) ||
        !isfinite(saturation) || !isfinite(hue_deg))
        return PT_EUSAGE;
    aug_color_map c;
    aug_cm_identity(&c);
    aug_cm_brightness(&c, brightness);
    if (contrast != 1) {
        double mean[3];
        aug_channel_means(img, h, w, mean);
        /* The mean the contrast op sees is that of the brightened image. */
        double lvl = (mean[0] + mean[1] + mean[2]) / 3 + brightness * 255;
        aug_cm_contrast(&c, contrast, lvl);
    }
    aug_cm_saturation(&c, saturation);
    aug_cm_hue(&c, hue_deg);
    if (!aug_cm_is_identity(&c))
        aug_color_apply(img, (size_t)h * w, &c);
    return PT_OK;
}
