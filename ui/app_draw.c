/* app_draw — one frame of the workbench (see app_impl.h): the header, the footer,
 * the panels from panels.h's table (the preview's pictures here), the inspect view
 * or a dialog over them; then curses' update and the pictures after it. */
#include "ui/app_impl.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "ui/draw.h"
#include "ui/inspect.h"
#include "ui/keys.h"
#include "ui/layout.h"
#include "ui/lrfind.h"
#include "ui/panels.h"
#include "ui/preview.h"
#include "ui/rowmove.h"

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static void draw_preview(app *a, const ui_frame *f)
{
    ui_rect r = a->layout.panel[UI_P_PREVIEW];
    int focused = a->view.focus == UI_P_PREVIEW;
    ui_rect in = ui_panel_preview(stdscr, r, f, focused, a->pv.n > 0 ? a->pv.generation : 0);
    if (in.h < 2 || in.w < 8) {
        ui_preview_hide(&a->pview);
        return;
    }
    if (a->open_nodata[0]) {
        ui_preview_hide(&a->pview);
        char m[1500];
        util_fmt(m, sizeof m, "no preview: %s", a->open_nodata);
        ui_draw_wrapped(stdscr, (ui_rect){ in.y, in.x + 1, in.h, in.w - 1 }, UI_R_WARN, m);
        return;
    }
    int sixel = a->pix == UI_PIX_SIXEL;
    int cw = sixel ? a->pview.cell_w : 1, ch = sixel ? a->pview.cell_h : 2;
    int zoomed = a->view.zoom == UI_P_PREVIEW;
    int want = zoomed ? 8 : 4;
    /* Zoomed, sixel tiles grow up to the images' own size (no larger than 256):
     * the point is to see the augmentation's detail. */
    int own = a->pv.n > 0 ? (a->pv.w > a->pv.h ? a->pv.w : a->pv.h) : 0;
    int px_max = sixel ? (zoomed ? (own > 256 ? 256 : own > 128 ? own : 128) : 96)
                       : (zoomed ? 40 : 24);
    /* A row wider than one sixel image may be goes as several (ui/preview.h);
     * one pair must fit in one. */
    if (sixel && a->caps.sixel_max_w > 0 && 2 * px_max + 3 * cw > a->caps.sixel_max_w)
        px_max = (a->caps.sixel_max_w - 3 * cw) / 2;
    ui_preview_geom g;
    if (ui_preview_fit(in.w, in.h, cw, ch, 2, 1, want, sixel ? 32 : 8, px_max, &g) != 0) {
        ui_preview_hide(&a->pview);
        ui_draw_text(stdscr, in.y, in.x, in.w, UI_R_DIM, "too small: Enter zooms");
        return;
    }
    int slots = g.count < 64 ? g.count : 64;
    /* A grid bigger than any batch asked for so far wants a bigger batch; a
     * dataset with fewer images than slots is asked only once. */
    if (slots > a->pv_asked)
        app_ask_preview(a, slots);
    if (a->pv.n <= 0) {
        ui_preview_hide(&a->pview);
        if (a->pv_err[0]) {
            char m[1100];
            util_fmt(m, sizeof m, "no preview: %s", a->pv_err);
            ui_rect t = { in.y, in.x + 1, in.h, in.w - 1 };
            ui_draw_wrapped(stdscr, t, UI_R_BAD, m);
        } else {
            ui_draw_text(stdscr, in.y + in.h / 2, in.x + 1, in.w - 1, UI_R_DIM,
                         "making a batch of augmented images...");
        }
        return;
    }
    static ui_preview_image im[128];
    static ui_preview_caption cap[64];
    int n = a->pv.n < slots ? a->pv.n : slots;
    size_t sz = (size_t)a->pv.h * a->pv.w * 3;
    for (int i = 0; i < n; i++) {
        im[2 * i] = (ui_preview_image){ a->pv.original + sz * i, a->pv.w, a->pv.h };
        im[2 * i + 1] = (ui_preview_image){ a->pv.augmented + sz * i, a->pv.w, a->pv.h };
        int k = a->pv.label ? a->pv.label[i] : -1;
        if (k >= 0 && k < a->n_names)
            snprintf(cap[i].text[0], sizeof cap[i].text[0], "%s", a->name[k]);
        else
            snprintf(cap[i].text[0], sizeof cap[i].text[0], "class %d", k);
        cap[i].role[0] = UI_R_NORMAL;
        cap[i].text[1][0] = 0;
    }
    /* Centred across (ui_preview_set does that within the area); zoomed, down
     * the panel too. */
    ui_rect area = in;
    if (zoomed) {
        int used = (n + g.per_row - 1) / g.per_row;
        used = used < g.rows ? used : g.rows;
        int gh = used * (g.tile_rows + g.caption);
        area.y += (in.h - gh) / 2;
        area.h -= (in.h - gh) / 2;
    }
    ui_preview_set(&a->pview, a->pv.generation, area, &g, im, cap, n);
    ui_preview_draw(&a->pview, stdscr);
}

/* The colour role of a run in the comparison, or -1 when it is not compared (the
 * same folder, whatever the path's spelling). */
static int compared_role(void *ctx, const run_figures *r)
{
    const app *a = ctx;
    char *rp = realpath(r->path, NULL);
    int role = -1;
    for (int i = 0; i < a->n_cmp && role < 0; i++) {
        char *cp = realpath(a->cmp[i]->path, NULL);
        if (rp && cp && !strcmp(rp, cp))
            role = (int)ui_panel_compare_role(i);
        free(cp);
    }
    free(rp);
    return role;
}

/* The panels of the layout, from panels.h's table; the preview's pictures here. */
static void draw_panels(app *a, const ui_frame *f)
{
    const ui_view *v = &a->view;
    const ui_layout *L = &a->layout;
    int n;
    const ui_panel_class *pc = ui_panel_classes(&n);
    for (int i = 0; i < n; i++) {
        int id = pc[i].id;
        if (!ui_layout_visible(L, id)) {
            if (id == UI_P_PREVIEW)
                ui_preview_hide(&a->pview);
        } else if (pc[i].draw) {
            pc[i].draw(stdscr, L->panel[id], f, v, v->focus == id);
        } else if (id == UI_P_PREVIEW) {
            draw_preview(a, f);
        }
    }
}

/* The finder's copy while it runs; its end goes to the log once. */
static void collect_lrfind(app *a)
{
    if (a->lrf.state != RUN_LRF_PREPARING && a->lrf.state != RUN_LRF_RUNNING)
        return;
    eng_lrfind_get(a->g, &a->lrf);
    if (a->lrf.state == RUN_LRF_PREPARING || a->lrf.state == RUN_LRF_RUNNING)
        return;
    char line[256];
    ui_lrf_summary(&a->lrf, line, sizeof line);
    int good = a->lrf.state == RUN_LRF_DONE && a->lrf.found;
    ui_log_add(a->log, app_now(a), good ? UI_R_OK : UI_R_WARN,
               a->lrf.state == RUN_LRF_DONE ? line : a->lrf.message);
}

void app_frame(app *a)
{
    collect_lrfind(a);
    werase(stdscr);
    int rows = LINES, cols = COLS;
    const run_snapshot *s = a->snap;
    int zoom = a->insp.open ? -1 : a->view.zoom;
    ui_layout_compute(&a->layout, rows, cols, zoom, s->n_replicas > 0 ? s->n_replicas : s->replicas);
    if (!ui_layout_visible(&a->layout, a->view.focus) && !a->layout.too_small && zoom < 0)
        a->view.focus = UI_P_CURVES;

    ui_frame f = { 0 };
    f.s = s;
    f.names = a->name_ptr;
    f.n_names = a->n_names;
    f.log = a->log;
    f.augment = a->cfg.augment;
    f.pix = a->pix_label;
    f.run_dir = a->run_dir;
    f.sys = &a->sys;
    f.compare = (const run_figures *const *)a->cmp;
    f.n_compare = a->n_cmp;
    f.opened = a->opened ? a->opened->path : NULL;
    if (a->note[0] && app_now(a) < a->note_until) {
        f.note = a->note;
        f.note_role = a->note_role;
    } else if (a->stopping) {
        f.note = s->state == RUN_PREPARING
                     ? "stopping: nothing trained yet, nothing kept..."
                     : "stopping: finishing the update and writing a checkpoint...";
        f.note_role = UI_R_WARN;
    } else {
        f.note = s->message;
        f.note_role = s->state == RUN_FAILED ? UI_R_BAD : UI_R_DIM;
    }

    if (a->layout.too_small) {
        ui_panel_too_small(stdscr, rows, cols);
        ui_preview_hide(&a->pview);
        ui_preview_hide(&a->iview);
    } else {
        ui_panel_header(stdscr, a->layout.header, &f);
        ui_panel_footer(stdscr, a->layout.footer, &f, a->insp.open ? UI_CTX_INSPECT : UI_CTX_MAIN);
        if (a->insp.open) {
            ui_preview_hide(&a->pview);
            ui_inspect_draw(&a->insp, stdscr, a->layout.body, &f, &a->iview);
        } else {
            ui_preview_hide(&a->iview);
            draw_panels(a, &f);
        }
    }

    /* A dialog goes over the pictures; those it does not touch stay as they are
     * (see ui_preview_flush). */
    ui_rect cover = { 0, 0, 0, 0 };
    if (a->modal == MODAL_HELP) {
        cover = ui_panel_help(stdscr, rows, cols, &a->view);
    } else if (a->modal == MODAL_QUIT) {
        const char *l[] = { "A run is active. Stop it and quit?",
                            "The engine finishes the current update and writes a checkpoint;",
                            "--resume RUN_DIR continues from it." };
        cover = ui_panel_dialog(stdscr, rows, cols, "Quit", l, 3, UI_CTX_ASK, 0);
    } else if (a->modal == MODAL_INT) {
        if (app_active(s->state)) {
            const char *l[] = { "Interrupted: the run pauses at the end of this update",
                                "and writes a checkpoint.",
                                "y stops and quits, r resumes, n stays paused." };
            cover = ui_panel_dialog(stdscr, rows, cols, "Ctrl-C", l, 3, UI_CTX_ASK, 1);
        } else {
            const char *l[] = { "Interrupted. Quit the workbench?" };
            cover = ui_panel_dialog(stdscr, rows, cols, "Ctrl-C", l, 1, UI_CTX_ASK, 0);
        }
    } else if (a->modal == MODAL_CONFIG) {
        cover = ui_settings_draw(&a->cfgd, stdscr, rows, cols);
    } else if (a->modal == MODAL_RUNS) {
        cover = ui_runs_draw(&a->runs, stdscr, rows, cols, compared_role, a);
    } else if (a->modal == MODAL_LRFIND) {
        cover = ui_lrf_draw(stdscr, rows, cols, &a->lrf);
    }

    /* What is on screen, as far as pictures care: any change in it and curses
     * must repaint everything, which wipes the pictures, so they go again. A
     * dialog is not such a change: curses redraws its cells and no others. */
    uint64_t scene = hash_bytes(0xcbf29ce484222325ULL, &a->layout, sizeof a->layout);
    int bits[3] = { a->insp.open, (int)a->pix, a->view.zoom };
    scene = hash_bytes(scene, bits, sizeof bits);
    int force = a->repaint || scene != a->scene;
    a->scene = scene;
    a->repaint = 0;
    if (force)
        clearok(curscr, TRUE);
    wnoutrefresh(stdscr);
    /* curses may scroll terminal rows in this update, dragging picture pixels
     * along (ui/rowmove.h): then the pictures go again right after it. */
    int moved = a->pix == UI_PIX_SIXEL && !force && ui_rows_may_move();
    doupdate();
    ui_preview_flush(&a->pview, a->out, force || moved, cover);
    ui_preview_flush(&a->iview, a->out, force || moved, cover);
}
