#include "ui/settings.h"

#include <stdio.h>
#include <string.h>

#include "ui/keys.h"
#include "ui/panels.h"

/* The rows with a dialog place, by that place, then the others in table order. */
void ui_settings_open(ui_settings *d, const run_config *cur)
{
    memset(d, 0, sizeof *d);
    d->work = *cur;
    size_t n;
    const cfg_option *t = cfg_options(&n);
    for (int placed = 1; placed >= 0; placed--)
        for (size_t j = 0; j < n && d->n_opt < UI_SETTINGS_KEYS; j++) {
            const cfg_option *o = &t[j];
            if (!(o->where & CFG_DIALOG) || (o->dialog > 0) != placed)
                continue;
            int i = d->n_opt++;
            for (; placed && i > 0 && d->opt[i - 1]->dialog > o->dialog; i--)
                d->opt[i] = d->opt[i - 1];
            d->opt[i] = o;
        }
}

void ui_settings_value(const ui_settings *d, const char *key, char *buf, size_t n)
{
    const cfg_option *o = cfg_find(key);
    if (o)
        cfg_value(&d->work, o, buf, n);
    else if (n > 0)
        buf[0] = 0;
}

int ui_settings_key(ui_settings *d, int ch)
{
    if (d->editing) {
        size_t len = strlen(d->edit);
        if (ch == 27) {
            d->editing = 0;
            d->error[0] = 0;
        } else if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
            pt_err e;
            run_config tmp = d->work;
            if (cfg_set(&tmp, d->opt[d->sel]->name, d->edit, &e) == PT_OK) {
                d->work = tmp;
                d->editing = 0;
                d->changed = 1;
                d->error[0] = 0;
            } else {
                snprintf(d->error, sizeof d->error, "%s", e.msg);
            }
        } else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
            /* Back over one whole UTF-8 character. */
            while (len > 0 && ((unsigned char)d->edit[len - 1] & 0xc0) == 0x80)
                d->edit[--len] = 0;
            if (len > 0)
                d->edit[--len] = 0;
        } else if (ch == ('u' & 0x1f)) {
            d->edit[0] = 0;
        } else if (ch >= 0x20 && ch < 0x100 && ch != 127 && len + 1 < sizeof d->edit) {
            d->edit[len] = (char)ch;
            d->edit[len + 1] = 0;
        }
        return UI_SETTINGS_STAY;
    }
    switch (ui_keys_action(UI_CTX_CONFIG, ch)) {
    case UI_ACT_UP:
        if (d->sel > 0)
            d->sel--;
        break;
    case UI_ACT_DOWN:
        if (d->sel + 1 < d->n_opt)
            d->sel++;
        break;
    case UI_ACT_PGUP:
        d->sel = d->sel > 10 ? d->sel - 10 : 0;
        break;
    case UI_ACT_PGDN:
        d->sel = d->sel + 10 < d->n_opt ? d->sel + 10 : d->n_opt - 1;
        break;
    case UI_ACT_EDIT:
        if (d->n_opt > 0) {
            cfg_value(&d->work, d->opt[d->sel], d->edit, sizeof d->edit);
            d->editing = 1;
            d->error[0] = 0;
        }
        break;
    case UI_ACT_LRFIND: {
        pt_err e;
        char v[32];
        snprintf(v, sizeof v, "%.3g", d->suggested);
        if (d->suggested <= 0)
            snprintf(d->error, sizeof d->error, "no lr-find suggestion: L on the main screen "
                                                "runs the finder");
        else if (cfg_set(&d->work, "lr-max", v, &e) != PT_OK)
            snprintf(d->error, sizeof d->error, "%s", e.msg);
        else
            d->changed = 1;
        break;
    }
    case UI_ACT_APPLY:
        return UI_SETTINGS_APPLY;
    case UI_ACT_BACK:
        return UI_SETTINGS_CANCEL;
    default:
        break;
    }
    return UI_SETTINGS_STAY;
}

ui_rect ui_settings_draw(ui_settings *d, WINDOW *w, int rows, int cols)
{
    int wd = cols - 4 < 96 ? cols - 4 : 96;
    int h = rows - 2 < d->n_opt + 6 ? rows - 2 : d->n_opt + 6;
    ui_rect b = { (rows - h) / 2, (cols - wd) / 2, h, wd };
    ui_draw_clear(w, b);
    ui_rect in = ui_draw_box(w, b, d->changed ? "Configure (changed: a applies)" : "Configure", 1);
    if (in.h < 4 || in.w < 30)
        return b;
    int list_h = in.h - 3;
    if (d->sel < d->top)
        d->top = d->sel;
    if (d->sel >= d->top + list_h)
        d->top = d->sel - list_h + 1;
    int kw = 20;
    for (int i = 0; i < list_h && d->top + i < d->n_opt; i++) {
        int k = d->top + i;
        const cfg_option *o = d->opt[k];
        int y = in.y + i;
        char v[600];
        if (k == d->sel && d->editing)
            snprintf(v, sizeof v, "%s_", d->edit);
        else
            cfg_value(&d->work, o, v, sizeof v);
        if (!v[0])
            snprintf(v, sizeof v, "(%s)", o->unset ? o->unset : "default");
        if (!strcmp(o->name, "lr-max") && d->suggested > 0 && !(k == d->sel && d->editing)) {
            size_t len = strlen(v);
            snprintf(v + len, sizeof v - len, "   suggested %.3g (lr-find): L uses it",
                     d->suggested);
        }
        ui_role r = k == d->sel ? UI_R_SEL : UI_R_NORMAL;
        if (k == d->sel)
            mvwchgat(w, y, in.x, in.w, ui_draw_attr(UI_R_SEL), 0, NULL);
        ui_draw_textf(w, y, in.x + 1, kw, k == d->sel ? r : UI_R_KEY, "%-*s", kw - 1, o->name);
        ui_draw_text(w, y, in.x + 1 + kw, in.w - kw - 2, r, v);
    }
    if (d->error[0])
        ui_draw_text(w, in.y + in.h - 2, in.x + 1, in.w - 2, UI_R_BAD, d->error);
    else
        ui_draw_text(w, in.y + in.h - 2, in.x + 1, in.w - 2, UI_R_DIM,
                     d->editing ? "type the value; Enter sets it, Esc cancels, ^U clears"
                                : "values are checked as they are set; a rebuilds the engine");
    ui_rect hints = { in.y + in.h - 1, in.x + 1, 1, in.w - 2 };
    ui_frame none = { 0 };
    ui_panel_footer(w, hints, &none, UI_CTX_CONFIG);
    return b;
}
