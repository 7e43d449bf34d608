/* headless — run one training without the workbench; returns the exit status. */
#ifndef PT_HEADLESS_H
#define PT_HEADLESS_H

#include "engine.h"

int headless_run(const run_config *cfg);

#endif
