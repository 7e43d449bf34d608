/* telemetry — the replicas' smoothed hardware figures and sparklines (see
 * telemetry.h). */
#include "train/telemetry.h"

#include <math.h>
#include <string.h>

#include "base/util.h"

/* Smoothing time constant of the live throughput figures, in seconds. */
#define TELEMETRY_TAU 2.0
#define SPARK_PERIOD 0.5

void tlm_start(tlm *t, double now)
{
    t->t = t->spark_t = now;
}

void tlm_resume(tlm *t, double now)
{
    t->t = now;
}

void tlm_note_update(tlm *t, double seconds)
{
    t->sec_per_update = t->sec_per_update > 0 ? 0.9 * t->sec_per_update + 0.1 * seconds : seconds;
}

void tlm_note_comm(tlm *t, long long update, double comm)
{
    t->comm_per_update = update > 1 ? 0.9 * t->comm_per_update + 0.1 * comm : comm;
}

/* A sparkline point for every shown replica (the oldest dropped when full). */
static void spark_point(tlm *t, int zero)
{
    if (t->spark_n == RUN_SPARK_POINTS) {
        for (int q = 0; q < t->shown; q++)
            memmove(t->spark[q], t->spark[q] + 1, (RUN_SPARK_POINTS - 1) * sizeof(float));
        t->spark_n--;
    }
    for (int q = 0; q < t->shown; q++)
        t->spark[q][t->spark_n] = zero ? 0 : (float)t->rep[q].ips;
    t->spark_n++;
}

void tlm_sample(tlm *t, rpool *st, int R, double peak, double idle_this_update)
{
    double now = util_now();
    double dt = now - t->t;
    if (dt <= 0)
        return;
    double a = 1.0 - exp(-dt / TELEMETRY_TAU);
    for (int q = 0; q < R && q < RUN_MAX_REPLICAS; q++) {
        rpool_counters c;
        rpool_get_counters(st, q, &c);
        tlm_replica *p = &t->rep[q];
        double d_busy = c.busy - p->busy, d_flops = c.flops - p->flops;
        double ips = (double)(c.examples - p->ex) / dt;
        double busy = d_busy / dt, idle = idle_this_update / dt;
        double mxu = d_busy > 0 && peak > 0 ? d_flops / (d_busy * peak * 1e9) : 0;
        if (p->ips == 0 && p->busy_pct == 0) {
            p->ips = ips;
            p->busy_pct = busy;
            p->idle_pct = idle;
            p->mxu_pct = mxu;
        } else {
            p->ips += a * (ips - p->ips);
            p->busy_pct += a * (busy - p->busy_pct);
            p->idle_pct += a * (idle - p->idle_pct);
            p->mxu_pct += a * (mxu - p->mxu_pct);
        }
        p->busy = c.busy;
        p->wait = c.wait;
        p->flops = c.flops;
        p->ex = c.examples;
        p->idle += idle_this_update;
    }
    t->t = now;
    if (now - t->spark_t >= SPARK_PERIOD) {
        t->spark_t = now;
        spark_point(t, 0);
    }
}

void tlm_idle(tlm *t)
{
    for (int q = 0; q < t->shown; q++) {
        tlm_replica *p = &t->rep[q];
        p->ips = p->busy_pct = p->idle_pct = p->mxu_pct = 0;
    }
    spark_point(t, 1);
}

void tlm_set_shown(tlm *t, int n)
{
    t->shown = n < RUN_MAX_REPLICAS ? n : RUN_MAX_REPLICAS;
}

void tlm_set_home(tlm *t, int g, int rank, const char *host)
{
    if (g < 0 || g >= RUN_MAX_REPLICAS)
        return;
    t->rank[g] = rank;
    util_copy(t->host[g], sizeof t->host[g], host);
}

void tlm_set_figures(tlm *t, int g, double ips, double busy, double idle, double mxu)
{
    if (g < 0 || g >= RUN_MAX_REPLICAS)
        return;
    t->rep[g].ips = ips;
    t->rep[g].busy_pct = busy;
    t->rep[g].idle_pct = idle;
    t->rep[g].mxu_pct = mxu;
}

int tlm_gather_due(const tlm *t, long long update)
{
    return update >= t->next;
}

int tlm_gather_gap(const tlm *t, double period)
{
    double gap = t->sec_per_update > 0 ? period / t->sec_per_update : 1;
    return gap < 1 ? 1 : gap > 100000 ? 100000 : (int)gap;
}

void tlm_gather_at(tlm *t, long long update)
{
    t->next = update;
}
