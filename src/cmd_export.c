/* petal-tui export: a run's trained net as a standard ONNX file (the runs-on-disk
 * door's runs_export, core/runs.h; the file's form is nn/nn_export.h's). */
#include <stdio.h>
#include <string.h>

#include "runs.h"
#include "src/cli.h"

static const char *usage =
    "usage: petal-tui export RUN_DIR [--out FILE.onnx] [--int8 [--calib N]]\n";

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
           "reads it back; so does ONNX Runtime (see petal-tui(1), SUBCOMMANDS, export).\n"
           "\n"
           "--int8       write it quantized for deployment, RUN_DIR/model-int8.onnx unless\n"
           "             --out names another: ONNX's QDQ form, which ONNX Runtime runs with\n"
           "             its int8 kernels. Conv and Gemm weights int8 per output channel\n"
           "             (symmetric), biases int32, every activation a convolution, Gemm,\n"
           "             Add, pool or Concat reads (and every Relu, Clip, Add output) uint8\n"
           "             through QuantizeLinear/DequantizeLinear, its range measured on the\n"
           "             run's training images; input and outputs stay float32, as above.\n"
           "             Prints how many images calibrated it. predict reads it back.\n"
           "--calib N    calibrate on N training images (default %d; all when the run's\n"
           "             dataset has fewer), decoded as validation decodes them\n",
           usage, RUNS_CALIB_DEFAULT);
}

/* --calib's N: a whole number 1 .. 1e9, or -1. */
static long parse_calib(const char *s)
{
    long v = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 100000000L)
            return -1;
        v = v * 10 + (*s - '0');
    }
    return v >= 1 && v <= 1000000000L ? v : -1;
}

int cmd_export(int argc, char **argv)
{
    const char *run = NULL, *out = NULL, *calib_s = NULL;
    int int8 = 0;
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
        } else if (!strcmp(s, "--int8")) {
            int8 = 1;
        } else if (!strcmp(s, "--calib")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "petal-tui: export: --calib needs a number of images\n%s",
                        usage);
                return 1;
            }
            calib_s = argv[++i];
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
    long calib = calib_s ? parse_calib(calib_s) : RUNS_CALIB_DEFAULT;
    if (calib_s && !int8) {
        fprintf(stderr, "petal-tui: export: --calib goes with --int8 (it calibrates the int8 "
                "export)\n%s", usage);
        return 1;
    }
    if (calib < 1) {
        fprintf(stderr, "petal-tui: export: --calib '%s': a number of training images, 1 or "
                "more, expected\n%s", calib_s, usage);
        return 1;
    }
    runs_export_info info;
    pt_err e;
    int rc = int8 ? runs_export_int8(run, out, (int)calib, &info, &e)
                  : runs_export(run, out, &info, &e);
    if (rc != PT_OK) {
        fprintf(stderr, "petal-tui: export: %s\n", e.msg);
        return e.code == PT_EUSAGE ? 1 : 2; /* not a run (the command to change), or unreadable */
    }
    if (int8)
        printf("calibrated on %lld training images\n", info.calibrated);
    printf("%s\n", info.path);
    fprintf(stderr,
            "petal-tui: exported %s%s: %d classes, %d px, epoch %d (%s), update %d, %s, %.1f MB "
            "in %.2f s\n",
            run, int8 ? " as int8" : "", info.classes, info.image_size, info.epoch, info.weights,
            info.update,
            info.ema ? "the moving average of the weights" : "the weights as trained",
            (double)info.bytes / 1e6, info.seconds);
    return 0;
}
