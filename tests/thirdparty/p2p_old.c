/* p2p/old: a transport built against an older p2p contract (test only).
 *
 * It reaches only its own rank (like p2p/self) and says, in its table's
 * header, that it was built against p2p contract v1.0: the table "ends" at
 * finalize (hdr.size = KUMI_P2P_OPS_MIN_SIZE) and advertises no
 * capability.  The bytes past that end hold pointers that abort the
 * process when called, standing for whatever follows a shorter table in
 * memory: a library that reads past hdr.size, or that infers what a
 * transport can do from non-NULL pointers, calls one of them and the job
 * fails with a line naming it.  Its eager limit is small (1 KiB) so that
 * larger messages take the rendezvous path, where the request layer decides
 * whether the receiver pulls (rget) or not.
 *
 * tests/scripts/registry_contracts.sh builds it, and variants that the
 * registry must refuse, through these macros:
 *   OLD_MAJOR=N, OLD_MINOR=N   the contract version in the header (1, 0)
 *   OLD_SIZE=N                 hdr.size (default: the end of contract 1.<minor>
 *                              for minors 0-2, the whole table plus 16 above)
 *   OLD_CAPS=...               caps (0)
 *   OLD_RGET=..., OLD_SEND=... the rget and send entries
 */
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/p2p.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef OLD_MAJOR
#define OLD_MAJOR 1
#endif
#ifndef OLD_MINOR
#define OLD_MINOR 0
#endif
#ifndef OLD_SIZE
#if OLD_MINOR == 0
#define OLD_SIZE offsetof(struct kumi_p2p_ops, rget)
#elif OLD_MINOR == 1
#define OLD_SIZE offsetof(struct kumi_p2p_ops, mem_reg)
#elif OLD_MINOR == 2
#define OLD_SIZE sizeof(struct kumi_p2p_ops)
#else
#define OLD_SIZE (sizeof(struct kumi_p2p_ops) + 16)
#endif
#endif
#ifndef OLD_CAPS
#define OLD_CAPS 0
#endif
#ifndef OLD_RGET
#define OLD_RGET past_end_rget
#endif
#ifndef OLD_SEND
#define OLD_SEND old_send
#endif

static struct kumi_sendop *old_head, *old_tail;
static int old_in_progress;

static void past_end(const char *op)
{
    fprintf(stderr, "p2p/old: the library called %s, past the end of this p2p contract v%d.%d table\n", op,
            OLD_MAJOR, OLD_MINOR);
    abort();
}
static __attribute__((unused)) int past_end_rget(int peer, size_t len)
{
    (void)peer, (void)len;
    past_end("rget");
    return 0;
}
static void past_end_pull(int peer, uint64_t handle, struct kumi_rx *rx)
{
    (void)peer, (void)handle, (void)rx;
    past_end("pull");
}
static int past_end_mem_reg(void *base, size_t len, void **handle, struct kumi_p2p_rkey *rkey)
{
    (void)base, (void)len, (void)handle, (void)rkey;
    past_end("mem_reg");
    return MPI_ERR_INTERN;
}
static void past_end_mem_dereg(void *handle)
{
    (void)handle;
    past_end("mem_dereg");
}
static int past_end_rma(int peer, struct kumi_p2p_rma *op)
{
    (void)peer, (void)op;
    past_end("rma");
    return MPI_ERR_INTERN;
}

static int old_init(void)
{
    old_head = old_tail = NULL;
    return MPI_SUCCESS;
}

static int old_reaches(int peer)
{
    return peer == kumi_world_rank();
}

static size_t old_eager_limit(int peer)
{
    (void)peer;
    return 1024;
}

static __attribute__((unused)) int old_send(int peer, struct kumi_sendop *op)
{
    if (peer != kumi_world_rank()) return kumi_error(MPI_ERR_INTERN, "p2p/old: cannot reach rank %d", peer);
    op->tnext = NULL;
    if (old_tail) old_tail->tnext = op;
    else old_head = op;
    old_tail = op;
    return MPI_SUCCESS;
}

/* Delivers queued ops in order; the upcalls may queue more (a CTS to itself). */
static int old_progress(void)
{
    int n = 0;
    if (old_in_progress) return 0;
    old_in_progress = 1;
    while (old_head) {
        struct kumi_sendop *op = old_head;
        old_head = op->tnext;
        if (!old_head) old_tail = NULL;
        size_t paylen = (size_t)op->hdr.paylen;
        struct kumi_rx *rx = kumi_p2p_incoming(kumi_world_rank(), &op->hdr);
        if (rx) {
            if (rx->got < paylen && rx->got < rx->cap && rx->dst && op->payload) {
                size_t end = paylen < rx->cap ? paylen : rx->cap;
                memcpy(rx->dst + rx->got, (const char *)op->payload + rx->got, end - rx->got);
            }
            rx->got = paylen;
            kumi_p2p_rx_done(rx);
        }
        op->done(op);
        n++;
    }
    old_in_progress = 0;
    return n > 0;
}

static int old_pollfds(struct pollfd *fds, int max)
{
    (void)fds, (void)max;
    return old_head ? KUMI_P2P_NOSLEEP : 0;
}

static int old_busy(void)
{
    return old_head != NULL;
}

static void old_finalize(void)
{
    old_head = old_tail = NULL;
}

static const struct kumi_p2p_ops old_ops = {
    .hdr = { (uint32_t)(OLD_SIZE), OLD_MAJOR, OLD_MINOR },
    .caps = OLD_CAPS,
    .init = old_init,
    .wireup = NULL,
    .reaches = old_reaches,
    .eager_limit = old_eager_limit,
    .send = OLD_SEND,
    .progress = old_progress,
    .pollfds = old_pollfds,
    .busy = old_busy,
    .finalize = old_finalize,
    /* past the end of a v1.0 table */
    .rget = OLD_RGET,
    .pull = past_end_pull,
    .mem_reg = past_end_mem_reg,
    .mem_dereg = past_end_mem_dereg,
    .rma = past_end_rma,
};

KUMI_EXPORT const struct kumi_component kumi_p2p_old_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "p2p",
    .name = "old",
    .version = { 0, 0, 1 },
    .description = "Test transport built against p2p contract 1.0 (messages to itself)",
    .priority = 0,
    .ops = &old_ops,
};
