#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void append(char *dst, size_t cap, size_t *n, const char *src)
{
    size_t k = strlen(src);
    if (*n + k >= cap)
        k = cap - 1 - *n;
    memcpy(dst + *n, src, k);
    *n += k;
    dst[*n] = '\0';
}

void err_clear(pt_err *e)
{
    if (!e)
        return;
    e->code = PT_OK;
    e->file[0] = '\0';
    e->record = PT_NO_RECORD;
    e->offset = PT_NO_OFFSET;
    e->msg[0] = '\0';
}

int err_set(pt_err *e, int code, const char *file, long long record, long long offset,
            const char *fmt, ...)
{
    if (!e)
        return code;
    e->code = code;
    e->record = record;
    e->offset = offset;
    size_t fn = 0;
    e->file[0] = '\0';
    append(e->file, sizeof e->file, &fn, file ? file : "");

    char where[128] = "";
    if (record >= 0 && offset >= 0)
        snprintf(where, sizeof where, "record %lld at byte %lld: ", record, offset);
    else if (record >= 0)
        snprintf(where, sizeof where, "record %lld: ", record);
    else if (offset >= 0)
        snprintf(where, sizeof where, "byte %lld: ", offset);

    char what[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    /* Long paths or texts are cut at the buffer's end, never overflow it. */
    size_t n = 0;
    if (file && *file) {
        append(e->msg, sizeof e->msg, &n, file);
        append(e->msg, sizeof e->msg, &n, ": ");
    }
    append(e->msg, sizeof e->msg, &n, where);
    append(e->msg, sizeof e->msg, &n, what);
    return code;
}

const char *err_name(int code)
{
    switch (code) {
    case PT_OK: return "ok";
    case PT_EIO: return "i/o error";
    case PT_ETRUNC: return "truncated";
    case PT_ECRC: return "crc mismatch";
    case PT_EPARSE: return "parse error";
    case PT_EFEATURE: return "bad feature";
    case PT_ECLASS: return "class out of range";
    case PT_EJPEG: return "bad jpeg";
    case PT_ETOOBIG: return "too big";
    case PT_ENOMEM: return "out of memory";
    case PT_EUSAGE: return "usage";
    case PT_ENODATA: return "no data";
    case PT_EFORMAT: return "bad format";
    case PT_ESTOPPED: return "stopped";
    default: return "error";
    }
}
