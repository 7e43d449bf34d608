/* ui — the workbench: an ncurses front end that drives one engine.
 *
 * ui_run() owns the terminal from start to end. It asks the terminal what it can
 * show (sixel, colours, cell size) before curses starts, then loops about ten
 * times a second: copy the engine's snapshot, draw the panels from that copy,
 * write any changed picture after curses has flushed, and turn keys into engine
 * commands (which return at once). It never waits on the engine while the
 * terminal is live. Signals only set flags that the loop reads: SIGINT pauses
 * the run and asks; SIGHUP and SIGTERM stop the run (the engine writes a
 * checkpoint), wait for it, and leave with status 130; SIGWINCH arrives as
 * KEY_RESIZE; SIGCONT (back from Ctrl-Z) repaints.
 *
 * Ownership: the engine, the snapshot copies and every picture belong to
 * ui_run() and are freed before it returns; cfg and opt are only read.
 */
#ifndef PT_UI_H
#define PT_UI_H

#include "engine.h"

typedef struct ui_options {
    int no_sixel;       /* --no-sixel: force the text (half-block) preview */
    int no_color;       /* --no-color or NO_COLOR set */
} ui_options;

/* Runs the workbench until the user quits; returns the process exit status
 * (0 normal quit, 130 interrupted/hung up after writing a checkpoint; 1 when
 * there is no terminal or the engine cannot be created, with a message on
 * stderr). */
int ui_run(const run_config *cfg, const ui_options *opt);

#endif
