/* p2p/vmpi: Kumi's messages carried by the vendor MPI that rpim/vmpi loaded
 * (mpirun.openmpi started the job; the vendor's MPI reaches the cluster's
 * fast network).  Every peer of the job is reachable (vendor rank = Kumi
 * world rank).
 *
 * Only non-blocking vendor calls, from progress() (and send()): MPI_Isend,
 * MPI_Irecv, MPI_Iprobe, MPI_Test, MPI_Get_count; so that the progress loop
 * can poll this transport alternately with others (shmem, tcp, impi's
 * sockets) and never waits inside the vendor.
 *
 * Wire: two duplicates of the vendor's MPI_COMM_WORLD (made by rpim/vmpi):
 *  - headers: one vendor message per Kumi message, [struct kumi_hdr][payload]
 *    when the payload is at most p2p_vmpi_inline (8 KiB; the whole message,
 *    copied once on each side), or the header alone;
 *  - payloads: a header alone is followed, on the second communicator, by
 *    its payload as vendor messages of at most VMPI_CHUNK bytes sent from the
 *    sender's buffer (the vendor does its own rendezvous for them).
 * The vendor keeps the order of one sender's messages on each communicator,
 * which gives the per-peer order Kumi needs.  The receiver takes one header
 * at a time (MPI_Iprobe(ANY_SOURCE), then MPI_Irecv from that source into its
 * buffer) and, when a payload follows, receives all of it before the next
 * header: a rendezvous DATA payload straight into the receive buffer (the
 * request layer never moves that one), others (possibly redirected by the
 * early-match rule while they arrive) through a bounce buffer.
 *
 * Selection: priority 20 (above tcp, below shmem and ofi): available only in
 * a process that rpim/vmpi joined to a vendor job.  MPI_COMPONENTS=p2p=self,vmpi
 * sends everything else through the vendor; p2p=self,shmem,vmpi keeps shmem
 * for the ranks of one host.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "../../rpim/vmpi/vmpi_vendor.h"
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/param.h>
#include <kumi/rpim.h>
#include <kumi/p2p.h>

#define VMPI_CHUNK ((size_t)64 << 20)      /* largest payload piece of one vendor message */
#define VMPI_BATCH 64                       /* headers taken by one progress() call at most */
#define VMPI_HDR ((int)sizeof(struct kumi_hdr))

static size_t p2p_vmpi_eager, p2p_vmpi_inline;
static struct vmpi_vendor vv;
static vmpi_h vc_hdr, vc_pay;
static int p2p_vmpi_in_progress;

/* A send in flight: the vendor requests of one Kumi message. */
struct vsend {
    struct kumi_sendop *op;
    struct vsend *next;
    char *buf;                  /* header + inline payload (copied), or NULL */
    int nreq, ndone;
    uint64_t req[];             /* nreq zeroed slots */
};
static struct vsend *vs_head, *vs_tail;

/* The receiving side: one message at a time. */
enum { RX_IDLE, RX_HDR, RX_PAY };
static int rx_state = RX_IDLE;
static char *rx_buf;            /* header + inline payload */
static size_t rx_buf_cap;
static uint64_t rx_req;
static int rx_src;
static struct kumi_hdr rx_hdr;
static struct kumi_rx *rx_cur;  /* where the payload goes (NULL: dropped) */
static size_t rx_off, rx_n;     /* payload received so far; size of the piece in flight */
static char *rx_bounce;         /* the piece in flight when not received in place */
static char *rx_piece;          /* where the piece in flight lands */
static size_t rx_bounce_cap;

static void p2p_vmpi_register(void)
{
    kumi_param_register_size("p2p", "vmpi", "eager_limit", 65536,
                             "Largest message sent eagerly through the vendor MPI; larger ones use Kumi's "
                             "rendezvous", KUMI_LEVEL_TUNER, &p2p_vmpi_eager);
    kumi_param_register_size("p2p", "vmpi", "inline", 8192,
                             "Largest payload sent in the same vendor message as its header (copied on "
                             "both sides); larger ones follow as vendor messages of their own, sent in place",
                             KUMI_LEVEL_TUNER, &p2p_vmpi_inline);
}

/* Open where rpim/vmpi may join (it joins later, in MPI_Init's rpim
 * selection: init() below finds the vendor then). */
static int p2p_vmpi_open(char *why, size_t whylen)
{
    if (!vmpi_launcher() && !(kumi_component_named("rpim", "vmpi") && !getenv("KUMI_RANK"))) {
        snprintf(why, whylen, "not started by a vendor MPI's launcher (mpirun.openmpi, mpiexec.mpich) for "
                 "rpim/vmpi");
        return KUMI_UNAVAILABLE;
    }
    if (p2p_vmpi_inline > ((size_t)1 << 30)) p2p_vmpi_inline = (size_t)1 << 30;
    return KUMI_OK;
}

static int p2p_vmpi_verr(const char *what, int code)
{
    char s[512];
    return kumi_error(MPI_ERR_OTHER, "p2p/vmpi: %s MPI's %s failed: %s", vv.name, what,
                      vmpi_errstr(&vv, code, s, (int)sizeof s));
}

static int p2p_vmpi_init(void)
{
    char err[600];
    if (vmpi_attach(&vv, &vc_hdr, &vc_pay, err, sizeof err) != 0)
        return kumi_error(MPI_ERR_OTHER, "p2p/vmpi: %s", err);
    rx_buf_cap = (size_t)VMPI_HDR + p2p_vmpi_inline;
    rx_buf = malloc(rx_buf_cap);
    if (!rx_buf) return kumi_error(MPI_ERR_NO_MEM, "p2p/vmpi: out of memory");
    rx_state = RX_IDLE;
    return MPI_SUCCESS;
}

static int p2p_vmpi_reaches(int peer)
{
    return peer >= 0 && peer < kumi_world_size();
}

static size_t p2p_vmpi_eager_limit(int peer)
{
    (void)peer;
    return p2p_vmpi_eager;
}

static int p2p_vmpi_send(int peer, struct kumi_sendop *op)
{
    size_t paylen = (size_t)op->hdr.paylen;
    int inl = paylen <= p2p_vmpi_inline;
    size_t nchunk = inl ? 0 : (paylen + VMPI_CHUNK - 1) / VMPI_CHUNK;
    struct vsend *s = calloc(1, sizeof *s + (1 + nchunk) * sizeof(uint64_t));
    if (!s) return kumi_error(MPI_ERR_NO_MEM, "p2p/vmpi: out of memory (send to rank %d)", peer);
    s->op = op;
    s->nreq = (int)(1 + nchunk);
    const void *h = &op->hdr;
    int hl = VMPI_HDR;
    if (inl && paylen) {
        s->buf = malloc((size_t)VMPI_HDR + paylen);
        if (!s->buf) {
            free(s);
            return kumi_error(MPI_ERR_NO_MEM, "p2p/vmpi: out of memory (send to rank %d)", peer);
        }
        memcpy(s->buf, &op->hdr, (size_t)VMPI_HDR);
        memcpy(s->buf + VMPI_HDR, op->payload, paylen);
        h = s->buf;
        hl += (int)paylen;
    }
    int rc = vv.Isend(h, hl, vv.byte, peer, 0, vc_hdr, &s->req[0]);
    for (size_t i = 0; rc == 0 && i < nchunk; i++) {
        size_t off = i * VMPI_CHUNK, n = paylen - off < VMPI_CHUNK ? paylen - off : VMPI_CHUNK;
        rc = vv.Isend((const char *)op->payload + off, (int)n, vv.byte, peer, 0, vc_pay, &s->req[1 + i]);
    }
    if (rc != 0) {
        /* requests already started stay with the vendor (nothing to hand back) */
        free(s->buf);
        free(s);
        return p2p_vmpi_verr("MPI_Isend", rc);
    }
    op->tptr = s;
    if (vs_tail) vs_tail->next = s;
    else vs_head = s;
    vs_tail = s;
    return MPI_SUCCESS;
}

/* Completes the sends whose vendor requests are done, testing at most
 * VMPI_TEST_PENDING unfinished ones per call (a flood of 20000 sends would
 * otherwise cost 20000 MPI_Test per poll).  A finished send behind them
 * waits: its vendor requests no longer need anything from this process. */
#define VMPI_TEST_PENDING 16
static int p2p_vmpi_progress_sends(void)
{
    int n = 0, pending = 0;
    struct vsend *prev = NULL, *s = vs_head;
    while (s && pending < VMPI_TEST_PENDING) {
        while (s->ndone < s->nreq) {
            int flag = 0;
            vmpi_status st;
            int rc = vv.Test(&s->req[s->ndone], &flag, &st);
            if (rc != 0) {
                p2p_vmpi_verr("MPI_Test (send)", rc);
                flag = 1;
            }
            if (!flag) break;
            s->ndone++;
        }
        struct vsend *next = s->next;
        if (s->ndone == s->nreq) {
            if (prev) prev->next = next;
            else vs_head = next;
            if (vs_tail == s) vs_tail = prev;
            struct kumi_sendop *op = s->op;
            free(s->buf);
            free(s);
            op->done(op);         /* may call send(): appends at the tail */
            n++;
        } else {
            prev = s;
            pending++;
        }
        s = next;
    }
    return n;
}

/* Copies n bytes at payload offset off into the receive (re-reading dst and
 * cap: the request layer may have moved them). */
static void p2p_vmpi_put_bytes(const char *src, size_t off, size_t n)
{
    struct kumi_rx *rx = rx_cur;
    if (!rx || !rx->dst || off >= rx->cap) return;
    size_t k = off + n <= rx->cap ? n : rx->cap - off;
    if (rx->dst + off != src) memcpy(rx->dst + off, src, k);
}

static void p2p_vmpi_rx_finish(void)
{
    struct kumi_rx *rx = rx_cur;
    rx_cur = NULL;
    rx_state = RX_IDLE;
    if (rx) {
        rx->got = rx->len;
        kumi_p2p_rx_done(rx);
    }
}

/* Posts the receive of the next payload piece. */
static int p2p_vmpi_post_piece(void)
{
    size_t left = (size_t)rx_hdr.paylen - rx_off;
    rx_n = left < VMPI_CHUNK ? left : VMPI_CHUNK;
    struct kumi_rx *rx = rx_cur;
    char *dst;
    if (rx_hdr.kind == KUMI_HDR_DATA && rx && rx->dst && rx_off + rx_n <= rx->cap) {
        dst = rx->dst + rx_off;                   /* a posted receive's buffer: stays put */
    } else {
        if (rx_bounce_cap < rx_n) {
            free(rx_bounce);
            rx_bounce_cap = 0;
            if (!(rx_bounce = malloc(rx_n))) return kumi_error(MPI_ERR_NO_MEM, "p2p/vmpi: out of memory");
            rx_bounce_cap = rx_n;
        }
        dst = rx_bounce;
    }
    rx_piece = dst;
    rx_req = 0;
    int rc = vv.Irecv(dst, (int)rx_n, vv.byte, rx_src, 0, vc_pay, &rx_req);
    if (rc != 0) return p2p_vmpi_verr("MPI_Irecv (payload)", rc);
    rx_state = RX_PAY;
    return MPI_SUCCESS;
}

/* A header (and maybe its payload) has arrived in rx_buf. */
static void p2p_vmpi_got_header(int count)
{
    rx_state = RX_IDLE;
    if (count < VMPI_HDR) return;          /* not one of ours (reported above) */
    memcpy(&rx_hdr, rx_buf, sizeof rx_hdr);
    size_t paylen = (size_t)rx_hdr.paylen;
    int inl = (size_t)count == (size_t)VMPI_HDR + paylen;
    rx_off = 0;
    rx_cur = kumi_p2p_incoming(rx_src, &rx_hdr);
    if (paylen == 0) {
        rx_cur = NULL;
        rx_state = RX_IDLE;
        return;
    }
    if (inl) {
        p2p_vmpi_put_bytes(rx_buf + VMPI_HDR, 0, paylen);
        p2p_vmpi_rx_finish();
        return;
    }
    if (p2p_vmpi_post_piece() != MPI_SUCCESS) p2p_vmpi_rx_finish();
}

static int p2p_vmpi_progress_recv(void)
{
    int n = 0;
    for (int round = 0; round < VMPI_BATCH; round++) {
        int flag = 0, rc;
        vmpi_status st;
        if (rx_state == RX_IDLE) {
            rc = vv.Iprobe(vv.any_source, vv.any_tag, vc_hdr, &flag, &st);
            if (rc != 0) return p2p_vmpi_verr("MPI_Iprobe", rc), n;
            if (!flag) break;
            int count = 0;
            vv.Get_count(&st, vv.byte, &count);
            rx_src = vmpi_st_int(&vv, &st, vv.st_source);
            int tag = vmpi_st_int(&vv, &st, vv.st_tag);
            if ((size_t)count > rx_buf_cap) {       /* a sender with a larger p2p_vmpi_inline */
                char *b = realloc(rx_buf, (size_t)count);
                if (b) {
                    rx_buf = b;
                    rx_buf_cap = (size_t)count;
                }
            }
            if (count < VMPI_HDR || (size_t)count > rx_buf_cap) {
                kumi_error(MPI_ERR_INTERN, "p2p/vmpi: a vendor message of %d bytes from rank %d (headers "
                           "are at least %d; out of memory?)", count, rx_src, VMPI_HDR);
                count = count < VMPI_HDR ? count : VMPI_HDR;   /* the vendor truncates: the rest is lost */
            }
            rx_req = 0;
            rc = vv.Irecv(rx_buf, count, vv.byte, rx_src, tag, vc_hdr, &rx_req);
            if (rc != 0) return p2p_vmpi_verr("MPI_Irecv (header)", rc), n;
            rx_state = RX_HDR;
            n++;
        }
        if (rx_state == RX_HDR) {
            flag = 0;
            rc = vv.Test(&rx_req, &flag, &st);
            if (rc != 0 && !flag) return p2p_vmpi_verr("MPI_Test (header)", rc), n;
            if (!flag) break;
            int count = 0;
            vv.Get_count(&st, vv.byte, &count);
            p2p_vmpi_got_header(count);
            n++;
        }
        if (rx_state == RX_PAY) {
            flag = 0;
            rc = vv.Test(&rx_req, &flag, &st);
            if (rc != 0 && !flag) return p2p_vmpi_verr("MPI_Test (payload)", rc), n;
            if (!flag) break;
            p2p_vmpi_put_bytes(rx_piece, rx_off, rx_n);
            rx_off += rx_n;
            if (rx_cur) rx_cur->got = rx_off;
            if (rx_off >= (size_t)rx_hdr.paylen) p2p_vmpi_rx_finish();
            else if (p2p_vmpi_post_piece() != MPI_SUCCESS) p2p_vmpi_rx_finish();
            n++;
        }
    }
    return n;
}

static int p2p_vmpi_progress(void)
{
    if (p2p_vmpi_in_progress) return 0;
    p2p_vmpi_in_progress = 1;
    int n = p2p_vmpi_progress_sends();
    n += p2p_vmpi_progress_recv();
    p2p_vmpi_in_progress = 0;
    return n > 0;
}

/* No descriptor wakes this transport: poll again soon while anything is in
 * flight, nap (at most a millisecond) otherwise. */
static int p2p_vmpi_pollfds(struct pollfd *fds, int max)
{
    (void)fds;
    if (max <= 0) return 0;
    return vs_head || rx_state != RX_IDLE ? KUMI_P2P_NOSLEEP : KUMI_P2P_NAP;
}

static int p2p_vmpi_busy(void)
{
    return vs_head != NULL;
}

static int p2p_vmpi_describe(int peer, char *buf, size_t len)
{
    snprintf(buf, len, "%s rank %d (%s)", vv.name ? vv.name : "vendor MPI", peer, vv.path);
    return 0;
}

static void p2p_vmpi_finalize(void)
{
    if (rx_state != RX_IDLE) {
        /* a receive still posted: cancel it, so that the vendor's MPI_Finalize
         * does not wait for it */
        int flag = 0;
        vmpi_status st;
        vv.Cancel(&rx_req);
        vv.Test(&rx_req, &flag, &st);
        rx_state = RX_IDLE;
    }
    while (vs_head) {               /* requests nobody completes any more */
        struct vsend *s = vs_head;
        vs_head = s->next;
        free(s->buf);
        free(s);
    }
    vs_tail = NULL;
    free(rx_buf);
    rx_buf = NULL;
    rx_buf_cap = 0;
    free(rx_bounce);
    rx_bounce = NULL;
    rx_bounce_cap = 0;
    rx_cur = NULL;
}

static const struct kumi_p2p_ops p2p_vmpi_ops = {
    .hdr = KUMI_P2P_OPS_HDR,
    .caps = 0,
    .init = p2p_vmpi_init,
    .wireup = NULL,
    .reaches = p2p_vmpi_reaches,
    .eager_limit = p2p_vmpi_eager_limit,
    .send = p2p_vmpi_send,
    .progress = p2p_vmpi_progress,
    .pollfds = p2p_vmpi_pollfds,
    .busy = p2p_vmpi_busy,
    .finalize = p2p_vmpi_finalize,
    .describe = p2p_vmpi_describe,
};

KUMI_EXPORT const struct kumi_component kumi_p2p_vmpi_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "p2p", .name = "vmpi",
    .version = { 0, 1, 0 },
    .description = "Messages through the vendor MPI of a job started by mpirun.openmpi (rpim/vmpi)",
    .priority = 20,
    .register_params = p2p_vmpi_register,
    .open = p2p_vmpi_open, .close = NULL,
    .ops = &p2p_vmpi_ops,
};
