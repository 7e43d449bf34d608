/* The program at the common wrong turns of issue 42 (run as a user would): what each
 * says, and with which exit status. */
#include "tests/t.h"
#include "tests/fixtures.h"
#include "base/util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Runs "BIN ARGS" in the folder cwd with stdout and stderr apart; both texts malloc'd
 * (caller frees). */
static int run_in(const char *cwd, const char *args, char **out, char **err)
{
    char cmd[8192], path[4200], bin[4096];
    if (!realpath(t_bin(), bin))
        snprintf(bin, sizeof bin, "%s", t_bin());
    util_path(cmd, sizeof cmd, "cd '%s' && '%s' %s >stdout 2>stderr", cwd, bin, args);
    int rc = t_run(cmd, NULL);
    size_t len;
    util_path(path, sizeof path, "%s/stdout", cwd);
    if (util_read_file(path, (uint8_t **)out, &len, NULL) != PT_OK)
        *out = strdup("");
    util_path(path, sizeof path, "%s/stderr", cwd);
    if (util_read_file(path, (uint8_t **)err, &len, NULL) != PT_OK)
        *err = strdup("");
    unlink(path);
    util_path(path, sizeof path, "%s/stdout", cwd);
    unlink(path);
    return rc;
}

/* The same in a fresh folder of its own. */
static int run_bin(const char *args, char **out, char **err)
{
    return run_in(t_tmpdir(), args, out, err);
}

/* predict's options: an unknown one is called unknown (with the one meant, when one is
 * near), not "needs a value (or is unknown)"; a known one without its value says so. */
TEST(cli_edges_predict_names_an_unknown_option_and_a_missing_value)
{
    static const struct {
        const char *args, *want;
    } cases[] = {
        { "predict m.onnx a.jpg --bogus", "predict: unknown option '--bogus' (petal-tui predict --help" },
        { "predict m.onnx a.jpg --siz 64", "unknown option '--siz' (did you mean --size?" },
        { "predict m.onnx a.jpg --size", "predict: --size needs a value" },
        { "predict m.onnx a.jpg --tta both", "predict: --tta wants none, flip, crops or flip+crops, not 'both'" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out, *err;
        int rc = run_bin(cases[i].args, &out, &err);
        T_CHECKF(rc != 0 && strstr(err, cases[i].want) && !strstr(err, "or is unknown") && !*out,
                 "%s: exit %d, stderr: %s", cases[i].args, rc, err);
        free(out);
        free(err);
    }
}

/* shards --size takes what training takes (--image-size's least, 32): 10 was accepted
 * and training on the shards then failed. */
TEST(cli_edges_shards_size_has_training_s_minimum)
{
    char *out, *err;
    int rc = run_bin("shards photos made --size 10", &out, &err);
    T_CHECKF(rc == 1 && strstr(err, "--size wants a whole number from 32 to 4096, not '10'"),
             "exit %d, stderr: %s", rc, err);
    free(out);
    free(err);
    rc = run_bin("shards photos made --size 31", &out, &err);
    T_CHECKF(rc == 1 && strstr(err, "from 32"), "31: exit %d, stderr: %s", rc, err);
    free(out);
    free(err);
    /* 32 passes the check: what fails then is the missing photos folder, named. */
    rc = run_bin("shards photos made --size 32", &out, &err);
    T_CHECKF(rc != 0 && !strstr(err, "--size") && strstr(err, "photos"), "32: exit %d, stderr: %s",
             rc, err);
    free(out);
    free(err);
}

/* Every "see petal-tui(1), SECTION" a --help text cites names a section of the man page
 * (export's cited an EXPORT section there is none of). */
TEST(cli_edges_help_texts_cite_sections_the_man_page_has)
{
    uint8_t *man;
    size_t len;
    pt_err e;
    T_REQUIRE(util_read_file("man/petal-tui.1", &man, &len, &e) == PT_OK);
    static const char *const helps[] = { "--help", "inspect --help", "shards --help",
                                         "demo --help", "lr-schedule --help", "preview --help",
                                         "classify --help", "model --help", "events --help",
                                         "predict --help", "ensemble --help", "export --help",
                                         "explain --help" };
    int cited = 0;
    for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++) {
        char *out, *err;
        run_bin(helps[i], &out, &err);
        T_CHECKF(*out, "%s printed nothing on stdout", helps[i]);
        for (const char *p = out; (p = strstr(p, "petal-tui(1), ")); p++) {
            const char *s = p + strlen("petal-tui(1), ");
            size_t n = 0;
            while ((s[n] >= 'A' && s[n] <= 'Z') || (s[n] == ' ' && s[n + 1] >= 'A' && s[n + 1] <= 'Z'))
                n++;
            char want[80];
            snprintf(want, sizeof want, ".SH %.*s\n", (int)n, s);
            T_CHECKF(n > 0 && strstr((const char *)man, want),
                     "%s cites petal-tui(1), '%.*s': no such section", helps[i], (int)n, s);
            cited++;
        }
        free(out);
        free(err);
    }
    T_CHECK(cited >= 2);
    free(man);
}

/* --data on a folder of class folders of photos (what `shards` takes) names `shards`,
 * with the folder, instead of only "no dataset here". */
TEST(cli_edges_data_on_photo_class_folders_names_shards)
{
    const char *dir = t_tmpdir();
    char path[4300], args[8192];
    static const char *const files[] = { "photos/daisy/1.jpg", "photos/tulips/2.JPEG",
                                         "photos/roses/3.png" };
    util_path(path, sizeof path, "%s/photos", dir);
    for (size_t i = 0; i < 3; i++) {
        char f[4300], sub[4300];
        util_path(f, sizeof f, "%s/%s", dir, files[i]);
        snprintf(sub, sizeof sub, "%s", f);
        *strrchr(sub, '/') = '\0';
        T_REQUIRE(util_mkdirs(sub, NULL) == PT_OK);
        T_REQUIRE(util_write_file_atomic(f, "x", 1, NULL) == PT_OK);
    }
    util_path(args, sizeof args, "--headless --data '%s' --epochs 1 --out '%s/run'", path, dir);
    char *out, *err;
    int rc = run_bin(args, &out, &err);
    T_CHECKF(rc == 2 && strstr(err, "a folder of 3 class folders of images, not shards") &&
                 strstr(err, "petal-tui shards") && strstr(err, path),
             "exit %d, stderr: %s", rc, err);
    free(out);
    free(err);
}

/* An option that begins several (--lr, --lr-s) lists them; an unknown one near a real one
 * names it; a unique prefix still works as getopt_long takes it. */
TEST(cli_edges_ambiguous_and_unknown_training_options_name_the_options_meant)
{
    static const struct {
        const char *args, *want;
    } cases[] = {
        { "--headless --lr 0.1", "option '--lr' is ambiguous: it begins --lr-start, --lr-max, --lr-end" },
        { "--headless --lr-s 0.1", "option '--lr-s' is ambiguous: it begins --lr-start, --lr-scaling" },
        { "--headless --no-colr", "unknown option '--no-colr' (did you mean --no-color?" },
        { "--headless --bogus", "unknown option '--bogus' (petal-tui --help lists them)" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out, *err;
        int rc = run_bin(cases[i].args, &out, &err);
        T_CHECKF(rc == 1 && strstr(err, cases[i].want), "%s: exit %d, stderr: %s", cases[i].args,
                 rc, err);
        free(out);
        free(err);
    }
    /* A unique prefix: --epoch is --epochs, so its bad value is --epochs'. */
    char *out, *err;
    int rc = run_bin("--headless --epoch 0", &out, &err);
    T_CHECKF(rc == 1 && strstr(err, "epochs"), "--epoch 0: exit %d, stderr: %s", rc, err);
    free(out);
    free(err);
}

/* One exit-status rule for every command (the man page's EXIT STATUS): an unknown option
 * is a usage error, exit 1, and the option is named, in each subcommand. Before, predict
 * and ensemble exited 2 for it, and predict and lr-schedule called it a missing value. */
TEST(cli_edges_every_subcommand_calls_an_unknown_option_usage_exit_1)
{
    static const char *const cmds[] = { "", "predict m.onnx a.jpg", "ensemble r --data d",
                                        "export r", "model m.onnx", "classify m.onnx a.jpg",
                                        "events r", "shards a b", "inspect p", "preview",
                                        "lr-schedule", "demo" };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char args[512], *out, *err;
        snprintf(args, sizeof args, "%s --bogus", cmds[i]);
        int rc = run_bin(args, &out, &err);
        T_CHECKF(rc == 1 && strstr(err, "'--bogus'") && !strstr(err, "needs a value"),
                 "'%s': exit %d, stderr: %s", args, rc, err);
        free(out);
        free(err);
    }
}

/* --resume of a finished run: it says the run is finished and how to continue it, exits 1
 * and leaves the run's files as they were (it printed "resumed ... at update U", trained
 * nothing and exited 0); with --epochs above the run's it trains on. */
TEST(cli_edges_resume_of_a_finished_run_says_so_and_how_to_continue)
{
    const char *dir = t_tmpdir();
    long long train[2] = { 24, 24 }, val[2] = { 8, 8 };
    const char *data = fx_dataset(dir, 2, train, val, 0, 32, 20);
    T_REQUIRE(data);
    char args[8192], run[4200], hist[4300];
    util_path(run, sizeof run, "%s/run", dir);
    util_path(args, sizeof args, "--headless --data '%s' --epochs 1 --batch-per-replica 8 "
              "--replicas 1 --out '%s'", data, run);
    char *out, *err;
    int rc = run_bin(args, &out, &err);
    T_CHECKF(rc == 0, "training: exit %d: %s", rc, err);
    free(out);
    free(err);
    util_path(hist, sizeof hist, "%s/history.json", run);
    char *before = fx_slurp(hist);
    T_REQUIRE(before);
    util_path(args, sizeof args, "--headless --resume '%s'", run);
    rc = run_bin(args, &out, &err);
    T_CHECKF(rc == 1 && strstr(err, "the run is finished: epoch 1 of 1 done") &&
                 strstr(err, "--epochs N with N above 1 continues it") &&
                 !strstr(out, "resumed") && !strstr(out, "done:"),
             "exit %d\nstdout: %s\nstderr: %s", rc, out, err);
    free(out);
    free(err);
    char *after = fx_slurp(hist);
    T_CHECK(after && !strcmp(before, after));
    free(after);
    util_path(args, sizeof args, "--headless --resume '%s' --epochs 2", run);
    rc = run_bin(args, &out, &err);
    T_CHECKF(rc == 0 && strstr(out, "done: 2 epochs"), "--epochs 2: exit %d\n%s%s", rc, out,
             err);
    free(out);
    free(err);
    free(before);
}

/* A start that fails before its first update (a --model that is no ONNX file) removes the
 * run folder it made, under runs/ or at --out, and leaves one it did not make (a resumed
 * run's) as it was. */
TEST(cli_edges_a_failed_start_leaves_no_run_folder)
{
    const char *dir = t_tmpdir();
    long long train[2] = { 24, 24 }, val[2] = { 8, 8 };
    const char *data = fx_dataset(dir, 2, train, val, 0, 32, 20);
    T_REQUIRE(data);
    char bad[4200], args[8192], path[4300];
    util_path(bad, sizeof bad, "%s/bad.onnx", dir);
    T_REQUIRE(util_write_file_atomic(bad, "junk\n", 5, NULL) == PT_OK);
    util_path(args, sizeof args, "--headless --data '%s' --model '%s' --epochs 1", data, bad);
    char *out, *err;
    int rc = run_in(dir, args, &out, &err);
    T_CHECKF(rc == 2 && strstr(err, "bad.onnx"), "exit %d: %s", rc, err);
    free(out);
    free(err);
    util_path(args, sizeof args, "%s/runs", dir);
    char **left;
    int n_left = 0;
    if (util_list_dir(args, UTIL_LIST_ALL, &left, &n_left, NULL) == PT_OK) {
        T_CHECKF(n_left == 0, "%s/%s is left behind", args, n_left ? left[0] : "");
        util_free_list(left, n_left);
    }
    util_path(args, sizeof args, "--headless --data '%s' --model '%s' --epochs 1 --out '%s/o'",
              data, bad, dir);
    rc = run_bin(args, &out, &err);
    T_CHECKF(rc == 2, "--out: exit %d: %s", rc, err);
    free(out);
    free(err);
    util_path(path, sizeof path, "%s/o", dir);
    T_CHECKF(!util_is_dir(path), "%s is left behind", path);
}

/* An export says which update it holds, and predict says when the run has trained past
 * it (export, then --resume --epochs 2: the file and the run answered differently with
 * nothing said); exported again, nothing is said. */
TEST(cli_edges_a_stale_export_is_said_by_predict)
{
    const char *dir = t_tmpdir();
    long long train[2] = { 24, 24 }, val[2] = { 8, 8 };
    const char *data = fx_dataset(dir, 2, train, val, 0, 32, 20);
    T_REQUIRE(data);
    char args[8192], run[4200];
    util_path(run, sizeof run, "%s/run", dir);
    static const char *const steps[] = {
        "--headless --data '%s' --epochs 1 --batch-per-replica 8 --replicas 1 --out '%s'",
        "export '%s'%.0s", "--headless --resume '%s' --epochs 2%.0s" };
    char *out, *err;
    for (int k = 0; k < 3; k++) {
        if (k == 0)
            util_path(args, sizeof args, steps[0], data, run);
        else
            util_path(args, sizeof args, steps[k], run, "");
        int rc = run_bin(args, &out, &err);
        T_CHECKF(rc == 0, "%s: exit %d: %s", args, rc, err);
        if (k == 1)
            T_CHECKF(strstr(err, "epoch 1 (the last), update 6,"), "export says: %s", err);
        free(out);
        free(err);
    }
    util_path(args, sizeof args, "predict '%s/model.onnx' '%s' --split val", run, data);
    int rc = run_bin(args, &out, &err);
    T_CHECKF(rc == 0 && strstr(err, "model.onnx holds update 6 (epoch 1) of ") &&
                 strstr(err, "the run is now at update 12 (epoch 2)") &&
                 strstr(err, "petal-tui export ") && strstr(out, "id,label"),
             "exit %d\n%s", rc, err);
    free(out);
    free(err);
    util_path(args, sizeof args, "predict '%s' '%s' --split val", run, data);
    rc = run_bin(args, &out, &err);
    T_CHECKF(rc == 0 && strstr(err, "holds update 6 (epoch 1)"), "the run: exit %d\n%s", rc, err);
    free(out);
    free(err);
    util_path(args, sizeof args, "export '%s'", run);
    T_CHECK(run_bin(args, &out, &err) == 0);
    free(out);
    free(err);
    util_path(args, sizeof args, "predict '%s/model.onnx' '%s' --split val", run, data);
    rc = run_bin(args, &out, &err);
    T_CHECKF(rc == 0 && !strstr(err, "holds update"), "refreshed: exit %d\n%s", rc, err);
    free(out);
    free(err);
}

/* A run folder holds what it needs: made with relative --data and --model in one folder,
 * it predicts, exports and resumes from another, after the ONNX file it was built from
 * is deleted (its copy, source.onnx, rebuilds the graph); when its dataset is gone,
 * --resume says the path came from the run and that --data overrides it. */
TEST(cli_edges_a_run_folder_works_from_anywhere_without_its_source_file)
{
    const char *dir = t_tmpdir();
    long long train[2] = { 24, 24 }, val[2] = { 8, 8 };
    T_REQUIRE(fx_dataset(dir, 2, train, val, 0, 32, 20));
    char a[4200], b[4200], net[4300], args[8192], fixture[4096];
    util_path(a, sizeof a, "%s/a", dir);
    util_path(b, sizeof b, "%s/b", dir);
    T_REQUIRE(util_mkdirs(a, NULL) == PT_OK && util_mkdirs(b, NULL) == PT_OK);
    T_REQUIRE(realpath("tests/data/export/small-8-16.onnx", fixture));
    util_path(net, sizeof net, "%s/net.onnx", a);
    util_path(args, sizeof args, "cp '%s' '%s' && mv '%s/tfrecords-jpeg-32x32' '%s/photos'",
              fixture, net, dir, a);
    T_REQUIRE(t_run(args, NULL) == 0);
    char *out, *err;
    int rc = run_in(a, "--headless --data photos --model net.onnx --epochs 1 --image-size 32 "
                       "--batch-per-replica 8 --replicas 1 --out runs/r1", &out, &err);
    T_CHECKF(rc == 0, "training: exit %d: %s", rc, err);
    free(out);
    free(err);
    T_REQUIRE(unlink(net) == 0);
    char run[4300];
    util_path(run, sizeof run, "%s/runs/r1", a);
    util_path(args, sizeof args, "export '%s'", run);
    rc = run_in(b, args, &out, &err);
    T_CHECKF(rc == 0 && strstr(err, "exported"), "export: exit %d: %s", rc, err);
    free(out);
    free(err);
    util_path(args, sizeof args, "predict '%s' '%s/photos' --split val", run, a);
    rc = run_in(b, args, &out, &err);
    T_CHECKF(rc == 0 && strstr(out, "id,label"), "predict: exit %d: %s", rc, err);
    free(out);
    free(err);
    util_path(args, sizeof args, "--headless --resume '%s' --epochs 2", run);
    rc = run_in(b, args, &out, &err);
    T_CHECKF(rc == 0 && strstr(out, "done: 2 epochs"), "resume: exit %d: %s%s", rc, out, err);
    free(out);
    free(err);
    /* The dataset moved: the run's path named, and --data as the way on. */
    util_path(args, sizeof args, "mv '%s/photos' '%s/moved'", a, a);
    T_REQUIRE(t_run(args, NULL) == 0);
    util_path(args, sizeof args, "--headless --resume '%s' --epochs 3", run);
    rc = run_in(b, args, &out, &err);
    T_CHECKF(rc == 1 && strstr(err, "the run's dataset") && strstr(err, "/a/photos") &&
                 strstr(err, "--data DIR resumes it"),
             "data gone: exit %d: %s", rc, err);
    free(out);
    free(err);
    util_path(args, sizeof args, "--headless --resume '%s' --epochs 3 --data '%s/moved'", run, a);
    rc = run_in(b, args, &out, &err);
    T_CHECKF(rc == 0 && strstr(out, "done: 3 epochs"), "--data: exit %d: %s%s", rc, out, err);
    free(out);
    free(err);
}
