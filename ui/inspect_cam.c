/* inspect_cam — the inspect view's Grad-CAM of one validation image: the photo,
 * where the model looked for its predicted class and for its true class (the
 * engine's eng_explain_get), with the most probable classes and the loss. Drawn
 * inside the images' box while open; Left/Right move the selection and the view
 * follows it. */
#include "ui/inspect.h"

#include <stdio.h>
#include <string.h>

int ui_inspect_cam_open(ui_inspect *v)
{
    long long index = ui_inspect_selected(v);
    if (index < 0 || v->no_images[0])
        return 0;
    ui_inspect_cam_close(v);
    v->cam_open = 1;
    v->cam_index = index;
    v->cam_state = 0;
    return 1;
}

void ui_inspect_cam_close(ui_inspect *v)
{
    run_explain_free(&v->cam);
    v->cam_open = 0;
    v->cam_state = 0;
    v->cam_err[0] = 0;
    v->cam_id++;
}

void ui_inspect_cam_follow(ui_inspect *v)
{
    if (!v->cam_open)
        return;
    long long index = ui_inspect_selected(v);
    if (index < 0 || index == v->cam_index)
        return;
    ui_inspect_cam_close(v);
    v->cam_open = 1;
    v->cam_index = index;
}

void ui_inspect_cam_work(ui_inspect *v, eng *g)
{
    if (!v->cam_open || v->cam_state != 0)
        return;
    pt_err e;
    int rc = eng_explain_get(g, v->cam_index, &v->cam, &e);
    if (rc == 0)
        return; /* still being made */
    if (rc < 0) {
        snprintf(v->cam_err, sizeof v->cam_err, "%s", e.msg);
        v->cam_state = -1;
    } else {
        v->cam_state = 1;
    }
    v->cam_id++;
}

/* The text beside or under the pictures: classes, probabilities, loss, layer. */
static void draw_facts(const ui_inspect *v, WINDOW *w, ui_rect r, const ui_frame *f)
{
    const run_explain *x = &v->cam;
    char a[64], b[64];
    int y = r.y, ok = x->label == x->pred;
    if (r.h <= 0 || r.w <= 4)
        return;
    ui_draw_textf(w, y++, r.x, r.w, ok ? UI_R_OK : UI_R_BAD, "%s predicted %s (%.1f%%), true %s",
                  ok ? "OK" : "NO", ui_panel_class_name(f, x->pred, a, sizeof a),
                  100.0 * x->prob[0], ui_panel_class_name(f, x->label, b, sizeof b));
    if (y < r.y + r.h)
        ui_draw_textf(w, y++, r.x, r.w, UI_R_NORMAL,
                      "loss %.3f; the true class's probability %.1f%%", x->loss,
                      100.0 * x->prob[1]);
    if (y < r.y + r.h)
        ui_draw_textf(w, y++, r.x, r.w, UI_R_DIM, "epoch %d's weights, layer %s", x->epoch,
                      x->layer);
    for (int i = 0; i < x->n_top && y < r.y + r.h; i++)
        ui_draw_textf(w, y++, r.x, r.w, i == 0 ? UI_R_NORMAL : UI_R_DIM, "%d. %5.1f%% %s", i + 1,
                      100.0 * x->top_p[i], ui_panel_class_name(f, x->top[i], a, sizeof a));
}

void ui_inspect_cam_draw(ui_inspect *v, WINDOW *w, ui_rect in, const ui_frame *f, ui_preview *pv)
{
    if (v->cam_state <= 0) {
        ui_preview_hide(pv);
        const char *m = v->cam_state < 0 ? v->cam_err : "computing the Grad-CAM...";
        ui_draw_wrapped(w, (ui_rect){ in.y + in.h / 2, in.x + 2, in.h - in.h / 2, in.w - 4 },
                        v->cam_state < 0 ? UI_R_BAD : UI_R_DIM, m);
        return;
    }
    const run_explain *x = &v->cam;
    /* Three pictures side by side over the text: the facts take 3 + n_top rows. */
    int text_rows = 3 + x->n_top;
    int sixel = pv->mode == UI_PIX_SIXEL;
    int cw = sixel ? pv->cell_w : 1, ch = sixel ? pv->cell_h : 2;
    int px_max = sixel ? 320 : 48;
    if (sixel && pv->max_w > 0 && px_max + cw > pv->max_w)
        px_max = pv->max_w - cw;
    ui_preview_geom g;
    int rows = in.h - text_rows > 4 ? in.h - text_rows : 4;
    if (ui_preview_fit(in.w, rows, cw, ch, 3, 2, 1, sixel ? 32 : 8, px_max, &g) != 0) {
        ui_preview_hide(pv);
        draw_facts(v, w, in, f);
        if (in.h > text_rows)
            ui_draw_text(w, in.y + text_rows, in.x, in.w, UI_R_DIM,
                         "(the pictures need a larger terminal)");
        return;
    }
    char a[64], b[64];
    ui_preview_image im[3] = { { x->photo, x->w, x->h }, { x->cam[0], x->w, x->h },
                               { x->label != x->pred ? x->cam[1] : x->heat, x->w, x->h } };
    /* One group of three: its caption under the first picture runs on under the others. */
    ui_preview_caption cap;
    memset(&cap, 0, sizeof cap);
    snprintf(cap.text[0], sizeof cap.text[0], "photo | Grad-CAM of %s | %s",
             ui_panel_class_name(f, x->pred, a, sizeof a),
             x->label != x->pred ? ui_panel_class_name(f, x->label, b, sizeof b) : "the map alone");
    cap.role[0] = UI_R_DIM;
    ui_rect area = { in.y, in.x, g.tile_rows + g.caption, in.w };
    ui_preview_set(pv, 0x43414d0000000000ull + v->cam_id, area, &g, im, &cap, 1);
    ui_preview_draw(pv, w);
    int used = g.tile_rows + g.caption;
    draw_facts(v, w, (ui_rect){ in.y + used, in.x + 1, in.h - used, in.w - 2 }, f);
}
