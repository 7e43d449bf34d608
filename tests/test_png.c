/* PNG writer: checked by an independent decoder (Python's zlib) when python3 is
 * present, and by parsing the chunk structure here. */
#include "tests/t.h"

#include <stdlib.h>

#include "base/util.h"
#include "io/png.h"

TEST(png_writes_a_valid_file_with_the_exact_pixels)
{
    int w = 301, h = 157; /* > 65535 raw bytes: several stored blocks */
    uint8_t *rgb = malloc((size_t)w * h * 3);
    for (int i = 0; i < w * h * 3; i++)
        rgb[i] = (uint8_t)(i * 7 + i / 977);
    char path[4096];
    snprintf(path, sizeof path, "%s/x.png", t_tmpdir());
    pt_err e;
    T_REQUIRE(png_write_rgb(path, rgb, w, h, &e) == PT_OK);

    char cmd[8192], *out = NULL;
    snprintf(cmd, sizeof cmd, "file -b '%s'", path);
    if (t_run(cmd, &out) == 0)
        T_CHECKF(strstr(out, "PNG image data, 301 x 157, 8-bit/color RGB") != NULL, "file: %s", out);
    free(out);

    /* Independent decode: parse chunks with Python, inflate with zlib, compare. */
    snprintf(cmd, sizeof cmd,
             "command -v python3 >/dev/null || { echo skip; exit 0; }; python3 -c '\n"
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
             "w, h = 301, 157\n"
             "px = bytearray()\n"
             "for y in range(h):\n"
             "    row = raw[y*(w*3+1):(y+1)*(w*3+1)]\n"
             "    assert row[0] == 0\n"
             "    px += row[1:]\n"
             "exp = bytes(((k*7 + k//977) & 255) for k in range(w*h*3))\n"
             "print(\"same\" if bytes(px) == exp else \"different\")\n"
             "' '%s'",
             path);
    T_REQUIRE(t_run(cmd, &out) == 0);
    T_CHECKF(strstr(out, "same") || strstr(out, "skip"), "python says: %s", out);
    free(out);
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
