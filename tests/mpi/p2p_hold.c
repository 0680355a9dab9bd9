/* p2p_hold: keeps a job alive and talking for the job-boundary scripts
 * (tests/scripts/p2p_shm_names.sh, p2p_tcp_auth.sh, p2p_tcp_listen.sh).
 *
 *   p2p_hold DIR
 *
 * After MPI_Init rank 0 writes DIR/ready: "jobid <KUMI_JOBID>" and one line
 * "pid <rank> <pid>" per rank.  Then every rank exchanges messages with every
 * other (a 1 KiB eager one and a 200 KiB rendezvous one, contents checked)
 * round after round until the file DIR/go appears (rank 0 looks and tells
 * the others), at most 120 s.  Rank 0 prints "ok <rounds>". */
#include "kt_hold.h"
#include <time.h>
#include <unistd.h>

#define SMALL 1024
#define LARGE (200 * 1024)

static void fill(unsigned char *b, size_t n, int from, int to, int round)
{
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(i * 31 + from * 7 + to * 3 + round);
}

int main(int argc, char **argv)
{
    int rank, size, go = 0, round = 0;
    char path[4096];
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(argc == 2, "usage: p2p_hold DIR");
    kt_hold_ready(argv[1]);
    snprintf(path, sizeof path, "%s/go", argv[1]);
    unsigned char *sbuf = malloc(LARGE), *rbuf = malloc(LARGE), *want = malloc(LARGE);
    MPI_Request *req = malloc(4 * (size_t)size * sizeof *req);
    unsigned char **sb = malloc((size_t)size * sizeof *sb), **rb = malloc((size_t)size * sizeof *rb);
    for (int r = 0; r < size; r++) {
        sb[r] = malloc(LARGE);
        rb[r] = malloc(LARGE);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!go) {
        int n = 0;
        for (int r = 0; r < size; r++) {
            if (r == rank) continue;
            fill(sb[r], LARGE, rank, r, round);
            KT_MPI(MPI_Irecv(rb[r], SMALL, MPI_BYTE, r, 1, MPI_COMM_WORLD, &req[n++]));
            KT_MPI(MPI_Isend(sb[r], SMALL, MPI_BYTE, r, 1, MPI_COMM_WORLD, &req[n++]));
        }
        KT_MPI(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
        for (int r = 0; r < size; r++) {
            if (r == rank) continue;
            fill(want, SMALL, r, rank, round);
            KT_CHECK(memcmp(rb[r], want, SMALL) == 0, "round %d: 1 KiB message from rank %d is wrong", round, r);
        }
        n = 0;
        for (int r = 0; r < size; r++) {
            if (r == rank) continue;
            KT_MPI(MPI_Irecv(rb[r], LARGE, MPI_BYTE, r, 2, MPI_COMM_WORLD, &req[n++]));
            KT_MPI(MPI_Isend(sb[r], LARGE, MPI_BYTE, r, 2, MPI_COMM_WORLD, &req[n++]));
        }
        KT_MPI(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
        for (int r = 0; r < size; r++) {
            if (r == rank) continue;
            fill(want, LARGE, r, rank, round);
            KT_CHECK(memcmp(rb[r], want, LARGE) == 0, "round %d: 200 KiB message from rank %d is wrong", round, r);
        }
        if (rank == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            go = access(path, F_OK) == 0 || (t1.tv_sec - t0.tv_sec) > 120;
        }
        KT_MPI(MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD));
        round++;
        if (!go) usleep(20000);
    }
    if (rank == 0) printf("ok %d\n", round);
    for (int r = 0; r < size; r++) {
        free(sb[r]);
        free(rb[r]);
    }
    free(sb); free(rb); free(req); free(sbuf); free(rbuf); free(want);
    KT_MPI(MPI_Finalize());
    return 0;
}
