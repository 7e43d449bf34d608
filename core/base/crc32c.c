#include "base/crc32c.h"

#include <pthread.h>
#include <string.h>

#include "base/cpu.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PT_CRC_X86 1
#include <nmmintrin.h>
#endif

/* Reflected polynomial of CRC-32C. */
#define POLY 0x82f63b78u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static int have_hw = -1;

static void init_tables(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = table[0][n];
        for (int k = 1; k < 8; k++) {
            c = table[0][c & 0xff] ^ (c >> 8);
            table[k][n] = c;
        }
    }
#ifdef PT_CRC_X86
    have_hw = cpu_hw()->sse42 ? 1 : 0;
#else
    have_hw = 0;
#endif
}

uint32_t crc32c_sw(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&table_once, init_tables);
    const uint8_t *p = data;
    crc = ~crc;
    while (len > 0 && ((uintptr_t)p & 7) != 0) {
        crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        len--;
    }
    while (len >= 8) {
        /* Slicing-by-8 reads the next 8 bytes as little-endian words. */
        uint32_t lo = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                      (uint32_t)p[3] << 24;
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
                      (uint32_t)p[7] << 24;
        lo ^= crc;
        crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
              table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
              table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len-- > 0)
        crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

#ifdef PT_CRC_X86
/* The target attribute lets this one function use SSE4.2 while the rest of the
 * program stays baseline x86-64; it only runs after the CPU check above. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const void *data,
                                                                size_t len)
{
    const uint8_t *p = data;
    uint64_t c = ~crc;
    while (len > 0 && ((uintptr_t)p & 7) != 0) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        len -= 8;
    }
    while (len-- > 0)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}
#endif

uint32_t crc32c_hw(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&table_once, init_tables);
#ifdef PT_CRC_X86
    if (have_hw)
        return crc32c_sse42(crc, data, len);
#endif
    return crc32c_sw(crc, data, len);
}

int crc32c_have_hw(void)
{
    pthread_once(&table_once, init_tables);
    return have_hw;
}

uint32_t crc32c_extend(uint32_t crc, const void *data, size_t len)
{
    return crc32c_hw(crc, data, len);
}

uint32_t crc32c(const void *data, size_t len)
{
    return crc32c_hw(0, data, len);
}
