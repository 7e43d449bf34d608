/* petal-tui: the entry point. Subcommands first, then the workbench / headless
 * trainer options. */
#include <stdio.h>
#include <string.h>

#include "src/cli.h"

static void help(void)
{
    printf("petal-tui %s - train image classifiers from TFRecord shards in a terminal\n"
           "\n"
           "usage:\n"
           "  petal-tui inspect PATH            what is in a shard, folder or dataset\n"
           "  petal-tui shards SRC_DIR OUT_DIR  class folders of JPEGs -> TFRecord shards\n"
           "  petal-tui demo [--cache DIR]      generate the demo dataset, print its folder\n"
           "  petal-tui --help | --version\n"
           "\n"
           "Each subcommand takes --help. See petal-tui(1).\n",
           PT_VERSION);
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        const char *c = argv[1];
        if (!strcmp(c, "--version")) {
            printf("petal-tui %s\n", PT_VERSION);
            return 0;
        }
        if (!strcmp(c, "--help") || !strcmp(c, "-h")) {
            help();
            return 0;
        }
        if (!strcmp(c, "inspect"))
            return cmd_inspect(argc - 1, argv + 1);
        if (!strcmp(c, "shards"))
            return cmd_shards(argc - 1, argv + 1);
        if (!strcmp(c, "demo"))
            return cmd_demo(argc - 1, argv + 1);
        fprintf(stderr, "petal-tui: unknown command or option '%s' (try --help)\n", c);
        return 1;
    }
    help();
    return 0;
}
