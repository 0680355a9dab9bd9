/* Memory allocation kinds (MPI-4.1 12.4.3, info key mpi_memory_alloc_kinds).
 *
 *   memkinds [EXPECTED]     (default "mpi,system")
 *
 * EXPECTED is what the World Model must answer: MPI_Comm_get_info on
 * MPI_COMM_WORLD and on a duplicate, and MPI_Win_get_info.  A hint
 * mpi_assert_memory_alloc_kinds given to a communicator comes back unchanged.
 * A session asking for "cuda:device, system,mpi:alloc_mem,mpi:bogus,system"
 * gets "system,mpi:alloc_mem" (Kumi has no accelerator memory); a session
 * that asks nothing gets EXPECTED as well. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs, rank;

static void expect(MPI_Info info, const char *key, const char *want, const char *what)
{
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    MPI_Info_get(info, key, MPI_MAX_INFO_VAL, v, &flag);
    if (!flag) {
        errs++;
        fprintf(stderr, "rank %d: %s: no %s\n", rank, what, key);
    } else if (strcmp(v, want)) {
        errs++;
        fprintf(stderr, "rank %d: %s: %s is \"%s\", expected \"%s\"\n", rank, what, key, v, want);
    }
}

int main(int argc, char **argv)
{
    const char *want = argc > 1 ? argv[1] : "mpi,system";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Info info;
    MPI_Comm_get_info(MPI_COMM_WORLD, &info);
    expect(info, "mpi_memory_alloc_kinds", want, "MPI_COMM_WORLD");
    MPI_Info_free(&info);

    MPI_Info hint;
    MPI_Info_create(&hint);
    MPI_Info_set(hint, "mpi_assert_memory_alloc_kinds", "system");
    MPI_Comm dup;
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, hint, &dup);
    MPI_Comm_get_info(dup, &info);
    expect(info, "mpi_memory_alloc_kinds", want, "a duplicate");
    expect(info, "mpi_assert_memory_alloc_kinds", "system", "a duplicate");
    MPI_Info_free(&info);
    MPI_Comm_free(&dup);
    MPI_Info_free(&hint);

    MPI_Win win;
    void *base;
    MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_get_info(win, &info);
    expect(info, "mpi_memory_alloc_kinds", want, "a window");
    MPI_Info_free(&info);
    MPI_Win_free(&win);

    MPI_Session s;
    MPI_Info ask;
    MPI_Info_create(&ask);
    MPI_Info_set(ask, "mpi_memory_alloc_kinds", "cuda:device, system,mpi:alloc_mem,mpi:bogus,system");
    MPI_Session_init(ask, MPI_ERRORS_RETURN, &s);
    MPI_Session_get_info(s, &info);
    expect(info, "mpi_memory_alloc_kinds", "system,mpi:alloc_mem", "a session that asked");
    MPI_Info_free(&info);
    MPI_Session_finalize(&s);
    MPI_Info_free(&ask);
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s);
    MPI_Session_get_info(s, &info);
    expect(info, "mpi_memory_alloc_kinds", want, "a session that asked nothing");
    MPI_Info_free(&info);
    MPI_Session_finalize(&s);

    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf("memkinds: OK (%s)\n", want);
    MPI_Finalize();
    return all != 0;
}
