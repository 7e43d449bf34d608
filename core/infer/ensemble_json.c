/* ensemble_json — an ensemble folder's ensemble.json written and read back (see
 * infer/ensemble.h for its form). The reader knows only what ens_write_json writes
 * (keys found by name, strings with JSON's escapes); anything else is refused naming
 * the file and the byte where it stopped. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/util.h"
#include "infer/ensemble_impl.h"
#include "run/runfolder.h"

int ens_write_json(const ens *x, const char *data, const char *dir, pt_err *e)
{
    run_handle h;
    char path[4200];
    int rc = run_open(&h, dir, 1, e);
    if (rc != PT_OK)
        return rc;
    if (run_path(&h, RUN_F_ENSEMBLE, path, sizeof path) != 0)
        return err_set(e, PT_EUSAGE, dir, PT_NO_RECORD, PT_NO_OFFSET, "path too long");
    json_w j;
    json_init(&j, 1);
    json_obj(&j);
    json_key(&j, "data");
    json_str(&j, data);
    json_key(&j, "members");
    json_arr(&j);
    for (int i = 0; i < x->n; i++) {
        char real[PATH_MAX];
        json_obj(&j);
        json_key(&j, "path");
        json_str(&j, realpath(x->path[i], real) ? real : x->path[i]);
        json_key(&j, "weight");
        json_num(&j, x->w[i]);
        json_key(&j, "tta");
        json_str(&j, ens_tta_name(x->tta[i]));
        json_obj_end(&j);
    }
    json_arr_end(&j);
    json_key(&j, "weights");
    json_str(&j, ens_how_name(x->how));
    json_obj_end(&j);
    size_t len;
    char *text = json_take(&j, &len);
    json_free(&j);
    if (!text)
        return err_set(e, PT_ENOMEM, path, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    rc = util_write_file_atomic(path, text, len, e);
    free(text);
    return rc;
}

/* ---- reading ---- */

typedef struct ej_text {
    const char *file;
    const char *s, *end;
} ej_text;

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

static int bad(const ej_text *t, const char *at, const char *what, pt_err *e)
{
    return err_set(e, PT_EFORMAT, t->file, PT_NO_RECORD, (long long)(at - t->s),
                   "not an ensemble.json as `petal-tui ensemble --out` writes it: %s", what);
}

/* A JSON string at p (its opening quote) into out; *next after its closing quote. */
static int read_str(const ej_text *t, const char *p, char *out, size_t n, const char **next,
                    pt_err *e)
{
    if (p >= t->end || *p != '"')
        return bad(t, p, "a string expected", e);
    size_t k = 0;
    for (p++; p < t->end && *p != '"'; p++) {
        char c = *p;
        if (c == '\\') {
            if (++p >= t->end)
                break;
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *f = strchr(from, *p);
            if (*p == 'u' && t->end - p > 4) {
                unsigned v = 0;
                if (sscanf(p + 1, "%4x", &v) != 1 || v > 0x7f)
                    return bad(t, p, "a \\u escape beyond ASCII", e);
                c = (char)v;
                p += 4;
            } else if (f && *f) {
                c = to[f - from];
            } else {
                return bad(t, p, "an unknown escape", e);
            }
        }
        if (k + 1 >= n)
            return bad(t, p, "a string too long", e);
        out[k++] = c;
    }
    if (p >= t->end)
        return bad(t, p, "a string without its end", e);
    out[k] = '\0';
    *next = p + 1;
    return PT_OK;
}

/* The end of the object or array opening at p (the byte after its closing bracket),
 * strings skipped; NULL when it does not end. */
static const char *close_of(const char *p, const char *end)
{
    int depth = 0;
    for (; p < end; p++) {
        if (*p == '"') {
            for (p++; p < end && *p != '"'; p++)
                p += *p == '\\';
            continue;
        }
        depth += (*p == '{' || *p == '[') - (*p == '}' || *p == ']');
        if (depth == 0)
            return p + 1;
    }
    return NULL;
}

/* The value of "key" in [from, end) (the byte after its colon), or NULL. */
static const char *find_key(const char *from, const char *end, const char *key)
{
    char want[64];
    util_fmt(want, sizeof want, "\"%s\"", key);
    size_t n = strlen(want);
    for (const char *p = from; p + n <= end; p++)
        if (!memcmp(p, want, n)) {
            const char *q = skip_ws(p + n, end);
            if (q < end && *q == ':')
                return skip_ws(q + 1, end);
        }
    return NULL;
}

typedef struct ej_member {
    char path[4096];
    double weight;
    int tta;
} ej_member;

/* One member's object [p, end). A relative path is taken from the folder dir. */
static int read_member(const ej_text *t, const char *p, const char *end, const char *dir,
                       ej_member *m, pt_err *e)
{
    const char *v = find_key(p, end, "path"), *next;
    char s[4096];
    int rc = v ? read_str(t, v, s, sizeof s, &next, e) : bad(t, p, "a member without \"path\"", e);
    if (rc != PT_OK)
        return rc;
    if (s[0] == '/')
        util_copy(m->path, sizeof m->path, s);
    else
        util_path(m->path, sizeof m->path, "%s/%s", dir, s);
    v = find_key(p, end, "weight");
    char *num_end;
    m->weight = v ? strtod(v, &num_end) : 0;
    if (!v || num_end == v || !(m->weight > 0))
        return bad(t, v ? v : p, "a member without a positive \"weight\"", e);
    v = find_key(p, end, "tta");
    if (!v)
        return bad(t, p, "a member without \"tta\"", e);
    if ((rc = read_str(t, v, s, sizeof s, &next, e)) != PT_OK)
        return rc;
    if ((m->tta = ens_tta_parse(s)) < 0)
        return bad(t, v, "a \"tta\" that is none of none, flip, crops and flip+crops", e);
    return PT_OK;
}

/* The members of ensemble.json's text t; *n of them into m (room for ENS_MAX). */
static int read_members(const ej_text *t, const char *dir, ej_member *m, int *n, ens_how *how,
                        pt_err *e)
{
    *n = 0;
    const char *p = find_key(t->s, t->end, "members"), *next;
    if (!p || *p != '[')
        return bad(t, t->s, "no \"members\" array", e);
    const char *arr_end = close_of(p, t->end);
    if (!arr_end)
        return bad(t, p, "\"members\" does not end", e);
    for (p = skip_ws(p + 1, arr_end); p < arr_end && *p != ']';) {
        const char *obj_end = *p == '{' ? close_of(p, arr_end) : NULL;
        if (!obj_end)
            return bad(t, p, "a member that is no object", e);
        if (*n == ENS_MAX)
            return bad(t, p, "more members than an ensemble may have", e);
        int rc = read_member(t, p, obj_end, dir, &m[*n], e);
        if (rc != PT_OK)
            return rc;
        (*n)++;
        p = skip_ws(obj_end, arr_end);
        if (p < arr_end && *p == ',')
            p = skip_ws(p + 1, arr_end);
    }
    if (*n == 0)
        return bad(t, t->s, "no members", e);
    *how = ENS_W_GIVEN;
    char s[16];
    p = find_key(t->s, t->end, "weights");
    for (int h = ENS_W_EQUAL; p && read_str(t, p, s, sizeof s, &next, NULL) == PT_OK &&
                              h <= ENS_W_CV; h++)
        if (!strcmp(s, ens_how_name((ens_how)h)))
            *how = (ens_how)h;
    return PT_OK;
}

/* An ensemble folder: its ensemble.json (at path json) read and its members opened. */
static int open_folder(const char *dir, const char *json, ens **out, pt_err *e)
{
    uint8_t *data;
    size_t len;
    int rc = util_read_file(json, &data, &len, e);
    if (rc != PT_OK)
        return rc;
    ej_text t = { json, (const char *)data, (const char *)data + len };
    ej_member *m = malloc(ENS_MAX * sizeof *m);
    int n = 0;
    ens_how how = ENS_W_GIVEN;
    rc = m ? read_members(&t, dir, m, &n, &how, e)
           : err_set(e, PT_ENOMEM, json, PT_NO_RECORD, PT_NO_OFFSET, "out of memory");
    free(data);
    const char *paths[ENS_MAX];
    double w[ENS_MAX];
    int tta[ENS_MAX];
    for (int i = 0; rc == PT_OK && i < n; i++) {
        paths[i] = m[i].path;
        w[i] = m[i].weight;
        tta[i] = m[i].tta;
    }
    if (rc == PT_OK)
        rc = ens_open(paths, n, w, tta, out, e);
    if (rc == PT_OK) {
        (*out)->how = how;
        util_copy((*out)->name, sizeof (*out)->name, dir);
    }
    free(m);
    return rc;
}

int ens_open_path(const char *path, ens **out, pt_err *e)
{
    *out = NULL;
    run_handle h;
    if (util_is_dir(path)) {
        int rc = run_open(&h, path, 0, e);
        if (rc != PT_OK)
            return rc;
        char json[4200];
        if (run_has(&h, RUN_F_ENSEMBLE) && !run_has(&h, RUN_F_CHECKPOINT) &&
            run_path(&h, RUN_F_ENSEMBLE, json, sizeof json) == 0)
            return open_folder(path, json, out, e);
        if (!run_has(&h, RUN_F_CHECKPOINT) && !run_has(&h, RUN_F_BEST) &&
            !run_has(&h, RUN_F_CONFIG))
            return err_set(e, PT_EUSAGE, path, PT_NO_RECORD, PT_NO_OFFSET,
                           "neither a run folder (no %s), an ensemble folder (no %s) nor an "
                           ".onnx file: name a run, an ensemble's --out or a model file",
                           run_file_name(RUN_F_CHECKPOINT), run_file_name(RUN_F_ENSEMBLE));
    }
    return ens_open(&path, 1, NULL, NULL, out, e);
}
