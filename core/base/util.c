/* sched_getaffinity() and CPU_COUNT() are GNU's. */
#define _GNU_SOURCE
#include "base/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int util_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    return util_cores_online();
}

int util_cores_online(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

size_t util_phys_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && size > 0 ? (size_t)pages * (size_t)size : 0;
}

double util_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void util_realtime_after(double seconds, struct timespec *ts)
{
    clock_gettime(CLOCK_REALTIME, ts);
    long long ns = (long long)ts->tv_nsec + (long long)(seconds * 1e9);
    ts->tv_sec += (time_t)(ns / 1000000000);
    ts->tv_nsec = (long)(ns % 1000000000);
}

double util_thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void util_slice(size_t from, size_t to, int parts, int k, size_t *lo, size_t *hi)
{
    size_t per = (to - from + (size_t)parts - 1) / (size_t)parts;
    per = (per + 15) & ~(size_t)15;
    size_t a = from + (size_t)k * per, b = a + per;
    *lo = a < to ? a : to;
    *hi = b < to ? b : to;
}

int util_read_lines(const char *path, char ***lines, int *n, pt_err *e)
{
    *lines = NULL;
    *n = 0;
    uint8_t *d;
    size_t len;
    int rc = util_read_file(path, &d, &len, e);
    if (rc != PT_OK)
        return rc;
    int k = 0;
    for (size_t i = 0; i < len; i++)
        k += d[i] == '\n' || i + 1 == len;
    char **v = calloc((size_t)(k ? k : 1), sizeof *v);
    int got = 0;
    for (size_t i = 0; v && i < len;) {
        size_t j = i;
        while (j < len && d[j] != '\n')
            j++;
        size_t l = j > i && d[j - 1] == '\r' ? j - i - 1 : j - i;
        if (!(v[got] = strndup((const char *)d + i, l)))
            break;
        got++;
        i = j + 1;
    }
    free(d);
    if (!v || got != k) {
        util_free_list(v, got);
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    *lines = v;
    *n = k;
    return PT_OK;
}

/* Blocks this large (a training context's arenas: gigabytes at 512 px) are aligned to
 * 2 MiB and offered to the kernel as transparent huge pages. First touching them then
 * takes one page fault per 2 MiB instead of per 4 KiB: on a VM that halves the time
 * a 5 GiB arena takes to build, and the TLB covers more of it once training runs. */
#define UTIL_HUGE_FROM ((size_t)4 << 20)
#define UTIL_HUGE_ALIGN ((size_t)2 << 20)

/* *size: the bytes the block holds (n rounded up to 64; 64 for n == 0). */
static void *aligned_block(size_t n, size_t *size)
{
    if (n == 0)
        n = 64;
    size_t rounded = (n + 63) & ~(size_t)63;
    void *p = NULL;
    if (rounded < n)
        return NULL;
    *size = rounded;
    if (rounded >= UTIL_HUGE_FROM) {
        rounded = (rounded + UTIL_HUGE_ALIGN - 1) & ~(UTIL_HUGE_ALIGN - 1);
        if (rounded < n || posix_memalign(&p, UTIL_HUGE_ALIGN, rounded) != 0)
            return NULL;
#ifdef MADV_HUGEPAGE
        /* Only advice: where THP is off (or "never") the pages stay 4 KiB. */
        (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
        return p;
    }
    if (posix_memalign(&p, 64, rounded) != 0)
        return NULL;
    return p;
}

void *util_aligned_alloc_raw(size_t n)
{
    size_t size;
    return aligned_block(n, &size);
}

void *util_aligned_alloc(size_t n)
{
    size_t size;
    void *p = aligned_block(n, &size);
    if (p)
        memset(p, 0, size);
    return p;
}

void util_aligned_free(void *p)
{
    free(p);
}

int util_read_file(const char *path, uint8_t **data, size_t *len, pt_err *e)
{
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET, "cannot open: %s",
                       strerror(errno));
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    for (;;) {
        if (n == cap) {
            size_t ncap = cap * 2;
            uint8_t *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                fclose(f);
                return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return err_set(e, PT_EIO, path, PT_NO_RECORD, (long long)n, "read failed");
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return PT_OK;
}

static int fsync_dir_of(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    int fd = open(dirname(tmp), O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* Pieces of at most this many bytes: a file of any size is written by the same
 * loop, and a kill or a full disk can stop it between two pieces of one file
 * (tests/test_crash.c does that), which is where a torn file would come from if
 * the name were written to in place. */
#define WRITE_PIECE (64 * 1024)

int util_write_file_atomic(const char *path, const void *data, size_t len, pt_err *e)
{
    char tmp[4096];
    if (util_path(tmp, sizeof tmp, "%s" UTIL_TMP_INFIX "%ld", path, (long)getpid()) != 0)
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "cannot write: cannot create %s: %s (the file is left as it was)", tmp,
                       strerror(errno));
    const uint8_t *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left < WRITE_PIECE ? left : WRITE_PIECE);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int saved = w < 0 ? errno : EIO;
            close(fd);
            unlink(tmp);
            return err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET,
                           "cannot write: %s after %zu of %zu bytes (the file is left as it was)",
                           strerror(saved), len - left, len);
        }
        p += w;
        left -= (size_t)w;
    }
    /* close() too can report a write the disk could not take (NFS, quotas). */
    if (fsync(fd) != 0) {
        int saved = errno;
        close(fd);
        unlink(tmp);
        return err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "cannot write: fsync: %s (the file is left as it was)", strerror(saved));
    }
    if (close(fd) != 0) {
        int saved = errno;
        unlink(tmp);
        return err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "cannot write: close: %s (the file is left as it was)", strerror(saved));
    }
    if (rename(tmp, path) != 0) {
        int saved = errno;
        unlink(tmp);
        return err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "cannot write: rename from %s: %s (the file is left as it was)", tmp,
                       strerror(saved));
    }
    /* The rename is done: the new file is there for this system. Syncing the folder
     * makes it outlast a power cut; where that fails, the old or the new file
     * stands after one, never a mixture, so it is not an error. */
    fsync_dir_of(path);
    return PT_OK;
}

/* NAME.tmp.PID: the PID when the rest is digits only, else 0. */
static long tmp_owner(const char *name)
{
    const char *at = strstr(name, UTIL_TMP_INFIX);
    if (!at || at == name)
        return 0;
    const char *digits = at + strlen(UTIL_TMP_INFIX);
    while ((at = strstr(digits, UTIL_TMP_INFIX)) != NULL) /* the last one counts */
        digits = at + strlen(UTIL_TMP_INFIX);
    if (!*digits || strspn(digits, "0123456789") != strlen(digits) || strlen(digits) > 9)
        return 0;
    return strtol(digits, NULL, 10);
}

int util_remove_stale_temps(const char *dir, pt_err *e)
{
    char **names;
    int n;
    if (util_list_dir(dir, UTIL_LIST_FILES, &names, &n, e) != PT_OK)
        return -1;
    int removed = 0;
    for (int i = 0; i < n; i++) {
        long pid = tmp_owner(names[i]);
        /* A writer that is still there (another process in the same folder) keeps
         * its file; kill(pid, 0) fails with ESRCH only when no such process is. */
        if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char full[4096];
        if (util_path(full, sizeof full, "%s/%s", dir, names[i]) == 0 && unlink(full) == 0)
            removed++;
    }
    util_free_list(names, n);
    return removed;
}

int util_mkdirs(const char *path, pt_err *e)
{
    char tmp[4096];
    if (util_path(tmp, sizeof tmp, "%s", path) != 0)
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
    size_t n = strlen(tmp);
    for (size_t i = 1; i <= n; i++) {
        if (tmp[i] == '/' || tmp[i] == '\0') {
            char c = tmp[i];
            tmp[i] = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return err_set(e, PT_EIO, tmp, PT_NO_RECORD, PT_NO_OFFSET,
                               "cannot create folder: %s", strerror(errno));
            tmp[i] = c;
        }
    }
    if (!util_is_dir(path))
        return err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET, "not a folder");
    return PT_OK;
}

int util_can_make_dir(const char *path, pt_err *e)
{
    char p[4096];
    if (util_path(p, sizeof p, "%s", path) != 0 || !p[0])
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                       p[0] ? "path too long" : "empty path");
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    struct stat st;
    /* Up to the deepest part that exists; mkdir -p would make the rest in it. */
    while (stat(p, &st) != 0) {
        int err = errno;
        char *slash = strrchr(p, '/');
        if (!strcmp(p, ".") || !strcmp(p, "/")) /* nothing further up */
            return err_set(e, PT_EIO, p, PT_NO_RECORD, PT_NO_OFFSET, "%s", strerror(err));
        if (!slash)
            util_copy(p, sizeof p, ".");
        else if (slash == p)
            p[1] = '\0';
        else
            *slash = '\0';
    }
    if (!S_ISDIR(st.st_mode))
        return err_set(e, PT_EIO, p, PT_NO_RECORD, PT_NO_OFFSET, "not a folder");
    if (access(p, W_OK | X_OK) != 0)
        return err_set(e, PT_EIO, p, PT_NO_RECORD, PT_NO_OFFSET, "%s", strerror(errno));
    return PT_OK;
}

int util_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int util_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int util_list_dir(const char *dir, int what, char ***names, int *n, pt_err *e)
{
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return err_set(e, PT_EIO, dir, PT_NO_RECORD, PT_NO_OFFSET, "cannot open folder");
    int cap = 16, cnt = 0;
    char **v = malloc((size_t)cap * sizeof *v);
    int oom = !v;
    struct dirent *de;
    while (!oom && (de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        if (what == UTIL_LIST_ALL) {
            if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                continue;
        } else {
            if (name[0] == '.')
                continue;
            char full[4096];
            if (util_path(full, sizeof full, "%s/%s", dir, name) != 0)
                continue;
            if (what == UTIL_LIST_DIRS ? !util_is_dir(full) : !util_is_file(full))
                continue;
        }
        if (cnt == cap) {
            char **nv = cap <= INT_MAX / 2 ? realloc(v, (size_t)cap * 2 * sizeof *nv) : NULL;
            if (!nv) {
                oom = 1;
                break;
            }
            v = nv;
            cap *= 2;
        }
        if (!(v[cnt] = strdup(name))) {
            oom = 1;
            break;
        }
        cnt++;
    }
    closedir(d);
    if (oom) {
        util_free_list(v, cnt);
        return err_set(e, PT_ENOMEM, dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    qsort(v, (size_t)cnt, sizeof *v, cmp_str);
    *names = v;
    *n = cnt;
    return PT_OK;
}

void util_free_list(char **names, int n)
{
    if (!names)
        return;
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

int util_path(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    return (w < 0 || (size_t)w >= n) ? -1 : 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int util_remove_tree(const char *path)
{
    if (!util_is_dir(path))
        return remove(path) == 0 ? 0 : -1;
    return nftw(path, remove_one, 32, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

void util_copy(char *dst, size_t n, const char *src)
{
    if (n == 0)
        return;
    size_t k = strlen(src);
    if (k >= n)
        k = n - 1;
    memcpy(dst, src, k);
    dst[k] = '\0';
}

void util_fmt(char *dst, size_t n, const char *fmt, ...)
{
    if (n == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, n, fmt, ap);
    va_end(ap);
}
