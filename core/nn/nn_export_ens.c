/* nn_export_ens — several models' graphs side by side in one ONNX file, their weighted
 * mean probability its answer (an ensemble: nn_export.h's nn_export_ensemble_onnx).
 *
 * Each member is a branch reading the one input: resized to its side when that is not
 * the input's (Resize, linear, half-pixel centres), its test-time views (five crops by
 * Slice + Resize back to its side; mirror images by a Slice of step -1 on the width
 * axis), stacked on the batch axis (Concat) so that its net, written by the same
 * writer as `petal-tui export` with names prefixed "m<i>.", runs once on all of them;
 * then Softmax, the mean over the views (Reshape [V, N, C], ReduceMean), its classes
 * put in the ensemble's order (Gather) and its weight (Mul). The branches' Sum is
 * `probabilities`; `logits` is its Log.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/le.h"
#include "base/util.h"
#include "nn/nn_export_impl.h"
#include "nn/nn_layer.h"

#ifndef PT_VERSION
#define PT_VERSION "dev"
#endif

/* A float32 initializer of one value, [1], named name. */
static const char *const_f32(W *w, const char *name, float v)
{
    const int64_t dims[1] = { 1 };
    Pt__Onnx__TensorProto *t = nn_exw_tensor(w, name, 1, dims);
    uint8_t *raw = nn_exw_alloc(w, 4);
    if (!t || !raw)
        return NULL;
    uint32_t u;
    memcpy(&u, &v, 4);
    le_put_u32(raw, u);
    t->data_type = 1; /* FLOAT */
    t->has_raw_data = 1;
    t->raw_data.len = 4;
    t->raw_data.data = raw;
    return name;
}

/* One node of op with n_in inputs into out (named "<prefix><what>"); out's name. */
static const char *op(W *w, const char *prefix, const char *opname, int n_in,
                      const char *const *in, const char *what)
{
    const char *out = nn_exw_str(w, "%s%s", prefix, what);
    return nn_onnx_op(w, opname, n_in, in, out) == PT_OK ? out : NULL;
}

/* x resized to sizes (an int64 [4] value) by Resize, linear with half-pixel centres:
 * what img_resize does when it enlarges. */
static const char *resize(W *w, const char *prefix, const char *x, const char *sizes,
                          const char *what)
{
    const char *in[4] = { x, "", "", sizes };
    const char *out = op(w, prefix, "Resize", 4, in, what);
    nn_exw_attr_str(w, "mode", "linear");
    nn_exw_attr_str(w, "coordinate_transformation_mode", "half_pixel");
    return out;
}

/* Slice of x on the given axes (n of them). */
static const char *slice(W *w, const char *prefix, const char *x, int n, const int64_t *starts,
                         const int64_t *ends, const int64_t *axes, const int64_t *steps,
                         const char *what)
{
    const char *in[5] = {
        x,
        nn_exw_i64(w, nn_exw_str(w, "%s%s.starts", prefix, what), n, starts),
        nn_exw_i64(w, nn_exw_str(w, "%s%s.ends", prefix, what), n, ends),
        nn_exw_i64(w, nn_exw_str(w, "%s%s.axes", prefix, what), n, axes),
        nn_exw_i64(w, nn_exw_str(w, "%s%s.steps", prefix, what), n, steps),
    };
    return op(w, prefix, "Slice", 5, in, what);
}

/* The views member mb's net sees of its input x (its side S): into v, their count. */
static int views(W *w, const char *prefix, const nn_export_member *mb, const char *x,
                 const char *sizes, const char **v)
{
    const int64_t S = mb->m->h, c = mb->crop, far = S - c;
    int n = 0;
    if (mb->crops) {
        const int64_t at[5][2] = { { far / 2, far / 2 }, { 0, 0 }, { far, 0 }, { 0, far },
                                   { far, far } };
        for (int k = 0; k < 5; k++) {
            const int64_t st[2] = { at[k][0], at[k][1] }, en[2] = { at[k][0] + c, at[k][1] + c };
            const int64_t ax[2] = { 2, 3 }, one[2] = { 1, 1 };
            const char *cut = slice(w, prefix, x, 2, st, en, ax, one,
                                    nn_exw_str(w, "crop%d", k));
            v[n++] = resize(w, prefix, cut, sizes, nn_exw_str(w, "crop%d.resized", k));
        }
    } else {
        v[n++] = x;
    }
    for (int k = 0, base = n; mb->flip && k < base; k++) {
        /* The width axis backwards: from its last column past its first. */
        const int64_t st[1] = { -1 }, en[1] = { -9223372036854775807LL }, ax[1] = { 3 },
                      step[1] = { -1 };
        v[n++] = slice(w, prefix, v[k], 1, st, en, ax, step, nn_exw_str(w, "mirror%d", k));
    }
    return n;
}

/* Member i's branch: its weighted probabilities [N, k] in the ensemble's class order. */
static const char *branch(W *w, int i, const nn_export_member *mb, int S, int k)
{
    const char *prefix = nn_exw_str(w, "m%d.", i);
    const int s = mb->m->h;
    if (!prefix)
        return NULL;
    /* [N, 3, s, s]: the input's N and channels, the member's side. */
    const char *shape_in[1] = { "image" };
    const char *shape = op(w, prefix, "Shape", 1, shape_in, "shape");
    const int64_t z[1] = { 0 }, two[1] = { 2 }, side[2] = { s, s };
    const int64_t ax0[1] = { 0 }, one[1] = { 1 };
    const char *nc = slice(w, prefix, shape, 1, z, two, ax0, one, "nc");
    const char *cat_in[2] = { nc, nn_exw_i64(w, nn_exw_str(w, "%sside", prefix), 2, side) };
    const char *sizes = op(w, prefix, "Concat", 2, cat_in, "sizes");
    nn_onnx_attr_int(w, "axis", 0);
    const char *x = s == S ? "image" : resize(w, prefix, "image", sizes, "resized");
    const char *v[10];
    int nv = views(w, prefix, mb, x, sizes, v);
    const char *in = v[0];
    if (nv > 1) {
        in = op(w, prefix, "Concat", nv, v, "views");
        nn_onnx_attr_int(w, "axis", 0);
    }
    if (w->err)
        return NULL;
    w->prefix = prefix;
    w->input = in;
    w->logits = nn_exw_str(w, "%slogits", prefix);
    int rc = nn_exw_graph(w, mb->m);
    w->prefix = w->input = w->logits = NULL;
    if (rc)
        return NULL;
    const char *lg[1] = { nn_exw_str(w, "%slogits", prefix) };
    const char *p = op(w, prefix, "Softmax", 1, lg, "probs");
    nn_onnx_attr_int(w, "axis", 1);
    if (nv > 1) {
        const int64_t vnc[3] = { nv, -1, nn_model_classes(mb->m) };
        const char *rs[2] = { p, nn_exw_i64(w, nn_exw_str(w, "%sviews.shape", prefix), 3,
                                            vnc) };
        const char *r[1] = { op(w, prefix, "Reshape", 2, rs, "probs.views") };
        p = op(w, prefix, "ReduceMean", 1, r, "probs.mean");
        nn_onnx_attr_ints(w, "axes", 1, ax0);
        nn_onnx_attr_int(w, "keepdims", 0);
    }
    if (mb->class_of) {
        int64_t idx[4096];
        for (int c = 0; c < k && c < 4096; c++)
            idx[mb->class_of[c]] = c;
        const char *iname = nn_exw_str(w, "%sclass_order", prefix);
        const char *g[2] = { p, nn_exw_i64(w, iname, k, idx) };
        p = op(w, prefix, "Gather", 2, g, "probs.classes");
        nn_onnx_attr_int(w, "axis", 1);
    }
    const char *mul[2] = { p, const_f32(w, nn_exw_str(w, "%sweight", prefix),
                                        (float)mb->weight) };
    return op(w, prefix, "Mul", 2, mul, "weighted");
}

/* metadata_props and the doc string of an ensemble. */
static int ens_meta(W *w, Pt__Onnx__ModelProto *mp, const nn_export_member *mem, int n,
                    const nn_export_ens *meta, int S)
{
    mp->metadata_props = nn_exw_alloc(w, 8 * sizeof *mp->metadata_props);
    json_w j;
    json_init(&j, 0);
    json_arr(&j);
    for (int c = 0; c < meta->k; c++) {
        char dflt[32];
        snprintf(dflt, sizeof dflt, "class %d", c);
        json_str(&j, meta->class_names && meta->class_names[c] ? meta->class_names[c] : dflt);
    }
    json_arr_end(&j);
    json_w jm;
    json_init(&jm, 0);
    json_arr(&jm);
    for (int i = 0; i < n; i++) {
        json_obj(&jm);
        json_key(&jm, "source");
        json_str(&jm, mem[i].source ? mem[i].source : "");
        json_key(&jm, "weight");
        json_num(&jm, mem[i].weight);
        json_key(&jm, "image_size");
        json_int(&jm, mem[i].m->h);
        json_key(&jm, "tta");
        json_str(&jm, mem[i].crops ? (mem[i].flip ? "flip+crops" : "crops")
                                   : mem[i].flip ? "flip" : "none");
        json_obj_end(&jm);
    }
    json_arr_end(&jm);
    size_t l1, l2;
    char *names = json_take(&j, &l1), *members = json_take(&jm, &l2);
    json_free(&j);
    json_free(&jm);
    if (!mp->metadata_props || !names || !members) {
        free(names);
        free(members);
        return nn_exw_oom(w);
    }
    nn_exw_prop(w, mp, "class_names", nn_exw_str(w, "%s", names));
    nn_exw_prop(w, mp, "image_size", nn_exw_str(w, "%d", S));
    nn_exw_prop(w, mp, "petal_tui_version", PT_VERSION);
    nn_exw_prop(w, mp, "ensemble", nn_exw_str(w, "%s", members));
    nn_exw_prop(w, mp, "input", NN_EXPORT_INPUT);
    free(names);
    free(members);
    mp->doc_string = nn_exw_str(w, "A petal-tui (%s) ensemble of %d image classifiers. Input "
                                "'image': float32 [N, 3, %d, %d], " NN_EXPORT_INPUT " to %d x "
                                "%d. Output 'probabilities' [N, %d]: the members' weighted "
                                "mean probability (metadata_props ensemble: each member's "
                                "weight, side and test-time views); 'logits': its log.",
                                PT_VERSION, n, S, S, S, S, meta->k);
    return w->err;
}

int nn_export_ensemble_onnx(const nn_export_member *mem, int n, const nn_export_ens *meta,
                            uint8_t **out, size_t *len, pt_err *e)
{
    *out = NULL;
    *len = 0;
    W w = { .e = e };
    int S = meta->image_size;
    for (int i = 0; i < n && S <= 0; i++)
        S = S > mem[i].m->h ? S : mem[i].m->h;
    if (n < 1 || n > NN_EXPORT_MAX_MEMBERS || meta->k < 1 || meta->k > 4096)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "cannot export an ensemble of %d members and %d classes", n, meta->k);
    for (int i = 0; i < n; i++)
        if (nn_model_classes(mem[i].m) != meta->k || mem[i].m->h != mem[i].m->w ||
            (mem[i].crops && (mem[i].crop < 1 || mem[i].crop > mem[i].m->h)))
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "cannot export member %d of the ensemble: %d classes (the "
                           "ensemble's %d), %dx%d input, crops of %d",
                           i + 1, nn_model_classes(mem[i].m), meta->k, mem[i].m->h,
                           mem[i].m->w, mem[i].crop);
    const char *sum[NN_EXPORT_MAX_MEMBERS];
    for (int i = 0; i < n && !w.err; i++)
        sum[i] = branch(&w, i, &mem[i], S, meta->k);
    if (!w.err) {
        nn_onnx_op(&w, "Sum", n, sum, "probabilities");
        const char *lg[1] = { "probabilities" };
        nn_onnx_op(&w, "Log", 1, lg, "logits");
    }
    Pt__Onnx__ModelProto *mp = w.err ? NULL : nn_exw_alloc(&w, sizeof *mp);
    if (mp) {
        pt__onnx__model_proto__init(mp);
        if (!ens_meta(&w, mp, mem, n, meta, S))
            nn_exw_pack(&w, mp, S, S, meta->k, out, len);
    }
    nn_exw_free(&w);
    return w.err;
}

int nn_export_ensemble_file(const nn_export_member *mem, int n, const nn_export_ens *meta,
                            const char *path, pt_err *e)
{
    uint8_t *buf;
    size_t len;
    int rc = nn_export_ensemble_onnx(mem, n, meta, &buf, &len, e);
    if (rc)
        return rc;
    rc = util_write_file_atomic(path, buf, len, e);
    free(buf);
    return rc;
}
