/* p2p/shmem: a rendezvous the receiver pulls (CMA) is read in the MPI call
 * that asks for it, not at the receiver's next call.  The transport keeps
 * the pulls of one pass to read them with one system call (p2p contract
 * 1.10, pull_flush); they must still be read before that call returns, or a
 * sender whose receiver computes after its MPI_Irecv waits for the
 * receiver to come back (loop engine: nothing else progresses).
 *
 * Rank 0 sends message A (MSG bytes, pulled) then a small message B and
 * waits for A; rank 1 in each round:
 *   round 0: MPI_Probe for B (so A, sent before it, waits unexpected),
 *            MPI_Irecv(A): the pull is asked for inside MPI_Irecv;
 *   round 1: MPI_Irecv(A) posted before rank 0 sends, then MPI_Probe for B
 *            (A's RTS is matched during the Probe's progress: the pull is
 *            asked for there; it must be read before the Probe returns,
 *            when A's RTS and B come in the same round);
 *   round 2: three messages A0..A2 waiting unexpected, three MPI_Irecvs;
 * then computes for SLEEP seconds without calling MPI.  Rank 0's wait must
 * end before rank 1 comes back (CLOCK_MONOTONIC, one clock on a host);
 * the data is checked.  Ranks beyond 2 only take part in the barriers. */
#include "kt.h"
#include <unistd.h>

#define MSG ((size_t)100000)   /* pulled (the list sets cma_min), under the bytes that make the transport read at once */
#define NA 3
#define SLEEP 1.5

static unsigned char val(int round, int k, size_t i) { return (unsigned char)(round * 31 + k * 7 + i * 13 + (i >> 12)); }

static void cvar_string(const char *name, char *out, size_t cap)
{
    int idx, count;
    MPI_T_cvar_handle h;
    out[0] = 0;
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS) return;
    KT_MPI(MPI_T_cvar_handle_alloc(idx, NULL, &h, &count));
    KT_CHECK(count <= (int)cap);
    KT_MPI(MPI_T_cvar_read(h, out));
    KT_MPI(MPI_T_cvar_handle_free(&h));
}

int main(int argc, char **argv)
{
    int rank, size, prov;
    char status[1024];
    unsigned long cma_min = 0;
    KT_MPI(MPI_Init(&argc, &argv));
    KT_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &prov));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "run with 2 ranks or more");
    {
        int idx, count;
        MPI_T_cvar_handle h;
        KT_MPI(MPI_T_cvar_get_index("p2p_shmem_cma_min_effective", &idx));
        KT_MPI(MPI_T_cvar_handle_alloc(idx, NULL, &h, &count));
        KT_MPI(MPI_T_cvar_read(h, &cma_min));
        KT_MPI(MPI_T_cvar_handle_free(&h));
    }
    cvar_string("p2p_shmem_cma_status", status, sizeof status);
    int pulls = strncmp(status, "single copy", 11) == 0 && cma_min && cma_min <= MSG;
    int all = 0;
    MPI_Allreduce(&pulls, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (rank == 0) printf("skipped: nothing pulled here (p2p_shmem_cma_status \"%s\", cma_min %lu)\n", status, cma_min);
        MPI_T_finalize();
        MPI_Finalize();
        return 77;
    }

    unsigned char *buf[NA];
    for (int k = 0; k < NA; k++) KT_CHECK((buf[k] = malloc(MSG)) != NULL);
    for (int round = 0; round < 3; round++) {
        int na = round == 2 ? NA : 1;
        double t[2] = { 0, 0 };          /* rank 0: its wait ended; rank 1: it came back */
        MPI_Request rq[NA];
        for (int k = 0; k < NA; k++) rq[k] = MPI_REQUEST_NULL;
        MPI_Barrier(MPI_COMM_WORLD);
        if (round == 1) {                              /* rank 1's receive posted before rank 0 sends */
            if (rank == 1) {
                memset(buf[0], 0, MSG);
                KT_MPI(MPI_Irecv(buf[0], (int)MSG, MPI_BYTE, 0, 10, MPI_COMM_WORLD, &rq[0]));
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (rank == 0) {
            int b = round;
            for (int k = 0; k < na; k++) {
                for (size_t i = 0; i < MSG; i++) buf[k][i] = val(round, k, i);
                KT_MPI(MPI_Isend(buf[k], (int)MSG, MPI_BYTE, 1, 10 + k, MPI_COMM_WORLD, &rq[k]));
            }
            KT_MPI(MPI_Send(&b, 1, MPI_INT, 1, 99, MPI_COMM_WORLD));
            KT_MPI(MPI_Waitall(na, rq, MPI_STATUSES_IGNORE));
            t[0] = kt_now();
            KT_MPI(MPI_Recv(&t[1], 1, MPI_DOUBLE, 1, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            KT_CHECK(t[0] < t[1] - 0.5,
                     "round %d: rank 0's wait for %d pulled message%s ended %.3f s after rank 1 came back to MPI "
                     "(the pull waited for its next call)", round, na, na > 1 ? "s" : "", t[0] - t[1]);
        } else if (rank == 1) {
            MPI_Status st;
            int b = -1;
            KT_MPI(MPI_Probe(0, 99, MPI_COMM_WORLD, &st));       /* B comes after every A */
            if (round != 1) {                                    /* the As wait unexpected */
                for (int k = 0; k < na; k++) {
                    memset(buf[k], 0, MSG);
                    KT_MPI(MPI_Irecv(buf[k], (int)MSG, MPI_BYTE, 0, 10 + k, MPI_COMM_WORLD, &rq[k]));
                }
            }
            double t0 = kt_now();
            while (kt_now() < t0 + SLEEP) usleep(10000);  /* the computation: no MPI call */
            t[1] = kt_now();
            KT_MPI(MPI_Recv(&b, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            KT_CHECK(b == round, "round %d: message B says %d", round, b);
            KT_MPI(MPI_Waitall(na, rq, MPI_STATUSES_IGNORE));
            for (int k = 0; k < na; k++)
                for (size_t i = 0; i < MSG; i++)
                    KT_CHECK(buf[k][i] == val(round, k, i), "round %d: message %d byte %zu is %u, not %u", round, k,
                             i, buf[k][i], val(round, k, i));
            KT_MPI(MPI_Send(&t[1], 1, MPI_DOUBLE, 0, 98, MPI_COMM_WORLD));
        }
    }
    for (int k = 0; k < NA; k++) free(buf[k]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("shm_pull_now: %d ranks, pulls read in the call that asked for them\n", size);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
