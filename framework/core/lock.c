/* The library lock for MPI_THREAD_MULTIPLE.
 *
 * One mutex around the library: every generated entry point takes it when
 * the thread level is MPI_THREAD_MULTIPLE (kumi_mt), so single-threaded
 * programs pay one predictable branch.  A per-thread depth makes it
 * re-entrant (a user error handler or reduction that calls MPI), and a
 * blocking wait releases it completely while it yields or sleeps, so other
 * threads progress their own communication meanwhile. */
#include "core/core.h"
#include <pthread.h>
#include <sched.h>

bool kumi_mt;
static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int depth;
static int waiting;                     /* threads blocked in pthread_mutex_lock(&big) */

/* The mutex is not fair: a thread that polls (MPI_Test in a loop) would take it
 * again before a waiter wakes up.  So a thread that leaves the library while
 * others wait for it yields once, and a waiter gets in. */
static void take(void)
{
    if (pthread_mutex_trylock(&big) == 0) return;
    __atomic_add_fetch(&waiting, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&big);
    __atomic_sub_fetch(&waiting, 1, __ATOMIC_RELAXED);
}

static void give(void)
{
    pthread_mutex_unlock(&big);
    if (__atomic_load_n(&waiting, __ATOMIC_RELAXED) > 0) sched_yield();
}

void kumi_lock_slow(void)
{
    if (depth++ == 0) take();
}

void kumi_unlock_slow(void)
{
    if (--depth == 0) give();
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
