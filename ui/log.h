/* log — the lines the log panel shows: engine log lines and the workbench's own
 * notes, with the time each arrived and a role that colours it (data errors in
 * red, checkpoints and epoch summaries set apart).
 *
 * A fixed ring of UI_LOG_LINES; the oldest line goes when it is full. Lines are
 * classified by their words when added (ui_log_add with role -1).
 *
 * Ownership: a plain value (no heap); the app owns it.
 */
#ifndef PT_UI_LOG_H
#define PT_UI_LOG_H

#include <stddef.h>

#define UI_LOG_LINES 512
/* Bytes kept of a line: the engine's longest (an ONNX import's, a run folder's path)
 * whole; anything longer ends in an ellipsis. */
#define UI_LOG_WIDTH 1024

typedef struct ui_log_line {
    double t;               /* seconds since the workbench started */
    int role;               /* a ui_role */
    char text[UI_LOG_WIDTH];
} ui_log_line;

typedef struct ui_log {
    ui_log_line line[UI_LOG_LINES];
    int head;               /* index of the oldest line */
    int n;
    long long total;        /* lines ever added */
} ui_log;

void ui_log_init(ui_log *l);
/* Add a line (newlines become spaces; past UI_LOG_WIDTH it is cut and ends in "...").
 * role < 0: pick one from the words. */
void ui_log_add(ui_log *l, double t, int role, const char *text);
/* The i-th line from the oldest (0 <= i < n). */
const ui_log_line *ui_log_get(const ui_log *l, int i);
/* The role a line gets from its words. */
int ui_log_role_of(const char *text);

#endif
