/* Engines that run schedules.
 *
 * loop (default): schedules advance inside MPI calls, like point-to-point
 *   traffic (sched.c: completion callbacks of the nodes' requests).
 * thread: the same, plus a progress thread that runs the progress engine
 *   while any schedule is active, so a collective advances while the
 *   application computes without calling MPI (LibNBC's way).  The thread
 *   sleeps in poll() on the transports' descriptors between events and on a
 *   condition variable while no schedule runs, so it costs CPU only when
 *   messages arrive.  The library lock (core/lock.c) is switched on for
 *   every thread level: the progress thread and the application share the
 *   library.
 *
 * Parameter kumi_base_sched_engine (KUMI_BASE_SCHED_ENGINE) = loop | thread. */
#include "sched/sched.h"
#include <kumi/param.h>
#include <pthread.h>
#include <string.h>

static const char *engine_name = "loop";
static bool use_thread;
static int active;                      /* schedules running (library lock) */
static pthread_t thr;
static bool thr_started;
static int thr_stop;                    /* atomic */
static pthread_mutex_t tmx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tcv = PTHREAD_COND_INITIALIZER;

void kumi_sched_register_params(void)
{
    kumi_param_register_string("kumi", "base", "sched_engine", "loop",
                               "What progresses non-blocking and persistent collectives: loop (inside "
                               "MPI calls) or thread (also a progress thread while one is active)",
                               KUMI_LEVEL_TUNER, &engine_name);
}

int kumi_sched_engine_init(void)
{
    active = 0;
    thr_stop = 0;
    if (!strcmp(engine_name, "loop")) {
        use_thread = false;
    } else if (!strcmp(engine_name, "thread")) {
        use_thread = true;
        kumi_mt = true;                 /* the progress thread shares the library */
    } else {
        return kumi_error(MPI_ERR_ARG, "parameter kumi_base_sched_engine = \"%s\": expected loop or thread",
                          engine_name);
    }
    return MPI_SUCCESS;
}

const char *kumi_sched_engine(void)
{
    return use_thread ? "thread" : "loop";
}

static bool idle(void)
{
    return __atomic_load_n(&active, __ATOMIC_ACQUIRE) == 0 && !__atomic_load_n(&thr_stop, __ATOMIC_ACQUIRE);
}

static void *engine_main(void *arg)
{
    (void)arg;
    kumi_lock_slow();
    while (!__atomic_load_n(&thr_stop, __ATOMIC_ACQUIRE)) {
        if (idle()) {
            int d = kumi_lock_release_all();
            pthread_mutex_lock(&tmx);
            while (idle()) pthread_cond_wait(&tcv, &tmx);
            pthread_mutex_unlock(&tmx);
            kumi_lock_reacquire(d);
            continue;
        }
        kumi_progress(1);               /* polls; sleeps in poll() (lock released) when idle */
        kumi_lock_reacquire(kumi_lock_release_all());   /* let waiting application threads in */
    }
    kumi_unlock_slow();
    return NULL;
}

void kumi_sched_engine_started(void)
{
    __atomic_add_fetch(&active, 1, __ATOMIC_RELEASE);
    if (!use_thread) return;
    if (!thr_started) {
        if (pthread_create(&thr, NULL, engine_main, NULL) != 0) {
            kumi_warn("kumi_base_sched_engine=thread: cannot start the progress thread; collectives "
                      "progress inside MPI calls only");
            use_thread = false;
            return;
        }
        thr_started = true;
    }
    pthread_mutex_lock(&tmx);
    pthread_cond_signal(&tcv);
    pthread_mutex_unlock(&tmx);
}

void kumi_sched_engine_finished(void)
{
    __atomic_sub_fetch(&active, 1, __ATOMIC_RELEASE);
}

void kumi_sched_engine_stop(void)
{
    if (!thr_started) return;
    __atomic_store_n(&thr_stop, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&tmx);
    pthread_cond_signal(&tcv);
    pthread_mutex_unlock(&tmx);
    kumi_progress_wake();               /* out of poll() at once */
    int d = kumi_lock_release_all();
    pthread_join(thr, NULL);
    kumi_lock_reacquire(d);
    thr_started = false;
}
