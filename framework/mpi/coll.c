/* The MPI functions of the collectives: the checks the generated binding
 * cannot do, then a call through the communicator's table (blocking) or a
 * schedule the table's component builds (non-blocking, persistent).
 *
 * The generated binding has already checked the scalar arguments (handles,
 * counts >= 0, root in range, predefined op defined for the datatype, NULL
 * buffers with count > 0).  Here: array arguments, MPI_IN_PLACE where the
 * standard does not allow it, buffers that alias. */
#include "mpi/mpi_front.h"
#include "sched/sched.h"
#include "mpi/coll_accel.h"
#include <kumi/param.h>

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ widening */
/* The coll contract (kumi/coll.h) takes MPI_Count counts and MPI_Aint
 * displacements; the plain MPI forms give int arrays.  Arrays of up to
 * coll_widen_stack entries (at most KUMI_WIDEN_STACK) are widened into the
 * struct on the caller's stack, longer ones into one malloc'd block, freed
 * once the call (or the schedule's build) has returned. */
static long long widen_stack = KUMI_WIDEN_STACK;     /* kumi_base_coll_widen_stack */

void kumi_coll_register_params(void)
{
    kumi_param_register_int("kumi", "base", "coll_widen_stack", KUMI_WIDEN_STACK,
                            "Longest int count or displacement array of a v-collective widened "
                            "for the coll components on the stack (0 .. 64); longer ones are "
                            "widened into allocated memory (for testing)",
                            KUMI_LEVEL_DEV, &widen_stack);
    kumi_param_set_runtime("kumi_base_coll_widen_stack");      /* read at each v-collective */
    kumi_cpipe_register_params();
}

int kumi_widen_begin(struct kumi_widen *w, const char *fn, int n, int ncounts, int ndispls)
{
    w->heap = NULL;
    w->types = NULL;
    w->cn = w->c;
    w->an = w->a;
    if (n <= 0 || (n <= widen_stack && n <= KUMI_WIDEN_STACK && ncounts <= 2 && ndispls <= 2))
        return MPI_SUCCESS;
    size_t nc = (size_t)n * (size_t)ncounts, na = (size_t)n * (size_t)ndispls;
    if (!(w->heap = malloc(sizeof(MPI_Count) * nc + sizeof(MPI_Aint) * na + 1)))
        return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory widening count arrays of %d entries",
                          fn, n);
    w->cn = w->heap;
    w->an = (MPI_Aint *)(w->cn + nc);
    return MPI_SUCCESS;
}

const MPI_Count *kumi_widen_counts(struct kumi_widen *w, const int *in, int n)
{
    if (!in) return NULL;
    MPI_Count *out = w->cn;
    for (int i = 0; i < n; i++) out[i] = in[i];
    w->cn += n;
    return out;
}

const MPI_Aint *kumi_widen_displs(struct kumi_widen *w, const int *in, int n)
{
    if (!in) return NULL;
    MPI_Aint *out = w->an;
    for (int i = 0; i < n; i++) out[i] = in[i];
    w->an += n;
    return out;
}

void kumi_widen_end(struct kumi_widen *w)
{
    free(w->heap);
    free(w->types);
    w->heap = NULL;
    w->types = NULL;
}

/* ------------------------------------------------------------ checks */
/* The count and displacement arrays come as the caller gave them: int (the
 * plain forms) or, with large (the _c forms), MPI_Count counts and MPI_Aint
 * displacements. */
static inline MPI_Count count_at(const void *counts, bool large, int i)
{
    return large ? ((const MPI_Count *)counts)[i] : ((const int *)counts)[i];
}

/* counts[0..n) must exist and be >= 0. */
static int check_counts(const char *fname, const char *arg, const void *counts, bool large, int n)
{
    if (n > 0 && !counts)
        return kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fname, arg);
    for (int i = 0; i < n; i++)
        if (count_at(counts, large, i) < 0)
            return kumi_error(MPI_ERR_COUNT, "%s: argument %s[%d] is %lld, must not be negative",
                              fname, arg, i, (long long)count_at(counts, large, i));
    return MPI_SUCCESS;
}

/* For the coll contract: the _c forms' arrays as they are, the int ones
 * widened (kumi_widen_*). */
static const MPI_Count *wide_counts(struct kumi_widen *w, const void *in, bool large, int n)
{
    return large ? (const MPI_Count *)in : kumi_widen_counts(w, in, n);
}

static const MPI_Aint *wide_displs(struct kumi_widen *w, const void *in, bool large, int n)
{
    return large ? (const MPI_Aint *)in : kumi_widen_displs(w, in, n);
}

static int check_displs(const char *fname, const char *arg, const void *displs, int n)
{
    if (n > 0 && !displs)
        return kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fname, arg);
    return MPI_SUCCESS;
}

/* The types of Alltoallw: an entry with a zero count moves nothing, so it may
 * be MPI_DATATYPE_NULL (or anything); the others must be valid and committed. */
static int check_types(const char *fname, const char *arg, const MPI_Datatype *types, const void *counts,
                       bool large, int n, int *ignored)
{
    if (n > 0 && !types)
        return kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fname, arg);
    for (int i = 0; i < n; i++) {
        struct kumi_dt *dt = kumi_dt_get(types[i]);
        if (count_at(counts, large, i) == 0) {
            if (!dt) ++*ignored;
            continue;
        }
        if (!dt)
            return kumi_error(MPI_ERR_TYPE, "%s: argument %s[%d] is not a valid datatype",
                              fname, arg, i);
        if (!dt->predefined && !dt->committed)
            return kumi_error(MPI_ERR_TYPE, "%s: argument %s[%d] is not committed", fname, arg, i);
    }
    return MPI_SUCCESS;
}

/* The components never see an ignored type: copies of the arrays (freed by
 * kumi_widen_end) where MPI_BYTE stands for each entry that is no valid
 * type.  *st and *rt are the arrays to pass on (NULL when out of memory). */
static void usable_types(struct kumi_widen *w, const MPI_Datatype *sendtypes, int s_ignored,
                         const MPI_Datatype *recvtypes, int r_ignored, int n,
                         const MPI_Datatype **st, const MPI_Datatype **rt)
{
    *st = sendtypes;
    *rt = recvtypes;
    if (!s_ignored && !r_ignored) return;
    if (!(w->types = malloc(sizeof *w->types * 2 * (size_t)n))) {
        *st = *rt = NULL;
        return;
    }
    for (int i = 0; i < n; i++) {
        if (s_ignored) w->types[i] = kumi_dt_get(sendtypes[i]) ? sendtypes[i] : MPI_BYTE;
        if (r_ignored) w->types[n + i] = kumi_dt_get(recvtypes[i]) ? recvtypes[i] : MPI_BYTE;
    }
    if (s_ignored) *st = w->types;
    if (r_ignored) *rt = w->types + n;
}

static int no_in_place(const char *fname, const char *arg, const void *buf, const char *where)
{
    if (buf == MPI_IN_PLACE)
        return kumi_error(MPI_ERR_BUFFER, "%s: MPI_IN_PLACE is not allowed for argument %s%s",
                          fname, arg, where);
    return MPI_SUCCESS;
}

/* A buffer the call will read or write (count elements of dt carry data)
 * must not be NULL: MPI_ERR_BUFFER naming it, instead of a crash inside the
 * collective.  MPI_IN_PLACE is no buffer of its own: not checked; neither is
 * MPI_BOTTOM (NULL too) with a derived type, whose displacements may be
 * absolute addresses (kumi_chk_buf of the bindings does the same). */
static int need_buf(const char *fn, const char *arg, const void *buf, MPI_Count count, const struct kumi_dt *dt)
{
    if (buf == NULL && count > 0 && dt && dt->size > 0 && !kumi_dt_absolute(dt))
        return kumi_error(MPI_ERR_BUFFER, "%s: argument %s is NULL with %lld elements of data", fn, arg,
                          (long long)count);
    return MPI_SUCCESS;
}

/* sendbuf and recvbuf of a reduction must not be the same memory. */
static int no_alias(const char *fname, const void *sbuf, const void *rbuf, MPI_Count count,
                    const struct kumi_dt *dt)
{
    if (sbuf && sbuf == rbuf && count > 0 && dt->size > 0)
        return kumi_error(MPI_ERR_BUFFER, "%s: arguments sendbuf and recvbuf are the same buffer "
                          "(use MPI_IN_PLACE)", fname);
    return MPI_SUCCESS;
}

#define TRY(x) do { int rc_ = (x); if (rc_ != MPI_SUCCESS) return rc_; } while (0)

/* Intercommunicators (MPI 4.1 sec. 6.2.2): a rooted operation takes root =
 * MPI_ROOT at the root, MPI_PROC_NULL in the rest of its group and the
 * root's rank in the other group; arrays describe the remote group
 * (kumi_comm_peer_size); MPI_IN_PLACE is not allowed; scan and exscan are
 * not defined.  The root's buffer is rootbuf, the other group's leafbuf. */
static int inter_rooted(const char *fname, int root, const char *rootarg, const void *rootbuf,
                        const char *leafarg, const void *leafbuf)
{
    if (root == MPI_PROC_NULL) return MPI_SUCCESS;
    if (root == MPI_ROOT) return no_in_place(fname, rootarg, rootbuf, " on an intercommunicator");
    return no_in_place(fname, leafarg, leafbuf, " on an intercommunicator");
}

static int inter_no_in_place(const struct kumi_comm *comm, const char *fname, const void *sendbuf)
{
    return comm->inter ? no_in_place(fname, "sendbuf", sendbuf, " on an intercommunicator") : MPI_SUCCESS;
}

static int inter_undefined(const char *fname)
{
    return kumi_error(MPI_ERR_COMM, "%s: not defined on an intercommunicator (argument comm)", fname);
}

#define C(c) ((MPI_Comm)(c))
#define D(d) ((MPI_Datatype)(d))
#define O(o) ((MPI_Op)(o))

/* How a collective runs: now (the blocking call), as a schedule started at
 * once (MPI_I...), or as a schedule kept for MPI_Start (MPI_..._init):
 * KUMI_FORM_BLOCKING, KUMI_FORM_NB, KUMI_FORM_INIT (enum kumi_form, kumi_impl.h). */

/* The checks passed: call the blocking operation, or build the schedule with
 * the i-builder of the same name and issue it.  RUN_G: g (or NULL) holds the
 * host copies of device buffers (coll_accel.c), w (or NULL) widened arrays;
 * both are released (or, for a started non-blocking call, g's copies handed
 * to its request) before the return. */
#define RUN_GB(g, w, pcount, pdt, fld, ...)                                             \
    do {                                                                                \
        int rc_;                                                                        \
        struct kumi_sched *s_;                                                          \
        struct kumi_widen *w_ = (w);                                                    \
        if (mode == KUMI_FORM_BLOCKING && !comm->coll.fld)                              \
            rc_ = no_coll(fn);                                                          \
        else if (mode == KUMI_FORM_BLOCKING) {                                          \
            int pc_ = kumi_pacing_enter(#fld, comm, (pcount), (pdt));                   \
            KUMI_COLL_BLOCKING(rc_, comm->coll.fld(__VA_ARGS__));                       \
            kumi_pacing_leave(pc_);                                                     \
        }                                                                               \
        else if (!comm->coll.i##fld)                                                    \
            rc_ = no_coll(fn);                                                          \
        else if ((rc_ = kumi_sched_begin(comm, fn, mode == KUMI_FORM_INIT, info, request, &s_)) \
                 == MPI_SUCCESS)                                                        \
            rc_ = kumi_sched_issue(s_, comm->coll.i##fld(__VA_ARGS__, s_),              \
                                   mode == KUMI_FORM_INIT, fn, request);                \
        if (w_) kumi_widen_end(w_);                                                     \
        return kumi_cstage_done(g, rc_, request);                                                  \
    } while (0)
#define RUN_G(g, w, fld, ...) RUN_GB(g, w, 0, NULL, fld, __VA_ARGS__)
#define RUN(fld, ...) RUN_G(&g, NULL, fld, __VA_ARGS__)
#define RUN_W(w, fld, ...) RUN_G(&g, w, fld, __VA_ARGS__)
/* RUN, telling the pacing component's hint the call's block: count elements
 * of dt (kumi/coll.h, pace_hint's bytes) */
#define RUN_B(pcount, pdt, fld, ...) RUN_GB(&g, NULL, pcount, pdt, fld, __VA_ARGS__)


/* Device buffers (coll_accel.c): declared in every collective with buffers;
 * STAGED(w) ends the staging block: on an error, nothing is left behind. */
#define CSTAGER struct kumi_cstager g = KUMI_CSTAGER(fn, mode)
#define ACCEL if (__builtin_expect(kumi_accel_on, 0))
static int stage_failed(struct kumi_cstager *g, struct kumi_widen *w)
{
    if (w) kumi_widen_end(w);
    return kumi_cstage_finish(g, g->rc, NULL);
}
#define STAGED(w) do { if (g.rc) return stage_failed(&g, w); } while (0)
#define SPAN kumi_cspan_n
#define GAPS kumi_cstage_gaps
/* large Bcast / Reduce / Allreduce in pieces, every form (coll_accel.c): returns from the function */
#define PIPELINED(call)                                                                 \
    do {                                                                                \
        int prc_;                                                                       \
        struct kumi_cpform f_ = { mode, info, request };                                \
        if (__builtin_expect(kumi_accel_on, 0) && (call)) return prc_;                  \
    } while (0)

static int no_coll(const char *fn)
{
    return kumi_error(MPI_ERR_INTERN, "%s: no collective component provides it for this communicator", fn);
}

/* ------------------------------------------------------ MPI functions */
/* A predefined op must be defined for the datatype (the binding checks it
 * too; this keeps the functions safe when called from inside the library). */
static int check_op(const char *fname, struct kumi_op *op, struct kumi_dt *dt)
{
    if (!kumi_op_valid_for(op, dt))
        return kumi_error(MPI_ERR_OP, "%s: argument op is not defined for datatype %s", fname,
                          dt->name ? dt->name : "(derived)");
    return MPI_SUCCESS;
}

int kumi_coll_barrier(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, struct kumi_comm *comm)
{
    RUN_G(NULL, NULL, barrier, C(comm));
}

int kumi_coll_bcast(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, void *buffer, MPI_Count count, struct kumi_dt *datatype, int root, struct kumi_comm *comm)
{
    TRY(no_in_place(fn, "buffer", buffer, ""));
    if (!kumi_sig_part(comm, root)) count = 0;
    PIPELINED(kumi_cpipe_bcast(fn, &f_, buffer, count, datatype, root, comm, &prc_));
    CSTAGER;
    ACCEL {
        if (kumi_sig_root(comm, root)) {
            const void *b = buffer;
            kumi_cstage(&g, &b, SPAN(count, datatype), true, false);
            buffer = (void *)b;
        } else if (kumi_sig_part(comm, root)) kumi_cstage_out(&g, &buffer, SPAN(count, datatype), GAPS(datatype));
        STAGED(NULL);
    }
    RUN_B(count, datatype, bcast, buffer, count, D(datatype), root, C(comm));
}

int kumi_coll_gather(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype, void *recvbuf,
                     MPI_Count recvcount, struct kumi_dt *recvtype, int root, struct kumi_comm *comm)
{
    if (comm->inter) {
        TRY(inter_rooted(fn, root, "recvbuf", recvbuf, "sendbuf", sendbuf));
    } else if (comm->rank == root) {
        TRY(no_in_place(fn, "recvbuf", recvbuf, ""));
        TRY(need_buf(fn, "recvbuf", recvbuf, recvcount, recvtype));
        if (sendbuf != MPI_IN_PLACE) TRY(need_buf(fn, "sendbuf", sendbuf, sendcount, sendtype));
    } else {
        TRY(no_in_place(fn, "sendbuf", sendbuf, " except at the root"));
        TRY(need_buf(fn, "sendbuf", sendbuf, sendcount, sendtype));
    }
    /* what the standard ignores reaches the components harmless */
    if (!kumi_sig_root(comm, root)) { recvcount = 0; recvtype = sendtype; }
    if (sendbuf == MPI_IN_PLACE || !kumi_sig_contrib(comm, root)) { sendcount = recvcount; sendtype = recvtype; }
    CSTAGER;
    ACCEL {
        kumi_cstage_rooted(&g, comm, root, true, &sendbuf, SPAN(sendcount, sendtype), &recvbuf,
                           SPAN(kumi_comm_peer_size(comm) * recvcount, recvtype), recvtype);
        STAGED(NULL);
    }
    RUN_B(sendcount, sendtype, gather, sendbuf, sendcount, D(sendtype), recvbuf, recvcount, D(recvtype),
                             root, C(comm));
}

int kumi_coll_gatherv(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, bool large, const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype, void *recvbuf,
                      const void *recvcounts, const void *displs, struct kumi_dt *recvtype, int root,
                      struct kumi_comm *comm)
{
    if (comm->inter) {
        TRY(inter_rooted(fn, root, "recvbuf", recvbuf, "sendbuf", sendbuf));
        if (root == MPI_ROOT) {
            TRY(check_counts(fn, "recvcounts", recvcounts, large, comm->remote_size));
            TRY(check_displs(fn, "displs", displs, comm->remote_size));
        }
    } else if (comm->rank == root) {
        TRY(no_in_place(fn, "recvbuf", recvbuf, ""));
        TRY(check_counts(fn, "recvcounts", recvcounts, large, comm->size));
        TRY(check_displs(fn, "displs", displs, comm->size));
    } else {
        TRY(no_in_place(fn, "sendbuf", sendbuf, " except at the root"));
    }
    if (!kumi_sig_root(comm, root)) recvtype = sendtype;
    if (sendbuf == MPI_IN_PLACE || !kumi_sig_contrib(comm, root)) { sendcount = 0; sendtype = recvtype; }
    /* the arrays matter at the root only */
    int n = comm->inter ? (root == MPI_ROOT ? comm->remote_size : 0) : (comm->rank == root ? comm->size : 0);
    struct kumi_widen w;
    TRY(kumi_widen_begin(&w, fn, large ? 0 : n, 1, 1));
    const MPI_Count *rc = n ? wide_counts(&w, recvcounts, large, n) : NULL;
    const MPI_Aint *rd = n ? wide_displs(&w, displs, large, n) : NULL;
    CSTAGER;
    ACCEL {
        kumi_cstage_rooted(&g, comm, root, true, &sendbuf, SPAN(sendcount, sendtype), &recvbuf,
                           kumi_cspan_v(n, rc, rd, recvtype), recvtype);
        STAGED(&w);
    }
    RUN_W(&w, gatherv, sendbuf, sendcount, D(sendtype), recvbuf, rc, rd, D(recvtype), root, C(comm));
}

int kumi_coll_scatter(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype, void *recvbuf,
                      MPI_Count recvcount, struct kumi_dt *recvtype, int root, struct kumi_comm *comm)
{
    if (comm->inter) {
        TRY(inter_rooted(fn, root, "sendbuf", sendbuf, "recvbuf", recvbuf));
    } else if (comm->rank == root) {
        TRY(no_in_place(fn, "sendbuf", sendbuf, ""));
        TRY(need_buf(fn, "sendbuf", sendbuf, sendcount, sendtype));
        if (recvbuf != MPI_IN_PLACE) TRY(need_buf(fn, "recvbuf", recvbuf, recvcount, recvtype));
    } else {
        TRY(no_in_place(fn, "recvbuf", recvbuf, " except at the root"));
        TRY(need_buf(fn, "recvbuf", recvbuf, recvcount, recvtype));
    }
    if (!kumi_sig_root(comm, root)) { sendcount = 0; sendtype = recvtype; }
    if (recvbuf == MPI_IN_PLACE || !kumi_sig_contrib(comm, root)) { recvcount = sendcount; recvtype = sendtype; }
    CSTAGER;
    ACCEL {
        kumi_cstage_rooted(&g, comm, root, false, &sendbuf, SPAN(kumi_comm_peer_size(comm) * sendcount, sendtype),
                           &recvbuf, SPAN(recvcount, recvtype), recvtype);
        STAGED(NULL);
    }
    RUN_B(recvcount, recvtype, scatter, sendbuf, sendcount, D(sendtype), recvbuf, recvcount, D(recvtype),
                              root, C(comm));
}

int kumi_coll_scatterv(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, bool large, const void *sendbuf, const void *sendcounts, const void *displs,
                       struct kumi_dt *sendtype, void *recvbuf, MPI_Count recvcount, struct kumi_dt *recvtype,
                       int root, struct kumi_comm *comm)
{
    if (comm->inter) {
        TRY(inter_rooted(fn, root, "sendbuf", sendbuf, "recvbuf", recvbuf));
        if (root == MPI_ROOT) {
            TRY(check_counts(fn, "sendcounts", sendcounts, large, comm->remote_size));
            TRY(check_displs(fn, "displs", displs, comm->remote_size));
        }
    } else if (comm->rank == root) {
        TRY(no_in_place(fn, "sendbuf", sendbuf, ""));
        TRY(check_counts(fn, "sendcounts", sendcounts, large, comm->size));
        TRY(check_displs(fn, "displs", displs, comm->size));
    } else {
        TRY(no_in_place(fn, "recvbuf", recvbuf, " except at the root"));
    }
    if (!kumi_sig_root(comm, root)) sendtype = recvtype;
    if (recvbuf == MPI_IN_PLACE || !kumi_sig_contrib(comm, root)) { recvcount = 0; recvtype = sendtype; }
    /* the arrays matter at the root only */
    int n = comm->inter ? (root == MPI_ROOT ? comm->remote_size : 0) : (comm->rank == root ? comm->size : 0);
    struct kumi_widen w;
    TRY(kumi_widen_begin(&w, fn, large ? 0 : n, 1, 1));
    const MPI_Count *sc = n ? wide_counts(&w, sendcounts, large, n) : NULL;
    const MPI_Aint *sd = n ? wide_displs(&w, displs, large, n) : NULL;
    CSTAGER;
    ACCEL {
        kumi_cstage_rooted(&g, comm, root, false, &sendbuf, kumi_cspan_v(n, sc, sd, sendtype), &recvbuf,
                           SPAN(recvcount, recvtype), recvtype);
        STAGED(&w);
    }
    RUN_W(&w, scatterv, sendbuf, sc, sd, D(sendtype), recvbuf, recvcount, D(recvtype), root, C(comm));
}

int kumi_coll_allgather(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype, void *recvbuf,
                        MPI_Count recvcount, struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    TRY(no_in_place(fn, "recvbuf", recvbuf, ""));
    TRY(inter_no_in_place(comm, fn, sendbuf));
    TRY(need_buf(fn, "recvbuf", recvbuf, recvcount, recvtype));
    if (sendbuf != MPI_IN_PLACE) TRY(need_buf(fn, "sendbuf", sendbuf, sendcount, sendtype));
    else { sendcount = recvcount; sendtype = recvtype; }
    CSTAGER;
    ACCEL {
        kumi_cstage_all(&g, &sendbuf, SPAN(sendcount, sendtype), &recvbuf,
                        SPAN(kumi_comm_peer_size(comm) * recvcount, recvtype), GAPS(recvtype));
        STAGED(NULL);
    }
    RUN_B(recvcount, recvtype, allgather, sendbuf, sendcount, D(sendtype), recvbuf, recvcount, D(recvtype),
                                C(comm));
}

int kumi_coll_allgatherv(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, bool large, const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype, void *recvbuf,
                         const void *recvcounts, const void *displs, struct kumi_dt *recvtype,
                         struct kumi_comm *comm)
{
    TRY(no_in_place(fn, "recvbuf", recvbuf, ""));
    TRY(inter_no_in_place(comm, fn, sendbuf));
    int n = kumi_comm_peer_size(comm);
    TRY(check_counts(fn, "recvcounts", recvcounts, large, n));
    TRY(check_displs(fn, "displs", displs, n));
    if (sendbuf == MPI_IN_PLACE) { sendcount = 0; sendtype = recvtype; }
    struct kumi_widen w;
    TRY(kumi_widen_begin(&w, fn, large ? 0 : n, 1, 1));
    const MPI_Count *rc = wide_counts(&w, recvcounts, large, n);
    const MPI_Aint *rd = wide_displs(&w, displs, large, n);
    CSTAGER;
    ACCEL {
        kumi_cstage_all(&g, &sendbuf, SPAN(sendcount, sendtype), &recvbuf, kumi_cspan_v(n, rc, rd, recvtype),
                        GAPS(recvtype));
        STAGED(&w);
    }
    RUN_W(&w, allgatherv, sendbuf, sendcount, D(sendtype), recvbuf, rc, rd, D(recvtype), C(comm));
}

int kumi_coll_alltoall(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype, void *recvbuf,
                       MPI_Count recvcount, struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    TRY(no_in_place(fn, "recvbuf", recvbuf, ""));
    TRY(inter_no_in_place(comm, fn, sendbuf));
    TRY(need_buf(fn, "recvbuf", recvbuf, recvcount, recvtype));
    if (sendbuf != MPI_IN_PLACE) TRY(need_buf(fn, "sendbuf", sendbuf, sendcount, sendtype));
    else { sendcount = recvcount; sendtype = recvtype; }
    CSTAGER;
    ACCEL {
        int n = kumi_comm_peer_size(comm);
        kumi_cstage_all(&g, &sendbuf, SPAN(n * sendcount, sendtype), &recvbuf, SPAN(n * recvcount, recvtype),
                        GAPS(recvtype));
        STAGED(NULL);
    }
    RUN_B(recvcount, recvtype, alltoall, sendbuf, sendcount, D(sendtype), recvbuf, recvcount, D(recvtype),
                               C(comm));
}

int kumi_coll_alltoallv(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, bool large, const void *sendbuf, const void *sendcounts, const void *sdispls,
                        struct kumi_dt *sendtype, void *recvbuf, const void *recvcounts,
                        const void *rdispls, struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    TRY(no_in_place(fn, "recvbuf", recvbuf, ""));
    TRY(inter_no_in_place(comm, fn, sendbuf));
    int n = kumi_comm_peer_size(comm);
    if (sendbuf != MPI_IN_PLACE) {
        TRY(check_counts(fn, "sendcounts", sendcounts, large, n));
        TRY(check_displs(fn, "sdispls", sdispls, n));
    }
    TRY(check_counts(fn, "recvcounts", recvcounts, large, n));
    TRY(check_displs(fn, "rdispls", rdispls, n));
    if (sendbuf == MPI_IN_PLACE) sendtype = recvtype;
    struct kumi_widen w;
    TRY(kumi_widen_begin(&w, fn, large ? 0 : n, 2, 2));
    bool snd = sendbuf != MPI_IN_PLACE;
    const MPI_Count *sc = snd ? wide_counts(&w, sendcounts, large, n) : NULL;
    const MPI_Aint *sd = snd ? wide_displs(&w, sdispls, large, n) : NULL;
    const MPI_Count *rc = wide_counts(&w, recvcounts, large, n);
    const MPI_Aint *rd = wide_displs(&w, rdispls, large, n);
    CSTAGER;
    ACCEL {
        kumi_cstage_all(&g, &sendbuf, kumi_cspan_v(n, sc, sd, sendtype), &recvbuf, kumi_cspan_v(n, rc, rd, recvtype),
                        GAPS(recvtype));
        STAGED(&w);
    }
    RUN_W(&w, alltoallv, sendbuf, sc, sd, D(sendtype), recvbuf, rc, rd, D(recvtype), C(comm));
}

int kumi_coll_alltoallw(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, bool large, const void *sendbuf, const void *sendcounts, const void *sdispls,
                        const MPI_Datatype sendtypes[], void *recvbuf, const void *recvcounts,
                        const void *rdispls, const MPI_Datatype recvtypes[], struct kumi_comm *comm)
{
    TRY(no_in_place(fn, "recvbuf", recvbuf, ""));
    TRY(inter_no_in_place(comm, fn, sendbuf));
    int n = kumi_comm_peer_size(comm);
    int s_ignored = 0, r_ignored = 0;
    if (sendbuf != MPI_IN_PLACE) {
        TRY(check_counts(fn, "sendcounts", sendcounts, large, n));
        TRY(check_displs(fn, "sdispls", sdispls, n));
        TRY(check_types(fn, "sendtypes", sendtypes, sendcounts, large, n, &s_ignored));
    }
    TRY(check_counts(fn, "recvcounts", recvcounts, large, n));
    TRY(check_displs(fn, "rdispls", rdispls, n));
    TRY(check_types(fn, "recvtypes", recvtypes, recvcounts, large, n, &r_ignored));
    struct kumi_widen w;
    TRY(kumi_widen_begin(&w, fn, large ? 0 : n, 2, 2));
    usable_types(&w, sendtypes, s_ignored, recvtypes, r_ignored, n, &sendtypes, &recvtypes);
    if ((s_ignored && !sendtypes) || (r_ignored && !recvtypes)) {
        kumi_widen_end(&w);
        return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory copying the type arrays", fn);
    }
    bool snd = sendbuf != MPI_IN_PLACE;
    const MPI_Count *sc = snd ? wide_counts(&w, sendcounts, large, n) : NULL;
    const MPI_Aint *sd = snd ? wide_displs(&w, sdispls, large, n) : NULL;
    const MPI_Count *rc = wide_counts(&w, recvcounts, large, n);
    const MPI_Aint *rd = wide_displs(&w, rdispls, large, n);
    CSTAGER;
    ACCEL {
        kumi_cstage_all(&g, &sendbuf, kumi_cspan_w(n, sc, sd, sendtypes), &recvbuf,
                        kumi_cspan_w(n, rc, rd, recvtypes), kumi_cstage_gaps_w(n, recvtypes));
        STAGED(&w);
    }
    RUN_W(&w, alltoallw, sendbuf, sc, sd, sendtypes, recvbuf, rc, rd, recvtypes, C(comm));
}

int kumi_coll_reduce(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, const void *sendbuf, void *recvbuf, MPI_Count count, struct kumi_dt *datatype,
                     struct kumi_op *op, int root, struct kumi_comm *comm)
{
    /* MPI_PROC_NULL as an intercommunicator's root: nothing else matters */
    if (kumi_sig_part(comm, root)) TRY(check_op(fn, op, datatype));
    else count = 0;
    if (comm->inter) {
        TRY(inter_rooted(fn, root, "recvbuf", recvbuf, "sendbuf", sendbuf));
    } else if (comm->rank == root) {
        TRY(no_in_place(fn, "recvbuf", recvbuf, ""));
        TRY(no_alias(fn, sendbuf, recvbuf, count, datatype));
        TRY(need_buf(fn, "recvbuf", recvbuf, count, datatype));
        if (sendbuf != MPI_IN_PLACE) TRY(need_buf(fn, "sendbuf", sendbuf, count, datatype));
    } else {
        TRY(no_in_place(fn, "sendbuf", sendbuf, " except at the root"));
        TRY(need_buf(fn, "sendbuf", sendbuf, count, datatype));
    }
    PIPELINED(kumi_cpipe_reduce(fn, &f_, false, sendbuf, recvbuf, count, datatype, op, root, comm, &prc_));
    CSTAGER;
    ACCEL {
        kumi_cstage_rooted(&g, comm, root, true, &sendbuf, SPAN(count, datatype), &recvbuf,
                           SPAN(count, datatype), datatype);
        STAGED(NULL);
    }
    RUN_B(count, datatype, reduce, sendbuf, recvbuf, count, D(datatype), O(op), root, C(comm));
}

int kumi_coll_allreduce(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, const void *sendbuf, void *recvbuf, MPI_Count count, struct kumi_dt *datatype,
                        struct kumi_op *op, struct kumi_comm *comm)
{
    TRY(check_op(fn, op, datatype));
    TRY(no_in_place(fn, "recvbuf", recvbuf, ""));
    TRY(inter_no_in_place(comm, fn, sendbuf));
    TRY(no_alias(fn, sendbuf, recvbuf, count, datatype));
    PIPELINED(kumi_cpipe_reduce(fn, &f_, true, sendbuf, recvbuf, count, datatype, op, MPI_PROC_NULL, comm, &prc_));
    CSTAGER;
    ACCEL {
        kumi_cstage_all(&g, &sendbuf, SPAN(count, datatype), &recvbuf, SPAN(count, datatype), GAPS(datatype));
        STAGED(NULL);
    }
    RUN_B(count, datatype, allreduce, sendbuf, recvbuf, count, D(datatype), O(op), C(comm));
}

int kumi_coll_reduce_scatter(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, bool large, const void *sendbuf, void *recvbuf, const void *recvcounts,
                             struct kumi_dt *datatype, struct kumi_op *op, struct kumi_comm *comm)
{
    TRY(check_op(fn, op, datatype));
    TRY(no_in_place(fn, "recvbuf", recvbuf, ""));
    TRY(inter_no_in_place(comm, fn, sendbuf));
    TRY(check_counts(fn, "recvcounts", recvcounts, large, comm->size));
    MPI_Count total = 0;
    for (int i = 0; i < comm->size; i++) total += count_at(recvcounts, large, i);
    TRY(no_alias(fn, sendbuf, recvbuf, total, datatype));
    struct kumi_widen w;
    TRY(kumi_widen_begin(&w, fn, large ? 0 : comm->size, 1, 0));
    const MPI_Count *rc = wide_counts(&w, recvcounts, large, comm->size);
    CSTAGER;
    ACCEL {
        if (comm->inter) kumi_cstage_refuse(&g, sendbuf, recvbuf);
        else kumi_cstage_all(&g, &sendbuf, SPAN(total, datatype), &recvbuf, SPAN(rc[comm->rank], datatype),
                             GAPS(datatype));
        STAGED(&w);
    }
    RUN_W(&w, reduce_scatter, sendbuf, recvbuf, rc, D(datatype), O(op), C(comm));
}

int kumi_coll_reduce_scatter_block(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                   struct kumi_dt *datatype, struct kumi_op *op, struct kumi_comm *comm)
{
    TRY(check_op(fn, op, datatype));
    TRY(no_in_place(fn, "recvbuf", recvbuf, ""));
    TRY(inter_no_in_place(comm, fn, sendbuf));
    TRY(no_alias(fn, sendbuf, recvbuf, recvcount, datatype));
    CSTAGER;
    ACCEL {
        if (comm->inter) kumi_cstage_refuse(&g, sendbuf, recvbuf);
        else kumi_cstage_all(&g, &sendbuf, SPAN(recvcount * comm->size, datatype), &recvbuf,
                             SPAN(recvcount, datatype), GAPS(datatype));
        STAGED(NULL);
    }
    RUN(reduce_scatter_block, sendbuf, recvbuf, recvcount, D(datatype), O(op), C(comm));
}

int kumi_coll_scan(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, const void *sendbuf, void *recvbuf, MPI_Count count, struct kumi_dt *datatype,
                   struct kumi_op *op, struct kumi_comm *comm)
{
    if (comm->inter) return inter_undefined(fn);
    TRY(check_op(fn, op, datatype));
    TRY(no_in_place(fn, "recvbuf", recvbuf, ""));
    TRY(no_alias(fn, sendbuf, recvbuf, count, datatype));
    CSTAGER;
    ACCEL {
        kumi_cstage_all(&g, &sendbuf, SPAN(count, datatype), &recvbuf, SPAN(count, datatype), GAPS(datatype));
        STAGED(NULL);
    }
    RUN_B(count, datatype, scan, sendbuf, recvbuf, count, D(datatype), O(op), C(comm));
}

int kumi_coll_exscan(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request, const void *sendbuf, void *recvbuf, MPI_Count count, struct kumi_dt *datatype,
                     struct kumi_op *op, struct kumi_comm *comm)
{
    if (comm->inter) return inter_undefined(fn);
    TRY(check_op(fn, op, datatype));
    TRY(no_in_place(fn, "recvbuf", recvbuf, ""));
    TRY(no_alias(fn, sendbuf, recvbuf, count, datatype));
    CSTAGER;
    ACCEL {
        /* rank 0's recvbuf is undefined: filled, so that it keeps its bytes */
        kumi_cstage_all(&g, &sendbuf, SPAN(count, datatype), &recvbuf, SPAN(count, datatype), true);
        STAGED(NULL);
    }
    RUN_B(count, datatype, exscan, sendbuf, recvbuf, count, D(datatype), O(op), C(comm));
}

/* ------------------------------------------------ the three forms of each */
