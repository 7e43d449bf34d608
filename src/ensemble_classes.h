/* ensemble_classes — which of the dataset's classes each output of an ensemble's
 * member is, decided before anything is predicted.
 *
 * The reference is the dataset's class names (its classes.txt); a dataset without one
 * takes the first member's that names its classes, said on stdout. A member whose
 * names are the reference's in order needs nothing; the same names in another order
 * are matched by name (said: the member's probabilities are moved to the dataset's
 * label order), since a name, not a position, is what a run learned; a member that
 * names no classes of its own ("class 0", "class 1", ...: an ONNX file without
 * petal-tui's class_names metadata, a run of a dataset without classes.txt) is matched
 * by position when it has as many outputs as the reference has classes (said). Any
 * other difference is refused, naming the member and what only each side has.
 *
 * Ownership: enc_match fills maps[i] with a malloc'd array, or NULL where member i
 * needs no moving; enc_free frees them.
 */
#ifndef PT_ENSEMBLE_CLASSES_H
#define PT_ENSEMBLE_CLASSES_H

#include "infer/infer.h"
#include "datasets.h"

/* 0, or -1 when a member's classes are not the dataset's (said once on stderr as
 * "petal-tui: MEMBER: ...", with what to do). maps[i][c]: the dataset's class of
 * member i's output c. data: the --data argument, for messages. */
int enc_match(rm_model *const *m, int n, const ds_dataset *ds, const char *data, int **maps);
void enc_free(int **maps, int n);

/* Moves each row of r's probabilities to the dataset's class order (map as above). */
int enc_apply(const int *map, prd_results *r);

#endif
