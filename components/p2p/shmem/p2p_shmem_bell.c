/* p2p/shmem doorbell: the abstract socket names, draining the socket, and
 * pollfds() (a rank about to sleep arms its sleeping word and hands out the
 * socket, or a ready eventfd when its rings already hold work).  Ringing a
 * peer's bell is p2p_shmem_ring_bell() in p2p_shmem.h (on the send path). */
#include "p2p_shmem.h"

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
    fds[0].fd = p2p_shmem_pending() ? p2p_shmem_readyfd : p2p_shmem_bellfd;
    fds[0].events = POLLIN;
    fds[0].revents = 0;
    return 1;
}
