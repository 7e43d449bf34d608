/* petal-tui: entry point. Placeholder dispatch until the subcommands land. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("petal-tui %s\n", PT_VERSION);
        return 0;
    }
    printf("usage: petal-tui [--version]\n");
    return argc > 1 ? 1 : 0;
}
