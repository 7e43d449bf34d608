#include "ui/log.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "ui/draw.h"

void ui_log_init(ui_log *l)
{
    memset(l, 0, sizeof *l);
}

/* Case-insensitive substring test. */
static int has(const char *s, const char *w)
{
    size_t n = strlen(w);
    for (; *s; s++)
        if (strncasecmp(s, w, n) == 0)
            return 1;
    return 0;
}

int ui_log_role_of(const char *text)
{
    if (has(text, "error") || has(text, "fail") || has(text, "bad record") || has(text, "damaged"))
        return UI_R_BAD;
    if (has(text, "warning") || has(text, "skipp") || has(text, "interrupt"))
        return UI_R_WARN;
    if (has(text, "checkpoint"))
        return UI_R_INFO;
    if (strncasecmp(text, "epoch", 5) == 0)
        return UI_R_OK;
    return UI_R_NORMAL;
}

void ui_log_add(ui_log *l, double t, int role, const char *text)
{
    int slot = (l->head + l->n) % UI_LOG_LINES;
    if (l->n == UI_LOG_LINES)
        l->head = (l->head + 1) % UI_LOG_LINES;
    else
        l->n++;
    ui_log_line *ln = &l->line[slot];
    ln->t = t;
    int full = snprintf(ln->text, sizeof ln->text, "%s", text ? text : "");
    if (full >= (int)sizeof ln->text) {
        /* Cut at a character's start, so no UTF-8 sequence is left half. */
        size_t k = sizeof ln->text - 4;
        while (k > 0 && ((unsigned char)ln->text[k] & 0xC0) == 0x80)
            k--;
        memcpy(ln->text + k, "...", 4);
    }
    for (char *c = ln->text; *c; c++)
        if (*c == '\n' || *c == '\r' || *c == '\t')
            *c = ' ';
    ln->role = role >= 0 ? role : ui_log_role_of(ln->text);
    l->total++;
}

const ui_log_line *ui_log_get(const ui_log *l, int i)
{
    if (i < 0 || i >= l->n)
        return NULL;
    return &l->line[(l->head + i) % UI_LOG_LINES];
}
