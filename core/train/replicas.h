/* replicas — how many replica threads a run of a configuration uses: one rule,
 * read by the trainer (which starts them) and by the run's progress (which shows
 * the plan before the run starts). No state. */
#ifndef PT_REPLICAS_H
#define PT_REPLICAS_H

#include "run.h"

/* cfg->replicas, or one per core the process may run on when it is 0;
 * 1 .. RUN_MAX_REPLICAS. */
int rpl_count(const run_config *cfg);

#endif
