/* runexport — a run folder's trained net written as a standard ONNX file (runmodel.h):
 * the weights validation used, the run's class names, image size and epoch in the
 * file's metadata. One function for `petal-tui export` and the workbench's key; the
 * int8 form (export --int8) calibrated here on the run's training images. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "config.h"
#include "data/dataset.h"
#include "data/pipeline.h"
#include "io/onnx.h"
#include "nn/nn_export.h"
#include "nn/nn_import.h"
#include "nn/nn_quant.h"
#include "run/checkpoint.h"
#include "run/runfolder.h"
#include "infer/runmodel.h"

/* The run's training images as validation makes them (the run's image size, crop and
 * decode settings: data/pipeline.h), through a shuffle of a fixed seed so that the
 * first `want` spread over the shards and classes, forwarded in fp32 on one inference
 * context that tells cal every node's output. cal->images: how many were. */
static int calibrate(const rm_model *m, int want, nn_calib *cal, pt_err *e)
{
    char path[4096];
    ds_dataset *ds = NULL;
    int rc = rm_data_path(m->data ? m->data : "", path, sizeof path, e);
    if (rc == PT_OK)
        rc = ds_open(path, m->image_size, &ds, e);
    if (rc != PT_OK)
        return rc;
    const ds_split *split = &ds->split[DS_TRAIN];
    if (!split->dir || split->count <= 0) {
        ds_free(ds);
        return err_set(e, PT_ENODATA, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "the run's dataset has no training records to calibrate the int8 "
                       "export on");
    }
    enum { BATCH = 32 };
    const int S = m->image_size;
    const size_t px = (size_t)S * S * 3;
    pipe_config c;
    rm_pipe_config(m, &c);
    c.split = split;
    c.labeled = 1;
    c.n_classes = m->n_classes;
    c.batch_size = BATCH;
    c.interleave = 0;
    c.workers = 2;
    c.shuffle_buffer = 1024;
    c.seed = 42;
    pipeline *pl = NULL;
    float *x = malloc((size_t)BATCH * px * sizeof *x);
    nn_ctx *ctx = x ? nn_ctx_new_infer(m->net, BATCH, e) : NULL;
    if (!x && e)
        err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    rc = ctx ? pipe_create(&c, &pl, e) : e->code;
    if (rc == PT_OK)
        nn_ctx_on_node(ctx, nn_calib_observe, cal);
    batch *b;
    int got = 0;
    const float s = 1.0f / 255.0f; /* as the replica pool feeds bytes (pool/rpool.c) */
    while (rc == PT_OK && cal->images < want && (got = pipe_next(pl, &b, e)) == 1) {
        int n = b->n < want - (int)cal->images ? b->n : want - (int)cal->images;
        for (size_t q = 0; q < (size_t)n * px; q++)
            x[q] = (float)b->images[q] * s;
        if (n > 0 && !nn_forward(ctx, x, n, 0, 0, 0))
            rc = err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "the calibration's forward pass failed");
        cal->images += n;
        pipe_release(pl, b);
    }
    if (rc == PT_OK && got < 0)
        rc = e->code;
    if (rc == PT_OK && cal->images == 0)
        rc = err_set(e, PT_ENODATA, split->dir, PT_NO_RECORD, PT_NO_OFFSET,
                     "no training image could be read to calibrate the int8 export on");
    pipe_destroy(pl);
    nn_ctx_free(ctx);
    free(x);
    ds_free(ds);
    return rc;
}

/* export and export --int8 (calib > 0). */
static int export_run(const char *run_dir, const char *out, int calib, rm_export_info *info,
                      pt_err *e)
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
    util_copy(in.weights, sizeof in.weights, m.weights);
    if (out && out[0])
        snprintf(in.path, sizeof in.path, "%s", out);
    else {
        run_handle h;
        if ((rc = run_open(&h, run_dir, 1, e)) != PT_OK) {
            rm_close(&m);
            return rc;
        }
        run_path(&h, calib > 0 ? RUN_F_EXPORT_INT8 : RUN_F_EXPORT, in.path, sizeof in.path);
    }
    char real[PATH_MAX];
    const char *source = realpath(run_dir, real) ? real : run_dir;
    nn_export_meta meta = { .class_names = (const char *const *)m.class_names,
                            .image_size = m.image_size, .source_run = source,
                            .epoch = m.epoch, .update = m.update };
    nn_calib cal = { 0 };
    nn_export_quant q = { 0 };
    if (calib > 0 && (rc = nn_calib_init(&cal, m.net, e)) == PT_OK &&
        (rc = calibrate(&m, calib, &cal, e)) != PT_OK) {
        char was[sizeof e->msg];
        util_copy(was, sizeof was, e->msg);
        err_set(e, rc, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                "cannot calibrate the int8 export of %s on its training images: %s", run_dir,
                was);
    }
    if (calib > 0 && rc == PT_OK) {
        q = (nn_export_quant){ cal.lo, cal.hi, cal.images, "training images" };
        meta.quant = &q;
        in.calibrated = cal.images;
    }
    if (rc == PT_OK)
        rc = nn_export_onnx_file(m.net, &meta, in.path, e);
    nn_calib_free(&cal);
    rm_close(&m);
    if (rc == PT_OK && stat(in.path, &st) == 0)
        in.bytes = (long long)st.st_size;
    in.seconds = util_now() - t0;
    if (info)
        *info = in;
    return rc;
}

int rm_export(const char *run_dir, const char *out, rm_export_info *info, pt_err *e)
{
    return export_run(run_dir, out, 0, info, e);
}

int rm_export_int8(const char *run_dir, const char *out, int calib, rm_export_info *info,
                   pt_err *e)
{
    if (calib < 1)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "--calib takes a number of images, 1 or more (not %d)", calib);
    return export_run(run_dir, out, calib, info, e);
}

/* Whether paths a and b name one file. */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* The progress of the weights the run's model is (its kept epoch's: best.ckpt or the
 * checkpoint), or -1 (no run there, or no checkpoint yet). */
static int run_progress(const char *run_dir, ckpt_progress *p)
{
    run_handle h;
    run_config cfg;
    char path[4200];
    cfg_defaults(&cfg);
    if (!run_dir || !run_dir[0] || run_open(&h, run_dir, 0, NULL) != PT_OK ||
        run_config_read(&h, &cfg, NULL) != PT_OK ||
        run_path(&h, run_kept_file(&h, &cfg), path, sizeof path) != 0 || !util_is_file(path) ||
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
