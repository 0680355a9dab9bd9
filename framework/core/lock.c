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
 *    and retakes at every spin of a blocking wait). */
#define _GNU_SOURCE
#include "core/core.h"
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

bool kumi_mt;
int kumi_engine_work;
static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int depth;
static int waiting;                     /* application threads blocked in pthread_mutex_lock(&big) */
static _Thread_local bool is_engine;    /* this thread is the progress thread */
static int engine_holds;                /* the engine holds big (atomic) */
static int app_in;                      /* application threads inside the library (atomic; futex word) */
static int engine_parked;               /* the engine waits for app_in == 0 (atomic) */
static int engine_kicked;               /* kumi_lock_engine_kick(): stop parking (atomic) */
static unsigned app_gen;                /* application entries into the library (atomic) */

static void futex_wait(int *word, int val)
{
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake_all(int *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
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
        while (pthread_mutex_trylock(&big) != 0) {
            if (__atomic_load_n(&app_in, __ATOMIC_SEQ_CST) > 0) engine_park();
            else sched_yield();
        }
        __atomic_store_n(&engine_holds, 1, __ATOMIC_RELAXED);
        return;
    }
    if (pthread_mutex_trylock(&big) == 0) return;
    while (__atomic_load_n(&engine_holds, __ATOMIC_RELAXED)) {
        sched_yield();
        if (pthread_mutex_trylock(&big) == 0) return;
    }
    __atomic_add_fetch(&waiting, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&big);
    __atomic_sub_fetch(&waiting, 1, __ATOMIC_RELAXED);
}

static void give(void)
{
    if (is_engine) {
        __atomic_store_n(&engine_holds, 0, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&big);
        return;
    }
    pthread_mutex_unlock(&big);
    if (__atomic_load_n(&waiting, __ATOMIC_RELAXED) > 0) sched_yield();
}

void kumi_lock_slow(void)
{
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
    if (pthread_mutex_trylock(&big) == 0) {
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
    return __atomic_load_n(&app_in, __ATOMIC_SEQ_CST) > 0;
}

unsigned kumi_lock_app_entries(void)
{
    return __atomic_load_n(&app_gen, __ATOMIC_RELAXED);
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
