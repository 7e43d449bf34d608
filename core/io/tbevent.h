/* tbevent — TensorBoard event files: writing a run's and reading anyone's.
 *
 * An event file is TFRecord framing (io/tfrecord.h) around tensorboard.Event
 * protos (core/io/event.proto, TensorFlow's field numbers). The layout is the one
 * Keras's TensorBoard callback writes:
 *   - the file is named events.out.tfevents.<seconds>.<host>.<pid>.<n>.v2 (n counts
 *     the files this process has opened) inside a run's train/ or validation/
 *     folder;
 *   - its first record is file_version "brain.Event:2" with wall_time the whole
 *     second of the name and source_metadata naming the writer;
 *   - a scalar is Summary.Value { tag, tensor { dtype DT_FLOAT, empty shape,
 *     tensor_content: the 4 little-endian bytes }, metadata { plugin_data
 *     { plugin_name "scalars" } } } in an Event with wall_time and step (a step of 0
 *     is left out, as proto3 does);
 *   - an image is Summary.Value { tag, image { height, width, colorspace 3,
 *     encoded_image_string: PNG } }, the form TensorBoard's images dashboard reads.
 * A resumed run opens a new file beside the old ones: TensorBoard reads a folder's
 * files in name order, and the name starts with the time, taken one second past the
 * newest file there when that is not already later (a resume within the second).
 *
 * Writer: records go through stdio to the file as they are made (a live TFRecord
 * writer, never a temporary file: TensorBoard reads files that grow);
 * tbe_writer_flush() puts them on disk, so a crash loses only what came after the
 * last flush. Reader: the scalars (simple_value, or a one-element DT_FLOAT /
 * DT_DOUBLE tensor in float_val, double_val or tensor_content) and images of every
 * Event, in file order; histograms, graphs, text and anything else are skipped and
 * counted. Damage (a CRC, a truncated record, a payload that is not an Event, a
 * scalar tensor whose bytes do not fit its type) is an error naming the file, the
 * record and its byte offset; after one the reader goes on with the next record
 * when the framing still holds (as tfr_next() does).
 *
 * Ownership: tbe_writer_open() / tbe_writer_close() (which frees even on error);
 * tbe_open() / tbe_close(). A tbe_item's tag and image bytes belong to the reader
 * and stay valid until its next call. tbe_find_files() returns a list the caller
 * frees with util_free_list().
 */
#ifndef PT_TBEVENT_H
#define PT_TBEVENT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define TBE_FILE_VERSION "brain.Event:2"
/* What a file's name starts with. */
#define TBE_FILE_PREFIX "events.out.tfevents."

/* ---- writing ---- */

typedef struct tbe_writer tbe_writer;

/* Make dir (and its parents) and a new event file in it; writes the file_version
 * record. */
int tbe_writer_open(tbe_writer **out, const char *dir, pt_err *e);
/* The file's path. */
const char *tbe_writer_path(const tbe_writer *w);
/* One scalar, as a DT_FLOAT tensor (value is rounded to float), at the current time. */
int tbe_write_scalar(tbe_writer *w, const char *tag, long long step, double value, pt_err *e);
/* One h x w RGB image (rows of w * 3 bytes), PNG-encoded, at the current time. */
int tbe_write_image(tbe_writer *w, const char *tag, long long step, const uint8_t *rgb,
                    int width, int height, pt_err *e);
/* Every record written so far onto the disk (fflush + fsync). */
int tbe_writer_flush(tbe_writer *w, pt_err *e);
/* Flush, close and free (NULL is fine). */
int tbe_writer_close(tbe_writer *w, pt_err *e);

/* ---- reading ---- */

typedef enum tbe_kind {
    TBE_SCALAR = 1,
    TBE_IMAGE = 2,
} tbe_kind;

typedef struct tbe_item {
    tbe_kind kind;
    const char *tag;
    long long step;
    double wall_time;
    double value;               /* TBE_SCALAR */
    int width, height, colorspace;        /* TBE_IMAGE */
    const uint8_t *image;       /* TBE_IMAGE: the encoded bytes (PNG, JPEG, ...) */
    size_t image_len;
    long long record, offset;   /* the record holding it, and its byte offset */
} tbe_item;

typedef struct tbe_reader tbe_reader;

/* Open an event file. Its first record must be an Event with a file_version
 * starting "brain.Event:" (else PT_EPARSE: not a TensorBoard event file). */
int tbe_open(tbe_reader **out, const char *path, pt_err *e);
void tbe_close(tbe_reader *r);
/* The next scalar or image: 1; 0 at the end; < 0 an error (e says which, where; the
 * next call goes on after it when the framing holds, else returns 0). */
int tbe_next(tbe_reader *r, tbe_item *it, pt_err *e);
/* The first record's file_version and writer ("" when it named none). */
const char *tbe_file_version(const tbe_reader *r);
const char *tbe_source_writer(const tbe_reader *r);
/* The first record's wall_time: when the writer opened the file (seconds since
 * the epoch). */
double tbe_file_time(const tbe_reader *r);
/* Records read, and summary values / events skipped as neither scalar nor image. */
long long tbe_records(const tbe_reader *r);
long long tbe_skipped(const tbe_reader *r);

/* The event files at path: path itself when it is a file, else every file whose
 * name starts with TBE_FILE_PREFIX in path and its subfolders, in path order
 * (a folder's files before its subfolders, each sorted by name: a run's train/
 * before validation/, an older file before a newer). PT_ENODATA when there are
 * none. */
int tbe_find_files(const char *path, char ***files, int *n, pt_err *e);

#endif
