/* panel_replicas — a row per replica (throughput, its history, busy, idle and
 * MXU use), then the input queue and the totals. */
#include "ui/panels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/chart.h"

/* The queue and the totals, on the box's last two rows (below row y at the least). */
static void draw_queue_and_totals(WINDOW *w, ui_rect in, int y, const run_snapshot *s)
{
    char buf[128];
    int W = in.w, x;
    int yq = in.y + in.h - 2;
    if (yq < y)
        yq = y;
    if (yq < in.y + in.h) {
        x = in.x;
        x += ui_draw_text(w, yq, x, W, UI_R_DIM, "queue ");
        int qw = W - 16 > 16 ? 16 : W - 16;
        double q = s->queue_capacity > 0 ? (double)s->queue_depth / s->queue_capacity : 0;
        if (qw > 2) {
            ui_role qr = q < 0.25 && s->state == RUN_RUNNING ? UI_R_WARN : UI_R_BAR_A;
            ui_panel_bar(w, yq, x, qw, q, qr, 1);
            x += qw;
        }
        snprintf(buf, sizeof buf, " %d/%d", s->queue_depth, s->queue_capacity);
        ui_draw_text(w, yq, x, in.x + W - x, UI_R_NORMAL, buf);
    }
    if (yq + 1 < in.y + in.h) {
        char a[16], b[16];
        ui_chart_fmt(s->total_images_per_sec, 6, a, sizeof a);
        ui_chart_fmt(s->sgemm_peak_gflops, 5, b, sizeof b);
        x = in.x;
        x += ui_draw_text(w, yq + 1, x, W, UI_R_DIM, "total ");
        snprintf(buf, sizeof buf, "%s img/s", a);
        x += ui_draw_text(w, yq + 1, x, in.x + W - x, UI_R_TITLE, buf);
        if (s->ranks > 1) { /* a job's time in collectives again: a narrow box cuts the title */
            snprintf(buf, sizeof buf, "  comm %.1f ms/update", s->comm_ms);
            x += ui_draw_text(w, yq + 1, x, in.x + W - x, UI_R_NORMAL, buf);
        }
        snprintf(buf, sizeof buf, "  peak %s GF/s/core%s%s", b, s->blas_core[0] ? " " : "",
                 s->blas_core);
        ui_draw_text_cut(w, yq + 1, x, in.x + W - x, UI_R_DIM, buf);
    }
}

void ui_panel_replicas(WINDOW *w, ui_rect r, const ui_frame *f, const ui_view *v, int focused)
{
    (void)v;
    const run_snapshot *s = f->s;
    char title[96], buf[128];
    int n_rep = s->n_replicas > 0 ? s->n_replicas : s->replicas;
    if (f->opened && n_rep <= 0) /* its config said auto */
        snprintf(title, sizeof title, "Replicas");
    else if (s->ranks > 1) /* an mpirun job: its ranks, and their time in collectives */
        snprintf(title, sizeof title, "Replicas %d on %d ranks, comm %.1f ms/update", n_rep,
                 s->ranks, s->comm_ms);
    else
        snprintf(title, sizeof title, "Replicas %d", n_rep);
    ui_rect in = ui_draw_box(w, r, title, focused);
    if (in.h <= 0 || in.w <= 10)
        return;
    if (f->opened) {
        /* An opened run is shown, not trained: no queue, no throughput. */
        if (n_rep > 0)
            snprintf(buf, sizeof buf, "opened: ran on %d replica%s", n_rep, n_rep == 1 ? "" : "s");
        else
            snprintf(buf, sizeof buf, "opened: replicas auto (its log says how many)");
        ui_draw_text_cut(w, in.y, in.x, in.w, UI_R_DIM, buf);
        return;
    }
    int W = in.w;
    /* Columns: id 3, img/s 7, history (rest), busy 5, idle 5, MXU gauge + 4. */
    int gauge = (W - 27) / 4;
    gauge = gauge < 0 ? 0 : gauge > 10 ? 10 : gauge;
    int spark = W - 27 - gauge;
    if (spark < 0)
        spark = 0;
    int y = in.y;
    int x = in.x;
    ui_draw_text(w, y, x, W, UI_R_DIM, "#");
    ui_draw_text(w, y, x + 3, 7, UI_R_DIM, "  img/s");
    if (spark > 0)
        ui_draw_text(w, y, x + 11, spark, UI_R_DIM, "history");
    ui_draw_text(w, y, x + 11 + spark, 16, UI_R_DIM, " busy idle  MXU");
    y++;
    int rows_left = in.h - 1 - 2; /* keep room for queue and totals */
    if (s->n_replicas == 0) {
        if (rows_left > 0) {
            snprintf(buf, sizeof buf, "%d replica%s start with the run", s->replicas,
                     s->replicas == 1 ? "" : "s");
            ui_draw_text(w, y, x, W, UI_R_DIM, buf);
            y++;
        }
    }
    for (int i = 0; i < s->n_replicas && i < RUN_MAX_REPLICAS; i++) {
        const run_replica *rp = &s->replica[i];
        if (rows_left <= 0 || (rows_left == 1 && i + 1 < s->n_replicas)) {
            snprintf(buf, sizeof buf, "+%d more (Enter zooms)", s->n_replicas - i);
            ui_draw_text(w, y, x, W, UI_R_DIM, buf);
            y++;
            break;
        }
        snprintf(buf, sizeof buf, "%-2d", i);
        if (s->ranks > 1) /* in a job: the rank it runs on (r0, r1, ...) */
            snprintf(buf, sizeof buf, "r%-1d", rp->rank);
        ui_draw_text(w, y, x, 3, UI_R_DIM, buf);
        char num[16];
        ui_chart_fmt(rp->images_per_sec, 6, num, sizeof num);
        snprintf(buf, sizeof buf, "%7s", num);
        ui_draw_text(w, y, x + 3, 7, UI_R_NORMAL, buf);
        if (spark > 1) {
            uint32_t g[256];
            int sw = spark - 1 < 256 ? spark - 1 : 256;
            ui_chart_spark(rp->spark, rp->spark_n, 0, sw, g);
            for (int k = 0; k < sw; k++)
                if (g[k] != ' ')
                    ui_draw_glyph(w, y, x + 11 + k, g[k], UI_R_S1);
        }
        int cx = x + 11 + spark;
        snprintf(buf, sizeof buf, "%4.0f%%", rp->busy_pct);
        ui_draw_text(w, y, cx, 5, UI_R_NORMAL, buf);
        snprintf(buf, sizeof buf, "%4.0f%%", rp->idle_pct);
        ui_draw_text(w, y, cx + 5, 5, rp->idle_pct >= 20 ? UI_R_WARN : UI_R_NORMAL, buf);
        cx += 11;
        if (gauge > 0) {
            ui_panel_bar(w, y, cx, gauge, rp->mxu_pct / 100.0, UI_R_OK, 1);
            cx += gauge;
        }
        snprintf(buf, sizeof buf, "%3.0f%%", rp->mxu_pct);
        ui_draw_text(w, y, cx, 4, UI_R_NORMAL, buf);
        y++;
        rows_left--;
    }
    draw_queue_and_totals(w, in, y, s);
}
