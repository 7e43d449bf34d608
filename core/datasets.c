/* datasets — the door's calls that are one call of core/data/ (the larger ones have
 * their own files: data/inspect.c, ...). */
#include "datasets.h"

#include <string.h>

#include "data/dataset.h"
#include "data/demo.h"
#include "data/imgfile.h"
#include "data/inspect.h"
#include "data/shards.h"

/* The door's plain numbers are data/'s. */
_Static_assert((int)DATASETS_TRAIN == (int)DS_TRAIN && (int)DATASETS_VAL == (int)DS_VAL &&
                   (int)DATASETS_TEST == (int)DS_TEST && (int)DATASETS_NSPLITS == (int)DS_NSPLITS,
               "the door's splits are data/dataset.h's");
_Static_assert((int)DATASETS_FIT_CROP == (int)IMF_FIT_CROP &&
                   (int)DATASETS_FIT_PAD == (int)IMF_FIT_PAD &&
                   (int)DATASETS_FIT_STRETCH == (int)IMF_FIT_STRETCH,
               "the door's fits are data/imgfile.h's");

int datasets_demo(const char *cache_root, char *path, size_t n, datasets_progress_fn progress,
                  void *ctx, pt_err *e)
{
    return demo_ensure(cache_root, path, n, progress, ctx, e);
}

int datasets_inspect(const char *path, int show_records, FILE *out, int *damaged, pt_err *e)
{
    return dsi_report(path, show_records, out, damaged, e);
}

int datasets_fit_parse(const char *name)
{
    return imf_fit_parse(name);
}

const char *datasets_fit_name(int fit)
{
    return imf_fit_name((imf_fit_mode)fit);
}

int datasets_shards_from_folders(const datasets_shards_config *c, datasets_shards_result *r,
                                 pt_err *e)
{
    shd_folder_config f = { .src_dir = c->src_dir,
                            .out_dir = c->out_dir,
                            .size = c->size,
                            .fit = c->fit,
                            .keep_aspect = c->keep_aspect,
                            .val_frac = c->val_frac,
                            .test_frac = c->test_frac,
                            .per_shard = c->per_shard,
                            .quality = c->quality,
                            .workers = c->workers,
                            .seed = c->seed,
                            .progress = c->progress,
                            .on_skip = c->on_skip,
                            .cb_ctx = c->cb_ctx };
    shd_result res;
    int rc = shd_from_folders(&f, &res, e);
    memset(r, 0, sizeof *r);
    if (rc != PT_OK)
        return rc;
    for (int s = 0; s < DS_NSPLITS; s++) {
        r->written[s] = res.written[s];
        r->shards[s] = res.shards[s];
    }
    r->skipped = res.skipped;
    memcpy(r->root, res.root, sizeof r->root);
    return PT_OK;
}

int datasets_open(const char *path, int want_size, ds_dataset **out, pt_err *e)
{
    return ds_open(path, want_size, out, e);
}

void datasets_close(ds_dataset *d)
{
    ds_free(d);
}

const char *datasets_root(const ds_dataset *d)
{
    return d->root;
}

const ds_split *datasets_split(const ds_dataset *d, int s)
{
    return &d->split[s];
}

long long datasets_split_records(const ds_dataset *d, int s)
{
    return d->split[s].count;
}

int datasets_split_shards(const ds_dataset *d, int s)
{
    return d->split[s].n_shards;
}

int datasets_class_names(const ds_dataset *d, char *const **names)
{
    int named = d->names_source == DS_NAMES_FILE && d->n_classes > 0;
    *names = named ? d->class_names : NULL;
    return named ? d->n_classes : 0;
}
