/* batch — one batch of images and labels, the unit the input pipeline hands to its
 * consumers (replicas, previews, the label counter).
 *
 * Images are uint8 RGB, NHWC, rows tightly packed: image i starts at
 * images + i * h * w * 3. Labels are "soft" in the one form MixUp and CutMix need:
 * example i is label[i] with weight mix[i] and label2[i] with weight 1 - mix[i]; an
 * unmixed example has label2[i] == label[i] and mix[i] == 1. Unlabeled (test)
 * examples have label -1 and carry their id. src[] says where each example came
 * from, for error messages and the inspect view; src2[i] where example i's MixUp /
 * CutMix partner came from (src[i] when unmixed), so that a teacher's cached
 * probabilities can be mixed as the labels are.
 *
 * soft is not the batch's: NULL, or the trainer's [n][k] of the teacher's tempered
 * probabilities of each example (knowledge distillation), set by the trainer before
 * the batch goes to the replicas and cleared before it goes back to the pipeline.
 *
 * Ownership: batch_new() allocates every array for `cap` examples; batch_free()
 * releases them. The pipeline owns the batches it hands out and takes them back
 * when released.
 */
#ifndef PT_BATCH_H
#define PT_BATCH_H

#include <stddef.h>
#include <stdint.h>

#define BATCH_ID_MAX 32

typedef struct batch_src {
    int32_t shard;      /* index into the split's shard list */
    int64_t record;     /* record index in that shard */
    int64_t offset;     /* byte offset of the record's header */
} batch_src;

typedef struct batch {
    int n;              /* examples in use (<= cap) */
    int cap;
    int h, w;           /* every image is h x w x 3 */
    uint64_t seq;       /* position of this batch in its stream (0, 1, 2...) */
    int first;          /* index of example 0 in the batch as planned: a rank's slice of
                           a global batch starts past the others' (0 otherwise); the
                           augmentation's per-example draws use first + i */
    int planned;        /* examples the pipeline planned into this batch (or slice),
                           before any failed to decode */
    uint8_t *images;    /* cap * h * w * 3 */
    int32_t *label;
    int32_t *label2;
    float *mix;
    char (*id)[BATCH_ID_MAX];
    batch_src *src;
    batch_src *src2;    /* the mix partner's (src[i] when unmixed) */
    const float *soft;  /* borrowed: the teacher's targets, or NULL (see above) */
} batch;

batch *batch_new(int cap, int h, int w);
void batch_free(batch *b);
static inline uint8_t *batch_image(const batch *b, int i)
{
    return b->images + (size_t)i * (size_t)b->h * (size_t)b->w * 3;
}
/* The label that counts for accuracy and metrics: the heavier of the two. */
static inline int32_t batch_dominant_label(const batch *b, int i)
{
    return b->mix[i] >= 0.5f ? b->label[i] : b->label2[i];
}
/* Reset labels (and src2) to "unmixed" for the first n examples. */
void batch_clear_mix(batch *b);

#endif
