/* coll: collective operations, chosen per communicator.
 *
 * When a communicator is created, every available coll component's
 * comm_query() is asked for a table; for each operation the provider with
 * the highest priority wins (a NULL entry provides nothing).  The decision
 * uses only data that is the same on every rank of the communicator.
 *
 * The entry points have the signatures of the MPI-4 large-count (`_c`)
 * forms: every count is an MPI_Count, every count array `const MPI_Count[]`
 * and every displacement array `const MPI_Aint[]` (for alltoallw bytes,
 * elsewhere elements of the datatype).  Counts and displacements may exceed
 * INT_MAX: compute sizes and offsets in size_t / MPI_Aint, never in int.
 * The MPI front end widens the int arrays of the plain MPI forms before the
 * call; the arrays are valid only during the call (a schedule builder copies
 * what it needs).  This is a guarantee callers rely on: the front end frees
 * the widened arrays when the builder returns, and the foreign-ABI shims
 * (components/abi) free the type arrays they convert for MPI_Ialltoallw and
 * MPI_Ineighbor_alltoallw when the call returns, so no nonblocking or
 * persistent schedule may keep a pointer into count, displacement or type
 * arrays (coll/basic, its inter and neighborhood builders and coll/tuned copy
 * per-block addresses, counts and types into the schedule's nodes, or into
 * memory they free before returning).  Arguments have been checked
 * (handles valid, counts >= 0, root in range) before a component is called.
 * Handles passed in may be predefined constants or object pointers; use the
 * helper functions below to look inside them.  Return MPI_SUCCESS or an MPI
 * error code (made with kumi_error); never invoke error handlers.
 *
 * Collective traffic travels in the communicator's collective context, so
 * it never matches the application's point-to-point messages.  Components
 * use tags >= 0 of their own choosing.
 */
#ifndef KUMI_COLL_H
#define KUMI_COLL_H

#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/sched.h>
#include <kumi/pacing.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The coll contract (see kumi/component.h for the rules) covers both
 * tables below: struct kumi_coll_ops (the component's, starting with its
 * kumi_ops_hdr) and struct kumi_coll_fns, which comm_query fills:
 *   1.0  comm_query (mandatory);
 *   1.1  adds comm_release (was component ABI version 4);
 *   1.2  adds pace_hint (optional).
 * The minor also grows when an optional operation is added at the end of
 * struct kumi_coll_fns.  Because comm_query writes into a kumi_coll_fns
 * that the library owns, a component built against a newer coll minor than
 * the library's is refused (it could write past the library's table); an
 * older one is fine (the library zero-fills the table first). */
#define KUMI_COLL_CONTRACT_MAJOR 1
#define KUMI_COLL_CONTRACT_MINOR 2
#define KUMI_COLL_OPS_HDR KUMI_OPS_HDR(struct kumi_coll_ops, KUMI_COLL_CONTRACT_MAJOR, KUMI_COLL_CONTRACT_MINOR)
/* Size of the mandatory part: every table is at least this long. */
#define KUMI_COLL_OPS_MIN_SIZE offsetof(struct kumi_coll_ops, comm_release)

struct kumi_coll_fns {
    int (*barrier)(MPI_Comm comm);
    int (*bcast)(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm);
    int (*gather)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                  void *rbuf, MPI_Count rcount, MPI_Datatype rdt, int root, MPI_Comm comm);
    int (*gatherv)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                   void *rbuf, const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt,
                   int root, MPI_Comm comm);
    int (*scatter)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                   void *rbuf, MPI_Count rcount, MPI_Datatype rdt, int root, MPI_Comm comm);
    int (*scatterv)(const void *sbuf, const MPI_Count scounts[], const MPI_Aint displs[], MPI_Datatype sdt,
                    void *rbuf, MPI_Count rcount, MPI_Datatype rdt, int root, MPI_Comm comm);
    int (*allgather)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                     void *rbuf, MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm);
    int (*allgatherv)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                      void *rbuf, const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt,
                      MPI_Comm comm);
    int (*alltoall)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                    void *rbuf, MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm);
    int (*alltoallv)(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[], MPI_Datatype sdt,
                     void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[], MPI_Datatype rdt,
                     MPI_Comm comm);
    int (*alltoallw)(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[], const MPI_Datatype sdts[],
                     void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[], const MPI_Datatype rdts[],
                     MPI_Comm comm);
    int (*reduce)(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                  int root, MPI_Comm comm);
    int (*allreduce)(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                     MPI_Comm comm);
    int (*reduce_scatter)(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dt,
                          MPI_Op op, MPI_Comm comm);
    int (*reduce_scatter_block)(const void *sbuf, void *rbuf, MPI_Count rcount, MPI_Datatype dt,
                                MPI_Op op, MPI_Comm comm);
    int (*scan)(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
    int (*exscan)(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
    /* Neighborhood collectives (communicators with a topology; see
     * kumi_topo_neighbors).  Optional: a component may leave them NULL. */
    int (*neighbor_allgather)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                              void *rbuf, MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm);
    int (*neighbor_allgatherv)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                               void *rbuf, const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt,
                               MPI_Comm comm);
    int (*neighbor_alltoall)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                             void *rbuf, MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm);
    int (*neighbor_alltoallv)(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[], MPI_Datatype sdt,
                              void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[], MPI_Datatype rdt,
                              MPI_Comm comm);
    int (*neighbor_alltoallw)(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                              const MPI_Datatype sdts[], void *rbuf, const MPI_Count rcounts[],
                              const MPI_Aint rdispls[], const MPI_Datatype rdts[], MPI_Comm comm);

    /* ---- Schedule builders (kumi/sched.h) for the non-blocking (MPI_I*)
     * and persistent (MPI_*_init) collectives: add the operation's nodes to
     * s, which runs on comm.  The arguments are those of the blocking
     * operation, checked the same way; buffers, counts and displacements
     * are read now (a persistent collective reruns what was built).  Return
     * MPI_SUCCESS or an error code (the schedule may also hold one).  The
     * neighborhood builders are optional, like their blocking operations. */
    int (*ibarrier)(MPI_Comm comm, struct kumi_sched *s);
    int (*ibcast)(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm, struct kumi_sched *s);
    int (*igather)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                   void *rbuf, MPI_Count rcount, MPI_Datatype rdt, int root, MPI_Comm comm, struct kumi_sched *s);
    int (*igatherv)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                    void *rbuf, const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt,
                    int root, MPI_Comm comm, struct kumi_sched *s);
    int (*iscatter)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                    void *rbuf, MPI_Count rcount, MPI_Datatype rdt, int root, MPI_Comm comm, struct kumi_sched *s);
    int (*iscatterv)(const void *sbuf, const MPI_Count scounts[], const MPI_Aint displs[], MPI_Datatype sdt,
                     void *rbuf, MPI_Count rcount, MPI_Datatype rdt, int root, MPI_Comm comm, struct kumi_sched *s);
    int (*iallgather)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                      void *rbuf, MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm, struct kumi_sched *s);
    int (*iallgatherv)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                       void *rbuf, const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt,
                       MPI_Comm comm, struct kumi_sched *s);
    int (*ialltoall)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                     void *rbuf, MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm, struct kumi_sched *s);
    int (*ialltoallv)(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[], MPI_Datatype sdt,
                      void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[], MPI_Datatype rdt,
                      MPI_Comm comm, struct kumi_sched *s);
    int (*ialltoallw)(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[], const MPI_Datatype sdts[],
                      void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[], const MPI_Datatype rdts[],
                      MPI_Comm comm, struct kumi_sched *s);
    int (*ireduce)(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                   int root, MPI_Comm comm, struct kumi_sched *s);
    int (*iallreduce)(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                      MPI_Comm comm, struct kumi_sched *s);
    int (*ireduce_scatter)(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dt,
                           MPI_Op op, MPI_Comm comm, struct kumi_sched *s);
    int (*ireduce_scatter_block)(const void *sbuf, void *rbuf, MPI_Count rcount, MPI_Datatype dt,
                                 MPI_Op op, MPI_Comm comm, struct kumi_sched *s);
    int (*iscan)(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                 struct kumi_sched *s);
    int (*iexscan)(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                   struct kumi_sched *s);
    int (*ineighbor_allgather)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                               void *rbuf, MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm, struct kumi_sched *s);
    int (*ineighbor_allgatherv)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                                void *rbuf, const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt,
                                MPI_Comm comm, struct kumi_sched *s);
    int (*ineighbor_alltoall)(const void *sbuf, MPI_Count scount, MPI_Datatype sdt,
                              void *rbuf, MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm, struct kumi_sched *s);
    int (*ineighbor_alltoallv)(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[], MPI_Datatype sdt,
                               void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[], MPI_Datatype rdt,
                               MPI_Comm comm, struct kumi_sched *s);
    int (*ineighbor_alltoallw)(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                               const MPI_Datatype sdts[], void *rbuf, const MPI_Count rcounts[],
                               const MPI_Aint rdispls[], const MPI_Datatype rdts[], MPI_Comm comm,
                               struct kumi_sched *s);
};

struct kumi_coll_ops {
    struct kumi_ops_hdr hdr;   /* KUMI_COLL_OPS_HDR */
    /* ---- Contract 1.0 ---- */
    /* Fill the operations this component provides for comm (leave others
     * NULL) and set *priority (default: the component's priority parameter).
     * Return KUMI_UNAVAILABLE to provide nothing for this communicator. */
    int (*comm_query)(MPI_Comm comm, int *priority, struct kumi_coll_fns *fns);
    /* ---- Contract 1.1 ---- */
    /* comm is being freed (any communicator, also one the component gave
     * nothing for): drop what the component keeps for it.  Not collective;
     * no communication.  May be NULL. */
    void (*comm_release)(MPI_Comm comm);
    /* ---- Contract 1.2 ---- */
    /* For the pacing component (kumi/pacing.h): what the blocking
     * collective coll ("alltoall", ... the field names of struct
     * kumi_coll_fns) on comm, which this component provides, will send,
     * asked just before the call: fill *hint (its fields come as -1 / NULL:
     * unknown; senders must stay valid while comm exists) and return 1, or
     * return 0: no hint.  bytes is one block, count x type size: of the
     * receive side for alltoall, allgather and scatter, of the send side for
     * gather, of the buffer for bcast, reduce, allreduce, scan and exscan;
     * 0 for the others (the v and w forms, barrier, reduce_scatter).  Never communicates; a component that passes a call
     * on (to a sub-communicator, to the next component) may ask the one
     * that runs it (kumi_coll_pace_hint).  May be NULL: no hints. */
    int (*pace_hint)(MPI_Comm comm, const char *coll, size_t bytes, struct kumi_pace_hint *hint);
};

/* ---- helpers for collective components (exported by the core) ---- */

KUMI_EXPORT int kumi_comm_rank(MPI_Comm comm);
KUMI_EXPORT int kumi_comm_size(MPI_Comm comm);

/* Intercommunicators (framework/core/intercomm.c).  kumi_comm_rank / _size
 * describe the local group; point-to-point (and kumi_coll_* below) address
 * the remote group.  kumi_comm_local gives the intracommunicator of the local
 * group (its own contexts) for the local phases of a collective, and
 * kumi_comm_coll the collectives chosen for a communicator (e.g. that one). */
KUMI_EXPORT int kumi_comm_is_inter(MPI_Comm comm);
KUMI_EXPORT int kumi_comm_remote_size(MPI_Comm comm);
KUMI_EXPORT MPI_Comm kumi_comm_local(MPI_Comm comm);
KUMI_EXPORT const struct kumi_coll_fns *kumi_comm_coll(MPI_Comm comm);

/* The collectives comm would have without the component that provides
 * each operation: per operation, the best of the other components' (NULL
 * where no other one provides it).  A component that handles only some
 * calls of an operation itself (small messages, one host: coll/sm) passes
 * the others on to it. */
KUMI_EXPORT const struct kumi_coll_fns *kumi_comm_coll_next(MPI_Comm comm);

/* The pace_hint (above) of the component that provides the blocking
 * collective coll on comm (next != 0: of the one kumi_comm_coll_next gives),
 * for a component that passes such a call on: 1 with *hint filled, 0 when
 * that component gives none (*hint then says unknown: fanout -1, nsenders
 * -1, senders NULL). */
KUMI_EXPORT int kumi_coll_pace_hint(MPI_Comm comm, const char *coll, size_t bytes, int next,
                                    struct kumi_pace_hint *hint);

/* Blocking wait of a component on a condition that is not a request (shared
 * memory that other processes write): until done(arg) returns nonzero,
 * drive the progress engine as a blocking MPI wait does (spin, then yield
 * the CPU: parameters kumi_base_progress_*), then call nap(arg) between
 * polls, with the library lock released: it sleeps until the condition may
 * have changed (a futex that the writer wakes) or a short time has passed,
 * and must not communicate. */
KUMI_EXPORT void kumi_coll_wait_until(int (*done)(void *), void *arg, void (*nap)(void *));

/* Sub-communicators, for hierarchical components (coll/lact): the
 * communicator of ranks[0..n) of intracommunicator comm, in that order (the
 * caller must be among them).  Made by those ranks only, with point-to-point
 * messages in comm's collective context: no collective of comm runs, so a
 * component may make one inside its own collectives.  key (0 .. 2^24-1)
 * tells apart sub-communicators of comm that overlapping sets of ranks make
 * at the same time.  Its collectives are chosen as for any communicator
 * (kumi_comm_is_sub lets a hierarchical component decline it).  Errors:
 * MPI_ERR_ARG / MPI_ERR_RANK / MPI_ERR_NO_MEM.  kumi_comm_sub_free frees
 * one (not collective; NULL and user communicators are ignored). */
KUMI_EXPORT int kumi_comm_sub_create(MPI_Comm comm, int n, const int ranks[], int key, MPI_Comm *out);
KUMI_EXPORT int kumi_comm_is_sub(MPI_Comm comm);
KUMI_EXPORT void kumi_comm_sub_free(MPI_Comm *comm);
/* Another rule for the context ids of new communicators (coll/impi: IMPI's,
 * sheet §5.2-§5.7), set by a component at open (NULL fields: none).
 * applies(comm): 1 if the communicators made from intracommunicator comm
 * by MPI_Comm_dup / create / split and the topology constructors follow the
 * rule (the same answer on every rank of comm); then agree(comm, &ctx),
 * collective over every rank of comm, gives the new context pair (ctx,
 * ctx + 1) instead of Kumi's agreement, MPI_Comm_split exchanges
 * (colour, key, rank) triples after it (IMPI's order), and MPI_Comm_free of
 * a communicator so made runs its barrier first.  Not used in a process at
 * MPI_THREAD_MULTIPLE (creations in several threads at once). */
struct kumi_ctx_rule {
    int (*applies)(MPI_Comm comm);
    int (*agree)(MPI_Comm comm, int32_t *ctx);
    /* Intercommunicators (NULL: Kumi's own agreement for them).
     * applies_inter(local, rn, rjob): 1 if the rule gives the contexts of an
     * intercommunicator between the group of intracommunicator local and the
     * remote group of job-wide ranks rjob[0..rn) (the same answer on every
     * process of both groups).  agree_inter(kind, local, leader, inter, xchg,
     * arg, extra, rextra, nctx, ctx), collective over both groups (each calls
     * it with its own group's local; leader: the rank in local that talks to
     * the other group's leader): kind KUMI_CTX_IC_CREATE (inter
     * MPI_COMM_NULL: the leaders talk through xchg(arg, mine, theirs, n), a
     * blocking exchange of n words, on the leader only), KUMI_CTX_IC_MERGE or
     * KUMI_CTX_IC_DERIVE (the new one's parent intercommunicator inter,
     * leaders its rank 0); extra: a word carried to the other group, whose
     * word comes back in *rextra (NULL: none); gives nctx context pairs
     * ctx[0..nctx) (ctx[0] the new communicator's, ctx[1] its local
     * group's). */
    int (*applies_inter)(MPI_Comm local, int rn, const int rjob[]);
    int (*agree_inter)(int kind, MPI_Comm local, int leader, MPI_Comm inter,
                       int (*xchg)(void *arg, const uint64_t *mine, uint64_t *theirs, int n), void *arg,
                       uint64_t extra, uint64_t *rextra, int nctx, int32_t ctx[]);
};
enum { KUMI_CTX_IC_CREATE = 1, KUMI_CTX_IC_MERGE = 2, KUMI_CTX_IC_DERIVE = 3 };
KUMI_EXPORT void kumi_ctx_rule_set(const struct kumi_ctx_rule *rule);
/* The job-wide rank of rank r of comm (the rank kumi_rpim_get takes, e.g.
 * for the key "kumi.host": the host name of that process); -1 if invalid. */
KUMI_EXPORT int kumi_comm_job_rank(MPI_Comm comm, int r);

/* Datatypes: size in bytes of one element's data; lb and extent. */
KUMI_EXPORT size_t kumi_dt_size(MPI_Datatype dt);
KUMI_EXPORT void kumi_dt_extent(MPI_Datatype dt, MPI_Aint *lb, MPI_Aint *extent);
KUMI_EXPORT void kumi_dt_true_extent(MPI_Datatype dt, MPI_Aint *true_lb, MPI_Aint *true_extent);
/* 1 if count elements of dt at buf are count * size(dt) bytes in type-map
 * order at buf + true_lb (a predefined type, a contiguous type, ...). */
KUMI_EXPORT int kumi_dt_contiguous(MPI_Datatype dt);
/* Local copy as a matched send/receive would do it (sizes must agree;
 * MPI_ERR_TRUNCATE if the receive side is smaller). */
KUMI_EXPORT int kumi_dt_copy(const void *sbuf, size_t scount, MPI_Datatype sdt,
                             void *rbuf, size_t rcount, MPI_Datatype rdt);

/* Reductions: inout[i] = in[i] op inout[i] for count elements of dt.
 * MPI_ERR_OP if op is not defined for dt. */
KUMI_EXPORT int kumi_op_reduce(MPI_Op op, const void *in, void *inout, size_t count, MPI_Datatype dt);
KUMI_EXPORT int kumi_op_commutative(MPI_Op op);

/* Point-to-point in the communicator's collective context.  A request
 * completes through kumi_coll_wait / kumi_coll_waitall (which free it).
 * A receive of a message longer than its buffer (the ranks disagree on a
 * count) is MPI_ERR_TRUNCATE; inside a blocking collective that the MPI
 * front end called, kumi_coll_wait returns MPI_SUCCESS for it instead (the
 * buffer holds what fit) and the front end reports the truncation when the
 * collective returns: an algorithm runs to its end, and no peer waits
 * forever for a message this rank owes it.  A component does the same with
 * a truncating kumi_dt_copy of its own data (keep the error, go on). */
typedef struct kumi_req *kumi_coll_req;
KUMI_EXPORT int kumi_coll_isend(const void *buf, size_t count, MPI_Datatype dt, int dest, int tag,
                                MPI_Comm comm, kumi_coll_req *req);
KUMI_EXPORT int kumi_coll_irecv(void *buf, size_t count, MPI_Datatype dt, int src, int tag,
                                MPI_Comm comm, kumi_coll_req *req);
KUMI_EXPORT int kumi_coll_wait(kumi_coll_req *req);
KUMI_EXPORT int kumi_coll_waitall(int n, kumi_coll_req reqs[]);
KUMI_EXPORT int kumi_coll_send(const void *buf, size_t count, MPI_Datatype dt, int dest, int tag,
                               MPI_Comm comm);
KUMI_EXPORT int kumi_coll_recv(void *buf, size_t count, MPI_Datatype dt, int src, int tag,
                               MPI_Comm comm);
KUMI_EXPORT int kumi_coll_sendrecv(const void *sbuf, size_t scount, MPI_Datatype sdt, int dest, int stag,
                                   void *rbuf, size_t rcount, MPI_Datatype rdt, int src, int rtag,
                                   MPI_Comm comm);

/* Topologies: the neighbourhood of comm in the order of the neighborhood
 * collectives.  Block i of the receive side comes from sources[i], block j of
 * the send side goes to destinations[j]; MPI_PROC_NULL entries (Cartesian
 * borders) take part in no communication.  The message sent to
 * destinations[j] with tag T + sendtags[j] is the one the receiver expects
 * with tag T + recvtags[i] (offsets < 2^20; they tell apart the two
 * directions of a Cartesian dimension whose neighbours are one process;
 * edges with equal offsets between the same pair match in list order).
 * The arrays stay valid while comm exists.  MPI_ERR_TOPOLOGY if comm has
 * no topology. */
KUMI_EXPORT int kumi_topo_neighbors(MPI_Comm comm, int *indegree, const int **sources,
                                    const int **recvtags, int *outdegree,
                                    const int **destinations, const int **sendtags);

#ifdef __cplusplus
}
#endif
#endif
