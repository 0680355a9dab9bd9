/* iobench: collective write and read of a 3-D block-distributed array of
 * doubles (MPI_Type_create_subarray as the filetype, MPI_File_write_all /
 * MPI_File_read_all), as in issue 23.  The same source builds with every
 * implementation's compiler.
 *
 *   iobench -f FILE [-m MIB] [-r REPS] [-c]
 *     -m MIB   total array size in MiB (default 1024); the global array is
 *              N x N x N doubles with N rounded so that it divides evenly
 *     -r REPS  repetitions (default 3); the best time of each is printed
 *     -c       check the data read back (every element holds its global index)
 *     -a N     hint cb_nodes=N;  -b BYTES  hint cb_buffer_size=BYTES
 *     -i KEY=VALUE  another hint (up to 8)
 *     -s       no MPI_File_sync in the write time: the library's part alone,
 *              without the disk's write-back (which the sync waits for)
 * Prints one line: "bytes write_s read_s write_MiBps read_MiBps" (rank 0),
 * times of the slowest rank, file synced (MPI_File_sync) inside the write time. */
#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *file = NULL, *cbn = NULL, *cbs = NULL, *hints[8];
    int nhints = 0;
    double mib = 1024;
    int reps = 3, check = 0, nosync = 0, opt;
    while ((opt = getopt(argc, argv, "f:m:r:ca:b:i:s")) != -1) {
        if (opt == 'i' && nhints < 8 && strchr(optarg, '=')) hints[nhints++] = optarg;
        if (opt == 'a') cbn = optarg;
        if (opt == 'b') cbs = optarg;
        if (opt == 'f') file = optarg;
        else if (opt == 'm') mib = atof(optarg);
        else if (opt == 'r') reps = atoi(optarg);
        else if (opt == 'c') check = 1;
        else if (opt == 's') nosync = 1;
    }
    if (!file) { if (rank == 0) fprintf(stderr, "usage: iobench -f FILE [-m MIB] [-r REPS] [-c] [-s]\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    int dims[3] = { 0, 0, 0 }, periods[3] = { 0, 0, 0 }, coords[3];
    MPI_Dims_create(size, 3, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    MPI_Cart_coords(cart, rank, 3, coords);
    /* N: a multiple of every dimension, N^3 * 8 close to the size asked for */
    int l = dims[0];
    for (int d = 1; d < 3; d++) { int a = l, b = dims[d]; while (b) { int t = a % b; a = b; b = t; } l = l / a * dims[d]; }
    long n = (long)cbrt(mib * 1048576.0 / 8.0);
    n = n / l * l;
    if (n < l) n = l;
    int gs[3] = { (int)n, (int)n, (int)n }, ls[3], st[3];
    size_t cnt = 1;
    for (int d = 0; d < 3; d++) { ls[d] = (int)(n / dims[d]); st[d] = coords[d] * ls[d]; cnt *= (size_t)ls[d]; }
    MPI_Datatype ft;
    MPI_Type_create_subarray(3, gs, ls, st, MPI_ORDER_C, MPI_DOUBLE, &ft);
    MPI_Type_commit(&ft);
    double *a = malloc(cnt * sizeof(double)), *b = malloc(cnt * sizeof(double));
    if (!a || !b) MPI_Abort(MPI_COMM_WORLD, 3);
    size_t k = 0;
    for (int i = 0; i < ls[0]; i++)
        for (int j = 0; j < ls[1]; j++)
            for (int z = 0; z < ls[2]; z++)
                a[k++] = (double)(((long)(st[0] + i) * n + st[1] + j) * n + st[2] + z);
    MPI_Info info = MPI_INFO_NULL;
    if (cbn || cbs || nhints) {
        MPI_Info_create(&info);
        if (cbn) MPI_Info_set(info, "cb_nodes", cbn);
        if (cbs) MPI_Info_set(info, "cb_buffer_size", cbs);
        for (int h = 0; h < nhints; h++) {
            char key[256];
            size_t kl = (size_t)(strchr(hints[h], '=') - hints[h]);
            if (kl >= sizeof key) continue;
            memcpy(key, hints[h], kl);
            key[kl] = 0;
            MPI_Info_set(info, key, hints[h] + kl + 1);
        }
    }
    double bw = 1e30, br = 1e30;
    for (int r = 0; r < reps; r++) {
        MPI_File fh;
        if (rank == 0) MPI_File_delete(file, MPI_INFO_NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_File_open(MPI_COMM_WORLD, file, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
        MPI_File_set_view(fh, 0, MPI_DOUBLE, ft, "native", MPI_INFO_NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (MPI_File_write_all(fh, a, (int)cnt, MPI_DOUBLE, MPI_STATUS_IGNORE) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 4);
        if (!nosync) MPI_File_sync(fh);
        double t = MPI_Wtime() - t0, tw;
        MPI_Allreduce(&t, &tw, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        memset(b, 0, cnt * sizeof(double));
        MPI_File_seek(fh, 0, MPI_SEEK_SET);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        if (MPI_File_read_all(fh, b, (int)cnt, MPI_DOUBLE, MPI_STATUS_IGNORE) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 5);
        t = MPI_Wtime() - t0;
        double tr;
        MPI_Allreduce(&t, &tr, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_File_close(&fh);
        if (check && memcmp(a, b, cnt * sizeof(double))) {
            fprintf(stderr, "iobench: rank %d read back other data\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 6);
        }
        if (tw < bw) bw = tw;
        if (tr < br) br = tr;
    }
    if (rank == 0) {
        MPI_File_delete(file, MPI_INFO_NULL);
        double bytes = (double)n * n * n * 8;
        printf("%.0f %.4f %.4f %.1f %.1f\n", bytes, bw, br, bytes / 1048576.0 / bw, bytes / 1048576.0 / br);
    }
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    MPI_Type_free(&ft);
    MPI_Comm_free(&cart);
    free(a); free(b);
    MPI_Finalize();
    return 0;
}
