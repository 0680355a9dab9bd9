/* bind_shm: each rank creates a shared-memory object named by the job's
 * naming rule, /kumi.<KUMI_JOBID>.bindtest.<rank>, plus (rank 0) one that
 * only looks alike, /kumi.<KUMI_JOBID>0.bindtest (another job's), then:
 *   ok      MPI_Finalize and exit 0
 *   abort   rank 1 calls MPI_Abort(MPI_COMM_WORLD, 3), the others block
 *   exit    rank 1 exits 2 without MPI_Finalize, the others block
 *   block   every rank blocks in MPI_Recv (the test kills one, or mpiexec)
 * Before that, each rank prints "ready RANK PID JOBID" on stdout.
 * Used by tests/scripts/bind_cleanup.sh, which checks what is left in
 * /dev/shm. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kt.h"

static void make_shm(const char *name)
{
    int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
    KT_CHECK(fd >= 0, "shm_open %s", name);
    KT_CHECK(ftruncate(fd, 4096) == 0, "ftruncate %s", name);
    close(fd);
    char path[256];
    snprintf(path, sizeof path, "/dev/shm%s", name);
    KT_CHECK(access(path, F_OK) == 0, "%s does not exist", path);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ok";
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    KT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    KT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    const char *jobid = getenv("KUMI_JOBID");
    KT_CHECK(jobid && jobid[0], "KUMI_JOBID is not set");
    char name[128];
    snprintf(name, sizeof name, "/kumi.%s.bindtest.%d", jobid, rank);
    make_shm(name);
    if (rank == 0) {
        snprintf(name, sizeof name, "/kumi.%s0.bindtest", jobid);
        make_shm(name);
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    printf("ready %d %d %s\n", rank, (int)getpid(), jobid);
    fflush(stdout);
    if (!strcmp(mode, "ok")) {
        KT_MPI(MPI_Finalize());
        return 0;
    }
    if (rank == 1 && !strcmp(mode, "abort")) MPI_Abort(MPI_COMM_WORLD, 3);
    if (rank == 1 && !strcmp(mode, "exit")) exit(2);
    int x;
    MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    KT_FAIL("MPI_Recv returned");
}
