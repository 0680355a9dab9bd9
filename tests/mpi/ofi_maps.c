/* Helper of tests/scripts/ofi_load.sh: after MPI_Init, every rank says whether
 * libfabric is mapped into it ("rank R: libfabric loaded|not loaded"), then
 * the ranks pass a token around a ring (so the job really communicates). */
#include "kt.h"
#include <string.h>

static int mapped(const char *lib)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    int found = 0;
    if (!f) return -1;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, lib) != NULL;
    fclose(f);
    return found;
}

int main(int argc, char **argv)
{
    int rank, size, token = 0;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int m = mapped("libfabric.so");
    KT_CHECK(m >= 0, "cannot read /proc/self/maps");
    printf("rank %d: libfabric %s\n", rank, m ? "loaded" : "not loaded");
    fflush(stdout);
    if (size > 1) {
        if (rank == 0) {
            token = 1;
            KT_MPI(MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD));
            KT_MPI(MPI_Recv(&token, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            KT_CHECK(token == size, "token %d after the ring, expected %d", token, size);
        } else {
            KT_MPI(MPI_Recv(&token, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            token++;
            KT_MPI(MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD));
        }
    }
    MPI_Finalize();
    return 0;
}
