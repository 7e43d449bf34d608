/* nn_widths — the small net's --widths list read, and its "auto" rule: how many
 * blocks of how many channels suit an input side (see nn_models.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "nn/nn_models.h"

/* --widths: the options' table's limit is the small net's. */
_Static_assert(RUN_MAX_BLOCKS == NN_SMALL_MAX_BLOCKS, "RUN_MAX_BLOCKS and NN_SMALL_MAX_BLOCKS");

int nn_parse_widths(const char *s, int side, int out[NN_SMALL_MAX_BLOCKS],
                    int strided[NN_SMALL_MAX_BLOCKS], pt_err *e)
{
    int n = 0, stride[NN_SMALL_MAX_BLOCKS] = { 0 };
    if (!strcmp(s, "auto")) {
        /* A 2x2 average pool first wherever the four blocks still fit after it (16 px):
         * the photos this is for hold about 32 px of detail, and the net after the pool
         * learns as much as at full resolution at a quarter of the cost (bench/RESULTS.md,
         * "Other nets at 128 px"). The same stem at every side keeps the cost growing with
         * the image: a pool only from some threshold made 96 px cost 2.3x what 128 px did
         * (no rule that pools from a threshold can keep the cost monotone). */
        if (side >= 2 * NN_SMALL_MIN_SIDE) {
            out[n] = 0;
            stride[n++] = NN_BLOCK_AVGPOOL;
            side /= 2;
        }
        static const int first[4] = { 32, 64, 128, 256 };
        for (int k = 0; k < 4; k++)
            out[n++] = first[k];
        while (n < NN_SMALL_MAX_BLOCKS && side >> (n - (stride[0] != 0) + 1) >= 2)
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
                if (end == p || errno || v < 1 || v > NN_SMALL_MAX_WIDTH)
                    end = NULL;
            }
            if (!end || n == NN_SMALL_MAX_BLOCKS || (*end != ',' && *end != '\0')) {
                err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                        "widths wants auto or 1 to %d blocks, comma-separated: channel "
                        "counts from 1 to 4096, Cs for a strided block, a for an average "
                        "pool (a,32,64s,128), not '%s'",
                        NN_SMALL_MAX_BLOCKS, s);
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

int nn_check_widths(const char *s, pt_err *e)
{
    int widths[NN_SMALL_MAX_BLOCKS];
    return nn_parse_widths(s, 128, widths, NULL, e) < 0 ? PT_EUSAGE : PT_OK;
}

/* The options' table cannot take this module's header (it is a floor below nn/): the
 * check is handed to it before main runs, wherever this file is linked in. */
__attribute__((constructor)) static void register_check(void)
{
    cfg_set_check(CFG_WIDTHS, nn_check_widths);
}
