/* pipeline — from TFRecord shards to ready batches, on worker threads.
 *
 *   shards --interleave--> records --parse/check--> oversample --> shuffle buffer
 *          --> batch plans --(workers: decode, resize, augment)--> prefetch queue
 *
 * Planning (which records go into which batch) is cheap and sequential: reading
 * records round-robin from `interleave` open shards, checking CRCs, parsing the
 * Example, checking the label and the JPEG header, repeating examples for
 * oversampling, and drawing from a seeded shuffle buffer of compressed records.
 * Whichever worker needs its next batch runs the planner under a lock. Decoding,
 * resizing and augmenting (the expensive part) run in parallel, one whole batch per
 * worker, straight into a batch buffer from a fixed pool. Because the plan is
 * sequential and seeded, the batches' contents are the same for the same seed in
 * both modes; deterministic mode also hands them out in order (fast mode hands out
 * whichever is ready first).
 *
 * A rank of a data-parallel job (train/dist.h) plans the same global batches as
 * every other rank and decodes only its slice of each (slice_first, slice_count):
 * every rank reads every record, but each decodes and augments a disjoint part,
 * with the draws the whole batch would give those examples. A chain that mixes
 * examples (augment_whole) needs the whole batch: it is decoded and augmented
 * whole, then cut to the slice. A sliced pipeline hands out every planned batch,
 * even one whose slice is empty, so that the ranks stay in step.
 *
 * Memory is set by the configuration, not the dataset: (prefetch + workers + 1)
 * batch buffers, the shuffle buffer's compressed records, and one record buffer per
 * open shard.
 *
 * Bad records (CRC, truncation, not an Example, missing or mistyped feature, class
 * out of range, not a JPEG, a header claiming a huge size, corrupt JPEG data) are
 * skipped and counted, with a message naming file, record and byte offset that
 * on_error receives (on the thread that met the record, so it must be thread-safe
 * and quick); with stop_on_error the first one stops the stream and pipe_next()
 * returns it.
 *
 * A source of image files instead (files, split NULL): the files in the given order,
 * one batch of batch_size after the other, each read and decoded by the workers as
 * pipe_decode_file does (JPEG or PNG, centre crop, resize to image_w = image_h). A
 * file that fails keeps its place in its batch (its pixels black, label -1) and its
 * error goes to file_errors[its index], not to on_error; src.record is the file's
 * index, src.shard -1.
 *
 * Ownership: pipe_create() copies the configuration; the split and the oversampling
 * table it points to must outlive the pipeline. Batches returned by pipe_next()
 * belong to the pipeline: give each back with pipe_release(). pipe_destroy() stops
 * and joins every thread and frees everything.
 */
#ifndef PT_PIPELINE_H
#define PT_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/batch.h"
#include "data/dataset.h"
#include "data/image.h"
#include "data/jpeg.h"
#include "data/sampler.h"

/* Augmentation hook, run by workers on each decoded batch. *ws is a per-worker slot
 * for the hook's own workspace (NULL at first); ws_free releases it at the end. */
typedef void (*pipe_augment_fn)(void *ctx, batch *b, uint64_t seed, void **ws);
typedef void (*pipe_ws_free_fn)(void *ws);
/* A bad record was skipped (or stopped the stream); err names file, record, offset. */
typedef void (*pipe_error_fn)(void *ctx, const pt_err *err);

typedef struct pipe_config {
    const ds_split *split;
    int labeled;            /* 1: records carry "class"; 0: they carry "id" */
    int n_classes;          /* labels must be in [0, n_classes) */
    int image_w, image_h;   /* output size */
    int crop;               /* centre-crop to the output aspect before resizing */
    int crop_anywhere;      /* crop: the window at a random place instead (seeded by seed,
                             * batch and example), so a record wider or taller than the
                             * output (shards --keep-aspect) gives all of itself over the
                             * epochs; the same as centred for a record of the output's
                             * aspect */
    int fast_decode;        /* faster IDCT / upsampling */
    int batch_size;
    int drop_remainder;
    int repeat;             /* endless passes over the data */
    int shuffle_buffer;     /* elements; <= 1 means no shuffling */
    int shuffle_shards;     /* new shard order every pass */
    int interleave;         /* shards read round-robin; 0: min(4, shards) */
    int workers;            /* decode threads, >= 1 */
    int prefetch;           /* ready batches kept ahead, >= 1 */
    int deterministic;
    uint64_t seed;
    const smp_table *oversample; /* NULL: no oversampling */
    pipe_augment_fn augment;     /* NULL: none */
    void *augment_ctx;
    pipe_ws_free_fn augment_ws_free;
    int stop_on_error;
    pipe_error_fn on_error;      /* NULL: errors are only counted */
    void *error_ctx;
    uint64_t start_batch;   /* skip this many batches first (resuming a run) */
    int slice_first;        /* slice_count > 0: hand out only examples [slice_first, */
    int slice_count;        /*   slice_first + slice_count) of each planned batch */
    int augment_whole;      /* the augmentation mixes examples: slice after it */
    /* The file source (split NULL): paths, their count, the caller's array of
     * n_files errors (cleared by the pipeline; code PT_OK for a file decoded), and
     * the largest file read (0: any). Paths and errors must outlive the pipeline. */
    char *const *files;
    long long n_files;
    pt_err *file_errors;
    long long max_file_bytes;
} pipe_config;

/* Defaults for everything but split, sizes, batch size and classes. */
void pipe_config_defaults(pipe_config *c);

typedef struct pipeline pipeline;

int pipe_create(const pipe_config *cfg, pipeline **out, pt_err *e);

/* Next batch (blocks). 1: *out is a batch; 0: the data is exhausted (no repeat);
 * < 0: stopped by an error (stop_on_error) or by pipe_cancel(). */
int pipe_next(pipeline *p, batch **out, pt_err *e);
void pipe_release(pipeline *p, batch *b);

/* Wake every waiter and make pipe_next() return PT_ESTOPPED. Any thread. */
void pipe_cancel(pipeline *p);
void pipe_destroy(pipeline *p);

typedef struct pipe_stats {
    int ready;              /* batches waiting in the prefetch queue */
    int capacity;           /* most batches that can be waiting (the buffer pool) */
    uint64_t batches_out;
    uint64_t records_read;  /* records planned (oversampled copies counted once) */
    uint64_t examples_out;  /* examples handed out */
    uint64_t errors;        /* bad records skipped */
    uint64_t passes;        /* passes over the data begun */
    double decode_seconds;  /* worker time decoding + augmenting */
    double wait_seconds;    /* consumer time blocked in pipe_next */
} pipe_stats;

void pipe_get_stats(pipeline *p, pipe_stats *s);

/* One image file into out (S x S x 3): refused over max_bytes (0: any size) or when a
 * folder; JPEG or PNG decoded as imf_decode does (data/imgfile.h). Errors name the
 * file. jc and scratch are the calling thread's. In pipeline_files.c. */
int pipe_decode_file(jpg_codec *jc, img_scratch *scratch, const char *path,
                     long long max_bytes, uint8_t *out, int S, int crop, int fast_decode,
                     pt_err *e);

#endif
