#include "ui/sysmon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

void ui_sysmon_init(ui_sysmon *m)
{
    memset(m, 0, sizeof *m);
    m->at = -1;
    m->rss = -1;
    m->cpu_pct = -1;
    m->load1 = -1;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    m->cores = n > 0 ? (int)n : 1;
}

int ui_sysmon_parse_statm(const char *text, long page, long long *rss)
{
    long long size, res;
    if (page <= 0 || sscanf(text, "%lld %lld", &size, &res) != 2 || res < 0)
        return -1;
    *rss = res * page;
    return 0;
}

int ui_sysmon_parse_loadavg(const char *text, double *load1)
{
    double l;
    if (sscanf(text, "%lf", &l) != 1 || l < 0)
        return -1;
    *load1 = l;
    return 0;
}

/* The first bytes of a small /proc file as a string; 0, or -1. */
static int read_small(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t got = fread(buf, 1, n - 1, f);
    fclose(f);
    buf[got] = '\0';
    return got > 0 ? 0 : -1;
}

int ui_sysmon_update(ui_sysmon *m, double now, double period)
{
    if (m->at >= 0 && now - m->at < period)
        return 0;
    char buf[256];
    struct rusage ru;
    int have_ru = getrusage(RUSAGE_SELF, &ru) == 0;
    long long rss;
    if (read_small("/proc/self/statm", buf, sizeof buf) == 0 &&
        ui_sysmon_parse_statm(buf, sysconf(_SC_PAGESIZE), &rss) == 0) {
        m->rss = rss;
        m->rss_peak = 0;
    } else if (have_ru) {
        m->rss = (long long)ru.ru_maxrss * 1024; /* Linux: kilobytes */
        m->rss_peak = 1;
    }
    double load;
    if (read_small("/proc/loadavg", buf, sizeof buf) == 0 &&
        ui_sysmon_parse_loadavg(buf, &load) == 0)
        m->load1 = load;
    if (have_ru) {
        double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
                     (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
        if (m->at >= 0 && now > m->at)
            m->cpu_pct = 100.0 * (cpu - m->cpu_s) / (now - m->at);
        m->cpu_s = cpu;
    }
    m->at = now;
    m->reads++;
    return 1;
}
