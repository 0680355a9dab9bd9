/* sched: collective schedules (framework/sched).
 *
 * A schedule is a DAG of nodes between a START and an END node:
 *   SEND  count elements of dt at buf to a rank of the communicator
 *   RECV  count elements of dt from a rank into buf
 *   CALC  inout[i] = in[i] op inout[i] for count elements of dt (MPI_Op)
 *   COPY  scount elements of sdt at src into dcount elements of ddt at dst
 *   NOP   nothing: a join point
 * A node starts when every node it comes after is done; nodes that do not
 * depend on each other proceed at the same time.  Nodes created without a
 * predecessor come after START, nodes nothing comes after go before END.
 *
 * Once issued, a schedule is a fixed-size array of fixed-size nodes and an
 * array of successor indices (no pointers between nodes), so that an engine
 * may run it anywhere: in the MPI progress loop, in a progress thread, and
 * later in io_uring or a kernel module.  Buffers are addresses in the
 * process; datatypes and ops are handles (the schedule keeps them alive).
 *
 * Coll components build the non-blocking and persistent collectives this
 * way: the core creates the schedule, calls the component's builder (struct
 * kumi_coll_fns, i* entries) with the user's arguments, issues it, and for a
 * persistent collective reruns the same schedule at every MPI_Start.
 *
 * Builders: each function returns the new node's index (>= 0).  On failure
 * (out of memory, bad argument) it returns -1 and the schedule remembers the
 * error: the core reports it when the builder returns, so a builder need not
 * check every call; kumi_sched_after ignores -1 indices.
 *
 * Tags: messages of one schedule travel in the communicator's collective
 * context with a tag of their own, so they never meet those of another
 * collective in flight.  A node's tag (0 .. KUMI_SCHED_TAG_MAX) tells apart
 * messages between the same two ranks within one schedule: two messages
 * from A to B with the same tag match in the order the nodes are started,
 * so use distinct tags where the DAG leaves that order open.
 */
#ifndef KUMI_SCHED_H
#define KUMI_SCHED_H

#include <kumi/kumi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KUMI_SCHED_TAG_MAX 4095

struct kumi_sched;

KUMI_EXPORT int kumi_sched_send(struct kumi_sched *s, const void *buf, size_t count, MPI_Datatype dt,
                                int peer, int tag);
KUMI_EXPORT int kumi_sched_recv(struct kumi_sched *s, void *buf, size_t count, MPI_Datatype dt,
                                int peer, int tag);
KUMI_EXPORT int kumi_sched_calc(struct kumi_sched *s, const void *in, void *inout, size_t count,
                                MPI_Datatype dt, MPI_Op op);
KUMI_EXPORT int kumi_sched_copy(struct kumi_sched *s, const void *src, size_t scount, MPI_Datatype sdt,
                                void *dst, size_t dcount, MPI_Datatype ddt);
KUMI_EXPORT int kumi_sched_nop(struct kumi_sched *s);
/* node runs only after pred is done (either -1: nothing). */
KUMI_EXPORT void kumi_sched_after(struct kumi_sched *s, int node, int pred);
/* node runs after each of preds[0..n) (entries of -1 are skipped). */
KUMI_EXPORT void kumi_sched_after_all(struct kumi_sched *s, int node, const int *preds, int n);
/* Scratch memory that lives as long as the schedule (NULL on failure, and
 * the schedule remembers MPI_ERR_NO_MEM).  Not cleared. */
KUMI_EXPORT void *kumi_sched_alloc(struct kumi_sched *s, size_t bytes);
/* Record an error found while building (e.g. MPI_ERR_OP); returns -1. */
KUMI_EXPORT int kumi_sched_fail(struct kumi_sched *s, int err);
/* The communicator the schedule runs on. */
KUMI_EXPORT MPI_Comm kumi_sched_comm(const struct kumi_sched *s);

#ifdef __cplusplus
}
#endif
#endif
