/* curves — a run's figures over time as the trainer keeps them: the history (one
 * run_epoch per finished epoch) and the per-update curves of loss, accuracy and
 * learning rate, thinned as they grow (stride updates averaged into one point;
 * when the curve fills, neighbours are averaged in pairs and the stride doubles).
 * It is what the workbench's curves show live, what history.json is written
 * from, and what a checkpoint carries so that a resumed run shows its whole past.
 *
 * Ownership: crv_init() allocates the arrays, crv_free() frees them (safe on a
 * crv that was zeroed and never initialised). crv_pack() gives a malloc'd blob.
 */
#ifndef PT_CURVES_H
#define PT_CURVES_H

#include <stddef.h>
#include <stdint.h>

#include "run.h"

typedef struct crv {
    run_epoch *hist;            /* RUN_MAX_EPOCHS rows */
    int hist_n;
    float *loss, *acc, *lr;     /* RUN_CURVE_POINTS each */
    int n, stride;
    int pending;                /* updates averaged into the next point so far */
    double sum_loss, sum_acc, sum_lr;
} crv;

/* PT_OK, or PT_ENOMEM. */
int crv_init(crv *c);
void crv_free(crv *c);

/* A finished epoch's row (kept while there is room: RUN_MAX_EPOCHS). */
void crv_add_epoch(crv *c, const run_epoch *row);
/* One update's figures into the per-update curves. */
void crv_push(crv *c, double loss, double acc, double lr);

/* The history and curves as a checkpoint keeps them: int32 rows, the rows,
 * int32 points, stride, 0, then the points of loss, accuracy and learning rate.
 * Its size (*out malloc'd); 0 when out of memory. */
size_t crv_pack(const crv *c, uint8_t **out);
/* The history and curves back from such a blob; -1 when it is damaged. */
int crv_unpack(crv *c, const uint8_t *b, size_t n);

#endif
