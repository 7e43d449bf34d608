/* ensemble_impl — what the ensemble module's files share (infer/ensemble.h is its
 * door): the class matching of ensemble_classes.c (enc_).
 *
 * Ownership: enc_match fills maps[i] with a malloc'd array, or NULL where member i
 * needs no moving; enc_free frees them. enc_say grows a malloc'd text the caller frees.
 */
#ifndef PT_ENSEMBLE_IMPL_H
#define PT_ENSEMBLE_IMPL_H

#include "infer/ensemble.h"

struct ens {
    int n;
    char *path[ENS_MAX];        /* as given (malloc'd) */
    rm_model *m[ENS_MAX];
    double w[ENS_MAX];          /* sum 1 */
    int tta[ENS_MAX];           /* ENS_TTA_* bits, resolved */
    int *maps[ENS_MAX];         /* enc_match's */
    ens_how how;
    int size;                   /* the largest member's side */
    int k;                      /* classes of the answer */
    char **names;               /* the reference's k names (malloc'd), or NULL */
    int matched;                /* ens_match done */
    char *notes;                /* enc_say's lines (malloc'd), or NULL */
    char name[4200];
};

/* PT_OK, or PT_EUSAGE when a member's classes are not the dataset's (e names the
 * member and what to do). maps[i][c]: the dataset's class of member i's output c.
 * data: the --data argument, for messages. What it decided is added to *notes. */
int enc_match(rm_model *const *m, int n, const ds_dataset *ds, const char *data, int **maps,
              char **notes, pt_err *e);
void enc_free(int **maps, int n);

/* Moves each row of r's probabilities to the dataset's class order (map as above).
 * 0, or -1 out of memory. */
int enc_apply(const int *map, prd_results *r);

/* Appends a printf-formatted line to *notes (malloc'd; a note is dropped when memory
 * is out). */
void enc_say(char **notes, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
