/* runfolder_impl — what core/run/'s files share (see runfolder.h): the file
 * names themselves, the reader's builders; not for other modules. */
#ifndef PT_RUNFOLDER_IMPL_H
#define PT_RUNFOLDER_IMPL_H

#include "run/runfolder.h"

/* The names behind run_file (runfolder_format.c's table spells them out): for the
 * messages and paths of this folder's own files. */
#define RUN_N_CONFIG "config"
#define RUN_N_HISTORY "history.json"
#define RUN_N_LOG "log.txt"
#define RUN_N_VALID_LABELS "valid_labels.json"
#define RUN_N_VALID_PREDS "valid_preds.jsonl"
#define RUN_N_TEST_PREDS "test_preds.json"
#define RUN_N_SUBMISSION "submission.csv"
#define RUN_N_CHECKPOINT "checkpoint.ckpt"
#define RUN_N_CLASSES "classes.txt"
#define RUN_N_EXPORT "model.onnx"
#define RUN_N_REPORT "report.json"
#define RUN_N_TRAIN_DIR "train"
#define RUN_N_VAL_DIR "validation"
#define RUN_N_SOURCE "source.onnx"
#define RUN_N_EXPORT_INT8 "model-int8.onnx"
#define RUN_N_BEST "best.ckpt"
#define RUN_N_SUMMARY "summary.json"
#define RUN_N_ENSEMBLE "ensemble.json"

/* The capacity of each series of a run_figures being filled. */
typedef struct run_builder {
    int cap[RUN_SERIES_COUNT];
} run_builder;

/* One point onto series k (grown as needed); PT_ENOMEM when out of memory. */
int run_push(run_figures *r, run_builder *b, int k, double y, double xu, double xe, double xt);

/* j's text (json_take: j is emptied) as file f, through run_write_file. */
struct json_w;
int run_write_json(const run_handle *w, run_file f, struct json_w *j, pt_err *e);

/* path's contents, NUL-terminated; NULL when it is not there (e filled). */
char *run_read_text(const char *path, size_t *len, pt_err *e);

/* ---- runfolder_events.c ---- */

typedef struct run_ev_point {
    long long step;
    double wall, value;
} run_ev_point;

typedef struct run_ev_list {
    run_ev_point *v;
    int n, cap;
} run_ev_list;

/* The scalars a run's event files give, by what they are. */
enum { EV_T_LOSS, EV_T_ACC, EV_T_F1, EV_V_LOSS, EV_V_ACC, EV_V_F1, EV_ITER, EV_B_LOSS,
       EV_B_ACC, EV_B_LR, EV_N };

typedef struct run_events {
    run_ev_list l[EV_N];
    double started;             /* the earliest file's time; 0 unknown */
} run_events;

/* The event files of a run at dir: dir's own, then train/'s and validation/'s
 * (malloc'd paths, freed with util_free_list). */
int run_event_files(const char *dir, char ***files, int *n, pt_err *e);
/* The scalars of the nf files into ev; r's writer and event_files set. */
int run_events_read(run_figures *r, char **files, int nf, run_events *ev, pt_err *e);
/* The points of ev into r's series: the epoch curves when with_epochs, the
 * per-update curves placed on the history's table (nh rows of cumulative updates,
 * seconds and epoch numbers) when there is one. */
int run_events_place(run_figures *r, run_builder *b, const run_events *ev, int with_epochs,
                    const double *cum_u, const double *cum_t, const double *ep_no, int nh);
void run_events_free(run_events *ev);

#endif
