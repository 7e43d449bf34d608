/* dataset — finding a TFRecord dataset on disk and learning what is in it.
 *
 * Layouts understood (the competition's and simpler ones):
 *     DIR/tfrecords-jpeg-WxH/{train,val,test}/NN-WxH-COUNT.tfrec   (one or more sizes)
 *     DIR/{train,val,test}/NAME.tfrec                               (the split folders)
 * "valid" and "validation" are accepted for val; shard files end in .tfrec,
 * .tfrecord, .tfrecords or .record. Record counts come from the file names when they
 * say (NN-SIZE-COUNT.tfrec), by scanning otherwise. Train and val hold labeled
 * records (image, class); test holds unlabeled ones (image, id).
 *
 * Class names: classes.txt (one per line) beside the split folders or one level up;
 * the competition's 104 names when there are 104 classes; "class N" otherwise.
 *
 * Ownership: ds_open() returns a ds_dataset the caller frees with ds_free(); every
 * string and array inside belongs to it. ds_scan_labels() returns a malloc'd array.
 */
#ifndef PT_DATASET_H
#define PT_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef enum ds_split_id { DS_TRAIN = 0, DS_VAL = 1, DS_TEST = 2, DS_NSPLITS = 3 } ds_split_id;

typedef struct ds_shard {
    char *path;
    long long count;        /* records in the shard */
    int count_from_name;    /* 1 when taken from the file name, 0 when scanned */
} ds_shard;

typedef struct ds_split {
    const char *name;       /* "train", "val", "test" */
    char *dir;              /* NULL when the split is absent */
    ds_shard *shards;
    int n_shards;
    long long count;
} ds_split;

typedef struct ds_dataset {
    char *root;             /* the folder holding the split folders */
    int image_w, image_h;   /* from a tfrecords-jpeg-WxH folder name; 0 when unknown */
    ds_split split[DS_NSPLITS];
    int n_classes;          /* 0 until known (classes.txt or ds_set_classes) */
    char **class_names;
    int names_source;       /* DS_NAMES_* */
} ds_dataset;

enum { DS_NAMES_GENERATED = 0, DS_NAMES_FILE = 1, DS_NAMES_COMPETITION = 2 };

/* Find the dataset under path. want_size > 0 chooses among several
 * tfrecords-jpeg-SIZE folders: the exact size, else the smallest larger one, else
 * the largest. Counts records (by name or by scanning headers). */
int ds_open(const char *path, int want_size, ds_dataset **out, pt_err *e);
void ds_free(ds_dataset *d);

/* Set the class count (e.g. after a label scan) and pick names for it. classes.txt
 * wins when it has at least that many lines. */
int ds_set_classes(ds_dataset *d, int n_classes, pt_err *e);

const char *ds_class_name(const ds_dataset *d, int k);

/* Called for every bad record met during a scan; return nonzero to stop the scan. */
typedef int (*ds_error_fn)(void *ctx, const pt_err *err);

/* Asked now and then during a long scan; nonzero stops it (PT_ESTOPPED). */
typedef int (*ds_stop_fn)(void *ctx);

/* Read every record of a labeled split in file order, collecting the "class" of
 * each. Bad records are reported through on_error (may be NULL) and skipped;
 * *bad counts them. stop (may be NULL) is asked every few hundred records. Returns
 * PT_OK, the error of the bad record at which on_error asked to stop, or
 * PT_ESTOPPED. */
int ds_scan_labels(const ds_split *s, int32_t **labels, long long *n, long long *bad,
                   ds_error_fn on_error, ds_stop_fn stop_fn, void *ctx, pt_err *e);

/* Size of the first decodable image of the split (when the folder name did not say). */
int ds_probe_image_size(const ds_split *s, int *w, int *h, pt_err *e);

/* Record count from a shard file name "NN-SIZE-COUNT.ext", or -1. */
long long ds_count_from_name(const char *path);

/* 1 when the file name has a shard extension. */
int ds_is_shard_name(const char *name);

/* The competition's class names (compiled in from assets/classes-104.txt). */
extern const char *const ds_competition_classes[];
extern const size_t ds_competition_class_count;

/* The 1,000 ImageNet-1k class names in index order, as pretrained backbones
 * predict them (compiled in from assets/imagenet-classes.txt). */
extern const char *const ds_imagenet_classes[];
extern const size_t ds_imagenet_class_count;

#endif
