/* feed — pipelines, previews and validation images of a run (see feed.h). */
#include "data/feed.h"

#include <stdlib.h>
#include <string.h>

#include "data/augment.h"
#include "data/jpeg.h"
#include "io/example.h"
#include "io/tfrecord.h"

struct feed {
    run_config cfg;
    aug_chain *aug;             /* NULL when the spec has no ops ("none", "") */
};

int feed_new(const run_config *cfg, feed **out, pt_err *e)
{
    *out = NULL;
    feed *s = calloc(1, sizeof *s);
    if (!s)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    s->cfg = *cfg;
    int rc = aug_parse(cfg->augment, &s->aug, e);
    if (rc != PT_OK) {
        free(s);
        return rc;
    }
    if (aug_count(s->aug) == 0) {
        /* No hook at all, rather than one that does nothing per batch. */
        aug_free(s->aug);
        s->aug = NULL;
    }
    *out = s;
    return PT_OK;
}

void feed_free(feed *s)
{
    if (!s)
        return;
    aug_free(s->aug);
    free(s);
}

void feed_pipe_config(const feed *s, feed_use use, const ds_split *split, int labeled,
                      int n_classes, int img, int batch_size, pipe_config *c)
{
    const run_config *cfg = &s->cfg;
    pipe_config_defaults(c);
    c->split = split;
    c->labeled = labeled;
    c->n_classes = n_classes;
    c->image_w = c->image_h = img;
    c->batch_size = batch_size;
    c->seed = cfg->seed;
    switch (use) {
    case FEED_TRAIN:
        c->drop_remainder = 1;
        c->repeat = 1;
        c->shuffle_buffer = cfg->shuffle_buffer;
        c->shuffle_shards = 1;
        c->workers = cfg->workers > 0 ? cfg->workers : 2;
        c->prefetch = cfg->prefetch > 0 ? cfg->prefetch : 4;
        c->deterministic = cfg->deterministic;
        c->stop_on_error = cfg->stop_on_data_error;
        /* Training sees all of a record wider than its input (shards --keep-aspect), a
         * square window at a new place each time; validation keeps the centred one. */
        c->crop_anywhere = 1;
        if (s->aug) {
            c->augment = aug_pipe_hook;
            c->augment_ctx = s->aug;
            c->augment_ws_free = aug_pipe_ws_free;
            c->augment_whole = aug_mixes(s->aug);
        }
        break;
    case FEED_EVAL:
        c->interleave = 1; /* file order: predictions line up with the split */
        c->workers = cfg->workers > 0 ? cfg->workers : 2;
        c->prefetch = 2;
        c->deterministic = 1;
        c->stop_on_error = cfg->stop_on_data_error;
        break;
    case FEED_PREVIEW:
        /* Small and quick: a bounded shuffle so the pictures vary, one worker. The
         * chain is applied by feed_preview itself, which needs the images before it. */
        c->shuffle_buffer = 256;
        c->shuffle_shards = 1;
        c->workers = 1;
        c->prefetch = 1;
        break;
    }
}

int feed_preview(const feed *s, const ds_dataset *ds, int img, int n, uint64_t count,
                 run_preview *p, pt_err *e)
{
    pipe_config c;
    /* Names come later than previews may: any label in range is fine here. */
    feed_pipe_config(s, FEED_PREVIEW, &ds->split[DS_TRAIN], 1, RUN_MAX_CLASSES, img, n, &c);
    c.seed = s->cfg.seed + count * 7919;
    pipeline *pl;
    int rc = pipe_create(&c, &pl, e);
    if (rc != PT_OK)
        return rc;
    batch *b;
    rc = pipe_next(pl, &b, e);
    if (rc != 1) {
        pipe_destroy(pl);
        return rc == 0 ? err_set(e, PT_ENODATA, ds->root, PT_NO_RECORD, PT_NO_OFFSET,
                                 "no readable training images")
                       : rc;
    }
    size_t bytes = (size_t)b->n * img * img * 3;
    memset(p, 0, sizeof *p);
    p->n = b->n;
    p->h = p->w = img;
    p->original = malloc(bytes);
    p->augmented = malloc(bytes);
    p->label = malloc((size_t)b->n * sizeof *p->label);
    if (!p->original || !p->augmented || !p->label) {
        pipe_release(pl, b);
        pipe_destroy(pl);
        run_preview_free(p);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    memcpy(p->original, b->images, bytes);
    if (s->aug) {
        aug_workspace *ws = aug_workspace_new(b->n, img, img);
        b->seq = count;
        if (ws)
            aug_apply(s->aug, b, s->cfg.seed, ws);
        aug_workspace_free(ws);
    }
    memcpy(p->augmented, b->images, bytes);
    for (int i = 0; i < b->n; i++)
        p->label[i] = batch_dominant_label(b, i);
    pipe_release(pl, b);
    pipe_destroy(pl);
    return PT_OK;
}

int feed_val_image(const ds_dataset *ds, batch_src src, run_val_item *item, pt_err *e)
{
    if (src.shard < 0 || src.shard >= ds->split[DS_VAL].n_shards)
        return err_set(e, PT_ENODATA, NULL, PT_NO_RECORD, PT_NO_OFFSET, "no such shard");
    const char *path = ds->split[DS_VAL].shards[src.shard].path;
    tfr_reader *r;
    int rc = tfr_open(&r, path, e);
    if (rc != PT_OK)
        return rc;
    const uint8_t *p;
    size_t len;
    rc = tfr_read_at(r, src.offset, src.record, &p, &len, e);
    if (rc != 1) {
        tfr_close(r);
        return rc < 0 ? rc : err_set(e, PT_ETRUNC, path, src.record, src.offset, "record vanished");
    }
    ex_example *ex;
    if ((rc = ex_parse(p, len, &ex, path, src.record, src.offset, e)) != PT_OK) {
        tfr_close(r);
        return rc;
    }
    const uint8_t *jp;
    size_t jl;
    rc = ex_get_bytes(ex, "image", &jp, &jl, e);
    if (rc == PT_OK) {
        item->rgb = malloc((size_t)item->h * item->w * 3);
        jpg_codec *c = jpg_codec_new();
        if (!item->rgb || !c)
            rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        else
            rc = jpg_decode_into(c, jp, jl, item->rgb, item->w, item->h, 1, 0, NULL, NULL, e);
        jpg_codec_free(c);
    }
    ex_free(ex);
    tfr_close(r);
    if (rc != PT_OK)
        run_val_item_free(item);
    return rc;
}
