/* p2p/self: messages from a rank to itself.
 *
 * send() only queues the op (the request layer is not re-entrant there);
 * progress() delivers queued ops in order: kumi_p2p_incoming, one copy of the
 * payload from the sender's buffer into rx->dst, kumi_p2p_rx_done, then
 * op->done.  The request layer may call send() from inside the upcalls (a
 * clear-to-send to itself): those ops are appended to the queue and
 * delivered in the same progress() call or the next one.
 *
 * The transport has no file descriptor of its own; so that a progress engine
 * sleeping in poll() never sleeps while ops are queued, pollfds() hands out
 * an eventfd that is kept readable whenever the queue is not empty.
 *
 * init() publishes "p2p.self.up": the transports initialized later (in
 * selection order) read it from this rank's own keys.
 */
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/param.h>
#include <kumi/rpim.h>
#include <kumi/p2p.h>

#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

/* Ops delivered by one progress() call at most (fairness with other
 * transports when ops keep being appended during delivery). */
#define P2P_SELF_BATCH 256

static struct kumi_sendop *p2p_self_head, *p2p_self_tail;
static size_t p2p_self_eager;
static int p2p_self_evfd = -1;
static int p2p_self_in_progress;

static void p2p_self_register(void)
{
    kumi_param_register_size("p2p", "self", "eager_limit", (size_t)1 << 30,
                             "Largest message to itself a rank sends eagerly (copied once at "
                             "delivery); larger ones use rendezvous",
                             KUMI_LEVEL_TUNER, &p2p_self_eager);
}

static int p2p_self_init(void)
{
    p2p_self_head = p2p_self_tail = NULL;
    if (p2p_self_evfd < 0) {
        p2p_self_evfd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);   /* always readable; never read */
    }
    /* Tells the transports started after this one (p2p/tcp) that this rank
     * reaches itself without them: tcp then need not listen for it. */
    return kumi_rpim_put("p2p.self.up", "1");
}

static int p2p_self_wireup(void)
{
    return MPI_SUCCESS;
}

static int p2p_self_reaches(int peer)
{
    return peer == kumi_world_rank();
}

static size_t p2p_self_eager_limit(int peer)
{
    (void)peer;
    return p2p_self_eager;
}

static int p2p_self_send(int peer, struct kumi_sendop *op)
{
    if (peer != kumi_world_rank())
        return kumi_error(MPI_ERR_INTERN, "p2p/self: cannot reach rank %d (only rank %d)",
                          peer, kumi_world_rank());
    op->tnext = NULL;
    op->toff = 0;
    if (p2p_self_tail) p2p_self_tail->tnext = op;
    else p2p_self_head = op;
    p2p_self_tail = op;
    return MPI_SUCCESS;
}

static void p2p_self_deliver(struct kumi_sendop *op)
{
    int me = kumi_world_rank();
    size_t paylen = (size_t)op->hdr.paylen;
    struct kumi_rx *rx = kumi_p2p_incoming(me, &op->hdr);
    if (rx) {
        /* re-read dst/cap: the request layer owns them */
        size_t got = rx->got;
        if (got < paylen && got < rx->cap && rx->dst && op->payload) {
            size_t end = paylen < rx->cap ? paylen : rx->cap;
            memcpy(rx->dst + got, (const char *)op->payload + got, end - got);
        }
        rx->got = paylen;
        kumi_p2p_rx_done(rx);
    }
}

static __attribute__((noinline)) int p2p_self_deliver_all(void)
{
    int n = 0;
    if (p2p_self_in_progress) return 0;
    p2p_self_in_progress = 1;
    while (p2p_self_head && n < P2P_SELF_BATCH) {
        struct kumi_sendop *op = p2p_self_head;
        /* unlink first: the upcalls may append (send) */
        p2p_self_head = op->tnext;
        if (!p2p_self_head) p2p_self_tail = NULL;
        op->tnext = NULL;
        p2p_self_deliver(op);
        op->done(op);
        n++;
    }
    p2p_self_in_progress = 0;
    return n > 0;
}

/* Polled at every round of every wait: an empty queue costs one load. */
static int p2p_self_progress(void)
{
    if (__builtin_expect(!p2p_self_head, 1)) return 0;
    return p2p_self_deliver_all();
}

static int p2p_self_pollfds(struct pollfd *fds, int max)
{
    if (!p2p_self_head || max < 1 || p2p_self_evfd < 0) return 0;
    fds[0].fd = p2p_self_evfd;
    fds[0].events = POLLIN;
    fds[0].revents = 0;
    return 1;
}

static int p2p_self_busy(void)
{
    return p2p_self_head != NULL;
}

static void p2p_self_finalize(void)
{
    /* Ops still queued belong to requests nobody completes any more. */
    p2p_self_head = p2p_self_tail = NULL;
    if (p2p_self_evfd >= 0) {
        close(p2p_self_evfd);
        p2p_self_evfd = -1;
    }
}

static const struct kumi_p2p_ops p2p_self_ops = {
    .hdr = KUMI_P2P_OPS_HDR,
    .caps = 0,
    .init = p2p_self_init,
    .wireup = p2p_self_wireup,
    .reaches = p2p_self_reaches,
    .eager_limit = p2p_self_eager_limit,
    .send = p2p_self_send,
    .progress = p2p_self_progress,
    .pollfds = p2p_self_pollfds,
    .busy = p2p_self_busy,
    .finalize = p2p_self_finalize,
};

KUMI_EXPORT const struct kumi_component kumi_p2p_self_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "p2p", .name = "self",
    .version = { 0, 1, 0 },
    .description = "Messages from a rank to itself",
    .priority = 100,
    .register_params = p2p_self_register,
    .open = NULL, .close = NULL,
    .ops = &p2p_self_ops,
};
