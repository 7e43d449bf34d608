/* engine_job — the engine door's calls for starting a run: the Open MPI job
 * (train/dist.h), the OpenBLAS kernels (nn/nn.h), the lr schedule
 * (train/schedule.h) and --precision (train/trainer.h), so that src/ names none of those headers. Thin wrappers: the
 * behaviour is theirs. */
#include "engine.h"

#include "nn/nn.h"
#include "train/dist.h"
#include "train/schedule.h"
#include "train/trainer.h"

int eng_job_launched(void)
{
    return dist_launched();
}

int eng_job_init(pt_err *e)
{
    return dist_init(e);
}

void eng_job_finalize(void)
{
    dist_finalize();
}

void eng_job_abort(int status)
{
    dist_abort(status);
}

int eng_job_on(void)
{
    return dist_on();
}

int eng_job_rank(void)
{
    return dist_rank();
}

const char *eng_job_who(void)
{
    return dist_who();
}

const char *eng_blas_corename(void)
{
    return nn_blas_corename();
}

int eng_precision_bf16(run_precision p)
{
    return trn_precision_bf16(p);
}

void eng_precision_text(run_precision p, char *buf, size_t n)
{
    trn_precision_text(p, buf, n);
}

int eng_lr_kind_parse(const char *name)
{
    return sched_kind_parse(name);
}

const char *eng_lr_kind_name(int kind)
{
    return sched_kind_name((sched_kind)kind);
}

static sched to_sched(const eng_lr_schedule *s)
{
    sched t = { .kind = (sched_kind)s->kind,
                .lr_start = s->lr_start,
                .lr_max = s->lr_max,
                .lr_end = s->lr_end,
                .warmup = s->warmup,
                .lr_scaling = s->lr_scaling,
                .total = s->total,
                .warmup_steps = s->warmup_steps };
    return t;
}

void eng_lr_init(eng_lr_schedule *s, int kind, double lr_start, double lr_max, double lr_end,
                 double warmup, double lr_scaling, long long total_updates)
{
    sched t;
    sched_init(&t, (sched_kind)kind, lr_start, lr_max, lr_end, warmup, lr_scaling,
               total_updates);
    *s = (eng_lr_schedule){ .kind = (int)t.kind,
                            .lr_start = t.lr_start,
                            .lr_max = t.lr_max,
                            .lr_end = t.lr_end,
                            .warmup = t.warmup,
                            .lr_scaling = t.lr_scaling,
                            .total = t.total,
                            .warmup_steps = t.warmup_steps };
}

double eng_lr_at(const eng_lr_schedule *s, long long update)
{
    sched t = to_sched(s);
    return sched_lr(&t, update);
}
