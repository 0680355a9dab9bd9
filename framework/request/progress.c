/* Progress engine.
 *
 * kumi_progress(0) polls every transport once and sends what the upcalls
 * queued (CTS, SYNC_ACK, DATA, ...).  A blocking wait spins for a few
 * hundred rounds, then yields the CPU for a while, then sleeps in poll() on
 * the transports' file descriptors with a short timeout (so nothing hangs
 * even if a transport forgets an fd).  That keeps latency low when a rank
 * has a core, and lets 8 or 64 ranks share 2 cores.  The phases adapt to
 * where the rank runs (each is a parameter; -1 chooses):
 *  - bound by mpiexec to a core of its own (it binds only when the job has
 *    no more ranks than cores): 300 rounds, then spinning on for 2 ms of idle
 *    time (kumi_base_progress_spin_us; waking from poll() costs a few
 *    microseconds on each side, which a long transfer should not pay), then
 *    200 rounds of sched_yield(), then sleep;
 *  - oversubscribed (more ranks on the host than CPUs it may use, or bound
 *    by mpiexec to a core that other ranks were bound to too): 2 rounds,
 *    then sched_yield() for 2 ms (kumi_base_progress_yield_us): the rank that
 *    holds the message gets the core at once, which a sleeper's doorbell
 *    would cost a system call and a wake-up; then sleep (after 10 us for a
 *    rank that leads a session of its own: yields_reach_nobody);
 *    (a rank kept by taskset or a cpuset on fewer CPUs than the machine
 *    has, with one for each rank of its launch, counts as bound);
 *  - otherwise: 300 rounds, 200 yields, sleep. */
#define _GNU_SOURCE                     /* sched_getaffinity, CPU_COUNT */
#include "request/request.h"
#include <kumi/param.h>
#include <kumi/rpim.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#define KUMI_MAX_POLLFDS   1024

/* Parameters kumi_base_progress_{spin,yield,sleep_ms} (KUMI_BASE_PROGRESS_SPIN, ...). */
static long long spin_param = -1, yield_param = -1, sleep_ms = 20, spin_us = -1, yield_us = -1;
static long long spin_rounds, yield_rounds;   /* resolved */
long long kumi_progress_spin_rounds;           /* spin_rounds, for MPI_Recv's fast path (request.c) */
static double spin_secs, yield_secs;          /* resolved, seconds */

static const struct kumi_p2p_ops *pops[KUMI_MAX_TRANSPORTS];
static bool pused[KUMI_MAX_TRANSPORTS];                  /* serves a peer of ours */
static int npops, nidle;
#define KUMI_IDLE_POLL_EVERY 256
/* rounds to the next one that polls the idle transports too (a count down:
 * a round tests one word, not nidle and a modulo) */
static unsigned idle_countdown = KUMI_IDLE_POLL_EVERY;
static struct pollfd *pfds;

void kumi_progress_register_params(void)
{
    kumi_param_register_int("kumi", "base", "progress_spin", -1,
                            "Polls of the transports a blocking wait makes before it yields the CPU "
                            "(-1: 2 when the host is oversubscribed, else 300)",
                            KUMI_LEVEL_TUNER, &spin_param);
    kumi_param_register_int("kumi", "base", "progress_spin_us", -1,
                            "Idle time (microseconds) a blocking wait then keeps spinning; -1: 2000 "
                            "when mpiexec bound the rank to cores of its own, else 0",
                            KUMI_LEVEL_TUNER, &spin_us);
    kumi_param_register_int("kumi", "base", "progress_yield", -1,
                            "Polls with sched_yield() between them before a blocking wait sleeps "
                            "(-1: 200; 0 when the host is oversubscribed and the rank leads a session of "
                            "its own under sched_autogroup: its yields reach no other rank)",
                            KUMI_LEVEL_TUNER, &yield_param);
    kumi_param_register_int("kumi", "base", "progress_yield_us", -1,
                            "Idle time (microseconds) a blocking wait keeps yielding before it "
                            "sleeps; -1: 2000 when the host is oversubscribed (more ranks than "
                            "CPUs; 10 when the rank leads a session of its own under "
                            "sched_autogroup), else 0",
                            KUMI_LEVEL_TUNER, &yield_us);
    kumi_param_register_int("kumi", "base", "progress_sleep_ms", 20,
                            "Longest sleep (ms) of a blocking wait in poll() on the transports' descriptors",
                            KUMI_LEVEL_TUNER, &sleep_ms);
    kumi_param_set_runtime("kumi_base_progress_sleep_ms");     /* read at each sleep */
    kumi_req_register_params();          /* the request layer's own (request.c) */
}

/* Does sched_yield() hand the CPU to the other ranks of the launch?  Where
 * the kernel shares CPU time between sessions first (sched_autogroup,
 * Debian's default), a yield runs only tasks of the caller's session.
 * mpiexec's ranks share its session (rpim/fork); a rank that leads a
 * session of its own (a launcher that gives each rank one, as MPICH's Hydra
 * does, or `setsid`) gets the CPU straight back from every yield and spins
 * out its time slice against the rank it waits for when another session
 * keeps the other CPU busy: 4 ranks on 2 cores, a session each, 2 busy
 * loops in other sessions, 8 B MPI_Allreduce 1.6 ms with the 2 ms yield
 * phase, 79 us with 10 us of it, 76 us with none; on an idle machine the
 * spin costs little and sleeping at once does (3.5 / 4.3 / 38 us): such a
 * rank yields for 10 us (README, placement). */
static bool yields_reach_nobody(void)
{
    if (getsid(0) != getpid()) return false;
    FILE *f = fopen("/proc/sys/kernel/sched_autogroup_enabled", "re");
    int on = 0;
    if (f) {
        if (fscanf(f, "%d", &on) != 1) on = 0;
        fclose(f);
    }
    return on == 1;
}

/* At MPI_THREAD_MULTIPLE another thread may complete the request a sleeper
 * waits for (it polled the transports meanwhile): completions write this
 * eventfd while anybody sleeps, so the sleeper wakes at once.  In a job with
 * checkpoints (kumi_lock_track) a thread that sleeps in a call made without
 * the lock sleeps on it too: a checkpoint request writes it
 * (kumi_progress_wake_ckpt), so that the call goes over to the lock at once
 * instead of at the end of its sleep (kumi_base_progress_sleep_ms). */
static int wake_fd = -1;
static int sleepers;

/* The progress thread of the thread engine is not one of the sleepers that
 * completions wake (it waits for no request): it sleeps on an eventfd of its
 * own, which this writes when it must stop. */
static int engine_fd = -1;

/* When the transports are let go (MPI_Finalize, a checkpoint): an image
 * cannot hold an eventfd, and a restarted process must not write or read
 * its number, which another file may have then; made again when needed. */
static void close_wake_fds(void)
{
    int f = __atomic_exchange_n(&wake_fd, -1, __ATOMIC_SEQ_CST);
    if (f >= 0) close(f);
    f = __atomic_exchange_n(&engine_fd, -1, __ATOMIC_SEQ_CST);
    if (f >= 0) close(f);
}

/* The progress() of the transports that serve a peer (polled every round;
 * made by kumi_progress_setup / _mark_used), in transport order. */
static int (*hot[KUMI_MAX_TRANSPORTS])(void);
static int nhot;

static void hot_setup(void)
{
    nhot = 0;
    for (int i = 0; i < npops; i++)
        if (pused[i] && pops[i]->progress) hot[nhot++] = pops[i]->progress;
}

int kumi_progress_setup(const struct kumi_p2p_ops **ops, const bool *used, int n)
{
    if (sleep_ms < 1) sleep_ms = 1;
    bool bound = kumi_rpim_bound_alone(), pinned = false;
    /* bound by mpiexec with others of the job on its core (--oversubscribe,
     * :overload-allowed): it must give the core away at once, not spin on
     * it for 2 ms (2-13 ms per 8 B MPI_Iallreduce at 2 ranks per core) */
    bool shared = getenv(KUMI_ENV_BIND_CPUS) != NULL && !bound;
    bool oversub = shared || (!bound && kumi_rpim_host_oversubscribed(&pinned));
    /* not bound by mpiexec, but kept by the user (taskset, a cpuset) on
     * fewer CPUs than the machine has, with one per rank of the launch (an
     * IMPI client's launch started with --bind-to none under taskset): as
     * if bound.  Without the time-spin such a rank yields or sleeps between
     * the packets of a ping-pong, and on a CPU that another process wants
     * each message then waits for the scheduler (8 B through IMPI: 14-29 ms
     * instead of 3.5 us with a busy loop on each core) */
    if (!bound && !oversub && pinned) bound = true;
    /* oversubscribed, its yields reaching no other rank: sleep soon */
    bool lone = oversub && yields_reach_nobody();
    spin_rounds = spin_param >= 0 ? spin_param : oversub ? 2 : 300;
    kumi_progress_spin_rounds = spin_rounds;
    yield_rounds = yield_param >= 0 ? yield_param : lone ? 0 : 200;
    spin_secs = spin_us >= 0 ? (double)spin_us * 1e-6 : bound ? 2e-3 : 0.0;
    yield_secs = yield_us >= 0 ? (double)yield_us * 1e-6 : lone ? 10e-6 : oversub ? 2e-3 : 0.0;
    kumi_log(2, "progress: %s%s: spin %lld rounds and %.0f us idle, then yield %lld rounds and %.0f us, then sleep",
             shared ? "bound by mpiexec, sharing its CPUs with other ranks (oversubscribed)"
             : getenv(KUMI_ENV_BIND_CPUS) ? "bound by mpiexec"
             : bound ? "kept on fewer CPUs than the machine's, one per rank of its launch"
             : oversub ? "oversubscribed" : "not bound",
             lone ? ", leading a session of its own under sched_autogroup (yields reach no other rank)" : "",
             spin_rounds, spin_secs * 1e6, yield_rounds, yield_secs * 1e6);
    npops = nidle = 0;
    for (int i = 0; ops && i < n && i < KUMI_MAX_TRANSPORTS; i++) {
        pused[npops] = !used || used[i];
        if (!pused[npops]) nidle++;
        pops[npops++] = ops[i];
    }
    hot_setup();
    if (n > 0 && !pfds) pfds = malloc((KUMI_MAX_POLLFDS + 1) * sizeof *pfds);
    if (n == 0) { free(pfds); pfds = NULL; close_wake_fds(); }
    return MPI_SUCCESS;
}

/* ops now serves a peer (one of another job, added later): polled every round. */
void kumi_progress_mark_used(const struct kumi_p2p_ops *ops)
{
    for (int i = 0; i < npops; i++)
        if (pops[i] == ops && !pused[i]) {
            pused[i] = true;
            nidle--;
        }
    hot_setup();
}

/* Every transport in use, idle ones included (the hot ones alone: poll_once). */
static int poll_all_transports(void)
{
    int n = 0;
    for (int i = 0; i < npops; i++)
        if (pops[i]->progress && pops[i]->progress() > 0) n++;
    return n;
}

/* One extra poller (the io_uring schedule engine, sched/uring.c): called by
 * every progress round, its descriptors slept on with the transports'. */
static int (*xpoll)(void);
static int (*xfds)(struct pollfd *fds, int max);

void kumi_progress_set_hook(int (*poll_fn)(void), int (*fds_fn)(struct pollfd *fds, int max))
{
    xpoll = poll_fn;
    xfds = fds_fn;
}

static int (*xwait)(int on);

void kumi_progress_set_wait_hook(int (*fn)(int on))
{
    xwait = fn;
}

/* One round over the transports (and the rest that progress has to do).
 * Inlined into the wait loop: a round that finds nothing costs the hot
 * transports' own checks and a few loads here. */
static inline __attribute__((always_inline)) int poll_once(void)
{
    int n = 0;
    if (__builtin_expect(xpoll != NULL, 0)) n = xpoll() > 0;
    if (__builtin_expect(--idle_countdown == 0, 0) && (idle_countdown = KUMI_IDLE_POLL_EVERY, nidle != 0)) {
        n += poll_all_transports();                /* (none idle: hot[] is all) */
    } else {
        for (int i = 0; i < nhot; i++)
            if (hot[i]() > 0) n++;
    }
    if (kumi_req_ctl_pending()) { kumi_req_flush_ctl(); n++; }
    if (__builtin_expect(kumi_pacing_has_pending, 0)) kumi_pacing_progress();
    if (__builtin_expect(kumi_req_accel_active, 0)) n += kumi_req_accel_progress();   /* device copies */
    return n;
}

void kumi_progress_wake(void)
{
    if (__atomic_load_n(&sleepers, __ATOMIC_RELAXED) > 0 && wake_fd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(wake_fd, &one, sizeof one);
        (void)w;
    }
}

/* A checkpoint request, once kumi_lock_raised is up (core/lock.c): a thread
 * asleep in a call without the lock wakes and goes over to the lock.  The
 * sleeper counts itself before it reads the flag (kumi_lock_release_all),
 * this reads the count after raising it: one of the two sees the other. */
void kumi_progress_wake_ckpt(void)
{
    int f = __atomic_load_n(&wake_fd, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&sleepers, __ATOMIC_SEQ_CST) > 0 && f >= 0) {
        uint64_t one = 1;
        ssize_t w = write(f, &one, sizeof one);
        (void)w;
    }
}

void kumi_progress_wake_engine(void)
{
    if (engine_fd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(engine_fd, &one, sizeof one);
        (void)w;
    }
}

/* Tells the transports whose pollfds() was called that the sleep is over
 * (p2p.h: pollfds(NULL, 0)). */
static void sleep_over(void)
{
    for (int i = 0; i < npops; i++)
        if (pops[i]->pollfds) pops[i]->pollfds(NULL, 0);
}

/* Sleep until a transport's descriptor is ready (or the timeout).  At
 * MPI_THREAD_MULTIPLE the library lock is released meanwhile, so each
 * thread gathers its descriptors into its own buffer, plus the wake-up fd.
 * In a job with checkpoints a checkpoint may run while the thread sleeps
 * (core/lock.c) and re-create pfds: its own buffer too. */
static void sleep_on_fds(void)
{
    static _Thread_local struct pollfd *mine;
    bool own = kumi_mt || kumi_lock_track;
    struct pollfd *fds = own ? mine : pfds;
    if (own && !mine && pfds) fds = mine = malloc((KUMI_MAX_POLLFDS + 1) * sizeof *mine);
    int nf = 0, nosleep = 0, nap = 0;
    if (fds)
        for (int i = 0; i < npops && nf < KUMI_MAX_POLLFDS; i++)
            if (pops[i]->pollfds) {
                int k = pops[i]->pollfds(fds + nf, KUMI_MAX_POLLFDS - nf);
                if (k > 0) nf += k;
                else if (k == KUMI_P2P_NAP) nap = 1;
                else if (k < 0) nosleep = 1;
            }
    if (xfds && fds && nf < KUMI_MAX_POLLFDS) {
        int k = xfds(fds + nf, KUMI_MAX_POLLFDS - nf);
        if (k > 0) nf += k;
    }
    if (nosleep) {                          /* a transport cannot be slept on now */
        sleep_over();
        int d = kumi_lock_release_all();
        sched_yield();
        kumi_lock_reacquire(d);
        return;
    }
    bool wakeable = (kumi_mt || kumi_lock_track) && fds;    /* see wake_fd */
    bool engine = wakeable && kumi_lock_is_engine();
    int wi = -1;                            /* the wake-up fd's slot */
    if (wakeable) {
        int *wfd = engine ? &engine_fd : &wake_fd;
        if (*wfd < 0) __atomic_store_n(wfd, eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), __ATOMIC_SEQ_CST);
        if (*wfd >= 0) {
            wi = nf;
            fds[nf].fd = *wfd;
            fds[nf].events = POLLIN;
            fds[nf].revents = 0;
            nf++;
        }
        if (!engine) __atomic_add_fetch(&sleepers, 1, __ATOMIC_SEQ_CST);
    }
    int d = kumi_lock_release_all();
    poll(nf ? fds : NULL, (nfds_t)nf, nap || sleep_ms < 1 ? 1 : (int)sleep_ms);   /* MPI_T may set it */
    kumi_lock_reacquire(d);
    sleep_over();
    if (wakeable) {
        if (!engine) __atomic_sub_fetch(&sleepers, 1, __ATOMIC_SEQ_CST);
        uint64_t v;
        int wfd = engine ? engine_fd : wake_fd;
        if (wi >= 0 && (fds[wi].revents & POLLIN) && fds[wi].fd == wfd && read(wfd, &v, sizeof v) < 0) {
            /* taken by another sleeper */
        }
    }
}

/* Before and after a sleep every transport is polled, idle ones included. */
static int sleep_and_poll(void)
{
    int n = poll_all_transports();
    if (xpoll && xpoll() > 0) n++;
    if (n > 0) return n;
    sleep_on_fds();
    n = poll_all_transports();
    if (xpoll && xpoll() > 0) n++;
    return n;
}

int kumi_progress(int blocking)
{
    double t0 = __builtin_expect(kumi_pv.timing, 0) ? kumi_time() : 0;
    int n = poll_once();
    if (n == 0 && blocking) n = sleep_and_poll();
    if (t0 > 0) kumi_pv.progress_secs += kumi_time() - t0;
    return n;
}

void kumi_progress_wait(int (*done)(void *), void *arg)
{
    kumi_progress_wait_nap(done, arg, NULL);
}

/* nap (may be NULL: the engine's own sleep): see request.h. */
void kumi_progress_wait_nap(int (*done)(void *), void *arg, void (*nap)(void *))
{
    enum { P_SPIN, P_TSPIN, P_YIELD, P_SLEEP } phase = P_SPIN;
    long long n = 0;                     /* idle polls in this phase */
    double t0 = 0;                       /* start of a timed phase */
    double tp = __builtin_expect(kumi_pv.timing, 0) ? kumi_time() : 0;    /* MPI_T: time in progress */
    int (*w)(int) = nap ? NULL : xwait;    /* (a nap sleeps on something else than the poll() below) */
    if (__builtin_expect(w != NULL, 0) && !w(1)) w = NULL;
    kumi_req_flush_ctl();
    /* done() is called until it says 1, never again after: a condition may
     * act (rma_sync.c's word_taken takes the lock it says it has) */
    while (!done(arg)) {
        if (poll_once() > 0) { phase = P_SPIN; n = 0; continue; }
        n++;
        switch (phase) {
        case P_SPIN:                    /* (done() is checked again at the loop's top) */
            if (n < spin_rounds) break;
            phase = P_TSPIN; n = 0; t0 = kumi_time();      /* the clock is not read before */
            /* fall through */
        case P_TSPIN:
            if (spin_secs > 0 && ((n & 63) || kumi_time() - t0 < spin_secs)) break;
            phase = P_YIELD; n = 0; t0 = yield_secs > 0 ? kumi_time() : 0;
            /* fall through */
        case P_YIELD:
            if (done(arg)) goto out;    /* (another thread's, or a transport that said nothing) */
            if (n < yield_rounds || (yield_secs > 0 && ((n & 15) || kumi_time() - t0 < yield_secs))) {
                int d = kumi_lock_release_all();
                sched_yield();
                kumi_lock_reacquire(d);
                continue;
            }
            phase = P_SLEEP;
            /* fall through */
        case P_SLEEP:
            if (done(arg)) goto out;
            if (nap) {
                int d = kumi_lock_release_all();
                nap(arg);
                kumi_lock_reacquire(d);
                if (poll_all_transports() > 0) { phase = P_SPIN; n = 0; }
                continue;
            }
            if (sleep_and_poll() > 0) { phase = P_SPIN; n = 0; }
            continue;
        }
        /* spinning: let other threads in — at MPI_THREAD_MULTIPLE when one
         * waits (and every 64th round for those that only try: the checkpoint
         * thread), and in a call of a checkpoint job that a raised checkpoint
         * waits for (kumi_lock_let_in) */
        if (kumi_mt ? (kumi_lock_wanted() || (n & 63) == 0) : kumi_lock_let_in())
            kumi_lock_reacquire(kumi_lock_release_all());
    }
out:
    if (__builtin_expect(w != NULL, 0)) w(0);
    if (tp > 0) kumi_pv.progress_secs += kumi_time() - tp;
}

static int flag_set(void *arg) { return *(volatile bool *)arg; }

void kumi_progress_wait_flag(volatile bool *flag)
{
    kumi_progress_wait(flag_set, (void *)flag);
}
