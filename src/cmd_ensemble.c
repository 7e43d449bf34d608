/* petal-tui ensemble — placeholder until written below. */
#include <stdio.h>

#include "src/cli.h"

int cmd_ensemble(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "petal-tui: ensemble: not yet\n");
    return 2;
}
