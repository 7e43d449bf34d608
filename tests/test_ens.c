/* The ensemble module (infer/ensemble.h, issue 46): ensemble.json read back, fitted
 * and cross-validated weights, TTA per member, on real runs of the demo data, through
 * the library and through the real binary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "datasets.h"
#include "infer/ensemble.h"
#include "tests/fixtures.h"
#include "tests/t.h"

/* `petal-tui ARGS`: the exit status; stdout and stderr (malloc'd) apart. */
static int ens_cli(const char *args, char **out, char **err)
{
    char cmd[20000], errf[4200];
    util_path(errf, sizeof errf, "%s/stderr.txt", t_tmpdir());
    util_path(cmd, sizeof cmd, "%s %s 2>'%s'", t_bin(), args, errf);
    int rc = t_run(cmd, out);
    *err = fx_slurp(errf);
    return rc;
}

/* The demo runs a and b (fx_demo_runs) and the demo dataset. */
typedef struct ens_fix {
    char demo[4200], a[4200], b[4200];
} ens_fix;

static const ens_fix *ens_fixture(void)
{
    static ens_fix f;
    static int made;
    if (made)
        return made > 0 ? &f : NULL;
    made = -1;
    const char *runs = fx_demo_runs();
    pt_err e;
    if (!runs || datasets_demo(NULL, f.demo, sizeof f.demo, NULL, NULL, &e) != PT_OK)
        return NULL;
    util_path(f.a, sizeof f.a, "%s/a", runs);
    util_path(f.b, sizeof f.b, "%s/b", runs);
    made = 1;
    return &f;
}

/* x's validation probabilities on the dataset at data (malloc'd, *n x *k). */
static double *val_probs(ens *x, const char *data, long long *n, int *k)
{
    pt_err e;
    ds_dataset *ds;
    if (datasets_open(data, ens_image_size(x), &ds, &e) != PT_OK) {
        printf("  %s\n", e.msg);
        return NULL;
    }
    prd_results r;
    ens_opts o = { .batch = 16, .replicas = 1, .workers = 1, .bf16 = -1 };
    double *p = NULL;
    if (ens_match(x, ds, data, &e) == PT_OK &&
        ens_split(x, datasets_split(ds, DATASETS_VAL), 1, &o, &r, NULL, &e) == PT_OK) {
        p = r.probs;
        r.probs = NULL;
        *n = r.n;
        *k = r.k;
        prd_results_free(&r);
    } else {
        printf("  %s\n", e.msg);
    }
    datasets_close(ds);
    return p;
}

TEST(ens_json_round_trip_gives_the_same_probabilities)
{
    const ens_fix *f = ens_fixture();
    T_REQUIRE(f != NULL);
    char args[20000], dir[4200], *out, *err;
    util_path(dir, sizeof dir, "%s/ens", t_tmpdir());
    util_path(args, sizeof args, "ensemble '%s' '%s' --weights 3,1 --tta flip --data '%s' "
              "--out '%s' --replicas 1", f->a, f->b, f->demo, dir);
    T_EQ_INT(ens_cli(args, &out, &err), 0);
    const char *row = out ? strstr(out, "\nensemble ") : NULL;
    char first[400] = "";
    if (row)
        snprintf(first, sizeof first, "%.*s", (int)strcspn(row + 1, "\n"), row + 1);
    free(out);
    free(err);
    /* The folder as ensemble's one member: its members, weights and TTA again. */
    char dir2[4200];
    util_path(dir2, sizeof dir2, "%s/again", t_tmpdir());
    util_path(args, sizeof args, "ensemble '%s' --data '%s' --out '%s' --replicas 1", dir,
              f->demo, dir2);
    T_EQ_INT(ens_cli(args, &out, &err), 0);
    T_CHECKF(first[0] && out && strstr(out, first), "%s\nnot in\n%s", first, out ? out : "");
    free(out);
    free(err);
    /* The folder opened again: the same members, weights and TTA. */
    pt_err e;
    ens *x = NULL, *y = NULL;
    T_CHECKF(ens_open_path(dir, &x, &e) == PT_OK, "%s", e.msg);
    T_REQUIRE(x != NULL);
    T_EQ_INT(ens_members(x), 2);
    T_NEAR(ens_member_weight(x, 0), 0.75, 1e-12);
    T_EQ_INT(ens_member_tta(x, 1), ENS_TTA_FLIP);
    T_EQ_INT((int)ens_weights_how(x), (int)ENS_W_GIVEN);
    const char *paths[2] = { f->a, f->b };
    const double w[2] = { 3, 1 };
    const int tta[2] = { ENS_TTA_FLIP, ENS_TTA_FLIP };
    T_REQUIRE(ens_open(paths, 2, w, tta, &y, &e) == PT_OK);
    long long n1 = 0, n2 = 0;
    int k1 = 0, k2 = 0;
    double *p1 = val_probs(x, f->demo, &n1, &k1), *p2 = val_probs(y, f->demo, &n2, &k2);
    T_REQUIRE(p1 && p2 && n1 > 100 && n1 == n2 && k1 == 12 && k2 == 12);
    double worst = 0;
    for (long long q = 0; q < n1 * k1; q++)
        worst = fmax(worst, fabs(p1[q] - p2[q]));
    T_CHECKF(worst == 0, "the folder's probabilities differ from its members' by %g", worst);
    free(p1);
    free(p2);
    ens_close(x);
    ens_close(y);
    /* A run folder and an .onnx file are one-member ensembles; another folder refused. */
    T_REQUIRE(ens_open_path(f->a, &x, &e) == PT_OK);
    T_EQ_INT(ens_members(x), 1);
    T_NEAR(ens_member_weight(x, 0), 1.0, 1e-15);
    ens_close(x);
    char empty[4200];
    util_copy(empty, sizeof empty, t_tmpdir());
    T_CHECK(ens_open_path(empty, &x, &e) == PT_EUSAGE && x == NULL);
    T_CHECKF(strstr(e.msg, "neither a run folder") && strstr(e.msg, empty), "%s", e.msg);
    /* An ensemble folder as a member of another is refused, naming it. */
    const char *nested[2] = { f->a, dir };
    T_CHECK(ens_open(nested, 2, NULL, NULL, &x, &e) == PT_EUSAGE && x == NULL);
    T_CHECKF(strstr(e.msg, "is an ensemble folder"), "%s", e.msg);
}

/* A run that has learnt next to nothing (one epoch at a tiny learning rate): the
 * clearly worse member. */
static const char *bad_run(void)
{
    static char dir[4200];
    static int made;
    if (made)
        return made > 0 ? dir : NULL;
    made = -1;
    util_path(dir, sizeof dir, "%s/bad", t_tmpdir());
    char cmd[8192], *out;
    util_path(cmd, sizeof cmd, "%s --headless --out '%s' --image-size 32 --epochs 1 "
              "--lr-max 0.00001 --replicas 1 --workers 1", t_bin(), dir);
    int rc = t_run(cmd, &out);
    if (rc != 0)
        printf("  bad run: exit %d:\n%s\n", rc, out);
    free(out);
    if (rc == 0)
        made = 1;
    return made > 0 ? dir : NULL;
}

/* The figure after "key " on the line of stdout that starts with who; NAN if none. */
static double figure(const char *out, const char *who, const char *key)
{
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, who, strlen(who)) != 0)
            continue;
        const char *eol = strchr(l, '\n'), *p = strstr(l, key);
        if (p && (!eol || p < eol))
            return strtod(p + strlen(key), NULL);
    }
    return NAN;
}

TEST(ens_weights_fit_favour_the_better_member_and_cv_prints_out_of_fold)
{
    const ens_fix *f = ens_fixture();
    const char *bad = bad_run();
    T_REQUIRE(f != NULL && bad != NULL);
    char args[20000], dir[4200], *out, *err;
    util_path(dir, sizeof dir, "%s/ens", t_tmpdir());
    util_path(args, sizeof args, "ensemble '%s' '%s' --data '%s' --out '%s' --replicas 1",
              f->a, bad, f->demo, dir);
    T_EQ_INT(ens_cli(args, &out, &err), 0);
    double equal_loss = figure(out, "ensemble ", " loss ");
    free(out);
    free(err);
    util_path(args, sizeof args, "ensemble '%s' '%s' --weights fit --data '%s' --out '%s' "
              "--replicas 1", f->a, bad, f->demo, dir);
    T_EQ_INT(ens_cli(args, &out, &err), 0);
    double fit_loss = figure(out, "ensemble ", " loss ");
    T_CHECKF(fit_loss <= equal_loss + 1e-12, "fitted loss %g above equal weights' %g", fit_loss,
             equal_loss);
    T_CHECKF(strstr(out, "weights fitted on the ") &&
                 strstr(out, "warning: the weights were fitted on the validation records they "
                             "are scored on"), "%s", out);
    free(out);
    free(err);
    /* The weights as written: the better member's the larger. */
    pt_err e;
    ens *x;
    T_REQUIRE(ens_open_path(dir, &x, &e) == PT_OK);
    T_CHECKF(ens_member_weight(x, 0) > 0.5, "the better member's weight %g",
             ens_member_weight(x, 0));
    T_EQ_INT((int)ens_weights_how(x), (int)ENS_W_FIT);
    ens_close(x);
    char p[4400];
    util_path(p, sizeof p, "%s/report.json", dir);
    char *rep = fx_slurp(p);
    T_CHECKF(rep && strstr(rep, "\"weights\": \"fit\""), "%s", rep ? rep : "");
    free(rep);
    /* cv: the out-of-fold figures printed and kept. */
    util_path(args, sizeof args, "ensemble '%s' '%s' --weights cv --data '%s' --out '%s' "
              "--replicas 1", f->a, bad, f->demo, dir);
    T_EQ_INT(ens_cli(args, &out, &err), 0);
    double oof = figure(out, "cross-validated (5 folds", " f1 ");
    T_CHECKF(oof > 0 && oof <= 1, "%s", out);
    free(out);
    free(err);
    rep = fx_slurp(p);
    T_CHECKF(rep && strstr(rep, "\"weights\": \"cv\"") && strstr(rep, "\"cv_val_f1\": "), "%s",
             rep ? rep : "");
    free(rep);
}

/* `petal-tui predict RUN DATA --split val --tta T --top 12`: every record's 12
 * probabilities by class name, in a malloc'd text. */
static char *predict_val(const char *run, const char *data, const char *tta)
{
    char args[20000], csv[4200], *out, *err;
    util_path(csv, sizeof csv, "%s/p.csv", t_tmpdir());
    util_path(args, sizeof args, "predict '%s' '%s' --split val --tta %s --top 12 --out '%s' "
              "--replicas 1", run, data, tta, csv);
    int rc = ens_cli(args, &out, &err);
    if (rc != 0)
        printf("  predict: exit %d: %s\n", rc, err ? err : "");
    free(out);
    free(err);
    return rc == 0 ? fx_slurp(csv) : NULL;
}

TEST(ens_tta_per_member_and_crops)
{
    const ens_fix *f = ens_fixture();
    T_REQUIRE(f != NULL);
    /* crops and flip+crops are other views: other probabilities than none's and flip's. */
    char *none = predict_val(f->a, f->demo, "none"), *crops = predict_val(f->a, f->demo, "crops");
    char *both = predict_val(f->a, f->demo, "flip+crops");
    T_REQUIRE(none && crops && both);
    T_CHECK(strcmp(none, crops) != 0 && strcmp(crops, both) != 0);
    T_CHECK(strlen(none) > 1000 && strncmp(none, crops, 40) == 0);
    free(none);
    free(crops);
    free(both);
    /* Per member in the ensemble: the list's length must be the members'. */
    char args[20000], dir[4200], *out, *err;
    util_path(dir, sizeof dir, "%s/ens", t_tmpdir());
    util_path(args, sizeof args, "ensemble '%s' '%s' --tta flip,crops,none --data '%s' "
              "--out '%s'", f->a, f->b, f->demo, dir);
    T_EQ_INT(ens_cli(args, &out, &err), 1);
    T_CHECKF(err && strstr(err, "petal-tui: --tta wants none, flip, crops or flip+crops, for "
                                "all 2 members or a comma list of one per member, not "
                                "'flip,crops,none'"), "%s", err ? err : "");
    T_CHECK(!util_is_dir(dir));
    free(out);
    free(err);
    /* A member with crops predicts in the ensemble what predict --tta crops gives. */
    util_path(args, sizeof args, "ensemble '%s' '%s' --tta none,crops --data '%s' --out '%s' "
              "--replicas 1", f->a, f->b, f->demo, dir);
    T_EQ_INT(ens_cli(args, &out, &err), 0);
    free(out);
    free(err);
    pt_err e;
    ens *x, *y;
    T_REQUIRE(ens_open_path(dir, &x, &e) == PT_OK);
    T_EQ_INT(ens_member_tta(x, 1), ENS_TTA_CROPS);
    T_REQUIRE(ens_open((const char *[]){ f->b }, 1, NULL, (const int[]){ ENS_TTA_CROPS }, &y,
                       &e) == PT_OK);
    long long n1, n2;
    int k1, k2;
    double *p = val_probs(y, f->demo, &n1, &k1);
    ens_close(y);
    T_REQUIRE(ens_open((const char *[]){ f->b }, 1, NULL, (const int[]){ ENS_TTA_NONE }, &y,
                       &e) == PT_OK);
    double *q = val_probs(y, f->demo, &n2, &k2);
    T_REQUIRE(p && q && n1 == n2 && k1 == k2);
    double moved = 0;
    for (long long i = 0; i < n1 * k1; i++)
        moved = fmax(moved, fabs(p[i] - q[i]));
    T_CHECKF(moved > 1e-3, "crops moved no probability by more than %g", moved);
    free(p);
    free(q);
    ens_close(x);
    ens_close(y);
}
