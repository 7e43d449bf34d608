#include "io/png.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* CRC-32 (ISO-HDLC), as PNG chunks use it. */
static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return crc;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Appends a chunk: length, type, data, CRC over type + data. */
static uint8_t *chunk(uint8_t *o, const char type[4], const uint8_t *data, uint32_t n)
{
    put_be32(o, n);
    memcpy(o + 4, type, 4);
    if (n)
        memcpy(o + 8, data, n);
    uint32_t c = crc_update(0xffffffffu, o + 4, 4 + (size_t)n) ^ 0xffffffffu;
    put_be32(o + 8 + n, c);
    return o + 12 + n;
}

int png_encode_rgb(const uint8_t *rgb, int w, int h, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    if (w <= 0 || h <= 0 || w > 65535 || h > 65535)
        return PT_EUSAGE;
    pthread_once(&crc_once, crc_init);

    size_t row = (size_t)w * 3 + 1; /* filter byte + pixels */
    size_t raw = row * (size_t)h;
    size_t nblocks = (raw + 65534) / 65535;
    size_t zlen = 2 + raw + nblocks * 5 + 4;
    uint8_t *z = malloc(zlen);
    if (!z)
        return PT_ENOMEM;

    /* zlib stream: header, stored blocks of up to 65535 bytes, Adler-32. */
    size_t zo = 0;
    z[zo++] = 0x78;
    z[zo++] = 0x01;
    uint32_t a = 1, b = 0;
    size_t done = 0;
    size_t y = 0, x = 0; /* position in the virtual raw stream */
    while (done < raw) {
        size_t n = raw - done < 65535 ? raw - done : 65535;
        z[zo++] = (uint8_t)(done + n == raw ? 1 : 0);
        z[zo++] = (uint8_t)(n & 0xff);
        z[zo++] = (uint8_t)(n >> 8);
        z[zo++] = (uint8_t)(~n & 0xff);
        z[zo++] = (uint8_t)((~n >> 8) & 0xff);
        for (size_t i = 0; i < n; i++) {
            uint8_t v;
            if (x == 0)
                v = 0; /* filter: none */
            else
                v = rgb[y * (size_t)w * 3 + (x - 1)];
            z[zo++] = v;
            a = (a + v) % 65521;
            b = (b + a) % 65521;
            if (++x == row) {
                x = 0;
                y++;
            }
        }
        done += n;
    }
    put_be32(z + zo, (b << 16) | a);
    zo += 4;

    size_t total = 8 + (12 + 13) + (12 + zo) + 12;
    uint8_t *o = malloc(total);
    if (!o) {
        free(z);
        return PT_ENOMEM;
    }
    static const uint8_t sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    memcpy(o, sig, 8);
    uint8_t ihdr[13];
    put_be32(ihdr, (uint32_t)w);
    put_be32(ihdr + 4, (uint32_t)h);
    ihdr[8] = 8;  /* bit depth */
    ihdr[9] = 2;  /* colour type: RGB */
    ihdr[10] = 0; /* deflate */
    ihdr[11] = 0; /* adaptive filtering */
    ihdr[12] = 0; /* no interlace */
    uint8_t *p = chunk(o + 8, "IHDR", ihdr, 13);
    p = chunk(p, "IDAT", z, (uint32_t)zo);
    p = chunk(p, "IEND", NULL, 0);
    free(z);
    *out = o;
    *len = (size_t)(p - o);
    return PT_OK;
}

int png_write_rgb(const char *path, const uint8_t *rgb, int w, int h, pt_err *e)
{
    uint8_t *buf;
    size_t len;
    int rc = png_encode_rgb(rgb, w, h, &buf, &len);
    if (rc != PT_OK)
        return err_set(e, rc, path, PT_NO_RECORD, PT_NO_OFFSET, "cannot encode %dx%d PNG", w,
                       h);
    rc = util_write_file_atomic(path, buf, len, e);
    free(buf);
    return rc;
}
