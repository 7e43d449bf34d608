/* The procedural flower renderer: stable bytes, buffers respected, classes that are
 * really different from one another. */
#include "tests/t.h"

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "data/flowers.h"

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint8_t *render(int k, uint64_t seed, int size)
{
    uint8_t *rgb = malloc((size_t)size * size * 3);
    if (rgb)
        flw_render(k, seed, size, rgb);
    return rgb;
}

TEST(flw_classes_have_distinct_names_and_info)
{
    int n = flw_class_count();
    T_CHECK(n >= 10);
    for (int k = 0; k < n; k++) {
        const char *name = flw_class_name(k);
        T_REQUIRE(name && *name);
        for (const char *c = name; *c; c++)
            T_CHECKF((*c >= 'a' && *c <= 'z') || *c == ' ' || *c == '-', "name '%s'", name);
        for (int j = 0; j < k; j++)
            T_CHECKF(strcmp(name, flw_class_name(j)) != 0, "duplicate name '%s'", name);
        flw_info in;
        T_REQUIRE(flw_class_info(k, &in) == 0);
        T_EQ_STR(in.name, name);
        T_CHECK(in.petals >= 3 && in.rings >= 1 && in.rings <= 3);
        T_CHECK(in.colour && *in.colour && in.centre && *in.centre);
    }
    flw_info in;
    T_CHECK(flw_class_name(-1) == NULL && flw_class_name(n) == NULL);
    T_CHECK(flw_class_info(-1, &in) == -1 && flw_class_info(n, &in) == -1);
}

/* The brief for the demo set: any two classes differ in at least two of petal count,
 * petal shape and colour, yet some pairs share one of them (so it is not trivial). */
TEST(flw_every_pair_of_classes_differs_in_two_of_count_shape_colour)
{
    int n = flw_class_count(), shared_colour = 0, shared_shape = 0, shared_count = 0;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            flw_info x, y;
            T_REQUIRE(flw_class_info(a, &x) == 0 && flw_class_info(b, &y) == 0);
            int count = x.petals * x.rings != y.petals * y.rings;
            int shape = x.shape != y.shape;
            int dist = 0;
            for (int i = 0; i < 3; i++)
                dist += abs((int)x.petal_rgb[i] - (int)y.petal_rgb[i]);
            int colour = dist > 60;
            T_CHECKF(count + shape + colour >= 2, "%s vs %s: count %d shape %d colour %d (%d)",
                     x.name, y.name, count, shape, colour, dist);
            shared_colour += !colour;
            shared_shape += !shape;
            shared_count += !count;
        }
    T_CHECK(shared_colour >= 3);
    T_CHECK(shared_shape >= 3);
    T_CHECK(shared_count >= 3);
}

TEST(flw_render_is_deterministic_and_seeded)
{
    int n = flw_class_count(), size = 64;
    size_t bytes = (size_t)size * size * 3;
    for (int k = 0; k < n; k++) {
        uint8_t *a = render(k, 7, size), *b = render(k, 7, size), *c = render(k, 8, size);
        uint8_t *d = render((k + 1) % n, 7, size);
        T_REQUIRE(a && b && c && d);
        T_CHECKF(memcmp(a, b, bytes) == 0, "class %d: two renders differ", k);
        T_CHECKF(memcmp(a, c, bytes) != 0, "class %d: seeds 7 and 8 give the same image", k);
        T_CHECKF(memcmp(a, d, bytes) != 0, "classes %d and %d give the same image", k, (k + 1) % n);
        free(a);
        free(b);
        free(c);
        free(d);
    }
}

/* Exact-size buffers (AddressSanitizer and valgrind see any stray write), plus guard
 * bytes around the image for plain builds; and the picture uses the value range. */
TEST(flw_render_every_class_and_size_inside_its_buffer)
{
    static const int sizes[] = { 32, 64, 128, 192 };
    int n = flw_class_count();
    for (int si = 0; si < 4; si++) {
        int size = sizes[si];
        size_t bytes = (size_t)size * size * 3;
        for (int k = 0; k < n; k++) {
            if (t_slow_mode() && size > 64 && k % 3 != 0)
                continue;
            uint8_t *exact = render(k, 1000 + (uint64_t)k, size);
            uint8_t *guard = malloc(bytes + 128);
            T_REQUIRE(exact && guard);
            memset(guard, 0xa5, bytes + 128);
            flw_render(k, 1000 + (uint64_t)k, size, guard + 64);
            int clean = 1;
            for (int i = 0; i < 64; i++)
                clean &= guard[i] == 0xa5 && guard[64 + bytes + (size_t)i] == 0xa5;
            T_CHECKF(clean, "class %d size %d wrote outside the image", k, size);
            T_CHECKF(memcmp(exact, guard + 64, bytes) == 0, "class %d size %d differs", k, size);

            int lo = 255, hi = 0;
            size_t clipped = 0;
            int seen[64] = { 0 }, distinct = 0;
            for (size_t i = 0; i < bytes; i += 3) {
                int y = (exact[i] * 3 + exact[i + 1] * 6 + exact[i + 2]) / 10;
                lo = y < lo ? y : lo;
                hi = y > hi ? y : hi;
                clipped += (exact[i] == 0 && exact[i + 1] == 0 && exact[i + 2] == 0) ||
                           (exact[i] == 255 && exact[i + 1] == 255 && exact[i + 2] == 255);
                if (!seen[y / 4]++)
                    distinct++;
            }
            T_CHECKF(hi - lo >= 90, "class %d size %d: luma only %d..%d", k, size, lo, hi);
            T_CHECKF(distinct >= 16, "class %d size %d: %d of 64 luma bins used", k, size, distinct);
            T_CHECKF(clipped * 50 < bytes / 3, "class %d size %d: %zu clipped pixels", k, size,
                     clipped);
            free(exact);
            free(guard);
        }
    }
}

TEST(flw_render_leaves_the_buffer_alone_on_bad_arguments)
{
    uint8_t buf[32 * 32 * 3], ref[sizeof buf];
    memset(buf, 0x5a, sizeof buf);
    memcpy(ref, buf, sizeof buf);
    flw_render(-1, 1, 32, buf);
    flw_render(flw_class_count(), 1, 32, buf);
    flw_render(0, 1, 31, buf);
    flw_render(0, 1, 0, buf);
    flw_render(0, 1, -64, buf);
    flw_render(0, 1, 32, NULL);
    T_CHECK(memcmp(buf, ref, sizeof buf) == 0);
}

/* Coarse colour statistics are enough to tell the classes apart most of the time: a
 * nearest-centroid classifier on a 4x4x4 RGB histogram of the middle of the image,
 * fitted on some seeds and tried on others, does far better than chance (1/12), and
 * no two classes have (nearly) the same centroid. */
#define FLW_BINS 64
static void histogram(const uint8_t *rgb, int size, float *h)
{
    int lo = size / 5, hi = size - size / 5, cnt = 0;
    memset(h, 0, sizeof(float) * FLW_BINS);
    for (int y = lo; y < hi; y++)
        for (int x = lo; x < hi; x++) {
            const uint8_t *p = rgb + ((size_t)y * size + x) * 3;
            h[(p[0] >> 6) * 16 + (p[1] >> 6) * 4 + (p[2] >> 6)] += 1.0f;
            cnt++;
        }
    for (int i = 0; i < FLW_BINS; i++)
        h[i] /= (float)cnt;
}

static float l1(const float *a, const float *b)
{
    float s = 0.0f;
    for (int i = 0; i < FLW_BINS; i++)
        s += fabsf(a[i] - b[i]);
    return s;
}

TEST(flw_classes_differ_in_colour_statistics)
{
    enum { MAXK = 32 };
    int n = flw_class_count(), fit = t_slow_mode() ? 6 : 16, trials = t_slow_mode() ? 4 : 12;
    int size = 48;
    T_REQUIRE(n <= MAXK);
    static float cent[MAXK][FLW_BINS];
    float h[FLW_BINS];
    memset(cent, 0, sizeof cent);
    uint8_t *rgb = malloc((size_t)size * size * 3);
    T_REQUIRE(rgb);
    for (int k = 0; k < n; k++)
        for (int s = 0; s < fit; s++) {
            flw_render(k, (uint64_t)s, size, rgb);
            histogram(rgb, size, h);
            for (int i = 0; i < FLW_BINS; i++)
                cent[k][i] += h[i] / (float)fit;
        }
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            T_CHECKF(l1(cent[a], cent[b]) > 0.3f, "%s and %s: centroid distance %.3f",
                     flw_class_name(a), flw_class_name(b), (double)l1(cent[a], cent[b]));
    int right = 0;
    for (int k = 0; k < n; k++)
        for (int s = 0; s < trials; s++) {
            flw_render(k, 5000 + (uint64_t)s, size, rgb);
            histogram(rgb, size, h);
            int best = 0;
            for (int j = 1; j < n; j++)
                if (l1(h, cent[j]) < l1(h, cent[best]))
                    best = j;
            right += best == k;
        }
    free(rgb);
    T_CHECKF(right * 2 >= n * trials, "nearest centroid: %d of %d right", right, n * trials);
}

/* Mean absolute difference between a 64 px image and a 128 px one shrunk 2x. */
static double diff_to_half(const uint8_t *small, const uint8_t *big)
{
    double diff = 0.0;
    for (int y = 0; y < 64; y++)
        for (int x = 0; x < 64; x++)
            for (int c = 0; c < 3; c++) {
                int s = 0;
                for (int dy = 0; dy < 2; dy++)
                    for (int dx = 0; dx < 2; dx++)
                        s += big[((size_t)(2 * y + dy) * 128 + (size_t)(2 * x + dx)) * 3 + c];
                diff += fabs(s / 4.0 - small[((size_t)y * 64 + x) * 3 + c]);
            }
    return diff / (64.0 * 64.0 * 3.0);
}

/* One scene at every size: the 64 px render and the 128 px one shrunk 2x agree
 * closely (unlike another seed's), so previews at another size show the same picture. */
TEST(flw_render_draws_the_same_scene_at_every_size)
{
    int n = flw_class_count();
    uint8_t *small = malloc(64 * 64 * 3), *big = malloc(128 * 128 * 3);
    uint8_t *other = malloc(128 * 128 * 3);
    T_REQUIRE(small && big && other);
    for (int k = 0; k < n; k++) {
        flw_render(k, 99, 64, small);
        flw_render(k, 99, 128, big);
        flw_render(k, 100, 128, other);
        double same = diff_to_half(small, big), apart = diff_to_half(small, other);
        T_CHECKF(same < 6.0, "class %d: mean difference %.2f between sizes", k, same);
        T_CHECKF(apart > 3.0 * same, "class %d: another seed is only %.2f away (same %.2f)", k,
                 apart, same);
    }
    free(small);
    free(big);
    free(other);
}

/* Pinned bytes: a change here means the demo data set changes on some machine or
 * compiler (update the values only for an intended change of the renderer). */
TEST(flw_render_golden_checksums)
{
    static const struct {
        int k, size;
        uint64_t seed, fnv;
    } gold[] = {
        { 0, 64, 1, 0x45f71005c00bf052ULL },
        { 5, 128, 42, 0x54ee81ae9c52be84ULL },
        { 10, 32, 7, 0xf467f80c91df387fULL },
        { 8, 192, 123456789, 0x23a12d63eaf918d7ULL },
        { 11, 96, 0xdeadbeefcafeULL, 0x68912efce8374940ULL },
    };
    for (size_t i = 0; i < sizeof gold / sizeof gold[0]; i++) {
        uint8_t *rgb = render(gold[i].k, gold[i].seed, gold[i].size);
        T_REQUIRE(rgb);
        uint64_t h = fnv1a(rgb, (size_t)gold[i].size * gold[i].size * 3);
        T_CHECKF(h == gold[i].fnv, "class %d seed %llu size %d: fnv1a 0x%016llxULL", gold[i].k,
                 (unsigned long long)gold[i].seed, gold[i].size, (unsigned long long)h);
        free(rgb);
    }
    /* Every class, a few seeds, one running hash: wider cover for edge pixels. */
    uint64_t all = 0xcbf29ce484222325ULL;
    uint8_t *rgb = malloc(64 * 64 * 3);
    T_REQUIRE(rgb);
    for (int k = 0; k < flw_class_count(); k++)
        for (uint64_t seed = 0; seed < 3; seed++) {
            flw_render(k, seed * 1000003u + 17u, 64, rgb);
            for (size_t i = 0; i < 64 * 64 * 3; i++) {
                all ^= rgb[i];
                all *= 0x100000001b3ULL;
            }
        }
    free(rgb);
    T_CHECKF(all == 0x610017bcdb2aa3ceULL, "all classes: fnv1a 0x%016llxULL", (unsigned long long)all);
}

/* The render path must not call libm's transcendental functions, whose last bits
 * differ between libm versions: the object file may only import sqrt. */
TEST(flw_render_path_imports_no_libm_transcendentals)
{
    char exe[4096];
    T_NEED_TOOL("nm");
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        t_skip("cannot find the build folder: readlink(/proc/self/exe) failed");
        return;
    }
    exe[len] = 0;
    /* <build>/tests/run-tests -> <build>/core/data/flowers.o */
    for (int cut = 0; cut < 2; cut++) {
        char *slash = strrchr(exe, '/');
        T_REQUIRE(slash);
        *slash = 0;
    }
    char cmd[8192], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "nm -u '%s/core/data/flowers.o'",
             exe);
    int rc = t_run(cmd, &out);
    T_REQUIRE(out);
    T_CHECKF(rc == 0, "nm: %s", out);
    static const char *bad[] = { "sin", "cos", "tan", "exp", "log", "pow", "atan", "cbrt",
                                 "hypot", "erf", "gamma" };
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        char *sym = strrchr(line, ' ');
        sym = sym ? sym + 1 : line;
        while (*sym == '_')
            sym++;
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
            T_CHECKF(strncmp(sym, bad[i], strlen(bad[i])) != 0, "flowers.o imports %s", sym);
    }
    free(out);
}
