#include "data/demo.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/rng.h"
#include "base/util.h"
#include "data/flowers.h"
#include "data/shards.h"
#include "base/crc32c.h"

extern const char demo_params_text[];

int demo_params_get(demo_params *p, pt_err *e)
{
    memset(p, 0, sizeof *p);
    char *text = strdup(demo_params_text);
    if (!text)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int line_no = 0, rc = PT_OK;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line && rc == PT_OK;
         line = strtok_r(NULL, "\n", &save)) {
        line_no++;
        while (isspace((unsigned char)*line))
            line++;
        if (*line == '#' || *line == '\0')
            continue;
        char *eq = strchr(line, '=');
        if (!eq) {
            rc = err_set(e, PT_EFORMAT, "assets/demo-dataset.conf", line_no, PT_NO_OFFSET,
                         "expected key = value");
            break;
        }
        *eq = '\0';
        char *key = line, *val = eq + 1;
        for (char *k = eq - 1; k >= key && isspace((unsigned char)*k); k--)
            *k = '\0';
        while (isspace((unsigned char)*val))
            val++;
        if (!strcmp(key, "seed"))
            p->seed = strtoull(val, NULL, 10);
        else if (!strcmp(key, "image_size"))
            p->image_size = atoi(val);
        else if (!strcmp(key, "per_shard"))
            p->per_shard = atoi(val);
        else if (!strcmp(key, "jpeg_quality"))
            p->quality = atoi(val);
        else if (!strcmp(key, "val_fraction"))
            p->val_fraction = atof(val);
        else if (!strcmp(key, "test_per_class"))
            p->test_per_class = atoi(val);
        else if (!strcmp(key, "class_counts")) {
            char *end;
            for (long v = strtol(val, &end, 10); end != val && p->n_classes < 64;
                 v = strtol(val, &end, 10)) {
                p->counts[p->n_classes++] = (int)v;
                val = end;
            }
        } else {
            rc = err_set(e, PT_EFORMAT, "assets/demo-dataset.conf", line_no, PT_NO_OFFSET,
                         "unknown key '%s'", key);
        }
    }
    free(text);
    if (rc == PT_OK && (p->image_size < FLW_SIZE_MIN || p->image_size > FLW_SIZE_MAX ||
                        p->n_classes != flw_class_count() || p->per_shard < 1 ||
                        p->quality < 1 || p->quality > 100))
        rc = err_set(e, PT_EFORMAT, "assets/demo-dataset.conf", PT_NO_RECORD, PT_NO_OFFSET,
                     "bad demo parameters (%d class counts for %d classes, size %d)",
                     p->n_classes, flw_class_count(), p->image_size);
    return rc;
}

int demo_cache_root(char *out, size_t n)
{
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && *xdg)
        return util_path(out, n, "%s/petal-tui", xdg);
    const char *home = getenv("HOME");
    if (home && *home)
        return util_path(out, n, "%s/.cache/petal-tui", home);
    return util_path(out, n, "/tmp/petal-tui-cache-%ld", (long)getuid());
}

static int draw_flower(void *ctx, const shd_item *it, jpg_codec *codec, uint8_t *rgb, int size,
                       pt_err *e)
{
    (void)ctx;
    (void)codec;
    (void)e;
    flw_render(it->label, it->seed, size, rgb);
    return PT_OK;
}

int demo_ensure(const char *cache_root, char *path, size_t n, demo_progress_fn progress,
                void *ctx, pt_err *e)
{
    demo_params p;
    int rc = demo_params_get(&p, e);
    if (rc != PT_OK)
        return rc;
    char root[4096];
    if (cache_root)
        snprintf(root, sizeof root, "%s", cache_root);
    else if (demo_cache_root(root, sizeof root) != 0)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "cache path too long");
    uint32_t version = FLW_RENDER_VERSION;
    uint32_t sum = crc32c_extend(crc32c(demo_params_text, strlen(demo_params_text)), &version,
                                 sizeof version);
    if (util_path(path, n, "%s/demo-flowers-%08x", root, sum) != 0)
        return err_set(e, PT_EUSAGE, root, PT_NO_RECORD, PT_NO_OFFSET, "cache path too long");
    char marker[4200];
    util_path(marker, sizeof marker, "%s/complete", path);
    if (util_is_file(marker))
        return PT_OK;

    /* Build in a private folder, then rename it into place. */
    char tmp[4200];
    util_path(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    util_remove_tree(tmp);
    if ((rc = util_mkdirs(tmp, e)) != PT_OK)
        return rc;

    long long total = 0;
    for (int k = 0; k < p.n_classes; k++)
        total += p.counts[k] + p.test_per_class;
    shd_item *items = calloc((size_t)total, sizeof *items);
    if (!items)
        return err_set(e, PT_ENOMEM, tmp, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    long long at = 0;
    for (int k = 0; k < p.n_classes; k++) {
        long long nv, nt;
        shd_split_counts(p.counts[k], p.val_fraction, 0.0, &nv, &nt);
        for (int i = 0; i < p.counts[k] + p.test_per_class; i++, at++) {
            items[at].label = k;
            items[at].split = i < nv ? DS_VAL : i < p.counts[k] ? DS_TRAIN : DS_TEST;
            /* Each image's variation is its own: (seed, class, index). */
            rng r;
            rng_derive(&r, p.seed, (uint64_t)k, (uint64_t)i);
            items[at].seed = rng_u64(&r);
        }
    }
    /* Shuffle each split so shards mix the classes, as the competition's do. */
    shd_item *sorted = malloc((size_t)total * sizeof *sorted);
    if (!sorted) {
        free(items);
        return err_set(e, PT_ENOMEM, tmp, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    at = 0;
    for (int s = 0; s < DS_NSPLITS; s++) {
        long long from = at;
        for (long long i = 0; i < total; i++)
            if (items[i].split == s)
                sorted[at++] = items[i];
        rng r;
        rng_derive(&r, p.seed, 0x5f, (uint64_t)s);
        shd_shuffle(sorted + from, at - from, &r);
    }
    free(items);
    shd_make_ids(sorted, total, p.seed);

    const char *names[64];
    for (int k = 0; k < p.n_classes; k++)
        names[k] = flw_class_name(k);
    int cores = util_cores();
    shd_writer_config w = {
        .out_dir = tmp, .size = p.image_size, .per_shard = p.per_shard, .quality = p.quality,
        .workers = cores, .class_names = names, .n_classes = p.n_classes,
        .draw = draw_flower, .progress = progress, .cb_ctx = ctx,
    };
    shd_result res;
    rc = shd_write_dataset(&w, sorted, total, &res, e);
    free(sorted);
    if (rc == PT_OK) {
        util_path(marker, sizeof marker, "%s/complete", tmp);
        rc = util_write_file_atomic(marker, "demo dataset complete\n", 22, e);
    }
    if (rc == PT_OK && rename(tmp, path) != 0) {
        /* Another process finished first: use its copy. */
        util_remove_tree(tmp);
        util_path(marker, sizeof marker, "%s/complete", path);
        if (!util_is_file(marker))
            rc = err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET,
                         "cannot move the demo dataset into place");
        return rc;
    }
    if (rc != PT_OK)
        util_remove_tree(tmp);
    return rc;
}
