/* `petal-tui ensemble` at its edges (issue 42): members whose classes are not the
 * dataset's, classes in another order, a member that names no classes, an --out that
 * holds a run. Real runs made by the headless trainer, the real demo dataset, the
 * real binary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "datasets.h"
#include "runs.h"
#include "tests/fixtures.h"
#include "tests/t.h"

static const long long EN_TRAIN[3] = { 16, 16, 16 }, EN_VAL[3] = { 8, 8, 8 };

typedef struct en_fix {
    char demo[4200];        /* the demo dataset (12 classes, white daisy ... ) */
    char a[4200], b[4200];  /* two demo runs (fx_demo_runs) */
    char data3[4200];       /* a 3-class dataset (flower00..flower02) */
    char c[4200];           /* a run of it */
} en_fix;

static const en_fix *en_fixture(void)
{
    static en_fix f;
    static int made; /* 1 made, -1 failed */
    if (made)
        return made > 0 ? &f : NULL;
    made = -1;
    const char *runs = fx_demo_runs();
    pt_err e;
    if (!runs || datasets_demo(NULL, f.demo, sizeof f.demo, NULL, NULL, &e) != PT_OK)
        return NULL;
    util_path(f.a, sizeof f.a, "%s/a", runs);
    util_path(f.b, sizeof f.b, "%s/b", runs);
    char dir[4096];
    util_copy(dir, sizeof dir, t_tmpdir());
    const char *d = fx_dataset(dir, 3, EN_TRAIN, EN_VAL, 6, 32, 16);
    if (!d)
        return NULL;
    util_copy(f.data3, sizeof f.data3, d);
    util_path(f.c, sizeof f.c, "%s/c", dir);
    char cmd[16384], *text;
    util_path(cmd, sizeof cmd,
              "%s --headless --data '%s' --out '%s' --epochs 1 --replicas 1 --workers 1 "
              "--batch-per-replica 8 --widths 8,16",
              t_bin(), f.data3, f.c);
    int rc = t_run(cmd, &text);
    if (rc != 0)
        printf("  run c: exit %d:\n%s\n", rc, text);
    free(text);
    if (rc != 0)
        return NULL;
    made = 1;
    return &f;
}

/* `petal-tui ARGS`: the exit status; stdout and stderr (malloc'd) apart. */
static int en_cli(const char *args, char **out, char **err)
{
    char cmd[20000], errf[4200];
    util_path(errf, sizeof errf, "%s/stderr.txt", t_tmpdir());
    util_path(cmd, sizeof cmd, "%s %s 2>'%s'", t_bin(), args, errf);
    int rc = t_run(cmd, out);
    *err = fx_slurp(errf);
    return rc;
}

static int lines(const char *s)
{
    int n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

/* A dataset folder whose split folders are the demo dataset's (linked; its test split
 * too when with_test), with classes.txt holding names (NULL: none); its path. */
static const char *linked_demo(const en_fix *f, const char *name, const char *classes,
                               int with_test)
{
    static char dir[4200];
    util_path(dir, sizeof dir, "%s/%s", t_tmpdir(), name);
    pt_err e;
    ds_dataset *ds;
    if (util_mkdirs(dir, &e) != PT_OK || datasets_open(f->demo, 0, &ds, &e) != PT_OK)
        return NULL;
    const char *split[3] = { "train", "val", "test" };
    int ok = 1;
    for (int s = 0; s < 2 + with_test; s++) {
        char from[4400], to[4400];
        util_path(from, sizeof from, "%s/%s", datasets_root(ds), split[s]);
        util_path(to, sizeof to, "%s/%s", dir, split[s]);
        ok = ok && symlink(from, to) == 0;
    }
    datasets_close(ds);
    if (ok && classes) {
        char p[4400];
        util_path(p, sizeof p, "%s/classes.txt", dir);
        ok = util_write_file_atomic(p, classes, strlen(classes), &e) == PT_OK;
    }
    return ok ? dir : NULL;
}

TEST(ensemble_refuses_members_whose_classes_are_not_the_datasets)
{
    const en_fix *f = en_fixture();
    T_REQUIRE(f != NULL);
    char args[20000], out_dir[4200], want[9000], *out, *err;
    util_path(out_dir, sizeof out_dir, "%s/ens", t_tmpdir());
    /* A 3-class run on the 12-class demo data: refused before anything is written. */
    util_path(args, sizeof args, "ensemble '%s' --data '%s' --out '%s'", f->c, f->demo, out_dir);
    T_EQ_INT(en_cli(args, &out, &err), 1);
    snprintf(want, sizeof want,
             "petal-tui: %s: its 3 classes (flower00, flower01, flower02) differ from the 12 "
             "of the dataset %s (white daisy, sunflower, ",
             f->c, f->demo);
    T_CHECKF(err && strstr(err, want) == err && lines(err) == 1, "%s", err ? err : "");
    T_CHECKF(err && strstr(err, "; only in the member: flower00, flower01, flower02; only in "
                                "the dataset: white daisy, sunflower, ") &&
                 strstr(err, "(12 in all): an ensemble's members must share their class names "
                             "with the dataset; give --data the dataset the runs were trained "
                             "on\n"),
             "%s", err ? err : "");
    T_CHECK(out && out[0] == '\0');
    T_CHECK(!util_is_dir(out_dir));
    free(out);
    free(err);
    /* 12-class runs on the 3-class data: the first member named. */
    util_path(args, sizeof args, "ensemble '%s' '%s' --data '%s' --out '%s'", f->a, f->b,
              f->data3, out_dir);
    T_EQ_INT(en_cli(args, &out, &err), 1);
    snprintf(want, sizeof want, "petal-tui: %s: its 12 classes (white daisy,", f->a);
    T_CHECKF(err && strstr(err, want) == err && lines(err) == 1 &&
                 strstr(err, "only in the dataset: flower00, flower01, flower02:"),
             "%s", err ? err : "");
    T_CHECK(!util_is_dir(out_dir));
    free(out);
    free(err);
    /* Members that differ from each other: the one that is not the dataset's named. */
    util_path(args, sizeof args, "ensemble '%s' '%s' --data '%s' --out '%s'", f->a, f->c,
              f->demo, out_dir);
    T_EQ_INT(en_cli(args, &out, &err), 1);
    snprintf(want, sizeof want, "petal-tui: %s: its 3 classes", f->c);
    T_CHECKF(err && strstr(err, want) == err && lines(err) == 1, "%s", err ? err : "");
    T_CHECK(!util_is_dir(out_dir));
    free(out);
    free(err);
    /* A dataset that names no classes: its labels beyond the members' refused, with the
     * first such record, before anything is written. */
    const char *bare = linked_demo(f, "bare", NULL, 1);
    T_REQUIRE(bare != NULL);
    util_path(args, sizeof args, "ensemble '%s' --data '%s' --out '%s'", f->c, bare, out_dir);
    T_EQ_INT(en_cli(args, &out, &err), 1);
    T_CHECKF(err && lines(err) == 1 && strstr(err, ": record ") && strstr(err, " at byte ") &&
                 strstr(err, " outside 0..2: the dataset has classes beyond the members' 3 (") &&
                 strstr(err, "give --data the dataset the runs were trained on\n"),
             "%s", err ? err : "");
    snprintf(want, sizeof want, "the dataset %s names no classes (no classes.txt beside its "
                                "split folders): its labels are taken as %s's classes",
             bare, f->c);
    T_CHECKF(out && strstr(out, want), "%s", out ? out : "");
    T_CHECK(!util_is_dir(out_dir));
    free(out);
    free(err);
}

/* Each row's predicted class names, for a dataset whose names are names[]. */
static int preds_named(const char *dir, char *const *names, const char **got, int max)
{
    run_val_report rep;
    int *labels, *preds;
    long long n;
    pt_err e;
    if (runs_val_load(dir, 12, &rep, &labels, &preds, &n, &e) != PT_OK) {
        printf("  %s\n", e.msg);
        return -1;
    }
    for (long long i = 0; i < n && i < max; i++)
        got[i] = names[preds[i]];
    run_val_report_free(&rep);
    free(labels);
    free(preds);
    return (int)n;
}

TEST(ensemble_classes_in_another_order_are_matched_by_name)
{
    const en_fix *f = en_fixture();
    T_REQUIRE(f != NULL);
    char path[4400], *names_txt;
    util_path(path, sizeof path, "%s/classes.txt", f->demo);
    T_REQUIRE((names_txt = fx_slurp(path)) != NULL);
    /* The same classes listed backwards. */
    char *names[12], *rev[12], back[4096] = "";
    int k = 0;
    for (char *save = NULL, *l = strtok_r(names_txt, "\n", &save); l && k < 12;
         l = strtok_r(NULL, "\n", &save))
        names[k++] = l;
    T_REQUIRE(k == 12);
    for (int c = 0; c < 12; c++) {
        rev[c] = names[11 - c];
        strcat(back, rev[c]);
        strcat(back, "\n");
    }
    const char *perm = linked_demo(f, "backwards", back, 1);
    T_REQUIRE(perm != NULL);
    char args[20000], e1[4200], e2[4200], want[9000], *out, *err;
    util_path(e1, sizeof e1, "%s/e1", t_tmpdir());
    util_path(e2, sizeof e2, "%s/e2", t_tmpdir());
    util_path(args, sizeof args, "ensemble '%s' --data '%s' --out '%s'", f->a, perm, e1);
    T_EQ_INT(en_cli(args, &out, &err), 0);
    snprintf(want, sizeof want, "%s: its classes are the dataset %s's in another order: its "
                                "probabilities are matched by class name\n", f->a, perm);
    T_CHECKF(out && strstr(out, want) == out, "%s", out ? out : "");
    free(out);
    free(err);
    util_path(args, sizeof args, "ensemble '%s' --data '%s' --out '%s'", f->a, f->demo, e2);
    T_EQ_INT(en_cli(args, &out, &err), 0);
    free(out);
    free(err);
    /* Every record gets the same class name whichever order the dataset lists them in. */
    static const char *g1[4096], *g2[4096];
    int n1 = preds_named(e1, rev, g1, 4096), n2 = preds_named(e2, names, g2, 4096);
    T_REQUIRE(n1 > 100 && n1 == n2);
    int same = 0;
    for (int i = 0; i < n1; i++)
        same += !strcmp(g1[i], g2[i]);
    T_CHECKF(same == n1, "%d of %d records predicted as the same class name", same, n1);
    free(names_txt);
}

TEST(ensemble_an_onnx_member_without_names_is_matched_by_position)
{
    const en_fix *f = en_fixture();
    T_REQUIRE(f != NULL);
    char args[20000], dir[4200], want[9000], *out, *err;
    const char *onnx = "tests/data/onnx/convnet.onnx"; /* 3 outputs, no class_names */
    util_path(dir, sizeof dir, "%s/e", t_tmpdir());
    util_path(args, sizeof args, "ensemble '%s' %s --data '%s' --out '%s'", f->c, onnx, f->data3,
              dir);
    T_EQ_INT(en_cli(args, &out, &err), 0);
    snprintf(want, sizeof want, "%s names no classes: its 3 outputs are taken as the dataset "
                                "%s's classes in their order\n", onnx, f->data3);
    T_CHECKF(out && strstr(out, want), "%s", out ? out : "");
    free(out);
    free(err);
    /* On the 12-class data it has no position to take: refused. */
    util_path(dir, sizeof dir, "%s/e2", t_tmpdir());
    util_path(args, sizeof args, "ensemble %s --data '%s' --out '%s'", onnx, f->demo, dir);
    T_EQ_INT(en_cli(args, &out, &err), 1);
    snprintf(want, sizeof want, "petal-tui: %s: its 3 classes (class 0, class 1, class 2) "
                                "differ from the 12 of the dataset %s", onnx, f->demo);
    T_CHECKF(err && strstr(err, want) == err, "%s", err ? err : "");
    T_CHECK(!util_is_dir(dir));
    free(out);
    free(err);
}

TEST(ensemble_out_never_replaces_a_run)
{
    const en_fix *f = en_fixture();
    T_REQUIRE(f != NULL);
    char args[20000], want[9000], p[4400], *out, *err;
    const char *keep[2] = { "valid_preds.jsonl", "submission.csv" };
    char *before[2];
    for (int i = 0; i < 2; i++) {
        util_path(p, sizeof p, "%s/%s", f->b, keep[i]);
        T_REQUIRE((before[i] = fx_slurp(p)) != NULL);
    }
    /* Another run's folder. */
    util_path(args, sizeof args, "ensemble '%s' --data '%s' --out '%s'", f->a, f->demo, f->b);
    T_EQ_INT(en_cli(args, &out, &err), 1);
    snprintf(want, sizeof want, "petal-tui: %s: holds a training run (its checkpoint.ckpt): the "
                                "ensemble would replace the run's valid_preds.jsonl and "
                                "submission.csv; choose another --out (a new folder, or a "
                                "previous ensemble's)\n", f->b);
    T_CHECKF(err && !strcmp(err, want), "%s", err ? err : "");
    free(out);
    free(err);
    /* A member's folder. */
    util_path(args, sizeof args, "ensemble '%s' '%s' --data '%s' --out '%s'", f->a, f->b,
              f->demo, f->b);
    T_EQ_INT(en_cli(args, &out, &err), 1);
    snprintf(want, sizeof want, "petal-tui: %s: is the member %s: ", f->b, f->b);
    T_CHECKF(err && strstr(err, want) == err && lines(err) == 1, "%s", err ? err : "");
    free(out);
    free(err);
    for (int i = 0; i < 2; i++) {
        util_path(p, sizeof p, "%s/%s", f->b, keep[i]);
        char *now = fx_slurp(p);
        T_CHECKF(now && !strcmp(now, before[i]), "%s changed", p);
        free(now);
        free(before[i]);
    }
    /* A folder with a submission that is no ensemble's; a file. */
    char dir[4200];
    util_path(dir, sizeof dir, "%s/mine", t_tmpdir());
    util_path(p, sizeof p, "%s/submission.csv", dir);
    T_REQUIRE(util_mkdirs(dir, NULL) == PT_OK &&
              util_write_file_atomic(p, "id,label\n", 9, NULL) == PT_OK);
    util_path(args, sizeof args, "ensemble '%s' --data '%s' --out '%s'", f->a, f->demo, dir);
    T_EQ_INT(en_cli(args, &out, &err), 1);
    snprintf(want, sizeof want, "petal-tui: %s: holds a submission.csv that is no ensemble's",
             dir);
    T_CHECKF(err && strstr(err, want) == err, "%s", err ? err : "");
    free(out);
    free(err);
    util_path(args, sizeof args, "ensemble '%s' --data '%s' --out '%s'", f->a, f->demo, p);
    T_EQ_INT(en_cli(args, &out, &err), 1);
    snprintf(want, sizeof want, "petal-tui: %s: is a file: ", p);
    T_CHECKF(err && strstr(err, want) == err, "%s", err ? err : "");
    free(out);
    free(err);
    /* A previous ensemble's folder: replaced, and said. */
    util_path(dir, sizeof dir, "%s/ens", t_tmpdir());
    util_path(args, sizeof args, "ensemble '%s' --data '%s' --out '%s'", f->a, f->demo, dir);
    T_EQ_INT(en_cli(args, &out, &err), 0);
    free(out);
    free(err);
    T_EQ_INT(en_cli(args, &out, &err), 0);
    snprintf(want, sizeof want, "%s holds a previous ensemble's outputs: they are replaced\n",
             dir);
    T_CHECKF(out && strstr(out, want) == out, "%s", out ? out : "");
    util_path(p, sizeof p, "%s/valid_preds.jsonl", dir);
    char *vp = fx_slurp(p);
    T_CHECK(vp && lines(vp) == 1);
    free(vp);
    free(out);
    free(err);
    /* Replaced whole: a dataset without a test split leaves no old submission there. */
    char *names_txt;
    util_path(p, sizeof p, "%s/classes.txt", f->demo);
    T_REQUIRE((names_txt = fx_slurp(p)) != NULL);
    const char *no_test = linked_demo(f, "no-test", names_txt, 0);
    free(names_txt);
    T_REQUIRE(no_test != NULL);
    util_path(p, sizeof p, "%s/submission.csv", dir);
    T_REQUIRE(util_is_file(p));
    util_path(args, sizeof args, "ensemble '%s' --data '%s' --out '%s'", f->a, no_test, dir);
    T_EQ_INT(en_cli(args, &out, &err), 0);
    T_CHECKF(!util_is_file(p), "%s: the previous ensemble's submission is left", p);
    util_path(p, sizeof p, "%s/report.json", dir);
    T_CHECK(util_is_file(p));
    free(out);
    free(err);
}
