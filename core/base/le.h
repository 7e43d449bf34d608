/* le — little-endian integers in byte buffers, whatever the host's byte order.
 *
 * The TFRecord framing and the checkpoint format both store their lengths, tags and
 * checksums this way. Header-only: nothing to allocate or free.
 */
#ifndef PT_LE_H
#define PT_LE_H

#include <stdint.h>

static inline uint32_t le_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t le_get_u64(const uint8_t *p)
{
    return (uint64_t)le_get_u32(p) | (uint64_t)le_get_u32(p + 4) << 32;
}

static inline void le_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void le_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

#endif
