/* replicas — the replica count of a configuration (see replicas.h). */
#include "train/replicas.h"

#include "base/util.h"

int rpl_count(const run_config *cfg)
{
    int R = cfg->replicas > 0 ? cfg->replicas : util_cores();
    if (R < 1)
        R = 1;
    return R < RUN_MAX_REPLICAS ? R : RUN_MAX_REPLICAS;
}
