/* teacher_live — --teacher-view live (see teacher.h): every training batch as the
 * student sees it, each image resized (bilinear) to each member's side and forwarded
 * on that member's inference pool, with its flip when its TTA has one (the crops of
 * ENS_TTA_CROPS are left to the cached view: a live batch is already cropped). */
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "infer/infer.h"
#include "train/teacher_impl.h"
#include "train/trainer.h"

/* 1 when the names are the placeholders "class 0", "class 1", ... */
static int unnamed(char *const *v, int n)
{
    for (int c = 0; v && c < n; c++) {
        char want[32];
        util_fmt(want, sizeof want, "class %d", c);
        if (strcmp(v[c], want) != 0)
            return 0;
    }
    return 1;
}

/* Member output c -> the dataset's class, as ens_match decided it (which has already
 * accepted the member): by name when both name their classes, else by position. */
static int member_map(const tch *t, tch_member *mb, pt_err *e)
{
    const rm_model *m = mb->m;
    mb->map = malloc((size_t)t->k * sizeof *mb->map);
    if (!mb->map)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int by_name = !unnamed(m->class_names, m->n_classes) && !unnamed(t->names, t->k);
    for (int c = 0; c < t->k; c++) {
        int j = c;
        if (by_name)
            for (j = 0; j < t->k && strcmp(t->names[j], m->class_names[c]); j++)
                ;
        if (m->n_classes != t->k || j >= t->k)
            return err_set(e, PT_EUSAGE, m->source, PT_NO_RECORD, PT_NO_OFFSET,
                           "--teacher-view live: its class %s is not the dataset's",
                           m->class_names[c]);
        mb->map[c] = j;
    }
    return PT_OK;
}

int tch_live_open(tch *t, pt_err *e)
{
    const int B = t->o.batch, k = t->k;
    const int per = (B + t->o.replicas - 1) / t->o.replicas;
    t->n_live = ens_members(t->x);
    for (int i = 0; i < t->n_live; i++) {
        tch_member *mb = &t->live[i];
        mb->m = ens_member_model(t->x, i);
        mb->w = ens_member_weight(t->x, i);
        mb->flip = (ens_member_tta(t->x, i) & ENS_TTA_FLIP) != 0;
        const int S = mb->m->image_size;
        int rc = member_map(t, mb, e);
        if (rc == PT_OK)
            rc = inf_pool_new(mb->m->net, t->o.replicas, per,
                              mb->m->data ? trn_precision_bf16((run_precision)mb->m->precision)
                                          : 0,
                              &mb->pool, e);
        if (rc != PT_OK)
            return rc;
        if (!(mb->img = malloc((size_t)B * S * S * 3)))
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    t->logits = malloc((size_t)B * k * sizeof *t->logits);
    t->probs = malloc((size_t)B * k * sizeof *t->probs);
    t->mean = malloc((size_t)B * k * sizeof *t->mean);
    if (!t->logits || !t->probs || !t->mean)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    return PT_OK;
}

/* Member mb's probabilities of the batch, weighted, added to t->mean (dataset order). */
static int add_member(tch *t, tch_member *mb, const batch *b, pt_err *e)
{
    const int S = mb->m->image_size, k = t->k;
    const size_t px = (size_t)S * S * 3;
    for (int i = 0; i < b->n; i++) {
        uint8_t *dst = mb->img + (size_t)i * px;
        if (b->h == S && b->w == S)
            memcpy(dst, batch_image(b, i), px);
        else if (img_resize(batch_image(b, i), b->w * 3, 0, 0, b->w, b->h, dst, S, S,
                            &t->scratch) != 0)
            return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    int rc = inf_probs(mb->pool, mb->img, b->n, S, S, k, mb->flip, t->logits, t->probs, e);
    if (rc != PT_OK)
        return rc;
    for (int i = 0; i < b->n; i++)
        for (int c = 0; c < k; c++)
            t->mean[(size_t)i * k + mb->map[c]] += mb->w * t->probs[(size_t)i * k + c];
    return PT_OK;
}

int tch_live_fill(tch *t, const batch *b, float *soft, pt_err *e)
{
    const int k = t->k;
    if (b->n > t->o.batch)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "teacher: a batch of %d, more than the %d planned", b->n, t->o.batch);
    memset(t->mean, 0, (size_t)b->n * k * sizeof *t->mean);
    for (int i = 0; i < t->n_live; i++) {
        int rc = add_member(t, &t->live[i], b, e);
        if (rc != PT_OK)
            return rc;
    }
    for (int i = 0; i < b->n; i++)
        tch_temper(t->mean + (size_t)i * k, k, t->o.t, soft + (size_t)i * k);
    return PT_OK;
}
