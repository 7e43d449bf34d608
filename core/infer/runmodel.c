/* runmodel — opening a run folder or an ONNX file for inference (runmodel.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "infer/netcfg.h"
#include "infer/runmodel.h"
#include "config.h"
#include "data/dataset.h"
#include "data/demo.h"
#include "data/feed.h"
#include "data/pipeline.h"
#include "nn/nn_import.h"
#include "nn/nn_models.h"
#include "run/checkpoint.h"
#include "run/runfolder.h"

void rm_close(rm_model *m)
{
    if (!m)
        return;
    nn_model_free(m->net);
    if (m->class_names)
        for (int c = 0; c < m->n_classes; c++)
            free(m->class_names[c]);
    free(m->class_names);
    free(m->source);
    free(m->source_run);
    free(m->data);
    memset(m, 0, sizeof *m);
}

int rm_data_path(const char *data, char *buf, size_t n, pt_err *e)
{
    if (data[0]) {
        util_copy(buf, n, data);
        return PT_OK;
    }
    return demo_ensure(NULL, buf, n, NULL, NULL, e);
}

static int set_names(rm_model *m, int k, const char *(*name)(void *ctx, int c, char *buf,
                                                             size_t n),
                     void *ctx, pt_err *e)
{
    m->class_names = calloc((size_t)k, sizeof *m->class_names);
    if (!m->class_names)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    m->n_classes = k;
    for (int c = 0; c < k; c++) {
        char buf[64];
        const char *s = name(ctx, c, buf, sizeof buf);
        if (!(m->class_names[c] = strdup(s)))
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    return PT_OK;
}

static const char *generic_name(void *ctx, int c, char *buf, size_t n)
{
    (void)ctx;
    util_fmt(buf, n, "class %d", c);
    return buf;
}

static const char *imagenet_name(void *ctx, int c, char *buf, size_t n)
{
    (void)ctx;
    (void)buf;
    (void)n;
    return ds_imagenet_classes[c];
}

/* ---- an ONNX file ---- */

static const char *feature_name(void *ctx, int c, char *buf, size_t n)
{
    (void)ctx;
    util_fmt(buf, n, "f%d", c);
    return buf;
}

static const char *meta_name(void *ctx, int c, char *buf, size_t n)
{
    (void)buf;
    (void)n;
    return ((const nn_onnx_meta *)ctx)->class_names[c];
}

/* A petal-tui export says what it is in its metadata_props: its class names, image
 * size and epoch, and that it takes pixels 0-255 and normalises them itself
 * (NN_NORM_RAW reads it back to the exported logits). Any other file is a classifier
 * named from ImageNet's classes when it has 1,000, taking its input as norm says
 * (auto: what the file says, else ImageNet's mean and std). */
static int open_onnx(const char *path, int size, run_input_norm norm, int features, rm_model *m,
                     pt_err *e)
{
    onnx_model *om;
    int rc = onnx_load(path, &om, e);
    if (rc != PT_OK)
        return rc;
    nn_onnx_meta meta;
    rc = nn_onnx_meta_read(om, &meta, e);
    if (rc != PT_OK) {
        onnx_free(om);
        return rc;
    }
    if (meta.ensemble) {
        /* Its branches resize and slice the input: ops the importer has no layer for. */
        nn_onnx_meta_free(&meta);
        onnx_free(om);
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "is an ensemble's export (`petal-tui ensemble --export`: its members' "
                       "graphs side by side, with Resize and Slice, which petal-tui's importer "
                       "does not read): run it with ONNX Runtime, or give petal-tui the "
                       "ensemble's members or its --out folder");
    }
    /* Size 0: the one the graph declares (nn_import_opts), else 224. */
    m->image_size = size > 0 ? size : meta.image_size;
    nn_import_opts o = { .h = m->image_size, .w = m->image_size, .n_classes = 0,
                         .head = features ? NN_HEAD_FEATURES : NN_HEAD_CLASSIFIER,
                         .norm = (nn_norm)(norm - 1), .norm_auto = norm == RUN_NORM_AUTO,
                         .seed = 42 };
    nn_import_info info;
    m->net = nn_import_onnx(om, &o, &info, e);
    onnx_free(om);
    if (!m->net) {
        nn_onnx_meta_free(&meta);
        return e->code;
    }
    m->image_size = info.h;
    m->norm = info.norm;
    util_copy(m->norm_why, sizeof m->norm_why, info.norm_why);
    if (size > 0 && !strncmp(info.size_why, "as asked", 8))
        util_fmt(m->size_why, sizeof m->size_why, "given by --size%s", info.size_why + 8);
    else
        util_copy(m->size_why, sizeof m->size_why,
                  size <= 0 && meta.image_size > 0 ? "the export's image_size" : info.size_why);
    m->features = info.features;
    if (features) {
        meta.n_classes = 0; /* the names are the vector's, not classes */
        rc = set_names(m, nn_model_classes(m->net), feature_name, NULL, e);
        nn_onnx_meta_free(&meta);
        return rc;
    }
    int k = nn_model_classes(m->net);
    m->crop = 1;
    m->fast_decode = 0;
    m->epoch = meta.petal ? meta.epoch : -1;
    m->update = meta.petal ? meta.update : -1;
    if (meta.petal && meta.source_run && !(m->source_run = strdup(meta.source_run))) {
        nn_onnx_meta_free(&meta);
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    if (meta.n_classes > 0 && meta.n_classes != k) {
        int n = meta.n_classes;
        nn_onnx_meta_free(&meta);
        return err_set(e, PT_EFORMAT, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "its metadata names %d classes but the graph has %d outputs", n, k);
    }
    if (meta.n_classes > 0)
        rc = set_names(m, k, meta_name, &meta, e);
    else
        rc = set_names(m, k, k == (int)ds_imagenet_class_count ? imagenet_name : generic_name,
                       NULL, e);
    nn_onnx_meta_free(&meta);
    return rc;
}

/* ---- a run folder ---- */

static const char *list_name(void *ctx, int c, char *buf, size_t n)
{
    (void)buf;
    (void)n;
    return ((char **)ctx)[c];
}

/* RUN/classes.txt's lines into names (malloc'd array of malloc'd strings): its count,
 * 0 when the run has no such file, < 0 on error. */
static int read_classes(const run_handle *h, char ***names, pt_err *e)
{
    if (!run_has(h, RUN_F_CLASSES))
        return 0;
    int k;
    return run_read_lines(h, RUN_F_CLASSES, names, &k, e) == PT_OK ? k : -1;
}

/* A run made before classes.txt: its checkpoint's class count, named as the trainer
 * named them (the dataset's names, the competition's 104, else "class N"). */
typedef struct ds_names {
    ds_dataset *ds;
    int k;
} ds_names;

static const char *dataset_name(void *ctx, int c, char *buf, size_t n)
{
    ds_names *d = ctx;
    if (d->ds && c < d->ds->n_classes)
        return ds_class_name(d->ds, c);
    if (d->k == (int)ds_competition_class_count)
        return ds_competition_classes[c];
    return generic_name(NULL, c, buf, n);
}

static int run_names(const run_handle *h, const char *ckpt, rm_model *m, ds_dataset *ds,
                     pt_err *e)
{
    char **names = NULL;
    int k = read_classes(h, &names, e);
    if (k < 0)
        return e->code;
    if (k > 0) {
        int rc = set_names(m, k, list_name, names, e);
        for (int c = 0; c < k; c++)
            free(names[c]);
        free(names);
        return rc;
    }
    int rc = ckpt_peek_classes(ckpt, &k, e);
    if (rc != PT_OK)
        return rc;
    if (ds && ds->n_classes == 0)
        ds_set_classes(ds, k, NULL);
    ds_names d = { ds, k };
    return set_names(m, k, dataset_name, &d, e);
}

/* The checkpoint's weights, then its moving average over them when it has one. */
static int load_weights(const char *ckpt, rm_model *m, pt_err *e)
{
    nn_model *net = m->net;
    size_t np = nn_param_count(net), nb = nn_buffer_count(net);
    ckpt_loaded l;
    int rc = ckpt_load(ckpt, nn_params(net), np, nn_buffers(net), nb, NULL, NULL, 0, &l, e);
    if (rc != PT_OK)
        return rc;
    if (l.ema && l.n_ema != np + nb) {
        ckpt_free_loaded(&l);
        return err_set(e, PT_EFORMAT, ckpt, PT_NO_RECORD, PT_NO_OFFSET,
                       "moving average of %zu values for a net of %zu", l.n_ema, np + nb);
    }
    if (l.ema) {
        memcpy(nn_params(net), l.ema, np * sizeof(float));
        memcpy(nn_buffers(net), l.ema + np, nb * sizeof(float));
        m->ema = 1;
    }
    m->epoch = (int)l.progress.epoch;
    m->update = (int)l.progress.update;
    ckpt_free_loaded(&l);
    return PT_OK;
}

/* m->weights: which epoch's weights the run's model is, and why. */
static void weights_text(const run_handle *h, const run_config *cfg, run_file kept, rm_model *m)
{
    run_outcome o;
    int has = run_read_outcome(h->dir, &o, NULL) == PT_OK;
    const char *key = run_monitor_key(cfg->monitor);
    if (kept == RUN_F_BEST && has && o.best_epoch == m->epoch)
        util_fmt(m->weights, sizeof m->weights, "the best %s, %.4f, of %d epochs", key,
                 o.best_value, o.epochs);
    else if (kept == RUN_F_BEST)
        util_fmt(m->weights, sizeof m->weights, "the best %s", key);
    else if (run_keeps_best(cfg))
        util_fmt(m->weights, sizeof m->weights, "the last: the run kept no best epoch (no %s yet)",
                 key);
    else
        util_copy(m->weights, sizeof m->weights, "the last");
}

/* The dataset for what the run folder does not say itself (an image size of 0, the
 * names of a run before classes.txt); NULL when it cannot be opened. */
static ds_dataset *run_dataset(const run_config *cfg, pt_err *e)
{
    char path[4096];
    ds_dataset *ds = NULL;
    if (rm_data_path(cfg->data, path, sizeof path, e) != PT_OK ||
        ds_open(path, cfg->image_size, &ds, e) != PT_OK)
        return NULL;
    return ds;
}

static int open_run(const char *dir, int size, rm_model *m, pt_err *e)
{
    run_handle h;
    char ckpt[4200];
    int rc = run_open(&h, dir, 0, e);
    if (rc != PT_OK)
        return rc;
    if (!run_has(&h, RUN_F_CONFIG))
        return err_set(e, PT_EUSAGE, dir, PT_NO_RECORD, PT_NO_OFFSET,
                       "not a petal-tui run folder (no %s) nor an .onnx file",
                       run_file_name(RUN_F_CONFIG));
    run_config cfg;
    cfg_defaults(&cfg);
    if ((rc = run_config_read(&h, &cfg, e)) != PT_OK)
        return rc;
    /* The weights of the epoch the run keeps as its model (--keep). */
    run_file kept = run_kept_file(&h, &cfg);
    run_path(&h, kept, ckpt, sizeof ckpt);
    if (!run_has(&h, RUN_F_CHECKPOINT))
        return err_set(e, PT_ENODATA, dir, PT_NO_RECORD, PT_NO_OFFSET,
                       "the run has no %s (it ended before its first epoch, or ran with "
                       "--checkpoint-every 0): nothing to predict with",
                       run_file_name(RUN_F_CHECKPOINT));
    if (!(m->data = strdup(cfg.data)))
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    ds_dataset *ds = NULL;
    pt_err de;
    if (cfg.image_size <= 0 || !run_has(&h, RUN_F_CLASSES))
        ds = run_dataset(&cfg, &de);
    m->image_size = size > 0 ? size : cfg.image_size;
    if (m->image_size <= 0 && (!ds || netcfg_image_size(&cfg, ds, &m->image_size, &de) != PT_OK)) {
        ds_free(ds);
        return err_set(e, PT_ENODATA, dir, PT_NO_RECORD, PT_NO_OFFSET,
                       "the run took its image size from its dataset, which cannot be read "
                       "now (%s): put the dataset back where the run's config says (data = "
                       "%s), or give predict --size",
                       de.msg, cfg.data[0] ? cfg.data : "the demo data");
    }
    if (run_model_is_onnx(cfg.model) && !util_is_file(cfg.model)) {
        ds_free(ds);
        return err_set(e, PT_EIO, cfg.model, PT_NO_RECORD, PT_NO_OFFSET,
                       "the ONNX file %s's config names (model) is not there, nor beside the "
                       "run, and the run keeps no copy (%s: runs made before it was kept): "
                       "its graph is needed to rebuild the net; put the file back at that path",
                       dir, run_file_name(RUN_F_SOURCE));
    }
    rc = run_names(&h, ckpt, m, ds, e);
    ds_free(ds);
    if (rc != PT_OK)
        return rc;
    nn_import_info info = { .norm = NN_NORM_UNIT };
    if (!(m->net = netcfg_build(&cfg, m->image_size, m->n_classes, &info, e)))
        return e->code ? e->code : PT_ENOMEM;
    m->norm = info.norm;
    if (run_model_is_onnx(cfg.model))
        util_fmt(m->norm_why, sizeof m->norm_why, "the run's --input-norm %s: %s",
                 cfg.input_norm == RUN_NORM_AUTO ? "auto" : nn_norm_name(info.norm),
                 info.norm_why);
    else
        util_copy(m->norm_why, sizeof m->norm_why, "a built-in net takes pixels in [0, 1]");
    if ((rc = load_weights(ckpt, m, e)) != PT_OK)
        return rc;
    weights_text(&h, &cfg, kept, m);
    /* Validation's decode settings, from the same builder validation uses. */
    feed *f;
    if ((rc = feed_new(&cfg, &f, e)) != PT_OK)
        return rc;
    pipe_config pc;
    feed_pipe_config(f, FEED_EVAL, NULL, 1, m->n_classes, m->image_size, 1, &pc);
    feed_free(f);
    m->crop = pc.crop;
    m->fast_decode = pc.fast_decode;
    m->tta_flip = cfg.tta == RUN_TTA_FLIP;
    m->precision = (int)cfg.precision;
    return PT_OK;
}

int rm_open(const char *path, int image_size_override, rm_model *out, pt_err *e)
{
    return rm_open_norm(path, image_size_override, RUN_NORM_AUTO, out, e);
}

int rm_open_norm(const char *path, int image_size_override, run_input_norm norm,
                 rm_model *out, pt_err *e)
{
    return rm_open_features(path, image_size_override, norm, 0, out, e);
}

int rm_open_features(const char *path, int image_size_override, run_input_norm norm,
                     int features, rm_model *out, pt_err *e)
{
    pt_err local;
    if (!e)
        e = &local;
    memset(out, 0, sizeof *out);
    out->epoch = out->update = -1;
    out->precision = RUN_PREC_FP32;
    if (!(out->source = strdup(path)))
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int rc;
    if (util_is_dir(path) && norm != RUN_NORM_AUTO)
        rc = err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                     "a run folder predicts with the input convention it trained with "
                     "(its config's input-norm): --input-norm is for an .onnx file");
    else if (util_is_dir(path) && features)
        rc = err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                     "--features takes an .onnx file: export the run first (petal-tui export "
                     "%s) and give its model.onnx", path);
    else if (util_is_dir(path))
        rc = open_run(path, image_size_override, out, e);
    else if (run_model_is_onnx(path))
        rc = open_onnx(path, image_size_override, norm, features, out, e);
    else
        rc = err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                     util_is_file(path) ? "not an .onnx file nor a run folder"
                                        : "no such run folder or file");
    if (rc != PT_OK)
        rm_close(out);
    return rc;
}

void rm_pipe_config(const rm_model *m, pipe_config *c)
{
    pipe_config_defaults(c);
    c->image_w = c->image_h = m->image_size;
    c->crop = m->crop;
    c->fast_decode = m->fast_decode;
    c->prefetch = 2;
    c->deterministic = 1;
}
