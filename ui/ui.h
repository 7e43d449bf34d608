/* ui — the workbench: an ncurses front end that drives one engine.
 *
 * ui_run() owns the terminal from start to end: stdin and stdout, or with --tty
 * the terminal device named (another terminal's /dev/pts/N, what `tty` prints
 * there), opened once for both keys and drawing and closed at the end; nothing
 * of the workbench then reads stdin or writes stdout. It asks the terminal what it can
 * show (sixel, colours, cell size) before curses starts, then loops about ten
 * times a second: copy the engine's snapshot, draw the panels from that copy,
 * write any changed picture after curses has flushed, and turn keys into engine
 * commands (which return at once). It never waits on the engine while the
 * terminal is live. Signals only set flags that the loop reads: SIGINT pauses
 * the run and asks; SIGHUP and SIGTERM stop the run (the engine writes a
 * checkpoint), wait for it, and leave with status 130; SIGWINCH arrives as
 * KEY_RESIZE; SIGCONT (back from Ctrl-Z) repaints. A --tty terminal is not this
 * process's controlling terminal, so its SIGWINCH goes to whatever runs there: the
 * loop reads the terminal's size each turn and resizes on a change. Its keys come
 * raw: Ctrl-C there is a key that does what the signal does here, and never
 * reaches the program that owns that terminal. A terminal lost without a
 * SIGHUP (an ignored one, or the pty closed under a parent that caught it) is
 * seen by its reads and taken as a hang-up.
 *
 * Errors reach the person on stderr as "petal-tui: WHAT: WHY": what the engine
 * refuses (options, an empty dataset folder, a run folder that cannot be made)
 * before the screen opens; why a run failed after the screen is restored.
 *
 * --compare's runs are read (engine.h: runs_open) before the screen opens; one
 * that cannot be read is refused there ("petal-tui: PATH: WHY", status 2). The
 * runs list (r) adds and removes compared runs while the workbench runs.
 *
 * Ownership: the engine, the snapshot copies and every picture belong to
 * ui_run() and are freed before it returns; cfg and opt are only read.
 */
#ifndef PT_UI_H
#define PT_UI_H

#include "engine.h"
#include "runs.h"

typedef struct ui_options {
    int no_sixel;       /* --no-sixel: force the text (half-block) preview */
    int no_color;       /* --no-color or NO_COLOR set */
    const char *const *compare;  /* --compare RUN_DIR...: runs overlaid on the curves */
    int n_compare;
    const char *open;   /* --open RUN_DIR: show that finished run; no training */
    const char *tty;    /* --tty PATH: the terminal to use instead of stdin/stdout, or NULL */
} ui_options;

/* Runs the workbench until the user quits; returns the process exit status, as
 * --headless's: 0 a normal quit; 1 a usage error or no terminal (--tty's PATH
 * missing or not a terminal: "petal-tui: PATH: not a terminal"); 2 the data or
 * the run folder refused, or the last run failed; 3 the last run stopped after a
 * non-finite loss; 130 interrupted or hung up, after writing a checkpoint. */
int ui_run(const run_config *cfg, const ui_options *opt);

#endif
