/* keys — the one table of every key the workbench knows.
 *
 * Each entry binds a curses key code, in one context (the main screen, the
 * inspect view, the configure dialog, the questions), to an action, with the
 * name shown for the key and a one-line description. The app looks actions up
 * here, the help overlay (`?`) and the footer hints are printed from here, so a
 * key cannot work without being documented.
 *
 * Ownership: the table is static and read-only.
 */
#ifndef PT_UI_KEYS_H
#define PT_UI_KEYS_H

#include <stddef.h>

typedef enum ui_ctx {
    UI_CTX_MAIN = 0,
    UI_CTX_INSPECT,
    UI_CTX_CONFIG,
    UI_CTX_ASK,         /* the quit / interrupted questions */
    UI_CTX_RUNS,        /* the runs list (r) */
    UI_CTX_COUNT
} ui_ctx;

typedef enum ui_act {
    UI_ACT_NONE = 0,
    UI_ACT_START,
    UI_ACT_PAUSE,
    UI_ACT_INSPECT,
    UI_ACT_AUGMENT,
    UI_ACT_NEXT,
    UI_ACT_FOCUS_NEXT,
    UI_ACT_FOCUS_PREV,
    UI_ACT_UP,
    UI_ACT_DOWN,
    UI_ACT_LEFT,
    UI_ACT_RIGHT,
    UI_ACT_ZOOM,
    UI_ACT_BACK,
    UI_ACT_CONFIG,
    UI_ACT_HELP,
    UI_ACT_QUIT,
    UI_ACT_METRIC,
    UI_ACT_LOGSCALE,
    UI_ACT_SMOOTH_MORE,
    UI_ACT_SMOOTH_LESS,
    UI_ACT_BINS,
    UI_ACT_PGUP,
    UI_ACT_PGDN,
    UI_ACT_HOME,
    UI_ACT_END,
    UI_ACT_MISTAKES,
    UI_ACT_SORT,
    UI_ACT_REDRAW,
    UI_ACT_EDIT,
    UI_ACT_APPLY,
    UI_ACT_YES,
    UI_ACT_NO,
    UI_ACT_RESUME,
    UI_ACT_PERCENT,
    UI_ACT_XAXIS,
    UI_ACT_RUNS,
    UI_ACT_TOGGLE,
    UI_ACT_EXPORT,
    UI_ACT_TOP_LOSSES,
    UI_ACT_LRFIND,
    UI_ACT_COUNT
} ui_act;

typedef struct ui_key {
    ui_ctx ctx;
    int code;           /* a curses key: a character or KEY_* */
    const char *name;   /* as shown: "s", "Tab", "PgUp" */
    ui_act act;
    const char *hint;   /* short footer label, or NULL when not in the footer */
    const char *help;   /* one line for the help overlay */
} ui_key;

/* The action of a key in a context (UI_ACT_NONE when unbound). */
ui_act ui_keys_action(ui_ctx ctx, int code);

/* The whole table, in help order. */
const ui_key *ui_keys_table(size_t *n);

/* "Main screen", "Inspect", ... */
const char *ui_keys_ctx_name(ui_ctx ctx);

/* Help lines for a context: one per action, its key names joined by "/" and
 * padded to name_w, then the description. Writes at most max lines of up to
 * line_n bytes each into lines (line_n-byte rows); returns how many. */
int ui_keys_help(ui_ctx ctx, int name_w, char *lines, size_t line_n, int max);

#endif
