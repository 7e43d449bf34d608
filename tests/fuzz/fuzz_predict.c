/* fuzz_predict — predict's file path (core/infer/predict.c) on any bytes.
 *
 * The bytes are a file given to `petal-tui predict`: prd_files() reads it, tells JPEG
 * from PNG from neither, decodes (CMYK JPEGs through their own conversion), crops and
 * resizes to the model's side and runs a tiny net on it, with and without the flip.
 *
 * Promises checked: one item for the one file; a failed one has a known error code
 * and a message naming the file, and its probabilities row stays 0; a predicted one
 * has probabilities in [0, 1] that sum to 1.
 */
#include "tests/fuzz/fuzz.h"

#include <math.h>

#include "nn/nn_models.h"
#include "infer/predict.h"

static rm_model model;

static void setup(void)
{
    if (model.net)
        return;
    pt_err e;
    static char *names[3] = { "a", "b", "c" };
    model.net = nn_build_small(16, 16, 3, 0.0f, &e);
    FZ_ASSERT(model.net, "%s", e.msg);
    nn_model_init_params(model.net, 1);
    model.image_size = 16;
    model.n_classes = 3;
    model.class_names = names;
    model.crop = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    char *path = (char *)fz_file(0, data, size);
    for (int flip = 0; flip < 2; flip++) {
        prd_opts o = { .batch = 1, .replicas = 1, .workers = 1, .tta_flip = flip };
        prd *p;
        prd_results r;
        pt_err e;
        FZ_ASSERT(prd_new(&model, &o, &p, &e) == PT_OK, "%s", e.msg);
        FZ_ASSERT(prd_files(p, &path, 1, &r, &e) == PT_OK, "%s", e.msg);
        prd_free(p);
        FZ_ASSERT(r.n == 1 && r.k == 3, "%lld items of %d", r.n, r.k);
        const prd_item *it = &r.items[0];
        double sum = 0;
        for (int c = 0; c < 3; c++) {
            FZ_ASSERT(r.probs[c] >= 0 && r.probs[c] <= 1, "p %g", r.probs[c]);
            sum += r.probs[c];
        }
        if (it->ok) {
            FZ_ASSERT(fabs(sum - 1) < 1e-9 && r.n_failed == 0, "sum %g", sum);
        } else {
            int c = it->err.code;
            FZ_ASSERT((c == PT_EJPEG || c == PT_ETOOBIG || c == PT_EFORMAT || c == PT_ENOMEM ||
                       c == PT_EIO) &&
                          fz_names(it->err.msg, path) && sum == 0 && r.n_failed == 1,
                      "%d: %s", c, it->err.msg);
        }
        prd_results_free(&r);
    }
    return 0;
}
