/* The library lock for MPI_THREAD_MULTIPLE.
 *
 * One mutex around the library: every generated entry point takes it when
 * the thread level is MPI_THREAD_MULTIPLE (kumi_mt), so single-threaded
 * programs pay one predictable branch.  A per-thread depth makes it
 * re-entrant (a user error handler or reduction that calls MPI), and a
 * blocking wait releases it completely while it yields or sleeps, so other
 * threads progress their own communication meanwhile.
 *
 * The progress thread of the thread engine (sched/engine.c) works only while
 * no application thread is inside the library: an application thread inside
 * progresses everything itself (every blocking call polls the transports),
 * so the engine is needed only while the application computes.  Application
 * threads count themselves in app_in on the way in and out; the engine parks
 * on that word (a futex) while it is not zero, and the last application
 * thread out wakes it.  The engine shares a core with the application on a
 * fully subscribed node, and a thread the scheduler preempted waits for the
 * other's whole time slice (a millisecond or more), while a sleeping thread
 * that is woken runs at once.  So neither side makes the other wait on a
 * contended mutex, which would make the waker preempt the engine:
 *  - an application thread that finds the engine holding the lock (one round
 *    of polls) yields until it is released, instead of sleeping on the mutex;
 *  - the engine that finds an application thread inside parks until it is
 *    out, instead of waiting for the mutex (which the application releases
 *    and retakes at every spin of a blocking wait).
 *
 * Checkpoints.  A job started with checkpoints enabled (mpiexec --ckpt) has
 * a checkpoint thread (mpi/ckpt.c) that must keep the application out of the
 * library while it works, but the lock is not on while no checkpoint is
 * requested (kumi_lock_track): the entry points (core.h) count the calls
 * inside the library instead, in a global word (kumi_lock_free_in: the
 * program promises that one thread at a time calls MPI, or the lock is on
 * for good) and in this thread's depth (kumi_lock_free_depth), which its
 * exit reads to know how it entered.  A checkpoint raises kumi_lock_raised
 * and waits until the count is zero; entries from then on take the lock.
 * The race of a thread that counted itself and reads the flag against the
 * checkpoint thread that raised it and reads the count is closed by a
 * membarrier(2) on the checkpoint's side (the entry pays a compiler barrier
 * only).  A call already inside goes on to its end, or, blocked (MPI_Recv),
 * takes the lock at the next point where a blocking wait lets other threads
 * in (kumi_lock_release_all), as at MPI_THREAD_MULTIPLE: the count drops, the
 * checkpoint proceeds, and the call goes on under the lock once it is done.
 * A call nested in one running without the lock (an error handler calling
 * MPI) stays without it.  After the checkpoint the flag is lowered first,
 * then the lock released: calls that took it meanwhile leave through
 * kumi_unlock_slow.
 *
 * The thread engine below MPI_THREAD_MULTIPLE runs the same way (the lock is
 * not on for good: an application that waits at once pays no locked atomics
 * per call, and its requests complete directly, request.c): entries count
 * themselves (kumi_lock_track, plus kumi_lock_free_gen, the entries the
 * engine's delay looks at).  The progress thread raises the flag when it
 * takes a schedule over while the application computes
 * (kumi_lock_engine_raise: the membarrier, then it backs off if a call
 * without the lock is inside), works under the lock like the checkpoint
 * thread (application calls from then on take it, and it parks while one
 * is inside), and lowers the flag, outside its own locked section, once the
 * application came back or no schedule runs.  The flag counts its raisers,
 * so a checkpoint and the engine each lower only their own. */
#define _GNU_SOURCE
#include "core/core.h"
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

struct kumi_lock_words kumi_lock_words;
_Thread_local int kumi_lock_free_depth __attribute__((tls_model("initial-exec")));
static int mb_cmd;                      /* the membarrier command of kumi_lock_ck_raise */
int kumi_engine_work;
static int big;                         /* the lock: 0 free, 1 held, 2 held and a thread may sleep on it
                                           (a futex word: a try is one compare-and-swap, a release one
                                           exchange, against pthread_mutex_trylock + _unlock's 58 instructions) */
static _Thread_local int depth __attribute__((tls_model("initial-exec")));     /* no __tls_get_addr per entry */
static int waiting;                     /* application threads blocked in big_lock() */
static _Thread_local bool is_engine __attribute__((tls_model("initial-exec")));   /* this thread is the progress thread */
static int engine_holds;                /* the engine holds big (atomic) */
static int app_in;                      /* application threads inside the library (atomic; futex word) */
static int engine_parked;               /* the engine waits for app_in == 0 (atomic) */
static int engine_kicked;               /* kumi_lock_engine_kick(): stop parking (atomic) */
static unsigned app_gen;                /* application entries into the library (atomic) */
static bool ck_up;                      /* the checkpoint thread raised kumi_lock_raised */
static bool engine_up;                  /* the engine raised it (kumi_lock_engine_raise) */

static void futex_wait(int *word, int val)
{
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake_all(int *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

static inline bool big_trylock(void)
{
    int z = 0;
    return __atomic_compare_exchange_n(&big, &z, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static void big_lock(void)
{
    if (big_trylock()) return;
    while (__atomic_exchange_n(&big, 2, __ATOMIC_ACQUIRE) != 0) futex_wait(&big, 2);
}

static inline void big_unlock(void)
{
    if (__atomic_exchange_n(&big, 0, __ATOMIC_RELEASE) == 2)
        syscall(SYS_futex, &big, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* The engine: wait until no application thread is inside and a schedule
 * runs (or a kick).  A parked engine is woken by the last application
 * thread out only while kumi_engine_work > 0: a schedule that starts in a
 * call wakes it at that call's end; one that ends inside a call (MPI_Wait)
 * costs no wake-up. */
static void engine_park(void)
{
    __atomic_store_n(&engine_parked, 1, __ATOMIC_SEQ_CST);
    for (;;) {
        int v = __atomic_load_n(&app_in, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&engine_kicked, __ATOMIC_ACQUIRE)) break;
        if (v == 0 && __atomic_load_n(&kumi_engine_work, __ATOMIC_SEQ_CST) > 0) break;
        futex_wait(&app_in, v);
    }
    __atomic_store_n(&engine_parked, 0, __ATOMIC_RELAXED);
}

/* The mutex is not fair: a thread that polls (MPI_Test in a loop) would take it
 * again before a waiter wakes up.  So a thread that leaves the library while
 * others wait for it yields once, and a waiter gets in. */
static void take(void)
{
    if (is_engine) {
        while (!big_trylock()) {
            if (__atomic_load_n(&app_in, __ATOMIC_SEQ_CST) > 0) engine_park();
            else sched_yield();
        }
        __atomic_store_n(&engine_holds, 1, __ATOMIC_RELAXED);
        return;
    }
    if (big_trylock()) return;
    while (__atomic_load_n(&engine_holds, __ATOMIC_RELAXED)) {
        sched_yield();
        if (big_trylock()) return;
    }
    __atomic_add_fetch(&waiting, 1, __ATOMIC_RELAXED);
    big_lock();
    __atomic_sub_fetch(&waiting, 1, __ATOMIC_RELAXED);
}

static void give(void)
{
    if (is_engine) {
        __atomic_store_n(&engine_holds, 0, __ATOMIC_RELAXED);
        big_unlock();
        return;
    }
    big_unlock();
    if (__atomic_load_n(&waiting, __ATOMIC_RELAXED) > 0) sched_yield();
}

/* free_in changes in the thread that is inside (one at a time) and is read
 * by the checkpoint thread */
static void free_in_add(int n)
{
    __atomic_store_n(&kumi_lock_free_in, __atomic_load_n(&kumi_lock_free_in, __ATOMIC_RELAXED) + n,
                     __ATOMIC_RELEASE);
}

void kumi_lock_slow(void)
{
    if (kumi_lock_free_depth > 0) {     /* nested in a call without the lock (kumi_mt switched on
                                           meanwhile): it stays without */
        free_in_add(1);
        kumi_lock_free_depth++;
        return;
    }
    if (depth++ == 0) {
        if (!is_engine) {
            __atomic_add_fetch(&app_in, 1, __ATOMIC_SEQ_CST);
            __atomic_add_fetch(&app_gen, 1, __ATOMIC_RELAXED);
        }
        take();
    }
}

void kumi_unlock_slow(void)
{
    if (depth == 0) return;             /* entered before the lock was on */
    if (--depth == 0) {
        give();
        if (!is_engine && __atomic_sub_fetch(&app_in, 1, __ATOMIC_SEQ_CST) == 0 &&
            __atomic_load_n(&engine_parked, __ATOMIC_SEQ_CST) &&
            __atomic_load_n(&kumi_engine_work, __ATOMIC_SEQ_CST) > 0)
            futex_wake_all(&app_in);        /* only when a schedule still runs: otherwise it
                                               stays parked until one does */
    }
}

/* Like kumi_lock_slow, but only if the lock is free now (an application
 * thread, not the engine): true when taken. */
bool kumi_lock_try(void)
{
    if (depth > 0) {
        depth++;
        return true;
    }
    __atomic_add_fetch(&app_in, 1, __ATOMIC_SEQ_CST);
    if (big_trylock()) {
        __atomic_add_fetch(&app_gen, 1, __ATOMIC_RELAXED);
        depth = 1;
        return true;
    }
    if (__atomic_sub_fetch(&app_in, 1, __ATOMIC_SEQ_CST) == 0 && __atomic_load_n(&engine_parked, __ATOMIC_SEQ_CST) &&
        __atomic_load_n(&kumi_engine_work, __ATOMIC_SEQ_CST) > 0)
        futex_wake_all(&app_in);
    return false;
}

/* Another application thread waits for the lock (a spinning holder lets it
 * in; otherwise it keeps the lock rather than release and retake it at every
 * round, two atomic operations and a cache line each time). */
bool kumi_lock_wanted(void)
{
    return __atomic_load_n(&waiting, __ATOMIC_RELAXED) > 0;
}

int kumi_lock_release_all(void)
{
    int d = depth;
    if (d) {
        depth = 0;
        give();
    }
    int f = kumi_lock_free_depth;
    if (f > 0 && __atomic_load_n(&kumi_lock_raised, __ATOMIC_ACQUIRE)) {
        /* a checkpoint waits for this call: it goes on under the lock, which
         * kumi_lock_reacquire takes (after the checkpoint) */
        if (d == 0 && !is_engine) {     /* as kumi_lock_slow would have counted it */
            __atomic_add_fetch(&app_in, 1, __ATOMIC_SEQ_CST);
            __atomic_add_fetch(&app_gen, 1, __ATOMIC_RELAXED);
        }
        kumi_lock_free_depth = 0;
        free_in_add(-f);
        d += f;
    }
    return d;
}

void kumi_lock_reacquire(int d)
{
    if (d) {
        take();
        depth = d;
    }
}

void kumi_lock_engine_enter(void)
{
    is_engine = true;
    __atomic_store_n(&engine_kicked, 0, __ATOMIC_RELEASE);
}

bool kumi_lock_is_engine(void)
{
    return is_engine;
}

bool kumi_lock_app_inside(void)
{
    return __atomic_load_n(&app_in, __ATOMIC_SEQ_CST) > 0 || __atomic_load_n(&kumi_lock_free_in, __ATOMIC_ACQUIRE) > 0;
}

unsigned kumi_lock_app_entries(void)
{
    return __atomic_load_n(&app_gen, __ATOMIC_RELAXED) + __atomic_load_n(&kumi_lock_free_gen, __ATOMIC_RELAXED);
}

void kumi_lock_engine_wait_app(void)
{
    if (__atomic_load_n(&app_in, __ATOMIC_SEQ_CST) > 0) engine_park();
}

void kumi_lock_engine_kick(void)
{
    __atomic_store_n(&engine_kicked, 1, __ATOMIC_RELEASE);
    futex_wake_all(&app_in);
}

/* ---- checkpoints (see the head of this file) ---- */

/* An entry that counted itself and found the flag raised. */
void kumi_lock_raised_entry(void)
{
    if (kumi_lock_free_depth > 1) return;   /* nested in this thread's own call without the lock */
    kumi_lock_free_depth = 0;
    free_in_add(-1);
    kumi_lock_slow();
}

static long membarrier(int cmd)
{
    return syscall(SYS_membarrier, cmd, 0, 0);
}

bool kumi_lock_ck_setup(void)
{
    long q = membarrier(MEMBARRIER_CMD_QUERY);
    if (q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
        membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
        membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        mb_cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED;
    else if (q > 0 && (q & MEMBARRIER_CMD_GLOBAL) && membarrier(MEMBARRIER_CMD_GLOBAL) == 0)
        mb_cmd = MEMBARRIER_CMD_GLOBAL;
    else
        return false;
    __atomic_store_n(&kumi_lock_track, true, __ATOMIC_SEQ_CST);
    return true;
}

/* kumi_lock_raised counts its raisers (the checkpoint thread, the engine):
 * each lowers only its own raise. */
static void raise_flag(void)
{
    __atomic_add_fetch(&kumi_lock_raised, 1, __ATOMIC_SEQ_CST);
    /* every thread passes a full barrier: one that counted itself before is
     * seen by kumi_lock_ck_inside, one that reads the flag after sees it */
    if (membarrier(mb_cmd) != 0 && mb_cmd != MEMBARRIER_CMD_GLOBAL) membarrier(MEMBARRIER_CMD_GLOBAL);
}

bool kumi_lock_ck_raise(void)
{
    if (!__atomic_load_n(&kumi_lock_track, __ATOMIC_SEQ_CST)) return false;
    if (!ck_up) {
        ck_up = true;
        raise_flag();
    } else if (membarrier(mb_cmd) != 0 && mb_cmd != MEMBARRIER_CMD_GLOBAL) {
        membarrier(MEMBARRIER_CMD_GLOBAL);
    }
    return true;
}

int kumi_lock_ck_inside(void)
{
    return __atomic_load_n(&kumi_lock_free_in, __ATOMIC_ACQUIRE);
}

void kumi_lock_ck_lower(void)
{
    if (ck_up) {
        ck_up = false;
        __atomic_sub_fetch(&kumi_lock_raised, 1, __ATOMIC_SEQ_CST);
    }
}

/* ---- the thread engine below MPI_THREAD_MULTIPLE (see the head of this file) ---- */

bool kumi_lock_engine_track(void)
{
    if (!__atomic_load_n(&kumi_lock_track, __ATOMIC_SEQ_CST) && !kumi_lock_ck_setup()) return false;
    return true;
}

bool kumi_lock_engine_raise(void)
{
    if (engine_up) return true;
    if (!__atomic_load_n(&kumi_lock_track, __ATOMIC_SEQ_CST)) return true;   /* the lock is on for good */
    raise_flag();
    engine_up = true;
    if (__atomic_load_n(&kumi_lock_free_in, __ATOMIC_ACQUIRE) > 0) {    /* a call without the lock runs */
        kumi_lock_engine_lower();
        return false;
    }
    return true;
}

void kumi_lock_engine_lower(void)
{
    if (!engine_up) return;
    engine_up = false;
    __atomic_sub_fetch(&kumi_lock_raised, 1, __ATOMIC_SEQ_CST);
}

bool kumi_lock_engine_raised(void)
{
    return engine_up;
}
