/* config — the configure dialog (`c`, before a run starts).
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
#ifndef PT_UI_CONFIG_H
#define PT_UI_CONFIG_H

#include "engine.h"
#include "ui/draw.h"

#define UI_CONFIG_KEYS 64

enum { UI_CONFIG_STAY = 0, UI_CONFIG_CANCEL, UI_CONFIG_APPLY };

typedef struct ui_config {
    run_config work;            /* the copy being edited */
    const cfg_option *opt[UI_CONFIG_KEYS]; /* the rows, in the dialog's order */
    int n_opt;
    int sel, top;
    int editing;
    char edit[512];
    char error[1024];           /* the last message (bad value, failed apply) */
    int changed;
} ui_config;

void ui_config_open(ui_config *d, const run_config *cur);

/* The value of a key in the working copy, as cfg_format() writes it ("" for a key
 * not in the table). */
void ui_config_value(const ui_config *d, const char *key, char *buf, size_t n);

/* One key press (a curses key code); UI_CONFIG_STAY, _CANCEL or _APPLY. */
int ui_config_key(ui_config *d, int ch);

/* The dialog, centred over the screen; returns its box. */
ui_rect ui_config_draw(ui_config *d, WINDOW *w, int rows, int cols);

#endif
