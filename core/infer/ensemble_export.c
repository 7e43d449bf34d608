/* ensemble_export — an ensemble as one ONNX file (infer/ensemble.h's ens_export): its
 * members' nets as predict runs them, through nn/nn_export.h's ensemble form. */
#include "infer/ensemble_impl.h"
#include <stdio.h>

#include "infer/runmodel.h"
#include "nn/nn_export.h"

int ens_export(const ens *x, const char *path, pt_err *e)
{
    nn_export_member mem[ENS_MAX];
    for (int i = 0; i < x->n; i++) {
        const rm_model *m = x->m[i];
        mem[i] = (nn_export_member){ .m = m->net, .weight = x->w[i],
                                     .flip = (x->tta[i] & ENS_TTA_FLIP) != 0,
                                     .crops = (x->tta[i] & ENS_TTA_CROPS) != 0,
                                     .crop = prd_crop_side(m->image_size),
                                     .class_of = x->maps[i], .source = m->source };
    }
    nn_export_ens meta = { .class_names = (const char *const *)ens_class_names(x), .k = x->k,
                           .image_size = x->size };
    int rc = nn_export_ensemble_file(mem, x->n, &meta, path, e);
    if (rc != PT_OK && e && !e->file[0]) {
        char was[sizeof e->msg];
        snprintf(was, sizeof was, "%s", e->msg);
        err_set(e, rc, path, PT_NO_RECORD, PT_NO_OFFSET, "%s", was);
    }
    return rc;
}
