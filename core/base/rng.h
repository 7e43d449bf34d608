/* rng — a small seeded random generator (xoshiro256**, seeded by splitmix64).
 *
 * Identical sequences on every machine for the same seed: integer arithmetic only,
 * and the float helpers build values from integer bits. State is a plain value the
 * caller owns; copying it forks the stream. rng_derive() makes an independent
 * stream from a seed and a few integers (epoch, batch number, ...), so a worker
 * thread can get the same randomness for the same batch whichever thread runs it.
 */
#ifndef PT_RNG_H
#define PT_RNG_H

#include <stdint.h>

typedef struct rng {
    uint64_t s[4];
} rng;

void rng_seed(rng *r, uint64_t seed);
/* A stream that depends only on (seed, a, b). */
void rng_derive(rng *r, uint64_t seed, uint64_t a, uint64_t b);

uint64_t rng_u64(rng *r);
/* Uniform in [0, n), without modulo bias. n > 0. */
uint64_t rng_below(rng *r, uint64_t n);
/* Uniform in [lo, hi) for ints; lo < hi. */
int rng_int(rng *r, int lo, int hi);
/* Uniform in [0, 1) with 24 (float) or 53 (double) random bits. */
float rng_float(rng *r);
double rng_double(rng *r);
/* Uniform in [lo, hi). */
float rng_uniform(rng *r, float lo, float hi);
/* Standard normal (Box-Muller on doubles; uses libm). */
double rng_normal(rng *r);

#endif
