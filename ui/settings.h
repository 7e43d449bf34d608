/* settings — the configure dialog (`c`, before a run starts).
 *
 * It edits a copy of the engine configuration, one setting at a time: the
 * value typed is checked by cfg_set() at once, and a bad value stays in
 * the edit line with the engine's message under it. The rows are the options'
 * table's CFG_DIALOG rows: those with a dialog place first (the settings the
 * issue names: model, replicas, batch per replica, accumulation, epochs, the
 * learning rate and its schedule, oversampling, augmentations, data), then the
 * rest in table order. Applying is the app's job: it builds a new engine from
 * the copy and drops the old one only when that worked.
 *
 * Ownership: a plain value (no heap); the app owns it.
 */
#ifndef PT_UI_SETTINGS_H
#define PT_UI_SETTINGS_H

#include "engine.h"
#include "ui/draw.h"

#define UI_SETTINGS_KEYS 64

enum { UI_SETTINGS_STAY = 0, UI_SETTINGS_CANCEL, UI_SETTINGS_APPLY };

typedef struct ui_settings {
    run_config work;            /* the copy being edited */
    const cfg_option *opt[UI_SETTINGS_KEYS]; /* the rows, in the dialog's order */
    int n_opt;
    int sel, top;
    int editing;
    char edit[512];
    char error[1024];           /* the last message (bad value, failed apply) */
    int changed;
    double suggested;           /* lr-find's --lr-max (0: none), L sets it */
} ui_settings;

void ui_settings_open(ui_settings *d, const run_config *cur);

/* The value of a key in the working copy, as cfg_format() writes it ("" for a key
 * not in the table). */
void ui_settings_value(const ui_settings *d, const char *key, char *buf, size_t n);

/* One key press (a curses key code); UI_SETTINGS_STAY, _CANCEL or _APPLY. */
int ui_settings_key(ui_settings *d, int ch);

/* The dialog, centred over the screen; returns its box. */
ui_rect ui_settings_draw(ui_settings *d, WINDOW *w, int rows, int cols);

#endif
