/* bench_augment — augmented images per second on one core at 192x192, for each op at
 * probability 1 and for the default chain, against the cost of decoding one 192x192
 * JPEG (quality 90, 4:2:0) with TurboJPEG.
 *
 * The pictures are real flower photos from ../shared/data/flower-jpegs-128 (scaled to
 * 192x192), or a synthetic pattern when that folder is missing. Prints, never asserts.
 *
 *   make BUILD=build build/bench/bench_augment
 *   build/bench/bench_augment [seconds-per-case [spec...]]   (specs: time just those)
 *
 * Times are thread CPU time, the fastest of 5 slices per case, so other load on the
 * machine inflates them less.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "base/util.h"
#include "bench/bench_common.h"
#include "data/augment.h"
#include "data/batch.h"

#define SIDE 192
#define NIMG 32
#define SLICES 5

/* Bilinear scale of an RGB image to SIDE x SIDE (enlarging only here, so no
 * prefilter is needed). */
static void scale_to_side(const uint8_t *src, int w, int h, uint8_t *dst)
{
    for (int y = 0; y < SIDE; y++) {
        double fy = (y + 0.5) * h / SIDE - 0.5;
        int y0 = fy < 0 ? 0 : (int)fy, y1 = y0 + 1 < h ? y0 + 1 : h - 1;
        double ty = fy < 0 ? 0 : fy - y0;
        for (int x = 0; x < SIDE; x++) {
            double fx = (x + 0.5) * w / SIDE - 0.5;
            int x0 = fx < 0 ? 0 : (int)fx, x1 = x0 + 1 < w ? x0 + 1 : w - 1;
            double tx = fx < 0 ? 0 : fx - x0;
            for (int c = 0; c < 3; c++) {
                double a = src[((size_t)y0 * w + x0) * 3 + c] * (1 - tx) +
                           src[((size_t)y0 * w + x1) * 3 + c] * tx;
                double b = src[((size_t)y1 * w + x0) * 3 + c] * (1 - tx) +
                           src[((size_t)y1 * w + x1) * 3 + c] * tx;
                dst[((size_t)y * SIDE + x) * 3 + c] = (uint8_t)(a * (1 - ty) + b * ty + 0.5);
            }
        }
    }
}

/* Up to n photos from the flower folders, scaled; returns how many were loaded. */
static int load_photos(const char *root, uint8_t *images, int n)
{
    static const char *cls[5] = {"daisy", "dandelion", "rose", "sunflower", "tulip"};
    tjhandle d = tjInitDecompress();
    int got = 0;
    for (int k = 0; got < n && k < 5 * n; k++) {
        char dir[1200];
        snprintf(dir, sizeof dir, "%s/%s", root, cls[k % 5]);
        DIR *dp = opendir(dir);
        if (!dp)
            continue;
        struct dirent *de;
        int idx = 0, want = k / 5;
        char path[2048] = "";
        while ((de = readdir(dp))) {
            if (de->d_name[0] == '.')
                continue;
            if (idx++ == want) {
                snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
                break;
            }
        }
        closedir(dp);
        uint8_t *jpg = NULL;
        size_t len = 0;
        if (!path[0] || util_read_file(path, &jpg, &len, NULL) != PT_OK)
            continue;
        int w, h, ss, cs;
        if (tjDecompressHeader3(d, jpg, (unsigned long)len, &w, &h, &ss, &cs) == 0 && w > 0 &&
            h > 0) {
            uint8_t *rgb = malloc((size_t)w * h * 3);
            if (rgb && tjDecompress2(d, jpg, (unsigned long)len, rgb, w, 0, h, TJPF_RGB, 0) == 0) {
                scale_to_side(rgb, w, h, images + (size_t)got * SIDE * SIDE * 3);
                got++;
            }
            free(rgb);
        }
        free(jpg);
    }
    tjDestroy(d);
    return got;
}

/* Microseconds per 192x192 decode of img encoded at quality 90. */
static double jpeg_decode_us(const uint8_t *img, double seconds, unsigned long *jpeg_len)
{
    tjhandle enc = tjInitCompress(), dec = tjInitDecompress();
    unsigned char *jpg = NULL;
    unsigned long len = 0;
    if (tjCompress2(enc, img, SIDE, 0, SIDE, TJPF_RGB, &jpg, &len, TJSAMP_420, 90, 0) != 0)
        return -1;
    uint8_t *out = malloc((size_t)SIDE * SIDE * 3);
    double best = -1;
    for (int slice = 0; slice < SLICES; slice++) {
        long it = 0;
        double t0 = util_thread_cpu(), w0 = util_now();
        do {
            tjDecompress2(dec, jpg, len, out, SIDE, 0, SIDE, TJPF_RGB, 0);
            it++;
        } while (util_now() - w0 < seconds / SLICES);
        double us = (util_thread_cpu() - t0) / it * 1e6;
        if (best < 0 || us < best)
            best = us;
    }
    *jpeg_len = len;
    free(out);
    tjFree(jpg);
    tjDestroy(enc);
    tjDestroy(dec);
    return best;
}

/* Microseconds of thread CPU time per image of aug_apply on whole batches, the
 * batch restored from src before each call (outside the timing). The time is split
 * into slices and the fastest slice counts: other processes on a busy machine
 * inflate some slices (shared caches), rarely all. */
static double time_chain(const char *spec, batch *b, const uint8_t *src, aug_workspace *ws,
                         double seconds)
{
    aug_chain *c;
    pt_err e;
    if (aug_parse(spec, &c, &e) != PT_OK) {
        printf("  %s: %s\n", spec, e.msg);
        return -1;
    }
    size_t isz = (size_t)SIDE * SIDE * 3;
    double best = -1;
    uint64_t seq = 0;
    for (int slice = 0; slice < SLICES; slice++) {
        double spent = 0, start = util_now();
        long images = 0;
        /* Each slice walks the same batch positions, so the same work. */
        seq = 0;
        while (seq < 3 || util_now() - start < seconds / SLICES) {
            /* Image by image: like the decoder filling a batch, this leaves the
             * pixels in the caches (one big memcpy may bypass them). */
            for (int i = 0; i < b->cap; i++)
                memcpy(batch_image(b, i), src + (size_t)i * isz, isz);
            b->n = b->cap;
            b->seq = seq++;
            for (int i = 0; i < b->n; i++)
                b->label[i] = i % 5;
            batch_clear_mix(b);
            double t0 = util_thread_cpu();
            aug_apply(c, b, 1234, ws);
            spent += util_thread_cpu() - t0;
            images += b->n;
        }
        double us = spent / images * 1e6;
        if (best < 0 || us < best)
            best = us;
    }
    aug_free(c);
    return best;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 0.8;
    if (!(secs > 0))
        secs = 0.8;
    bench_header("bench_augment");
    printf("%dx%d RGB, batches of %d, one thread\n", SIDE, SIDE, NIMG);

    batch *b = batch_new(NIMG, SIDE, SIDE);
    uint8_t *src = malloc((size_t)NIMG * SIDE * SIDE * 3);
    aug_workspace *ws = aug_workspace_new(NIMG, SIDE, SIDE);
    if (!b || !src || !ws) {
        printf("out of memory\n");
        return 0;
    }
    const char *root = getenv("PT_SHARED_DATA");
    char rootbuf[1100];
    snprintf(rootbuf, sizeof rootbuf, "%s/flower-jpegs-128", root ? root : "../shared/data");
    int got = load_photos(rootbuf, src, NIMG);
    for (int i = got; i < NIMG; i++)
        for (size_t k = 0; k < (size_t)SIDE * SIDE * 3; k++)
            src[(size_t)i * SIDE * SIDE * 3 + k] = (uint8_t)((k * 7 + k / 577 + (size_t)i * 13) & 255);
    printf("images: %d flower photos%s\n", got, got < NIMG ? " + synthetic patterns" : "");

    unsigned long jlen = 0;
    double dec = jpeg_decode_us(src, secs, &jlen);
    printf("reference: TurboJPEG decode of a 192x192 JPEG (q90, 4:2:0, %lu bytes): %.1f us\n",
           jlen, dec);
    printf("\n%-44s %10s %10s %9s\n", "augmentation (probability 1)", "us/image", "images/s",
           "x decode");
    static const char *cases[] = {
        "flip:1",
        "flip:1:axis=v",
        "perspective:1",
        "perspective:1:interp=bilinear",
        "affine:1",
        "affine:1:interp=bilinear",
        "crop:1",
        "crop:1:interp=bilinear",
        "color:1",
        "brightness:1",
        "contrast:1",
        "saturation:1",
        "hue:1",
        "cutout:1",
        "gridmask:1",
        "mixup:1",
        "cutmix:1",
        "perspective:1,flip:1,affine:1,color:1",
        "perspective:0.35,flip:0.5,affine:0.5,color:0.5",
        NULL,
    };
    if (argc > 2) {
        for (int k = 2; k < argc; k++) {
            double us = time_chain(argv[k], b, src, ws, secs);
            printf("%-44s %10.1f %10.0f %9.3f\n", argv[k], us, 1e6 / us, us / dec);
        }
        goto out;
    }
    for (int k = 0; cases[k]; k++) {
        double us = time_chain(cases[k], b, src, ws, secs);
        printf("%-44s %10.1f %10.0f %9.3f\n", cases[k], us, 1e6 / us, us / dec);
    }
    double us = time_chain(aug_default_spec(), b, src, ws, 2 * secs);
    /* The decode again: on a shared machine the fastest of both is the fairer one. */
    double dec2 = jpeg_decode_us(src, secs, &jlen);
    printf("reference measured again: %.1f us; the faster one counts\n", dec2);
    dec = dec2 < dec ? dec2 : dec;
    printf("\ndefault chain: %s\n", aug_default_spec());
    printf("  %.1f us/image, %.0f images/s per core, %.1f%% of one JPEG decode (goal < 25%%)\n",
           us, 1e6 / us, 100 * us / dec);
    double none = time_chain("none", b, src, ws, secs / 4);
    printf("  (an empty chain: %.2f us/image)\n", none);
out:
    aug_workspace_free(ws);
    batch_free(b);
    free(src);
    return 0;
}
