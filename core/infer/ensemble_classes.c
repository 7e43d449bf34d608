/* ensemble_classes — the members' classes matched with the dataset's (enc_, the second
 * prefix of the ensemble module: see infer/ensemble.h and ensemble_impl.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "data/dataset.h"
#include "infer/ensemble_impl.h"

/* The names a list is shown with in a message: at most this many, then how many. */
#define ENC_SHOWN 8

typedef struct enc_list {
    char *const *v;
    int n;
} enc_list;

/* 1 when the names are the placeholders "class 0", "class 1", ...: no names at all. */
static int unnamed(enc_list l)
{
    for (int c = 0; c < l.n; c++) {
        char want[32];
        util_fmt(want, sizeof want, "class %d", c);
        if (strcmp(l.v[c], want) != 0)
            return 0;
    }
    return 1;
}

static int find(enc_list l, const char *name)
{
    for (int c = 0; c < l.n; c++)
        if (!strcmp(l.v[c], name))
            return c;
    return -1;
}

/* Appends "a, b, c, ... (N in all)" of the names of l not in other (all of them when
 * other is NULL) to buf; "none" when there are none. */
static void put_names(char *buf, size_t size, enc_list l, const enc_list *other)
{
    int shown = 0, all = 0;
    for (int c = 0; c < l.n; c++) {
        if (other && find(*other, l.v[c]) >= 0)
            continue;
        if (shown < ENC_SHOWN) {
            size_t at = strlen(buf);
            snprintf(buf + at, size - at, "%s%s", shown ? ", " : "", l.v[c]);
            shown++;
        }
        all++;
    }
    size_t at = strlen(buf);
    if (all == 0)
        snprintf(buf + at, size - at, "none");
    else if (all > shown)
        snprintf(buf + at, size - at, ", ... (%d in all)", all);
}

/* The refusal of member `who` (names have) against the reference (names ref, from
 * ref_who): both lists and what only each has, and what to do (PT_EUSAGE in e). */
static int refuse(const char *who, enc_list have, const char *ref_who, enc_list ref,
                  int ref_is_dataset, pt_err *e)
{
    char msg[6000] = "";
    size_t at;
    const char *ref_short = ref_is_dataset ? "the dataset" : ref_who;
    snprintf(msg, sizeof msg, "%s: its %d classes (", who, have.n);
    put_names(msg, sizeof msg, have, NULL);
    at = strlen(msg);
    snprintf(msg + at, sizeof msg - at, ") differ from the %d of %s (", ref.n, ref_who);
    put_names(msg, sizeof msg, ref, NULL);
    at = strlen(msg);
    snprintf(msg + at, sizeof msg - at, "); only in the member: ");
    put_names(msg, sizeof msg, have, &ref);
    at = strlen(msg);
    snprintf(msg + at, sizeof msg - at, "; only in %s: ", ref_short);
    put_names(msg, sizeof msg, ref, &have);
    at = strlen(msg);
    if (have.n == ref.n && strstr(msg, "only in the member: none;"))
        snprintf(msg + at, sizeof msg - at, " (a name is given twice)");
    at = strlen(msg);
    snprintf(msg + at, sizeof msg - at,
             ": an ensemble's members must share their class names%s; %s",
             ref_is_dataset ? " with the dataset" : "",
             ref_is_dataset ? "give --data the dataset the runs were trained on"
                            : "ensemble runs of the same classes");
    return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "%s", msg);
}

void enc_say(char **notes, const char *fmt, ...)
{
    char line[9000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t had = *notes ? strlen(*notes) : 0, add = strlen(line);
    char *s = realloc(*notes, had + add + 1);
    if (!s)
        return; /* a note lost to a full memory: the matching itself stands */
    memcpy(s + had, line, add + 1);
    *notes = s;
}

/* Member output c -> reference class map[c] by name, malloc'd; NULL with *ok = 0 when
 * the names are not the reference's (in any order, each once). */
static int *by_name(enc_list have, enc_list ref, int *ok)
{
    *ok = 0;
    if (have.n != ref.n)
        return NULL;
    int *map = malloc((size_t)have.n * sizeof *map);
    int *used = calloc((size_t)ref.n, sizeof *used);
    int good = map && used;
    for (int c = 0; good && c < have.n; c++) {
        int j = find(ref, have.v[c]);
        good = j >= 0 && !used[j];
        if (good) {
            used[j] = 1;
            map[c] = j;
        }
    }
    free(used);
    if (!good) {
        free(map);
        return NULL;
    }
    *ok = 1;
    return map;
}

/* A map of the identity: NULL. */
static int *drop_identity(int *map, int n)
{
    for (int c = 0; map && c < n; c++)
        if (map[c] != c)
            return map;
    free(map);
    return NULL;
}

int enc_match(rm_model *const *m, int n, const ds_dataset *ds, const char *data, int **maps,
              char **notes, pt_err *e)
{
    int named = ds->names_source == DS_NAMES_FILE && ds->n_classes > 0;
    enc_list ref = { named ? ds->class_names : NULL, named ? ds->n_classes : 0 };
    int ref_is_dataset = ref.n > 0;
    char ref_who[4200];
    util_fmt(ref_who, sizeof ref_who, "the dataset %s", data);
    for (int i = 0; i < n; i++)
        maps[i] = NULL;
    for (int i = 0; !ref_is_dataset && i < n; i++) {
        enc_list l = { inf_model_class_names(m[i]), inf_model_classes(m[i]) };
        if (unnamed(l))
            continue;
        ref = l;
        util_copy(ref_who, sizeof ref_who, inf_model_source(m[i]));
        enc_say(notes, "the dataset %s names no classes (no classes.txt beside its split "
                       "folders): its labels are taken as %s's classes in their order\n",
                data, ref_who);
        break;
    }
    for (int i = 0; i < n; i++) {
        enc_list l = { inf_model_class_names(m[i]), inf_model_classes(m[i]) };
        const char *who = inf_model_source(m[i]);
        if (ref.n == 0) /* nothing names its classes: by position (labels checked later) */
            ref = (enc_list){ NULL, l.n };
        if (ref.v && unnamed(l) && l.n == ref.n && !unnamed(ref)) {
            enc_say(notes, "%s names no classes: its %d outputs are taken as %s's classes in "
                           "their order\n", who, l.n, ref_who);
            continue;
        }
        if (!ref.v || unnamed(ref)) {
            if (l.n == ref.n)
                continue;
            enc_free(maps, n);
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "%s: has %d classes, %s %d: an ensemble's members must share "
                           "their class names%s", who, l.n,
                           ref.v ? ref_who : inf_model_source(m[0]), ref.n,
                           ref_is_dataset ? "; give --data the dataset the runs were trained on"
                                          : "");
        }
        int ok;
        maps[i] = drop_identity(by_name(l, ref, &ok), l.n);
        if (!ok) {
            enc_free(maps, n);
            return refuse(who, l, ref_who, ref, ref_is_dataset, e);
        }
        if (maps[i])
            enc_say(notes, "%s: its classes are %s's in another order: its probabilities are "
                           "matched by class name\n", who, ref_who);
    }
    return PT_OK;
}

void enc_free(int **maps, int n)
{
    for (int i = 0; i < n; i++) {
        free(maps[i]);
        maps[i] = NULL;
    }
}

int enc_apply(const int *map, prd_results *r)
{
    if (!map)
        return 0;
    double *row = malloc((size_t)(r->k ? r->k : 1) * sizeof *row);
    if (!row)
        return -1;
    for (long long i = 0; i < r->n; i++) {
        double *p = r->probs + (size_t)i * r->k;
        for (int c = 0; c < r->k; c++)
            row[map[c]] = p[c];
        memcpy(p, row, (size_t)r->k * sizeof *row);
    }
    free(row);
    return 0;
}
