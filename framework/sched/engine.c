/* Engines that run schedules.
 *
 * loop (default): schedules advance inside MPI calls, like point-to-point
 *   traffic (sched.c: completion callbacks of the nodes' requests).
 * thread: the same, plus a progress thread that runs the progress engine
 *   while any schedule is active, so a collective advances while the
 *   application computes without calling MPI (LibNBC's way).  The thread
 *   sleeps in poll() on the transports' descriptors between events (the
 *   arriving message wakes it: shared memory's doorbell, the sockets) and
 *   on a futex word while no schedule runs (see "Sleeping" below), so it
 *   costs CPU only when messages arrive.  The progress thread and the
 *   application share the library: at MPI_THREAD_MULTIPLE under the lock
 *   (core/lock.c); below it the lock is off (entries only count themselves)
 *   and the thread raises the entries' flag while it has taken a schedule
 *   over, so the application's calls take the lock only then (lock.c, "The
 *   thread engine"; with kumi_base_sched_thread_delay_us 0, or without
 *   membarrier(2), the lock is on for good).
 *
 * uring: SEND and RECV nodes whose peer is reached over a socket become
 *   io_uring operations on a connection of the engine's own (uring.c); the
 *   kernel moves their data while the application computes.  Built when
 *   configure found liburing; unavailable at run time (io_uring disabled,
 *   kumi_base_sched_uring_unavailable), the loop engine runs instead.
 *   Its completion thread is the progress thread below, which sleeps on
 *   the ring while every message is the kernel's (see ring_only).
 *
 * kmod: the KACC kernel module (kmod/, sched/kmod.c) runs whole schedules in
 *   the kernel, started by the issuing call and driven by socket callbacks;
 *   the rank does only the steps the module cannot (per node).  Module
 *   absent or of another ABI version: the loop engine runs instead.
 *
 * Parameter kumi_base_sched_engine (KUMI_BASE_SCHED_ENGINE) = loop | thread | uring | kmod.
 *
 * The thread engine hands a schedule to its progress thread only when the
 * application has stayed out of the library for kumi_base_sched_thread_delay_us
 * (default 50): an application that waits at once (MPI_Iallreduce then
 * MPI_Wait) runs the schedule itself, in its wait, and pays no wake-up of
 * the thread, no context switch and no lock hand-over, as with the loop
 * engine.  Meanwhile the thread dozes in timed sleeps (no system call on
 * the application's side), doubling up to 4 ms while the application keeps
 * coming back (so the delay before a take-over is at most that + delay_us;
 * up to 50 ms where the rank shares its core with another rank: doze_cap):
 * from delay_us after a take-over, from 1 ms when a burst of operations
 * begins and the thread took none over lately (see doze_us); it sleeps on
 * a futex once no schedule has run for a few milliseconds, and parks until
 * the application's exit while one call lasts long.  The thread starts
 * with the engine (MPI_Init), asleep.  0 restores the immediate
 * hand-over (the thread wakes at every start and at every exit from the
 * library while a schedule runs).  A rank that mpiexec bound to cores lets
 * its progress thread run on the CPUs of its NUMA node(s), and only on
 * those of them that no rank of the job on this host is bound to, where
 * there are any (kumi_base_sched_thread_anycpu: 1,
 * default; 2: every online CPU; 0: the rank's cores only): its dozes and
 * take-overs then take no rank's core (see keep_to_free_cpus).
 *
 * Sleeping.  The thread sleeps on one futex word, esleep: it writes
 * E_DOZING (a timed doze of the delay above) or E_ASLEEP (no schedule runs:
 * until one starts) into it, re-checks its condition, and waits on the word.
 * A start (kumi_sched_engine_started) counts the schedule, then reads the
 * word: only an E_ASLEEP thread is woken (one FUTEX_WAKE); an awake or
 * dozing thread costs the start one load, no system call and no lock (the
 * condition variable it replaces took a mutex at every start).  Both sides
 * write, then read the other's word with sequentially consistent accesses,
 * so a start is never missed.  The stop wakes it in every state. */
#define _GNU_SOURCE                     /* CPU_SET, pthread_setaffinity_np */
#include "sched/sched.h"
#include "core/cpus.h"
#include <kumi/param.h>
#include <kumi/rpim.h>
#include <kumi/p2p.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <linux/futex.h>
#include <limits.h>
#include <time.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <poll.h>
#include <fcntl.h>

static const char *engine_name = "loop";
static long long slice_us = 100, delay_us = 50, anycpu = 1, burst_us = 4000, doze_max_us = 4000;
static long long shared_doze_max_us = 50000;
static long long hold_doze_us = 50000;  /* uring: the doze while it holds off (see "When the uring thread holds off") */
static bool use_thread, use_uring, use_kmod;
static bool core_shared;                /* the rank shares its core with another rank (see doze_cap) */
static pthread_t thr;
static bool thr_started;
static int thr_stop;                    /* atomic */
enum { E_AWAKE, E_DOZING, E_HELD, E_ASLEEP };   /* E_HELD: uring, a doze that holds off (doze_held) */
static int esleep;                      /* futex word: the thread's state (see "Sleeping") */
static unsigned starts;                 /* schedules started (relaxed): the thread lingers while they come */
static int uring_efd = -1;              /* uring: the thread sleeps on this eventfd (see ring_only) */
/* the thread's own counts (take-overs, timed dozes, sleeps until a start), logged at the stop (KUMI_VERBOSE=2) */
static unsigned long n_dozes, n_owns, n_sleeps;
static unsigned long n_start_wakes;     /* starts that found it asleep and woke it (a FUTEX_WAKE in the start) */
static unsigned long n_holds;           /* uring: take-overs it held off (see "When the uring thread holds off") */
static unsigned long n_held_wakes;      /* uring: held dozes a start ended (kumi_sched_engine_ran) */
static bool held;                       /* uring: its last look held off (its dozes then do not watch the ring) */
static long long longest_doze;

static void *engine_main(void *arg);

/* The progress thread starts with the engine (MPI_Init), asleep until the
 * first schedule starts: the first non-blocking collective pays no
 * pthread_create (a stack mapped, a clone) and no first run of a new
 * thread that sets itself up (its time slice, its CPUs) in its place. */
static void start_thread(void)
{
    n_dozes = n_owns = n_sleeps = n_start_wakes = n_holds = n_held_wakes = 0;
    longest_doze = 0;
    if (pthread_create(&thr, NULL, engine_main, NULL) != 0) {
        kumi_warn("kumi_base_sched_engine=%s: cannot start the progress thread; collectives "
                  "progress inside MPI calls only", engine_name);
        use_thread = false;
        return;
    }
    thr_started = true;
}

void kumi_sched_register_params(void)
{
    kumi_param_register_string("kumi", "base", "sched_engine", "loop",
                               "What progresses non-blocking and persistent collectives: loop (inside "
                               "MPI calls), thread (also a progress thread while one is active), uring "
                               "(messages over sockets are io_uring operations the kernel moves) or kmod "
                               "(the KACC kernel module runs the schedules, /dev/kumi_kacc)",
                               KUMI_LEVEL_TUNER, &engine_name);
    kumi_param_register_int("kumi", "base", "sched_thread_slice_us", 100,
                            "Time slice (microseconds) the progress thread asks of the kernel (Linux 6.12 "
                            "and later), so that it runs as soon as a message wakes it; 0: the kernel's default",
                            KUMI_LEVEL_TUNER, &slice_us);
    kumi_param_register_int("kumi", "base", "sched_thread_delay_us", 50,
                            "The progress thread takes a schedule over only after the application has "
                            "stayed out of the library this long (microseconds); an application that "
                            "waits at once runs it itself.  0: at once (a wake-up at every start and exit)",
                            KUMI_LEVEL_TUNER, &delay_us);
    kumi_param_register_int("kumi", "base", "sched_thread_burst_us", 4000,
                            "The progress thread's first doze (microseconds) when a schedule starts after "
                            "it slept and it took none over in the last second (the application waits at "
                            "once): fewer wake-ups in a burst of operations, a later first take-over; "
                            "at most sched_thread_doze_max_us; below sched_thread_delay_us: that delay",
                            KUMI_LEVEL_TUNER, &burst_us);
    kumi_param_register_int("kumi", "base", "sched_thread_doze_max_us", 4000,
                            "The progress thread's longest doze (microseconds) while the application keeps "
                            "coming back to the library (it waits at once): a take-over comes at most this "
                            "+ sched_thread_delay_us after the application left; longer: fewer wake-ups, "
                            "each in a rank's place when no core is free",
                            KUMI_LEVEL_TUNER, &doze_max_us);
    kumi_param_register_int("kumi", "base", "sched_thread_shared_doze_max_us", 50000,
                            "sched_thread_doze_max_us where the rank shares its core with another rank "
                            "(mpiexec bound others of the launch to it, or the host has more ranks of the "
                            "launch than CPUs the rank may use): each doze then wakes in a rank's place, "
                            "and after a take-over the dozes start short again",
                            KUMI_LEVEL_TUNER, &shared_doze_max_us);
    kumi_param_register_int("kumi", "base", "sched_uring_hold_doze_us", 50000,
                            "The uring engine's completion thread, while it holds off (kumi_base_sched_uring_hold: "
                            "every CPU of the host busy, and every peer on it or nothing for the thread to move "
                            "across a wire), looks again after this long (microseconds), not after the doubling "
                            "dozes of sched_thread_doze_max_us: each look wakes it in a computing rank's place "
                            "(a start or a completion that gives it work across a wire wakes it at once); at "
                            "least sched_thread_delay_us",
                            KUMI_LEVEL_TUNER, &hold_doze_us);
    kumi_param_register_int("kumi", "base", "sched_thread_anycpu", 1,
                            "Where the progress thread of a rank bound to cores may run: 1: on the CPUs "
                            "of the NUMA node(s) of the rank's cores, only on those no rank of the "
                            "job on this host is bound to where there are any (launches of up to "
                            "128 ranks); 2: on every online CPU of the host; 0: on the rank's "
                            "cores only (the thread inherits the binding)",
                            KUMI_LEVEL_TUNER, &anycpu);
    kumi_sched_uring_register_params();
    kumi_sched_kmod_register_params();
}

int kumi_sched_engine_init(void)
{
    kumi_engine_work = 0;
    thr_stop = 0;
    use_uring = use_kmod = core_shared = false;
    if (!strcmp(engine_name, "loop")) {
        use_thread = false;
    } else if (!strcmp(engine_name, "uring")) {
        use_thread = false;
#ifdef KUMI_HAVE_LIBURING
        use_uring = kumi_sched_uring_init() == 0;
        /* uring.c's completion thread is this file's progress thread, woken by the ring */
        if (use_uring && kumi_sched_uring_thread()) {
            use_thread = true;
            if (uring_efd < 0) uring_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
            if (delay_us <= 0 || !kumi_lock_engine_track()) kumi_mt = true;
            start_thread();
        }
#else
        if (kumi_world_rank() == 0)
            kumi_warn("kumi_base_sched_engine=uring: this Kumi was built without liburing (Debian: "
                      "liburing-dev); collectives use the loop engine");
#endif
    } else if (!strcmp(engine_name, "kmod")) {
        use_thread = false;
        use_kmod = kumi_sched_kmod_init() == 0;
    } else if (!strcmp(engine_name, "thread")) {
        use_thread = true;
        core_shared = kumi_rpim_shares_core();   /* then no core is free: see doze_cap */
        /* the progress thread shares the library: entries count themselves
         * and it raises the flag when it takes over (core/lock.c), or, with
         * no membarrier(2) or delay_us 0, the lock is on for good */
        if (delay_us <= 0 || !kumi_lock_engine_track()) kumi_mt = true;
        start_thread();
    } else {
        return kumi_error(MPI_ERR_ARG, "parameter kumi_base_sched_engine = \"%s\": expected loop, thread, uring or kmod",
                          engine_name);
    }
    return MPI_SUCCESS;
}

const char *kumi_sched_engine(void)
{
    return use_uring ? "uring" : use_thread ? "thread" : use_kmod ? "kmod" : "loop";
}

static bool idle(void)
{
    return __atomic_load_n(&kumi_engine_work, __ATOMIC_SEQ_CST) == 0 && !__atomic_load_n(&thr_stop, __ATOMIC_SEQ_CST);
}

/* Asks the kernel for a short time slice for the calling thread (Linux's
 * EEVDF scheduler, 6.12 and later: sched_setattr() with SCHED_OTHER and a
 * sched_runtime, which any process may set).  The progress thread shares its
 * core with the computation; a short slice gives it an earlier deadline than
 * the computation's when a message wakes it, so it runs at once (instead of
 * after the computation's slice of a millisecond or more), does its work and
 * sleeps again.  Older kernels refuse or ignore it; nothing else changes. */
static void short_slice(void)
{
#ifdef SYS_sched_setattr
    struct {
        uint32_t size, policy;
        uint64_t flags;
        int32_t nice;
        uint32_t priority;
        uint64_t runtime, deadline, period;
    } a;
    if (slice_us <= 0) return;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.policy = 0;                       /* SCHED_OTHER */
    a.runtime = (uint64_t)slice_us * 1000;
    (void)syscall(SYS_sched_setattr, 0, &a, 0);
#endif
}

/* A rank bound to cores (mpiexec's binding: KUMI_ENV_BIND_CPUS) would keep
 * its progress thread on them, next to the computation; the thread may run
 * on more CPUs instead, and keeps to those bound to no rank where there are
 * any (core/cpus.c: anycpu 1, the CPUs of the rank's NUMA nodes; 2, every
 * online CPU).  The application thread sets the thread engine's CPUs at the
 * end of the start-up, the thread asleep until a schedule starts
 * (kumi_sched_engine_ready); the uring engine's thread sets its own
 * (unbind_thread) as it starts. */
static bool unbind_thread(pthread_t t)
{
    cpu_set_t set;
    if (!kumi_cpus_helper((int)anycpu, &set)) return false;
    if (pthread_setaffinity_np(t, sizeof set, &set) == 0) return true;
    kumi_log(2, "kumi_base_sched_engine=%s: the progress thread keeps the rank's CPUs (%s)", engine_name, strerror(errno));
    return false;
}

static void keep_to_free_cpus(void)
{
    cpu_set_t set, free_set;
    if (pthread_getaffinity_np(thr, sizeof set, &set) != 0 || !kumi_cpus_free(&set, &free_set)) return;
    if (pthread_setaffinity_np(thr, sizeof free_set, &free_set) != 0)
        kumi_log(2, "kumi_base_sched_engine=thread: the progress thread keeps its CPUs (%s)", strerror(errno));
}

/* uring: the thread's sleep on uring_efd (and the ring's descriptor, >= 0),
 * at most ts (NULL: until woken); true when the ring woke it. */
static bool uring_sleep(int ring_fd, const struct timespec *ts)
{
    struct pollfd p[2] = { { .fd = uring_efd, .events = POLLIN }, { .fd = ring_fd, .events = POLLIN } };
    if (ppoll(p, ring_fd >= 0 ? 2 : 1, ts, NULL) <= 0) return false;
    if (p[0].revents & POLLIN) {
        uint64_t v;
        if (read(uring_efd, &v, sizeof v) < 0) { /* another wake drained it */ }
    }
    return ring_fd >= 0 && (p[1].revents & POLLIN);
}

/* The thread sleeps on esleep while it holds state (E_DOZING, E_ASLEEP),
 * at most ts (NULL: until woken). */
static void esleep_wait(int state, const struct timespec *ts)
{
    if (uring_efd >= 0) {               /* the waker writes the eventfd after its exchange */
        /* uring: a doze while the application is out, every operation is
         * the kernel's and a receive waits (or the last one waited) for a
         * payload larger than the stream buffer also ends at a completion
         * (see "The uring engine's thread") */
        int rfd = state == E_DOZING && use_uring && !held && !kumi_lock_app_inside() && kumi_sched_uring_quiet() &&
                  kumi_sched_uring_big_recv() && !kumi_sched_uring_cq_ready() ? kumi_sched_uring_fd() : -1;
        if (__atomic_load_n(&esleep, __ATOMIC_SEQ_CST) == state && uring_sleep(rfd, ts) && rfd >= 0)
            kumi_sched_uring_doze_woke();
        return;
    }
    syscall(SYS_futex, &esleep, FUTEX_WAIT_PRIVATE, state, ts, NULL, 0);
}

/* Wake the thread if it sleeps in a state >= min (E_ASLEEP: only when no
 * schedule ran; E_DOZING: any sleep on the word).  No system call while it
 * is awake. */
static bool esleep_wake(int min)
{
    if (__atomic_load_n(&esleep, __ATOMIC_SEQ_CST) >= min &&
        __atomic_exchange_n(&esleep, E_AWAKE, __ATOMIC_SEQ_CST) != E_AWAKE) {
        if (uring_efd >= 0) {
            uint64_t one = 1;
            if (write(uring_efd, &one, sizeof one) < 0) { /* (full: it wakes anyway) */ }
        } else {
            syscall(SYS_futex, &esleep, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
        }
        return true;
    }
    return false;
}

static double now_secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The current doze: delay_us after the thread took a schedule over,
 * doubling at every doze that finds the application inside or back in the
 * library since (it waits at once: the thread is not needed), up to
 * doze_max_us (kumi_base_sched_thread_doze_max_us, 4 ms).  Each wake-up
 * of a thread that shares a core costs the computation there; at 50 us
 * it made an 8-byte MPI_Iallreduce + MPI_Wait loop twice as slow as with
 * the loop engine at 2 ranks on 2 cores.
 *
 * The first schedule after the thread slept (a burst of operations starts)
 * begins with dozes of burst_us (kumi_base_sched_thread_burst_us, 4 ms, at
 * most doze_max_us) unless the thread took one over within
 * KUMI_OWN_RECENT_SECS (the application computes while schedules run:
 * delay_us again).  Beginning every burst at delay_us woke the thread
 * at 50, 150, 350, 750, 1550 us after its start, each wake-up in the place
 * of a rank when no core is free: an application that waits at once paid
 * them in every burst (a benchmark's 1000 operations of 0.3-0.6 us lie
 * wholly in that ramp).  A doze that finds the application out of the
 * library while a schedule runs is followed by one of delay_us (does it
 * stay out?), so a take-over comes at most doze_max_us + delay_us
 * after the application left: the first after a second without one that
 * late, the next ones (the application computes through its operations)
 * after about delay_us.
 *
 * Where the rank shares its core with another rank (core_shared: mpiexec
 * bound others of the launch to it, or more ranks of the launch on the host
 * than CPUs the rank may use), no core is free for the thread and every
 * wake-up takes a rank's place: the dozes then double on up to
 * shared_doze_max_us (kumi_base_sched_thread_shared_doze_max_us, 50 ms),
 * and a burst after a pause begins with the doze reached before it (no
 * take-over since), not with burst_us again.  A take-over (the application
 * computes) still brings the dozes back to delay_us.  The price: the first
 * take-over after a stretch of waits at once comes up to 50 ms late. */
#define KUMI_OWN_RECENT_SECS 1.0
static long long doze_us;
static double last_own = -1e9;          /* when the thread last took a schedule over */

/* A doze of us in state E_DOZING, or E_HELD (doze_held: then only while
 * the thread may still hold off, read after the state is written) */
static void doze_in(int state, long long us)
{
    struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
    n_dozes++;
    if (us > longest_doze) longest_doze = us;
    __atomic_store_n(&esleep, state, __ATOMIC_SEQ_CST);
    if (state == E_HELD) __atomic_thread_fence(__ATOMIC_SEQ_CST);  /* the state, then the counts: pairs with
                                                                       kumi_sched_engine_ran */
    if (!__atomic_load_n(&thr_stop, __ATOMIC_SEQ_CST) && (state != E_HELD || kumi_sched_uring_may_hold()))
        esleep_wait(state, &ts);
    __atomic_store_n(&esleep, E_AWAKE, __ATOMIC_RELAXED);
}

static void doze_for(long long us)
{
    doze_in(E_DOZING, us);
}

static void doze(void)
{
    doze_for(doze_us);
}

/* The longest doze: doze_max_us, or shared_doze_max_us where the rank
 * shares its core (see "Where the rank shares its core"); at least delay_us. */
static long long doze_cap(void)
{
    long long cap = core_shared ? shared_doze_max_us : doze_max_us;
    return delay_us > cap ? delay_us : cap;
}

static void doze_longer(void)
{
    long long cap = doze_cap();
    doze_us = doze_us * 2 > cap ? cap : doze_us * 2;
}

/* Sleep until a schedule runs: dozing while one ran or started lately (the
 * next start then costs the application nothing), on esleep (E_ASLEEP)
 * after linger_secs() without one: the next start wakes it.  A start
 * counts even when its schedule ended before the thread looked (waited at
 * once): an application that starts one every millisecond and waits for
 * it at once kept the thread going to sleep and every start waking it
 * (a FUTEX_WAKE and a switch per operation); now it dozes on.
 *
 * The linger is KUMI_LINGER_DOZES of the longest doze (doze_cap: 12 ms,
 * 150 ms where the rank shares its core), at least KUMI_LINGER_SECS: an
 * application that computes 5-12 ms between operations it waits for at
 * once (8 ms: the thread fell asleep after 5 ms, and every start paid a
 * FUTEX_WAKE, and the thread's switch-in, on a rank's core when none is
 * free, came in the middle of the collective) now finds the thread dozing
 * at every start: the start costs it what it costs with the loop engine,
 * and the thread wakes about once per doze_cap meanwhile (2 per operation
 * 8 ms apart, against 2-3 before: the start's wake-up and its dozes).  The
 * price: after the last operation of a burst the thread dozes on for up to
 * 3 dozes before it sleeps (1-2 before).  Not where the thread took a
 * schedule over within KUMI_OWN_RECENT_SECS (see linger_secs). */
#define KUMI_LINGER_SECS 0.005
#define KUMI_LINGER_DOZES 3
#define KUMI_PARK_DOZES 20
static double linger_secs(double now)
{
    /* the uring engine's thread as before; and a thread that took a schedule
     * over lately (the application computes while they run): asleep after
     * 5 ms, the next start wakes it and it takes over after delay_us again,
     * not at the end of a linger's doze of up to doze_cap */
    if (use_uring || now - last_own < KUMI_OWN_RECENT_SECS) return KUMI_LINGER_SECS;
    double l = (double)(KUMI_LINGER_DOZES * doze_cap()) * 1e-6;
    return l > KUMI_LINGER_SECS ? l : KUMI_LINGER_SECS;
}

static bool uring_holds(void);
static void doze_held(void);

static void wait_for_work(double *last_work)
{
    static unsigned seen;
    unsigned st = __atomic_load_n(&starts, __ATOMIC_RELAXED);
    if (st != seen) {
        seen = st;
        *last_work = now_secs();
    }
    double now = now_secs();
    if (delay_us > 0 && now - *last_work < linger_secs(now)) {
        if (use_uring && uring_holds()) {  /* a linger that would only look again */
            doze_held();
            return;
        }
        doze();
        doze_longer();
        return;
    }
    for (;;) {
        __atomic_store_n(&esleep, E_ASLEEP, __ATOMIC_SEQ_CST);
        if (!idle()) break;             /* a start that read the word before our store */
        n_sleeps++;
        esleep_wait(E_ASLEEP, NULL);
    }
    __atomic_store_n(&esleep, E_AWAKE, __ATOMIC_RELAXED);
    *last_work = now_secs();
    /* a burst starts (see "The first schedule after ..."); where the rank
     * shares its core, the doze it reached before the pause when that is
     * longer (no take-over since: the application waited at once) */
    long long kept = doze_us, cap = doze_cap();
    doze_us = delay_us;
    long long first = burst_us < cap ? burst_us : cap;
    if (*last_work - last_own >= KUMI_OWN_RECENT_SECS) {
        if (doze_us < first) doze_us = first;
        if (core_shared && doze_us < kept) doze_us = kept;
    }
}

/* The uring engine's thread (use_uring; the thread engine never comes
 * here).  Its operations are the kernel's: while every message of the
 * running schedules is in flight in the ring (nothing waits in its
 * submission queue for a thread to submit, no node of a schedule started
 * since the engine was last idle went to the request layer, whose
 * transports only a progress round polls), there is nothing to take over
 * for until a completion comes.  The thread then sleeps on the ring
 * (kumi_sched_uring_wait) instead of dozing to see whether the
 * application stays out and taking over to sleep in poll(): one wake-up
 * per completion, and the take-over as soon as it is there.  The
 * doze/take-over cycle of the thread engine (two timed wake-ups before
 * the take-over, the third at the completion) stays for the rest: the
 * operations a start call left in the submission queue (a send the socket
 * could not take at once: 1 MiB, a pipeline's segments) wait for the end of
 * the thread's doze.  (Waking the thread at such a start -- an eventfd
 * write by the start call -- made the 1 MiB collectives complete sooner,
 * kacc bench k = 0, d/cmp 3.46 / 2.20 / 1.85 against 6.23 / 2.30 / 2.14,
 * but took more from the computation, lost 52 / 52 / 38 % against 39 / 36
 * / 23 %, 16 loaded rounds: the copies then overlap the compute.  The
 * start call submitting them itself flagged IOSQE_ASYNC does not give them
 * to a kernel thread for good: io-wq makes one non-blocking attempt and
 * the retries are then poll-driven task work of the submitter, the
 * computing application (the kernel's io_wq_submit_work); 1 MiB,
 * k = 0, loaded host, 10 rounds: t_nbc 980 / 459 / 520 us against 453 /
 * 226 / 338, lost 42 % against 18 % for the allreduce.)  A doze
 * of the uring thread while the application is out of the library (the
 * linger between operations: a start does not end it), nothing waiting
 * in the submission queue and a receive posted (or, between operations,
 * the last one posted) whose payload goes past the stream buffer (the
 * kernel receives it straight into place once the header is parsed) also
 * watches the ring, so a schedule started
 * meanwhile is taken over at its first completion, not at the doze's end
 * (esleep_wait).  Not while operations wait in the queue (1 MiB: the
 * take-over would copy during the computation; watching the ring then
 * too raised the 1 MiB rows' lost to 35 / 11 / 30 % from 16 / 4 / 5 %,
 * d/cmp no better), nor for small messages only (a take-over that only
 * matches an 8-byte message costs a wake-up the application's MPI_Wait
 * does not need: 12 rounds, ibcast-tree 8 B met its target in 0 of 12
 * rounds against 6 of 12 without).  The
 * uring thread's sleeps are on an eventfd (uring_efd; with the ring's
 * descriptor while it waits for a completion) instead of the futex word,
 * which a poll() cannot watch; the thread engine's are unchanged.
 *
 * A take-over from the ring leaves the dozes as they were, unless the
 * thread started a send before it was idle again (its work let the peers
 * go on: an 8-byte MPI_Iallreduce at 4 ranks, a CALC and the next round's
 * sends, then dozes of delay_us as the thread engine's).  The thread
 * engine's take-over brings them back to delay_us, so that the next
 * operation of an application that computes through them is taken over
 * delay_us after its start; but when the thread only finished receives (2
 * ranks: the last CALC, the schedule's end, which the application's
 * MPI_Wait does as well) the short dozes only woke it 3-4 times more
 * between two operations (the linger's 50, 100, 200, 400 us), each in a
 * computing rank's place when no core is free.  kacc bench, k = 0, 4x4
 * products, 2 ranks bound, 12 launches alternating with the engine before
 * (373beb0; medians, lost % / d/cmp, the thread engine's in brackets): 8 B
 * Iallreduce 17.1 / 1.222 -> 4.2 / 1.067 [16.8-17.2 / 1.21-1.22], Ibcast
 * tree 7.2 / 1.094 -> 2.1 / 1.036 [4.0-4.4 / 1.05], 64 KiB Ibcast tree
 * 12.6 / 1.169 -> 4.2 / 1.047 [11.1-11.2 / 1.12]; 64 KiB and 1 MiB
 * Iallreduce (whose thread sends after the CALC) as before.  Leaving them
 * long after every take-over from the ring, sends or not, made 4 ranks on
 * 2 cores complete later (8 B and 64 KiB Iallreduce d/cmp 1.14-1.87 against
 * 1.06-1.23: the next round's sends waited for the doze's end). */
/* When the uring thread holds off.  A take-over costs a wake-up of the
 * thread and a CPU to run it; on a host whose CPUs all run (both ranks
 * compute, or wait spinning) that CPU is a computing process's, and when
 * the engine's connections (one at least) all go to peers on this host
 * (loopback addresses: kumi_sched_uring_may_hold) what the thread would do
 * there -- copy a payload out of the socket, run a CALC, copy the next
 * sends in -- is CPU work that the application's next MPI call does as
 * fast, without the wake-ups, the switches and the cache the computation
 * loses to them.  The thread then
 * takes nothing over: it dozes (its dozes grow to doze_cap and do not watch
 * the ring) and looks again at each doze's end; a CPU found idle (a rank
 * asleep, or gone to poll() in a long wait) or a connection to a peer that
 * is not at a loopback address (the bytes cross a wire, which a take-over
 * keeps busy while the application computes) lets it take over as before;
 * kumi_base_sched_uring_hold 0: always as before.  Busy: /proc/loadavg's
 * count of the tasks running or runnable now (this thread among them),
 * less this thread, is at least the host's online CPUs (one pread of a
 * descriptor kept open, 1.5 us; system-wide: a cgroup's share of a larger
 * host reads as less busy than it is, and the thread then takes over as
 * before).  kacc bench, 2 ranks bound on 2 cores over loopback, 4x4
 * products, k = 0, 8 launches alternating (medians, lost % / d/cmp, the
 * thread engine's in brackets): with the take-overs the 64 KiB and 1 MiB
 * MPI_Iallreduce were bimodal per launch (a thread that took over lost
 * 20-35 % and completed later, d/cmp 1.50-1.81 at 1 MiB, than one that
 * slept through, 0-1 % and 1.41-1.43): 13.6 / 1.183 and 19.0 / 1.551
 * [19.5 / 1.251, 13.3 / 1.467]; with no take-over at all (dozes of 1 s:
 * what this hold does on such a host) 2.3 / 1.071 and 0.3 / 1.379, and
 * every row of the three operations at 8 B, 64 KiB and 1 MiB lost less and
 * completed no later than with the thread engine (9 of 9, against 8).  With
 * this hold, make bench (kacc, 12 launches, with Open MPI and MPICH): 8 B /
 * 64 KiB / 1 MiB MPI_Iallreduce 2.4 / 1.051, 3.6 / 1.138, 1.1 / 1.522 [17.2
 * / 1.207, 22.0 / 1.307, 26.9 / 1.634], the target met in 9 of 9 rows; in the
 * VM (TCG, loopback, 3 launches) d/cmp lower than with hold 0 in 6 of 6
 * rows (8 B MPI_Iallreduce 1.166 against 1.706); 4 ranks on 2
 * cores (unbound, 4 launches) 8 B and 64 KiB MPI_Iallreduce d/cmp 1.080 and
 * 1.238 against 1.182 and 1.452 taking over.  Through the host's own
 * non-loopback address (p2p_tcp_if_include) nothing is held: 145-285
 * take-overs in 300 operations, as before (test sched_uring_hold).
 *
 * While it holds off, the thread looks again every hold_doze_us
 * (kumi_base_sched_uring_hold_doze_us, 50 ms), not at the end of dozes
 * doubling from delay_us to doze_max_us (4 ms), and a linger that finds
 * the host busy that way dozes as long: each look is a wake-up in a
 * computing rank's place, which in the test VM (QEMU TCG, 2 vCPUs, 2 ranks
 * over loopback) costs 100-300 us of vCPU -- with the 4 ms dozes the
 * thread woke about once per operation, and the engine without its thread
 * (kumi_base_sched_uring_thread 0) lost less and completed sooner in 4 of 4
 * rows (8 B / 64 KiB, MPI_Iallreduce and tree MPI_Ibcast, lost % / d/cmp:
 * 6.1 / 1.085 against 2.9 / 1.034 for the 8 B allreduce; the thread engine
 * 11.3 / 1.136).  With the long dozes, kacc-bench.sh vm, 3 launches (the
 * thread engine's in brackets): 8 B / 64 KiB / 1 MiB MPI_Iallreduce 2.7 /
 * 1.028, 1.9 / 1.039, 0.4 / 1.040 [10.6 / 1.126, 10.9 / 1.127, 6.2 / 1.069],
 * tree MPI_Ibcast 2.5 / 1.032, 3.5 / 1.035, 0.0 / 1.025 [7.4 / 1.085, 6.9 /
 * 1.078, 4.9 / 1.051]: 6 of 6 rows (2 of 6 before).  On the host (kacc,
 * 4x4, k = 0, 5 launches, four runs) 8 B and 64 KiB as before, the 1 MiB
 * pipelined broadcast now ahead of the thread engine in every run (d/cmp
 * 1.214-1.221 against 1.287-1.319), the 1 MiB allreduce and tree broadcast
 * at its completion time (the copies and the reduction are the same CPU
 * work, done after the computation instead of during it).
 *
 * Across a wire (a connection to a peer that is not at a loopback address)
 * the thread holds off on a busy host too, but only while nothing it could
 * do would put bytes on the wire or let them come (kumi_sched_uring_may_hold
 * says what); a start call whose schedule changes that (a send behind a
 * CALC, a send left to the ring, a receive larger than the socket takes in
 * unread) wakes a held doze (E_HELD, kumi_sched_engine_ran) instead of
 * leaving the thread asleep for up to hold_doze_us.  kacc-bench.sh wire
 * (2 ranks, 2 busy vCPUs, 300 Mbit/s, 3 launches; lost % / d/cmp, the
 * thread engine's in brackets): 8 B MPI_Iallreduce 3.2-5.8 / 1.042-1.046
 * [15.5-17.1 / 1.174-1.208], tree MPI_Ibcast 8 B 2.3-2.5 / 1.021-1.026 [7.7-9.2
 * / 1.096-1.099], 64 KiB 4.6-5.4 / 1.049-1.058 [8.0-9.5 / 1.087-1.111]; before,
 * with the take-overs, 8.1 / 1.090 and 8.1 / 1.083, 9.7 / 1.100.  The 1 MiB
 * rows, whose receives and sends keep the thread taking over, as before. */
static int loadavg_fd = -1;
static long online_cpus;

static bool host_busy(void)
{
    char b[128];
    if (loadavg_fd < 0 || online_cpus <= 0) return false;
    ssize_t n = pread(loadavg_fd, b, sizeof b - 1, 0);
    if (n <= 0) return false;
    b[n] = 0;
    const char *p = b;                  /* "0.52 0.58 0.59 3/83 1234": the fourth field */
    for (int f = 0; f < 3 && p; f++)
        if ((p = strchr(p, ' '))) p++;
    return p && strtol(p, NULL, 10) - 1 >= online_cpus;
}

static bool uring_holds(void)
{
    held = use_uring && kumi_sched_uring_may_hold() && host_busy();
    if (held) n_holds++;
    return held;
}

/* The doze of a thread that holds off: hold_doze_us (at least delay_us);
 * the doubling dozes resume from where they were once it stops holding.
 * In state E_HELD, which a start call ends when the schedule it started
 * leaves the thread no longer free to hold off (kumi_sched_engine_ran: over
 * a wire, a send waiting for a CALC or for the submission): both sides
 * write, fence, then read the other's state, as for E_ASLEEP. */
static void doze_held(void)
{
    doze_in(E_HELD, hold_doze_us > delay_us ? hold_doze_us : delay_us);
}

static unsigned long long declined_mark;    /* kumi_sched_uring_declined() when last idle */
static unsigned long sends_mark;            /* kumi_sched_uring_thread_sends() when last idle */

static bool ring_only(void)
{
    return use_uring && kumi_sched_uring_declined() == declined_mark && kumi_sched_uring_quiet();
}

/* Sleep on the ring and on uring_efd (the stop), at most
 * doze_max_us; true when a completion waits. */
static bool ring_wait(void)
{
    if (kumi_sched_uring_cq_ready()) return kumi_sched_uring_woke();
    struct timespec ts = { (time_t)(doze_max_us / 1000000), (long)(doze_max_us % 1000000) * 1000 };
    __atomic_store_n(&esleep, E_DOZING, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&thr_stop, __ATOMIC_SEQ_CST))
        uring_sleep(kumi_sched_uring_fd(), &ts);
    __atomic_store_n(&esleep, E_AWAKE, __ATOMIC_RELAXED);
    return kumi_sched_uring_woke();
}

/* The progress thread: while a schedule runs and no application thread is
 * inside the library (one inside progresses everything itself), it runs the
 * progress engine, sleeping in poll() on the transports' descriptors between
 * events; it parks while the application is inside (core/lock.c) and sleeps
 * on esleep while no schedule runs.  It never yields the CPU
 * while it has work: on a core shared with the computation it would get it
 * back only after the computation's time slice. */
static void *engine_main(void *arg)
{
    (void)arg;
    (void)pthread_setname_np(pthread_self(), "kumi-progress");
    short_slice();
    if (use_uring) {
        unbind_thread(pthread_self());  /* the thread engine's: kumi_sched_engine_ready */
        online_cpus = sysconf(_SC_NPROCESSORS_ONLN);
        loadavg_fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
        held = false;
    }
    if (delay_us > 0) (void)prctl(PR_SET_TIMERSLACK, 1000UL);    /* dozes of delay_us, not + 50 us */
    kumi_lock_engine_enter();
    double last_work = -1.0;            /* no schedule ran yet: asleep until one starts */
    unsigned last_g = 0, same = 0, own_g = 0;
    bool own = false;                   /* it took over, and the application has not come back since */
    doze_us = delay_us;
    unsigned up_g = 0;                  /* entries when it raised the flag */
    while (!__atomic_load_n(&thr_stop, __ATOMIC_ACQUIRE)) {
        /* the flag up (core/lock.c) only while the application stays out */
        if (kumi_lock_engine_raised() &&
            (idle() || kumi_lock_app_inside() || kumi_lock_app_entries() != up_g))
            kumi_lock_engine_lower();
        if (idle()) {
            own = false;
            if (use_uring) {
                declined_mark = kumi_sched_uring_declined();
                unsigned long ts = kumi_sched_uring_thread_sends();
                if (ts != sends_mark) doze_us = delay_us;   /* it sent: short dozes again */
                sends_mark = ts;
            }
            wait_for_work(&last_work);
            continue;
        }
        last_work = now_secs();
        /* In charge and the application still out (no entry since the
         * take-over): straight back to the progress engine, no doze (after
         * a sleep in poll() that ended without a message, that doze was a
         * second wake-up every kumi_base_progress_sleep_ms). */
        if (own && (kumi_lock_app_inside() || kumi_lock_app_entries() != own_g)) own = false;
        if (delay_us > 0 && !own) {
            /* Only once the application has stayed out for delay_us.  An
             * application that stays inside one call for KUMI_PARK_DOZES
             * dozes (a long MPI_Wait) parks the thread instead: then the
             * call's exit wakes it, once, rather than a doze every delay_us. */
            unsigned g = kumi_lock_app_entries();
            if (kumi_lock_app_inside()) {
                if (g != last_g) { last_g = g; same = 0; }
                if (++same >= KUMI_PARK_DOZES) { same = 0; kumi_lock_engine_wait_app(); continue; }
                doze();
                doze_longer();
                continue;
            }
            if (use_uring && uring_holds()) {  /* see "When the uring thread holds off" */
                doze_held();
                continue;
            }
            if (ring_only()) {   /* uring: sleep on the ring, take over at a completion */
                if (!ring_wait() || kumi_lock_app_inside() || idle()) continue;
                if (uring_holds()) {            /* (the host got busy meanwhile) */
                    doze_held();
                    continue;
                }
                /* the dozes stay as they were unless it sends (see "A take-over from the ring") */
            } else {
                doze_for(delay_us);     /* does it stay out for delay_us? */
                if (kumi_lock_app_inside() || kumi_lock_app_entries() != g || idle()) {
                    doze_longer();
                    continue;
                }
                doze_us = delay_us;     /* the application computes: take over, short dozes again */
            }
            last_own = now_secs();
            n_owns++;
            own = true;
            own_g = g;
        } else if (delay_us <= 0 && kumi_lock_app_inside()) {
            kumi_lock_engine_wait_app();
            continue;
        }
        if (!kumi_lock_engine_raised()) {
            unsigned g = kumi_lock_app_entries();
            if (!kumi_lock_engine_raise()) {    /* a call without the lock is inside: it progresses */
                own = false;
                doze();
                continue;
            }
            up_g = g;
        }
        kumi_lock_slow();
        if (!kumi_lock_app_inside() && !idle()) {
            double t0 = now_secs();
            /* polls; sleeps in poll() (lock released) when nothing moves */
            int n = kumi_progress(1);
            if (n == 0 && now_secs() - t0 < 1e-3)
                own = false;            /* nothing moved, yet it did not sleep (a transport that
                                           cannot be slept on now): doze before the next round */
            else if (n > 0 && !kumi_mt)
                kumi_progress_wake();   /* completions wake no sleeper there (request.c completes
                                           directly): one that entered while this slept in poll() */
        }
        kumi_unlock_slow();
    }
    kumi_lock_engine_lower();
    return NULL;
}

void kumi_sched_engine_started(void)
{
    __atomic_add_fetch(&kumi_engine_work, 1, __ATOMIC_SEQ_CST);
    if (!use_thread) return;
    /* a load and a store, no locked add: the thread only asks whether the
     * word changed, which two racing starts at MPI_THREAD_MULTIPLE that
     * store the same value still tell it */
    __atomic_store_n(&starts, __atomic_load_n(&starts, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    /* the load here, no call, when the thread is awake or dozing (the
     * locked add above orders it after the count) */
    if (__builtin_expect(__atomic_load_n(&esleep, __ATOMIC_SEQ_CST) >= E_ASLEEP, 0) && esleep_wake(E_ASLEEP))
        __atomic_add_fetch(&n_start_wakes, 1, __ATOMIC_RELAXED);
}

/* The start call has run its schedule's first nodes (or the application's
 * progress round reaped completions, which may have started more): a uring
 * thread in a held doze (doze_held) that may no longer hold off is woken
 * now, not at the doze's end (up to hold_doze_us later). */
void kumi_sched_engine_ran(void)
{
    if (!use_uring || !thr_started) return;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);   /* the run's counts, then the thread's state */
    if (__builtin_expect(__atomic_load_n(&esleep, __ATOMIC_SEQ_CST) == E_HELD, 0) && !kumi_sched_uring_may_hold() &&
        esleep_wake(E_HELD))
        __atomic_add_fetch(&n_held_wakes, 1, __ATOMIC_RELAXED);
}

void kumi_sched_engine_ready(void)
{
    if (thr_started && !use_uring && unbind_thread(thr) && anycpu == 1) keep_to_free_cpus();
}

void kumi_sched_engine_finished(void)
{
    __atomic_sub_fetch(&kumi_engine_work, 1, __ATOMIC_RELEASE);
}

void kumi_sched_engine_stop(void)
{
    kumi_sched_spares_free();
    if (use_kmod) kumi_sched_kmod_stop();
    use_kmod = false;
    if (thr_started) {
        __atomic_store_n(&thr_stop, 1, __ATOMIC_SEQ_CST);
        esleep_wake(E_DOZING);          /* out of a doze or a sleep at once */
        kumi_lock_engine_kick();        /* out of its park */
        kumi_progress_wake_engine();    /* out of poll() at once */
        int d = kumi_lock_release_all();
        pthread_join(thr, NULL);
        kumi_lock_reacquire(d);
        thr_started = false;
        kumi_log(2, "kumi_base_sched_engine=%s: the progress thread took %lu schedule runs over, dozed %lu times "
                 "(longest %lld us), slept %lu times and was woken by %lu starts%s; held off %lu times (the host "
                 "busy, every peer on it or nothing for a wire), %lu held dozes ended by a start", kumi_sched_engine(),
                 n_owns, n_dozes, longest_doze, n_sleeps, n_start_wakes,
                 core_shared ? "; the rank shares its core with another rank" : "", n_holds, n_held_wakes);
        if (loadavg_fd >= 0) { close(loadavg_fd); loadavg_fd = -1; }
    }
    /* uring: after the thread, which sleeps on the ring without the library */
    if (use_uring) kumi_sched_uring_stop();
    use_uring = false;
    if (uring_efd >= 0) { close(uring_efd); uring_efd = -1; }
}

/* A non-blocking listening TCP socket on every address (dual-stack when
 * IPv6 is there, else IPv4), port chosen by the kernel: the dedicated
 * connections of the uring and kmod engines.  -1 with errno on failure. */
int kumi_sched_listen(int *port)
{
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0) {
        int zero = 0;
        struct sockaddr_in6 a6;
        memset(&a6, 0, sizeof a6);
        a6.sin6_family = AF_INET6;
        a6.sin6_addr = in6addr_any;
        if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero) || bind(fd, (void *)&a6, sizeof a6)) {
            close(fd);
            fd = -1;
        }
    }
    if (fd < 0) {
        struct sockaddr_in a4;
        memset(&a4, 0, sizeof a4);
        a4.sin_family = AF_INET;
        a4.sin_addr.s_addr = htonl(INADDR_ANY);
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd >= 0 && bind(fd, (void *)&a4, sizeof a4)) { close(fd); fd = -1; }
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (fd < 0 || listen(fd, 128) || getsockname(fd, (void *)&ss, &sl)) {
        int e = errno;
        if (fd >= 0) close(fd);
        errno = e;
        return -1;
    }
    *port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                     : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* Is world rank w reached over sockets (the tcp transport's address for it
 * is IPv4 or IPv6), and did it publish a port under key (its engine runs)? */
bool kumi_sched_peer_listens(int w, const char *key)
{
    struct sockaddr_storage sa;
    char v[16];
    if (kumi_p2p_peer_sockaddr(w, &sa) != 0) return false;
    if (sa.ss_family != AF_INET && sa.ss_family != AF_INET6) return false;
    return kumi_rpim_get(w, key, v, sizeof v) == MPI_SUCCESS && atoi(v) > 0;
}

/* The connecting side of those connections: world rank w's address as the
 * tcp transport reaches it (kumi_p2p_peer_sockaddr) with the port w
 * published under key, a blocking connect, then this rank's world rank (4
 * bytes: the accepting side's first read).  The socket, or -1 with errno
 * and *what, the step that failed ("socket", "connect", "hello"). */
int kumi_sched_connect(int w, const char *key, bool nodelay, const char **what)
{
    struct sockaddr_storage sa;
    char v[16] = "";
    socklen_t sl;
    *what = "address";
    if (kumi_p2p_peer_sockaddr(w, &sa) != 0 || kumi_rpim_get(w, key, v, sizeof v) != MPI_SUCCESS) {
        errno = EHOSTUNREACH;
        return -1;
    }
    if (sa.ss_family == AF_INET6) {
        ((struct sockaddr_in6 *)&sa)->sin6_port = htons((uint16_t)atoi(v));
        sl = sizeof(struct sockaddr_in6);
    } else {
        ((struct sockaddr_in *)&sa)->sin_port = htons((uint16_t)atoi(v));
        sl = sizeof(struct sockaddr_in);
    }
    *what = "socket";
    int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), r;
    if (fd < 0) return -1;
    *what = "connect";
    do r = connect(fd, (void *)&sa, sl); while (r < 0 && errno == EINTR);
    if (r == 0 && nodelay) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    int32_t mine = kumi_world_rank();
    if (r == 0) *what = "hello";
    if (r < 0 || write(fd, &mine, sizeof mine) != (ssize_t)sizeof mine) {
        int e = errno;
        close(fd);
        errno = e ? e : EIO;
        return -1;
    }
    return fd;
}
