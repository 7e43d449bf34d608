/* TensorBoard event files (io/tbevent): what the writer writes is read back exactly
 * by the project's reader and, record by record, by an independent decoder
 * (`protoc --decode=tensorboard.Event` against core/io/event.proto); the layout is
 * the one in the Keras-written files of ../shared/data; those files read too;
 * damage is reported with the file, the record and its byte offset. */
#include "tests/t.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/le.h"
#include "base/util.h"
#include "event.pb-c.h"
#include "io/png.h"
#include "io/tbevent.h"
#include "io/tfrecord.h"
#include "tests/fixtures.h"

#define KERAS_RUN "tf-written-tfrecords/tfevents-petals/20250321-152714"
#define KERAS_TRAIN KERAS_RUN "/train/events.out.tfevents.1742585234.DESKTOP-25C2BHD.22116.0.v2"

/* The single event file in dir (a static buffer), or NULL when there is not one. */
static const char *only_file(const char *dir)
{
    static char path[4300];
    char **files;
    int n;
    if (tbe_find_files(dir, &files, &n, NULL) != PT_OK)
        return NULL;
    int one = n == 1;
    if (one)
        util_copy(path, sizeof path, files[0]);
    util_free_list(files, n);
    return one ? path : NULL;
}

/* A small picture with structure in every channel. */
static void picture(uint8_t *rgb, int w, int h)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = rgb + ((size_t)y * w + x) * 3;
            p[0] = (uint8_t)(x * 255 / (w - 1));
            p[1] = (uint8_t)(y * 255 / (h - 1));
            p[2] = (uint8_t)((x + y) % 2 ? 200 : 30);
        }
}

static const struct {
    const char *tag;
    long long step;
    double value;
} SCALARS[] = {
    { "epoch_loss", 0, 2.302585 },  { "epoch_sparse_categorical_accuracy", 0, 0.1 },
    { "epoch_loss", 1, 1.75 },      { "batch_loss", 123456789012LL, -0.5 },
    { "epoch_learning_rate", 2, 3e-4 }, { "epoch_f1_score", 3, 1.0 / 3.0 },
};
#define N_SCALARS (int)(sizeof SCALARS / sizeof SCALARS[0])

/* Writes SCALARS, then a 7x5 picture as "preview" at step 3, into dir/train. */
static const char *write_sample(const char *dir, double *t0, double *t1)
{
    static char sub[4200];
    util_path(sub, sizeof sub, "%s/train", dir);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    *t0 = (double)ts.tv_sec;
    tbe_writer *w;
    pt_err e;
    if (tbe_writer_open(&w, sub, &e) != PT_OK) {
        printf("  %s\n", e.msg);
        return NULL;
    }
    int rc = PT_OK;
    for (int i = 0; i < N_SCALARS && rc == PT_OK; i++)
        rc = tbe_write_scalar(w, SCALARS[i].tag, SCALARS[i].step, SCALARS[i].value, &e);
    uint8_t rgb[7 * 5 * 3];
    picture(rgb, 7, 5);
    if (rc == PT_OK)
        rc = tbe_write_image(w, "preview", 3, rgb, 7, 5, &e);
    if (tbe_writer_close(w, rc == PT_OK ? &e : NULL) != PT_OK || rc != PT_OK) {
        printf("  %s\n", e.msg);
        return NULL;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    *t1 = (double)ts.tv_sec + 1;
    return only_file(sub);
}

TEST(tbevent_written_scalars_and_images_read_back_exactly)
{
    const char *dir = t_tmpdir();
    double t0, t1;
    const char *path = write_sample(dir, &t0, &t1);
    T_REQUIRE(path);
    /* events.out.tfevents.<seconds>.<host>.<pid>.<n>.v2 */
    const char *name = strrchr(path, '/') + 1;
    long long secs = 0;
    char host[256] = "";
    long pid = 0;
    int n = -1, used = 0;
    T_REQUIRE(sscanf(name, "events.out.tfevents.%lld.%255[^/]%n", &secs, host, &used) == 2);
    char *dot = strrchr(host, '.'); /* the host name may hold dots: pid, n and v2 end it */
    T_REQUIRE(dot && !strcmp(dot, ".v2"));
    *dot = '\0';
    T_REQUIRE((dot = strrchr(host, '.')) != NULL);
    n = atoi(dot + 1);
    *dot = '\0';
    T_REQUIRE((dot = strrchr(host, '.')) != NULL);
    pid = atol(dot + 1);
    *dot = '\0';
    char me[256] = "";
    gethostname(me, sizeof me);
    T_EQ_STR(host, me);
    T_EQ_INT(pid, getpid());
    T_CHECK(n >= 0);
    T_CHECKF(secs >= (long long)t0 && secs <= (long long)t1, "%lld not in [%.0f, %.0f]", secs, t0,
             t1);

    tbe_reader *r;
    pt_err e;
    T_REQUIRE(tbe_open(&r, path, &e) == PT_OK);
    T_EQ_STR(tbe_file_version(r), "brain.Event:2");
    T_EQ_STR(tbe_source_writer(r), "petal-tui");
    tbe_item it;
    for (int i = 0; i < N_SCALARS; i++) {
        T_REQUIRE(tbe_next(r, &it, &e) == 1);
        T_EQ_INT(it.kind, TBE_SCALAR);
        T_EQ_STR(it.tag, SCALARS[i].tag);
        T_EQ_INT(it.step, SCALARS[i].step);
        T_CHECKF(it.value == (double)(float)SCALARS[i].value, "%s: %.9g written, %.9g read",
                 it.tag, SCALARS[i].value, it.value);
        T_CHECKF(it.wall_time >= t0 && it.wall_time <= t1, "wall_time %.3f", it.wall_time);
        T_EQ_INT(it.record, i + 1);
    }
    T_REQUIRE(tbe_next(r, &it, &e) == 1);
    T_EQ_INT(it.kind, TBE_IMAGE);
    T_EQ_STR(it.tag, "preview");
    T_EQ_INT(it.step, 3);
    T_EQ_INT(it.width, 7);
    T_EQ_INT(it.height, 5);
    T_EQ_INT(it.colorspace, 3);
    uint8_t *rgb, want[7 * 5 * 3];
    int w, h;
    T_REQUIRE(png_decode_rgb(it.image, it.image_len, &rgb, &w, &h, &e) == PT_OK);
    picture(want, 7, 5);
    T_CHECK(w == 7 && h == 5 && memcmp(rgb, want, sizeof want) == 0);
    free(rgb);
    T_EQ_INT(tbe_next(r, &it, &e), 0);
    T_EQ_INT(tbe_records(r), N_SCALARS + 2);
    T_EQ_INT(tbe_skipped(r), 0);
    tbe_close(r);

    /* The run folder finds the file in its train/ subfolder. */
    char **files;
    T_REQUIRE(tbe_find_files(dir, &files, &n, &e) == PT_OK);
    T_EQ_INT(n, 1);
    T_EQ_STR(files[0], path);
    util_free_list(files, n);
    T_EQ_INT(tbe_find_files(t_tmpdir(), &files, &n, &e), PT_ENODATA);
    T_CHECKF(strstr(e.msg, "no TensorBoard event files") != NULL, "%s", e.msg);
}

/* A live file: what was flushed is there for a reader while the writer goes on, and
 * a second writer in the same folder makes a second file (a resumed run). */
TEST(tbevent_flushed_records_are_readable_while_the_file_grows)
{
    const char *dir = t_tmpdir();
    tbe_writer *w;
    pt_err e;
    T_REQUIRE(tbe_writer_open(&w, dir, &e) == PT_OK);
    for (int i = 0; i < 3; i++)
        T_REQUIRE(tbe_write_scalar(w, "batch_loss", i + 1, 1.0 / (i + 1), &e) == PT_OK);
    T_REQUIRE(tbe_writer_flush(w, &e) == PT_OK);
    tbe_reader *r;
    tbe_item it;
    T_REQUIRE(tbe_open(&r, tbe_writer_path(w), &e) == PT_OK);
    int got = 0, rc;
    while ((rc = tbe_next(r, &it, &e)) == 1)
        got++;
    T_EQ_INT(rc, 0);
    T_EQ_INT(got, 3);
    tbe_close(r);
    T_REQUIRE(tbe_write_scalar(w, "batch_loss", 4, 0.25, &e) == PT_OK);
    T_REQUIRE(tbe_writer_close(w, &e) == PT_OK);

    tbe_writer *w2;
    T_REQUIRE(tbe_writer_open(&w2, dir, &e) == PT_OK);
    T_REQUIRE(tbe_write_scalar(w2, "batch_loss", 5, 0.2, &e) == PT_OK);
    T_REQUIRE(tbe_writer_close(w2, &e) == PT_OK);
    char **files;
    int n;
    T_REQUIRE(tbe_find_files(dir, &files, &n, &e) == PT_OK);
    T_EQ_INT(n, 2);
    /* Files opened one after the other within a second still sort in that order,
     * also when the process's file count passes 9 -> 10. */
    const char *many = t_tmpdir();
    char last[4300] = "";
    for (int i = 0; i < 12; i++) {
        T_REQUIRE(tbe_writer_open(&w2, many, &e) == PT_OK);
        T_CHECKF(strcmp(tbe_writer_path(w2), last) > 0, "%s sorts before %s",
                 tbe_writer_path(w2), last);
        util_copy(last, sizeof last, tbe_writer_path(w2));
        T_REQUIRE(tbe_writer_close(w2, &e) == PT_OK);
    }
    long long step = 0;
    for (int f = 0; f < n; f++) {
        T_REQUIRE(tbe_open(&r, files[f], &e) == PT_OK);
        while ((rc = tbe_next(r, &it, &e)) == 1)
            T_EQ_INT(it.step, ++step); /* in name order: the older file first */
        T_EQ_INT(rc, 0);
        tbe_close(r);
    }
    T_EQ_INT(step, 5);
    util_free_list(files, n);
}

/* ---- the independent decoder ---------------------------------------------------- */

/* The payloads of the first `limit` records of the event file at path into
 * dir/rNNN.pb; their count, or -1. */
static int split_records(const char *path, const char *dir, int limit)
{
    tfr_reader *r;
    if (tfr_open(&r, path, NULL) != PT_OK)
        return -1;
    const uint8_t *data;
    size_t len;
    int n = 0, rc = 0;
    while (n < limit && (rc = tfr_next(r, &data, &len, NULL)) == 1) {
        char out[4300];
        util_path(out, sizeof out, "%s/r%03d.pb", dir, n++);
        FILE *f = fopen(out, "wb");
        if (!f || fwrite(data, 1, len, f) != len)
            rc = -1;
        if (f)
            fclose(f);
        if (rc < 0)
            break;
    }
    tfr_close(r);
    return rc < 0 ? -1 : n;
}

/* protoc's text of record k (split into dir), malloc'd; NULL when protoc fails. */
static char *protoc_decode(const char *dir, int k, int raw)
{
    char cmd[8192], *out;
    if (raw)
        util_path(cmd, sizeof cmd, "protoc --decode_raw < '%s/r%03d.pb'", dir, k);
    else
        util_path(cmd, sizeof cmd,
                  "protoc --proto_path=core/io --decode=tensorboard.Event core/io/event.proto "
                  "< '%s/r%03d.pb'",
                  dir, k);
    if (t_run(cmd, &out) != 0) {
        printf("  %s: %s\n", cmd, out);
        free(out);
        return NULL;
    }
    return out;
}

/* The bytes of protoc's text-format string that starts after `key: "` in text
 * (C escapes: \NNN octal, \n \r \t \" \' \\); their count, or -1 when absent. */
static int protoc_bytes(const char *text, const char *key, uint8_t *out, int cap)
{
    char want[128];
    snprintf(want, sizeof want, "%s: \"", key);
    const char *p = strstr(text, want);
    if (!p)
        return -1;
    int n = 0;
    for (p += strlen(want); *p && *p != '"' && n < cap; p++) {
        if (*p != '\\') {
            out[n++] = (uint8_t)*p;
            continue;
        }
        p++;
        if (*p >= '0' && *p <= '7') {
            int v = 0;
            for (int d = 0; d < 3 && *p >= '0' && *p <= '7'; d++, p++)
                v = v * 8 + (*p - '0');
            p--;
            out[n++] = (uint8_t)v;
        } else {
            out[n++] = (uint8_t)(*p == 'n' ? '\n' : *p == 'r' ? '\r' : *p == 't' ? '\t' : *p);
        }
    }
    return n;
}

static float le_float(const uint8_t *b)
{
    uint32_t bits = le_get_u32(b);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

TEST(tbevent_written_files_decode_with_protoc)
{
    T_NEED_TOOL("protoc");
    const char *dir = t_tmpdir();
    double t0, t1;
    const char *path = write_sample(dir, &t0, &t1);
    T_REQUIRE(path);
    T_EQ_INT(split_records(path, dir, 100), N_SCALARS + 2);

    char *txt = protoc_decode(dir, 0, 0);
    T_REQUIRE(txt);
    T_CHECKF(strstr(txt, "file_version: \"brain.Event:2\"") &&
                 strstr(txt, "source_metadata {\n  writer: \"petal-tui\"\n}"),
             "%s", txt);
    free(txt);
    for (int i = 0; i < N_SCALARS; i++) {
        T_REQUIRE((txt = protoc_decode(dir, i + 1, 0)) != NULL);
        char want[256];
        snprintf(want, sizeof want, "tag: \"%s\"", SCALARS[i].tag);
        T_CHECKF(strstr(txt, want) != NULL, "no %s in\n%s", want, txt);
        snprintf(want, sizeof want, "step: %lld\n", SCALARS[i].step);
        T_CHECKF((SCALARS[i].step == 0) == (strstr(txt, "step: ") == NULL) &&
                     (SCALARS[i].step == 0 || strstr(txt, want)),
                 "step %lld in\n%s", SCALARS[i].step, txt);
        T_CHECKF(strstr(txt, "dtype: DT_FLOAT") && strstr(txt, "tensor_shape {\n      }") &&
                     strstr(txt, "plugin_name: \"scalars\""),
                 "%s", txt);
        uint8_t b[16];
        int nb = protoc_bytes(txt, "tensor_content", b, sizeof b);
        T_EQ_INT(nb, 4);
        if (nb == 4)
            T_CHECKF(le_float(b) == (float)SCALARS[i].value, "%s: protoc's bytes say %.9g",
                     SCALARS[i].tag, (double)le_float(b));
        double wall = 0;
        const char *wt = strstr(txt, "wall_time: ");
        T_CHECK(wt && sscanf(wt, "wall_time: %lf", &wall) == 1 && wall >= t0 && wall <= t1);
        free(txt);
    }
    T_REQUIRE((txt = protoc_decode(dir, N_SCALARS + 1, 0)) != NULL);
    T_CHECKF(strstr(txt, "tag: \"preview\"") && strstr(txt, "step: 3\n") &&
                 strstr(txt, "image {\n      height: 5\n      width: 7\n      colorspace: 3\n"),
             "%s", txt);
    uint8_t png[4096];
    int n = protoc_bytes(txt, "encoded_image_string", png, sizeof png);
    T_REQUIRE(n > 8);
    uint8_t *rgb, want[7 * 5 * 3];
    int w, h;
    pt_err e;
    T_REQUIRE(png_decode_rgb(png, (size_t)n, &rgb, &w, &h, &e) == PT_OK);
    picture(want, 7, 5);
    T_CHECK(w == 7 && h == 5 && memcmp(rgb, want, sizeof want) == 0);
    free(rgb);
    free(txt);
}

/* protoc's text of a record with the values that differ between runs masked: the
 * wall time, the writer's name, the scalar's bytes. */
static void mask(char *txt)
{
    const char *keys[] = { "wall_time: ", "writer: ", "tensor_content: " };
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        for (char *p = txt; (p = strstr(p, keys[k])) != NULL;) {
            p += strlen(keys[k]);
            char *end = strchr(p, '\n');
            if (!end)
                end = p + strlen(p);
            memset(p, '#', (size_t)(end - p));
            p = end;
        }
    /* The masked values' lengths differ too: squeeze runs of '#' to one. */
    char *o = txt;
    for (char *p = txt; *p; p++)
        if (!(*p == '#' && p > txt && p[-1] == '#'))
            *o++ = *p;
    *o = '\0';
}

TEST(tbevent_layout_matches_the_keras_written_files)
{
    T_NEED_DATA();
    T_NEED_TOOL("protoc");
    const char *dir = t_tmpdir(), *kdir = t_tmpdir();
    double t0, t1;
    const char *path = write_sample(dir, &t0, &t1);
    T_REQUIRE(path);
    T_REQUIRE(split_records(path, dir, 100) > 0);
    T_REQUIRE(split_records(t_data(KERAS_TRAIN), kdir, 60) == 60);
    /* Keras's records 0 (file_version), 3 (epoch_loss at step 0), 54 (epoch_loss at
     * step 1); ours 0, 1 (epoch_loss at 0), 3 (epoch_loss at 1). */
    const int keras[3] = { 0, 3, 54 }, ours[3] = { 0, 1, 3 };
    for (int k = 0; k < 3; k++) {
        char *a = protoc_decode(kdir, keras[k], 0), *b = protoc_decode(dir, ours[k], 0);
        T_REQUIRE(a && b);
        mask(a);
        mask(b);
        T_CHECKF(strcmp(a, b) == 0, "Keras's record %d:\n%s\nours:\n%s", keras[k], a, b);
        free(a);
        free(b);
        /* On the wire too: the fields in the same order (protoc --decode_raw prints
         * them as they come; the 4 value bytes may read as anything, so compare up to
         * the tensor's content). */
        a = protoc_decode(kdir, keras[k], 1);
        b = protoc_decode(dir, ours[k], 1);
        T_REQUIRE(a && b);
        char *ca = strstr(a, "      4:"), *cb = strstr(b, "      4:");
        if (ca && cb)
            *ca = *cb = '\0';
        mask(a); /* decode_raw shows the wall time as "1: 0x..." */
        mask(b);
        for (char *p = a; (p = strstr(p, "1: 0x")) != NULL; p += 5)
            memset(p + 5, 'x', 16);
        for (char *p = b; (p = strstr(p, "1: 0x")) != NULL; p += 5)
            memset(p + 5, 'x', 16);
        char *wa = strstr(a, "10 {"), *wb = strstr(b, "10 {"); /* the writer's name */
        if (wa && wb)
            *wa = *wb = '\0';
        T_CHECKF(strcmp(a, b) == 0, "on the wire, Keras's record %d:\n%s\nours:\n%s", keras[k], a,
                 b);
        free(a);
        free(b);
    }
}

TEST(tbevent_reads_the_keras_written_files)
{
    T_NEED_DATA();
    T_NEED_TOOL("protoc");
    tbe_reader *r;
    pt_err e;
    T_REQUIRE(tbe_open(&r, t_data(KERAS_TRAIN), &e) == PT_OK);
    T_EQ_STR(tbe_file_version(r), "brain.Event:2");
    T_EQ_STR(tbe_source_writer(r), "tensorflow.core.util.events_writer");
    tbe_item it;
    int rc, scalars = 0, losses = 0;
    double first_loss = 0;
    long long first_rec = -1;
    while ((rc = tbe_next(r, &it, &e)) == 1) {
        scalars++;
        T_EQ_INT(it.kind, TBE_SCALAR);
        if (!strcmp(it.tag, "epoch_loss")) {
            T_EQ_INT(it.step, losses);
            if (losses++ == 0) {
                first_loss = it.value;
                first_rec = it.record;
            }
        }
    }
    T_EQ_INT(rc, 0);
    T_EQ_INT(tbe_records(r), 1533);
    /* 30 epochs of loss, accuracy and learning rate; the graph, the model's config
     * and the weight histograms skipped. */
    T_EQ_INT(scalars, 90);
    T_EQ_INT(losses, 30);
    T_EQ_INT(tbe_skipped(r), 1533 - 1 - 90);
    tbe_close(r);
    /* The first loss as protoc reads the record's bytes. */
    const char *dir = t_tmpdir();
    T_REQUIRE(first_rec >= 0 && first_rec < 60);
    T_REQUIRE(split_records(t_data(KERAS_TRAIN), dir, 60) == 60);
    char *txt = protoc_decode(dir, (int)first_rec, 0);
    T_REQUIRE(txt);
    uint8_t b[8];
    T_REQUIRE(protoc_bytes(txt, "tensor_content", b, sizeof b) == 4);
    T_CHECKF(first_loss == le_float(b) && first_loss > 3 && first_loss < 4, "%.9g vs %.9g",
             first_loss, (double)le_float(b));
    free(txt);

    /* The CLI, on the run folder: train/ then validation/, every scalar once. */
    char cmd[8192], *out;
    util_path(cmd, sizeof cmd, "%s events '%s'", t_bin(), t_data(KERAS_RUN));
    T_EQ_INT(t_run(cmd, &out), 0);
    char line[128];
    snprintf(line, sizeof line, "\nepoch_loss 0 %.9g\n", first_loss);
    T_CHECKF(strstr(out, line) != NULL, "no '%s' in:\n%.2000s", line + 1, out);
    char *tr = strstr(out, "/train/events.out.tfevents."),
         *va = strstr(out, "/validation/events.out.tfevents.");
    T_CHECK(tr && va && tr < va);
    T_CHECK(strstr(out, "# 1533 records: 90 scalars and 0 images printed, 1442 other summaries skipped"));
    T_CHECK(strstr(out, "# 61 records: 60 scalars and 0 images printed, 0 other summaries skipped"));
    T_CHECK(strstr(out, "\nevaluation_loss_vs_iterations 800 "));
    free(out);
}

/* ---- damage --------------------------------------------------------------------- */

/* The header offsets of the records of the event file at path (up to cap); count. */
static int offsets(const char *path, long long *at, int cap)
{
    tfr_reader *r;
    if (tfr_open(&r, path, NULL) != PT_OK)
        return -1;
    long long off;
    size_t len;
    int n = 0;
    while (n < cap && tfr_skip(r, &off, &len, NULL) == 1)
        at[n++] = tfr_offset(r);
    tfr_close(r);
    return n;
}

static int copy_file(const char *from, const char *to, long long cut)
{
    uint8_t *d;
    size_t n;
    if (util_read_file(from, &d, &n, NULL) != PT_OK)
        return -1;
    int rc = util_write_file_atomic(to, d, cut >= 0 && (size_t)cut < n ? (size_t)cut : n, NULL);
    free(d);
    return rc;
}

/* Reads the file to its end: the scalars read, the errors met (the last one in e). */
static void read_all(const char *path, int *scalars, int *errors, pt_err *e)
{
    *scalars = *errors = 0;
    tbe_reader *r;
    if (tbe_open(&r, path, e) != PT_OK) {
        *errors = 1;
        return;
    }
    tbe_item it;
    int rc;
    while ((rc = tbe_next(r, &it, *errors ? NULL : e)) != 0) {
        if (rc < 0)
            (*errors)++;
        else
            (*scalars)++;
    }
    tbe_close(r);
}

TEST(tbevent_damage_is_named_by_file_record_and_offset)
{
    const char *dir = t_tmpdir();
    double t0, t1;
    const char *path = write_sample(dir, &t0, &t1);
    T_REQUIRE(path);
    long long at[16];
    T_REQUIRE(offsets(path, at, 16) == N_SCALARS + 2);
    char bad[4300], want[4600];
    pt_err e;
    int scalars, errors;

    /* One byte of record 2's payload changed: that record is reported and skipped,
     * the rest read. */
    util_path(bad, sizeof bad, "%s/crc.v2", dir);
    T_REQUIRE(copy_file(path, bad, -1) == 0);
    FILE *f = fopen(bad, "r+b");
    T_REQUIRE(f);
    fseek(f, at[2] + TFR_HEADER_BYTES + 3, SEEK_SET);
    int c = fgetc(f);
    fseek(f, at[2] + TFR_HEADER_BYTES + 3, SEEK_SET);
    fputc(c ^ 0x40, f);
    fclose(f);
    read_all(bad, &scalars, &errors, &e);
    T_EQ_INT(errors, 1);
    T_EQ_INT(scalars, N_SCALARS); /* the image and every scalar but one */
    snprintf(want, sizeof want, "%s: record 2 at byte %lld: payload crc mismatch", bad, at[2]);
    T_CHECKF(strstr(e.msg, want) == e.msg, "%s", e.msg);
    T_EQ_INT(e.code, PT_ECRC);

    /* Cut inside record 4: the end is reported, what came before read. */
    util_path(bad, sizeof bad, "%s/cut.v2", dir);
    T_REQUIRE(copy_file(path, bad, at[4] + 20) == 0);
    read_all(bad, &scalars, &errors, &e);
    T_EQ_INT(errors, 1);
    T_EQ_INT(scalars, 3);
    snprintf(want, sizeof want, "%s: record 4 at byte %lld: truncated", bad, at[4]);
    T_CHECKF(strstr(e.msg, want) == e.msg, "%s", e.msg);

    /* A record whose CRCs hold but whose payload is no Event; a scalar tensor whose
     * bytes do not fit DT_FLOAT. */
    util_path(bad, sizeof bad, "%s/junk.v2", dir);
    tfr_writer *tw;
    T_REQUIRE(tfr_writer_open(&tw, bad, &e) == PT_OK);
    uint8_t first[256];
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.what_case = TENSORBOARD__EVENT__WHAT_FILE_VERSION;
    ev.file_version = (char *)"brain.Event:2";
    size_t n0 = tensorboard__event__pack(&ev, first);
    T_REQUIRE(tfr_write(tw, first, n0, &e) == PT_OK);
    const uint8_t junk[6] = { 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f }; /* wire type 7: none */
    T_REQUIRE(tfr_write(tw, junk, sizeof junk, &e) == PT_OK);
    Tensorboard__TensorProto t = TENSORBOARD__TENSOR_PROTO__INIT;
    t.dtype = TENSORBOARD__DATA_TYPE__DT_FLOAT;
    t.tensor_content.data = (uint8_t *)"abc";
    t.tensor_content.len = 3;
    Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
    v.tag = (char *)"odd";
    v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_TENSOR;
    v.tensor = &t;
    Tensorboard__Summary__Value *vs[1] = { &v };
    Tensorboard__Summary sum = TENSORBOARD__SUMMARY__INIT;
    sum.n_value = 1;
    sum.value = vs;
    ev.what_case = TENSORBOARD__EVENT__WHAT_SUMMARY;
    ev.summary = &sum;
    ev.step = 9;
    uint8_t rec[256];
    size_t n2 = tensorboard__event__pack(&ev, rec);
    T_REQUIRE(tfr_write(tw, rec, n2, &e) == PT_OK);
    T_REQUIRE(tfr_writer_close(tw, &e) == PT_OK);
    tbe_reader *r;
    tbe_item it;
    T_REQUIRE(tbe_open(&r, bad, &e) == PT_OK);
    T_EQ_INT(tbe_next(r, &it, &e), PT_EPARSE);
    long long off1 = TFR_OVERHEAD + (long long)n0;
    snprintf(want, sizeof want, "%s: record 1 at byte %lld: payload of 6 bytes is not a tensorboard.Event",
             bad, off1);
    T_CHECKF(strstr(e.msg, want) == e.msg, "%s", e.msg);
    T_EQ_INT(tbe_next(r, &it, &e), PT_EPARSE);
    snprintf(want, sizeof want, "%s: record 2 at byte %lld: scalar 'odd' is a DT_FLOAT tensor with 3 bytes",
             bad, off1 + TFR_OVERHEAD + 6);
    T_CHECKF(strstr(e.msg, want) == e.msg, "%s", e.msg);
    T_EQ_INT(tbe_next(r, &it, &e), 0);
    tbe_close(r);

    /* Not an event file: a TFRecord of something else (an Example's bytes; an Event
     * without a file_version), no TFRecord at all. */
    util_path(bad, sizeof bad, "%s/other.tfrec", dir);
    T_REQUIRE(tfr_writer_open(&tw, bad, &e) == PT_OK);
    T_REQUIRE(tfr_write(tw, "\x0a\x00", 2, &e) == PT_OK);
    T_REQUIRE(tfr_writer_close(tw, &e) == PT_OK);
    T_EQ_INT(tbe_open(&r, bad, &e), PT_EPARSE);
    snprintf(want, sizeof want, "%s: record 0 at byte 0: payload of 2 bytes is not a "
                                "tensorboard.Event: not a TensorBoard event file", bad);
    T_EQ_STR(e.msg, want);
    util_path(bad, sizeof bad, "%s/summary-first.v2", dir);
    T_REQUIRE(tfr_writer_open(&tw, bad, &e) == PT_OK);
    T_REQUIRE(tfr_write(tw, rec, n2, &e) == PT_OK);
    T_REQUIRE(tfr_writer_close(tw, &e) == PT_OK);
    T_EQ_INT(tbe_open(&r, bad, &e), PT_EPARSE);
    snprintf(want, sizeof want, "%s: record 0 at byte 0: no file_version \"brain.Event:N\" "
                                "first: not a TensorBoard event file", bad);
    T_EQ_STR(e.msg, want);
    T_EQ_INT(tbe_open(&r, "README.md", &e), PT_ECRC);
    T_CHECKF(strstr(e.msg, "README.md: record 0 at byte 0: length crc mismatch") == e.msg &&
                 strstr(e.msg, ": not a TensorBoard event file"),
             "%s", e.msg);

    /* The CLI says each error once on stderr, prints what it could read, exits 2. */
    char cmd[8192], *out;
    util_path(cmd, sizeof cmd, "%s events '%s/crc.v2' 2>&1 >/dev/null", t_bin(), dir);
    T_EQ_INT(t_run(cmd, &out), 2);
    snprintf(want, sizeof want, "petal-tui: %s/crc.v2: record 2 at byte %lld: payload crc mismatch",
             dir, at[2]);
    T_CHECKF(strstr(out, want) == out && strstr(out + 1, "petal-tui:") == NULL, "%s", out);
    free(out);
    util_path(cmd, sizeof cmd, "%s events '%s/crc.v2' 2>/dev/null", t_bin(), dir);
    T_EQ_INT(t_run(cmd, &out), 2);
    T_CHECKF(strstr(out, "\nepoch_loss 0 2.30258489\n") && strstr(out, "\npreview 3 image 7x5 "),
             "%s", out);
    free(out);
}

TEST(tbevent_cli_usage_and_missing_paths)
{
    char cmd[8192], *out;
    util_path(cmd, sizeof cmd, "%s events", t_bin());
    T_EQ_INT(t_run(cmd, &out), 1);
    T_CHECK(strstr(out, "usage: petal-tui events") != NULL);
    free(out);
    util_path(cmd, sizeof cmd, "%s events --bogus x", t_bin());
    T_EQ_INT(t_run(cmd, &out), 1);
    T_CHECK(strstr(out, "petal-tui: events: unknown option '--bogus'") != NULL);
    free(out);
    const char *dir = t_tmpdir();
    util_path(cmd, sizeof cmd, "%s events '%s' '%s/none'", t_bin(), dir, dir);
    T_EQ_INT(t_run(cmd, &out), 2);
    char want[4400];
    snprintf(want, sizeof want, "petal-tui: %s: no TensorBoard event files", dir);
    T_CHECKF(strstr(out, want) != NULL, "%s", out);
    snprintf(want, sizeof want, "petal-tui: %s/none: no such file or folder", dir);
    T_CHECKF(strstr(out, want) != NULL, "%s", out);
    free(out);
}

/* ---- a run's event files ---------------------------------------------------------- */

/* The values of "key" in history.json, epoch by epoch; their count. */
static int history_values(const char *run, const char *key, double *v, int max)
{
    char path[4300], want[64];
    util_path(path, sizeof path, "%s/history.json", run);
    uint8_t *text;
    size_t len;
    if (util_read_file(path, &text, &len, NULL) != PT_OK)
        return -1;
    snprintf(want, sizeof want, "\"%s\": ", key);
    int n = 0;
    for (const char *p = (const char *)text; (p = strstr(p, want)) != NULL && n < max;
         p += strlen(want))
        v[n++] = strtod(p + strlen(want), NULL);
    free(text);
    return n;
}

/* float precision: the events hold the history's figures rounded to float. */
#define T_SAME_FLOAT(ev, hist) T_NEAR((ev), (hist), 1e-6 * fabs(hist) + 1e-9)

TEST(tbevent_a_headless_run_writes_train_and_validation_events_equal_to_its_history)
{
    static const long long tc[4] = { 30, 12, 20, 8 }, vc[4] = { 6, 3, 5, 2 };
    const char *dir = t_tmpdir();
    const char *ds = fx_dataset(dir, 4, tc, vc, 0, 32, 25);
    T_REQUIRE(ds);
    char run[4300], cmd[8192], *out;
    util_path(run, sizeof run, "%s/run", dir);
    util_path(cmd, sizeof cmd,
              "%s --headless --data '%s' --out '%s' --image-size 32 --epochs 2 --replicas 2 "
              "--batch-per-replica 4 --workers 1",
              t_bin(), ds, run);
    int rc = t_run(cmd, &out);
    T_CHECKF(rc == 0, "%s", out);
    free(out);
    T_REQUIRE(rc == 0);
    enum { E = 2, U = 70 / 8 }; /* epochs; updates per epoch of 2 x 4 */

    /* One file in train/, one in validation/, each named and begun as Keras's are. */
    const char *subs[2] = { "train", "validation" };
    for (int k = 0; k < 2; k++) {
        char sub[4400];
        util_path(sub, sizeof sub, "%s/%s", run, subs[k]);
        const char *f = only_file(sub);
        T_REQUIRE(f);
        const char *name = strrchr(f, '/') + 1;
        T_CHECK(!strncmp(name, "events.out.tfevents.", 20) && !strcmp(name + strlen(name) - 3, ".v2"));
        tbe_reader *r;
        pt_err e;
        T_REQUIRE(tbe_open(&r, f, &e) == PT_OK);
        T_EQ_STR(tbe_file_version(r), "brain.Event:2");
        tbe_item it;
        int images = 0;
        while ((rc = tbe_next(r, &it, &e)) == 1) {
            if (it.kind != TBE_IMAGE)
                continue;
            /* the augmentation preview in train/, the confusion matrix in validation/ */
            T_EQ_STR(it.tag, k ? "confusion_matrix" : "augmentation_preview");
            T_EQ_INT(it.step, images++);
            uint8_t *rgb;
            int w, h;
            T_REQUIRE(png_decode_rgb(it.image, it.image_len, &rgb, &w, &h, &e) == PT_OK);
            T_CHECK(w == it.width && h == it.height && w > 100 && h > 60);
            free(rgb);
        }
        T_EQ_INT(rc, 0);
        T_EQ_INT(images, E);
        T_EQ_INT(tbe_skipped(r), 0);
        tbe_close(r);
    }

    /* The epoch figures: history.json's, at steps 0 .. E-1. */
    static const struct {
        int val;
        const char *tag, *key;
    } pairs[] = {
        { 0, "epoch_loss", "train_loss" },         { 0, "epoch_sparse_categorical_accuracy", "train_acc" },
        { 0, "epoch_precision", "train_precision" }, { 0, "epoch_recall", "train_recall" },
        { 0, "epoch_f1_score", "train_f1" },       { 1, "epoch_loss", "val_loss" },
        { 1, "epoch_sparse_categorical_accuracy", "val_acc" },
        { 1, "epoch_precision", "val_precision" }, { 1, "epoch_recall", "val_recall" },
        { 1, "epoch_f1_score", "val_f1" },
    };
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        char sub[4400];
        util_path(sub, sizeof sub, "%s/%s", run, subs[pairs[p].val]);
        long long steps[8];
        double ev[8], hist[8];
        T_REQUIRE(history_values(run, pairs[p].key, hist, 8) == E);
        T_EQ_INT(fx_event_scalars(sub, pairs[p].tag, steps, ev, 8, NULL), E);
        for (int i = 0; i < E; i++) {
            T_EQ_INT(steps[i], i);
            T_SAME_FLOAT(ev[i], hist[i]);
        }
    }
    /* Per update in train/: steps 1 .. E*U; per epoch in validation/ against updates. */
    char tr[4400], va[4400];
    util_path(tr, sizeof tr, "%s/train", run);
    util_path(va, sizeof va, "%s/validation", run);
    long long steps[64];
    double ev[64], hist[8];
    const char *per_update[3] = { "batch_loss", "batch_sparse_categorical_accuracy",
                                  "batch_learning_rate" };
    for (int k = 0; k < 3; k++) {
        T_EQ_INT(fx_event_scalars(tr, per_update[k], steps, ev, 64, NULL), E * U);
        for (int i = 0; i < E * U; i++) {
            T_EQ_INT(steps[i], i + 1);
            T_CHECK(ev[i] >= 0 && (k != 1 || ev[i] <= 1));
        }
    }
    T_REQUIRE(history_values(run, "val_loss", hist, 8) == E);
    T_EQ_INT(fx_event_scalars(va, "evaluation_loss_vs_iterations", steps, ev, 8, NULL), E);
    for (int i = 0; i < E; i++) {
        T_EQ_INT(steps[i], (i + 1) * U);
        T_SAME_FLOAT(ev[i], hist[i]);
    }
    /* An epoch's learning rate is its last update's. */
    double lr[64];
    T_EQ_INT(fx_event_scalars(tr, "batch_learning_rate", NULL, lr, 64, NULL), E * U);
    T_EQ_INT(fx_event_scalars(tr, "epoch_learning_rate", NULL, ev, 8, NULL), E);
    for (int i = 0; i < E; i++)
        T_CHECK(ev[i] > 0 && ev[i] == lr[(i + 1) * U - 1]);
    T_EQ_INT(fx_event_scalars(tr, "epoch_images_per_second", NULL, ev, 8, NULL), E);
    T_CHECK(ev[0] > 0 && ev[1] > 0);

    /* The CLI reads the run folder. */
    util_path(cmd, sizeof cmd, "%s events --tag epoch_f1_score '%s'", t_bin(), run);
    T_EQ_INT(t_run(cmd, &out), 0);
    T_CHECKF(strstr(out, "/train/events.out.tfevents.") && strstr(out, "\nepoch_f1_score 1 ") &&
                 strstr(out, "/validation/events.out.tfevents."),
             "%s", out);
    free(out);
}
