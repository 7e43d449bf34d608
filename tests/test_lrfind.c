/* The learning-rate finder (core/train/lrfind.h, engine.h's eng_lrfind_*, `petal-tui
 * lr-find`): fastai's suggestion rules on given curves, the finder on a small real
 * dataset (the rates, the smoothing, the stop at 4x), a run after it the same bit for
 * bit as one without, the command's output, files and refusals. The workbench's key
 * is tested in test_ui_tmux.c's style at the end of this file. */
#include "tests/t.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/util.h"
#include "engine.h"
#include "io/png.h"
#include "nn/nn_models.h"
#include "run/checkpoint.h"
#include "tests/fixtures.h"
#include "train/lrfind.h"


/* ---- the rules ---- */

TEST(lrfind_rates_and_smoothing_are_fastais)
{
    T_CHECK(lrf_rate(0, 100, 1e-7, 10) == 1e-7);
    T_NEAR(lrf_rate(99, 100, 1e-7, 10), 10.0, 1e-12);
    /* 1e-7 * 1e8^(33/99) = 10^(-7 + 8/3) */
    T_NEAR(lrf_rate(33, 100, 1e-7, 10) / pow(10, -7 + 8.0 / 3), 1.0, 1e-12);
    double avg = 0;
    T_NEAR(lrf_smooth(&avg, 2.0, 0), 2.0, 1e-12); /* debiased: the first loss itself */
    /* (0.98 * 0.04 + 0.02 * 1) / (1 - 0.98^2) */
    T_NEAR(lrf_smooth(&avg, 1.0, 1), (0.98 * 0.04 + 0.02) / (1 - 0.98 * 0.98), 1e-12);
}

/* The expected values come from fastai's valley and steep (fastai/callback/schedule.py,
 * as the brief quotes them) run in Python 3 on the same lists (the rates lr_i = 1e-7 *
 * 1e8^(i/(N-1)); for the finder's curve the first 100 // 10 and last 5 points dropped):
 * indices and rates printed by that script, written here. */
TEST(lrfind_valley_and_steep_match_fastai_on_given_curves)
{
    /* A finder's 40 recorded points of a 100-update run: flat, a valley, a climb. */
    static const double u[40] = {
        2.0,    2.0396, 1.9897, 1.9628, 2.0194, 2.0312, 1.9704, 1.972,  2.0279, 2.0037,
        1.9396, 1.9559, 1.9765, 1.8941, 1.8052, 1.7846, 1.7101, 1.5351, 1.3953, 1.3105,
        1.1555, 0.965,  0.8823, 0.8637, 0.8016, 0.7844, 0.9027, 1.039,  1.116,  1.2467,
        1.4512, 1.6045, 1.7215, 1.9329, 2.2021, 2.406,  2.6166, 2.9446, 3.2972, 3.595
    };
    static run_lrfind f;
    memset(&f, 0, sizeof f);
    f.num_it = 100;
    f.n = 40;
    for (int i = 0; i < 40; i++) {
        f.lr[i] = lrf_rate(i, 100, 1e-7, 10);
        f.smooth[i] = u[i];
    }
    lrf_suggest(&f);
    T_CHECK(f.found);
    /* Python: valley index 7 of the kept points (17 of all), 2.364489412645407e-06;
     * steep index 10 (20 of all), 4.132012400115337e-06. */
    T_NEAR(f.valley / 2.364489412645407e-06, 1.0, 1e-12);
    T_NEAR(f.steep / 4.132012400115337e-06, 1.0, 1e-12);
    T_EQ_INT(lrf_valley(u + 10, 25), 7);
    T_EQ_INT(lrf_steep(f.lr + 10, u + 10, 25), 10);

    /* Two falls: the longest decreasing subsequence (not a contiguous one) decides.
     * Python: valley index 14 (0.007405684692262442), steep index 3. */
    static const double w[24] = { 3.0, 2.9, 2.8, 2.85, 2.7, 2.75, 2.6, 2.65, 2.5, 2.55, 2.4, 2.9,
                                  2.8, 2.7, 2.6, 2.5,  2.4, 2.3,  2.2, 2.1,  2.0, 1.9,  2.5, 3.0 };
    double lw[24];
    for (int i = 0; i < 24; i++)
        lw[i] = lrf_rate(i, 24, 1e-7, 10);
    T_EQ_INT(lrf_valley(w, 24), 14);
    T_NEAR(lw[14] / 0.007405684692262442, 1.0, 1e-12);
    T_EQ_INT(lrf_steep(lw, w, 24), 3);

    /* fastai's quirk kept: two falling points give max_start -1 and index -1, which
     * Python reads as the last point. */
    static const double dec[2] = { 2.0, 1.0 };
    T_EQ_INT(lrf_valley(dec, 2), 1);
    /* A loss that never falls has no valley (fastai would return the first rate). */
    static const double rise[3] = { 1.0, 2.0, 3.0 };
    T_EQ_INT(lrf_valley(rise, 3), -1);
    for (int i = 0; i < 40; i++)
        f.smooth[i] = 1.0 + i;
    lrf_suggest(&f);
    T_CHECK(!f.found);
    /* Too few points left after the drops. */
    f.n = 16;
    lrf_suggest(&f);
    T_CHECK(!f.found);
}

/* ---- the finder through the engine ---- */

/* Starts the finder on g and waits for its end; the final copy in f. */
static void find_to_end(eng *g, run_lrfind *f)
{
    pt_err e;
    T_REQUIRE(eng_lrfind_start(g, &e) == PT_OK);
    do {
        usleep(20000);
        eng_lrfind_get(g, f);
    } while (f->state == RUN_LRF_PREPARING || f->state == RUN_LRF_RUNNING);
}

static run_lrfind found; /* large: off the stack */

TEST(lrfind_on_a_dataset_records_exact_rates_and_stops_at_4x)
{
    if (t_slow_mode()) {
        t_skip("a hundred updates: too slow under valgrind (ASan runs it)");
        return;
    }
    T_REQUIRE(fx_small_dataset()[0]);
    char out[4200];
    util_path(out, sizeof out, "%s/never", t_tmpdir());
    run_config c;
    fx_small_config(&c, out);
    c.lr_scaling = 2; /* the suggestion as --lr-max is the rate over it */
    eng *g;
    pt_err e;
    T_REQUIRE(eng_create(&c, &g, &e) == PT_OK);
    find_to_end(g, &found);
    eng_destroy(g);
    run_lrfind *f = &found;
    T_EQ_INT(f->state, RUN_LRF_DONE);
    T_EQ_INT(f->update_size, 8);
    T_REQUIRE(f->n > 20 && f->n <= 100);
    double avg = 0, best = INFINITY;
    for (int i = 0; i < f->n; i++) {
        T_CHECKF(f->lr[i] == 1e-7 * pow(10 / 1e-7, i / 99.0), "rate %d: %.17g", i, f->lr[i]);
        double s = lrf_smooth(&avg, f->loss[i], i);
        T_CHECKF(s == f->smooth[i], "smoothed %d: %.17g, not %.17g", i, f->smooth[i], s);
        /* It goes on while the smoothed loss stays within 4x its best. */
        best = fmin(best, s);
        if (i < f->n - 1)
            T_CHECKF(s <= 4 * best, "update %d is over 4x the best and it went on", i + 1);
    }
    /* A rate of 1 and more makes Adam diverge on this data: it stops at 4x. */
    T_EQ_INT(f->why_end, 1);
    T_CHECK(f->smooth[f->n - 1] > 4 * best);
    T_CHECK(f->n < 100);
    T_CHECK(f->found);
    T_CHECKF(f->valley > 1e-7 && f->valley < 10, "valley %g", f->valley);
    T_CHECK(f->steep > 1e-7 && f->steep < 10);
    T_NEAR(f->lr_max, f->valley / 2, 1e-15);
    T_CHECKF(!util_is_dir(out), "the finder made %s", out);
}

static void ckpt_state(const char *dir, float **w, size_t *n)
{
    int widths[RUN_MAX_BLOCKS], kinds[RUN_MAX_BLOCKS];
    pt_err e;
    *w = NULL;
    int nw = nn_parse_widths("auto", 32, widths, kinds, &e);
    nn_model *m = nw > 0 ? nn_build_small_widths(32, 32, 4, 0.2f, widths, kinds, nw,
                                                 NN_SMALL_CONVS_PER_BLOCK, &e)
                         : NULL;
    if (!m)
        return;
    size_t np = nn_param_count(m), nb = nn_buffer_count(m);
    /* The weights, the batch-norm statistics, Adam's moments and the average. */
    *n = 2 * np + nb + np + nb + np;
    *w = calloc(*n, sizeof **w);
    char path[4300];
    util_path(path, sizeof path, "%s/checkpoint.ckpt", dir);
    ckpt_loaded l;
    if (*w && ckpt_load(path, *w, np, *w + np, nb, *w + np + nb, *w + 2 * np + nb, np, &l, &e) ==
                  PT_OK) {
        if (l.ema && l.n_ema == np + nb)
            memcpy(*w + 3 * np + nb, l.ema, (np + nb) * sizeof **w);
        ckpt_free_loaded(&l);
    } else {
        printf("  %s\n", e.msg);
        free(*w);
        *w = NULL;
    }
    nn_model_free(m);
}

TEST(lrfind_then_a_run_is_the_run_without_it_bit_for_bit)
{
    if (t_slow_mode()) {
        t_skip("a finder and two trainings: too slow under valgrind (ASan runs it)");
        return;
    }
    T_REQUIRE(fx_small_dataset()[0]);
    const char *dir = t_tmpdir();
    char a[4200], b[4200];
    util_path(a, sizeof a, "%s/after", dir);
    util_path(b, sizeof b, "%s/plain", dir);
    run_config c;
    fx_small_config(&c, a);
    /* The workbench's order: the finder on the engine, then s on the same engine. */
    eng *g;
    pt_err e;
    T_REQUIRE(eng_create(&c, &g, &e) == PT_OK);
    find_to_end(g, &found);
    T_EQ_INT(found.state, RUN_LRF_DONE);
    T_CHECK(!util_is_dir(a));
    T_REQUIRE(eng_start(g) == PT_OK);
    eng_wait(g, -1);
    static run_snapshot s;
    eng_snapshot_get(g, &s);
    /* Once a run has started, the finder is refused. */
    T_EQ_INT(eng_lrfind_start(g, &e), PT_EUSAGE);
    eng_destroy(g);
    T_EQ_INT(s.state, RUN_DONE);
    fx_small_config(&c, b);
    T_REQUIRE(fx_run_to_end(&c, &s) == RUN_DONE);
    char *ha = fx_history_without_timing(a), *hb = fx_history_without_timing(b);
    T_REQUIRE(ha && hb);
    T_CHECKF(strcmp(ha, hb) == 0, "histories differ:\n%s\n---\n%s", ha, hb);
    free(ha);
    free(hb);
    float *wa, *wb;
    size_t na = 0, nb = 0;
    ckpt_state(a, &wa, &na);
    ckpt_state(b, &wb, &nb);
    T_REQUIRE(wa && wb && na == nb);
    T_CHECK(memcmp(wa, wb, na * sizeof *wa) == 0);
    free(wa);
    free(wb);
}

TEST(lrfind_cancelled_and_refused_for_resume)
{
    T_REQUIRE(fx_small_dataset()[0]);
    run_config c;
    fx_small_config(&c, "");
    eng *g;
    pt_err e;
    T_REQUIRE(eng_create(&c, &g, &e) == PT_OK);
    eng_lrfind_get(g, &found);
    T_EQ_INT(found.state, RUN_LRF_NONE);
    T_REQUIRE(eng_lrfind_start(g, &e) == PT_OK);
    eng_lrfind_stop(g);
    do {
        usleep(20000);
        eng_lrfind_get(g, &found);
    } while (found.state == RUN_LRF_PREPARING || found.state == RUN_LRF_RUNNING);
    T_EQ_INT(found.state, RUN_LRF_STOPPED);
    T_CHECK(!found.found);
    eng_destroy(g);
    util_copy(c.resume, sizeof c.resume, t_tmpdir());
    T_REQUIRE(eng_create(&c, &g, &e) == PT_OK);
    T_EQ_INT(eng_lrfind_start(g, &e), PT_EUSAGE);
    T_CHECKF(strstr(e.msg, "--resume") != NULL, "%s", e.msg);
    eng_destroy(g);
}

/* ---- the command ---- */

/* The binary as a path that works from another folder (make test gives a relative one). */
static const char *bin(void)
{
    static char path[4096];
    if (!realpath(t_bin(), path))
        snprintf(path, sizeof path, "%s", t_bin());
    return path;
}

TEST(lrfind_command_prints_the_suggestion_and_writes_the_plot_and_csv)
{
    if (t_slow_mode()) {
        t_skip("a hundred updates: too slow under valgrind (ASan runs it)");
        return;
    }
    T_REQUIRE(fx_small_dataset()[0]);
    const char *dir = t_tmpdir();
    char cmd[16384], *out = NULL;
    /* From a fresh folder: nothing appears in it but the files asked for. */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' lr-find --data '%s' --replicas 2 --batch-per-replica 4 "
             "--image-size 32 --workers 1 --lr-max 0.5 --plot lr.png --csv lr.csv 2>&1; "
             "echo status $?; ls",
             dir, bin(), fx_small_dataset());
    T_REQUIRE(t_run(cmd, &out) == 0);
    T_CHECKF(strstr(out, "status 0\n") != NULL, "%s", out);
    T_CHECKF(strstr(out, "update  lr") && strstr(out, "\n    10  5.34e-07"), "%s", out);
    T_CHECKF(strstr(out, "stopped at update") != NULL, "%s", out);
    const char *sug = strstr(out, "suggested --lr-max ");
    T_REQUIRE(sug);
    double lr = atof(sug + 19);
    T_CHECK(lr > 1e-7 && lr < 10);
    /* The command line to paste: the options as given, the suggestion for --lr-max. */
    char want[128];
    snprintf(want, sizeof want, "--workers 1 --lr-max %.2e\n", lr);
    T_CHECKF(strstr(out, "petal-tui --headless --data") && strstr(out, want), "%s", out);
    T_CHECKF(strstr(out, "plot: lr.png") != NULL, "%s", out);
    const char *ls = strstr(out, "plot: lr.png");
    T_CHECKF(ls && strstr(ls, "\nlr.csv\nlr.png\n") && !strstr(ls, "runs"),
             "the folder holds more than the plot and the CSV:\n%s", out);
    free(out);
    uint8_t *png;
    size_t len;
    pt_err e;
    char path[4200];
    util_path(path, sizeof path, "%s/lr.png", dir);
    T_REQUIRE(util_read_file(path, &png, &len, &e) == PT_OK);
    uint8_t *rgb;
    int w, h;
    T_REQUIRE(png_decode_rgb(png, len, &rgb, &w, &h, &e) == PT_OK);
    T_CHECK(w == 900 && h == 560);
    free(rgb);
    free(png);
    util_path(cmd, sizeof cmd, "head -2 '%s/lr.csv'; wc -l < '%s/lr.csv'", dir, dir);
    T_REQUIRE(t_run(cmd, &out) == 0);
    T_CHECKF(!strncmp(out, "update,lr,loss,smoothed\n1,1e-07,", 32), "%s", out);
    free(out);
}

TEST(lrfind_command_refuses_what_headless_refuses)
{
    static const struct {
        const char *args;
        int status;
        const char *says;
    } cases[] = {
        { "--bogus", 1, "--bogus" },
        { "--epochs 0", 1, "epochs" },
        { "--data /nonexistent/data", 2, "no such dataset folder" },
        { "--plot", 1, "--plot needs a file name" },
        { "--csv", 1, "--csv needs a file name" },
        { "--compare /tmp", 1, "for the workbench" },
        { "--resume /nonexistent/run", 1, "resume" },
        { "--augment nonsense:3", 1, "nonsense" },
        { "stray", 1, "unexpected argument" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[8400], *out = NULL;
        snprintf(cmd, sizeof cmd, "cd '%s' && '%s' lr-find %s", t_tmpdir(), bin(),
                 cases[i].args);
        int st = t_run(cmd, &out);
        T_CHECKF(st == cases[i].status && strstr(out, cases[i].says),
                 "lr-find %s: status %d, wanted %d saying \"%s\": %s", cases[i].args, st,
                 cases[i].status, cases[i].says, out);
        free(out);
    }
    char cmd[4200], *out = NULL;
    snprintf(cmd, sizeof cmd, "'%s' lr-find --help", t_bin());
    T_EQ_INT(t_run(cmd, &out), 0);
    T_CHECK(strstr(out, "--plot FILE.png") && strstr(out, "1e-7 to 10") && strstr(out, "valley"));
    free(out);
}
