#include "ui/config.h"

#include <stdio.h>
#include <string.h>

#include "ui/keys.h"
#include "ui/panels.h"

/* The settings the issue names, in this order; the rest follow as the engine
 * lists them. */
static const char *const g_first[] = { "model", "replicas", "batch-per-replica", "grad-acc",
                                       "epochs", "lr-start", "lr-max", "lr-end", "warmup",
                                       "schedule", "oversample", "augment", "data" };

void ui_config_open(ui_config *d, const run_config *cur)
{
    memset(d, 0, sizeof *d);
    d->work = *cur;
    const char *all[UI_CONFIG_KEYS];
    size_t n = cfg_keys(all, UI_CONFIG_KEYS);
    if (n > UI_CONFIG_KEYS)
        n = UI_CONFIG_KEYS;
    for (size_t i = 0; i < sizeof g_first / sizeof g_first[0]; i++)
        for (size_t j = 0; j < n; j++)
            if (!strcmp(all[j], g_first[i]))
                d->keys[d->n_keys++] = all[j];
    for (size_t j = 0; j < n; j++) {
        int dup = 0;
        for (int i = 0; i < d->n_keys; i++)
            if (!strcmp(d->keys[i], all[j]))
                dup = 1;
        if (!dup && d->n_keys < UI_CONFIG_KEYS)
            d->keys[d->n_keys++] = all[j];
    }
}

/* The working copy as cfg_format() writes it (one buffer, overwritten
 * by the next call), or NULL when that failed. */
static const char *format(const ui_config *d)
{
    static char text[16384];
    return cfg_format(&d->work, text, sizeof text) == 0 ? text : NULL;
}

/* The value of key from text (format()'s, or NULL: nothing but out and resume). */
static void value_in(const ui_config *d, const char *text, const char *key, char *buf, size_t n)
{
    buf[0] = 0;
    if (!strcmp(key, "out")) {
        snprintf(buf, n, "%s", d->work.out);
        return;
    }
    if (!strcmp(key, "resume")) {
        snprintf(buf, n, "%s", d->work.resume);
        return;
    }
    if (!text)
        return;
    size_t kl = strlen(key);
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        if (!strncmp(line, key, kl) && !strncmp(line + kl, " = ", 3)) {
            const char *v = line + kl + 3;
            int len = nl ? (int)(nl - v) : (int)strlen(v);
            snprintf(buf, n, "%.*s", len, v);
            return;
        }
        line = nl ? nl + 1 : NULL;
    }
}

void ui_config_value(const ui_config *d, const char *key, char *buf, size_t n)
{
    value_in(d, format(d), key, buf, n);
}

int ui_config_key(ui_config *d, int ch)
{
    if (d->editing) {
        size_t len = strlen(d->edit);
        if (ch == 27) {
            d->editing = 0;
            d->error[0] = 0;
        } else if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
            pt_err e;
            run_config tmp = d->work;
            if (cfg_set(&tmp, d->keys[d->sel], d->edit, &e) == PT_OK) {
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
        return UI_CONFIG_STAY;
    }
    switch (ui_keys_action(UI_CTX_CONFIG, ch)) {
    case UI_ACT_UP:
        if (d->sel > 0)
            d->sel--;
        break;
    case UI_ACT_DOWN:
        if (d->sel + 1 < d->n_keys)
            d->sel++;
        break;
    case UI_ACT_PGUP:
        d->sel = d->sel > 10 ? d->sel - 10 : 0;
        break;
    case UI_ACT_PGDN:
        d->sel = d->sel + 10 < d->n_keys ? d->sel + 10 : d->n_keys - 1;
        break;
    case UI_ACT_EDIT:
        if (d->n_keys > 0) {
            ui_config_value(d, d->keys[d->sel], d->edit, sizeof d->edit);
            d->editing = 1;
            d->error[0] = 0;
        }
        break;
    case UI_ACT_APPLY:
        return UI_CONFIG_APPLY;
    case UI_ACT_BACK:
        return UI_CONFIG_CANCEL;
    default:
        break;
    }
    return UI_CONFIG_STAY;
}

void ui_config_draw(ui_config *d, WINDOW *w, int rows, int cols)
{
    int wd = cols - 4 < 96 ? cols - 4 : 96;
    int h = rows - 2 < d->n_keys + 6 ? rows - 2 : d->n_keys + 6;
    ui_rect b = { (rows - h) / 2, (cols - wd) / 2, h, wd };
    ui_draw_clear(w, b);
    ui_rect in = ui_draw_box(w, b, d->changed ? "Configure (changed: a applies)" : "Configure", 1);
    if (in.h < 4 || in.w < 30)
        return;
    int list_h = in.h - 3;
    if (d->sel < d->top)
        d->top = d->sel;
    if (d->sel >= d->top + list_h)
        d->top = d->sel - list_h + 1;
    int kw = 20;
    const char *text = format(d); /* once for all the rows */
    for (int i = 0; i < list_h && d->top + i < d->n_keys; i++) {
        int k = d->top + i;
        int y = in.y + i;
        char v[600];
        if (k == d->sel && d->editing)
            snprintf(v, sizeof v, "%s_", d->edit);
        else
            value_in(d, text, d->keys[k], v, sizeof v);
        ui_role r = k == d->sel ? UI_R_SEL : UI_R_NORMAL;
        if (k == d->sel)
            mvwchgat(w, y, in.x, in.w, ui_draw_attr(UI_R_SEL), 0, NULL);
        ui_draw_textf(w, y, in.x + 1, kw, k == d->sel ? r : UI_R_KEY, "%-*s", kw - 1, d->keys[k]);
        const char *empty = !strcmp(d->keys[k], "data")     ? "(the built-in demo flowers)"
                            : !strcmp(d->keys[k], "out")    ? "(runs/MODEL-DATE)"
                            : !strcmp(d->keys[k], "resume") ? "(a new run)"
                                                            : "(default)";
        ui_draw_text(w, y, in.x + 1 + kw, in.w - kw - 2, r, v[0] ? v : empty);
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
}
