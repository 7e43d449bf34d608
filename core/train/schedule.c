#include "train/schedule.h"

#include <math.h>
#include <string.h>

void sched_init(sched *s, sched_kind kind, double lr_start, double lr_max, double lr_end,
                double warmup, double lr_scaling, long long total_updates)
{
    s->kind = kind;
    s->lr_start = lr_start;
    s->lr_max = lr_max;
    s->lr_end = lr_end;
    s->warmup = warmup;
    s->lr_scaling = lr_scaling;
    s->total = total_updates > 0 ? total_updates : 1;
    s->warmup_steps = (long long)((double)s->total * warmup); /* int() truncates */
}

double sched_lr(const sched *s, long long step)
{
    double lr;
    if (step < s->warmup_steps) {
        double inc = (s->lr_max - s->lr_start) / (double)(s->warmup_steps > 1 ? s->warmup_steps : 1);
        lr = s->lr_start + inc * (double)step;
    } else {
        double d = (double)(s->total - s->warmup_steps);
        if (d < 1)
            d = 1;
        double t = (double)(step - s->warmup_steps);
        switch (s->kind) {
        case SCHED_LINEAR: {
            double f = t < d ? t / d : 1.0;
            lr = (s->lr_max - s->lr_end) * (1.0 - f) + s->lr_end;
            break;
        }
        case SCHED_COSINE: {
            double f = t < d ? t / d : 1.0;
            lr = s->lr_end + (s->lr_max - s->lr_end) * 0.5 * (1.0 + cos(M_PI * f));
            break;
        }
        default:
            /* Keras ExponentialDecay (not staircase) keeps decaying past D. */
            if (s->lr_max > 0 && s->lr_end > 0)
                lr = s->lr_max * pow(s->lr_end / s->lr_max, t / d);
            else
                lr = s->lr_max;
            break;
        }
    }
    return lr * s->lr_scaling;
}

const char *sched_kind_name(sched_kind k)
{
    switch (k) {
    case SCHED_LINEAR: return "linear";
    case SCHED_COSINE: return "cosine";
    default: return "exp";
    }
}

int sched_kind_parse(const char *name)
{
    if (!strcmp(name, "exp") || !strcmp(name, "exponential"))
        return SCHED_EXP;
    if (!strcmp(name, "linear"))
        return SCHED_LINEAR;
    if (!strcmp(name, "cosine"))
        return SCHED_COSINE;
    return -1;
}
