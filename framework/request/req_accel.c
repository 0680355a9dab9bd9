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
 * pieces, so the sender needs to know nothing of the receive buffer. */
#include "request/request.h"
#include <kumi/accel.h>
#include <stdlib.h>
#include <string.h>

int kumi_req_accel_active;                  /* a send's copies in flight (progress polls) */

/* a send in pieces: in its host copy's xmem */
struct xsend {
    size_t n, chunk;
    size_t issued, ready;                   /* bytes whose copy was issued / that are in host memory */
    size_t sent;                            /* bytes that went in pieces */
    bool cts;
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
    while (x->issued < x->n) {
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
    free(s->xmem);
    s->xmem = x;
    filling = r;
    kumi_req_accel_active++;
    kumi_log(2, "accel: %zu bytes of a device buffer to rank %d go in %zu pieces as they are copied", x->n,
             r->peer, nops);
    fill_step();                             /* the first copies issued */
    return -1;
}

void kumi_req_accel_cts(struct kumi_req *r, uint64_t rreq)
{
    struct xsend *x = xs_of(r);
    x->cts = true;
    x->rreq = rreq;
    r->pending += (int)x->nops - 1;          /* the pieces instead of one DATA */
    send_pieces(r);
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
    return &p->rx;
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
    struct kumi_req *r = p->r;
    size_t len = p->rx.len, land = p->rx.cap;
    size_t off = p->off;
    p->magic = 0;
    free(p);
    r->rx.got += len;
    if (land) to_device(r, off, land);
    if (r->rx.got < r->msglen) return NULL;
    if (draining == r) drain_end();
    return r;                                /* every byte arrived: the receive is done */
}
