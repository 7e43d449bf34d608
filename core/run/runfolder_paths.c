/* runfolder_paths — a run folder's paths that must work from anywhere (see
 * runfolder.h): the config read back with its data and model found, the paths a new
 * run stores, and the copy of an imported model's ONNX file it keeps. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "config.h"
#include "run/runfolder_impl.h"

static int exists(const char *path)
{
    struct stat st;
    return path[0] && stat(path, &st) == 0;
}

/* A relative path that is not there from the working folder, found from the run
 * folder's parent or grandparent: into path (n bytes). */
static void find_relative(const char *dir, char *path, size_t n)
{
    if (!path[0] || path[0] == '/' || exists(path))
        return;
    static const char *const up[] = { "..", "../.." };
    for (int k = 0; k < 2; k++) {
        char cand[8400], real[PATH_MAX];
        util_fmt(cand, sizeof cand, "%s/%s/%s", dir, up[k], path);
        if (exists(cand) && realpath(cand, real) && strlen(real) < n) {
            util_copy(path, n, real);
            return;
        }
    }
}

int run_config_read(const run_handle *h, run_config *cfg, pt_err *e)
{
    char path[4200];
    if (run_path(h, RUN_F_CONFIG, path, sizeof path) != 0)
        return err_set(e, PT_EUSAGE, h->dir, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
    int rc = cfg_read_file(cfg, path, e);
    if (rc != PT_OK)
        return rc;
    char source[4200];
    if (run_model_is_onnx(cfg->model) && run_path(h, RUN_F_SOURCE, source, sizeof source) == 0 &&
        util_is_file(source))
        util_copy(cfg->model, sizeof cfg->model, source);
    else if (run_model_is_onnx(cfg->model))
        find_relative(h->dir, cfg->model, sizeof cfg->model);
    find_relative(h->dir, cfg->data, sizeof cfg->data);
    return PT_OK;
}

/* path made absolute from the working folder, links kept (a link the user points
 * elsewhere later is followed then). */
static void absolute(char *path, size_t n)
{
    char cwd[PATH_MAX], whole[8400];
    if (!path[0] || path[0] == '/' || !exists(path) || !getcwd(cwd, sizeof cwd))
        return;
    const char *rel = path;
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    util_fmt(whole, sizeof whole, "%s/%s", cwd, rel);
    if (strlen(whole) < n)
        util_copy(path, n, whole);
}

void run_config_absolute(run_config *cfg)
{
    absolute(cfg->data, sizeof cfg->data);
    if (run_model_is_onnx(cfg->model))
        absolute(cfg->model, sizeof cfg->model);
}

int run_keep_source(const run_handle *w, const run_config *cfg, pt_err *e)
{
    char to[4200];
    if (!w->on || !run_model_is_onnx(cfg->model) ||
        run_path(w, RUN_F_SOURCE, to, sizeof to) != 0)
        return PT_OK;
    /* A resumed run's model is its copy already. */
    char a[PATH_MAX], b[PATH_MAX];
    if (util_is_file(to) && realpath(to, a) && realpath(cfg->model, b) && !strcmp(a, b))
        return PT_OK;
    uint8_t *bytes;
    size_t len;
    int rc = util_read_file(cfg->model, &bytes, &len, e);
    if (rc != PT_OK)
        return rc;
    rc = util_write_file_atomic(to, bytes, len, e);
    free(bytes);
    return rc;
}
