#include "data/shards.h"

#include <ctype.h>
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

static void *encode_worker(void *arg)
{
    shard_job *j = arg;
    const shd_writer_config *cfg = j->cfg;
    jpg_codec *codec = jpg_codec_new();
    uint8_t *rgb = malloc((size_t)cfg->size * cfg->size * 3);
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
        int rc = cfg->draw(cfg->draw_ctx, &j->items[i], codec, rgb, cfg->size, &e);
        const uint8_t *jp;
        size_t len;
        if (rc == PT_OK)
            rc = jpg_encode(codec, rgb, cfg->size, cfg->size, cfg->quality, &jp, &len, &e);
        if (rc == PT_OK) {
            j->out[i].jpeg = malloc(len);
            if (j->out[i].jpeg) {
                memcpy(j->out[i].jpeg, jp, len);
                j->out[i].len = len;
            } else {
                j->oom = 1;
            }
        } else if (cfg->on_skip) {
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

int shd_write_dataset(const shd_writer_config *cfg, const shd_item *items, long long n,
                      shd_result *res, pt_err *e)
{
    memset(res, 0, sizeof *res);
    if (cfg->size < 8 || cfg->size > 4096 || cfg->per_shard < 1 || !cfg->draw)
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
    int workers = cfg->workers > 0 ? cfg->workers : 1;
    for (int s = 0; s < DS_NSPLITS && rc == PT_OK; s++) {
        /* This split's items, in order. */
        long long cnt = 0;
        for (long long i = 0; i < n; i++)
            if (items[i].split == s)
                cnt++;
        if (cnt == 0)
            continue;
        shd_item *mine = malloc((size_t)cnt * sizeof *mine);
        if (!mine) {
            rc = err_set(e, PT_ENOMEM, tmp, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
            break;
        }
        long long k = 0;
        for (long long i = 0; i < n; i++)
            if (items[i].split == s)
                mine[k++] = items[i];
        char dir[4096];
        if (util_path(dir, sizeof dir, "%s/%s", tmp, split_dirs[s]) != 0 ||
            (rc = util_mkdirs(dir, e)) != PT_OK) {
            free(mine);
            if (rc == PT_OK)
                rc = err_set(e, PT_EUSAGE, tmp, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
            break;
        }
        /* Balanced shards: sizes differ by at most one. */
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
            pthread_t th[64];
            int nth = workers > 64 ? 64 : workers, started = 0;
            for (int t = 1; t < nth; t++)
                if (pthread_create(&th[t], NULL, encode_worker, &job) == 0)
                    started = t;
                else
                    break;
            encode_worker(&job); /* this thread works too */
            for (int t = 1; t <= started; t++)
                pthread_join(th[t], NULL);
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
            done += m;
            if (cfg->progress && cfg->progress(cfg->cb_ctx, done, n) && rc == PT_OK)
                rc = err_set(e, PT_ESTOPPED, cfg->out_dir, PT_NO_RECORD, PT_NO_OFFSET,
                             "stopped on request");
        }
        free(mine);
    }

    if (rc == PT_OK && cfg->class_names && cfg->n_classes > 0) {
        size_t total = 0;
        for (int c = 0; c < cfg->n_classes; c++)
            total += strlen(cfg->class_names[c]) + 1;
        char *txt = malloc(total + 1), *p = txt;
        if (!txt) {
            rc = err_set(e, PT_ENOMEM, cfg->out_dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        } else {
            for (int c = 0; c < cfg->n_classes; c++)
                p += sprintf(p, "%s\n", cfg->class_names[c]);
            char path[4096];
            util_path(path, sizeof path, "%s/classes.txt", cfg->out_dir);
            rc = util_write_file_atomic(path, txt, (size_t)(p - txt), e);
            free(txt);
        }
    }
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

static int is_jpeg_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot)
        return 0;
    char ext[8] = "";
    size_t k = 0;
    for (const char *q = dot + 1; *q && k < sizeof ext - 1; q++)
        ext[k++] = (char)tolower((unsigned char)*q);
    ext[k] = '\0';
    return strcmp(ext, "jpg") == 0 || strcmp(ext, "jpeg") == 0;
}

static int draw_from_file(void *ctx, const shd_item *it, jpg_codec *codec, uint8_t *rgb,
                          int size, pt_err *e)
{
    (void)ctx;
    uint8_t *buf;
    size_t len;
    int rc = util_read_file(it->path, &buf, &len, e);
    if (rc != PT_OK)
        return rc;
    pt_err je;
    rc = jpg_decode_into(codec, buf, len, rgb, size, size, 1, 0, NULL, NULL, &je);
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

int shd_from_folders(const shd_folder_config *cfg, shd_result *res, pt_err *e)
{
    memset(res, 0, sizeof *res);
    if (cfg->val_frac < 0 || cfg->test_frac < 0 || cfg->val_frac + cfg->test_frac >= 1)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "--val and --test must be >= 0 and leave some training data");
    int nc;
    char **classes;
    int lrc = util_list_dir(cfg->src_dir, UTIL_LIST_DIRS, &classes, &nc, e);
    if (lrc != PT_OK)
        return lrc;

    /* Gather items class by class; folders without JPEGs are not classes. */
    long long cap = 1024, n = 0;
    shd_item *items = malloc((size_t)cap * sizeof *items);
    char **paths = NULL;
    long long npaths = 0, capp = 1024;
    paths = malloc((size_t)capp * sizeof *paths);
    const char **names = calloc((size_t)(nc ? nc : 1), sizeof *names);
    int k_used = 0;
    int rc = (items && paths && names) ? PT_OK : PT_ENOMEM;
    for (int c = 0; c < nc && rc == PT_OK; c++) {
        char dir[4096];
        if (util_path(dir, sizeof dir, "%s/%s", cfg->src_dir, classes[c]) != 0)
            continue;
        int nf;
        char **files;
        int frc = util_list_dir(dir, UTIL_LIST_FILES, &files, &nf, NULL);
        if (frc == PT_ENOMEM) {
            rc = PT_ENOMEM;
            break;
        }
        if (frc != PT_OK)
            continue;
        long long first = n;
        for (int f = 0; f < nf && rc == PT_OK; f++) {
            if (!is_jpeg_name(files[f])) {
                res->skipped++;
                continue;
            }
            if (n == cap || npaths == capp) {
                cap *= 2;
                capp *= 2;
                shd_item *ni = realloc(items, (size_t)cap * sizeof *ni);
                char **np = realloc(paths, (size_t)capp * sizeof *np);
                if (ni)
                    items = ni;
                if (np)
                    paths = np;
                if (!ni || !np) {
                    rc = PT_ENOMEM;
                    break;
                }
            }
            char full[4096];
            util_path(full, sizeof full, "%s/%s", dir, files[f]);
            paths[npaths] = strdup(full);
            memset(&items[n], 0, sizeof items[n]);
            items[n].path = paths[npaths++];
            items[n].label = k_used;
            n++;
        }
        util_free_list(files, nf);
        if (n > first) {
            /* Stratified split of this class. */
            rng r;
            rng_derive(&r, cfg->seed, 1, (uint64_t)k_used);
            shd_shuffle(items + first, n - first, &r);
            long long nv, nt;
            shd_split_counts(n - first, cfg->val_frac, cfg->test_frac, &nv, &nt);
            for (long long i = first; i < n; i++) {
                long long j = i - first;
                items[i].split = j < nv ? DS_VAL : j < nv + nt ? DS_TEST : DS_TRAIN;
            }
            names[k_used++] = classes[c];
        }
    }
    if (rc == PT_OK && n == 0)
        rc = err_set(e, PT_ENODATA, cfg->src_dir, PT_NO_RECORD, PT_NO_OFFSET,
                     "no class folders with .jpg/.jpeg files found");
    else if (rc == PT_ENOMEM)
        rc = err_set(e, PT_ENOMEM, cfg->src_dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");

    if (rc == PT_OK) {
        /* Group by split (stable) and shuffle within each, so every shard mixes classes. */
        shd_item *sorted = malloc((size_t)n * sizeof *sorted);
        if (!sorted) {
            rc = err_set(e, PT_ENOMEM, cfg->src_dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        } else {
            long long at = 0;
            for (int s = 0; s < DS_NSPLITS; s++) {
                long long from = at;
                for (long long i = 0; i < n; i++)
                    if (items[i].split == s)
                        sorted[at++] = items[i];
                rng r;
                rng_derive(&r, cfg->seed, 2, (uint64_t)s);
                shd_shuffle(sorted + from, at - from, &r);
            }
            shd_make_ids(sorted, n, cfg->seed);
            shd_writer_config w = {
                .out_dir = cfg->out_dir,
                .size = cfg->size,
                .per_shard = cfg->per_shard,
                .quality = cfg->quality,
                .workers = cfg->workers,
                .class_names = names,
                .n_classes = k_used,
                .draw = draw_from_file,
                .progress = cfg->progress,
                .on_skip = cfg->on_skip,
                .cb_ctx = cfg->cb_ctx,
            };
            long long skipped_names = res->skipped;
            rc = shd_write_dataset(&w, sorted, n, res, e);
            res->skipped += skipped_names;
            free(sorted);
        }
    }
    for (long long i = 0; i < npaths; i++)
        free(paths[i]);
    free(paths);
    free(items);
    free(names);
    util_free_list(classes, nc);
    return rc;
}
