/* explain_sheet — `petal-tui explain`'s pictures (explain.h): an image file's sheet
 * (photo, heat map, overlay, top classes) and a run's top losses as a contact sheet. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "data/dataset.h"
#include "data/image.h"
#include "data/jpeg.h"
#include "data/pipeline.h"
#include "infer/explain.h"
#include "infer/predict.h"
#include "infer/runmodel.h"
#include "io/png.h"
#include "nn/nn.h"
#include "picture/grid.h"

#define MARGIN 8
#define GAP 8

static const uint8_t WHITE[3] = { 235, 235, 235 };
static const uint8_t GREY[3] = { 160, 160, 160 };
static const uint8_t RED[3] = { 255, 120, 110 };

/* The side the pictures are drawn at: the model's, at least 192 pixels (a 128 px
 * run's map would be hard to see). */
static int display_side(int S)
{
    return S >= 192 ? S : 2 * S >= 192 ? 2 * S : 192;
}

static int text_scale(int side)
{
    return side >= 192 ? 2 : 1;
}

/* s cut to at most n characters (n >= 1) into buf. */
static const char *fit(const char *s, int n, char *buf, size_t size)
{
    if (n < 1)
        n = 1;
    util_copy(buf, size, s);
    if ((int)strlen(buf) > n)
        buf[n] = '\0';
    return buf;
}

static void blit(uint8_t *dst, int W, int x0, int y0, const uint8_t *src, int w, int h)
{
    for (int y = 0; y < h; y++)
        memcpy(dst + ((size_t)(y0 + y) * W + x0) * 3, src + (size_t)y * w * 3, (size_t)w * 3);
}

static int resize_sq(const uint8_t *src, int s, uint8_t *dst, int d)
{
    img_scratch sc = { 0 };
    int rc = img_resize(src, s * 3, 0, 0, s, s, dst, d, d, &sc);
    img_scratch_free(&sc);
    return rc ? PT_ENOMEM : PT_OK;
}

/* ---- one image file ---- */

static int decode(const rm_model *m, const char *path, uint8_t *out, int side, pt_err *e)
{
    jpg_codec *jc = jpg_codec_new();
    if (!jc)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    img_scratch sc = { 0 };
    int rc = pipe_decode_file(jc, &sc, path, PRD_MAX_FILE_BYTES, out, side, m->crop,
                              m->fast_decode, e);
    img_scratch_free(&sc);
    jpg_codec_free(jc);
    return rc;
}

typedef struct sheet {
    uint8_t *rgb;
    int W, H, D, sc;
} sheet;

/* Row r of the sheet: a title over each panel, then the photo (or nothing), the
 * heat map and the overlay of class c's map. */
static int draw_row(sheet *s, int r, const uint8_t *photo, const float *map, int mh, int mw,
                    const char *cname, int with_photo)
{
    const int D = s->D, th = GRID_CELL_H * s->sc + 4;
    const int y = MARGIN + r * (th + D + GAP);
    uint8_t *heat = malloc((size_t)D * D * 3), *over = malloc((size_t)D * D * 3);
    int rc = heat && over && !xpl_heat(map, mh, mw, NULL, D, D, heat) &&
                     !xpl_heat(map, mh, mw, photo, D, D, over)
                 ? PT_OK
                 : PT_ENOMEM;
    if (rc == PT_OK) {
        char t[160], b[160];
        const int chars = D / (GRID_CELL_W * s->sc);
        if (with_photo) {
            grid_text(s->rgb, s->W, s->H, MARGIN, y, "photo", GREY, s->sc);
            blit(s->rgb, s->W, MARGIN, y + th, photo, D, D);
        }
        util_fmt(t, sizeof t, "map: %s", cname);
        grid_text(s->rgb, s->W, s->H, MARGIN + D + GAP, y, fit(t, chars, b, sizeof b), GREY,
                  s->sc);
        blit(s->rgb, s->W, MARGIN + D + GAP, y + th, heat, D, D);
        grid_text(s->rgb, s->W, s->H, MARGIN + 2 * (D + GAP), y, "overlay", GREY, s->sc);
        blit(s->rgb, s->W, MARGIN + 2 * (D + GAP), y + th, over, D, D);
    }
    free(heat);
    free(over);
    return rc;
}

/* The text under the pictures: the file, the layer, the top classes. */
static void draw_text(sheet *s, int y, const xpl *x, const rm_model *m, const char *image,
                      const double *probs, const xpl_opts *o, const xpl_answer *a)
{
    const int lh = GRID_CELL_H * s->sc + 2, chars = (s->W - 2 * MARGIN) / (GRID_CELL_W * s->sc);
    char t[512], b[512];
    const char *base = strrchr(image, '/');
    grid_text(s->rgb, s->W, s->H, MARGIN, y, fit(base ? base + 1 : image, chars, b, sizeof b),
              WHITE, s->sc);
    y += lh;
    int h, w, c;
    xpl_layer_shape(m, a->layer, &h, &w, &c);
    util_fmt(t, sizeof t, "layer %d (%d x %d x %d)", a->layer, h, w, c);
    grid_text(s->rgb, s->W, s->H, MARGIN, y, fit(t, chars, b, sizeof b), GREY, s->sc);
    y += lh;
    (void)x;
    const int k = m->n_classes, top = o->top < k ? o->top : k;
    int *order = malloc((size_t)top * sizeof *order);
    if (!order)
        return;
    inf_topk(probs, k, top, order);
    for (int i = 0; i < top; i++) {
        util_fmt(t, sizeof t, "%d. %s  %.3f", i + 1, m->class_names[order[i]], probs[order[i]]);
        grid_text(s->rgb, s->W, s->H, MARGIN, y, fit(t, chars, b, sizeof b),
                  i == 0 ? WHITE : GREY, s->sc);
        y += lh;
    }
    free(order);
}

static int write_sheet(xpl *x, const rm_model *m, const char *image, const char *png,
                       const uint8_t *photo, int D, float *const *maps, const double *probs,
                       const xpl_opts *o, const xpl_answer *a, pt_err *e)
{
    sheet s = { .D = D, .sc = text_scale(D) };
    const int rows = o->cls >= 0 ? 2 : 1, th = GRID_CELL_H * s.sc + 4;
    const int top = o->top < m->n_classes ? o->top : m->n_classes;
    s.W = 2 * MARGIN + 3 * D + 2 * GAP;
    s.H = MARGIN + rows * (th + D + GAP) + (2 + top) * (GRID_CELL_H * s.sc + 2) + MARGIN;
    s.rgb = calloc((size_t)s.W * s.H, 3);
    if (!s.rgb)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int rc = PT_OK;
    for (int r = 0; r < rows && rc == PT_OK; r++)
        rc = draw_row(&s, r, photo, maps[r], a->mh, a->mw,
                      m->class_names[r ? o->cls : a->pred], r == 0);
    if (rc != PT_OK) {
        free(s.rgb);
        return err_set(e, rc, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    draw_text(&s, MARGIN + rows * (th + D + GAP), x, m, image, probs, o, a);
    rc = png_write_rgb(png, s.rgb, s.W, s.H, e);
    free(s.rgb);
    return rc;
}

int xpl_file(xpl *x, const char *image, const char *png, const xpl_opts *o, xpl_answer *a,
             pt_err *e)
{
    const rm_model *m = xpl_model(x);
    const int S = m->image_size, D = display_side(S), k = m->n_classes;
    const int layer = o->layer >= 0 ? o->layer : xpl_default_layer(m);
    int rc = xpl_layer_check(m, layer, e);
    if (rc != PT_OK)
        return rc;
    memset(a, 0, sizeof *a);
    a->layer = layer;
    int c;
    xpl_layer_shape(m, layer, &a->mh, &a->mw, &c);
    uint8_t *img = malloc((size_t)S * S * 3), *photo = malloc((size_t)D * D * 3);
    double *probs = malloc((size_t)k * sizeof *probs);
    float *maps[2] = { malloc((size_t)a->mh * a->mw * sizeof(float)),
                       malloc((size_t)a->mh * a->mw * sizeof(float)) };
    if (!img || !photo || !probs || !maps[0] || !maps[1])
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    /* The model's input as predict makes it; the photo shown is the same crop, decoded
     * at the display size. */
    if (rc == PT_OK)
        rc = decode(m, image, img, S, e);
    if (rc == PT_OK)
        rc = decode(m, image, photo, D, e);
    if (rc == PT_OK)
        rc = xpl_cam(x, img, layer, 0, probs, maps[0], e);
    if (rc == PT_OK) {
        a->pred = inf_argmax(probs, k);
        a->prob = probs[a->pred];
        if (a->pred != 0) /* class 0's map is the one just made */
            rc = xpl_cam(x, img, layer, a->pred, NULL, maps[0], e);
    }
    if (rc == PT_OK && o->cls >= 0)
        rc = xpl_cam(x, img, layer, o->cls, NULL, maps[1], e);
    if (rc == PT_OK)
        rc = write_sheet(x, m, image, png, photo, D, maps, probs, o, a, e);
    free(img);
    free(photo);
    free(probs);
    free(maps[0]);
    free(maps[1]);
    return rc;
}

/* ---- top losses ---- */

typedef struct keep {
    int n, got, S;
    int in_order;           /* the first n records, not the highest losses */
    xpl_loss *l;
    uint8_t *img;           /* n x S x S x 3 */
} keep;

/* Record i (logits z, label y, image im) kept when among the n highest losses so far
 * (a later record with an equal loss does not push an earlier one out). */
static void consider(keep *k, long long i, const float *z, int K, int y, const uint8_t *im)
{
    int pred;
    float prob;
    inf_top1(z, K, &pred, &prob);
    const double loss = inf_xent(z, K, y);
    int at = k->got < k->n ? k->got : -1;
    if (at < 0 && k->in_order)
        return;
    if (at < 0) {
        at = 0;
        for (int j = 1; j < k->n; j++)
            if (k->l[j].loss < k->l[at].loss ||
                (k->l[j].loss == k->l[at].loss && k->l[j].index > k->l[at].index))
                at = j;
        if (!(loss > k->l[at].loss))
            return;
    } else {
        k->got++;
    }
    xpl_loss *l = &k->l[at];
    l->index = i;
    l->label = y;
    l->pred = pred;
    l->prob = prob;
    l->loss = loss;
    const size_t px = (size_t)k->S * k->S * 3;
    memcpy(k->img + (size_t)at * px, im, px);
}

static int open_val(const rm_model *m, ds_dataset **ds, pt_err *e)
{
    char path[4096];
    *ds = NULL;
    if (!m->data)
        return err_set(e, PT_EUSAGE, m->source, PT_NO_RECORD, PT_NO_OFFSET,
                       "--top-losses needs a run folder (it knows its data); an ONNX file "
                       "does not");
    int rc = rm_data_path(m->data, path, sizeof path, e);
    if (rc == PT_OK && (rc = ds_open(path, m->image_size, ds, e)) != PT_OK)
        return err_set(e, rc, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "the run's dataset cannot be read (%s): put it back at that path, "
                       "or make it again with `petal-tui shards`", e->msg);
    if (rc == PT_OK && (!(*ds)->split[DS_VAL].dir || (*ds)->split[DS_VAL].count <= 0)) {
        ds_free(*ds);
        *ds = NULL;
        return err_set(e, PT_ENODATA, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "the run's dataset has no validation records (make shards with "
                       "--val)");
    }
    return rc;
}

/* Every validation record forwarded on an inference context, in file order. */
static int scan(const rm_model *m, const ds_split *split, keep *k, pt_err *e)
{
    enum { B = 32 };
    const int S = m->image_size, K = m->n_classes;
    const size_t px = (size_t)S * S * 3;
    pipe_config c;
    rm_pipe_config(m, &c);
    c.split = split;
    c.labeled = 1;
    c.n_classes = K;
    c.batch_size = B;
    c.interleave = 1;
    c.workers = 2;
    pipeline *pl = NULL;
    float *x = malloc((size_t)B * px * sizeof *x);
    nn_ctx *ctx = x ? nn_ctx_new_infer(m->net, B, e) : NULL;
    int rc = !x ? err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory")
             : !ctx ? e->code
                    : pipe_create(&c, &pl, e);
    batch *b;
    int got = 0;
    long long i = 0;
    const float s = 1.0f / 255.0f; /* as the replica pool feeds bytes (pool/rpool.c) */
    while (rc == PT_OK && (got = pipe_next(pl, &b, e)) == 1) {
        for (size_t q = 0; q < (size_t)b->n * px; q++)
            x[q] = (float)b->images[q] * s;
        const float *z = nn_forward(ctx, x, b->n, 0, 0, 0);
        if (!z)
            rc = err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "the forward pass failed");
        for (int j = 0; rc == PT_OK && j < b->n; j++, i++)
            consider(k, i, z + (size_t)j * K, K, b->label[j], b->images + (size_t)j * px);
        pipe_release(pl, b);
    }
    if (rc == PT_OK && got < 0)
        rc = e->code;
    pipe_destroy(pl);
    nn_ctx_free(ctx);
    free(x);
    return rc;
}

static int by_loss(const void *a, const void *b)
{
    const xpl_loss *p = a, *q = b;
    if (p->loss != q->loss)
        return p->loss < q->loss ? 1 : -1;
    return p->index < q->index ? -1 : p->index > q->index;
}

/* One tile: the overlay of the predicted class's map, upscaled to T, and 3 lines. */
static int tile(xpl *x, const rm_model *m, const uint8_t *im, const xpl_loss *l, int layer,
                sheet *s, int tx, int ty, pt_err *e)
{
    const int S = m->image_size, T = s->D;
    int mh, mw, c;
    xpl_layer_shape(m, layer, &mh, &mw, &c);
    float *map = malloc((size_t)mh * mw * sizeof *map);
    uint8_t *big = malloc((size_t)T * T * 3), *over = malloc((size_t)T * T * 3);
    int rc = map && big && over ? PT_OK : PT_ENOMEM;
    if (rc == PT_OK)
        rc = xpl_cam(x, im, layer, l->pred, NULL, map, e);
    if (rc == PT_OK && (resize_sq(im, S, big, T) || xpl_heat(map, mh, mw, big, T, T, over)))
        rc = PT_ENOMEM;
    if (rc == PT_OK) {
        blit(s->rgb, s->W, tx, ty, over, T, T);
        const int chars = T / (GRID_CELL_W * s->sc), lh = GRID_CELL_H * s->sc + 2;
        char t[256], b[256];
        util_fmt(t, sizeof t, "true %s", m->class_names[l->label]);
        grid_text(s->rgb, s->W, s->H, tx, ty + T + 3, fit(t, chars, b, sizeof b), WHITE, s->sc);
        util_fmt(t, sizeof t, "pred %s", m->class_names[l->pred]);
        grid_text(s->rgb, s->W, s->H, tx, ty + T + 3 + lh, fit(t, chars, b, sizeof b),
                  l->pred == l->label ? WHITE : RED, s->sc);
        util_fmt(t, sizeof t, "p %.2f loss %.2f", l->prob, l->loss);
        grid_text(s->rgb, s->W, s->H, tx, ty + T + 3 + 2 * lh, fit(t, chars, b, sizeof b),
                  GREY, s->sc);
    }
    free(map);
    free(big);
    free(over);
    if (rc == PT_ENOMEM)
        err_set(e, rc, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    return rc;
}

static int contact_sheet(xpl *x, const rm_model *m, const keep *k, int layer, const char *png,
                         pt_err *e)
{
    sheet s = { .D = display_side(m->image_size) };
    s.sc = text_scale(s.D);
    const int cols = k->got < 4 ? k->got : 4, rows = (k->got + cols - 1) / cols;
    const int th = s.D + 3 + 3 * (GRID_CELL_H * s.sc + 2) + GAP, title = GRID_CELL_H * s.sc + 6;
    s.W = 2 * MARGIN + cols * s.D + (cols - 1) * GAP;
    s.H = 2 * MARGIN + title + rows * th;
    s.rgb = calloc((size_t)s.W * s.H, 3);
    if (!s.rgb)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    char t[128];
    if (k->in_order)
        util_fmt(t, sizeof t, "the first %d validation images", k->got);
    else
        util_fmt(t, sizeof t, "top losses: %d", k->got);
    grid_text(s.rgb, s.W, s.H, MARGIN, MARGIN, t, WHITE, s.sc);
    const size_t px = (size_t)m->image_size * m->image_size * 3;
    int rc = PT_OK;
    for (int i = 0; i < k->got && rc == PT_OK; i++)
        rc = tile(x, m, k->img + (size_t)i * px, &k->l[i], layer, &s,
                  MARGIN + (i % cols) * (s.D + GAP), MARGIN + title + (i / cols) * th, e);
    if (rc == PT_OK)
        rc = png_write_rgb(png, s.rgb, s.W, s.H, e);
    free(s.rgb);
    return rc;
}

int xpl_top_losses(xpl *x, int n, const char *png, const xpl_opts *o, xpl_loss *out,
                   int *got, pt_err *e)
{
    const rm_model *m = xpl_model(x);
    const int layer = o->layer >= 0 ? o->layer : xpl_default_layer(m);
    *got = 0;
    int rc = xpl_layer_check(m, layer, e);
    if (rc != PT_OK)
        return rc;
    if (n < 1)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "%s: a number of images >= 1", o->in_order ? "--first" : "--top-losses");
    ds_dataset *ds;
    if ((rc = open_val(m, &ds, e)) != PT_OK)
        return rc;
    const size_t px = (size_t)m->image_size * m->image_size * 3;
    keep k = { .n = n, .S = m->image_size, .in_order = o->in_order,
               .l = calloc((size_t)n, sizeof *k.l),
               .img = malloc((size_t)n * px) };
    if (!k.l || !k.img)
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    if (rc == PT_OK)
        rc = scan(m, &ds->split[DS_VAL], &k, e);
    if (rc == PT_OK && k.got == 0)
        rc = err_set(e, PT_ENODATA, ds->split[DS_VAL].dir, PT_NO_RECORD, PT_NO_OFFSET,
                     "no validation record could be read");
    if (rc == PT_OK) {
        /* Sort the images with their rows: by index into a copy. */
        xpl_loss *l = malloc((size_t)k.got * sizeof *l);
        uint8_t *im = malloc((size_t)k.got * px);
        if (!l || !im)
            rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        for (int i = 0; rc == PT_OK && i < k.got; i++)
            l[i] = k.l[i];
        if (rc == PT_OK && !k.in_order)
            qsort(l, (size_t)k.got, sizeof *l, by_loss);
        for (int i = 0; rc == PT_OK && i < k.got; i++)
            for (int j = 0; j < k.got; j++)
                if (k.l[j].index == l[i].index)
                    memcpy(im + (size_t)i * px, k.img + (size_t)j * px, px);
        if (rc == PT_OK) {
            memcpy(k.l, l, (size_t)k.got * sizeof *l);
            memcpy(k.img, im, (size_t)k.got * px);
            memcpy(out, l, (size_t)k.got * sizeof *l);
            *got = k.got;
            rc = contact_sheet(x, m, &k, layer, png, e);
        }
        free(l);
        free(im);
    }
    free(k.l);
    free(k.img);
    ds_free(ds);
    return rc;
}
