/* Partitioned point-to-point communication (MPI 4.1 chapter 4):
 * MPI_Psend_init, MPI_Precv_init (and their _c forms), MPI_Pready,
 * MPI_Pready_range, MPI_Pready_list, MPI_Parrived; MPI_Start(all), Wait,
 * Test and Request_free act on them through pt2pt.c.
 *
 * A partitioned request (kind KUMI_REQ_PSEND / KUMI_REQ_PRECV) is persistent
 * and owns a hidden "channel" to its peer, built from ordinary messages of
 * the request layer (eager / rendezvous protocols, matching, progress):
 *
 *   handshake   At MPI_Psend_init the sender sends HS1 {its channel end,
 *               partitions, bytes per partition, total bytes} on context
 *               KUMI_CTX_PART_HS | comm->ctx with the user's tag; at
 *               MPI_Precv_init the receiver posts the matching receive.
 *               Both queues keep order, so the i-th Psend_init to (dest,
 *               tag, comm) pairs with the i-th Precv_init from (source, tag,
 *               comm), as MPI requires.  The receiver answers HS2 {its
 *               channel end} on the sender's channel context, tag 0.
 *   data        Each sender partition, once Pready'd and once HS2 is in,
 *               is one message on the receiver's channel context
 *               (KUMI_CTX_PART_CH + n, unique on the receiver) with tag =
 *               the sender's partition index; the receiver posts, at every
 *               MPI_Start, one receive per sender partition straight into
 *               its byte range of the buffer (a packed copy for
 *               non-contiguous datatypes, unpacked as each partition lands).
 *
 * Sender and receiver may partition differently: only the total size must
 * agree.  MPI_Parrived(q) is true once every sender partition overlapping
 * the bytes of receive partition q has arrived.  Messages of successive
 * rounds on one channel cannot mix: a receiver's round i receives are
 * posted before its round i+1 ones and messages are non-overtaking.
 *
 * Errors: MPI_ANY_SOURCE / MPI_ANY_TAG are not allowed (MPI_ERR_RANK /
 * MPI_ERR_TAG); Pready / Parrived on a request of the wrong kind give
 * MPI_ERR_REQUEST; a partition out of range, or Pready on an inactive
 * request or on a partition already ready, MPI_ERR_ARG.  MPI_Parrived on an
 * inactive request answers flag = true.  MPI_Cancel does nothing (partitioned
 * requests are not cancellable here).  A sender that sends more bytes than
 * the receive buffer holds gives MPI_ERR_TRUNCATE at the receiver.
 *
 * Checkpoints (mpi/ckpt.c) need nothing of this file: every channel message
 * is an ordinary one of the request layer, which the cut delivers, and the
 * rest is memory of this process (tests/scripts/ckpt_part.sh). */
#include "mpi/mpi_front.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HS_MAGIC 0x4b505431u         /* "KPT1" */

struct hs_msg {
    uint32_t magic;
    int32_t ctx;                    /* the writer's channel end */
    int32_t parts;                  /* the writer's partitions */
    int32_t pad;
    uint64_t pbytes;                /* bytes per partition */
    uint64_t total;                 /* bytes in all */
};

struct part {
    struct kumi_req *req;           /* the user's request */
    bool send;
    int parts;                      /* this side's partitions */
    size_t pcount;                  /* elements per partition */
    size_t pbytes;                  /* bytes per partition */
    size_t total;                   /* bytes in all */
    char *base;                     /* contiguous datatype: the data (buf + true lb) */
    char *bounce;                   /* otherwise: packed copy of the whole buffer */
    int32_t myctx;                  /* my channel end */
    int32_t peerctx;                /* sender: the receiver's channel end */
    bool linked;                    /* handshake done */
    struct kumi_req *hs_send, *hs_recv;   /* handshake messages in flight */
    struct hs_msg hs_out, hs_in;
    /* the sender's partitioning, as the receiver learns it (== own on the sender) */
    int sparts;
    uint64_t spbytes, stotal;
    /* this round */
    unsigned char *flag;            /* sender: Pready'd; receiver: sender partition arrived */
    unsigned char *sent;            /* sender: handed to the request layer */
    int left;                       /* partition messages not yet complete */
    int err;                        /* first error of the round */
};

static uint32_t next_channel;

static struct kumi_dt *byte_dt(void) { return kumi_dt_get(MPI_BYTE); }

static struct kumi_req *sub_new(struct part *p, int kind, int32_t ctx, void *buf, size_t bytes, int tag,
                                void (*cb)(struct kumi_req *), int idx)
{
    struct kumi_req *r = p->req;
    return kumi_req_internal(kind, r->comm, ctx, r->fname, buf, bytes, byte_dt(), r->peer, tag, cb, p, idx);
}

static void set_err(struct part *p, int e)
{
    if (e != MPI_SUCCESS && p->err == MPI_SUCCESS) p->err = e;
}

/* Every partition message of the round is done: the request completes. */
static void round_done(struct part *p)
{
    struct kumi_req *r = p->req;
    if (!p->send) {
        r->status.MPI_SOURCE = r->peer;
        r->status.MPI_TAG = r->tag;
        r->msglen = p->stotal;
        kumi_status_set_bytes(&r->status, p->stotal < p->total ? p->stotal : p->total);
    }
    r->status.MPI_ERROR = p->err;
    r->pending = 0;
    kumi_req_check_complete(r);        /* frees r if MPI_Request_free'd meanwhile */
}

/* ------------------------------------------------------------ sender */
static void part_sent(struct kumi_req *s)
{
    struct part *p = s->ext;
    int e = s->status.MPI_ERROR;
    kumi_req_free(s);
    if (!p) return;
    set_err(p, e);
    if (--p->left == 0) round_done(p);
}

static void send_part(struct part *p, int i)
{
    char *src = (p->bounce ? p->bounce : p->base) + (size_t)i * p->pbytes;
    p->sent[i] = 1;
    struct kumi_req *s = sub_new(p, KUMI_REQ_SEND, p->peerctx, src, p->pbytes, i, part_sent, i);
    int rc = s ? kumi_req_start_send(s) : kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", p->req->fname);
    if (rc != MPI_SUCCESS) {
        kumi_req_free(s);
        set_err(p, rc);
        if (--p->left == 0) round_done(p);
    }
}

static void hs_sent(struct kumi_req *s)
{
    struct part *p = s->ext;
    int e = s->status.MPI_ERROR;
    kumi_req_free(s);
    if (!p) return;
    p->hs_send = NULL;
    if (e != MPI_SUCCESS) kumi_warn("%s: partitioned channel handshake failed (error %d)", p->req->fname, e);
}

/* Sender: the receiver's answer (HS2) arrived. */
static void hs_answer(struct kumi_req *s)
{
    struct part *p = s->ext;
    int e = s->status.MPI_ERROR;
    kumi_req_free(s);
    if (!p) return;
    p->hs_recv = NULL;
    if (e != MPI_SUCCESS || p->hs_in.magic != HS_MAGIC) {
        kumi_warn("%s: bad partitioned channel answer from rank %d", p->req->fname, p->req->peer);
        return;
    }
    p->peerctx = p->hs_in.ctx;
    p->linked = true;
    struct kumi_req *r = p->req;
    if (r->active && !r->complete)
        for (int i = 0; i < p->parts; i++)
            if (p->flag[i] && !p->sent[i]) send_part(p, i);
}

/* ------------------------------------------------------------ receiver */
static void part_arrived(struct kumi_req *s)
{
    struct part *p = s->ext;
    if (!p) { kumi_req_free(s); return; }
    int k = s->cb_idx;
    int e = s->status.MPI_ERROR;
    if (p->bounce && s->count) {
        size_t off = (size_t)k * p->spbytes;
        size_t got = (size_t)kumi_status_bytes(&s->status);
        struct kumi_req *r = p->req;
        kumi_dt_unpack_range(r->dt, p->bounce + off, (size_t)p->parts * p->pcount, off, got, r->buf);
    }
    kumi_req_free(s);
    p->flag[k] = 1;
    set_err(p, e == MPI_ERR_TRUNCATE ? MPI_ERR_TRUNCATE : e);
    if (--p->left == 0) round_done(p);
}

/* Post this round's receives, one per sender partition. */
static void post_round(struct part *p)
{
    memset(p->flag, 0, (size_t)p->sparts);
    p->left = p->sparts;
    p->err = MPI_SUCCESS;
    if (p->stotal > p->total) p->err = MPI_ERR_TRUNCATE;
    if (p->left == 0) { round_done(p); return; }
    char *dst = p->bounce ? p->bounce : p->base;
    for (int k = 0; k < p->sparts; k++) {
        uint64_t off = (uint64_t)k * p->spbytes, len = p->spbytes;
        if (off >= p->total) { off = p->total; len = 0; }
        else if (len > p->total - off) len = p->total - off;
        struct kumi_req *s = sub_new(p, KUMI_REQ_RECV, p->myctx, dst ? dst + off : NULL, (size_t)len, k,
                                     part_arrived, k);
        int rc = s ? kumi_req_start_recv(s) : kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", p->req->fname);
        if (rc != MPI_SUCCESS) {
            kumi_req_free(s);
            set_err(p, rc);
            p->flag[k] = 1;
            if (--p->left == 0) { round_done(p); return; }
        }
    }
}

/* Receiver: the sender's HS1 arrived; answer it. */
static void hs_offer(struct kumi_req *s)
{
    struct part *p = s->ext;
    int e = s->status.MPI_ERROR;
    kumi_req_free(s);
    if (!p) return;
    p->hs_recv = NULL;
    struct kumi_req *r = p->req;
    if (e != MPI_SUCCESS || p->hs_in.magic != HS_MAGIC || p->hs_in.parts < 0) {
        kumi_warn("%s: bad partitioned channel offer from rank %d", r->fname, r->peer);
        return;
    }
    p->sparts = p->hs_in.parts;
    p->spbytes = p->hs_in.pbytes;
    p->stotal = p->hs_in.total;
    p->flag = calloc((size_t)p->sparts + 1, 1);
    if (!p->flag) { kumi_warn("%s: out of memory for a partitioned channel", r->fname); return; }
    p->hs_out.magic = HS_MAGIC;
    p->hs_out.ctx = p->myctx;
    p->hs_out.parts = p->parts;
    p->hs_out.pbytes = p->pbytes;
    p->hs_out.total = p->total;
    struct kumi_req *a = sub_new(p, KUMI_REQ_SEND, p->hs_in.ctx, &p->hs_out, sizeof p->hs_out, 0, hs_sent, 0);
    p->linked = true;
    if (r->active && !r->complete) post_round(p);   /* started before the offer came */
    if (a) {
        p->hs_send = a;
        if (kumi_req_start_send(a) != MPI_SUCCESS) { p->hs_send = NULL; kumi_req_free(a); }
    }
}

/* ------------------------------------------------------------ init / start / free */
static int part_init(bool send, const char *fn, const void *buf, int partitions, MPI_Count count,
                     struct kumi_dt *dt, int peer, int tag, struct kumi_comm *comm, MPI_Info info,
                     MPI_Request *request)
{
    int rc;
    if (!request) return kumi_error(MPI_ERR_ARG, "%s: argument request is NULL", fn);
    *request = MPI_REQUEST_NULL;
    if (partitions < 0)
        return kumi_error(MPI_ERR_ARG, "%s: invalid number of partitions %d (argument partitions)", fn, partitions);
    if (count < 0) return kumi_error(MPI_ERR_COUNT, "%s: invalid count %lld (argument count)", fn, (long long)count);
    if (!send && peer == MPI_ANY_SOURCE)
        return kumi_error(MPI_ERR_RANK, "%s: MPI_ANY_SOURCE is not allowed in partitioned communication "
                          "(argument source)", fn);
    if (!send && tag == MPI_ANY_TAG)
        return kumi_error(MPI_ERR_TAG, "%s: MPI_ANY_TAG is not allowed in partitioned communication "
                          "(argument tag)", fn);
    if ((rc = kumi_chk_dest(fn, send ? "dest" : "source", peer, comm))) return rc;
    if ((rc = kumi_chk_tag(fn, "tag", tag, 0))) return rc;
    if (info != MPI_INFO_NULL && !kumi_info_get(info))
        return kumi_error(MPI_ERR_INFO, "%s: invalid info object (argument info)", fn);
    if ((rc = kumi_chk_dt_usable(fn, "datatype", dt))) return rc;
    if ((rc = kumi_chk_buf(fn, "buf", buf, (MPI_Count)partitions * count, dt))) return rc;
    if (dt->size && (uint64_t)count > (UINT64_MAX / 4) / dt->size / (partitions ? (uint64_t)partitions : 1))
        return kumi_error(MPI_ERR_COUNT, "%s: partitions * count * datatype size overflows", fn);

    struct kumi_req *r = kumi_req_msg(send ? KUMI_REQ_PSEND : KUMI_REQ_PRECV, comm, comm->ctx, fn, (void *)buf,
                                      (size_t)partitions * (size_t)count, dt, peer, tag);
    struct part *p = r ? calloc(1, sizeof *p) : NULL;
    if (!p) { kumi_req_free(r); return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn); }
    r->ext = p;
    r->persistent = true;
    p->req = r;
    p->send = send;
    p->parts = partitions;
    p->pcount = (size_t)count;
    p->pbytes = (size_t)count * dt->size;
    p->total = (size_t)partitions * p->pbytes;
    r->bytes = p->total;
    r->rx.cap = p->total;
    p->err = MPI_SUCCESS;
    if (peer == MPI_PROC_NULL) {       /* completes at every start; no channel */
        *request = (MPI_Request)r;
        return MPI_SUCCESS;
    }
    if (dt->contig || !p->total) {
        p->base = (char *)((uintptr_t)buf + (uintptr_t)dt->true_lb);   /* buf may be MPI_BOTTOM */
    } else {
        p->bounce = malloc(p->total);
        if (!p->bounce) { kumi_req_free(r); return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory (%zu bytes)", fn, p->total); }
    }
    p->myctx = (int32_t)(KUMI_CTX_PART_CH + (next_channel++ & 0x0fffffffu));
    int32_t hsctx = KUMI_CTX_PART_HS | comm->ctx;
    if (send) {
        p->sparts = p->parts;
        p->spbytes = p->pbytes;
        p->stotal = p->total;
        p->flag = calloc((size_t)partitions + 1, 1);
        p->sent = calloc((size_t)partitions + 1, 1);
        p->hs_out.magic = HS_MAGIC;
        p->hs_out.ctx = p->myctx;
        p->hs_out.parts = p->parts;
        p->hs_out.pbytes = p->pbytes;
        p->hs_out.total = p->total;
        struct kumi_req *a = sub_new(p, KUMI_REQ_RECV, p->myctx, &p->hs_in, sizeof p->hs_in, 0, hs_answer, 0);
        struct kumi_req *o = sub_new(p, KUMI_REQ_SEND, hsctx, &p->hs_out, sizeof p->hs_out, tag, hs_sent, 0);
        if (!p->flag || !p->sent || !a || !o) {
            kumi_req_free(a); kumi_req_free(o); kumi_req_free(r);
            return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
        }
        p->hs_recv = a;
        rc = kumi_req_start_recv(a);
        if (rc) { p->hs_recv = NULL; kumi_req_free(a); kumi_req_free(o); kumi_req_free(r); return rc; }
        p->hs_send = o;
        rc = kumi_req_start_send(o);
        if (rc) { p->hs_send = NULL; kumi_req_free(o); kumi_req_free(r); return rc; }
    } else {
        struct kumi_req *o = sub_new(p, KUMI_REQ_RECV, hsctx, &p->hs_in, sizeof p->hs_in, tag, hs_offer, 0);
        if (!o) { kumi_req_free(r); return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn); }
        p->hs_recv = o;
        rc = kumi_req_start_recv(o);   /* may complete at once (the offer is already here) */
        if (rc) { if (p->hs_recv) { p->hs_recv = NULL; kumi_req_free(o); } kumi_req_free(r); return rc; }
    }
    *request = (MPI_Request)r;
    return MPI_SUCCESS;
}

static int part_start(struct kumi_req *r)
{
    struct part *p = r->ext;
    r->active = true;
    r->complete = false;
    r->pending = 1;
    kumi_status_empty(&r->status);
    p->err = MPI_SUCCESS;
    if (r->peer == MPI_PROC_NULL) {
        r->status.MPI_SOURCE = MPI_PROC_NULL;
        r->pending = 0;
        kumi_req_check_complete(r);
        return MPI_SUCCESS;
    }
    if (p->send) {
        memset(p->flag, 0, (size_t)p->parts);
        memset(p->sent, 0, (size_t)p->parts);
        p->left = p->parts;
        if (p->left == 0) round_done(p);
    } else if (p->linked) {
        post_round(p);
    }
    return MPI_SUCCESS;
}

static void part_free(struct kumi_req *r)
{
    struct part *p = r->ext;
    if (!p) return;
    /* Handshake messages still in flight: an unmatched receive is withdrawn,
     * anything else is left to free itself when it completes. */
    if (p->hs_recv) {
        if (kumi_match_unpost(p->hs_recv)) kumi_req_free(p->hs_recv);
        else p->hs_recv->ext = NULL;
    }
    if (p->hs_send) p->hs_send->ext = NULL;
    free(p->bounce);
    free(p->flag);
    free(p->sent);
    free(p);
    r->ext = NULL;
}

static const struct kumi_req_ops psend_ops = { .name = "partitioned send", .start = part_start, .free = part_free };
static const struct kumi_req_ops precv_ops = { .name = "partitioned receive", .start = part_start, .free = part_free };

void kumi_part_register(void)
{
    kumi_req_register_kind(KUMI_REQ_PSEND, &psend_ops);
    kumi_req_register_kind(KUMI_REQ_PRECV, &precv_ops);
}

/* ------------------------------------------------------------ MPI functions */
int kumi_mpi_psend_init(const void *buf, int partitions, MPI_Count count, struct kumi_dt *datatype, int dest,
                        int tag, struct kumi_comm *comm, MPI_Info info, MPI_Request *request)
{
    return part_init(true, "MPI_Psend_init", buf, partitions, count, datatype, dest, tag, comm, info, request);
}

int kumi_mpi_psend_init_c(const void *buf, int partitions, MPI_Count count, struct kumi_dt *datatype, int dest,
                          int tag, struct kumi_comm *comm, MPI_Info info, MPI_Request *request)
{
    return part_init(true, "MPI_Psend_init_c", buf, partitions, count, datatype, dest, tag, comm, info, request);
}

int kumi_mpi_precv_init(void *buf, int partitions, MPI_Count count, struct kumi_dt *datatype, int source,
                        int tag, struct kumi_comm *comm, MPI_Info info, MPI_Request *request)
{
    return part_init(false, "MPI_Precv_init", buf, partitions, count, datatype, source, tag, comm, info, request);
}

int kumi_mpi_precv_init_c(void *buf, int partitions, MPI_Count count, struct kumi_dt *datatype, int dest,
                          int tag, struct kumi_comm *comm, MPI_Info info, MPI_Request *request)
{
    /* (the ABI data names the source argument "dest") */
    return part_init(false, "MPI_Precv_init_c", buf, partitions, count, datatype, dest, tag, comm, info, request);
}

/* The partitioned request behind handle h, of kind kind, or the handled error. */
static int part_req(MPI_Request h, int kind, const char *fn, struct kumi_req **out)
{
    struct kumi_req *r = kumi_handle_obj(h, KUMI_MAGIC_REQ);
    *out = r;
    if (!r || r->kind != kind)
        return kumi_err_handle(r ? r->comm : NULL,
                               kumi_error(MPI_ERR_REQUEST, "%s: argument request is %s", fn,
                                          h == MPI_REQUEST_NULL ? "MPI_REQUEST_NULL"
                                          : !r ? "not a valid request"
                                          : kind == KUMI_REQ_PSEND ? "not a partitioned send request"
                                          : "not a partitioned receive request"));
    return MPI_SUCCESS;
}

static int check_ready(struct kumi_req *r, int i, const char *fn, const char *arg)
{
    struct part *p = r->ext;
    if (!r->active)
        return kumi_error(MPI_ERR_ARG, "%s: the partitioned request is not active (MPI_Start it first)", fn);
    if (i < 0 || i >= p->parts)
        return kumi_error(MPI_ERR_ARG, "%s: partition %d out of range 0..%d (argument %s)", fn, i,
                          p->parts - 1, arg);
    if (r->peer != MPI_PROC_NULL && p->flag[i])
        return kumi_error(MPI_ERR_ARG, "%s: partition %d is already ready in this round (argument %s)", fn, i, arg);
    return MPI_SUCCESS;
}

static void ready(struct kumi_req *r, int i)
{
    struct part *p = r->ext;
    if (r->peer == MPI_PROC_NULL) return;
    p->flag[i] = 1;
    if (p->bounce)
        kumi_dt_pack_range(r->dt, r->buf, (size_t)p->parts * p->pcount, (size_t)i * p->pbytes, p->pbytes,
                           p->bounce + (size_t)i * p->pbytes);
    if (p->linked) send_part(p, i);
}

int kumi_mpi_pready(int partition, MPI_Request request)
{
    struct kumi_req *r;
    int rc = part_req(request, KUMI_REQ_PSEND, "MPI_Pready", &r);
    if (rc) return rc;
    if ((rc = check_ready(r, partition, "MPI_Pready", "partition"))) return kumi_err_handle(r->comm, rc);
    ready(r, partition);
    kumi_req_flush_ctl();
    return MPI_SUCCESS;
}

int kumi_mpi_pready_range(int partition_low, int partition_high, MPI_Request request)
{
    struct kumi_req *r;
    int rc = part_req(request, KUMI_REQ_PSEND, "MPI_Pready_range", &r);
    if (rc) return rc;
    if (partition_low > partition_high)
        return kumi_err_handle(r->comm, kumi_error(MPI_ERR_ARG, "MPI_Pready_range: partition_low %d > "
                                                   "partition_high %d", partition_low, partition_high));
    for (int i = partition_low; i <= partition_high; i++) {
        if ((rc = check_ready(r, i, "MPI_Pready_range", i == partition_low ? "partition_low" : "partition_high")))
            return kumi_err_handle(r->comm, rc);
        if (i == partition_high) break;            /* partition_high may be INT_MAX */
    }
    for (int i = partition_low; i <= partition_high; i++) {
        ready(r, i);
        if (i == partition_high) break;
    }
    kumi_req_flush_ctl();
    return MPI_SUCCESS;
}

int kumi_mpi_pready_list(int length, const int array_of_partitions[], MPI_Request request)
{
    struct kumi_req *r;
    int rc = part_req(request, KUMI_REQ_PSEND, "MPI_Pready_list", &r);
    if (rc) return rc;
    if (length < 0)
        return kumi_err_handle(r->comm, kumi_error(MPI_ERR_ARG, "MPI_Pready_list: invalid length %d", length));
    if (length > 0 && !array_of_partitions)
        return kumi_err_handle(r->comm, kumi_error(MPI_ERR_ARG, "MPI_Pready_list: argument array_of_partitions "
                                                   "is NULL"));
    struct part *p = r->ext;
    for (int k = 0; k < length; k++) {
        char arg[48];
        snprintf(arg, sizeof arg, "array_of_partitions[%d]", k);
        if ((rc = check_ready(r, array_of_partitions[k], "MPI_Pready_list", arg)))
            break;
        if (r->peer != MPI_PROC_NULL) p->flag[array_of_partitions[k]] = 2;   /* duplicates in the list */
    }
    for (int k = 0; k < length && r->peer != MPI_PROC_NULL; k++) {      /* undo the marks */
        int i = array_of_partitions[k];
        if (i >= 0 && i < p->parts && p->flag[i] == 2) p->flag[i] = 0;
    }
    if (rc) return kumi_err_handle(r->comm, rc);
    for (int k = 0; k < length; k++) ready(r, array_of_partitions[k]);
    kumi_req_flush_ctl();
    return MPI_SUCCESS;
}

int kumi_mpi_parrived(MPI_Request request, int partition, int *flag)
{
    struct kumi_req *r;
    int rc = part_req(request, KUMI_REQ_PRECV, "MPI_Parrived", &r);
    if (rc) return rc;
    struct part *p = r->ext;
    if (!flag)
        return kumi_err_handle(r->comm, kumi_error(MPI_ERR_ARG, "MPI_Parrived: argument flag is NULL"));
    if (partition < 0 || partition >= p->parts)
        return kumi_err_handle(r->comm, kumi_error(MPI_ERR_ARG, "MPI_Parrived: partition %d out of range 0..%d "
                                                   "(argument partition)", partition, p->parts - 1));
    for (int pass = 0; pass < 2; pass++) {
        if (!r->active || r->complete || r->peer == MPI_PROC_NULL) { *flag = 1; return MPI_SUCCESS; }
        if (p->linked) {
            /* sender partitions covering bytes [lo, hi) of the buffer */
            uint64_t lo = (uint64_t)partition * p->pbytes, hi = lo + p->pbytes;
            if (hi > p->stotal) hi = p->stotal;
            int ok = 1;
            if (lo >= hi || !p->spbytes) {
                ok = p->left == 0;
            } else {
                for (uint64_t k = lo / p->spbytes; k <= (hi - 1) / p->spbytes && k < (uint64_t)p->sparts; k++)
                    if (!p->flag[k]) { ok = 0; break; }
            }
            if (ok) { *flag = 1; return MPI_SUCCESS; }
        }
        if (pass == 0) kumi_progress(0);
    }
    *flag = 0;
    return MPI_SUCCESS;
}
