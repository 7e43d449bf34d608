/* util — small helpers every module uses: a monotonic clock, aligned allocation,
 * file helpers (read a whole file, write a file atomically, make directories,
 * list a folder).
 *
 * Ownership: util_aligned_alloc() memory is released with util_aligned_free();
 * util_read_file() returns malloc'd memory the caller frees; util_list_dir()
 * returns a malloc'd list of malloc'd names the caller frees with util_free_list().
 */
#ifndef PT_UTIL_H
#define PT_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/err.h"

/* The cores this process may run on: its CPU affinity (taskset, mpirun's binding of
 * its ranks, a cpuset), or the online ones where that cannot be read; at least 1. */
int util_cores(void);
/* The host's online cores, at least 1. */
int util_cores_online(void);
/* The machine's physical memory in bytes (0 if unknown). */
size_t util_phys_bytes(void);

/* Seconds on the monotonic clock. */
double util_now(void);
/* *ts = the realtime clock's now + seconds (>= 0): pthread_cond_timedwait's deadline. */
void util_realtime_after(double seconds, struct timespec *ts);
/* CPU seconds used by the calling thread. */
double util_thread_cpu(void);

/* 64-byte aligned, zeroed; NULL on failure or n == 0 overflow. */
void *util_aligned_alloc(size_t n);
/* The same, not zeroed (the caller writes every byte it reads). */
void *util_aligned_alloc_raw(size_t n);
void util_aligned_free(void *p);

/* Part k of [from, to) cut in `parts` parts of the same whole multiple of 16 elements
 * (64 bytes of floats: no two parts share a cache line), the last ones shorter or
 * empty: [*lo, *hi). */
void util_slice(size_t from, size_t to, int parts, int k, size_t *lo, size_t *hi);

/* Whole file into memory (NUL-terminated for convenience; *len excludes the NUL). */
int util_read_file(const char *path, uint8_t **data, size_t *len, pt_err *e);
/* A text file's lines (each without its '\n' and one '\r' before it; a last line
 * without '\n' counts), malloc'd: the caller frees them with util_free_list(*lines,
 * *n). Errors as util_read_file's, or PT_ENOMEM naming the file. */
int util_read_lines(const char *path, char ***lines, int *n, pt_err *e);

/* Write data to path atomically: PATH.tmp.PID, fsync, rename, fsync the folder.
 * Whatever stops it (a full disk, a file-size limit, a kill) leaves path as it
 * was: the old file or none, never part of the new one. On an error the temporary
 * file is removed and e names path ("cannot write: WHY ... (the file is left as
 * it was)"); a kill leaves the temporary file, which util_remove_stale_temps()
 * clears later. */
#define UTIL_TMP_INFIX ".tmp."
int util_write_file_atomic(const char *path, const void *data, size_t len, pt_err *e);

/* Removes the NAME.tmp.PID files util_write_file_atomic() left in dir when killed:
 * those whose process is gone (not this one, nor any that is running). Returns
 * how many were removed, or -1 when dir cannot be listed (e says why). */
int util_remove_stale_temps(const char *dir, pt_err *e);

/* mkdir -p. */
int util_mkdirs(const char *path, pt_err *e);

/* Whether util_mkdirs(path) and writing files into the folder look possible, without
 * making anything: path is a folder we may write in, or the deepest part of it that
 * exists is one. PT_OK, or PT_EIO with e naming the part that is in the way (not a
 * folder, or not writable: the errno text). Permissions only: a full disk or
 * another process may still make the real attempt fail. */
int util_can_make_dir(const char *path, pt_err *e);

/* rm -r: remove a folder and everything in it (does not follow links). 0 or -1. */
int util_remove_tree(const char *path);

/* What util_list_dir() lists. */
enum {
    UTIL_LIST_FILES = 0, /* regular files (links followed), names not starting with '.' */
    UTIL_LIST_DIRS = 1,  /* folders (links followed), names not starting with '.' */
    UTIL_LIST_ALL = 2,   /* every entry but "." and "..", of any type, dot names included */
};

/* The entry names of dir (not paths), sorted by strcmp, as *n strings in *names.
 * With UTIL_LIST_FILES or UTIL_LIST_DIRS, entries whose "dir/name" path does not
 * fit in 4096 bytes are left out. PT_EIO ("cannot open folder") when dir cannot
 * be opened, PT_ENOMEM; on failure *names is NULL and *n is 0. On success the
 * caller frees the list with util_free_list(*names, *n). */
int util_list_dir(const char *dir, int what, char ***names, int *n, pt_err *e);
/* Free n names and the list (NULL is fine). */
void util_free_list(char **names, int n);

/* 1 when path is a directory, 0 otherwise. */
int util_is_dir(const char *path);
int util_is_file(const char *path);

/* snprintf that reports truncation as an error (returns -1). */
int util_path(char *out, size_t n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Copy or format into a fixed buffer, cutting what does not fit (always
 * NUL-terminated). For display strings, where truncation is the intent. */
void util_copy(char *dst, size_t n, const char *src);
void util_fmt(char *dst, size_t n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
