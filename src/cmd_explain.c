/* petal-tui explain: why a model gave its answer, as Grad-CAM heat maps (the infer
 * door's xpl_ calls, core/infer/explain.h), for image files or a run's top losses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "infer/infer.h"
#include "src/cli.h"

static const char *usage =
    "usage: petal-tui explain RUN_DIR|MODEL.onnx IMAGE... [--class C] [--layer L] [--top K]\n"
    "                         --out DIR\n"
    "       petal-tui explain RUN_DIR --top-losses N|--first N [--layer L] --out DIR\n";

static void help(void)
{
    printf("%s"
           "Grad-CAM (Selvaraju et al.): where in the image the model looked for a class. At\n"
           "a layer L, the gradient of the class's score (the logit) with respect to L's\n"
           "output, averaged over the map to one weight per channel; the weighted sum of\n"
           "the channels, ReLU, divided by its maximum; upsampled to the photo and laid\n"
           "over it in the jet colour map (red: what raised the score most).\n"
           "Images are decoded as predict decodes them (the run's centre crop and size).\n"
           "\n"
           "IMAGE...         writes DIR/NAME.png per image: the photo, the heat map and\n"
           "                 the overlay of the predicted class, the top classes and their\n"
           "                 probabilities; prints a line per image: file, predicted class,\n"
           "                 probability, PNG written. A missing or undecodable image is\n"
           "                 named and the rest go on (exit 2 at the end).\n"
           "--class C        a second row for class C (its name or index)\n"
           "--layer L        the node whose output is explained (its id as `petal-tui\n"
           "                 model` lists them; default: the map the global pooling reads)\n"
           "--top K          classes listed (default 5)\n"
           "--top-losses N   a run's validation images with the highest cross-entropy\n"
           "                 loss (fastai's plot_top_losses): DIR/top-losses.png, a tile per\n"
           "                 image (Grad-CAM of the predicted class; true / predicted /\n"
           "                 probability / loss), highest first, and the same list printed.\n"
           "                 Needs the run's dataset where it trained from.\n"
           "--first N        the same sheet of the run's first N validation images in\n"
           "                 record order (a choice of images fixed in advance, not by\n"
           "                 what the model got wrong): DIR/validation.png\n"
           "Float32, without the test-time flip. See petal-tui(1), SUBCOMMANDS, explain.\n",
           usage);
}

typedef struct args {
    const char *model, *out, *cls, *layer, *top, *losses, *first;
    char **images;
    int n_images;
} args;

/* 0, 1 (help printed) or -1 (a message printed). */
static int parse(int argc, char **argv, args *a)
{
    static const char *const known[] = { "--class", "--layer", "--top", "--top-losses", "--out",
                                         "--first", "--help", NULL };
    const char **slot[] = { &a->cls, &a->layer, &a->top, &a->losses, &a->out, &a->first };
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            help();
            return 1;
        }
        if (s[0] == '-' && s[1]) {
            int k = 0;
            while (known[k] && strcmp(known[k], s))
                k++;
            if (k >= 6) {
                cli_unknown("explain", s, known);
                return -1;
            }
            if (i + 1 >= argc) {
                fprintf(stderr, "petal-tui: explain: %s needs a value\n%s", s, usage);
                return -1;
            }
            *slot[k] = argv[++i];
        } else if (!a->model) {
            a->model = s;
        } else {
            a->images[a->n_images++] = argv[i];
        }
    }
    if (a->losses && a->first) {
        fprintf(stderr, "petal-tui: explain: --top-losses or --first, not both\n%s", usage);
        return -1;
    }
    if (a->first)
        a->losses = a->first; /* the same sheet, of the first records */
    if (!a->model || !a->out || (!a->losses && a->n_images == 0)) {
        fprintf(stderr, "petal-tui: explain: %s\n%s",
                !a->model ? "a run folder or an ONNX model first"
                : !a->out ? "--out DIR says where the pictures go"
                          : "images to explain, or --top-losses N",
                usage);
        return -1;
    }
    if (a->losses && (a->n_images || a->cls)) {
        fprintf(stderr, "petal-tui: explain: %s takes the run's validation images: "
                "no image files and no --class with it\n%s",
                a->first ? "--first" : "--top-losses", usage);
        return -1;
    }
    return 0;
}

/* DIR/NAME.png for image i: its file name without the extension (a second image of
 * the same name gets -2, ...). */
static void png_name(const args *a, int i, char *out, size_t n)
{
    char base[512];
    const char *p = strrchr(a->images[i], '/');
    util_copy(base, sizeof base, p ? p + 1 : a->images[i]);
    char *dot = strrchr(base, '.');
    if (dot && dot != base)
        *dot = '\0';
    int same = 0;
    for (int j = 0; j < i; j++) {
        const char *q = strrchr(a->images[j], '/');
        q = q ? q + 1 : a->images[j];
        same += !strncmp(q, base, strlen(base)) && (q[strlen(base)] == '.' || !q[strlen(base)]);
    }
    if (same)
        util_path(out, n, "%s/%s-%d.png", a->out, base, same + 1);
    else
        util_path(out, n, "%s/%s.png", a->out, base);
}

static int run_images(xpl *x, const rm_model *m, const args *a, const xpl_opts *o)
{
    int failed = 0;
    char *const *names = inf_model_class_names(m);
    for (int i = 0; i < a->n_images; i++) {
        char png[4200];
        png_name(a, i, png, sizeof png);
        xpl_answer ans;
        pt_err e;
        if (xpl_file(x, a->images[i], png, o, &ans, &e) != PT_OK) {
            fprintf(stderr, "petal-tui: explain: %s\n", e.msg);
            failed++;
            continue;
        }
        printf("%s\t%s\t%.4f\t%s\n", a->images[i], names[ans.pred], ans.prob, png);
    }
    if (failed)
        fprintf(stderr, "petal-tui: explain: %d of %d images failed\n", failed, a->n_images);
    return failed ? 2 : 0;
}

static int run_losses(xpl *x, const rm_model *m, int n, const args *a, const xpl_opts *o)
{
    char png[4200];
    util_path(png, sizeof png, "%s/%s.png", a->out, o->in_order ? "validation" : "top-losses");
    xpl_loss *l = calloc((size_t)n, sizeof *l);
    if (!l) {
        fprintf(stderr, "petal-tui: explain: out of memory\n");
        return 2;
    }
    int got = 0;
    pt_err e;
    if (xpl_top_losses(x, n, png, o, l, &got, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: explain: %s\n", e.msg);
        free(l);
        return e.code == PT_EUSAGE ? 1 : 2;
    }
    char *const *names = inf_model_class_names(m);
    printf("rank\trecord\ttrue\tpredicted\tprobability\tloss\n");
    for (int i = 0; i < got; i++)
        printf("%d\t%lld\t%s\t%s\t%.4f\t%.4f\n", i + 1, l[i].index, names[l[i].label],
               names[l[i].pred], l[i].prob, l[i].loss);
    printf("%s\n", png);
    free(l);
    return 0;
}

int cmd_explain(int argc, char **argv)
{
    args a = { 0 };
    a.images = calloc((size_t)argc + 1, sizeof *a.images);
    if (!a.images)
        return 2;
    int rc = parse(argc, argv, &a);
    long long top = 5, layer = -1, losses = 0;
    if (rc == 0 && ((a.top && cli_int("--top", a.top, 1, 1000, &top)) ||
                    (a.layer && cli_int("--layer", a.layer, 0, 1000000, &layer)) ||
                    (a.losses && cli_int(a.first ? "--first" : "--top-losses", a.losses, 1, 10000,
                                         &losses))))
        rc = -1;
    if (rc != 0) {
        free(a.images);
        return rc > 0 ? 0 : 1;
    }
    inf_init();
    rm_model *m = NULL;
    xpl *x = NULL;
    pt_err e;
    xpl_opts o = { .layer = (int)layer, .cls = -1, .top = (int)top, .in_order = a.first != NULL };
    int code = 0;
    if (inf_model_open(a.model, 0, RUN_NORM_AUTO, &m, &e) != PT_OK ||
        xpl_new(m, &x, &e) != PT_OK ||
        xpl_layer_check(m, layer >= 0 ? (int)layer : xpl_default_layer(m), &e) != PT_OK) {
        fprintf(stderr, "petal-tui: explain: %s\n", e.msg);
        code = e.code == PT_EUSAGE ? 1 : 2;
    }
    if (!code && a.cls && (o.cls = xpl_class_parse(m, a.cls)) < 0) {
        fprintf(stderr, "petal-tui: explain: %s: no class '%s' (its classes: 0-%d, or a name "
                "as `petal-tui predict` prints them)\n", a.model, a.cls,
                inf_model_classes(m) - 1);
        code = 1;
    }
    if (!code && util_mkdirs(a.out, &e) != PT_OK) {
        fprintf(stderr, "petal-tui: explain: %s\n", e.msg);
        code = 2;
    }
    if (!code)
        code = losses ? run_losses(x, m, (int)losses, &a, &o) : run_images(x, m, &a, &o);
    xpl_free(x);
    inf_model_close(m);
    free(a.images);
    return code;
}
