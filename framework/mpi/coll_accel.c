/* Collectives on device buffers (CUDA-aware MPI, issue 24): with an accel
 * component in use, every buffer a collective reads or writes that lies in
 * device memory is copied through host memory (core/accel.c), and the coll
 * components see host buffers only.
 *
 * Which buffers: the ones the standard makes significant on this process
 * (the root's receive buffer of a gather, a scatter's send buffer at the
 * root only, nothing for MPI_PROC_NULL on an intercommunicator, ...), over
 * the span their counts, displacements and types touch.  A buffer the call
 * reads is copied to the host before it starts; one it writes is copied back
 * when it completes successfully (blocking: at return; non-blocking: at the
 * MPI_Wait / MPI_Test that completes it, through the request's accel_stage
 * chain).  A written buffer is filled first when the call does not overwrite
 * all of its span: MPI_IN_PLACE, or a type with gaps; else only copied back.
 * A persistent collective (MPI_..._init) keeps its host copies from init to
 * MPI_Request_free: each MPI_Start reads what it sends from the device again,
 * each completion copies back what it wrote.  The reduce-scatters on
 * intercommunicators refuse device buffers with MPI_ERR_BUFFER (their
 * buffer sizes depend on the other group's arrays). */
#include "mpi/mpi_front.h"
#include "mpi/coll_accel.h"

#include <stdlib.h>

static void add_span(struct kumi_cspan *sp, MPI_Aint disp, MPI_Count count, const struct kumi_dt *dt)
{
    if (count <= 0 || !dt) return;
    MPI_Aint step = (MPI_Aint)(count - 1) * dt->extent;
    MPI_Aint l = disp + dt->true_lb + (step < 0 ? step : 0);
    MPI_Aint h = disp + dt->true_lb + dt->true_extent + (step > 0 ? step : 0);
    if (!sp->any || l < sp->lo) sp->lo = l;
    if (!sp->any || h > sp->hi) sp->hi = h;
    sp->any = true;
}

struct kumi_cspan kumi_cspan_n(MPI_Count count, const struct kumi_dt *dt)
{
    struct kumi_cspan sp = { 0, 0, false, false };
    add_span(&sp, 0, count, dt);
    return sp;
}

/* n blocks of counts[i] elements at displs[i] extents of dt (NULL displs:
 * block i at i * count extents: counts NULL means count each) */
struct kumi_cspan kumi_cspan_v(int n, const MPI_Count *counts, const MPI_Aint *displs, const struct kumi_dt *dt)
{
    struct kumi_cspan sp = { 0, 0, false, true };
    for (int i = 0; counts && i < n; i++) add_span(&sp, (displs ? displs[i] : 0) * dt->extent, counts[i], dt);
    return sp;
}

/* alltoallw: displacements in bytes, a type per block */
struct kumi_cspan kumi_cspan_w(int n, const MPI_Count *counts, const MPI_Aint *displs, const MPI_Datatype *types)
{
    struct kumi_cspan sp = { 0, 0, false, true };
    for (int i = 0; counts && types && i < n; i++) add_span(&sp, displs ? displs[i] : 0, counts[i], kumi_dt_get(types[i]));
    return sp;
}

/* Stage *buf over sp: reads (fill) and/or writes (back). */
void kumi_cstage(struct kumi_cstager *g, const void **buf, struct kumi_cspan sp, bool fill, bool back)
{
    if (g->rc || !*buf || *buf == MPI_IN_PLACE || !sp.any || sp.hi <= sp.lo) return;
    if (!kumi_accel_is_device(*buf)) return;
    struct kumi_stage *s = malloc(sizeof *s);
    if (!s) {
        g->rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory staging a device buffer", g->fn);
        return;
    }
    int rc = kumi_stage_span(g->fn, s, *buf, sp.lo, (size_t)(sp.hi - sp.lo), fill);
    if (rc || !s->host) {
        free(s);
        g->rc = rc;
        return;
    }
    s->back = back;
    s->next = NULL;
    if (!g->head) g->head = s;
    else g->tail->next = s;
    g->tail = s;
    *buf = s->buf;
}

void kumi_cstage_out(struct kumi_cstager *g, void **buf, struct kumi_cspan sp, bool fill)
{
    const void *b = *buf;
    kumi_cstage(g, &b, sp, fill || sp.holes, true);
    *buf = (void *)b;
}

/* The call has returned rc: a blocking call copies back and frees now, a
 * non-blocking one hands the chain to its request (consume() in pt2pt.c). */
int kumi_cstage_finish(struct kumi_cstager *g, int rc, MPI_Request *request)
{
    struct kumi_stage *h = g->head;
    g->head = g->tail = NULL;
    if (!h) return rc;
    if (rc == MPI_SUCCESS && g->mode != KUMI_FORM_BLOCKING && request && *request != MPI_REQUEST_NULL) {
        ((struct kumi_req *)*request)->accel_stage = h;
        return rc;
    }
    int c2 = kumi_stage_end_all(h, rc == MPI_SUCCESS);
    free(h);
    return rc == MPI_SUCCESS ? c2 : rc;
}

/* A written buffer needs its old contents first when the call may leave
 * part of its span alone: in place, or a type with gaps. */
static bool gaps(const struct kumi_dt *dt) { return !dt || !dt->contig; }

/* ------------------------------------------------ one function per collective */
void kumi_cstage_rooted(struct kumi_cstager *g, struct kumi_comm *comm, int root, bool to_root,
                        const void **sbuf, struct kumi_cspan ssp,
                        void **rbuf, struct kumi_cspan rsp, const struct kumi_dt *rdt)
{
    if (!kumi_sig_part(comm, root)) return;
    bool at_root = kumi_sig_root(comm, root);
    if (to_root) {         /* gather(v), reduce: everyone but an intercomm's root sends */
        bool in_place = !comm->inter && at_root && *sbuf == MPI_IN_PLACE;
        if (!(comm->inter && at_root)) kumi_cstage(g, sbuf, ssp, true, false);
        if (at_root) kumi_cstage_out(g, rbuf, rsp, in_place || gaps(rdt));
    } else {               /* scatter(v): the root sends (rbuf NULL: nothing received) */
        if (at_root) kumi_cstage(g, sbuf, ssp, true, false);
        bool in_place = rbuf && !comm->inter && at_root && *rbuf == MPI_IN_PLACE;
        if (rbuf && !(comm->inter && at_root) && !in_place) kumi_cstage_out(g, rbuf, rsp, gaps(rdt));
    }
}

/* allgather(v), alltoall(v,w), allreduce, scan, exscan, reduce_scatter_block
 * on an intracommunicator: sbuf read unless MPI_IN_PLACE, rbuf written (and
 * read when in place). */
void kumi_cstage_all(struct kumi_cstager *g, const void **sbuf, struct kumi_cspan ssp, void **rbuf,
                     struct kumi_cspan rsp, bool rgaps)
{
    bool in_place = *sbuf == MPI_IN_PLACE;
    kumi_cstage(g, sbuf, ssp, true, false);
    kumi_cstage_out(g, rbuf, rsp, in_place || rgaps);
}

bool kumi_cstage_gaps(const struct kumi_dt *dt) { return gaps(dt); }

/* Every type of an alltoallw array contiguous? */
bool kumi_cstage_gaps_w(int n, const MPI_Datatype *types)
{
    for (int i = 0; types && i < n; i++)
        if (gaps(kumi_dt_get(types[i]))) return true;
    return false;
}

int kumi_cstage_refuse(struct kumi_cstager *g, const void *sbuf, void *rbuf)
{
    if (kumi_accel_is_device(sbuf) || kumi_accel_is_device(rbuf))
        g->rc = kumi_error(MPI_ERR_BUFFER, "%s: a buffer is device memory: Kumi does not stage device buffers "
                           "in this collective on an intercommunicator", g->fn);
    return g->rc;
}
