/* dist — data-parallel training across processes (and hosts) with MPI: the one
 * module that includes mpi.h (Open MPI from Debian, found with pkg-config ompi-c).
 *
 * A process started by mpirun (its environment says so: OMPI_COMM_WORLD_SIZE,
 * PMIX_RANK, PMI_RANK) joins the job in dist_init(); any other process never calls
 * MPI at all (Open MPI's singleton start would spawn a daemon), and every function
 * here then acts as for a job of one rank: copies, sums of one term, no waiting.
 *
 * Collectives run on a private communicator with errors returned, never on the
 * trainer's locks, and only from one thread at a time (MPI_THREAD_SERIALIZED: the
 * run thread trains, main initialises and finalises). They are started
 * non-blocking and polled with growing sleeps, so a rank waiting for the others (a
 * paused workbench on rank 0, a slower host) leaves its cores to the decode
 * threads instead of spinning. Sums of floating-point values run in rank order
 * (0, 1, 2, ...) whatever the transport does, so every rank gets the same bits and
 * a job of N ranks x 1 replica the same bits as one process of N replicas.
 *
 * Faults: a rank that dies makes mpirun end the others (it names the rank and its
 * node); a rank whose run fails calls dist_abort(), which ends the job with its
 * status instead of leaving the others waiting in a collective.
 *
 * Ownership: process-wide state (the communicator, the host names, scratch
 * buffers) from dist_init() to dist_finalize()/dist_abort().
 */
#ifndef PT_DIST_H
#define PT_DIST_H

#include <stddef.h>

#include "base/err.h"
#include "pool/rpool.h"

/* 1 when this process was started by mpirun (or another MPI launcher), judged from
 * the environment alone; no MPI call. */
int dist_launched(void);

/* Joins the job when dist_launched(); a no-op otherwise. PT_EIO when MPI cannot
 * start or gives less than MPI_THREAD_SERIALIZED. */
int dist_init(pt_err *e);
/* Leaves the job normally (every rank must call it). */
void dist_finalize(void);
/* Ends the whole job now with this exit status (MPI_Abort); returns only when this
 * process is not in a job. */
void dist_abort(int status);

/* In a job (dist_init() joined one). */
int dist_on(void);
int dist_rank(void);
int dist_size(void);
/* This host's name, and rank k's (gathered when joining; "" out of range). */
const char *dist_host(void);
const char *dist_host_of(int rank);
/* How many different hosts the job's ranks run on (1 outside a job). */
int dist_host_count(void);
/* "rank 1 of 2 on HOST" (empty when not in a job), for messages. */
const char *dist_who(void);

/* Collectives: every rank calls the same ones in the same order. Each returns PT_OK
 * or PT_EIO with e saying which collective failed. */

/* bytes of buf from root to every rank. */
int dist_bcast(void *buf, size_t bytes, int root, pt_err *e);
/* Every rank's `bytes` of mine into all (size x bytes), in rank order. */
int dist_allgather(const void *mine, void *all, size_t bytes, pt_err *e);
/* v[i] = sum over ranks of v[i], summed in rank order, the same bits on every rank.
 * The floats travel as a reduce-scatter (each rank sums its slice) and an
 * allgather: 2 (N-1)/N x n floats sent per rank, as a ring allreduce. */
int dist_sum_floats(float *v, size_t n, pt_err *e);
/* The same sum split in its two halves, for an optimizer sliced across the ranks:
 * rank k owns slice [lo, hi) of a vector of n (dist_slice; 64-byte aligned, the
 * last ones shorter or empty). dist_reduce_scatter_floats() leaves in v[lo, hi) of
 * each rank the sum over ranks of that slice, in rank order (the bits of
 * dist_sum_floats()); the rest of v is left as it was. dist_allgather_floats()
 * copies every rank's slice of v to every rank, so that v is the same everywhere.
 * Each sends (N-1)/N x n floats per rank. Alone: [0, n), nothing to do. */
void dist_slice(size_t n, int rank, size_t *lo, size_t *hi);
int dist_reduce_scatter_floats(float *v, size_t n, pt_err *e);
int dist_allgather_floats(float *v, size_t n, pt_err *e);
/* The same sum in steps, so that several run while the caller computes (the
 * gradient of the last layers travels while the first layers' is computed). A
 * dist_sum holds the buffers of one sum of up to n floats in flight; start it on a
 * vector, then test it (each test moves it on: the alltoall's end starts the
 * allgather) until done, or wait. The vector must stay untouched until then; it
 * holds the sum, with the same bits as dist_sum_floats() gives. Every rank starts
 * the same sums in the same order, and waits for them in that order (a sum moves
 * to its second step only after every older one has: test them all, oldest
 * first). Outside a job start finishes at once. Time inside start, test and wait
 * counts as time in collectives. */
typedef struct dist_sum dist_sum;
dist_sum *dist_sum_new(size_t n);   /* NULL when out of memory */
void dist_sum_free(dist_sum *q);    /* not while a sum is in flight */
int dist_sum_start(dist_sum *q, float *v, size_t n, pt_err *e);
int dist_sum_test(dist_sum *q, int *done, pt_err *e);
int dist_sum_wait(dist_sum *q, pt_err *e);
/* The same for doubles (small arrays: an allgather, then rank-order sums). */
int dist_sum_doubles(double *v, size_t n, pt_err *e);
/* Integer sums (exact in any order). */
int dist_sum_ll(long long *v, size_t n, pt_err *e);
/* The largest of every rank's *v. */
int dist_max_int(int *v, pt_err *e);
/* Variable-size gather to root: every rank's bytes land in all one after the other
 * in rank order, *total bytes in all (root only; all and total may be NULL
 * elsewhere). */
int dist_gatherv(const void *mine, size_t bytes, void *all, size_t all_cap, size_t *total,
                 int root, pt_err *e);

/* Seconds this process has spent inside collectives (waiting included). */
/* The replica pool's reduce plug-in (pool/rpool.h) over this job's ranks: the
 * collectives above, filled in for the pool, which knows no MPI. Static; call after
 * dist_init(). */
const rpool_reducer *dist_reducer(void);
double dist_comm_seconds(void);

#endif
