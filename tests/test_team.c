/* Intra-op parallelism (issue 44): an inference forward split across a team
 * (nn_ctx_set_team) gives the same bits as on one thread, for every way of splitting
 * (convolution rows, output channels, depthwise rows) and any number of parts; and
 * the replica pool runs a job of fewer images than replicas on one replica with the
 * others as its team, with the same logits as a pool of one.
 */
#include "tests/t.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/rng.h"
#include "nn/nn.h"
#include "nn/nn_export.h"
#include "nn/nn_models.h"
#include "infer/infer.h"
#include "infer/runmodel.h"
#include "pool/rpool.h"

/* A team whose parts run one after another on the calling thread, in reverse order
 * (a part must not depend on another having run first): deterministic, and it
 * counts the parts run. */
typedef struct serial_team {
    nn_team nt;
    int calls;
} serial_team;

static void serial_run(nn_team *t, void (*fn)(void *arg, int part), void *arg)
{
    serial_team *s = (serial_team *)t;
    for (int p = t->parts - 1; p >= 0; p--) {
        fn(arg, p);
        s->calls++;
    }
}

static nn_model *team_net(int mobilenet, int size)
{
    pt_err e;
    nn_model *m;
    if (mobilenet) {
        m = nn_build_mobilenetv2(size, size, 10, 0.35f, 0.2f, &e);
    } else {
        int w[NN_SMALL_MAX_BLOCKS], st[NN_SMALL_MAX_BLOCKS];
        int k = nn_parse_widths("16,32,64,128", size, w, st, &e);
        m = k < 0 ? NULL : nn_build_small_widths(size, size, 10, 0.2f, w, st, k, 1, &e);
    }
    if (!m)
        return NULL;
    nn_model_init_params(m, 5);
    /* Biases and batch norm start at 0 and 1: moved, so that every part's slice of
     * them shows. */
    rng r;
    rng_seed(&r, 6);
    float *p = nn_params(m);
    for (size_t i = 0; i < nn_param_count(m); i++)
        p[i] += rng_uniform(&r, -0.05f, 0.05f);
    return m;
}

static float *team_images(int n, int size)
{
    float *x = malloc((size_t)n * size * size * 3 * sizeof *x);
    rng r;
    rng_seed(&r, 9);
    for (int i = 0; i < n * size * size * 3; i++)
        x[i] = rng_float(&r);
    return x;
}

/* m's logits at batch 1 and 2 with teams of 2, 3 and 4 parts against one thread's,
 * with the weights read in place and packed ahead (nn_ctx_pack_weights). */
static void check_parts(const nn_model *m, int size, const char *what)
{
    const int n = 2, k = nn_model_classes(m);
    float *x = team_images(n, size);
    pt_err e;
    nn_ctx *one = nn_ctx_new_infer(m, n, &e);
    T_REQUIRE(one != NULL);
    float *ref = malloc((size_t)n * k * sizeof *ref);
    memcpy(ref, nn_forward(one, x, n, 0, 0, 0), (size_t)n * k * sizeof *ref);
    for (int packed = 0; packed < 2; packed++) {
        nn_ctx *split = nn_ctx_new_infer(m, n, &e);
        T_REQUIRE(split != NULL);
        if (packed) {
            T_REQUIRE(nn_ctx_pack_weights(split, &e) == PT_OK);
            const float *got = nn_forward(split, x, n, 0, 0, 0);
            T_REQUIRE(got != NULL);
            T_CHECKF(memcmp(got, ref, (size_t)n * k * sizeof *ref) == 0,
                     "%s @%d, packed weights: logits differ", what, size);
        }
        for (int parts = 2; parts <= 4; parts++) {
            serial_team t = { { parts, parts, serial_run }, 0 };
            T_REQUIRE(nn_ctx_set_team(split, &t.nt, &e) == PT_OK);
            for (int b = 1; b <= n; b++) {
                const float *got = nn_forward(split, x, b, 0, 0, 0);
                T_REQUIRE(got != NULL);
                T_CHECKF(memcmp(got, ref, (size_t)b * k * sizeof *ref) == 0,
                         "%s @%d, %d parts, batch %d%s: logits differ from one thread's", what,
                         size, parts, b, packed ? ", packed weights" : "");
            }
            /* The team ran: a section hands out every part. */
            T_CHECKF(t.calls >= parts && t.calls % parts == 0, "%d parts, %d calls", parts,
                     t.calls);
            T_REQUIRE(nn_ctx_set_team(split, NULL, &e) == PT_OK);
        }
        nn_ctx_free(split);
    }
    free(ref);
    free(x);
    nn_ctx_free(one);
}

TEST(team_forward_gives_the_same_bits_for_any_number_of_parts)
{
    const int sizes[2] = { 64, 40 }; /* 40: rows that do not divide evenly */
    for (int net = 0; net < 2; net++)
        for (int si = 0; si < 2; si++) {
            const char *what = net ? "mobilenetv2" : "small";
            nn_model *m = team_net(net, sizes[si]);
            T_REQUIRE(m != NULL);
            check_parts(m, sizes[si], what);
            /* Read back from its export: batch norm folded into conv biases, as
             * predict runs an .onnx file. */
            char path[512];
            snprintf(path, sizeof path, "%s/team-%s-%d.onnx", t_tmpdir(), what, sizes[si]);
            pt_err e;
            rm_model rm;
            nn_export_meta meta = { .image_size = sizes[si], .epoch = -1, .update = -1 };
            T_REQUIRE(nn_export_onnx_file(m, &meta, path, &e) == PT_OK);
            T_REQUIRE(rm_open(path, 0, &rm, &e) == PT_OK);
            check_parts(rm.net, sizes[si], what);
            rm_close(&rm);
            nn_model_free(m);
        }
}

TEST(team_pool_runs_fewer_images_than_replicas_on_every_core_with_the_same_logits)
{
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        t_skip("one core: the pool makes no team");
        return;
    }
    const int size = 64;
    for (int net = 0; net < 2; net++) {
        nn_model *m = team_net(net, size);
        T_REQUIRE(m != NULL);
        const int k = nn_model_classes(m), n = 3;
        uint8_t *img = malloc((size_t)n * size * size * 3);
        for (int i = 0; i < n * size * size * 3; i++)
            img[i] = (uint8_t)(i * 37 + i / 7);
        rpool *one, *three;
        pt_err e;
        T_REQUIRE(inf_pool_new(m, 1, n, 0, &one, &e) == PT_OK);
        T_REQUIRE(inf_pool_new(m, 3, 1, 0, &three, &e) == PT_OK);
        float *ref = malloc((size_t)n * k * sizeof *ref), *got = malloc((size_t)n * k * sizeof *got);
        T_REQUIRE(rpool_infer(one, img, n, ref, &e) == PT_OK);
        /* 1 and 2 images: fewer than the 3 replicas, the team's way (each image
         * compared); 3: one image a replica, the usual way. */
        for (int b = 1; b <= n; b++) {
            for (int rep = 0; rep < 3; rep++) {
                memset(got, 0, (size_t)n * k * sizeof *got);
                T_REQUIRE(rpool_infer(three, img, b, got, &e) == PT_OK);
                T_CHECKF(memcmp(got, ref, (size_t)b * k * sizeof *ref) == 0,
                         "%s, %d image(s) on 3 replicas: logits differ from one replica's",
                         net ? "mobilenetv2" : "small", b);
            }
        }
        /* Replica 0 split its operators; who ran each part depends on which thread
         * was running then (on a busy machine replica 0 may run them all), but every
         * part of every section ran once. The team is the replicas, at most the cores. */
        const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        const int parts = cpus < 3 ? (int)cpus : 3;
        rpool_counters c[3];
        long long ran = 0;
        for (int r = 0; r < 3; r++) {
            rpool_get_counters(three, r, &c[r]);
            ran += c[r].team_parts;
        }
        T_CHECKF(c[0].team_sections > 0, "replica 0 split no operator");
        T_CHECKF(ran == parts * c[0].team_sections, "%lld sections of %d parts, %lld parts run",
                 c[0].team_sections, parts, ran);
        T_EQ_INT((int)(c[1].team_sections + c[2].team_sections), 0);
        if (parts == 2)
            T_EQ_INT((int)c[2].team_parts, 0);
        free(ref);
        free(got);
        free(img);
        rpool_free(one);
        rpool_free(three);
        nn_model_free(m);
    }
}
