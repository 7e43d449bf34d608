/* teacher_impl — the teacher's state, shared by teacher.c (opening, the cache) and
 * teacher_live.c (--teacher-view live); nothing else includes it. */
#ifndef PT_TEACHER_IMPL_H
#define PT_TEACHER_IMPL_H

#include <limits.h>

#include "data/image.h"
#include "infer/ensemble.h"
#include "infer/runmodel.h"
#include "pool/rpool.h"
#include "train/teacher.h"

/* live: one member's forward passes */
typedef struct tch_member {
    const rm_model *m;          /* borrowed from the ens */
    double w;
    int flip;
    int *map;                   /* its output c -> the dataset's class map[c] */
    rpool *pool;
    uint8_t *img;               /* batch x S x S x 3 */
} tch_member;

struct tch {
    tch_opts o;
    ens *x;                     /* NULL: a teacher_probs.csv (csv), or once cached */
    int csv;                    /* --teacher is a teacher_probs.csv */
    int k;                      /* classes, the dataset's */
    char **names;               /* the dataset's class names */
    char name[256], about[300];
    char abs[PATH_MAX];         /* the teacher's absolute path */
    char print[1024];           /* what tells this teacher's weights from another's */
    /* cached: row base[s] + record of shard s */
    const ds_split *split;
    long long *base, total;
    float *pt;                  /* total x k, at T */
    int32_t *label;             /* total; -1: no row */
    /* live */
    int n_live;
    tch_member live[ENS_MAX];
    float *logits;
    double *probs, *mean;
    img_scratch scratch;
};

/* live: each member's pool, buffers and class map (teacher_live.c). */
int tch_live_open(tch *t, pt_err *e);
/* live: the batch's images through every member, the weighted mean at T into soft. */
int tch_live_fill(tch *t, const batch *b, float *soft, pt_err *e);

#endif
