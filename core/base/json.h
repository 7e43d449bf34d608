/* json — a small JSON writer into a growing buffer (run outputs: history.json,
 * predictions). Commas and nesting are tracked for the caller; strings are escaped;
 * numbers print with %.10g (and non-finite ones as null, which JSON requires).
 *
 * Ownership: the json_w owns its buffer; json_take() hands it to the caller (free()),
 * json_free() drops it.
 */
#ifndef PT_JSON_H
#define PT_JSON_H

#include <stddef.h>

#define JSON_MAX_DEPTH 32

typedef struct json_w {
    char *buf;
    size_t n, cap;
    int depth;
    int first[JSON_MAX_DEPTH];  /* no element written yet at this level */
    int after_key;
    int pretty;
    int oom;
} json_w;

void json_init(json_w *j, int pretty);
void json_free(json_w *j);
/* The text (NUL-terminated), now the caller's; NULL when out of memory. */
char *json_take(json_w *j, size_t *len);

void json_obj(json_w *j);
void json_obj_end(json_w *j);
void json_arr(json_w *j);
void json_arr_end(json_w *j);
void json_key(json_w *j, const char *k);
void json_str(json_w *j, const char *s);
void json_num(json_w *j, double v);
void json_int(json_w *j, long long v);

#endif
