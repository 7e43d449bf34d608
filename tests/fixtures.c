#include "tests/fixtures.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "config.h"
#include "data/flowers.h"
#include "data/jpeg.h"
#include "data/shards.h"
#include "engine.h"
#include "io/tbevent.h"
#include "tests/t.h"

static int draw_label(void *ctx, const shd_item *it, jpg_codec *codec, uint8_t *rgb, int size,
                      pt_err *e)
{
    (void)ctx;
    (void)codec;
    (void)e;
    int lab = it->split == DS_TEST ? 0 : it->label;
    for (int i = 0; i < size * size; i++) {
        rgb[3 * i] = (uint8_t)(10 + 20 * lab);
        rgb[3 * i + 1] = (uint8_t)(it->seed * 37 % 200);
        rgb[3 * i + 2] = (uint8_t)((i / size) * 255 / size); /* a vertical ramp */
    }
    return PT_OK;
}

const char *fx_dataset(const char *out, int n_classes, const long long *train_counts,
                       const long long *val_counts, long long n_test, int size, int per_shard)
{
    static char ring[4][4096];
    static int slot;
    long long n = n_test;
    for (int k = 0; k < n_classes; k++)
        n += train_counts[k] + (val_counts ? val_counts[k] : 0);
    shd_item *items = calloc((size_t)n, sizeof *items);
    long long at = 0;
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < n_classes; k++) {
            long long c = s == 0 ? train_counts[k] : (val_counts ? val_counts[k] : 0);
            for (long long i = 0; i < c; i++) {
                items[at].split = s;
                items[at].label = k;
                items[at].seed = (uint64_t)at;
                at++;
            }
        }
    for (long long i = 0; i < n_test; i++) {
        items[at].split = DS_TEST;
        items[at].seed = (uint64_t)at;
        at++;
    }
    /* Interleave classes inside each split deterministically (as real shards are). */
    for (long long i = n - 1; i > 0; i--) {
        long long j = (long long)((uint64_t)(i * 2654435761u) % (uint64_t)(i + 1));
        if (items[i].split == items[j].split) {
            shd_item t = items[i];
            items[i] = items[j];
            items[j] = t;
        }
    }
    shd_make_ids(items, n, 7);
    /* Up to the competition's 104 classes and beyond (names for 256). */
    static char names[256][16];
    const char *np[256];
    if (n_classes > 256) {
        free(items);
        fprintf(stderr, "fixture: at most 256 classes\n");
        return NULL;
    }
    for (int k = 0; k < n_classes; k++) {
        snprintf(names[k], sizeof names[k], "flower%02d", k);
        np[k] = names[k];
    }
    shd_writer_config w = {
        .out_dir = out, .size = size, .per_shard = per_shard, .quality = 95, .workers = 2,
        .class_names = np, .n_classes = n_classes, .draw = draw_label,
    };
    shd_result res;
    pt_err e;
    int rc = shd_write_dataset(&w, items, n, &res, &e);
    free(items);
    if (rc != PT_OK) {
        fprintf(stderr, "fixture: %s\n", e.msg);
        return NULL;
    }
    slot = (slot + 1) % 4;
    snprintf(ring[slot], sizeof ring[slot], "%s", res.root);
    return ring[slot];
}

int fx_label_of(const uint8_t *rgb, int w, int h)
{
    /* Average red over the centre: JPEG keeps flat areas within a few levels. */
    long sum = 0, n = 0;
    for (int y = h / 4; y < 3 * h / 4; y++)
        for (int x = w / 4; x < 3 * w / 4; x++) {
            sum += rgb[(y * w + x) * 3];
            n++;
        }
    double red = (double)sum / n;
    int lab = (int)((red - 10) / 20 + 0.5);
    return lab < 0 ? -1 : lab;
}

run_state fx_run_to_end(const run_config *c, run_snapshot *s)
{
    eng *g;
    pt_err e;
    if (eng_create(c, &g, &e) != PT_OK) {
        printf("  %s\n", e.msg);
        return RUN_FAILED;
    }
    eng_start(g);
    eng_wait(g, -1); /* the runner's alarm ends a hang */
    eng_snapshot_get(g, s);
    eng_destroy(g);
    return s->state;
}

/* 1 when s starts with "YYYY-MM-DD HH:MM:SS ". */
static int stamped(const char *s)
{
    static const char form[] = "dddd-dd-dd dd:dd:dd ";
    for (int i = 0; form[i]; i++)
        if (form[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != form[i])
            return 0;
    return 1;
}

char *fx_log_last_line(const char *run_dir, int *all_stamped)
{
    char path[4200];
    uint8_t *text;
    size_t len;
    *all_stamped = 0;
    if (util_path(path, sizeof path, "%s/log.txt", run_dir) != 0 ||
        util_read_file(path, &text, &len, NULL) != PT_OK)
        return NULL;
    char *s = (char *)text, *last = NULL;
    int ok = len > 0;
    for (char *line = s; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        ok = ok && stamped(line);
        last = line;
        line = nl ? nl + 1 : line + strlen(line);
    }
    char *out = last ? strdup(stamped(last) ? last + 20 : last) : NULL;
    free(text);
    *all_stamped = ok;
    return out;
}

int fx_demo_jpeg(int k, uint64_t seed, int size, uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    if (k < 0 || k >= flw_class_count() || size < FLW_SIZE_MIN || size > FLW_SIZE_MAX)
        return -1;
    uint8_t *rgb = malloc((size_t)size * size * 3);
    jpg_codec *c = jpg_codec_new();
    int rc = -1;
    if (rgb && c) {
        flw_render(k, seed, size, rgb);
        const uint8_t *enc;
        size_t n;
        pt_err e;
        if (jpg_encode(c, rgb, size, size, 90, &enc, &n, &e) == PT_OK && (*buf = malloc(n))) {
            memcpy(*buf, enc, n);
            *len = n;
            rc = 0;
        }
    }
    jpg_codec_free(c);
    free(rgb);
    return rc;
}

const char *fx_photo_folder(const char *out, int n_classes, int per_class, int size)
{
    pt_err e;
    for (int k = 0; k < n_classes; k++) {
        char dir[4096], path[4200];
        snprintf(dir, sizeof dir, "%s/%s", out, flw_class_name(k));
        if (util_mkdirs(dir, &e) != PT_OK)
            return NULL;
        for (int i = 0; i < per_class; i++) {
            uint8_t *jpg;
            size_t n;
            if (fx_demo_jpeg(k, (uint64_t)(1000 * k + i), size, &jpg, &n) != 0)
                return NULL;
            snprintf(path, sizeof path, "%s/%03d.jpg", dir, i);
            int rc = util_write_file_atomic(path, jpg, n, &e);
            free(jpg);
            if (rc != PT_OK)
                return NULL;
        }
    }
    return out;
}

int fx_event_scalars(const char *path, const char *tag, long long *steps, double *values, int max,
                     int *files)
{
    char **list;
    int n, count = 0;
    pt_err e;
    if (files)
        *files = 0;
    if (tbe_find_files(path, &list, &n, &e) != PT_OK) {
        printf("  %s\n", e.msg);
        return -1;
    }
    if (files)
        *files = n;
    for (int f = 0; f < n && count >= 0; f++) {
        tbe_reader *r;
        if (tbe_open(&r, list[f], &e) != PT_OK) {
            printf("  %s\n", e.msg);
            count = -1;
            break;
        }
        tbe_item it;
        int rc;
        while ((rc = tbe_next(r, &it, &e)) == 1) {
            if (it.kind != TBE_SCALAR || strcmp(it.tag, tag) != 0)
                continue;
            if (count < max) {
                if (steps)
                    steps[count] = it.step;
                if (values)
                    values[count] = it.value;
            }
            count++;
        }
        if (rc < 0) {
            printf("  %s\n", e.msg);
            count = -1;
        }
        tbe_close(r);
    }
    util_free_list(list, n);
    return count;
}

char *fx_history_without_timing(const char *dir)
{
    char path[4200];
    util_path(path, sizeof path, "%s/history.json", dir);
    uint8_t *data;
    size_t len;
    if (util_read_file(path, &data, &len, NULL) != PT_OK)
        return NULL;
    char *out = malloc(len + 1), *o = out;
    for (char *line = (char *)data; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t k = nl ? (size_t)(nl - line) + 1 : strlen(line);
        if (!strstr(line, "\"train_timing\"") || (nl && strstr(line, "\"train_timing\"") > nl)) {
            memcpy(o, line, k);
            o += k;
        }
        line = nl ? nl + 1 : NULL;
    }
    *o = '\0';
    free(data);
    return out;
}

const char *fx_small_dataset(void)
{
    static const long long tc[4] = { 30, 12, 20, 8 }, vc[4] = { 6, 3, 5, 2 };
    static char root[4096];
    if (!root[0]) {
        const char *r = fx_dataset(t_tmpdir(), 4, tc, vc, 10, 32, 25);
        if (r)
            util_copy(root, sizeof root, r);
    }
    return root;
}

void fx_small_config(run_config *c, const char *out)
{
    cfg_defaults(c);
    util_copy(c->data, sizeof c->data, fx_small_dataset());
    util_copy(c->out, sizeof c->out, out);
    c->epochs = 2;
    c->replicas = 2;
    c->batch_per_replica = 4;
    c->image_size = 32;
    c->workers = 1;
    c->shuffle_buffer = 32;
    snprintf(c->augment, sizeof c->augment, "flip:0.5,affine:0.5");
}

const char *fx_demo_runs(void)
{
    static char parent[4200];
    static int made; /* 1 made, -1 failed */
    if (made)
        return made > 0 ? parent : NULL;
    made = -1;
    util_copy(parent, sizeof parent, t_tmpdir());
    /* Two short runs of the demo data that differ in one option. */
    static const char *const extra[2] = { "", "--lr-max 0.004" };
    static const char *const name[2] = { "a", "b" };
    for (int i = 0; i < 2; i++) {
        char cmd[8192], *out;
        util_path(cmd, sizeof cmd,
                  "%s --headless --out '%s/%s' --image-size 32 --epochs 2 --replicas 1 "
                  "--workers 1 %s",
                  t_bin(), parent, name[i], extra[i]);
        int rc = t_run(cmd, &out);
        if (rc != 0) {
            printf("  demo run %s: exit %d:\n%s\n", name[i], rc, out);
            free(out);
            return NULL;
        }
        free(out);
    }
    made = 1;
    return parent;
}

/* ---- processes ------------------------------------------------------------------ */

const char *const fx_mpirun[] = { "mpirun", "--allow-run-as-root", "--oversubscribe",
                                  "--mca", "btl", "self,vader", "--mca",
                                  "btl_vader_single_copy_mechanism", "none", NULL };

const char *fx_asan_no_leaks(void)
{
    static char env[1200];
    const char *asan = getenv("ASAN_OPTIONS");
    util_fmt(env, sizeof env, "ASAN_OPTIONS=%s%sdetect_leaks=0", asan ? asan : "",
             asan && *asan ? ":" : "");
    return env;
}

char *fx_slurp(const char *path)
{
    uint8_t *d;
    size_t n;
    if (util_read_file(path, &d, &n, NULL) != PT_OK)
        return NULL;
    return (char *)d;
}

int fx_exit_status(int st)
{
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

const char *fx_asan_no_leaks_value(void)
{
    return strchr(fx_asan_no_leaks(), '=') + 1;
}

/* The child's side of fx_spawn(): never returns. */
static void spawned(const char *const *argv, const char *const *env, const char *out,
                    const char *err)
{
    setpgid(0, 0);
    int i = open("/dev/null", O_RDONLY);
    int o = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (i < 0 || o < 0 || e < 0 || dup2(i, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
        _exit(126);
    for (int k = 3; k <= e; k++) /* i, o and e, now copied: not for the program */
        close(k);
    for (int k = 0; env && env[k]; k++) {
        const char *eq = strchr(env[k], '=');
        char name[256];
        util_fmt(name, sizeof name, "%.*s", eq ? (int)(eq - env[k]) : (int)strlen(env[k]),
                 env[k]);
        if (eq ? setenv(name, eq + 1, 1) : unsetenv(name))
            _exit(126);
    }
    execvp(argv[0], (char *const *)argv);
    _exit(127);
}

pid_t fx_spawn(const char *const *argv, const char *const *env, const char *out,
               const char *err)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        spawned(argv, env, out, err);
    if (pid > 0)
        setpgid(pid, pid); /* the child does too: whichever runs first */
    return pid;
}

int fx_wait_exit(pid_t pid, double limit)
{
    double t0 = util_now();
    for (;;) {
        int st = 0;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            return fx_exit_status(st);
        if (w < 0 && errno != EINTR)
            return -1;
        if (util_now() - t0 > limit) {
            kill(-pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        usleep(50000);
    }
}
