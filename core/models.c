/* models — the infer door's calls that need core/train/: a trained model opened for
 * predict and ensemble (infer/runmodel.h's rm_model, by pointer) and ensemble's
 * figures (train/metrics.h). Thin wrappers: the behaviour is theirs. At the top of
 * core/ because core/infer/ sits below core/train/. */
#include "infer/infer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/batch.h"
#include "nn/nn.h"
#include "train/metrics.h"
#include "infer/runmodel.h"
#include "train/trainer.h"

_Static_assert(INF_ID_MAX == BATCH_ID_MAX, "a record id is as long as data/batch.h keeps it");

void inf_init(void)
{
    nn_init();
}

int inf_model_open(const char *path, int image_size, run_input_norm norm, rm_model **out,
                   pt_err *e)
{
    return inf_model_open_features(path, image_size, norm, 0, out, e);
}

int inf_model_open_features(const char *path, int image_size, run_input_norm norm,
                            int features, rm_model **out, pt_err *e)
{
    rm_model *m = calloc(1, sizeof *m);
    if (!m)
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int rc = rm_open_features(path, image_size, norm, features, m, e);
    if (rc != PT_OK) {
        rm_close(m);
        free(m);
        return rc;
    }
    *out = m;
    return PT_OK;
}

void inf_model_close(rm_model *m)
{
    if (!m)
        return;
    rm_close(m);
    free(m);
}

int inf_model_classes(const rm_model *m)
{
    return m->n_classes;
}

int inf_model_image_size(const rm_model *m)
{
    return m->image_size;
}

char *const *inf_model_class_names(const rm_model *m)
{
    return m->class_names;
}

const char *inf_model_size_why(const rm_model *m)
{
    return m->size_why;
}

int inf_model_features(const rm_model *m)
{
    return m->features;
}

int inf_model_export_stale(const rm_model *m, char *msg, size_t n)
{
    return rm_export_stale(m, msg, n);
}

const char *inf_model_source(const rm_model *m)
{
    return m->source;
}

int inf_model_epoch(const rm_model *m)
{
    return m->epoch;
}

const char *inf_model_weights(const rm_model *m)
{
    return m->weights;
}

int inf_model_tta_flip(const rm_model *m)
{
    return m->tta_flip;
}

int inf_model_bf16(const rm_model *m)
{
    return trn_precision_bf16((run_precision)m->precision);
}

void inf_score_probs(const prd_results *r, const double *p, int32_t *preds, inf_score *out)
{
    const int k = r->k;
    int32_t *lab = malloc((size_t)(r->n ? r->n : 1) * sizeof *lab);
    int32_t *pr = malloc((size_t)(r->n ? r->n : 1) * sizeof *pr);
    long long *cm = calloc((size_t)k * k, sizeof *cm);
    double loss = 0;
    for (long long i = 0; lab && pr && i < r->n; i++) {
        lab[i] = r->items[i].label;
        pr[i] = inf_argmax(p + (size_t)i * k, k);
        if (preds)
            preds[i] = pr[i];
        double q = lab[i] >= 0 && lab[i] < k ? p[(size_t)i * k + lab[i]] : 0;
        loss -= log(q > 1e-30 ? q : 1e-30);
    }
    memset(out, 0, sizeof *out);
    if (lab && pr && cm) {
        met_summary s;
        memset(&s, 0, sizeof s);
        met_confusion(lab, pr, (size_t)r->n, k, cm);
        met_from_confusion(cm, k, &s, NULL, NULL, NULL, NULL);
        out->acc = s.acc;
        out->precision = s.precision;
        out->recall = s.recall;
        out->f1 = s.f1;
    }
    out->loss = r->n ? loss / r->n : NAN;
    free(lab);
    free(pr);
    free(cm);
}
