/* petal-tui export: a run's trained net as a standard ONNX file (the runs-on-disk
 * door's runs_export, core/runs.h; the file's form is nn/nn_export.h's). */
#include <stdio.h>
#include <string.h>

#include "runs.h"
#include "src/cli.h"

static const char *usage = "usage: petal-tui export RUN_DIR [--out FILE.onnx]\n";

static void help(void)
{
    printf("%s"
           "Writes the run's trained net as an ONNX file (opset 13), RUN_DIR/model.onnx unless\n"
           "--out names another: the weights validation used (the moving average when the\n"
           "run kept one), dropout removed, batch norm folded into the convolutions.\n"
           "Input 'image': float32 [N, 3, S, S], RGB 0-255 as decoded, centre-cropped to a\n"
           "square and resized to S (the run's image size); the run's input normalisation\n"
           "is the graph's first nodes. Outputs 'probabilities' (softmax) and 'logits',\n"
           "[N, classes]. metadata_props: class_names (a JSON array), image_size,\n"
           "petal_tui_version, source_run, epoch, input. `petal-tui predict FILE.onnx`\n"
           "reads it back; so does ONNX Runtime (see petal-tui(1), SUBCOMMANDS, export).\n",
           usage);
}

int cmd_export(int argc, char **argv)
{
    const char *run = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            help();
            return 0;
        }
        if (!strcmp(s, "--out")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "petal-tui: export: --out needs a file\n%s", usage);
                return 1;
            }
            out = argv[++i];
        } else if (s[0] == '-' && s[1]) {
            fprintf(stderr, "petal-tui: export: unknown option '%s'\n%s", s, usage);
            return 1;
        } else if (run) {
            fprintf(stderr, "petal-tui: export: one run at a time\n%s", usage);
            return 1;
        } else {
            run = s;
        }
    }
    if (!run) {
        fprintf(stderr, "%s", usage);
        return 1;
    }
    runs_export_info info;
    pt_err e;
    if (runs_export(run, out, &info, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: export: %s\n", e.msg);
        return e.code == PT_EUSAGE ? 1 : 2; /* not a run (the command to change), or unreadable */
    }
    printf("%s\n", info.path);
    fprintf(stderr,
            "petal-tui: exported %s: %d classes, %d px, epoch %d, update %d, %s, %.1f MB in "
            "%.2f s\n",
            run, info.classes, info.image_size, info.epoch, info.update,
            info.ema ? "the moving average of the weights" : "the weights as trained",
            (double)info.bytes / 1e6, info.seconds);
    return 0;
}
