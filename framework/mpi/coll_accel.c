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
#include "sched/sched.h"
#include <kumi/abi.h>
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
 * Other datatypes and collectives keep the whole staging above.  Errors:
 * every piece still runs (the other processes wait for it); the first error
 * is returned.  The non-blocking and persistent forms cut at the same places
 * on the same agreement (below: one schedule of pieces). */
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

static void nb_free(void);
static void cp_free(void)
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

void kumi_cpipe_finalize(void)
{
    cp_free();
    nb_free();
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
            cp_free();
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

static int nb_run(struct cprun *x, const struct kumi_cpform *f, struct kumi_cstager *g, void *pk_buf,
                  MPI_Count pk_count, struct kumi_dt *pk_dt);

bool kumi_cpipe_bcast(const char *fn, const struct kumi_cpform *f, void *buf, MPI_Count count, struct kumi_dt *dt,
                      int root, struct kumi_comm *comm, int *rcp)
{
    struct cprun x = { .fn = fn, .kind = K_BCAST, .comm = comm, .root = root, .at_root = comm->rank == root };
    struct kumi_dt *edt = bcast_elem(dt);
    bool blocking = f->mode == KUMI_FORM_BLOCKING;
    if (!edt || !(blocking ? comm->coll.bcast != NULL : comm->coll.ibcast != NULL) ||
        !cp_geometry(&x, count, dt, edt) || !cp_agreed(comm))
        return false;
    if (dt->contig) {
        if (x.at_root) side((char *)buf + dt->true_lb, 0, &x.in_dev, &x.in_host);
        else side((char *)buf + dt->true_lb, 0, (const char **)&x.out_dev, (const char **)&x.out_host);
        *rcp = blocking ? cp_run(&x) : nb_run(&x, f, NULL, NULL, 0, NULL);
        return true;
    }
    /* gaps: packed into host memory (a device buffer staged whole first) */
    struct kumi_cstager g = KUMI_CSTAGER(fn, f->mode);
    const void *hb = buf;
    kumi_cstage(&g, &hb, kumi_cspan_n(count, dt), true, !x.at_root);
    if (!blocking) {
        *rcp = g.rc ? kumi_cstage_finish(&g, g.rc, NULL) : nb_run(&x, f, &g, (void *)hb, count, dt);
        return true;
    }
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

bool kumi_cpipe_reduce(const char *fn, const struct kumi_cpform *f, bool all, const void *sbuf, void *rbuf,
                       MPI_Count count, struct kumi_dt *dt, struct kumi_op *op, int root, struct kumi_comm *comm,
                       int *rcp)
{
    struct cprun x = { .fn = fn, .kind = all ? K_ALLREDUCE : K_REDUCE, .comm = comm, .op = op, .root = root,
                       .at_root = all || comm->rank == root, .rbuf = rbuf };
    bool blocking = f->mode == KUMI_FORM_BLOCKING;
    if (!dt->contig ||
        !(blocking ? all ? comm->coll.allreduce != NULL : comm->coll.reduce != NULL
                   : all ? comm->coll.iallreduce != NULL : comm->coll.ireduce != NULL) ||
        !cp_geometry(&x, count, dt, dt) || !cp_agreed(comm))
        return false;
    if (sbuf != MPI_IN_PLACE) side(sbuf, x.tlb, &x.in_dev, &x.in_host);
    else if (kumi_accel_is_device((const char *)rbuf + x.tlb)) x.in_dev = (const char *)rbuf + x.tlb;  /* a[] -> b[] */
    else x.in_place = true;
    if (x.at_root) side(rbuf, x.tlb, (const char **)&x.out_dev, (const char **)&x.out_host);
    *rcp = blocking ? cp_run(&x) : nb_run(&x, f, NULL, NULL, 0, NULL);
    return true;
}

/* ------------------------------------------------ pipelined non-blocking and persistent collectives
 * MPI_Ibcast / MPI_Ireduce / MPI_Iallreduce and their _init forms, above the
 * same threshold and on the same agreement as the blocking calls (so every
 * process cuts at the same places), build one schedule of pieces instead of
 * staging whole: for piece k (whole elements, about kumi_base_accel_coll_chunk
 * bytes) the coll component's builder adds the collective of that piece on
 * host memory of the schedule's (pinned, reused: hb_take below), and around it
 *   IN(k)   device to host copy of piece k's input (where it is device memory)
 *   J(k)    a join after every node of piece k's collective
 *   OUT(k)  host to device copy of its result (asynchronous where the
 *           component has streams: the DMA runs while the next pieces are
 *           sent; FIN waits for the last one before the request completes)
 * IN and OUT are CALC nodes of an op of the library's (fn_ctx: a copy in the
 * op's direction), so every engine runs them as it runs a reduction (the
 * loop and thread engines, io_uring around them, the kernel module handing
 * them back).  The pieces' collectives run one after the other (the first
 * nodes of piece k after J(k-1): the builders reuse their node tags, and two
 * pieces in flight at once could match each other's messages), and IN(k+1)
 * runs after IN(k) and J(k-1): while piece k's messages go, the next piece is
 * read, never more; the DAG's successor order starts piece k's messages
 * before copying.  A persistent request reruns the schedule at each MPI_Start:
 * it reads its inputs from the device again and writes its results back.
 * A broadcast on a datatype with gaps goes through a packed host buffer (COPY
 * nodes before the first / after the last piece; a device buffer of it is
 * staged whole, as the whole staging does, and handed to the request). */
struct cpnb {
    struct kumi_sched *s;
    const char *fn;
    size_t pieces;
    bool async;                           /* OUT copies on nb.stream; FIN waits for nb.ev */
    unsigned overlap;                     /* this run: copies made while messages were in flight */
    void *blk;                            /* the host memory of the pieces (hb_take), or NULL */
    size_t blen;
    bool pinned;
};
static struct { void *stream, *ev; int state; } nb;   /* state: 0 not made, 1 made, -1 unavailable */

/* Host memory of the pieces: pinned where the component gives it (copies at
 * full speed, the asynchronous ones really so), else malloc'd; up to NHB
 * blocks, the largest, are kept for the next schedules (a repeated call
 * neither pins nor faults its pages in again) until MPI_Finalize. */
enum { NHB = 2 };
static struct hblk { void *p; size_t len; bool pinned; } hb[NHB];

static void hb_drop(struct hblk b)
{
    const struct kumi_accel_ops *A = kumi_accel();
    if (!b.pinned) free(b.p);
    else if (A && A->host_free) A->host_free(b.p);     /* after the component's end: left to the driver */
}

static struct hblk hb_take(size_t len)
{
    int best = -1;
    for (int i = 0; i < NHB; i++)
        if (hb[i].p && hb[i].len >= len && (best < 0 || hb[i].len < hb[best].len)) best = i;
    struct hblk b = { NULL, len, false };
    if (best >= 0) {
        b = hb[best];
        hb[best].p = NULL;
        return b;
    }
    const struct kumi_accel_ops *A = kumi_accel();
    if (A && A->host_alloc && !A->host_alloc(len, &b.p)) b.pinned = true;
    else b.p = malloc(len ? len : 1);
    return b;
}

static void hb_give(struct hblk b)
{
    int slot = -1;
    for (int i = 0; i < NHB; i++)
        if (!hb[i].p) { slot = i; break; }
        else if (hb[i].len < b.len && (slot < 0 || hb[i].len < hb[slot].len)) slot = i;
    if (slot < 0 || !kumi_accel()) { hb_drop(b); return; }
    if (hb[slot].p) hb_drop(hb[slot]);
    hb[slot] = b;
}

/* the schedule is destroyed (sched.c: on_destroy) */
static void nb_release(void *arg)
{
    struct cpnb *c = arg;
    if (c->blk) hb_give((struct hblk){ c->blk, c->blen, c->pinned });
    c->blk = NULL;
}

static void nb_free(void)
{
    const struct kumi_accel_ops *A = kumi_accel();
    for (int i = 0; i < NHB; i++)
        if (hb[i].p) hb_drop(hb[i]);
    memset(hb, 0, sizeof hb);
    if (A && nb.state == 1) {
        if (nb.ev) A->event_free(nb.ev);
        if (nb.stream) A->stream_free(nb.stream);
    }
    memset(&nb, 0, sizeof nb);
}

/* One stream and one event for every pipelined schedule: a stream runs its
 * copies in order, so the event recorded after the latest copy covers the
 * earlier ones (of this and of other schedules). */
static bool nb_async(const struct kumi_accel_ops *A)
{
    if (nb.state == 0) {
        bool ok = A->hdr.size > offsetof(struct kumi_accel_ops, event_sync) && A->stream_new && A->copy_to_dev_async &&
                  A->event_new && A->event_record && A->event_sync && !A->stream_new(&nb.stream);
        ok = ok && !A->event_new(&nb.ev);
        nb.state = 1;
        if (!ok) {
            nb_free();
            nb.state = -1;
            kumi_log(1, "accel: the pipelined non-blocking collectives copy to the device synchronously");
        }
    }
    return nb.state > 0;
}

static void nb_error(struct cpnb *c, const char *what, MPI_Count len)
{
    if (c->s->rerr == MPI_SUCCESS)
        c->s->rerr = kumi_error(MPI_ERR_OTHER, "%s: accel/%s: %s (a piece of %lld bytes) failed", c->fn,
                                kumi_accel_name(), what, (long long)len);
}

/* IN: len bytes device in -> host inout */
static void nb_in(void *in, void *inout, MPI_Count len, MPI_Datatype dt, void *ctx)
{
    (void)dt;
    struct cpnb *c = ctx;
    if (kumi_accel()->copy_to_host(inout, in, (size_t)len)) nb_error(c, "copying from the device", len);
    if (c->s->inflight) c->overlap++;
}

/* OUT: len bytes host in -> device inout; FIN (in NULL): wait for them */
static void nb_out(void *in, void *inout, MPI_Count len, MPI_Datatype dt, void *ctx)
{
    (void)dt;
    struct cpnb *c = ctx;
    const struct kumi_accel_ops *A = kumi_accel();
    if (!in) {
        if (c->async && A->event_sync(nb.ev)) nb_error(c, "waiting for the copies to the device", 0);
        kumi_pv.accel_coll_pieces += c->pieces;
        kumi_log(2, "accel: %s: %zu pieces, %u of their copies while messages were in flight", c->fn, c->pieces,
                 c->overlap);
        c->overlap = 0;
        return;
    }
    if (c->async ? A->copy_to_dev_async(inout, in, (size_t)len, nb.stream) || A->event_record(nb.ev, nb.stream)
                 : A->copy_to_dev(inout, in, (size_t)len))
        nb_error(c, "copying to the device", len);
    if (c->s->inflight) c->overlap++;
}

static struct kumi_op *nb_op(kumi_abi_op_fn *fn, struct cpnb *c)
{
    struct kumi_op *o = kumi_op_new(NULL, NULL, false);   /* ours until the schedule holds it */
    if (o) o->fn_ctx = fn, o->ctx = c;
    return o;
}

/* Nodes [a, b) that the builder of one piece made (its edges from e0 on):
 * each one without a predecessor there comes after pre1 and pre2, each one
 * without a successor before join.  No node: join after pre1 and pre2. */
static void nb_wrap(struct kumi_sched *s, uint32_t a, uint32_t b, uint32_t e0, int pre1, int pre2, int join)
{
    if (a == b) { kumi_sched_after(s, join, pre1); kumi_sched_after(s, join, pre2); return; }
    uint8_t *has = calloc(b - a, 1);      /* bit 0: a predecessor, bit 1: a successor */
    if (!has) { kumi_sched_fail(s, kumi_error(MPI_ERR_NO_MEM, "collective schedule: out of memory")); return; }
    uint32_t ne = s->nedge;
    for (uint32_t e = e0; e < ne; e++) {
        if (s->edge[e].to >= a && s->edge[e].to < b) has[s->edge[e].to - a] |= 1;
        if (s->edge[e].from >= a && s->edge[e].from < b) has[s->edge[e].from - a] |= 2;
    }
    for (uint32_t i = a; i < b; i++)
        if (!(has[i - a] & 1)) { kumi_sched_after(s, (int)i, pre1); kumi_sched_after(s, (int)i, pre2); }
    for (uint32_t i = a; i < b; i++)
        if (!(has[i - a] & 2)) kumi_sched_after(s, join, (int)i);
    free(has);
}

/* The builder of piece k on host memory: in / out as run_piece takes them */
static int nb_piece(const struct cprun *x, struct kumi_sched *s, const void *in, void *out, size_t n)
{
    struct kumi_comm *comm = x->comm;
    MPI_Datatype d = (MPI_Datatype)x->dt;
    MPI_Comm c = (MPI_Comm)comm;
    if (x->kind == K_BCAST) return comm->coll.ibcast(x->at_root ? (void *)in : out, (MPI_Count)n, d, x->root, c, s);
    if (x->kind == K_REDUCE)
        return comm->coll.ireduce(x->in_place ? MPI_IN_PLACE : in, x->at_root ? out : x->rbuf, (MPI_Count)n, d,
                                  (MPI_Op)x->op, x->root, c, s);
    return comm->coll.iallreduce(x->in_place ? MPI_IN_PLACE : in, out, (MPI_Count)n, d, (MPI_Op)x->op, c, s);
}

/* The pieces of x into s (pre: a node before everything, post: one after
 * every piece, or -1).  A reduction whose input is device memory at a process
 * that gets the result copies the input into the result's host memory (the
 * user's receive buffer where that is host memory) and runs the pieces in
 * place: one host buffer at most. */
static int nb_build(struct cprun *x, struct kumi_sched *s, int pre, int post)
{
    size_t sz = x->dt->size, total = x->nel * sz, np = (x->nel + x->per - 1) / x->per;
    bool inpl = x->kind != K_BCAST && x->in_dev && x->at_root;
    bool need = x->out_dev || (x->in_dev && !inpl);
    struct cpnb *c = kumi_sched_alloc(s, sizeof *c);
    int *nd = malloc(sizeof *nd * 3 * np);                    /* per piece: IN, J, OUT */
    uint32_t *rng = malloc(sizeof *rng * 3 * np);             /* per piece: first node, end, first edge */
    struct kumi_op *opin = c ? nb_op(nb_in, c) : NULL, *opout = c ? nb_op(nb_out, c) : NULL;
    int rc = s->err;
    if (c) {
        *c = (struct cpnb){ .s = s, .fn = x->fn, .pieces = np, .async = x->out_dev && nb_async(kumi_accel()) };
        if (need) {
            struct hblk b = hb_take(total);
            c->blk = b.p, c->blen = b.len, c->pinned = b.pinned;
        }
        s->on_destroy = nb_release;
        s->on_destroy_arg = c;
    }
    if (!rc && (!nd || !rng || !opin || !opout || (need && !c->blk)))
        rc = kumi_sched_fail(s, kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", x->fn));
    char *h = c ? c->blk : NULL;                                   /* data of the pieces, at byte 0 */
    char *idst = inpl && !x->out_dev ? (char *)x->out_host + x->tlb : h;   /* where IN copies to */
    if (inpl) x->in_place = true;
    MPI_Datatype byte = MPI_BYTE;
    for (size_t k = 0; !rc && k < np; k++) {
        size_t off = k * x->per * sz, n = piece_len(x, k);
        nd[3 * k] = x->in_dev ? kumi_sched_calc(s, x->in_dev + off, idst + off, n * sz, byte, (MPI_Op)opin) : -1;
        const void *in = x->in_dev && !inpl ? h + off - x->tlb : x->in_host ? x->in_host + off : NULL;
        void *out = x->out_dev ? h + off - x->tlb : x->out_host ? x->out_host + off : NULL;
        rng[3 * k] = s->n;
        rng[3 * k + 2] = s->nedge;
        int brc = nb_piece(x, s, in, out, n);
        rng[3 * k + 1] = s->n;
        if (brc) rc = kumi_sched_fail(s, brc);
        nd[3 * k + 1] = kumi_sched_nop(s);
        nd[3 * k + 2] = x->out_dev ? kumi_sched_calc(s, h + off, x->out_dev + off, n * sz, byte, (MPI_Op)opout) : -1;
        rc = rc ? rc : s->err;
    }
    /* the dependencies, in the order the engine should start successors */
    for (size_t k = 0; !rc && k < np; k++) {
        int prev_j = k ? nd[3 * (k - 1) + 1] : pre;
        nb_wrap(s, rng[3 * k], rng[3 * k + 1], rng[3 * k + 2], nd[3 * k], prev_j, nd[3 * k + 1]);
        if (k) kumi_sched_after(s, nd[3 * (k - 1) + 2], prev_j);          /* OUT(k-1) */
        if (!k) kumi_sched_after(s, nd[0], pre);
        if (k + 1 < np) {                                                 /* IN(k+1) */
            kumi_sched_after(s, nd[3 * (k + 1)], nd[3 * k]);
            kumi_sched_after(s, nd[3 * (k + 1)], prev_j);
        }
    }
    if (!rc) {
        int last = nd[3 * (np - 1) + 1];
        kumi_sched_after(s, nd[3 * (np - 1) + 2], last);
        kumi_sched_after(s, post, last);
        int fin = kumi_sched_calc(s, NULL, c, 1, byte, (MPI_Op)opout);
        kumi_sched_after(s, fin, post);
        kumi_sched_after(s, fin, last);
        for (size_t k = 0; k < np; k++) kumi_sched_after(s, fin, nd[3 * k + 2]);
        rc = s->err;
    }
    if (opin) kumi_op_release(opin);      /* the schedule holds them now */
    if (opout) kumi_op_release(opout);
    free(nd);
    free(rng);
    if (!rc)
        kumi_log(2, "accel: %s of %zu bytes: a schedule of %zu pieces%s%s", x->fn, total, np,
                 x->in_dev || x->out_dev ? " (device buffers, copies between the pieces' messages" : "",
                 x->in_dev || x->out_dev ? c->blk ? c->pinned ? "; pinned host memory)" : "; host memory)" : ")" : "");
    return rc;
}

/* Begin the schedule of x->fn (form f), build it, issue it; g (or NULL)
 * holds a whole staged buffer.  pk_dt: a broadcast's datatype with gaps,
 * packed from / unpacked into pk_count elements at pk_buf around the pieces. */
static int nb_run(struct cprun *x, const struct kumi_cpform *f, struct kumi_cstager *g, void *pk_buf,
                  MPI_Count pk_count, struct kumi_dt *pk_dt)
{
    struct kumi_sched *s;
    int rc = kumi_sched_begin(x->comm, x->fn, f->mode == KUMI_FORM_INIT, f->info, f->request, &s), pre = -1,
        post = -1;
    if (rc) return kumi_cstage_done(g, rc, NULL);
    if (pk_dt) {
        char *tmp = kumi_sched_alloc(s, x->nel * x->dt->size);
        MPI_Datatype e = (MPI_Datatype)x->dt, d = (MPI_Datatype)pk_dt;
        if (x->at_root) {
            pre = kumi_sched_copy(s, pk_buf, (size_t)pk_count, d, tmp, x->nel, e);
            x->in_host = tmp;
        } else {
            post = kumi_sched_copy(s, tmp, x->nel, e, pk_buf, (size_t)pk_count, d);
            x->out_host = tmp;
        }
    }
    rc = kumi_sched_issue(s, s->err ? s->err : nb_build(x, s, pre, post), f->mode == KUMI_FORM_INIT, x->fn,
                          f->request);
    return kumi_cstage_done(g, rc, f->request);
}
