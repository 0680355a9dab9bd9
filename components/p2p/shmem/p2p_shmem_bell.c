/* p2p/shmem doorbell: the abstract socket names, draining the socket, and
 * pollfds() (a rank about to sleep arms its sleeping word and hands out the
 * socket, or a ready eventfd when its rings already hold work).  Ringing a
 * peer's bell is p2p_shmem_ring_bell() in p2p_shmem.h (on the send path). */
#include "p2p_shmem.h"
#include <linux/membarrier.h>
#include <sys/syscall.h>

int p2p_shmem_membar;

static int p2p_shmem_membarrier(int cmd)
{
#ifdef __NR_membarrier
    return (int)syscall(__NR_membarrier, cmd, 0, 0);
#else
    (void)cmd;
    errno = ENOSYS;
    return -1;
#endif
}

/* At init: register this process for the global expedited barrier (so that
 * a sleeping peer's membarrier() reaches our threads) and say in our
 * segment whether we shall call it before sleeping. */
void p2p_shmem_membar_init(void)
{
    int q = p2p_shmem_membarrier(MEMBARRIER_CMD_QUERY);
    p2p_shmem_membar = q > 0 && (q & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
                       p2p_shmem_membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
    if (p2p_shmem_seg) p2p_shmem_seg->membar = p2p_shmem_membar;
    kumi_log(2, "p2p/shmem: membarrier %s", p2p_shmem_membar ? "registered (the send path makes no fence)"
                                                             : "not available (fences on the send path)");
}

void p2p_shmem_bell_addr(struct sockaddr_un *sa, socklen_t *len, int rank)
{
    int n;
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    char tok[33];
    if (p2p_shmem_token("doorbell", rank, tok) != 0) tok[0] = 0;
    n = snprintf(sa->sun_path + 1, sizeof sa->sun_path - 1, "kumi.%s.%d.%s", p2p_shmem_jobid, rank, tok);
    if (n < 0) n = 0;
    if ((size_t)n > sizeof sa->sun_path - 2) n = (int)sizeof sa->sun_path - 2;
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

void p2p_shmem_drain_bell(void)
{
    char buf[64];
    while (recv(p2p_shmem_bellfd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
}

int p2p_shmem_pollfds(struct pollfd *fds, int max)
{
    if (!p2p_shmem_seg || p2p_shmem_nlocal == 0) return 0;
    if (!fds || max < 1) {               /* a sleep is over */
        if (p2p_shmem_sleepers > 0 && !fds) p2p_shmem_sleepers--;
        return 0;
    }
    p2p_shmem_sleepers++;
    atomic_store_explicit(&p2p_shmem_seg->sleeping, 1, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
    if (p2p_shmem_membar && p2p_shmem_membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0) {
        /* refused now: writers that skipped their fence may have missed
         * the word; from now on they fence (our header), and this sleep is
         * a nap (a millisecond) */
        kumi_warn("p2p/shmem: membarrier failed (%s); fences on the send path from now on", strerror(errno));
        p2p_shmem_membar = 0;
        p2p_shmem_seg->membar = 0;
        atomic_thread_fence(memory_order_seq_cst);
        fds[0].fd = p2p_shmem_readyfd;
        fds[0].events = POLLIN;
        fds[0].revents = 0;
        return p2p_shmem_pending() ? 1 : KUMI_P2P_NAP;
    }
    fds[0].fd = p2p_shmem_pending() ? p2p_shmem_readyfd : p2p_shmem_bellfd;
    fds[0].events = POLLIN;
    fds[0].revents = 0;
    return 1;
}
