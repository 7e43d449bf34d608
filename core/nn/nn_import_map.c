/* nn_import_map — the way back from an imported model to its ONNX file: for every
 * float tensor the import read into a layer, its name and shape, where it went in
 * the parameter (or buffer) array, and the inverse of the conversion
 * nn_import_weights.c applied, for values and for gradients (see nn_import.h).
 *
 * Ownership: the map owns its entries and a copy of each name; nn_import_map_free()
 * releases them. It keeps no pointer into the ONNX model or the nn model.
 */
#include <stdlib.h>
#include <string.h>

#include "nn/nn_import_impl.h"

typedef enum mkind {
    M_COPY,     /* same order: biases, BN scale / shift / statistics */
    M_CONV,     /* file [cout][cg][kh][kw], library [kh][kw][cg][cout] */
    M_DENSE,    /* file [cin][cout] or [cout][cin] (transB), library [cin][cout] with the
                   rows of a flattened map in NHWC order */
} mkind;

typedef struct entry {
    nn_import_param p;
    mkind kind;
    float scale;                /* library = scale * file: Gemm's alpha or beta, else 1 */
    int64_t cout, cg, kh, kw;   /* M_CONV; cout also M_DENSE */
    int64_t cin;                /* M_DENSE */
    int trans_b;                /* M_DENSE */
    int flat_h, flat_w, flat_c; /* M_DENSE after an NCHW flatten; flat_c 0 otherwise */
    int rev_cin;                /* M_CONV on the caffe input: input channels reversed */
} entry;

struct nn_import_map {
    entry *e;
    size_t n, cap;
};

nn_import_map *nn_imp_map_new(void)
{
    return calloc(1, sizeof(nn_import_map));
}

void nn_import_map_free(nn_import_map *mp)
{
    if (!mp)
        return;
    for (size_t i = 0; i < mp->n; i++)
        free((char *)mp->e[i].p.name);
    free(mp->e);
    free(mp);
}

size_t nn_import_map_count(const nn_import_map *mp)
{
    return mp ? mp->n : 0;
}

const nn_import_param *nn_import_map_get(const nn_import_map *mp, size_t k)
{
    return mp && k < mp->n ? &mp->e[k].p : NULL;
}

/* A new entry for tensor t (zeroed apart from the public part's shape and name);
 * NULL when out of memory, with the error set. */
static entry *push(imp *I, const onnx_tensor *t, int node, int buffer, size_t offset,
                   size_t count, mkind kind)
{
    nn_import_map *mp = I->map;
    char *name = malloc(strlen(t->name) + 1);
    if (name && mp->n == mp->cap) {
        size_t cap = mp->cap ? 2 * mp->cap : 64;
        entry *ne = realloc(mp->e, cap * sizeof *ne);
        if (ne) {
            mp->e = ne;
            mp->cap = cap;
        }
    }
    if (!name || mp->n == mp->cap) {
        free(name);
        err_set(I->e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        return NULL;
    }
    strcpy(name, t->name);
    entry *en = &mp->e[mp->n++];
    memset(en, 0, sizeof *en);
    en->p.name = name;
    en->p.node = node;
    en->p.buffer = buffer;
    en->p.offset = offset;
    en->p.count = count;
    /* The fills accept only tensors of rank 4 (conv), 2 (dense) or of a layer's
     * channel count, which a 1-D tensor is; a higher rank keeps its first four. */
    en->p.rank = t->rank < 4 ? t->rank : 4;
    for (int d = 0; d < en->p.rank; d++)
        en->p.dims[d] = t->dims[d];
    en->p.file_count = t->count;
    en->kind = kind;
    en->scale = 1.0f;
    return en;
}

int nn_imp_map_add(imp *I, const fill *f)
{
    if (!I->map || f->kind == F_QCONV || (f->kind == F_DENSE && f->quant))
        return PT_OK; /* integers in the file: no float tensor to go back to */
    const onnx_node *n = f->src;
    nn_node_info ni = nn_imp_info(I, f->node);
    size_t at = ni.param_offset;
    entry *en;
    switch (f->kind) {
    case F_CONV: {
        const onnx_tensor *w = nn_imp_const(I, n, 1);
        if (!(en = push(I, w, f->node, 0, at, ni.weight_count, M_CONV)))
            return PT_ENOMEM;
        en->cout = w->dims[0];
        en->cg = w->dims[1];
        en->kh = w->dims[2];
        en->kw = w->dims[3];
        en->rev_cin = f->rev_cin;
        if (ni.bias_count &&
            !push(I, nn_imp_const(I, n, 2), f->node, 0, at + ni.weight_count, ni.bias_count, M_COPY))
            return PT_ENOMEM;
        return PT_OK;
    }
    case F_BN: {
        /* scale, B into the parameters; mean, var into the buffers */
        const size_t c = (size_t)ni.c, buf = ni.buffer_offset;
        const size_t where[4] = { at, at + c, buf, buf + c };
        for (size_t k = 0; k < 4; k++)
            if (!push(I, nn_imp_const(I, n, k + 1), f->node, k >= 2, where[k], c, M_COPY))
                return PT_ENOMEM;
        return PT_OK;
    }
    case F_DENSE: {
        const onnx_tensor *b = nn_imp_const(I, n, 1);
        if (!(en = push(I, b, f->node, 0, at, ni.weight_count, M_DENSE)))
            return PT_ENOMEM;
        en->scale = f->alpha;
        en->cout = ni.c;
        en->cin = (int64_t)ni.weight_count / ni.c;
        en->trans_b = f->trans_b;
        en->flat_h = f->flat_h;
        en->flat_w = f->flat_w;
        en->flat_c = f->flat_c;
        if (!f->bias_src || !strcmp(f->bias_src->op_type, "QLinearAdd"))
            return PT_OK;
        const onnx_tensor *c = nn_imp_const(I, f->bias_src, (size_t)f->bias_slot);
        if (!(en = push(I, c, f->node, 0, at + ni.weight_count, ni.bias_count, M_COPY)))
            return PT_ENOMEM;
        en->scale = nn_imp_bias_scale(f);
        return PT_OK;
    }
    case F_QCONV:
        break;
    }
    return PT_OK;
}

/* The file row of library row r of a dense layer (see nn_imp_fill_dense). */
static int64_t dense_src_row(const entry *en, int64_t r)
{
    if (!en->flat_c)
        return r;
    int64_t ch = r % en->flat_c, px = r / en->flat_c;
    return ch * en->flat_h * en->flat_w + px;
}

int nn_import_map_to_onnx(const nn_import_map *mp, size_t k, const float *lib,
                          nn_map_what what, float *out, pt_err *e)
{
    if (!mp || k >= mp->n)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "nn_import_map: no entry %zu", k);
    const entry *en = &mp->e[k];
    /* library = scale * file, so values divide by it and gradients (d loss / d file
     * = scale * d loss / d library) multiply by it. */
    if (what == NN_MAP_VALUES && en->scale == 0.0f)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "nn_import_map: '%s' was scaled by 0 at import; its values are lost",
                       en->p.name);
    const double f = what == NN_MAP_GRADS ? (double)en->scale : 1.0 / (double)en->scale;
    const float *L = lib + en->p.offset;
    switch (en->kind) {
    case M_COPY:
        if (en->p.file_count == 1 && en->p.count > 1) {
            /* One value broadcast over the channels: its gradient is their sum; its
             * value is any of them (all equal). */
            double s = 0.0;
            for (size_t i = 0; i < en->p.count; i++)
                s += L[i];
            out[0] = (float)(what == NN_MAP_GRADS ? s * f : L[0] * f);
            break;
        }
        for (size_t i = 0; i < en->p.count; i++)
            out[i] = (float)(L[i] * f);
        break;
    case M_CONV:
        for (int64_t co = 0; co < en->cout; co++)
            for (int64_t ci = 0; ci < en->cg; ci++)
                for (int64_t y = 0; y < en->kh; y++)
                    for (int64_t x = 0; x < en->kw; x++)
                        out[((co * en->cg + ci) * en->kh + y) * en->kw + x] =
                            L[((y * en->kw + x) * en->cg + (en->rev_cin ? en->cg - 1 - ci : ci)) *
                                  en->cout + co];
        break;
    case M_DENSE:
        for (int64_t r = 0; r < en->cin; r++) {
            const int64_t sr = dense_src_row(en, r);
            for (int64_t co = 0; co < en->cout; co++)
                out[en->trans_b ? co * en->cin + sr : sr * en->cout + co] =
                    (float)(L[r * en->cout + co] * f);
        }
        break;
    }
    return PT_OK;
}
