/* conform-check — `make conformance`'s checker: every NAME.onnx of a folder
 * (make_conform.py --full writes them) against its NAME.ref, one line per net, the
 * tolerances of tests/conform.h, exit status 1 when any net is outside them or
 * cannot be checked.
 *
 *   conform-check [-v] [--dump] DIR [NAME...]
 *     -v      every gradient tensor: its error, its share of the gradient's norm and
 *             PyTorch's own spread on it (tests/conform.h)
 *     --dump  petal-tui's logits, loss and gradients into DIR/NAME.petal (PTREF1)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "nn/nn.h"
#include "tests/conform.h"

static void each(void *ctx, const char *name, double err, double share, double spread)
{
    (void)ctx;
    printf("    %-64s %9.2e  share %8.2e  PyTorch's spread %8.2e\n", name, err, share, spread);
}

static int wanted(const char *net, int argc, char **argv, int first)
{
    if (first >= argc)
        return 1;
    for (int i = first; i < argc; i++)
        if (!strcmp(net, argv[i]))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    int verbose = 0, dump = 0, a = 1;
    for (; a < argc && argv[a][0] == '-'; a++) {
        if (!strcmp(argv[a], "-v"))
            verbose = 1;
        else if (!strcmp(argv[a], "--dump"))
            dump = 1;
        else
            break;
    }
    if (a >= argc) {
        fprintf(stderr, "usage: conform-check [-v] [--dump] DIR [NAME...]\n");
        return 2;
    }
    const char *dir = argv[a++];
    nn_init();
    pt_err e;
    char **files = NULL;
    int nf = 0;
    if (util_list_dir(dir, UTIL_LIST_FILES, &files, &nf, &e) != PT_OK) {
        fprintf(stderr, "conform-check: %s\n", e.msg);
        return 2;
    }
    int checked = 0, passed = 0;
    for (int i = 0; i < nf; i++) {
        size_t len = strlen(files[i]);
        if (len < 6 || strcmp(files[i] + len - 5, ".onnx") != 0)
            continue;
        char net[512], onnx[4200], ref[4200], out[4200];
        util_fmt(net, sizeof net, "%.*s", (int)(len - 5), files[i]);
        if (!wanted(net, argc, argv, a))
            continue;
        util_fmt(onnx, sizeof onnx, "%s/%s", dir, files[i]);
        util_fmt(ref, sizeof ref, "%s/%s.ref", dir, net);
        util_fmt(out, sizeof out, "%s/%s.petal", dir, net);
        cf_opts o = { .dump_path = dump ? out : NULL, .each = verbose ? each : NULL };
        cf_result r;
        checked++;
        if (cf_check(onnx, ref, &o, &r, &e) != PT_OK) {
            printf("%-22s cannot be checked: %s\n", net, e.msg);
            continue;
        }
        int ok = cf_pass(&r);
        passed += ok;
        printf("%-22s %3d px x%d  logits %.1e (training %.1e)  loss %.1e  gradients: worst "
               "%.1e of %d (%s)  %s\n",
               net, r.hw, r.n, r.logits_err, r.train_logits_err, r.loss_err, r.grad_err,
               r.tensors - r.undetermined, r.grad_worst, ok ? "ok" : "FAIL");
        if (r.beyond || r.undetermined)
            printf("%-22s   %d above %.0e; %d zero but for rounding (PyTorch's spread over "
                   "%.0f%%); each within %gx PyTorch's spread: the closest %.2f of it (%s)\n",
                   "", r.beyond, CF_TOL_GRAD, r.undetermined, CF_UNDETERMINED * 100,
                   CF_SPREAD_FACTOR, r.grad_score, r.grad_score_name);
        printf("%-22s   %zu parameters; import %.2f s, forward + training step %.2f s\n", "",
               r.params, r.import_s, r.step_s);
        fflush(stdout);
    }
    util_free_list(files, nf);
    if (!checked) {
        printf("conform-check: no NAME.onnx in %s\n", dir);
        return 1;
    }
    printf("conformance: %d of %d nets within tolerance (logits %.0e, loss %.0e, every "
           "gradient %.0e relative or %gx PyTorch's own spread)\n",
           passed, checked, CF_TOL_LOGITS, CF_TOL_LOSS, CF_TOL_GRAD, CF_SPREAD_FACTOR);
    return passed == checked ? 0 : 1;
}
