/* The program of tests/scripts/ckpt_lock.sh: the cost of MPI calls in a job
 * with checkpoints enabled but none requested (issue 20: no slowdown).
 * ckpt_calls_loop makes N rounds of cheap calls (MPI_Comm_rank, an
 * MPI_Iprobe that finds nothing, MPI_Type_size), which the script counts in
 * instructions with valgrind's callgrind (--toggle-collect) with and
 * without mpiexec --ckpt.
 *   ckpt_calls [N]   (default 20000) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int ckpt_calls_loop(long n)
{
    int r = 0, flag = 0, sz = 0, sum = 0;
    MPI_Status st;
    for (long i = 0; i < n; i++) {
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_SELF, &flag, &st);
        MPI_Type_size(MPI_DOUBLE, &sz);
        sum += r + flag + sz;
    }
    return sum;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long n = argc > 1 ? atol(argv[1]) : 20000;
    int s = ckpt_calls_loop(n);
    MPI_Finalize();
    printf("done %d\n", s);
    return s == (int)(n * 8) || n == 0 ? 0 : 1;
}
