#include "data/batch.h"

#include <stdlib.h>

#include "base/util.h"

batch *batch_new(int cap, int h, int w)
{
    if (cap <= 0 || h <= 0 || w <= 0)
        return NULL;
    batch *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->cap = cap;
    b->h = h;
    b->w = w;
    size_t ucap = (size_t)cap;
    b->images = util_aligned_alloc(ucap * (size_t)h * (size_t)w * 3);
    b->label = calloc(ucap, sizeof *b->label);
    b->label2 = calloc(ucap, sizeof *b->label2);
    b->mix = calloc(ucap, sizeof *b->mix);
    b->id = calloc(ucap, sizeof *b->id);
    b->src = calloc(ucap, sizeof *b->src);
    b->src2 = calloc(ucap, sizeof *b->src2);
    if (!b->images || !b->label || !b->label2 || !b->mix || !b->id || !b->src || !b->src2) {
        batch_free(b);
        return NULL;
    }
    return b;
}

void batch_free(batch *b)
{
    if (!b)
        return;
    util_aligned_free(b->images);
    free(b->label);
    free(b->label2);
    free(b->mix);
    free(b->id);
    free(b->src);
    free(b->src2);
    free(b);
}

void batch_clear_mix(batch *b)
{
    for (int i = 0; i < b->n; i++) {
        b->label2[i] = b->label[i];
        b->mix[i] = 1.0f;
        b->src2[i] = b->src[i];
    }
}
