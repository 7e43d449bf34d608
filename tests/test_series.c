/* core/series.c: a live snapshot as run_series (x on three axes) and back. */
#include "tests/t.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* Two epochs of 10 updates and 5 s each, then 5 updates of the third in 2.5 s. */
static void fill(run_snapshot *s)
{
    s->state = RUN_RUNNING;
    s->steps_per_epoch = 10;
    s->update = 25;
    s->elapsed = 12.5;
    s->history_n = 2;
    for (int e = 0; e < 2; e++) {
        run_epoch *h = &s->history[e];
        h->epoch = e + 1;
        h->updates = 10;
        h->seconds = 5;
        h->train_loss = 1.0 / (e + 1);
        h->val_loss = 2.0 / (e + 1);
        h->train_acc = h->val_acc = 0.5;
        h->train_f1 = h->val_f1 = NAN;
    }
    s->curve_n = 25;
    s->curve_stride = 1;
    for (int i = 0; i < 25; i++) {
        s->curve_loss[i] = (float)(3.0 - 0.1 * i);
        s->curve_acc[i] = (float)(0.02 * i);
        s->curve_lr[i] = 0.001f;
    }
}

static int near(double a, double b)
{
    return fabs(a - b) < 1e-5;
}

TEST(curves_a_live_snapshot_becomes_series_on_three_axes_and_back)
{
    run_snapshot *s = calloc(1, sizeof *s), *back = calloc(1, sizeof *back);
    run_figures *r = calloc(1, sizeof *r);
    T_REQUIRE(s && back && r);
    fill(s);
    run_series set[RUN_SERIES_COUNT];
    memset(set, 0, sizeof set);
    T_REQUIRE(eng_snapshot_series(s, set) == PT_OK);
    const run_series *bl = &set[RUN_S_BATCH_LOSS], *tl = &set[RUN_S_TRAIN_LOSS];
    T_CHECK(bl->n == 25 && set[RUN_S_BATCH_LR].n == 25 && tl->n == 2);
    T_CHECK(near(bl->x[RUN_X_UPDATE][9], 10) && near(bl->x[RUN_X_EPOCH][9], 1));
    T_CHECK(near(bl->x[RUN_X_EPOCH][14], 1.5) && near(bl->x[RUN_X_TIME][14], 7.5));
    /* inside the third epoch: by updates per epoch, and at its pace so far */
    T_CHECK(near(bl->x[RUN_X_EPOCH][24], 2.5) && near(bl->x[RUN_X_TIME][24], 12.5));
    T_CHECK(near(tl->x[RUN_X_EPOCH][1], 2) && near(tl->x[RUN_X_TIME][1], 10));
    T_CHECK(near(tl->x[RUN_X_UPDATE][1], 20) && near(tl->y[1], 0.5));
    T_CHECK(near(set[RUN_S_VAL_LOSS].y[0], 2) && isnan(set[RUN_S_VAL_F1].y[0]));
    /* a second call reuses the arrays */
    const float *y0 = bl->y;
    s->curve_n = 3;
    T_REQUIRE(eng_snapshot_series(s, set) == PT_OK);
    T_CHECK(bl->y == y0 && bl->n == 3);
    s->curve_n = 25;
    T_REQUIRE(eng_snapshot_series(s, set) == PT_OK);

    /* back: the series as a run read from its folder, into a snapshot */
    memcpy(r->s, set, sizeof set);
    snprintf(r->path, sizeof r->path, "runs/x");
    snprintf(r->name, sizeof r->name, "x");
    snprintf(r->model, sizeof r->model, "small");
    eng_run_snapshot(r, back);
    T_CHECK(back->state == RUN_DONE && back->history_n == 2);
    T_CHECK(back->history[1].updates == 10 && near(back->history[1].seconds, 5));
    T_CHECK(near(back->history[1].train_loss, 0.5) && near(back->history[0].val_loss, 2));
    T_CHECK(back->curve_n == 25 && back->curve_stride == 1 && back->update == 25);
    T_CHECK(near(back->curve_loss[24], s->curve_loss[24]) && near(back->lr, 0.001));
    T_CHECK(!strcmp(back->model, "small") && !strcmp(back->run_dir, "runs/x"));
    eng_series_free(set);
    T_CHECK(set[0].y == NULL);
    free(s);
    free(back);
    free(r);
}
