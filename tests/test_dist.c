/* Data parallelism across processes with Open MPI (issue 15; core/train/dist.h).
 *
 * Real mpirun jobs of two ranks on the fixture data: 2 ranks x 1 replica train the
 * very model of 1 process x 2 replicas (weights, optimizer moments, history.json,
 * predictions); a checkpoint of 2 ranks resumes in 1 process and one of 1 process in
 * 2 ranks, each ending as the straight run; a rank killed ends the job with an
 * error naming it; a SIGTERM or SIGINT to mpirun stops every rank with a checkpoint.
 * And a plain run never starts MPI (no orted, which Open MPI's singleton start
 * would exec). Skipped, saying why, where mpirun is missing; `make test` installs
 * it (openmpi-bin). Every wait has a generous limit and nothing is timed. */
#include "tests/t.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/le.h"
#include "base/util.h"
#include "run/checkpoint.h"
#include "train/dist.h"
#include "tests/fixtures.h"

static const long long TC[3] = { 8, 8, 8 }, VC[3] = { 4, 3, 3 };

static const char *dataset(void)
{
    static char root[4096];
    if (!root[0]) {
        const char *r = fx_dataset(t_tmpdir(), 3, TC, VC, 5, 32, 8);
        if (r)
            util_copy(root, sizeof root, r);
    }
    return root;
}

/* Small and quick: 24 examples, 2 replicas in all x 2 = 6 updates an epoch, the
 * default augmentation and dropout (seeded), a net with BN. A constant learning
 * rate, so that a run of 1 epoch resumed to 2 is a run of 2. */
static const char *const RUN_ARGS[] = { "--image-size", "32", "--batch-per-replica", "2",
                                        "--workers", "1", "--widths", "8,16", "--seed", "7",
                                        "--checkpoint-every", "1", "--lr-start", "0.002",
                                        "--lr-max", "0.002", "--lr-end", "0.002",
                                        "--warmup", "0" };
enum { N_RUN_ARGS = sizeof RUN_ARGS / sizeof RUN_ARGS[0] };

typedef struct job {
    int ranks;              /* 0: the program alone, else mpirun -np ranks */
    int replicas;
    const char *out;        /* --out DIR, or NULL */
    const char *resume;     /* --resume DIR, or NULL */
    int epochs;
    const char *const *extra_mpi;   /* more mpirun options (NULL-terminated), or NULL */
    const char *const *pre;         /* a program to run it under, or NULL */
    const char *const *wrap;        /* a program each rank runs under, or NULL */
    const char *const *extra;       /* more program options, after RUN_ARGS, or NULL */
    int workbench;                  /* no --headless */
    char out_file[4200], err_file[4200];
} job;

static pid_t start(job *j, const char *tag)
{
    const char *argv[96];
    char np[16], rep[16], ep[16];
    int n = 0;
    for (int i = 0; j->pre && j->pre[i]; i++)
        argv[n++] = j->pre[i];
    if (j->ranks > 0) {
        for (int i = 0; fx_mpirun[i]; i++)
            argv[n++] = fx_mpirun[i];
        for (int i = 0; j->extra_mpi && j->extra_mpi[i]; i++)
            argv[n++] = j->extra_mpi[i];
        snprintf(np, sizeof np, "%d", j->ranks);
        argv[n++] = "-np";
        argv[n++] = np;
    }
    for (int i = 0; j->wrap && j->wrap[i]; i++)
        argv[n++] = j->wrap[i];
    argv[n++] = t_bin();
    if (!j->workbench)
        argv[n++] = "--headless";
    snprintf(rep, sizeof rep, "%d", j->replicas);
    snprintf(ep, sizeof ep, "%d", j->epochs);
    if (j->resume) {
        argv[n++] = "--resume";
        argv[n++] = j->resume;
    } else {
        argv[n++] = "--data";
        argv[n++] = dataset();
        argv[n++] = "--out";
        argv[n++] = j->out;
        for (int i = 0; i < N_RUN_ARGS; i++)
            argv[n++] = RUN_ARGS[i];
    }
    for (int i = 0; j->extra && j->extra[i]; i++)
        argv[n++] = j->extra[i];
    argv[n++] = "--replicas";
    argv[n++] = rep;
    argv[n++] = "--epochs";
    argv[n++] = ep;
    argv[n] = NULL;
    const char *dir = t_tmpdir();
    util_path(j->out_file, sizeof j->out_file, "%s/%s.out", dir, tag);
    util_path(j->err_file, sizeof j->err_file, "%s/%s.err", dir, tag);
    /* Under make SAN=1, no leak checks in a job's ranks (fx_asan_no_leaks()). */
    const char *env[2] = { j->ranks > 0 || j->pre ? fx_asan_no_leaks() : NULL, NULL };
    return fx_spawn(argv, env, j->out_file, j->err_file);
}

static int run(job *j, const char *tag)
{
    pid_t pid = start(j, tag);
    return pid > 0 ? fx_wait_exit(pid, 240) : -1;
}

static char *slurp_in(const char *dir, const char *name)
{
    char path[4200];
    util_path(path, sizeof path, "%s/%s", dir, name);
    return fx_slurp(path);
}

static void show(const job *j)
{
    char *o = fx_slurp(j->out_file), *e = fx_slurp(j->err_file);
    printf("  stdout:\n%s  stderr:\n%s", o ? o : "", e ? e : "");
    free(o);
    free(e);
}

/* The floats of a checkpoint's sections (weights 1, BN statistics 2, Adam's moments
 * 3 and 4) read straight from the file, as a copy (n floats). */
static float *section(const char *dir, uint32_t want, size_t *n)
{
    char path[4200];
    util_path(path, sizeof path, "%s/checkpoint.ckpt", dir);
    uint8_t *d;
    size_t len;
    *n = 0;
    if (util_read_file(path, &d, &len, NULL) != PT_OK)
        return NULL;
    float *out = NULL;
    uint32_t count = len >= 16 ? le_get_u32(d + 12) : 0;
    size_t at = 16;
    for (uint32_t s = 0; s < count && at + 12 <= len; s++) {
        uint32_t tag = le_get_u32(d + at);
        uint64_t sl = le_get_u64(d + at + 4);
        if (at + 12 + sl > len)
            break;
        if (tag == want && (out = malloc(sl ? sl : 1))) {
            memcpy(out, d + at + 12, sl);
            *n = sl / sizeof(float);
            break;
        }
        at += 12 + sl;
    }
    free(d);
    return out;
}

/* The largest difference between the two checkpoints' section, or -1 when they
 * cannot be compared. */
static double max_diff(const char *a, const char *b, uint32_t tag)
{
    size_t na, nb;
    float *x = section(a, tag, &na), *y = section(b, tag, &nb);
    double m = x && y && na == nb && na > 0 ? 0 : -1;
    for (size_t i = 0; m >= 0 && i < na; i++) {
        double d = fabs((double)x[i] - (double)y[i]);
        if (!(d <= m)) /* NaN too */
            m = isnan(d) ? 1e30 : d;
    }
    free(x);
    free(y);
    return m;
}

static int same_file(const char *a, const char *b, const char *name)
{
    char *x = slurp_in(a, name), *y = slurp_in(b, name);
    int same = x && y && !strcmp(x, y);
    free(x);
    free(y);
    return same;
}

static int same_history(const char *a, const char *b)
{
    char *x = fx_history_without_timing(a), *y = fx_history_without_timing(b);
    int same = x && y && !strcmp(x, y);
    free(x);
    free(y);
    return same;
}

static int count_lines_with(const char *path, const char *what)
{
    char *s = fx_slurp(path);
    int n = 0;
    for (const char *p = s; p && (p = strstr(p, what)); p += strlen(what))
        n++;
    free(s);
    return n;
}

/* The reference: one process, 2 replicas, 2 epochs (made once). */
static const char *reference(void)
{
    static char dir[4200];
    if (!dir[0]) {
        char out[4200];
        util_path(out, sizeof out, "%s/ref", t_tmpdir());
        job j = { .ranks = 0, .replicas = 2, .out = out, .epochs = 2 };
        int st = run(&j, "ref");
        if (st != 0) {
            printf("  the reference run ended with %d\n", st);
            show(&j);
            return NULL;
        }
        util_copy(dir, sizeof dir, out);
    }
    return dir;
}

/* ------------------------------------------------------------------------------ */

TEST(dist_plain_run_starts_no_mpi)
{
    /* Not launched: every collective is the identity, as for a job of one. */
    T_EQ_INT(dist_launched(), 0);
    T_EQ_INT(dist_on(), 0);
    T_EQ_INT(dist_size(), 1);
    float v[3] = { 1, 2, 3 };
    T_EQ_INT(dist_sum_floats(v, 3, NULL), PT_OK);
    T_CHECK(v[0] == 1 && v[1] == 2 && v[2] == 3);
    dist_sum *q = dist_sum_new(3);
    T_REQUIRE(q);
    int done = 0;
    T_EQ_INT(dist_sum_start(q, v, 3, NULL), PT_OK);
    T_EQ_INT(dist_sum_test(q, &done, NULL), PT_OK);
    T_EQ_INT(done, 1);
    T_EQ_INT(dist_sum_wait(q, NULL), PT_OK);
    T_CHECK(v[0] == 1 && v[1] == 2 && v[2] == 3);
    dist_sum_free(q);
    int x = 5, y = 0;
    T_EQ_INT(dist_allgather(&x, &y, sizeof x, NULL), PT_OK);
    T_EQ_INT(y, 5);
    T_REQUIRE(dataset()[0]);
    /* And the program alone never execs Open MPI's daemon (its singleton start
     * would): strace sees one execve, the program's own (and, where OpenBLAS fell
     * back to Prescott's kernels, its one restart with the CPU's, src/blas_core.c). */
    T_NEED_TOOL("strace");
    char out[4200], trace[4200];
    util_path(out, sizeof out, "%s/plain", t_tmpdir());
    util_path(trace, sizeof trace, "%s/plain.trace", t_tmpdir());
    static const char *pre[] = { "strace", "-f", "-e", "trace=execve", "-o", NULL, NULL };
    pre[5] = trace;
    job j = { .ranks = 0, .replicas = 2, .out = out, .epochs = 1, .pre = pre };
    int st = run(&j, "plain");
    T_EQ_INT(st, 0);
    char *t = fx_slurp(trace);
    T_REQUIRE(t);
    T_EQ_INT(count_lines_with(trace, "execve(") -
                 count_lines_with(trace, "execve(\"/proc/self/exe\""), 1);
    T_CHECKF(!strstr(t, "orted") && !strstr(t, "prted"), "an MPI daemon was started:\n%s", t);
    free(t);
}

TEST(dist_two_ranks_train_the_model_of_one_process_with_two_replicas)
{
    T_NEED_TOOL("mpirun");
    T_REQUIRE(dataset()[0]);
    const char *ref = reference();
    T_REQUIRE(ref);
    char out[4200];
    util_path(out, sizeof out, "%s/two", t_tmpdir());
    job j = { .ranks = 2, .replicas = 1, .out = out, .epochs = 2 };
    int st = run(&j, "two");
    if (st != 0)
        show(&j);
    T_REQUIRE(st == 0);
    /* 12 updates later: the same weights, BN statistics and Adam moments. */
    for (uint32_t tag = 1; tag <= 4; tag++) {
        double d = max_diff(ref, out, tag);
        T_CHECKF(d >= 0 && d <= 1e-5, "checkpoint section %u differs by %g", tag, d);
        if (tag == 1)
            printf("  weights after 12 updates: largest difference %g\n", d);
    }
    T_CHECK(same_history(ref, out));
    T_CHECK(same_file(ref, out, "valid_preds.jsonl"));
    T_CHECK(same_file(ref, out, "valid_labels.json"));
    T_CHECK(same_file(ref, out, "submission.csv"));
    /* Rank 0 reports; rank 1 says nothing at all. */
    T_EQ_INT(count_lines_with(j.out_file, "done: 2 epochs"), 1);
    T_EQ_INT(count_lines_with(j.out_file, "data parallel: 2 ranks"), 1);
    /* Both ranks on this host: --overlap auto slices the optimizer, and says why. */
    T_EQ_INT(count_lines_with(j.out_file, "each rank stepping its 1/2 of the optimizer"), 1);
    T_EQ_INT(count_lines_with(j.out_file, "(--overlap auto: the ranks share one host"), 1);
    /* Its monitor has every rank's replica, and the time in collectives. */
    T_EQ_INT(count_lines_with(j.out_file, " replica 1 (rank 1 on "), 2);
    T_EQ_INT(count_lines_with(j.out_file, "); collectives "), 2);
    char *err = fx_slurp(j.err_file);
    T_CHECKF(err && !err[0], "stderr: %s", err ? err : "(none)");
    free(err);
}

/* The number after `what` on the first line of the file that has it, or -1. */
static double number_after(const char *path, const char *what)
{
    char *s = fx_slurp(path);
    const char *p = s ? strstr(s, what) : NULL;
    double v = p ? atof(p + strlen(what)) : -1;
    free(s);
    return v;
}

TEST(dist_gradient_sent_during_the_backward_in_buckets_keeps_the_bits_on_three_ranks)
{
    T_NEED_TOOL("mpirun");
    T_REQUIRE(dataset()[0]);
    /* Wide enough for several buckets of the gradient (740,000 parameters: 6 of
     * about 123,000 floats), on 3 ranks: the bucket sums cross 3 ranks as training
     * starts them, in a different order of ends on every rank, and must still give
     * the bits of 1 process x 3 replicas. So must the same job without overlap,
     * whose optimizer is sliced across the ranks (three slices of unequal length,
     * each rank's moments current in its own slice only until the checkpoint
     * gathers them). */
    static const char *const wide[] = { "--widths", "64,256,256", NULL };
    static const char *const wide_on[] = { "--widths", "64,256,256", "--overlap", NULL };
    static const char *const wide_off[] = { "--widths", "64,256,256", "--no-overlap", NULL };
    char ref[4200], on[4200], off[4200];
    util_path(ref, sizeof ref, "%s/wide-ref", t_tmpdir());
    util_path(on, sizeof on, "%s/wide-on", t_tmpdir());
    util_path(off, sizeof off, "%s/wide-off", t_tmpdir());
    job a = { .ranks = 0, .replicas = 3, .out = ref, .epochs = 1, .extra = wide };
    job b = { .ranks = 3, .replicas = 1, .out = on, .epochs = 1, .extra = wide_on };
    job c = { .ranks = 3, .replicas = 1, .out = off, .epochs = 1, .extra = wide_off };
    int sa = run(&a, "wide-ref"), sb = run(&b, "wide-on"), sc = run(&c, "wide-off");
    if (sa || sb || sc) {
        show(&a);
        show(&b);
        show(&c);
    }
    T_REQUIRE(sa == 0 && sb == 0 && sc == 0);
    for (uint32_t tag = 1; tag <= 4; tag++) {
        double d1 = max_diff(ref, on, tag), d2 = max_diff(ref, off, tag);
        T_CHECKF(d1 == 0 && d2 == 0, "checkpoint section %u differs by %g (overlap) and %g "
                 "(after the backward)", tag, d1, d2);
    }
    T_CHECK(same_history(ref, on));
    T_CHECK(same_history(ref, off));
    T_CHECK(same_file(ref, on, "valid_preds.jsonl"));
    /* The job says how its gradient travelled, and the monitor how much of it went
     * during the backward. */
    double nb = number_after(b.out_file, "gradients cross the ranks in ");
    T_CHECKF(nb >= 4, "%g buckets", nb);
    T_EQ_INT(count_lines_with(b.out_file, "% of gradient buckets sent during the backward"),
             1);
    T_EQ_INT(count_lines_with(c.out_file, "after the backward pass, each rank stepping its 1/3 "
                                          "of the optimizer (--no-overlap)"), 1);
    T_EQ_INT(count_lines_with(c.out_file, "% of gradient buckets"), 0);
    T_EQ_INT(count_lines_with(b.out_file, " replica 2 (rank 2 on "), 1);
}

/* Each rank in a UTS namespace of its own, named host-RANK: to the job, two hosts
 * (what it knows of hosts is their names), while MPI still goes through shared
 * memory. */
static const char *const ON_TWO_HOSTS[] = {
    "unshare", "-u", "sh", "-c", "hostname \"host-$OMPI_COMM_WORLD_RANK\" && exec \"$@\"", "sh",
    NULL
};

TEST(dist_ranks_on_two_hosts_send_the_gradient_during_the_backward_by_default)
{
    T_NEED_TOOL("mpirun");
    T_NEED_TOOL("unshare");
    char *out_text = NULL;
    if (t_run("unshare -u true", &out_text) != 0) {
        free(out_text);
        t_skip("unshare -u (a host name of each rank's own) needs root here");
        return;
    }
    free(out_text);
    T_REQUIRE(dataset()[0]);
    const char *ref = reference();
    T_REQUIRE(ref);
    char out[4200];
    util_path(out, sizeof out, "%s/hosts", t_tmpdir());
    job j = { .ranks = 2, .replicas = 1, .out = out, .epochs = 2, .wrap = ON_TWO_HOSTS };
    int st = run(&j, "hosts");
    if (st != 0)
        show(&j);
    T_REQUIRE(st == 0);
    /* --overlap auto: across hosts the gradient goes in buckets during the backward
     * pass, and the bits stay those of one process. */
    T_EQ_INT(count_lines_with(j.out_file, "(--overlap auto: the ranks span more than one "
                                          "host"), 1);
    T_EQ_INT(count_lines_with(j.out_file, "gradients cross the ranks in "), 1);
    for (uint32_t tag = 1; tag <= 4; tag++) {
        double d = max_diff(ref, out, tag);
        T_CHECKF(d >= 0 && d <= 1e-5, "checkpoint section %u differs by %g", tag, d);
    }
    T_CHECK(same_history(ref, out));
    /* The monitor names each replica's host. */
    T_EQ_INT(count_lines_with(j.out_file, "data parallel: 2 ranks (rank 0 on host-0)"), 1);
    T_EQ_INT(count_lines_with(j.out_file, " replica 1 (rank 1 on host-1)"), 2);
}

TEST(dist_replicas_0_means_one_per_core_the_rank_may_run_on)
{
    T_NEED_TOOL("mpirun");
    T_NEED_TOOL("taskset");
    T_REQUIRE(dataset()[0]);
    /* mpirun binds each of 2 ranks to a core of its own (with too few cores, to
     * none, on the one core there is): one replica each, not one per core of the
     * host each, which would put them all on one core. */
    char out[4200];
    util_path(out, sizeof out, "%s/bound", t_tmpdir());
    job j = { .ranks = 2, .replicas = 0, .out = out, .epochs = 1 };
    int st = run(&j, "bound");
    if (st != 0)
        show(&j);
    T_REQUIRE(st == 0);
    T_EQ_INT(count_lines_with(j.out_file, "data parallel: 2 ranks (rank 0 on "), 1);
    T_EQ_INT(count_lines_with(j.out_file, " with 2 replicas in all"), 1);
    /* A plain run under taskset: the same rule, and it says so where the host has
     * more cores than the process may use. */
    static const char *const one_core[] = { "taskset", "-c", "0", NULL };
    util_path(out, sizeof out, "%s/taskset", t_tmpdir());
    job k = { .ranks = 0, .replicas = 0, .out = out, .epochs = 1, .pre = one_core };
    st = run(&k, "taskset");
    if (st != 0)
        show(&k);
    T_REQUIRE(st == 0);
    T_EQ_INT(count_lines_with(k.out_file, "; 1 replicas x 2 x 1 accumulation"), 1);
    if (util_cores_online() > 1)
        T_EQ_INT(count_lines_with(k.out_file, "--replicas 0: one replica per core this "
                                              "process may run on, 1 of the host's "), 1);
}

TEST(dist_checkpoint_of_n_ranks_resumes_on_m)
{
    T_NEED_TOOL("mpirun");
    T_REQUIRE(dataset()[0]);
    const char *ref = reference();
    T_REQUIRE(ref);
    /* 2 ranks for an epoch, then 1 process; and 1 process, then 2 ranks. */
    for (int k = 0; k < 2; k++) {
        char out[4200];
        util_path(out, sizeof out, "%s/resume%d", t_tmpdir(), k);
        job a = { .ranks = k == 0 ? 2 : 0, .replicas = k == 0 ? 1 : 2, .out = out, .epochs = 1 };
        int st = run(&a, k == 0 ? "first0" : "first1");
        if (st != 0)
            show(&a);
        T_REQUIRE(st == 0);
        job b = { .ranks = k == 0 ? 0 : 2, .replicas = k == 0 ? 2 : 1, .resume = out,
                  .epochs = 2 };
        st = run(&b, k == 0 ? "then0" : "then1");
        if (st != 0)
            show(&b);
        T_REQUIRE(st == 0);
        T_CHECKF(same_history(ref, out), "resumed on %s: another history",
                 k == 0 ? "1 process" : "2 ranks");
        T_CHECK(same_file(ref, out, "submission.csv"));
        double d = max_diff(ref, out, 1);
        T_CHECKF(d >= 0 && d <= 1e-5, "weights differ by %g", d);
    }
}

/* A long job's rank (by its OMPI_COMM_WORLD_RANK) among mpirun's children; 0 when
 * not found. */
static pid_t rank_pid(pid_t mpirun, int rank)
{
    char want[64];
    snprintf(want, sizeof want, "OMPI_COMM_WORLD_RANK=%d", rank);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)mpirun, (int)mpirun);
    char *kids = fx_slurp(path);
    pid_t found = 0;
    for (char *p = kids; p && *p && !found;) {
        long c = strtol(p, &p, 10);
        if (c <= 0)
            break;
        char env[64];
        snprintf(env, sizeof env, "/proc/%ld/environ", c);
        uint8_t *d;
        size_t n;
        if (util_read_file(env, &d, &n, NULL) != PT_OK)
            continue;
        for (size_t at = 0; at < n; at += strlen((char *)d + at) + 1)
            if (!strcmp((char *)d + at, want))
                found = (pid_t)c;
        free(d);
    }
    free(kids);
    return found;
}

/* Starts a job too long to end by itself and waits (generously) for its first
 * checkpoint. */
static pid_t start_long(job *j, const char *tag, char *out, size_t n)
{
    util_path(out, n, "%s/%s", t_tmpdir(), tag);
    j->ranks = 2;
    j->replicas = 1;
    j->out = out;
    j->epochs = 1000;
    pid_t pid = start(j, tag);
    char ck[4300];
    util_path(ck, sizeof ck, "%s/checkpoint.ckpt", out);
    for (double t0 = util_now(); pid > 0 && util_now() - t0 < 120; usleep(50000)) {
        if (util_is_file(ck))
            return pid;
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return -1;
    }
    if (pid > 0) {
        kill(-pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    return -1;
}

TEST(dist_a_killed_rank_ends_the_job_with_an_error_naming_it)
{
    T_NEED_TOOL("mpirun");
    T_REQUIRE(dataset()[0]);
    char out[4200];
    job j = { 0 };
    pid_t pid = start_long(&j, "killed", out, sizeof out);
    if (pid < 0)
        show(&j);
    T_REQUIRE(pid > 0);
    pid_t victim = 0;
    for (double t0 = util_now(); !victim && util_now() - t0 < 30; usleep(50000))
        victim = rank_pid(pid, 1);
    if (!victim)
        kill(-pid, SIGKILL);
    T_REQUIRE(victim > 0);
    kill(victim, SIGKILL);
    int st = fx_wait_exit(pid, 120);
    T_CHECKF(st > 0, "mpirun ended with %d", st);
    char *err = fx_slurp(j.err_file);
    T_CHECKF(err && strstr(err, "rank 1"), "stderr does not name rank 1: %s", err ? err : "");
    free(err);
    /* The last checkpoint is whole. */
    char ck[4300];
    util_path(ck, sizeof ck, "%s/checkpoint.ckpt", out);
    ckpt_progress p;
    T_EQ_INT(ckpt_peek(ck, &p, NULL), PT_OK);
}

/* mpirun's exit status after a signal, or -1 when it did not end within limit
 * seconds (then its group is killed). Open MPI 4.1's mpirun itself sometimes
 * crashes (SIGSEGV, status 139: 10 of 60 tries here) in its handling of a forwarded
 * SIGTERM or SIGINT, after its ranks have ended, and rarely hangs there instead:
 * when no rank of the job is left (all of them ended, cleanly or not: the caller
 * checks what they wrote), mpirun is given 30 s more and then, still there, killed
 * and reported as 137 with *mpirun_hung set. A rank that is still running after
 * limit is this program's hang: -1. */
static int wait_signalled(pid_t pid, double limit, int *mpirun_hung)
{
    *mpirun_hung = 0;
    double t0 = util_now(), gone = 0;
    for (;;) {
        int st = 0;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            return fx_exit_status(st);
        double now = util_now();
        int ranks_left = rank_pid(pid, 0) > 0 || rank_pid(pid, 1) > 0;
        if (ranks_left)
            gone = 0;
        else if (gone == 0)
            gone = now;
        if ((gone > 0 && now - gone > 30) || now - t0 > limit) {
            *mpirun_hung = !ranks_left;
            kill(-pid, SIGKILL);
            waitpid(pid, &st, 0);
            return ranks_left ? -1 : 137;
        }
        usleep(50000);
    }
}

TEST(dist_sigterm_sigint_or_sigusr1_to_mpirun_stops_every_rank_with_a_checkpoint)
{
    T_NEED_TOOL("mpirun");
    T_REQUIRE(dataset()[0]);
    static const int sigs[3] = { SIGTERM, SIGINT, SIGUSR1 };
    static const char *const tags[3] = { "sigterm", "sigint", "sigusr1" };
    /* mpirun forwards SIGTERM and SIGINT, then kills the ranks after
     * odls_base_sigkill_timeout seconds (1 by default, and it waits them out): the
     * README's advice gives them time. SIGUSR1 it forwards alone. */
    static const char *const grace[] = { "--mca", "odls_base_sigkill_timeout", "5", NULL };
    for (int k = 0; k < 3; k++) {
        char out[4200];
        job j = { .extra_mpi = k < 2 ? grace : NULL };
        pid_t pid = start_long(&j, tags[k], out, sizeof out);
        if (pid < 0)
            show(&j);
        T_REQUIRE(pid > 0);
        kill(pid, sigs[k]);
        int hung;
        int st = wait_signalled(pid, 120, &hung);
        T_CHECKF(st >= 0, "%s: a rank did not end within 120 s", tags[k]);
        if (hung)
            printf("  note: %s: every rank ended, mpirun did not within 30 s more (Open "
                   "MPI's own signal handling): killed it\n", tags[k]);
        int stamped;
        char *log = fx_log_last_line(out, &stamped);
        T_CHECKF(log && strstr(log, "stopped at update "), "%s: log.txt ends: %s", tags[k],
                 log ? log : "(none)");
        long long at = log && strstr(log, "stopped at update ")
                           ? atoll(strstr(log, "stopped at update ") + 18)
                           : -1;
        free(log);
        char ck[4300];
        util_path(ck, sizeof ck, "%s/checkpoint.ckpt", out);
        ckpt_progress p;
        T_EQ_INT(ckpt_peek(ck, &p, NULL), PT_OK);
        T_EQ_INT(p.update, at);
        char path[4300];
        util_path(path, sizeof path, "%s/log.txt", out);
        T_CHECK(count_lines_with(path, "(stop)") == 1);
        /* Rank 1 stopped too, cleanly: it said nothing. */
        char *err = fx_slurp(j.err_file);
        T_CHECKF(err && !strstr(err, "rank 1"), "stderr: %s", err ? err : "");
        free(err);
    }
}

TEST(dist_ranks_given_other_options_are_refused_naming_the_rank)
{
    T_NEED_TOOL("mpirun");
    T_REQUIRE(dataset()[0]);
    /* One job, two programs (mpirun's MPMD form): rank 1 with another seed. */
    char out[4200], cmd[16384];
    util_path(out, sizeof out, "%s/mismatch", t_tmpdir());
    int n = snprintf(cmd, sizeof cmd, "ASAN_OPTIONS='%s' ", fx_asan_no_leaks_value());
    for (int i = 0; fx_mpirun[i]; i++)
        n += snprintf(cmd + n, sizeof cmd - (size_t)n, "%s ", fx_mpirun[i]);
    for (int k = 0; k < 2; k++) {
        n += snprintf(cmd + n, sizeof cmd - (size_t)n,
                      "%s-np 1 '%s' --headless --data '%s' --out '%s' --replicas 1 --epochs 1",
                      k ? " : " : "", t_bin(), dataset(), out);
        for (int i = 0; i < N_RUN_ARGS; i++)
            n += snprintf(cmd + n, sizeof cmd - (size_t)n, " %s",
                          k && !strcmp(RUN_ARGS[i], "7") ? "8" : RUN_ARGS[i]);
    }
    snprintf(cmd + n, sizeof cmd - (size_t)n, " 2>&1");
    char *text = NULL;
    int st = t_run(cmd, &text);
    T_CHECKF(st != 0, "the job ended with %d", st);
    T_CHECKF(text && strstr(text, "rank 1 of 2 on ") &&
                 strstr(text, "has other options than rank 0"),
             "output: %s", text ? text : "(none)");
    free(text);
}

TEST(dist_rank_0_without_a_terminal_trains_headless_and_says_how_to_see_the_workbench)
{
    T_NEED_TOOL("mpirun");
    T_REQUIRE(dataset()[0]);
    char out[4200];
    util_path(out, sizeof out, "%s/noterm", t_tmpdir());
    job j = { .ranks = 2, .replicas = 1, .out = out, .epochs = 1, .workbench = 1 };
    int st = run(&j, "noterm");
    if (st != 0)
        show(&j);
    T_EQ_INT(st, 0);
    /* Once, from rank 0 alone; then the run as --headless makes it. */
    T_EQ_INT(count_lines_with(j.err_file, "petal-tui: rank 0 has no terminal"), 1);
    T_EQ_INT(count_lines_with(j.err_file, "--tty /dev/pts/N"), 1);
    T_EQ_INT(count_lines_with(j.out_file, "done: 1 epochs"), 1);
}

TEST(dist_ranks_stop_early_at_the_same_epoch_and_keep_the_same_best)
{
    T_NEED_TOOL("mpirun");
    T_REQUIRE(dataset()[0]);
    /* The learning rate grows 25,000-fold over 6 epochs: the net gets worse after a
     * few, and --early-stop 1 ends the run at the first epoch without a better F1. */
    static const char *const early[] = { "--lr-end", "50", "--early-stop", "1", NULL };
    char one[4200], two[4200];
    util_path(one, sizeof one, "%s/early1", t_tmpdir());
    util_path(two, sizeof two, "%s/early2", t_tmpdir());
    job a = { .ranks = 0, .replicas = 2, .out = one, .epochs = 6, .extra = early };
    job b = { .ranks = 2, .replicas = 1, .out = two, .epochs = 6, .extra = early };
    int st = run(&a, "early1");
    if (st != 0)
        show(&a);
    T_REQUIRE(st == 0);
    st = run(&b, "early2");
    if (st != 0)
        show(&b);
    T_REQUIRE(st == 0);
    char *s = slurp_in(two, "summary.json");
    T_CHECKF(s && strstr(s, "\"stop\": \"early\""), "summary.json: %s", s ? s : "(none)");
    printf("  %s\n", s ? s : "");
    free(s);
    /* The job decided as one process: the same epochs, best, stop and kept weights. */
    T_CHECK(same_file(one, two, "summary.json"));
    T_CHECK(same_history(one, two));
    T_CHECK(same_file(one, two, "valid_preds.jsonl"));
    T_CHECK(same_file(one, two, "submission.csv"));
    /* submission.csv of the kept (first) epoch's weights, which rank 0 read and sent:
     * what predict gives with the run's model. */
    char cmd[13000], sub[4300], *out = NULL;
    util_path(sub, sizeof sub, "%s/early-sub.csv", t_tmpdir());
    util_fmt(cmd, sizeof cmd,
             "%s predict '%s' '%s' --split test --submission '%s' >/dev/null 2>&1 && "
             "cmp '%s' '%s/submission.csv'",
             t_bin(), two, dataset(), sub, sub, two);
    T_CHECKF(t_run(cmd, &out) == 0, "%s", out ? out : "");
    free(out);
    /* Rank 0 alone says it. */
    T_EQ_INT(count_lines_with(b.out_file, "early stop at epoch"), 1);
    T_EQ_INT(count_lines_with(b.out_file, "stopped early at epoch"), 1);
}

/* --teacher in a job: each rank fills its slice's soft targets from its own cache
 * (rank 0 writes teacher_probs.csv), mixed examples included; 2 ranks of 1 replica
 * train what one process of 2 replicas does. */
TEST(dist_distilled_two_ranks_train_the_model_of_one_process)
{
    T_NEED_TOOL("mpirun");
    T_REQUIRE(dataset()[0]);
    const char *teacher = reference();
    T_REQUIRE(teacher);
    const char *extra[] = { "--teacher", teacher, "--augment", "flip:0.5,mixup:0.5", NULL };
    char one[4200], two[4200];
    util_path(one, sizeof one, "%s/distilled-one", t_tmpdir());
    util_path(two, sizeof two, "%s/distilled-two", t_tmpdir());
    job a = { .ranks = 0, .replicas = 2, .out = one, .epochs = 1, .extra = extra };
    job b = { .ranks = 2, .replicas = 1, .out = two, .epochs = 1, .extra = extra };
    int sa = run(&a, "distilled-one");
    if (sa != 0)
        show(&a);
    int sb = sa == 0 ? run(&b, "distilled-two") : -1;
    if (sa == 0 && sb != 0)
        show(&b);
    T_REQUIRE(sa == 0 && sb == 0);
    double d = max_diff(one, two, 1);
    T_CHECKF(d >= 0 && d <= 1e-5, "weights differ by %g", d);
    T_CHECK(same_history(one, two));
    T_CHECK(same_file(one, two, "teacher_probs.csv"));
    T_EQ_INT(count_lines_with(b.out_file, "distilled from "), 2);
}
