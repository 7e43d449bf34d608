/* make_seeds — writes the fuzz harnesses' seed corpora (tests/fuzz/corpus/TARGET/)
 * with the project's own writers, so every seed is a file petal-tui itself makes or
 * reads: shards from the TFRecord and Example writers, JPEGs from the encoder,
 * PNGs from the PNG writer, checkpoints from ckpt_save(), the run folder's config
 * from cfg_format(), and the ONNX fixtures the tests already use (written by
 * tests/data/onnx/make_fixtures.py and tests/data/import/make_fixtures.py). The
 * terminal replies are written here in the forms the probe's queries are answered
 * in (DA1 with and without sixel's 4, XTSMGRAPHICS answers and a refusal, the cell
 * size, OSC 11 ended by ST or by BEL), each after or before the DA1 fence.
 *
 *   make fuzz-seeds        (runs: build/tests/fuzz-seeds tests/fuzz/corpus)
 *
 * Deterministic: the same seeds on every run. Each corpus stays a few KB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/util.h"
#include "config.h"
#include "data/jpeg.h"
#include "io/example.h"
#include "io/png.h"
#include "io/tfrecord.h"
#include "run/checkpoint.h"

static const char *g_out;

static void die(const char *what, const pt_err *e)
{
    fprintf(stderr, "fuzz-seeds: %s: %s\n", what, e ? e->msg : "failed");
    exit(1);
}

static const char *path_of(const char *target, const char *name)
{
    static char p[4200];
    pt_err e;
    char dir[4200];
    util_path(dir, sizeof dir, "%s/%s", g_out, target);
    if (util_mkdirs(dir, &e) != PT_OK)
        die(dir, &e);
    util_path(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static void put(const char *target, const char *name, const void *data, size_t len)
{
    pt_err e;
    if (util_write_file_atomic(path_of(target, name), data, len, &e) != PT_OK)
        die(name, &e);
}

/* A w x h picture with edges and colours, so the JPEG has all of its blocks' kinds. */
static uint8_t *picture(int w, int h, int seed)
{
    uint8_t *p = malloc((size_t)w * h * 3);
    if (!p)
        die("picture", NULL);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *q = p + ((size_t)y * w + x) * 3;
            q[0] = (uint8_t)(x * 255 / (w > 1 ? w - 1 : 1));
            q[1] = (uint8_t)(((x / 4 + y / 4 + seed) & 1) ? 220 : 30);
            q[2] = (uint8_t)(y * 255 / (h > 1 ? h - 1 : 1));
        }
    return p;
}

/* The JPEG of picture(w, h, seed) at quality q, malloc'd. */
static uint8_t *jpeg(jpg_codec *c, int w, int h, int seed, int q, size_t *len)
{
    uint8_t *rgb = picture(w, h, seed);
    const uint8_t *out;
    pt_err e;
    if (jpg_encode(c, rgb, w, h, q, &out, len, &e) != PT_OK)
        die("jpeg", &e);
    uint8_t *copy = malloc(*len);
    if (!copy)
        die("jpeg", NULL);
    memcpy(copy, out, *len);
    free(rgb);
    return copy;
}

/* A record as the shard writer makes it: image, class (labeled) or id (test). */
static uint8_t *record(const uint8_t *img, size_t ilen, int label, const char *id, size_t *len)
{
    ex_builder *b = ex_builder_new();
    if (!b || ex_add_bytes(b, "image", img, ilen) != PT_OK)
        die("example", NULL);
    if (label >= 0) {
        int64_t cls = label;
        if (ex_add_int64(b, "class", &cls, 1) != PT_OK)
            die("example", NULL);
    }
    if (id && ex_add_bytes(b, "id", id, strlen(id)) != PT_OK)
        die("example", NULL);
    uint8_t *out;
    if (ex_serialize(b, &out, len) != PT_OK)
        die("example", NULL);
    ex_builder_free(b);
    return out;
}

static void examples(jpg_codec *c)
{
    size_t ilen, len;
    uint8_t *img = jpeg(c, 8, 8, 0, 75, &ilen);
    uint8_t *r = record(img, ilen, 3, "a1b2c3d4e", &len);
    put("example", "labeled", r, len);
    free(r);
    r = record(img, ilen, -1, "0f9e8d7c6", &len);
    put("example", "unlabeled", r, len);
    free(r);
    free(img);

    /* Every kind, a list of several, an empty list, a repeated key. */
    ex_builder *b = ex_builder_new();
    const float f[] = { 0.5f, -2.0f, 1e-3f };
    const int64_t i[] = { 0, -1, 1LL << 40 };
    const void *bytes[] = { "x", "", "yz" };
    const size_t lens[] = { 1, 0, 2 };
    if (!b || ex_add_float(b, "weights", f, 3) || ex_add_int64(b, "class", i, 3) ||
        ex_add_bytes_list(b, "tags", bytes, lens, 3) || ex_add_int64(b, "empty", NULL, 0) ||
        ex_add_bytes(b, "id", "first", 5) || ex_add_bytes(b, "id", "second", 6))
        die("example", NULL);
    uint8_t *out;
    if (ex_serialize(b, &out, &len) != PT_OK)
        die("example", NULL);
    put("example", "kinds", out, len);
    free(out);
    ex_builder_free(b);
}

static void shards(jpg_codec *c)
{
    pt_err e;
    tfr_writer *w;
    const char *p = path_of("tfrecord", "three-records");
    if (tfr_writer_open(&w, p, &e) != PT_OK)
        die(p, &e);
    for (int k = 0; k < 3; k++) {
        size_t ilen, len;
        uint8_t *img = jpeg(c, 8, 8, k, 60, &ilen);
        uint8_t *r = record(img, ilen, k, NULL, &len);
        if (tfr_write(w, r, len, &e) != PT_OK)
            die(p, &e);
        free(r);
        free(img);
    }
    if (tfr_writer_close(w, &e) != PT_OK)
        die(p, &e);

    /* Records of 0, 1 and 300 bytes; and a file with none. */
    p = path_of("tfrecord", "sizes");
    if (tfr_writer_open(&w, p, &e) != PT_OK)
        die(p, &e);
    uint8_t big[300];
    for (size_t k = 0; k < sizeof big; k++)
        big[k] = (uint8_t)(k * 7);
    if (tfr_write(w, "", 0, &e) || tfr_write(w, "z", 1, &e) || tfr_write(w, big, sizeof big, &e) ||
        tfr_writer_close(w, &e))
        die(p, &e);
    put("tfrecord", "empty", "", 0);
}

/* The entropy-coded data of picture(w, h) at quality 75, behind the frame size
 * (height, width, big-endian): fuzz_jpeg splices such inputs into its own 16 x 16
 * JPEG's tables, which are the same at that quality. */
static void spliced(jpg_codec *c, int w, int h, int claim_w, int claim_h, const char *name)
{
    size_t len;
    uint8_t *j = jpeg(c, w, h, 1, 75, &len);
    size_t at = 2;
    while (at + 4 <= len && j[at] == 0xff) {
        uint8_t marker = j[at + 1];
        at += 2 + ((size_t)j[at + 2] << 8 | j[at + 3]);
        if (marker == 0xda)
            break;
    }
    if (at + 2 > len)
        die("jpeg: no SOS", NULL);
    size_t body = len - 2 - at;
    uint8_t *out = malloc(4 + body);
    if (!out)
        die("jpeg", NULL);
    out[0] = (uint8_t)(claim_h >> 8);
    out[1] = (uint8_t)claim_h;
    out[2] = (uint8_t)(claim_w >> 8);
    out[3] = (uint8_t)claim_w;
    memcpy(out + 4, j + at, body);
    put("jpeg", name, out, 4 + body);
    free(out);
    free(j);
}

static void jpegs(jpg_codec *c)
{
    const struct { int w, h, q; const char *name; } j[] = {
        { 8, 8, 90, "8x8" }, { 17, 9, 50, "17x9" }, { 40, 24, 30, "40x24" }, { 1, 1, 100, "1x1" },
    };
    for (size_t k = 0; k < sizeof j / sizeof j[0]; k++) {
        size_t len;
        uint8_t *b = jpeg(c, j[k].w, j[k].h, (int)k, j[k].q, &len);
        put("jpeg", j[k].name, b, len);
        free(b);
    }
    spliced(c, 16, 16, 16, 16, "spliced-16x16");
    spliced(c, 32, 24, 32, 24, "spliced-32x24");
    spliced(c, 16, 16, 16384, 4096, "spliced-at-the-limit");
    spliced(c, 16, 16, 16385, 16, "spliced-over-the-side");
}

static void pngs(void)
{
    const struct { int w, h; const char *name; } p[] = { { 4, 3, "4x3" }, { 16, 16, "16x16" }, { 1, 1, "1x1" } };
    for (size_t k = 0; k < sizeof p / sizeof p[0]; k++) {
        uint8_t *rgb = picture(p[k].w, p[k].h, (int)k);
        uint8_t *out;
        size_t len;
        if (png_encode_rgb(rgb, p[k].w, p[k].h, &out, &len) != 0)
            die("png", NULL);
        put("png", p[k].name, out, len);
        free(out);
        free(rgb);
    }
}

static void checkpoints(void)
{
    float params[6] = { 0.5f, -1.0f, 2.0f, 0.0f, 1e-3f, -7.0f }, buffers[2] = { 0.1f, 0.9f };
    float m[6] = { 0 }, v[6] = { 1e-8f, 1e-8f, 1e-8f, 1e-8f, 1e-8f, 1e-8f };
    long long confusion[9] = { 5, 1, 0, 0, 4, 2, 1, 0, 6 };
    uint8_t history[40];
    for (size_t k = 0; k < sizeof history; k++)
        history[k] = (uint8_t)k;
    ckpt_data d = {
        .params = params, .n_params = 6, .buffers = buffers, .n_buffers = 2,
        .opt_m = m, .opt_v = v, .n_opt = 6, .confusion = confusion, .n_classes = 3,
        .history = history, .history_bytes = sizeof history,
        .config = "epochs = 3\nmodel = small\n",
    };
    d.progress.update = 12;
    d.progress.epoch = 1;
    d.progress.update_in_epoch = 4;
    d.progress.batches_consumed = 12;
    d.progress.seed = 42;
    d.progress.epoch_seconds = 1.5;
    d.progress.elapsed = 9.25;
    d.progress.loss_sum = 3.75;
    d.progress.examples = 64;
    d.progress.correct = 20;
    pt_err e;
    if (ckpt_save(path_of("checkpoint", "adam"), &d, &e) != PT_OK)
        die("checkpoint", &e);
    /* SGD (one moment), no confusion matrix or config: the optional sections absent. */
    d.opt_v = NULL;
    d.confusion = NULL;
    d.config = NULL;
    d.history_bytes = 0;
    if (ckpt_save(path_of("checkpoint", "sgd-bare"), &d, &e) != PT_OK)
        die("checkpoint", &e);
}

static void configs(void)
{
    static char text[65536];
    run_config c;
    cfg_defaults(&c);
    if (cfg_format(&c, text, sizeof text) != 0)
        die("config", NULL);
    put("config", "defaults", text, strlen(text));
    pt_err e;
    static const char *const set[][2] = {
        { "model", "runs/net.onnx" }, { "widths", "8,16,32" }, { "oversample", "max" },
        { "optimizer", "sgd" }, { "schedule", "cosine" }, { "lr-max", "0.0125" },
        { "augment", "perspective:0.35,flip:0.5,affine:0.8,mixup:0.2" },
        { "freeze-backbone", "yes" }, { "seed", "7" }, { "image-size", "64" },
    };
    for (size_t k = 0; k < sizeof set / sizeof set[0]; k++)
        if (cfg_set(&c, set[k][0], set[k][1], &e) != PT_OK)
            die("config", &e);
    if (cfg_format(&c, text, sizeof text) != 0)
        die("config", NULL);
    put("config", "changed", text, strlen(text));
    uint8_t *ex;
    size_t len;
    if (util_read_file("assets/config.example", &ex, &len, &e) != PT_OK)
        die("config", &e);
    put("config", "example", ex, len);
    free(ex);
    static const char hand[] =
        "# spaces, tabs, comments and spellings a person writes\n"
        "\n"
        "  epochs=2   # two\n"
        "\tlr-start = 1e-5\r\n"
        "oversample = 500\n"
        "schedule = exponential\n"
        "deterministic = off\n"
        "widths = auto\n"
        "augment = crop:1:scale=0.6:ratio=1:interp=bilinear,cutout:0.5:count=2:size=0.2,"
        "gridmask:0.3,color:0.8:brightness=0.2:contrast=0.2:saturation=0.2:hue=0.05\n"
        "init = pytorch\n"
        "data = /tmp/a b=c\n";
    put("config", "hand-written", hand, sizeof hand - 1);
}

static void replies(void)
{
    static const struct { const char *name, *bytes; } r[] = {
        /* a VT340-like DA1 with sixel (4), then each query answered before the fence */
        { "da1-sixel", "\033[?63;1;2;4;6;9;15;16;22;28c" },
        { "colors", "\033[?1;0;1024S\033[?63;1;2;4;6;9;15;16;22;28c" },
        { "geometry", "\033[?2;0;1000;1000S\033[?63;1;2;4;6;9;15;16;22;28c" },
        { "cell", "\033[6;20;10t\033[?63;1;2;4;6;9;15;16;22;28c" },
        { "bg-st", "\033]11;rgb:ffff/ffff/dddd\033\\\033[?63;1;2;4;6;9;15;16;22;28c" },
        { "bg-bel", "\033]11;rgb:1111/1111/1111\007\033[?62;4;22c" },
        /* DA1 without sixel; a short list */
        { "da1-plain", "\033[?65;1;9c" },
        { "da1-short", "\033[?62;4;22c" },
        /* a refusal (status 3), short hex digits, keys typed during the probe */
        { "refused", "\033[?2;3;0S\033[?63;4c" },
        { "short-hex", "\033]11;rgb:f/8/0\033\\" },
        { "typed", "q\033[A\033[?62;4c" },
    };
    for (size_t k = 0; k < sizeof r / sizeof r[0]; k++)
        put("term", r[k].name, r[k].bytes, strlen(r[k].bytes));
}

static void onnx_files(void)
{
    static const char *const f[] = {
        "tests/data/onnx/convnet.onnx", "tests/data/onnx/constant.onnx",
        "tests/data/onnx/quant.onnx", "tests/data/onnx/wire.onnx",
        "tests/data/import/flat.onnx",
    };
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        uint8_t *b;
        size_t len;
        pt_err e;
        if (util_read_file(f[k], &b, &len, &e) != PT_OK)
            die(f[k], &e);
        const char *name = strrchr(f[k], '/') + 1;
        put("onnx", name, b, len);
        free(b);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz-seeds OUT (run from the repository's root)\n");
        return 2;
    }
    g_out = argv[1];
    jpg_codec *c = jpg_codec_new();
    if (!c)
        die("jpeg codec", NULL);
    examples(c);
    shards(c);
    jpegs(c);
    pngs();
    checkpoints();
    configs();
    replies();
    onnx_files();
    jpg_codec_free(c);
    printf("fuzz-seeds: written under %s\n", g_out);
    return 0;
}
