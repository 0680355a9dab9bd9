/* MPI_T is thread safe (MPI 4.1 sec. 15.3.4): at MPI_THREAD_MULTIPLE one
 * thread reads performance variables, enumerates control variables and
 * categories and registers and frees event callbacks while another
 * exchanges messages (which may raise the events under the library lock);
 * nothing deadlocks and the messages arrive intact.  -n 2. */
#include "kt.h"
#include <pthread.h>

#define ROUNDS 300
static volatile int done;
static int events;
static long iters;                      /* rounds of the tool thread */

static void cb(MPI_T_event_instance in, MPI_T_event_registration reg, MPI_T_cb_safety s, void *ud)
{
    (void)in; (void)reg; (void)s; (void)ud;
    __atomic_add_fetch(&events, 1, __ATOMIC_RELAXED);
}

static void *tool(void *arg)
{
    (void)arg;
    MPI_T_pvar_session ses;
    MPI_T_pvar_handle h, hc;
    int i, count, ev, n;
    KT_MPI(MPI_T_pvar_session_create(&ses));
    KT_MPI(MPI_T_pvar_get_index("p2p_unexpected_queue_length", MPI_T_PVAR_CLASS_LEVEL, &i));
    KT_MPI(MPI_T_pvar_handle_alloc(ses, i, NULL, &h, &count));
    MPI_Comm world = MPI_COMM_WORLD;
    KT_MPI(MPI_T_pvar_get_index("p2p_comm_posted_queue_length", MPI_T_PVAR_CLASS_LEVEL, &i));
    KT_MPI(MPI_T_pvar_handle_alloc(ses, i, &world, &hc, &count));
    KT_MPI(MPI_T_event_get_index("p2p_unexpected_message", &ev));
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        unsigned long long v;
        KT_MPI(MPI_T_pvar_read(ses, h, &v));
        KT_MPI(MPI_T_pvar_read(ses, hc, &v));
        KT_CHECK(v < 1000, "posted queue length %llu", v);
        KT_MPI(MPI_T_cvar_get_num(&n));
        KT_MPI(MPI_T_category_get_num(&n));
        MPI_T_event_registration reg;
        KT_MPI(MPI_T_event_handle_alloc(ev, &world, MPI_INFO_NULL, &reg));
        KT_MPI(MPI_T_event_register_callback(reg, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_INFO_NULL, NULL, cb));
        KT_MPI(MPI_T_event_handle_free(reg, NULL, NULL));
        __atomic_add_fetch(&iters, 1, __ATOMIC_RELAXED);
    }
    KT_MPI(MPI_T_pvar_session_free(&ses));
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, tprov;
    KT_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    if (provided < MPI_THREAD_MULTIPLE) {
        printf("SKIP: no MPI_THREAD_MULTIPLE\n");
        MPI_Finalize();
        return 0;
    }
    KT_MPI(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &tprov));
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    pthread_t t;
    KT_CHECK(pthread_create(&t, NULL, tool, NULL) == 0, "pthread_create");
    /* ROUNDS round trips at least, and on until both tool threads have run a while */
    int peer = 1 - rank, more = 1;
    for (int k = 0; more; k++) {
        int mine[2] = { k, k < ROUNDS - 1 || __atomic_load_n(&iters, __ATOMIC_RELAXED) < 20 }, got[2] = { -1, 0 };
        if (rank == 0) {
            KT_MPI(MPI_Send(mine, 2, MPI_INT, peer, 1, MPI_COMM_WORLD));
            KT_MPI(MPI_Recv(got, 2, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        } else {
            KT_MPI(MPI_Recv(got, 2, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            KT_MPI(MPI_Send(mine, 2, MPI_INT, peer, 1, MPI_COMM_WORLD));
        }
        KT_EQ_INT(got[0], k);
        more = mine[1] || got[1];
    }
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    KT_MPI(MPI_T_finalize());
    KT_MPI(MPI_Finalize());
    if (rank == 0) printf("mpit_threads: ok (%d events seen)\n", events);
    return 0;
}
