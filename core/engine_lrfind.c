/* engine_lrfind — the engine door's picture of a learning-rate finder's curve:
 * picture/plot.h's log-x plot of the smoothed loss, its two suggestions marked,
 * written as PNG (io/png.h), for `petal-tui lr-find --plot`. */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>

#include "io/png.h"
#include "picture/plot.h"

int eng_lrfind_plot(const run_lrfind *f, const char *path, pt_err *e)
{
    char valley[64], steep[64], title[128];
    snprintf(valley, sizeof valley, "valley %.2e", f->valley);
    snprintf(steep, sizeof steep, "steep %.2e", f->steep);
    snprintf(title, sizeof title, "lr-find: %d updates of %d examples", f->n, f->update_size);
    plot_mark marks[2] = { { f->valley, valley, { 214, 39, 40 } },
                           { f->steep, steep, { 255, 127, 14 } } };
    plot_spec s = { .x = f->lr, .y = f->smooth, .n = f->n, .marks = marks,
                    .n_marks = f->found ? 2 : 0, .title = title,
                    .xlabel = "learning rate (log scale)", .ylabel = "smoothed loss",
                    .w = 900, .h = 560 };
    /* The climb at the end can reach 4x the best loss and flatten the part that
     * matters: the axis ends half the fall above the first loss (the workbench's
     * chart does the same). */
    double lo = f->n ? f->smooth[0] : 0;
    for (int i = 0; i < f->n; i++)
        lo = lo < f->smooth[i] ? lo : f->smooth[i];
    s.y_top = f->n ? f->smooth[0] + 0.5 * (f->smooth[0] - lo) : 0;
    uint8_t *rgb;
    int w, h;
    int rc = plot_logx(&s, &rgb, &w, &h);
    if (rc != PT_OK)
        return err_set(e, rc, path, PT_NO_RECORD, PT_NO_OFFSET,
                       rc == PT_ENOMEM ? "out of memory" : "fewer than 2 points to plot");
    rc = png_write_rgb(path, rgb, w, h, e);
    free(rgb);
    return rc;
}
