/* args — parsing the training options (the command line, and config files through
 * cfg_read_file()) into a run_config. Values are checked by cfg_set(); a bad one prints a message
 * naming the option and makes args_parse() return 1 (the usage exit status). */
#ifndef PT_ARGS_H
#define PT_ARGS_H

#include "engine.h"

#define ARGS_MAX_COMPARE 6

typedef struct args {
    run_config cfg;
    int headless;
    int no_sixel;
    int no_color;
    char config_file[4096];     /* the config file that was read, "" if none */
    /* --compare RUN_DIR...: runs whose curves the workbench overlays (argv's strings) */
    const char *compare[ARGS_MAX_COMPARE];
    int n_compare;
    const char *open;           /* --open RUN_DIR: a finished run, shown without training */
    const char *tty;            /* --tty PATH: the terminal the workbench uses, or NULL */
} args;

/* 0, or 1 on a usage error (already printed). */
int args_parse(int argc, char **argv, args *a);

#endif
