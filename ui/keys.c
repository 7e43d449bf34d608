#include "ui/keys.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>

#define CTRL_KEY(c) ((c) & 0x1f)

static const ui_key g_keys[] = {
    /* main screen */
    { UI_CTX_MAIN, 's', "s", UI_ACT_START, "start", "start training" },
    { UI_CTX_MAIN, 'p', "p", UI_ACT_PAUSE, "pause", "pause / resume (a checkpoint is written at the pause)" },
    { UI_CTX_MAIN, 'i', "i", UI_ACT_INSPECT, "inspect", "inspect validation: images, true vs predicted, per-class scores" },
    { UI_CTX_MAIN, 'a', "a", UI_ACT_AUGMENT, "augment", "augmentation preview: the preview panel full size" },
    { UI_CTX_MAIN, 'n', "n", UI_ACT_NEXT, "next", "next preview batch" },
    { UI_CTX_MAIN, 'c', "c", UI_ACT_CONFIG, "config", "configure model, replicas, batch, epochs, lr, oversampling, augmentations (before start)" },
    { UI_CTX_MAIN, '\t', "Tab", UI_ACT_FOCUS_NEXT, "focus", "focus the next panel" },
    { UI_CTX_MAIN, KEY_BTAB, "S-Tab", UI_ACT_FOCUS_PREV, NULL, "focus the previous panel" },
    { UI_CTX_MAIN, KEY_UP, "Up", UI_ACT_UP, NULL, "focus the panel above" },
    { UI_CTX_MAIN, KEY_DOWN, "Down", UI_ACT_DOWN, NULL, "focus the panel below" },
    { UI_CTX_MAIN, KEY_LEFT, "Left", UI_ACT_LEFT, NULL, "focus left (zoomed curves: the value cursor left)" },
    { UI_CTX_MAIN, KEY_RIGHT, "Right", UI_ACT_RIGHT, NULL, "focus right (zoomed curves: the value cursor right)" },
    { UI_CTX_MAIN, '\n', "Enter", UI_ACT_ZOOM, "zoom", "zoom the focused panel to the whole screen, or back" },
    { UI_CTX_MAIN, '\r', "Enter", UI_ACT_ZOOM, NULL, NULL },
    { UI_CTX_MAIN, KEY_ENTER, "Enter", UI_ACT_ZOOM, NULL, NULL },
    { UI_CTX_MAIN, 27, "Esc", UI_ACT_BACK, NULL, "leave the zoomed panel" },
    { UI_CTX_MAIN, 'v', "v", UI_ACT_METRIC, NULL, "curves: cycle loss / accuracy / macro F1 / learning rate" },
    { UI_CTX_MAIN, 'l', "l", UI_ACT_LOGSCALE, NULL, "curves: log scale for loss and learning rate on / off" },
    { UI_CTX_MAIN, 'x', "x", UI_ACT_XAXIS, NULL, "curves: x axis by update / epoch / wall-clock time (at first: what fits the runs)" },
    { UI_CTX_MAIN, 'L', "L", UI_ACT_LRFIND, NULL, "lr-find (before s): the loss over 100 updates at rates from 1e-7 to 10; suggests lr-max (c offers it)" },
    { UI_CTX_MAIN, 'r', "r", UI_ACT_RUNS, "runs", "runs list: earlier runs to compare with this one" },
    { UI_CTX_MAIN, 'e', "e", UI_ACT_EXPORT, "export", "export the ended (or opened, or paused) run's model as RUN/model.onnx" },
    { UI_CTX_MAIN, '+', "+", UI_ACT_SMOOTH_MORE, NULL, "curves: smooth the per-update curve more" },
    { UI_CTX_MAIN, '=', "+", UI_ACT_SMOOTH_MORE, NULL, NULL },
    { UI_CTX_MAIN, '-', "-", UI_ACT_SMOOTH_LESS, NULL, "curves: smooth less" },
    { UI_CTX_MAIN, 'b', "b", UI_ACT_BINS, NULL, "labels: classes in bins / one row per class with names" },
    { UI_CTX_MAIN, KEY_PPAGE, "PgUp", UI_ACT_PGUP, NULL, "scroll the focused panel (labels, log) up" },
    { UI_CTX_MAIN, KEY_NPAGE, "PgDn", UI_ACT_PGDN, NULL, "scroll the focused panel down" },
    { UI_CTX_MAIN, KEY_HOME, "Home", UI_ACT_HOME, NULL, "scroll to the top" },
    { UI_CTX_MAIN, KEY_END, "End", UI_ACT_END, NULL, "scroll to the end (the log follows new lines)" },
    { UI_CTX_MAIN, CTRL_KEY('l'), "^L", UI_ACT_REDRAW, NULL, "redraw the screen" },
    { UI_CTX_MAIN, '?', "?", UI_ACT_HELP, "help", "this help" },
    { UI_CTX_MAIN, KEY_F(1), "F1", UI_ACT_HELP, NULL, NULL },
    { UI_CTX_MAIN, 'q', "q", UI_ACT_QUIT, "quit", "quit (asks when a run is active, then writes a checkpoint)" },

    /* inspect view */
    { UI_CTX_INSPECT, KEY_RIGHT, "Right", UI_ACT_RIGHT, "select", "select the next validation image, turning the page at its end (the table focused: next page; the confusion matrix focused: scroll right)" },
    { UI_CTX_INSPECT, KEY_LEFT, "Left", UI_ACT_LEFT, NULL, "select the previous image (the table focused: previous page; the matrix focused: scroll left)" },
    { UI_CTX_INSPECT, '\n', "Enter", UI_ACT_ZOOM, "Grad-CAM", "the selected image's Grad-CAM: where the model looked for its predicted and its true class (Enter or Esc again: back)" },
    { UI_CTX_INSPECT, KEY_ENTER, "Enter", UI_ACT_ZOOM, NULL, NULL },
    { UI_CTX_INSPECT, '\r', "Enter", UI_ACT_ZOOM, NULL, NULL },
    { UI_CTX_INSPECT, KEY_NPAGE, "PgDn", UI_ACT_PGDN, NULL, "next page of the focused part (images, per-class table, matrix rows)" },
    { UI_CTX_INSPECT, ' ', "Space", UI_ACT_PGDN, NULL, NULL },
    { UI_CTX_INSPECT, KEY_PPAGE, "PgUp", UI_ACT_PGUP, NULL, "previous page of the focused part" },
    { UI_CTX_INSPECT, KEY_UP, "Up", UI_ACT_UP, NULL, "scroll the per-class table up (the confusion matrix when focused)" },
    { UI_CTX_INSPECT, KEY_DOWN, "Down", UI_ACT_DOWN, NULL, "scroll the per-class table down (the confusion matrix when focused)" },
    { UI_CTX_INSPECT, KEY_HOME, "Home", UI_ACT_HOME, NULL, "first page; the table's or the matrix's top (left)" },
    { UI_CTX_INSPECT, '\t', "Tab", UI_ACT_FOCUS_NEXT, "focus", "focus the next part: images, per-class table, confusion matrix" },
    { UI_CTX_INSPECT, KEY_BTAB, "S-Tab", UI_ACT_FOCUS_PREV, NULL, "focus the previous part" },
    { UI_CTX_INSPECT, '%', "%", UI_ACT_PERCENT, "counts/%", "confusion matrix: counts / percentages of each true class (row-normalised)" },
    { UI_CTX_INSPECT, 'm', "m", UI_ACT_MISTAKES, "mistakes", "show mistakes only / all images" },
    { UI_CTX_INSPECT, 't', "t", UI_ACT_TOP_LOSSES, "top losses", "order the images by loss, highest first (fastai's top losses) / in validation order" },
    { UI_CTX_INSPECT, 'o', "o", UI_ACT_SORT, "sort", "order the per-class table by F1 (worst first) / by class" },
    { UI_CTX_INSPECT, 'n', "n", UI_ACT_NEXT, NULL, "reload the latest validation results" },
    { UI_CTX_INSPECT, 'i', "i", UI_ACT_BACK, "close", "back to the panels" },
    { UI_CTX_INSPECT, 27, "Esc", UI_ACT_BACK, NULL, NULL },

    /* configure dialog */
    { UI_CTX_CONFIG, KEY_UP, "Up", UI_ACT_UP, NULL, "previous setting" },
    { UI_CTX_CONFIG, KEY_DOWN, "Down", UI_ACT_DOWN, NULL, "next setting" },
    { UI_CTX_CONFIG, KEY_PPAGE, "PgUp", UI_ACT_PGUP, NULL, "ten settings up" },
    { UI_CTX_CONFIG, KEY_NPAGE, "PgDn", UI_ACT_PGDN, NULL, "ten settings down" },
    { UI_CTX_CONFIG, '\n', "Enter", UI_ACT_EDIT, "edit", "edit the setting (Enter sets it, Esc cancels)" },
    { UI_CTX_CONFIG, '\r', "Enter", UI_ACT_EDIT, NULL, NULL },
    { UI_CTX_CONFIG, KEY_ENTER, "Enter", UI_ACT_EDIT, NULL, NULL },
    { UI_CTX_CONFIG, 'a', "a", UI_ACT_APPLY, "apply", "apply: rebuild the engine with these settings" },
    { UI_CTX_CONFIG, 'L', "L", UI_ACT_LRFIND, NULL, "lr-max := lr-find's suggestion (after L on the main screen)" },
    { UI_CTX_CONFIG, 27, "Esc", UI_ACT_BACK, "cancel", "close without applying" },
    { UI_CTX_CONFIG, 'c', "c", UI_ACT_BACK, NULL, NULL },

    /* runs list */
    { UI_CTX_RUNS, KEY_UP, "Up", UI_ACT_UP, NULL, "previous run" },
    { UI_CTX_RUNS, KEY_DOWN, "Down", UI_ACT_DOWN, NULL, "next run" },
    { UI_CTX_RUNS, KEY_PPAGE, "PgUp", UI_ACT_PGUP, NULL, "a page up" },
    { UI_CTX_RUNS, KEY_NPAGE, "PgDn", UI_ACT_PGDN, NULL, "a page down" },
    { UI_CTX_RUNS, ' ', "Space", UI_ACT_TOGGLE, "compare", "add the run to the curves' comparison / take it off" },
    { UI_CTX_RUNS, '\n', "Enter", UI_ACT_TOGGLE, NULL, NULL },
    { UI_CTX_RUNS, '\r', "Enter", UI_ACT_TOGGLE, NULL, NULL },
    { UI_CTX_RUNS, KEY_ENTER, "Enter", UI_ACT_TOGGLE, NULL, NULL },
    { UI_CTX_RUNS, 'o', "o", UI_ACT_SORT, "sort", "sort by the next column (name, date, model, dataset, epochs, best val F1)" },
    { UI_CTX_RUNS, 'n', "n", UI_ACT_NEXT, NULL, "read the folder again" },
    { UI_CTX_RUNS, 27, "Esc", UI_ACT_BACK, "close", "back to the panels" },
    { UI_CTX_RUNS, 'r', "r", UI_ACT_BACK, NULL, NULL },

    /* questions */
    { UI_CTX_ASK, 'y', "y", UI_ACT_YES, "yes", "yes: stop the run (a checkpoint is written) and quit" },
    { UI_CTX_ASK, 'q', "q", UI_ACT_YES, NULL, NULL },
    { UI_CTX_ASK, 'n', "n", UI_ACT_NO, "no", "no: back to the workbench (after Ctrl-C the run stays paused)" },
    { UI_CTX_ASK, 27, "Esc", UI_ACT_NO, NULL, NULL },
    { UI_CTX_ASK, 'r', "r", UI_ACT_RESUME, "resume", "after Ctrl-C: resume the run" },
};

#define N_KEYS (sizeof g_keys / sizeof g_keys[0])

/* Keys of the main screen that also work in the inspect view. */
static int global_act(ui_act a)
{
    return a == UI_ACT_START || a == UI_ACT_PAUSE || a == UI_ACT_HELP || a == UI_ACT_QUIT ||
           a == UI_ACT_REDRAW;
}

ui_act ui_keys_action(ui_ctx ctx, int code)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (g_keys[i].ctx == ctx && g_keys[i].code == code)
            return g_keys[i].act;
    if (ctx == UI_CTX_INSPECT)
        for (size_t i = 0; i < N_KEYS; i++)
            if (g_keys[i].ctx == UI_CTX_MAIN && g_keys[i].code == code &&
                global_act(g_keys[i].act))
                return g_keys[i].act;
    return UI_ACT_NONE;
}

const ui_key *ui_keys_table(size_t *n)
{
    *n = N_KEYS;
    return g_keys;
}

const char *ui_keys_ctx_name(ui_ctx ctx)
{
    switch (ctx) {
    case UI_CTX_MAIN: return "Panels";
    case UI_CTX_INSPECT: return "Inspect (i)";
    case UI_CTX_CONFIG: return "Configure (c)";
    case UI_CTX_ASK: return "Questions";
    case UI_CTX_RUNS: return "Runs list (r)";
    default: return "?";
    }
}

/* 1 when name is one of the "/"-separated names in list. */
static int has_name(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, "/");
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p += len;
        if (*p == '/')
            p++;
    }
    return 0;
}

int ui_keys_help(ui_ctx ctx, int name_w, char *lines, size_t line_n, int max)
{
    int out = 0;
    for (size_t i = 0; i < N_KEYS && out < max; i++) {
        const ui_key *k = &g_keys[i];
        if (k->ctx != ctx || !k->help)
            continue;
        /* Every key bound to the same action in this context, on one line. */
        char names[96] = "";
        for (size_t j = 0; j < N_KEYS; j++) {
            const ui_key *o = &g_keys[j];
            if (o->ctx != ctx || o->act != k->act)
                continue;
            if (has_name(names, o->name))
                continue;
            size_t used = strlen(names);
            snprintf(names + used, sizeof names - used, "%s%s", used ? "/" : "", o->name);
        }
        snprintf(lines + (size_t)out * line_n, line_n, "%-*s %s", name_w, names, k->help);
        out++;
    }
    return out;
}
