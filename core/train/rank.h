/* rank — the trainer's part of a job of several ranks (train/dist.h is the transport):
 * every rank runs the whole loop in step with the others and holds the same weights,
 * optimizer, progress and training figures; rank 0 alone writes the run folder and
 * decides pauses and stops. Each call is a no-op when the run is alone (rank.c).
 *
 * Ownership: a trn_gathered's buffers are made on first use and freed by
 * trn_gathered_free.
 */
#ifndef PT_TRN_RANK_H
#define PT_TRN_RANK_H

#include <stdint.h>

#include "base/err.h"
#include "data/batch.h"

typedef struct trn trn;

/* Every rank's configuration checked against rank 0's, and the replicas counted:
 * job_replicas, first_replica. */
int trn_dist_join(trn *r, pt_err *e);
/* Rank 0's weights, optimizer, moving average, progress and training figures to
 * every rank (after a resume: the others never read the checkpoint). */
int trn_dist_share_state(trn *r, pt_err *e);
/* Whether the gradient travels during the backward pass (--overlap): as set, or for
 * auto, when the ranks span more than one host. Across hosts the overlap hides the
 * network's time; on one host the exchange is quick and the sliced optimizer of
 * --no-overlap costs less than the overlap's copies and polling (bench/RESULTS.md,
 * "Data parallel"). The same answer on every rank: the config and the host list are
 * the job's. */
int trn_dist_overlap(const trn *r);
/* The command every rank obeys: the strongest of every rank's (stop over pause over
 * go), so a signal to any rank stops them all. */
int trn_dist_control(trn *r, int c, pt_err *e);
/* After a pause's wait on rank 0: its decision to every rank. */
int trn_dist_decision(trn *r, int c, pt_err *e);
/* This update's (label, prediction) pairs of every rank into loop.train_cm. */
int trn_dist_train_cm(trn *r, batch *const *batches, pt_err *e);
/* Every few updates (about twice a second, as rank 0 paces it): every rank's
 * replica figures and host to rank 0, for its monitor. */
int trn_dist_telemetry(trn *r, pt_err *e);
/* The weights (and BN statistics) checked identical on every rank: a checksum each,
 * compared; a mismatch is an error naming the ranks. */
int trn_dist_check_weights(trn *r, pt_err *e);
/* A prediction batch as rank 0 sees it: every rank's slice, in rank order (count
 * is 0 on the other ranks). Buffers made on first use, kept for the pass. */
typedef struct trn_gathered {
    int count;                  /* examples in the batch (0 on ranks other than 0) */
    int32_t *label;
    batch_src *src;
    char (*id)[BATCH_ID_MAX];
    float *logits;
    uint8_t *pack, *all;        /* the examples as sent, and as received on rank 0 */
} trn_gathered;
int trn_dist_gather(trn *r, const batch *b, const float *logits, trn_gathered *g, pt_err *e);
void trn_gathered_free(trn_gathered *g);

#endif
