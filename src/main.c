/* petal-tui: the entry point. Subcommands first; otherwise the training options
 * and either the workbench (default) or the headless runner (--headless). */
#include <stdio.h>
#include <string.h>

#include "data/augment.h"
#include "src/args.h"
#include "src/cli.h"
#include "src/headless.h"
#include "ui/ui.h"

static void help(void)
{
    run_config d;
    cfg_defaults(&d);
    printf("petal-tui %s - train image classifiers from TFRecord shards in a terminal\n"
           "\n"
           "usage:\n"
           "  petal-tui [OPTIONS]                open the workbench (demo data unless --data)\n"
           "  petal-tui --headless [OPTIONS]     train without the workbench\n"
           "  petal-tui inspect PATH             what is in a shard, folder or dataset\n"
           "  petal-tui shards SRC_DIR OUT_DIR   class folders of JPEGs -> TFRecord shards\n"
           "  petal-tui demo [--cache DIR]       generate the demo dataset, print its folder\n"
           "  petal-tui lr-schedule [OPTIONS]    print a learning-rate schedule\n"
           "  petal-tui preview [OPTIONS] --out FILE.png   augmentation preview grid\n"
           "  petal-tui --help | --version\n"
           "\n"
           "training options (also keys of the config file, without the dashes):\n"
           "  --data DIR               dataset folder (default: the built-in demo flowers)\n"
           "  --model small|mobilenetv2  (%s)      --width W  mobilenetv2 width (%g)\n"
           "  --image-size S           model input side; 0 = the dataset's (%d)\n"
           "  --epochs N (%d)   --replicas R (0 = cores)   --batch-per-replica B (%d)\n"
           "  --grad-acc A (%d)   --oversample N|max|off (off)   --dropout P (%g)\n"
           "  --optimizer adam|sgd (adam)   --momentum M (%g)   --weight-decay W (%g)\n"
           "  --lr-start X (%g) --lr-max X (%g) --lr-end X (%g) --warmup F (%g)\n"
           "  --schedule exp|linear|cosine (exp)   --lr-scaling K (%g)\n"
           "  --augment SPEC           e.g. perspective:0.35,flip:0.5; none = off\n"
           "                           (default %s)\n"
           "  --freeze-backbone        train only the head\n"
           "  --seed S (%llu)   --deterministic / --no-deterministic (on)\n"
           "  --shuffle-buffer N (%d)   --workers N (0 = auto)   --prefetch N (%d)\n"
           "  --stop-on-data-error     stop at the first bad record (default: skip, count)\n"
           "  --checkpoint-every N (%d epochs)\n"
           "  --out DIR                run folder (default runs/MODEL-DATE)\n"
           "  --resume DIR             continue the run in DIR from its checkpoint\n"
           "  --config FILE            options file (default $XDG_CONFIG_HOME/petal-tui/config)\n"
           "workbench options:\n"
           "  --no-sixel               text (half-block) previews even on sixel terminals\n"
           "  --no-color               no colours (also when NO_COLOR is set)\n"
           "\n"
           "exit status: 0 done, 1 usage, 2 data error, 3 non-finite loss, 130 interrupted.\n"
           "Each subcommand takes --help. See petal-tui(1).\n",
           PT_VERSION, d.model, d.width, d.image_size, d.epochs, d.batch_per_replica, d.grad_acc,
           d.dropout, d.momentum, d.weight_decay, d.lr_start, d.lr_max, d.lr_end, d.warmup,
           d.lr_scaling, aug_default_spec(), (unsigned long long)d.seed, d.shuffle_buffer,
           d.prefetch, d.checkpoint_every);
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
        if (!strcmp(c, "preview"))
            return cmd_preview(argc - 1, argv + 1);
        if (!strcmp(c, "lr-schedule"))
            return cmd_lr_schedule(argc - 1, argv + 1);
        if (c[0] != '-') {
            fprintf(stderr, "petal-tui: unknown command '%s' (try --help)\n", c);
            return 1;
        }
    }
    args a;
    if (args_parse(argc, argv, &a) != 0)
        return 1;
    if (a.headless)
        return headless_run(&a.cfg);
    ui_options uo = { .no_sixel = a.no_sixel, .no_color = a.no_color };
    return ui_run(&a.cfg, &uo);
}
