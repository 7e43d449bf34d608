/* explain: Grad-CAM maps against PyTorch's on the committed graphs
 * (tests/data/gradcam/make_gradcam.py), the default layer, the workbench's call, and
 * `petal-tui explain` on files and a run's top losses. */
#include "tests/t.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "infer/explain.h"
#include "infer/runmodel.h"
#include "io/png.h"
#include "nn/nn.h"
#include "nn/nn_models.h"
#include "tests/fixtures.h"
#include "tests/onnx_writer.h"

#define REF "tests/data/gradcam/gradcam.ref"

/* make_gradcam.py's image: byte (y, x, c) = (37 x + 91 y + 53 c + 5 ((x y) mod 17)) mod 256. */
static uint8_t *ref_image(int s)
{
    uint8_t *b = malloc((size_t)s * s * 3);
    for (int y = 0; b && y < s; y++)
        for (int x = 0; x < s; x++)
            for (int c = 0; c < 3; c++)
                b[((size_t)y * s + x) * 3 + c] =
                    (uint8_t)((37 * x + 91 * y + 53 * c + 5 * ((x * y) % 17)) % 256);
    return b;
}

typedef struct ref_case {
    char model[256], tensor[256];
    int node, cls, pred, h, w;
    float *map;
} ref_case;

/* The next case of the reference file (1), or 0 at its end, -1 damaged. */
static int next_case(char **p, ref_case *c)
{
    char *s = *p;
    while (*s == '#')
        s = strchr(s, '\n') ? strchr(s, '\n') + 1 : s + strlen(s);
    if (!*s)
        return 0;
    if (sscanf(s, "case %255s %d %255s %d %d %d %d", c->model, &c->node, c->tensor, &c->cls,
               &c->pred, &c->h, &c->w) != 7 || !strchr(s, '\n'))
        return -1;
    s = strchr(s, '\n') + 1;
    c->map = malloc((size_t)c->h * c->w * sizeof *c->map);
    for (int i = 0; c->map && i < c->h * c->w; i++)
        c->map[i] = strtof(s, &s);
    while (*s == ' ' || *s == '\n')
        s++;
    *p = s;
    return c->map ? 1 : -1;
}

TEST(explain_maps_equal_pytorchs_on_the_committed_graphs)
{
    char *text = fx_slurp(REF);
    T_REQUIRE(text != NULL);
    char *p = text;
    ref_case c;
    int n = 0, r, graphs = 0;
    char open_path[256] = "";
    rm_model *m = NULL;
    xpl *x = NULL;
    pt_err e;
    inf_init();
    while ((r = next_case(&p, &c)) == 1) {
        if (strcmp(open_path, c.model)) {
            xpl_free(x);
            inf_model_close(m);
            x = NULL;
            T_REQUIRE(inf_model_open(c.model, 0, RUN_NORM_AUTO, &m, &e) == PT_OK);
            T_REQUIRE(xpl_new(m, &x, &e) == PT_OK);
            util_copy(open_path, sizeof open_path, c.model);
            graphs++;
            /* The first layer of each graph is the GlobalAveragePool's input. */
            T_CHECKF(xpl_default_layer(m) == c.node, "%s: default layer %d, PyTorch's GAP "
                     "reads node %d", c.model, xpl_default_layer(m), c.node);
        }
        int h, w, ch;
        xpl_layer_shape(m, c.node, &h, &w, &ch);
        T_CHECKF(h == c.h && w == c.w, "%s node %d: %dx%d, %s is %dx%d", c.model, c.node, h, w,
                 c.tensor, c.h, c.w);
        const int S = m->image_size, k = m->n_classes;
        uint8_t *img = ref_image(S);
        float *map = malloc((size_t)h * w * sizeof *map);
        double *probs = malloc((size_t)k * sizeof *probs);
        T_REQUIRE(img && map && probs);
        T_REQUIRE(xpl_cam(x, img, c.node, c.cls, probs, map, &e) == PT_OK);
        T_CHECKF(inf_argmax(probs, k) == c.pred, "%s: predicted %d, PyTorch %d", c.model,
                 inf_argmax(probs, k), c.pred);
        double worst = 0;
        for (int i = 0; i < h * w && h == c.h && w == c.w; i++)
            worst = fmax(worst, fabs(map[i] - c.map[i]));
        T_CHECKF(worst <= 1e-4, "%s node %d class %d: the map is %g from PyTorch's", c.model,
                 c.node, c.cls, worst);
        n++;
        free(img);
        free(map);
        free(probs);
        free(c.map);
    }
    T_CHECK(r == 0);
    T_CHECKF(n == 14 && graphs == 3, "%d cases of %d graphs", n, graphs);
    xpl_free(x);
    inf_model_close(m);
    free(text);
}

/* The built-in nets: the map the GAP reads (through the activation fused into the BN
 * before it); a tf2onnx Keras net with a ReduceMean head: its input; a Flatten head:
 * the last map; no classifier at all: refused. */
TEST(explain_default_layer_is_the_map_the_pooling_reads)
{
    pt_err e;
    nn_model *net = nn_model_new(16, 16, 3);
    int a = nn_relu(net, nn_batchnorm(net, nn_conv2d(net, nn_input(net), 8, 3, 3, 2, 1, 1, 0)));
    int g = nn_gap(net, a);
    T_REQUIRE(nn_model_finalize(net, nn_dense(net, nn_dropout(net, g, 0.2f), 3), &e) == PT_OK);
    rm_model m = { .net = net, .image_size = 16, .n_classes = 3, .source = "built-in" };
    T_EQ_INT(xpl_default_layer(&m), a);
    T_CHECK(xpl_layer_check(&m, a, &e) == PT_OK);
    T_CHECK(xpl_layer_check(&m, g, &e) == PT_EUSAGE && strstr(e.msg, "not a map"));
    T_CHECK(xpl_layer_check(&m, 999, &e) == PT_EUSAGE && strstr(e.msg, "0-"));
    nn_model_free(net);

    char path[4200];
    const ow_head heads[3] = { OW_GAP, OW_FLATTEN, OW_NOTOP };
    for (int h = 0; h < 3; h++) {
        util_path(path, sizeof path, "%s/keras-%d.onnx", t_tmpdir(), h);
        T_REQUIRE(ow_keras_net(path, 32, heads[h], 4, 5) == 0);
        rm_model *k = NULL;
        int rc = inf_model_open(path, 0, RUN_NORM_AUTO, &k, &e);
        if (heads[h] == OW_NOTOP) {
            T_CHECKF(rc != PT_OK && strstr(e.msg, "classifier"), "a feature extractor: %s",
                     e.msg);
            inf_model_close(k);
            continue;
        }
        T_REQUIRE(rc == PT_OK);
        const int d = xpl_default_layer(k);
        int hh, ww, cc;
        xpl_layer_shape(k, d, &hh, &ww, &cc);
        /* Two stride-2 convs: 32 -> 16 -> 8, 16 channels; the second's ReLU. */
        T_CHECKF(hh == 8 && ww == 8 && cc == 16, "head %d: layer %d is %dx%dx%d", h, d, hh, ww,
                 cc);
        nn_node_info in;
        nn_node_get(k->net, d, &in);
        T_CHECKF(in.op == NN_OP_RELU, "head %d: layer %d is a %s", h, d, nn_op_name(in.op));
        xpl *x = NULL;
        T_CHECK(xpl_new(k, &x, &e) == PT_OK);
        xpl_free(x);
        inf_model_close(k);
    }
}

/* The workbench's call on an image of another size: its centre square is what the
 * model sees; the maps are xpl_cam's and the overlays their colours over the square. */
TEST(explain_view_image_gives_maps_and_overlays)
{
    pt_err e;
    rm_model *m = NULL;
    inf_init();
    T_REQUIRE(inf_model_open("tests/data/export/small-8-16.onnx", 0, RUN_NORM_AUTO, &m, &e) ==
              PT_OK);
    xpl *x = NULL;
    T_REQUIRE(xpl_new(m, &x, &e) == PT_OK);
    const int H = 40, W = 56;
    uint8_t *rgb = malloc((size_t)H * W * 3), img[16 * 16 * 3];
    T_REQUIRE(rgb != NULL);
    for (int i = 0; i < H * W * 3; i++)
        rgb[i] = (uint8_t)((i * 7) % 251);
    xpl_view v;
    T_REQUIRE(xpl_view_image(x, rgb, H, W, -1, 3, &v, &e) == PT_OK);
    T_CHECK(v.layer == 7 && v.mh == 4 && v.mw == 4 && v.side == H && v.cls == 3);
    T_CHECK(v.map[0] && v.map[1] && v.overlay[0] && v.overlay[1]);
    T_REQUIRE(xpl_prepare(m, rgb, H, W, img) == PT_OK);
    float map[16];
    double probs[5];
    for (int k = 0; k < 2; k++) {
        T_REQUIRE(xpl_cam(x, img, 7, k ? 3 : v.pred, probs, map, &e) == PT_OK);
        T_CHECK(memcmp(map, v.map[k], sizeof map) == 0);
    }
    T_CHECK(inf_argmax(probs, 5) == v.pred && fabs(probs[v.pred] - v.probs[v.pred]) < 1e-12);
    /* The overlay's top-left pixel: 0.6 of the square's pixel and 0.4 of jet(map[0]). */
    uint8_t jet[3];
    xpl_jet(v.map[0][0], jet);
    const int x0 = (W - H) / 2;
    for (int c = 0; c < 3; c++) {
        int want = (int)lrintf(0.6f * rgb[(size_t)x0 * 3 + c] + 0.4f * jet[c]);
        T_CHECKF(abs(v.overlay[0][c] - want) <= 1, "channel %d: %d, want %d", c,
                 v.overlay[0][c], want);
    }
    xpl_view_free(&v);
    free(rgb);
    xpl_free(x);
    inf_model_close(m);
}

TEST(explain_colour_map_and_upsampling)
{
    uint8_t c[3];
    xpl_jet(0.0f, c);
    T_CHECK(c[0] == 0 && c[1] == 0 && c[2] == 128);
    xpl_jet(1.0f, c);
    T_CHECK(c[0] == 128 && c[1] == 0 && c[2] == 0);
    xpl_jet(0.5f, c);
    T_CHECK(c[0] == 128 && c[1] == 255 && c[2] == 128);
    const float m[4] = { 0, 1, 1, 0 };
    float up[16];
    xpl_upsample(m, 2, 2, up, 4, 4);
    /* Half-pixel centres: the corners keep the corners, (1, 1) mixes 3/4 and 1/4. */
    T_CHECK(up[0] == 0.0f && up[3] == 1.0f && up[12] == 1.0f && up[15] == 0.0f);
    T_CHECKF(fabsf(up[5] - 0.375f) < 1e-6f, "%g", (double)up[5]);
}

static void grab_node(void *arg, int node, const float *y, size_t count)
{
    float **a = arg;
    if (node == (int)(intptr_t)a[1])
        memcpy(a[0], y, count * sizeof *y);
}

/* The built-in nets (small, mobilenetv2, both with batch norm and dropout before the
 * head): the default layer is the map the GAP reads, and its map for class c is, as the
 * head is GAP -> dropout -> dense, ReLU(sum_k W[k][c] A_k) normalised: the gradient of
 * the logit is W[k][c] / (h w) at every pixel. A from an inference context. */
TEST(explain_builtin_nets_default_map_is_the_heads_weights)
{
    pt_err e;
    for (int net = 0; net < 2; net++) {
        const int S = net ? 64 : 32, K = 4;
        nn_model *m = net ? nn_build_mobilenetv2(S, S, K, 0.35f, 0.2f, &e)
                          : nn_build_small(S, S, K, 0.3f, &e);
        T_REQUIRE(m != NULL);
        nn_model_init_params(m, 3 + (uint64_t)net);
        rm_model rm = { .net = m, .image_size = S, .n_classes = K, .source = "built-in" };
        const int L = xpl_default_layer(&rm);
        int head = nn_output_node(m), gap = -1;
        for (int i = 0; i < nn_node_count(m); i++) {
            nn_node_info in;
            nn_node_get(m, i, &in);
            if (in.op == NN_OP_GAP)
                gap = i;
        }
        nn_node_info gi, hi;
        T_REQUIRE(gap >= 0 && nn_node_get(m, gap, &gi) == PT_OK);
        T_CHECKF(L == gi.in[0], "net %d: default %d, the GAP reads %d", net, L, gi.in[0]);
        nn_node_get(m, head, &hi);
        int h, w, c;
        xpl_layer_shape(&rm, L, &h, &w, &c);
        uint8_t *img = ref_image(S);
        float *A = malloc((size_t)h * w * c * sizeof *A), *map = malloc((size_t)h * w * 4);
        float *x = malloc((size_t)S * S * 3 * sizeof *x);
        T_REQUIRE(img && A && map && x);
        for (int i = 0; i < S * S * 3; i++)
            x[i] = (float)img[i] * (1.0f / 255.0f); /* as the pool scales bytes */
        nn_ctx *ci = nn_ctx_new_infer(m, 1, &e);
        T_REQUIRE(ci != NULL);
        void *arg[2] = { A, (void *)(intptr_t)L };
        nn_ctx_on_node(ci, grab_node, arg);
        const float *z = nn_forward(ci, x, 1, 0, 0, 0);
        T_REQUIRE(z != NULL);
        float logits[4];
        memcpy(logits, z, sizeof logits);
        xpl *xp = NULL;
        T_REQUIRE(xpl_new(&rm, &xp, &e) == PT_OK);
        const float *W = nn_params(m) + hi.param_offset;
        for (int cls = 0; cls < K; cls++) {
            double probs[4];
            int rc = xpl_cam(xp, img, L, cls, probs, map, &e);
            T_CHECKF(rc == PT_OK, "net %d: %s", net, e.msg);
            if (rc != PT_OK)
                break;
            double mx = 0, worst = 0;
            double *v = malloc((size_t)h * w * sizeof *v);
            T_REQUIRE(v != NULL);
            for (int p = 0; p < h * w; p++) {
                double s = 0;
                for (int k = 0; k < c; k++)
                    s += (double)W[k * K + cls] * A[(size_t)p * c + k];
                v[p] = s > 0 ? s : 0;
                mx = fmax(mx, v[p]);
            }
            for (int p = 0; p < h * w; p++)
                worst = fmax(worst, fabs((mx > 0 ? v[p] / mx : 0) - map[p]));
            free(v);
            T_CHECKF(worst < 1e-6, "net %d class %d: %g off", net, cls, worst);
            double ref[4];
            inf_softmax(logits, K, ref);
            T_CHECKF(fabs(ref[cls] - probs[cls]) < 1e-12, "net %d: p %g, inference %g", net,
                     probs[cls], ref[cls]);
        }
        T_CHECK(nn_model_input_grad(m) == 1);
        xpl_free(xp);
        T_CHECK(nn_model_input_grad(m) == 0); /* put back */
        nn_ctx_free(ci);
        free(img);
        free(A);
        free(map);
        free(x);
        nn_model_free(m);
    }
    /* At 32 px MobileNetV2's last map is 1 x 1: the default is the last larger one. */
    nn_model *m = nn_build_mobilenetv2(32, 32, 4, 0.35f, 0.2f, &e);
    T_REQUIRE(m != NULL);
    rm_model rm = { .net = m, .image_size = 32, .n_classes = 4, .source = "built-in" };
    int h, w, c;
    xpl_layer_shape(&rm, xpl_default_layer(&rm), &h, &w, &c);
    T_CHECKF(h == 2 && w == 2, "%dx%dx%d", h, w, c);
    nn_model_free(m);
}

/* The CLI's stdout (malloc'd) and exit status; stderr into *err. */
static int cli(const char *args, char **out, char **err)
{
    char cmd[20000], errf[4200];
    util_path(errf, sizeof errf, "%s/explain-stderr.txt", t_tmpdir());
    util_path(cmd, sizeof cmd, "%s explain %s 2>'%s'", t_bin(), args, errf);
    int rc = t_run(cmd, out);
    *err = fx_slurp(errf);
    return rc;
}

static int png_size(const char *path, int *w, int *h)
{
    uint8_t *buf = NULL, *rgb = NULL;
    size_t len = 0;
    pt_err e;
    if (util_read_file(path, &buf, &len, &e) != PT_OK)
        return -1;
    int rc = png_decode_rgb(buf, len, &rgb, w, h, &e);
    free(buf);
    free(rgb);
    return rc;
}

TEST(explain_cli_writes_a_png_per_image_and_refuses_what_it_cannot)
{
    char dir[4200], img[4200], bad[4200], out[4200], args[16384];
    util_copy(dir, sizeof dir, t_tmpdir());
    util_path(img, sizeof img, "%s/rose.jpg", dir);
    util_path(bad, sizeof bad, "%s/broken.jpg", dir);
    util_path(out, sizeof out, "%s/cams", dir);
    uint8_t *jpg;
    size_t len;
    T_REQUIRE(fx_demo_jpeg(2, 3, 64, &jpg, &len) == 0);
    FILE *f = fopen(img, "wb");
    T_REQUIRE(f && fwrite(jpg, 1, len, f) == len && fclose(f) == 0);
    f = fopen(bad, "wb");
    T_REQUIRE(f && fwrite(jpg, 1, len / 3, f) == len / 3 && fclose(f) == 0);
    free(jpg);
    const char *model = "tests/data/export/small-8-16.onnx";
    char *o, *e;
    util_path(args, sizeof args, "%s '%s' --class 'class 3' --top 3 --out '%s'", model, img, out);
    int rc = cli(args, &o, &e);
    T_CHECKF(rc == 0 && strstr(o, "rose.jpg\tclass ") && strstr(o, "cams/rose.png"),
             "exit %d:\n%s%s", rc, o, e);
    free(o);
    free(e);
    char png[4200];
    util_path(png, sizeof png, "%s/rose.png", out);
    int w = 0, h = 0;
    T_CHECK(png_size(png, &w, &h) == PT_OK);
    /* three 192 px panels side by side (16 px shown at 192), two rows */
    T_CHECKF(w == 2 * 8 + 3 * 192 + 2 * 8 && h > 2 * 192, "%dx%d", w, h);

    struct { const char *args, *says; int code; } no[] = {
        { "%s '%s' '%s/missing.jpg' --out '%s'", "missing.jpg", 2 },
        { "%s '%s' '%s/broken.jpg' --out '%s'", "broken.jpg", 2 },
        { "%s '%s' --class tulip --out '%s'", "no class 'tulip'", 1 },
        { "%s '%s' --layer 8 --out '%s'", "not a map", 1 },
        { "%s '%s' --layer 99 --out '%s'", "nodes 0-9", 1 },
        { "%s/notarun '%s' --out '%s'", "notarun", 1 },
    };
    mkdir(strcat(strcpy(args, dir), "/notarun"), 0755);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        if (i < 2)
            util_path(args, sizeof args, no[i].args, model, img, dir, out);
        else if (i < 5)
            util_path(args, sizeof args, no[i].args, model, img, out);
        else
            util_path(args, sizeof args, no[i].args, dir, img, out);
        rc = cli(args, &o, &e);
        T_CHECKF(rc != 0 && (no[i].code != 2 || rc == 2) && e && strstr(e, no[i].says),
                 "%s: exit %d:\n%s%s", args, rc, o, e);
        if (i < 2) /* the good image still explained */
            T_CHECKF(strstr(o, "rose.png") != NULL, "%s", o);
        free(o);
        free(e);
    }
    util_path(args, sizeof args, "tests/data/export/small-8-16-int8.onnx '%s' --out '%s'", img,
              out);
    rc = cli(args, &o, &e);
    T_CHECKF(rc == 1 && strstr(e, "float model"), "exit %d:\n%s%s", rc, o, e);
    free(o);
    free(e);
    util_path(png, sizeof png, "%s/keras-notop.onnx", dir);
    T_REQUIRE(ow_keras_net(png, 32, OW_NOTOP, 4, 5) == 0);
    util_path(args, sizeof args, "'%s' '%s' --out '%s'", png, img, out);
    rc = cli(args, &o, &e);
    T_CHECKF(rc == 1 && strstr(e, "classifier"), "exit %d:\n%s%s", rc, o, e);
    free(o);
    free(e);
}

/* predict's CSV row for record id (its id column), or NULL. */
static const char *csv_row(const char *csv, long long id)
{
    for (const char *q = csv; q && *q; q = strchr(q, '\n') ? strchr(q, '\n') + 1 : NULL)
        if (q != csv && atoll(q) == id)
            return q;
    return NULL;
}

/* p(class named name) in a predict row of 3 classes with --top 3; -1 when absent. */
static double csv_prob(const char *row, const char *name, char *pred, size_t n)
{
    char buf[1024];
    util_copy(buf, sizeof buf, row);
    char *nl = strchr(buf, '\n');
    if (nl)
        *nl = '\0';
    char *f[16];
    int k = 0;
    for (char *s = buf; k < 16 && s; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL)
        f[k++] = s;
    for (int i = 0; i + 1 < k; i++)
        if (strchr(f[i], ','))
            *strchr(f[i], ',') = '\0';
    if (k < 8)
        return -1;
    util_copy(pred, n, f[2]);
    for (int i = 2; i + 1 < k; i += 2)
        if (!strcmp(f[i], name))
            return atof(f[i + 1]);
    return -1;
}

/* A run trained here on 3 classes: its validation records' losses from predict's
 * probabilities; explain --top-losses lists the highest, highest first, each with
 * predict's class and probability, and draws them; a run whose data is gone is
 * refused saying what to do. */
TEST(explain_top_losses_of_a_run)
{
    char dir[4200], run[4200], args[16384], out[4200];
    util_copy(dir, sizeof dir, t_tmpdir());
    static const long long tr[3] = { 24, 24, 24 }, va[3] = { 8, 8, 8 };
    const char *d = fx_dataset(dir, 3, tr, va, 0, 32, 16);
    T_REQUIRE(d != NULL);
    char data[4200];
    util_copy(data, sizeof data, d);
    util_path(run, sizeof run, "%s/run", dir);
    util_path(out, sizeof out, "%s/losses", dir);
    char *o, *e;
    util_path(args, sizeof args,
              "%s --headless --data '%s' --out '%s' --epochs 2 --replicas 1 --workers 1 "
              "--batch-per-replica 8 --widths 8,16 --image-size 32 >/dev/null 2>&1",
              t_bin(), data, run);
    T_REQUIRE(t_run(args, &o) == 0);
    free(o);
    util_path(args, sizeof args, "%s predict '%s' '%s' --split val --top 3 --tta none "
              "2>/dev/null", t_bin(), run, data);
    char *csv;
    T_REQUIRE(t_run(args, &csv) == 0);
    util_path(args, sizeof args, "'%s' --top-losses 5 --out '%s'", run, out);
    int rc = cli(args, &o, &e);
    T_REQUIRE(rc == 0);
    const char *q = strchr(o, '\n');
    double last = 1e300;
    int rows = 0;
    for (; q && q[1] && q[1] != '/'; q = strchr(q + 1, '\n')) {
        int rank;
        long long rec;
        char tn[64], pn[64], pp[64];
        double prob, loss;
        int got = sscanf(q + 1, "%d\t%lld\t%63[^\t]\t%63[^\t]\t%lf\t%lf", &rank, &rec, tn,
                         pn, &prob, &loss);
        T_CHECKF(got == 6, "%s", o);
        if (got != 6)
            break;
        const char *row = csv_row(csv, rec);
        T_REQUIRE(row != NULL);
        double pl = csv_prob(row, tn, pp, sizeof pp);
        T_CHECKF(rank == rows + 1 && loss <= last, "row %d: rank %d, loss %g after %g",
                 rows, rank, loss, last);
        T_CHECKF(!strcmp(pp, pn), "record %lld: predicted %s, predict says %s", rec, pn, pp);
        T_CHECKF(pl < 0 || pl < 1e-4 || fabs(-log(pl) - loss) < 1e-3 * fmax(1, loss),
                 "record %lld: loss %g, predict's p(true) %g", rec, loss, pl);
        last = loss;
        rows++;
    }
    T_CHECKF(rows == 5, "%d rows:\n%s", rows, o);
    /* every record with a higher loss than the fifth is listed */
    for (long long r = 0; r < 24; r++) {
        const char *row = csv_row(csv, r);
        char pp[64], tn[64];
        T_REQUIRE(row != NULL);
        int label = atoi(strchr(row, ',') + 1);
        util_fmt(tn, sizeof tn, "flower%02d", label);
        double pl = csv_prob(row, tn, pp, sizeof pp);
        T_CHECKF(pl >= 0, "record %lld: no probability of %s in predict's row", r, tn);
        if (pl >= 1e-4 && -log(pl) > last + 1e-3) {
            char needle[64];
            util_fmt(needle, sizeof needle, "\t%lld\t", r);
            T_CHECKF(strstr(o, needle) != NULL, "record %lld (loss %g) missing", r, -log(pl));
        }
    }
    free(o);
    free(e);
    char png[4200];
    util_path(png, sizeof png, "%s/top-losses.png", out);
    int w = 0, h = 0;
    T_CHECK(png_size(png, &w, &h) == PT_OK);
    T_CHECKF(w == 2 * 8 + 4 * 192 + 3 * 8 && h > 2 * 192, "%dx%d", w, h);

    /* --first 6: the first six records in file order, with predict's classes */
    util_path(args, sizeof args, "'%s' --first 6 --out '%s'", run, out);
    rc = cli(args, &o, &e);
    T_CHECKF(rc == 0, "exit %d:\n%s%s", rc, o, e);
    rows = 0;
    for (q = strchr(o, '\n'); rc == 0 && q && q[1] && q[1] != '/'; q = strchr(q + 1, '\n')) {
        int rank;
        long long rec;
        char tn[64], pn[64], pp[64];
        double prob, loss;
        T_REQUIRE(sscanf(q + 1, "%d\t%lld\t%63[^\t]\t%63[^\t]\t%lf\t%lf", &rank, &rec, tn, pn,
                         &prob, &loss) == 6);
        T_CHECKF(rec == rows && rank == rows + 1, "row %d: rank %d, record %lld", rows, rank, rec);
        csv_prob(csv_row(csv, rec), tn, pp, sizeof pp);
        T_CHECKF(!strcmp(pp, pn), "record %lld: predicted %s, predict says %s", rec, pn, pp);
        rows++;
    }
    T_CHECKF(rows == 6, "%d rows:\n%s", rows, o);
    free(o);
    free(e);
    util_path(png, sizeof png, "%s/validation.png", out);
    T_CHECK(png_size(png, &w, &h) == PT_OK && w > 4 * 192);
    util_path(args, sizeof args, "'%s' --first 6 --top-losses 2 --out '%s'", run, out);
    rc = cli(args, &o, &e);
    T_CHECKF(rc == 1 && strstr(e, "not both"), "exit %d:\n%s%s", rc, o, e);
    free(o);
    free(e);
    free(csv);
    util_path(args, sizeof args, "'%s' --top-losses 5 --out '%s'", run, out);

    /* the data gone */
    char moved[4200];
    util_path(moved, sizeof moved, "%s-moved", data);
    T_REQUIRE(rename(data, moved) == 0);
    rc = cli(args, &o, &e);
    T_CHECKF(rc != 0 && strstr(e, "put it back"), "exit %d:\n%s%s", rc, o, e);
    T_CHECK(rename(moved, data) == 0);
    free(o);
    free(e);
    /* an ONNX file has no data */
    util_path(args, sizeof args, "tests/data/export/small-8-16.onnx --top-losses 5 --out '%s'",
              out);
    rc = cli(args, &o, &e);
    T_CHECKF(rc == 1 && strstr(e, "run folder"), "exit %d:\n%s%s", rc, o, e);
    free(o);
    free(e);
}

/* A run that took its image size from its dataset, the dataset moved away: explain
 * cannot build the net and says what to do (put the data back: explain has no
 * --size), exit 2, naming the folder. */
TEST(explain_a_run_sized_by_its_moved_dataset_says_to_put_it_back)
{
    char dir[4200], run[4200], args[16384], data[4200], moved[4200];
    util_copy(dir, sizeof dir, t_tmpdir());
    static const long long tr[2] = { 8, 8 }, va[2] = { 4, 4 };
    const char *d = fx_dataset(dir, 2, tr, va, 0, 32, 16);
    T_REQUIRE(d != NULL);
    util_copy(data, sizeof data, d);
    util_path(run, sizeof run, "%s/run", dir);
    char *o, *e;
    util_path(args, sizeof args,
              "%s --headless --data '%s' --out '%s' --epochs 1 --replicas 1 --workers 1 "
              "--batch-per-replica 8 --widths 8 >/dev/null 2>&1",
              t_bin(), data, run);
    T_REQUIRE(t_run(args, &o) == 0);
    free(o);
    util_path(moved, sizeof moved, "%s-moved", data);
    T_REQUIRE(rename(data, moved) == 0);
    util_path(args, sizeof args, "'%s' --first 2 --out '%s/cams'", run, dir);
    int rc = cli(args, &o, &e);
    T_CHECKF(rc == 2 && strstr(e, "put the dataset back") && strstr(e, run) &&
                 !strstr(e, "give --size\n"),
             "exit %d:\n%s%s", rc, o, e);
    free(o);
    free(e);
    T_CHECK(rename(moved, data) == 0);
}
