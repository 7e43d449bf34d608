#include "data/dataset.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/util.h"
#include "data/jpeg.h"
#include "io/example.h"
#include "io/tfrecord.h"

static const char *split_names[DS_NSPLITS] = { "train", "val", "test" };

int ds_is_shard_name(const char *name)
{
    static const char *exts[] = { ".tfrec", ".tfrecord", ".tfrecords", ".record" };
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
        size_t k = strlen(exts[i]);
        if (n > k && strcmp(name + n - k, exts[i]) == 0)
            return 1;
    }
    return 0;
}

long long ds_count_from_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base)
        return -1;
    /* digits right before the extension, preceded by '-' */
    const char *p = dot;
    while (p > base && isdigit((unsigned char)p[-1]))
        p--;
    if (p == dot || p == base || p[-1] != '-')
        return -1;
    /* "name-00000-of-00004.tfrecord" numbers shards; it does not count records. */
    if (p - base >= 4 && strncmp(p - 4, "-of-", 4) == 0)
        return -1;
    long long v = 0;
    for (const char *q = p; q < dot; q++) {
        v = v * 10 + (*q - '0');
        if (v > (1LL << 40))
            return -1;
    }
    return v;
}

static const char *split_dir_name(const char *root, ds_split_id id, char *buf, size_t n)
{
    static const char *alias[DS_NSPLITS][3] = {
        { "train", "training", NULL },
        { "val", "valid", "validation" },
        { "test", NULL, NULL },
    };
    for (int i = 0; i < 3 && alias[id][i]; i++) {
        if (util_path(buf, n, "%s/%s", root, alias[id][i]) == 0 && util_is_dir(buf))
            return buf;
    }
    return NULL;
}

/* How many of path's folders (dirs) hold .jpg, .jpeg or .png files: what `petal-tui
 * shards` takes, given where shards were wanted. */
static int image_class_folders(const char *path, char **dirs, int nd)
{
    int n = 0;
    for (int i = 0; i < nd; i++) {
        char sub[4096], **files;
        int nf;
        if (util_path(sub, sizeof sub, "%s/%s", path, dirs[i]) != 0 ||
            util_list_dir(sub, UTIL_LIST_FILES, &files, &nf, NULL) != PT_OK)
            continue;
        int images = 0;
        for (int k = 0; k < nf && !images; k++) {
            const char *dot = strrchr(files[k], '.');
            images = dot && (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg") ||
                             !strcasecmp(dot, ".png"));
        }
        util_free_list(files, nf);
        n += images;
    }
    return n;
}

/* The error for a folder that holds no dataset: one of class folders of photos is told
 * the command that makes shards of it. */
static int no_dataset(const char *path, char **dirs, int nd, pt_err *e)
{
    int photos = image_class_folders(path, dirs, nd);
    if (photos > 0)
        return err_set(e, PT_ENODATA, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "a folder of %d class folders of images, not shards: make shards of it "
                       "first (petal-tui shards %s OUT_DIR [--size 192]), then give --data "
                       "OUT_DIR",
                       photos, path);
    return err_set(e, PT_ENODATA, path, PT_NO_RECORD, PT_NO_OFFSET,
                   "no dataset here: expected train/ val/ test/ folders of .tfrec shards, or "
                   "tfrecords-jpeg-SIZE/ folders holding them");
}

static int has_splits(const char *dir)
{
    char buf[4096];
    for (int s = 0; s < DS_NSPLITS; s++)
        if (split_dir_name(dir, (ds_split_id)s, buf, sizeof buf))
            return 1;
    return 0;
}

/* "tfrecords-jpeg-192x192" -> 192, 192. */
static int parse_size_dir(const char *name, int *w, int *h)
{
    const char *pre = "tfrecords-jpeg-";
    size_t k = strlen(pre);
    if (strncmp(name, pre, k) != 0)
        return 0;
    return sscanf(name + k, "%dx%d", w, h) == 2 && *w > 0 && *h > 0;
}

static int count_scan(const char *path, long long *count, pt_err *e)
{
    tfr_reader *r;
    int rc = tfr_open(&r, path, e);
    if (rc != PT_OK)
        return rc;
    long long off;
    size_t len;
    long long n = 0;
    while ((rc = tfr_skip(r, &off, &len, e)) == 1)
        n++;
    tfr_close(r);
    *count = n;
    /* A damaged tail still leaves the records before it countable; the pipeline
     * reports the damage itself when it reads there. */
    return PT_OK;
}

static int load_split(ds_split *s, const char *dir, pt_err *e)
{
    s->dir = strdup(dir);
    char **files;
    int nf;
    int rc = util_list_dir(dir, UTIL_LIST_FILES, &files, &nf, e);
    if (rc != PT_OK)
        return rc;
    s->shards = calloc((size_t)(nf ? nf : 1), sizeof *s->shards);
    if (!s->dir || !s->shards) {
        util_free_list(files, nf);
        return err_set(e, PT_ENOMEM, dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    for (int i = 0; i < nf; i++) {
        if (!ds_is_shard_name(files[i]))
            continue;
        ds_shard *sh = &s->shards[s->n_shards];
        char full[4096];
        if (util_path(full, sizeof full, "%s/%s", dir, files[i]) != 0)
            continue;
        sh->path = strdup(full);
        long long c = ds_count_from_name(files[i]);
        if (c >= 0) {
            sh->count = c;
            sh->count_from_name = 1;
        } else {
            rc = count_scan(full, &sh->count, e);
            if (rc != PT_OK) {
                util_free_list(files, nf);
                free(sh->path);
                return rc;
            }
        }
        s->count += sh->count;
        s->n_shards++;
    }
    util_free_list(files, nf);
    return PT_OK;
}

static int read_classes_txt(ds_dataset *d, char ***names, int *n)
{
    *names = NULL;
    *n = 0;
    char path[4096];
    const char *cands[2] = { "%s/classes.txt", "%s/../classes.txt" };
    for (int i = 0; i < 2; i++) {
        if (util_path(path, sizeof path, cands[i], d->root) != 0 || !util_is_file(path))
            continue;
        uint8_t *data;
        size_t len;
        if (util_read_file(path, &data, &len, NULL) != PT_OK)
            continue;
        int cap = 128, cnt = 0;
        char **list = malloc((size_t)cap * sizeof *list);
        char *save = NULL;
        for (char *line = strtok_r((char *)data, "\n", &save); line && list;
             line = strtok_r(NULL, "\n", &save)) {
            size_t k = strlen(line);
            while (k > 0 && (line[k - 1] == '\r' || line[k - 1] == ' '))
                line[--k] = '\0';
            if (cnt == cap) {
                cap *= 2;
                char **nl = realloc(list, (size_t)cap * sizeof *nl);
                if (!nl)
                    break;
                list = nl;
            }
            list[cnt++] = strdup(line);
        }
        free(data);
        *names = list;
        *n = cnt;
        return 1;
    }
    return 0;
}

/* Set n_classes class names: from file_names (the have_file lines of classes.txt,
 * nf of them, still owned by the caller) when there are enough, else the
 * competition's names when the count matches, else "class K". */
static int set_classes(ds_dataset *d, int n_classes, int have_file, char **file_names, int nf,
                       pt_err *e)
{
    if (n_classes <= 0)
        return err_set(e, PT_ENODATA, d->root, PT_NO_RECORD, PT_NO_OFFSET, "no classes");
    for (int i = 0; i < d->n_classes; i++)
        free(d->class_names[i]);
    free(d->class_names);
    d->class_names = calloc((size_t)n_classes, sizeof *d->class_names);
    if (!d->class_names)
        return err_set(e, PT_ENOMEM, d->root, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    d->n_classes = n_classes;

    if (have_file && nf >= n_classes) {
        d->names_source = DS_NAMES_FILE;
        for (int i = 0; i < n_classes; i++)
            d->class_names[i] = strdup(file_names[i]);
    } else if (n_classes == (int)ds_competition_class_count) {
        d->names_source = DS_NAMES_COMPETITION;
        for (int i = 0; i < n_classes; i++)
            d->class_names[i] = strdup(ds_competition_classes[i]);
    } else {
        d->names_source = DS_NAMES_GENERATED;
        for (int i = 0; i < n_classes; i++) {
            char buf[32];
            snprintf(buf, sizeof buf, "class %d", i);
            d->class_names[i] = strdup(buf);
        }
    }
    for (int i = 0; i < n_classes; i++)
        if (!d->class_names[i])
            return err_set(e, PT_ENOMEM, d->root, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    return PT_OK;
}

int ds_set_classes(ds_dataset *d, int n_classes, pt_err *e)
{
    char **file_names;
    int nf;
    int have_file = read_classes_txt(d, &file_names, &nf);
    int rc = set_classes(d, n_classes, have_file, file_names, nf, e);
    if (have_file)
        util_free_list(file_names, nf);
    return rc;
}

const char *ds_class_name(const ds_dataset *d, int k)
{
    if (k >= 0 && k < d->n_classes && d->class_names)
        return d->class_names[k];
    return "?";
}

int ds_open(const char *path, int want_size, ds_dataset **out, pt_err *e)
{
    *out = NULL;
    if (!util_is_dir(path))
        return err_set(e, PT_ENODATA, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "not a folder (a dataset is a folder of train/val/test shards)");
    ds_dataset *d = calloc(1, sizeof *d);
    if (!d)
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    for (int s = 0; s < DS_NSPLITS; s++)
        d->split[s].name = split_names[s];

    char root[4096];
    int rc = PT_OK;
    if (has_splits(path)) {
        snprintf(root, sizeof root, "%s", path);
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        parse_size_dir(base, &d->image_w, &d->image_h);
    } else {
        /* Look for tfrecords-jpeg-WxH folders and choose one. */
        char **dirs;
        int nd;
        rc = util_list_dir(path, UTIL_LIST_DIRS, &dirs, &nd, e);
        if (rc != PT_OK) {
            ds_free(d);
            return rc;
        }
        int best = -1, bw = 0, bh = 0;
        for (int i = 0; i < nd; i++) {
            int w, h;
            char sub[4096];
            if (!parse_size_dir(dirs[i], &w, &h) ||
                util_path(sub, sizeof sub, "%s/%s", path, dirs[i]) != 0 || !has_splits(sub))
                continue;
            int better;
            if (best < 0)
                better = 1;
            else if (want_size <= 0)
                better = w < bw; /* smallest: fastest to read */
            else if (bw == want_size)
                better = 0;
            else if (w == want_size)
                better = 1;
            else if (w >= want_size && (bw < want_size || w < bw))
                better = 1;
            else if (w < want_size && bw < want_size && w > bw)
                better = 1;
            else
                better = 0;
            if (better) {
                best = i;
                bw = w;
                bh = h;
            }
        }
        if (best < 0) {
            rc = no_dataset(path, dirs, nd, e);
            util_free_list(dirs, nd);
            ds_free(d);
            return rc;
        }
        snprintf(root, sizeof root, "%s/%s", path, dirs[best]);
        d->image_w = bw;
        d->image_h = bh;
        util_free_list(dirs, nd);
    }
    d->root = strdup(root);
    for (int s = 0; s < DS_NSPLITS && rc == PT_OK; s++) {
        char dir[4096];
        if (split_dir_name(root, (ds_split_id)s, dir, sizeof dir))
            rc = load_split(&d->split[s], dir, e);
    }
    if (rc == PT_OK && d->split[DS_TRAIN].count + d->split[DS_VAL].count +
                               d->split[DS_TEST].count == 0)
        rc = err_set(e, PT_ENODATA, root, PT_NO_RECORD, PT_NO_OFFSET,
                     "the split folders hold no records");
    if (rc == PT_OK) {
        /* classes.txt gives the class count up front when present. */
        char **names;
        int nn;
        if (read_classes_txt(d, &names, &nn)) {
            if (nn > 0)
                rc = set_classes(d, nn, 1, names, nn, e);
            util_free_list(names, nn);
        }
    }
    if (rc != PT_OK) {
        ds_free(d);
        return rc;
    }
    *out = d;
    return PT_OK;
}

void ds_free(ds_dataset *d)
{
    if (!d)
        return;
    for (int s = 0; s < DS_NSPLITS; s++) {
        for (int i = 0; i < d->split[s].n_shards; i++)
            free(d->split[s].shards[i].path);
        free(d->split[s].shards);
        free(d->split[s].dir);
    }
    for (int i = 0; i < d->n_classes; i++)
        free(d->class_names[i]);
    free(d->class_names);
    free(d->root);
    free(d);
}

/* Count one bad record and pass it to on_error; 1 when that asks to stop. */
static int note_bad(long long *bad, ds_error_fn on_error, void *ctx, const pt_err *err)
{
    (*bad)++;
    return on_error && on_error(ctx, err);
}

int ds_scan_labels(const ds_split *s, int32_t **labels, long long *n, long long *bad,
                   ds_error_fn on_error, ds_stop_fn stop_fn, void *ctx, pt_err *e)
{
    *labels = NULL;
    *n = 0;
    *bad = 0;
    long long cap = s->count > 0 ? s->count : 64;
    int32_t *out = malloc((size_t)cap * sizeof *out);
    if (!out)
        return err_set(e, PT_ENOMEM, s->dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    long long cnt = 0;
    int stop = 0;
    pt_err re;
    err_clear(&re);
    for (int i = 0; i < s->n_shards && !stop; i++) {
        tfr_reader *r;
        if (tfr_open(&r, s->shards[i].path, &re) != PT_OK) {
            if (note_bad(bad, on_error, ctx, &re))
                stop = 1;
            continue;
        }
        const uint8_t *p;
        size_t len;
        int rc;
        while (!stop && (rc = tfr_next(r, &p, &len, &re)) != 0) {
            if (stop_fn && (tfr_index(r) & 255) == 0 && stop_fn(ctx)) {
                err_set(&re, PT_ESTOPPED, s->shards[i].path, tfr_index(r), tfr_offset(r),
                        "stopped on request");
                stop = 1;
                break;
            }
            if (rc < 0) {
                if (note_bad(bad, on_error, ctx, &re))
                    stop = 1;
                continue;
            }
            long long rec = tfr_index(r), off = tfr_offset(r);
            ex_example *ex;
            int64_t cls = 0;
            if (ex_parse(p, len, &ex, s->shards[i].path, rec, off, &re) != PT_OK) {
                if (note_bad(bad, on_error, ctx, &re))
                    stop = 1;
                continue;
            }
            pt_err fe;
            err_clear(&fe);
            if (ex_get_int64(ex, "class", &cls, &fe) != PT_OK || cls < 0 || cls > INT32_MAX) {
                if (fe.code == PT_OK || cls < 0 || cls > INT32_MAX)
                    err_set(&re, PT_ECLASS, s->shards[i].path, rec, off,
                            "class %lld is negative or too large", (long long)cls);
                else
                    err_set(&re, PT_EFEATURE, s->shards[i].path, rec, off, "%s", fe.msg);
                ex_free(ex);
                if (note_bad(bad, on_error, ctx, &re))
                    stop = 1;
                continue;
            }
            ex_free(ex);
            if (cnt == cap) {
                cap *= 2;
                int32_t *no = realloc(out, (size_t)cap * sizeof *no);
                if (!no) {
                    tfr_close(r);
                    free(out);
                    return err_set(e, PT_ENOMEM, s->dir, PT_NO_RECORD, PT_NO_OFFSET,
                                   "out of memory");
                }
                out = no;
            }
            out[cnt++] = (int32_t)cls;
        }
        tfr_close(r);
    }
    *labels = out;
    *n = cnt;
    if (stop) {
        /* Stopped at a bad record: that record's error is the answer. */
        if (e)
            *e = re;
        return re.code != PT_OK ? re.code : PT_EIO;
    }
    return PT_OK;
}

int ds_probe_image_size(const ds_split *s, int *w, int *h, pt_err *e)
{
    jpg_codec *c = jpg_codec_new();
    if (!c)
        return err_set(e, PT_ENOMEM, s->dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int found = 0;
    for (int i = 0; i < s->n_shards && !found; i++) {
        tfr_reader *r;
        if (tfr_open(&r, s->shards[i].path, NULL) != PT_OK)
            continue;
        const uint8_t *p;
        size_t len;
        int rc;
        for (int k = 0; k < 16 && !found && (rc = tfr_next(r, &p, &len, NULL)) != 0; k++) {
            if (rc < 0)
                continue;
            ex_example *ex;
            if (ex_parse(p, len, &ex, NULL, 0, 0, NULL) != PT_OK)
                continue;
            const uint8_t *img;
            size_t ilen;
            if (ex_get_bytes(ex, "image", &img, &ilen, NULL) == PT_OK &&
                jpg_header(c, img, ilen, w, h, NULL) == PT_OK)
                found = 1;
            ex_free(ex);
        }
        tfr_close(r);
    }
    jpg_codec_free(c);
    if (!found)
        return err_set(e, PT_ENODATA, s->dir, PT_NO_RECORD, PT_NO_OFFSET,
                       "no readable image found in the first records");
    return PT_OK;
}
