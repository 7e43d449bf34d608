/* telemetry — the hardware figures of a run's replicas as it trains: per replica,
 * the counters at the last sample and the smoothed images/s, busy, idle and MXU
 * shares (time constant TELEMETRY_TAU), the images/s sparklines, and a job's
 * replica-to-rank-and-host map and collective time. It computes them from the
 * replica pool's counters; the trainer publishes them (train/progress.h owns what the
 * UI sees) and train/rank.c fills in the other ranks' replicas on rank 0.
 *
 * Ownership: a plain value inside the trainer's state; nothing to free.
 */
#ifndef PT_TELEMETRY_H
#define PT_TELEMETRY_H

#include "run.h"
#include "pool/rpool.h"

/* One replica's telemetry: counters at the last sample and smoothed figures. */
typedef struct tlm_replica {
    double busy, wait, idle, flops;
    long long ex;
    double ips, busy_pct, idle_pct, mxu_pct;   /* smoothed */
} tlm_replica;

typedef struct tlm {
    tlm_replica rep[RUN_MAX_REPLICAS]; /* the job's replicas: this rank's, and on rank 0
                                          the others' as last gathered */
    int shown;                  /* replicas with figures: R, or on rank 0 of a job G (at
                                   most RUN_MAX_REPLICAS) */
    int rank[RUN_MAX_REPLICAS];
    char host[RUN_MAX_REPLICAS][32];
    long long next;             /* a job: the update of the next telemetry gather */
    double comm_per_update;     /* seconds in collectives per update, smoothed */
    double sec_per_update;      /* smoothed */
    double t, spark_t;          /* when the last sample / sparkline point was taken */
    float spark[RUN_MAX_REPLICAS][RUN_SPARK_POINTS];
    int spark_n;
} tlm;

/* The clocks start at now (the run's start). */
void tlm_start(tlm *t, double now);
/* The next sample measures from now (after preparing, after a pause). */
void tlm_resume(tlm *t, double now);
/* After an update: the R replicas' counters from st, smoothed (peak: the
 * single-core sgemm GFLOP/s the MXU share is of); a sparkline point every
 * half second. */
void tlm_sample(tlm *t, rpool *st, int R, double peak, double idle_this_update);
/* The run pauses: the replicas' figures go to zero and a zero sparkline point is
 * added; their smoothing starts afresh when it goes on. */
void tlm_idle(tlm *t);
/* An update took seconds (smoothed into sec_per_update). */
void tlm_note_update(tlm *t, double seconds);
/* Update number `update` spent comm seconds in collectives (smoothed). */
void tlm_note_comm(tlm *t, long long update, double comm);

/* ---- a job's replicas (train/rank.c): telemetry keeps them, the job fills them ---- */

/* Figures are kept for n replicas (at most RUN_MAX_REPLICAS): this rank's R, or on
 * rank 0 of a job all G. */
void tlm_set_shown(tlm *t, int n);
/* Replica g of the job runs on rank `rank`, on host `host`. */
void tlm_set_home(tlm *t, int g, int rank, const char *host);
/* Replica g's smoothed figures as another rank measured them (fractions, img/s). */
void tlm_set_figures(tlm *t, int g, double ips, double busy, double idle, double mxu);
/* Whether update `update` is the one of the job's next telemetry gather. */
int tlm_gather_due(const tlm *t, long long update);
/* Updates to wait between gathers so that they come about every period seconds (1 to
 * 100,000); the job takes rank 0's. */
int tlm_gather_gap(const tlm *t, double period);
/* The next gather is at update `update`. */
void tlm_gather_at(tlm *t, long long update);

#endif
