/* schedule — the learning rate per update, as the seed notebook's
 * WarmupLearningRateSchedule computes it.
 *
 * warmup_steps = int(total_updates * warmup). During warmup the rate rises linearly
 * from lr_start (at update 0) by (lr_max - lr_start) / warmup_steps per update.
 * After it, with s = update - warmup_steps and D = total_updates - warmup_steps:
 *     exponential: lr_max * (lr_end / lr_max) ^ (s / D)
 *     linear:      (lr_max - lr_end) * (1 - min(s, D) / D) + lr_end
 *     cosine:      lr_end + (lr_max - lr_end) * (1 + cos(pi * min(s, D) / D)) / 2
 * and every value is multiplied by lr_scaling (the notebook's x8 with 8
 * accumulation steps). A plain value type; nothing to free.
 */
#ifndef PT_SCHEDULE_H
#define PT_SCHEDULE_H

typedef enum sched_kind { SCHED_EXP = 0, SCHED_LINEAR = 1, SCHED_COSINE = 2 } sched_kind;

typedef struct sched {
    sched_kind kind;
    double lr_start, lr_max, lr_end;
    double warmup;          /* fraction of all updates */
    double lr_scaling;
    long long total;        /* updates in the whole run */
    long long warmup_steps;
} sched;

void sched_init(sched *s, sched_kind kind, double lr_start, double lr_max, double lr_end,
                double warmup, double lr_scaling, long long total_updates);
double sched_lr(const sched *s, long long update);
const char *sched_kind_name(sched_kind k);
/* "exp", "exponential", "linear", "cosine" -> kind; -1 when unknown. */
int sched_kind_parse(const char *name);

#endif
