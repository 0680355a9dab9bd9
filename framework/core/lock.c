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

bool kumi_mt;
static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int depth;

void kumi_lock_slow(void)
{
    if (depth++ == 0) pthread_mutex_lock(&big);
}

void kumi_unlock_slow(void)
{
    if (--depth == 0) pthread_mutex_unlock(&big);
}

int kumi_lock_release_all(void)
{
    int d = depth;
    if (d) {
        depth = 0;
        pthread_mutex_unlock(&big);
    }
    return d;
}

void kumi_lock_reacquire(int d)
{
    if (d) {
        pthread_mutex_lock(&big);
        depth = d;
    }
}
