/* kt_hold.h: the "ready" handshake of the programs that the job-boundary
 * scripts probe while they run (p2p_hold, rma_win_hold).
 *
 * kt_hold_ready(dir): collective over MPI_COMM_WORLD.  Rank 0 writes
 * DIR/ready atomically (written as DIR/ready.tmp, then renamed): a line
 * "jobid <KUMI_JOBID>" and one line "pid <rank> <pid>" per rank, so the
 * script can read the ranks' /proc entries. */
#ifndef KT_HOLD_H
#define KT_HOLD_H
#include "kt.h"
#include <unistd.h>

static void kt_hold_ready(const char *dir)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int pid = (int)getpid(), *pids = malloc((size_t)size * sizeof *pids);
    KT_CHECK(pids != NULL, "out of memory");
    KT_MPI(MPI_Gather(&pid, 1, MPI_INT, pids, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        char tmp[4096], path[4096];
        snprintf(tmp, sizeof tmp, "%s/ready.tmp", dir);
        snprintf(path, sizeof path, "%s/ready", dir);
        FILE *f = fopen(tmp, "w");
        KT_CHECK(f != NULL, "cannot write %s", tmp);
        const char *job = getenv("KUMI_JOBID");
        fprintf(f, "jobid %s\n", job ? job : "?");
        for (int r = 0; r < size; r++) fprintf(f, "pid %d %d\n", r, pids[r]);
        fclose(f);
        KT_CHECK(rename(tmp, path) == 0, "rename %s", tmp);
    }
    free(pids);
}
#endif
