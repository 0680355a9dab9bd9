/* pacing: per-connection sending rate during communication patterns that
 * overrun a shared bottleneck (e.g. all-to-all over a wide-area link).
 *
 * At most one pacing component runs (the available one of highest
 * priority).  The library calls it around the blocking collectives:
 *
 *   enter(coll, wranks, n)  before the collective `coll` ("alltoall",
 *                           "alltoallv", ... the field names of struct
 *                           kumi_coll_fns) on an intracommunicator whose
 *                           ranks are the world ranks wranks[0..n);
 *                           returns 1 when it paced something (leave() is
 *                           then due), 0 otherwise;
 *   enter_hint(coll, wranks, n, hint)   (contract 1.1) called instead of
 *                           enter when present, with what the coll
 *                           component that runs the call says it will do
 *                           (struct kumi_pace_hint below; kumi/coll.h
 *                           pace_hint);
 *   leave()                 after the collective returned;
 *   wants(coll)             optional: 0 when enter() would not pace `coll`
 *                           whatever the ranks, so that the library skips
 *                           building wranks (NULL: enter is always called);
 *   socket_opened(peer, fd) from a transport that just created a socket
 *                           carrying this process's bytes to world rank
 *                           peer (p2p.h: kumi_p2p_socket_opened), so that a
 *                           connection opened during a paced call is paced;
 *   progress()              from the progress engine while pending() says
 *                           work is left (e.g. rates to restore once a send
 *                           queue has drained); never blocks;
 *   finalize()              before the transports close: undo everything.
 *
 * Enter / leave do not nest: the library calls them for the outermost
 * collective only.  A component learns about sockets through p2p.h's
 * kumi_p2p_peer_sockets() / kumi_p2p_peer_sockaddr(), never through a
 * transport's internals. */
#ifndef KUMI_PACING_H
#define KUMI_PACING_H

#include <kumi/kumi.h>
#include <kumi/component.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Contract versions (kumi/component.h):
 *   1.0  init ... wants;
 *   1.1  adds enter_hint (optional; a 1.0 table is shorter and still loads). */
#define KUMI_PACING_CONTRACT_MAJOR 1
#define KUMI_PACING_CONTRACT_MINOR 1
#define KUMI_PACING_OPS_HDR \
    KUMI_OPS_HDR(struct kumi_pacing_ops, KUMI_PACING_CONTRACT_MAJOR, KUMI_PACING_CONTRACT_MINOR)
/* Size of the mandatory part (contract 1.0's table): every table is at least this long. */
#define KUMI_PACING_OPS_MIN_SIZE offsetof(struct kumi_pacing_ops, enter_hint)

/* What a collective will send (kumi/coll.h: pace_hint, answered by the coll
 * component that runs the call; valid during enter_hint only):
 *   fanout    how many peers a sending rank sends to at once: 0 = all of
 *             them (every send posted together: linear), k >= 1 = at most
 *             k (pairwise, Bruck: 1); -1 = unknown;
 *   nsenders  -1: every rank of the communicator sends to and receives
 *             from the others; n >= 0: only the ranks senders[0..n) of the
 *             communicator (indices into wranks) exchange data with ranks
 *             of other hosts, the others' data travels through them
 *             (coll/lact's aggregated all-to-all: the host leaders). */
struct kumi_pace_hint {
    int fanout;
    int nsenders;
    const int *senders;
};

struct kumi_pacing_ops {
    struct kumi_ops_hdr hdr;  /* KUMI_PACING_OPS_HDR */
    /* After the transports are wired up.  MPI_SUCCESS, or anything else:
     * not used in this job (the reason logged by the component). */
    int (*init)(void);
    int (*enter)(const char *coll, const int *wranks, int n);
    void (*leave)(void);
    void (*socket_opened)(int peer, int fd);
    int (*pending)(void);
    void (*progress)(void);
    void (*finalize)(void);
    int (*wants)(const char *coll);
    /* ---- Contract 1.1 ---- */
    /* enter() with the coll component's hint (hint->fanout -1 and
     * hint->nsenders -1 where it gave none).  May be NULL: enter is called. */
    int (*enter_hint)(const char *coll, const int *wranks, int n, const struct kumi_pace_hint *hint);
};

#ifdef __cplusplus
}
#endif
#endif
