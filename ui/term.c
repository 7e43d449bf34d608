#include "ui/term.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "base/util.h"

/* Reads a number at *p (advancing it); -1 when there is no digit. */
static int number(const char *buf, size_t n, size_t *p)
{
    if (*p >= n || buf[*p] < '0' || buf[*p] > '9')
        return -1;
    long v = 0;
    while (*p < n && buf[*p] >= '0' && buf[*p] <= '9') {
        if (v < 100000000)
            v = v * 10 + (buf[*p] - '0');
        (*p)++;
    }
    return (int)v;
}

/* Numbers separated by ';' from buf[*p], up to the final byte `fin`. Returns the
 * count (stored up to max), or -1 when the sequence is not complete or not
 * well-formed. */
static int params(const char *buf, size_t n, size_t p, char fin, int *v, int max)
{
    int count = 0;
    for (;;) {
        int x = number(buf, n, &p);
        if (x < 0)
            return -1;
        if (count < max)
            v[count] = x;
        count++;
        if (p >= n)
            return -1;
        if (buf[p] == ';') {
            p++;
            continue;
        }
        return buf[p] == fin ? count : -1;
    }
}

int ui_term_parse_da1(const char *buf, size_t n, int *attrs, int max, int *count)
{
    /* The last complete reply wins: a fence may follow an earlier DA1. */
    int found = 0;
    for (size_t i = 0; i + 3 < n; i++) {
        if (buf[i] != 033 || buf[i + 1] != '[' || buf[i + 2] != '?')
            continue;
        int tmp[UI_TERM_DA1_MAX];
        int c = params(buf, n, i + 3, 'c', tmp, UI_TERM_DA1_MAX);
        if (c < 0)
            continue;
        /* Only what tmp held is known: the count never runs past it. */
        int k = c < max ? c : max;
        if (k > UI_TERM_DA1_MAX)
            k = UI_TERM_DA1_MAX;
        memcpy(attrs, tmp, sizeof(int) * (size_t)k);
        *count = k;
        found = 1;
    }
    return found;
}

int ui_term_parse_xtsm(const char *buf, size_t n, int item, int *status, int *v1, int *v2)
{
    for (size_t i = 0; i + 3 < n; i++) {
        if (buf[i] != 033 || buf[i + 1] != '[' || buf[i + 2] != '?')
            continue;
        int v[4] = { 0 };
        int c = params(buf, n, i + 3, 'S', v, 4);
        if (c < 2 || v[0] != item)
            continue;
        *status = v[1];
        *v1 = c > 2 ? v[2] : 0;
        *v2 = c > 3 ? v[3] : 0;
        return 1;
    }
    return 0;
}

int ui_term_parse_cell(const char *buf, size_t n, int *cell_h, int *cell_w)
{
    for (size_t i = 0; i + 2 < n; i++) {
        if (buf[i] != 033 || buf[i + 1] != '[')
            continue;
        int v[3] = { 0 };
        int c = params(buf, n, i + 2, 't', v, 3);
        if (c == 3 && v[0] == 6 && v[1] > 0 && v[2] > 0) {
            *cell_h = v[1];
            *cell_w = v[2];
            return 1;
        }
    }
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int ui_term_parse_bg(const char *buf, size_t n, unsigned char rgb[3])
{
    static const char pre[] = "\033]11;rgb:";
    size_t pl = sizeof pre - 1;
    for (size_t i = 0; i + pl < n; i++) {
        if (memcmp(buf + i, pre, pl) != 0)
            continue;
        size_t p = i + pl;
        int ok = 1;
        for (int c = 0; c < 3 && ok; c++) {
            unsigned v = 0;
            int digits = 0;
            while (p < n && hexval(buf[p]) >= 0 && digits < 4) {
                v = v * 16 + (unsigned)hexval(buf[p]);
                digits++;
                p++;
            }
            if (digits == 0)
                ok = 0;
            else
                rgb[c] = (unsigned char)((v * 255 + ((1u << (4 * digits)) - 1) / 2) /
                                         ((1u << (4 * digits)) - 1));
            if (c < 2) {
                if (p < n && buf[p] == '/')
                    p++;
                else
                    ok = 0;
            }
        }
        if (ok)
            return 1;
    }
    return 0;
}

int ui_term_gone(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    if (poll(&p, 1, 0) < 0)
        return errno != EINTR && errno != EAGAIN;
    return (p.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0;
}

int ui_term_write(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            struct pollfd pf = { fd, POLLOUT, 0 };
            if (poll(&pf, 1, 1000) <= 0)
                return -1;
            continue;
        }
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int ui_term_write_at(int fd, int row, int col, const void *data, size_t n)
{
    char pre[32];
    int k = snprintf(pre, sizeof pre, "\0337\033[%d;%dH", row + 1, col + 1);
    if (ui_term_write(fd, pre, (size_t)k) != 0 || ui_term_write(fd, data, n) != 0)
        return -1;
    return ui_term_write(fd, "\0338", 2);
}

int ui_term_cell_px(int fd, int *cell_w, int *cell_h)
{
    struct winsize ws;
    *cell_w = *cell_h = 0;
    if (ioctl(fd, TIOCGWINSZ, &ws) != 0 || !ws.ws_col || !ws.ws_row || !ws.ws_xpixel ||
        !ws.ws_ypixel)
        return 0;
    /* xterm counts its 2-pixel inner border in; integer division drops it. */
    *cell_w = ws.ws_xpixel / ws.ws_col;
    *cell_h = ws.ws_ypixel / ws.ws_row;
    return *cell_w > 0 && *cell_h > 0;
}

/* Send q then a DA1 fence; gather replies until the fence's answer or timeout. */
static int ask(int in, int out, const char *q, char *buf, size_t cap, size_t *len,
               double timeout)
{
    char msg[64];
    int k = snprintf(msg, sizeof msg, "%s\033[c", q);
    *len = 0;
    if (ui_term_write(out, msg, (size_t)k) != 0)
        return 0;
    double end = util_now() + timeout;
    for (;;) {
        int attrs[1], count;
        if (ui_term_parse_da1(buf, *len, attrs, 1, &count))
            return 1;
        double left = end - util_now();
        if (left <= 0 || *len + 1 >= cap)
            return 0;
        struct pollfd pf = { in, POLLIN, 0 };
        int pr = poll(&pf, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return 0;
        ssize_t r = read(in, buf + *len, cap - 1 - *len);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0)
            return 0;
        *len += (size_t)r;
    }
}

void ui_term_probe(int in, int out, int allow_sixel, double timeout, ui_term_caps *caps)
{
    memset(caps, 0, sizeof *caps);
    caps->sixel_colors = 256;
    ui_term_cell_px(out, &caps->cell_w, &caps->cell_h);
    const char *tmux = getenv("TMUX");
    if (!allow_sixel) {
        snprintf(caps->why, sizeof caps->why, "turned off (--no-sixel)");
        return;
    }
    if (tmux && *tmux) {
        snprintf(caps->why, sizeof caps->why, "inside tmux");
        return;
    }
    if (!isatty(in) || !isatty(out)) {
        snprintf(caps->why, sizeof caps->why, "not a terminal");
        return;
    }
    struct termios old, raw;
    if (tcgetattr(in, &old) != 0) {
        snprintf(caps->why, sizeof caps->why, "cannot set the terminal mode");
        return;
    }
    raw = old;
    raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    tcsetattr(in, TCSANOW, &raw);
    caps->asked = 1;

    char buf[1024];
    size_t len;
    int attrs[UI_TERM_DA1_MAX], count = 0;
    if (!ask(in, out, "", buf, sizeof buf, &len, timeout) ||
        !ui_term_parse_da1(buf, len, attrs, UI_TERM_DA1_MAX, &count)) {
        snprintf(caps->why, sizeof caps->why, "no answer to DA1");
        goto done;
    }
    caps->answered = 1;
    for (int i = 1; i < count; i++)
        if (attrs[i] == 4)
            caps->sixel = 1;
    if (!caps->sixel) {
        snprintf(caps->why, sizeof caps->why, "DA1 lists no sixel (4)");
        goto done;
    }
    int st, v1, v2;
    if (ask(in, out, "\033[?1;1;0S", buf, sizeof buf, &len, timeout) &&
        ui_term_parse_xtsm(buf, len, 1, &st, &v1, &v2) && st == 0 && v1 > 0)
        caps->sixel_colors = v1 < 256 ? v1 : 256;
    if (ask(in, out, "\033[?2;1;0S", buf, sizeof buf, &len, timeout) &&
        ui_term_parse_xtsm(buf, len, 2, &st, &v1, &v2) && st == 0 && v1 > 0 && v2 > 0) {
        caps->sixel_max_w = v1;
        caps->sixel_max_h = v2;
    }
    if (!caps->cell_w) {
        int ch, cw;
        if (ask(in, out, "\033[16t", buf, sizeof buf, &len, timeout) &&
            ui_term_parse_cell(buf, len, &ch, &cw)) {
            caps->cell_w = cw;
            caps->cell_h = ch;
        }
    }
    if (ask(in, out, "\033]11;?\033\\", buf, sizeof buf, &len, timeout) &&
        ui_term_parse_bg(buf, len, caps->bg))
        caps->bg_known = 1;
    if (!caps->cell_w) {
        /* Without a cell size images cannot be fitted to panels. */
        caps->sixel = 0;
        snprintf(caps->why, sizeof caps->why, "cell size unknown");
    }
done:
    /* A reply that came after its timeout must not become keys. */
    tcflush(in, TCIFLUSH);
    tcsetattr(in, TCSANOW, &old);
}
