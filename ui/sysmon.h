/* sysmon — what the machine shows of the run beside its own figures: the
 * process's resident memory, its CPU use, and the machine's load average against
 * its cores, so that a competing process is seen in the header.
 *
 * Collected apart from drawing, as htop and btop do: the app's collect step calls
 * ui_sysmon_update() every frame, and it reads (/proc/self/statm, /proc/loadavg,
 * getrusage) only when `period` seconds have passed since its last read; the
 * header draws the figures it kept. Without /proc the memory is getrusage's peak
 * and the load unknown. The parsers are apart for the tests.
 *
 * Ownership: a plain value; nothing to free.
 */
#ifndef PT_UI_SYSMON_H
#define PT_UI_SYSMON_H

/* Seconds between reads in the workbench. */
#define UI_SYSMON_PERIOD 1.0

typedef struct ui_sysmon {
    double at;              /* when it last read (the caller's clock); < 0: never */
    long long rss;          /* resident bytes; < 0 unknown */
    int rss_peak;           /* rss is the peak (getrusage), not the current size */
    double cpu_pct;         /* this process since the read before, 100 = one core; < 0 unknown */
    double load1;           /* the machine's 1-minute load average; < 0 unknown */
    int cores;              /* online */
    long reads;             /* how many times it read */
    /* for the CPU figure: the process's CPU seconds at the last read */
    double cpu_s;
} ui_sysmon;

void ui_sysmon_init(ui_sysmon *m);

/* Reads the figures when period seconds have passed since the last read (or
 * there was none), now being seconds on any steady clock. 1 when it read. */
int ui_sysmon_update(ui_sysmon *m, double now, double period);

/* /proc/self/statm's text: the resident size in bytes (its second field times
 * page bytes). 0, or -1 when the text has no such field. */
int ui_sysmon_parse_statm(const char *text, long page, long long *rss);

/* /proc/loadavg's text: the 1-minute load average. 0, or -1. */
int ui_sysmon_parse_loadavg(const char *text, double *load1);

#endif
