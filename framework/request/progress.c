/* Progress engine.
 *
 * kumi_progress(0) polls every transport once and sends what the upcalls
 * queued (CTS, SYNC_ACK, DATA, ...).  A blocking wait spins for a few
 * hundred rounds, then yields the CPU for a while, then sleeps in poll() on
 * the transports' file descriptors with a short timeout (so nothing hangs
 * even if a transport forgets an fd).  That keeps latency low when a rank
 * has a core, and lets 8 or 64 ranks share 2 cores. */
#include "request/request.h"
#include <poll.h>
#include <sched.h>
#include <stdlib.h>

#define KUMI_SPIN_ROUNDS   300
#define KUMI_YIELD_ROUNDS  200
#define KUMI_SLEEP_MS      20
#define KUMI_MAX_POLLFDS   1024

static const struct kumi_p2p_ops *pops[16];
static int npops;
static struct pollfd *pfds;

int kumi_progress_setup(const struct kumi_p2p_ops **ops, int n)
{
    npops = 0;
    for (int i = 0; ops && i < n && i < 16; i++) pops[npops++] = ops[i];
    if (n > 0 && !pfds) pfds = malloc(KUMI_MAX_POLLFDS * sizeof *pfds);
    if (n == 0) { free(pfds); pfds = NULL; }
    return MPI_SUCCESS;
}

static int poll_once(void)
{
    int n = 0;
    for (int i = 0; i < npops; i++)
        if (pops[i]->progress && pops[i]->progress() > 0) n++;
    if (kumi_req_ctl_pending()) { kumi_req_flush_ctl(); n++; }
    return n;
}

static void sleep_on_fds(void)
{
    int nf = 0;
    if (pfds)
        for (int i = 0; i < npops && nf < KUMI_MAX_POLLFDS; i++)
            if (pops[i]->pollfds) {
                int k = pops[i]->pollfds(pfds + nf, KUMI_MAX_POLLFDS - nf);
                if (k > 0) nf += k;
            }
    poll(nf ? pfds : NULL, (nfds_t)nf, KUMI_SLEEP_MS);
}

int kumi_progress(int blocking)
{
    int n = poll_once();
    if (n == 0 && blocking) {
        sleep_on_fds();
        n = poll_once();
    }
    return n;
}

void kumi_progress_wait(int (*done)(void *), void *arg)
{
    unsigned idle = 0;
    kumi_req_flush_ctl();
    while (!done(arg)) {
        if (poll_once() > 0) { idle = 0; continue; }
        if (done(arg)) break;
        idle++;
        if (idle < KUMI_SPIN_ROUNDS) continue;
        if (idle < KUMI_SPIN_ROUNDS + KUMI_YIELD_ROUNDS) { sched_yield(); continue; }
        sleep_on_fds();
    }
}

static int flag_set(void *arg) { return *(volatile bool *)arg; }

void kumi_progress_wait_flag(volatile bool *flag)
{
    kumi_progress_wait(flag_set, (void *)flag);
}
