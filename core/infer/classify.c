/* classify — infer.h's ONNX file as it is, for `petal-tui model` and `classify`: the
 * import (nn/nn_import.h), its account, and one image at a time through the one
 * inference path (a JPEG by jpg_decode_into, a PNG centre-cropped and resized). */
#include "infer/infer.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "data/dataset.h"
#include "data/image.h"
#include "data/jpeg.h"
#include "io/png.h"
#include "nn/nn.h"
#include "nn/nn_import.h"
#include "pool/rpool.h"

struct inf_onnx {
    nn_model *m;
    nn_import_info info;
    int size;
};

struct inf_classify {
    inf_onnx *g;
    rpool *pool;
    jpg_codec *jc;
    img_scratch scratch;
    uint8_t *rgb;
    float *y;
};

int inf_onnx_open(const char *path, int size, int n_classes, int classifier,
                  run_input_norm norm, inf_onnx **out, pt_err *e)
{
    if (util_is_dir(path))
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "a folder, not an .onnx file (a run folder is for predict and export)");
    inf_onnx *g = calloc(1, sizeof *g);
    if (!g)
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    nn_import_opts o = { .h = size, .w = size, .n_classes = n_classes, .dropout = 0.2f,
                         .norm = (nn_norm)(norm - 1), .norm_auto = norm == RUN_NORM_AUTO,
                         .head = classifier ? NN_HEAD_CLASSIFIER : NN_HEAD_AS_IS, .seed = 42 };
    g->m = nn_import_onnx_file(path, &o, &g->info, e);
    if (!g->m) {
        free(g);
        return e ? e->code : PT_EFORMAT;
    }
    g->size = g->info.h;
    *out = g;
    return PT_OK;
}

void inf_onnx_close(inf_onnx *g)
{
    if (!g)
        return;
    nn_model_free(g->m);
    free(g);
}

void inf_onnx_about(const inf_onnx *g, inf_onnx_info *out)
{
    const nn_import_info *i = &g->info;
    *out = (inf_onnx_info){ .onnx_nodes = i->onnx_nodes,
                            .mapped = i->mapped,
                            .quantized = i->quantized,
                            .cut_from = i->cut_from,
                            .feature_c = i->feature_c,
                            .norm_name = nn_norm_name(i->norm),
                            .norm_formula = nn_norm_formula(i->norm),
                            .size = g->size,
                            .decl_h = i->decl_h,
                            .decl_w = i->decl_w,
                            .classifier = i->classifier,
                            .seconds = i->seconds,
                            .params = nn_param_count(g->m),
                            .trainable = nn_trainable_count(g->m),
                            .mflop = nn_flops(g->m, 1, 0) * 1e-6 };
    util_copy(out->cut, sizeof out->cut, i->cut);
    util_copy(out->norm_why, sizeof out->norm_why, i->norm_why);
    util_copy(out->size_why, sizeof out->size_why, i->size_why);
    util_copy(out->head_why, sizeof out->head_why, i->head_why);
}

int inf_onnx_classes(const inf_onnx *g)
{
    return nn_model_classes(g->m);
}

char *inf_onnx_summary(const inf_onnx *g)
{
    size_t need = nn_model_summary(g->m, NULL, 0) + 1;
    char *text = malloc(need);
    if (text)
        nn_model_summary(g->m, text, need);
    return text;
}

const char *inf_onnx_class_name(const inf_onnx *g, int cls)
{
    return nn_model_classes(g->m) == (int)ds_imagenet_class_count ? ds_imagenet_classes[cls] : "";
}

int inf_classify_new(inf_onnx *g, inf_classify **out, pt_err *e)
{
    inf_classify *c = calloc(1, sizeof *c);
    int k = nn_model_classes(g->m);
    size_t px = (size_t)g->size * (size_t)g->size * 3;
    if (c) {
        c->g = g;
        inf_pool_new(g->m, 1, 1, 0, &c->pool, e);
        c->jc = jpg_codec_new();
        c->rgb = malloc(px);
        c->y = malloc((size_t)k * sizeof *c->y);
    }
    if (!c || !c->pool || !c->jc || !c->rgb || !c->y) {
        inf_classify_free(c);
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    *out = c;
    return PT_OK;
}

void inf_classify_free(inf_classify *c)
{
    if (!c)
        return;
    img_scratch_free(&c->scratch);
    free(c->rgb);
    free(c->y);
    jpg_codec_free(c->jc);
    inf_pool_free(c->pool);
    free(c);
}

/* A PNG centre-cropped to a square and resized to size x size, as JPEGs are. */
static int png_to_size(const uint8_t *buf, size_t len, uint8_t *out, int size, img_scratch *s,
                       pt_err *e)
{
    uint8_t *rgb;
    int w, h, x, y, cw, ch;
    int rc = png_decode_rgb(buf, len, &rgb, &w, &h, e);
    if (rc != PT_OK)
        return rc;
    img_crop_box(w, h, size, size, &x, &y, &cw, &ch);
    if (img_resize(rgb, w * 3, x, y, cw, ch, out, size, size, s) != 0)
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    free(rgb);
    return rc;
}

int inf_classify_load(inf_classify *c, const char *path, pt_err *e)
{
    int size = c->g->size;
    uint8_t *buf = NULL;
    size_t len;
    if (util_is_dir(path))
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "a folder, not an image file (predict takes folders)");
    int rc = util_read_file(path, &buf, &len, e);
    if (rc == PT_OK && png_is_png(buf, len))
        rc = png_to_size(buf, len, c->rgb, size, &c->scratch, e);
    else if (rc == PT_OK)
        rc = jpg_decode_into(c->jc, buf, len, c->rgb, size, size, 1, 0, NULL, NULL, e);
    free(buf);
    if (rc != PT_OK && strncmp(e->msg, path, strlen(path)) != 0) {
        /* The decoders name no file: say which. */
        char why[sizeof e->msg];
        util_copy(why, sizeof why, e->msg);
        err_set(e, rc, path, PT_NO_RECORD, PT_NO_OFFSET, "%s", why);
    }
    return rc;
}

int inf_classify_run(inf_classify *c, double *probs, pt_err *e)
{
    int size = c->g->size;
    int rc = inf_logits(c->pool, c->rgb, 1, size, size, 0, c->y, NULL, e);
    if (rc == PT_OK)
        inf_softmax(c->y, nn_model_classes(c->g->m), probs);
    return rc;
}
