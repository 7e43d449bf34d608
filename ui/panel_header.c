/* panel_header — the two rows at the top: what runs (dataset, replicas, model,
 * classes) with the state badge, then its progress and the machine's figures. */
#include "ui/panels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/chart.h"

/* A path in at most maxw columns: whole, else its last two components, else its
 * last, else the end of it after "...". */
static void shorten_path(const char *p, int maxw, char *out, size_t n)
{
    snprintf(out, n, "%s", p);
    if ((int)strlen(out) <= maxw)
        return;
    size_t len = strlen(p);
    while (len > 1 && p[len - 1] == '/')
        len--;
    int slashes = 0;
    for (size_t i = len; i-- > 0;) {
        if (p[i] != '/')
            continue;
        if (++slashes == 2 && (int)(len - i - 1) <= maxw) {
            snprintf(out, n, "%.*s", (int)(len - i - 1), p + i + 1);
            return;
        }
    }
    const char *last = p;
    for (size_t i = 0; i < len; i++)
        if (p[i] == '/')
            last = p + i + 1;
    int ll = (int)(len - (size_t)(last - p));
    if (ll <= maxw) {
        snprintf(out, n, "%.*s", ll, last);
        return;
    }
    if (maxw < 4)
        maxw = 4;
    snprintf(out, n, "...%.*s", maxw - 3, p + len - (size_t)(maxw - 3));
}

/* The state badge at the right of the first row; returns where the row's text
 * must end. */
static int badge(WINDOW *w, ui_rect r, run_state st)
{
    char b[32];
    int end = r.x + r.w;
    snprintf(b, sizeof b, " %s ", run_state_name(st));
    for (char *c = b; *c; c++)
        if (*c >= 'a' && *c <= 'z')
            *c = (char)(*c - 'a' + 'A');
    int bw = (int)strlen(b);
    ui_role sr = ui_panel_state_role(st);
    wattrset(w, ui_draw_attr(sr) | A_REVERSE);
    mvwaddnstr(w, r.y, end - bw, b, bw);
    wattrset(w, A_NORMAL);
    return end - bw - 1;
}

/* First row: the name, the dataset, replicas x batch, the model, the classes, and
 * the state badge. */
static void first_row(WINDOW *w, ui_rect r, const run_snapshot *s)
{
    int x = r.x, end = badge(w, r, s->state);
    x += ui_draw_text(w, r.y, x, end - x, UI_R_TITLE, "petal-tui ");
    /* The pieces of the first row. The dataset gets what the others leave (it
     * is a path and shortens well); a piece that does not fit is left out
     * whole rather than cut, the class count first. */
    char p[5][300];
    ui_role pr[5] = { UI_R_NORMAL, UI_R_NORMAL, UI_R_NORMAL, UI_R_NORMAL, UI_R_DIM };
    /* Before the run starts the replica count may still be "one per core". */
    char reps[16], upd[16];
    snprintf(reps, sizeof reps, s->replicas > 0 ? "%d" : "auto", s->replicas);
    snprintf(upd, sizeof upd, s->update_size > 0 ? "%d" : "?", s->update_size);
    if (s->grad_acc > 1)
        snprintf(p[1], 300, " | %s x %d x %d acc = %s/update", reps, s->batch_per_replica,
                 s->grad_acc, upd);
    else
        snprintf(p[1], 300, " | %s x %d = %s/update", reps, s->batch_per_replica, upd);
    snprintf(p[2], 300, " | %s", s->model[0] ? s->model : "?");
    if (s->image_size > 0)
        snprintf(p[2] + strlen(p[2]), 300 - strlen(p[2]), " %dpx", s->image_size);
    if (s->input_norm[0])
        snprintf(p[2] + strlen(p[2]), 300 - strlen(p[2]), " input %s", s->input_norm);
    if (s->precision[0])
        snprintf(p[2] + strlen(p[2]), 300 - strlen(p[2]), " %s", s->precision);
    if (s->phase[0])
        snprintf(p[2] + strlen(p[2]), 300 - strlen(p[2]), " (%s)", s->phase);
    /* --teacher: from whom (the short name) at which T and alpha */
    p[3][0] = 0;
    if (s->distill[0])
        snprintf(p[3], 300, " | %s", s->distill);
    p[4][0] = 0;
    if (s->n_classes > 0)
        snprintf(p[4], 300, " | %d classes", s->n_classes);
    int room = end - x;
    int others = ui_draw_width(p[1]) + ui_draw_width(p[2]) + ui_draw_width(p[3]);
    int dw = room - others;
    dw = dw > 44 ? 44 : dw < 12 ? 12 : dw;
    shorten_path(s->dataset[0] ? s->dataset : "demo", dw, p[0], 300);
    int used = 0;
    for (int k = 0; k < 5; k++) {
        int pw = ui_draw_width(p[k]);
        if (used + pw > room)
            continue;
        used += pw;
        x += ui_draw_text(w, r.y, x, end - x, pr[k], p[k]);
    }
}

/* The second row's pieces, in the order they are shown. */
enum { P_EPOCH, P_STEP, P_BAR, P_ETA, P_IPS, P_RSS, P_CPU, P_LOAD, P_LOSS, P_ACC, P_LR,
       P_ELAPSED, P_N };

typedef struct row2 {
    char it[P_N][96];       /* "" = not there */
    ui_role role[P_N];
    int width[P_N], on[P_N];
    double frac;            /* the whole run's progress, for the bar */
    int bw;                 /* the bar's columns */
} row2;

/* The machine's part: the process's memory, the CPU it takes, the load. */
static void row2_machine(row2 *q, const ui_sysmon *m)
{
    if (m && m->rss >= 0) {
        double mib = (double)m->rss / (1024.0 * 1024.0);
        snprintf(q->it[P_RSS], 96, "%s %.0f MiB", m->rss_peak ? "peak RSS" : "RSS", mib);
    }
    if (m && m->cpu_pct >= 0)
        snprintf(q->it[P_CPU], 96, "cpu %.0f%%", m->cpu_pct);
    if (m && m->load1 >= 0) {
        snprintf(q->it[P_LOAD], 96, "load %.2f/%d cores", m->load1, m->cores);
        /* More runnable than cores: something competes for them. */
        q->role[P_LOAD] = m->load1 > m->cores + 0.5 ? UI_R_WARN : UI_R_NORMAL;
    }
}

static void row2_items(row2 *q, ui_rect r, const ui_frame *f)
{
    const run_snapshot *s = f->s;
    char t1[32], t2[32];
    for (int i = 0; i < P_N; i++) {
        q->it[i][0] = 0;
        q->role[i] = UI_R_NORMAL;
    }
    int running = s->state == RUN_RUNNING || s->state == RUN_PAUSED;
    snprintf(q->it[P_EPOCH], 96, "epoch %d/%d", s->epoch, s->epochs);
    snprintf(q->it[P_STEP], 96, "step %lld/%lld", s->step, s->steps_per_epoch);
    /* The bar is the whole run's progress. */
    q->frac = s->total_steps > 0 ? (double)s->update / (double)s->total_steps : 0;
    q->bw = r.w >= 110 ? 20 : r.w >= 90 ? 12 : 8;
    snprintf(q->it[P_BAR], 96, "%*s %3.0f%%", q->bw, "", q->frac * 100); /* room, then % */
    ui_chart_fmt_dur(s->eta, t1, sizeof t1);
    snprintf(q->it[P_ETA], 96, "ETA %s", running ? t1 : "--");
    if (running || s->total_images_per_sec > 0) {
        char n[16];
        ui_chart_fmt(s->total_images_per_sec, 6, n, sizeof n);
        snprintf(q->it[P_IPS], 96, "%s img/s", n);
        q->role[P_IPS] = UI_R_TITLE;
    }
    row2_machine(q, f->sys);
    if (s->step > 0) {
        snprintf(q->it[P_LOSS], 96, "loss %.3f", s->running_loss);
        snprintf(q->it[P_ACC], 96, "acc %.1f%%", s->running_acc * 100);
        q->role[P_LOSS] = q->role[P_ACC] = UI_R_S1;
    }
    ui_chart_fmt(s->lr, 6, t2, sizeof t2);
    snprintf(q->it[P_LR], 96, "lr %s", t2);
    ui_chart_fmt_dur(s->elapsed, t1, sizeof t1);
    if (s->elapsed_resumed > 0) {
        /* A resumed run: the whole run's time and this process's. */
        ui_chart_fmt_dur(s->elapsed - s->elapsed_resumed, t2, sizeof t2);
        snprintf(q->it[P_ELAPSED], 96, "elapsed %s (%s since the resume)", t1, t2);
    } else {
        snprintf(q->it[P_ELAPSED], 96, "elapsed %s", t1);
    }
    q->role[P_ELAPSED] = UI_R_DIM;
}

/* Second row: progress, then the pieces that fit, by importance; the process's
 * memory and the machine's load next to the throughput. */
static void second_row(WINDOW *w, ui_rect r, const ui_frame *f)
{
    static const int prio[P_N] = { [P_EPOCH] = 0, [P_STEP] = 1, [P_ETA] = 2, [P_IPS] = 3,
                                   [P_RSS] = 4, [P_LOAD] = 5, [P_BAR] = 6, [P_LOSS] = 7,
                                   [P_ACC] = 8, [P_LR] = 9, [P_CPU] = 10, [P_ELAPSED] = 11 };
    row2 q;
    row2_items(&q, r, f);
    /* By importance while they fit (two spaces before each but the first). */
    int left = r.w;
    for (int i = 0; i < P_N; i++)
        q.on[i] = 0;
    for (int rank = 0; rank < P_N; rank++)
        for (int i = 0; i < P_N; i++) {
            if (prio[i] != rank || !q.it[i][0])
                continue;
            q.width[i] = ui_draw_width(q.it[i]) + (i > 0 ? 2 : 0);
            if (q.width[i] <= left) {
                q.on[i] = 1;
                left -= q.width[i];
            }
        }
    int y = r.y + 1, x = r.x, end = r.x + r.w;
    for (int i = 0; i < P_N; i++) {
        if (!q.on[i])
            continue;
        if (i > 0)
            x += 2;
        if (i == P_BAR) {
            ui_panel_bar(w, y, x, q.bw, q.frac, UI_R_OK, 1);
            ui_draw_text(w, y, x + q.bw, end - x - q.bw, UI_R_NORMAL, q.it[i] + q.bw);
            x += q.width[i] - 2;
            continue;
        }
        x += ui_draw_text(w, y, x, end - x, q.role[i], q.it[i]);
    }
}

void ui_panel_header(WINDOW *w, ui_rect r, const ui_frame *f)
{
    first_row(w, r, f->s);
    second_row(w, r, f);
}
