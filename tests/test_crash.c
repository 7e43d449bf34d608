/* Crash safety (issue 13). A small deterministic headless run is killed with SIGKILL
 * at 20 chosen moments (strace's fault injection delivers the signal as the
 * trainer enters its Nth write, fsync or rename: into a file's temporary copy, in
 * the middle of a checkpoint, at the rename itself, at the folder's sync) and at a
 * few random times. After each kill the run folder must hold no torn file: each of
 * its files is there exactly when its rename had been done before the kill, and is
 * whole (the checkpoint's checksum, the JSON files parse and agree with the straight
 * run); then --resume must end with the straight run's history.json (timings
 * aside). A run killed before it had written its configuration is started again
 * with the same --out instead (--resume says so). Two more tests fill the disk: a
 * file-size limit (RLIMIT_FSIZE) and a small tmpfs, during a checkpoint and during
 * a history write: a clear error naming the file, exit status 2, the previous files
 * intact, no temporary file left. */
#include "tests/t.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "run/checkpoint.h"
#include "tests/fixtures.h"

static const long long TC[3] = { 8, 8, 8 }, VC[3] = { 3, 3, 3 };
enum { EPOCHS = 3, UPDATES_PER_EPOCH = 24 / 4, PIECE = 64 * 1024 };

/* The run: 2 replicas x 2 images per update, checkpoints every epoch, the default
 * augmentation and dropout (seeded: deterministic), a net just big enough for its
 * checkpoint to be written in three pieces. */
static const char *const RUN_ARGS[] = {
    "--image-size", "32", "--epochs", "3", "--replicas", "2", "--batch-per-replica", "2",
    "--workers", "1", "--widths", "24,48", "--seed", "7", "--checkpoint-every", "1",
};
enum { N_RUN_ARGS = sizeof RUN_ARGS / sizeof RUN_ARGS[0] };

/* The files a run folder may hold besides log.txt and temporaries. */
static const char *const FILES[] = { "config", "valid_labels.json", "valid_preds.jsonl",
                                     "history.json", "checkpoint.ckpt", "submission.csv",
                                     "test_preds.json", "classes.txt" };
enum { N_FILES = sizeof FILES / sizeof FILES[0] };

static const char *dataset(void)
{
    static char root[4096];
    if (!root[0]) {
        const char *r = fx_dataset(t_tmpdir(), 3, TC, VC, 3, 32, 8);
        if (r && !realpath(r, root))
            root[0] = '\0';
    }
    return root;
}

/* A fresh scratch folder as an absolute path (strace names files by absolute paths). */
static const char *scratch(void)
{
    static char dir[4][PATH_MAX];
    static int slot;
    slot = (slot + 1) % 4;
    if (!realpath(t_tmpdir(), dir[slot]))
        util_copy(dir[slot], sizeof dir[slot], "/nonexistent");
    return dir[slot];
}

/* ------------------------------------------------------------------------------ */
/* running the program */

typedef struct child {
    const char *pre[16];  /* a program to run it under (strace ...), NULL-terminated */
    const char *mode;     /* "new": --out DIR; "resume": --resume DIR */
    const char *dir;
    const char *out_file, *err_file;
    long long fsize;      /* RLIMIT_FSIZE in bytes, 0 = none */
} child;

static pid_t start(const child *c)
{
    const char *argv[64];
    int n = 0;
    for (int i = 0; c->pre[i]; i++)
        argv[n++] = c->pre[i];
    argv[n++] = t_bin();
    argv[n++] = "--headless";
    if (!strcmp(c->mode, "resume")) {
        argv[n++] = "--resume";
        argv[n++] = c->dir;
    } else {
        argv[n++] = "--data";
        argv[n++] = dataset();
        argv[n++] = "--out";
        argv[n++] = c->dir;
        for (int i = 0; i < N_RUN_ARGS; i++)
            argv[n++] = RUN_ARGS[i];
    }
    argv[n] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    int o = open(c->out_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(c->err_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0)
        _exit(126);
    dup2(o, 1);
    dup2(e, 2);
    if (c->fsize > 0) {
        struct rlimit rl = { (rlim_t)c->fsize, (rlim_t)c->fsize };
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(126);
    }
    /* LeakSanitizer (make SAN=1) cannot work under strace's ptrace and fails the
     * program at its exit: leaks are looked for in the runs without strace. */
    if (c->pre[0])
        setenv("ASAN_OPTIONS", fx_asan_no_leaks_value(), 1);
    /* SIGXFSZ as a shell leaves it: petal-tui itself must turn the limit into an
     * error it reports, not die of the signal half-way through a file. */
    signal(SIGXFSZ, SIG_DFL);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
}

static int finish(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return st;
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* ------------------------------------------------------------------------------ */
/* what a run folder holds */

/* A JSON value from p (RFC 8259's grammar, numbers loosely): just past it, or NULL. */
static const char *json_value(const char *p, int depth);

static const char *json_ws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
        p++;
    return p;
}

static const char *json_string(const char *p)
{
    if (*p++ != '"')
        return NULL;
    for (; *p != '"'; p++) {
        if (!*p || (unsigned char)*p < 0x20)
            return NULL;
        if (*p == '\\' && !*++p)
            return NULL;
    }
    return p + 1;
}

static const char *json_items(const char *p, char close, int depth)
{
    p = json_ws(p + 1);
    if (*p == close)
        return p + 1;
    for (;; p = json_ws(p)) {
        if (close == '}') {
            if (!(p = json_string(p)))
                return NULL;
            p = json_ws(p);
            if (*p++ != ':')
                return NULL;
        }
        if (!(p = json_value(p, depth + 1)))
            return NULL;
        p = json_ws(p);
        if (*p == close)
            return p + 1;
        if (*p++ != ',')
            return NULL;
    }
}

static const char *json_value(const char *p, int depth)
{
    p = json_ws(p);
    if (depth > 32)
        return NULL;
    if (*p == '{' || *p == '[')
        return json_items(p, *p == '{' ? '}' : ']', depth);
    if (*p == '"')
        return json_string(p);
    for (const char *lit = "true\0false\0null\0"; *lit; lit += strlen(lit) + 1)
        if (!strncmp(p, lit, strlen(lit)))
            return p + strlen(lit);
    const char *q = p;
    if (*q == '-')
        q++;
    if (*q < '0' || *q > '9')
        return NULL;
    while ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' ||
           *q == '-')
        q++;
    return q;
}

/* 1 when text is one JSON value (jsonl: one per line) and nothing else. */
static int json_whole(const char *text, int lines)
{
    if (!lines) {
        const char *end = json_value(text, 0);
        return end && !*json_ws(end);
    }
    int n = 0;
    for (const char *p = text; *p; n++) {
        const char *end = json_value(p, 0);
        if (!end || *end != '\n')
            return 0;
        p = end + 1;
    }
    return n > 0;
}

/* Epochs in a history.json text. */
static int epochs_in(const char *h)
{
    int n = 0;
    for (const char *p = h; (p = strstr(p, "\"epoch\":")) != NULL; p++)
        n++;
    return n;
}

/* 1 when the history h (timing left out) is the straight one's first epochs: the
 * text up to its last object's end is the straight text's beginning. */
static int history_is_prefix(const char *h, const char *straight)
{
    const char *last = strrchr(h, '}');
    if (!last)
        return !strncmp(json_ws(h), "[]", 2);
    size_t n = (size_t)(last - h) + 1;
    return strncmp(h, straight, n) == 0;
}

/* The straight run's config (every run of this file writes the same) and history
 * without timings. */
static char *g_config, *g_history;

static int is_temp_name(const char *name)
{
    const char *t = strstr(name, ".tmp.");
    return t && t[5] && strspn(t + 5, "0123456789") == strlen(t + 5);
}

/* Every file in dir is known (FILES, log.txt, the event folders) or a temporary one, and those of
 * FILES there are whole: the checkpoint's checksum holds, the JSON parses, the
 * history is the straight one's beginning, the CSV has its header. have[i] says
 * whether FILES[i] is there; *ckpt the checkpoint's progress when it is;
 * *temps the temporary files. Failed checks name `what` (the moment). */
static void check_folder(const char *what, const char *dir, const char *straight, int have[N_FILES],
                         ckpt_progress *ckpt, int *temps)
{
    *temps = 0;
    char **names;
    int n;
    if (util_list_dir(dir, UTIL_LIST_ALL, &names, &n, NULL) != PT_OK) {
        memset(have, 0, N_FILES * sizeof *have);
        return;
    }
    for (int i = 0; i < n; i++) {
        /* log.txt and the TensorBoard event files (train/, validation/) are appended as
         * the run goes, not replaced: a kill may cut their last line or record. */
        int known = !strcmp(names[i], "log.txt") || !strcmp(names[i], "train") ||
                    !strcmp(names[i], "validation");
        for (int k = 0; k < N_FILES; k++)
            known |= !strcmp(names[i], FILES[k]);
        if (is_temp_name(names[i]))
            ++*temps;
        else
            T_CHECKF(known, "%s: an unknown file in the run folder: %s", what, names[i]);
    }
    util_free_list(names, n);
    for (int k = 0; k < N_FILES; k++) {
        char path[4200];
        util_path(path, sizeof path, "%s/%s", dir, FILES[k]);
        have[k] = util_is_file(path);
        if (!have[k])
            continue;
        if (!strcmp(FILES[k], "checkpoint.ckpt")) {
            pt_err e;
            int rc = ckpt_peek(path, ckpt, &e);
            T_CHECKF(rc == PT_OK, "%s: the checkpoint does not load: %s", what, e.msg);
            continue;
        }
        char *text = fx_slurp(path);
        T_CHECKF(text != NULL, "%s: cannot read %s", what, FILES[k]);
        if (!text)
            continue;
        if (!strcmp(FILES[k], "config"))
            T_CHECKF(g_config && !strcmp(text, g_config), "%s: the config is not whole:\n%s",
                     what, text);
        else if (!strcmp(FILES[k], "classes.txt"))
            T_CHECKF(text[0] && text[strlen(text) - 1] == '\n',
                     "%s: classes.txt is not whole:\n%s", what, text);
        else if (!strcmp(FILES[k], "submission.csv"))
            T_CHECKF(!strncmp(text, "id,label\n", 9) && text[strlen(text) - 1] == '\n',
                     "%s: submission.csv is not whole:\n%s", what, text);
        else
            T_CHECKF(json_whole(text, !strcmp(FILES[k], "valid_preds.jsonl")),
                     "%s: %s is not whole JSON:\n%s", what, FILES[k], text);
        free(text);
    }
    if (have[3]) {
        char *h = fx_history_without_timing(dir);
        T_CHECKF(h && history_is_prefix(h, straight),
                 "%s: history.json is not the straight run's beginning:\n%s\n---\n%s", what,
                 h ? h : "(unreadable)", straight);
        free(h);
    }
}

/* The straight run (plain), once: its folder; g_config and g_history. */
static const char *straight_dir(void)
{
    static char dir[4200];
    if (!dir[0] && dataset()[0]) {
        util_path(dir, sizeof dir, "%s/straight", scratch());
        char out[4300], err[4300];
        util_path(out, sizeof out, "%s.out", dir);
        util_path(err, sizeof err, "%s.err", dir);
        child c = { .pre = { NULL }, .mode = "new", .dir = dir, .out_file = out, .err_file = err };
        if (fx_exit_status(finish(start(&c))) != 0)
            dir[0] = '\0';
        char path[4300];
        util_path(path, sizeof path, "%s/config", dir);
        g_config = dir[0] ? fx_slurp(path) : NULL; /* both kept to the end of the tests */
        g_history = dir[0] ? fx_history_without_timing(dir) : NULL;
    }
    return dir;
}

/* Ends the killed run: --resume (or, without a configuration, a new run in the same
 * folder, after --resume has said why it cannot), then the straight history and no
 * temporary file. */
static void resume_and_compare(const char *what, const char *dir, const char *straight,
                               int have_config)
{
    char out[4300], err[4300];
    util_path(out, sizeof out, "%s.resume.out", dir);
    util_path(err, sizeof err, "%s.resume.err", dir);
    child r = { .pre = { NULL }, .mode = "resume", .dir = dir, .out_file = out, .err_file = err };
    int st = fx_exit_status(finish(start(&r)));
    if (!have_config) {
        char *msg = fx_slurp(err);
        T_CHECKF(st == 1 && msg && strstr(msg, ": no config file to resume from (a run that ended "
                                                "before writing one is started again with --out "),
                 "%s: --resume without a config: status %d, %s", what, st, msg ? msg : "");
        free(msg);
        r.mode = "new";
        st = fx_exit_status(finish(start(&r)));
    }
    char *msg = fx_slurp(err);
    /* A kill that came after the run had ended: resuming it is refused as finished (exit
     * 1, nothing written), and its files must still be the straight run's. */
    int finished = have_config && st == 1 && msg && strstr(msg, ": the run is finished: ");
    T_CHECKF(st == 0 || finished, "%s: the %s run ended with status %d: %s", what,
             have_config ? "resumed" : "new", st, msg ? msg : "");
    free(msg);
    char *h = fx_history_without_timing(dir);
    T_CHECKF(h && !strcmp(h, straight), "%s: the resumed history differs:\n%s\n---\n%s", what,
             h ? h : "(none)", straight);
    free(h);
    int have[N_FILES], temps;
    ckpt_progress p;
    check_folder(what, dir, straight, have, &p, &temps);
    T_CHECKF(temps == 0, "%s: %d temporary files left after the resumed run", what, temps);
    T_CHECKF(have[4] && p.epoch == EPOCHS, "%s: the resumed run's checkpoint is not the last", what);
    /* The predictions too are the straight run's. */
    static const char *const same[] = { "valid_labels.json", "valid_preds.jsonl",
                                        "submission.csv", "test_preds.json" };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        char a[4300], b[4300];
        util_path(a, sizeof a, "%s/%s", straight_dir(), same[i]);
        util_path(b, sizeof b, "%s/%s", dir, same[i]);
        char *ta = fx_slurp(a), *tb = fx_slurp(b);
        T_CHECKF(ta && tb && !strcmp(ta, tb), "%s: %s differs from the straight run's:\n%s\n---\n%s",
                 what, same[i], tb ? tb : "(none)", ta ? ta : "(none)");
        free(ta);
        free(tb);
    }
}

/* ------------------------------------------------------------------------------ */
/* strace: the trainer's writes, syncs and renames */

enum { SC_WRITE, SC_FSYNC, SC_RENAME, SC_N };
static const char *const SC_NAME[SC_N] = { "write", "fsync", "rename" };
/* What strace injects into, and traces, for each (rename is renameat on arm64). */
static const char *const SC_STRACE[SC_N] = { "write", "fsync", "rename,renameat,renameat2" };

typedef struct event {
    int sc;       /* SC_* */
    int nth;      /* the trainer's how-manieth call of it (strace's when=) */
    char *line;   /* the trace line (strace -y: file descriptors with their paths) */
} event;

static void free_events(event *ev, int n)
{
    for (int i = 0; i < n; i++)
        free(ev[i].line);
    free(ev);
}

/* The trainer thread's calls in an strace -f -y log, in order: the thread that
 * writes the configuration's temporary file, the first thing a new run writes. */
static event *trainer_events(const char *trace_path, const char *dir, int *n_out)
{
    *n_out = 0;
    char *text = fx_slurp(trace_path);
    if (!text)
        return NULL;
    char marker[4300];
    util_path(marker, sizeof marker, "<%s/config.tmp.", dir);
    long tid = -1;
    for (char *l = text; l && *l;) {
        char *nl = strchr(l, '\n');
        if (nl)
            *nl = '\0';
        char *end;
        long t = strtol(l, &end, 10);
        if (!strncmp(end + strspn(end, " "), "write(", 6) && strstr(end, marker))
            tid = t;
        if (nl)
            *nl = '\n';
        l = tid < 0 && nl ? nl + 1 : NULL;
    }
    int cap = 256, n = 0, count[SC_N] = { 0 };
    event *ev = malloc((size_t)cap * sizeof *ev);
    for (char *l = text; tid > 0 && l && *l;) {
        char *nl = strchr(l, '\n');
        if (nl)
            *nl = '\0';
        char *end;
        long t = strtol(l, &end, 10);
        end += strspn(end, " ");
        int sc = -1;
        if (t == tid && strncmp(end, "<...", 4) && strncmp(end, "+++", 3) &&
            strncmp(end, "---", 3)) {
            if (!strncmp(end, "write(", 6))
                sc = SC_WRITE;
            else if (!strncmp(end, "fsync(", 6))
                sc = SC_FSYNC;
            else if (!strncmp(end, "rename", 6))
                sc = SC_RENAME;
        }
        if (sc >= 0) {
            if (n == cap)
                ev = realloc(ev, (size_t)(cap *= 2) * sizeof *ev);
            ev[n].sc = sc;
            ev[n].nth = ++count[sc];
            ev[n].line = strdup(end);
            n++;
        }
        l = nl ? nl + 1 : NULL;
    }
    free(text);
    *n_out = n;
    return ev;
}

/* A moment: the k-th trainer call of `sc` whose line holds `pat` ("@" stands for
 * the run folder), then `skip` calls further on. */
typedef struct moment {
    const char *what;
    int sc;
    const char *pat;
    int k, skip;
} moment;

static const moment MOMENTS[] = {
    { "writing the config (the folder holds its temporary only)", SC_WRITE, "<@/config.tmp.", 1, 0 },
    { "the config written, not renamed", SC_RENAME, "\"@/config\"", 1, 0 },
    { "syncing the folder after the config's rename", SC_RENAME, "\"@/config\"", 1, 1 },
    { "the first log line", SC_WRITE, "<@/log.txt>", 1, 0 },
    { "epoch 1's history written, not renamed", SC_RENAME, "\"@/history.json\"", 1, 0 },
    { "the first piece of checkpoint 1", SC_WRITE, "<@/checkpoint.ckpt.tmp.", 1, 0 },
    { "the middle of checkpoint 1 (one piece written)", SC_WRITE, "<@/checkpoint.ckpt.tmp.", 2, 0 },
    { "the last piece of checkpoint 1", SC_FSYNC, "<@/checkpoint.ckpt.tmp.", 1, -1 },
    { "checkpoint 1 written, syncing it", SC_FSYNC, "<@/checkpoint.ckpt.tmp.", 1, 0 },
    { "checkpoint 1 synced, at its rename", SC_RENAME, "\"@/checkpoint.ckpt\"", 1, 0 },
    { "checkpoint 1 renamed, syncing the folder", SC_RENAME, "\"@/checkpoint.ckpt\"", 1, 1 },
    { "logging checkpoint 1", SC_RENAME, "\"@/checkpoint.ckpt\"", 1, 2 },
    { "epoch 2's validation predictions", SC_WRITE, "<@/valid_preds.jsonl.tmp.", 2, 0 },
    { "epoch 2's history, being written", SC_WRITE, "<@/history.json.tmp.", 2, 0 },
    { "epoch 2's history renamed, checkpoint 2 not yet", SC_RENAME, "\"@/history.json\"", 2, 1 },
    { "the middle of checkpoint 2 (its last piece)", SC_FSYNC, "<@/checkpoint.ckpt.tmp.", 2, -1 },
    { "checkpoint 2 at its rename", SC_RENAME, "\"@/checkpoint.ckpt\"", 2, 0 },
    { "the middle of checkpoint 3 (its last piece)", SC_FSYNC, "<@/checkpoint.ckpt.tmp.", 3, -1 },
    { "the last checkpoint renamed, syncing the folder", SC_RENAME, "\"@/checkpoint.ckpt\"", 3, 1 },
    { "writing the test predictions", SC_WRITE, "<@/submission.csv.tmp.", 1, 0 },
};
enum { N_MOMENTS = sizeof MOMENTS / sizeof MOMENTS[0] };

static void expand(char *out, size_t n, const char *pat, const char *dir)
{
    const char *at = strchr(pat, '@');
    util_fmt(out, n, "%.*s%s%s", (int)(at - pat), pat, dir, at + 1);
}

/* The index in ev of moment m, or -1. */
static int find_moment(const event *ev, int n, const moment *m, const char *dir)
{
    char pat[4300];
    expand(pat, sizeof pat, m->pat, dir);
    for (int i = 0, k = 0; i < n; i++)
        if (ev[i].sc == m->sc && strstr(ev[i].line, pat) && ++k == m->k)
            return i + m->skip >= 0 && i + m->skip < n ? i + m->skip : -1;
    return -1;
}

/* How many renames onto dir/name the trainer had done before event `before`. */
static int renames_before(const event *ev, int before, const char *dir, const char *name)
{
    char pat[4300];
    util_path(pat, sizeof pat, "\"%s/%s\"", dir, name); /* the target: a closing quote */
    int c = 0;
    for (int i = 0; i < before; i++)
        c += ev[i].sc == SC_RENAME && strstr(ev[i].line, pat) != NULL;
    return c;
}

/* When the run in dir starts training: the model's line is the last before its
 * first update. Waited for with a generous limit; util_now() then. */
static double wait_training(const char *dir)
{
    char log[4300];
    util_path(log, sizeof log, "%s/log.txt", dir);
    for (double w0 = util_now(); util_now() - w0 < 60;) {
        char *text = fx_slurp(log);
        /* "DATE TIME model small: ..." once the net is built */
        int running = text && strstr(text, " model small: ") != NULL;
        free(text);
        if (running)
            return util_now();
        usleep(10000);
    }
    T_CHECKF(0, "%s: no 'model small:' line within 60 s", log);
    return util_now();
}

/* strace can trace (ptrace may be refused in a container). */
static int strace_works(void)
{
    char *out = NULL;
    int rc = t_run("strace -f -o /dev/null true", &out);
    free(out);
    return rc == 0;
}

TEST(crash_sigkill_at_20_moments_leaves_whole_files_and_resume_ends_with_the_straight_history)
{
    T_NEED_TOOL("strace");
    if (!strace_works()) {
        t_skip("strace cannot trace here (ptrace not permitted)");
        return;
    }
    const char *sdir = straight_dir();
    T_REQUIRE(sdir[0] && g_history);
    const char *straight = g_history;
    T_REQUIRE(epochs_in(straight) == EPOCHS);
    char ckpt[4300];
    util_path(ckpt, sizeof ckpt, "%s/checkpoint.ckpt", sdir);
    T_CHECKF(file_size(ckpt) > 2 * PIECE,
             "the checkpoint (%lld bytes) is too small to be cut in the middle: a wider net",
             file_size(ckpt));

    /* The same run traced: where each moment is in the trainer's calls (and the
     * trace does not change the run). */
    const char *tmp = scratch();
    char ref[4200], trace[4300], out[4300], err[4300];
    util_path(ref, sizeof ref, "%s/traced", tmp);
    util_path(trace, sizeof trace, "%s.trace", ref);
    util_path(out, sizeof out, "%s.out", ref);
    util_path(err, sizeof err, "%s.err", ref);
    const char *trace_set = "trace=write,fsync,rename,renameat,renameat2";
    child c = { .pre = { "strace", "-f", "-y", "-o", trace, "-e", trace_set, NULL },
                .mode = "new", .dir = ref, .out_file = out, .err_file = err };
    T_REQUIRE(fx_exit_status(finish(start(&c))) == 0);
    char *h = fx_history_without_timing(ref);
    T_CHECKF(h && !strcmp(h, straight), "the traced run's history differs");
    free(h);
    int n_ev;
    event *ev = trainer_events(trace, ref, &n_ev);
    T_CHECKF(n_ev > 0, "no trainer calls in the trace %s", trace);
    if (n_ev == 0) {
        free_events(ev, n_ev);
        return;
    }

    for (int m = 0; m < N_MOMENTS; m++) {
        const moment *mo = &MOMENTS[m];
        int at = find_moment(ev, n_ev, mo, ref);
        T_CHECKF(at >= 0, "moment %d (%s) is not in the trainer's calls", m + 1, mo->what);
        if (at < 0)
            continue;
        const event *target = &ev[at];
        char what[300];
        util_fmt(what, sizeof what, "kill %d (%s: %s #%d)", m + 1, mo->what, SC_NAME[target->sc],
                 target->nth);
        char dir[4200], ktrace[4300], inject[128];
        util_path(dir, sizeof dir, "%s/k%02d", tmp, m + 1);
        util_path(ktrace, sizeof ktrace, "%s.trace", dir);
        util_path(out, sizeof out, "%s.out", dir);
        util_path(err, sizeof err, "%s.err", dir);
        util_fmt(inject, sizeof inject, "inject=%s:signal=SIGKILL:when=%d", SC_STRACE[target->sc],
                 target->nth);
        child k = { .pre = { "strace", "-f", "-y", "-o", ktrace, "-e", trace_set, "-e", inject,
                             NULL },
                    .mode = "new", .dir = dir, .out_file = out, .err_file = err };
        int st = finish(start(&k));
        T_CHECKF(fx_exit_status(st) == 128 + SIGKILL, "%s: the run ended with status %d, not killed",
                 what, fx_exit_status(st));

        /* The kill came where it was meant to: the trainer's last call. */
        int kn;
        event *kev = trainer_events(ktrace, dir, &kn);
        char want[4300];
        util_copy(want, sizeof want, target->line);
        char *cut = strstr(want, ref);
        char pat[4300] = "";
        if (cut) /* the reference line's path part, in the killed run's folder */
            util_fmt(pat, sizeof pat, "%s%.*s", dir, (int)strcspn(cut + strlen(ref), "\".>"),
                     cut + strlen(ref));
        T_CHECKF(kev && kn > 0 && kev[kn - 1].sc == target->sc && kev[kn - 1].nth == target->nth &&
                     (!pat[0] || strstr(kev[kn - 1].line, pat)),
                 "%s: the kill came elsewhere: %s", what, kev && kn ? kev[kn - 1].line : "(no call)");
        free_events(kev, kn);

        /* Each file is there exactly when its rename was done, and whole. */
        int have[N_FILES], temps;
        ckpt_progress p;
        check_folder(what, dir, straight, have, &p, &temps);
        for (int f = 0; f < N_FILES; f++) {
            int done = renames_before(ev, at, ref, FILES[f]) > 0;
            T_CHECKF(have[f] == done, "%s: %s is %s, though its rename was %s", what, FILES[f],
                     have[f] ? "there" : "missing", done ? "done" : "not done");
        }
        int ckpts = renames_before(ev, at, ref, "checkpoint.ckpt");
        if (have[4])
            T_CHECKF(p.epoch == ckpts && p.update == ckpts * UPDATES_PER_EPOCH,
                     "%s: the checkpoint holds epoch %lld, update %lld; %d had been written", what,
                     (long long)p.epoch, (long long)p.update, ckpts);
        if (have[3]) {
            char *hk = fx_history_without_timing(dir);
            T_CHECKF(hk && epochs_in(hk) == renames_before(ev, at, ref, "history.json"),
                     "%s: history.json holds %d epochs", what, hk ? epochs_in(hk) : -1);
            free(hk);
        }
        /* A kill inside a write leaves a temporary file, never a torn checkpoint. */
        if (target->sc == SC_WRITE && strstr(target->line, "/checkpoint.ckpt.tmp.")) {
            T_CHECKF(temps == 1, "%s: %d temporary files", what, temps);
            char **names;
            int nn;
            long long sz = -1;
            if (util_list_dir(dir, UTIL_LIST_FILES, &names, &nn, NULL) == PT_OK) {
                for (int i = 0; i < nn; i++)
                    if (!strncmp(names[i], "checkpoint.ckpt.tmp.", 20)) {
                        char tp[4300];
                        util_path(tp, sizeof tp, "%s/%s", dir, names[i]);
                        sz = file_size(tp);
                    }
                util_free_list(names, nn);
            }
            /* Pieces written before the kill: those before this call in its file. */
            int before = 0;
            for (int i = at - 1; i >= 0 && ev[i].sc == SC_WRITE &&
                                 strstr(ev[i].line, "/checkpoint.ckpt.tmp.");
                 i--)
                before++;
            T_CHECKF(sz == (long long)before * PIECE,
                     "%s: the temporary checkpoint holds %lld bytes, expected %d pieces", what, sz,
                     before);
        }
        resume_and_compare(what, dir, straight, have[0]);
    }
    free_events(ev, n_ev);

    /* And at random times while it trains (a seeded draw: the times differ from one
     * machine to another, the checks do not): within as long as a whole run trains. */
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    util_path(out, sizeof out, "%s/timed", tmp);
    child tc = { .pre = { NULL }, .mode = "new", .dir = out, .out_file = "/dev/null",
                 .err_file = "/dev/null" };
    pid_t timed = start(&tc);
    double t0 = wait_training(out);
    T_REQUIRE(fx_exit_status(finish(timed)) == 0);
    double span = util_now() - t0;
    for (int r = 0; r < 4; r++) {
        char dir[4200];
        util_path(dir, sizeof dir, "%s/random%d", tmp, r);
        child k = { .pre = { NULL }, .mode = "new", .dir = dir, .out_file = "/dev/null",
                    .err_file = "/dev/null" };
        pid_t pid = start(&k);
        wait_training(dir);
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double delay = span * (double)(x >> 11) / 9007199254740992.0;
        usleep((useconds_t)(delay * 1e6));
        kill(pid, SIGKILL);
        int st = finish(pid);
        char what[200];
        util_fmt(what, sizeof what, "random kill %d (%.3f s into training, status %d)", r + 1,
                 delay, fx_exit_status(st));
        int have[N_FILES], temps;
        ckpt_progress p = { 0 };
        check_folder(what, dir, straight, have, &p, &temps);
        char *hk = have[3] ? fx_history_without_timing(dir) : NULL;
        /* A history is written before its epoch's checkpoint, never two ahead. */
        T_CHECKF(!hk || epochs_in(hk) <= (have[4] ? p.epoch : 0) + 1,
                 "%s: history.json holds %d epochs, the checkpoint %lld", what, epochs_in(hk),
                 (long long)p.epoch);
        free(hk);
        resume_and_compare(what, dir, straight, have[0]);
    }
}

/* ------------------------------------------------------------------------------ */
/* a full disk */

/* The one line on stderr: "petal-tui: DIR/NAME: cannot write: WHY ...", and not
 * again on stdout (out_file may be NULL). */
static void check_write_error(const char *what, const char *out_file, const char *err_file,
                              const char *dir, const char *name, int errnum)
{
    char *log = out_file ? fx_slurp(out_file) : NULL;
    T_CHECKF(!log || !strstr(log, "cannot write"), "%s: the error is on stdout too:\n%s", what,
             log);
    free(log);
    char *msg = fx_slurp(err_file);
    char want[4400];
    util_path(want, sizeof want, "petal-tui: %s/%s: cannot write: %s", dir, name, strerror(errnum));
    T_CHECKF(msg && !strncmp(msg, want, strlen(want)) && strchr(msg, '\n') &&
                 !strchr(msg, '\n')[1] && strstr(msg, "(the file is left as it was)"),
             "%s: stderr is not the one line \"%s ...\":\n%s", what, want, msg ? msg : "");
    free(msg);
}

TEST(crash_file_size_limit_in_a_checkpoint_or_history_write_is_an_error_keeping_the_last_ones)
{
    const char *sdir = straight_dir();
    T_REQUIRE(sdir[0] && g_history);
    const char *straight = g_history;
    char path[4300];
    util_path(path, sizeof path, "%s/checkpoint.ckpt", sdir);
    long long ckpt_size = file_size(path);
    util_path(path, sizeof path, "%s/history.json", sdir);
    long long hist_size = file_size(path);
    util_path(path, sizeof path, "%s/config", sdir);
    long long config_size = file_size(path);
    /* Checkpoints grow with the history they carry (fixed-size records): a limit one
     * byte under the last lets the first two through. A history of two epochs is
     * two thirds of one of three (give or take the digits of its timings): a limit
     * at five sixths lets it through, and the config, but not the whole history. */
    long long hist_limit = hist_size * 5 / 6;
    /* ... and the config must pass too (it grows with the options). */
    if (hist_limit <= config_size)
        hist_limit = config_size + 16;
    T_CHECKF(ckpt_size > hist_size && config_size < hist_limit && hist_limit < hist_size,
             "sizes: checkpoint %lld, history %lld, config %lld", ckpt_size, hist_size,
             config_size);

    const char *tmp = scratch();
    char dir[4200], out[4300], err[4300];
    util_path(dir, sizeof dir, "%s/limited", tmp);
    util_path(out, sizeof out, "%s.out", dir);
    util_path(err, sizeof err, "%s.err", dir);
    child c = { .pre = { NULL }, .mode = "new", .dir = dir, .out_file = out, .err_file = err,
                .fsize = ckpt_size - 1 };
    int st = finish(start(&c));
    T_CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 2, "the limited run: status %d (want 2)",
             fx_exit_status(st));
    check_write_error("the last checkpoint", out, err, dir, "checkpoint.ckpt", EFBIG);
    int have[N_FILES], temps;
    ckpt_progress p = { 0 };
    check_folder("after the failed checkpoint", dir, straight, have, &p, &temps);
    T_CHECKF(have[4] && p.epoch == EPOCHS - 1, "the previous checkpoint is not there whole");
    T_EQ_INT(temps, 0);
    char *h = fx_history_without_timing(dir);
    T_CHECKF(h && epochs_in(h) == EPOCHS, "history.json: %s", h ? h : "(none)");
    free(h);

    /* Resumed under the history's limit: the resumed run writes the history of the
     * checkpoint (two epochs), trains the last epoch, and cannot write its history. */
    c.mode = "resume";
    c.fsize = hist_limit;
    st = finish(start(&c));
    T_CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 2, "the limited resume: status %d (want 2)",
             fx_exit_status(st));
    check_write_error("the last history", out, err, dir, "history.json", EFBIG);
    check_folder("after the failed history", dir, straight, have, &p, &temps);
    T_CHECKF(have[4] && p.epoch == EPOCHS - 1, "the previous checkpoint is not there whole");
    T_EQ_INT(temps, 0);
    h = fx_history_without_timing(dir);
    T_CHECKF(h && epochs_in(h) == EPOCHS - 1, "history.json: %s", h ? h : "(none)");
    free(h);

    /* With room again, the run ends as the straight one did. */
    resume_and_compare("resumed with room", dir, straight, 1);
}

TEST(crash_a_full_tmpfs_during_a_checkpoint_is_an_error_keeping_the_last_one)
{
    T_NEED_TOOL("unshare");
    const char *sdir = straight_dir();
    T_REQUIRE(sdir[0] && g_history);
    const char *straight = g_history;
    /* A tmpfs in a mount namespace of our own (an unprivileged user namespace). */
    char *o = NULL;
    int can = t_run("unshare -Urm sh -c 'mount -t tmpfs -o size=64k tmpfs /mnt'", &o);
    free(o);
    if (can != 0) {
        t_skip("cannot mount a tmpfs (unshare -Urm not permitted here)");
        return;
    }
    /* Room for the small files, their temporaries and a checkpoint and a half: the
     * first checkpoint fits, the second finds the disk full half-way. */
    long pg = sysconf(_SC_PAGESIZE);
    long long pages = 4; /* the small files' temporaries, and some slack */
    for (int k = 0; k < N_FILES; k++) {
        char path[4300];
        util_path(path, sizeof path, "%s/%s", sdir, FILES[k]);
        long long sz = file_size(path);
        if (sz > 0 && strcmp(FILES[k], "checkpoint.ckpt"))
            pages += (sz + pg - 1) / pg;
    }
    char path[4300];
    util_path(path, sizeof path, "%s/log.txt", sdir);
    pages += (file_size(path) + pg - 1) / pg;
    util_path(path, sizeof path, "%s/checkpoint.ckpt", sdir);
    long long cp = (file_size(path) + pg - 1) / pg;
    T_REQUIRE(cp >= 8);
    pages += cp + cp / 2;

    const char *tmp = scratch();
    char mnt[4200], keep[4200], out[4300], err[4300], cmd[16384];
    util_path(mnt, sizeof mnt, "%s/mnt", tmp);
    util_path(keep, sizeof keep, "%s/kept", tmp);
    util_path(out, sizeof out, "%s/out", tmp);
    util_path(err, sizeof err, "%s/err", tmp);
    T_REQUIRE(util_mkdirs(mnt, NULL) == PT_OK);
    int n = snprintf(cmd, sizeof cmd,
                     "unshare -Urm sh -c 'mount -t tmpfs -o size=%lld tmpfs %s || exit 99; "
                     "%s --headless --data %s --out %s/run",
                     pages * pg, mnt, t_bin(), dataset(), mnt);
    for (int i = 0; i < N_RUN_ARGS; i++)
        n += snprintf(cmd + n, sizeof cmd - (size_t)n, " %s", RUN_ARGS[i]);
    snprintf(cmd + n, sizeof cmd - (size_t)n,
             " >%s 2>%s; st=$?; cp -a %s/run %s; exit $st'", out, err, mnt, keep);
    int st = t_run(cmd, &o);
    T_CHECKF(st == 2, "the run on a full tmpfs: status %d (want 2): %s", st, o);
    free(o);
    char run[4300];
    util_path(run, sizeof run, "%s/run", mnt);
    check_write_error("a full tmpfs", out, err, run, "checkpoint.ckpt", ENOSPC);
    int have[N_FILES], temps;
    ckpt_progress p = { 0 };
    check_folder("after the full tmpfs", keep, straight, have, &p, &temps);
    T_CHECKF(have[4] && p.epoch >= 1 && p.epoch < EPOCHS,
             "the previous checkpoint is not there whole (epoch %lld)", (long long)p.epoch);
    T_EQ_INT(temps, 0);
    /* Copied to a disk with room, it resumes to the straight run's end. */
    resume_and_compare("resumed from the copy", keep, straight, 1);
}
