/* netcfg — the net a configuration builds, and its input side (see netcfg.h). */
#include "infer/netcfg.h"

#include <string.h>

#include "nn/nn_models.h"

int netcfg_image_size(const run_config *cfg, const ds_dataset *ds, int *img, pt_err *e)
{
    *img = cfg->image_size > 0 ? cfg->image_size : ds->image_w;
    if (*img > 0)
        return PT_OK;
    int w, h, rc = ds_probe_image_size(&ds->split[DS_TRAIN], &w, &h, e);
    if (rc == PT_OK)
        *img = w;
    return rc;
}

nn_model *netcfg_build(const run_config *cfg, int img, int k, nn_import_info *info, pt_err *e)
{
    if (run_model_is_onnx(cfg->model)) {
        nn_import_opts o = { .h = img, .w = img, .n_classes = k, .dropout = (float)cfg->dropout,
                             .norm = (nn_norm)(cfg->input_norm - 1),
                             .norm_auto = cfg->input_norm == RUN_NORM_AUTO,
                             .reinit = cfg->reinit, .seed = cfg->seed };
        nn_import_info local;
        return nn_import_onnx_file(cfg->model, &o, info ? info : &local, e);
    }
    if (!strcmp(cfg->model, "small")) {
        int widths[NN_SMALL_MAX_BLOCKS], strided[NN_SMALL_MAX_BLOCKS];
        int n = nn_parse_widths(cfg->widths, img, widths, strided, e);
        if (n < 0)
            return NULL;
        return nn_build_small_widths(img, img, k, (float)cfg->dropout, widths, strided, n,
                                     cfg->residual ? NN_SMALL_RESIDUAL : cfg->convs, e);
    }
    if (!strcmp(cfg->model, "mobilenetv2"))
        return nn_build_mobilenetv2(img, img, k, (float)cfg->width, (float)cfg->dropout, e);
    err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "unknown model '%s'", cfg->model);
    return NULL;
}
