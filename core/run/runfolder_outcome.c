/* runfolder_outcome — summary.json (see runfolder.h): which epoch's weights are the
 * run's model and why the run stopped, written by the trainer after every epoch and
 * at its end, read back by the runs list, --open and the commands that open a run's
 * model; and which weights file that model is (best.ckpt or checkpoint.ckpt).
 *
 * The file is one flat object of the keys below, in this order; the reader takes
 * the keys it knows wherever they are, so a later writer may add others. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/util.h"
#include "run/runfolder_impl.h"

/* run_stop's names in the file. */
static const char *const STOPS[RUN_STOP_COUNT] = {
    [RUN_STOP_NONE] = "running",
    [RUN_STOP_EPOCHS] = "epochs",
    [RUN_STOP_EARLY] = "early",
    [RUN_STOP_USER] = "user",
};

int run_write_outcome(const run_handle *w, const run_outcome *o, pt_err *e)
{
    if (!w->on)
        return PT_OK;
    json_w j;
    json_init(&j, 1);
    json_obj(&j);
    json_key(&j, "keep");
    json_str(&j, o->keep_best ? "best" : "last");
    json_key(&j, "monitor");
    json_str(&j, run_monitor_key(o->monitor));
    json_key(&j, "early_stop");
    json_int(&j, o->early_stop);
    json_key(&j, "epochs");
    json_int(&j, o->epochs);
    json_key(&j, "kept_epoch");
    json_int(&j, o->kept_epoch);
    json_key(&j, "kept_value");
    json_num(&j, o->kept_value);
    json_key(&j, "best_epoch");
    json_int(&j, o->best_epoch);
    json_key(&j, "best_value");
    json_num(&j, o->best_value);
    json_key(&j, "epochs_without_improvement");
    json_int(&j, o->since_best);
    json_key(&j, "stop");
    json_str(&j, STOPS[o->stop >= 0 && o->stop < RUN_STOP_COUNT ? o->stop : 0]);
    json_key(&j, "stop_reason");
    json_str(&j, o->reason);
    json_obj_end(&j);
    return run_write_json(w, RUN_F_SUMMARY, &j, e);
}

/* The text after "key": (spaces skipped), or NULL when the object has no such key. */
static const char *value_of(const char *t, const char *key)
{
    char pat[64];
    util_fmt(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(t, pat);
    if (!p)
        return NULL;
    p += strlen(pat);
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p++ != ':')
        return NULL;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* A number (null: NaN); -1 when the key is missing or not a number. */
static int num_of(const char *t, const char *key, double *v)
{
    const char *p = value_of(t, key);
    if (!p)
        return -1;
    if (!strncmp(p, "null", 4)) {
        *v = NAN;
        return 0;
    }
    char *end;
    *v = strtod(p, &end);
    return end == p ? -1 : 0;
}

/* A string without escapes past \" and \\ (what the writer puts in a reason). */
static int str_of(const char *t, const char *key, char *buf, size_t n)
{
    const char *p = value_of(t, key);
    if (!p || *p != '"')
        return -1;
    size_t k = 0;
    for (p++; *p && *p != '"'; p++) {
        if (*p == '\\' && p[1])
            p++;
        if (k + 1 < n)
            buf[k++] = *p;
    }
    buf[k] = '\0';
    return *p == '"' ? 0 : -1;
}

int run_read_outcome(const char *run_dir, run_outcome *o, pt_err *e)
{
    memset(o, 0, sizeof *o);
    o->kept_value = o->best_value = NAN;
    char path[4200];
    util_path(path, sizeof path, "%s/" RUN_N_SUMMARY, run_dir);
    if (!util_is_file(path))
        return err_set(e, PT_ENODATA, run_dir, PT_NO_RECORD, PT_NO_OFFSET,
                       "no " RUN_N_SUMMARY);
    size_t len;
    char *t = run_read_text(path, &len, e);
    if (!t)
        return e ? e->code : PT_EIO;
    char keep[16], monitor[16], stop[16];
    double early, epochs, kept, best, since;
    int bad = str_of(t, "keep", keep, sizeof keep) ||
              str_of(t, "monitor", monitor, sizeof monitor) ||
              str_of(t, "stop", stop, sizeof stop) ||
              str_of(t, "stop_reason", o->reason, sizeof o->reason) ||
              num_of(t, "early_stop", &early) || num_of(t, "epochs", &epochs) ||
              num_of(t, "kept_epoch", &kept) || num_of(t, "kept_value", &o->kept_value) ||
              num_of(t, "best_epoch", &best) || num_of(t, "best_value", &o->best_value) ||
              num_of(t, "epochs_without_improvement", &since);
    free(t);
    if (bad)
        return err_set(e, PT_EFORMAT, path, PT_NO_RECORD, PT_NO_OFFSET,
                       "not a run summary (keep, monitor, epochs, kept_epoch, stop, ...)");
    o->keep_best = !strcmp(keep, "best");
    o->monitor = !strcmp(monitor, run_monitor_key(RUN_MON_LOSS)) ? RUN_MON_LOSS : RUN_MON_F1;
    o->early_stop = (int)early;
    o->epochs = (int)epochs;
    o->kept_epoch = (int)kept;
    o->best_epoch = (int)best;
    o->since_best = (int)since;
    o->stop = RUN_STOP_NONE;
    for (int s = 0; s < RUN_STOP_COUNT; s++)
        if (!strcmp(stop, STOPS[s]))
            o->stop = (run_stop)s;
    return PT_OK;
}

run_file run_kept_file(const run_handle *h, const run_config *cfg)
{
    return run_keeps_best(cfg) && run_has(h, RUN_F_BEST) ? RUN_F_BEST : RUN_F_CHECKPOINT;
}
