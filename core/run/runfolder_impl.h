/* runfolder_impl — what the reader's files of the run folder share (see
 * runfolder.h); not for other modules. */
#ifndef PT_RUNFOLDER_IMPL_H
#define PT_RUNFOLDER_IMPL_H

#include "run/runfolder.h"

/* The capacity of each series of a run_figures being filled. */
typedef struct rf_builder {
    int cap[RUN_SERIES_COUNT];
} rf_builder;

/* One point onto series k (grown as needed); PT_ENOMEM when out of memory. */
int rf_push(run_figures *r, rf_builder *b, int k, double y, double xu, double xe, double xt);

/* path's contents, NUL-terminated; NULL when it is not there (e filled). */
char *rf_read_text(const char *path, size_t *len, pt_err *e);

/* ---- runfolder_events.c ---- */

typedef struct rf_ev_point {
    long long step;
    double wall, value;
} rf_ev_point;

typedef struct rf_ev_list {
    rf_ev_point *v;
    int n, cap;
} rf_ev_list;

/* The scalars a run's event files give, by what they are. */
enum { EV_T_LOSS, EV_T_ACC, EV_T_F1, EV_V_LOSS, EV_V_ACC, EV_V_F1, EV_ITER, EV_B_LOSS,
       EV_B_ACC, EV_B_LR, EV_N };

typedef struct rf_events {
    rf_ev_list l[EV_N];
    double started;             /* the earliest file's time; 0 unknown */
} rf_events;

/* The event files of a run at dir: dir's own, then train/'s and validation/'s
 * (malloc'd paths, freed with util_free_list). */
int rf_event_files(const char *dir, char ***files, int *n, pt_err *e);
/* The scalars of the nf files into ev; r's writer and event_files set. */
int rf_events_read(run_figures *r, char **files, int nf, rf_events *ev, pt_err *e);
/* The points of ev into r's series: the epoch curves when with_epochs, the
 * per-update curves placed on the history's table (nh rows of cumulative updates,
 * seconds and epoch numbers) when there is one. */
int rf_events_place(run_figures *r, rf_builder *b, const rf_events *ev, int with_epochs,
                    const double *cum_u, const double *cum_t, const double *ep_no, int nh);
void rf_events_free(rf_events *ev);

#endif
