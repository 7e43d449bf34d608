/* The petal-tui program itself: help, version, inspect, shards (run as a user would). */
#include "tests/t.h"
#include "tests/fixtures.h"

#include <stdlib.h>

static int run(char **out, const char *fmt, const char *arg1, const char *arg2)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, fmt, t_bin(), arg1 ? arg1 : "", arg2 ? arg2 : "");
    return t_run(cmd, out);
}

TEST(cli_help_and_version)
{
    char *out;
    T_EQ_INT(run(&out, "%s --version", NULL, NULL), 0);
    T_CHECK(strncmp(out, "petal-tui ", 10) == 0);
    free(out);
    T_EQ_INT(run(&out, "%s --help", NULL, NULL), 0);
    T_CHECK(strstr(out, "inspect") && strstr(out, "shards"));
    free(out);
    T_EQ_INT(run(&out, "%s --no-such-option", NULL, NULL), 1);
    T_CHECK(strstr(out, "--no-such-option") != NULL);
    free(out);
    T_EQ_INT(run(&out, "%s shards --size 3 a b", NULL, NULL), 1);
    T_CHECK(strstr(out, "--size wants a whole number from 32") != NULL);
    free(out);
}

TEST(cli_inspect_tf_written_singles)
{
    /* Written by TensorFlow; vendored (tests/data/tfrecord/ORIGIN.md). */
    char *out;
    int rc = run(&out, "%s inspect '%s'", "tests/data/tfrecord/singles.tfrecords", NULL);
    T_EQ_INT(rc, 0);
    T_CHECK(strstr(out, "int_feature int64[1] = 42") != NULL);
    T_CHECK(strstr(out, "float_feature float[1] = 3.14") != NULL);
    T_CHECK(strstr(out, "byte_feature bytes[1] = \"@ABCD\"") != NULL);
    T_CHECK(strstr(out, "total: 3 records") != NULL);
    free(out);
}

TEST(cli_inspect_deeplab_folder_reports_sizes_and_no_damage)
{
    T_NEED_DATA();
    char *out;
    int rc = run(&out, "%s inspect '%s'", t_data("tf-written-tfrecords/tf-models-testdata"), NULL);
    T_EQ_INT(rc, 0);
    T_CHECK(strstr(out, "500x366 (1) 500x335 (1) 500x333 (1)") != NULL);
    T_CHECK(strstr(out, "image/encoded") && strstr(out, "JPEG 500x366"));
    T_CHECK(strstr(out, "total: 3 records") != NULL);
    free(out);
}

TEST(cli_inspect_damaged_files_exit_nonzero_with_locations)
{
    T_NEED_DATA();
    char *out;
    int rc = run(&out, "%s inspect '%s'", t_data("tf-written-tfrecords/crlf-damaged"), NULL);
    T_EQ_INT(rc, 2);
    T_CHECK(strstr(out, "pets_examples.record: record 0 at byte 0: payload crc mismatch") != NULL);
    T_CHECK(strstr(out, "pets_examples.record: record 1 at byte 18446: length crc mismatch") != NULL);
    T_CHECK(strstr(out, "snapshot_serengeti_sequence_examples.record: record 0 at byte 0: truncated") !=
            NULL);
    free(out);
    rc = run(&out, "%s inspect '%s'",
             t_data("tf-written-tfrecords/crlf-damaged/pets_examples.record"), NULL);
    T_EQ_INT(rc, 2);
    free(out);
}

TEST(cli_inspect_tensorboard_events_are_intact_but_not_examples)
{
    T_NEED_DATA();
    char *out;
    int rc = run(&out, "%s inspect '%s'",
                 t_data("tf-written-tfrecords/tfevents-petals/20250321-152615/train"), NULL);
    T_EQ_INT(rc, 0);
    T_CHECK(strstr(out, "a TensorBoard event file") != NULL);
    T_CHECK(strstr(out, "total: 50 records") != NULL);
    free(out);
}

TEST(cli_shards_from_real_photos_then_inspect_totals_4317)
{
    T_NEED_DATA();
    const char *dir = t_tmpdir();
    char *out;
    int rc = run(&out, "%s shards '%s' '%s/out' --size 64 --val 0.2", t_data("flower-jpegs-128"),
                 dir);
    T_EQ_INT(rc, 0);
    T_CHECKF(strstr(out, "total: 4317 records") != NULL, "%s", out);
    free(out);
    char ds[4096];
    snprintf(ds, sizeof ds, "%s/out", dir);
    rc = run(&out, "%s inspect '%s'", ds, NULL);
    T_EQ_INT(rc, 0);
    T_CHECK(strstr(out, "total: 4317 records") != NULL);
    T_CHECK(strstr(out, "image sizes: 64x64 (3453)") != NULL);
    /* Stratified: each class's val share is 20% of it, rounded. */
    T_CHECK(strstr(out, "daisy                           611      153") != NULL);
    T_CHECK(strstr(out, "dandelion                       842      210") != NULL);
    free(out);
    /* Refuses to overwrite an existing dataset. */
    rc = run(&out, "%s shards '%s' '%s/out' --size 64", t_data("flower-jpegs-128"), dir);
    T_EQ_INT(rc, 1);
    T_CHECK(strstr(out, "already exists") != NULL);
    free(out);
}

TEST(cli_shards_test_split_gets_ids_not_classes)
{
    const char *dir = t_tmpdir();
    char photos[4096];
    snprintf(photos, sizeof photos, "%s/photos", dir);
    T_REQUIRE(fx_photo_folder(photos, 3, 10, 64) != NULL);
    char *out;
    int rc = run(&out, "%s shards '%s' '%s' --size 32 --val 0.1 --test 0.1 --per-shard 1000", photos,
                 dir);
    T_EQ_INT(rc, 0);
    free(out);
    char test_dir[4096];
    snprintf(test_dir, sizeof test_dir, "%s/tfrecords-jpeg-32x32/test", dir);
    rc = run(&out, "%s inspect --records 1 '%s'", test_dir, NULL);
    T_EQ_INT(rc, 0);
    T_CHECK(strstr(out, "class") == NULL);
    T_CHECK(strstr(out, " id bytes[1] = \"") != NULL);
    free(out);
}

TEST(cli_lr_schedule_prints_the_warmup_and_decay)
{
    char *out;
    int rc = run(&out, "%s lr-schedule --epochs 10 --updates-per-epoch 100 --lr-start 1e-5 "
                       "--lr-max 1e-3 --lr-end 1e-5 --warmup 0.2 --schedule linear --rows 10%s%s",
                 NULL, NULL);
    T_EQ_INT(rc, 0);
    T_CHECK(strstr(out, "warmup 200 updates") != NULL);
    T_CHECK(strstr(out, "         0       1   1.000000e-05") != NULL);
    T_CHECK(strstr(out, "       200       3   1.000000e-03") != NULL);
    T_CHECK(strstr(out, "       999      10   1.123750e-05") != NULL);
    free(out);
    T_EQ_INT(run(&out, "%s lr-schedule --schedule step%s%s", NULL, NULL), 1);
    free(out);
}

TEST(cli_preview_writes_a_png_grid_of_shards_made_from_photo_folders)
{
    T_NEED_TOOL("file");
    const char *dir = t_tmpdir();
    char photos[4096];
    snprintf(photos, sizeof photos, "%s/photos", dir);
    T_REQUIRE(fx_photo_folder(photos, 2, 4, 96) != NULL);
    char *out;
    int rc = run(&out, "%s shards '%s' '%s/ds' --size 64 --per-shard 2000", photos, dir);
    T_REQUIRE(rc == 0);
    free(out);
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "%s preview --data '%s/ds' --augment perspective:1.0,flip:0.5 --count 6 --cols 3 "
             "--out '%s/p.png' && file -b '%s/p.png'",
             t_bin(), dir, dir, dir);
    rc = t_run(cmd, &out);
    T_EQ_INT(rc, 0);
    T_CHECKF(strstr(out, "wrote ") && strstr(out, "6 images") && strstr(out, "PNG image data"),
             "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s preview --augment bogus:0.5 --out '%s/q.png'", t_bin(), dir);
    rc = t_run(cmd, &out);
    T_EQ_INT(rc, 1);
    T_CHECK(strstr(out, "bogus") != NULL);
    free(out);
}

#include "base/util.h"
#include "engine.h"

TEST(cli_help_and_man_page_document_every_option)
{
    size_t n;
    const cfg_option *t = cfg_options(&n);
    T_REQUIRE(n > 20);
    char *help;
    T_REQUIRE(run(&help, "%s --help%s%s", NULL, NULL) == 0);
    uint8_t *man;
    size_t len;
    pt_err e;
    T_REQUIRE(util_read_file("man/petal-tui.1", &man, &len, &e) == PT_OK);
    for (size_t i = 0; i < n; i++) {
        char opt[96], roff[128];
        if (!(t[i].where & CFG_CLI))
            continue;
        util_fmt(opt, sizeof opt, "--%s", t[i].name);
        /* roff writes each dash as \- */
        size_t k = 0;
        for (const char *p = opt; *p && k + 3 < sizeof roff; p++) {
            if (*p == '-')
                roff[k++] = '\\';
            roff[k++] = *p;
        }
        roff[k] = '\0';
        T_CHECKF(strstr(help, opt) != NULL, "--help lacks %s", opt);
        T_CHECKF(strstr((char *)man, roff) != NULL, "the man page lacks %s", opt);
    }
    const char *more[] = { "--headless", "--no-sixel", "--no-color", "--config", "--tty" };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
        T_CHECKF(strstr(help, more[i]) != NULL, "--help lacks %s", more[i]);
    T_CHECKF(strstr((char *)man, "\\-\\-tty") != NULL, "the man page lacks --tty");
    /* A font change is \fB ... \fR: a "B\-\-" or "I\-\-" without its \f renders as a
     * stray letter before the option (issue 30, defect 11). */
    for (const char *p = (char *)man; (p = strstr(p, "\\-\\-")) != NULL; p++)
        if (p - (char *)man >= 1 && (p[-1] == 'B' || p[-1] == 'I'))
            T_CHECKF(p - (char *)man >= 3 && p[-2] == 'f' && p[-3] == '\\',
                     "a font escape without its \\f: %.40s", p - 1);
    /* The option rows, generated from the table, fit 80 columns and say the defaults. */
    for (const char *line = strstr(help, "\n  --"); line; line = strstr(line + 1, "\n  ")) {
        size_t cols = strcspn(line + 1, "\n");
        T_CHECKF(cols < 80, "%zu columns: %.*s", cols, (int)cols, line + 1);
    }
    T_CHECK(strstr(help, "  --epochs N               epochs to train (default: 10)\n") != NULL);
    T_CHECK(strstr(help, "(default: the built-in demo flowers)") != NULL);
    free(help);
    free(man);
}

/* The training options as a user types them: each case exits before training, with
 * a usage error (1) or at a missing dataset (2) whose path tells which value won.
 * '@' in the arguments stands for the scratch folder. */
TEST(cli_training_options_spellings_errors_and_precedence)
{
    const char *dir = t_tmpdir();
    char path[4200];
    util_path(path, sizeof path, "%s/cfg", dir);
    FILE *f = fopen(path, "w");
    T_REQUIRE(f != NULL);
    fprintf(f, "data = /nonexistent/from-config\nepochs = 3\n");
    fclose(f);
    util_path(path, sizeof path, "%s/run", dir);
    T_REQUIRE(util_mkdirs(path, NULL) == PT_OK);
    util_path(path, sizeof path, "%s/run/config", dir);
    f = fopen(path, "w");
    T_REQUIRE(f != NULL);
    fprintf(f, "data = /nonexistent/from-run\n");
    fclose(f);
    static const struct {
        const char *args;
        int rc;
        const char *out;
    } cases[] = {
        { "--config @/cfg", 2, "petal-tui: /nonexistent/from-config: no such dataset folder" },
        { "--config @/cfg --resume @/run", 1, "the run's dataset /nonexistent/from-run" },
        { "--config=@/cfg --resume=@/run --data /nonexistent/cli", 2, "/nonexistent/cli: no such" },
        { "--data=/nonexistent/cli --config @/cfg", 2, "/nonexistent/cli: no such" },
        { "--bogus", 1, "petal-tui: unknown option '--bogus' (petal-tui --help lists them)" },
        { "--bogus=3", 1, "petal-tui: unknown option '--bogus' (petal-tui --help lists them)" },
        { "--epochs", 1, "petal-tui: --epochs needs a value" },
        { "foo", 1, "petal-tui: unexpected argument 'foo' (try --help)" },
        { "-x", 1, "petal-tui: unexpected argument '-x' (try --help)" },
        { "--deterministic maybe", 1, "petal-tui: unexpected argument 'maybe' (try --help)" },
        { "--deterministic no --epochs 0", 1,
          "petal-tui: epochs wants a whole number from 1 to 1000, not '0'" },
        { "--no-deterministic --epochs=0", 1, "not '0'" },
        { "--freeze-backbone --stop-on-data-error yes --epochs=-1", 1, "not '-1'" },
        { "--deterministic=maybe", 1, "petal-tui: deterministic wants yes or no, not 'maybe'" },
        { "--overlap auto --epochs 0", 1, "epochs wants a whole number from 1 to 1000, not '0'" },
        { "--overlap=maybe", 1, "petal-tui: overlap wants yes, no or auto, not 'maybe'" },
        { "--no-overlap=auto", 1, "petal-tui: --no-overlap takes no value" },
        { "--lr-start -1", 1, "lr-start wants a number from 0 to 1e+09, not '-1'" },
        { "--no-color --no-sixel --config @/cfg", 2, "/nonexistent/from-config: no such" },
        { "--resume nowhere", 1, "nowhere: no run folder with a config file to resume" },
        { "--config", 1, "petal-tui: --config needs a value" },
        { "--no-color=1", 1, "petal-tui: --no-color takes no value (try --help)" },
        { "--no-deterministic=no", 1, "petal-tui: --no-deterministic takes no value" },
        { "-- foo", 1, "petal-tui: unknown option '--' (try --help)" },
        { "--lr 1", 1, "petal-tui: option '--lr' is ambiguous: it begins --lr-start, --lr-max, "
                      "--lr-end, --lr-scaling (petal-tui --help lists them)" },
        { "--epoch 0", 1, "epochs wants a whole number" },                 /* a prefix of one */
        { "--config @/cfg --config=@/none", 1, "none: cannot open" },      /* the last wins */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[4096], cmd[8192], *out;
        size_t k = 0;
        for (const char *p = cases[i].args; *p && k + 1 < sizeof args; p++)
            if (*p == '@')
                k += (size_t)snprintf(args + k, sizeof args - k, "%s", dir);
            else
                args[k++] = *p;
        args[k < sizeof args ? k : sizeof args - 1] = 0;
        util_path(cmd, sizeof cmd, "XDG_CONFIG_HOME=/nonexistent '%s' --headless %s", t_bin(),
                  args);
        int rc = t_run(cmd, &out);
        T_CHECKF(rc == cases[i].rc && strstr(out, cases[i].out), "%s: %d %s", cases[i].args, rc,
                 out);
        free(out);
    }
}

TEST(cli_make_install_honours_prefix_and_destdir)
{
    /* Install the binary under test (its build folder) into a scratch root. */
    char bin[4096];
    util_copy(bin, sizeof bin, t_bin());
    char *slash = strrchr(bin, '/');
    T_REQUIRE(slash);
    *slash = '\0';
    const char *dir = t_tmpdir();
    char cmd[8192], *out;
    util_path(cmd, sizeof cmd,
              "make --no-print-directory -s install BUILD='%s' PREFIX=/opt/pt DESTDIR='%s/root' "
              "&& '%s/root/opt/pt/bin/petal-tui' --version",
              bin, dir, dir);
    int rc = t_run(cmd, &out);
    T_EQ_INT(rc, 0);
    T_CHECKF(strstr(out, "petal-tui ") != NULL, "%s", out);
    free(out);
    const char *files[] = { "opt/pt/share/man/man1/petal-tui.1",
                            "opt/pt/share/petal-tui/classes-104.txt",
                            "opt/pt/share/petal-tui/config.example" };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        util_path(cmd, sizeof cmd, "%s/root/%s", dir, files[i]);
        T_CHECKF(util_is_file(cmd), "missing %s", files[i]);
    }
}

TEST(cli_classify_the_zoo_mobilenetv2_says_daisy)
{
    T_NEED_DATA();
    char *out;
    T_EQ_INT(run(&out, "%s classify %s %s --top 3 2>&1",
                 t_data("weights/mobilenetv2-12-int8.onnx"),
                 t_data("flower-jpegs-128/daisy/100080576_f52e8ee070_n.jpg")),
             0);
    T_CHECKF(strstr(out, "   985  daisy") != NULL, "%s", out);
    free(out);
}

TEST(cli_model_and_classify_an_onnx_graph)
{
    char *out;
    /* The layers an exported net becomes, and what a new head replaces. */
    T_EQ_INT(run(&out, "%s model tests/data/import/blocks.onnx --size 32 --classes 3 2>&1", NULL,
                 NULL),
             0);
    T_CHECKF(strstr(out, "27 ONNX nodes") && strstr(out, "cut for the new head: Gemm") &&
                 strstr(out, "dense 3"),
             "%s", out);
    free(out);
    /* Errors: an operator it cannot map, an image that is not a JPEG, no image. */
    T_EQ_INT(run(&out, "%s classify tests/data/import/unsupported.onnx README.md 2>&1", NULL,
                 NULL),
             2);
    T_CHECKF(strstr(out, "node 1 'squash' (Tanh)") != NULL, "%s", out);
    free(out);
    T_EQ_INT(run(&out, "%s classify tests/data/import/blocks.onnx README.md --size 32 --norm none 2>&1",
                 NULL, NULL),
             2);
    T_CHECKF(strstr(out, "README.md") != NULL, "%s", out);
    free(out);
    /* A PNG is read too (here a picture the preview command wrote); a damaged one
     * is named. */
    const char *dir = t_tmpdir();
    char png[4200], cut[4200];
    util_path(png, sizeof png, "%s/grid.png", dir);
    util_path(cut, sizeof cut, "%s/cut.png", dir);
    T_EQ_INT(run(&out, "%s preview --image-size 32 --count 1 --out %s 2>&1", png, NULL), 0);
    free(out);
    T_EQ_INT(run(&out, "%s classify tests/data/import/blocks.onnx %s --size 32 --top 3 2>&1", png,
                 NULL),
             0);
    T_CHECKF(strstr(out, "grid.png\n") && strchr(strchr(out, '%') + 1, '%') &&
                 strchr(strchr(strchr(out, '%') + 1, '%') + 1, '%'),
             "%s", out);
    free(out);
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "head -c 100 %s > %s", png, cut);
    T_EQ_INT(t_run(cmd, &out), 0);
    free(out);
    T_EQ_INT(run(&out, "%s classify tests/data/import/blocks.onnx %s --size 32 2>&1", cut, NULL),
             2);
    {
        /* The message names the cut chunk at its offset: where IDAT's header starts. */
        uint8_t *bytes;
        size_t n;
        T_REQUIRE(util_read_file(png, &bytes, &n, NULL) == PT_OK);
        size_t at = 0;
        while (at + 4 <= n && memcmp(bytes + at, "IDAT", 4) != 0)
            at++;
        free(bytes);
        T_REQUIRE(at >= 4 && at + 4 <= n && at < 100);
        char want[64];
        snprintf(want, sizeof want, "cut.png: byte %zu: PNG chunk 'IDAT'", at - 4);
        T_CHECKF(strstr(out, want) && strstr(out, "cut short"), "want '%s' in %s", want, out);
    }
    free(out);
    T_EQ_INT(run(&out, "%s classify tests/data/import/blocks.onnx 2>&1", NULL, NULL), 1);
    T_CHECKF(strstr(out, "usage: petal-tui classify") != NULL, "%s", out);
    free(out);
}


/* Runs cmd (a shell command line) with stdout and stderr into files of dir;
 * returns the exit status and both texts (malloc'd, caller frees). */
static int run_split(const char *dir, const char *cmd, char **out, char **err)
{
    char full[8192], path[4200];
    util_path(full, sizeof full, "%s >'%s/stdout' 2>'%s/stderr'", cmd, dir, dir);
    int rc = t_run(full, NULL);
    size_t len;
    util_path(path, sizeof path, "%s/stdout", dir);
    if (util_read_file(path, (uint8_t **)out, &len, NULL) != PT_OK)
        *out = strdup("");
    util_path(path, sizeof path, "%s/stderr", dir);
    if (util_read_file(path, (uint8_t **)err, &len, NULL) != PT_OK)
        *err = strdup("");
    return rc;
}

static int lines_of(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* An error reaches the person once, on stderr, as "petal-tui: WHAT: WHY", with
 * nothing of it on stdout; the workbench's refusals come before it needs a
 * terminal. '@' in the commands stands for the scratch folder, '%' for a small
 * dataset of 32-px shards. */
TEST(cli_errors_are_said_once_on_stderr_as_petal_tui_what_why)
{
    static const long long train[2] = { 8, 8 }, val[2] = { 4, 4 };
    const char *dir = t_tmpdir();
    const char *data = fx_dataset(dir, 2, train, val, 0, 32, 20);
    T_REQUIRE(data != NULL);
    char path[4200];
    util_path(path, sizeof path, "%s/empty", dir);
    T_REQUIRE(util_mkdirs(path, NULL) == PT_OK);
    util_path(path, sizeof path, "%s/file", dir);
    FILE *f = fopen(path, "w");
    T_REQUIRE(f != NULL);
    fclose(f);
    util_path(path, sizeof path, "%s/held", dir);
    T_REQUIRE(util_mkdirs(path, NULL) == PT_OK);
    util_path(path, sizeof path, "%s/held/checkpoint.ckpt", dir);
    T_REQUIRE((f = fopen(path, "w")) != NULL);
    fclose(f);
    /* A run folder to resume whose checkpoint is damaged: the run fails after its
     * folder is in use, where the trainer also logs the failure. */
    util_path(path, sizeof path, "%s/bad", dir);
    T_REQUIRE(util_mkdirs(path, NULL) == PT_OK);
    util_path(path, sizeof path, "%s/bad/config", dir);
    T_REQUIRE((f = fopen(path, "w")) != NULL);
    fprintf(f, "data = %s\nimage-size = 32\nreplicas = 1\nworkers = 1\n", data);
    fclose(f);
    util_path(path, sizeof path, "%s/bad/checkpoint.ckpt", dir);
    T_REQUIRE((f = fopen(path, "w")) != NULL);
    fprintf(f, "not a checkpoint");
    fclose(f);
    static const struct {
        const char *args;
        int rc;
        const char *err;    /* the start of the one line on stderr */
    } cases[] = {
        { "--headless --data @/empty", 2, "petal-tui: @/empty: no dataset here: " },
        { "--data @/empty </dev/null", 2, "petal-tui: @/empty: no dataset here: " },
        { "--headless --out @/file/run", 2,
          "petal-tui: --out @/file/run: cannot create the run folder: @/file: not a folder\n" },
        { "--headless --out @/held", 1, "petal-tui: @/held: holds a run already; " },
        { "--headless --resume @/bad", 2,
          "petal-tui: @/bad/checkpoint.ckpt: byte 0: not a petal-tui checkpoint\n" },
        { "--headless --resume @/file", 1,
          "petal-tui: @/file: no run folder with a config file to resume\n" },
        { "inspect @/nothing", 1, "petal-tui: @/nothing: no such file or folder\n" },
        { "demo --bogus", 1, "petal-tui: demo: unexpected argument '--bogus'\n" },
        /* --tty's PATH is checked before the dataset is read. */
        { "--tty @/nothing --data @/empty", 1, "petal-tui: @/nothing: not a terminal\n" },
        { "--tty @/file --data @/empty", 1, "petal-tui: @/file: not a terminal\n" },
        { "--tty /dev/null", 1, "petal-tui: /dev/null: not a terminal\n" },
        { "--headless --tty /dev/null", 1,
          "petal-tui: --tty is for the workbench, not --headless\n" },
        { "--headless --data % --out @/up --image-size 48 --epochs 1 --replicas 1 --workers 1 "
          "--batch-per-replica 8",
          0,
          "petal-tui: --image-size 48 upsamples the 32 px shards: 2.25x the compute per image "
          "for no more detail\n" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[4096], want[4096], cmd[8192], *out, *err;
        size_t k = 0, m = 0;
        for (const char *p = cases[i].args; *p && k + 1 < sizeof args; p++)
            if (*p == '@' || *p == '%')
                k += (size_t)snprintf(args + k, sizeof args - k, "%s", *p == '@' ? dir : data);
            else
                args[k++] = *p;
        args[k < sizeof args ? k : sizeof args - 1] = 0;
        for (const char *p = cases[i].err; *p && m + 1 < sizeof want; p++)
            if (*p == '@')
                m += (size_t)snprintf(want + m, sizeof want - m, "%s", dir);
            else
                want[m++] = *p;
        want[m < sizeof want ? m : sizeof want - 1] = 0;
        util_path(cmd, sizeof cmd, "XDG_CONFIG_HOME=/nonexistent '%s' %s", t_bin(), args);
        int rc = run_split(dir, cmd, &out, &err);
        T_CHECKF(rc == cases[i].rc, "%s: exit status %d, not %d", cases[i].args, rc, cases[i].rc);
        T_CHECKF(strncmp(err, want, strlen(want)) == 0 && lines_of(err) == 1,
                 "%s: stderr is not the one line \"%s\":\n%s", cases[i].args, want, err);
        /* stdout may hold the run's log, never the error again. */
        const char *why = strchr(want + strlen("petal-tui: "), ':');
        T_CHECKF(!strstr(out, "failed") && (cases[i].rc == 0 || !why || !strstr(out, why + 1)),
                 "%s: stdout repeats the error:\n%s", cases[i].args, out);
        free(out);
        free(err);
    }
    /* The run folder's log ends with the failure, dated. */
    util_path(path, sizeof path, "%s/bad", dir);
    int stamped;
    char *last = fx_log_last_line(path, &stamped);
    T_CHECKF(last && stamped && !strncmp(last, "failed: ", 8) &&
                 strstr(last, "checkpoint.ckpt: byte 0: not a petal-tui checkpoint"),
             "last line of log.txt: %s", last ? last : "(none)");
    free(last);
}

/* Debian's OpenBLAS falls back to Prescott's SSE3 kernels on a CPU newer than it
 * knows: petal-tui picks the kernels the CPU's features allow (src/blas_core.c), and
 * a user's own OPENBLAS_CORETYPE wins. */
TEST(cli_openblas_runs_the_kernels_the_cpu_can)
{
    char *out;
    T_EQ_INT(run(&out, "%s --version", NULL, NULL), 0);
    const char *k = strstr(out, "OpenBLAS kernels: ");
    T_REQUIRE(k != NULL);
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        T_CHECKF(strncmp(k + 18, "Prescott", 8) != 0, "%s", out);
    free(out);
    T_EQ_INT(run(&out, "OPENBLAS_CORETYPE=Prescott %s --version", NULL, NULL), 0);
    T_CHECKF(strstr(out, "OpenBLAS kernels: Prescott (OPENBLAS_CORETYPE)") != NULL, "%s", out);
    free(out);
    /* The same under another name: a binary installed as something else (not run by
     * another program, as valgrind runs it) is still restarted with the CPU's kernels. */
    char copy[4200], cmd[8600];
    util_path(copy, sizeof copy, "%s/flowers", t_tmpdir());
    T_EQ_INT(run(&out, "cp '%s' '%s'", copy, NULL), 0);
    free(out);
    util_path(cmd, sizeof cmd, "'%s' --version", copy);
    T_EQ_INT(t_run(cmd, &out), 0);
    k = strstr(out, "OpenBLAS kernels: ");
    T_REQUIRE(k != NULL);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        T_CHECKF(strncmp(k + 18, "Prescott", 8) != 0, "%s", out);
    free(out);
}

/* ---- events: the torn end a killed writer leaves (issue 42) ---- */

#include "io/tfrecord.h"

/* The header offsets of the records of an event file, into at; their count. */
static int record_offsets(const char *path, long long *at, int max)
{
    tfr_reader *r;
    pt_err e;
    if (tfr_open(&r, path, &e) != PT_OK)
        return -1;
    long long off;
    size_t len;
    int n = 0;
    while (n < max && tfr_skip(r, &off, &len, &e) == 1)
        at[n++] = off;
    tfr_close(r);
    return n;
}

/* dir/NAME: the first `bytes` bytes of from (then tail_from.. when tail_from >= 0). */
static const char *cut_copy(const char *from, const char *dir, const char *name, long long bytes,
                            long long tail_from)
{
    static char path[4400];
    uint8_t *d;
    size_t n;
    if (util_read_file(from, &d, &n, NULL) != PT_OK)
        return NULL;
    util_path(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(d, 1, (size_t)bytes, f) == (size_t)bytes;
    if (ok && tail_from >= 0)
        ok = fwrite(d + tail_from, 1, n - (size_t)tail_from, f) == n - (size_t)tail_from;
    if (f)
        ok = fclose(f) == 0 && ok;
    free(d);
    return ok ? path : NULL;
}

/* `petal-tui events PATH`: the exit status, stdout and stderr (malloc'd) apart. */
static int events_cli(const char *path, char **out, char **err)
{
    char cmd[9000], errf[4400];
    util_path(errf, sizeof errf, "%s/events.err", t_tmpdir());
    util_path(cmd, sizeof cmd, "%s events '%s' 2>'%s'", t_bin(), path, errf);
    int rc = t_run(cmd, out);
    *err = fx_slurp(errf);
    return rc;
}

/* An event file cut inside its last record prints what came before, notes the cut once
 * and exits 0; its stdout is the whole file's without the last record's lines. */
static void check_torn_tail(const char *file, const char *dir)
{
    static long long at[4096];
    int n = record_offsets(file, at, 4096);
    T_REQUIRE(n > 2 && n < 4096);
    const char *name = strrchr(file, '/') + 1;
    char *whole, *werr, *out, *err, want[9000];
    T_EQ_INT(events_cli(file, &whole, &werr), 0);
    const char *torn = cut_copy(file, dir, name, at[n - 1] + 15, -1);
    T_REQUIRE(torn != NULL);
    T_EQ_INT(events_cli(torn, &out, &err), 0);
    snprintf(want, sizeof want, "petal-tui: %s: the last record is torn at byte %lld (the run "
                                "was stopped mid-write, or is still writing); the %d records "
                                "before it were read\n", torn, at[n - 1], n - 1);
    T_CHECKF(err && !strcmp(err, want), "%s", err ? err : "");
    snprintf(want, sizeof want, "\n# %d records: ", n - 1);
    T_CHECKF(out && strstr(out, want), "%s", out ? out : "");
    /* Below the "# FILE" line, the same lines up to the cut record's. */
    const char *a = out ? strchr(out, '\n') : NULL, *b = strchr(whole, '\n');
    const char *end = a ? strstr(a, "\n# ") : NULL;
    T_CHECK(a && b && end && !strncmp(a, b, (size_t)(end - a)));
    free(whole);
    free(werr);
    free(out);
    free(err);
}

TEST(cli_events_a_torn_last_record_is_noted_and_the_rest_printed)
{
    const char *dir = t_tmpdir();
    /* A run's own file, as a kill -9 mid-write leaves it. */
    const char *runs = fx_demo_runs();
    T_REQUIRE(runs != NULL);
    char train[4200], **names;
    int nn;
    util_path(train, sizeof train, "%s/a/train", runs);
    T_REQUIRE(util_list_dir(train, UTIL_LIST_FILES, &names, &nn, NULL) == PT_OK && nn >= 1);
    char file[4400];
    util_path(file, sizeof file, "%s/%s", train, names[0]);
    util_free_list(names, nn);
    check_torn_tail(file, dir);
    /* Keras's. */
    if (t_have_data())
        check_torn_tail(t_data("tf-written-tfrecords/tfevents-petals/20250321-152714/train/"
                               "events.out.tfevents.1742585234.DESKTOP-25C2BHD.22116.0.v2"),
                        dir);
    /* Killed before its first record was whole, or before it wrote any. */
    char *out, *err, want[9000];
    const char *p = cut_copy(file, dir, "events.out.tfevents.1.first.v2", 10, -1);
    T_REQUIRE(p != NULL);
    T_EQ_INT(events_cli(p, &out, &err), 0);
    snprintf(want, sizeof want, "petal-tui: %s: the first record is torn at byte 0", p);
    T_CHECKF(err && strstr(err, want) == err, "%s", err ? err : "");
    free(out);
    free(err);
    p = cut_copy(file, dir, "events.out.tfevents.1.empty.v2", 0, -1);
    T_REQUIRE(p != NULL);
    T_EQ_INT(events_cli(p, &out, &err), 0);
    snprintf(want, sizeof want, "petal-tui: %s: empty (the run was stopped before its first "
                                "record, or is just starting); nothing to print\n", p);
    T_CHECKF(err && !strcmp(err, want), "%s", err ? err : "");
    free(out);
    free(err);
    /* An empty file of another name is not an event file: an error. */
    p = cut_copy(file, dir, "empty.bin", 0, -1);
    T_REQUIRE(p != NULL);
    T_EQ_INT(events_cli(p, &out, &err), 2);
    T_CHECKF(err && strstr(err, "empty: not a TensorBoard event file"), "%s", err ? err : "");
    free(out);
    free(err);
}

TEST(cli_events_damage_before_the_end_is_still_an_error)
{
    /* A record cut short in the middle of the file, the records after it kept: the cut
     * record's payload CRC fails and the framing is lost. Not a torn end: exit 2, the
     * file, record and byte named. */
    const char *runs = fx_demo_runs();
    T_REQUIRE(runs != NULL);
    char train[4200], file[4400], **names;
    int nn;
    util_path(train, sizeof train, "%s/a/train", runs);
    T_REQUIRE(util_list_dir(train, UTIL_LIST_FILES, &names, &nn, NULL) == PT_OK && nn >= 1);
    util_path(file, sizeof file, "%s/%s", train, names[0]);
    util_free_list(names, nn);
    static long long at[4096];
    int n = record_offsets(file, at, 4096);
    T_REQUIRE(n > 4);
    int k = n / 2;
    const char *p = cut_copy(file, t_tmpdir(), "events.out.tfevents.1.spliced.v2", at[k] + 15,
                             at[k + 1]);
    T_REQUIRE(p != NULL);
    char *out, *err, want[9000];
    T_EQ_INT(events_cli(p, &out, &err), 2);
    snprintf(want, sizeof want, "petal-tui: %s: record %d at byte %lld: ", p, k, at[k]);
    T_CHECKF(err && strstr(err, want) == err, "%s", err ? err : "");
    T_CHECKF(err && !strstr(err, "torn"), "%s", err);
    free(out);
    free(err);
}
