/* pacing: per-connection sending rate during communication patterns that
 * overrun a shared bottleneck (e.g. all-to-all over a wide-area link).
 *
 * At most one pacing component runs (the available one of highest
 * priority).  The library calls it around the blocking collectives:
 *
 *   enter(coll, wranks, n)  before the collective `coll` ("alltoall",
 *                           "alltoallv", ... the field names of struct
 *                           kumi_coll_ops) on an intracommunicator whose
 *                           ranks are the world ranks wranks[0..n);
 *                           returns 1 when it paced something (leave() is
 *                           then due), 0 otherwise;
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

#ifdef __cplusplus
extern "C" {
#endif

#define KUMI_PACING_CONTRACT_MAJOR 1
#define KUMI_PACING_CONTRACT_MINOR 0
#define KUMI_PACING_OPS_HDR \
    KUMI_OPS_HDR(struct kumi_pacing_ops, KUMI_PACING_CONTRACT_MAJOR, KUMI_PACING_CONTRACT_MINOR)
#define KUMI_PACING_OPS_MIN_SIZE sizeof(struct kumi_pacing_ops)

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
};

#ifdef __cplusplus
}
#endif
#endif
