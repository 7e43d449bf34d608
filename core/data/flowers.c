/* The picture, back to front: a background (gradient, mottling, blurred leaves and
 * stems), sometimes a second flower out of focus, the flower's stem, sometimes a leaf,
 * the flower (petal rings and a centre disk), then the camera (light falloff,
 * vignette, exposure, white balance, highlight roll-off, noise).
 *
 * Every shape is an implicit function evaluated once per pixel; its value over its
 * gradient in pixel space is the distance to the edge, which gives analytic
 * anti-aliasing (a 1 px ramp) or, with a wider ramp, defocus blur. Petals live in
 * angular sectors: a pixel looks at the petal of its own sector and both neighbours,
 * so the cost does not grow with the petal count.
 *
 * This file owns the class table with its public accessors and the renderer: the
 * per-pixel walk that composites the scene's layers back to front and applies the
 * camera. The scene is drawn by flw_scene.c, the background and the shapes by
 * flw_shapes.c; what they share is in flw_impl.h. */
#include "data/flowers.h"

#include <stddef.h>

#include "data/flw_impl.h"

/* Bit-exact floats: no fused multiply-add. GCC does not contract in ISO C mode
 * (-std=c11, as the Makefile builds); clang contracts by default where the target
 * has FMA (aarch64, -march=native), so it is switched off here and in every
 * flw_* source (flw_impl.h, flw_scene.c, flw_shapes.c). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* ---- the classes ------------------------------------------------------------------ */


/* Field order: name, shape, colour words; petals, jitter, rings, ring_scale, base,
 * width, taper, notch, rim, veins, spots, gloss; tip_lo, tip_hi, base_col, base_len;
 * centre, ctr_lo, ctr_hi, ring_col, ring, texture, fuzz, dome. */
static const cls classes[] = {
    { "white daisy", FLW_SHAPE_RAY, "white", "yellow",
      21, 1, 1, 1.0f, 0.12f, 0.62f, 0.15f, 0.0f, 0.18f, 0.10f, 0.0f, 0.0f,
      { 232, 232, 226 }, { 255, 255, 252 }, { 214, 214, 196 }, 0.25f,
      0.24f, { 232, 168, 18 }, { 252, 208, 44 }, { 200, 130, 10 }, 0.85f, 0.35f, 0.0f, 0.45f },
    { "sunflower", FLW_SHAPE_POINTED, "golden yellow", "dark brown",
      17, 1, 2, 0.92f, 0.30f, 0.80f, 0.60f, 0.0f, 0.25f, 0.12f, 0.0f, 0.0f,
      { 255, 206, 24 }, { 248, 170, 6 }, { 222, 128, 8 }, 0.30f,
      0.42f, { 62, 36, 14 }, { 96, 58, 20 }, { 120, 70, 18 }, 0.78f, 0.65f, 0.0f, 0.25f },
    { "black-eyed susan", FLW_SHAPE_ELLIPTIC, "orange-yellow", "black",
      13, 1, 1, 1.0f, 0.15f, 0.80f, -0.10f, 0.22f, 0.20f, 0.12f, 0.0f, 0.0f,
      { 255, 184, 18 }, { 250, 152, 0 }, { 196, 82, 8 }, 0.28f,
      0.22f, { 34, 18, 10 }, { 66, 38, 18 }, { 40, 22, 10 }, 1.0f, 0.30f, 0.0f, 0.70f },
    { "pink cosmos", FLW_SHAPE_NOTCHED, "magenta", "yellow",
      8, 1, 1, 1.0f, 0.10f, 0.85f, -0.35f, 0.30f, 0.15f, 0.14f, 0.0f, 0.0f,
      { 214, 48, 146 }, { 236, 96, 186 }, { 176, 24, 108 }, 0.22f,
      0.15f, { 236, 186, 26 }, { 255, 214, 60 }, { 210, 150, 10 }, 0.80f, 0.40f, 0.10f, 0.40f },
    { "buttercup", FLW_SHAPE_ROUND, "bright yellow", "green",
      5, 1, 1, 1.0f, 0.08f, 1.25f, -0.25f, 0.0f, 0.22f, 0.06f, 0.0f, 0.35f,
      { 255, 228, 22 }, { 250, 200, 0 }, { 232, 176, 0 }, 0.30f,
      0.17f, { 170, 182, 40 }, { 130, 160, 36 }, { 230, 200, 30 }, 0.70f, 0.35f, 0.18f, 0.35f },
    { "wild rose", FLW_SHAPE_NOTCHED, "pale pink", "yellow",
      5, 1, 1, 1.0f, 0.08f, 1.20f, -0.30f, 0.45f, 0.18f, 0.10f, 0.0f, 0.0f,
      { 250, 186, 206 }, { 238, 146, 178 }, { 255, 246, 236 }, 0.40f,
      0.20f, { 240, 200, 40 }, { 222, 168, 30 }, { 200, 150, 20 }, 0.75f, 0.45f, 0.22f, 0.35f },
    { "borage", FLW_SHAPE_POINTED, "blue", "black",
      5, 1, 1, 1.0f, 0.08f, 0.95f, 0.75f, 0.0f, 0.18f, 0.10f, 0.0f, 0.0f,
      { 66, 104, 226 }, { 104, 142, 246 }, { 232, 232, 250 }, 0.14f,
      0.13f, { 28, 20, 40 }, { 60, 40, 70 }, { 20, 14, 30 }, 1.0f, 0.30f, 0.08f, 0.40f },
    { "tiger lily", FLW_SHAPE_POINTED, "orange", "green",
      6, 1, 1, 1.0f, 0.06f, 0.70f, 0.50f, 0.0f, 0.20f, 0.12f, 1.0f, 0.0f,
      { 250, 112, 20 }, { 238, 80, 10 }, { 244, 156, 44 }, 0.35f,
      0.08f, { 100, 112, 36 }, { 130, 130, 50 }, { 80, 60, 20 }, 1.0f, 0.20f, 0.0f, 0.30f },
    { "purple aster", FLW_SHAPE_RAY, "lavender", "yellow",
      18, 1, 2, 0.90f, 0.14f, 0.60f, 0.15f, 0.0f, 0.18f, 0.08f, 0.0f, 0.0f,
      { 150, 108, 222 }, { 178, 140, 238 }, { 120, 80, 190 }, 0.25f,
      0.20f, { 240, 188, 30 }, { 255, 214, 64 }, { 210, 140, 20 }, 0.80f, 0.40f, 0.0f, 0.40f },
    { "red camellia", FLW_SHAPE_ROUND, "red", "yellow",
      7, 1, 2, 0.72f, 0.05f, 1.25f, -0.20f, 0.0f, 0.28f, 0.10f, 0.0f, 0.0f,
      { 200, 20, 36 }, { 226, 40, 52 }, { 150, 10, 26 }, 0.30f,
      0.14f, { 250, 210, 60 }, { 236, 186, 40 }, { 200, 140, 20 }, 0.70f, 0.40f, 0.28f, 0.30f },
    { "marigold", FLW_SHAPE_ROUND, "orange", "orange-brown",
      11, 1, 3, 0.76f, 0.05f, 1.20f, -0.30f, 0.25f, 0.18f, 0.06f, 0.0f, 0.0f,
      { 255, 152, 0 }, { 248, 120, 0 }, { 226, 96, 0 }, 0.30f,
      0.09f, { 180, 80, 10 }, { 210, 110, 20 }, { 140, 60, 10 }, 1.0f, 0.40f, 0.15f, 0.30f },
    { "white anemone", FLW_SHAPE_ELLIPTIC, "white", "black",
      6, 1, 1, 1.0f, 0.08f, 1.10f, 0.0f, 0.0f, 0.16f, 0.08f, 0.0f, 0.0f,
      { 240, 240, 246 }, { 255, 255, 255 }, { 218, 212, 234 }, 0.30f,
      0.22f, { 20, 20, 30 }, { 44, 42, 64 }, { 10, 10, 16 }, 0.70f, 0.35f, 0.25f, 0.40f },
};

#define NCLASS ((int)(sizeof classes / sizeof classes[0]))

int flw_class_count(void)
{
    return NCLASS;
}

const char *flw_class_name(int k)
{
    return k >= 0 && k < NCLASS ? classes[k].name : NULL;
}

int flw_class_info(int k, flw_info *out)
{
    if (k < 0 || k >= NCLASS || !out)
        return -1;
    const cls *c = &classes[k];
    out->name = c->name;
    out->petals = c->petals;
    out->rings = c->rings;
    out->shape = c->shape;
    out->colour = c->colour_word;
    out->centre = c->centre_word;
    for (int i = 0; i < 3; i++) {
        out->petal_rgb[i] = (uint8_t)((c->tip_lo[i] + c->tip_hi[i] + 1) / 2);
        out->centre_rgb[i] = (uint8_t)((c->ctr_lo[i] + c->ctr_hi[i] + 1) / 2);
    }
    return 0;
}

/* ---- the renderer ----------------------------------------------------------------- */

void flw_render(int k, uint64_t seed, int size, uint8_t *rgb)
{
    if (k < 0 || k >= NCLASS || size < FLW_SIZE_MIN || size > FLW_SIZE_MAX || !rgb)
        return;
    scene sc;
    flw_scene_setup(&sc, &classes[k], seed, k, size);
    float S = (float)size, half = 0.5f * S;
    for (int y = 0; y < size; y++) {
        float py = (float)y + 0.5f;
        for (int x = 0; x < size; x++) {
            float px = (float)x + 0.5f;
            float col[3];
            flw_background(&sc, px, py, col);
            if (sc.has_back)
                flw_flower_paint(&sc.back, px, py, col);
            flw_stem_paint(&sc.main_stem, px, py, sc.lx, sc.ly, col);
            if (sc.has_leaf == 1)
                flw_petal_paint(&sc.leaf, &sc.leaf_st, 1.0f, px - sc.leaf_cx, py - sc.leaf_cy, col);
            flw_flower_paint(&sc.main, px, py, col);
            if (sc.has_leaf == 2)
                flw_petal_paint(&sc.leaf, &sc.leaf_st, 1.0f, px - sc.leaf_cx, py - sc.leaf_cy, col);

            /* Camera: directional light, vignette, exposure, white balance, noise. */
            float ox = (px - half) / S, oy = (py - half) / S;
            float light = 1.0f + sc.lk * (ox * sc.lx + oy * sc.ly) -
                          sc.vignette * (ox * ox + oy * oy);
            uint32_t h = hash3(sc.salt, (uint32_t)x, (uint32_t)y);
            float lum = ((float)(h >> 24) + (float)((h >> 16) & 0xffu)) * (1.0f / 255.0f) - 1.0f;
            uint8_t *o = rgb + ((size_t)y * (size_t)size + (size_t)x) * 3;
            for (int i = 0; i < 3; i++) {
                float v = (col[i] * light * sc.wb[i] - 0.5f) * sc.contrast + 0.5f + sc.bright;
                /* Soft shoulder, as film and phone cameras roll off highlights, so white
                 * petals keep their shading instead of clipping flat. */
                if (v > 0.8f) {
                    float over = v - 0.8f;
                    v = 0.8f + 0.2f * over / (over + 0.2f);
                }
                float chroma = (float)((h >> (i * 5)) & 31u) * (1.0f / 31.0f) - 0.5f;
                v = v * 255.0f + (lum + 0.5f * chroma) * sc.noise;
                v = clampf(v, 0.0f, 255.0f);
                o[i] = (uint8_t)(v + 0.5f);
            }
        }
    }
}
