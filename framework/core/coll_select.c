/* Choosing the coll components of a communicator (kumi_coll_select, at
 * its creation) and their release hooks (kumi_coll_release).  The MPI
 * functions of the collectives are in mpi/coll.c. */
#include "core/core.h"
#include "registry/registry.h"

#include <string.h>

/* Every operation of struct kumi_coll_fns with the MPI name it implements. */
#define COLL_OPS(X)                                                              \
    X(barrier, "MPI_Barrier") X(bcast, "MPI_Bcast") X(gather, "MPI_Gather")      \
    X(gatherv, "MPI_Gatherv") X(scatter, "MPI_Scatter")                          \
    X(scatterv, "MPI_Scatterv") X(allgather, "MPI_Allgather")                    \
    X(allgatherv, "MPI_Allgatherv") X(alltoall, "MPI_Alltoall")                  \
    X(alltoallv, "MPI_Alltoallv") X(alltoallw, "MPI_Alltoallw")                  \
    X(reduce, "MPI_Reduce") X(allreduce, "MPI_Allreduce")                        \
    X(reduce_scatter, "MPI_Reduce_scatter")                                      \
    X(reduce_scatter_block, "MPI_Reduce_scatter_block") X(scan, "MPI_Scan")      \
    X(exscan, "MPI_Exscan")
/* Operations a communicator may lack (only topologies use the neighborhood
 * ones; a call of an operation nobody builds schedules for fails): picked,
 * never required. */
#define COLL_OPS_OPTIONAL(X)                                                     \
    X(neighbor_allgather, "MPI_Neighbor_allgather")                              \
    X(neighbor_allgatherv, "MPI_Neighbor_allgatherv")                            \
    X(neighbor_alltoall, "MPI_Neighbor_alltoall")                                \
    X(neighbor_alltoallv, "MPI_Neighbor_alltoallv")                              \
    X(neighbor_alltoallw, "MPI_Neighbor_alltoallw")                              \
    X(ibarrier, "MPI_Ibarrier") X(ibcast, "MPI_Ibcast") X(igather, "MPI_Igather") \
    X(igatherv, "MPI_Igatherv") X(iscatter, "MPI_Iscatter")                      \
    X(iscatterv, "MPI_Iscatterv") X(iallgather, "MPI_Iallgather")                \
    X(iallgatherv, "MPI_Iallgatherv") X(ialltoall, "MPI_Ialltoall")              \
    X(ialltoallv, "MPI_Ialltoallv") X(ialltoallw, "MPI_Ialltoallw")              \
    X(ireduce, "MPI_Ireduce") X(iallreduce, "MPI_Iallreduce")                    \
    X(ireduce_scatter, "MPI_Ireduce_scatter")                                    \
    X(ireduce_scatter_block, "MPI_Ireduce_scatter_block") X(iscan, "MPI_Iscan")  \
    X(iexscan, "MPI_Iexscan")                                                    \
    X(ineighbor_allgather, "MPI_Ineighbor_allgather")                            \
    X(ineighbor_allgatherv, "MPI_Ineighbor_allgatherv")                          \
    X(ineighbor_alltoall, "MPI_Ineighbor_alltoall")                              \
    X(ineighbor_alltoallv, "MPI_Ineighbor_alltoallv")                            \
    X(ineighbor_alltoallw, "MPI_Ineighbor_alltoallw")

enum {
#define COLL_IDX(f, name) COLL_I_##f,
    COLL_OPS(COLL_IDX)
    COLL_OPS_OPTIONAL(COLL_IDX)
#undef COLL_IDX
    COLL_NOPS
};

int kumi_coll_select(struct kumi_comm *c)
{
    int n = 0;
    struct kumi_comp_entry **ents = kumi_registry_available("coll", &n);
    struct kumi_coll_fns best, next;
    int bestprio[COLL_NOPS], nextprio[COLL_NOPS];
    struct kumi_comp_entry *bestent[COLL_NOPS];
    const struct kumi_coll_ops *nextops[COLL_NOPS];

    memset(&best, 0, sizeof best);
    memset(&next, 0, sizeof next);
    memset(bestent, 0, sizeof bestent);
    memset(nextops, 0, sizeof nextops);
    for (int i = 0; i < COLL_NOPS; i++) bestprio[i] = nextprio[i] = 0;

    for (int e = 0; ents && e < n; e++) {
        struct kumi_comp_entry *ent = ents[e];
        if (!ent || !ent->comp) continue;
        const struct kumi_coll_ops *ops = ent->comp->ops;
        if (!ops || !ops->comm_query) continue;
        struct kumi_coll_fns f;
        memset(&f, 0, sizeof f);
        long long p = ent->priority;
        int prio = p > INT32_MAX ? INT32_MAX : p < INT32_MIN ? INT32_MIN : (int)p;
        if (ops->comm_query((MPI_Comm)c, &prio, &f) != KUMI_OK) continue;
        /* Highest priority wins; on a tie the component preferred earlier.
         * The runner-up (another component's) is kept in next. */
#define COLL_PICK(fld, name)                                                     \
        if (f.fld && (!best.fld || prio > bestprio[COLL_I_##fld])) {             \
            next.fld = best.fld;                                                 \
            nextprio[COLL_I_##fld] = bestprio[COLL_I_##fld];                     \
            nextops[COLL_I_##fld] = bestent[COLL_I_##fld]                        \
                ? bestent[COLL_I_##fld]->comp->ops : NULL;                       \
            best.fld = f.fld;                                                    \
            bestprio[COLL_I_##fld] = prio;                                       \
            bestent[COLL_I_##fld] = ent;                                         \
        } else if (f.fld && (!next.fld || prio > nextprio[COLL_I_##fld])) {      \
            next.fld = f.fld;                                                    \
            nextprio[COLL_I_##fld] = prio;                                       \
            nextops[COLL_I_##fld] = ops;                                         \
        }
        COLL_OPS(COLL_PICK)
        COLL_OPS_OPTIONAL(COLL_PICK)
#undef COLL_PICK
    }

#define COLL_MISSING(fld, mpiname)                                                  \
    if (!best.fld)                                                               \
        return kumi_error(MPI_ERR_INTERN, "coll: no available coll component provides %s " \
                          "for communicator %s (of size %d)", mpiname,             \
                          c->name[0] ? c->name : "(unnamed)", c->size);
    COLL_OPS(COLL_MISSING)
#undef COLL_MISSING

    for (int i = 0; i < COLL_NOPS; i++)
        if (bestent[i]) bestent[i]->status = KUMI_COMP_SELECTED;
    c->coll = best;
    c->coll_next = next;
    for (int i = 0; i < KUMI_COLL_NBLOCKING; i++) {
        c->coll_by[0][i] = bestent[i]->comp->ops;
        c->coll_by[1][i] = nextops[i];
    }
    kumi_log(2, "coll: communicator %s: bcast from %s, allreduce from %s",
             c->name[0] ? c->name : "(unnamed)", bestent[COLL_I_bcast]->name,
             bestent[COLL_I_allreduce]->name);
    return MPI_SUCCESS;
}

_Static_assert(COLL_I_exscan + 1 == KUMI_COLL_NBLOCKING, "core.h: KUMI_COLL_NBLOCKING is the blocking collectives");
_Static_assert(offsetof(struct kumi_coll_fns, exscan) / sizeof(void (*)(void)) + 1 == KUMI_COLL_NBLOCKING,
               "the blocking collectives are the first fields of struct kumi_coll_fns, in COLL_OPS order");

KUMI_EXPORT int kumi_coll_pace_hint(MPI_Comm comm, const char *coll, size_t bytes, int next,
                                    struct kumi_pace_hint *hint)
{
    static const char *const names[] = {
#define COLL_NAME(f, name) #f,
        COLL_OPS(COLL_NAME)
#undef COLL_NAME
    };
    struct kumi_comm *c = kumi_comm_get(comm);
    hint->fanout = hint->nsenders = -1;
    hint->senders = NULL;
    if (!c || !coll) return 0;
    for (int i = 0; i < KUMI_COLL_NBLOCKING; i++) {
        if (strcmp(names[i], coll)) continue;
        const struct kumi_coll_ops *ops = c->coll_by[next ? 1 : 0][i];
        if (!ops || !ops->pace_hint || ops->pace_hint(comm, coll, bytes, hint) != 1) break;
        if (hint->nsenders < 0 || hint->nsenders > (c->inter ? c->remote_size : c->size) || !hint->senders) {
            hint->nsenders = -1;                /* no list, or a wrong one: every rank */
            hint->senders = NULL;
        }
        if (hint->fanout < -1) hint->fanout = -1;
        return 1;
    }
    hint->fanout = hint->nsenders = -1;
    hint->senders = NULL;
    return 0;
}

/* c is being freed: every coll component forgets what it keeps for it. */
void kumi_coll_release(struct kumi_comm *c)
{
    int n = 0;
    struct kumi_comp_entry **ents = kumi_registry_available("coll", &n);
    for (int e = 0; ents && e < n; e++) {
        const struct kumi_coll_ops *ops = ents[e] && ents[e]->comp ? ents[e]->comp->ops : NULL;
        if (ops && ops->comm_release) ops->comm_release((MPI_Comm)c);
    }
}
