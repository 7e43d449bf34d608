/* engine_sheet — the engine door's preview sheet: a preview's tiles through
 * picture/grid.h into one image, written as PNG (io/png.h), for `petal-tui preview`. */
#include "engine.h"

#include <stdlib.h>

#include "base/util.h"
#include "io/png.h"
#include "picture/grid.h"

int eng_preview_sheet(eng *g, const run_preview *p, int cols, const char *path, int *w, int *h,
                      pt_err *e)
{
    err_clear(e);
    const uint8_t **orig = calloc((size_t)p->n, sizeof *orig),
                  **aug = calloc((size_t)p->n, sizeof *aug);
    const char **caps = calloc((size_t)p->n, sizeof *caps);
    char(*names)[32] = calloc((size_t)p->n, sizeof *names);
    size_t img = (size_t)p->h * p->w * 3;
    for (int i = 0; orig && aug && caps && names && i < p->n; i++) {
        orig[i] = p->original + i * img;
        aug[i] = p->augmented + i * img;
        const char *nm = eng_class_name(g, p->label[i]);
        if (nm)
            util_copy(names[i], sizeof names[i], nm);
        else
            util_fmt(names[i], sizeof names[i], "class %d", p->label[i]);
        caps[i] = names[i];
    }
    uint8_t *sheet = NULL;
    int rc = PT_ENOMEM;
    if (orig && aug && caps && names)
        rc = grid_compose(orig, aug, caps, p->n, p->h, p->w, cols, &sheet, w, h);
    if (rc == PT_OK)
        rc = png_write_rgb(path, sheet, *w, *h, e);
    else
        e->code = rc;
    free(sheet);
    free(orig);
    free(aug);
    free(caps);
    free(names);
    return rc;
}
