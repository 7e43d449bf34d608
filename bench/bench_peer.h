/* bench_peer — the PyTorch side of a side-by-side benchmark: a child process
 * (/usr/bin/python3 running a script with --serve) that answers one measurement per
 * request line, so the two sides can be measured interleaved, a few seconds apart,
 * under the same load. The script prints "ready HEADER" first (its versions, CPU and
 * kernels); without python3-torch it exits and peer_start says -1. */
#ifndef PT_BENCH_PEER_H
#define PT_BENCH_PEER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"

#ifndef PYTHON
#define PYTHON "/usr/bin/python3"
#endif

/* PyTorch allocates its activations afresh each step; glibc's malloc serves the large
 * ones with mmap and gives them back at free, so every step faults its pages in again.
 * On the Firecracker VMs of this workplace that cost PyTorch 2-4x and made its figures
 * swing (bench_bf16, 2026-11-29: `small` in bf16 146-777 img/s run to run, 711-751
 * with these settings; fp32 111-191 against 539). The peer at its best keeps its
 * memory: mmap only above 32 MiB (glibc's most), no trimming. The caller's settings,
 * when given, win. */
static inline void peer_malloc_env(void)
{
    setenv("MALLOC_MMAP_THRESHOLD_", "33554432", 0);
    setenv("MALLOC_TRIM_THRESHOLD_", "17179869184", 0);
    setenv("MALLOC_TOP_PAD_", "1073741824", 0);
}


typedef struct peer {
    pid_t pid;
    FILE *to, *from;
    char header[512];       /* its versions, CPU and kernel set */
} peer;

static inline int peer_start(peer *p, const char *script)
{
    memset(p, 0, sizeof *p);
    p->pid = -1;
    if (access(PYTHON, X_OK) != 0 || access(script, R_OK) != 0)
        return -1;
    int down[2], up[2];
    if (pipe(down) != 0)
        return -1;
    if (pipe(up) != 0) {
        close(down[0]);
        close(down[1]);
        return -1;
    }
    fflush(stdout);
    p->pid = fork();
    if (p->pid == 0) {
        dup2(down[0], 0);
        dup2(up[1], 1);
        close(down[0]);
        close(down[1]);
        close(up[0]);
        close(up[1]);
        peer_malloc_env();
        execl(PYTHON, PYTHON, script, "--serve", (char *)NULL);
        _exit(127);
    }
    close(down[0]);
    close(up[1]);
    if (p->pid < 0) {
        close(down[1]);
        close(up[0]);
        return -1;
    }
    p->to = fdopen(down[1], "w");
    p->from = fdopen(up[0], "r");
    char line[600];
    if (!p->to || !p->from || !fgets(line, sizeof line, p->from) || strncmp(line, "ready ", 6)) {
        /* No torch (the import failed): the child has exited or will on EOF. */
        if (p->to)
            fclose(p->to);
        if (p->from)
            fclose(p->from);
        waitpid(p->pid, NULL, 0);
        p->pid = -1;
        p->to = p->from = NULL;
        return -1;
    }
    line[strcspn(line, "\n")] = '\0';
    util_copy(p->header, sizeof p->header, line + 6);
    return 0;
}

/* Sends line (ending in a newline) and reads the answer into reply (n bytes): 0, or
 * -1 when the child is gone. */
static inline int peer_ask(peer *p, const char *line, char *reply, size_t n)
{
    if (p->pid < 0)
        return -1;
    fputs(line, p->to);
    fflush(p->to);
    return fgets(reply, (int)n, p->from) ? 0 : -1;
}

static inline void peer_stop(peer *p)
{
    if (p->pid < 0)
        return;
    fprintf(p->to, "quit\n");
    fclose(p->to);
    fclose(p->from);
    waitpid(p->pid, NULL, 0);
    p->pid = -1;
}

#endif
