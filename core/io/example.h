/* example — tf.train.Example decoding and encoding (protobuf-c underneath).
 *
 * ex_parse() turns a serialized Example into an ex_example the caller frees with
 * ex_free(); every pointer handed out by the accessors points into it and lives as
 * long as it does. Any Example is readable: features are listed by index with their
 * key, kind and value count, or looked up by key.
 *
 * ex_builder collects features and serializes them into a malloc'd buffer the
 * caller frees. Keys are written in the order added (TensorFlow's map order is
 * not significant).
 */
#ifndef PT_EXAMPLE_H
#define PT_EXAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef enum ex_kind {
    EX_NONE = 0,  /* a Feature with no list set */
    EX_BYTES,
    EX_FLOAT,
    EX_INT64,
} ex_kind;

typedef struct ex_example ex_example;

/* Parse len bytes. file/record/offset are only used to place the error message. */
int ex_parse(const uint8_t *buf, size_t len, ex_example **out, const char *file,
             long long record, long long offset, pt_err *e);
void ex_free(ex_example *ex);

size_t ex_count(const ex_example *ex);
const char *ex_key(const ex_example *ex, size_t i);
ex_kind ex_kind_at(const ex_example *ex, size_t i);
size_t ex_len_at(const ex_example *ex, size_t i);
/* Index of key, or -1. */
long ex_find(const ex_example *ex, const char *key);

/* Values by feature index i and value index j (j < ex_len_at). */
void ex_bytes_at(const ex_example *ex, size_t i, size_t j, const uint8_t **data, size_t *len);
float ex_float_at(const ex_example *ex, size_t i, size_t j);
int64_t ex_int64_at(const ex_example *ex, size_t i, size_t j);

/* Typed lookups of the first value: PT_EFEATURE with a message saying what is
 * missing or what type was found instead. */
int ex_get_bytes(const ex_example *ex, const char *key, const uint8_t **data, size_t *len,
                 pt_err *e);
int ex_get_int64(const ex_example *ex, const char *key, int64_t *v, pt_err *e);
int ex_get_float(const ex_example *ex, const char *key, float *v, pt_err *e);

const char *ex_kind_name(ex_kind k);

typedef struct ex_builder ex_builder;

ex_builder *ex_builder_new(void);
void ex_builder_free(ex_builder *b);
/* The builder copies keys and values. Return PT_OK or PT_ENOMEM. */
int ex_add_bytes(ex_builder *b, const char *key, const void *data, size_t len);
int ex_add_bytes_list(ex_builder *b, const char *key, const void *const *data,
                      const size_t *lens, size_t n);
int ex_add_int64(ex_builder *b, const char *key, const int64_t *v, size_t n);
int ex_add_float(ex_builder *b, const char *key, const float *v, size_t n);
/* Serialize; *out is malloc'd. */
int ex_serialize(const ex_builder *b, uint8_t **out, size_t *len);

#endif
