/* aug_spec — the op table and spec strings: each op's kind and parameters (key,
 * default, range, choices), parsing a spec into a chain (aug_parse, aug_free), its
 * canonical form (aug_format), the --help lines (aug_help), aug_names, aug_count and
 * the default chain. Nothing here touches pixels.
 */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "data/aug_impl.h"

/* ===================================================================================
 * The op table
 * =================================================================================== */

static const char *const interp_names[] = {"nearest", "bilinear", NULL};
static const char *const axis_names[] = {"h", "v", "hv", NULL};
static const char *const bool_names[] = {"0", "1", NULL};

/* Order of params is the order of the canonical form. */
const aug_op_def aug_ops[AUG_OP_COUNT] = {
    [AUG_OP_FLIP] = {"flip", AUG_K_GEOM, 1, {{"axis", 0, 0, 2, axis_names, 1}}},
    [AUG_OP_PERSPECTIVE] = {"perspective", AUG_K_GEOM, 4,
                            {{"jitter", 0.25, 0, 0.5, NULL, 0},
                             {"rot90", 1, 0, 1, bool_names, 1},
                             {"reflect", 1, 0, 1, bool_names, 1},
                             {"interp", AUG_NEAREST, 0, 1, interp_names, 1}}},
    [AUG_OP_AFFINE] = {"affine", AUG_K_GEOM, 5,
                       {{"rot", 15, 0, 180, NULL, 0},
                        {"shear", 5, 0, 45, NULL, 0},
                        {"zoom", 0.1, 0, 0.9, NULL, 0},
                        {"shift", 0.1, 0, 0.5, NULL, 0},
                        {"interp", AUG_NEAREST, 0, 1, interp_names, 1}}},
    [AUG_OP_CROP] = {"crop", AUG_K_GEOM, 3,
                     {{"scale", 0.5, 0.05, 1, NULL, 0},
                      {"ratio", 0.75, 0.2, 1, NULL, 0},
                      {"interp", AUG_NEAREST, 0, 1, interp_names, 1}}},
    [AUG_OP_COLOR] = {"color", AUG_K_COLOR, 4,
                      {{"brightness", 0.2, 0, 1, NULL, 0},
                       {"contrast", 0.2, 0, 0.9, NULL, 0},
                       {"saturation", 0.2, 0, 0.9, NULL, 0},
                       {"hue", 10, 0, 180, NULL, 0}}},
    [AUG_OP_BRIGHTNESS] = {"brightness", AUG_K_COLOR, 1, {{"delta", 0.2, 0, 1, NULL, 0}}},
    [AUG_OP_CONTRAST] = {"contrast", AUG_K_COLOR, 1, {{"delta", 0.2, 0, 0.9, NULL, 0}}},
    [AUG_OP_SATURATION] = {"saturation", AUG_K_COLOR, 1, {{"delta", 0.2, 0, 0.9, NULL, 0}}},
    [AUG_OP_HUE] = {"hue", AUG_K_COLOR, 1, {{"deg", 10, 0, 180, NULL, 0}}},
    [AUG_OP_CUTOUT] = {"cutout", AUG_K_PIXEL, 2,
                       {{"size", 0.25, 0.01, 1, NULL, 0}, {"count", 1, 1, 16, NULL, 1}}},
    [AUG_OP_GRIDMASK] = {"gridmask", AUG_K_PIXEL, 4,
                         {{"dmin", 0.2, 0.02, 1, NULL, 0},
                          {"dmax", 0.3, 0.02, 1, NULL, 0},
                          {"ratio", 0.5, 0.05, 0.95, NULL, 0},
                          {"rot", 45, 0, 180, NULL, 0}}},
    [AUG_OP_MIXUP] = {"mixup", AUG_K_MIX, 1, {{"alpha", 1, 0.05, 10, NULL, 0}}},
    [AUG_OP_CUTMIX] = {"cutmix", AUG_K_MIX, 1, {{"alpha", 1, 0.05, 10, NULL, 0}}},
};

const char *aug_default_spec(void)
{
    return cfg_find("augment")->def;
}

int aug_check_spec(const char *spec, pt_err *e)
{
    aug_chain *ch;
    int rc = aug_parse(spec, &ch, e);
    if (rc == PT_OK)
        aug_free(ch);
    return rc;
}

/* The options' table cannot take this module's header (it is a floor below data/):
 * the check is handed to it before main runs, wherever this file is linked in. */
__attribute__((constructor)) static void register_check(void)
{
    cfg_set_check(CFG_AUGMENT, aug_check_spec);
}

int aug_count(const aug_chain *c)
{
    return c ? c->n : 0;
}

size_t aug_names(const char **names, size_t max)
{
    for (size_t i = 0; i < AUG_OP_COUNT && i < max; i++)
        names[i] = aug_ops[i].name;
    return AUG_OP_COUNT;
}

static int find_op(const char *s, size_t len)
{
    for (int i = 0; i < AUG_OP_COUNT; i++)
        if (strlen(aug_ops[i].name) == len && memcmp(aug_ops[i].name, s, len) == 0)
            return i;
    return -1;
}

/* Shortest %g that reads back as the same double, so canonical specs stay readable
 * ("0.35", not "0.34999999999999998") and still round-trip exactly. */
static void fmt_num(char *buf, size_t n, double v)
{
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

static void fmt_param(char *buf, size_t n, const aug_param_def *pd, double v)
{
    if (pd->choices)
        snprintf(buf, n, "%s", pd->choices[(int)v]);
    else
        fmt_num(buf, n, v);
}

static char help_lines[AUG_OP_COUNT][320];
static pthread_once_t help_once = PTHREAD_ONCE_INIT;

static void build_help(void)
{
    for (int i = 0; i < AUG_OP_COUNT; i++) {
        char *s = help_lines[i];
        size_t cap = sizeof help_lines[i], len = 0;
        len += (size_t)snprintf(s + len, cap - len, "%s:PROB", aug_ops[i].name);
        for (int k = 0; k < aug_ops[i].nparams && len < cap; k++) {
            const aug_param_def *pd = &aug_ops[i].params[k];
            char def[32], lo[32], hi[32];
            fmt_param(def, sizeof def, pd, pd->def);
            if (pd->choices) {
                len += (size_t)snprintf(s + len, cap - len, ":%s=%s (", pd->key, def);
                for (int c = 0; pd->choices[c] && len < cap; c++)
                    len += (size_t)snprintf(s + len, cap - len, "%s%s", c ? "|" : "",
                                            pd->choices[c]);
                if (len < cap)
                    len += (size_t)snprintf(s + len, cap - len, ")");
            } else {
                fmt_num(lo, sizeof lo, pd->lo);
                fmt_num(hi, sizeof hi, pd->hi);
                len += (size_t)snprintf(s + len, cap - len, ":%s=%s [%s,%s]", pd->key, def, lo,
                                        hi);
            }
        }
    }
}

const char *aug_help(const char *name)
{
    if (!name)
        return NULL;
    int id = find_op(name, strlen(name));
    if (id < 0)
        return NULL;
    pthread_once(&help_once, build_help);
    return help_lines[id];
}

/* ===================================================================================
 * Parsing and formatting
 * =================================================================================== */

static void trim(const char **s, size_t *len)
{
    while (*len > 0 && isspace((unsigned char)**s)) {
        (*s)++;
        (*len)--;
    }
    while (*len > 0 && isspace((unsigned char)(*s)[*len - 1]))
        (*len)--;
}

/* A finite number filling the whole token. */
static int parse_num(const char *s, size_t len, double *out)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = 0;
    char *end = NULL;
    double v = strtod(buf, &end);
    if (end != buf + len || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

#define MAX_FIELDS (2 + AUG_MAX_PARAMS * 2)

/* An item's ':'-separated fields, trimmed, into tok and tlen (split by hand: the item
 * is not NUL-terminated). Their count, or -1 with e filled when there are too many. */
static int split_fields(const char *item, size_t ilen, const char *tok[MAX_FIELDS],
                        size_t tlen[MAX_FIELDS], pt_err *e)
{
    int nt = 0;
    const char *p = item, *end = item + ilen;
    for (;;) {
        const char *c = memchr(p, ':', (size_t)(end - p));
        const char *stop = c ? c : end;
        if (nt == MAX_FIELDS) {
            err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                    "augment: too many fields in '%.*s'", (int)ilen, item);
            return -1;
        }
        tok[nt] = p;
        tlen[nt] = (size_t)(stop - p);
        trim(&tok[nt], &tlen[nt]);
        nt++;
        if (!c)
            return nt;
        p = c + 1;
    }
}

static int parse_item(const char *item, size_t ilen, aug_op *op, pt_err *e)
{
    const char *tok[MAX_FIELDS];
    size_t tlen[MAX_FIELDS];
    const int nt = split_fields(item, ilen, tok, tlen, e);
    if (nt < 0)
        return PT_EUSAGE;
    int id = find_op(tok[0], tlen[0]);
    if (id < 0) {
        char known[256];
        size_t kl = 0;
        for (int i = 0; i < AUG_OP_COUNT && kl < sizeof known; i++)
            kl += (size_t)snprintf(known + kl, sizeof known - kl, "%s%s", i ? ", " : "",
                                   aug_ops[i].name);
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "augment: unknown op '%.*s' in '%.*s' (known: none, %s)", (int)tlen[0],
                       tok[0], (int)ilen, item, known);
    }
    const aug_op_def *od = &aug_ops[id];
    op->id = id;
    op->prob = 1.0;
    for (int k = 0; k < od->nparams; k++)
        op->p[k] = od->params[k].def;
    int t = 1;
    if (t < nt && !memchr(tok[t], '=', tlen[t])) {
        double v;
        if (parse_num(tok[t], tlen[t], &v) != 0 || v < 0 || v > 1)
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "augment: bad probability '%.*s' in '%.*s' (want a number in [0, 1])",
                           (int)tlen[t], tok[t], (int)ilen, item);
        op->prob = v;
        t++;
    }
    for (; t < nt; t++) {
        const char *eq = memchr(tok[t], '=', tlen[t]);
        if (!eq)
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "augment: '%.*s' in '%.*s' is not key=value", (int)tlen[t], tok[t],
                           (int)ilen, item);
        const char *key = tok[t], *val = eq + 1;
        size_t klen = (size_t)(eq - key), vlen = tlen[t] - klen - 1;
        trim(&key, &klen);
        trim(&val, &vlen);
        int k = 0;
        while (k < od->nparams &&
               !(strlen(od->params[k].key) == klen && memcmp(od->params[k].key, key, klen) == 0))
            k++;
        if (k == od->nparams) {
            char keys[128];
            size_t kl = 0;
            for (int i = 0; i < od->nparams && kl < sizeof keys; i++)
                kl += (size_t)snprintf(keys + kl, sizeof keys - kl, "%s%s", i ? ", " : "",
                                       od->params[i].key);
            return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                           "augment: unknown key '%.*s' for %s in '%.*s' (keys: %s)", (int)klen,
                           key, od->name, (int)ilen, item, keys);
        }
        const aug_param_def *pd = &od->params[k];
        if (pd->choices) {
            int c = 0;
            while (pd->choices[c] &&
                   !(strlen(pd->choices[c]) == vlen && memcmp(pd->choices[c], val, vlen) == 0))
                c++;
            if (!pd->choices[c])
                return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                               "augment: bad value '%.*s' for %s %s in '%.*s'", (int)vlen, val,
                               od->name, pd->key, (int)ilen, item);
            op->p[k] = c;
        } else {
            double v;
            if (parse_num(val, vlen, &v) != 0 || v < pd->lo || v > pd->hi ||
                (pd->integer && v != floor(v))) {
                char lo[32], hi[32];
                fmt_num(lo, sizeof lo, pd->lo);
                fmt_num(hi, sizeof hi, pd->hi);
                return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                               "augment: bad value '%.*s' for %s %s in '%.*s' (want %s in [%s, %s])",
                               (int)vlen, val, od->name, pd->key, (int)ilen, item,
                               pd->integer ? "an integer" : "a number", lo, hi);
            }
            op->p[k] = v;
        }
    }
    if (id == AUG_OP_GRIDMASK && op->p[0] > op->p[1])
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                       "augment: gridmask dmin > dmax in '%.*s'", (int)ilen, item);
    return PT_OK;
}

int aug_parse(const char *spec, aug_chain **out, pt_err *e)
{
    if (out)
        *out = NULL;
    if (!spec || !out)
        return err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET, "augment: no spec");
    aug_chain *c = calloc(1, sizeof *c);
    if (!c)
        return err_set(e, PT_ENOMEM, NULL, PT_NO_RECORD, PT_NO_OFFSET, "augment: out of memory");
    const char *all = spec;
    size_t alen = strlen(spec);
    trim(&all, &alen);
    if (alen == 0 || (alen == 4 && memcmp(all, "none", 4) == 0)) {
        *out = c;
        return PT_OK;
    }
    const char *p = all, *end = all + alen;
    for (;;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        const char *item = p;
        size_t ilen = (size_t)(stop - p);
        trim(&item, &ilen);
        int rc = PT_OK;
        if (ilen == 0)
            rc = err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "augment: empty op after %d op(s) in '%s'", c->n, spec);
        else if (ilen == 4 && memcmp(item, "none", 4) == 0)
            rc = err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "augment: 'none' cannot be combined with other ops in '%s'", spec);
        else if (c->n == AUG_MAX_OPS)
            rc = err_set(e, PT_EUSAGE, NULL, PT_NO_RECORD, PT_NO_OFFSET,
                         "augment: more than %d ops in '%s'", AUG_MAX_OPS, spec);
        else
            rc = parse_item(item, ilen, &c->op[c->n++], e);
        if (rc != PT_OK) {
            free(c);
            return rc;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    *out = c;
    return PT_OK;
}

void aug_free(aug_chain *c)
{
    free(c);
}

int aug_format(const aug_chain *c, char *buf, size_t n)
{
    if (!buf || n == 0)
        return PT_EUSAGE;
    buf[0] = 0;
    size_t len = 0;
    int trunc = 0;
    if (!c || c->n == 0) {
        len = (size_t)snprintf(buf, n, "none");
        return len >= n ? PT_EUSAGE : PT_OK;
    }
    for (int i = 0; i < c->n && !trunc; i++) {
        const aug_op *op = &c->op[i];
        const aug_op_def *od = &aug_ops[op->id];
        char num[32];
        fmt_num(num, sizeof num, op->prob);
        size_t w = (size_t)snprintf(buf + len, n - len, "%s%s:%s", i ? "," : "", od->name, num);
        if (w >= n - len) {
            trunc = 1;
            break;
        }
        len += w;
        for (int k = 0; k < od->nparams; k++) {
            char val[32];
            fmt_param(val, sizeof val, &od->params[k], op->p[k]);
            w = (size_t)snprintf(buf + len, n - len, ":%s=%s", od->params[k].key, val);
            if (w >= n - len) {
                trunc = 1;
                break;
            }
            len += w;
        }
    }
    return trunc ? PT_EUSAGE : PT_OK;
}
