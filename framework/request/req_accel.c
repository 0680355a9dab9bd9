/* Device buffers (accel, issue 24): the copy through host memory overlapped
 * with the transfer of a rendezvous message.
 *
 * Without this, a send from device memory is staged whole (core/accel.c's
 * pipelined copies) before its RTS goes, and a receive into device memory
 * is copied to the device whole after its last byte arrived.  Here:
 *
 * Sender.  A non-persistent send of a contiguous type from a device buffer
 * larger than the pinned cache (4 MiB) gets a host copy that is not filled
 * yet (kumi_stage_begin_send: s->lazy; mpi/pt2pt.c).  When the request
 * starts (kumi_req_accel_send_start, from kumi_req_start_send) and the
 * message is a rendezvous, the copies start on pipeline 1 (core.h:
 * kumi_accel_pipe_*, kumi_base_accel_chunk bytes each through pinned slots)
 * and the RTS goes at once without a first fragment; the progress engine
 * finishes copies (kumi_req_accel_progress).  At the CTS the payload goes as
 * DATA pieces of one chunk each (KUMI_HDR_F_PIECE; the piece's offset in the
 * header's src (high 32 bits) and tag (low 32 bits), which a DATA does not
 * otherwise use): every chunk already in host memory at once, every later
 * one as soon as its copy is over, while the next ones are still copied.
 * A send that cannot (an eager size, pipeline 1 busy with another send, a
 * transport that converts to external32) is filled whole there and goes as
 * before.
 *
 * Receiver.  A piece lands at its offset of the receive buffer (its own
 * struct kumi_rx); the receive completes when every byte of the message
 * arrived, in whatever order the pieces came.  A non-blocking receive into
 * device memory (its host copy in r->accel_stage) copies each piece that
 * arrived in order to the device on pipeline 2 while the next ones arrive;
 * its completion then copies only the rest (s->ondev).  Any receive takes
 * pieces, so the sender needs to know nothing of the receive buffer.
 *
 * One host (CUDA IPC, accel contract 1.2).  A sender in pieces to a peer of
 * this host copies no more than its first slots (KUMI_ACCEL_NSLOT chunks)
 * before the CTS comes: the receiver will likely copy device to device.
 * A device receive (contiguous,
 * long enough, from a peer of this host, the component able to open other
 * processes' memory) says so in its CTS (KUMI_HDR_F_IPC).  A sender in
 * pieces then stops its copies and sends instead one piece holding an IPC
 * handle of its device buffer (ipc_handle); the receiver opens it, copies
 * the message device to device in one copy into its own device buffer
 * (nothing is copied back at completion: s->ondev) and answers with a CTS
 * flagged KUMI_HDR_F_IPC, len 0: done, the send completes; len 1: it could
 * not (ipc_open or the copy failed), the sender fills its host copy and sends
 * the pieces after all, which the receive takes as above. */
#include "request/request.h"
#include <kumi/accel.h>
#include <stdlib.h>
#include <string.h>

int kumi_req_accel_active;                  /* a send's copies in flight (progress polls) */

/* what an IPC piece carries */
struct ipc_blob {
    unsigned char h[KUMI_ACCEL_IPC_SIZE];
    uint64_t off, len;                      /* the message in the opened allocation */
};

/* a send in pieces: in its host copy's xmem */
struct xsend {
    int ipc;                                /* 1: handle sent, answer awaited; 2: answered */
    struct ipc_blob blob;
    struct kumi_sendop ipc_op;
    size_t n, chunk;
    size_t issued, ready;                   /* bytes whose copy was issued / that are in host memory */
    size_t sent;                            /* bytes that went in pieces */
    bool cts;
    bool hold;                              /* a peer of this host: IPC likely, so no copies past the
                                               first slots before the CTS says which way */
    uint64_t rreq;
    size_t nops;
    struct kumi_sendop ops[];
};
static struct kumi_req *filling;            /* the send whose copies run on pipeline 1 */
static struct kumi_accel_pipe *fpipe;

static struct xsend *xs_of(struct kumi_req *r) { return (struct xsend *)r->accel_stage->xmem; }

static void send_pieces(struct kumi_req *r)
{
    struct xsend *x = xs_of(r);
    if (!x->cts) return;
    const char *host = (const char *)r->accel_stage->host;
    bool any = false;
    while (x->sent < x->ready) {
        size_t len = x->n - x->sent < x->chunk ? x->n - x->sent : x->chunk;
        if (x->sent + len > x->ready) break;
        struct kumi_sendop *op = &x->ops[x->sent / x->chunk];
        memset(op, 0, sizeof *op);
        op->hdr.kind = KUMI_HDR_DATA;
        op->hdr.flags = KUMI_HDR_F_PIECE;
        op->hdr.ctx = r->ctx;
        op->hdr.src = (int32_t)(uint32_t)((uint64_t)x->sent >> 32);
        op->hdr.tag = (int32_t)(uint32_t)x->sent;
        op->hdr.seq = r->seq;
        op->hdr.len = r->bytes;
        op->hdr.paylen = len;
        op->hdr.sreq = (uint64_t)(uintptr_t)r;
        op->hdr.rreq = x->rreq;
        op->payload = host + x->sent;
        op->done = r->op.done;              /* the request layer's: one of r->pending */
        op->owner = r;
        kumi_req_defer_op(r->wpeer, op);
        x->sent += len;
        kumi_pv.accel_pieces++;
        any = true;
    }
    if (any) kumi_req_flush_ctl();
}

/* Copies of the filling send: finished ones counted, free slots reused. */
static int fill_step(void)
{
    struct kumi_req *r = filling;
    struct xsend *x = xs_of(r);
    struct kumi_stage *s = r->accel_stage;
    int n = 0;
    long long got;
    while ((got = kumi_accel_pipe_poll(fpipe)) > 0) {      /* the finished copies, then new ones in free slots */
        x->ready += (size_t)got;
        n++;
    }
    if (got < 0) goto fail;
    while (x->issued < x->n && !(x->hold && !x->cts && x->issued >= KUMI_ACCEL_NSLOT * x->chunk)) {
        size_t len = x->n - x->issued < x->chunk ? x->n - x->issued : x->chunk;
        int rc = kumi_accel_pipe_in(fpipe, (char *)s->host + x->issued, (const char *)s->dev + x->issued, len);
        if (rc < 0) goto fail;
        if (rc == 0) break;
        x->issued += len;
        n++;
    }
    if (x->ready == x->n) {
        kumi_accel_pipe_give(fpipe);
        fpipe = NULL;
        filling = NULL;
        kumi_req_accel_active--;
    }
    if (n) send_pieces(r);
    return n;
fail:
    /* the device copy failed: nothing more can go; the message is cut short (an error, logged) */
    (void)kumi_error(MPI_ERR_OTHER, "%s: accel/%s: copying a device buffer to host memory failed", r->fname,
               kumi_accel_name());
    kumi_accel_pipe_give(fpipe);
    fpipe = NULL;
    filling = NULL;
    kumi_req_accel_active--;
    if (kumi_accel_copy_in((char *)s->host + x->ready, (const char *)s->dev + x->ready, x->n - x->ready) == 0) {
        x->ready = x->n;
        send_pieces(r);
    }
    return 1;
}

int kumi_req_accel_progress(void)
{
    return filling ? fill_step() : 0;
}

int kumi_req_accel_send_start(struct kumi_req *r, const struct kumi_p2p_ops *ops)
{
    struct kumi_stage *s = r->accel_stage;
    if (!s->lazy) return 0;
    s->lazy = false;                         /* filled from here on, by one way or the other */
    size_t chunk = 0, nops = 0;
    struct xsend *x = NULL;
    if (!filling && r->bytes == s->len && r->bytes > ops->eager_limit(r->wpeer) &&
        !(ops->caps & KUMI_P2P_CAP_EXTERNAL32) && (fpipe = kumi_accel_pipe_take(1, s->len))) {
        chunk = kumi_accel_pipe_chunk(fpipe);
        nops = (s->len + chunk - 1) / chunk;
        if (!(x = calloc(1, sizeof *x + nops * sizeof x->ops[0]))) {
            kumi_accel_pipe_give(fpipe);
            fpipe = NULL;
        }
    }
    if (!x) {                                /* whole, now */
        if (kumi_accel_copy_in(s->host, s->dev, s->len))
            return kumi_error(MPI_ERR_OTHER, "%s: accel/%s: copying %zu bytes from the device failed", r->fname,
                              kumi_accel_name(), s->len);
        return 0;
    }
    x->n = s->len;
    x->chunk = chunk;
    x->nops = nops;
    const struct kumi_accel_ops *a = kumi_accel();
    x->hold = a && a->hdr.size > offsetof(struct kumi_accel_ops, copy_dtod) && a->ipc_handle &&
              r->wpeer != kumi_world_rank() && kumi_same_host(r->wpeer);
    free(s->xmem);
    s->xmem = x;
    filling = r;
    kumi_req_accel_active++;
    kumi_log(2, "accel: %zu bytes of a device buffer to rank %d go in %zu pieces as they are copied", x->n,
             r->peer, nops);
    fill_step();                             /* the first copies issued */
    return -1;
}

/* The receiver offered IPC: the handle goes instead of the data (true), or not. */
static bool ipc_offer(struct kumi_req *r, struct xsend *x)
{
    const struct kumi_accel_ops *a = kumi_accel();
    struct kumi_stage *s = r->accel_stage;
    if (!a || a->hdr.size <= offsetof(struct kumi_accel_ops, copy_dtod) || !a->ipc_handle ||
        a->ipc_handle(s->dev, x->blob.h, &x->blob.off) != 0)
        return false;
    kumi_req_accel_forget(r);               /* its copies to host memory stop (wanted again if refused) */
    x->blob.len = x->n;
    struct kumi_sendop *op = &x->ipc_op;
    memset(op, 0, sizeof *op);
    op->hdr.kind = KUMI_HDR_DATA;
    op->hdr.flags = KUMI_HDR_F_PIECE | KUMI_HDR_F_IPC;
    op->hdr.ctx = r->ctx;
    op->hdr.seq = r->seq;
    op->hdr.len = r->bytes;
    op->hdr.paylen = sizeof x->blob;
    op->hdr.sreq = (uint64_t)(uintptr_t)r;
    op->hdr.rreq = x->rreq;
    op->payload = &x->blob;
    op->done = r->op.done;                  /* in the place of the DATA */
    op->owner = r;
    x->ipc = 1;
    r->pending++;                            /* the answer */
    kumi_req_defer_op(r->wpeer, op);
    kumi_req_flush_ctl();
    return true;
}

void kumi_req_accel_cts(struct kumi_req *r, const struct kumi_hdr *h)
{
    struct xsend *x = xs_of(r);
    if (x->ipc == 1) {                       /* the answer to the handle */
        x->ipc = 2;
        r->pending--;
        if (h->len == 0) {
            kumi_log(2, "accel: %zu bytes to rank %d: copied by the receiver from this device buffer (IPC)", x->n,
                     r->peer);
            kumi_req_check_complete(r);
            return;
        }
        kumi_log(1, "accel: rank %d could not open this device buffer (IPC): %zu bytes go through host memory",
                 r->peer, x->n);
        struct kumi_stage *s = r->accel_stage;
        if (x->ready < x->n && kumi_accel_copy_in((char *)s->host + x->ready, (const char *)s->dev + x->ready,
                                                  x->n - x->ready) == 0)
            x->ready = x->n;
        x->cts = true;
        r->pending += (int)x->nops;          /* the pieces after all, in the place of the DATA */
        send_pieces(r);
        return;
    }
    x->rreq = h->rreq;
    if ((h->flags & KUMI_HDR_F_IPC) && ipc_offer(r, x)) return;
    x->cts = true;
    r->pending += (int)x->nops - 1;          /* the pieces instead of one DATA */
    send_pieces(r);
}

uint8_t kumi_req_accel_cts_flags(struct kumi_req *r, const struct kumi_hdr *mh, int wpeer)
{
    const struct kumi_accel_ops *a = kumi_accel();
    struct kumi_stage *s = r->accel_stage;
    if (!a || a->hdr.size <= offsetof(struct kumi_accel_ops, copy_dtod) || !a->ipc_open || !a->copy_dtod ||
        !a->ipc_close || !s->host || !s->back || !r->dt->contig || r->xconv || mh->len == 0 ||
        mh->len > r->rx.cap || r->rx.dst != (char *)s->host || mh->len > s->len || wpeer == kumi_world_rank() ||
        !kumi_same_host(wpeer))
        return 0;
    return KUMI_HDR_F_IPC;
}

void kumi_req_accel_forget(struct kumi_req *r)
{
    if (filling != r) return;                /* a send completed early (cancelled): its copies end here */
    kumi_accel_pipe_give(fpipe);
    fpipe = NULL;
    filling = NULL;
    kumi_req_accel_active--;
}

/* ------------------------------------------------------------ receiving */
#define PIECE_MAGIC 0x4b504345u

struct piece {
    uint32_t magic;                          /* PIECE_MAGIC (rx.owner points here) */
    struct kumi_req *r;
    size_t off;
    struct kumi_rx rx;
    bool ipc;                                /* the handle, not data */
    uint64_t sreq;
    struct ipc_blob blob;
};
static struct kumi_req *draining;            /* the receive whose pieces go to the device on pipeline 2 */
static struct kumi_accel_pipe *dpipe;
static size_t dnext;                         /* bytes of it issued to the device (from offset 0) */

struct kumi_rx *kumi_req_accel_piece(struct kumi_req *r, const struct kumi_hdr *h)
{
    struct piece *p = malloc(sizeof *p);
    if (!p)
        kumi_err_fatal("rank %d: out of memory for a piece of a message of %llu bytes", kumi_world_rank(),
                       (unsigned long long)h->len);
    p->magic = PIECE_MAGIC;
    p->r = r;
    p->off = (size_t)((uint64_t)(uint32_t)h->src << 32 | (uint32_t)h->tag);
    size_t cap = r->rx.cap > p->off ? r->rx.cap - p->off : 0;
    p->rx.dst = cap ? r->rx.dst + p->off : NULL;
    p->rx.cap = cap < h->paylen ? cap : (size_t)h->paylen;
    p->rx.len = (size_t)h->paylen;
    p->rx.got = 0;
    p->rx.owner = p;
    p->ipc = (h->flags & KUMI_HDR_F_IPC) != 0;
    p->sreq = h->sreq;
    if (p->ipc) {
        memset(&p->blob, 0, sizeof p->blob);
        p->rx.dst = (char *)&p->blob;
        p->rx.cap = h->paylen < sizeof p->blob ? (size_t)h->paylen : sizeof p->blob;
    }
    return &p->rx;
}

/* The IPC piece of receive r arrived: copy device to device, answer; true: done. */
static bool ipc_take(struct kumi_req *r, struct piece *p)
{
    const struct kumi_accel_ops *a = kumi_accel();
    struct kumi_stage *s = r->accel_stage;
    void *base = NULL;
    bool ok = a && s && s->host && p->rx.got == sizeof p->blob && p->blob.len == r->msglen &&
              p->blob.len <= s->len && a->ipc_open(p->blob.h, &base) == 0;
    if (ok) {
        ok = a->copy_dtod(s->dev, (const char *)base + p->blob.off, (size_t)p->blob.len) == 0;
        a->ipc_close(base);
    }
    struct kumi_hdr h;
    memset(&h, 0, sizeof h);
    h.kind = KUMI_HDR_CTS;
    h.flags = KUMI_HDR_F_IPC;
    h.ctx = r->ctx;
    h.len = ok ? 0 : 1;
    h.sreq = p->sreq;
    h.rreq = (uint64_t)(uintptr_t)r;
    int wpeer = kumi_comm_peer_world(r->comm, r->status.MPI_SOURCE);
    kumi_req_send_ctl(wpeer, &h);
    if (!ok) {
        kumi_log(1, "accel: the device buffer of rank %d could not be opened here (IPC): the message comes "
                 "through host memory", r->status.MPI_SOURCE);
        return false;
    }
    s->ondev = (size_t)p->blob.len;           /* nothing to copy back */
    kumi_pv.accel_ipc++;
    kumi_log(2, "accel: %llu bytes from rank %d: one device-to-device copy (IPC)",
             (unsigned long long)p->blob.len, r->status.MPI_SOURCE);
    return true;
}

static void drain_end(void)
{
    struct kumi_stage *s = draining->accel_stage;
    if (kumi_accel_pipe_drain(dpipe) == 0 && s) s->ondev = dnext;   /* else copied again at completion */
    kumi_log(2, "accel: %zu of %llu bytes from rank %d went to the device while the message arrived", dnext,
             (unsigned long long)draining->msglen, draining->status.MPI_SOURCE);
    kumi_accel_pipe_give(dpipe);
    dpipe = NULL;
    draining = NULL;
}

/* The bytes [off, off + len) of the receive buffer arrived: to the device now? */
static void to_device(struct kumi_req *r, size_t off, size_t len)
{
    struct kumi_stage *s = r->accel_stage;
    if (!s || !s->back || !r->dt->contig || r->xconv || !s->host) return;
    size_t hoff = (size_t)(r->rx.dst - (char *)s->host) + off;
    if (r->rx.dst < (char *)s->host || hoff + len > s->len) return;
    if (!draining && off == 0 && len < r->msglen) {
        if (!(dpipe = kumi_accel_pipe_take(2, (size_t)r->msglen))) return;
        draining = r;
        dnext = 0;
        s->ondev = 0;
    }
    if (draining != r) return;
    if (off != dnext || kumi_accel_pipe_out(dpipe, (char *)s->dev + hoff, (char *)s->host + hoff, len)) {
        drain_end();                         /* out of order (or failed): the rest at completion */
        return;
    }
    dnext += len;
}

struct kumi_req *kumi_req_accel_piece_done(void *o)
{
    struct piece *p = o;
    if (p->magic != PIECE_MAGIC) return NULL;
    struct kumi_req *r = p->r;
    size_t len = p->rx.len, land = p->rx.cap;
    size_t off = p->off;
    p->magic = 0;
    if (p->ipc) {
        bool done = ipc_take(r, p);
        free(p);
        if (!done) return NULL;             /* the pieces follow */
        r->rx.got = r->msglen;
        return r;
    }
    free(p);
    r->rx.got += len;
    if (land) to_device(r, off, land);
    if (r->rx.got < r->msglen) return NULL;
    if (draining == r) drain_end();
    return r;                                /* every byte arrived: the receive is done */
}
