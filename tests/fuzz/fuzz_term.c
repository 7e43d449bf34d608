/* fuzz_term — the terminal reply parsers (ui/term.c) on any bytes.
 *
 * The bytes are what a terminal sent back while ui_term_probe() waited for its
 * answers: DA1 (`ESC [ ? a;b;c c`), XTSMGRAPHICS (`ESC [ ? i;s;v[;v] S`), the cell
 * size (`ESC [ 6;h;w t`) and the background colour (`ESC ] 11 ; rgb:R/G/B`), mixed
 * with anything else a terminal or a person typing may send. The probe reads at
 * most 1023 bytes per query, so longer inputs are cut there. Each parser also sees
 * the reply cut short, as the probe does while the bytes come in.
 *
 * Promises checked: no read outside buf[0..n) (the input is not NUL-terminated);
 * DA1 fills exactly the count it reports, at most max; the numbers are not
 * negative; a cell size is positive.
 */
#include "tests/fuzz/fuzz.h"

#include "ui/term.h"

#define PROBE_BUF 1023

static void da1(const char *buf, size_t n, int max)
{
    int attrs[128];
    for (int i = 0; i < 128; i++)
        attrs[i] = -1;
    int count = -1;
    if (!ui_term_parse_da1(buf, n, attrs, max, &count))
        return;
    FZ_ASSERT(count >= 0 && count <= max, "DA1: %d attributes with max %d", count, max);
    for (int i = 0; i < count; i++)
        FZ_ASSERT(attrs[i] >= 0, "DA1: attribute %d of %d not filled (max %d)", i, count, max);
}

static void all(const char *buf, size_t n)
{
    da1(buf, n, 1);
    da1(buf, n, 64);
    da1(buf, n, 128);
    for (int item = 1; item <= 2; item++) {
        int st = -1, v1 = -1, v2 = -1;
        if (ui_term_parse_xtsm(buf, n, item, &st, &v1, &v2))
            FZ_ASSERT(st >= 0 && v1 >= 0 && v2 >= 0, "XTSMGRAPHICS %d: %d %d %d", item, st, v1, v2);
    }
    int ch = 0, cw = 0;
    if (ui_term_parse_cell(buf, n, &ch, &cw))
        FZ_ASSERT(ch > 0 && cw > 0, "cell %dx%d", cw, ch);
    unsigned char rgb[3];
    (void)ui_term_parse_bg(buf, n, rgb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly n bytes, so a read past them is caught. */
    size_t n = size < PROBE_BUF ? size : PROBE_BUF;
    char *buf = malloc(n ? n : 1);
    FZ_ASSERT(buf, "out of memory");
    memcpy(buf, data, n);
    all(buf, n);
    if (n > 1) {
        all(buf, n - 1);
        all(buf, n / 2);
    }
    free(buf);
    return 0;
}
