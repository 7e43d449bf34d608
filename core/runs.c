/* runs — the runs-on-disk door (runs.h): core/run/'s readers and writers, and what
 * the run folder's figures need from above it (the metrics of its validation
 * results, the model a run's export opens). */
#include "runs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "run/runfolder.h"
#include "train/metrics.h"
#include "infer/runmodel.h"

int runs_open(const char *path, run_figures **out, pt_err *e)
{
    return run_load(path, out, e);
}

void runs_close(run_figures *r)
{
    run_free(r);
}

const char *runs_opt(const run_figures *r, const char *key)
{
    return run_opt_get(r, key);
}

int runs_diff_text(run_figures *const *runs, int n, int i, char *buf, size_t len)
{
    return run_diff_text(runs, n, i, buf, len);
}

int runs_scan(const char *parent, run_figures ***runs, int *n, int *skipped, pt_err *e)
{
    return run_scan(parent, runs, n, skipped, e);
}

void runs_free(run_figures **runs, int n)
{
    run_free_list(runs, n);
}

/* The report of nl labels and predictions of k classes (its arrays malloc'd). */
static int val_report(const int *lab, const int *pred, long long nl, int k, int epoch,
                      run_val_report *rep, const char *run_dir, pt_err *e)
{
    rep->n_classes = k;
    rep->n = nl;
    rep->epoch = epoch;
    rep->precision = malloc((size_t)k * sizeof(double));
    rep->recall = malloc((size_t)k * sizeof(double));
    rep->f1 = malloc((size_t)k * sizeof(double));
    rep->support = malloc((size_t)k * sizeof(long long));
    rep->confusion = malloc((size_t)k * k * sizeof(long long));
    int32_t *l32 = malloc((size_t)(nl ? nl : 1) * sizeof *l32),
            *p32 = malloc((size_t)(nl ? nl : 1) * sizeof *p32);
    int rc = PT_OK;
    if (!rep->precision || !rep->recall || !rep->f1 || !rep->support || !rep->confusion ||
        !l32 || !p32) {
        rc = err_set(e, PT_ENOMEM, run_dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    } else {
        for (long long i = 0; i < nl; i++) {
            l32[i] = lab[i];
            p32[i] = pred[i];
        }
        met_confusion(l32, p32, (size_t)nl, k, rep->confusion);
        met_summary ms;
        met_from_confusion(rep->confusion, k, &ms, rep->precision, rep->recall, rep->f1,
                           rep->support);
    }
    free(l32);
    free(p32);
    return rc;
}

int runs_val_load(const char *run_dir, int n_classes, run_val_report *rep, int **labels,
                  int **preds, long long *n, pt_err *e)
{
    memset(rep, 0, sizeof *rep);
    int k = 0, epoch = 0;
    int rc = run_val_read(run_dir, n_classes, labels, preds, n, &k, &epoch, e);
    if (rc != PT_OK)
        return rc;
    if ((rc = val_report(*labels, *preds, *n, k, epoch, rep, run_dir, e)) != PT_OK) {
        free(*labels);
        free(*preds);
        *labels = *preds = NULL;
        *n = 0;
        run_val_report_free(rep);
        memset(rep, 0, sizeof *rep);
    }
    return rc;
}

int runs_log_lines(const char *run_dir, void (*fn)(void *ctx, const char *line), void *ctx,
                   pt_err *e)
{
    return run_log_lines(run_dir, fn, ctx, e);
}

int runs_class_names(const char *run_dir, char ***names, int *n, pt_err *e)
{
    run_handle h;
    int rc = run_open(&h, run_dir, 0, e);
    if (rc != PT_OK)
        return rc;
    if (!run_has(&h, RUN_F_CLASSES))
        return err_set(e, PT_ENODATA, run_dir, PT_NO_RECORD, PT_NO_OFFSET,
                       "the run keeps no class names");
    return run_read_lines(&h, RUN_F_CLASSES, names, n, e);
}

int runs_config_path(const char *run_dir, char *buf, size_t n)
{
    run_handle h = { .on = 0 };
    if (strlen(run_dir) >= sizeof h.dir)
        return -1;
    util_copy(h.dir, sizeof h.dir, run_dir);
    if (run_path(&h, RUN_F_CONFIG, buf, n) != 0)
        return -1;
    return run_has(&h, RUN_F_CONFIG);
}

static void export_info(const rm_export_info *in, runs_export_info *info)
{
    memset(info, 0, sizeof *info);
    util_copy(info->path, sizeof info->path, in->path);
    info->bytes = in->bytes;
    info->classes = in->classes;
    info->image_size = in->image_size;
    info->epoch = in->epoch;
    info->update = in->update;
    info->ema = in->ema;
    util_copy(info->weights, sizeof info->weights, in->weights);
    info->seconds = in->seconds;
    info->calibrated = in->calibrated;
}

int runs_export(const char *run_dir, const char *out, runs_export_info *info, pt_err *e)
{
    rm_export_info in;
    int rc = rm_export(run_dir, out, &in, e);
    if (rc == PT_OK && info)
        export_info(&in, info);
    return rc;
}

int runs_export_int8(const char *run_dir, const char *out, int calib, runs_export_info *info,
                     pt_err *e)
{
    rm_export_info in;
    int rc = rm_export_int8(run_dir, out, calib, &in, e);
    if (rc == PT_OK && info)
        export_info(&in, info);
    return rc;
}

int runs_read_config(const char *run_dir, run_config *cfg, pt_err *e)
{
    run_handle h;
    int rc = run_open(&h, run_dir, 0, e);
    return rc != PT_OK ? rc : run_config_read(&h, cfg, e);
}

void runs_config_absolute(run_config *cfg)
{
    run_config_absolute(cfg);
}

int runs_export_stale(const char *run_dir, char *msg, size_t n)
{
    return rm_run_export_stale(run_dir, msg, n);
}

int runs_export_msg(const char *run_dir, char *msg, size_t n, pt_err *e)
{
    runs_export_info in;
    int rc = runs_export(run_dir, NULL, &in, e);
    if (rc == PT_OK)
        snprintf(msg, n, "%s: %d classes, %d px, epoch %d (%s), update %d, %s (%.1f MB, %.2f s)",
                 in.path, in.classes, in.image_size, in.epoch, in.weights, in.update,
                 in.ema ? "the moving average of the weights" : "the weights as trained",
                 (double)in.bytes / 1e6, in.seconds);
    return rc;
}

int runs_write_val_outputs(const char *dir, const char *report, size_t report_len,
                           const int32_t *labels, const int32_t *preds, long long n,
                           pt_err *e)
{
    run_handle h;
    int rc = run_open(&h, dir, 1, e);
    if (rc != PT_OK)
        return rc;
    if ((rc = run_write_file(&h, RUN_F_REPORT, report, report_len, e)) != PT_OK)
        return rc;
    size_t len;
    char *text = run_int_list(labels, n, &len);
    if (!text)
        return err_set(e, PT_ENOMEM, dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    rc = run_write_file(&h, RUN_F_VALID_LABELS, text, len, e);
    free(text);
    if (rc != PT_OK)
        return rc;
    return run_append_valid_preds(&h, 1, preds, n, e);
}

int runs_submission_path(const char *dir, char *buf, size_t n)
{
    run_handle h = { .on = 1 };
    if (strlen(dir) >= sizeof h.dir)
        return -1;
    util_copy(h.dir, sizeof h.dir, dir);
    return run_path(&h, RUN_F_SUBMISSION, buf, n);
}

int runs_ensemble_out(const char *dir, int *replaces, pt_err *e)
{
    *replaces = 0;
    if (util_is_file(dir))
        return err_set(e, PT_EUSAGE, dir, PT_NO_RECORD, PT_NO_OFFSET,
                       "is a file: --out names the folder the ensemble's outputs go into");
    if (!util_is_dir(dir))
        return PT_OK;
    run_handle h;
    int rc = run_open(&h, dir, 0, e);
    if (rc != PT_OK)
        return rc;
    /* A training run's own files, what no ensemble writes (a run killed before its first
     * checkpoint has its config). Not its train/: a dataset folder has one too. */
    static const run_file run_own[] = { RUN_F_CHECKPOINT, RUN_F_CONFIG, RUN_F_HISTORY,
                                        RUN_F_LOG };
    for (size_t i = 0; i < sizeof run_own / sizeof run_own[0]; i++)
        if (run_has(&h, run_own[i]))
            return err_set(e, PT_EUSAGE, dir, PT_NO_RECORD, PT_NO_OFFSET,
                           "holds a training run (its %s): the ensemble would replace the "
                           "run's %s and %s; choose another --out (a new folder, or a "
                           "previous ensemble's)",
                           run_file_name(run_own[i]), run_file_name(RUN_F_VALID_PREDS),
                           run_file_name(RUN_F_SUBMISSION));
    if (run_has(&h, RUN_F_REPORT)) {
        *replaces = 1;
        return PT_OK;
    }
    static const run_file outputs[] = { RUN_F_SUBMISSION, RUN_F_VALID_PREDS,
                                        RUN_F_VALID_LABELS };
    for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++)
        if (run_has(&h, outputs[i]))
            return err_set(e, PT_EUSAGE, dir, PT_NO_RECORD, PT_NO_OFFSET,
                           "holds a %s that is no ensemble's (no %s beside it) and would be "
                           "replaced; choose another --out, or move the file",
                           run_file_name(outputs[i]), run_file_name(RUN_F_REPORT));
    return PT_OK;
}

int runs_ensemble_clear(const char *dir, pt_err *e)
{
    run_handle h;
    int rc = run_open(&h, dir, 1, e);
    static const run_file outputs[] = { RUN_F_REPORT, RUN_F_SUBMISSION, RUN_F_VALID_PREDS,
                                        RUN_F_VALID_LABELS };
    for (size_t i = 0; rc == PT_OK && i < sizeof outputs / sizeof outputs[0]; i++) {
        char path[4200];
        if (run_path(&h, outputs[i], path, sizeof path) != 0)
            rc = err_set(e, PT_EUSAGE, dir, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
        else if (remove(path) != 0 && util_is_file(path))
            rc = err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET, "cannot remove it");
    }
    return rc;
}
