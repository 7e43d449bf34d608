#include "io/example.h"

#include <stdlib.h>
#include <string.h>

#include "example.pb-c.h"

struct ex_example {
    Pt__Example *msg;
    size_t n;
    Pt__Features__FeatureEntry **entries;
};

int ex_parse(const uint8_t *buf, size_t len, ex_example **out, const char *file,
             long long record, long long offset, pt_err *e)
{
    *out = NULL;
    ex_example *ex = calloc(1, sizeof *ex);
    if (!ex)
        return err_set(e, PT_ENOMEM, file, record, offset, "out of memory");
    ex->msg = pt__example__unpack(NULL, len, buf);
    if (!ex->msg) {
        free(ex);
        return err_set(e, PT_EPARSE, file, record, offset,
                       "payload of %zu bytes is not a tf.train.Example", len);
    }
    if (ex->msg->features) {
        ex->n = ex->msg->features->n_feature;
        ex->entries = ex->msg->features->feature;
    }
    for (size_t i = 0; i < ex->n; i++) {
        if (!ex->entries[i]->key) {
            ex_free(ex);
            return err_set(e, PT_EPARSE, file, record, offset, "feature %zu has no key", i);
        }
    }
    *out = ex;
    return PT_OK;
}

void ex_free(ex_example *ex)
{
    if (!ex)
        return;
    if (ex->msg)
        pt__example__free_unpacked(ex->msg, NULL);
    free(ex);
}

size_t ex_count(const ex_example *ex) { return ex->n; }

const char *ex_key(const ex_example *ex, size_t i) { return ex->entries[i]->key; }

ex_kind ex_kind_at(const ex_example *ex, size_t i)
{
    const Pt__Feature *f = ex->entries[i]->value;
    if (!f)
        return EX_NONE;
    switch (f->kind_case) {
    case PT__FEATURE__KIND_BYTES_LIST: return f->bytes_list ? EX_BYTES : EX_NONE;
    case PT__FEATURE__KIND_FLOAT_LIST: return f->float_list ? EX_FLOAT : EX_NONE;
    case PT__FEATURE__KIND_INT64_LIST: return f->int64_list ? EX_INT64 : EX_NONE;
    default: return EX_NONE;
    }
}

size_t ex_len_at(const ex_example *ex, size_t i)
{
    const Pt__Feature *f = ex->entries[i]->value;
    switch (ex_kind_at(ex, i)) {
    case EX_BYTES: return f->bytes_list->n_value;
    case EX_FLOAT: return f->float_list->n_value;
    case EX_INT64: return f->int64_list->n_value;
    default: return 0;
    }
}

long ex_find(const ex_example *ex, const char *key)
{
    /* A map: when a key repeats on the wire, the last one wins. */
    for (size_t i = ex->n; i-- > 0;)
        if (strcmp(ex->entries[i]->key, key) == 0)
            return (long)i;
    return -1;
}

void ex_bytes_at(const ex_example *ex, size_t i, size_t j, const uint8_t **data, size_t *len)
{
    const ProtobufCBinaryData *b = &ex->entries[i]->value->bytes_list->value[j];
    *data = b->data;
    *len = b->len;
}

float ex_float_at(const ex_example *ex, size_t i, size_t j)
{
    return ex->entries[i]->value->float_list->value[j];
}

int64_t ex_int64_at(const ex_example *ex, size_t i, size_t j)
{
    return ex->entries[i]->value->int64_list->value[j];
}

const char *ex_kind_name(ex_kind k)
{
    switch (k) {
    case EX_BYTES: return "bytes";
    case EX_FLOAT: return "float";
    case EX_INT64: return "int64";
    default: return "empty";
    }
}

static int lookup(const ex_example *ex, const char *key, ex_kind want, long *idx, pt_err *e)
{
    long i = ex_find(ex, key);
    if (i < 0)
        return err_set(e, PT_EFEATURE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "feature '%s' is missing", key);
    ex_kind k = ex_kind_at(ex, (size_t)i);
    if (k != want)
        return err_set(e, PT_EFEATURE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "feature '%s' is %s, expected %s", key, ex_kind_name(k),
                       ex_kind_name(want));
    if (ex_len_at(ex, (size_t)i) == 0)
        return err_set(e, PT_EFEATURE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "feature '%s' has no values", key);
    *idx = i;
    return PT_OK;
}

int ex_get_bytes(const ex_example *ex, const char *key, const uint8_t **data, size_t *len,
                 pt_err *e)
{
    long i;
    int rc = lookup(ex, key, EX_BYTES, &i, e);
    if (rc == PT_OK)
        ex_bytes_at(ex, (size_t)i, 0, data, len);
    return rc;
}

int ex_get_int64(const ex_example *ex, const char *key, int64_t *v, pt_err *e)
{
    long i;
    int rc = lookup(ex, key, EX_INT64, &i, e);
    if (rc == PT_OK)
        *v = ex_int64_at(ex, (size_t)i, 0);
    return rc;
}

int ex_get_float(const ex_example *ex, const char *key, float *v, pt_err *e)
{
    long i;
    int rc = lookup(ex, key, EX_FLOAT, &i, e);
    if (rc == PT_OK)
        *v = ex_float_at(ex, (size_t)i, 0);
    return rc;
}

/* ------------------------------------------------------------------------------ */

typedef struct bfeat {
    char *key;
    ex_kind kind;
    size_t n;
    ProtobufCBinaryData *bytes;
    int64_t *i64;
    float *f32;
} bfeat;

struct ex_builder {
    bfeat *feats;
    size_t n, cap;
};

ex_builder *ex_builder_new(void)
{
    return calloc(1, sizeof(ex_builder));
}

void ex_builder_free(ex_builder *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++) {
        bfeat *f = &b->feats[i];
        free(f->key);
        if (f->bytes)
            for (size_t j = 0; j < f->n; j++)
                free(f->bytes[j].data);
        free(f->bytes);
        free(f->i64);
        free(f->f32);
    }
    free(b->feats);
    free(b);
}

static bfeat *add_feat(ex_builder *b, const char *key, ex_kind kind, size_t n)
{
    if (b->n == b->cap) {
        size_t ncap = b->cap ? b->cap * 2 : 4;
        bfeat *nf = realloc(b->feats, ncap * sizeof *nf);
        if (!nf)
            return NULL;
        b->feats = nf;
        b->cap = ncap;
    }
    bfeat *f = &b->feats[b->n];
    memset(f, 0, sizeof *f);
    f->key = strdup(key);
    if (!f->key)
        return NULL;
    f->kind = kind;
    f->n = n;
    b->n++;
    return f;
}

int ex_add_bytes_list(ex_builder *b, const char *key, const void *const *data,
                      const size_t *lens, size_t n)
{
    bfeat *f = add_feat(b, key, EX_BYTES, n);
    if (!f)
        return PT_ENOMEM;
    f->bytes = calloc(n ? n : 1, sizeof *f->bytes);
    if (!f->bytes)
        return PT_ENOMEM;
    for (size_t j = 0; j < n; j++) {
        f->bytes[j].data = malloc(lens[j] ? lens[j] : 1);
        if (!f->bytes[j].data)
            return PT_ENOMEM;
        if (lens[j])
            memcpy(f->bytes[j].data, data[j], lens[j]);
        f->bytes[j].len = lens[j];
    }
    return PT_OK;
}

int ex_add_bytes(ex_builder *b, const char *key, const void *data, size_t len)
{
    return ex_add_bytes_list(b, key, &data, &len, 1);
}

int ex_add_int64(ex_builder *b, const char *key, const int64_t *v, size_t n)
{
    bfeat *f = add_feat(b, key, EX_INT64, n);
    if (!f || !(f->i64 = malloc((n ? n : 1) * sizeof *v)))
        return PT_ENOMEM;
    if (n)
        memcpy(f->i64, v, n * sizeof *v);
    return PT_OK;
}

int ex_add_float(ex_builder *b, const char *key, const float *v, size_t n)
{
    bfeat *f = add_feat(b, key, EX_FLOAT, n);
    if (!f || !(f->f32 = malloc((n ? n : 1) * sizeof *v)))
        return PT_ENOMEM;
    if (n)
        memcpy(f->f32, v, n * sizeof *v);
    return PT_OK;
}

int ex_serialize(const ex_builder *b, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    size_t n = b->n;
    Pt__Features__FeatureEntry *entries = calloc(n ? n : 1, sizeof *entries);
    Pt__Features__FeatureEntry **eptr = calloc(n ? n : 1, sizeof *eptr);
    Pt__Feature *feats = calloc(n ? n : 1, sizeof *feats);
    Pt__BytesList *bl = calloc(n ? n : 1, sizeof *bl);
    Pt__FloatList *fl = calloc(n ? n : 1, sizeof *fl);
    Pt__Int64List *il = calloc(n ? n : 1, sizeof *il);
    int rc = PT_ENOMEM;
    if (!entries || !eptr || !feats || !bl || !fl || !il)
        goto done;
    for (size_t i = 0; i < n; i++) {
        const bfeat *f = &b->feats[i];
        pt__features__feature_entry__init(&entries[i]);
        pt__feature__init(&feats[i]);
        entries[i].key = f->key;
        entries[i].value = &feats[i];
        eptr[i] = &entries[i];
        switch (f->kind) {
        case EX_BYTES:
            pt__bytes_list__init(&bl[i]);
            bl[i].n_value = f->n;
            bl[i].value = f->bytes;
            feats[i].kind_case = PT__FEATURE__KIND_BYTES_LIST;
            feats[i].bytes_list = &bl[i];
            break;
        case EX_FLOAT:
            pt__float_list__init(&fl[i]);
            fl[i].n_value = f->n;
            fl[i].value = f->f32;
            feats[i].kind_case = PT__FEATURE__KIND_FLOAT_LIST;
            feats[i].float_list = &fl[i];
            break;
        case EX_INT64:
            pt__int64_list__init(&il[i]);
            il[i].n_value = f->n;
            il[i].value = f->i64;
            feats[i].kind_case = PT__FEATURE__KIND_INT64_LIST;
            feats[i].int64_list = &il[i];
            break;
        default:
            break;
        }
    }
    Pt__Features features = PT__FEATURES__INIT;
    features.n_feature = n;
    features.feature = eptr;
    Pt__Example msg = PT__EXAMPLE__INIT;
    msg.features = &features;
    size_t sz = pt__example__get_packed_size(&msg);
    uint8_t *buf = malloc(sz ? sz : 1);
    if (!buf)
        goto done;
    *len = pt__example__pack(&msg, buf);
    *out = buf;
    rc = PT_OK;
done:
    free(entries);
    free(eptr);
    free(feats);
    free(bl);
    free(fl);
    free(il);
    return rc;
}
