/* err — one error value with context, filled by library code, read by the caller.
 *
 * Library code never prints, exits or aborts on bad input. It returns a negative
 * PT_E* code and, when given a pt_err, fills it with the code, the file, the
 * record index and the byte offset where the problem is, and a one-line message
 * that already names all three. The caller decides to skip-and-count or stop.
 *
 * Ownership: a pt_err is a plain value (no heap); the caller owns it.
 */
#ifndef PT_ERR_H
#define PT_ERR_H

#include <stdint.h>

enum {
    PT_OK = 0,
    PT_EIO = -1,        /* open/read/write failed (errno text in the message) */
    PT_ETRUNC = -2,     /* file ends inside a record */
    PT_ECRC = -3,       /* masked CRC32C mismatch (length or payload) */
    PT_EPARSE = -4,     /* payload is not the expected protobuf message */
    PT_EFEATURE = -5,   /* feature missing or of the wrong type */
    PT_ECLASS = -6,     /* class label outside the class range */
    PT_EJPEG = -7,      /* bytes are not a decodable JPEG */
    PT_ETOOBIG = -8,    /* size claimed by a header is beyond the limits */
    PT_ENOMEM = -9,
    PT_EUSAGE = -10,    /* a bad argument or option value */
    PT_ENODATA = -11,   /* no dataset / no records where some were expected */
    PT_EFORMAT = -12,   /* a file of ours (checkpoint, config) is malformed */
    PT_ESTOPPED = -13,  /* the operation was stopped on request */
};

/* No record / no offset known. */
#define PT_NO_RECORD (-1LL)
#define PT_NO_OFFSET (-1LL)

typedef struct pt_err {
    int code;
    char file[512];
    long long record;   /* 0-based record index in the file, or PT_NO_RECORD */
    long long offset;   /* byte offset in the file, or PT_NO_OFFSET */
    char msg[1024];     /* full one-line message: "FILE: record R at byte O: what" */
} pt_err;

/* Clear to PT_OK. Safe with NULL. */
void err_clear(pt_err *e);

/* Fill e (when not NULL) and return code. file may be NULL. The message is
 * "file: record R at byte O: <formatted text>", leaving out the parts not known. */
int err_set(pt_err *e, int code, const char *file, long long record, long long offset,
            const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;

/* Short name of a code, e.g. "crc mismatch". */
const char *err_name(int code);

#endif
