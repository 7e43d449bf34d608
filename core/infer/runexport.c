/* runexport — a run folder's trained net written as a standard ONNX file (runmodel.h):
 * the weights validation used, the run's class names, image size and epoch in the
 * file's metadata. One function for `petal-tui export` and the workbench's key. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "nn/nn_export.h"
#include "run/runfolder.h"
#include "infer/runmodel.h"

int rm_export(const char *run_dir, const char *out, rm_export_info *info, pt_err *e)
{
    struct stat st;
    if (stat(run_dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return err_set(e, PT_EUSAGE, run_dir, PT_NO_RECORD, PT_NO_OFFSET,
                       "not a run folder: export writes a run's model (an ONNX file is one "
                       "already)");
    double t0 = util_now();
    rm_model m;
    int rc = rm_open(run_dir, 0, &m, e);
    if (rc != PT_OK)
        return rc;
    rm_export_info in = { .classes = m.n_classes, .image_size = m.image_size,
                          .epoch = m.epoch, .ema = m.ema };
    if (out && out[0])
        snprintf(in.path, sizeof in.path, "%s", out);
    else {
        run_handle h;
        if ((rc = run_open(&h, run_dir, 1, e)) != PT_OK) {
            rm_close(&m);
            return rc;
        }
        run_path(&h, RUN_F_EXPORT, in.path, sizeof in.path);
    }
    char real[PATH_MAX];
    const char *source = realpath(run_dir, real) ? real : run_dir;
    nn_export_meta meta = { .class_names = (const char *const *)m.class_names,
                            .image_size = m.image_size, .source_run = source,
                            .epoch = m.epoch };
    rc = nn_export_onnx_file(m.net, &meta, in.path, e);
    rm_close(&m);
    if (rc == PT_OK && stat(in.path, &st) == 0)
        in.bytes = (long long)st.st_size;
    in.seconds = util_now() - t0;
    if (info)
        *info = in;
    return rc;
}
