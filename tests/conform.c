/* conform — an imported ONNX graph checked against PyTorch's logits, loss and
 * gradients (see conform.h). */
#include "tests/conform.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/le.h"
#include "base/util.h"
#include "io/onnx.h"
#include "nn/nn.h"
#include "nn/nn_import.h"

static const char MAGIC[8] = { 'P', 'T', 'R', 'E', 'F', '1', '\n', '\0' };

/* Limits against a damaged file: tensors, name length, floats in all. */
#define CF_MAX_TENSORS 100000u
#define CF_MAX_NAME 4096u

/* ---- PTREF1 files ---- */

/* The cursor over a file's bytes: each take checks there are that many left. */
typedef struct rd {
    const uint8_t *p;
    size_t len, at;
} rd;

static int take_u32(rd *r, uint32_t *v)
{
    if (r->len - r->at < 4)
        return 0;
    *v = le_get_u32(r->p + r->at);
    r->at += 4;
    return 1;
}

static int take(rd *r, size_t n, const uint8_t **p)
{
    if (r->len - r->at < n)
        return 0;
    *p = r->p + r->at;
    r->at += n;
    return 1;
}

/* One tensor's header, its name and data left in the buffer; 0 when the file ends
 * or a field is beyond the limits. */
static int take_header(rd *r, const uint8_t **name, uint32_t *name_len, cf_tensor *t,
                       const uint8_t **data)
{
    uint32_t rank;
    if (!take_u32(r, name_len) || *name_len > CF_MAX_NAME || !take(r, *name_len, name) ||
        !take_u32(r, &rank) || rank > CF_MAX_RANK)
        return 0;
    t->rank = (int)rank;
    t->count = 1;
    for (uint32_t d = 0; d < rank; d++) {
        if (!take_u32(r, &t->dims[d]))
            return 0;
        /* Each dim below the bytes left, so the product cannot wrap before the
         * bytes check below fails. */
        if (t->dims[d] && t->count > (r->len - r->at) / t->dims[d])
            return 0;
        t->count *= t->dims[d];
    }
    return t->count <= (r->len - r->at) / 4 && take(r, t->count * 4, data);
}

int cf_ref_load(const char *path, cf_ref **out, pt_err *e)
{
    *out = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = util_read_file(path, &buf, &len, e);
    if (rc)
        return rc;
    rd r = { buf, len, 0 };
    const uint8_t *magic;
    uint32_t n = 0;
    if (!take(&r, sizeof MAGIC, &magic) || memcmp(magic, MAGIC, sizeof MAGIC) != 0 ||
        !take_u32(&r, &n) || n > CF_MAX_TENSORS) {
        free(buf);
        return err_set(e, PT_EFORMAT, path, PT_NO_RECORD, 0, "not a PTREF1 file");
    }
    /* First pass: check every header and size the two blocks. */
    size_t names = 0, floats = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *name, *data;
        uint32_t nl;
        cf_tensor t;
        size_t at = r.at;
        if (!take_header(&r, &name, &nl, &t, &data)) {
            free(buf);
            return err_set(e, PT_EFORMAT, path, i, (long long)at,
                           "tensor %u is cut or beyond the limits", i);
        }
        names += nl + 1;
        floats += t.count;
    }
    cf_ref *ref = calloc(1, sizeof *ref);
    if (ref) {
        ref->t = calloc(n ? n : 1, sizeof *ref->t);
        ref->names = malloc(names ? names : 1);
        ref->values = malloc((floats ? floats : 1) * sizeof *ref->values);
    }
    if (!ref || !ref->t || !ref->names || !ref->values) {
        free(buf);
        cf_ref_free(ref);
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    /* Second pass: copy. */
    r.at = sizeof MAGIC + 4;
    char *np = ref->names;
    float *vp = ref->values;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *name, *data;
        uint32_t nl;
        cf_tensor *t = &ref->t[i];
        take_header(&r, &name, &nl, t, &data);
        memcpy(np, name, nl);
        np[nl] = '\0';
        t->name = np;
        np += nl + 1;
        t->data = vp;
        for (size_t k = 0; k < t->count; k++) {
            uint32_t u = le_get_u32(data + 4 * k);
            memcpy(&vp[k], &u, sizeof u);
        }
        vp += t->count;
    }
    ref->n = n;
    free(buf);
    *out = ref;
    return PT_OK;
}

const cf_tensor *cf_ref_find(const cf_ref *r, const char *name)
{
    for (size_t i = 0; r && i < r->n; i++)
        if (!strcmp(r->t[i].name, name))
            return &r->t[i];
    return NULL;
}

void cf_ref_free(cf_ref *r)
{
    if (!r)
        return;
    free(r->t);
    free(r->names);
    free(r->values);
    free(r);
}

int cf_ref_write(const char *path, const cf_tensor *t, size_t n, pt_err *e)
{
    size_t len = sizeof MAGIC + 4;
    for (size_t i = 0; i < n; i++)
        len += 8 + strlen(t[i].name) + 4 * (size_t)t[i].rank + 4 * t[i].count;
    uint8_t *buf = malloc(len), *p = buf;
    if (!buf)
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    memcpy(p, MAGIC, sizeof MAGIC);
    p += sizeof MAGIC;
    le_put_u32(p, (uint32_t)n);
    p += 4;
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(t[i].name);
        le_put_u32(p, (uint32_t)nl);
        memcpy(p + 4, t[i].name, nl);
        p += 4 + nl;
        le_put_u32(p, (uint32_t)t[i].rank);
        p += 4;
        for (int d = 0; d < t[i].rank; d++, p += 4)
            le_put_u32(p, t[i].dims[d]);
        for (size_t k = 0; k < t[i].count; k++, p += 4) {
            uint32_t u;
            memcpy(&u, &t[i].data[k], sizeof u);
            le_put_u32(p, u);
        }
    }
    int rc = util_write_file_atomic(path, buf, len, e);
    free(buf);
    return rc;
}

/* ---- the input ---- */

static uint32_t fmix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

void cf_input(int n, int hw, float *x)
{
    const size_t len = (size_t)n * hw * hw * 3;
    for (size_t k = 0; k < len; k++)
        x[k] = (float)((int)(fmix32((uint32_t)k + 1u) >> 20) - 2048) / 1024.0f;
}

/* ---- comparisons ---- */

/* max |a - b| / max |b| over n values. */
static double logits_err(const float *a, const float *b, size_t n)
{
    double d = 0.0, s = 0.0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        s = fmax(s, fabs((double)b[i]));
    }
    return s > 0.0 ? d / s : d;
}

static double sq_norm(const float *a, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * a[i];
    return s;
}

static int want(const cf_ref *ref, const char *path, const char *name, size_t count,
                const cf_tensor **t, pt_err *e)
{
    *t = cf_ref_find(ref, name);
    if (!*t)
        return err_set(e, PT_EFORMAT, path, PT_NO_RECORD, PT_NO_OFFSET, "no tensor '%s'", name);
    if (count && (*t)->count != count)
        return err_set(e, PT_EFORMAT, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "tensor '%s' has %zu values; %zu expected", name, (*t)->count, count);
    return PT_OK;
}

/* The gradient of each distinct initializer the map names, in the file's layout:
 * one tensor per name, the entries of a shared one summed. p[i] is the map's first
 * entry of that name (name and shape, owned by the map), g[i] the gradient (owned
 * here: named_free). */
typedef struct named_grads {
    size_t n;
    const nn_import_param **p;
    float **g;
} named_grads;

static void named_free(named_grads *ng)
{
    for (size_t i = 0; i < ng->n; i++)
        free(ng->g[i]);
    free(ng->p);
    free(ng->g);
    memset(ng, 0, sizeof *ng);
}

static int named_of(const nn_import_map *mp, const float *grads, named_grads *ng, pt_err *e)
{
    const size_t count = nn_import_map_count(mp);
    memset(ng, 0, sizeof *ng);
    ng->p = calloc(count ? count : 1, sizeof *ng->p);
    ng->g = calloc(count ? count : 1, sizeof *ng->g);
    float *tmp = NULL;
    int rc = PT_OK;
    if (!ng->p || !ng->g)
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    for (size_t k = 0; k < count && rc == PT_OK; k++) {
        const nn_import_param *p = nn_import_map_get(mp, k);
        if (p->buffer)
            continue;
        size_t i = 0;
        while (i < ng->n && strcmp(ng->p[i]->name, p->name) != 0)
            i++;
        if (i == ng->n) {
            ng->p[i] = p;
            ng->g[i] = calloc((size_t)p->file_count ? (size_t)p->file_count : 1, sizeof(float));
            ng->n++;
            if (!ng->g[i]) {
                rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
                break;
            }
        } else if (ng->p[i]->file_count != p->file_count) {
            rc = err_set(e, PT_EFORMAT, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "'%s' is read with two sizes", p->name);
            break;
        }
        free(tmp);
        tmp = malloc(((size_t)p->file_count ? (size_t)p->file_count : 1) * sizeof *tmp);
        if (!tmp) {
            rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
            break;
        }
        if ((rc = nn_import_map_to_onnx(mp, k, grads, NN_MAP_GRADS, tmp, e)) != PT_OK)
            break;
        for (int64_t j = 0; j < p->file_count; j++)
            ng->g[i][j] += tmp[j];
    }
    free(tmp);
    if (rc)
        named_free(ng);
    return rc;
}

/* Every gradient of the reference against the model's, both ways round. */
static int compare_grads(const cf_ref *ref, const char *ref_path, const named_grads *ng,
                         const cf_opts *o, cf_result *r, pt_err *e)
{
    double all = 0.0;
    for (size_t i = 0; i < ref->n; i++)
        if (!strncmp(ref->t[i].name, "grad/", 5))
            all += sq_norm(ref->t[i].data, ref->t[i].count);
    for (size_t i = 0; i < ref->n; i++) {
        const cf_tensor *t = &ref->t[i];
        if (strncmp(t->name, "grad/", 5) != 0)
            continue;
        size_t j = 0;
        while (j < ng->n && strcmp(ng->p[j]->name, t->name + 5) != 0)
            j++;
        if (j == ng->n)
            return err_set(e, PT_EFORMAT, ref_path, PT_NO_RECORD, PT_NO_OFFSET,
                           "PyTorch has a gradient for '%s', which no parameter came from",
                           t->name + 5);
    }
    for (size_t j = 0; j < ng->n; j++) {
        char name[CF_MAX_NAME + 8]; /* a longer name is in no reference file */
        const cf_tensor *t;
        snprintf(name, sizeof name, "grad/%s", ng->p[j]->name);
        int rc = want(ref, ref_path, name, (size_t)ng->p[j]->file_count, &t, e);
        if (rc)
            return rc;
        double d = 0.0;
        for (size_t k = 0; k < t->count; k++) {
            double x = (double)ng->g[j][k] - t->data[k];
            d += x * x;
        }
        const double norm = sqrt(sq_norm(t->data, t->count));
        const double err = norm > 0.0 ? sqrt(d) / norm : (d > 0.0 ? INFINITY : 0.0);
        snprintf(name, sizeof name, "spread/%s", ng->p[j]->name);
        const cf_tensor *st = cf_ref_find(ref, name);
        const double spread = st && st->count == 1 ? st->data[0] : -1.0;
        const double score = err / fmax(CF_TOL_GRAD, CF_SPREAD_FACTOR * spread);
        if (score > r->grad_score || r->tensors == 0) {
            r->grad_score = score;
            util_copy(r->grad_score_name, sizeof r->grad_score_name, ng->p[j]->name);
        }
        if (spread > CF_UNDETERMINED) {
            r->undetermined++;
        } else {
            r->beyond += err > CF_TOL_GRAD;
            if (err > r->grad_err || !r->grad_worst[0]) {
                r->grad_err = err;
                util_copy(r->grad_worst, sizeof r->grad_worst, ng->p[j]->name);
            }
        }
        r->tensors++;
        if (o && o->each)
            o->each(o->ctx, ng->p[j]->name, err, all > 0.0 ? norm / sqrt(all) : 0.0, spread);
    }
    return PT_OK;
}

/* petal-tui's side as a reference file. */
static int dump(const char *path, const cf_result *r, float *labels, float *logits,
                float *train_logits, double petal_loss, const named_grads *ng, pt_err *e)
{
    size_t bytes = 1;
    for (size_t j = 0; j < ng->n; j++)
        bytes += strlen(ng->p[j]->name) + 6;
    cf_tensor *t = calloc(ng->n + 5, sizeof *t);
    char *names = malloc(bytes), *at = names;
    if (!t || !names) {
        free(t);
        free(names);
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    float setup[4] = { (float)r->n, (float)r->hw, (float)r->hw, (float)r->classes };
    float loss = (float)petal_loss;
    const uint32_t n = (uint32_t)r->n, k = (uint32_t)r->classes;
    t[0] = (cf_tensor){ "setup", 1, { 4 }, 4, setup };
    t[1] = (cf_tensor){ "labels", 1, { n }, n, labels };
    t[2] = (cf_tensor){ "logits", 2, { n, k }, (size_t)n * k, logits };
    t[3] = (cf_tensor){ "train_logits", 2, { n, k }, (size_t)n * k, train_logits };
    t[4] = (cf_tensor){ "loss", 1, { 1 }, 1, &loss };
    for (size_t j = 0; j < ng->n; j++) {
        const nn_import_param *p = ng->p[j];
        cf_tensor *d = &t[5 + j];
        d->name = at;
        at += sprintf(at, "grad/%s", p->name) + 1;
        d->rank = p->rank;
        for (int a = 0; a < p->rank; a++)
            d->dims[a] = (uint32_t)p->dims[a];
        d->count = (size_t)p->file_count;
        d->data = ng->g[j];
    }
    int rc = cf_ref_write(path, t, ng->n + 5, e);
    free(t);
    free(names);
    return rc;
}

/* ---- the check ---- */

int cf_check(const char *onnx_path, const char *ref_path, const cf_opts *o, cf_result *r,
             pt_err *e)
{
    memset(r, 0, sizeof *r);
    cf_ref *ref = NULL;
    nn_model *m = NULL;
    nn_import_map *mp = NULL;
    nn_ctx *c = NULL;
    float *x = NULL, *logits = NULL, *train = NULL, *dl = NULL;
    int32_t *labels = NULL;
    named_grads ng = { 0 };
    const cf_tensor *setup, *lab, *want_logits, *want_train, *want_loss;
    int rc = cf_ref_load(ref_path, &ref, e);
    if (rc || (rc = want(ref, ref_path, "setup", 4, &setup, e)))
        goto out;
    r->n = (int)setup->data[0];
    r->hw = (int)setup->data[1];
    r->classes = (int)setup->data[3];
    if (r->n < 1 || r->n > 1024 || r->hw < 1 || r->hw > 4096 || setup->data[2] != setup->data[1] ||
        r->classes < 1) {
        rc = err_set(e, PT_EFORMAT, ref_path, PT_NO_RECORD, PT_NO_OFFSET, "a setup of %g %g %g %g",
                     (double)setup->data[0], (double)setup->data[1], (double)setup->data[2],
                     (double)setup->data[3]);
        goto out;
    }
    const size_t nk = (size_t)r->n * (size_t)r->classes;
    if ((rc = want(ref, ref_path, "labels", (size_t)r->n, &lab, e)) ||
        (rc = want(ref, ref_path, "logits", nk, &want_logits, e)) ||
        (rc = want(ref, ref_path, "train_logits", nk, &want_train, e)) ||
        (rc = want(ref, ref_path, "loss", 1, &want_loss, e)))
        goto out;

    double t0 = util_now();
    onnx_model *om = NULL;
    if ((rc = onnx_load(onnx_path, &om, e)) != PT_OK)
        goto out;
    nn_import_opts io = { .h = r->hw, .w = r->hw, .n_classes = 0, .norm = NN_NORM_UNIT, .seed = 1 };
    if (o && o->input_norm > 0 && o->input_norm <= NN_NORM_COUNT)
        io.norm = (nn_norm)(o->input_norm - 1);
    nn_import_info info;
    m = nn_import_onnx_map(om, &io, &info, &mp, e);
    onnx_free(om);
    r->import_s = util_now() - t0;
    if (!m) {
        rc = e->code;
        goto out;
    }
    if (nn_model_classes(m) != r->classes) {
        rc = err_set(e, PT_EFORMAT, onnx_path, PT_NO_RECORD, PT_NO_OFFSET,
                     "%d classes; the reference has %d", nn_model_classes(m), r->classes);
        goto out;
    }
    /* Every parameter must come from the file: the map's entries cover them all. */
    r->params = nn_param_count(m);
    size_t covered = 0;
    for (size_t k = 0; k < nn_import_map_count(mp); k++)
        if (!nn_import_map_get(mp, k)->buffer)
            covered += nn_import_map_get(mp, k)->count;
    if (covered != r->params) {
        rc = err_set(e, PT_EFORMAT, onnx_path, PT_NO_RECORD, PT_NO_OFFSET,
                     "%zu of %zu parameters come from the file", covered, r->params);
        goto out;
    }

    const size_t in_len = (size_t)r->n * r->hw * r->hw * 3;
    x = malloc(in_len * sizeof *x);
    logits = malloc(nk * sizeof *logits);
    train = malloc(nk * sizeof *train);
    dl = malloc(nk * sizeof *dl);
    labels = malloc((size_t)r->n * sizeof *labels);
    if (!x || !logits || !train || !dl || !labels || !(c = nn_ctx_new(m, r->n, e))) {
        rc = c ? err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory") : e->code;
        goto out;
    }
    cf_input(r->n, r->hw, x);
    for (int i = 0; i < r->n; i++)
        labels[i] = (int32_t)lab->data[i];

    t0 = util_now();
    const float *y = nn_forward(c, x, r->n, 0, 0, 0);
    memcpy(logits, y, nk * sizeof *logits);
    r->logits_err = logits_err(logits, want_logits->data, nk);
    /* The training step, as core/pool/rpool.c takes it for one replica holding
     * the whole update: the summed loss, dlogits scaled by 1 / N. */
    y = nn_forward(c, x, r->n, 1, 0, 0);
    memcpy(train, y, nk * sizeof *train);
    r->train_logits_err = logits_err(train, want_train->data, nk);
    double loss = 0.0;
    if ((rc = nn_softmax_ce(train, r->n, r->classes, labels, NULL, NULL, 1.0f / (float)r->n, &loss,
                            dl, NULL, e)) != PT_OK)
        goto out;
    r->loss = want_loss->data[0];
    r->loss_err = fabs(loss - r->loss) / fmax(fabs(r->loss), 1e-30);
    nn_zero_grads(c);
    if ((rc = nn_backward(c, dl)) != PT_OK) {
        rc = err_set(e, rc, onnx_path, PT_NO_RECORD, PT_NO_OFFSET, "backward failed");
        goto out;
    }
    r->step_s = util_now() - t0;
    if ((rc = named_of(mp, nn_grads(c), &ng, e)) ||
        (rc = compare_grads(ref, ref_path, &ng, o, r, e)))
        goto out;
    if (o && o->dump_path)
        rc = dump(o->dump_path, r, lab->data, logits, train, loss, &ng, e);
out:
    named_free(&ng);
    nn_ctx_free(c);
    nn_import_map_free(mp);
    nn_model_free(m);
    cf_ref_free(ref);
    free(x);
    free(logits);
    free(train);
    free(dl);
    free(labels);
    return rc;
}

int cf_pass(const cf_result *r)
{
    return r->logits_err <= CF_TOL_LOGITS && r->train_logits_err <= CF_TOL_LOGITS &&
           r->loss_err <= CF_TOL_LOSS && r->grad_score <= 1.0 && r->tensors > 0;
}
