#include "base/rng.h"

#include <math.h>

/* The same bits on every machine: clang would otherwise fuse a * b + c into one FMA
 * instruction where the CPU has it, rounding once instead of twice. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void rng_seed(rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

void rng_derive(rng *r, uint64_t seed, uint64_t a, uint64_t b)
{
    uint64_t x = seed;
    uint64_t h = splitmix64(&x);
    x = h ^ (a * 0xd1342543de82ef95ULL);
    h = splitmix64(&x);
    x = h ^ (b * 0xaf251af3b0f025b5ULL);
    rng_seed(r, splitmix64(&x));
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t rng_u64(rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t rng_below(rng *r, uint64_t n)
{
    /* Rejection keeps the result exactly uniform. */
    uint64_t limit = UINT64_MAX - (UINT64_MAX % n);
    uint64_t v;
    do {
        v = rng_u64(r);
    } while (v >= limit);
    return v % n;
}

int rng_int(rng *r, int lo, int hi)
{
    return lo + (int)rng_below(r, (uint64_t)((long long)hi - lo));
}

float rng_float(rng *r)
{
    return (float)(rng_u64(r) >> 40) * (1.0f / 16777216.0f);
}

double rng_double(rng *r)
{
    return (double)(rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}

float rng_uniform(rng *r, float lo, float hi)
{
    return lo + (hi - lo) * rng_float(r);
}

double rng_normal(rng *r)
{
    double u1 = rng_double(r);
    double u2 = rng_double(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
