/* runlog — a finished (or running) run's figures read back from its folder, for
 * the workbench's comparison overlay (--compare), its runs list and --open.
 *
 * A run is a petal-tui run folder (history.json, config, log.txt, the
 * validation labels and predictions, and the TensorBoard event files in train/
 * and validation/), or the event files another writer made (Keras's TensorBoard
 * callback: a folder with train/ and validation/, or one such folder, or one
 * event file). What is read:
 *   - the per-epoch curves: train and validation loss, accuracy and macro F1,
 *     from history.json when there is one, else from the event files' epoch_*
 *     scalars (Keras's step s is the end of epoch s + 1);
 *   - the per-update curves (batch_loss, batch_sparse_categorical_accuracy,
 *     batch_learning_rate of train/) when the event files hold them;
 *   - three x positions of every point: the update it was taken at, the epoch
 *     (an epoch's figure sits at its end: 1, 2, ...; an update at its fraction of
 *     the epochs), and the wall-clock seconds since the run began. history.json
 *     gives the updates and the seconds of each epoch; event files give wall
 *     times, and the updates through evaluation_*_vs_iterations (the update
 *     count at a validation), interpolated between validations at a constant
 *     number of updates per epoch. An x that cannot be known is NaN (the point
 *     is left out on that axis);
 *   - what the runs list shows: model, dataset, date, epochs, the best
 *     validation F1 (and accuracy), and the options of RUN/config.
 * The event files are read with io/tbevent (scalars as simple_value or as
 * float / double tensors); their damage is an error naming the file, the record
 * and its byte offset, as is a malformed history.json (its record is the epoch's
 * entry). Nothing is retried or guessed past an error: rlog_load() fails.
 *
 * Ownership: rlog_load() gives a run the caller frees with rlog_free(); every
 * array in it belongs to it. rlog_scan() gives an array of runs freed with
 * rlog_free_list(). rlog_val_load() fills a run_val_report (free it with
 * run_val_report_free()) and two arrays the caller frees with free().
 */
#ifndef PT_RUNLOG_H
#define PT_RUNLOG_H

#include "base/err.h"
#include "run.h"

/* The run's figures (run_figures, run_series, run_opt) are plain types of run.h. */

/* Read the run at path (a run folder, a folder of event files, or one event file). */
int rlog_load(const char *path, run_figures **out, pt_err *e);
void rlog_free(run_figures *r);

/* The value of option key, or NULL when the run's config does not name it. */
const char *rlog_opt_get(const run_figures *r, const char *key);

/* The options whose values differ between the n runs (a key one run lacks counts
 * as differing), for run i as "key=value key=value ..." in its config's order,
 * leaving out the ones that always differ (out, resume) and data (a column of
 * its own). Writes at most len bytes; returns how many keys differ. */
int rlog_diff_text(run_figures *const *runs, int n, int i, char *buf, size_t len);

/* Every folder in parent that rlog_load() reads, sorted by name; the folders it
 * refuses are counted in *skipped (NULL: not counted) and left out. PT_OK with
 * *n == 0 when there is none; an error only when parent cannot be listed. */
int rlog_scan(const char *parent, run_figures ***runs, int *n, int *skipped, pt_err *e);
void rlog_free_list(run_figures **runs, int n);

/* The validation results of a petal-tui run folder's last epoch, from its
 * valid_labels.json and the last line of valid_preds.jsonl: the report (per-class
 * precision, recall, F1, support and the confusion matrix, epoch set) and the
 * labels and predictions of its n examples. PT_ENODATA when the folder has no
 * such files (a Keras run). */
int rlog_val_load(const char *run_dir, int n_classes, run_val_report *rep, int **labels,
                  int **preds, long long *n, pt_err *e);

/* RUN/log.txt's lines, without their leading date and time, through fn (oldest
 * first); the number of lines, or < 0 with e filled when there is no log. */
int rlog_log_lines(const char *run_dir, void (*fn)(void *ctx, const char *line), void *ctx,
                   pt_err *e);

#endif
