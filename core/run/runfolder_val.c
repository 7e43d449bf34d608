/* runfolder_val — a run folder's validation results and log.txt read back
 * (see runfolder.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "run/runfolder_impl.h"

/* ---- validation results ------------------------------------------------------------ */

/* The integers of a JSON array starting at or after t (at most cap); their count,
 * or -1 when the text is not such an array (*at: the byte where it goes wrong). */
static long long int_array(const char *t, const char *from, int *out, long long cap,
                           long long *at)
{
    const char *p = from;
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    if (*p != '[') {
        *at = p - t;
        return -1;
    }
    p++;
    long long n = 0;
    for (;;) {
        while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
            p++;
        if (*p == ']' && n == 0)
            return 0;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v >= RUN_MAX_CLASSES || n >= cap) {
            *at = p - t;
            return -1;
        }
        out[n++] = (int)v;
        p = end;
        while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
            p++;
        if (*p == ']')
            return n;
        if (*p != ',') {
            *at = p - t;
            return -1;
        }
        p++;
    }
}

int run_val_read(const char *run_dir, int n_classes, int **labels, int **preds, long long *n,
                 int *k_out, int *epoch_out, pt_err *e)
{
    *labels = *preds = NULL;
    *n = 0;
    char lp[4200], pp[4200];
    util_path(lp, sizeof lp, "%s/" RUN_N_VALID_LABELS, run_dir);
    util_path(pp, sizeof pp, "%s/" RUN_N_VALID_PREDS, run_dir);
    if (!util_is_file(lp) || !util_is_file(pp))
        return err_set(e, PT_ENODATA, run_dir, PT_NO_RECORD, PT_NO_OFFSET,
                       "no valid_labels.json and valid_preds.jsonl (validation results)");
    size_t llen, plen;
    char *lt = run_read_text(lp, &llen, e);
    if (!lt)
        return e ? e->code : PT_EIO;
    char *pt = run_read_text(pp, &plen, e);
    if (!pt) {
        free(lt);
        return e ? e->code : PT_EIO;
    }
    long long cap = (long long)llen / 2 + 1, at = 0, line_no = 0;
    int *lab = malloc((size_t)cap * sizeof *lab), *pred = malloc((size_t)cap * sizeof *pred);
    int rc = PT_OK;
    long long nl = -1, np = -1;
    int epoch = 0;
    if (!lab || !pred)
        rc = err_set(e, PT_ENOMEM, run_dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    if (rc == PT_OK && (nl = int_array(lt, lt, lab, cap, &at)) < 0)
        rc = err_set(e, PT_EFORMAT, lp, PT_NO_RECORD, at, "not an array of class numbers");
    if (rc == PT_OK) {
        /* The last line that is whole: {"epoch":N,"preds":[...]}; the kept epoch's
         * when the run's model is its best epoch's weights (summary.json). */
        run_outcome o;
        int want = run_read_outcome(run_dir, &o, NULL) == PT_OK && o.keep_best ? o.kept_epoch : 0;
        const char *last = NULL, *kept = NULL;
        long long n_lines = 0, kept_no = 0;
        for (const char *l = pt; *l;) {
            size_t ll = strcspn(l, "\n");
            if (ll > 0 && l[ll] == '\n') {
                last = l;
                line_no = ++n_lines;
                const char *ep = strstr(l, "\"epoch\":");
                if (want > 0 && ep && ep < l + ll && atoi(ep + 8) == want) {
                    kept = l;
                    kept_no = n_lines;
                }
            }
            l += ll + (l[ll] == '\n');
        }
        if (kept) {
            last = kept;
            line_no = kept_no;
        }
        const char *ep = last ? strstr(last, "\"epoch\":") : NULL;
        const char *pr = last ? strstr(last, "\"preds\":") : NULL;
        if (!ep || !pr)
            rc = err_set(e, PT_EFORMAT, pp, line_no > 0 ? line_no - 1 : PT_NO_RECORD,
                         last ? last - pt : 0, "no line {\"epoch\":N,\"preds\":[...]}");
        else {
            epoch = atoi(ep + 8);
            if ((np = int_array(pt, pr + 8, pred, cap, &at)) < 0)
                rc = err_set(e, PT_EFORMAT, pp, line_no - 1, at, "not an array of class numbers");
            else if (np != nl)
                rc = err_set(e, PT_EFORMAT, pp, line_no - 1, last - pt,
                             "%lld predictions for %lld labels of valid_labels.json", np, nl);
        }
    }
    int k = n_classes;
    for (long long i = 0; rc == PT_OK && i < nl; i++) {
        if (lab[i] >= k)
            k = lab[i] + 1;
        if (pred[i] >= k)
            k = pred[i] + 1;
    }
    if (rc == PT_OK && k <= 0)
        rc = err_set(e, PT_ENODATA, lp, PT_NO_RECORD, PT_NO_OFFSET, "no validation examples");
    free(lt);
    free(pt);
    if (rc != PT_OK) {
        free(lab);
        free(pred);
        return rc;
    }
    *labels = lab;
    *preds = pred;
    *n = nl;
    *k_out = k;
    *epoch_out = epoch > 0 ? epoch : 1;
    return PT_OK;
}

int run_log_lines(const char *run_dir, void (*fn)(void *ctx, const char *line), void *ctx,
                   pt_err *e)
{
    char path[4200];
    util_path(path, sizeof path, "%s/" RUN_N_LOG, run_dir);
    char *t = run_read_text(path, NULL, e);
    if (!t)
        return e ? e->code : PT_EIO;
    int n = 0;
    for (char *l = t; *l;) {
        size_t ll = strcspn(l, "\n");
        char save = l[ll];
        l[ll] = '\0';
        const char *text = l;
        /* "YYYY-MM-DD HH:MM:SS " */
        if (ll >= 20 && l[4] == '-' && l[7] == '-' && l[10] == ' ' && l[13] == ':' &&
            l[16] == ':' && l[19] == ' ')
            text = l + 20;
        fn(ctx, text);
        n++;
        l[ll] = save;
        l += ll + (save == '\n');
    }
    free(t);
    return n;
}
