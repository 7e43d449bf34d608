/* Tests of inference: the inference-only context (nn_ctx_new_infer), opening a run
 * for inference (infer/runmodel.h), the predict engine (infer/predict.h) and the
 * predict and ensemble commands. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/util.h"
#include "runs.h"
#include "nn/nn.h"
#include "nn/nn_models.h"
#include "t.h"

/* Inference logits of a training context and an inference one, bit for bit, and the
 * inference context's bytes against the training one's. */
static void check_infer_ctx(nn_model *m, int batch, const char *what)
{
    int h, w, ch;
    nn_model_input_shape(m, &h, &w, &ch);
    size_t px = (size_t)h * w * ch * batch;
    float *x = malloc(px * sizeof *x);
    T_REQUIRE(x != NULL);
    rng r;
    rng_seed(&r, 7);
    for (size_t i = 0; i < px; i++)
        x[i] = rng_float(&r);
    pt_err e;
    nn_ctx *ct = nn_ctx_new(m, batch, &e), *ci = nn_ctx_new_infer(m, batch, &e);
    T_REQUIRE(ct && ci);
    int k = nn_model_classes(m);
    for (int n = batch; n >= 1; n -= batch - 1) {
        const float *yt = nn_forward(ct, x, n, 0, 0, 0);
        const float *yi = nn_forward(ci, x, n, 0, 0, 0);
        T_REQUIRE(yt && yi);
        T_CHECKF(memcmp(yt, yi, (size_t)n * k * sizeof *yt) == 0,
                 "%s: inference logits differ from training's at batch %d", what, n);
        if (n == 1)
            break;
    }
    size_t bt = nn_ctx_bytes(ct), bi = nn_ctx_bytes(ci);
    printf("  %s batch %d: training context %.2f MB, inference %.2f MB (%.1f%%)\n", what, batch,
           bt / 1e6, bi / 1e6, 100.0 * bi / bt);
    T_CHECKF(bi * 2 < bt, "%s: inference context %zu bytes, training %zu", what, bi, bt);
    /* Training on an inference context is refused, never run on missing buffers. */
    T_CHECK(nn_forward(ci, x, 1, 1, 0, 0) == NULL);
    float *dl = calloc((size_t)k, sizeof *dl);
    T_CHECK(nn_backward(ci, dl) == PT_EUSAGE);
    T_CHECK(nn_grads(ci) == NULL);
    T_CHECK(nn_ctx_is_infer(ci) && !nn_ctx_is_infer(ct));
    nn_zero_grads(ci);
    free(dl);
    nn_ctx_free(ct);
    nn_ctx_free(ci);
    free(x);
}

TEST(predict_infer_ctx_small)
{
    pt_err e;
    nn_model *m = nn_build_small(32, 32, 5, 0.3f, &e);
    T_REQUIRE(m != NULL);
    nn_model_init_params(m, 3);
    check_infer_ctx(m, 8, "small 32px");
    nn_model_free(m);
    int widths[NN_SMALL_MAX_BLOCKS], strided[NN_SMALL_MAX_BLOCKS];
    int nb = nn_parse_widths("16,a,32s,48", 32, widths, strided, &e);
    T_REQUIRE(nb > 0);
    m = nn_build_small_widths(32, 32, 4, 0.2f, widths, strided, nb, 2, &e);
    T_REQUIRE(m != NULL);
    nn_model_init_params(m, 5);
    check_infer_ctx(m, 16, "small 16,a,32s,48 x2");
    nn_model_free(m);
}

TEST(predict_infer_ctx_mobilenetv2)
{
    pt_err e;
    /* Smaller under valgrind, where a forward is 50x slower. */
    int side = t_slow_mode() ? 32 : 64;
    nn_model *m = nn_build_mobilenetv2(side, side, 10, 1.0f, 0.2f, &e);
    T_REQUIRE(m != NULL);
    nn_model_init_params(m, 11);
    check_infer_ctx(m, 4, side == 64 ? "mobilenetv2 64px" : "mobilenetv2 32px");
    nn_model_free(m);
}

/* ---- a tiny dataset and two tiny runs of it, made once per test process ---- */

#include "fixtures.h"
#include "data/jpeg.h"
#include "io/example.h"
#include "io/png.h"
#include "io/tfrecord.h"
#include "infer/predict.h"
#include "run/runfolder.h"
#include "infer/runmodel.h"

static const long long PD_TRAIN[3] = { 24, 24, 24 }, PD_VAL[3] = { 8, 8, 8 };
#define PD_TEST 10

typedef struct pd_fix {
    char data[4200];        /* the dataset (tfrecords-jpeg-32x32) */
    char run_a[4200];       /* small 16,32 with the moving average */
    char run_b[4200];       /* small 16,a with none */
} pd_fix;

static const pd_fix *pd_fixture(void)
{
    static pd_fix f;
    static int made; /* 1 made, -1 failed */
    if (made)
        return made > 0 ? &f : NULL;
    made = -1;
    char dir[4096];
    util_copy(dir, sizeof dir, t_tmpdir());
    const char *d = fx_dataset(dir, 3, PD_TRAIN, PD_VAL, PD_TEST, 32, 16);
    if (!d)
        return NULL;
    util_copy(f.data, sizeof f.data, d);
    util_path(f.run_a, sizeof f.run_a, "%s/run_a", dir);
    util_path(f.run_b, sizeof f.run_b, "%s/run_b", dir);
    const char *extra[2] = { "--widths 16,32 --ema 0.5", "--widths 16,a --ema 0 --seed 7" };
    const char *out[2] = { f.run_a, f.run_b };
    for (int i = 0; i < 2; i++) {
        char cmd[16384], *text;
        util_path(cmd, sizeof cmd,
                  "%s --headless --data '%s' --out '%s' --epochs 6 --replicas 1 --workers 1 "
                  "--batch-per-replica 8 %s",
                  t_bin(), f.data, out[i], extra[i]);
        int rc = t_run(cmd, &text);
        if (rc != 0)
            printf("  run %d: exit %d:\n%s\n", i, rc, text);
        free(text);
        if (rc != 0)
            return NULL;
    }
    made = 1;
    return &f;
}

/* The run's last valid_preds.jsonl line's predictions (malloc'd), *n of them. */
static int *last_valid_preds(const char *run, long long *n)
{
    char path[4200];
    util_path(path, sizeof path, "%s/valid_preds.jsonl", run);
    char *text = fx_slurp(path);
    if (!text)
        return NULL;
    char *last = strstr(text, "\"preds\"");
    for (char *q = last; q && (q = strstr(q + 1, "\"preds\"")); last = q)
        ;
    int *v = NULL;
    *n = 0;
    char *q = last ? strchr(last, '[') : NULL;
    if (q) {
        v = malloc(strlen(q) * sizeof *v);
        for (q++; v && *q && *q != ']';) {
            v[(*n)++] = (int)strtol(q, &q, 10);
            while (*q == ',' || *q == ' ')
                q++;
        }
    }
    free(text);
    return v;
}

/* The CLI's stdout (malloc'd) and exit status; stderr into *err when err is not NULL. */
static int pd_cli(const char *args, char **out, char **err)
{
    char cmd[20000], errf[4200];
    util_path(errf, sizeof errf, "%s/stderr.txt", t_tmpdir());
    util_path(cmd, sizeof cmd, "%s %s 2>'%s'", t_bin(), args, errf);
    int rc = t_run(cmd, out);
    if (err)
        *err = fx_slurp(errf);
    return rc;
}

/* Lines of text. */
static int pd_lines(const char *s)
{
    int n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

/* The label column (the second) of each CSV row after the header, into v. */
static long long pd_labels(const char *csv, int *v, long long max)
{
    long long n = 0;
    const char *q = csv ? strchr(csv, '\n') : NULL;
    while (q && q[1] && n < max) {
        q++;
        const char *c = strchr(q, ',');
        if (!c)
            break;
        v[n++] = atoi(c + 1);
        q = strchr(q, '\n');
    }
    return n;
}

TEST(predict_val_split_equals_valid_preds)
{
    const pd_fix *f = pd_fixture();
    T_REQUIRE(f != NULL);
    const char *runs[2] = { f->run_a, f->run_b };
    for (int r = 0; r < 2; r++) {
        long long nv = 0;
        int *want = last_valid_preds(runs[r], &nv);
        T_REQUIRE(want && nv == 24);
        char args[9000], *out = NULL;
        util_path(args, sizeof args, "predict '%s' '%s' --split val --batch 5 --replicas 2",
                  runs[r], f->data);
        T_EQ_INT(pd_cli(args, &out, NULL), 0);
        int got[64];
        long long n = pd_labels(out, got, 64);
        T_EQ_INT(n, nv);
        long long diff = 0;
        for (long long i = 0; i < n && i < nv; i++)
            diff += got[i] != want[i];
        T_CHECKF(diff == 0, "%s: %lld of %lld records predict differently from validation",
                 runs[r], diff, n);
        /* A check with teeth: the run does not answer one class for everything. */
        int classes_seen = 0;
        for (int c = 0; c < 3; c++) {
            int any = 0;
            for (long long i = 0; i < n; i++)
                any |= got[i] == c;
            classes_seen += any;
        }
        T_CHECKF(classes_seen >= 2, "%s predicts %d class(es) only", runs[r], classes_seen);
        free(out);
        free(want);
    }
}

/* The val split's JPEGs written as DIR/NNN.jpg in file order (the pipeline's order
 * with one shard read at a time); their count. */
static int extract_val_jpegs(const char *data, const char *dir)
{
    ds_dataset *ds;
    if (ds_open(data, 0, &ds, NULL) != PT_OK)
        return -1;
    const ds_split *s = &ds->split[DS_VAL];
    int n = 0;
    for (int k = 0; k < s->n_shards; k++) {
        tfr_reader *r;
        if (tfr_open(&r, s->shards[k].path, NULL) != PT_OK)
            break;
        const uint8_t *rec;
        size_t len;
        while (tfr_next(r, &rec, &len, NULL) == 1) {
            ex_example *ex;
            const uint8_t *img;
            size_t il;
            if (ex_parse(rec, len, &ex, NULL, 0, 0, NULL) != PT_OK)
                continue;
            if (ex_get_bytes(ex, "image", &img, &il, NULL) == PT_OK) {
                char path[4200];
                util_path(path, sizeof path, "%s/%03d.jpg", dir, n++);
                util_write_file_atomic(path, img, il, NULL);
            }
            ex_free(ex);
        }
        tfr_close(r);
    }
    ds_free(ds);
    return n;
}

TEST(predict_jpeg_files_equal_valid_preds)
{
    const pd_fix *f = pd_fixture();
    T_REQUIRE(f != NULL);
    const char *dir = t_tmpdir();
    int n = extract_val_jpegs(f->data, dir);
    T_REQUIRE(n == 24);
    long long nv = 0;
    int *want = last_valid_preds(f->run_a, &nv);
    T_REQUIRE(want != NULL);
    char args[9000], *out = NULL;
    util_path(args, sizeof args, "predict '%s' '%s' --top 3 --batch 7", f->run_a, dir);
    T_EQ_INT(pd_cli(args, &out, NULL), 0);
    T_REQUIRE(out != NULL);
    const char *head = "path,label,class,probability,top2_class,top2_probability,top3_class,"
                       "top3_probability\n";
    T_CHECK(!strncmp(out, head, strlen(head)));
    T_EQ_INT(pd_lines(out), 25);
    int got[64];
    long long m = pd_labels(out, got, 64);
    T_EQ_INT(m, nv);
    long long diff = 0;
    for (long long i = 0; i < m && i < nv; i++)
        diff += got[i] != want[i];
    T_CHECKF(diff == 0, "%lld of %lld JPEG files predict differently from validation", diff, m);
    /* Every row: 8 fields, probabilities falling. */
    const char *q = strchr(out, '\n') + 1;
    int rows_ok = 1;
    for (; *q; q = strchr(q, '\n') + 1) {
        char line[1024];
        const char *e = strchr(q, '\n');
        snprintf(line, sizeof line, "%.*s", (int)(e - q), q);
        int commas = 0;
        for (char *c = line; *c; c++)
            commas += *c == ',';
        double p1, p2, p3;
        char *c = line;
        for (int k = 0; k < 3; k++)
            c = strchr(c, ',') + 1;
        p1 = atof(c);
        c = strchr(strchr(c, ',') + 1, ',') + 1;
        p2 = atof(c);
        c = strchr(strchr(c, ',') + 1, ',') + 1;
        p3 = atof(c);
        rows_ok &= commas == 7 && p1 >= p2 && p2 >= p3 && p1 + p2 + p3 <= 1.000002;
    }
    T_CHECK(rows_ok);
    /* Other batch sizes and replica counts: the same table, digit for digit. */
    char *again = NULL;
    util_path(args, sizeof args, "predict '%s' '%s' --top 3 --batch 3 --replicas 3", f->run_a,
              dir);
    T_EQ_INT(pd_cli(args, &again, NULL), 0);
    T_CHECKF(again && !strcmp(out, again), "batch 7 x 1 replica and 3 x 3 differ:\n%s\n%s", out,
             again ? again : "");
    free(again);
    free(out);
    free(want);
}

TEST(predict_engine_tta_flip_averages)
{
    const pd_fix *f = pd_fixture();
    T_REQUIRE(f != NULL);
    const char *dir = t_tmpdir();
    T_REQUIRE(extract_val_jpegs(f->data, dir) == 24);
    /* One image, and the same image mirrored. */
    char a[4200], flipped[4200];
    util_path(a, sizeof a, "%s/000.jpg", dir);
    util_path(flipped, sizeof flipped, "%s/flipped.png", dir);
    rm_model m;
    pt_err e;
    T_REQUIRE(rm_open(f->run_a, 0, &m, &e) == PT_OK);
    T_CHECK(m.ema == 1 && m.epoch == 6 && m.image_size == 32 && m.n_classes == 3);
    uint8_t *buf;
    size_t len;
    T_REQUIRE(util_read_file(a, &buf, &len, NULL) == PT_OK);
    jpg_codec *jc = jpg_codec_new();
    uint8_t rgb[32 * 32 * 3], mir[32 * 32 * 3];
    T_REQUIRE(jpg_decode_into(jc, buf, len, rgb, 32, 32, m.crop, m.fast_decode, NULL, NULL, &e) ==
              PT_OK);
    for (int y = 0; y < 32; y++)
        for (int x = 0; x < 32; x++)
            memcpy(mir + (y * 32 + x) * 3, rgb + (y * 32 + 31 - x) * 3, 3);
    T_REQUIRE(png_write_rgb(flipped, mir, 32, 32, &e) == PT_OK);
    char orig_png[4200];
    util_path(orig_png, sizeof orig_png, "%s/orig.png", dir);
    T_REQUIRE(png_write_rgb(orig_png, rgb, 32, 32, &e) == PT_OK);
    char *paths[2] = { orig_png, flipped };
    prd_results plain, tta;
    prd *p;
    prd_opts o = { .batch = 4, .replicas = 1 };
    T_REQUIRE(prd_new(&m, &o, &p, &e) == PT_OK);
    T_REQUIRE(prd_files(p, paths, 2, &plain, &e) == PT_OK);
    prd_free(p);
    o.tta_flip = 1;
    T_REQUIRE(prd_new(&m, &o, &p, &e) == PT_OK);
    T_REQUIRE(prd_files(p, paths, 2, &tta, &e) == PT_OK);
    prd_free(p);
    T_REQUIRE(plain.n == 2 && tta.n == 2 && plain.items[0].ok && plain.items[1].ok);
    double worst = 0, sum = 0;
    for (int c = 0; c < 3; c++) {
        double mean = 0.5 * (plain.probs[c] + plain.probs[3 + c]);
        worst = fmax(worst, fabs(tta.probs[c] - mean));
        worst = fmax(worst, fabs(tta.probs[3 + c] - mean));
        sum += tta.probs[c];
    }
    T_CHECKF(worst < 1e-6, "flip TTA is %g from the mean of the image's and its mirror's", worst);
    T_NEAR(sum, 1.0, 1e-9);
    prd_results_free(&plain);
    prd_results_free(&tta);
    free(buf);
    jpg_codec_free(jc);
    rm_close(&m);
    /* Through the CLI: the same shape with and without. */
    char args[9000], *o1 = NULL, *o2 = NULL;
    util_path(args, sizeof args, "predict '%s' '%s' --top 2", f->run_a, dir);
    T_EQ_INT(pd_cli(args, &o1, NULL), 0);
    util_path(args, sizeof args, "predict '%s' '%s' --top 2 --tta flip", f->run_a, dir);
    T_EQ_INT(pd_cli(args, &o2, NULL), 0);
    T_CHECK(o1 && o2 && pd_lines(o1) == 27 && pd_lines(o2) == 27 && strcmp(o1, o2) != 0);
    free(o1);
    free(o2);
}

/* ---- bad inputs ---- */

#include <png.h>
#include <turbojpeg.h>
#include <unistd.h>

/* A w x h JPEG of pixel format pf (TJPF_GRAY, TJPF_CMYK, TJPF_RGB) to path. */
static int write_jpeg_pf(const char *path, int w, int h, int pf)
{
    int ps = tjPixelSize[pf];
    unsigned char *px = malloc((size_t)w * h * ps), *jpeg = NULL;
    unsigned long size = 0;
    for (int i = 0; i < w * h * ps; i++)
        px[i] = (unsigned char)(i * 7 + (i / (w * ps)) * 3);
    tjhandle t = tjInitCompress();
    int rc = tjCompress2(t, px, w, w * ps, h, pf, &jpeg, &size,
                         pf == TJPF_GRAY ? TJSAMP_GRAY : TJSAMP_444, 90, 0);
    if (rc == 0)
        rc = util_write_file_atomic(path, jpeg, size, NULL);
    tjFree(jpeg);
    tjDestroy(t);
    free(px);
    return rc;
}

/* A PNG of format fmt (PNG_FORMAT_RGBA, PNG_FORMAT_LINEAR_RGB: 16 bits) to path. */
static int write_png_fmt(const char *path, int w, int h, png_uint_32 fmt)
{
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    im.width = (png_uint_32)w;
    im.height = (png_uint_32)h;
    im.format = fmt;
    size_t bytes = PNG_IMAGE_SIZE(im);
    uint8_t *px = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        px[i] = (uint8_t)(i * 13);
    int ok = png_image_write_to_file(&im, path, 0, px, 0, NULL);
    free(px);
    return ok ? 0 : -1;
}

TEST(predict_bad_inputs_named_rest_predicted)
{
    const pd_fix *f = pd_fixture();
    T_REQUIRE(f != NULL);
    const char *dir = t_tmpdir();
    char in[4200], p[4200];
    util_path(in, sizeof in, "%s/in", dir);
    T_REQUIRE(util_mkdirs(in, NULL) == PT_OK);
    /* Good: a JPEG, a grayscale and a CMYK JPEG, a PNG with alpha, a 16-bit PNG. */
    util_path(p, sizeof p, "%s/a_rgb.jpg", in);
    T_REQUIRE(write_jpeg_pf(p, 40, 30, TJPF_RGB) == 0);
    util_path(p, sizeof p, "%s/b_gray.jpg", in);
    T_REQUIRE(write_jpeg_pf(p, 40, 30, TJPF_GRAY) == 0);
    util_path(p, sizeof p, "%s/c_cmyk.jpg", in);
    T_REQUIRE(write_jpeg_pf(p, 40, 30, TJPF_CMYK) == 0);
    util_path(p, sizeof p, "%s/d_alpha.png", in);
    T_REQUIRE(write_png_fmt(p, 33, 20, PNG_FORMAT_RGBA) == 0);
    util_path(p, sizeof p, "%s/e_16bit.PNG", in);
    T_REQUIRE(write_png_fmt(p, 20, 33, PNG_FORMAT_LINEAR_RGB) == 0);
    /* Bad: text, a truncated JPEG, a huge one, a dangling link, an empty file. */
    util_path(p, sizeof p, "%s/f_text.jpg", in);
    T_REQUIRE(util_write_file_atomic(p, "hello, world\n", 13, NULL) == PT_OK);
    uint8_t *jb;
    size_t jl;
    util_path(p, sizeof p, "%s/a_rgb.jpg", in);
    T_REQUIRE(util_read_file(p, &jb, &jl, NULL) == PT_OK);
    util_path(p, sizeof p, "%s/g_truncated.jpg", in);
    T_REQUIRE(util_write_file_atomic(p, jb, jl / 2, NULL) == PT_OK);
    for (size_t i = 0; i + 8 < jl; i++)
        if (jb[i] == 0xFF && (jb[i + 1] == 0xC0 || jb[i + 1] == 0xC1)) {
            /* SOF: length, precision, then height and width: claim 30000 x 30000. */
            jb[i + 5] = jb[i + 7] = 30000 >> 8;
            jb[i + 6] = jb[i + 8] = 30000 & 255;
            break;
        }
    util_path(p, sizeof p, "%s/h_huge.jpg", in);
    T_REQUIRE(util_write_file_atomic(p, jb, jl, NULL) == PT_OK);
    free(jb);
    util_path(p, sizeof p, "%s/i_gone.jpg", in);
    T_REQUIRE(symlink("/nonexistent/petal-tui-test.jpg", p) == 0);
    util_path(p, sizeof p, "%s/j_empty.png", in);
    T_REQUIRE(util_write_file_atomic(p, "", 0, NULL) == PT_OK);
    util_path(p, sizeof p, "%s/notes.txt", in);
    T_REQUIRE(util_write_file_atomic(p, "x", 1, NULL) == PT_OK);

    char args[9000], *out = NULL, *err = NULL;
    util_path(args, sizeof args, "predict '%s' '%s' --replicas 2", f->run_a, in);
    T_EQ_INT(pd_cli(args, &out, &err), 2);
    T_REQUIRE(out && err);
    static const char *const good[] = { "a_rgb.jpg", "b_gray.jpg", "c_cmyk.jpg", "d_alpha.png",
                                        "e_16bit.PNG" };
    static const char *const bad[] = { "f_text.jpg", "g_truncated.jpg", "h_huge.jpg",
                                       "i_gone.jpg", "j_empty.png" };
    for (int i = 0; i < 5; i++) {
        T_CHECKF(strstr(out, good[i]) && !strstr(err, good[i]), "%s: not predicted:\n%s\n%s",
                 good[i], out, err);
        T_CHECKF(strstr(err, bad[i]) && !strstr(out, bad[i]), "%s: not named as failed:\n%s",
                 bad[i], err);
    }
    T_EQ_INT(pd_lines(out), 6);
    T_CHECK(strstr(err, "not a JPEG or PNG") != NULL);
    T_CHECK(strstr(err, "left out 1 files") != NULL);
    printf("  stderr:\n%s", err);
    free(out);
    free(err);
    /* An empty folder: named, exit 1, a header alone. */
    char empty[4200];
    util_path(empty, sizeof empty, "%s/empty", dir);
    T_REQUIRE(util_mkdirs(empty, NULL) == PT_OK);
    util_path(args, sizeof args, "predict '%s' '%s'", f->run_a, empty);
    T_EQ_INT(pd_cli(args, &out, &err), 2);
    T_CHECKF(out && pd_lines(out) == 1 && err && strstr(err, "no .jpg, .jpeg or .png files"),
             "%s\n%s", out ? out : "", err ? err : "");
    free(out);
    free(err);
    /* A folder with a link back up: walked once, no loop. */
    util_path(p, sizeof p, "%s/loop", in);
    T_REQUIRE(symlink(in, p) == 0);
    util_path(args, sizeof args, "predict '%s' '%s'", f->run_a, in);
    T_EQ_INT(pd_cli(args, &out, &err), 2);
    T_EQ_INT(pd_lines(out), 6);
    free(out);
    free(err);
}

/* ---- the run folder: class names, model-level failures ---- */

/* A copy of run folder src's config, checkpoint (and classes.txt when with_classes)
 * in a new folder; its path (static ring of 2). */
static const char *copy_run(const char *src, int with_classes)
{
    static char dst[2][4200];
    static int turn;
    char *d = dst[turn++ & 1];
    util_path(d, 4200, "%s/copy", t_tmpdir());
    util_mkdirs(d, NULL);
    const char *names[3] = { "config", "checkpoint.ckpt", "classes.txt" };
    for (int i = 0; i < (with_classes ? 3 : 2); i++) {
        char a[4200], b[4200];
        uint8_t *buf;
        size_t len;
        util_path(a, sizeof a, "%s/%s", src, names[i]);
        util_path(b, sizeof b, "%s/%s", d, names[i]);
        if (util_read_file(a, &buf, &len, NULL) != PT_OK)
            return NULL;
        util_write_file_atomic(b, buf, len, NULL);
        free(buf);
    }
    return d;
}

TEST(predict_run_classes_and_failures)
{
    const pd_fix *f = pd_fixture();
    T_REQUIRE(f != NULL);
    /* The trainer wrote classes.txt: the dataset's names (fx_dataset's "class N"), one a line. */
    char path[4200];
    util_path(path, sizeof path, "%s/classes.txt", f->run_a);
    char *cls = fx_slurp(path);
    T_REQUIRE(cls != NULL);
    T_EQ_INT(pd_lines(cls), 3);
    rm_model m;
    pt_err e;
    T_REQUIRE(rm_open(f->run_a, 0, &m, &e) == PT_OK);
    T_CHECK(m.n_classes == 3 && !strncmp(cls, m.class_names[0], strlen(m.class_names[0])));
    rm_close(&m);
    /* Names of its own: classes.txt wins. */
    const char *r = copy_run(f->run_a, 0);
    T_REQUIRE(r != NULL);
    util_path(path, sizeof path, "%s/classes.txt", r);
    T_REQUIRE(util_write_file_atomic(path, "rose\nlily, white\r\ntulip \"red\"\n", 30, NULL) ==
              PT_OK);
    T_REQUIRE(rm_open(r, 0, &m, &e) == PT_OK);
    T_CHECK(m.n_classes == 3 && !strcmp(m.class_names[1], "lily, white") &&
            !strcmp(m.class_names[2], "tulip \"red\""));
    rm_close(&m);
    char args[9000], *out = NULL, *err = NULL;
    util_path(args, sizeof args, "predict '%s' '%s' --split val --top 3", r, f->data);
    T_EQ_INT(pd_cli(args, &out, NULL), 0);
    T_CHECKF(out && strstr(out, ",\"lily, white\",") && strstr(out, ",\"tulip \"\"red\"\"\","),
             "CSV quoting:\n%.300s", out ? out : "");
    free(out);
    /* A run from before classes.txt: the checkpoint's class count, the dataset's names. */
    remove(path);
    T_REQUIRE(rm_open(r, 0, &m, &e) == PT_OK);
    T_CHECKF(m.n_classes == 3 && !strncmp(cls, m.class_names[0], strlen(m.class_names[0])),
             "fallback names: %s", m.n_classes > 0 ? m.class_names[0] : "none");
    rm_close(&m);
    free(cls);
    /* No checkpoint: a model-level failure, exit 2, said. */
    util_path(path, sizeof path, "%s/checkpoint.ckpt", r);
    remove(path);
    util_path(args, sizeof args, "predict '%s' '%s'", r, f->data);
    T_EQ_INT(pd_cli(args, &out, &err), 2);
    T_CHECKF(err && strstr(err, "checkpoint.ckpt"), "%s", err ? err : "");
    free(out);
    free(err);
    /* An imported model's run whose ONNX file is gone: named. */
    util_path(path, sizeof path, "%s/config", r);
    T_REQUIRE(util_write_file_atomic(path, "model = /nonexistent/net.onnx\n", 30, NULL) == PT_OK);
    r = copy_run(f->run_a, 1);
    util_path(path, sizeof path, "%s/config", r);
    T_REQUIRE(util_write_file_atomic(path, "model = /nonexistent/net.onnx\nimage-size = 32\n", 46,
                                     NULL) == PT_OK);
    T_CHECK(rm_open(r, 0, &m, &e) != PT_OK && strstr(e.msg, "/nonexistent/net.onnx") &&
            strstr(e.msg, "is not there"));
    /* Usage (exit 1, as every command's): no inputs, a bad option, nothing at the model's path. */
    util_path(args, sizeof args, "predict '%s'", f->run_a);
    T_EQ_INT(pd_cli(args, &out, NULL), 1);
    free(out);
    util_path(args, sizeof args, "predict '%s' x.jpg --top 0", f->run_a);
    T_EQ_INT(pd_cli(args, &out, NULL), 1);
    free(out);
    T_EQ_INT(pd_cli("predict /nonexistent/run x.jpg", &out, NULL), 1);
    free(out);
    T_EQ_INT(pd_cli("predict --help", &out, NULL), 0);
    T_CHECK(out && strstr(out, "usage: petal-tui predict"));
    free(out);
}

TEST(predict_test_split_submission)
{
    const pd_fix *f = pd_fixture();
    T_REQUIRE(f != NULL);
    char args[9000], sub[4200], *out = NULL;
    util_path(sub, sizeof sub, "%s/sub.csv", t_tmpdir());
    util_path(args, sizeof args, "predict '%s' '%s' --submission '%s'", f->run_a, f->data, sub);
    T_EQ_INT(pd_cli(args, &out, NULL), 0);
    T_CHECK(out && !strncmp(out, "id,label,class,probability\n", 27) &&
            pd_lines(out) == PD_TEST + 1);
    char *s = fx_slurp(sub);
    T_CHECK(s && !strncmp(s, "id,label\n", 9) && pd_lines(s) == PD_TEST + 1);
    /* The run's own submission.csv says the same (its rows in the same order). */
    char own[4200];
    util_path(own, sizeof own, "%s/submission.csv", f->run_a);
    char *o = fx_slurp(own);
    T_CHECKF(s && o && !strcmp(s, o), "predict's submission differs from the run's:\n%s\n%s", s,
             o);
    free(o);
    free(s);
    free(out);
}

TEST(predict_ensemble_two_runs)
{
    const pd_fix *f = pd_fixture();
    T_REQUIRE(f != NULL);
    char dir[4200], args[16000], *out = NULL, *err = NULL;
    util_path(dir, sizeof dir, "%s/ens", t_tmpdir());
    util_path(args, sizeof args, "ensemble '%s' '%s' --weights 2,1 --data '%s' --out '%s'",
              f->run_a, f->run_b, f->data, dir);
    T_EQ_INT(pd_cli(args, &out, &err), 0);
    T_REQUIRE(out != NULL);
    printf("%s", out);
    T_CHECK(strstr(out, "ensemble ") && strstr(out, " f1 ") && strstr(out, " precision ") &&
            strstr(out, " recall "));
    /* A member's figures are the ones its run logged for its last epoch. */
    for (int i = 0; i < 2; i++) {
        const char *run = i ? f->run_b : f->run_a;
        char hp[4400];
        util_path(hp, sizeof hp, "%s/history.json", run);
        char *h = fx_slurp(hp), *last = NULL;
        for (char *q = h; q && (q = strstr(q, "\"val_f1\"")); q++)
            last = q;
        const char *line = strstr(out, run);
        const char *f1 = line ? strstr(line, " f1 ") : NULL;
        T_REQUIRE(last && f1);
        double logged = atof(strchr(last, ':') + 1), printed = atof(f1 + 4);
        T_CHECKF(fabs(logged - printed) < 6e-5, "%s: val_f1 %.6f logged, %.4f printed", run,
                 logged, printed);
        free(h);
    }
    const char *files[4] = { "submission.csv", "valid_preds.jsonl", "valid_labels.json",
                             "report.json" };
    for (int i = 0; i < 4; i++) {
        char p[4400];
        util_path(p, sizeof p, "%s/%s", dir, files[i]);
        char *s = fx_slurp(p);
        T_CHECKF(s != NULL, "%s missing", files[i]);
        if (i == 0)
            T_EQ_INT(pd_lines(s), PD_TEST + 1);
        if (i == 3)
            T_CHECK(s && strstr(s, "\"val_f1\"") && strstr(s, "\"ensemble\""));
        free(s);
    }
    /* Its validation predictions read back as a run folder's. */
    run_val_report rep;
    int *labels, *preds;
    long long n;
    pt_err e;
    T_CHECK(runs_val_load(dir, 3, &rep, &labels, &preds, &n, &e) == PT_OK && n == 24);
    if (n == 24) {
        run_val_report_free(&rep);
        free(labels);
        free(preds);
    }
    free(out);
    free(err);
    /* Members that name their classes differently are refused (exit 1, a wrong input:
     * issue 42). */
    const char *r = copy_run(f->run_b, 1);
    char p[4400];
    util_path(p, sizeof p, "%s/classes.txt", r);
    T_REQUIRE(util_write_file_atomic(p, "a\nb\nc\n", 6, NULL) == PT_OK);
    util_path(args, sizeof args, "ensemble '%s' '%s' --data '%s' --out '%s/x'", f->run_a, r,
              f->data, dir);
    T_EQ_INT(pd_cli(args, &out, &err), 1);
    T_CHECKF(err && strstr(err, "must share their class names"), "%s", err ? err : "");
    free(out);
    free(err);
    util_path(args, sizeof args, "ensemble '%s' '%s' --weights 1 --data '%s'", f->run_a,
              f->run_b, f->data);
    T_EQ_INT(pd_cli(args, &out, NULL), 1);
    free(out);
}

TEST(predict_zoo_onnx_agrees_with_classify)
{
    T_NEED_DATA();
    char args[9000], *out = NULL, *cls = NULL;
    const char *model = t_data("weights/mobilenetv2-12-int8.onnx");
    const char *img = t_data("flower-jpegs-128/daisy/100080576_f52e8ee070_n.jpg");
    util_path(args, sizeof args, "predict '%s' '%s' --top 2", model, img);
    T_EQ_INT(pd_cli(args, &out, NULL), 0);
    util_path(args, sizeof args, "classify '%s' '%s' --top 1", model, img);
    T_EQ_INT(pd_cli(args, &cls, NULL), 0);
    T_REQUIRE(out && cls);
    /* ImageNet's names for 1,000 classes; classify's top class and percentage. */
    const char *row = strchr(out, '\n');
    T_REQUIRE(row != NULL);
    T_CHECKF(strstr(row, ",985,daisy,") != NULL, "%s", out);
    const char *pc = strstr(cls, "985  daisy");
    double p = row ? atof(strstr(row, ",985,daisy,") + 11) : 0;
    T_CHECKF(pc && fabs(100.0 * p - atof(pc + 10)) < 0.006, "predict %.6f, classify:\n%s", p, cls);
    free(out);
    free(cls);
}
