#include "src/blas_core.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn/nn.h"

/* The kernels for a CPU with these features (AVX-512 F/BW/DQ/VL, AVX2 with FMA, AVX),
 * or NULL where Prescott's are what it can run. */
static const char *blas_core_for(int avx512, int avx2_fma, int avx)
{
    /* SkylakeX's sgemm is the AVX-512 one every later Intel core uses as well
     * (Cooperlake and Sapphire Rapids add bf16 kernels, not float ones). */
    if (avx512)
        return "SkylakeX";
    if (avx2_fma)
        return "Haswell";
    if (avx)
        return "SandyBridge";
    return NULL;
}

/* This program's own file: under valgrind /proc/self/exe is valgrind's tool, which
 * must not be run again without valgrind's arguments. */
static int exe_is_ours(void)
{
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0)
        return 0;
    path[n] = '\0';
    const char *base = strrchr(path, '/');
    return strncmp(base ? base + 1 : path, "petal-tui", 9) == 0;
}

void blas_core_pick(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE") || getenv("PT_BLAS_KEEP") ||
        strcmp(nn_blas_corename(), "Prescott") != 0 || !exe_is_ours())
        return;
    /* __builtin_cpu_supports also asks the OS (XGETBV) that it saves the registers. */
    __builtin_cpu_init();
    const char *core = blas_core_for(__builtin_cpu_supports("avx512f") &&
                                         __builtin_cpu_supports("avx512bw") &&
                                         __builtin_cpu_supports("avx512dq") &&
                                         __builtin_cpu_supports("avx512vl"),
                                     __builtin_cpu_supports("avx2") &&
                                         __builtin_cpu_supports("fma"),
                                     __builtin_cpu_supports("avx"));
    if (!core || setenv("OPENBLAS_CORETYPE", core, 1) != 0 ||
        setenv("PT_BLAS_PICKED", core, 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE");   /* the exec failed: go on with what loaded */
    unsetenv("PT_BLAS_PICKED");
}
