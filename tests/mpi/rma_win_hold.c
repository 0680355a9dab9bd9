/* rma_win_hold: a shared window made after a pause, for
 * tests/scripts/rma_win_names.sh.
 *
 *   rma_win_hold DIR
 *
 * After MPI_Init rank 0 writes DIR/ready ("jobid <KUMI_JOBID>", then
 * "pid <rank> <pid>" per rank) and every rank waits (rank 0 looks, at most
 * 120 s) for the file DIR/go.  Then, with MPI_ERRORS_RETURN on
 * MPI_COMM_WORLD, MPI_Win_allocate_shared of 4 KiB per rank.  Success:
 * every rank writes its part, each rank reads every part through
 * MPI_Win_shared_query, and rank 0 prints "window ok".  Failure: every rank
 * must fail (an allreduce checks it) and rank 0 prints "window error: "
 * and MPI_Error_string's text.  The exit status is 0 in both cases. */
#include "kt_hold.h"
#include <time.h>
#include <unistd.h>

#define PART 4096

int main(int argc, char **argv)
{
    int rank, size, go = 0;
    char path[4096];
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(argc == 2, "usage: rma_win_hold DIR");
    kt_hold_ready(argv[1]);
    if (rank == 0) {
        snprintf(path, sizeof path, "%s/go", argv[1]);
        for (int i = 0; i < 1200 && !go; i++) {
            if (access(path, F_OK) == 0) go = 1;
            else usleep(100000);
        }
    }
    KT_MPI(MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD));
    KT_CHECK(go, "DIR/go did not appear within 120 s");

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char *base = NULL;
    MPI_Win win = MPI_WIN_NULL;
    int rc = MPI_Win_allocate_shared(PART, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    int failed = rc != MPI_SUCCESS, nfailed = 0;
    KT_MPI(MPI_Allreduce(&failed, &nfailed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    KT_CHECK(nfailed == 0 || nfailed == size, "%d of %d ranks failed to make the window", nfailed, size);
    if (failed) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        if (rank == 0) printf("window error: %s\n", msg);
    } else {
        for (int i = 0; i < PART; i++) base[i] = (char)(rank * 13 + i);
        KT_MPI(MPI_Win_fence(0, win));
        for (int r = 0; r < size; r++) {
            MPI_Aint sz;
            int du;
            char *p;
            KT_MPI(MPI_Win_shared_query(win, r, &sz, &du, &p));
            KT_CHECK(sz == PART, "rank %d's part has %ld bytes", r, (long)sz);
            for (int i = 0; i < PART; i++)
                KT_CHECK(p[i] == (char)(r * 13 + i), "rank %d's byte %d is wrong", r, i);
        }
        KT_MPI(MPI_Win_fence(0, win));
        KT_MPI(MPI_Win_free(&win));
        if (rank == 0) printf("window ok\n");
    }
    KT_MPI(MPI_Finalize());
    return 0;
}
