/* run — names of the run states and the frees of run.h's heap-holding copies. */
#include "run.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

const char *run_state_name(run_state s)
{
    switch (s) {
    case RUN_IDLE: return "idle";
    case RUN_PREPARING: return "preparing";
    case RUN_RUNNING: return "running";
    case RUN_PAUSED: return "paused";
    case RUN_DONE: return "done";
    case RUN_FAILED: return "failed";
    case RUN_STOPPED: return "stopped";
    }
    return "?";
}

void run_preview_free(run_preview *p)
{
    free(p->original);
    free(p->augmented);
    free(p->label);
    p->original = p->augmented = NULL;
    p->label = NULL;
    p->n = 0;
}

void run_val_report_free(run_val_report *r)
{
    free(r->precision);
    free(r->recall);
    free(r->f1);
    free(r->support);
    free(r->confusion);
    memset(r, 0, sizeof *r);
}

void run_val_item_free(run_val_item *it)
{
    free(it->rgb);
    it->rgb = NULL;
}

void run_explain_free(run_explain *x)
{
    free(x->photo);
    free(x->cam[0]);
    free(x->cam[1]);
    free(x->heat);
    memset(x, 0, sizeof *x);
}

static uint8_t *copy_rgb(const uint8_t *p, size_t bytes, int *ok)
{
    if (!p)
        return NULL;
    uint8_t *q = malloc(bytes);
    if (q)
        memcpy(q, p, bytes);
    else
        *ok = 0;
    return q;
}

int run_explain_copy(const run_explain *x, run_explain *out)
{
    size_t bytes = (size_t)x->h * x->w * 3;
    int ok = 1;
    *out = *x;
    out->photo = copy_rgb(x->photo, bytes, &ok);
    out->cam[0] = copy_rgb(x->cam[0], bytes, &ok);
    out->cam[1] = copy_rgb(x->cam[1], bytes, &ok);
    out->heat = copy_rgb(x->heat, bytes, &ok);
    if (!ok) {
        run_explain_free(out);
        return PT_ENOMEM;
    }
    return PT_OK;
}

int run_keeps_best(const run_config *c)
{
    return c->keep == RUN_KEEP_BEST || (c->keep == RUN_KEEP_AUTO && c->early_stop > 0);
}

const char *run_monitor_key(run_monitor m)
{
    return m == RUN_MON_LOSS ? "val_loss" : "val_f1";
}

int run_monitor_better(run_monitor m, double a, double b)
{
    if (a != a)
        return 0;
    if (b != b)
        return 1;
    return m == RUN_MON_LOSS ? a < b : a > b;
}

const char *run_model_name(const run_config *c, char *buf, size_t n)
{
    const char *base = strrchr(c->model, '/');
    base = base ? base + 1 : c->model;
    size_t len = strlen(base);
    if (run_model_is_onnx(base))
        len -= 5;
    if (len > 48)
        len = 48;
    snprintf(buf, n, "%.*s", (int)len, base);
    return buf;
}

int run_model_is_onnx(const char *model)
{
    size_t n = strlen(model);
    return n > 5 && strcasecmp(model + n - 5, ".onnx") == 0;
}
