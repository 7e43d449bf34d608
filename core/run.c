/* run — names of the run states, the frees of run.h's heap-holding copies, and the
 * reading of a --widths list. */
#include "run.h"
#include "nn/nn_models.h"

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

int run_parse_widths(const char *s, int side, int out[RUN_MAX_BLOCKS],
                     int strided[RUN_MAX_BLOCKS], pt_err *e)
{
    int n = 0, stride[RUN_MAX_BLOCKS] = { 0 };
    if (!strcmp(s, "auto")) {
        /* From 128 px a 2x2 average pool first: these photos hold about 32 px of
         * detail, and the net after it then sees what it sees at half the side. It
         * learns more than a strided 16-channel block there (bench/RESULTS.md, "Other
         * nets at 128 px"). */
        if (side >= 128) {
            out[n] = 0;
            stride[n++] = NN_BLOCK_AVGPOOL;
            side /= 2;
        }
        static const int first[4] = { 32, 64, 128, 256 };
        for (int k = 0; k < 4; k++)
            out[n++] = first[k];
        while (n < RUN_MAX_BLOCKS && side >> (n - (stride[0] != 0) + 1) >= 2)
            out[n++] = 256;
    }
    else {
        const char *p = s;
        for (;;) {
            char *end;
            long v;
            int kind;
            if (*p == 'a') { /* an average pool: no number, no s */
                end = (char *)p + 1;
                v = 0;
                kind = NN_BLOCK_AVGPOOL;
            }
            else {
                errno = 0;
                v = strtol(p, &end, 10);
                kind = *end == 's' ? NN_BLOCK_STRIDED : NN_BLOCK_POOL;
                end += kind == NN_BLOCK_STRIDED;
                if (end == p || errno || v < 1 || v > 4096)
                    end = NULL;
            }
            if (!end || n == RUN_MAX_BLOCKS || (*end != ',' && *end != '\0')) {
                err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                        "widths wants auto or 1 to %d blocks, comma-separated: channel "
                        "counts from 1 to 4096, Cs for a strided block, a for an average "
                        "pool (a,32,64s,128), not '%s'",
                        RUN_MAX_BLOCKS, s);
                return -1;
            }
            stride[n] = kind;
            out[n++] = (int)v;
            if (*end == '\0')
                break;
            p = end + 1;
        }
    }
    if (strided)
        memcpy(strided, stride, sizeof stride);
    return n;
}
