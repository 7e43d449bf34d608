/* Shared by the benchmarks: what machine this is, and where the bench data lives. */
#ifndef PT_BENCH_COMMON_H
#define PT_BENCH_COMMON_H

#include <cblas.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The CPU model from /proc/cpuinfo. */
static inline void bench_cpu(char *out, size_t n)
{
    snprintf(out, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ')
                    c++;
                c[strcspn(c, "\n")] = '\0';
                snprintf(out, n, "%s", c);
            }
            break;
        }
    }
    fclose(f);
}

static inline void bench_header(const char *name)
{
    char cpu[256];
    bench_cpu(cpu, sizeof cpu);
    time_t t = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%d", localtime(&t));
    printf("== %s  date %s  cpu \"%s\"  openblas %s  cores %ld\n", name, date, cpu,
           openblas_get_corename(), sysconf(_SC_NPROCESSORS_ONLN));
}

#endif
