/* runexport — a run folder's trained net written as a standard ONNX file (runmodel.h):
 * the weights validation used, the run's class names, image size and epoch in the
 * file's metadata. One function for `petal-tui export` and the workbench's key. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "io/onnx.h"
#include "nn/nn_export.h"
#include "nn/nn_import.h"
#include "run/checkpoint.h"
#include "run/runfolder.h"
#include "infer/runmodel.h"

int rm_export(const char *run_dir, const char *out, rm_export_info *info, pt_err *e)
{
    struct stat st;
    if (stat(run_dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return err_set(e, PT_EUSAGE, run_dir, PT_NO_RECORD, PT_NO_OFFSET,
                       "not a run folder: export writes a run's model (an ONNX file is one "
                       "already)");
    double t0 = util_now();
    rm_model m;
    int rc = rm_open(run_dir, 0, &m, e);
    if (rc != PT_OK)
        return rc;
    rm_export_info in = { .classes = m.n_classes, .image_size = m.image_size,
                          .epoch = m.epoch, .update = m.update, .ema = m.ema };
    if (out && out[0])
        snprintf(in.path, sizeof in.path, "%s", out);
    else {
        run_handle h;
        if ((rc = run_open(&h, run_dir, 1, e)) != PT_OK) {
            rm_close(&m);
            return rc;
        }
        run_path(&h, RUN_F_EXPORT, in.path, sizeof in.path);
    }
    char real[PATH_MAX];
    const char *source = realpath(run_dir, real) ? real : run_dir;
    nn_export_meta meta = { .class_names = (const char *const *)m.class_names,
                            .image_size = m.image_size, .source_run = source,
                            .epoch = m.epoch, .update = m.update };
    rc = nn_export_onnx_file(m.net, &meta, in.path, e);
    rm_close(&m);
    if (rc == PT_OK && stat(in.path, &st) == 0)
        in.bytes = (long long)st.st_size;
    in.seconds = util_now() - t0;
    if (info)
        *info = in;
    return rc;
}

/* Whether paths a and b name one file. */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* The run's checkpoint progress, or -1 (no run there, or no checkpoint yet). */
static int run_progress(const char *run_dir, ckpt_progress *p)
{
    run_handle h;
    char path[4200];
    if (!run_dir || !run_dir[0] || run_open(&h, run_dir, 0, NULL) != PT_OK ||
        run_path(&h, RUN_F_CHECKPOINT, path, sizeof path) != 0 || !util_is_file(path) ||
        ckpt_peek(path, p, NULL) != PT_OK)
        return -1;
    return 0;
}

/* An export of update (epoch when update is -1) against its run's checkpoint. */
static int stale(const char *file, const char *run_dir, int update, int epoch, char *msg,
                 size_t n, const char *refresh)
{
    ckpt_progress p;
    if (run_progress(run_dir, &p) != 0)
        return 0;
    if (update >= 0 ? p.update == update : p.epoch == epoch)
        return 0;
    char held[64];
    if (update >= 0)
        util_fmt(held, sizeof held, "update %d (epoch %d)", update, epoch);
    else
        util_fmt(held, sizeof held, "epoch %d", epoch);
    util_fmt(msg, n,
             "%s holds %s of %s; the run is now at update %lld (epoch %lld), so its answers "
             "differ from the run's: %s refreshes it",
             file, held, run_dir, (long long)p.update, (long long)p.epoch, refresh);
    return 1;
}

int rm_export_stale(const rm_model *m, char *msg, size_t n)
{
    if (!m->source_run || !m->source_run[0] || (m->update < 0 && m->epoch < 0))
        return 0;
    /* The run's own model.onnx refreshes with a plain export; a copy elsewhere with --out. */
    char refresh[8400], own[4200];
    run_handle h;
    int at_home = run_open(&h, m->source_run, 0, NULL) == PT_OK &&
                  run_path(&h, RUN_F_EXPORT, own, sizeof own) == 0 && same_file(own, m->source);
    if (at_home)
        util_fmt(refresh, sizeof refresh, "petal-tui export %s", m->source_run);
    else
        util_fmt(refresh, sizeof refresh, "petal-tui export %s --out %s", m->source_run, m->source);
    return stale(m->source, m->source_run, m->update, m->epoch, msg, n, refresh);
}

int rm_run_export_stale(const char *run_dir, char *msg, size_t n)
{
    run_handle h;
    char path[4200];
    if (run_open(&h, run_dir, 0, NULL) != PT_OK ||
        run_path(&h, RUN_F_EXPORT, path, sizeof path) != 0 || !util_is_file(path))
        return 0;
    onnx_model *om = NULL;
    nn_onnx_meta meta;
    if (onnx_load(path, &om, NULL) != PT_OK)
        return 0;
    int rc = nn_onnx_meta_read(om, &meta, NULL);
    onnx_free(om);
    if (rc != PT_OK)
        return 0;
    char refresh[4300];
    util_fmt(refresh, sizeof refresh, "petal-tui export %s", run_dir);
    int s = meta.petal && stale(path, run_dir, meta.update, meta.epoch, msg, n, refresh);
    nn_onnx_meta_free(&meta);
    return s;
}
