/* tbevent — TensorBoard event files (see tbevent.h): Events built and parsed with
 * protobuf-c (core/io/event.proto), framed by io/tfrecord. */
#include "io/tbevent.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/le.h"
#include "base/util.h"
#include "event.pb-c.h"
#include "io/png.h"
#include "io/tfrecord.h"

#define WRITER_NAME "petal-tui"
#define MAX_DEPTH 8     /* tbe_find_files: folders below the one given */

/* ---- writing ------------------------------------------------------------------ */

struct tbe_writer {
    tfr_writer *f;
    char path[4200];
};

/* Files this process has opened: the <n> of the name (TensorFlow counts the same way). */
static atomic_int files_made;

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int put_event(tbe_writer *w, const Tensorboard__Event *ev, pt_err *e)
{
    size_t n = tensorboard__event__get_packed_size(ev);
    uint8_t small[512], *buf = n <= sizeof small ? small : malloc(n);
    if (!buf)
        return err_set(e, PT_ENOMEM, w->path, tfr_writer_count(w->f), PT_NO_OFFSET,
                       "out of memory for an event of %zu bytes", n);
    tensorboard__event__pack(ev, buf);
    int rc = tfr_write(w->f, buf, n, e);
    if (buf != small)
        free(buf);
    return rc;
}

int tbe_writer_open(tbe_writer **out, const char *dir, pt_err *e)
{
    *out = NULL;
    int rc = util_mkdirs(dir, e);
    if (rc != PT_OK)
        return rc;
    tbe_writer *w = calloc(1, sizeof *w);
    if (!w)
        return err_set(e, PT_ENOMEM, dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    char host[256] = "localhost";
    if (gethostname(host, sizeof host) != 0 || !host[0])
        util_copy(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    for (char *c = host; *c; c++)
        if (*c == '/')
            *c = '_';
    /* TensorBoard reads a folder's files in name order: a new file must sort after
     * the ones there (a run resumed within the second would not, the count at the
     * end going from 9 to 10), so its time is at least one past theirs. */
    long long secs = (long long)time(NULL);
    char **names;
    int nn;
    if (util_list_dir(dir, UTIL_LIST_FILES, &names, &nn, NULL) == PT_OK) {
        size_t pl = strlen(TBE_FILE_PREFIX);
        for (int i = 0; i < nn; i++) {
            char *end;
            long long t = strtoll(names[i] + pl, &end, 10);
            if (!strncmp(names[i], TBE_FILE_PREFIX, pl) && end != names[i] + pl && t >= secs)
                secs = t + 1;
        }
        util_free_list(names, nn);
    }
    /* A name taken (the same second, pid and count from an earlier process): the next
     * n. Creating the file refuses one that exists, so a race only fails, never mixes. */
    do {
        int n = atomic_fetch_add(&files_made, 1);
        if (util_path(w->path, sizeof w->path, "%s/" TBE_FILE_PREFIX "%lld.%s.%ld.%d.v2", dir,
                      secs, host, (long)getpid(), n) != 0) {
            free(w);
            return err_set(e, PT_EUSAGE, dir, PT_NO_RECORD, PT_NO_OFFSET,
                           "path too long for an event file");
        }
    } while (util_is_file(w->path));
    rc = tfr_writer_open_live(&w->f, w->path, e);
    if (rc != PT_OK) {
        free(w);
        return rc;
    }
    Tensorboard__SourceMetadata src = TENSORBOARD__SOURCE_METADATA__INIT;
    src.writer = (char *)WRITER_NAME;
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.wall_time = (double)secs;
    ev.what_case = TENSORBOARD__EVENT__WHAT_FILE_VERSION;
    ev.file_version = (char *)TBE_FILE_VERSION;
    ev.source_metadata = &src;
    if ((rc = put_event(w, &ev, e)) != PT_OK) {
        tfr_writer_close(w->f, NULL);
        free(w);
        return rc;
    }
    *out = w;
    return PT_OK;
}

const char *tbe_writer_path(const tbe_writer *w) { return w->path; }

/* One summary value as an event of its own, at step, stamped now. */
static int put_value(tbe_writer *w, long long step, Tensorboard__Summary__Value *v, pt_err *e)
{
    Tensorboard__Summary__Value *vs[1] = { v };
    Tensorboard__Summary sum = TENSORBOARD__SUMMARY__INIT;
    sum.n_value = 1;
    sum.value = vs;
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.wall_time = wall_now();
    ev.step = step;
    ev.what_case = TENSORBOARD__EVENT__WHAT_SUMMARY;
    ev.summary = &sum;
    return put_event(w, &ev, e);
}

int tbe_write_scalar(tbe_writer *w, const char *tag, long long step, double value, pt_err *e)
{
    float f = (float)value;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    uint8_t content[4];
    le_put_u32(content, bits);
    Tensorboard__TensorShapeProto shape = TENSORBOARD__TENSOR_SHAPE_PROTO__INIT;
    Tensorboard__TensorProto t = TENSORBOARD__TENSOR_PROTO__INIT;
    t.dtype = TENSORBOARD__DATA_TYPE__DT_FLOAT;
    t.tensor_shape = &shape; /* rank 0: present and empty, as TensorFlow writes it */
    t.tensor_content.data = content;
    t.tensor_content.len = 4;
    Tensorboard__SummaryMetadata__PluginData pd = TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
    pd.plugin_name = (char *)"scalars";
    Tensorboard__SummaryMetadata md = TENSORBOARD__SUMMARY_METADATA__INIT;
    md.plugin_data = &pd;
    Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
    v.tag = (char *)tag;
    v.metadata = &md;
    v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_TENSOR;
    v.tensor = &t;
    return put_value(w, step, &v, e);
}

int tbe_write_image(tbe_writer *w, const char *tag, long long step, const uint8_t *rgb,
                    int width, int height, pt_err *e)
{
    uint8_t *png;
    size_t len;
    int rc = png_encode_rgb(rgb, width, height, &png, &len);
    if (rc != PT_OK)
        return err_set(e, rc, w->path, tfr_writer_count(w->f), PT_NO_OFFSET,
                       "cannot encode the %dx%d image %s as PNG", width, height, tag);
    Tensorboard__Summary__Image im = TENSORBOARD__SUMMARY__IMAGE__INIT;
    im.height = height;
    im.width = width;
    im.colorspace = 3; /* RGB */
    im.encoded_image_string.data = png;
    im.encoded_image_string.len = len;
    Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
    v.tag = (char *)tag;
    v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_IMAGE;
    v.image = &im;
    rc = put_value(w, step, &v, e);
    free(png);
    return rc;
}

int tbe_writer_flush(tbe_writer *w, pt_err *e) { return tfr_writer_flush(w->f, e); }

int tbe_writer_close(tbe_writer *w, pt_err *e)
{
    if (!w)
        return PT_OK;
    int rc = tfr_writer_close(w->f, e);
    free(w);
    return rc;
}

/* ---- reading ------------------------------------------------------------------ */

struct tbe_reader {
    tfr_reader *f;
    char path[4200];
    Tensorboard__Event *ev;     /* the event being handed out, value by value */
    size_t next_value;
    long long rec, off;         /* where ev came from */
    long long records, skipped;
    char version[64], writer[128];
    double file_time;           /* the first record's wall_time */
};

static const char *plugin_of(const Tensorboard__Summary__Value *v)
{
    if (v->metadata && v->metadata->plugin_data && v->metadata->plugin_data->plugin_name)
        return v->metadata->plugin_data->plugin_name;
    return "";
}

/* A tensor that holds one float or double: 1 with *out set, 0 when it is something
 * else (to skip), < 0 when its bytes do not fit its type. */
static int tensor_scalar(tbe_reader *r, const Tensorboard__Summary__Value *v, double *out,
                         pt_err *e)
{
    const Tensorboard__TensorProto *t = v->tensor;
    if (!t)
        return 0;
    int fl = t->dtype == TENSORBOARD__DATA_TYPE__DT_FLOAT;
    if (!fl && t->dtype != TENSORBOARD__DATA_TYPE__DT_DOUBLE)
        return 0;
    const char *plugin = plugin_of(v);
    if (plugin[0] && strcmp(plugin, "scalars") != 0)
        return 0; /* one number another plugin owns */
    long long count = 1;
    if (t->tensor_shape) {
        if (t->tensor_shape->unknown_rank)
            return 0;
        for (size_t d = 0; d < t->tensor_shape->n_dim; d++) {
            long long s = t->tensor_shape->dim[d] ? t->tensor_shape->dim[d]->size : -1;
            if (s != 1) {
                count = s; /* 0, several or unknown: not a scalar */
                break;
            }
        }
    }
    if (count != 1)
        return 0;
    size_t width = fl ? 4 : 8;
    if (fl && t->n_float_val >= 1) {
        *out = t->float_val[0];
        return 1;
    }
    if (!fl && t->n_double_val >= 1) {
        *out = t->double_val[0];
        return 1;
    }
    if (t->tensor_content.len == width) {
        if (fl) {
            uint32_t bits = le_get_u32(t->tensor_content.data);
            float f;
            memcpy(&f, &bits, 4);
            *out = f;
        } else {
            uint64_t bits = le_get_u64(t->tensor_content.data);
            double d;
            memcpy(&d, &bits, 8);
            *out = d;
        }
        return 1;
    }
    return err_set(e, PT_EPARSE, r->path, r->rec, r->off,
                   "scalar '%s' is a %s tensor with %zu bytes of tensor_content and no %s "
                   "(a value needs %zu bytes)",
                   v->tag ? v->tag : "", fl ? "DT_FLOAT" : "DT_DOUBLE", t->tensor_content.len,
                   fl ? "float_val" : "double_val", width);
}

/* Read the next record into r->ev: 1, 0 at the end, < 0 an error. */
static int next_event(tbe_reader *r, pt_err *e)
{
    if (r->ev) {
        tensorboard__event__free_unpacked(r->ev, NULL);
        r->ev = NULL;
    }
    const uint8_t *data;
    size_t len;
    int rc = tfr_next(r->f, &data, &len, e);
    if (rc <= 0)
        return rc;
    r->records++;
    r->rec = tfr_index(r->f);
    r->off = tfr_offset(r->f);
    r->next_value = 0;
    r->ev = tensorboard__event__unpack(NULL, len, data);
    if (!r->ev)
        return err_set(e, PT_EPARSE, r->path, r->rec, r->off,
                       "payload of %zu bytes is not a tensorboard.Event", len);
    return 1;
}

int tbe_open(tbe_reader **out, const char *path, pt_err *e)
{
    *out = NULL;
    tbe_reader *r = calloc(1, sizeof *r);
    if (!r)
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    util_copy(r->path, sizeof r->path, path);
    int rc = tfr_open(&r->f, path, e);
    if (rc != PT_OK) {
        free(r);
        return rc;
    }
    rc = next_event(r, e);
    if (rc == 0)
        rc = err_set(e, PT_ENODATA, path, PT_NO_RECORD, PT_NO_OFFSET,
                     "empty: not a TensorBoard event file");
    else if (rc > 0 && (r->ev->what_case != TENSORBOARD__EVENT__WHAT_FILE_VERSION ||
                        strncmp(r->ev->file_version, "brain.Event:", 12) != 0))
        rc = err_set(e, PT_EPARSE, path, r->rec, r->off,
                     "no file_version \"brain.Event:N\" first: not a TensorBoard event file");
    else if (rc < 0 && e) {
        /* The first record already fails: most likely some other kind of file. */
        size_t k = strlen(e->msg);
        snprintf(e->msg + k, sizeof e->msg - k, ": not a TensorBoard event file");
    }
    if (rc < 0) {
        tbe_close(r);
        return rc;
    }
    util_copy(r->version, sizeof r->version, r->ev->file_version);
    r->file_time = r->ev->wall_time;
    if (r->ev->source_metadata && r->ev->source_metadata->writer)
        util_copy(r->writer, sizeof r->writer, r->ev->source_metadata->writer);
    tensorboard__event__free_unpacked(r->ev, NULL);
    r->ev = NULL;
    *out = r;
    return PT_OK;
}

void tbe_close(tbe_reader *r)
{
    if (!r)
        return;
    if (r->ev)
        tensorboard__event__free_unpacked(r->ev, NULL);
    tfr_close(r->f);
    free(r);
}

const char *tbe_file_version(const tbe_reader *r) { return r->version; }
const char *tbe_source_writer(const tbe_reader *r) { return r->writer; }
double tbe_file_time(const tbe_reader *r) { return r->file_time; }
long long tbe_records(const tbe_reader *r) { return r->records; }
long long tbe_skipped(const tbe_reader *r) { return r->skipped; }

int tbe_next(tbe_reader *r, tbe_item *it, pt_err *e)
{
    for (;;) {
        const Tensorboard__Event *ev = r->ev;
        if (ev && ev->what_case == TENSORBOARD__EVENT__WHAT_SUMMARY && ev->summary &&
            r->next_value < ev->summary->n_value) {
            const Tensorboard__Summary__Value *v = ev->summary->value[r->next_value++];
            memset(it, 0, sizeof *it);
            it->tag = v->tag ? v->tag : "";
            it->step = ev->step;
            it->wall_time = ev->wall_time;
            it->record = r->rec;
            it->offset = r->off;
            if (v->value_case == TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE) {
                it->kind = TBE_SCALAR;
                it->value = v->simple_value;
                return 1;
            }
            if (v->value_case == TENSORBOARD__SUMMARY__VALUE__VALUE_TENSOR) {
                int rc = tensor_scalar(r, v, &it->value, e);
                if (rc < 0)
                    return rc;
                if (rc == 1) {
                    it->kind = TBE_SCALAR;
                    return 1;
                }
            } else if (v->value_case == TENSORBOARD__SUMMARY__VALUE__VALUE_IMAGE && v->image) {
                it->kind = TBE_IMAGE;
                it->width = v->image->width;
                it->height = v->image->height;
                it->colorspace = v->image->colorspace;
                it->image = v->image->encoded_image_string.data;
                it->image_len = v->image->encoded_image_string.len;
                return 1;
            }
            r->skipped++; /* a histogram, a graph, text, audio, ... */
            continue;
        }
        int rc = next_event(r, e);
        if (rc <= 0)
            return rc;
        if (r->ev->what_case != TENSORBOARD__EVENT__WHAT_SUMMARY || !r->ev->summary)
            r->skipped++; /* a graph, a session log, run metadata, ... */
    }
}

/* ---- finding files ------------------------------------------------------------ */

typedef struct file_list {
    char **v;
    int n, cap;
} file_list;

static int push(file_list *l, const char *path)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        char **nv = realloc(l->v, (size_t)cap * sizeof *nv);
        if (!nv)
            return PT_ENOMEM;
        l->v = nv;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(path)))
        return PT_ENOMEM;
    l->n++;
    return PT_OK;
}

static int walk(const char *dir, int depth, file_list *l, pt_err *e)
{
    char **names;
    int n, rc;
    if ((rc = util_list_dir(dir, UTIL_LIST_FILES, &names, &n, e)) != PT_OK)
        return rc;
    char path[4200];
    for (int i = 0; i < n && rc == PT_OK; i++)
        if (!strncmp(names[i], TBE_FILE_PREFIX, strlen(TBE_FILE_PREFIX)) &&
            util_path(path, sizeof path, "%s/%s", dir, names[i]) == 0)
            rc = push(l, path);
    util_free_list(names, n);
    if (rc != PT_OK || depth >= MAX_DEPTH)
        return rc == PT_OK ? PT_OK : err_set(e, rc, dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    if ((rc = util_list_dir(dir, UTIL_LIST_DIRS, &names, &n, e)) != PT_OK)
        return rc;
    for (int i = 0; i < n && rc == PT_OK; i++)
        if (util_path(path, sizeof path, "%s/%s", dir, names[i]) == 0)
            rc = walk(path, depth + 1, l, e);
    util_free_list(names, n);
    return rc;
}

int tbe_find_files(const char *path, char ***files, int *n, pt_err *e)
{
    *files = NULL;
    *n = 0;
    file_list l = { 0 };
    int rc;
    if (util_is_file(path))
        rc = push(&l, path) == PT_OK
                 ? PT_OK
                 : err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    else if (util_is_dir(path))
        rc = walk(path, 0, &l, e);
    else
        rc = err_set(e, PT_EIO, path, PT_NO_RECORD, PT_NO_OFFSET, "no such file or folder");
    if (rc == PT_OK && l.n == 0)
        rc = err_set(e, PT_ENODATA, path, PT_NO_RECORD, PT_NO_OFFSET,
                     "no TensorBoard event files (" TBE_FILE_PREFIX "*) here");
    if (rc != PT_OK) {
        util_free_list(l.v, l.n);
        return rc;
    }
    *files = l.v;
    *n = l.n;
    return PT_OK;
}
