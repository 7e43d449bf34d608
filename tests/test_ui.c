/* The workbench's parts without a terminal: layout, charts, keys, the terminal
 * reply parsers and the probe over a pseudo-terminal, sixel encoding (decoded
 * back with libsixel), picture tiles, inspect helpers, the log ring, and the
 * panels drawn on a curses screen that writes to /dev/null and read back. */
#include "tests/t.h"

#include <fcntl.h>
#include <locale.h>
#include <poll.h>
#include <pthread.h>
#include <sixel.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/util.h"
#include "runs.h"
#include "ui/chart.h"
#include "ui/settings.h"
#include "ui/draw.h"
#include "ui/inspect.h"
#include "ui/keys.h"
#include "ui/layout.h"
#include "ui/log.h"
#include "ui/panels.h"
#include "ui/preview.h"
#include "ui/rowmove.h"
#include "ui/sixel.h"
#include "ui/sysmon.h"
#include "ui/term.h"

/* memmem is a GNU extension; this is all the tests need of it. */
static const void *find(const void *hay, size_t n, const void *needle, size_t k)
{
    const char *h = hay;
    for (size_t i = 0; k <= n && i + k <= n; i++)
        if (memcmp(h + i, needle, k) == 0)
            return h + i;
    return NULL;
}

/* ---- layout --------------------------------------------------------------------- */

static int inside(ui_rect in, ui_rect out)
{
    return in.y >= out.y && in.x >= out.x && in.y + in.h <= out.y + out.h &&
           in.x + in.w <= out.x + out.w;
}

TEST(ui_layout_fits_every_size_without_overlap)
{
    static const int sizes[][2] = { { 24, 80 }, { 30, 100 }, { 30, 120 }, { 48, 160 },
                                    { 60, 240 }, { 16, 60 } };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int reps = 1; reps <= 16; reps += 15) {
            int rows = sizes[i][0], cols = sizes[i][1];
            ui_layout l;
            ui_layout_compute(&l, rows, cols, -1, reps);
            T_REQUIRE(!l.too_small);
            T_EQ_INT(l.wide, cols >= 120 && rows >= 30);
            ui_rect screen = { 0, 0, rows, cols };
            T_CHECK(l.header.y == 0 && l.header.h == 2 && l.footer.y == rows - 1);
            for (int p = 0; p < UI_P_COUNT; p++) {
                T_CHECKF(ui_layout_visible(&l, p), "%dx%d: %s hidden", cols, rows,
                         ui_layout_name(p));
                T_CHECKF(inside(l.panel[p], l.body) && inside(l.body, screen),
                         "%dx%d: %s outside the body", cols, rows, ui_layout_name(p));
                T_CHECKF(l.panel[p].h >= 4 && l.panel[p].w >= 20, "%dx%d: %s is %dx%d", cols,
                         rows, ui_layout_name(p), l.panel[p].w, l.panel[p].h);
                for (int q = 0; q < p; q++)
                    T_CHECKF(!ui_layout_overlap(l.panel[p], l.panel[q]), "%dx%d: %s over %s",
                             cols, rows, ui_layout_name(p), ui_layout_name(q));
            }
            /* Every body cell belongs to a panel: nothing left unpainted. */
            long long area = 0;
            for (int p = 0; p < UI_P_COUNT; p++)
                area += (long long)l.panel[p].h * l.panel[p].w;
            T_EQ_INT(area, (long long)l.body.h * l.body.w);
        }
    /* A larger screen gives the preview more room. */
    ui_layout small, big;
    ui_layout_compute(&small, 24, 80, -1, 2);
    ui_layout_compute(&big, 48, 160, -1, 2);
    T_CHECK(big.panel[UI_P_PREVIEW].h * big.panel[UI_P_PREVIEW].w >
            2 * small.panel[UI_P_PREVIEW].h * small.panel[UI_P_PREVIEW].w);
    /* Zoom: one panel takes the body. */
    ui_layout z;
    ui_layout_compute(&z, 24, 80, UI_P_LABELS, 2);
    T_CHECK(memcmp(&z.panel[UI_P_LABELS], &z.body, sizeof z.body) == 0);
    for (int p = 0; p < UI_P_COUNT; p++)
        T_EQ_INT(ui_layout_visible(&z, p), p == UI_P_LABELS);
    /* Below the minimum: nothing but the note. */
    ui_layout_compute(&z, 15, 80, -1, 2);
    T_CHECK(z.too_small);
    ui_layout_compute(&z, 24, 59, -1, 2);
    T_CHECK(z.too_small);
}

TEST(ui_layout_focus_moves_by_direction)
{
    ui_layout l;
    ui_layout_compute(&l, 24, 80, -1, 2);
    T_EQ_INT(ui_layout_neighbor(&l, UI_P_REPLICAS, UI_DIR_RIGHT), UI_P_CURVES);
    T_EQ_INT(ui_layout_neighbor(&l, UI_P_REPLICAS, UI_DIR_DOWN), UI_P_LABELS);
    T_EQ_INT(ui_layout_neighbor(&l, UI_P_LABELS, UI_DIR_DOWN), UI_P_LOG);
    T_EQ_INT(ui_layout_neighbor(&l, UI_P_LOG, UI_DIR_UP), UI_P_LABELS);
    T_EQ_INT(ui_layout_neighbor(&l, UI_P_CURVES, UI_DIR_DOWN), UI_P_PREVIEW);
    T_EQ_INT(ui_layout_neighbor(&l, UI_P_CURVES, UI_DIR_LEFT), UI_P_REPLICAS);
    /* Nothing above the top row, nothing right of the right column. */
    T_EQ_INT(ui_layout_neighbor(&l, UI_P_CURVES, UI_DIR_UP), UI_P_CURVES);
    T_EQ_INT(ui_layout_neighbor(&l, UI_P_PREVIEW, UI_DIR_RIGHT), UI_P_PREVIEW);
    ui_layout_compute(&l, 48, 160, -1, 2);
    T_EQ_INT(ui_layout_neighbor(&l, UI_P_CURVES, UI_DIR_RIGHT), UI_P_PREVIEW);
    T_EQ_INT(ui_layout_neighbor(&l, UI_P_LOG, UI_DIR_LEFT), UI_P_LABELS);
}

/* ---- charts --------------------------------------------------------------------- */

static int braille(uint32_t c)
{
    return c >= 0x2801 && c <= 0x28ff;
}

TEST(ui_chart_braille_lines_follow_the_data)
{
    ui_cells g;
    T_REQUIRE(ui_draw_cells_init(&g, 4, 10) == 0);
    float up[20];
    for (int i = 0; i < 20; i++)
        up[i] = (float)i;
    ui_chart_series s = { up, NULL, 0, 1, 20, UI_R_S1, 0, 0 };
    ui_chart_axis xa = { 0, 19, 0 }, ya = { 0, 19, 0 };
    ui_chart_plot(&g, xa, ya, &s, 1);
    /* A rising line: bottom-left and top-right have dots, the other corners not. */
    T_CHECK(braille(g.c[3 * 10 + 0].ch));
    T_CHECK(braille(g.c[0 * 10 + 9].ch));
    T_EQ_INT(g.c[0].ch, ' ');
    T_EQ_INT(g.c[3 * 10 + 9].ch, ' ');
    /* Every column is crossed exactly once by a continuous line. */
    for (int x = 0; x < 10; x++) {
        int rows = 0;
        for (int y = 0; y < 4; y++)
            rows += braille(g.c[y * 10 + x].ch);
        T_CHECKF(rows >= 1 && rows <= 2, "column %d has %d rows", x, rows);
        T_EQ_INT(g.c[x].role, g.c[x].ch == ' ' ? UI_R_NORMAL : UI_R_S1);
    }
    /* The lowest dot of the first cell is its bottom-left dot (0x40). */
    T_CHECK((g.c[30].ch - 0x2800) & 0x40);

    /* Scatter: the two end points only, nothing between. */
    float two[2] = { 0, 19 };
    ui_chart_series sc = { two, NULL, 0, 19, 2, UI_R_DIM, 0, 1 };
    ui_chart_plot(&g, xa, ya, &sc, 1);
    int cells = 0;
    for (int i = 0; i < 40; i++)
        cells += braille(g.c[i].ch);
    T_EQ_INT(cells, 2);
    T_CHECK(braille(g.c[30].ch) && braille(g.c[9].ch));

    /* A gap (NaN) breaks the line: the middle columns stay empty. */
    float gap[20];
    for (int i = 0; i < 20; i++)
        gap[i] = i >= 6 && i <= 13 ? NAN : 5.0f;
    s.y = gap;
    ui_chart_plot(&g, xa, ya, &s, 1);
    for (int y = 0; y < 4; y++)
        for (int x = 4; x <= 5; x++)
            T_CHECKF(g.c[y * 10 + x].ch == ' ', "cell %d,%d drawn in a gap", y, x);

    /* A big zoomed chart (a 160 x 48 terminal gives about 41 x 151 cells) is drawn
     * like a small one: the rising line reaches both corners and every column. */
    ui_cells big;
    T_REQUIRE(ui_draw_cells_init(&big, 41, 151) == 0);
    s.y = up;
    ui_chart_plot(&big, xa, ya, &s, 1);
    T_CHECK(braille(big.c[40 * 151 + 0].ch));
    T_CHECK(braille(big.c[0 * 151 + 150].ch));
    for (int x = 0; x < 151; x++) {
        int rows = 0;
        for (int y = 0; y < 41; y++)
            rows += braille(big.c[y * 151 + x].ch);
        T_CHECKF(rows >= 1, "column %d of the big chart is empty", x);
    }
    ui_draw_cells_free(&big);

    /* Log scale: 1, 10, 100 sit on equal steps, so 10 is in the middle rows. */
    float lg[3] = { 1, 10, 100 };
    ui_chart_series ls = { lg, NULL, 0, 1, 3, UI_R_S2, 0, 0 };
    ui_chart_axis lx = { 0, 2, 0 }, ly = { 1, 100, 1 };
    ui_chart_plot(&g, lx, ly, &ls, 1);
    int mid = 0;
    for (int y = 1; y <= 2; y++)
        mid += braille(g.c[y * 10 + 5].ch) || braille(g.c[y * 10 + 4].ch);
    T_CHECK(mid > 0);
    T_NEAR(ui_chart_row_value(ly, 4, 0), 100 * pow(100, -1.5 / 15), 1e-6);
    /* y range: a flat series still gets a span, and accuracy-like data keeps 0. */
    ui_chart_axis r;
    float flat[3] = { 2, 2, 2 };
    ui_chart_series fs = { flat, NULL, 0, 1, 3, UI_R_S1, 0, 0 };
    T_EQ_INT(ui_chart_yrange(&fs, 1, 0, &r), 0);
    T_CHECK(r.lo < 2 && r.hi > 2);
    float acc[3] = { 0.01f, 0.5f, 0.9f };
    fs.y = acc;
    ui_chart_yrange(&fs, 1, 0, &r);
    T_CHECK(r.lo == 0 && r.hi > 0.9);
    float none[2] = { NAN, NAN };
    fs.y = none;
    fs.n = 2;
    T_EQ_INT(ui_chart_yrange(&fs, 1, 0, &r), -1);
    ui_draw_cells_free(&g);
}

TEST(ui_chart_sparklines_bars_smoothing)
{
    uint32_t out[16];
    float v[9] = { 0, 1, 2, 3, 4, 5, 6, 7, 8 };
    ui_chart_spark(v, 9, 8, 9, out);
    for (int i = 1; i < 9; i++)
        T_EQ_INT(out[i], 0x2580 + i);
    T_EQ_INT(out[0], 0x2581); /* zero is the lowest bar, not a hole */
    ui_chart_spark(v + 7, 2, 8, 5, out); /* short history: right-aligned */
    T_CHECK(out[0] == ' ' && out[2] == ' ' && out[3] == 0x2587 && out[4] == 0x2588);
    float many[100];
    for (int i = 0; i < 100; i++)
        many[i] = i == 57 ? 10.0f : 1.0f;
    ui_chart_spark(many, 100, 0, 10, out); /* bins keep the spike */
    T_EQ_INT(out[5], 0x2588);
    T_EQ_INT(out[0], 0x2581);

    T_EQ_INT(ui_chart_bar(0.5, 4, out), 2);
    T_CHECK(out[0] == 0x2588 && out[1] == 0x2588 && out[2] == ' ');
    T_EQ_INT(ui_chart_bar(1.0 / 32, 4, out), 1);
    T_EQ_INT(out[0], 0x258f); /* one eighth */
    T_EQ_INT(ui_chart_bar(7.0 / 8, 1, out), 1);
    T_EQ_INT(out[0], 0x2589);
    T_EQ_INT(ui_chart_bar(3.0, 3, out), 3); /* clamped */
    T_EQ_INT(ui_chart_bar(NAN, 3, out), 0);

    float in[5] = { 1, 1, 1, 1, 1 }, sm[5];
    ui_chart_ema(in, 5, 0.9, sm);
    for (int i = 0; i < 5; i++)
        T_NEAR(sm[i], 1.0, 1e-6); /* debiased: no ramp from zero */
    float step[4] = { 0, 1, 1, 1 };
    ui_chart_ema(step, 4, 0.5, sm);
    T_NEAR(sm[0], 0, 1e-6);
    T_NEAR(sm[1], 0.5 / 0.75, 1e-6);
    ui_chart_ema(step, 4, 0, sm);
    T_NEAR(sm[2], 1, 1e-6);
    float withnan[3] = { 2, NAN, 2 };
    ui_chart_ema(withnan, 3, 0.5, sm);
    T_CHECK(isnan(sm[1]) && fabs(sm[2] - 2) < 1e-6);
}

TEST(ui_chart_number_and_time_formats)
{
    char b[32];
    struct {
        double v;
        int w;
        const char *want;
    } cases[] = {
        { 0.123456, 6, "0.123" }, { 12.345, 6, "12.3" },   { 1234, 6, "1234" },
        { 12345, 5, "12345" },    { 123456, 6, "123k" },   { 1234567, 5, "1.23M" },
        { 3.2e-4, 6, "3.2e-4" },  { 3e-4, 6, "3.0e-4" },   { 0.05, 6, "0.05" },
        { -1.5, 6, "-1.5" },      { 0, 6, "0" },           { 2.5e9, 6, "2.50G" },
        { NAN, 6, "--" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ui_chart_fmt(cases[i].v, cases[i].w, b, sizeof b);
        T_CHECKF(strcmp(b, cases[i].want) == 0, "fmt(%g, %d) = '%s', want '%s'", cases[i].v,
                 cases[i].w, b, cases[i].want);
        T_CHECKF((int)strlen(b) <= cases[i].w, "'%s' wider than %d", b, cases[i].w);
    }
    for (double v = 1e-7; v < 1e12; v *= 3.7) {
        ui_chart_fmt(v, 6, b, sizeof b);
        T_CHECKF((int)strlen(b) <= 6, "fmt(%g) = '%s' too wide", v, b);
        T_CHECKF(fabs(atof(b) - v) <= v * 0.06 || strpbrk(b, "kMGT"), "fmt(%g) = '%s'", v, b);
    }
    ui_chart_fmt_dur(42, b, sizeof b);
    T_EQ_STR(b, "42s");
    ui_chart_fmt_dur(187, b, sizeof b);
    T_EQ_STR(b, "3:07");
    ui_chart_fmt_dur(3723, b, sizeof b);
    T_EQ_STR(b, "1:02:03");
    ui_chart_fmt_dur(-1, b, sizeof b);
    T_EQ_STR(b, "--");
}

/* ---- keys ----------------------------------------------------------------------- */

TEST(ui_keys_every_key_is_bound_once_and_in_the_help)
{
    size_t n;
    const ui_key *k = ui_keys_table(&n);
    T_REQUIRE(n > 20);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++)
            T_CHECKF(!(k[i].ctx == k[j].ctx && k[i].code == k[j].code),
                     "key %s bound twice in %s", k[i].name, ui_keys_ctx_name(k[i].ctx));
        /* Each action of a context has a help line (on one of its keys). */
        int helped = 0;
        for (size_t j = 0; j < n; j++)
            helped |= k[j].ctx == k[i].ctx && k[j].act == k[i].act && k[j].help != NULL;
        T_CHECKF(helped, "%s: key %s has no help", ui_keys_ctx_name(k[i].ctx), k[i].name);
        T_EQ_INT(ui_keys_action(k[i].ctx, k[i].code), k[i].act);
    }
    /* The keys the issue names, on the main screen. */
    static const struct {
        int code;
        ui_act act;
    } want[] = { { 's', UI_ACT_START }, { 'p', UI_ACT_PAUSE },      { 'i', UI_ACT_INSPECT },
                 { 'a', UI_ACT_AUGMENT }, { 'n', UI_ACT_NEXT },     { '\t', UI_ACT_FOCUS_NEXT },
                 { KEY_UP, UI_ACT_UP }, { '\n', UI_ACT_ZOOM },      { 'c', UI_ACT_CONFIG },
                 { '?', UI_ACT_HELP }, { 'q', UI_ACT_QUIT },        { 'v', UI_ACT_METRIC },
                 { 'l', UI_ACT_LOGSCALE } };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        T_EQ_INT(ui_keys_action(UI_CTX_MAIN, want[i].code), want[i].act);
    T_EQ_INT(ui_keys_action(UI_CTX_MAIN, 'm'), UI_ACT_NONE);
    T_EQ_INT(ui_keys_action(UI_CTX_INSPECT, 'm'), UI_ACT_MISTAKES);
    T_EQ_INT(ui_keys_action(UI_CTX_INSPECT, 'q'), UI_ACT_QUIT);  /* global keys work there */
    T_EQ_INT(ui_keys_action(UI_CTX_INSPECT, 'c'), UI_ACT_NONE);
    /* The help lines: one per action, key names joined, no duplicates. */
    char lines[64][160];
    int nl = ui_keys_help(UI_CTX_MAIN, 12, &lines[0][0], sizeof lines[0], 64);
    int found_quit = 0, found_zoom = 0;
    for (int i = 0; i < nl; i++) {
        found_quit |= strncmp(lines[i], "q ", 2) == 0 && strstr(lines[i], "quit") != NULL;
        if (strstr(lines[i], "zoom the focused panel")) {
            found_zoom = 1;
            T_CHECKF(strncmp(lines[i], "Enter ", 6) == 0, "'%s'", lines[i]);
        }
        if (strstr(lines[i], "this help"))
            T_CHECKF(strncmp(lines[i], "?/F1", 4) == 0, "'%s'", lines[i]);
    }
    T_CHECK(found_quit && found_zoom);
}

/* ---- terminal replies and the probe ----------------------------------------------- */

TEST(ui_term_reply_parsers)
{
    int a[16], n, st, v1, v2;
    const char da_xterm[] = "\033[?64;1;2;4;6;9;15;16;17;18;21;22;28c";
    T_REQUIRE(ui_term_parse_da1(da_xterm, sizeof da_xterm - 1, a, 16, &n));
    T_EQ_INT(n, 13);
    T_EQ_INT(a[3], 4);
    const char da_tmux[] = "junk\033[?1;2c";
    T_REQUIRE(ui_term_parse_da1(da_tmux, sizeof da_tmux - 1, a, 16, &n));
    T_CHECK(n == 2 && a[0] == 1 && a[1] == 2);
    const char partial[] = "\033[?64;1;2";
    T_CHECK(!ui_term_parse_da1(partial, sizeof partial - 1, a, 16, &n));
    const char both[] = "\033[?1;0;256S\033[?2;0;480;312S\033[?64;4c";
    T_REQUIRE(ui_term_parse_xtsm(both, sizeof both - 1, 1, &st, &v1, &v2));
    T_CHECK(st == 0 && v1 == 256);
    T_REQUIRE(ui_term_parse_xtsm(both, sizeof both - 1, 2, &st, &v1, &v2));
    T_CHECK(st == 0 && v1 == 480 && v2 == 312);
    const char err[] = "\033[?2;3S";
    T_REQUIRE(ui_term_parse_xtsm(err, sizeof err - 1, 2, &st, &v1, &v2));
    T_EQ_INT(st, 3);
    T_CHECK(!ui_term_parse_xtsm(err, sizeof err - 1, 1, &st, &v1, &v2));
    const char cell[] = "\033[6;13;6t\033[?64c";
    int ch, cw;
    T_REQUIRE(ui_term_parse_cell(cell, sizeof cell - 1, &ch, &cw));
    T_CHECK(ch == 13 && cw == 6);
    unsigned char rgb[3];
    const char bg[] = "\033]11;rgb:ffff/8080/0000\033\\";
    T_REQUIRE(ui_term_parse_bg(bg, sizeof bg - 1, rgb));
    T_CHECK(rgb[0] == 255 && rgb[1] == 128 && rgb[2] == 0);
    const char bg2[] = "\033]11;rgb:f/0/8\007";
    T_REQUIRE(ui_term_parse_bg(bg2, sizeof bg2 - 1, rgb));
    T_CHECK(rgb[0] == 255 && rgb[1] == 0 && rgb[2] == 136);
}

/* Found by fuzzing (tests/fuzz/regress/term/): a DA1 reply of more attributes than
 * the parser keeps, asked for with a larger max, reported a count past the numbers
 * stored, so the caller read attributes that were never written. */
TEST(ui_term_da1_count_stays_within_what_was_stored)
{
    char reply[1024];
    size_t n = (size_t)snprintf(reply, sizeof reply, "\033[?63");
    for (int k = 1; k < 80; k++)
        n += (size_t)snprintf(reply + n, sizeof reply - n, ";%d", k);
    n += (size_t)snprintf(reply + n, sizeof reply - n, "c");
    int a[128], count = -1;
    for (int k = 0; k < 128; k++)
        a[k] = -1;
    T_REQUIRE(ui_term_parse_da1(reply, n, a, 128, &count));
    T_EQ_INT(count, UI_TERM_DA1_MAX);
    T_EQ_INT(a[0], 63);
    T_EQ_INT(a[UI_TERM_DA1_MAX - 1], UI_TERM_DA1_MAX - 1);
    T_EQ_INT(a[UI_TERM_DA1_MAX], -1);
    /* A smaller max still cuts the list. */
    T_REQUIRE(ui_term_parse_da1(reply, n, a, 3, &count));
    T_CHECK(count == 3 && a[2] == 2);
}

/* A fake terminal on the master side of a pty: answers the queries it knows the
 * way a terminal would. */
struct fake_term {
    int fd;
    const char *da1;        /* DA1 reply, NULL: answer nothing at all */
    int queries;            /* queries seen */
};

static void *fake_term_main(void *arg)
{
    struct fake_term *t = arg;
    char buf[4096];
    size_t n = 0;
    static const struct {
        const char *q, *a;
    } known[] = { { "\033[?1;1;0S", "\033[?1;0;256S" },
                  { "\033[?2;1;0S", "\033[?2;0;480;312S" },
                  { "\033[16t", "\033[6;13;6t" },
                  { "\033]11;?\033\\", "\033]11;rgb:ffff/ffff/dddd\033\\" },
                  { "\033[c", NULL } };
    for (;;) {
        struct pollfd pf = { t->fd, POLLIN, 0 };
        if (poll(&pf, 1, 3000) <= 0)
            break;
        ssize_t r = read(t->fd, buf + n, sizeof buf - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        buf[n] = 0;
        for (;;) {
            /* The earliest known query in the buffer. */
            char *best = NULL;
            size_t bi = 0;
            for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
                char *p = strstr(buf, known[k].q);
                if (p && (!best || p < best)) {
                    best = p;
                    bi = k;
                }
            }
            if (!best)
                break;
            t->queries++;
            const char *ans = known[bi].a ? known[bi].a : t->da1;
            if (t->da1 && ans && write(t->fd, ans, strlen(ans)) < 0)
                return NULL;
            size_t used = (size_t)(best - buf) + strlen(known[bi].q);
            memmove(buf, buf + used, n - used + 1);
            n -= used;
        }
    }
    return NULL;
}

/* The probe against a fake terminal that answers with da1 (NULL: says nothing),
 * each question waited for up to timeout seconds. */
static int probe_with(const char *da1, double timeout, ui_term_caps *caps, int *queries)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0)
        return -1;
    int s = open(ptsname(m), O_RDWR | O_NOCTTY);
    if (s < 0) {
        close(m);
        return -1;
    }
    struct fake_term ft = { m, da1, 0 };
    pthread_t th;
    pthread_create(&th, NULL, fake_term_main, &ft);
    char *tmux = getenv("TMUX") ? strdup(getenv("TMUX")) : NULL;
    unsetenv("TMUX"); /* the test itself may run inside tmux */
    ui_term_probe(s, s, 1, timeout, caps);
    if (tmux) {
        setenv("TMUX", tmux, 1);
        free(tmux);
    }
    close(s); /* the fake terminal sees the hang-up and ends */
    pthread_join(th, NULL);
    close(m);
    *queries = ft.queries;
    return 0;
}

TEST(ui_term_probe_asks_a_pty_like_a_terminal)
{
    ui_term_caps c;
    int q;
    /* xterm with sixel on: everything is asked and understood. Answers are waited
     * for with a generous limit (a loaded machine may be slow to run the fake
     * terminal's thread); each question ends at its answer. */
    T_REQUIRE(probe_with("\033[?64;1;2;4;6;9;15;22c", 30, &c, &q) == 0);
    T_CHECK(c.asked && c.answered);
    T_CHECKF(c.sixel, "no sixel: %s", c.why);
    T_EQ_INT(c.sixel_colors, 256);
    T_CHECK(c.sixel_max_w == 480 && c.sixel_max_h == 312);
    T_CHECK(c.cell_w == 6 && c.cell_h == 13); /* a pty has no pixel size: CSI 16 t */
    T_CHECK(c.bg_known && c.bg[0] == 255 && c.bg[2] == 221);
    T_CHECK(q >= 8);
    /* tmux 3.3a's answer: no 4, so no sixel and no further questions. */
    T_REQUIRE(probe_with("\033[?1;2c", 30, &c, &q) == 0);
    T_CHECK(c.answered && !c.sixel && strstr(c.why, "DA1"));
    T_EQ_INT(q, 1);
    /* A terminal that says nothing: a timeout, not a hang. */
    T_REQUIRE(probe_with(NULL, 0.3, &c, &q) == 0);
    T_CHECK(c.asked && !c.answered && !c.sixel);
    /* Turned off: nothing is asked. */
    ui_term_probe(0, 1, 0, 0.3, &c);
    T_CHECK(!c.asked && !c.sixel && strstr(c.why, "no-sixel"));
}

/* ---- sixel ---------------------------------------------------------------------- */

/* A 4 x 4 grid of 96-pixel tiles, each a flat colour. */
static uint8_t *grid_image(int *w, int *h)
{
    static const uint8_t pal[16][3] = { { 255, 0, 0 },   { 0, 255, 0 },   { 0, 0, 255 },
                                        { 255, 255, 0 }, { 0, 255, 255 }, { 255, 0, 255 },
                                        { 255, 255, 255 }, { 0, 0, 0 },  { 128, 128, 128 },
                                        { 255, 128, 0 }, { 128, 0, 255 }, { 0, 128, 64 },
                                        { 64, 32, 16 },  { 200, 200, 100 }, { 30, 60, 90 },
                                        { 250, 180, 200 } };
    *w = *h = 384;
    uint8_t *img = malloc(384 * 384 * 3);
    for (int y = 0; y < 384; y++)
        for (int x = 0; x < 384; x++)
            memcpy(img + ((size_t)y * 384 + x) * 3, pal[(y / 96) * 4 + x / 96], 3);
    return img;
}

TEST(ui_sixel_encode_decodes_back_to_the_picture)
{
    int w, h;
    uint8_t *img = grid_image(&w, &h);
    uint8_t *copy = malloc((size_t)w * h * 3);
    memcpy(copy, img, (size_t)w * h * 3);
    ui_sixel_buf b = { 0 };
    T_REQUIRE(ui_sixel_encode(img, w, h, 256, &b) == 0);
    T_CHECK(memcmp(img, copy, (size_t)w * h * 3) == 0); /* input untouched */
    T_REQUIRE(b.len > 100);
    T_CHECK(b.data[0] == 033 && b.data[1] == 'P');
    T_CHECK(memchr(b.data, 'q', 16) != NULL);
    char raster[32];
    snprintf(raster, sizeof raster, "\"1;1;%d;%d", w, h);
    T_CHECK(find(b.data, b.len, raster, strlen(raster)) != NULL);
    T_CHECK(b.data[b.len - 2] == 033 && b.data[b.len - 1] == '\\');
    unsigned char *px = NULL, *palette = NULL;
    int dw = 0, dh = 0, nc = 0;
    T_REQUIRE(sixel_decode_raw((unsigned char *)b.data, (int)b.len, &px, &dw, &dh, &palette, &nc,
                               NULL) == SIXEL_OK);
    T_CHECK(dw == w && dh == h);
    int worst = 0;
    for (int y = 48; y < h; y += 96)
        for (int x = 48; x < w; x += 96) {
            const uint8_t *want = img + ((size_t)y * w + x) * 3;
            const unsigned char *got = palette + 3 * px[(size_t)y * dw + x];
            for (int c = 0; c < 3; c++) {
                int d = abs((int)want[c] - (int)got[c]);
                worst = d > worst ? d : worst;
            }
        }
    /* libsixel builds its palette from a 5-bit-per-channel histogram, and sixel
     * stores colours in percent: a flat colour comes back within 8 of itself. */
    T_CHECKF(worst <= 8, "decoded colours off by up to %d", worst);
    free(px);
    free(palette);
    /* Fewer registers (a VT340 at 16): still a valid picture. */
    T_REQUIRE(ui_sixel_encode(img, w, h, 16, &b) == 0);
    T_CHECK(b.len > 100);
    T_CHECK(ui_sixel_encode(NULL, 0, 0, 256, &b) == -1 && b.len == 0);
    ui_sixel_buf_free(&b);
    free(img);
    free(copy);
}

/* ---- picture tiles -------------------------------------------------------------- */

TEST(ui_preview_fit_scale_and_palette)
{
    ui_preview_geom g;
    /* The 80x24 preview panel inside (38x8 cells) with half blocks. */
    T_REQUIRE(ui_preview_fit(38, 8, 1, 2, 2, 1, 4, 8, 24, &g) == 0);
    T_CHECK(g.count >= 2);
    T_CHECK(g.per_row * g.group_cols + (g.per_row - 1) * 2 <= 38);
    T_CHECK(g.rows * (g.tile_rows + g.caption) <= 8);
    /* Sixel at 6x13 cells in the 160x48 preview column: 96-pixel tiles fit 4 pairs. */
    T_REQUIRE(ui_preview_fit(56, 45, 6, 13, 2, 1, 4, 32, 96, &g) == 0);
    T_EQ_INT(g.tile_px, 96);
    T_CHECK(g.count >= 4 && g.tile_cols * 6 >= 96 && g.tile_rows * 13 >= 96);
    T_CHECK(ui_preview_fit(5, 2, 1, 2, 2, 1, 4, 8, 24, &g) == -1);

    uint8_t chk[2 * 2 * 3] = { 0, 0, 0, 200, 200, 200, 200, 200, 200, 0, 0, 0 };
    uint8_t one[3];
    ui_preview_scale(chk, 2, 2, one, 1, 1);
    T_CHECK(one[0] == 100 && one[1] == 100);
    /* A wide source is cropped to its centre: 4x2 -> 2x2 keeps columns 1 and 2. */
    uint8_t wide[4 * 2 * 3];
    for (int i = 0; i < 8; i++)
        memset(wide + 3 * i, (i % 4) * 60, 3);
    uint8_t sq[2 * 2 * 3];
    ui_preview_scale(wide, 4, 2, sq, 2, 2);
    T_CHECK(sq[0] == 60 && sq[3] == 120);
    uint8_t up[4 * 4 * 3];
    uint8_t flat[3] = { 10, 20, 30 };
    ui_preview_scale(flat, 1, 1, up, 4, 4);
    T_CHECK(up[45] == 10 && up[46] == 20 && up[47] == 30);

    T_EQ_INT(ui_preview_xterm256((const uint8_t[]){ 255, 0, 0 }), 196);
    T_EQ_INT(ui_preview_xterm256((const uint8_t[]){ 0, 0, 0 }), 16);
    T_EQ_INT(ui_preview_xterm256((const uint8_t[]){ 255, 255, 255 }), 231);
    T_EQ_INT(ui_preview_xterm256((const uint8_t[]){ 128, 128, 128 }), 244);
}

/* An 8x8 picture: red top half, blue bottom half. */
static void red_over_blue(uint8_t *p)
{
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 8; x++) {
            uint8_t *c = p + (y * 8 + x) * 3;
            c[0] = y < 4 ? 255 : 0;
            c[1] = 0;
            c[2] = y < 4 ? 0 : 255;
        }
}

TEST(ui_preview_builds_half_blocks_sixel_and_sends_only_changes)
{
    uint8_t pic[8 * 8 * 3];
    red_over_blue(pic);
    ui_preview_image im[2] = { { pic, 8, 8 }, { pic, 8, 8 } };
    ui_preview_caption cap[1];
    memset(cap, 0, sizeof cap);
    snprintf(cap[0].text[0], sizeof cap[0].text[0], "rose");
    ui_preview_geom g;
    T_REQUIRE(ui_preview_fit(30, 6, 1, 2, 2, 1, 1, 8, 8, &g) == 0);
    T_CHECK(g.tile_cols == 8 && g.tile_rows == 4);
    ui_rect area = { 5, 10, 6, 30 };

    /* 256 colours: top rows red on red, bottom rows blue on blue; the gap blank. */
    ui_preview p;
    ui_preview_init(&p, UI_PIX_256, 0, 0, 256, 0, NULL);
    T_EQ_INT(ui_preview_set(&p, 7, area, &g, im, cap, 1), 1);
    T_EQ_INT(ui_preview_set(&p, 7, area, &g, im, cap, 1), 0); /* nothing changed */
    snprintf(cap[0].text[0], sizeof cap[0].text[0], "wild rose"); /* a name came later */
    T_EQ_INT(ui_preview_set(&p, 7, area, &g, im, cap, 1), 0);
    T_EQ_STR(p.cap[0].text[0], "wild rose");
    int ox = (30 - g.group_cols) / 2;
    T_EQ_INT(p.fg[0 * 30 + ox], 196);
    T_EQ_INT(p.bgc[1 * 30 + ox], 196);
    T_EQ_INT(p.fg[2 * 30 + ox + 3], 21);
    T_EQ_INT(p.bgc[3 * 30 + ox + 7], 21);
    T_CHECK(p.used[ox] && !p.used[ox + 8] && p.used[ox + 9]); /* column 8 is the gap */
    T_CHECK(!p.used[4 * 30 + ox]);                             /* the caption row */
    T_EQ_INT(p.n_ov, 0);
    ui_preview_free(&p);

    /* 24-bit: an overlay of SGR half blocks at the tile's screen position. */
    ui_preview_init(&p, UI_PIX_DIRECT, 0, 0, 256, 0, NULL);
    T_EQ_INT(ui_preview_set(&p, 1, area, &g, im, cap, 1), 1);
    T_REQUIRE(p.n_ov == 1 && p.ov[0].len > 0);
    char want[64];
    snprintf(want, sizeof want, "\033[%d;%dH", 5 + 1, 10 + ox + 1);
    T_CHECK(find(p.ov[0].data, p.ov[0].len, want, strlen(want)) != NULL);
    const char *red = "\033[38;2;255;0;0;48;2;255;0;0m\xe2\x96\x80";
    const char *blue = "\033[38;2;0;0;255;48;2;0;0;255m\xe2\x96\x80";
    T_CHECK(find(p.ov[0].data, p.ov[0].len, red, strlen(red)) != NULL);
    T_CHECK(find(p.ov[0].data, p.ov[0].len, blue, strlen(blue)) != NULL);
    ui_preview_free(&p);

    /* Sixel: one image per row of groups, sent once, again only when forced. */
    const ui_rect none = { 0, 0, 0, 0 };
    int fds[2];
    T_REQUIRE(pipe(fds) == 0);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    ui_preview_init(&p, UI_PIX_SIXEL, 6, 13, 256, 0, (const uint8_t[]){ 255, 255, 255 });
    T_REQUIRE(ui_preview_fit(30, 6, 6, 13, 2, 1, 1, 32, 32, &g) == 0);
    T_EQ_INT(ui_preview_set(&p, 1, area, &g, im, cap, 1), 1);
    T_REQUIRE(p.n_ov == 1);
    size_t sent = ui_preview_flush(&p, fds[1], 0, none);
    T_CHECK(sent == p.ov[0].len && sent > 0);
    static char got[1 << 16];
    ssize_t r = read(fds[0], got, sizeof got);
    T_REQUIRE(r > 10);
    int total_w = g.per_row * g.group_cols + (g.per_row - 1) * 2; /* the image spans the row */
    snprintf(want, sizeof want, "\0337\033[%d;%dH\033P", 5 + 1, 10 + (30 - total_w) / 2 + 1);
    T_CHECKF(memcmp(got, want, strlen(want)) == 0, "picture not wrapped in DECSC/CUP: %.12s",
             got + 1);
    T_CHECK(got[r - 2] == 033 && got[r - 1] == '8'); /* DECRC last */
    T_EQ_INT(ui_preview_flush(&p, fds[1], 0, none), 0);       /* unchanged: nothing */
    T_CHECK(ui_preview_flush(&p, fds[1], 1, none) > 0);       /* after a repaint: again */
    T_EQ_INT(ui_preview_set(&p, 2, area, &g, im, cap, 1), 1); /* a new batch */
    T_CHECK(ui_preview_flush(&p, fds[1], 0, none) > 0);
    ui_preview_hide(&p);
    T_EQ_INT(ui_preview_flush(&p, fds[1], 1, none), 0);
    ui_preview_free(&p);
    close(fds[0]);
    close(fds[1]);
}

/* ---- inspect helpers, log ------------------------------------------------------- */

TEST(ui_inspect_confused_pairs_and_order)
{
    /* [true][pred] */
    long long c[9] = { 10, 3, 0,
                       5, 20, 1,
                       3, 0, 7 };
    ui_inspect_pair p[8];
    int n = ui_inspect_confusions(c, 3, p, 8);
    T_EQ_INT(n, 4);
    T_CHECK(p[0].truth == 1 && p[0].pred == 0 && p[0].count == 5);
    T_CHECK(p[1].truth == 0 && p[1].pred == 1 && p[1].count == 3); /* tie: lower true first */
    T_CHECK(p[2].truth == 2 && p[2].pred == 0 && p[2].count == 3);
    T_CHECK(p[3].truth == 1 && p[3].pred == 2 && p[3].count == 1);
    T_EQ_INT(ui_inspect_confusions(c, 3, p, 2), 2);
    T_EQ_INT(p[1].count, 3);
    double f1[4] = { 0.9, 0.2, 0.5, 0.2 };
    int order[4];
    ui_inspect_order(f1, 4, 1, order);
    T_CHECK(order[0] == 1 && order[1] == 3 && order[2] == 2 && order[3] == 0);
    ui_inspect_order(f1, 4, 0, order);
    T_CHECK(order[0] == 0 && order[3] == 3);
}

TEST(ui_log_ring_keeps_the_newest_and_colours_by_words)
{
    static ui_log l;
    ui_log_init(&l);
    char line[64];
    for (int i = 0; i < UI_LOG_LINES + 88; i++) {
        snprintf(line, sizeof line, "line %d\nmore", i);
        ui_log_add(&l, i, -1, line);
    }
    T_EQ_INT(l.n, UI_LOG_LINES);
    T_EQ_STR(ui_log_get(&l, 0)->text, "line 88 more");
    snprintf(line, sizeof line, "line %d more", UI_LOG_LINES + 87);
    T_EQ_STR(ui_log_get(&l, UI_LOG_LINES - 1)->text, line);
    T_CHECK(ui_log_get(&l, UI_LOG_LINES) == NULL);
    T_EQ_INT(ui_log_role_of("shard 3 record 17: data error (crc mismatch)"), UI_R_BAD);
    T_EQ_INT(ui_log_role_of("checkpoint written: runs/x/checkpoint.ckpt"), UI_R_INFO);
    T_EQ_INT(ui_log_role_of("epoch 3/10: loss 0.93"), UI_R_OK);
    T_EQ_INT(ui_log_role_of("model small: 391980 parameters (10 epochs)"), UI_R_NORMAL);
}

/* ---- panels on a curses screen that writes to /dev/null ------------------------- */

static run_snapshot *fake_snapshot(void)
{
    run_snapshot *s = calloc(1, sizeof *s);
    s->state = RUN_RUNNING;
    snprintf(s->dataset, sizeof s->dataset, "/data/petals/tfrecords-jpeg-192x192");
    snprintf(s->model, sizeof s->model, "small");
    s->replicas = s->n_replicas = 2;
    s->batch_per_replica = 16;
    s->grad_acc = 1;
    s->update_size = 32;
    s->image_size = 64;
    s->n_classes = s->label_classes = 12;
    s->epoch = 3;
    s->epochs = 10;
    s->step = 97;
    s->total_steps = 400;
    s->steps_per_epoch = 40;
    s->eta = 190;
    s->lr = 3.2e-4;
    s->curve_n = 97;
    s->curve_stride = 1;
    for (int i = 0; i < 97; i++) {
        s->curve_loss[i] = 2.3f * expf(-i / 40.0f);
        s->curve_acc[i] = 1 - expf(-i / 30.0f);
        s->curve_lr[i] = 1e-4f;
    }
    s->history_n = 2;
    for (int e = 0; e < 2; e++) {
        s->history[e].epoch = e + 1;
        s->history[e].updates = 40;
        s->history[e].train_loss = 1.9 - 0.8 * e;
        s->history[e].val_loss = 1.7 - 0.6 * e;
        s->history[e].val_f1 = 0.5;
    }
    for (int r = 0; r < 2; r++) {
        s->replica[r].images_per_sec = 120 + r;
        s->replica[r].busy_pct = 88;
        s->replica[r].idle_pct = 4;
        s->replica[r].mxu_pct = 42;
        s->replica[r].spark_n = 30;
        for (int i = 0; i < 30; i++)
            s->replica[r].spark[i] = 100 + i;
    }
    s->total_images_per_sec = 241;
    s->queue_depth = 3;
    s->queue_capacity = 8;
    for (int k = 0; k < 12; k++) {
        s->train_counts[k] = 50 + k;
        s->train_oversampled[k] = 50 + k;
        s->val_counts[k] = 10;
    }
    s->data_errors = 1;
    return s;
}

/* The text of screen row y (wide characters as UTF-8). */
static void row_text(int y, char *out, size_t n)
{
    wchar_t wb[512];
    int got = mvwinnwstr(stdscr, y, 0, wb, COLS < 511 ? COLS : 511);
    wb[got > 0 ? got : 0] = 0;
    size_t k = wcstombs(out, wb, n - 1);
    out[k == (size_t)-1 ? 0 : k] = 0;
}

static int screen_has(const char *s)
{
    char line[2048];
    for (int y = 0; y < LINES; y++) {
        row_text(y, line, sizeof line);
        if (strstr(line, s))
            return 1;
    }
    return 0;
}

/* A curses screen of rows x cols that writes to /dev/null. */
typedef struct null_screen {
    FILE *out, *in;
    SCREEN *scr;
} null_screen;

static void null_screen_close(null_screen *ns)
{
    if (ns->scr) {
        endwin();
        delscreen(ns->scr);
    }
    if (ns->out)
        fclose(ns->out);
    if (ns->in)
        fclose(ns->in);
    /* Children started by later tests must see their real terminal size. */
    unsetenv("LINES");
    unsetenv("COLUMNS");
    setlocale(LC_CTYPE, "C");
}

/* 1 when the screen is up; otherwise closed again. */
static int null_screen_open(null_screen *ns, const char *rows, const char *cols)
{
    ns->out = fopen("/dev/null", "w");
    ns->in = fopen("/dev/null", "r");
    ns->scr = NULL;
    /* Wide characters need a UTF-8 locale, as the workbench sets from the user's. */
    if (ns->out && ns->in && setlocale(LC_CTYPE, "C.UTF-8")) {
        setenv("LINES", rows, 1);
        setenv("COLUMNS", cols, 1);
        ns->scr = newterm("xterm-256color", ns->out, ns->in);
    }
    if (ns->scr)
        set_term(ns->scr);
    else
        null_screen_close(ns);
    return ns->scr != NULL;
}

/* A sixel row wider than the terminal takes in one image goes as several, each
 * within max_w; a dialog over some of them holds those back (the others are left
 * alone) until it is gone; the cells under pictures are blanks of their own kind,
 * so curses writes a dialog over them whole. */
TEST(ui_preview_splits_wide_rows_and_holds_back_pictures_under_a_dialog)
{
    enum { N = 6 };
    uint8_t pic[8 * 8 * 3];
    red_over_blue(pic);
    ui_preview_image im[2 * N];
    ui_preview_caption cap[N];
    memset(cap, 0, sizeof cap);
    for (int i = 0; i < 2 * N; i++)
        im[i] = (ui_preview_image){ pic, 8, 8 };
    ui_preview_geom g;
    /* 6 x 13 cells, 32-px tiles: 6 columns a tile, 13 a group of two; 100 columns
     * hold 6 groups across (600 px), more than the 240 px the terminal takes. */
    T_REQUIRE(ui_preview_fit(100, 6, 6, 13, 2, 1, N, 32, 32, &g) == 0);
    T_REQUIRE(g.per_row == N && g.rows == 1);
    ui_preview p;
    ui_preview_init(&p, UI_PIX_SIXEL, 6, 13, 256, 240, (const uint8_t[]){ 0, 0, 0 });
    ui_rect area = { 2, 0, 6, 100 };
    T_EQ_INT(ui_preview_set(&p, 1, area, &g, im, cap, N), 1);
    T_EQ_INT(p.n_ov, 3); /* two groups (25 columns, 150 px) an image */
    for (int i = 0; i < p.n_ov; i++) {
        T_CHECKF(p.ov[i].cols * 6 <= 240 && p.ov[i].len > 0, "overlay %d: %d columns", i,
                 p.ov[i].cols);
        if (i > 0)
            T_EQ_INT(p.ov[i].col, p.ov[i - 1].col + p.ov[i - 1].cols + 2);
    }
    int fds[2];
    T_REQUIRE(pipe(fds) == 0);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    static char got[1 << 18];
    const ui_rect none = { 0, 0, 0, 0 };
    size_t all = p.ov[0].len + p.ov[1].len + p.ov[2].len;
    T_EQ_INT(ui_preview_flush(&p, fds[1], 0, none), all);
    T_CHECK(read(fds[0], got, sizeof got) > 0);
    /* A dialog over the middle one: nothing is sent while it is there (the two
     * others are on screen already and stay), the middle one once it is gone. */
    ui_rect dialog = { 0, p.ov[1].col + 2, 5, 4 };
    T_EQ_INT(ui_preview_flush(&p, fds[1], 0, dialog), 0);
    T_EQ_INT(ui_preview_flush(&p, fds[1], 1, dialog), p.ov[0].len + p.ov[2].len); /* repainted */
    T_EQ_INT(ui_preview_flush(&p, fds[1], 0, dialog), 0);
    T_EQ_INT(ui_preview_flush(&p, fds[1], 0, none), p.ov[1].len);
    T_EQ_INT(ui_preview_flush(&p, fds[1], 0, none), 0);
    T_CHECK(read(fds[0], got, sizeof got) > 0);
    close(fds[0]);
    close(fds[1]);

    /* The blanks under the pictures differ from plain ones. */
    null_screen ns;
    if (null_screen_open(&ns, "24", "100")) {
        werase(stdscr);
        ui_preview_draw(&p, stdscr);
        chtype under = mvwinch(stdscr, p.ov[1].row + 1, p.ov[1].col + 3);
        chtype beside = mvwinch(stdscr, 20, 50);
        T_CHECK((under & A_CHARTEXT) == ' ' && (under & A_INVIS) && !(beside & A_INVIS));
        null_screen_close(&ns);
    } else {
        T_CHECK(!"no curses screen");
    }
    ui_preview_free(&p);
}

TEST(ui_panels_draw_from_a_snapshot_in_colour_and_without)
{
    null_screen ns;
    T_REQUIRE(null_screen_open(&ns, "24", "80"));
    run_snapshot *s = fake_snapshot();
    ui_log *log = calloc(1, sizeof *log);
    ui_log_add(log, 50, -1, "data error: shard 03 record 17: payload crc mismatch");
    const char *names[12] = { "pink primrose", "hard-leaved pocket orchid" };
    ui_frame f = { s, names, 2, log, "flip", NULL, 0, "text", 0, NULL, NULL, NULL, 0, NULL };
    ui_view v;
    ui_panel_view_defaults(&v);
    for (int mode = 0; mode < 2; mode++) {
        if (mode == 0) {
            start_color();
            use_default_colors();
            ui_draw_setup(UI_COLOR_256, 1);
        } else {
            ui_draw_setup(UI_COLOR_NONE, 1);
        }
        werase(stdscr);
        ui_layout l;
        ui_layout_compute(&l, LINES, COLS, -1, 2);
        ui_panel_header(stdscr, l.header, &f);
        ui_panel_footer(stdscr, l.footer, &f, UI_CTX_MAIN);
        ui_panel_replicas(stdscr, l.panel[UI_P_REPLICAS], &f, &v, 0);
        ui_panel_curves(stdscr, l.panel[UI_P_CURVES], &f, &v, 1);
        ui_panel_labels(stdscr, l.panel[UI_P_LABELS], &f, &v, 0);
        ui_panel_log(stdscr, l.panel[UI_P_LOG], &f, &v, 0);
        ui_panel_preview(stdscr, l.panel[UI_P_PREVIEW], &f, 0, 3);
        int before = t_failed_now();
        T_CHECK(screen_has("RUNNING"));
        T_CHECK(screen_has("epoch 3/10"));
        T_CHECK(screen_has("2 x 16 = 32/update"));
        T_CHECK(screen_has(" tfrecords-jpeg-192x192 | ")); /* the path shortened */
        T_CHECK(screen_has("Replicas 2"));
        T_CHECK(screen_has("Curves: loss"));
        T_CHECK(screen_has("Labels: 12 classes"));
        T_CHECK(screen_has("Preview #3"));
        T_CHECK(screen_has("1 data error"));
        T_CHECK(screen_has("q quit") && screen_has("p pause") && !screen_has("s start"));
        T_CHECK(screen_has("3/8"));     /* the queue */
        T_CHECK(screen_has("241 img/s")); /* the throughput in the header */
        if (t_failed_now() != before) {
            char line[2048];
            for (int y = 0; y < LINES; y++) {
                row_text(y, line, sizeof line);
                printf("  |%s|\n", line);
            }
        }
        int colour_cells = 0;
        for (int y = 0; y < LINES; y++)
            for (int x = 0; x < COLS; x++) {
                cchar_t cc;
                attr_t a;
                short pair;
                wchar_t wc[CCHARW_MAX + 1];
                mvwin_wch(stdscr, y, x, &cc);
                getcchar(&cc, wc, &a, &pair, NULL);
                colour_cells += pair != 0;
            }
        if (mode == 0)
            T_CHECKF(colour_cells > 50, "only %d coloured cells", colour_cells);
        else
            T_CHECKF(colour_cells == 0, "%d coloured cells under NO_COLOR", colour_cells);
    }
    /* The help overlay lists the keys, and the per-class labels show names. */
    werase(stdscr);
    ui_panel_help(stdscr, LINES, COLS, &v);
    T_CHECK(screen_has("start training") && screen_has("Help"));
    v.help_top = 1000; /* clamped */
    ui_panel_help(stdscr, LINES, COLS, &v);
    T_CHECK(v.help_top > 0 && v.help_top < 200);
    T_CHECK(screen_has("Ctrl-C"));
    werase(stdscr);
    v.label_bins = 0;
    ui_rect big = { 0, 0, 20, 80 };
    ui_panel_labels(stdscr, big, &f, &v, 1);
    /* Names whole where there is room; cut with an ellipsis where not. */
    T_CHECK(screen_has("pink primrose") && screen_has("hard-leaved pocket orchid"));
    T_CHECK(screen_has("class 11"));
    werase(stdscr);
    ui_panel_labels(stdscr, (ui_rect){ 0, 0, 20, 44 }, &f, &v, 1);
    T_CHECK(screen_has("pink primrose") && screen_has("hard-leaved poc\xe2\x80\xa6") &&
            !screen_has("hard-leaved pocket"));
    null_screen_close(&ns);
    free(s);
    free(log);
}

/* The screen column of p in a row's UTF-8 text (one column a character). */
static int column_of(const char *line, const char *p)
{
    int col = 0;
    for (const char *c = line; c < p; c++)
        col += (*c & 0xc0) != 0x80;
    return col;
}

/* The header's second row: the process's memory and the machine's load next to
 * the throughput (the load in the warning colour when it exceeds the cores: a
 * competing process), what fits by importance at 80 columns, all of it at 200;
 * a resumed run's elapsed time says what this process trained. */
TEST(ui_header_shows_memory_and_load_next_to_the_throughput)
{
    null_screen ns;
    T_REQUIRE(null_screen_open(&ns, "24", "200"));
    ui_draw_setup(UI_COLOR_NONE, 1);
    run_snapshot *s = fake_snapshot();
    s->elapsed = 600;
    s->elapsed_resumed = 420;
    ui_sysmon m;
    ui_sysmon_init(&m);
    m.rss = 412LL << 20;
    m.cpu_pct = 190;
    m.load1 = 3.1;
    m.cores = 2;
    ui_frame f = { s, NULL, 0, NULL, "flip", NULL, 0, "text", 0, NULL, &m, NULL, 0, NULL };
    /* The first row: an ONNX model's input convention after its size. */
    snprintf(s->model, sizeof s->model, "mobilenetv2-1.0-tfslim-float-notop");
    snprintf(s->input_norm, sizeof s->input_norm, "tf");
    snprintf(s->precision, sizeof s->precision, "bf16");
    ui_panel_header(stdscr, (ui_rect){ 0, 0, 2, 200 }, &f);
    char line[2048];
    row_text(0, line, sizeof line);
    /* ... and the precision the run's products take. */
    T_CHECKF(strstr(line, "mobilenetv2-1.0-tfslim-float-notop") &&
                 strstr(line, "px input tf bf16"),
             "|%s|", line);
    row_text(1, line, sizeof line);
    const char *ips = strstr(line, "241 img/s"), *rss = strstr(line, "RSS 412 MiB");
    const char *load = strstr(line, "load 3.10/2 cores");
    T_CHECKF(ips && rss && load && ips < rss && rss < load && strstr(line, "cpu 190%"), "|%s|",
             line);
    T_CHECKF(strstr(line, "lr 3.2e-4") && strstr(line, "elapsed 10:00 (3:00 since the resume)"),
             "|%s|", line);
    T_CHECK(mvwinch(stdscr, 1, column_of(line, load)) & A_BOLD); /* 3.1 > 2 cores: warning */
    /* 80 columns: progress, throughput, memory and load before the rest. */
    werase(stdscr);
    ui_panel_header(stdscr, (ui_rect){ 0, 0, 2, 80 }, &f);
    row_text(1, line, sizeof line);
    line[80] = 0;
    T_CHECKF(strstr(line, "epoch 3/10") && strstr(line, "ETA") && strstr(line, "241 img/s") &&
                 strstr(line, "RSS 412 MiB") && strstr(line, "load 3.10"),
             "|%s|", line);
    /* A quiet machine: the load in the normal colour. */
    m.load1 = 0.5;
    werase(stdscr);
    ui_panel_header(stdscr, (ui_rect){ 0, 0, 2, 200 }, &f);
    row_text(1, line, sizeof line);
    load = strstr(line, "load 0.50/2 cores");
    T_CHECKF(load && !(mvwinch(stdscr, 1, column_of(line, load)) & A_BOLD), "|%s|", line);
    null_screen_close(&ns);
    free(s);
}

/* What is read from /proc: the parsers on known text, and a real read of this
 * process, at most once per period. */
TEST(ui_sysmon_reads_memory_and_load_at_a_modest_rate)
{
    long long rss = 0;
    T_EQ_INT(ui_sysmon_parse_statm("1000 250 30 5 0 120 0\n", 4096, &rss), 0);
    T_EQ_INT(rss, 250LL * 4096);
    T_EQ_INT(ui_sysmon_parse_statm("garbage", 4096, &rss), -1);
    double load = 0;
    T_EQ_INT(ui_sysmon_parse_loadavg("3.14 2.00 1.50 3/412 12345\n", &load), 0);
    T_NEAR(load, 3.14, 1e-9);
    T_EQ_INT(ui_sysmon_parse_loadavg("", &load), -1);
    ui_sysmon m;
    ui_sysmon_init(&m);
    T_CHECK(m.cores >= 1 && m.rss < 0 && m.load1 < 0);
    T_EQ_INT(ui_sysmon_update(&m, 100.0, 1.0), 1);
    T_CHECKF(m.rss > (1 << 20), "rss %lld", m.rss); /* this process holds more than 1 MiB */
    T_EQ_INT(ui_sysmon_update(&m, 100.5, 1.0), 0);   /* within the period: not read again */
    T_EQ_INT(ui_sysmon_update(&m, 101.0, 1.0), 1);
    T_EQ_INT(m.reads, 2);
    T_CHECK(m.cpu_pct >= 0);
    if (access("/proc/loadavg", R_OK) == 0)
        T_CHECK(m.load1 >= 0);
}

/* The text of the screen row whose text starts (after spaces and a border) with
 * label, or "" when none does. */
static void row_starting(const char *label, char *out, size_t n)
{
    out[0] = 0;
    for (int y = 0; y < LINES; y++) {
        char line[2048];
        row_text(y, line, sizeof line);
        const char *p = line;
        while (*p == ' ' || *p == 'x')
            p++;
        if (!strncmp(p, label, strlen(label))) {
            snprintf(out, n, "%s", line);
            return;
        }
    }
}

/* The confusion matrix: cells as counts (heat against the largest of their kind)
 * or percentages of the row; a matrix of 104 classes is read by scrolling, with
 * the focus on it, and says which part is shown. */
TEST(ui_inspect_confusion_matrix_counts_percent_and_104_classes_by_scrolling)
{
    /* 3 classes: [true][pred] */
    const long long c3[9] = { 8, 2, 0, /**/ 1, 5, 4, /**/ 0, 0, 10 };
    char t[16];
    T_EQ_INT(ui_inspect_cm_cell(c3, 3, 0, 0, 0, t, sizeof t), 4); /* 8 of the largest 10 */
    T_EQ_STR(t, "8");
    T_EQ_INT(ui_inspect_cm_cell(c3, 3, 1, 2, 0, t, sizeof t), 5); /* the largest mistake */
    T_EQ_STR(t, "4");
    T_EQ_INT(ui_inspect_cm_cell(c3, 3, 1, 0, 0, t, sizeof t), 2); /* a quarter of it */
    T_EQ_INT(ui_inspect_cm_cell(c3, 3, 0, 2, 0, t, sizeof t), 0);
    T_EQ_STR(t, ".");
    T_EQ_INT(ui_inspect_cm_cell(c3, 3, 1, 2, 1, t, sizeof t), 2); /* 4 of the row's 10 */
    T_EQ_STR(t, "40");
    T_EQ_INT(ui_inspect_cm_cell(c3, 3, 2, 2, 1, t, sizeof t), 5);
    T_EQ_STR(t, "100");

    enum { K = 104 };
    null_screen ns;
    T_REQUIRE(null_screen_open(&ns, "40", "160"));
    ui_draw_setup(UI_COLOR_NONE, 1);
    run_snapshot *s = fake_snapshot();
    s->state = RUN_DONE;
    ui_inspect *v = calloc(1, sizeof *v);
    ui_preview *pv = calloc(1, sizeof *pv);
    T_REQUIRE(v && pv);
    ui_inspect_init(v);
    ui_preview_init(pv, UI_PIX_ASCII, 1, 2, 0, 0, NULL);
    run_val_report *r = &v->rep;
    r->n_classes = K;
    r->epoch = 1;
    r->n = 10 * K + 7;
    r->precision = calloc(K, sizeof(double));
    r->recall = calloc(K, sizeof(double));
    r->f1 = calloc(K, sizeof(double));
    r->support = calloc(K, sizeof(long long));
    r->confusion = calloc((size_t)K * K, sizeof(long long));
    T_REQUIRE(r->precision && r->recall && r->f1 && r->support && r->confusion);
    for (int k = 0; k < K; k++)
        r->confusion[(size_t)k * K + k] = 10;
    r->confusion[(size_t)100 * K + 3] = 7;   /* class 100 taken for class 3 */
    r->confusion[(size_t)2 * K + 101] = 9;   /* class 2 for class 101 */
    v->n = v->scanned = r->n;
    v->seen_history = 1;
    ui_frame f = { s, NULL, 0, NULL, "flip", NULL, 0, "text", 0, NULL, NULL, NULL, 0, NULL };
    ui_rect body = { 2, 0, 37, 160 };
    werase(stdscr);
    ui_inspect_draw(v, stdscr, body, &f, pv);
    T_CHECK(screen_has("Confusion: true by row, predicted by column, counts"));
    T_CHECKF(v->cm_rows < K && v->cm_cols < K, "%d rows, %d columns shown", v->cm_rows, v->cm_cols);
    char want[96], line[2048];
    snprintf(want, sizeof want, "rows 0-%d, columns 0-%d of 104", v->cm_rows - 1, v->cm_cols - 1);
    T_CHECKF(screen_has(want), "no \"%s\"", want);
    T_CHECK(screen_has("Most confused") && screen_has("class 2 -> class 101"));
    /* Row 100 is below the view until the matrix, focused, pages down. */
    row_starting("100 class 100", line, sizeof line);
    T_EQ_STR(line, "");
    ui_inspect_key(v, UI_ACT_PGDN); /* the images' page while they have the focus */
    T_EQ_INT(v->cm_top, 0);
    ui_inspect_key(v, UI_ACT_FOCUS_NEXT);
    ui_inspect_key(v, UI_ACT_FOCUS_NEXT);
    T_EQ_INT(v->focus, UI_INSPECT_MATRIX);
    for (int i = 0; i < 20; i++)
        ui_inspect_key(v, UI_ACT_PGDN);
    T_EQ_INT(v->cm_top, K - v->cm_rows); /* the last page, not past it */
    werase(stdscr);
    ui_inspect_draw(v, stdscr, body, &f, pv);
    row_starting("100 class 100", line, sizeof line);
    /* The cells after the label: pred 0, 1, 2, 3 (7), ..., 100 (10) off screen. */
    T_CHECKF(strstr(line, "   .   .   .   7   .") != NULL, "|%s|", line);
    /* Across: class 2's confusion with class 101 comes into view on the right. */
    ui_inspect_key(v, UI_ACT_HOME);
    T_EQ_INT(v->cm_top + v->cm_left, 0);
    for (int i = 0; i < K; i++)
        ui_inspect_key(v, UI_ACT_RIGHT);
    T_EQ_INT(v->cm_left, K - v->cm_cols);
    werase(stdscr);
    ui_inspect_draw(v, stdscr, body, &f, pv);
    T_CHECK(screen_has(" 101 102 103"));
    row_starting("2 class 2", line, sizeof line);
    T_CHECKF(strstr(line, "   9   .   . ") != NULL, "|%s|", line);
    /* Percentages of the row: 9 of class 2's 19 examples. */
    ui_inspect_key(v, UI_ACT_PERCENT);
    werase(stdscr);
    ui_inspect_draw(v, stdscr, body, &f, pv);
    T_CHECK(screen_has("predicted by column, % of row"));
    row_starting("2 class 2", line, sizeof line);
    T_CHECKF(strstr(line, "  47   .   . ") != NULL, "|%s|", line);
    ui_preview_free(pv);
    ui_inspect_free(v);
    free(pv);
    free(v);
    free(s);
    null_screen_close(&ns);
}

/* The footer offers only the keys that apply: p while a run is under way, not
 * before it or after it ended (failed, done, stopped). */
TEST(ui_footer_offers_pause_only_while_a_run_is_under_way)
{
    null_screen ns;
    T_REQUIRE(null_screen_open(&ns, "24", "120"));
    run_snapshot *s = fake_snapshot();
    ui_draw_setup(UI_COLOR_NONE, 1);
    static const struct {
        run_state st;
        int pause;
    } cases[] = { { RUN_IDLE, 0 },   { RUN_PREPARING, 1 }, { RUN_RUNNING, 1 }, { RUN_PAUSED, 1 },
                  { RUN_DONE, 0 },   { RUN_FAILED, 0 },    { RUN_STOPPED, 0 } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s->state = cases[i].st;
        ui_frame f = { s, NULL, 0, NULL, "flip", NULL, 0, "text", 0, NULL, NULL, NULL, 0, NULL };
        werase(stdscr);
        ui_rect r = { 0, 0, 1, COLS };
        ui_panel_footer(stdscr, r, &f, UI_CTX_MAIN);
        int shown = screen_has("p pause") || screen_has("p resume");
        T_CHECKF(screen_has("q quit") && shown == cases[i].pause, "%s: pause %s",
                 run_state_name(cases[i].st), shown ? "offered" : "not offered");
    }
    null_screen_close(&ns);
    free(s);
}

/* s of spaces collapsed to one, into out. */
static void squeeze(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; *s && k + 1 < n; s++)
        if (*s != ' ' || (k > 0 && out[k - 1] != ' '))
            out[k++] = *s;
    out[k] = 0;
}

/* The help at 80 columns: a box within the screen, and every key's description
 * whole on it as it scrolls (wrapped under itself, never cut). */
TEST(ui_help_fits_80_columns_with_every_description_whole)
{
    null_screen ns;
    T_REQUIRE(null_screen_open(&ns, "24", "80"));
    ui_draw_setup(UI_COLOR_NONE, 1);
    ui_view v;
    ui_panel_view_defaults(&v);
    size_t all_n = 64 * 1024, used = 0;
    char *all = calloc(all_n, 1);
    T_REQUIRE(all != NULL);
    for (int top = 0, end = 0; top < 400 && !end; top += 5) {
        v.help_top = top;
        werase(stdscr);
        ui_rect b = ui_panel_help(stdscr, LINES, COLS, &v);
        T_CHECKF(b.x >= 0 && b.x + b.w <= 80 && b.y >= 0 && b.y + b.h <= 24, "box %d,%d %dx%d",
                 b.y, b.x, b.h, b.w);
        for (int y = b.y + 1; y < b.y + b.h - 1; y++) {
            char line[2048];
            wchar_t wb[512];
            int got = mvwinnwstr(stdscr, y, b.x + 1, wb, b.w - 2);
            wb[got > 0 ? got : 0] = 0;
            size_t m = wcstombs(line, wb, sizeof line - 1);
            line[m == (size_t)-1 ? 0 : m] = 0;
            int len = snprintf(all + used, all_n - used, "%s ", line);
            if (len > 0 && used + (size_t)len < all_n)
                used += (size_t)len;
        }
        end = v.help_top < top; /* clamped: the last page is on screen */
    }
    char *flat = calloc(all_n, 1);
    T_REQUIRE(flat != NULL);
    squeeze(all, flat, all_n);
    size_t nk;
    const ui_key *k = ui_keys_table(&nk);
    for (size_t i = 0; i < nk; i++) {
        if (!k[i].help)
            continue;
        char want[512];
        squeeze(k[i].help, want, sizeof want);
        T_CHECKF(strstr(flat, want) != NULL, "not whole in the help: \"%s\"", want);
    }
    free(flat);
    free(all);
    null_screen_close(&ns);
}

/* The inspect view before any validation offers s only when s starts a run. */
TEST(ui_inspect_offers_s_only_when_it_starts_a_run)
{
    null_screen ns;
    T_REQUIRE(null_screen_open(&ns, "30", "100"));
    ui_draw_setup(UI_COLOR_NONE, 1);
    run_snapshot *s = fake_snapshot();
    ui_inspect *v = calloc(1, sizeof *v);
    ui_preview *pv = calloc(1, sizeof *pv);
    T_REQUIRE(v && pv);
    ui_inspect_init(v);
    ui_preview_init(pv, UI_PIX_ASCII, 1, 2, 0, 0, NULL);
    static const struct {
        run_state st;
        int offers;
    } cases[] = { { RUN_IDLE, 1 }, { RUN_PREPARING, 0 }, { RUN_RUNNING, 0 }, { RUN_PAUSED, 0 } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s->state = cases[i].st;
        ui_frame f = { s, NULL, 0, NULL, "flip", NULL, 0, "text", 0, NULL, NULL, NULL, 0, NULL };
        werase(stdscr);
        ui_inspect_draw(v, stdscr, (ui_rect){ 2, 0, 27, 100 }, &f, pv);
        T_CHECKF(screen_has("validation results come after the first epoch"), "%s: no note",
                 run_state_name(cases[i].st));
        T_CHECKF(screen_has("s starts the run") == cases[i].offers, "%s: s %s",
                 run_state_name(cases[i].st), cases[i].offers ? "not offered" : "offered");
    }
    ui_preview_free(pv);
    ui_inspect_free(v);
    free(pv);
    free(v);
    free(s);
    null_screen_close(&ns);
}

/* Long text over several lines: broken at spaces, a word longer than a line
 * broken where the line ends, nothing past the rectangle. */
TEST(ui_draw_wrapped_breaks_at_spaces_within_the_rectangle)
{
    null_screen ns;
    T_REQUIRE(null_screen_open(&ns, "24", "80"));
    ui_draw_setup(UI_COLOR_NONE, 1);
    werase(stdscr);
    ui_rect r = { 2, 5, 3, 20 };
    int n = ui_draw_wrapped(stdscr, r, UI_R_BAD,
                            "no preview: /a/very/long/path/that/goes/on: Not a directory");
    T_EQ_INT(n, 3);
    char line[2048];
    row_text(2, line, sizeof line);
    T_CHECKF(strncmp(line + 5, "no preview:", 11) == 0 && !strstr(line, "/a/"), "|%s|", line);
    row_text(3, line, sizeof line);
    T_CHECKF(strncmp(line + 5, "/a/very/long/path/th", 20) == 0 && line[25] == ' ', "|%s|", line);
    row_text(4, line, sizeof line);
    T_CHECKF(strncmp(line + 5, "at/goes/on: Not a", 17) == 0, "|%s|", line);
    row_text(5, line, sizeof line);
    T_CHECKF(!strstr(line, "directory"), "past the rectangle: |%s|", line);
    null_screen_close(&ns);
}

/* The rows y0..y1-1 of columns x0..x1-1, each with its trailing spaces cut, run
 * together (a path broken where a line ends reads whole again). */
static void rect_text(int y0, int y1, int x0, int x1, char *out, size_t n)
{
    size_t k = 0;
    out[0] = 0;
    for (int y = y0; y < y1; y++) {
        wchar_t wb[512];
        int got = mvwinnwstr(stdscr, y, x0, wb, x1 - x0 < 511 ? x1 - x0 : 511);
        wb[got > 0 ? got : 0] = 0;
        char line[2048];
        size_t m = wcstombs(line, wb, sizeof line - 1);
        line[m == (size_t)-1 ? 0 : m] = 0;
        size_t len = strlen(line);
        while (len > 0 && line[len - 1] == ' ')
            line[--len] = 0;
        if (k + len + 1 < n) {
            memcpy(out + k, line, len + 1);
            k += len;
        }
    }
}

/* Text cut to a width ends in an ellipsis instead of stopping mid-word. */
TEST(ui_draw_text_cut_ends_in_an_ellipsis)
{
    null_screen ns;
    T_REQUIRE(null_screen_open(&ns, "24", "80"));
    ui_draw_setup(UI_COLOR_NONE, 1);
    werase(stdscr);
    T_EQ_INT(ui_draw_text_cut(stdscr, 0, 0, 20, UI_R_NORMAL, "short"), 5);
    T_EQ_INT(ui_draw_text_cut(stdscr, 1, 0, 10, UI_R_NORMAL, "a message longer than ten"), 10);
    char line[2048];
    row_text(1, line, sizeof line);
    T_CHECKF(strncmp(line, "a message\xe2\x80\xa6 ", 12) == 0, "|%s|", line);
    ui_draw_setup(UI_COLOR_NONE, 0); /* no UTF-8: three dots */
    ui_draw_text_cut(stdscr, 2, 0, 10, UI_R_NORMAL, "a message longer than ten");
    row_text(2, line, sizeof line);
    T_CHECKF(strncmp(line, "a messa... ", 11) == 0, "|%s|", line);
    /* Wrapped text that does not fit says so on its last line. */
    ui_draw_setup(UI_COLOR_NONE, 1);
    werase(stdscr);
    const char *t = "one two three four five six seven eight nine ten";
    T_EQ_INT(ui_draw_wrap_count(t, 10), 6);
    T_EQ_INT(ui_draw_wrapped_from(stdscr, (ui_rect){ 0, 0, 2, 10 }, UI_R_NORMAL, t, 1, 1), 2);
    row_text(0, line, sizeof line);
    T_CHECKF(strncmp(line, "three four ", 11) == 0, "|%s|", line);
    row_text(1, line, sizeof line);
    T_CHECKF(strncmp(line, "five six\xe2\x80\xa6 ", 12) == 0, "|%s|", line);
    null_screen_close(&ns);
}

/* The log panel wraps a long line under its time instead of cutting it, keeps
 * the run folder's full path at its bottom (wrapped, not shortened), and says
 * what the last checkpoint was; the footer's note ends in an ellipsis when it
 * is cut. */
TEST(ui_log_panel_wraps_lines_and_shows_the_run_folder_in_full)
{
    null_screen ns;
    T_REQUIRE(null_screen_open(&ns, "24", "80"));
    ui_draw_setup(UI_COLOR_NONE, 1);
    run_snapshot *s = fake_snapshot();
    const char *dir = "/home/someone/projects/petal/runs/small-20240515-101010-with-a-long-name";
    snprintf(s->run_dir, sizeof s->run_dir, "%s", dir);
    snprintf(s->last_checkpoint, sizeof s->last_checkpoint,
             "%s/checkpoint.ckpt (update 12, pause)", dir);
    s->checkpoints = 1;
    ui_log *log = calloc(1, sizeof *log);
    T_REQUIRE(log != NULL);
    ui_log_add(log, 1, -1, "first line, the oldest, with many words that will not all fit");
    ui_log_add(log, 2, -1,
               "epoch 1/10 - 61 updates - 12.3s - 201ms/update - loss 1.2345 - acc 0.5678 - "
               "val_loss 1.1111 - val_acc 0.6000 - val_f1 0.5500 END-OF-LINE");
    ui_log_add(log, 3, -1, "short line");
    ui_frame f = { s, NULL, 0, log, "flip", NULL, 0, "text", 0, dir, NULL, NULL, 0, NULL };
    ui_view v;
    ui_panel_view_defaults(&v);
    werase(stdscr);
    ui_rect r = { 0, 0, 13, 40 };
    ui_panel_log(stdscr, r, &f, &v, 0);
    char all[4096], line[2048];
    rect_text(1, 12, 1, 39, all, sizeof all);
    T_CHECKF(strstr(all, dir) != NULL, "the run folder not whole in: %s", all);
    T_CHECKF(strstr(all, "last checkpoint: update 12, pause") != NULL, "%s", all);
    T_CHECKF(strstr(all, "END-OF-LINE") && strstr(all, "short line"), "%s", all);
    for (int y = 1; y < 12; y++) {
        row_text(y, line, sizeof line);
        wchar_t wb[4];
        mvwinnwstr(stdscr, y, 39, wb, 1);
        T_CHECKF(wb[0] != L' ', "row %d: the box's right edge overwritten: |%s|", y, line);
    }
    /* Too little room: the oldest line shown wraps as the others do, the box's
     * top holding its end (issue 42, item 11c: it was cut with an ellipsis). */
    werase(stdscr);
    r = (ui_rect){ 0, 0, 9, 40 };
    ui_panel_log(stdscr, r, &f, &v, 0);
    rect_text(1, 8, 1, 39, all, sizeof all);
    T_CHECKF(!strstr(all, "00:02 epoch 1/10") && !strstr(all, "\xe2\x80\xa6") &&
                 strstr(all, "END-OF-LINE") && strstr(all, "short line") && strstr(all, dir),
             "%s", all);
    /* The footer's note. */
    werase(stdscr);
    f.note = "done: 3 epochs in 13s; val_acc 0.9472, val_f1 0.7780; outputs in /a/long/run/folder";
    ui_panel_footer(stdscr, (ui_rect){ 0, 0, 1, 80 }, &f, UI_CTX_MAIN);
    row_text(0, line, sizeof line);
    T_CHECKF(strstr(line, "done: 3 epochs") && strstr(line, "\xe2\x80\xa6"), "|%s|", line);
    null_screen_close(&ns);
    free(s);
    free(log);
}

/* A long engine line (an ONNX import's is about 400 characters) is kept whole and
 * wrapped; one past what a line keeps ends in "..." (issue 30, defect 6). */
TEST(ui_log_keeps_long_lines_whole_and_marks_a_cut)
{
    ui_log *log = calloc(1, sizeof *log);
    T_REQUIRE(log != NULL);
    char text[3000];
    memset(text, 'x', sizeof text);
    memcpy(text + 390, "END-OF-IMPORT", 14);
    ui_log_add(log, 1, -1, text);
    T_EQ_STR(ui_log_get(log, 0)->text + 390, "END-OF-IMPORT");
    memset(text, 'y', sizeof text);
    text[sizeof text - 1] = '\0';
    ui_log_add(log, 2, -1, text);
    const char *cut = ui_log_get(log, 1)->text;
    T_EQ_INT((int)strlen(cut), UI_LOG_WIDTH - 1);
    T_CHECK(!strcmp(cut + strlen(cut) - 3, "..."));
    null_screen ns;
    T_REQUIRE(null_screen_open(&ns, "24", "80"));
    ui_draw_setup(UI_COLOR_NONE, 1);
    run_snapshot *s = fake_snapshot();
    ui_log_add(log, 3, -1, "short line");
    ui_frame f = { s, NULL, 0, log, "flip", NULL, 0, "text", 0, "", NULL, NULL, 0, NULL };
    ui_view v;
    ui_panel_view_defaults(&v);
    v.log_back = 1; /* the newest but one at the bottom: the whole import line above it */
    werase(stdscr);
    ui_panel_log(stdscr, (ui_rect){ 0, 0, 24, 80 }, &f, &v, 0);
    char all[8192];
    rect_text(1, 23, 1, 79, all, sizeof all);
    T_CHECKF(strstr(all, "...") != NULL, "%s", all);
    v.log_back = 2;
    werase(stdscr);
    ui_panel_log(stdscr, (ui_rect){ 0, 0, 24, 80 }, &f, &v, 0);
    rect_text(1, 23, 1, 79, all, sizeof all);
    T_CHECKF(strstr(all, "END-OF") != NULL, "%s", all);
    null_screen_close(&ns);
    free(s);
    free(log);
}

/* The configure dialog: the settings in the order users know, their values as the
 * run folder's config writes them, an edit checked by the options' own parser. */
TEST(ui_settings_dialog_order_values_and_edits)
{
    static const char *const order[] = {
        "model", "replicas", "batch-per-replica", "grad-acc", "epochs", "lr-start", "lr-max",
        "lr-end", "warmup", "schedule", "oversample", "augment", "data", "out", "resume",
        "width", "widths", "convs", "residual", "init", "bn-momentum", "image-size",
        "early-stop", "monitor", "keep", "optimizer", "lr-scaling",
        "momentum", "weight-decay", "dropout",
        "ema", "tta", "label-smoothing", "teacher", "distill-t", "distill-alpha", "teacher-data",
        "teacher-view", "freeze-epochs", "backbone-lr-scale", "freeze-backbone",
        "input-norm", "backbone-bn", "reinit",
        "seed", "deterministic",
        "shuffle-buffer", "workers", "prefetch", "precision", "recompute",
        "stop-on-data-error", "overlap", "checkpoint-every",
    };
    const size_t n_order = sizeof order / sizeof order[0];
    run_config cfg;
    cfg_defaults(&cfg);
    snprintf(cfg.out, sizeof cfg.out, "runs/mine");
    cfg.oversample = -1;
    ui_settings *d = calloc(1, sizeof *d);
    T_REQUIRE(d != NULL);
    ui_settings_open(d, &cfg);
    T_EQ_INT(d->n_opt, (int)n_order);
    for (size_t i = 0; i < n_order && i < (size_t)d->n_opt; i++)
        T_EQ_STR(d->opt[i]->name, order[i]);
    static const char *const values[][2] = {
        { "model", "small" },   { "lr-start", "0.0001" }, { "oversample", "max" },
        { "data", "" },         { "out", "runs/mine" },   { "resume", "" },
        { "seed", "42" },       { "deterministic", "yes" }, { "schedule", "exp" },
        { "augment", "flip:0.5,crop:1:scale=0.6:ratio=1:interp=bilinear" },
    };
    char v[600];
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        ui_settings_value(d, values[i][0], v, sizeof v);
        T_EQ_STR(v, values[i][1]);
    }

    /* Edit epochs (the fifth row): a bad value stays with the message, a good one sets. */
    for (int i = 0; i < 4; i++)
        ui_settings_key(d, KEY_DOWN);
    ui_settings_key(d, '\n');
    T_EQ_STR(d->edit, "10");
    ui_settings_key(d, KEY_BACKSPACE);
    ui_settings_key(d, KEY_BACKSPACE);
    ui_settings_key(d, '0');
    ui_settings_key(d, '\n');
    T_CHECK(d->editing && strstr(d->error, "epochs wants a whole number from 1") != NULL);
    ui_settings_key(d, ('u' & 0x1f));
    ui_settings_key(d, '7');
    ui_settings_key(d, '\n');
    T_CHECK(!d->editing && d->changed && d->work.epochs == 7);

    /* Drawn: every key in order, each value or what an empty one means (a screen tall
     * enough for all of them). */
    null_screen ns;
    int up = null_screen_open(&ns, "72", "100");
    if (!up)
        free(d);
    T_REQUIRE(up);
    ui_draw_setup(UI_COLOR_NONE, 1);
    ui_settings_draw(d, stdscr, LINES, COLS);
    char line[2048];
    size_t next = 0;
    for (int y = 0; y < LINES && next < n_order; y++) {
        row_text(y, line, sizeof line);
        char want[64];
        snprintf(want, sizeof want, " %-19s ", order[next]);
        if (strstr(line, want))
            next++;
    }
    T_EQ_INT(next, n_order);
    T_CHECK(screen_has("(the built-in demo flowers)") && screen_has("(a new run)"));
    T_CHECK(screen_has("runs/mine") && screen_has("Configure (changed: a applies)"));
    T_CHECK(screen_has("epochs              7"));
    null_screen_close(&ns);
    free(d);
}

/* The log scrolling beside a blank picture area makes rows of the new screen equal
 * other rows of the current one: curses may then scroll terminal rows (and drag
 * sixel pixels), so the workbench must be told. A change in place must not. */
TEST(ui_rows_may_move_predicts_curses_scrolling)
{
    FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
    T_REQUIRE(out && in);
    setenv("LINES", "24", 1);
    setenv("COLUMNS", "80", 1);
    SCREEN *scr = newterm("xterm-256color", out, in);
    T_REQUIRE(scr != NULL);
    set_term(scr);
    /* A "log" of numbered lines in rows 10..20, a constant border elsewhere. */
    for (int y = 0; y < LINES; y++)
        mvaddstr(y, 0, y < 10 ? "header and panels" : "|");
    for (int y = 10; y < 21; y++)
        mvprintw(y, 2, "log line %d", y);
    wnoutrefresh(stdscr);
    doupdate();
    T_EQ_INT(ui_rows_may_move(), 0); /* nothing pending */

    /* Every log line moves up one row, and a new one appears at the bottom. */
    for (int y = 10; y < 21; y++) {
        move(y, 2);
        clrtoeol();
        mvprintw(y, 2, "log line %d", y + 1);
    }
    wnoutrefresh(stdscr);
    T_EQ_INT(ui_rows_may_move(), 1);
    doupdate();

    /* A counter changing in place matches no other row. */
    mvprintw(2, 30, "step 41");
    wnoutrefresh(stdscr);
    doupdate();
    mvprintw(2, 30, "step 42");
    wnoutrefresh(stdscr);
    T_EQ_INT(ui_rows_may_move(), 0);
    doupdate();
    ui_rows_free();
    endwin();
    delscreen(scr);
    fclose(out);
    fclose(in);
    /* Children started by later tests must see their real terminal size. */
    unsetenv("LINES");
    unsetenv("COLUMNS");
}

/* ---- issue 30, defects 8 and 9: 104 classes; runs whose update counts differ ------ */

/* Screen rows holding text. */
static int rows_with(const char *text)
{
    int n = 0;
    char line[2048];
    for (int y = 0; y < LINES; y++) {
        row_text(y, line, sizeof line);
        n += strstr(line, text) != NULL;
    }
    return n;
}

static void print_screen(void)
{
    char line[2048];
    for (int y = 0; y < LINES; y++) {
        row_text(y, line, sizeof line);
        printf("  |%s|\n", line);
    }
}

/* --open's inspect has no images: their box is as tall as its text, and the
 * confusion matrix of 104 classes takes the rest of the height (it had two fifths:
 * 15 rows of 45). */
TEST(ui_inspect_without_images_gives_the_confusion_matrix_the_height)
{
    enum { K = 104, N = 2 * K };
    null_screen ns;
    T_REQUIRE(null_screen_open(&ns, "48", "160"));
    ui_draw_setup(UI_COLOR_NONE, 1);
    run_snapshot *s = fake_snapshot();
    s->state = RUN_DONE;
    ui_inspect *v = calloc(1, sizeof *v);
    ui_preview *pv = calloc(1, sizeof *pv);
    int *lab = malloc(sizeof(int) * N), *pred = malloc(sizeof(int) * N);
    T_REQUIRE(v && pv && lab && pred);
    ui_inspect_init(v);
    ui_preview_init(pv, UI_PIX_ASCII, 1, 2, 0, 0, NULL);
    run_val_report r = { .n_classes = K, .n = N, .epoch = 1 };
    r.precision = calloc(K, sizeof(double));
    r.recall = calloc(K, sizeof(double));
    r.f1 = calloc(K, sizeof(double));
    r.support = calloc(K, sizeof(long long));
    r.confusion = calloc((size_t)K * K, sizeof(long long));
    T_REQUIRE(r.precision && r.recall && r.f1 && r.support && r.confusion);
    for (int i = 0; i < N; i++) {
        lab[i] = i % K;
        pred[i] = i < K ? i % K : (i + 3) % K;
        r.confusion[(size_t)lab[i] * K + pred[i]]++;
    }
    const char *why = "The run's folder keeps no images: inspect shows the last epoch's per-class "
                      "scores and confusion matrix, from valid_labels.json and valid_preds.jsonl.";
    ui_inspect_set_results(v, &r, lab, pred, N, why);
    ui_frame f = { s, NULL, 0, NULL, "flip", NULL, 0, "text", 0, NULL, NULL, NULL, 0, "/runs/x" };
    ui_rect body = { 2, 0, 45, 160 };
    werase(stdscr);
    ui_inspect_draw(v, stdscr, body, &f, pv);
    /* 45 rows: the text's box (2 lines), the matrix's frame and column head. */
    T_CHECKF(v->cm_rows >= 45 - 4 - 3, "the matrix shows %d rows of 104", v->cm_rows);
    char want[96];
    snprintf(want, sizeof want, "rows 0-%d, columns 0-%d of 104", v->cm_rows - 1, v->cm_cols - 1);
    T_CHECKF(screen_has(want), "no \"%s\"", want);
    /* The text whole, and the box closed on the row after it. */
    T_CHECK(screen_has("The run's folder keeps no images") && screen_has("valid_preds.jsonl."));
    T_CHECK(screen_has(", 104 wrong") && !screen_has("all 1-1 of"));
    int last = -1;
    char line[2048];
    for (int y = 0; y < LINES; y++) {
        row_text(y, line, sizeof line);
        if (strstr(line, "valid_preds.jsonl."))
            last = y;
    }
    row_text(last + 1, line, sizeof line);
    /* (The corner reads back as its ACS letter, or as itself in UTF-8.) */
    T_CHECKF(last > 0 && (line[0] == 'm' || !strncmp(line, "\xe2\x94\x94", 3)),
             "row after the text: |%s|", line);
    if (t_failed_now())
        print_screen();
    ui_preview_free(pv);
    ui_inspect_free(v);
    free(pv);
    free(v);
    free(lab);
    free(pred);
    free(s);
    null_screen_close(&ns);
}

/* The Labels panel before the label scan and in --open: the class count from the
 * dataset's names or the opened run; with counts, 104 classes in bins of equal
 * class counts where 104 allows, and a bin's bars per class where it does not. */
TEST(ui_labels_know_the_classes_before_counts_and_bin_them_evenly)
{
    null_screen ns;
    T_REQUIRE(null_screen_open(&ns, "48", "160"));
    ui_draw_setup(UI_COLOR_NONE, 1);
    run_snapshot *s = fake_snapshot();
    ui_view v;
    ui_panel_view_defaults(&v);
    static char name_buf[104][16];
    const char *names[104];
    for (int k = 0; k < 104; k++) {
        snprintf(name_buf[k], sizeof name_buf[k], "flower %d", k);
        names[k] = name_buf[k];
    }
    ui_rect r = { 0, 0, 40, 44 };
    /* Before start: no counts; the dataset's names say how many classes. */
    s->state = RUN_IDLE;
    s->n_classes = s->label_classes = 0;
    ui_frame f = { s, names, 104, NULL, "flip", NULL, 0, "text", 0, NULL, NULL, NULL, 0, NULL };
    werase(stdscr);
    ui_panel_labels(stdscr, r, &f, &v, 0);
    T_CHECK(screen_has("Labels: 104 classes") && screen_has("come with the label"));
    T_CHECK(!screen_has("0 classes"));
    if (t_failed_now())
        print_screen();
    /* --open: the run's class count (its snapshot's), no names needed. */
    s->state = RUN_DONE;
    s->n_classes = 104;
    f.n_names = 0;
    f.opened = "/runs/x";
    werase(stdscr);
    ui_panel_labels(stdscr, r, &f, &v, 0);
    T_CHECK(screen_has("Labels: 104 classes") && screen_has("keeps no label counts"));
    f.opened = NULL;

    /* 104 classes in 37 rows: 26 bins of 4 (not 34 of 3 and one of 2). */
    int lo, hi;
    T_EQ_INT(ui_panel_label_bins(104, 37, 1, &lo, &hi), 26);
    T_CHECK(lo == 4 && hi == 4);
    T_EQ_INT(ui_panel_label_bins(104, 37, 0, &lo, &hi), 104);
    T_EQ_INT(ui_panel_label_bins(12, 37, 1, &lo, &hi), 12);
    /* 103 (a prime): sizes that differ by one. */
    T_EQ_INT(ui_panel_label_bins(103, 37, 1, &lo, &hi), 35);
    T_CHECK(lo == 2 && hi == 3);
    s->state = RUN_RUNNING;
    s->oversampling = 0;
    for (int C = 103; C <= 104; C++) {
        s->n_classes = s->label_classes = C;
        for (int k = 0; k < C; k++) {
            s->train_counts[k] = s->train_oversampled[k] = 40;
            s->val_counts[k] = 10;
        }
        f.n_names = C;
        werase(stdscr);
        ui_panel_labels(stdscr, r, &f, &v, 0);
        char title[64];
        snprintf(title, sizeof title, "Labels: %d classes in bins of %s", C,
                 C == 104 ? "4" : "2-3");
        T_CHECKF(screen_has(title), "no \"%s\"", title);
        T_CHECK(screen_has("(mean per class)"));
        /* Every class holds as many: every bin's figures and bars read the same. */
        int bins = ui_panel_label_bins(C, 37, 1, &lo, &hi);
        T_EQ_INT(rows_with("   40  "), bins);
        T_EQ_INT(rows_with("   10 "), bins);
        T_CHECK(!screen_has("102-103") || C == 104);
        if (t_failed_now())
            print_screen();
    }
    free(s);
    null_screen_close(&ns);
}

TEST(ui_draw_elide_middle_keeps_both_ends)
{
    char out[64];
    setlocale(LC_CTYPE, "C.UTF-8");
    ui_draw_setup(UI_COLOR_NONE, 1);
    T_EQ_STR(ui_draw_elide_middle("20250321-152714", 20, out, sizeof out), "20250321-152714");
    T_EQ_STR(ui_draw_elide_middle("20250321-152714-xyz", 16, out, sizeof out),
             "20250321\xe2\x80\xa6" "714-xyz");
    T_EQ_INT(ui_draw_width(out), 16);
    T_EQ_STR(ui_draw_elide_middle("abcdef", 2, out, sizeof out), "ab");
    /* Wide characters count by their columns. */
    const char *wide = "\xe8\x8a\xb1\xe8\x8a\xb1\xe8\x8a\xb1\xe8\x8a\xb1-end"; /* 4 x 2 columns */
    ui_draw_elide_middle(wide, 8, out, sizeof out);
    T_CHECKF(ui_draw_width(out) <= 8 && strstr(out, "end"), "%s", out);
    ui_draw_setup(UI_COLOR_NONE, 0);
    T_EQ_STR(ui_draw_elide_middle("20250321-152714-xyz", 16, out, sizeof out), "2025032...14-xyz");
    ui_draw_setup(UI_COLOR_NONE, 1);
    setlocale(LC_CTYPE, "C");
}

/* A Keras run (23,200 updates... here 24,000: 30 epochs of 800) beside a run of a
 * few hundred: by update the short one is one column at x = 0, so the curves go
 * by epoch and say why; x still picks any axis. Long names in the legend keep both
 * ends. */
TEST(ui_curves_pick_epochs_for_runs_whose_updates_differ_and_elide_names)
{
    T_NEED_DATA();
    const char *keras = t_data("tf-written-tfrecords/tfevents-petals/20250321-152714");
    char cmd[20000], d1[4300], d2[4300];
    util_path(d1, sizeof d1, "%s/20250321-152714-keras-mobilenet-rerun-first-xyz1", t_tmpdir());
    util_path(d2, sizeof d2, "%s/20250321-152714-keras-mobilenet-rerun-second-xyz2", t_tmpdir());
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s' && cp -r '%s' '%s'", keras, d1, keras, d2);
    T_REQUIRE(system(cmd) == 0);
    run_figures *r[3] = { NULL, NULL, NULL };
    pt_err e;
    T_REQUIRE(runs_open(keras, &r[0], &e) == PT_OK);
    T_REQUIRE(runs_open(d1, &r[1], &e) == PT_OK);
    T_REQUIRE(runs_open(d2, &r[2], &e) == PT_OK);
    null_screen ns;
    T_REQUIRE(null_screen_open(&ns, "48", "160"));
    ui_draw_setup(UI_COLOR_NONE, 1);
    run_snapshot *s = fake_snapshot(); /* 400 updates planned */
    ui_view v;
    ui_panel_view_defaults(&v);
    ui_frame f = { s, NULL, 0, NULL, "flip", NULL, 0, "text", 0,
                   NULL, NULL, (const run_figures *const *)r, 1, NULL };
    double ratio;
    T_EQ_INT(ui_panel_curves_axis(&f, &v, &ratio), UI_X_EPOCH);
    T_NEAR(ratio, 24000.0 / 400, 0.5);
    ui_rect big = { 0, 0, 40, 160 };
    werase(stdscr);
    ui_panel_curves(stdscr, big, &f, &v, 1);
    T_CHECK(screen_has("Curves: loss by epoch") && screen_has("updates differ 60x"));
    T_CHECK(screen_has("epoch 30"));
    /* Within 10x: by update, as before. */
    s->total_steps = 24000 / 9;
    T_EQ_INT(ui_panel_curves_axis(&f, &v, &ratio), UI_X_UPDATE);
    T_CHECK(ratio == 0);
    s->total_steps = 400;
    /* x: from the axis shown to the next one, which then stays. */
    ui_panel_keys k = { &v, &f, big, 1, "", UI_R_DIM };
    T_CHECK(ui_panel_curves_key(&k, UI_ACT_XAXIS));
    T_EQ_INT(v.xaxis, UI_X_TIME);
    T_CHECK(ui_panel_curves_key(&k, UI_ACT_XAXIS));
    T_EQ_INT(v.xaxis, UI_X_UPDATE);
    T_EQ_INT(ui_panel_curves_axis(&f, &v, &ratio), UI_X_UPDATE);
    werase(stdscr);
    ui_panel_curves(stdscr, big, &f, &v, 1);
    T_CHECK(screen_has("Curves: loss by update") && !screen_has("updates differ"));

    /* Three names that do not fit 160 columns whole: each keeps its start and end. */
    f.n_compare = 3;
    werase(stdscr);
    ui_panel_curves(stdscr, big, &f, &v, 1);
    char line[2048] = "";
    for (int y = 0; y < LINES && !strstr(line, "compared: ") && !strstr(line, "compared (val");
         y++)
        row_text(y, line, sizeof line);
    T_CHECKF(strstr(line, "20250321-152714  ") && strstr(line, "-xyz1  ") &&
             strstr(line, "-xyz2  ") && strstr(line, "20250321-152714-ke"),
             "legend: |%s|", line);
    /* Narrow (the panel beside the others): the names still end as they do. */
    werase(stdscr);
    ui_panel_curves(stdscr, (ui_rect){ 0, 0, 30, 70 }, &f, &v, 1);
    line[0] = 0;
    for (int y = 0; y < LINES && !strstr(line, "compared: ") && !strstr(line, "compared (val");
         y++)
        row_text(y, line, sizeof line);
    T_CHECKF(strstr(line, "2025") && strstr(line, "xyz1") && strstr(line, "xyz2"), "legend: |%s|",
             line);
    if (t_failed_now())
        print_screen();
    free(s);
    null_screen_close(&ns);
    for (int i = 0; i < 3; i++)
        runs_close(r[i]);
}
