/* Passive-target progress: on a target of the same host, MPI_Win_lock, Put,
 * Get, Accumulate, Fetch_and_op, flush and MPI_Win_unlock complete while the
 * target computes without calling MPI (rma.h: the direct path).
 *
 *   rma_progress [allocate|create|dynamic]     (default: all)
 *
 * Rank 0 computes until its counter shows every origin's accumulate, making
 * no MPI call meanwhile, for at most 30 s.  Every other rank, twice, takes an
 * exclusive lock on rank 0 (then a lock_all), puts its value, gets it back
 * after a flush, adds 1 to the counter and unlocks.  If an epoch needed rank
 * 0 to call MPI, rank 0 would give up after 30 s and the test fails.
 * Win_create and dynamic-window memory (rank 0 attaches its memory between
 * two other regions) is reached with process_vm_writev: where the kernel
 * forbids it (Yama ptrace_scope >= 2, or a container's seccomp filter) those
 * flavours are skipped. */
#define _GNU_SOURCE                     /* process_vm_readv */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kt.h"
#include <unistd.h>
#include <sys/uio.h>

static int rank, size, errs;

#define CHECK(c, ...) do { if (!(c)) { errs++; fprintf(stderr, "rank %d: ", rank); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

/* Does the kernel (Yama, or a seccomp filter of a container) forbid CMA? */
static int cma_forbidden(void)
{
    int scope = 0;
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    if (f) {
        if (fscanf(f, "%d", &scope) != 1) scope = 0;
        fclose(f);
    }
    long x = 42, y = 0;
    struct iovec l = { &y, sizeof y }, r = { &x, sizeof x };
    return scope >= 2 || process_vm_readv(getpid(), &l, 1, &r, 1, 0) != (ssize_t)sizeof y || y != x;
}

/* Compute (no MPI call) until *counter reaches want or 30 s pass. */
static int compute_until(int *counter, int want, double *spent)
{
    double t0 = kt_now(), x = 1.0;
    long n = 0;
    while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < want) {
        for (int i = 0; i < 1000; i++) x = x * 1.0000001 + 1e-9;
        if ((++n & 255) == 0 && kt_now() - t0 > 30.0) break;
    }
    *spent = kt_now() - t0 + (x < 0 ? 1 : 0);
    return __atomic_load_n(counter, __ATOMIC_ACQUIRE);
}

/* Target displacement of int i of rank 0's memory (dynamic: its address). */
static MPI_Aint d0, unit = 1;
#define D(i) (d0 + (MPI_Aint)(i) * unit)

static void run(const char *flavor)
{
    MPI_Win w;
    int *mem, ints = 4 + size;
    MPI_Aint bytes = (MPI_Aint)ints * (MPI_Aint)sizeof(int);
    static char before[64], after[64];
    d0 = 0;
    unit = 1;
    if (!strcmp(flavor, "create")) {
        mem = calloc((size_t)ints, sizeof(int));
        MPI_Win_create(mem, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    } else if (!strcmp(flavor, "dynamic")) {
        mem = calloc((size_t)ints, sizeof(int));
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        if (rank == 0) {
            MPI_Win_attach(w, before, sizeof before);
            MPI_Win_attach(w, mem, bytes);
            MPI_Win_attach(w, after, sizeof after);
            MPI_Get_address(mem, &d0);
        }
        MPI_Bcast(&d0, 1, MPI_AINT, 0, MPI_COMM_WORLD);
        unit = sizeof(int);
    } else {
        MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w);
        memset(mem, 0, (size_t)bytes);
    }
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    /* slot 0: counter; slot 4 + r: rank r's value */
    if (rank == 0) {
        double spent;
        int got = compute_until(&mem[0], 2 * (size - 1), &spent);
        CHECK(got == 2 * (size - 1), "%s: the origins' passive-target epochs did not complete while rank 0 computed "
              "(counter %d of %d after %.1f s)", flavor, got, 2 * (size - 1), spent);
        for (int r = 1; r < size; r++)
            CHECK(mem[4 + r] == 1000 + r, "%s: slot of rank %d holds %d", flavor, r, mem[4 + r]);
    } else {
        int v = 1000 + rank, back = -1, one = 1, old = -1;
        int rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w);
        CHECK(rc == MPI_SUCCESS, "%s: MPI_Win_lock returned %d", flavor, rc);
        MPI_Put(&v, 1, MPI_INT, 0, D(4 + rank), 1, MPI_INT, w);
        rc = MPI_Win_flush(0, w);
        CHECK(rc == MPI_SUCCESS, "%s: MPI_Win_flush returned %d", flavor, rc);
        MPI_Get(&back, 1, MPI_INT, 0, D(4 + rank), 1, MPI_INT, w);
        MPI_Accumulate(&one, 1, MPI_INT, 0, D(0), 1, MPI_INT, MPI_SUM, w);
        rc = MPI_Win_unlock(0, w);
        CHECK(rc == MPI_SUCCESS, "%s: MPI_Win_unlock returned %d", flavor, rc);
        CHECK(back == v, "%s: got back %d after a flush, put %d", flavor, back, v);
        rc = MPI_Win_lock_all(0, w);
        CHECK(rc == MPI_SUCCESS, "%s: MPI_Win_lock_all returned %d", flavor, rc);
        MPI_Fetch_and_op(&one, &old, MPI_INT, 0, D(0), MPI_SUM, w);
        rc = MPI_Win_unlock_all(w);
        CHECK(rc == MPI_SUCCESS, "%s: MPI_Win_unlock_all returned %d", flavor, rc);
        CHECK(old >= 1 && old < 2 * (size - 1), "%s: Fetch_and_op fetched %d", flavor, old);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (!strcmp(flavor, "dynamic") && rank == 0) {
        MPI_Win_detach(w, before);
        MPI_Win_detach(w, mem);
        MPI_Win_detach(w, after);
    }
    MPI_Win_free(&w);
    if (strcmp(flavor, "allocate")) free(mem);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *flavors[] = { "allocate", "create", "dynamic" };
    for (int f = 0; f < 3; f++) {
        if (argc > 1 && strcmp(argv[1], flavors[f])) continue;
        if (f > 0 && cma_forbidden()) {
            if (rank == 0) printf("rma_progress: %s skipped (the kernel forbids process_vm_readv here)\n", flavors[f]);
            continue;
        }
        run(flavors[f]);
    }
    int all;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf("rma_progress: %d ranks OK\n", size);
    MPI_Finalize();
    return all != 0;
}
