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
#include <kumi/accel.h>
#include <kumi/param.h>
#include <kumi/rpim.h>
#include <stdio.h>

#include <stdlib.h>
#include <string.h>

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

/* ------------------------------------------------ pipelined blocking collectives
 * A blocking MPI_Bcast, MPI_Reduce or MPI_Allreduce on an intracommunicator
 * whose data is more than kumi_base_accel_coll_pipeline bytes runs as the same
 * collective on pieces of about kumi_base_accel_coll_chunk bytes (whole
 * elements), one after the other.  Where a buffer is device memory a piece
 * goes through pinned host slots: the device-to-host copies of the next
 * pieces and the host-to-device copies of the previous ones run on two
 * streams of the accel component while the collective of one piece runs on
 * the host; nothing is staged whole.
 *
 * Every process must cut the data at the same places, so the choice depends
 * only on what the standard makes equal on all of them (the data's size, the
 * datatype of a reduction, the basic elements of a broadcast's type
 * signature) and on what every process of the communicator published at
 * start-up (kumi_cpipe_publish: key "kumi.cpipe", its accel component and
 * these two parameters, or "-" without one): the pieces run only where all
 * the keys are equal (cp_agreed, asked once per communicator, no message),
 * never where a buffer lies: a process whose buffers are host memory runs the
 * same pieces on them without copies.  A job mixing processes with and
 * without a GPU, or with other parameters, stages whole everywhere; so does a
 * communicator with processes of another job (no keys of theirs here).
 *   Bcast: the basic elements of one predefined kind without gaps (not the
 *     padded pairs; MPI_2INT and the like as two of their kind); a piece is
 *     whole elements of that kind; a process whose datatype has gaps packs
 *     (a device buffer of it is staged whole first).  With a power of two
 *     for the chunk, every element size up to it cuts at the same bytes.
 *   Reduce, Allreduce: a contiguous datatype (the same on every process); a
 *     piece is whole elements of it, and the pieces are independent, so a
 *     non-commutative op still combines each element in rank order.
 *     MPI_IN_PLACE on a device buffer reads a piece into one slot and reduces
 *     into another.
 * Other datatypes and collectives, the non-blocking and persistent forms keep
 * the whole staging above.  Errors: every piece still runs (the other
 * processes wait for it); the first error is returned. */
enum { NS = KUMI_ACCEL_NSLOT };
static long long pipe_min = 4 << 20, pipe_chunk = 2 << 20;
static struct {
    void *sin, *sout;                     /* streams: device to host, host to device */
    void *evin[NS], *evout[NS];
    void *a[NS], *b[NS];                  /* pinned slots: pieces read from / written to the device */
    size_t len;                           /* bytes of each slot made */
    int state;                            /* 0 not made, 1 streams and events made, -1 unavailable */
    int busy;                             /* atomic */
} cp;

void kumi_cpipe_register_params(void)
{
    kumi_param_register_int("kumi", "base", "accel_coll_pipeline", 4 << 20,
                            "Blocking MPI_Bcast / MPI_Reduce / MPI_Allreduce with more bytes than this (accel "
                            "component in use; must be the same on every process): run on pieces of "
                            "kumi_base_accel_coll_chunk bytes, device buffers copied piece by piece while the "
                            "collective runs (0: never; then device buffers are staged whole)",
                            KUMI_LEVEL_TUNER, &pipe_min);
    kumi_param_register_int("kumi", "base", "accel_coll_chunk", 2 << 20,
                            "Bytes per piece of the pipelined collectives (kumi_base_accel_coll_pipeline; whole "
                            "elements, at least one; must be the same on every process)",
                            KUMI_LEVEL_TUNER, &pipe_chunk);
}

/* ------ the agreement */
static char my_key[96];

int kumi_cpipe_publish(void)
{
    kumi_accel_choose_early();
    const char *n = kumi_accel_name();
    if (n && pipe_min > 0 && pipe_chunk > 0) snprintf(my_key, sizeof my_key, "%s:%lld:%lld", n, pipe_min, pipe_chunk);
    else snprintf(my_key, sizeof my_key, "-");
    return kumi_rpim_put("kumi.cpipe", my_key);
}

/* Whether every process of comm published this process's key (once per
 * communicator; the keys are the exchange's, no message is sent). */
static bool cp_agreed(struct kumi_comm *comm)
{
    if (comm->accel_pipe) return comm->accel_pipe > 0;
    bool ok = my_key[0] && strcmp(my_key, "-") != 0;
    int nw = kumi_world_size();
    char v[sizeof my_key];
    for (int r = 0; ok && r < comm->size; r++) {
        int w = kumi_comm_world_rank(comm, r);
        ok = w == kumi_world_rank() ||
             (w >= 0 && w < nw && kumi_rpim_in_launch(w) && kumi_rpim_get(w, "kumi.cpipe", v, sizeof v) == MPI_SUCCESS &&
              !strcmp(v, my_key));
    }
    comm->accel_pipe = ok ? 1 : -1;
    kumi_log(2, "accel: pipelined collectives on %s: %s", comm->name[0] ? comm->name : "a communicator",
             ok ? "every process agrees" : "not every process has this accel component and these parameters");
    return ok;
}

static void cp_slots_free(const struct kumi_accel_ops *A)
{
    for (int i = 0; i < NS; i++) {
        if (cp.a[i]) A->host_free(cp.a[i]);
        if (cp.b[i]) A->host_free(cp.b[i]);
        cp.a[i] = cp.b[i] = NULL;
    }
    cp.len = 0;
}

void kumi_cpipe_finalize(void)
{
    const struct kumi_accel_ops *A = kumi_accel();
    if (A && cp.state == 1) {
        cp_slots_free(A);
        for (int i = 0; i < NS; i++) {
            if (cp.evin[i]) A->event_free(cp.evin[i]);
            if (cp.evout[i]) A->event_free(cp.evout[i]);
        }
        if (cp.sin) A->stream_free(cp.sin);
        if (cp.sout) A->stream_free(cp.sout);
    }
    memset(&cp, 0, sizeof cp);
}

/* At the runtime's stop: the next start-up publishes and asks again. */
void kumi_cpipe_stop(void)
{
    kumi_cpipe_finalize();
    my_key[0] = 0;
    KUMI_COMM_WORLD->accel_pipe = KUMI_COMM_SELF->accel_pipe = 0;
}

/* The pipeline, held, with slots of len bytes (a[] if ina, b[] if outb), or
 * false: synchronous copies through memory of the call's own. */
static bool cp_take(const struct kumi_accel_ops *A, size_t len, bool ina, bool outb)
{
    if (A->hdr.size <= offsetof(struct kumi_accel_ops, event_sync) || !A->stream_new || !A->copy_to_host_async ||
        !A->copy_to_dev_async || !A->event_new || !A->event_record || !A->event_sync || !A->host_alloc ||
        cp.state < 0 || __atomic_exchange_n(&cp.busy, 1, __ATOMIC_ACQUIRE))
        return false;
    bool ok = true;
    if (cp.state == 0) {
        ok = !A->stream_new(&cp.sin) && !A->stream_new(&cp.sout);
        for (int i = 0; ok && i < NS; i++) ok = !A->event_new(&cp.evin[i]) && !A->event_new(&cp.evout[i]);
        cp.state = 1;
        if (!ok) {
            kumi_log(1, "accel: the pipelined collectives copy synchronously (no streams or events)");
            kumi_cpipe_finalize();
            cp.state = -1;
            return false;
        }
    }
    if (cp.len != len) cp_slots_free(A);
    cp.len = len;
    for (int i = 0; ok && i < NS; i++) {
        if (ina && !cp.a[i]) ok = !A->host_alloc(len, &cp.a[i]);
        if (ok && outb && !cp.b[i]) ok = !A->host_alloc(len, &cp.b[i]);
    }
    if (ok) return true;
    cp_slots_free(A);
    __atomic_store_n(&cp.busy, 0, __ATOMIC_RELEASE);
    return false;
}

enum { K_BCAST, K_REDUCE, K_ALLREDUCE };
struct cprun {
    const char *fn;
    int kind;
    struct kumi_comm *comm;
    struct kumi_dt *dt;                   /* of the pieces */
    struct kumi_op *op;
    int root;
    bool at_root;
    bool in_place;                        /* MPI_IN_PLACE on host memory (out_host) */
    void *rbuf;                           /* Reduce at a process other than the root: recvbuf as given */
    MPI_Aint tlb;                         /* dt's true lb: a piece's data is at its address + tlb */
    const char *in_dev;                   /* input on the device (its data), or NULL */
    const char *in_host;                  /* else input in host memory (an address for the call) */
    char *out_dev, *out_host;             /* the same for the output */
    size_t per, nel;                      /* elements per piece, in all */
    bool async;
    void *a[NS], *b[NS];                  /* host memory of the pieces */
};

static int run_piece(const struct cprun *x, const void *in, void *out, size_t n)
{
    int rc;
    struct kumi_comm *comm = x->comm;
    MPI_Datatype d = (MPI_Datatype)x->dt;
    MPI_Comm c = (MPI_Comm)comm;
    if (x->kind == K_BCAST)
        KUMI_COLL_BLOCKING(rc, comm->coll.bcast(x->at_root ? (void *)in : out, (MPI_Count)n, d, x->root, c));
    else if (x->kind == K_REDUCE)
        KUMI_COLL_BLOCKING(rc, comm->coll.reduce(x->in_place ? MPI_IN_PLACE : in, x->at_root ? out : x->rbuf,
                                                 (MPI_Count)n, d, (MPI_Op)x->op, x->root, c));
    else
        KUMI_COLL_BLOCKING(rc, comm->coll.allreduce(x->in_place ? MPI_IN_PLACE : in, out, (MPI_Count)n, d,
                                                    (MPI_Op)x->op, c));
    kumi_pv.accel_coll_pieces++;
    return rc;
}

static size_t piece_len(const struct cprun *x, size_t k)
{
    size_t first = k * x->per, n = x->nel - first < x->per ? x->nel - first : x->per;
    return n;
}

/* Piece k's input from the device into a[k % NS]; 0 or an error code. */
static int piece_in(const struct cprun *x, const struct kumi_accel_ops *A, size_t k)
{
    int s = (int)(k % NS);
    size_t sz = x->dt->size, off = k * x->per * sz, len = piece_len(x, k) * sz;
    int bad = x->async ? A->copy_to_host_async(x->a[s], x->in_dev + off, len, cp.sin) ||
                         A->event_record(cp.evin[s], cp.sin)
                       : A->copy_to_host(x->a[s], x->in_dev + off, len);
    return bad ? kumi_error(MPI_ERR_OTHER, "%s: accel/%s: copying a piece of %zu bytes from the device failed", x->fn,
                            kumi_accel_name(), len) : MPI_SUCCESS;
}

static int cp_loop(struct cprun *x, const struct kumi_accel_ops *A)
{
    size_t np = (x->nel + x->per - 1) / x->per, sz = x->dt->size, issued = 0;
    size_t depth = x->async ? NS : 1;     /* pieces read ahead (synchronous copies: one buffer) */
    int rc = MPI_SUCCESS, r;
    for (; x->in_dev && issued < np && issued < depth; issued++)
        if ((r = piece_in(x, A, issued)) && !rc) rc = r;
    for (size_t k = 0; k < np; k++) {
        int s = (int)(k % NS);
        size_t off = k * x->per * sz, n = piece_len(x, k);
        const void *in = NULL;
        void *out = NULL;
        if (x->in_dev) {
            if (x->async && A->event_sync(cp.evin[s]) && !rc)
                rc = kumi_error(MPI_ERR_OTHER, "%s: accel/%s: waiting for a copy from the device failed", x->fn,
                                kumi_accel_name());
            in = (char *)x->a[s] - x->tlb;
        } else {
            in = x->in_host + off;
        }
        if (x->out_dev) {
            if (x->async && k >= NS && A->event_sync(cp.evout[s]) && !rc)     /* piece k - NS is on the device */
                rc = kumi_error(MPI_ERR_OTHER, "%s: accel/%s: waiting for a copy to the device failed", x->fn,
                                kumi_accel_name());
            out = (char *)x->b[s] - x->tlb;
        } else {
            out = x->out_host + off;
        }
        if ((r = run_piece(x, in, out, n)) && !rc) rc = r;
        if (x->out_dev) {
            size_t len = n * sz;
            int bad = x->async ? A->copy_to_dev_async(x->out_dev + off, x->b[s], len, cp.sout) ||
                                 A->event_record(cp.evout[s], cp.sout)
                               : A->copy_to_dev(x->out_dev + off, x->b[s], len);
            if (bad && !rc)
                rc = kumi_error(MPI_ERR_OTHER, "%s: accel/%s: copying a piece of %zu bytes to the device failed",
                                x->fn, kumi_accel_name(), len);
        }
        if (x->in_dev && issued < np) {       /* slot s is free again: the piece depth further on */
            if ((r = piece_in(x, A, issued)) && !rc) rc = r;
            issued++;
        }
    }
    if (x->async && x->out_dev && A->event_sync(cp.evout[(np - 1) % NS]) && !rc)   /* the last copies are over */
        rc = kumi_error(MPI_ERR_OTHER, "%s: accel/%s: waiting for a copy to the device failed", x->fn,
                        kumi_accel_name());
    return rc;
}

/* Run x (its buffers set) with slots or memory of its own; the result. */
static int cp_run(struct cprun *x)
{
    const struct kumi_accel_ops *A = kumi_accel();
    size_t len = x->per * x->dt->size;
    void *own = NULL;
    x->async = (x->in_dev || x->out_dev) && cp_take(A, len, x->in_dev != NULL, x->out_dev != NULL);
    for (int i = 0; x->async && i < NS; i++) { x->a[i] = cp.a[i]; x->b[i] = cp.b[i]; }
    if (!x->async && (x->in_dev || x->out_dev)) {
        if (!(own = malloc(2 * len)))   /* the other processes are left waiting, as when staging fails */
            return kumi_error(MPI_ERR_NO_MEM, "%s: no host memory for pieces of %zu bytes", x->fn, len);
        for (int i = 0; i < NS; i++) { x->a[i] = own; x->b[i] = (char *)own + len; }
    }
    int pc = kumi_pacing_enter(x->kind == K_BCAST ? "bcast" : x->kind == K_REDUCE ? "reduce" : "allreduce", x->comm,
                               (MPI_Count)x->nel, x->dt);
    int rc = cp_loop(x, A);
    kumi_pacing_leave(pc);
    if (x->async) __atomic_store_n(&cp.busy, 0, __ATOMIC_RELEASE);
    free(own);
    kumi_log(2, "accel: %s of %zu bytes in %zu pieces%s", x->fn, x->nel * x->dt->size,
             (x->nel + x->per - 1) / x->per, x->in_dev || x->out_dev ? x->async ? " (device buffers, pipelined)"
                                                                          : " (device buffers, synchronous copies)"
                                                                 : "");
    return rc;
}

/* Piece geometry of count elements of dt as elements of edt: false when
 * the data is not above the threshold or fits one piece. */
static bool cp_geometry(struct cprun *x, MPI_Count count, const struct kumi_dt *dt, struct kumi_dt *edt)
{
    size_t total;
    if (pipe_min <= 0 || pipe_chunk <= 0 || x->comm->inter || count <= 0 || !edt || !edt->size ||
        __builtin_mul_overflow((size_t)count, dt->size, &total) || total <= (size_t)pipe_min)
        return false;
    x->dt = edt;
    x->tlb = edt->true_lb;
    x->per = (size_t)pipe_chunk / edt->size;
    if (!x->per) x->per = 1;
    x->nel = total / edt->size;
    return x->nel > x->per;
}

/* buf (its data at buf + tlb) on the device (*dev: the data) or not (*host: buf) */
static void side(const void *buf, MPI_Aint tlb, const char **dev, const char **host)
{
    const char *data = (const char *)buf + tlb;
    if (kumi_accel_is_device(data)) *dev = data;
    else *host = buf;
}

/* The element of a broadcast's pieces: the one basic kind of dt's type
 * signature, a pair of two of a kind (MPI_2INT, ...) as that kind (a
 * signature the same type of another process may spell differently), or
 * NULL (several kinds, or pairs with padding). */
static struct kumi_dt *bcast_elem(const struct kumi_dt *dt)
{
    MPI_Datatype bh = kumi_dt_basic_handle(dt);
    struct kumi_dt *e = bh == MPI_DATATYPE_NULL ? NULL : kumi_dt_get(bh);
    if (!e) return NULL;
    switch (e->basic) {
    case KUMI_B_2INT: e = kumi_dt_get(MPI_INT); break;
    case KUMI_B_2REAL: e = kumi_dt_get(MPI_REAL); break;
    case KUMI_B_2DOUBLE: e = kumi_dt_get(MPI_DOUBLE_PRECISION); break;
    case KUMI_B_2INTEGER: e = kumi_dt_get(MPI_INTEGER); break;
    default:
        if (e->basic == KUMI_B_NONE || e->basic >= KUMI_B_FLOAT_INT) return NULL;
    }
    return e && e->contig ? e : NULL;
}

bool kumi_cpipe_bcast(const char *fn, void *buf, MPI_Count count, struct kumi_dt *dt, int root,
                      struct kumi_comm *comm, int *rcp)
{
    struct cprun x = { .fn = fn, .kind = K_BCAST, .comm = comm, .root = root, .at_root = comm->rank == root };
    struct kumi_dt *edt = bcast_elem(dt);
    if (!edt || !comm->coll.bcast || !cp_geometry(&x, count, dt, edt) || !cp_agreed(comm)) return false;
    if (dt->contig) {
        if (x.at_root) side((char *)buf + dt->true_lb, 0, &x.in_dev, &x.in_host);
        else side((char *)buf + dt->true_lb, 0, (const char **)&x.out_dev, (const char **)&x.out_host);
        *rcp = cp_run(&x);
        return true;
    }
    /* gaps: packed into host memory (a device buffer staged whole first) */
    struct kumi_cstager g = KUMI_CSTAGER(fn, KUMI_FORM_BLOCKING);
    const void *hb = buf;
    kumi_cstage(&g, &hb, kumi_cspan_n(count, dt), true, !x.at_root);
    char *tmp = g.rc ? NULL : malloc(x.nel * edt->size);
    if (!tmp) {
        *rcp = kumi_cstage_finish(&g, g.rc ? g.rc : kumi_error(MPI_ERR_NO_MEM, "%s: no memory to pack %zu bytes", fn,
                                                               x.nel * edt->size), NULL);
        return true;
    }
    if (x.at_root) { kumi_dt_pack(dt, hb, (size_t)count, tmp); x.in_host = tmp; }
    else x.out_host = tmp;
    int rc = cp_run(&x);
    if (!x.at_root && rc == MPI_SUCCESS) kumi_dt_unpack(dt, tmp, (size_t)count, (void *)hb);
    free(tmp);
    *rcp = kumi_cstage_finish(&g, rc, NULL);
    return true;
}

bool kumi_cpipe_reduce(const char *fn, bool all, const void *sbuf, void *rbuf, MPI_Count count, struct kumi_dt *dt,
                       struct kumi_op *op, int root, struct kumi_comm *comm, int *rcp)
{
    struct cprun x = { .fn = fn, .kind = all ? K_ALLREDUCE : K_REDUCE, .comm = comm, .op = op, .root = root,
                       .at_root = all || comm->rank == root, .rbuf = rbuf };
    if (!dt->contig || !(all ? comm->coll.allreduce != NULL : comm->coll.reduce != NULL) ||
        !cp_geometry(&x, count, dt, dt) || !cp_agreed(comm))
        return false;
    if (sbuf != MPI_IN_PLACE) side(sbuf, x.tlb, &x.in_dev, &x.in_host);
    else if (kumi_accel_is_device((const char *)rbuf + x.tlb)) x.in_dev = (const char *)rbuf + x.tlb;  /* a[] -> b[] */
    else x.in_place = true;
    if (x.at_root) side(rbuf, x.tlb, (const char **)&x.out_dev, (const char **)&x.out_host);
    *rcp = cp_run(&x);
    return true;
}
