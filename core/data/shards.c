#include "data/shards.h"
#include "data/imgfile.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/rng.h"
#include "base/util.h"
#include "io/example.h"
#include "io/tfrecord.h"

static const char *split_dirs[DS_NSPLITS] = { "train", "val", "test" };

void shd_split_counts(long long n_k, double val_frac, double test_frac, long long *n_val,
                      long long *n_test)
{
    long long v = (long long)(n_k * val_frac + 0.5);
    long long t = (long long)(n_k * test_frac + 0.5);
    if (val_frac > 0 && v == 0 && n_k >= 3)
        v = 1;
    if (test_frac > 0 && t == 0 && n_k >= 3)
        t = 1;
    /* Keep at least one training example of every class. */
    while (v + t >= n_k && (v > 0 || t > 0)) {
        if (t >= v && t > 0)
            t--;
        else
            v--;
    }
    *n_val = v;
    *n_test = t;
}

typedef struct id_slot {
    uint64_t v;
    long long i;
} id_slot;

static int cmp_id(const void *a, const void *b)
{
    const id_slot *x = a, *y = b;
    return x->v < y->v ? -1 : x->v > y->v ? 1 : (x->i < y->i ? -1 : x->i > y->i);
}

void shd_make_ids(shd_item *items, long long n, uint64_t seed)
{
    if (n <= 0)
        return;
    id_slot *s = malloc((size_t)n * sizeof *s);
    if (!s)
        return;
    uint64_t *salt = calloc((size_t)n, sizeof *salt);
    if (!salt) {
        free(s);
        return;
    }
    for (;;) {
        for (long long i = 0; i < n; i++) {
            rng r;
            rng_derive(&r, seed, 0x1d00 + salt[i], (uint64_t)i);
            s[i].v = rng_u64(&r) >> 28; /* 36 bits: nine hex digits */
            s[i].i = i;
        }
        qsort(s, (size_t)n, sizeof *s, cmp_id);
        int dups = 0;
        for (long long k = 1; k < n; k++)
            if (s[k].v == s[k - 1].v) {
                salt[s[k].i]++;
                dups = 1;
            }
        if (!dups)
            break;
    }
    for (long long k = 0; k < n; k++)
        snprintf(items[s[k].i].id, sizeof items[0].id, "%09llx", (unsigned long long)s[k].v);
    free(salt);
    free(s);
}

/* ---- parallel drawing + encoding of one shard ----------------------------------- */

typedef struct encoded {
    uint8_t *jpeg;
    size_t len;
} encoded;

typedef struct shard_job {
    const shd_writer_config *cfg;
    const shd_item *items;  /* this shard's items */
    long long n;
    encoded *out;
    atomic_llong next;
    pthread_mutex_t skip_lock;
    int oom;
} shard_job;

/* One item drawn (at size x size, or any size with draw_any) and encoded into *out. */
static int draw_encode(const shd_writer_config *cfg, const shd_item *item, jpg_codec *codec,
                       uint8_t **rgb, size_t *cap, encoded *out, int *oom, pt_err *e)
{
    int w = cfg->size, h = cfg->size;
    int rc = cfg->draw_any ? cfg->draw_any(cfg->draw_ctx, item, codec, rgb, cap, &w, &h, e)
                           : cfg->draw(cfg->draw_ctx, item, codec, *rgb, cfg->size, e);
    const uint8_t *jp;
    size_t len;
    if (rc == PT_OK)
        rc = jpg_encode(codec, *rgb, w, h, cfg->quality, &jp, &len, e);
    if (rc != PT_OK)
        return rc;
    out->jpeg = malloc(len);
    if (out->jpeg) {
        memcpy(out->jpeg, jp, len);
        out->len = len;
    } else {
        *oom = 1;
    }
    return PT_OK;
}

static void *encode_worker(void *arg)
{
    shard_job *j = arg;
    const shd_writer_config *cfg = j->cfg;
    jpg_codec *codec = jpg_codec_new();
    size_t cap = (size_t)cfg->size * cfg->size * 3;
    uint8_t *rgb = malloc(cap);
    if (!codec || !rgb) {
        j->oom = 1;
        goto out;
    }
    for (;;) {
        long long i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n)
            break;
        pt_err e;
        err_clear(&e);
        int oom = 0;
        int rc = draw_encode(cfg, &j->items[i], codec, &rgb, &cap, &j->out[i], &oom, &e);
        if (oom)
            j->oom = 1;
        if (rc != PT_OK && cfg->on_skip) {
            pthread_mutex_lock(&j->skip_lock);
            cfg->on_skip(cfg->cb_ctx, &e);
            pthread_mutex_unlock(&j->skip_lock);
        }
    }
out:
    free(rgb);
    jpg_codec_free(codec);
    return NULL;
}

static int write_shard(const char *dir, int index, int size, const shd_item *items,
                       const encoded *enc, long long n, int labeled, long long *written,
                       pt_err *e)
{
    long long good = 0;
    for (long long i = 0; i < n; i++)
        if (enc[i].jpeg)
            good++;
    *written = good;
    if (good == 0)
        return PT_OK;
    char path[4096];
    if (util_path(path, sizeof path, "%s/%02d-%dx%d-%lld.tfrec", dir, index, size, size, good) !=
        0)
        return err_set(e, PT_EUSAGE, dir, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
    tfr_writer *w;
    int rc = tfr_writer_open(&w, path, e);
    if (rc != PT_OK)
        return rc;
    for (long long i = 0; i < n && rc == PT_OK; i++) {
        if (!enc[i].jpeg)
            continue;
        ex_builder *b = ex_builder_new();
        int64_t cls = items[i].label;
        uint8_t *buf = NULL;
        size_t len = 0;
        if (!b || (labeled && ex_add_int64(b, "class", &cls, 1) != PT_OK) ||
            ex_add_bytes(b, "id", items[i].id, strlen(items[i].id)) != PT_OK ||
            ex_add_bytes(b, "image", enc[i].jpeg, enc[i].len) != PT_OK ||
            ex_serialize(b, &buf, &len) != PT_OK)
            rc = err_set(e, PT_ENOMEM, path, i, PT_NO_OFFSET, "out of memory");
        else
            rc = tfr_write(w, buf, len, e);
        free(buf);
        ex_builder_free(b);
    }
    if (rc != PT_OK) {
        tfr_writer_abort(w);
        return rc;
    }
    return tfr_writer_close(w, e);
}

/* Draws and encodes job's items on up to `workers` threads, this one included. */
static void encode_on_threads(shard_job *job, int workers)
{
    pthread_t th[64];
    int nth = workers > 64 ? 64 : workers, started = 0;
    for (int t = 1; t < nth; t++)
        if (pthread_create(&th[t], NULL, encode_worker, job) == 0)
            started = t;
        else
            break;
    encode_worker(job); /* this thread works too */
    for (int t = 1; t <= started; t++)
        pthread_join(th[t], NULL);
}

/* Writes one split's items (cnt of them, in order) as balanced shards into dir, sizes
 * differing by at most one. *done counts items over all n of the dataset, for the
 * progress callback, which may stop the writer. */
static int write_split_shards(const shd_writer_config *cfg, int s, const char *dir,
                              shd_item *mine, long long cnt, long long n, long long *done,
                              shd_result *res, pt_err *e)
{
    int rc = PT_OK;
    int workers = cfg->workers > 0 ? cfg->workers : 1;
    long long n_sh = (cnt + cfg->per_shard - 1) / cfg->per_shard;
    long long base = cnt / n_sh, extra = cnt % n_sh, at = 0;
    for (long long sh = 0; sh < n_sh && rc == PT_OK; sh++) {
        long long m = base + (sh < extra ? 1 : 0);
        shard_job job;
        memset(&job, 0, sizeof job);
        job.cfg = cfg;
        job.items = mine + at;
        job.n = m;
        job.out = calloc((size_t)m, sizeof *job.out);
        atomic_init(&job.next, 0);
        pthread_mutex_init(&job.skip_lock, NULL);
        if (!job.out) {
            rc = err_set(e, PT_ENOMEM, dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
            pthread_mutex_destroy(&job.skip_lock);
            break;
        }
        encode_on_threads(&job, workers);
        pthread_mutex_destroy(&job.skip_lock);
        long long wrote = 0;
        if (job.oom)
            rc = err_set(e, PT_ENOMEM, dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        else
            rc = write_shard(dir, res->shards[s], cfg->size, job.items, job.out, m,
                             s != DS_TEST, &wrote, e);
        for (long long i = 0; i < m; i++)
            free(job.out[i].jpeg);
        free(job.out);
        if (wrote > 0)
            res->shards[s]++;
        res->written[s] += wrote;
        res->skipped += m - wrote;
        at += m;
        *done += m;
        if (cfg->progress && cfg->progress(cfg->cb_ctx, *done, n) && rc == PT_OK)
            rc = err_set(e, PT_ESTOPPED, cfg->out_dir, PT_NO_RECORD, PT_NO_OFFSET,
                         "stopped on request");
    }
    return rc;
}

/* Split s's items, in order, into tmp/<split>/; a split with no items writes nothing. */
static int write_split(const shd_writer_config *cfg, const shd_item *items, long long n, int s,
                       const char *tmp, long long *done, shd_result *res, pt_err *e)
{
    long long cnt = 0;
    for (long long i = 0; i < n; i++)
        if (items[i].split == s)
            cnt++;
    if (cnt == 0)
        return PT_OK;
    shd_item *mine = malloc((size_t)cnt * sizeof *mine);
    if (!mine)
        return err_set(e, PT_ENOMEM, tmp, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    long long k = 0;
    for (long long i = 0; i < n; i++)
        if (items[i].split == s)
            mine[k++] = items[i];
    char dir[4096];
    int rc = PT_OK;
    if (util_path(dir, sizeof dir, "%s/%s", tmp, split_dirs[s]) != 0 ||
        (rc = util_mkdirs(dir, e)) != PT_OK) {
        free(mine);
        if (rc == PT_OK)
            rc = err_set(e, PT_EUSAGE, tmp, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
        return rc;
    }
    rc = write_split_shards(cfg, s, dir, mine, cnt, n, done, res, e);
    free(mine);
    return rc;
}

/* classes.txt in the output folder: one class name a line, in label order. */
static int write_class_names(const shd_writer_config *cfg, pt_err *e)
{
    size_t total = 0;
    for (int c = 0; c < cfg->n_classes; c++)
        total += strlen(cfg->class_names[c]) + 1;
    char *txt = malloc(total + 1), *p = txt;
    if (!txt)
        return err_set(e, PT_ENOMEM, cfg->out_dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    for (int c = 0; c < cfg->n_classes; c++)
        p += sprintf(p, "%s\n", cfg->class_names[c]);
    char path[4096];
    util_path(path, sizeof path, "%s/classes.txt", cfg->out_dir);
    int rc = util_write_file_atomic(path, txt, (size_t)(p - txt), e);
    free(txt);
    return rc;
}

/* Everything is written under a hidden temporary folder that is renamed into place at
 * the end, so a stopped or failed run leaves no half dataset behind. */
int shd_write_dataset(const shd_writer_config *cfg, const shd_item *items, long long n,
                      shd_result *res, pt_err *e)
{
    memset(res, 0, sizeof *res);
    if (cfg->size < 8 || cfg->size > 4096 || cfg->per_shard < 1 || (!cfg->draw && !cfg->draw_any))
        return err_set(e, PT_EUSAGE, cfg->out_dir, PT_NO_RECORD, PT_NO_OFFSET,
                       "bad writer settings (size %d, per shard %d)", cfg->size,
                       cfg->per_shard);
    char final[4096], tmp[4096];
    if (util_path(final, sizeof final, "%s/tfrecords-jpeg-%dx%d", cfg->out_dir, cfg->size,
                  cfg->size) != 0 ||
        util_path(tmp, sizeof tmp, "%s/.tfrecords-jpeg-%dx%d.tmp-%ld", cfg->out_dir, cfg->size,
                  cfg->size, (long)getpid()) != 0)
        return err_set(e, PT_EUSAGE, cfg->out_dir, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
    if (util_is_dir(final))
        return err_set(e, PT_EUSAGE, final, PT_NO_RECORD, PT_NO_OFFSET,
                       "already exists; remove it or choose another output folder");
    int rc = util_mkdirs(tmp, e);
    if (rc != PT_OK)
        return rc;

    long long done = 0;
    for (int s = 0; s < DS_NSPLITS && rc == PT_OK; s++)
        rc = write_split(cfg, items, n, s, tmp, &done, res, e);
    long long total = res->written[DS_TRAIN] + res->written[DS_VAL] + res->written[DS_TEST];
    if (rc == PT_OK && n > 0 && total == 0)
        rc = err_set(e, PT_ENODATA, cfg->out_dir, PT_NO_RECORD, PT_NO_OFFSET,
                     "none of the %lld images could be read (each is named above); nothing "
                     "written", n);
    else if (rc == PT_OK && res->written[DS_TRAIN] == 0 && n > 0)
        rc = err_set(e, PT_ENODATA, cfg->out_dir, PT_NO_RECORD, PT_NO_OFFSET,
                     "no training image could be read (each is named above); nothing written");
    if (rc == PT_OK && cfg->class_names && cfg->n_classes > 0)
        rc = write_class_names(cfg, e);
    if (rc == PT_OK && rename(tmp, final) != 0)
        rc = err_set(e, PT_EIO, final, PT_NO_RECORD, PT_NO_OFFSET, "cannot rename %s into place",
                     tmp);
    if (rc != PT_OK) {
        util_remove_tree(tmp);
        return rc;
    }
    snprintf(res->root, sizeof res->root, "%s", final);
    return PT_OK;
}

/* ---- from a folder of class folders --------------------------------------------- */

/* One photo fitted as the folder config says (ctx). */
static int draw_from_file(void *ctx, const shd_item *it, jpg_codec *codec, uint8_t **rgb,
                          size_t *cap, int *w, int *h, pt_err *e)
{
    const shd_folder_config *cfg = ctx;
    uint8_t *buf;
    size_t len;
    int rc = util_read_file(it->path, &buf, &len, e);
    if (rc != PT_OK)
        return rc;
    pt_err je;
    img_scratch scratch = { 0 };
    imf_fit fit = { .size = cfg->size, .mode = (imf_fit_mode)cfg->fit,
                    .keep_aspect = cfg->keep_aspect };
    rc = imf_decode_fit(codec, &scratch, buf, len, &fit, rgb, cap, w, h, &je);
    img_scratch_free(&scratch);
    free(buf);
    if (rc != PT_OK)
        return err_set(e, rc, it->path, PT_NO_RECORD, PT_NO_OFFSET, "%s; skipped", je.msg);
    return PT_OK;
}

void shd_shuffle(shd_item *v, long long n, rng *r)
{
    for (long long i = n - 1; i > 0; i--) {
        long long j = (long long)rng_below(r, (uint64_t)i + 1);
        shd_item t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* The items found so far, the path strings they point into, and the names of the
 * classes that had JPEGs (pointing into the listing of class folders). */
typedef struct gathered {
    shd_item *items;
    long long n, cap;
    char **paths;
    long long npaths, capp;
    const char **names;
    int k_used;
} gathered;

static void gathered_free(gathered *g)
{
    for (long long i = 0; i < g->npaths; i++)
        free(g->paths[i]);
    free(g->paths);
    free(g->items);
    free(g->names);
}

/* Stratified split of the class just gathered, items [first, n): seeded by its label. */
static void split_class(gathered *g, const shd_folder_config *cfg, long long first)
{
    rng r;
    rng_derive(&r, cfg->seed, 1, (uint64_t)g->k_used);
    shd_shuffle(g->items + first, g->n - first, &r);
    long long nv, nt;
    shd_split_counts(g->n - first, cfg->val_frac, cfg->test_frac, &nv, &nt);
    for (long long i = first; i < g->n; i++) {
        long long j = i - first;
        g->items[i].split = j < nv ? DS_VAL : j < nv + nt ? DS_TEST : DS_TRAIN;
    }
}

/* Adds class folder `name`'s JPEGs as items labelled with the next class number and
 * splits them; other files count as skipped, and a folder without JPEGs (or one that
 * cannot be listed) is not a class. PT_ENOMEM is the only failure. */
static int gather_class(gathered *g, const shd_folder_config *cfg, const char *name,
                        shd_result *res)
{
    char dir[4096];
    if (util_path(dir, sizeof dir, "%s/%s", cfg->src_dir, name) != 0)
        return PT_OK;
    int nf;
    char **files;
    int frc = util_list_dir(dir, UTIL_LIST_FILES, &files, &nf, NULL);
    if (frc == PT_ENOMEM)
        return PT_ENOMEM;
    if (frc != PT_OK)
        return PT_OK;
    int rc = PT_OK;
    long long first = g->n;
    for (int f = 0; f < nf && rc == PT_OK; f++) {
        if (!imf_is_image_name(files[f])) {
            res->skipped++;
            continue;
        }
        if (g->n == g->cap || g->npaths == g->capp) {
            g->cap *= 2;
            g->capp *= 2;
            shd_item *ni = realloc(g->items, (size_t)g->cap * sizeof *ni);
            char **np = realloc(g->paths, (size_t)g->capp * sizeof *np);
            if (ni)
                g->items = ni;
            if (np)
                g->paths = np;
            if (!ni || !np) {
                rc = PT_ENOMEM;
                break;
            }
        }
        char full[4096];
        util_path(full, sizeof full, "%s/%s", dir, files[f]);
        g->paths[g->npaths] = strdup(full);
        memset(&g->items[g->n], 0, sizeof g->items[g->n]);
        g->items[g->n].path = g->paths[g->npaths++];
        g->items[g->n].label = g->k_used;
        g->n++;
    }
    util_free_list(files, nf);
    if (g->n > first) {
        split_class(g, cfg, first);
        g->names[g->k_used++] = name;
    } else if (rc == PT_OK && cfg->on_skip) {
        pt_err why;
        err_set(&why, PT_ENODATA, dir, PT_NO_RECORD, PT_NO_OFFSET,
                "no .jpg, .jpeg or .png files: not a class");
        cfg->on_skip(cfg->cb_ctx, &why);
    }
    return rc;
}

/* Groups the items by split (stable) and shuffles within each, so every shard mixes
 * classes; then gives each its id. The caller frees the returned array. */
static shd_item *order_for_shards(const gathered *g, uint64_t seed)
{
    shd_item *sorted = malloc((size_t)g->n * sizeof *sorted);
    if (!sorted)
        return NULL;
    long long at = 0;
    for (int s = 0; s < DS_NSPLITS; s++) {
        long long from = at;
        for (long long i = 0; i < g->n; i++)
            if (g->items[i].split == s)
                sorted[at++] = g->items[i];
        rng r;
        rng_derive(&r, seed, 2, (uint64_t)s);
        shd_shuffle(sorted + from, at - from, &r);
    }
    shd_make_ids(sorted, g->n, seed);
    return sorted;
}

/* Writes the ordered items with the general writer, drawing each from its file. */
static int write_gathered(const shd_folder_config *cfg, const gathered *g, shd_item *sorted,
                          shd_result *res, pt_err *e)
{
    shd_writer_config w = {
        .out_dir = cfg->out_dir,
        .size = cfg->size,
        .per_shard = cfg->per_shard,
        .quality = cfg->quality,
        .workers = cfg->workers,
        .class_names = g->names,
        .n_classes = g->k_used,
        .draw_any = draw_from_file,
        .draw_ctx = (void *)cfg,
        .progress = cfg->progress,
        .on_skip = cfg->on_skip,
        .cb_ctx = cfg->cb_ctx,
    };
    /* The writer resets res; the files skipped for their names still count. */
    long long skipped_names = res->skipped;
    int rc = shd_write_dataset(&w, sorted, g->n, res, e);
    res->skipped += skipped_names;
    return rc;
}

int shd_from_folders(const shd_folder_config *cfg, shd_result *res, pt_err *e)
{
    memset(res, 0, sizeof *res);
    if (cfg->val_frac < 0 || cfg->test_frac < 0 || cfg->val_frac + cfg->test_frac >= 1)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "--val and --test must be >= 0 and leave some training data");
    if (cfg->fit < IMF_FIT_CROP || cfg->fit > IMF_FIT_STRETCH ||
        (cfg->keep_aspect && cfg->fit != IMF_FIT_CROP))
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "--keep-aspect keeps each photo's shape: it goes only with --fit crop");
    int nc;
    char **classes;
    int lrc = util_list_dir(cfg->src_dir, UTIL_LIST_DIRS, &classes, &nc, e);
    if (lrc != PT_OK)
        return lrc;

    /* Gather items class by class; folders without JPEGs are not classes. */
    gathered g = { .cap = 1024, .capp = 1024 };
    g.items = malloc((size_t)g.cap * sizeof *g.items);
    g.paths = malloc((size_t)g.capp * sizeof *g.paths);
    g.names = calloc((size_t)(nc ? nc : 1), sizeof *g.names);
    int rc = (g.items && g.paths && g.names) ? PT_OK : PT_ENOMEM;
    for (int c = 0; c < nc && rc == PT_OK; c++)
        rc = gather_class(&g, cfg, classes[c], res);
    if (rc == PT_OK && g.n == 0)
        rc = err_set(e, PT_ENODATA, cfg->src_dir, PT_NO_RECORD, PT_NO_OFFSET,
                     "no class folders with .jpg, .jpeg or .png files found (a dataset is a "
                     "folder of class folders of images)");
    else if (rc == PT_ENOMEM)
        rc = err_set(e, PT_ENOMEM, cfg->src_dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");

    if (rc == PT_OK) {
        shd_item *sorted = order_for_shards(&g, cfg->seed);
        if (!sorted) {
            rc = err_set(e, PT_ENOMEM, cfg->src_dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        } else {
            rc = write_gathered(cfg, &g, sorted, res, e);
            free(sorted);
        }
    }
    gathered_free(&g);
    util_free_list(classes, nc);
    return rc;
}
