#include "ui/rowmove.h"

#include <curses.h>
#include <stdint.h>
#include <stdlib.h>
#include <wchar.h>

static uint64_t *hashes;
static int cap;

/* FNV-1a over what curses compares: the characters, attributes and colour pair of
 * every cell of the row. */
static uint64_t row_hash(WINDOW *w, int y, int cols, cchar_t *buf)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    int n = mvwin_wchnstr(w, y, 0, buf, cols);
    if (n == ERR)
        return h;
    for (int x = 0; x < cols; x++) {
        wchar_t wch[CCHARW_MAX + 1];
        attr_t attrs = 0;
        short pair = 0;
        if (getcchar(&buf[x], wch, &attrs, &pair, NULL) == ERR)
            continue;
        uint64_t v[3] = { (uint64_t)attrs, (uint64_t)(uint16_t)pair, 0 };
        for (int k = 0; k < CCHARW_MAX && wch[k]; k++)
            v[2] = v[2] * 1000003u + (uint64_t)wch[k];
        for (int k = 0; k < 3; k++) {
            h ^= v[k];
            h *= 0x100000001b3ULL;
        }
    }
    return h;
}

int ui_rows_may_move(void)
{
    int rows = LINES, cols = COLS;
    if (rows <= 1 || cols <= 0 || !curscr || !newscr)
        return 0;
    if (2 * rows > cap) {
        uint64_t *nh = realloc(hashes, (size_t)(2 * rows) * sizeof *nh);
        if (!nh)
            return 1; /* cannot tell: assume the worst */
        hashes = nh;
        cap = 2 * rows;
    }
    cchar_t *buf = malloc((size_t)(cols + 1) * sizeof *buf);
    if (!buf)
        return 1;
    uint64_t *now = hashes, *next = hashes + rows;
    for (int y = 0; y < rows; y++) {
        now[y] = row_hash(curscr, y, cols, buf);
        next[y] = row_hash(newscr, y, cols, buf);
    }
    free(buf);
    for (int y = 0; y < rows; y++) {
        if (next[y] == now[y])
            continue;
        for (int z = 0; z < rows; z++)
            if (z != y && next[y] == now[z])
                return 1;
    }
    return 0;
}

void ui_rows_free(void)
{
    free(hashes);
    hashes = NULL;
    cap = 0;
}
