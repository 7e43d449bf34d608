/* lrfind — the workbench's learning-rate finder overlay (`L`, before a run): the
 * finder's progress, then its curve (the smoothed loss against the rate) as a
 * braille chart on a log x axis with a label at every power of ten, the valley
 * (the suggested --lr-max) and the steepest point marked, the two figures as
 * text, and what the keys do. The finder itself runs in the engine
 * (engine.h: eng_lrfind_*); this draws a copy of its result.
 *
 * Ownership: nothing kept; the result is the caller's.
 */
#ifndef PT_UI_LRFIND_H
#define PT_UI_LRFIND_H

#include "engine.h"
#include "ui/draw.h"

/* The figures as a line: "suggested --lr-max 2.48e-04 (valley); steepest 1.10e-03",
 * or why there is none yet. */
void ui_lrf_summary(const run_lrfind *f, char *buf, size_t n);

/* The overlay, centred over a rows x cols screen; returns its box. */
ui_rect ui_lrf_draw(WINDOW *w, int rows, int cols, const run_lrfind *f);

#endif
