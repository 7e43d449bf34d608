#include "ui/panels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/chart.h"

const double ui_panel_smooth[UI_SMOOTH_STEPS] = { 0, 0.3, 0.6, 0.8, 0.9, 0.95, 0.99 };

void ui_panel_view_defaults(ui_view *v)
{
    memset(v, 0, sizeof *v);
    v->focus = UI_P_CURVES;
    v->zoom = -1;
    v->metric = UI_METRIC_LOSS;
    v->smooth = 3;
    v->label_bins = 1;
    v->cursor = -1;
}

ui_role ui_panel_state_role(run_state st)
{
    switch (st) {
    case RUN_RUNNING: return UI_R_OK;
    case RUN_PREPARING: return UI_R_INFO;
    case RUN_PAUSED: return UI_R_WARN;
    case RUN_DONE: return UI_R_INFO;
    case RUN_FAILED: return UI_R_BAD;
    case RUN_STOPPED: return UI_R_WARN;
    default: return UI_R_DIM;
    }
}

const char *ui_panel_metric_name(int m)
{
    static const char *const n[UI_METRIC_COUNT] = { "loss", "accuracy", "macro F1",
                                                    "learning rate" };
    return m >= 0 && m < UI_METRIC_COUNT ? n[m] : "?";
}

const char *ui_panel_class_name(const ui_frame *f, int k, char *buf, size_t n)
{
    if (f->names && k >= 0 && k < f->n_names && f->names[k] && f->names[k][0])
        return f->names[k];
    snprintf(buf, n, "class %d", k);
    return buf;
}

/* A bar (see ui_chart_bar) drawn in role, its empty part as a dim track. */
static void bar(WINDOW *w, int y, int x, int width, double frac, ui_role role, int track)
{
    uint32_t g[256];
    if (width > 256)
        width = 256;
    if (width <= 0)
        return;
    ui_chart_bar(frac, width, g);
    for (int i = 0; i < width; i++) {
        if (g[i] == ' ' && track)
            ui_draw_glyph(w, y, x + i, 0x00b7, UI_R_DIM);
        else if (g[i] != ' ')
            ui_draw_glyph(w, y, x + i, g[i], role);
    }
}

/* ---- header -------------------------------------------------------------------- */

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

void ui_panel_header(WINDOW *w, ui_rect r, const ui_frame *f)
{
    const run_snapshot *s = f->s;
    char t1[32], t2[32];
    int x = r.x, end = r.x + r.w;

    /* The state badge sits at the right of the first row. */
    char badge[32];
    snprintf(badge, sizeof badge, " %s ", run_state_name(s->state));
    for (char *c = badge; *c; c++)
        if (*c >= 'a' && *c <= 'z')
            *c = (char)(*c - 'a' + 'A');
    int bw = (int)strlen(badge);
    ui_role sr = ui_panel_state_role(s->state);
    wattrset(w, ui_draw_attr(sr) | A_REVERSE);
    mvwaddnstr(w, r.y, end - bw, badge, bw);
    wattrset(w, A_NORMAL);
    end -= bw + 1;

    x += ui_draw_text(w, r.y, x, end - x, UI_R_TITLE, "petal-tui ");
    /* The pieces of the first row. The dataset gets what the others leave (it
     * is a path and shortens well); a piece that does not fit is left out
     * whole rather than cut, the class count first. */
    char p[4][300];
    ui_role pr[4] = { UI_R_NORMAL, UI_R_NORMAL, UI_R_NORMAL, UI_R_DIM };
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
    if (s->phase[0])
        snprintf(p[2] + strlen(p[2]), 300 - strlen(p[2]), " (%s)", s->phase);
    p[3][0] = 0;
    if (s->n_classes > 0)
        snprintf(p[3], 300, " | %d classes", s->n_classes);
    int room = end - x;
    int others = ui_draw_width(p[1]) + ui_draw_width(p[2]);
    int dw = room - others;
    dw = dw > 44 ? 44 : dw < 12 ? 12 : dw;
    shorten_path(s->dataset[0] ? s->dataset : "demo", dw, p[0], 300);
    int used = 0;
    for (int k = 0; k < 4; k++) {
        int pw = ui_draw_width(p[k]);
        if (used + pw > room)
            continue;
        used += pw;
        x += ui_draw_text(w, r.y, x, end - x, pr[k], p[k]);
    }

    /* Second row: progress, then the pieces that fit, by importance; the
     * process's memory and the machine's load next to the throughput. */
    enum { P_EPOCH, P_STEP, P_BAR, P_ETA, P_IPS, P_RSS, P_CPU, P_LOAD, P_LOSS, P_ACC, P_LR,
           P_ELAPSED, P_N };
    static const int prio[P_N] = { [P_EPOCH] = 0, [P_STEP] = 1, [P_ETA] = 2, [P_IPS] = 3,
                                   [P_RSS] = 4, [P_LOAD] = 5, [P_BAR] = 6, [P_LOSS] = 7,
                                   [P_ACC] = 8, [P_LR] = 9, [P_CPU] = 10, [P_ELAPSED] = 11 };
    char it[P_N][96];
    ui_role role[P_N];
    int width[P_N], on[P_N];
    for (int i = 0; i < P_N; i++) {
        it[i][0] = 0;
        role[i] = UI_R_NORMAL;
    }
    int running = s->state == RUN_RUNNING || s->state == RUN_PAUSED;
    snprintf(it[P_EPOCH], 96, "epoch %d/%d", s->epoch, s->epochs);
    snprintf(it[P_STEP], 96, "step %lld/%lld", s->step, s->steps_per_epoch);
    /* The bar is the whole run's progress. */
    double frac = s->total_steps > 0 ? (double)s->update / (double)s->total_steps : 0;
    int bw2 = r.w >= 110 ? 20 : r.w >= 90 ? 12 : 8;
    snprintf(it[P_BAR], 96, "%*s %3.0f%%", bw2, "", frac * 100); /* the bar's room, then % */
    ui_chart_fmt_dur(s->eta, t1, sizeof t1);
    snprintf(it[P_ETA], 96, "ETA %s", running ? t1 : "--");
    if (running || s->total_images_per_sec > 0) {
        char n[16];
        ui_chart_fmt(s->total_images_per_sec, 6, n, sizeof n);
        snprintf(it[P_IPS], 96, "%s img/s", n);
        role[P_IPS] = UI_R_TITLE;
    }
    const ui_sysmon *m = f->sys;
    if (m && m->rss >= 0) {
        double mib = (double)m->rss / (1024.0 * 1024.0);
        snprintf(it[P_RSS], 96, "%s %.0f MiB", m->rss_peak ? "peak RSS" : "RSS", mib);
    }
    if (m && m->cpu_pct >= 0)
        snprintf(it[P_CPU], 96, "cpu %.0f%%", m->cpu_pct);
    if (m && m->load1 >= 0) {
        snprintf(it[P_LOAD], 96, "load %.2f/%d cores", m->load1, m->cores);
        /* More runnable than cores: something competes for them. */
        role[P_LOAD] = m->load1 > m->cores + 0.5 ? UI_R_WARN : UI_R_NORMAL;
    }
    if (s->step > 0) {
        snprintf(it[P_LOSS], 96, "loss %.3f", s->running_loss);
        snprintf(it[P_ACC], 96, "acc %.1f%%", s->running_acc * 100);
        role[P_LOSS] = role[P_ACC] = UI_R_S1;
    }
    ui_chart_fmt(s->lr, 6, t2, sizeof t2);
    snprintf(it[P_LR], 96, "lr %s", t2);
    ui_chart_fmt_dur(s->elapsed, t1, sizeof t1);
    if (s->elapsed_resumed > 0) {
        /* A resumed run: the whole run's time and this process's. */
        ui_chart_fmt_dur(s->elapsed - s->elapsed_resumed, t2, sizeof t2);
        snprintf(it[P_ELAPSED], 96, "elapsed %s (%s since the resume)", t1, t2);
    } else {
        snprintf(it[P_ELAPSED], 96, "elapsed %s", t1);
    }
    role[P_ELAPSED] = UI_R_DIM;
    /* By importance while they fit (two spaces before each but the first). */
    int left = r.w;
    for (int i = 0; i < P_N; i++)
        on[i] = 0;
    for (int rank = 0; rank < P_N; rank++)
        for (int i = 0; i < P_N; i++) {
            if (prio[i] != rank || !it[i][0])
                continue;
            width[i] = ui_draw_width(it[i]) + (i > 0 ? 2 : 0);
            if (width[i] <= left) {
                on[i] = 1;
                left -= width[i];
            }
        }
    int y = r.y + 1;
    x = r.x;
    end = r.x + r.w;
    for (int i = 0; i < P_N; i++) {
        if (!on[i])
            continue;
        if (i > 0)
            x += 2;
        if (i == P_BAR) {
            bar(w, y, x, bw2, frac, UI_R_OK, 1);
            ui_draw_text(w, y, x + bw2, end - x - bw2, UI_R_NORMAL, it[i] + bw2);
            x += width[i] - 2;
            continue;
        }
        x += ui_draw_text(w, y, x, end - x, role[i], it[i]);
    }
}

/* ---- footer -------------------------------------------------------------------- */

void ui_panel_footer(WINDOW *w, ui_rect r, const ui_frame *f, ui_ctx ctx)
{
    size_t nk;
    const ui_key *keys = ui_keys_table(&nk);
    int state = f->s ? (int)f->s->state : RUN_IDLE;
    int end = r.x + r.w;
    if (f->note && *f->note) {
        int nw = ui_draw_width(f->note);
        int room = r.w / 2 > 40 ? r.w / 2 : 40;
        if (nw > room)
            nw = room;
        if (nw > r.w)
            nw = r.w;
        ui_draw_text_cut(w, r.y, end - nw, nw, (ui_role)f->note_role, f->note);
        end -= nw + 2;
    }
    /* Hints for this context, dropping the less useful ones until they fit:
     * importance is the position in this list. */
    static const ui_act rank[] = { UI_ACT_QUIT, UI_ACT_HELP, UI_ACT_START, UI_ACT_PAUSE,
                                   UI_ACT_YES, UI_ACT_NO, UI_ACT_RESUME, UI_ACT_EDIT,
                                   UI_ACT_APPLY, UI_ACT_BACK, UI_ACT_INSPECT, UI_ACT_MISTAKES,
                                   UI_ACT_RIGHT, UI_ACT_LEFT, UI_ACT_PERCENT, UI_ACT_NEXT,
                                   UI_ACT_AUGMENT, UI_ACT_CONFIG, UI_ACT_SORT, UI_ACT_ZOOM,
                                   UI_ACT_FOCUS_NEXT, UI_ACT_TOGGLE, UI_ACT_RUNS };
    int show[64] = { 0 }, ns = 0;
    int width = 0;
    for (size_t ri = 0; ri < sizeof rank / sizeof rank[0]; ri++) {
        for (size_t i = 0; i < nk && ns < 64; i++) {
            const ui_key *k = &keys[i];
            if (k->ctx != ctx || !k->hint || k->act != rank[ri])
                continue;
            if (ctx == UI_CTX_MAIN && k->act == UI_ACT_START && state != RUN_IDLE)
                continue;
            if (ctx == UI_CTX_MAIN && k->act == UI_ACT_CONFIG && state != RUN_IDLE)
                continue;
            /* p applies only to a run under way, not to one that has ended. */
            if (ctx == UI_CTX_MAIN && k->act == UI_ACT_PAUSE && state != RUN_PREPARING &&
                state != RUN_RUNNING && state != RUN_PAUSED)
                continue;
            if (ctx == UI_CTX_ASK && k->act == UI_ACT_RESUME && !f->ask_resume)
                continue;
            int kw = ui_draw_width(k->name) + 1 + ui_draw_width(k->hint) + 2;
            if (width + kw > end - r.x)
                continue;
            width += kw;
            show[ns++] = (int)i;
        }
    }
    /* Print in table order. */
    int x = r.x;
    for (size_t i = 0; i < nk; i++) {
        int on = 0;
        for (int j = 0; j < ns; j++)
            if (show[j] == (int)i)
                on = 1;
        if (!on)
            continue;
        const ui_key *k = &keys[i];
        const char *hint = k->hint;
        if (k->act == UI_ACT_PAUSE && state == RUN_PAUSED)
            hint = "resume";
        x += ui_draw_text(w, r.y, x, end - x, UI_R_KEY, k->name);
        x += ui_draw_text(w, r.y, x, end - x, UI_R_NORMAL, " ");
        x += ui_draw_text(w, r.y, x, end - x, UI_R_NORMAL, hint);
        x += 2;
    }
}

/* ---- replicas ------------------------------------------------------------------ */

void ui_panel_replicas(WINDOW *w, ui_rect r, const ui_frame *f, const ui_view *v, int focused)
{
    (void)v;
    const run_snapshot *s = f->s;
    char title[96], buf[128];
    int n_rep = s->n_replicas > 0 ? s->n_replicas : s->replicas;
    if (s->ranks > 1) /* an mpirun job: its ranks, and their time in collectives */
        snprintf(title, sizeof title, "Replicas %d on %d ranks, comm %.1f ms/update", n_rep,
                 s->ranks, s->comm_ms);
    else
        snprintf(title, sizeof title, "Replicas %d", n_rep);
    ui_rect in = ui_draw_box(w, r, title, focused);
    if (in.h <= 0 || in.w <= 10)
        return;
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
            bar(w, y, cx, gauge, rp->mxu_pct / 100.0, UI_R_OK, 1);
            cx += gauge;
        }
        snprintf(buf, sizeof buf, "%3.0f%%", rp->mxu_pct);
        ui_draw_text(w, y, cx, 4, UI_R_NORMAL, buf);
        y++;
        rows_left--;
    }
    /* The queue and the totals take the last two rows. */
    int yq = in.y + in.h - 2;
    if (yq < y)
        yq = y;
    if (yq < in.y + in.h) {
        x = in.x;
        x += ui_draw_text(w, yq, x, W, UI_R_DIM, "queue ");
        int qw = W - 16 > 16 ? 16 : W - 16;
        double q = s->queue_capacity > 0 ? (double)s->queue_depth / s->queue_capacity : 0;
        if (qw > 2) {
            bar(w, yq, x, qw, q, q < 0.25 && s->state == RUN_RUNNING ? UI_R_WARN : UI_R_BAR_A, 1);
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

/* ---- curves -------------------------------------------------------------------- */

static float epoch_value(const run_epoch *e, int metric, int val)
{
    switch (metric) {
    case UI_METRIC_LOSS: return (float)(val ? e->val_loss : e->train_loss);
    case UI_METRIC_ACC: return (float)(val ? e->val_acc : e->train_acc);
    case UI_METRIC_F1: return (float)(val ? e->val_f1 : e->train_f1);
    default: return NAN;
    }
}

ui_role ui_panel_compare_role(int k)
{
    static const ui_role r[UI_MAX_COMPARE] = { UI_R_C1, UI_R_C2, UI_R_C3,
                                               UI_R_C4, UI_R_C5, UI_R_C6 };
    return r[(k % UI_MAX_COMPARE + UI_MAX_COMPARE) % UI_MAX_COMPARE];
}

/* The compared runs' series of a metric: train, validation (RUN_S_*). */
static void compare_series(int metric, int *train, int *val)
{
    *train = *val = -1;
    if (metric == UI_METRIC_LOSS) {
        *train = RUN_S_TRAIN_LOSS;
        *val = RUN_S_VAL_LOSS;
    } else if (metric == UI_METRIC_ACC) {
        *train = RUN_S_TRAIN_ACC;
        *val = RUN_S_VAL_ACC;
    } else if (metric == UI_METRIC_F1) {
        *train = RUN_S_TRAIN_F1;
        *val = RUN_S_VAL_F1;
    } else {
        *val = RUN_S_BATCH_LR;
    }
}

/* This run's x positions: an update's epoch (fraction) and wall-clock second,
 * from the epochs' ends (cumulative updates and seconds) and, inside the epoch
 * under way, its pace so far. */
typedef struct xmap {
    const float *cu, *ct;   /* ne epochs' ends: updates, seconds */
    int ne;
    double spe;             /* updates per epoch */
    double now_u, now_t;    /* the run's update and elapsed seconds */
} xmap;

static double xmap_of(const xmap *m, int axis, double u)
{
    if (axis == UI_X_UPDATE)
        return u;
    double pu = 0, pv = 0; /* the epoch end before u */
    for (int i = 0; i < m->ne; i++) {
        double cu = m->cu[i], cv = axis == UI_X_EPOCH ? i + 1 : m->ct[i];
        if (u <= cu)
            return cu > pu ? pv + (cv - pv) * (u - pu) / (cu - pu) : cv;
        pu = cu;
        pv = cv;
    }
    if (axis == UI_X_EPOCH)
        return m->spe > 0 ? pv + (u - pu) / m->spe : NAN;
    /* Inside the epoch under way: at the pace since the last epoch's end. */
    if (m->now_u > pu && m->now_t > pv)
        return pv + (m->now_t - pv) * (u - pu) / (m->now_u - pu);
    return m->ne > 0 && pu > 0 ? pv / pu * u : NAN;
}

static void fmt_x(int axis, double x, char *buf, size_t n)
{
    char num[16];
    if (axis == UI_X_TIME) {
        ui_chart_fmt_dur(x, num, sizeof num);
        snprintf(buf, n, "%s", num);
    } else {
        ui_chart_fmt(x, 6, num, sizeof num);
        snprintf(buf, n, "%s %s", axis == UI_X_EPOCH ? "epoch" : "upd", num);
    }
}

void ui_panel_curves(WINDOW *w, ui_rect r, const ui_frame *f, const ui_view *v, int focused)
{
    const run_snapshot *s = f->s;
    int metric = v->metric;
    int axis = v->xaxis >= 0 && v->xaxis < UI_X_COUNT ? v->xaxis : UI_X_UPDATE;
    int logy = v->logy && (metric == UI_METRIC_LOSS || metric == UI_METRIC_LR);
    double sm = ui_panel_smooth[v->smooth >= 0 && v->smooth < UI_SMOOTH_STEPS ? v->smooth : 0];
    int nc = f->compare ? (f->n_compare < UI_MAX_COMPARE ? f->n_compare : UI_MAX_COMPARE) : 0;
    static const char *const axis_name[UI_X_COUNT] = { "update", "epoch", "time" };
    char title[160];
    snprintf(title, sizeof title, "Curves: %s%s by %s  smooth %.2g%s%s",
             ui_panel_metric_name(metric), logy ? " (log)" : "", axis_name[axis], sm,
             nc ? "  + compared" : "", focused ? "  [v l x + -]" : "");
    ui_rect in = ui_draw_box(w, r, title, focused);
    if (in.h < 4 || in.w < 16)
        return;
    const int yw = 7;
    int cursor_on = v->cursor >= 0 && v->zoom == UI_P_CURVES;
    /* Rows under the plot: the x axis, the legend (a second one for the compared
     * runs when there is room), and with the cursor a row per run. */
    int legend_rows = nc > 0 && in.h >= 10 ? 2 : 1;
    int readout = cursor_on ? 1 + nc : 0;
    if (in.h - 1 - legend_rows - readout < 3)
        readout = 0;
    int ph = in.h - 1 - legend_rows - readout, pw = in.w - yw;

    static float smooth[RUN_CURVE_POINTS], cx[RUN_CURVE_POINTS];
    static float ex[RUN_MAX_EPOCHS], et[RUN_MAX_EPOCHS], ev[RUN_MAX_EPOCHS];
    static float cu[RUN_MAX_EPOCHS], ct[RUN_MAX_EPOCHS];
    int n = s->curve_n < RUN_CURVE_POINTS ? s->curve_n : RUN_CURVE_POINTS;
    const float *src = metric == UI_METRIC_LOSS ? s->curve_loss
                       : metric == UI_METRIC_ACC ? s->curve_acc
                       : metric == UI_METRIC_LR  ? s->curve_lr
                                                 : NULL;
    if (!src)
        n = 0;
    int stride = s->curve_stride > 0 ? s->curve_stride : 1;
    if (n > 0)
        ui_chart_ema(src, n, metric == UI_METRIC_LR ? 0 : sm, smooth);
    int ne = s->history_n < RUN_MAX_EPOCHS ? s->history_n : RUN_MAX_EPOCHS;
    double cum = 0, secs = 0;
    for (int i = 0; i < ne; i++) {
        long long upd = s->history[i].updates > 0 ? s->history[i].updates : s->steps_per_epoch;
        cum += (double)upd;
        secs += s->history[i].seconds > 0 ? s->history[i].seconds : 0;
        cu[i] = (float)cum;
        ct[i] = (float)secs;
        et[i] = metric == UI_METRIC_LR ? NAN : epoch_value(&s->history[i], metric, 0);
        ev[i] = metric == UI_METRIC_LR ? NAN : epoch_value(&s->history[i], metric, 1);
    }
    xmap xm = { cu, ct, ne, (double)s->steps_per_epoch, (double)s->update, s->elapsed };
    for (int i = 0; i < ne; i++)
        ex[i] = (float)xmap_of(&xm, axis, cu[i]);
    for (int i = 0; i < n; i++)
        cx[i] = (float)xmap_of(&xm, axis, (double)(i + 1) * stride);
    int mono = ui_draw_color_mode() == UI_COLOR_NONE;
    ui_chart_series ser[4 + 2 * UI_MAX_COMPARE];
    int ns = 0;
    int raw_k = -1, smooth_k = -1, et_k = -1, ev_k = -1, cmp_k[UI_MAX_COMPARE][2];
    if (n > 0 && sm > 0 && metric != UI_METRIC_LR) {
        raw_k = ns;
        ser[ns++] = (ui_chart_series){ src, cx, 0, 0, n, UI_R_DIM, 0, 1 };
    }
    if (n > 0) {
        smooth_k = ns;
        ser[ns++] = (ui_chart_series){ smooth, cx, 0, 0, n, UI_R_S1, 0, 0 };
    }
    if (ne > 0 && metric != UI_METRIC_LR) {
        et_k = ns;
        ser[ns++] = (ui_chart_series){ et, ex, 0, 0, ne, UI_R_S2, mono ? 't' : 0, 0 };
        ev_k = ns;
        ser[ns++] = (ui_chart_series){ ev, ex, 0, 0, ne, UI_R_S3, mono ? 'v' : 0, 0 };
    }
    int ctr, cvl;
    compare_series(metric, &ctr, &cvl);
    for (int k = 0; k < nc; k++) {
        const run_figures *c = f->compare[k];
        ui_role role = ui_panel_compare_role(k);
        cmp_k[k][0] = cmp_k[k][1] = -1;
        if (ctr >= 0 && c->s[ctr].n > 0) {
            cmp_k[k][0] = ns;
            ser[ns++] = (ui_chart_series){ c->s[ctr].y, c->s[ctr].x[axis], 0, 0, c->s[ctr].n,
                                           role, 0, 1 };
        }
        if (cvl >= 0 && c->s[cvl].n > 0) {
            cmp_k[k][1] = ns;
            ser[ns++] = (ui_chart_series){ c->s[cvl].y, c->s[cvl].x[axis], 0, 0, c->s[cvl].n,
                                           role, mono ? (uint32_t)('1' + k) : 0, 0 };
        }
    }
    if (ns == 0) {
        const char *msg = metric == UI_METRIC_F1 ? "macro F1 comes after the first epoch"
                          : s->state == RUN_IDLE  ? "no updates yet: s starts the run"
                                                  : "waiting for the first update";
        if (f->opened)
            msg = "the run's folder holds no such curve";
        int mw = ui_draw_width(msg);
        ui_draw_text(w, in.y + ph / 2, in.x + (in.w > mw ? (in.w - mw) / 2 : 0), in.w, UI_R_DIM,
                     msg);
        return;
    }
    ui_chart_axis ya, xa = { 0, 1, 0 };
    /* The y range follows what is drawn; the raw curve's outliers would squash
     * the smoothed one, so the range comes from the others. */
    {
        ui_chart_series rs[4 + 2 * UI_MAX_COMPARE];
        int nr = 0;
        for (int k = 0; k < ns; k++)
            if (k != raw_k)
                rs[nr++] = ser[k];
        ui_chart_yrange(rs, nr, logy, &ya);
    }
    double xmax = axis == UI_X_EPOCH ? 1 : axis == UI_X_TIME ? 10 : 1;
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < ser[k].n; i++)
            if (isfinite(ser[k].x[i]) && ser[k].x[i] > xmax)
                xmax = ser[k].x[i];
    if (axis == UI_X_UPDATE && (double)s->update > xmax)
        xmax = (double)s->update;
    xa.hi = xmax;
    ui_cells g;
    if (ui_draw_cells_init(&g, ph, pw) != 0)
        return;
    ui_chart_plot(&g, xa, ya, ser, ns);
    ui_draw_cells(w, in.y, in.x + yw, &g);
    ui_draw_cells_free(&g);
    char num[16];
    int label_rows[3] = { 0, ph / 2, ph - 1 };
    for (int i = 0; i < 3; i++) {
        if (i > 0 && label_rows[i] == label_rows[i - 1])
            continue;
        double val = ui_chart_row_value(ya, ph, label_rows[i]);
        ui_chart_fmt(val, yw - 1, num, sizeof num);
        ui_draw_textf(w, in.y + label_rows[i], in.x, yw - 1, UI_R_DIM, "%*s", yw - 1, num);
    }
    for (int y = 0; y < ph; y++)
        ui_draw_glyph(w, in.y + y, in.x + yw - 1, 0x2502, UI_R_DIM);
    /* x axis: a rule with a tick at every epoch's end of this run, 0 and the end. */
    int ay = in.y + ph;
    ui_draw_hline(w, ay, in.x + yw, pw, 0x2500, UI_R_DIM);
    for (int i = 0; i < ne; i++) {
        if (!isfinite(ex[i]))
            continue;
        int tx = (int)lround(ex[i] / xmax * (pw * 2 - 1)) / 2;
        if (tx >= 0 && tx < pw)
            ui_draw_glyph(w, ay, in.x + yw + tx, '+', UI_R_DIM);
    }
    ui_draw_text(w, ay, in.x + yw - 1, 2, UI_R_DIM, "0");
    char lab[48];
    fmt_x(axis, xmax, lab, sizeof lab);
    int lw = (int)strlen(lab);
    ui_draw_text(w, ay, in.x + in.w - lw, lw, UI_R_DIM, lab);
    /* The value cursor: a column, and the values of every run there. */
    if (cursor_on) {
        int col = v->cursor < pw ? v->cursor : pw - 1;
        double xc = pw > 1 ? xmax * (2.0 * col + 0.5) / (pw * 2 - 1) : 0;
        for (int y = 0; y < ph; y++) {
            chtype here = mvwinch(w, in.y + y, in.x + yw + col) & A_CHARTEXT;
            if (here == ' ')
                ui_draw_glyph(w, in.y + y, in.x + yw + col, 0x2506, UI_R_TITLE);
        }
        ui_draw_glyph(w, ay, in.x + yw + col, 0x2534, UI_R_TITLE);
        int ry = ay + 1 + legend_rows;
        char line[512], xs[48], a1[16], a2[16], a3[16];
        fmt_x(axis, xc, xs, sizeof xs);
        for (int k = -1; k < nc && readout > 0; k++) {
            int len = 0;
            ui_role role = k < 0 ? UI_R_NORMAL : ui_panel_compare_role(k);
            if (k < 0) {
                double su = smooth_k >= 0 ? ui_chart_value_at(&ser[smooth_k], xc) : NAN;
                double tv = et_k >= 0 ? ui_chart_value_at(&ser[et_k], xc) : NAN;
                double vv = ev_k >= 0 ? ui_chart_value_at(&ser[ev_k], xc) : NAN;
                ui_chart_fmt(su, 6, a1, sizeof a1);
                ui_chart_fmt(tv, 6, a2, sizeof a2);
                ui_chart_fmt(vv, 6, a3, sizeof a3);
                len = snprintf(line, sizeof line, "at %s  this run: %s %s  train %s  val %s", xs,
                               metric == UI_METRIC_LR ? "lr" : "per update", a1, a2, a3);
            } else {
                double tv = cmp_k[k][0] >= 0 ? ui_chart_value_at(&ser[cmp_k[k][0]], xc) : NAN;
                double vv = cmp_k[k][1] >= 0 ? ui_chart_value_at(&ser[cmp_k[k][1]], xc) : NAN;
                ui_chart_fmt(tv, 6, a2, sizeof a2);
                ui_chart_fmt(vv, 6, a3, sizeof a3);
                if (metric == UI_METRIC_LR)
                    len = snprintf(line, sizeof line, "%s: lr %s", f->compare[k]->name, a3);
                else
                    len = snprintf(line, sizeof line, "%s: train %s  val %s",
                                   f->compare[k]->name, a2, a3);
            }
            (void)len;
            ui_draw_text_cut(w, ry, in.x, in.w, role, line);
            ry++;
        }
    }
    /* legend */
    int lx = in.x, ly = ay + 1;
    if (metric != UI_METRIC_F1 && n > 0)
        lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, UI_R_S1,
                           metric == UI_METRIC_LR ? "-- lr per update  " : "-- train/update  ");
    if (metric != UI_METRIC_LR && ne > 0) {
        lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, UI_R_S2,
                           mono ? "t train/epoch  " : "-- train/epoch  ");
        lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, UI_R_S3,
                           mono ? "v val/epoch  " : "-- val/epoch  ");
        const run_epoch *e = &s->history[ne - 1];
        float lv = epoch_value(e, metric, 1);
        if (isfinite(lv)) {
            ui_chart_fmt(lv, 6, num, sizeof num);
            char last[48];
            snprintf(last, sizeof last, "val %s  ", num);
            lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, UI_R_S3, last);
        }
    }
    if (nc > 0) {
        if (legend_rows > 1) {
            ly++;
            lx = in.x;
        }
        lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, UI_R_DIM,
                           metric == UI_METRIC_LR ? "compared: " : "compared (val line, train dots): ");
        for (int k = 0; k < nc && lx < in.x + in.w; k++) {
            char item[300];
            const run_figures *c = f->compare[k];
            int drawn = (cmp_k[k][0] >= 0 || cmp_k[k][1] >= 0);
            int on_axis = 0;
            for (int j = 0; j < 2; j++)
                for (int i = 0; cmp_k[k][j] >= 0 && i < ser[cmp_k[k][j]].n && !on_axis; i++)
                    on_axis = isfinite(ser[cmp_k[k][j]].x[i]);
            snprintf(item, sizeof item, "%s%s %s%s  ", mono ? "" : "\xe2\x94\x81",
                     mono ? (char[2]){ (char)('1' + k), 0 } : "", c->name,
                     !drawn ? " (none)" : !on_axis ? " (no x)" : "");
            lx += ui_draw_text(w, ly, lx, in.x + in.w - lx, ui_panel_compare_role(k), item);
        }
    }
}

/* ---- labels -------------------------------------------------------------------- */

void ui_panel_labels(WINDOW *w, ui_rect r, const ui_frame *f, const ui_view *v, int focused)
{
    const run_snapshot *s = f->s;
    int C = s->label_classes < RUN_MAX_CLASSES ? s->label_classes : RUN_MAX_CLASSES;
    ui_rect in;
    char title[128], nb[64];
    int rows_avail = r.h - 3;
    int binned = C > rows_avail && v->label_bins;
    snprintf(title, sizeof title, "Labels: %d classes%s%s", C,
             binned ? " in bins" : "", focused ? "  [b PgUp PgDn]" : "");
    in = ui_draw_box(w, r, title, focused);
    if (in.h < 2 || in.w < 20)
        return;
    if (C <= 0) {
        ui_draw_text_cut(w, in.y + in.h / 2, in.x + 1, in.w - 1, UI_R_DIM,
                         "counts come with the label scan");
        return;
    }
    /* legend row */
    int x = in.x;
    ui_draw_glyph(w, in.y, x, 0x2588, UI_R_BAR_A);
    x += 1 + ui_draw_text(w, in.y, x + 1, in.w - 1, UI_R_NORMAL,
                          s->oversampling ? " original  " : " train  ");
    if (s->oversampling && x + 2 < in.x + in.w) {
        ui_draw_glyph(w, in.y, x, 0x2588, UI_R_BAR_C);
        x += 1 + ui_draw_text(w, in.y, x + 1, in.x + in.w - x - 1, UI_R_NORMAL, " oversampled  ");
    }
    if (x + 2 < in.x + in.w) {
        ui_draw_glyph(w, in.y, x, 0x2588, UI_R_BAR_B);
        ui_draw_text(w, in.y, x + 1, in.x + in.w - x - 1, UI_R_NORMAL, " validation");
    }

    int rows = in.h - 1;
    int k = 1; /* classes per row */
    if (binned)
        k = (C + rows - 1) / rows;
    int nrows = (C + k - 1) / k;
    int top = binned ? 0 : v->label_top;
    if (top > nrows - rows)
        top = nrows - rows;
    if (top < 0)
        top = 0;
    long long mt = 1, mv = 1;
    for (int row = 0; row < nrows; row++) {
        long long t = 0, vv = 0;
        for (int c = row * k; c < (row + 1) * k && c < C; c++) {
            t += s->oversampling ? s->train_oversampled[c] : s->train_counts[c];
            vv += s->val_counts[c];
        }
        mt = t > mt ? t : mt;
        mv = vv > mv ? vv : mv;
    }
    /* Names as wide as the longest shown needs, while the bars keep 12 columns
     * (a third of the panel at least); a longer name ends in an ellipsis. */
    int numw = 6;
    int longest = 0;
    for (int i = 0; i < rows && top + i < nrows; i++) {
        int c0 = (top + i) * k;
        int lw = k == 1 ? ui_draw_width(ui_panel_class_name(f, c0, nb, sizeof nb)) : 9;
        longest = lw > longest ? lw : longest;
    }
    int nw_max = in.w - 2 * numw - 2 - 12 > in.w / 3 ? in.w - 2 * numw - 2 - 12 : in.w / 3;
    int nw = longest < nw_max ? longest : nw_max;
    if (nw < 6)
        nw = 6;
    int bars = in.w - nw - 2 * numw - 2;
    int tb = bars * 3 / 5, vb = bars - tb;
    for (int i = 0; i < rows && top + i < nrows; i++) {
        int row = top + i, y = in.y + 1 + i;
        int c0 = row * k, c1 = (row + 1) * k < C ? (row + 1) * k : C;
        long long t = 0, o = 0, vv = 0;
        for (int c = c0; c < c1; c++) {
            t += s->train_counts[c];
            o += s->train_oversampled[c];
            vv += s->val_counts[c];
        }
        const char *name = nb;
        if (k == 1)
            name = ui_panel_class_name(f, c0, nb, sizeof nb);
        else
            snprintf(nb, sizeof nb, "%d-%d", c0, c1 - 1);
        ui_draw_text_cut(w, y, in.x, nw, UI_R_NORMAL, name);
        int bx = in.x + nw + 1;
        /* With oversampling, the real count is drawn over the oversampled one. */
        if (s->oversampling)
            bar(w, y, bx, tb, (double)o / mt, UI_R_BAR_C, 0);
        bar(w, y, bx, tb, (double)t / mt, UI_R_BAR_A, 0);
        char num[16];
        ui_chart_fmt((double)(s->oversampling ? o : t), numw - 1, num, sizeof num);
        ui_draw_textf(w, y, bx + tb, numw, UI_R_DIM, "%*s", numw - 1, num);
        int vx = bx + tb + numw + 1;
        bar(w, y, vx, vb, (double)vv / mv, UI_R_BAR_B, 0);
        ui_chart_fmt((double)vv, numw - 1, num, sizeof num);
        ui_draw_textf(w, y, vx + vb, numw, UI_R_DIM, "%*s", numw - 1, num);
    }
    if (nrows + 2 <= rows) {
        /* Room to spare: the totals, and how uneven the classes are (what
         * oversampling is for). */
        long long tt = 0, to = 0, tv = 0, lo = -1, hi = 0;
        for (int c = 0; c < C; c++) {
            tt += s->train_counts[c];
            to += s->train_oversampled[c];
            tv += s->val_counts[c];
            if (s->train_counts[c] > 0 && (lo < 0 || s->train_counts[c] < lo))
                lo = s->train_counts[c];
            hi = s->train_counts[c] > hi ? s->train_counts[c] : hi;
        }
        char tot[160];
        if (s->oversampling)
            snprintf(tot, sizeof tot, "train %lld -> %lld oversampled, val %lld, largest/smallest %.1fx",
                     tt, to, tv, lo > 0 ? (double)hi / (double)lo : 0.0);
        else
            snprintf(tot, sizeof tot, "train %lld, val %lld, largest/smallest %.1fx, no oversampling",
                     tt, tv, lo > 0 ? (double)hi / (double)lo : 0.0);
        ui_draw_text_cut(w, in.y + in.h - 1, in.x, in.w, UI_R_DIM, tot);
    }
    if (!binned && nrows > rows) {
        snprintf(nb, sizeof nb, " %d-%d of %d ", top + 1,
                 top + rows < nrows ? top + rows : nrows, nrows);
        ui_draw_text(w, r.y + r.h - 1, r.x + r.w - 2 - (int)strlen(nb), (int)strlen(nb), UI_R_DIM,
                     nb);
    }
}

/* ---- log ----------------------------------------------------------------------- */

/* "update N, why" of the snapshot's last checkpoint ("PATH (update N, why)"), or
 * the whole of it when it has another form. */
static const char *checkpoint_what(const char *last, char *buf, size_t n)
{
    const char *u = strstr(last, " (update ");
    size_t len = strlen(last);
    if (!u || len < 2 || last[len - 1] != ')')
        return last;
    snprintf(buf, n, "%.*s", (int)(last + len - 1 - (u + 2)), u + 2);
    return buf;
}

void ui_panel_log(WINDOW *w, ui_rect r, const ui_frame *f, const ui_view *v, int focused)
{
    const run_snapshot *s = f->s;
    char title[160];
    snprintf(title, sizeof title, "Log  %lld data error%s  %lld checkpoint%s", s->data_errors,
             s->data_errors == 1 ? "" : "s", s->checkpoints, s->checkpoints == 1 ? "" : "s");
    ui_rect in = ui_draw_box(w, r, title, focused);
    if (in.h <= 0 || in.w < 10)
        return;
    if (s->data_errors > 0) {
        /* Errors are what must not be missed: their count stays in red. */
        char e[48];
        snprintf(e, sizeof e, "%lld data error%s", s->data_errors, s->data_errors == 1 ? "" : "s");
        ui_draw_text(w, r.y, r.x + 2 + 6, r.w - 10, UI_R_BAD, e);
    }
    /* At the bottom, where they stay: the run folder in full (wrapped over up to
     * three lines) and the last checkpoint; the log lines above them. */
    int rows = in.h;
    char where[1200] = "";
    if (f->run_dir && f->run_dir[0])
        snprintf(where, sizeof where, "run folder: %s", f->run_dir);
    int where_h = where[0] ? ui_draw_wrap_count(where, in.w) : 0;
    int keep = rows >= 4 ? 2 : rows - 1; /* rows left to the log and the checkpoint */
    if (where_h > rows - keep)
        where_h = rows - keep > 0 ? rows - keep : 0;
    if (where_h > 3)
        where_h = 3;
    rows -= where_h;
    if (where_h > 0)
        ui_draw_wrapped_from(w, (ui_rect){ in.y + rows, in.x, where_h, in.w }, UI_R_INFO, where,
                             0, 1);
    if (s->last_checkpoint[0] && rows >= 2) {
        rows--;
        char what[512];
        int x = in.x;
        x += ui_draw_text(w, in.y + rows, x, in.w, UI_R_DIM, "last checkpoint: ");
        ui_draw_text_cut(w, in.y + rows, x, in.x + in.w - x, UI_R_INFO,
                         checkpoint_what(s->last_checkpoint, what, sizeof what));
    }
    int n = f->log ? f->log->n : 0;
    int back = v->log_back < 0 ? 0 : v->log_back;
    if (back > n - 1)
        back = n - 1 > 0 ? n - 1 : 0;
    /* Lines wrap under their text, newest at the bottom; the oldest one shown
     * may be cut, with an ellipsis. */
    const int tw = 6, textw = in.w - tw;
    int y = in.y + rows;
    for (int i = n - 1 - back; i >= 0 && y > in.y; i--) {
        const ui_log_line *ln = ui_log_get(f->log, i);
        int h = ui_draw_wrap_count(ln->text, textw);
        if (h < 1)
            h = 1;
        if (h > y - in.y)
            h = y - in.y;
        y -= h;
        char t[16];
        int sec = (int)ln->t;
        snprintf(t, sizeof t, "%02d:%02d ", sec / 60 % 100, sec % 60);
        ui_draw_text(w, y, in.x, tw, UI_R_DIM, t);
        ui_draw_wrapped_from(w, (ui_rect){ y, in.x + tw, h, textw }, (ui_role)ln->role, ln->text,
                             0, 1);
    }
    if (n == 0 && rows > 0)
        ui_draw_text(w, in.y, in.x, in.w, UI_R_DIM, "messages, data errors and checkpoints");
    if (back > 0) {
        char b[32];
        snprintf(b, sizeof b, " -%d ", back);
        ui_draw_text(w, r.y + r.h - 1, r.x + r.w - 2 - (int)strlen(b), (int)strlen(b), UI_R_DIM, b);
    }
}

/* ---- preview frame ------------------------------------------------------------- */

ui_rect ui_panel_preview(WINDOW *w, ui_rect r, const ui_frame *f, int focused, uint64_t batch)
{
    char title[256];
    const char *aug = f->augment && *f->augment ? f->augment : "default";
    if (batch)
        snprintf(title, sizeof title, "Preview #%llu: original | augmented (%s)%s",
                 (unsigned long long)batch, aug, focused ? "  [n a]" : "");
    else
        snprintf(title, sizeof title, "Preview: original | augmented (%s)", aug);
    ui_rect in = ui_draw_box(w, r, title, focused);
    if (f->pix && in.w > 20 && in.h > 0) {
        char m[64];
        snprintf(m, sizeof m, " %s ", f->pix);
        int mw = (int)strlen(m);
        if (mw < r.w - 4)
            ui_draw_text(w, r.y + r.h - 1, r.x + r.w - 2 - mw, mw, UI_R_DIM, m);
    }
    return in;
}

/* ---- overlays ------------------------------------------------------------------ */

static ui_rect centred(int rows, int cols, int h, int wd)
{
    if (wd > cols - 2)
        wd = cols - 2;
    if (h > rows - 2)
        h = rows - 2;
    ui_rect r = { (rows - h) / 2, (cols - wd) / 2, h, wd };
    return r;
}

ui_rect ui_panel_help(WINDOW *w, int rows, int cols, ui_view *v)
{
    enum { LINE_N = 200, MAXL = 128, KEYW = 16 };
    /* Entries: a title, a key with its description, a blank, a note. */
    static char key[MAXL][KEYW + 1], text[MAXL][LINE_N];
    static ui_role role[MAXL];
    static char lines[MAXL][LINE_N];
    int n = 0;
    for (int c = 0; c < UI_CTX_COUNT && n < MAXL - 2; c++) {
        if (n > 0) {
            key[n][0] = text[n][0] = 0;
            role[n++] = UI_R_NORMAL;
        }
        key[n][0] = 0;
        snprintf(text[n], LINE_N, "%s", ui_keys_ctx_name((ui_ctx)c));
        role[n++] = UI_R_TITLE;
        int got = ui_keys_help((ui_ctx)c, KEYW, &lines[0][0], LINE_N, MAXL - n - 1);
        for (int i = 0; i < got; i++, n++) {
            /* "NAMES<pad> description": the names are the first KEYW columns. */
            snprintf(key[n], sizeof key[n], "%.*s", KEYW, lines[i]);
            for (int k = (int)strlen(key[n]); k > 0 && key[n][k - 1] == ' '; k--)
                key[n][k - 1] = 0;
            snprintf(text[n], LINE_N, "%s", lines[i] + (strlen(lines[i]) > KEYW ? KEYW + 1 : 0));
            role[n] = UI_R_NORMAL;
        }
        if (c == UI_CTX_INSPECT && n < MAXL) {
            snprintf(key[n], sizeof key[n], "s p ? q ^L");
            snprintf(text[n], LINE_N, "work here too");
            role[n++] = UI_R_NORMAL;
        }
    }
    if (n < MAXL - 2) {
        key[n][0] = text[n][0] = 0;
        role[n++] = UI_R_NORMAL;
        key[n][0] = 0;
        snprintf(text[n], LINE_N, "Ctrl-C pauses the run and asks; a hang-up writes a checkpoint "
                                  "and exits.");
        role[n++] = UI_R_DIM;
    }
    /* As wide as the longest line needs, within the screen; descriptions wrap
     * under themselves when narrower. */
    int need = 0;
    for (int i = 0; i < n; i++) {
        int lw = (key[i][0] ? KEYW + 1 : 0) + ui_draw_width(text[i]);
        need = lw > need ? lw : need;
    }
    int bw = need + 4; /* the borders and a column of margin each side */
    ui_rect b = centred(rows, cols, 3, bw);
    int dw = b.w - KEYW - 5; /* description columns */
    if (dw < 10)
        dw = 10;
    static int row_of[MAXL + 1];
    int total = 0;
    for (int i = 0; i < n; i++) {
        row_of[i] = total;
        int h = ui_draw_wrap_count(text[i], key[i][0] ? dw : b.w - 4);
        total += h > 0 ? h : 1;
    }
    row_of[n] = total;
    b = centred(rows, cols, total + 2, bw);
    ui_draw_clear(w, b);
    ui_rect in = ui_draw_box(w, b, "Help: Up/Down/PgUp/PgDn scroll, any other key closes", 1);
    if (in.h <= 0)
        return b;
    int maxtop = total - in.h > 0 ? total - in.h : 0;
    if (v->help_top > maxtop)
        v->help_top = maxtop;
    if (v->help_top < 0)
        v->help_top = 0;
    for (int i = 0; i < n; i++) {
        int y = in.y + row_of[i] - v->help_top;
        int h = row_of[i + 1] - row_of[i];
        /* The rows of this entry on screen: from skip, at most fit. */
        int skip = y < in.y ? in.y - y : 0;
        int fit = in.y + in.h - (y + skip);
        if (skip >= h || fit <= 0)
            continue;
        if (fit > h - skip)
            fit = h - skip;
        if (key[i][0]) {
            if (skip == 0)
                ui_draw_text(w, y, in.x + 1, KEYW, UI_R_KEY, key[i]);
            ui_draw_wrapped_from(w, (ui_rect){ y + skip, in.x + KEYW + 2, fit, dw }, UI_R_NORMAL,
                                 text[i], skip, 0);
        } else {
            ui_draw_wrapped_from(w, (ui_rect){ y + skip, in.x + 1, fit, in.w - 2 }, role[i],
                                 text[i], skip, 0);
        }
    }
    if (maxtop > 0) {
        char m[32];
        snprintf(m, sizeof m, " %d/%d ", v->help_top + in.h < total ? v->help_top + in.h : total,
                 total);
        ui_draw_text(w, b.y + b.h - 1, b.x + b.w - 2 - (int)strlen(m), (int)strlen(m), UI_R_DIM, m);
    }
    return b;
}

ui_rect ui_panel_dialog(WINDOW *w, int rows, int cols, const char *title,
                        const char *const *lines, int n, ui_ctx ctx, int can_resume)
{
    if (n > 8)
        n = 8;
    int wd = ui_draw_width(title) + 6;
    for (int i = 0; i < n; i++)
        if (ui_draw_width(lines[i]) + 4 > wd)
            wd = ui_draw_width(lines[i]) + 4;
    if (wd < 40)
        wd = 40;
    ui_rect b = centred(rows, cols, n + 4, wd);
    ui_draw_clear(w, b);
    ui_rect in = ui_draw_box(w, b, title, 1);
    for (int i = 0; i < n && i < in.h; i++)
        ui_draw_text(w, in.y + i, in.x + 1, in.w - 2, UI_R_NORMAL, lines[i]);
    ui_rect hints = { in.y + in.h - 1, in.x + 1, 1, in.w - 2 };
    ui_frame none = { 0 };
    none.ask_resume = can_resume;
    ui_panel_footer(w, hints, &none, ctx);
    return b;
}

void ui_panel_too_small(WINDOW *w, int rows, int cols)
{
    char m[96];
    snprintf(m, sizeof m, "terminal %dx%d: petal-tui needs %dx%d (q quits)", cols, rows,
             UI_LAYOUT_MIN_COLS, UI_LAYOUT_MIN_ROWS);
    int mw = (int)strlen(m);
    ui_draw_text(w, rows / 2, cols > mw ? (cols - mw) / 2 : 0, cols, UI_R_WARN, m);
}
