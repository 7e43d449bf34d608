/* cpu — the CPU's vector features, detected once, for every kernel.
 *
 * cpu_hw() is what the CPU has and the OS saves the registers of (CPUID, and XGETBV
 * for the YMM, ZMM and tile state): what OpenBLAS's kernel choice, the CRC-32C
 * instruction and the augmentations' vector code look at. cpu_usable() is what
 * petal-tui's own layer kernels (core/nn) may use: cpu_hw() less what the environment
 * switch PT_GEMM_AVX2 turns off (read once: set and not "0", no AVX-512 and no AMX, so
 * the AVX2 kernels run where AVX-512F is there too) and less what the test hook
 * cpu_force_portable(1) turns off (every AVX, so the portable kernels run). The other
 * test hooks stay with their modules: aug_vector_paths() (augment.h) and
 * nn_gemm_force_avx2() (nn_impl.h).
 *
 * Detection runs once, on the first call from any thread (pthread_once); the answers
 * never change after it but for cpu_force_portable, which tests call between passes,
 * never while a kernel runs.
 *
 * Ownership: the tables are static; nothing to free. */
#ifndef PT_BASE_CPU_H
#define PT_BASE_CPU_H

#include <stddef.h>

/* 1 where present. AVX-512 BW, DQ and VL are what OpenBLAS's SkylakeX kernels need
 * besides F; AVX512_BF16 is CPUID leaf 7 subleaf 1 EAX bit 5; the AMX ones leaf 7
 * EDX bits 24 (tile), 22 (bf16) and 25 (int8), and they also need cpu_amx_enable(). */
typedef struct cpu_features {
    unsigned char ssse3, sse42, avx, avx2, fma;
    unsigned char avx512f, avx512bw, avx512dq, avx512vl, avx512_bf16, avx512_vnni;
    unsigned char amx_tile, amx_bf16, amx_int8;
} cpu_features;

const cpu_features *cpu_hw(void);
const cpu_features *cpu_usable(void);

/* What PT_GEMM_AVX2=value turns off in f (value NULL: unset): every AVX-512 and AMX
 * feature when value is set and does not start with '0'. cpu_usable() applies it to
 * the environment's value, read once; tests call it with their own. */
void cpu_mask_env(cpu_features *f, const char *value);

/* Test hook: on, cpu_usable() has no AVX of any width (nor FMA, nor AMX). */
void cpu_force_portable(int on);

/* f's features, space-separated, only those present ("ssse3 sse4.2 avx avx2 fma
 * avx512f ... amx-int8"; "" for none), into buf of n bytes: 0, or -1 when cut short. */
int cpu_text(const cpu_features *f, char *buf, size_t n);

/* Asks Linux for the AMX tile data state (arch_prctl ARCH_REQ_XCOMP_PERM with
 * XFEATURE_XTILEDATA), which a process needs before its first tile instruction:
 * 1 when granted, 0 when not (no AMX, an older kernel, another system). */
int cpu_amx_enable(void);

#endif
