/* Progress engine.
 *
 * kumi_progress(0) polls every transport once and sends what the upcalls
 * queued (CTS, SYNC_ACK, DATA, ...).  A blocking wait spins for a few
 * hundred rounds, then yields the CPU for a while, then sleeps in poll() on
 * the transports' file descriptors with a short timeout (so nothing hangs
 * even if a transport forgets an fd).  That keeps latency low when a rank
 * has a core, and lets 8 or 64 ranks share 2 cores.  A rank that mpiexec
 * bound to a core of its own (it does so only when the job has no more ranks
 * than cores) also keeps spinning for kumi_base_progress_spin_us of idle time
 * first: waking from poll() costs a few microseconds on each side, which a
 * millisecond-long transfer should not pay. */
#include "request/request.h"
#include <kumi/param.h>
#include <kumi/rpim.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <sched.h>
#include <stdlib.h>

#define KUMI_MAX_POLLFDS   1024

/* Parameters kumi_base_progress_{spin,yield,sleep_ms} (KUMI_BASE_PROGRESS_SPIN, ...). */
static long long spin_rounds = 300, yield_rounds = 200, sleep_ms = 20, spin_us = -1;
static double spin_secs;                /* resolved spin_us, seconds */

static const struct kumi_p2p_ops *pops[16];
static bool pused[16];                  /* serves a peer of ours */
static int npops, nidle;
#define KUMI_IDLE_POLL_EVERY 256
static unsigned poll_round;
static struct pollfd *pfds;

void kumi_progress_register_params(void)
{
    kumi_param_register_int("kumi", "base", "progress_spin", 300,
                            "Polls of the transports a blocking wait makes before it yields the CPU",
                            KUMI_LEVEL_TUNER, &spin_rounds);
    kumi_param_register_int("kumi", "base", "progress_yield", 200,
                            "Polls with sched_yield() between them before a blocking wait sleeps",
                            KUMI_LEVEL_TUNER, &yield_rounds);
    kumi_param_register_int("kumi", "base", "progress_spin_us", -1,
                            "Idle time (microseconds) a blocking wait keeps spinning before it "
                            "yields and sleeps; -1: 2000 when mpiexec bound the rank to cores of "
                            "its own (no more ranks than cores), else 0 (rounds only)",
                            KUMI_LEVEL_TUNER, &spin_us);
    kumi_param_register_int("kumi", "base", "progress_sleep_ms", 20,
                            "Longest sleep (ms) of a blocking wait in poll() on the transports' descriptors",
                            KUMI_LEVEL_TUNER, &sleep_ms);
}

int kumi_progress_setup(const struct kumi_p2p_ops **ops, const bool *used, int n)
{
    if (sleep_ms < 1) sleep_ms = 1;
    spin_secs = spin_us >= 0 ? (double)spin_us * 1e-6 : getenv(KUMI_ENV_BIND_CPUS) ? 2e-3 : 0.0;
    npops = nidle = 0;
    for (int i = 0; ops && i < n && i < 16; i++) {
        pused[npops] = !used || used[i];
        if (!pused[npops]) nidle++;
        pops[npops++] = ops[i];
    }
    if (n > 0 && !pfds) pfds = malloc((KUMI_MAX_POLLFDS + 1) * sizeof *pfds);
    if (n == 0) { free(pfds); pfds = NULL; }
    return MPI_SUCCESS;
}

static int poll_transports(bool all)
{
    int n = 0;
    for (int i = 0; i < npops; i++)
        if ((all || pused[i]) && pops[i]->progress && pops[i]->progress() > 0) n++;
    return n;
}

static int poll_once(void)
{
    bool all = nidle == 0 || ++poll_round % KUMI_IDLE_POLL_EVERY == 0;
    int n = poll_transports(all);
    if (kumi_req_ctl_pending()) { kumi_req_flush_ctl(); n++; }
    return n;
}

/* At MPI_THREAD_MULTIPLE another thread may complete the request a sleeper
 * waits for (it polled the transports meanwhile): completions write this
 * eventfd while anybody sleeps, so the sleeper wakes at once. */
static int wake_fd = -1;
static int sleepers;

void kumi_progress_wake(void)
{
    if (__atomic_load_n(&sleepers, __ATOMIC_RELAXED) > 0 && wake_fd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(wake_fd, &one, sizeof one);
        (void)w;
    }
}

/* Sleep until a transport's descriptor is ready (or the timeout).  At
 * MPI_THREAD_MULTIPLE the library lock is released meanwhile, so each
 * thread gathers its descriptors into its own buffer, plus the wake-up fd. */
static void sleep_on_fds(void)
{
    static _Thread_local struct pollfd *mine;
    struct pollfd *fds = kumi_mt ? mine : pfds;
    if (kumi_mt && !mine && pfds) fds = mine = malloc((KUMI_MAX_POLLFDS + 1) * sizeof *mine);
    int nf = 0, nosleep = 0, nap = 0;
    if (fds)
        for (int i = 0; i < npops && nf < KUMI_MAX_POLLFDS; i++)
            if (pops[i]->pollfds) {
                int k = pops[i]->pollfds(fds + nf, KUMI_MAX_POLLFDS - nf);
                if (k > 0) nf += k;
                else if (k == KUMI_P2P_NAP) nap = 1;
                else if (k < 0) nosleep = 1;
            }
    if (nosleep) {                          /* a transport cannot be slept on now */
        int d = kumi_lock_release_all();
        sched_yield();
        kumi_lock_reacquire(d);
        return;
    }
    if (kumi_mt && fds) {
        if (wake_fd < 0) wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (wake_fd >= 0) {
            fds[nf].fd = wake_fd;
            fds[nf].events = POLLIN;
            fds[nf].revents = 0;
            nf++;
        }
        __atomic_add_fetch(&sleepers, 1, __ATOMIC_RELAXED);
    }
    int d = kumi_lock_release_all();
    poll(nf ? fds : NULL, (nfds_t)nf, nap ? 1 : (int)sleep_ms);
    kumi_lock_reacquire(d);
    if (kumi_mt && fds) {
        __atomic_sub_fetch(&sleepers, 1, __ATOMIC_RELAXED);
        uint64_t v;
        if (wake_fd >= 0 && read(wake_fd, &v, sizeof v) < 0) { /* nothing pending */ }
    }
}

/* Before and after a sleep every transport is polled, idle ones included. */
static int sleep_and_poll(void)
{
    int n = poll_transports(true);
    if (n > 0) return n;
    sleep_on_fds();
    return poll_transports(true);
}

int kumi_progress(int blocking)
{
    int n = poll_once();
    if (n == 0 && blocking) n = sleep_and_poll();
    return n;
}

void kumi_progress_wait(int (*done)(void *), void *arg)
{
    long long idle = 0;
    double idle_since = 0;
    bool spun = spin_secs <= 0;          /* the timed spin (bound ranks) is over */
    kumi_req_flush_ctl();
    while (!done(arg)) {
        if (poll_once() > 0) { idle = 0; spun = spin_secs <= 0; continue; }
        if (done(arg)) break;
        idle++;
        if (idle < spin_rounds) {
            if (kumi_mt) kumi_lock_reacquire(kumi_lock_release_all());   /* let other threads in */
            continue;
        }
        if (!spun) {                     /* after the rounds: the clock is not read on the fast path */
            if (idle == spin_rounds) idle_since = kumi_time();
            else if ((idle & 63) == 0 && kumi_time() - idle_since >= spin_secs) { spun = true; idle = spin_rounds; }
            if (!spun) {
                if (kumi_mt) kumi_lock_reacquire(kumi_lock_release_all());
                continue;
            }
        }
        if (idle < spin_rounds + yield_rounds) {
            int d = kumi_lock_release_all();
            sched_yield();
            kumi_lock_reacquire(d);
            continue;
        }
        if (sleep_and_poll() > 0) idle = 0;
    }
}

static int flag_set(void *arg) { return *(volatile bool *)arg; }

void kumi_progress_wait_flag(volatile bool *flag)
{
    kumi_progress_wait(flag_set, (void *)flag);
}
