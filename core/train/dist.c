/* dist — MPI for data-parallel training (see dist.h). */
#include "train/dist.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/util.h"

#define HOST_MAX 256

static struct {
    int on;
    int rank, size;
    MPI_Comm comm;
    char (*hosts)[HOST_MAX];
    char who[HOST_MAX + 64];
    double comm_s;
    void *scratch;          /* dist_sum_doubles */
    size_t scratch_bytes;
    struct dist_sum *sum;   /* dist_sum_floats */
    float *rs;              /* dist_reduce_scatter_floats: every rank's copy of mine */
    size_t rs_floats;
    int *counts, *displs;   /* size entries: the slices of the last vector */
    int *rcounts, *rdispls; /* size entries: every rank's copy of this rank's slice */
    MPI_Comm comm_gather;   /* the sums' allgathers (see sum_advance) */
    unsigned long long sums_started, sums_gathering;
} D = { .size = 1 };

int dist_launched(void)
{
    static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                                        "PMIX_RANK", "PMI_RANK", "PMI_SIZE" };
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && v[0])
            return 1;
    }
    return 0;
}

static int mpi_fail(pt_err *e, const char *what, int code)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
        len = 0;
    text[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING - 1] = '\0';
    return err_set(e, PT_EIO, NULL, PT_NO_RECORD, PT_NO_OFFSET, "MPI %s failed on %s: %s", what,
                   D.who[0] ? D.who : "this rank", len ? text : "unknown error");
}

int dist_init(pt_err *e)
{
    if (D.on || !dist_launched())
        return PT_OK;
    int provided = 0;
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS)
        return mpi_fail(e, "initialisation", rc);
    if (provided < MPI_THREAD_SERIALIZED) {
        MPI_Finalize();
        return err_set(e, PT_EIO, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "this MPI gives thread level %d; petal-tui needs MPI_THREAD_SERIALIZED",
                       provided);
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &D.comm);
    MPI_Comm_set_errhandler(D.comm, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &D.comm_gather);
    MPI_Comm_set_errhandler(D.comm_gather, MPI_ERRORS_RETURN);
    D.sums_started = D.sums_gathering = 0;
    MPI_Comm_rank(D.comm, &D.rank);
    MPI_Comm_size(D.comm, &D.size);
    D.hosts = calloc((size_t)D.size, sizeof *D.hosts);
    D.counts = calloc((size_t)D.size, sizeof *D.counts);
    D.displs = calloc((size_t)D.size, sizeof *D.displs);
    D.rcounts = calloc((size_t)D.size, sizeof *D.rcounts);
    D.rdispls = calloc((size_t)D.size, sizeof *D.rdispls);
    char me[HOST_MAX] = "";
    int len = 0;
    char name[MPI_MAX_PROCESSOR_NAME];
    if (MPI_Get_processor_name(name, &len) == MPI_SUCCESS && len > 0)
        snprintf(me, sizeof me, "%.*s", len, name);
    else
        util_copy(me, sizeof me, "?");
    snprintf(D.who, sizeof D.who, "rank %d of %d on %s", D.rank, D.size, me);
    D.on = 1;
    if (!D.hosts || !D.counts || !D.displs || !D.rcounts || !D.rdispls) {
        dist_finalize();
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    if ((rc = dist_allgather(me, D.hosts, HOST_MAX, e)) != PT_OK) {
        dist_finalize();
        return rc;
    }
    return PT_OK;
}

void dist_finalize(void)
{
    if (!D.on)
        return;
    MPI_Comm_free(&D.comm);
    MPI_Comm_free(&D.comm_gather);
    MPI_Finalize();
    free(D.hosts);
    free(D.scratch);
    dist_sum_free(D.sum);
    D.sum = NULL;
    free(D.rs);
    free(D.counts);
    free(D.displs);
    free(D.rcounts);
    free(D.rdispls);
    D.rs = NULL;
    D.rs_floats = 0;
    D.counts = D.displs = D.rcounts = D.rdispls = NULL;
    D.hosts = NULL;
    D.scratch = NULL;
    D.scratch_bytes = 0;
    D.on = 0;
    D.rank = 0;
    D.size = 1;
    D.who[0] = '\0';
}

void dist_abort(int status)
{
    if (!D.on)
        return;
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status ? status : 1);
}

int dist_on(void) { return D.on; }
int dist_rank(void) { return D.rank; }
int dist_size(void) { return D.size; }
const char *dist_who(void) { return D.who; }

const char *dist_host(void)
{
    return dist_host_of(D.rank);
}

const char *dist_host_of(int rank)
{
    if (!D.on || !D.hosts || rank < 0 || rank >= D.size)
        return "";
    return D.hosts[rank];
}

int dist_host_count(void)
{
    if (!D.on || !D.hosts)
        return 1;
    int n = 0;
    for (int k = 0; k < D.size; k++) {
        int seen = 0;
        for (int j = 0; j < k && !seen; j++)
            seen = !strcmp(D.hosts[j], D.hosts[k]);
        n += !seen;
    }
    return n;
}

double dist_comm_seconds(void)
{
    return D.comm_s;
}

/* Between two tests of a collective that has run `waited` seconds: nothing for its
 * first 0.2 ms, then a sleep of a tenth of the time waited so far (10 us to 1 ms),
 * so a long wait costs no core and a short one little latency. */
static void back_off(double waited)
{
    if (waited < 2e-4)
        return;
    double s = waited / 10;
    s = s < 1e-5 ? 1e-5 : s > 1e-3 ? 1e-3 : s;
    struct timespec ts = { 0, (long)(s * 1e9) };
    nanosleep(&ts, NULL);
}

/* Poll a started collective to its end (back_off between tests). */
static int finish(MPI_Request *rq, double t0, const char *what, pt_err *e)
{
    for (;;) {
        int done = 0;
        int rc = MPI_Test(rq, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            D.comm_s += util_now() - t0;
            return mpi_fail(e, what, rc);
        }
        if (done)
            break;
        back_off(util_now() - t0);
    }
    D.comm_s += util_now() - t0;
    return PT_OK;
}

static int too_big(size_t count, pt_err *e)
{
    if (count <= (size_t)INT_MAX)
        return PT_OK;
    return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                   "MPI: %zu elements in one message; at most %d", count, INT_MAX);
}

static void *scratch(size_t bytes)
{
    if (bytes > D.scratch_bytes) {
        void *p = realloc(D.scratch, bytes);
        if (!p)
            return NULL;
        D.scratch = p;
        D.scratch_bytes = bytes;
    }
    return D.scratch;
}

int dist_bcast(void *buf, size_t bytes, int root, pt_err *e)
{
    if (!D.on || D.size == 1 || bytes == 0)
        return PT_OK;
    if (too_big(bytes, e) != PT_OK)
        return PT_EUSAGE;
    double t0 = util_now();
    MPI_Request rq;
    int rc = MPI_Ibcast(buf, (int)bytes, MPI_BYTE, root, D.comm, &rq);
    if (rc != MPI_SUCCESS)
        return mpi_fail(e, "broadcast", rc);
    return finish(&rq, t0, "broadcast", e);
}

int dist_allgather(const void *mine, void *all, size_t bytes, pt_err *e)
{
    if (!D.on || D.size == 1) {
        if (all != mine && bytes)
            memmove(all, mine, bytes);
        return PT_OK;
    }
    if (too_big(bytes, e) != PT_OK)
        return PT_EUSAGE;
    double t0 = util_now();
    MPI_Request rq;
    int rc = MPI_Iallgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, D.comm, &rq);
    if (rc != MPI_SUCCESS)
        return mpi_fail(e, "allgather", rc);
    return finish(&rq, t0, "allgather", e);
}

/* out[0, n) = copies[0][i] + copies[1][i] + ... + copies[N-1][i], added in rank
 * order whatever order the copies arrived in: the same bits on every rank. copies
 * holds N runs of n floats, one after the other. */
static void sum_in_rank_order(float *out, const float *copies, size_t n, size_t N)
{
    memcpy(out, copies, n * sizeof(float));
    for (size_t k = 1; k < N; k++) {
        const float *c = copies + k * n;
        for (size_t i = 0; i < n; i++)
            out[i] += c[i];
    }
}

/* A sum in flight: the vector padded to N slices (send), every rank's copy of this
 * rank's slice (recv), then everybody's sums (all). send is reused for this rank's
 * sums once the alltoall has ended. */
struct dist_sum {
    size_t cap;             /* floats in each buffer */
    float *send, *recv, *all;
    float *v;
    size_t n, per;
    int stage;              /* 0 idle (or done), 1 the alltoall runs, 2 the allgather */
    int a2a_done;           /* stage 1: the alltoall has ended */
    unsigned long long seq; /* its place among the sums started */
    MPI_Request rq;
};

dist_sum *dist_sum_new(size_t n)
{
    dist_sum *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    size_t N = (size_t)(D.size > 0 ? D.size : 1), per = (n + N - 1) / N;
    q->cap = N * per > 0 ? N * per : 1;
    q->send = malloc(q->cap * sizeof(float));
    q->recv = malloc(q->cap * sizeof(float));
    q->all = malloc(q->cap * sizeof(float));
    if (!q->send || !q->recv || !q->all) {
        dist_sum_free(q);
        return NULL;
    }
    return q;
}

void dist_sum_free(dist_sum *q)
{
    if (!q)
        return;
    free(q->send);
    free(q->recv);
    free(q->all);
    free(q);
}

int dist_sum_start(dist_sum *q, float *v, size_t n, pt_err *e)
{
    q->stage = 0;
    if (!D.on || D.size == 1 || n == 0)
        return PT_OK;
    size_t N = (size_t)D.size, per = (n + N - 1) / N;
    if (N * per > q->cap)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "MPI: a sum of %zu floats in buffers for %zu", n, q->cap);
    if (too_big(per, e) != PT_OK)
        return PT_EUSAGE;
    double t0 = util_now();
    memcpy(q->send, v, n * sizeof(float));
    memset(q->send + n, 0, (N * per - n) * sizeof(float));
    int rc = MPI_Ialltoall(q->send, (int)per, MPI_FLOAT, q->recv, (int)per, MPI_FLOAT, D.comm,
                           &q->rq);
    D.comm_s += util_now() - t0;
    if (rc != MPI_SUCCESS)
        return mpi_fail(e, "reduce-scatter (alltoall)", rc);
    q->v = v;
    q->n = n;
    q->per = per;
    q->stage = 1;
    q->a2a_done = 0;
    q->seq = D.sums_started++;
    return PT_OK;
}

/* One test of the running step; the alltoall's end sums this rank's slice (in rank
 * order) and starts the allgather, the allgather's end copies the sums out.
 *
 * Every rank must start collectives on a communicator in the same order, and when
 * an alltoall ends differs between ranks: so the allgathers run on a communicator
 * of their own and start strictly in the order the sums were started (a sum whose
 * alltoall ended before an older one's waits its turn). */
static int sum_advance(dist_sum *q, int *done, pt_err *e)
{
    *done = q->stage == 0;
    if (*done)
        return PT_OK;
    int flag = q->stage == 1 && q->a2a_done;
    int rc = flag ? MPI_SUCCESS : MPI_Test(&q->rq, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        const char *what = q->stage == 1 ? "reduce-scatter (alltoall)" : "allgather";
        q->stage = 0;
        return mpi_fail(e, what, rc);
    }
    if (!flag)
        return PT_OK;
    if (q->stage == 1) {
        q->a2a_done = 1;
        if (q->seq != D.sums_gathering)
            return PT_OK;
        size_t per = q->per;
        float *mine = q->send;
        sum_in_rank_order(mine, q->recv, per, (size_t)D.size);
        rc = MPI_Iallgather(mine, (int)per, MPI_FLOAT, q->all, (int)per, MPI_FLOAT,
                            D.comm_gather, &q->rq);
        D.sums_gathering++;
        if (rc != MPI_SUCCESS) {
            q->stage = 0;
            return mpi_fail(e, "allgather", rc);
        }
        q->stage = 2;
        return PT_OK;
    }
    memcpy(q->v, q->all, q->n * sizeof(float));
    q->stage = 0;
    *done = 1;
    return PT_OK;
}

int dist_sum_test(dist_sum *q, int *done, pt_err *e)
{
    double t0 = util_now();
    int rc = sum_advance(q, done, e);
    D.comm_s += util_now() - t0;
    return rc;
}

int dist_sum_wait(dist_sum *q, pt_err *e)
{
    double t0 = util_now();
    for (;;) {
        int done = 0;
        int rc = sum_advance(q, &done, e);
        if (rc != PT_OK || done) {
            D.comm_s += util_now() - t0;
            return rc;
        }
        back_off(util_now() - t0);
    }
}

int dist_sum_floats(float *v, size_t n, pt_err *e)
{
    if (!D.on || D.size == 1 || n == 0)
        return PT_OK;
    size_t N = (size_t)D.size, per = (n + N - 1) / N;
    if (!D.sum || D.sum->cap < N * per) {
        dist_sum_free(D.sum);
        if (!(D.sum = dist_sum_new(n)))
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    int rc = dist_sum_start(D.sum, v, n, e);
    return rc == PT_OK ? dist_sum_wait(D.sum, e) : rc;
}

void dist_slice(size_t n, int rank, size_t *lo, size_t *hi)
{
    util_slice(0, n, D.size, rank, lo, hi);
}

/* The slices of a vector of n in D.counts / D.displs; 0 when a slice is too long
 * for MPI's int counts. */
static int set_slices(size_t n, pt_err *e)
{
    for (int k = 0; k < D.size; k++) {
        size_t lo, hi;
        dist_slice(n, k, &lo, &hi);
        if (too_big(hi, e) != PT_OK)
            return 0;
        D.counts[k] = (int)(hi - lo);
        D.displs[k] = (int)lo;
    }
    return 1;
}

int dist_reduce_scatter_floats(float *v, size_t n, pt_err *e)
{
    if (!D.on || D.size == 1 || n == 0)
        return PT_OK;
    if (!set_slices(n, e))
        return PT_EUSAGE;
    size_t N = (size_t)D.size, mine = (size_t)D.counts[D.rank];
    if (N * mine > D.rs_floats) {
        float *p = realloc(D.rs, N * mine * sizeof(float));
        if (!p)
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        D.rs = p;
        D.rs_floats = N * mine;
    }
    /* Rank k sends its slice j of v to rank j, and receives every rank's copy of
     * its own slice, rank after rank. */
    for (size_t k = 0; k < N; k++) {
        D.rcounts[k] = (int)mine;
        D.rdispls[k] = (int)(k * mine);
    }
    double t0 = util_now();
    MPI_Request rq;
    int rc = MPI_Ialltoallv(v, D.counts, D.displs, MPI_FLOAT, D.rs, D.rcounts, D.rdispls,
                            MPI_FLOAT, D.comm, &rq);
    if (rc != MPI_SUCCESS)
        return mpi_fail(e, "reduce-scatter (alltoall)", rc);
    if ((rc = finish(&rq, t0, "reduce-scatter (alltoall)", e)) != PT_OK)
        return rc;
    sum_in_rank_order(v + D.displs[D.rank], D.rs, mine, N);
    return PT_OK;
}

int dist_allgather_floats(float *v, size_t n, pt_err *e)
{
    if (!D.on || D.size == 1 || n == 0)
        return PT_OK;
    if (!set_slices(n, e))
        return PT_EUSAGE;
    double t0 = util_now();
    MPI_Request rq;
    int rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, v, D.counts, D.displs, MPI_FLOAT,
                             D.comm, &rq);
    if (rc != MPI_SUCCESS)
        return mpi_fail(e, "allgather", rc);
    return finish(&rq, t0, "allgather", e);
}

int dist_sum_doubles(double *v, size_t n, pt_err *e)
{
    if (!D.on || D.size == 1 || n == 0)
        return PT_OK;
    size_t N = (size_t)D.size;
    double *all = scratch(N * n * sizeof(double));
    if (!all)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int rc = dist_allgather(v, all, n * sizeof(double), e);
    if (rc != PT_OK)
        return rc;
    memcpy(v, all, n * sizeof(double));
    for (size_t k = 1; k < N; k++)
        for (size_t i = 0; i < n; i++)
            v[i] += all[k * n + i];
    return PT_OK;
}

int dist_sum_ll(long long *v, size_t n, pt_err *e)
{
    if (!D.on || D.size == 1 || n == 0)
        return PT_OK;
    if (too_big(n, e) != PT_OK)
        return PT_EUSAGE;
    double t0 = util_now();
    MPI_Request rq;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, v, (int)n, MPI_LONG_LONG, MPI_SUM, D.comm, &rq);
    if (rc != MPI_SUCCESS)
        return mpi_fail(e, "allreduce", rc);
    return finish(&rq, t0, "allreduce", e);
}

int dist_max_int(int *v, pt_err *e)
{
    if (!D.on || D.size == 1)
        return PT_OK;
    double t0 = util_now();
    MPI_Request rq;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, v, 1, MPI_INT, MPI_MAX, D.comm, &rq);
    if (rc != MPI_SUCCESS)
        return mpi_fail(e, "allreduce", rc);
    return finish(&rq, t0, "allreduce", e);
}

int dist_gatherv(const void *mine, size_t bytes, void *all, size_t all_cap, size_t *total,
                 int root, pt_err *e)
{
    if (total)
        *total = 0;
    if (!D.on || D.size == 1) {
        if (bytes > all_cap)
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "gather: %zu bytes into room for %zu", bytes, all_cap);
        if (all != mine && bytes)
            memmove(all, mine, bytes);
        if (total)
            *total = bytes;
        return PT_OK;
    }
    if (too_big(bytes, e) != PT_OK)
        return PT_EUSAGE;
    int n = (int)bytes;
    int *counts = NULL, *displs = NULL;
    if (D.rank == root) {
        counts = calloc((size_t)D.size, sizeof *counts);
        displs = calloc((size_t)D.size, sizeof *displs);
        if (!counts || !displs) {
            free(counts);
            free(displs);
            /* The others wait in the gather: this rank's failure ends the job. */
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        }
    }
    double t0 = util_now();
    MPI_Request rq;
    int rc = MPI_Igather(&n, 1, MPI_INT, counts, 1, MPI_INT, root, D.comm, &rq);
    if (rc == MPI_SUCCESS)
        rc = finish(&rq, t0, "gather", e);
    else
        rc = mpi_fail(e, "gather", rc);
    if (rc == PT_OK && D.rank == root) {
        size_t sum = 0;
        for (int k = 0; k < D.size; k++) {
            displs[k] = (int)sum;
            sum += (size_t)counts[k];
        }
        if (sum > all_cap || sum > (size_t)INT_MAX)
            rc = err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "gather: %zu bytes into room for %zu", sum, all_cap);
        else if (total)
            *total = sum;
    }
    if (rc == PT_OK) {
        t0 = util_now();
        int r2 = MPI_Igatherv(mine, n, MPI_BYTE, all, counts, displs, MPI_BYTE, root, D.comm,
                              &rq);
        rc = r2 == MPI_SUCCESS ? finish(&rq, t0, "gather", e) : mpi_fail(e, "gather", r2);
    }
    free(counts);
    free(displs);
    return rc;
}

/* ---- the replica pool's reduce plug-in ---- */

/* A rpool_sum is a dist_sum under the pool's name for it. */
static rpool_sum *red_sum_new(size_t n) { return (rpool_sum *)dist_sum_new(n); }
static void red_sum_free(rpool_sum *q) { dist_sum_free((dist_sum *)q); }
static int red_sum_start(rpool_sum *q, float *v, size_t n, pt_err *e)
{
    return dist_sum_start((dist_sum *)q, v, n, e);
}
static int red_sum_test(rpool_sum *q, int *done, pt_err *e)
{
    return dist_sum_test((dist_sum *)q, done, e);
}
static int red_sum_wait(rpool_sum *q, pt_err *e) { return dist_sum_wait((dist_sum *)q, e); }

const rpool_reducer *dist_reducer(void)
{
    static rpool_reducer r;
    r = (rpool_reducer){ .ranks = dist_size(), .rank = dist_rank(), .slice = dist_slice,
                         .allgather = dist_allgather,
                         .reduce_scatter_floats = dist_reduce_scatter_floats,
                         .allgather_floats = dist_allgather_floats,
                         .sum_doubles = dist_sum_doubles, .max_int = dist_max_int,
                         .sum_new = red_sum_new, .sum_free = red_sum_free,
                         .sum_start = red_sum_start, .sum_test = red_sum_test,
                         .sum_wait = red_sum_wait };
    return &r;
}
