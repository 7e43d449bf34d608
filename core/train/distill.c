/* distill — knowledge distillation in the trainer (see distill.h). */
#include "train/distill.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "train/publish.h"
#include "train/trn.h"

/* The teacher's forward passes of the training split take this many images each
 * (predict's default). */
#define TRN_TEACHER_BATCH 32

static void on_progress(void *ctx, long long done, long long total)
{
    trn *r = ctx;
    trn_set_state(r, RUN_PREPARING, "teacher %s: predicting %lld training images, "
                                    "un-augmented (%lld done)",
                  tch_name(r->parts.teacher), total, done);
}

void trn_distill_text(const trn *r, char *buf, size_t n)
{
    buf[0] = '\0';
    if (r->parts.teacher)
        util_fmt(buf, n, "distilled from %s (T %g, alpha %g, %s)", r->cfg->teacher,
                 r->cfg->distill_t, r->cfg->distill_alpha,
                 r->cfg->teacher_view == RUN_TEACHER_LIVE ? "live" : "cached");
}

/* The dataset's class names as the run names them (classes.txt's). */
static char **class_names(trn *r)
{
    char **v = calloc((size_t)r->plan.n_classes, sizeof *v);
    for (int c = 0; v && c < r->plan.n_classes; c++) {
        char buf[256];
        trn_class_name(r, c, buf, sizeof buf);
        if (!(v[c] = strdup(buf))) {
            for (int j = 0; j < c; j++)
                free(v[j]);
            free(v);
            return NULL;
        }
    }
    return v;
}

static int open_teacher(trn *r, pt_err *e)
{
    const run_config *cfg = r->cfg;
    const int per_rank = r->plan.replicas * r->plan.batch_per_replica;
    tch_opts o = { .path = cfg->teacher, .data = cfg->teacher_data, .t = cfg->distill_t, .view = cfg->teacher_view,
                   .replicas = r->plan.replicas,
                   .batch = cfg->teacher_view == RUN_TEACHER_LIVE ? per_rank : TRN_TEACHER_BATCH,
                   .workers = cfg->workers, .on_progress = on_progress, .ctx = r,
                   .stop = trn_stop_asked };
    char **names = class_names(r);
    if (!names)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int rc = tch_open(&o, r->ds, cfg->data[0] ? cfg->data : r->ds->root, names,
                      r->plan.n_classes, &r->parts.teacher, e);
    for (int c = 0; c < r->plan.n_classes; c++)
        free(names[c]);
    free(names);
    if (rc != PT_OK)
        return rc;
    r->parts.soft = malloc((size_t)r->plan.grad_acc * per_rank * r->plan.n_classes *
                           sizeof *r->parts.soft);
    if (!r->parts.soft)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    return PT_OK;
}

int trn_distill_prepare(trn *r, pt_err *e)
{
    const run_config *cfg = r->cfg;
    if (!cfg->teacher[0])
        return PT_OK;
    trn_set_state(r, RUN_PREPARING, "opening the teacher %s", cfg->teacher);
    int rc = open_teacher(r, e);
    if (rc != PT_OK)
        return rc;
    tch *t = r->parts.teacher;
    char what[300];
    trn_distill_text(r, what, sizeof what);
    trn_log(r, "%s: the teacher is %s; loss alpha x T^2 x KL(teacher_T || student_T) + "
               "(1 - alpha) x cross-entropy", what, tch_about(t));
    /* ens_match's notes: classes matched by name or by position */
    for (const char *l = tch_notes(t); *l;) {
        size_t n = strcspn(l, "\n");
        trn_log(r, "teacher: %.*s", (int)n, l);
        l += n + (l[n] == '\n');
    }
    run_snapshot *s = prg_lock(r->env->progress);
    tch_header(cfg->teacher, cfg->distill_t, cfg->distill_alpha, cfg->teacher_view,
               s->distill, sizeof s->distill);
    prg_unlock(r->env->progress);
    if (cfg->teacher_view == RUN_TEACHER_LIVE) {
        trn_log(r, "teacher: it sees every training batch as the student does (augmented "
                   "and mixed), resized to its side");
        return PT_OK;
    }
    const ds_split *train = &r->ds->split[DS_TRAIN];
    const char *dir = r->plan.rank == 0 && r->persist.folder.dir[0] ? r->persist.folder.dir
                                                                   : NULL;
    trn_log(r, "teacher %s: its probabilities of the %lld training images, un-augmented ...",
            tch_name(t), r->plan.readable[DS_TRAIN]);
    double t0 = util_now();
    int predicted;
    rc = tch_prepare(t, train, r->plan.readable[DS_TRAIN], dir, 1, r->plan.rank == 0,
                     &predicted, e);
    if (rc != PT_OK)
        return rc;
    if (predicted == 2)
        trn_log(r, "teacher: its probabilities of the un-augmented photos read from %s%s",
                cfg->teacher, dir ? " (copied to the run's teacher_probs.csv)" : "");
    else if (predicted)
        trn_log(r, "teacher: predicted %lld training images in %.1fs%s; the student's soft "
                   "targets are its probabilities of the un-augmented photos (a mixed "
                   "example's: the two photos' mixed as the labels are)",
                r->plan.readable[DS_TRAIN], util_now() - t0,
                dir ? ", written to teacher_probs.csv" : "");
    else
        trn_log(r, "teacher: its probabilities read back from the run's teacher_probs.csv "
                   "(the same teacher), not predicted again");
    return PT_OK;
}

int trn_distill_fill(trn *r, batch **batches, pt_err *e)
{
    if (!r->parts.teacher)
        return PT_OK;
    const size_t per = (size_t)r->plan.replicas * r->plan.batch_per_replica * r->plan.n_classes;
    for (int a = 0; a < r->plan.grad_acc; a++) {
        float *soft = r->parts.soft + (size_t)a * per;
        int rc = tch_fill(r->parts.teacher, batches[a], soft, e);
        if (rc != PT_OK)
            return rc;
        batches[a]->soft = soft;
    }
    return PT_OK;
}

void trn_distill_release(trn *r, batch **batches)
{
    for (int a = 0; a < r->plan.grad_acc; a++)
        if (batches[a])
            batches[a]->soft = NULL;
}
