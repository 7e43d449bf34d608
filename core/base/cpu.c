/* cpu — the CPU's vector features (see cpu.h). */
#include "base/cpu.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CPU_X86 1
#include <cpuid.h>
#include <sys/syscall.h>
#endif

static cpu_features hw, usable[2];   /* usable[1]: under cpu_force_portable */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int portable;

#ifdef CPU_X86
/* XCR0: which register states the OS saves on a context switch. XGETBV is there
 * when CPUID says OSXSAVE; written as bytes so no -mxsave is needed. */
static uint64_t xcr0(void)
{
    uint32_t lo, hi;
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

/* A feature counts only with its registers saved by the OS, as gcc's
 * __builtin_cpu_supports has it: YMM for AVX, AVX2 and FMA; opmask and ZMM for
 * AVX-512; XTILECFG and XTILEDATA for AMX. */
static cpu_features probe(void)
{
    cpu_features f = { 0 };
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return f;
    f.ssse3 = c >> 9 & 1;
    f.sse42 = c >> 20 & 1;
    const uint64_t x = (c >> 27 & 1) ? xcr0() : 0;
    const int ymm = (x & 0x6) == 0x6, zmm = (x & 0xe6) == 0xe6;
    const int tiles = (x & 0x60000) == 0x60000;
    f.avx = ymm && (c >> 28 & 1);
    f.fma = ymm && (c >> 12 & 1);
    if (__get_cpuid_max(0, NULL) < 7)
        return f;
    __cpuid_count(7, 0, a, b, c, d);
    const unsigned subleaves = a;
    f.avx2 = ymm && (b >> 5 & 1);
    f.avx512f = zmm && (b >> 16 & 1);
    f.avx512dq = zmm && (b >> 17 & 1);
    f.avx512bw = zmm && (b >> 30 & 1);
    f.avx512vl = zmm && (b >> 31 & 1);
    f.avx512_vnni = zmm && (c >> 11 & 1);
    f.amx_bf16 = tiles && (d >> 22 & 1);
    f.amx_tile = tiles && (d >> 24 & 1);
    f.amx_int8 = tiles && (d >> 25 & 1);
    if (subleaves >= 1) {
        __cpuid_count(7, 1, a, b, c, d);
        f.avx512_bf16 = zmm && (a >> 5 & 1);
    }
    return f;
}
#else
static cpu_features probe(void)
{
    cpu_features f = { 0 };
    return f;
}
#endif

void cpu_mask_env(cpu_features *f, const char *value)
{
    if (!value || !value[0] || value[0] == '0')
        return;
    f->avx512f = f->avx512bw = f->avx512dq = f->avx512vl = 0;
    f->avx512_bf16 = f->avx512_vnni = 0;
    f->amx_tile = f->amx_bf16 = f->amx_int8 = 0;
}

static void detect(void)
{
    hw = probe();
    usable[0] = hw;
    cpu_mask_env(&usable[0], getenv("PT_GEMM_AVX2"));
    usable[1] = usable[0];
    cpu_features *p = &usable[1];
    p->avx = p->avx2 = p->fma = 0;
    cpu_mask_env(p, "1");
}

const cpu_features *cpu_hw(void)
{
    pthread_once(&once, detect);
    return &hw;
}

const cpu_features *cpu_usable(void)
{
    pthread_once(&once, detect);
    return &usable[__atomic_load_n(&portable, __ATOMIC_RELAXED) != 0];
}

void cpu_force_portable(int on)
{
    __atomic_store_n(&portable, on != 0, __ATOMIC_RELAXED);
}

int cpu_text(const cpu_features *f, char *buf, size_t n)
{
    const struct {
        unsigned char on;
        const char *name;
    } t[] = {
        { f->ssse3, "ssse3" },         { f->sse42, "sse4.2" },
        { f->avx, "avx" },             { f->avx2, "avx2" },
        { f->fma, "fma" },             { f->avx512f, "avx512f" },
        { f->avx512bw, "avx512bw" },   { f->avx512dq, "avx512dq" },
        { f->avx512vl, "avx512vl" },   { f->avx512_bf16, "avx512_bf16" },
        { f->avx512_vnni, "avx512_vnni" }, { f->amx_tile, "amx-tile" },
        { f->amx_bf16, "amx-bf16" },   { f->amx_int8, "amx-int8" },
    };
    if (n == 0)
        return -1;
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (!t[i].on)
            continue;
        const size_t k = strlen(t[i].name) + (len > 0);
        if (len + k >= n)
            return -1;
        if (len > 0)
            buf[len++] = ' ';
        memcpy(buf + len, t[i].name, strlen(t[i].name) + 1);
        len += strlen(t[i].name);
    }
    return 0;
}

int cpu_amx_enable(void)
{
#if defined(CPU_X86) && defined(SYS_arch_prctl)
    enum { ARCH_GET_XCOMP_PERM = 0x1022, ARCH_REQ_XCOMP_PERM = 0x1023, XTILEDATA = 18 };
    if (!cpu_hw()->amx_tile)
        return 0;
    unsigned long granted = 0;
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XTILEDATA) != 0 ||
        syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &granted) != 0)
        return 0;
    return (granted >> XTILEDATA & 1) != 0;
#else
    return 0;
#endif
}
