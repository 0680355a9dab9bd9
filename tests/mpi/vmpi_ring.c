/* vmpi_ring: Kumi's point-to-point and collectives, values checked, for
 * tests/scripts/vmpi_openmpi.sh (a Kumi program started by mpirun.openmpi,
 * its messages through the vendor MPI: p2p/vmpi).  Also fine under mpiexec.
 *   vmpi_ring          ring of messages from 0 bytes to 9 MiB (eager, inline,
 *                      rendezvous), MPI_ANY_SOURCE / MPI_ANY_TAG receives and
 *                      a probe, tags kept apart, then Bcast, Allreduce,
 *                      Alltoall, Allgather (Kumi's coll components)
 *   vmpi_ring abort    a barrier, then rank 1 calls MPI_Abort(.., 7) while
 *                      the others block in MPI_Recv
 * Prints "vmpi_ring: rank R of N ok (LIBRARY)" when everything matched, and
 * (rank 0) whether Open MPI's mca_pml_ob1.so is mapped in the process. */
#include "kt.h"
#include <stdint.h>

static unsigned char pat(int src, int tag, size_t i)
{
    return (unsigned char)(src * 31 + tag * 7 + (int)(i % 251));
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && !strcmp(argv[1], "abort")) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1 % size) MPI_Abort(MPI_COMM_WORLD, 7);
        int x;
        MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        KT_FAIL("MPI_Recv returned although nobody sent");
    }
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    static const size_t sizes[] = { 0, 1, 1000, 60000, 65536, 65537, 200000, 1u << 20, 9u << 20 };
    const int ns = (int)(sizeof sizes / sizeof sizes[0]);
    unsigned char *sb = malloc(9u << 20), *rb = malloc(9u << 20);
    if (!sb || !rb) KT_FAIL("malloc");
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < ns; k++) {
            size_t n = sizes[k];
            int tag = 100 + k;
            for (size_t i = 0; i < n; i++) sb[i] = pat(rank, tag, i);
            memset(rb, 0xee, n);
            MPI_Request rq[2];
            MPI_Status st;
            /* round 0: named source and tag; 1: MPI_ANY_SOURCE; 2: MPI_ANY_TAG after a probe */
            int src = round == 1 ? MPI_ANY_SOURCE : left, rtag = round == 2 ? MPI_ANY_TAG : tag;
            if (round == 2) KT_MPI(MPI_Isend(sb, (int)n, MPI_BYTE, right, tag, MPI_COMM_WORLD, &rq[0]));
            if (round == 2) {
                KT_MPI(MPI_Probe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                int c = -1;
                MPI_Get_count(&st, MPI_BYTE, &c);
                KT_CHECK(st.MPI_TAG == tag && c == (int)n, "probe: tag %d count %d, expected %d %zu", st.MPI_TAG, c,
                         tag, n);
            }
            KT_MPI(MPI_Irecv(rb, (int)n, MPI_BYTE, src, rtag, MPI_COMM_WORLD, &rq[1]));
            if (round != 2) KT_MPI(MPI_Isend(sb, (int)n, MPI_BYTE, right, tag, MPI_COMM_WORLD, &rq[0]));
            KT_MPI(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
            KT_MPI(MPI_Wait(&rq[1], &st));
            int c = -1;
            MPI_Get_count(&st, MPI_BYTE, &c);
            KT_CHECK(st.MPI_SOURCE == left && st.MPI_TAG == tag && c == (int)n,
                     "round %d size %zu: source %d tag %d count %d", round, n, st.MPI_SOURCE, st.MPI_TAG, c);
            for (size_t i = 0; i < n; i++)
                if (rb[i] != pat(left, tag, i)) KT_FAIL("round %d size %zu: byte %zu is %u", round, n, i, rb[i]);
        }
    }
    /* tags kept apart: two messages to the right, received in the other order */
    if (size > 1) {
        int a = 1000 + rank, b = 2000 + rank, x = 0, y = 0;
        MPI_Request rq[2];
        KT_MPI(MPI_Isend(&a, 1, MPI_INT, right, 1, MPI_COMM_WORLD, &rq[0]));
        KT_MPI(MPI_Isend(&b, 1, MPI_INT, right, 2, MPI_COMM_WORLD, &rq[1]));
        KT_MPI(MPI_Recv(&y, 1, MPI_INT, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Recv(&x, 1, MPI_INT, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
        KT_CHECK(x == 1000 + left && y == 2000 + left, "tags: got %d %d", x, y);
    }
    /* collectives */
    int *v = malloc((size_t)size * 1000 * sizeof *v), *w = malloc((size_t)size * 1000 * sizeof *w);
    if (!v || !w) KT_FAIL("malloc");
    for (int i = 0; i < 1000; i++) v[i] = rank == size - 1 ? i * 3 : -1;
    KT_MPI(MPI_Bcast(v, 1000, MPI_INT, size - 1, MPI_COMM_WORLD));
    for (int i = 0; i < 1000; i++) KT_CHECK(v[i] == i * 3, "bcast [%d] = %d", i, v[i]);
    for (int i = 0; i < 1000; i++) v[i] = rank + i;
    KT_MPI(MPI_Allreduce(v, w, 1000, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < 1000; i++)
        KT_CHECK(w[i] == size * (size - 1) / 2 + size * i, "allreduce [%d] = %d", i, w[i]);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < 1000; i++) v[p * 1000 + i] = rank * 100000 + p * 1000 + i;
    KT_MPI(MPI_Alltoall(v, 1000, MPI_INT, w, 1000, MPI_INT, MPI_COMM_WORLD));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < 1000; i++)
            KT_CHECK(w[p * 1000 + i] == p * 100000 + rank * 1000 + i, "alltoall from %d [%d]", p, i);
    int me = rank * 7, *all = malloc((size_t)size * sizeof *all);
    KT_MPI(MPI_Allgather(&me, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD));
    for (int p = 0; p < size; p++) KT_CHECK(all[p] == p * 7, "allgather [%d] = %d", p, all[p]);
    /* the vendor's own plug-ins (Open MPI's MCA components, which it
     * dlopens) loaded into this process: its point-to-point layer */
    if (rank == 0) {
        FILE *m = fopen("/proc/self/maps", "r");
        char line[1024];
        int pml = 0;
        while (m && fgets(line, sizeof line, m)) pml |= strstr(line, "/mca_pml_ob1.so") != NULL;
        if (m) fclose(m);
        printf("vmpi_ring: Open MPI's mca_pml_ob1 in this process: %s\n", pml ? "yes" : "no");
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int ll = 0;
    MPI_Get_library_version(lib, &ll);
    char *nl = strchr(lib, '\n');
    if (nl) *nl = 0;
    printf("vmpi_ring: rank %d of %d ok (%.60s)\n", rank, size, lib);
    fflush(stdout);
    free(all); free(v); free(w); free(sb); free(rb);
    MPI_Finalize();
    return 0;
}
