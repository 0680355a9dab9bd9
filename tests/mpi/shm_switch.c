/* p2p/shmem: the switch between the ring and CMA follows the machine's
 * state (p2p_shmem_cma_adapt): a receiver that finds its copies out of a
 * sender's ring slow tells that sender, which then pulls messages from a
 * lower size (p2p_shmem_cma_min_slow), sending one in P2P_SHMEM_SW_PROBE
 * through the ring still (the receiver keeps timing it).
 *
 * Two ranks ping-pong NMSG messages of SIZE bytes, each checked byte for
 * byte; SIZE is below the start-up switch (p2p_shmem_cma_min_effective:
 * sent eagerly through the ring at first) and at least cma_min_slow (the
 * list sets 8193).  Each rank counts its sends by rendezvous
 * (p2p_rendezvous_sends):
 *   "slow" (the list sets p2p_shmem_cma_adapt_slow so low that any copy is
 *          slow): the first EARLY sends all eager (no verdict before a window
 *          of timed copies), at least 80 % of the last LATE by rendezvous,
 *          and not all of them (the probes);
 *   "off"  (p2p_shmem_cma_adapt=0, or a p2p_shmem_cma_min set without
 *          p2p_shmem_cma_adapt: the same low mark): every send eager.
 * The list sets p2p_shmem_cma_min 65536 (the switch then does not hang on
 * the start-up measurement; "slow" sets p2p_shmem_cma_adapt=1 to keep it
 * on).  Skipped where nothing is pulled (no CMA) or where the switch is at
 * SIZE or below.  Ranks beyond 2 only take part in the barriers. */
#include "kt.h"

#define SIZE ((size_t)16384)
#define NMSG 320
#define EARLY 16
#define LATE 96

static unsigned char val(int dir, int k, size_t i) { return (unsigned char)(dir * 101 + k * 7 + i * 13 + (i >> 10)); }

int main(int argc, char **argv)
{
    int rank, size, prov, idx, count, slow;
    unsigned long cma_min = 0;
    char status[1024] = "";
    MPI_T_cvar_handle h;
    MPI_T_pvar_session ses;
    MPI_T_pvar_handle rndv;
    unsigned long long rv0 = 0, rv_early = 0, rv_late0 = 0, rv_end = 0;
    KT_MPI(MPI_Init(&argc, &argv));
    KT_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &prov));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "run with 2 ranks or more");
    KT_CHECK(argc == 2 && (!strcmp(argv[1], "slow") || !strcmp(argv[1], "off")), "usage: shm_switch slow|off");
    slow = !strcmp(argv[1], "slow");
    KT_MPI(MPI_T_cvar_get_index("p2p_shmem_cma_min_effective", &idx));
    KT_MPI(MPI_T_cvar_handle_alloc(idx, NULL, &h, &count));
    KT_MPI(MPI_T_cvar_read(h, &cma_min));
    KT_MPI(MPI_T_cvar_handle_free(&h));
    KT_MPI(MPI_T_cvar_get_index("p2p_shmem_cma_status", &idx));
    KT_MPI(MPI_T_cvar_handle_alloc(idx, NULL, &h, &count));
    KT_CHECK(count <= (int)sizeof status);
    KT_MPI(MPI_T_cvar_read(h, status));
    KT_MPI(MPI_T_cvar_handle_free(&h));
    int ok = strncmp(status, "single copy", 11) == 0 && cma_min > SIZE, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (rank == 0) printf("skipped: p2p_shmem_cma_status \"%s\", cma_min %lu (nothing to switch at %zu B)\n",
                              status, cma_min, SIZE);
        MPI_T_finalize();
        MPI_Finalize();
        return 77;
    }
    KT_MPI(MPI_T_pvar_session_create(&ses));
    KT_MPI(MPI_T_pvar_get_index("p2p_rendezvous_sends", MPI_T_PVAR_CLASS_COUNTER, &idx));
    KT_MPI(MPI_T_pvar_handle_alloc(ses, idx, NULL, &rndv, &count));
    KT_MPI(MPI_T_pvar_start(ses, rndv));

    unsigned char *sb = malloc(SIZE), *rb = malloc(SIZE);
    KT_CHECK(sb && rb);
    MPI_Barrier(MPI_COMM_WORLD);
    KT_MPI(MPI_T_pvar_read(ses, rndv, &rv0));
    if (rank < 2) {
        int peer = 1 - rank;
        for (int k = 0; k < NMSG; k++) {
            if (k == EARLY) KT_MPI(MPI_T_pvar_read(ses, rndv, &rv_early));
            if (k == NMSG - LATE) KT_MPI(MPI_T_pvar_read(ses, rndv, &rv_late0));
            for (int turn = 0; turn < 2; turn++) {
                if (turn == rank) {
                    for (size_t i = 0; i < SIZE; i++) sb[i] = val(rank, k, i);
                    KT_MPI(MPI_Send(sb, (int)SIZE, MPI_BYTE, peer, 5, MPI_COMM_WORLD));
                } else {
                    memset(rb, 0, SIZE);
                    KT_MPI(MPI_Recv(rb, (int)SIZE, MPI_BYTE, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                    for (size_t i = 0; i < SIZE; i++)
                        KT_CHECK(rb[i] == val(peer, k, i), "message %d from rank %d: byte %zu is %u, not %u", k,
                                 peer, i, rb[i], val(peer, k, i));
                }
            }
        }
        KT_MPI(MPI_T_pvar_read(ses, rndv, &rv_end));
        printf("rank %d: %d sends of %zu B (start-up switch %lu): rendezvous %llu of the first %d, %llu of the "
               "last %d\n", rank, NMSG, SIZE, cma_min, rv_early - rv0, EARLY, rv_end - rv_late0, LATE);
        KT_CHECK(rv_early == rv0, "rank %d: %llu of the first %d sends by rendezvous (before any verdict)", rank,
                 rv_early - rv0, EARLY);
        if (slow) {
            KT_CHECK(rv_end - rv_late0 >= LATE * 8 / 10, "rank %d: only %llu of the last %d sends pulled after a "
                     "slow verdict", rank, rv_end - rv_late0, LATE);
            /* one in 32 still through the ring (the probe that lets the receiver see the state change back) */
            KT_CHECK(rv_end - rv_late0 < LATE, "rank %d: all of the last %d sends pulled: no probe through the ring",
                     rank, LATE);
        } else {
            KT_CHECK(rv_end == rv0, "rank %d: %llu sends by rendezvous with the switch off", rank, rv_end - rv0);
        }
    }
    free(sb);
    free(rb);
    MPI_Barrier(MPI_COMM_WORLD);
    KT_MPI(MPI_T_pvar_handle_free(ses, &rndv));
    KT_MPI(MPI_T_pvar_session_free(&ses));
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
