/* rowmove — would curses move terminal rows in the next doupdate()?
 *
 * ncurses' update looks for lines of the new screen that equal other lines of the
 * screen as it stands and, where it finds them, scrolls whole terminal rows (with
 * a scroll region and index, or delete/insert line) instead of rewriting them.
 * That happens whenever the terminal can scroll (idlok() does not stop it), e.g.
 * when the log panel scrolls beside blank cells — and a scroll drags the pixels of
 * any sixel image in those rows along. There is no switch for it, so the workbench
 * asks before each update whether it may happen, and re-sends its pictures after
 * the update when it may.
 *
 * ui_rows_may_move() compares a hash of every row of newscr (after wnoutrefresh())
 * with every row of curscr: a row that changed and now equals another row of the
 * current screen is a move curses may make. Nothing is allocated beyond a small
 * buffer kept between calls (ui_rows_free releases it).
 */
#ifndef PT_UI_ROWMOVE_H
#define PT_UI_ROWMOVE_H

/* Call between wnoutrefresh() and doupdate(). 1 when rows may be moved. */
int ui_rows_may_move(void);
void ui_rows_free(void);

#endif
