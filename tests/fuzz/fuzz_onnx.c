/* fuzz_onnx — the ONNX reader (core/io/onnx*.c) and the import onto the layers
 * (core/nn/nn_import*.c) on any bytes: model bytes -> graph -> layers -> a forward.
 *
 * The bytes are a .onnx file (--model FILE.onnx, `petal-tui model`, `classify`).
 * onnx_load_mem() reads and checks it; what loads is walked in full through the
 * public view and lookups (every name, dim, attribute, tensor byte). Then it is
 * imported twice, as `classify` does (its own classifier kept, ImageNet
 * normalisation) and as a fine-tuning run does (a new head for 3 classes, with the
 * map of where each parameter came from, converted back to the file's layout), at
 * the input size the graph's input names when it is small, else 16 x 16. A model
 * small enough (in FLOPs) then runs one forward on one image.
 *
 * Promises checked: an error names the file and leaves no model; every pointer the
 * view hands out can be read; an import that fails names the file or the node;
 * the logits of a forward are as many as the model's classes.
 */
#include "tests/fuzz/fuzz.h"

#include "io/onnx.h"
#include "nn/nn.h"
#include "nn/nn_import.h"

#define FILE_NAME "fuzz.onnx"
#define MAX_SIDE 64
#define FORWARD_MAX_FLOPS 4e6

static unsigned long long walk_tensor(const onnx_model *m, const onnx_tensor *t)
{
    unsigned long long h = strlen(t->name) + (unsigned)t->rank;
    int64_t count = 1;
    for (int k = 0; k < t->rank; k++) {
        FZ_ASSERT(t->dims[k] >= 0, "tensor '%s' dim %d is %lld", t->name, k,
                  (long long)t->dims[k]);
        count *= t->dims[k];
    }
    FZ_ASSERT(count == t->count, "tensor '%s': %lld elements, dims say %lld", t->name,
              (long long)t->count, (long long)count);
    size_t es = onnx_dtype_size(t->dtype);
    FZ_ASSERT((t->data != NULL) == (es != 0), "tensor '%s' of %s: data %p", t->name,
              onnx_dtype_name(t->dtype), t->data);
    if (t->data) {
        const uint8_t *b = t->data;
        size_t bytes = (size_t)t->count * es;
        for (size_t k = 0; k < bytes; k++)
            h += b[k];
    }
    const int types[] = { ONNX_FLOAT, ONNX_UINT8, ONNX_INT8, ONNX_INT32, ONNX_INT64, ONNX_FLOAT16 };
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const void *d = NULL;
        pt_err e;
        int rc = onnx_tensor_data(m, t, types[k], &d, &e);
        FZ_ASSERT(rc == PT_OK ? d == t->data && types[k] == t->dtype
                              : rc == PT_EFORMAT && fz_names(e.msg, FILE_NAME),
                  "tensor_data '%s' as %s: %d %s", t->name, onnx_dtype_name(types[k]), rc,
                  rc ? e.msg : "");
    }
    return h;
}

static unsigned long long walk(const onnx_model *m)
{
    unsigned long long h = strlen(m->path) + strlen(m->producer_name) +
                           strlen(m->producer_version) + strlen(m->domain) + strlen(m->graph_name);
    for (size_t i = 0; i < m->n_opsets; i++)
        h += strlen(m->opsets[i].domain) + (unsigned long long)m->opsets[i].version;
    const onnx_value_info *lists[] = { m->inputs, m->outputs, m->value_info };
    size_t counts[] = { m->n_inputs, m->n_outputs, m->n_value_info };
    for (int l = 0; l < 3; l++)
        for (size_t i = 0; i < counts[l]; i++) {
            const onnx_value_info *v = &lists[l][i];
            h += strlen(v->name) + (unsigned)v->elem_type;
            for (int k = 0; k < v->rank; k++)
                h += (unsigned long long)v->dims[k] + strlen(v->dim_params[k]);
            h += onnx_find_value_info(m, v->name) != NULL;
        }
    for (size_t i = 0; i < m->n_initializers; i++) {
        const onnx_tensor *t = &m->initializers[i];
        h += walk_tensor(m, t);
        FZ_ASSERT(onnx_find_tensor(m, t->name) != NULL, "initializer '%s' not found", t->name);
    }
    for (size_t i = 0; i < m->n_nodes; i++) {
        const onnx_node *n = &m->nodes[i];
        FZ_ASSERT(n->index == (int)i && n->op_type[0], "node %zu: index %d, op '%s'", i, n->index,
                  n->op_type);
        h += strlen(n->name) + strlen(n->domain);
        for (size_t k = 0; k < n->n_inputs; k++) {
            h += (unsigned)onnx_consumers(m, n->inputs[k]);
            const onnx_tensor *t = onnx_find_tensor(m, n->inputs[k]);
            if (t)
                h += walk_tensor(m, t);
            h += onnx_producer(m, n->inputs[k]) != NULL;
        }
        for (size_t k = 0; k < n->n_outputs; k++)
            if (n->outputs[k][0])
                FZ_ASSERT(onnx_producer(m, n->outputs[k]) != NULL, "output '%s' of node %zu has "
                          "no producer", n->outputs[k], i);
        for (size_t k = 0; k < n->n_attrs; k++) {
            const onnx_attr *a = &n->attrs[k];
            FZ_ASSERT(onnx_attr_find(n, a->name) == a, "attribute '%s' of node %zu", a->name, i);
            pt_err e;
            for (int want = ONNX_ATTR_FLOAT; want <= ONNX_ATTR_TENSORS; want++) {
                int rc = onnx_attr_check(m, n, a->name, (onnx_attr_type)want, &e);
                FZ_ASSERT(rc == PT_OK ? want == a->type : rc == PT_EFORMAT &&
                                                              fz_names(e.msg, FILE_NAME),
                          "attr_check '%s': %d", a->name, rc);
            }
            size_t cnt;
            h += strlen(a->name) + (unsigned)a->type + a->n;
            h += (unsigned long long)onnx_attr_int(n, a->name, 0);
            h += onnx_attr_float(n, a->name, 0.0f) > 0;
            h += strlen(onnx_attr_string(n, a->name, ""));
            const int64_t *ints = onnx_attr_ints(n, a->name, &cnt);
            for (size_t j = 0; j < cnt; j++)
                h += (unsigned long long)ints[j];
            const float *fl = onnx_attr_floats(n, a->name, &cnt);
            for (size_t j = 0; j < cnt; j++)
                h += (unsigned long long)(fl[j] == fl[j]);
            const char *const *ss = onnx_attr_strings(n, a->name, &cnt);
            for (size_t j = 0; j < cnt; j++)
                h += strlen(ss[j]);
            const onnx_tensor *at = onnx_attr_tensor(n, a->name);
            if (at)
                h += walk_tensor(m, at);
            if (a->type == ONNX_ATTR_TENSORS)
                for (size_t j = 0; j < a->n; j++)
                    h += walk_tensor(m, &a->tensors[j]);
        }
    }
    return h;
}

/* The side the graph's image input names, when it is a small one; else 16. */
static void input_size(const onnx_model *m, int *h, int *w)
{
    *h = *w = 16;
    for (size_t i = 0; i < m->n_inputs; i++) {
        const onnx_value_info *v = &m->inputs[i];
        if (v->rank != 4 || onnx_find_tensor(m, v->name))
            continue;
        if (v->dims[2] >= 1 && v->dims[2] <= MAX_SIDE && v->dims[3] >= 1 && v->dims[3] <= MAX_SIDE) {
            *h = (int)v->dims[2];
            *w = (int)v->dims[3];
        }
        return;
    }
}

static void forward(nn_model *nm)
{
    if (nn_flops(nm, 1, 0) > FORWARD_MAX_FLOPS)
        return;
    pt_err e;
    nn_ctx *c = nn_ctx_new(nm, 1, &e);
    if (!c)
        return;
    int h, w, ch;
    nn_model_input_shape(nm, &h, &w, &ch);
    size_t n = (size_t)h * w * ch;
    float *x = malloc(n * sizeof *x);
    FZ_ASSERT(x, "out of memory");
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(i % 7) / 7.0f;
    const float *y = nn_forward(c, x, 1, 0, 1, 0);
    FZ_ASSERT(y != NULL, "a finalized model does not run");
    unsigned long long sum = 0;
    for (int k = 0; k < nn_model_classes(nm); k++)
        sum += y[k] > 0;
    fz_use(sum);
    free(x);
    nn_ctx_free(c);
}

static void import(const onnx_model *m)
{
    int h, w;
    input_size(m, &h, &w);
    nn_import_opts keep = { .h = h, .w = w, .n_classes = 0, .norm = NN_NORM_IMAGENET, .seed = 1 };
    nn_import_info info;
    pt_err e;
    nn_model *nm = nn_import_onnx(m, &keep, &info, &e);
    if (!nm) {
        FZ_ASSERT(e.code < 0 && e.msg[0], "import failed without a message");
    } else {
        forward(nm);
        nn_model_free(nm);
    }

    nn_import_opts head = { .h = h, .w = w, .n_classes = 3, .dropout = 0.2f,
                            .norm = NN_NORM_UNIT, .seed = 2 };
    nn_import_map *mp = NULL;
    nm = nn_import_onnx_map(m, &head, &info, &mp, &e);
    if (!nm) {
        FZ_ASSERT(mp == NULL && e.code < 0 && e.msg[0], "import failed without a message");
        return;
    }
    FZ_ASSERT(mp != NULL, "no map");
    for (size_t k = 0; k < nn_import_map_count(mp); k++) {
        const nn_import_param *p = nn_import_map_get(mp, k);
        float *out = malloc((size_t)(p->file_count > 0 ? p->file_count : 1) * sizeof *out);
        FZ_ASSERT(out, "out of memory");
        const float *lib = p->buffer ? nn_buffers(nm) : nn_params(nm);
        (void)nn_import_map_to_onnx(mp, k, lib, NN_MAP_VALUES, out, &e);
        if (!p->buffer)
            (void)nn_import_map_to_onnx(mp, k, lib, NN_MAP_GRADS, out, &e);
        free(out);
    }
    forward(nm);
    nn_import_map_free(mp);
    nn_model_free(nm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        nn_init();
        ready = 1;
    }
    onnx_model *m = (onnx_model *)1;
    pt_err e;
    int rc = onnx_load_mem(data, size, FILE_NAME, &m, &e);
    if (rc != PT_OK) {
        FZ_ASSERT(rc == e.code && m == NULL && fz_names(e.msg, FILE_NAME), "%d: %s", rc, e.msg);
        return 0;
    }
    fz_use(walk(m));
    import(m);
    onnx_free(m);
    return 0;
}
