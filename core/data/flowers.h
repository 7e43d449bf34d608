/* flowers — a procedural flower renderer for the built-in demo dataset.
 *
 * flw_render() draws one photo-like image of a flower of class k: petals, a centre
 * disk, a blurred background of leaves and stems, lighting and sensor noise, all
 * varied by `seed`. The caller owns the pixel buffer; this module allocates
 * nothing and keeps no mutable state, so it may be called from several threads at
 * once. Class names and descriptions point to static storage (never freed).
 *
 * Determinism: the same (k, seed, size) gives the same bytes on every machine and
 * compiler. The render path uses only integer hashing and float + - * / sqrt
 * (correctly rounded in IEEE 754), with polynomial stand-ins for sin, cos and
 * atan2, and no libm calls. The golden checksums in tests/test_flowers.c pin it.
 */
#ifndef PT_FLOWERS_H
#define PT_FLOWERS_H

#include <stdint.h>

/* Bumped whenever a change alters rendered bytes (the demo cache is keyed on it). */
#define FLW_RENDER_VERSION 1

#define FLW_SIZE_MIN 32
#define FLW_SIZE_MAX 512

/* Number of classes (fixed, >= 10). */
int flw_class_count(void);
/* Short lowercase name, e.g. "white daisy"; NULL when k is out of range. */
const char *flw_class_name(int k);

/* Render class k, variation `seed`, into rgb (size*size*3 bytes, RGB, rows packed).
 * Same (k, seed, size) -> identical bytes on every machine. size in
 * [FLW_SIZE_MIN, FLW_SIZE_MAX]; with k or size out of range rgb is left untouched. */
void flw_render(int k, uint64_t seed, int size, uint8_t *rgb);

/* What tells a class apart, for help text and for the tests that check that every
 * pair of classes differs in at least two of petal count, petal shape and colour. */
typedef enum flw_shape {
    FLW_SHAPE_ELLIPTIC, /* oval petals */
    FLW_SHAPE_POINTED,  /* lanceolate, tapering to a tip */
    FLW_SHAPE_ROUND,    /* broad, overlapping */
    FLW_SHAPE_NOTCHED,  /* heart-shaped or toothed tip */
    FLW_SHAPE_RAY       /* many thin rays */
} flw_shape;

typedef struct flw_info {
    const char *name;
    int petals;            /* petals per ring, before the per-image +-1 jitter */
    int rings;             /* 1 single, 2-3 double / layered */
    flw_shape shape;
    const char *colour;    /* petal colour in words, e.g. "white" */
    const char *centre;    /* centre colour in words */
    uint8_t petal_rgb[3];  /* middle of the class's petal colour range */
    uint8_t centre_rgb[3]; /* middle of the class's centre colour range */
} flw_info;

/* Fills *out for class k; -1 (and *out untouched) when k is out of range. */
int flw_class_info(int k, flw_info *out);

#endif
