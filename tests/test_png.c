/* PNG writer (libpng underneath): checked by a small independent reader here (chunks
 * and their CRCs, IHDR, the IDAT stream inflated by zlib, PNG's five row filters
 * undone here, pixels) and, when python3 is present, also by Python's zlib. */
#include "tests/t.h"

#include <stdlib.h>
#include <zlib.h>

#include "base/util.h"
#include "io/png.h"

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* CRC-32 (ISO-HDLC), computed bit by bit: independent of libpng's and zlib's tables. */
static uint32_t crc32_bits(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
    }
    return c ^ 0xffffffffu;
}

/* PNG's Paeth predictor (the PNG specification, 9.4). */
static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Undo the row filters of h rows of w RGB pixels (each row a filter byte, then
 * w * 3 bytes) into rgb. NULL when all right, else what is wrong. */
static const char *unfilter(const uint8_t *raw, int w, int h, uint8_t *rgb, int *filters_seen)
{
    static char why[80];
    size_t stride = (size_t)w * 3;
    for (int y = 0; y < h; y++) {
        int f = raw[(size_t)y * (stride + 1)];
        const uint8_t *in = raw + (size_t)y * (stride + 1) + 1;
        uint8_t *row = rgb + (size_t)y * stride;
        const uint8_t *up = y ? row - stride : NULL;
        if (f > 4) {
            snprintf(why, sizeof why, "row %d has filter type %d", y, f);
            return why;
        }
        *filters_seen |= 1 << f;
        for (size_t x = 0; x < stride; x++) {
            int a = x >= 3 ? row[x - 3] : 0, b = up ? up[x] : 0, c = up && x >= 3 ? up[x - 3] : 0;
            int pred = f == 0 ? 0 : f == 1 ? a : f == 2 ? b : f == 3 ? (a + b) / 2 : paeth(a, b, c);
            row[x] = (uint8_t)(in[x] + pred);
        }
    }
    return NULL;
}

/* Reads the PNG at path as the writer makes it (8-bit RGB, no interlace) into *rgb
 * (caller frees): every chunk's CRC, IHDR, the zlib stream of the IDAT chunks
 * (inflate checks its Adler-32), the filters. Returns NULL when it is all right,
 * else what is wrong. */
static const char *read_png(const char *path, int *w_out, int *h_out, uint8_t **rgb,
                            int *filters_seen)
{
    static char why[200];
    *rgb = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return "cannot open";
    uint8_t *d = NULL, *idat = NULL, *raw = NULL;
    size_t n = 0, cap = 0, nidat = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 65536;
            d = realloc(d, cap);
        }
        size_t got = fread(d + n, 1, cap - n, f);
        if (got == 0)
            break;
        n += got;
    }
    fclose(f);
    const char *bad = NULL;
    static const uint8_t sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    int w = 0, h = 0, seen_ihdr = 0, seen_iend = 0;
    if (n < 8 || memcmp(d, sig, 8) != 0) {
        bad = "bad signature";
        goto out;
    }
    /* Chunks: length, type, data, CRC over type and data; IHDR first, IEND last. */
    for (size_t i = 8; i < n && !seen_iend;) {
        if (n - i < 12 || be32(d + i) > n - i - 12) {
            bad = "chunk runs past the end of the file";
            goto out;
        }
        uint32_t len = be32(d + i);
        const uint8_t *type = d + i + 4, *body = d + i + 8;
        if (crc32_bits(type, 4 + (size_t)len) != be32(body + len)) {
            snprintf(why, sizeof why, "CRC of chunk %.4s", (const char *)type);
            bad = why;
            goto out;
        }
        if (!seen_ihdr && memcmp(type, "IHDR", 4) != 0) {
            bad = "first chunk is not IHDR";
            goto out;
        }
        if (!memcmp(type, "IHDR", 4)) {
            if (seen_ihdr || len != 13 || body[8] != 8 || body[9] != 2 || body[10] != 0 ||
                body[11] != 0 || body[12] != 0) {
                bad = "IHDR is not one 8-bit RGB, deflate, filter 0, no interlace header";
                goto out;
            }
            seen_ihdr = 1;
            w = (int)be32(body);
            h = (int)be32(body + 4);
        } else if (!memcmp(type, "IDAT", 4)) {
            idat = realloc(idat, nidat + len + 1);
            memcpy(idat + nidat, body, len);
            nidat += len;
        } else if (!memcmp(type, "IEND", 4)) {
            seen_iend = 1;
        }
        i += 12 + (size_t)len;
        if (seen_iend && i != n) {
            bad = "bytes after IEND";
            goto out;
        }
    }
    if (!seen_iend || !idat || w <= 0 || h <= 0) {
        bad = "no IEND, no IDAT or an empty image";
        goto out;
    }
    /* One zlib stream holding exactly the filtered rows. */
    size_t row = (size_t)w * 3 + 1, want = row * (size_t)h;
    raw = malloc(want + 1);
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit(&z) != Z_OK) {
        bad = "inflateInit failed";
        goto out;
    }
    z.next_in = idat;
    z.avail_in = (uInt)nidat;
    z.next_out = raw;
    z.avail_out = (uInt)want + 1;
    int zr = inflate(&z, Z_FINISH);
    size_t got = want + 1 - z.avail_out, left = z.avail_in;
    inflateEnd(&z);
    if (zr != Z_STREAM_END) {
        snprintf(why, sizeof why, "zlib: %d (%s)", zr, z.msg ? z.msg : "no message");
        bad = why;
        goto out;
    }
    if (got != want || left != 0) {
        snprintf(why, sizeof why, "zlib stream holds %zu bytes for %zu, %zu bytes after it",
                 got, want, left);
        bad = why;
        goto out;
    }
    *rgb = malloc((size_t)w * h * 3);
    if ((bad = unfilter(raw, w, h, *rgb, filters_seen)) != NULL) {
        free(*rgb);
        *rgb = NULL;
        goto out;
    }
    *w_out = w;
    *h_out = h;
out:
    free(d);
    free(idat);
    free(raw);
    return bad;
}

TEST(png_writes_a_valid_file_with_the_exact_pixels)
{
    /* Three bands: a busy pattern, gradients, a flat colour (the row filters differ). */
    int w = 301, h = 157;
    size_t raw = (size_t)w * h * 3;
    uint8_t *rgb = malloc(raw);
    for (int k = 0; k < w * h * 3; k++) {
        int c = k % 3, x = k / 3 % w, y = k / 3 / w;
        rgb[k] = (uint8_t)(x < 100 ? k * 7 + k / 977 : x < 200 ? x + 2 * y + 40 * c : 20 + 80 * c);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/x.png", t_tmpdir());
    pt_err e;
    T_REQUIRE(png_write_rgb(path, rgb, w, h, &e) == PT_OK);

    /* The reader here: every chunk, the stream and the exact pixels. */
    int rw = 0, rh = 0, filters = 0;
    uint8_t *back;
    const char *why = read_png(path, &rw, &rh, &back, &filters);
    T_CHECKF(why == NULL, "%s", why ? why : "");
    if (!why) {
        T_EQ_INT(rw, w);
        T_EQ_INT(rh, h);
        T_CHECK(rw == w && rh == h && memcmp(back, rgb, raw) == 0);
    }
    free(back);
    /* Compressed: well under the raw pixels (the stored-block writer was above them). */
    uint8_t *file;
    size_t flen;
    T_REQUIRE(util_read_file(path, &file, &flen, &e) == PT_OK);
    free(file);
    T_CHECKF(flen * 4 < raw, "%zu bytes for %zu bytes of pixels (filters used: 0x%x)", flen, raw,
             filters);

    char cmd[8192], *out = NULL;
    if (t_need_tool("file")) {
        snprintf(cmd, sizeof cmd, "file -b '%s'", path);
        T_CHECKF(t_run(cmd, &out) == 0 &&
                     strstr(out, "PNG image data, 301 x 157, 8-bit/color RGB") != NULL,
                 "file: %s", out);
        free(out);
    }

    /* A second independent decode: parse chunks with Python, inflate with zlib, undo
     * the filters, compare. */
    snprintf(cmd, sizeof cmd,
             "python3 -c '\n"
             "import sys, zlib, struct, binascii\n"
             "d = open(sys.argv[1], \"rb\").read()\n"
             "assert d[:8] == b\"\\x89PNG\\r\\n\\x1a\\n\"\n"
             "i, idat = 8, b\"\"\n"
             "while i < len(d):\n"
             "    n, = struct.unpack(\">I\", d[i:i+4]); t = d[i+4:i+8]; body = d[i+8:i+8+n]\n"
             "    crc, = struct.unpack(\">I\", d[i+8+n:i+12+n])\n"
             "    assert binascii.crc32(t + body) & 0xffffffff == crc, t\n"
             "    if t == b\"IDAT\": idat += body\n"
             "    i += 12 + n\n"
             "raw = zlib.decompress(idat)\n"
             "w, h, s = 301, 157, 301 * 3\n"
             "px, prev = bytearray(), bytearray(s)\n"
             "for y in range(h):\n"
             "    f, row = raw[y*(s+1)], bytearray(raw[y*(s+1)+1:(y+1)*(s+1)])\n"
             "    for x in range(s):\n"
             "        a = row[x-3] if x >= 3 else 0; b = prev[x]; c = prev[x-3] if x >= 3 else 0\n"
             "        p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)\n"
             "        pr = [0, a, b, (a + b) // 2, a if pa <= pb and pa <= pc else b if pb <= pc else c][f]\n"
             "        row[x] = (row[x] + pr) & 255\n"
             "    px += row; prev = row\n"
             "exp = bytes(((k*7 + k//977) if k//3%%w < 100 else (k//3%%w + 2*(k//3//w) + 40*(k%%3)) "
             "if k//3%%w < 200 else (20 + 80*(k%%3))) & 255 for k in range(w*h*3))\n"
             "print(\"same\" if bytes(px) == exp else \"different\")\n"
             "' '%s'",
             path);
    if (t_need_tool("python3")) {
        T_CHECKF(t_run(cmd, &out) == 0 && strstr(out, "same"), "python says: %s", out);
        free(out);
    }
    free(rgb);
}

TEST(png_rejects_bad_sizes)
{
    uint8_t px[3] = { 1, 2, 3 };
    uint8_t *buf;
    size_t len;
    T_EQ_INT(png_encode_rgb(px, 0, 1, &buf, &len), PT_EUSAGE);
    T_EQ_INT(png_encode_rgb(px, 1, -1, &buf, &len), PT_EUSAGE);
    T_REQUIRE(png_encode_rgb(px, 1, 1, &buf, &len) == PT_OK);
    T_CHECK(len > 50);
    free(buf);
}

/* The reader (libpng): the writer's files come back pixel for pixel; a header that
 * claims too many pixels is refused before decoding; damage is an error. */
TEST(png_decode_reads_the_writers_files_and_refuses_bad_ones)
{
    enum { W = 37, H = 23 };
    uint8_t src[W * H * 3];
    for (int i = 0; i < W * H * 3; i++)
        src[i] = (uint8_t)(i * 7 + i / 3);
    uint8_t *png;
    size_t len;
    T_REQUIRE(png_encode_rgb(src, W, H, &png, &len) == 0);
    T_CHECK(png_is_png(png, len));
    uint8_t *rgb;
    int w, h;
    pt_err e;
    T_REQUIRE(png_decode_rgb(png, len, &rgb, &w, &h, &e) == PT_OK);
    T_EQ_INT(w, W);
    T_EQ_INT(h, H);
    T_CHECK(memcmp(rgb, src, sizeof src) == 0);
    free(rgb);

    /* Cut short: libpng's message, no pixels. */
    T_EQ_INT(png_decode_rgb(png, len - 20, &rgb, &w, &h, &e), PT_EFORMAT);
    T_CHECK(rgb == NULL);
    T_CHECKF(strstr(e.msg, "PNG") != NULL, "%s", e.msg);

    /* IHDR (bytes 16..28 after the signature and the chunk's length and type)
     * claiming 20000 x 20000, its CRC made right so only the size is wrong. */
    uint8_t *big = malloc(len);
    T_REQUIRE(big);
    memcpy(big, png, len);
    const uint8_t side[4] = { 0, 0, 0x4e, 0x20 };
    memcpy(big + 16, side, 4);
    memcpy(big + 20, side, 4);
    uint32_t c = crc32_bits(big + 12, 17);
    const uint8_t crc[4] = { (uint8_t)(c >> 24), (uint8_t)(c >> 16), (uint8_t)(c >> 8), (uint8_t)c };
    memcpy(big + 29, crc, 4);
    T_EQ_INT(png_decode_rgb(big, len, &rgb, &w, &h, &e), PT_ETOOBIG);
    T_CHECKF(strstr(e.msg, "20000x20000") != NULL, "%s", e.msg);
    free(big);

    T_EQ_INT(png_decode_rgb((const uint8_t *)"GIF89a..", 8, &rgb, &w, &h, &e), PT_EFORMAT);
    T_CHECKF(strstr(e.msg, "not a PNG") != NULL, "%s", e.msg);
    free(png);
}

/* Found by fuzzing (tests/fuzz/regress/png/): 42 bytes whose second chunk (iTXt)
 * claimed 2,013,331,471 bytes made libpng allocate 2 GB before finding the file
 * ended. A chunk longer than what follows it is now refused at its offset first. */
TEST(png_chunk_longer_than_the_file_is_refused_before_any_allocation)
{
    uint8_t src[4 * 3 * 3] = { 0 };
    uint8_t *png;
    size_t len;
    T_REQUIRE(png_encode_rgb(src, 4, 3, &png, &len) == 0);
    /* The signature and IHDR (33 bytes), then a chunk header claiming 0x7801000f
     * bytes, then the rest of the file. */
    static const uint8_t lie[8] = { 0x78, 0x01, 0x00, 0x0f, 'i', 'T', 'X', 't' };
    uint8_t *bad = malloc(len + sizeof lie);
    T_REQUIRE(bad);
    memcpy(bad, png, 33);
    memcpy(bad + 33, lie, sizeof lie);
    memcpy(bad + 33 + sizeof lie, png + 33, len - 33);
    uint8_t *rgb = (uint8_t *)1;
    int w, h;
    pt_err e;
    T_EQ_INT(png_decode_rgb(bad, len + sizeof lie, &rgb, &w, &h, &e), PT_EFORMAT);
    T_CHECK(rgb == NULL);
    T_EQ_INT(e.offset, 33);
    T_CHECKF(strstr(e.msg, "byte 33: PNG chunk 'iTXt' of 2013331471 bytes needs 2013331475"), "%s", e.msg);
    /* The same chunk length on the last chunk, the file cut inside it. */
    T_EQ_INT(png_decode_rgb(png, len - 4, &rgb, &w, &h, &e), PT_EFORMAT);
    T_CHECKF(strstr(e.msg, "PNG chunk 'IEND' of 0 bytes needs 4 after its header (data and CRC), "
                                 "the file has 0"), "%s", e.msg);
    free(bad);
    free(png);
}
