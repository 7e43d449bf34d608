/* blas_core — the OpenBLAS kernels this CPU should run.
 *
 * Debian 12's OpenBLAS (0.3.21) picks its kernels by the CPU's model number when it
 * loads; a CPU newer than the library (or a VM that hides the model) gets its
 * fallback, Prescott's SSE3 kernels: sgemm at a quarter of the speed the CPU has. The
 * library's documented OPENBLAS_CORETYPE names the kernels instead, but it is read
 * only as the library loads. blas_core_pick() therefore sets it from the CPU's own
 * feature flags and starts the program again, once, before anything else has run.
 * Nothing to free. */
#ifndef PT_BLAS_CORE_H
#define PT_BLAS_CORE_H

/* When OpenBLAS fell back to Prescott, OPENBLAS_CORETYPE is unset and the CPU can run
 * better kernels: sets it and re-executes this program with argv. Returns (doing
 * nothing) otherwise, when PT_BLAS_KEEP is set, or when the exec fails. The new
 * process finds PT_BLAS_PICKED set to the kernels' name (`--version` says so). */
void blas_core_pick(char **argv);

#endif
