/* validate — the trainer's prediction passes: validation after every epoch (loss,
 * accuracy, macro precision/recall/F1, the confusion matrix, per-example predictions
 * for inspect) and the test split's predictions for submission.csv, both on the
 * moving average of the weights when --ema is on (validate.c).
 *
 * Ownership: trn_valid lives inside the run's trn (train/trn.h) and holds no memory.
 */
#ifndef PT_TRN_VALIDATE_H
#define PT_TRN_VALIDATE_H

#include "base/err.h"
#include "run.h"

typedef struct trn trn;

typedef struct trn_valid {
    double seconds;             /* the last validation's, for the ETA */
} trn_valid;

/* Validation pass after an epoch: fills row's val figures, writes the epoch's
 * predictions and publishes the results. PT_ESTOPPED when asked to stop. */
int trn_validate(trn *r, run_epoch *row, pt_err *e);
/* Test predictions: submission.csv and test_preds.json. */
int trn_predict_test(trn *r, pt_err *e);

#endif
