/* runfolder_write — the run folder written (see runfolder.h): its creation,
 * log.txt, history.json from run_history_keys[], the validation predictions and
 * any other file by name. Every file is written atomically. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "base/util.h"
#include "run/runfolder_impl.h"

int run_path(const run_handle *w, run_file f, char *buf, size_t n)
{
    return util_path(buf, n, "%s/%s", w->dir, run_file_name(f));
}

int run_has(const run_handle *h, run_file f)
{
    char path[4200];
    if (run_path(h, f, path, sizeof path) != 0)
        return 0;
    return f == RUN_F_TRAIN_DIR || f == RUN_F_VAL_DIR ? util_is_dir(path) : util_is_file(path);
}

int run_read_lines(const run_handle *h, run_file f, char ***lines, int *n, pt_err *e)
{
    char path[4200];
    if (run_path(h, f, path, sizeof path) != 0)
        return err_set(e, PT_EUSAGE, h->dir, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
    return util_read_lines(path, lines, n, e);
}

int run_open(run_handle *h, const char *dir, int on, pt_err *e)
{
    memset(h, 0, sizeof *h);
    if (strlen(dir) >= sizeof h->dir)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
    util_copy(h->dir, sizeof h->dir, dir);
    if (!util_is_dir(dir))
        return err_set(e, PT_EUSAGE, dir, PT_NO_RECORD, PT_NO_OFFSET, "no such run folder");
    h->on = on;
    return PT_OK;
}

int run_holds_run(const char *dir)
{
    char probe[4200];
    return util_path(probe, sizeof probe, "%s/" RUN_N_CHECKPOINT, dir) == 0 &&
           util_is_file(probe);
}

void run_log_line(const run_handle *w, const char *line)
{
    if (!w->dir[0])
        return;
    char path[4200], stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    if (!localtime_r(&now, &tm) || !strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm))
        util_copy(stamp, sizeof stamp, "?");
    run_path(w, RUN_F_LOG, path, sizeof path);
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "%s %s\n", stamp, line);
        fclose(f);
    }
}

int run_create(run_handle *w, int on, const run_config *cfg, int *stale, pt_err *e)
{
    w->on = on;
    *stale = 0;
    if (!on)
        return PT_OK;
    if (cfg->resume[0]) {
        util_copy(w->dir, sizeof w->dir, cfg->resume);
        if (!util_is_dir(w->dir))
            return err_set(e, PT_EUSAGE, w->dir, PT_NO_RECORD, PT_NO_OFFSET,
                           "no run folder here to resume");
    } else if (cfg->out[0]) {
        util_copy(w->dir, sizeof w->dir, cfg->out);
        if (util_is_dir(w->dir)) {
            if (run_holds_run(w->dir))
                return err_set(e, PT_EUSAGE, w->dir, PT_NO_RECORD, PT_NO_OFFSET,
                               "holds a run already; continue it with --resume or choose another "
                               "--out");
        }
    } else {
        char stamp[32];
        time_t now = time(NULL);
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
        char name[64];
        run_model_name(cfg, name, sizeof name);
        snprintf(w->dir, sizeof w->dir, "runs/%s-%s", name, stamp);
        for (int k = 2; util_is_dir(w->dir) && k < 100; k++)
            snprintf(w->dir, sizeof w->dir, "runs/%s-%s-%d", name, stamp, k);
    }
    w->made = !util_is_dir(w->dir);
    int rc = util_mkdirs(w->dir, e);
    if (rc != PT_OK)
        return rc;
    /* A run killed while writing a file leaves its NAME.tmp.PID (never a torn NAME):
     * cleared here, before this run writes its own. */
    *stale = util_remove_stale_temps(w->dir, NULL);
    return PT_OK;
}

int run_discard(run_handle *w)
{
    if (!w->on || !w->made || !w->dir[0])
        return 0;
    w->made = 0;
    return util_remove_tree(w->dir) == 0;
}

int run_write_file(const run_handle *w, run_file f, const char *text, size_t len, pt_err *e)
{
    if (!w->on)
        return PT_OK;
    char path[4200];
    if (run_path(w, f, path, sizeof path) != 0)
        return err_set(e, PT_EUSAGE, w->dir, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
    return util_write_file_atomic(path, text, len, e);
}

int run_write_json(const run_handle *w, run_file f, json_w *j, pt_err *e)
{
    size_t len;
    char *text = json_take(j, &len);
    if (!text)
        return err_set(e, PT_ENOMEM, w->dir, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    int rc = run_write_file(w, f, text, len, e);
    free(text);
    return rc;
}

int run_write_history(const run_handle *w, const run_epoch *rows, int n, pt_err *e)
{
    json_w j;
    json_init(&j, 1);
    json_arr(&j);
    for (int i = 0; i < n; i++) {
        json_obj(&j);
        for (int k = 0; k < RUN_H_COUNT; k++) {
            json_key(&j, run_history_keys[k].name);
            if (run_history_keys[k].is_int)
                json_int(&j, (long long)run_history_get(&rows[i], k));
            else
                json_num(&j, run_history_get(&rows[i], k));
        }
        json_obj_end(&j);
    }
    json_arr_end(&j);
    return run_write_json(w, RUN_F_HISTORY, &j, e);
}

char *run_int_list(const int32_t *v, long long n, size_t *len)
{
    json_w j;
    json_init(&j, 0);
    json_arr(&j);
    for (long long i = 0; i < n; i++)
        json_int(&j, v[i]);
    json_arr_end(&j);
    return json_take(&j, len);
}

/* valid_preds.jsonl: one line per epoch, {"epoch": N, "preds": [...]}. Lines of epochs
 * after `keep` (left by a run that stopped before its checkpoint) are dropped. */
int run_append_valid_preds(const run_handle *w, int epoch, const int32_t *preds, long long n,
                           pt_err *e)
{
    if (!w->on)
        return PT_OK;
    char path[4200];
    run_path(w, RUN_F_VALID_PREDS, path, sizeof path);
    uint8_t *old = NULL;
    size_t olen = 0;
    if (util_is_file(path) && util_read_file(path, &old, &olen, NULL) != PT_OK)
        old = NULL;
    size_t keep = 0;
    if (old) {
        for (size_t at = 0; at < olen;) {
            char *nl = memchr(old + at, '\n', olen - at);
            size_t end = nl ? (size_t)((uint8_t *)nl - old) + 1 : olen;
            int ep = 0;
            if (sscanf((const char *)old + at, "{\"epoch\":%d", &ep) == 1 && ep < epoch)
                keep = end;
            else
                break;
            at = end;
        }
    }
    size_t plen;
    char *list = run_int_list(preds, n, &plen);
    if (!list) {
        free(old);
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    size_t total = keep + plen + 64;
    char *buf = malloc(total);
    if (!buf) {
        free(old);
        free(list);
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    }
    if (keep)
        memcpy(buf, old, keep);
    int k = snprintf(buf + keep, 64, "{\"epoch\":%d,\"preds\":", epoch);
    memcpy(buf + keep + k, list, plen);
    buf[keep + k + plen] = '}';
    buf[keep + k + plen + 1] = '\n';
    int rc = util_write_file_atomic(path, buf, keep + (size_t)k + plen + 2, e);
    free(buf);
    free(list);
    free(old);
    return rc;
}
