/* Distillation's two other sources of a cached teacher's probabilities (train/teacher.h):
 * --teacher-data (the teacher predicts the same records stored at another size) and
 * --teacher FILE.csv (an earlier distilled run's teacher_probs.csv, read, not
 * predicted). Real shards of real JPEGs at two sizes made by `petal-tui shards`, real
 * runs through the command line. */
#include "tests/t.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "tests/fixtures.h"

/* The test's scratch folder (t_tmpdir gives a new one at each call). */
static char g_dir[4200];

/* The photos as shards at size (and --val val), in tmp/shards-<size>-<val>; NULL (said)
 * when `petal-tui shards` failed. */
static const char *shards(const char *photos, int size, const char *val)
{
    static char dirs[4][4200];
    static int next;
    char *dir = dirs[next++ % 4];
    util_path(dir, sizeof dirs[0], "%s/shards-%d-%s", g_dir, size, val);
    if (util_is_dir(dir))
        return dir;
    char cmd[12000], *out = NULL;
    util_path(cmd, sizeof cmd, "%s shards '%s' '%s' --size %d --val %s --per-shard 10", t_bin(),
              photos, dir, size, val);
    int rc = t_run(cmd, &out);
    if (rc != 0)
        printf("  shards: exit %d:\n%s", rc, out);
    free(out);
    return rc == 0 ? dir : NULL;
}

/* A 1-epoch run of `small` on data at size into tmp/name with extra options: its exit
 * status, its output in *out (the caller frees it). */
static int run(const char *name, const char *data, int size, const char *extra, char **out)
{
    char cmd[16000], dir[4200];
    util_path(dir, sizeof dir, "%s/%s", g_dir, name);
    util_path(cmd, sizeof cmd,
              "%s --headless --data '%s' --out '%s' --model small --widths 8,16 --image-size %d "
              "--epochs 1 --replicas 1 --batch-per-replica 4 --workers 1 --seed 3 %s",
              t_bin(), data, dir, size, extra);
    return t_run(cmd, out);
}

/* A run folder's teacher_probs.csv: its lines, and the same without each line's first
 * field (the shard file's name); NULL when it cannot be read. */
static char *probs_file(const char *name, char **rest)
{
    char path[4200];
    util_path(path, sizeof path, "%s/%s/teacher_probs.csv", g_dir, name);
    char *text = fx_slurp(path);
    if (!text)
        return NULL;
    char *r = malloc(strlen(text) + 1), *w = r;
    for (const char *l = text; r && *l;) {
        const char *comma = strchr(l, ','), *nl = strchr(l, '\n');
        if (!nl)
            nl = l + strlen(l);
        const char *from = comma && comma < nl ? comma + 1 : l;
        memcpy(w, from, (size_t)(nl - from));
        w += nl - from;
        *w++ = '\n';
        l = *nl ? nl + 1 : nl;
    }
    if (r)
        *w = '\0';
    *rest = r;
    return text;
}

static double train_loss(const char *name)
{
    char path[4200];
    util_path(path, sizeof path, "%s/%s/history.json", g_dir, name);
    char *text = fx_slurp(path);
    const char *at = text ? strstr(text, "\"train_loss\": ") : NULL;
    double v = at ? strtod(at + strlen("\"train_loss\": "), NULL) : -1;
    free(text);
    return v;
}

TEST(distill_teacher_data_and_a_teacher_probs_csv)
{
    util_copy(g_dir, sizeof g_dir, t_tmpdir());
    char photos[4200], *out = NULL;
    util_path(photos, sizeof photos, "%s/photos", g_dir);
    T_REQUIRE(fx_photo_folder(photos, 3, 12, 96));
    const char *d32 = shards(photos, 32, "0.25"), *d64 = shards(photos, 64, "0.25");
    T_REQUIRE(d32 && d64);
    char teacher[4200];
    util_path(teacher, sizeof teacher, "%s/teacher", g_dir);
    int rc = run("teacher", d64, 64, "", &out);
    T_REQUIRE(rc == 0);
    free(out);

    /* The student at 32 px, its teacher predicting the 64 px shards of the same photos:
     * the same probabilities as a student on the 64 px shards gets (keyed by the 32 px
     * shards' files), not those of the 32 px images the teacher sees without it. */
    char extra[12000];
    util_path(extra, sizeof extra, "--teacher '%s' --teacher-data '%s'", teacher, d64);
    rc = run("at32-data64", d32, 32, extra, &out);
    T_CHECKF(rc == 0, "exit %d:\n%s", rc, out);
    free(out);
    util_path(extra, sizeof extra, "--teacher '%s'", teacher);
    T_CHECK(run("at64", d64, 64, extra, &out) == 0);
    free(out);
    T_CHECK(run("at32", d32, 32, extra, &out) == 0);
    free(out);
    char *r_a, *r_b, *r_c;
    char *a = probs_file("at32-data64", &r_a), *b = probs_file("at64", &r_b),
         *c = probs_file("at32", &r_c);
    T_REQUIRE(a && b && c && r_a && r_b && r_c);
    T_CHECKF(strcmp(r_a, r_b) == 0, "--teacher-data's probabilities are not the 64 px ones");
    T_CHECKF(strcmp(r_a, r_c) != 0, "--teacher-data made no difference");
    T_CHECKF(strstr(a, "-32x32-") && !strstr(a, "-64x64-"),
             "rows keyed by the teacher's shards, not the student's:\n%.300s", a);

    /* The first student's teacher_probs.csv as --teacher: read, not predicted, copied
     * into the run folder, and the training the same as with the teacher itself. */
    util_path(extra, sizeof extra, "--teacher '%s/at32-data64/teacher_probs.csv'", g_dir);
    rc = run("from-csv", d32, 32, extra, &out);
    T_CHECKF(rc == 0 && strstr(out, "read from") && !strstr(out, "predicted 27"),
             "exit %d:\n%s", rc, out);
    free(out);
    char *r_d, *d = probs_file("from-csv", &r_d);
    T_REQUIRE(d && r_d);
    T_CHECK(strcmp(a, d) == 0);
    double la = train_loss("at32-data64"), ld = train_loss("from-csv");
    /* The file's 9 digits round the probabilities the first run kept in double: the
     * same targets to float precision, so the same loss to about that. */
    T_CHECKF(la > 0 && fabs(la - ld) <= 1e-5 * la,
             "train loss %.9g with the teacher, %.9g with its csv", la, ld);
    free(a);
    free(b);
    free(c);
    free(d);
    free(r_a);
    free(r_b);
    free(r_c);
    free(r_d);
}

TEST(distill_teacher_data_and_csv_refusals)
{
    util_copy(g_dir, sizeof g_dir, t_tmpdir());
    char photos[4200], teacher[4200], csv[4200], extra[12000], *out = NULL;
    util_path(photos, sizeof photos, "%s/photos", g_dir);
    T_REQUIRE(fx_photo_folder(photos, 3, 12, 96));
    const char *d32 = shards(photos, 32, "0.25"), *d64 = shards(photos, 64, "0.25"),
               *other = shards(photos, 64, "0.5");
    T_REQUIRE(d32 && d64 && other);
    util_path(teacher, sizeof teacher, "%s/teacher", g_dir);
    T_REQUIRE(run("teacher", d64, 64, "", &out) == 0);
    free(out);
    util_path(extra, sizeof extra, "--teacher '%s'", teacher);
    T_REQUIRE(run("at64", d64, 64, extra, &out) == 0);
    free(out);
    util_path(csv, sizeof csv, "%s/at64/teacher_probs.csv", g_dir);
    const struct {
        const char *data, *extra_fmt, *arg, *says;
    } cases[] = {
        /* another split of the same photos: other records */
        { d32, "--teacher '%s' --teacher-data '%s'", other, "not the same records" },
        { d32, "--teacher '%s' --teacher-view live", csv, "--teacher-view live needs the teacher's nets" },
        { d32, "--teacher '%s' --teacher-data '%s'", d64, "leave --teacher-data out" },
        /* a csv of another dataset's training split (its shards' names) */
        { other, "--teacher '%s'", csv, "another dataset" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *first = strstr(cases[i].extra_fmt, "--teacher-data") && i == 0 ? teacher : csv;
        snprintf(extra, sizeof extra, cases[i].extra_fmt, first, cases[i].arg);
        char name[32];
        snprintf(name, sizeof name, "refused-%zu", i);
        int rc = run(name, cases[i].data, 32, extra, &out);
        T_CHECKF(rc == 1 && strstr(out, cases[i].says), "case %zu: exit %d, wanted '%s' in:\n%s",
                 i, rc, cases[i].says, out);
        free(out);
        char dir[4200];
        util_path(dir, sizeof dir, "%s/%s", g_dir, name);
        T_CHECKF(!util_is_dir(dir), "case %zu left %s", i, dir);
    }
}
