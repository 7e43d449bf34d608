/* fuzz — what the libFuzzer harnesses in tests/fuzz/ share.
 *
 * Each harness is one file, fuzz_TARGET.c, that defines LLVMFuzzerTestOneInput()
 * and reaches its parser through the module's public API, as a user's file would.
 * A harness checks what the API promises (an error names the file, a payload lies
 * inside the file, what loads can be walked and written back) and calls
 * FZ_ASSERT(), which aborts, when a promise is broken: libFuzzer then keeps the
 * input as a crash like any sanitizer report. Everything a call allocates is freed
 * before the next input (leaks are findings too).
 *
 * fz_file() puts bytes behind a path for the parsers that only take one: an
 * anonymous memory file (memfd), reached as /proc/self/fd/N, rewritten per input.
 * Include this header before any other, in one file per harness.
 */
#ifndef PT_FUZZ_H
#define PT_FUZZ_H

#define _GNU_SOURCE 1

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_ASSERT(cond, ...)                                                   \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: broken promise: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* Slot k (0 or 1) of two memory files: holds the n bytes, returns its path (static
 * storage, one per slot). Aborts when the memory file cannot be made or written:
 * that is the harness's failure, not the parser's. */
static inline const char *fz_file(int k, const void *data, size_t n)
{
    static int fd[2] = { -1, -1 };
    static char path[2][64];
    if (fd[k] < 0) {
        fd[k] = memfd_create(k ? "fuzz-input-1" : "fuzz-input-0", MFD_CLOEXEC);
        FZ_ASSERT(fd[k] >= 0, "memfd_create failed");
        snprintf(path[k], sizeof path[k], "/proc/self/fd/%d", fd[k]);
    }
    FZ_ASSERT(ftruncate(fd[k], 0) == 0, "ftruncate failed");
    const uint8_t *p = data;
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(fd[k], p + done, n - done, (off_t)done);
        FZ_ASSERT(w > 0, "pwrite failed");
        done += (size_t)w;
    }
    return path[k];
}

/* Keeps a value computed from what a parser handed out, so reading it is not
 * optimised away (the sanitizers must see every byte read). */
volatile unsigned long long fz_sink;
static inline void fz_use(unsigned long long v)
{
    fz_sink += v;
}

/* 1 when the message names the file (the house style: "FILE: ...: what"). */
static inline int fz_names(const char *msg, const char *file)
{
    return strstr(msg, file) != NULL;
}

#endif
