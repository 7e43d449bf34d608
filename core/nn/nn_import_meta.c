/* nn_import_meta — nn_onnx_meta_read(): the metadata_props a petal-tui export writes
 * (nn_export.h), read from any ONNX model; class_names is a JSON array of strings,
 * parsed here (escapes and \u surrogate pairs to UTF-8), nothing else of JSON.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_import.h"

static int meta_fail(const onnx_model *om, pt_err *e, const char *prop, const char *why)
{
    return err_set(e, PT_EFORMAT, om->path, PT_NO_RECORD, PT_NO_OFFSET,
                   "metadata_props '%s': %s", prop, why);
}

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static int hex4(const char *p, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return 0;
        *v = *v * 16 + (unsigned)d;
    }
    return 1;
}

static char *put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xC0 | (cp >> 6));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xE0 | (cp >> 12));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (char)(0xF0 | (cp >> 18));
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    }
    return o;
}

/* One JSON string at *pp (at its opening quote) into a malloc'd C string; *pp moves
 * past it. NULL on bad JSON (or out of memory: *oom set). The decoded text is never
 * longer than the escaped one, so one buffer of that size holds it. */
static char *json_string(const char **pp, int *oom)
{
    const char *p = *pp + 1;
    const char *end = p;
    while (*end && *end != '"')
        end += end[0] == '\\' && end[1] ? 2 : 1;
    if (*end != '"')
        return NULL;
    char *s = malloc((size_t)(end - p) + 1), *o = s;
    if (!s) {
        *oom = 1;
        return NULL;
    }
    int bad = 0;
    while (p < end && !bad) {
        if ((unsigned char)*p < 0x20) {
            bad = 1; /* control characters must be escaped */
            break;
        }
        if (*p != '\\') {
            *o++ = *p++;
            continue;
        }
        char c = p[1];
        const char *map = strchr("\"\"\\\\//b\bf\fn\nr\rt\t", c);
        if (c && map && (map - "\"\"\\\\//b\bf\fn\nr\rt\t") % 2 == 0) {
            *o++ = map[1];
            p += 2;
            continue;
        }
        unsigned cp, lo;
        if (c != 'u' || !hex4(p + 2, &cp)) {
            bad = 1;
            break;
        }
        p += 6;
        if (cp >= 0xD800 && cp < 0xDC00) {
            if (p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, &lo) || lo < 0xDC00 || lo >= 0xE000)
                bad = 1;
            else
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
        } else if (cp >= 0xDC00 && cp < 0xE000) {
            bad = 1;
        }
        bad |= cp == 0; /* would cut the C string */
        if (!bad)
            o = put_utf8(o, cp);
    }
    if (bad) {
        free(s);
        return NULL;
    }
    *o = '\0';
    *pp = end + 1;
    return s;
}

static int class_names(const onnx_model *om, const char *txt, nn_onnx_meta *out, pt_err *e)
{
    const char *p = skip_ws(txt);
    if (*p != '[')
        return meta_fail(om, e, "class_names", "not a JSON array of strings");
    p = skip_ws(p + 1);
    size_t cap = 0;
    int oom = 0;
    while (*p != ']') {
        if (out->n_classes > 0) {
            if (*p != ',')
                return meta_fail(om, e, "class_names", "bad JSON: ',' or ']' expected");
            p = skip_ws(p + 1);
        }
        if (*p != '"')
            return meta_fail(om, e, "class_names", "bad JSON: a string expected");
        if ((size_t)out->n_classes == cap) {
            size_t nc = cap ? 2 * cap : 16;
            char **q = realloc(out->class_names, nc * sizeof *q);
            if (!q)
                return err_set(e, PT_ENOMEM, om->path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
            out->class_names = q;
            cap = nc;
        }
        char *s = json_string(&p, &oom);
        if (!s && oom)
            return err_set(e, PT_ENOMEM, om->path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
        if (!s)
            return meta_fail(om, e, "class_names", "bad JSON: a damaged string");
        out->class_names[out->n_classes++] = s;
        p = skip_ws(p);
    }
    if (*skip_ws(p + 1))
        return meta_fail(om, e, "class_names", "bad JSON: text after the array");
    return PT_OK;
}

static int whole(const onnx_model *om, const char *prop, int lo, int *out, pt_err *e)
{
    const char *s = onnx_prop(om, prop);
    if (!s)
        return PT_OK;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > 1000000000L)
        return meta_fail(om, e, prop, "not a whole number in range");
    *out = (int)v;
    return PT_OK;
}

int nn_onnx_meta_read(const onnx_model *om, nn_onnx_meta *out, pt_err *e)
{
    memset(out, 0, sizeof *out);
    out->epoch = out->update = -1;
    out->petal = onnx_prop(om, "petal_tui_version") != NULL;
    out->ensemble = out->petal && onnx_prop(om, "ensemble") != NULL;
    const char *run = onnx_prop(om, "source_run"), *cn = onnx_prop(om, "class_names");
    int rc = PT_OK;
    if (!(out->source_run = strdup(run ? run : "")))
        rc = err_set(e, PT_ENOMEM, om->path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    if (!rc)
        rc = whole(om, "image_size", 0, &out->image_size, e);
    if (!rc)
        rc = whole(om, "epoch", -1, &out->epoch, e);
    if (!rc)
        rc = whole(om, "update", -1, &out->update, e);
    if (!rc && cn)
        rc = class_names(om, cn, out, e);
    if (rc) {
        nn_onnx_meta_free(out);
        out->epoch = out->update = -1;
    }
    return rc;
}

void nn_onnx_meta_free(nn_onnx_meta *m)
{
    for (int i = 0; i < m->n_classes; i++)
        free(m->class_names[i]);
    free(m->class_names);
    free(m->source_run);
    m->class_names = NULL;
    m->source_run = NULL;
    m->n_classes = 0;
}
