/* Shared test fixtures: small datasets written with the real shard writer, whose
 * images encode their label (red = 10 + 20 * label), so tests can check that
 * images and labels stay together. */
#ifndef PT_FIXTURES_H
#define PT_FIXTURES_H

#include <stdint.h>
#include <sys/types.h>

#include "run.h"

/* Writes OUT/tfrecords-jpeg-SxS/{train,val[,test]} with train_counts[k] and
 * val_counts[k] images of class k (val_counts may be NULL) and n_test unlabeled.
 * Returns the tfrecords-jpeg-SxS path (static buffer ring) or NULL. */
const char *fx_dataset(const char *out, int n_classes, const long long *train_counts,
                       const long long *val_counts, long long n_test, int size, int per_shard);

/* A JPEG of demo flower class k (variation seed) at size x size, rendered by the
 * built-in renderer and encoded by libjpeg-turbo at quality 90: a photo-like file for
 * tests that must run without the real photos of ../shared/data. The caller frees
 * *buf. Returns 0, or -1 when rendering or encoding failed. */
int fx_demo_jpeg(int k, uint64_t seed, int size, uint8_t **buf, size_t *len);

/* OUT/<class name>/<i>.jpg: per_class demo JPEGs of size px for each of the first
 * n_classes demo classes, the layout `petal-tui shards` reads. Returns OUT or NULL. */
const char *fx_photo_folder(const char *out, int n_classes, int per_class, int size);

/* The label an image of fx_dataset encodes (-1 when unreadable). */
int fx_label_of(const uint8_t *rgb, int w, int h);

/* Runs the engine on c to its end (the runner's alarm ends a hang) and leaves the last
 * snapshot in s: the final state, or RUN_FAILED with the reason printed when the
 * engine cannot be created. */
run_state fx_run_to_end(const run_config *c, run_snapshot *s);

/* The scalars named tag in the TensorBoard event files under path (a file or a
 * folder, its files in name order): up to max steps and values (either may be NULL);
 * their count, or -1 (the reason printed) when the files cannot be read whole.
 * *files (may be NULL) gets the number of event files. */
int fx_event_scalars(const char *path, const char *tag, long long *steps, double *values, int max,
                     int *files);

/* DIR/history.json without its train_timing lines (wall time differs between runs),
 * malloc'd; NULL when it cannot be read. */
char *fx_history_without_timing(const char *dir);

/* The last line of RUN/log.txt without its date and time (malloc'd; NULL when
 * there is no log); *all_stamped is 1 when every line starts with
 * "YYYY-MM-DD HH:MM:SS ". */
char *fx_log_last_line(const char *run_dir, int *all_stamped);

/* A folder (made once per test process) holding two short demo runs made by the
 * headless runner, "a" (2 epochs at 32 px, default options) and "b" (the same
 * with --lr-max 0.004); NULL (the reason printed) when a run failed. */
const char *fx_demo_runs(void);

/* A small dataset (4 classes of 30, 12, 20 and 8 training and 6, 3, 5 and 2
 * validation images, 32 px) made once per test run, and a quick 2-epoch config on
 * it (2 replicas of 4, one worker) writing to out. */
const char *fx_small_dataset(void);
void fx_small_config(run_config *c, const char *out);

/* mpirun as a test may run it (NULL-terminated): as root in a container too, on
 * one core too, shared memory between the ranks without the kernel's cross-memory
 * attach (which containers often forbid). */
extern const char *const fx_mpirun[];

/* "ASAN_OPTIONS=...:detect_leaks=0" (the runner's ASAN_OPTIONS kept), for the
 * environment of an mpirun job's ranks: under make SAN=1 LeakSanitizer fails a rank
 * at its exit for what Open MPI's plugins leave (unloaded by then: no stack to
 * suppress by), and it cannot work under strace's ptrace at all. The sanitizers'
 * other checks stay on; how the job path was checked for leaks with valgrind:
 * bench/RESULTS.md, issue 15. Static buffer. */
const char *fx_asan_no_leaks(void);

/* The value of fx_asan_no_leaks(), without "ASAN_OPTIONS=" (the same static buffer). */
const char *fx_asan_no_leaks_value(void);

/* A file's whole text, NUL-terminated (caller frees), or NULL. */
char *fx_slurp(const char *path);

/* A wait status as a shell shows it: the exit code, or 128 + the signal that killed
 * the process; -1 for neither. */
int fx_exit_status(int st);

/* Starts argv (argv[0] searched on PATH) in a process group of its own, so that
 * fx_wait_exit() can end it and all it started: stdin from /dev/null, stdout and
 * stderr into the files named (NULL: /dev/null), and env's entries (NULL-terminated,
 * or NULL) applied first: "NAME=VALUE" sets, "NAME" removes. The pid, or -1. */
pid_t fx_spawn(const char *const *argv, const char *const *env, const char *out,
               const char *err);

/* pid's exit status as a shell shows it (128 + the signal that killed it), waiting
 * at most limit seconds; after that its whole group is killed and -1 returned: a
 * hang is a failure, not a wait forever. */
int fx_wait_exit(pid_t pid, double limit);

#endif
