/* inspect — what is in a shard, a folder of shards, or a dataset, as the report
 * `petal-tui inspect` prints (datasets.h's datasets_inspect).
 *
 * Reads every record, checks both CRCs, parses the tf.train.Example, and writes per
 * shard the record count (and whether the file name agrees), per group of shards the
 * feature keys with their types and first values, the image sizes found in
 * JPEG-valued features, the class counts, and every error with its file, record and
 * byte offset. Damage found is part of the report, not an error of the call.
 */
#include "data/inspect.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "data/dataset.h"
#include "data/jpeg.h"
#include "io/example.h"
#include "io/tfrecord.h"

#define MAX_KEYS 64
#define MAX_SIZES 16
#define ERRORS_SHOWN_PER_FILE 20

typedef struct key_stat {
    char key[128];
    ex_kind kind;
    long long records;      /* records holding this key */
    long long values;       /* values over all records */
    char first[96];         /* first value, printable */
    long long jpegs;        /* bytes values that are JPEGs */
} key_stat;

typedef struct size_stat {
    int w, h;
    long long n;
} size_stat;

typedef struct group {
    const char *name;
    long long records, bytes, errors;
    key_stat keys[MAX_KEYS];
    int n_keys;
    size_stat sizes[MAX_SIZES];
    int n_sizes;
    long long other_sizes, bad_images;
    long long *labels;      /* counts per class value */
    int n_labels;           /* allocated */
    long long label_max;    /* largest class seen, -1 none */
} group;

typedef struct inspect_ctx {
    FILE *out;              /* the report */
    jpg_codec *codec;
    int show_records;       /* per-record detail for the first N records of each file */
    long long total_records, total_errors;
} inspect_ctx;

static void printable(char *out, size_t n, const uint8_t *p, size_t len)
{
    int text = len > 0;
    for (size_t i = 0; i < len && text; i++)
        if (p[i] < 32 || p[i] > 126)
            text = 0;
    if (text) {
        size_t k = len < n - 3 ? len : n - 6;
        snprintf(out, n, "\"%.*s%s\"", (int)k, (const char *)p, k < len ? "..." : "");
    } else {
        snprintf(out, n, "<%zu bytes>", len);
    }
}

static void value_string(inspect_ctx *ic, const ex_example *ex, size_t i, char *out, size_t n)
{
    size_t len = ex_len_at(ex, i);
    if (len == 0) {
        snprintf(out, n, "[]");
        return;
    }
    switch (ex_kind_at(ex, i)) {
    case EX_INT64:
        snprintf(out, n, "%lld%s", (long long)ex_int64_at(ex, i, 0), len > 1 ? ", ..." : "");
        break;
    case EX_FLOAT:
        snprintf(out, n, "%.7g%s", (double)ex_float_at(ex, i, 0), len > 1 ? ", ..." : "");
        break;
    case EX_BYTES: {
        const uint8_t *p;
        size_t bl;
        ex_bytes_at(ex, i, 0, &p, &bl);
        int w, h;
        if (jpg_is_jpeg(p, bl) && jpg_header(ic->codec, p, bl, &w, &h, NULL) == PT_OK)
            snprintf(out, n, "JPEG %dx%d, %zu bytes%s", w, h, bl, len > 1 ? ", ..." : "");
        else {
            printable(out, n, p, bl);
            if (len > 1)
                strncat(out, ", ...", n - strlen(out) - 1);
        }
        break;
    }
    default:
        snprintf(out, n, "(no list)");
    }
}

static void count_label(group *g, long long v)
{
    if (v < 0 || v > 1000000)
        return;
    if (v >= g->n_labels) {
        int nn = (int)v + 1 > g->n_labels * 2 ? (int)v + 1 : g->n_labels * 2;
        if (nn < 16)
            nn = 16;
        long long *nl = realloc(g->labels, (size_t)nn * sizeof *nl);
        if (!nl)
            return;
        memset(nl + g->n_labels, 0, (size_t)(nn - g->n_labels) * sizeof *nl);
        g->labels = nl;
        g->n_labels = nn;
    }
    g->labels[v]++;
    if (v > g->label_max)
        g->label_max = v;
}

static void add_size(group *g, int w, int h)
{
    for (int i = 0; i < g->n_sizes; i++)
        if (g->sizes[i].w == w && g->sizes[i].h == h) {
            g->sizes[i].n++;
            return;
        }
    if (g->n_sizes < MAX_SIZES) {
        g->sizes[g->n_sizes].w = w;
        g->sizes[g->n_sizes].h = h;
        g->sizes[g->n_sizes].n = 1;
        g->n_sizes++;
    } else {
        g->other_sizes++;
    }
}

static void note_example(inspect_ctx *ic, group *g, const ex_example *ex)
{
    for (size_t i = 0; i < ex_count(ex); i++) {
        const char *key = ex_key(ex, i);
        key_stat *ks = NULL;
        for (int k = 0; k < g->n_keys; k++)
            if (strcmp(g->keys[k].key, key) == 0 && g->keys[k].kind == ex_kind_at(ex, i)) {
                ks = &g->keys[k];
                break;
            }
        if (!ks && g->n_keys < MAX_KEYS) {
            ks = &g->keys[g->n_keys++];
            memset(ks, 0, sizeof *ks);
            snprintf(ks->key, sizeof ks->key, "%s", key);
            ks->kind = ex_kind_at(ex, i);
            value_string(ic, ex, i, ks->first, sizeof ks->first);
        }
        if (!ks)
            continue;
        ks->records++;
        ks->values += (long long)ex_len_at(ex, i);
        if (ks->kind == EX_BYTES && ex_len_at(ex, i) > 0) {
            const uint8_t *p;
            size_t bl;
            ex_bytes_at(ex, i, 0, &p, &bl);
            if (jpg_is_jpeg(p, bl)) {
                int w, h;
                ks->jpegs++;
                if (jpg_header(ic->codec, p, bl, &w, &h, NULL) == PT_OK)
                    add_size(g, w, h);
                else
                    g->bad_images++;
            }
        }
        if (ks->kind == EX_INT64 && strcmp(key, "class") == 0 && ex_len_at(ex, i) > 0)
            count_label(g, ex_int64_at(ex, i, 0));
    }
}

static void print_error(inspect_ctx *ic, long long *shown_in_file, const pt_err *e)
{
    ic->total_errors++;
    if (++*shown_in_file <= ERRORS_SHOWN_PER_FILE)
        fprintf(ic->out, "    error: %s\n", e->msg);
}

/* Errors of one file, printed under its summary line. */
typedef struct held_errors {
    pt_err *v;
    size_t n, cap;
} held_errors;

static void hold(held_errors *h, const pt_err *e)
{
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 8;
        pt_err *nv = realloc(h->v, nc * sizeof *nv);
        if (!nv)
            return;
        h->v = nv;
        h->cap = nc;
    }
    h->v[h->n++] = *e;
}

static int has_text(const uint8_t *p, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(p + i, needle, k) == 0)
            return 1;
    return 0;
}

static void inspect_file(inspect_ctx *ic, group *g, const char *path, long long name_count)
{
    tfr_reader *r;
    pt_err e;
    if (tfr_open(&r, path, &e) != PT_OK) {
        fprintf(ic->out, "  %s\n", path);
        long long shown = 0;
        print_error(ic, &shown, &e);
        g->errors++;
        return;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    long long bytes = tfr_file_size(r);
    long long recs = 0, parsed = 0, shown = 0;
    held_errors frame = { 0 }, parse = { 0 };
    int tensorboard = 0;
    const uint8_t *p;
    size_t len;
    int rc;
    char (*detail)[600] = NULL;
    int n_detail = 0;
    if (ic->show_records > 0)
        detail = calloc((size_t)ic->show_records, sizeof *detail);
    while ((rc = tfr_next(r, &p, &len, &e)) != 0) {
        if (rc < 0) {
            hold(&frame, &e);
            continue;
        }
        recs++;
        if (recs == 1 && has_text(p, len, "brain.Event"))
            tensorboard = 1;
        ex_example *ex;
        if (ex_parse(p, len, &ex, path, tfr_index(r), tfr_offset(r), &e) != PT_OK) {
            hold(&parse, &e);
            continue;
        }
        parsed++;
        note_example(ic, g, ex);
        if (detail && n_detail < ic->show_records) {
            char *d = detail[n_detail++];
            int k = snprintf(d, 600, "    record %lld at byte %lld:", tfr_index(r), tfr_offset(r));
            for (size_t i = 0; i < ex_count(ex) && k < 560; i++) {
                char v[96];
                value_string(ic, ex, i, v, sizeof v);
                k += snprintf(d + k, (size_t)(600 - k), " %s %s[%zu] = %s;", ex_key(ex, i),
                              ex_kind_name(ex_kind_at(ex, i)), ex_len_at(ex, i), v);
            }
        }
        ex_free(ex);
    }
    tfr_close(r);

    /* Intact framing around payloads of another message type is not damage. */
    int other_type = recs > 0 && parsed == 0 && frame.n == 0;
    if (name_count >= 0 && name_count != recs) {
        pt_err ne;
        err_set(&ne, PT_EFORMAT, path, PT_NO_RECORD, PT_NO_OFFSET,
                "file name says %lld records, file holds %lld readable", name_count, recs);
        hold(&frame, &ne);
    }
    long long errs = (long long)frame.n + (other_type ? 0 : (long long)parse.n);
    fprintf(ic->out, "  %-28s %7lld records %10.1f KiB%s\n", base, recs, (double)bytes / 1024.0,
           errs ? "   DAMAGED" : "");
    if (other_type)
        fprintf(ic->out, "    CRCs good; payloads are not tf.train.Example%s\n",
               tensorboard ? " (a TensorBoard event file)" : "");
    for (int i = 0; i < n_detail; i++)
        fprintf(ic->out, "%s\n", detail[i]);
    for (size_t i = 0; i < frame.n; i++)
        print_error(ic, &shown, &frame.v[i]);
    if (!other_type)
        for (size_t i = 0; i < parse.n; i++)
            print_error(ic, &shown, &parse.v[i]);
    if (shown > ERRORS_SHOWN_PER_FILE)
        fprintf(ic->out, "    ... and %lld more errors in this file\n", shown - ERRORS_SHOWN_PER_FILE);
    free(frame.v);
    free(parse.v);
    free(detail);
    g->records += recs;
    g->bytes += bytes;
    g->errors += errs;
}

static void print_group(FILE *out, const group *g)
{
    if (g->n_keys > 0) {
        fprintf(out, "  features:\n");
        for (int k = 0; k < g->n_keys; k++) {
            const key_stat *ks = &g->keys[k];
            fprintf(out, "    %-24s %-6s in %lld/%lld records, first: %s\n", ks->key,
                   ex_kind_name(ks->kind), ks->records, g->records, ks->first);
        }
    }
    if (g->n_sizes > 0 || g->bad_images) {
        fprintf(out, "  image sizes:");
        for (int i = 0; i < g->n_sizes; i++)
            fprintf(out, " %dx%d (%lld)", g->sizes[i].w, g->sizes[i].h, g->sizes[i].n);
        if (g->other_sizes)
            fprintf(out, " and %lld of other sizes", g->other_sizes);
        if (g->bad_images)
            fprintf(out, " and %lld unreadable JPEG headers", g->bad_images);
        fprintf(out, "\n");
    }
}

/* The largest class seen over the groups, -1 none. */
static long long groups_label_max(const group *groups, int n_groups)
{
    long long max = -1;
    for (int i = 0; i < n_groups; i++)
        if (groups[i].label_max > max)
            max = groups[i].label_max;
    return max;
}

static void print_labels(FILE *out, const ds_dataset *d, group *groups, int n_groups)
{
    long long max = groups_label_max(groups, n_groups);
    if (max < 0)
        return;
    int n_classes = d && d->n_classes > max ? d->n_classes : (int)max + 1;
    fprintf(out, "\nclasses: %d", n_classes);
    if (d)
        fprintf(out, " (names %s)\n", d->names_source == DS_NAMES_FILE          ? "from classes.txt"
                                : d->names_source == DS_NAMES_COMPETITION ? "of the competition"
                                                                          : "not given");
    else
        fprintf(out, "\n");
    fprintf(out, "  %4s  %-26s", "id", "name");
    for (int i = 0; i < n_groups; i++)
        if (groups[i].label_max >= 0)
            fprintf(out, " %8s", groups[i].name);
    fprintf(out, "\n");
    for (int k = 0; k < n_classes; k++) {
        fprintf(out, "  %4d  %-26.26s", k, d ? ds_class_name(d, k) : "");
        for (int i = 0; i < n_groups; i++)
            if (groups[i].label_max >= 0)
                fprintf(out, " %8lld", k < groups[i].n_labels ? groups[i].labels[k] : 0);
        fprintf(out, "\n");
    }
}

/* Every split of dataset d, a group each; the classes grow to the largest label seen. */
static void inspect_dataset(inspect_ctx *ic, ds_dataset *d, group *groups, int *n_groups)
{
    fprintf(ic->out, "dataset: %s\n", d->root);
    if (d->image_w)
        fprintf(ic->out, "image size (folder name): %dx%d\n", d->image_w, d->image_h);
    for (int s = 0; s < DS_NSPLITS; s++) {
        const ds_split *sp = &d->split[s];
        if (!sp->dir)
            continue;
        group *g = &groups[(*n_groups)++];
        g->name = sp->name;
        fprintf(ic->out, "\nsplit %s: %d shards in %s\n", sp->name, sp->n_shards, sp->dir);
        for (int i = 0; i < sp->n_shards; i++)
            inspect_file(ic, g, sp->shards[i].path,
                         sp->shards[i].count_from_name ? sp->shards[i].count : -1);
        print_group(ic->out, g);
        fprintf(ic->out, "  %s: %lld records%s\n", sp->name, g->records, g->errors ? ", with errors" : "");
    }
    long long max = groups_label_max(groups, *n_groups);
    if (max >= 0 && d->n_classes <= max)
        ds_set_classes(d, (int)max + 1, NULL);
}

/* A plain folder of shard files, as one group; PT_OK, or PT_ENODATA when it holds none
 * (PT_ENOMEM when it cannot be listed for want of memory), with e filled. */
static int inspect_folder(inspect_ctx *ic, const char *path, group *g, pt_err *e)
{
    char **names;
    int n;
    /* Entries of any type, dot names too, whose names look like TFRecord files;
     * a folder that cannot be opened holds none. */
    if (util_list_dir(path, UTIL_LIST_ALL, &names, &n, e) == PT_ENOMEM)
        return PT_ENOMEM;
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (ds_is_shard_name(names[i]) || strstr(names[i], "tfevents"))
            names[kept++] = names[i];
        else
            free(names[i]);
    }
    n = kept;
    if (n == 0) {
        util_free_list(names, n);
        return err_set(e, PT_ENODATA, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "no dataset and no TFRecord files here");
    }
    g->name = "records";
    fprintf(ic->out, "folder: %s (%d TFRecord files)\n", path, n);
    for (int i = 0; i < n; i++) {
        char full[4096];
        util_path(full, sizeof full, "%s/%s", path, names[i]);
        inspect_file(ic, g, full, ds_count_from_name(names[i]));
    }
    util_free_list(names, n);
    print_group(ic->out, g);
    return PT_OK;
}

/* The class table and the totals; frees the groups' label counts. 1 when damage was
 * found, else 0. */
static int print_totals(FILE *out, const ds_dataset *d, group *groups, int n_groups)
{
    print_labels(out, d, groups, n_groups);
    long long total = 0, errors = 0;
    for (int i = 0; i < n_groups; i++) {
        total += groups[i].records;
        errors += groups[i].errors;
        free(groups[i].labels);
    }
    fprintf(out, "\ntotal: %lld records\n", total);
    if (errors)
        fprintf(out, "damage: %lld errors (CRC, truncation or parse), listed above\n", errors);
    return errors ? 1 : 0;
}

/* The group of a file, or of a plain folder of shards, or every split of a dataset,
 * after the header lines of what path is; PT_OK or an error with e filled (nothing
 * printed then). */
static int inspect_any(inspect_ctx *ic, const char *path, int show, group *groups,
                       int *n_groups, ds_dataset **d, pt_err *e)
{
    if (util_is_file(path)) {
        ic->show_records = show >= 0 ? show : 3;
        groups[0].name = "records";
        fprintf(ic->out, "file: %s\n", path);
        inspect_file(ic, &groups[0], path, ds_count_from_name(path));
        print_group(ic->out, &groups[0]);
        *n_groups = 1;
        return PT_OK;
    }
    pt_err ignored;
    if (util_is_dir(path) && ds_open(path, 0, d, &ignored) == PT_OK) {
        ic->show_records = show >= 0 ? show : 0;
        inspect_dataset(ic, *d, groups, n_groups);
        return PT_OK;
    }
    if (util_is_dir(path)) {
        ic->show_records = show >= 0 ? show : 0;
        int rc = inspect_folder(ic, path, &groups[0], e);
        if (rc == PT_OK)
            *n_groups = 1;
        return rc;
    }
    return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET, "no such file or folder");
}

int dsi_report(const char *path, int show_records, FILE *out, int *damaged, pt_err *e)
{
    *damaged = 0;
    char clean[4096];
    snprintf(clean, sizeof clean, "%s", path);
    for (size_t k = strlen(clean); k > 1 && clean[k - 1] == '/'; k--)
        clean[k - 1] = '\0';
    inspect_ctx ic = { 0 };
    ic.out = out;
    ic.codec = jpg_codec_new();
    group groups[DS_NSPLITS + 1];
    memset(groups, 0, sizeof groups);
    for (int i = 0; i <= DS_NSPLITS; i++)
        groups[i].label_max = -1;
    int n_groups = 0;
    ds_dataset *d = NULL;
    int rc = inspect_any(&ic, clean, show_records, groups, &n_groups, &d, e);
    if (rc == PT_OK)
        *damaged = print_totals(out, d, groups, n_groups);
    ds_free(d);
    jpg_codec_free(ic.codec);
    return rc;
}
