/* tfrecord — reading and writing TFRecord framing.
 *
 * A file is a sequence of records:
 *     u64 length (little-endian) | u32 masked CRC32C of those 8 bytes |
 *     length bytes of payload    | u32 masked CRC32C of the payload
 *
 * Reader: tfr_next() returns one payload at a time, with its index and the byte
 * offset of its header. A payload CRC mismatch is reported as PT_ECRC and the reader
 * moves past that record (the length was trusted, so framing holds). A length CRC
 * mismatch or a file that ends inside a record is reported and ends the file, since
 * nothing after it can be framed. Payload memory belongs to the reader and stays
 * valid until the next call on it.
 *
 * Writer: writes to PATH.tmp and renames over PATH on tfr_writer_close(), after an
 * fsync, so a reader never sees half a shard. A live writer (tfr_writer_open_live,
 * for logs such as TensorBoard event files that are read while they grow) writes
 * PATH itself; tfr_writer_flush() puts what was written on disk.
 */
#ifndef PT_TFRECORD_H
#define PT_TFRECORD_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define TFR_HEADER_BYTES 12
#define TFR_FOOTER_BYTES 4
#define TFR_OVERHEAD (TFR_HEADER_BYTES + TFR_FOOTER_BYTES)

typedef struct tfr_reader tfr_reader;

int tfr_open(tfr_reader **out, const char *path, pt_err *e);
void tfr_close(tfr_reader *r);

/* 1: a record was read; 0: clean end of file; < 0: an error (e says which, where).
 * After PT_ECRC on a payload the next call continues with the following record;
 * after any other error the next call returns 0. */
int tfr_next(tfr_reader *r, const uint8_t **data, size_t *len, pt_err *e);

/* Read the record whose header starts at offset (its index is passed for messages).
 * Same return convention as tfr_next(); reading continues from there. */
int tfr_read_at(tfr_reader *r, long long offset, long long index, const uint8_t **data,
                size_t *len, pt_err *e);

/* Skip the next record without reading its payload: only the header is read and its
 * CRC checked. Fills offset and length. 1 / 0 / < 0 like tfr_next(). */
int tfr_skip(tfr_reader *r, long long *offset, size_t *len, pt_err *e);

/* Index and header offset of the record last returned (or skipped). */
long long tfr_index(const tfr_reader *r);
long long tfr_offset(const tfr_reader *r);
long long tfr_file_size(const tfr_reader *r);
const char *tfr_path(const tfr_reader *r);
/* Turn payload CRC checking off (on by default). The length CRC is always checked. */
void tfr_set_verify(tfr_reader *r, int verify);

typedef struct tfr_writer tfr_writer;

int tfr_writer_open(tfr_writer **out, const char *path, pt_err *e);
/* A live writer: creates PATH (refusing one that exists) and appends to it; records
 * reach the file as stdio's buffer fills, all of them on tfr_writer_flush(). */
int tfr_writer_open_live(tfr_writer **out, const char *path, pt_err *e);
/* fflush + fsync: every record written so far is on disk. */
int tfr_writer_flush(tfr_writer *w, pt_err *e);
int tfr_write(tfr_writer *w, const void *data, size_t len, pt_err *e);
/* fsync + rename into place (a live writer: fsync); frees w in every case. */
int tfr_writer_close(tfr_writer *w, pt_err *e);
/* Remove the temporary file (a live writer's file is kept, closed); frees w. */
void tfr_writer_abort(tfr_writer *w);
long long tfr_writer_count(const tfr_writer *w);

/* Frame one record into out (len + TFR_OVERHEAD bytes). */
void tfr_frame_header(uint8_t hdr[TFR_HEADER_BYTES], uint64_t len);
uint32_t tfr_payload_crc(const void *data, size_t len);

#endif
