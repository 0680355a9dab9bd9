/* Wildcards across transports: rank 2 leaves p2p/shmem out (MPI_COMPONENTS
 * set before MPI_Init), so ranks 0/1/3 reach each other through shared
 * memory and rank 2 through tcp (or through ofi: "shm_mixed ofi").  Rank 0 receives with ANY_SOURCE from all of
 * them, sizes below and above the eager limits of both transports; order per
 * sender, values and counts are checked; then every rank exchanges with
 * every other rank. */
#include "kt.h"
#include <stdlib.h>

static unsigned char val(int src, int k, size_t i) { return (unsigned char)(src * 17 + k * 5 + i * 3 + (i >> 11)); }

int main(int argc, char **argv)
{
    static const size_t sz[] = { 0, 8, 4096, 16385, 70000, 200000, 1048576 };
    const int ns = 7;
    const char *r = getenv("KUMI_RANK");
    const char *other = argc > 1 ? argv[1] : "tcp";     /* "ofi": p2p/ofi instead of tcp */
    char spec[64];
    snprintf(spec, sizeof spec, r && atoi(r) == 2 ? "p2p=self,%s" : "p2p=self,shmem,%s", other);
    setenv("MPI_COMPONENTS", spec, 1);
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned char *b = malloc(1 << 21);
    KT_CHECK(b != NULL);
    for (int rep = 0; rep < 3; rep++) {
        if (rank != 0) {
            for (int k = 0; k < ns; k++) {
                for (size_t i = 0; i < sz[k]; i++) b[i] = val(rank, k, i);
                KT_MPI(MPI_Send(b, (int)sz[k], MPI_BYTE, 0, k, MPI_COMM_WORLD));
            }
        } else {
            int next[64] = { 0 };
            for (int m = 0; m < ns * (size - 1); m++) {
                MPI_Status st;
                int cnt;
                KT_MPI(MPI_Recv(b, 1 << 21, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                int s = st.MPI_SOURCE, k = next[s]++;
                KT_CHECK(s > 0 && s < size && k < ns, "source %d message %d", s, k);
                KT_EQ_INT(st.MPI_TAG, k);
                MPI_Get_count(&st, MPI_BYTE, &cnt);
                KT_EQ_INT(cnt, sz[k]);
                for (size_t i = 0; i < sz[k]; i++)
                    if (b[i] != val(s, k, i)) KT_FAIL("byte %zu of message %d from %d", i, k, s);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* all pairs, both directions at once */
    for (int p = 0; p < size; p++) {
        if (p == rank) continue;
        size_t n = 300000;
        unsigned char *s = malloc(n), *d = malloc(n);
        for (size_t i = 0; i < n; i++) s[i] = val(rank, p, i);
        KT_MPI(MPI_Sendrecv(s, (int)n, MPI_BYTE, p, 9, d, (int)n, MPI_BYTE, p, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (size_t i = 0; i < n; i++)
            if (d[i] != val(p, rank, i)) KT_FAIL("sendrecv byte %zu from %d", i, p);
        free(s); free(d);
    }
    free(b);
    MPI_Finalize();
    return 0;
}
