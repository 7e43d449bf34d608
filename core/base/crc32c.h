/* crc32c — CRC-32C (Castagnoli): TFRecord framing, checkpoints and the demo cache use it.
 *
 * crc32c() picks the SSE4.2 crc32 instruction when the CPU has it (checked once, at
 * run time) and a slicing-by-8 table otherwise. Both are exposed so tests can check
 * each against known vectors. No allocation, thread-safe after the first call.
 */
#ifndef PT_CRC32C_H
#define PT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC: start with crc = 0. */
uint32_t crc32c_extend(uint32_t crc, const void *data, size_t len);
uint32_t crc32c(const void *data, size_t len);

/* The two implementations; crc32c_hw() returns crc32c_sw() when SSE4.2 is absent. */
uint32_t crc32c_sw(uint32_t crc, const void *data, size_t len);
uint32_t crc32c_hw(uint32_t crc, const void *data, size_t len);
/* 1 when the hardware path is in use. */
int crc32c_have_hw(void);

/* TFRecord's masking: rotate right by 15 and add a constant. */
static inline uint32_t crc32c_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

static inline uint32_t crc32c_unmask(uint32_t masked)
{
    uint32_t rot = masked - 0xa282ead8u;
    return (rot >> 17) | (rot << 15);
}

#endif
