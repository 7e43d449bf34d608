/* ensemble — members opened, their split predictions mixed (see infer/ensemble.h);
 * ensemble.json written and read back in ensemble_json.c. */
#include "infer/ensemble.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "data/dataset.h"
#include "infer/ensemble_impl.h"
#include "run/runfolder.h"

const char *ens_tta_name(int tta)
{
    static const char *const names[4] = { "none", "flip", "crops", "flip+crops" };
    return tta >= 0 && tta < 4 ? names[tta] : "own";
}

int ens_tta_parse(const char *s)
{
    for (int t = 0; t < 4; t++)
        if (!strcmp(s, ens_tta_name(t)))
            return t;
    return -1;
}

const char *ens_how_name(ens_how h)
{
    static const char *const names[4] = { "equal", "given", "fit", "cv" };
    return h >= ENS_W_EQUAL && h <= ENS_W_CV ? names[h] : "equal";
}

void ens_close(ens *x)
{
    if (!x)
        return;
    for (int i = 0; i < x->n; i++) {
        inf_model_close(x->m[i]);
        free(x->path[i]);
    }
    enc_free(x->maps, x->n);
    for (int c = 0; x->names && c < x->k; c++)
        free(x->names[c]);
    free(x->names);
    free(x->notes);
    free(x);
}

int ens_set_weights(ens *x, const double *w, ens_how how, pt_err *e)
{
    double sum = 0;
    for (int i = 0; i < x->n; i++) {
        if (!(w[i] > 0) || !isfinite(w[i]))
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "%s: the weight %g of member %d (%s): weights are positive numbers",
                           x->name, w[i], i + 1, x->path[i]);
        sum += w[i];
    }
    for (int i = 0; i < x->n; i++)
        x->w[i] = w[i] / sum;
    x->how = how;
    return PT_OK;
}

/* Member i opened into x (its path kept, its TTA resolved). */
static int open_member(ens *x, int i, const char *path, int tta, pt_err *e)
{
    if (tta < ENS_TTA_OWN || tta > ENS_TTA_FLIP)
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "a test-time augmentation of none or flip");
    run_handle h;
    if (util_is_dir(path) && run_open(&h, path, 0, NULL) == PT_OK &&
        run_has(&h, RUN_F_ENSEMBLE) && !run_has(&h, RUN_F_CHECKPOINT))
        return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "is an ensemble folder (its %s), not a run: open it on its own, or "
                       "name its members", run_file_name(RUN_F_ENSEMBLE));
    x->path[i] = strdup(path);
    if (!x->path[i])
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    x->n = i + 1;
    int rc = inf_model_open(path, 0, RUN_NORM_AUTO, &x->m[i], e);
    if (rc != PT_OK)
        return rc;
    x->tta[i] = tta >= 0 ? tta : inf_model_tta_flip(x->m[i]) ? ENS_TTA_FLIP : ENS_TTA_NONE;
    return PT_OK;
}

int ens_open(const char *const *paths, int n, const double *weights, const int *tta,
             ens **out, pt_err *e)
{
    *out = NULL;
    if (n < 1 || n > ENS_MAX)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "an ensemble of 1 to %d members, not %d", ENS_MAX, n);
    ens *x = calloc(1, sizeof *x);
    if (!x)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int rc = PT_OK;
    for (int i = 0; rc == PT_OK && i < n; i++)
        rc = open_member(x, i, paths[i], tta ? tta[i] : ENS_TTA_OWN, e);
    for (int i = 0; rc == PT_OK && i < n; i++) {
        x->w[i] = 1.0 / n;
        int s = inf_model_image_size(x->m[i]);
        x->size = s > x->size ? s : x->size;
    }
    if (rc == PT_OK && weights)
        rc = ens_set_weights(x, weights, ENS_W_GIVEN, e);
    if (rc != PT_OK) {
        ens_close(x);
        return rc;
    }
    if (n == 1)
        util_copy(x->name, sizeof x->name, paths[0]);
    else
        util_fmt(x->name, sizeof x->name, "an ensemble of %d members", n);
    x->k = inf_model_classes(x->m[0]);
    *out = x;
    return PT_OK;
}

int ens_members(const ens *x)
{
    return x->n;
}

int ens_image_size(const ens *x)
{
    return x->size;
}

const char *ens_name(const ens *x)
{
    return x->name;
}

const char *ens_member_path(const ens *x, int i)
{
    return x->path[i];
}

const rm_model *ens_member_model(const ens *x, int i)
{
    return x->m[i];
}

double ens_member_weight(const ens *x, int i)
{
    return x->w[i];
}

int ens_member_tta(const ens *x, int i)
{
    return x->tta[i];
}

ens_how ens_weights_how(const ens *x)
{
    return x->how;
}

const char *ens_notes(const ens *x)
{
    return x->notes ? x->notes : "";
}

int ens_classes(const ens *x)
{
    return x->k;
}

char *const *ens_class_names(const ens *x)
{
    return x->names ? x->names : x->matched ? NULL : inf_model_class_names(x->m[0]);
}

/* The reference's names kept (ens_class_names): the dataset's, else the first member's
 * that names its classes, else none. */
static int keep_names(ens *x, const ds_dataset *ds, pt_err *e)
{
    char *const *from = NULL;
    if (ds->names_source == DS_NAMES_FILE && ds->n_classes == x->k)
        from = ds->class_names;
    for (int i = 0; !from && i < x->n; i++) {
        char *const *v = inf_model_class_names(x->m[i]);
        char first[32];
        util_fmt(first, sizeof first, "class %d", 0);
        if (v && x->k > 0 && strcmp(v[0], first) != 0)
            from = v;
    }
    if (!from)
        return PT_OK;
    x->names = calloc((size_t)x->k, sizeof *x->names);
    for (int c = 0; x->names && c < x->k; c++)
        if (!(x->names[c] = strdup(from[c])))
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    return x->names ? PT_OK
                    : err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
}

int ens_match(ens *x, const ds_dataset *ds, const char *data_path, pt_err *e)
{
    enc_free(x->maps, x->n);
    int rc = enc_match(x->m, x->n, ds, data_path, x->maps, &x->notes, e);
    if (rc != PT_OK)
        return rc;
    x->matched = 1;
    return keep_names(x, ds, e);
}

static long long count_code(const prd_results *r, int code)
{
    long long n = 0;
    for (long long i = 0; i < r->n_errors; i++)
        n += r->errors[i].code == code;
    return n;
}

/* Member i's probabilities for split s, in the dataset's class order, into r. */
static int member_split(ens *x, int i, const ds_split *s, int labeled, const ens_opts *o,
                        prd_results *r, pt_err *e)
{
    const rm_model *m = x->m[i];
    prd_opts po = { .batch = o->batch, .replicas = o->replicas, .workers = o->workers,
                    .bf16 = o->bf16 < 0 ? inf_model_bf16(m) : o->bf16,
                    .tta_flip = (x->tta[i] & ENS_TTA_FLIP) != 0,
                    .on_batch = o->on_batch, .ctx = o->ctx, .stop = o->stop };
    if (o->on_member)
        o->on_member(o->ctx, i, x->path[i]);
    prd *p;
    pt_err pe;
    int rc = prd_new(m, &po, &p, &pe);
    if (rc == PT_OK)
        rc = prd_split(p, s, labeled, r, &pe);
    prd_free(p);
    if (o->on_member_end)
        o->on_member_end(o->ctx, i);
    if (rc != PT_OK)
        return err_set(e, rc, NULL, PT_NO_RECORD, PT_NO_OFFSET, "%s: %s", x->path[i], pe.msg);
    rc = PT_OK;
    if (r->stopped)
        rc = err_set(e, PT_ESTOPPED, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                     "%s: stopped after %lld of %lld images", x->path[i], r->n, r->planned);
    for (long long j = 0; rc == PT_OK && j < r->n_errors; j++)
        if (r->errors[j].code == PT_ECLASS)
            /* Scores on the records that remain would be no answer for this dataset. */
            rc = err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "%s: the dataset has classes beyond the members' %d (%lld such "
                         "records): give --data the dataset the runs were trained on",
                         r->errors[j].msg, r->k, count_code(r, PT_ECLASS));
    for (long long j = 0; rc == PT_OK && o->on_skip && j < r->n_errors; j++)
        o->on_skip(o->ctx, i, &r->errors[j]);
    if (rc == PT_OK && enc_apply(x->maps[i], r) != 0)
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    if (rc != PT_OK)
        prd_results_free(r);
    return rc;
}

/* PT_OK when every member predicted member 0's records (the same labels and ids). */
static int same_records(const ens *x, const prd_results *r, pt_err *e)
{
    for (int i = 1; i < x->n; i++) {
        int same = r[i].n == r[0].n && r[i].k == r[0].k;
        for (long long j = 0; same && j < r[0].n; j++)
            same = r[i].items[j].label == r[0].items[j].label &&
                   !strcmp(r[i].items[j].id, r[0].items[j].id);
        if (!same)
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "the members did not predict the same records (%lld and %lld): "
                           "their decoding failed on different ones", r[0].n, r[i].n);
    }
    return PT_OK;
}

int ens_split(ens *x, const ds_split *s, int labeled, const ens_opts *o, prd_results *r,
              double **member_probs, pt_err *e)
{
    prd_results mr[ENS_MAX];
    memset(mr, 0, sizeof mr);
    memset(r, 0, sizeof *r);
    if (member_probs)
        *member_probs = NULL;
    int got = 0, rc = PT_OK;
    for (; rc == PT_OK && got < x->n; got++)
        if ((rc = member_split(x, got, s, labeled, o, &mr[got], e)) != PT_OK)
            break;
    if (rc == PT_OK)
        rc = same_records(x, mr, e);
    size_t len = rc == PT_OK ? (size_t)mr[0].n * (size_t)mr[0].k : 0;
    double *mix = rc == PT_OK ? calloc(len ? len : 1, sizeof *mix) : NULL;
    double *all = rc == PT_OK && member_probs ? malloc((len ? len : 1) * x->n * sizeof *all)
                                              : NULL;
    if (rc == PT_OK && (!mix || (member_probs && !all)))
        rc = err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    for (int i = 0; rc == PT_OK && i < x->n; i++) {
        for (size_t q = 0; q < len; q++)
            mix[q] += x->w[i] * mr[i].probs[q];
        if (all)
            memcpy(all + (size_t)i * len, mr[i].probs, len * sizeof *all);
    }
    if (rc == PT_OK) {
        free(mr[0].probs);
        mr[0].probs = mix;
        *r = mr[0];
        mr[0] = (prd_results){ 0 };
        if (member_probs)
            *member_probs = all;
    } else {
        free(mix);
        free(all);
    }
    for (int i = 0; i < got && i < x->n; i++)
        prd_results_free(&mr[i]);
    return rc;
}
