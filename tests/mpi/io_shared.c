/* MPI-IO shared file pointer and atomic mode: every rank appends records
 * with MPI_File_write_shared (each record lands exactly once, none
 * overlaps), the ordered forms put the ranks' data in rank order (checked
 * with POSIX reads), seek_shared / get_position_shared agree on every rank,
 * read_shared hands out each record once, and in atomic mode concurrent
 * overlapping writes never interleave. */
#include "kt.h"
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#define REC 16           /* ints per record */
#define NREC 50          /* records per rank */
#define BIG 8192         /* ints per atomic write (one pwrite each: every other int) */

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int id = (int)getpid();
    MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char path[256];
    snprintf(path, sizeof path, "kumi_io_shared_%d.dat", id);
    MPI_File fh;
    MPI_Status st;
    KT_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    KT_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));

    /* 1. write_shared: records tagged (rank, index) */
    int rec[REC];
    for (int k = 0; k < NREC; k++) {
        for (int i = 0; i < REC; i++) rec[i] = rank * 10000 + k;
        KT_MPI(MPI_File_write_shared(fh, rec, REC, MPI_INT, &st));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Offset pos;
    KT_MPI(MPI_File_get_position_shared(fh, &pos));
    KT_EQ_INT(pos, (MPI_Offset)REC * NREC * size);
    {
        int fd = open(path, O_RDONLY);
        size_t n = (size_t)REC * NREC * size;
        int *all = malloc(n * sizeof(int));
        KT_EQ_INT(pread(fd, all, n * sizeof(int), 0), (long long)(n * sizeof(int)));
        close(fd);
        char *seen = calloc((size_t)size * NREC, 1);
        int *next = calloc((size_t)size, sizeof(int));
        for (size_t r = 0; r < (size_t)NREC * size; r++) {
            int v = all[r * REC];
            for (int i = 1; i < REC; i++) KT_EQ_INT(all[r * REC + i], v);   /* no interleaving */
            int who = v / 10000, k = v % 10000;
            KT_CHECK(who >= 0 && who < size && k < NREC && !seen[who * NREC + k], "record %d once", v);
            KT_EQ_INT(k, next[who]);     /* one rank's records in its order */
            next[who]++;
            seen[who * NREC + k] = 1;
        }
        free(all); free(seen); free(next);
    }

    /* 2. seek_shared + read_shared: every record read once over all ranks */
    KT_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    KT_MPI(MPI_File_get_position_shared(fh, &pos));
    KT_EQ_INT(pos, 0);
    MPI_Barrier(MPI_COMM_WORLD);     /* before any rank moves it */
    int got = 0, cnt;
    long long sum = 0;
    for (;;) {
        KT_MPI(MPI_File_read_shared(fh, rec, REC, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &cnt);
        if (cnt == 0) break;
        KT_EQ_INT(cnt, REC);
        got++;
        sum += rec[0];
    }
    int total;
    long long gsum;
    MPI_Allreduce(&got, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&sum, &gsum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    KT_EQ_INT(total, NREC * size);
    long long want = 0;
    for (int r = 0; r < size; r++) for (int k = 0; k < NREC; k++) want += r * 10000 + k;
    KT_EQ_INT(gsum, want);

    /* 3. ordered: rank r writes r+1 ints after the ranks below it, from the end */
    KT_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_END));
    MPI_Offset start;
    KT_MPI(MPI_File_get_position_shared(fh, &start));
    KT_EQ_INT(start, (MPI_Offset)REC * NREC * size);
    int ord[64];
    for (int i = 0; i <= rank; i++) ord[i] = 500000 + rank * 100 + i;
    KT_MPI(MPI_File_write_ordered(fh, ord, rank + 1, MPI_INT, &st));
    KT_MPI(MPI_File_write_ordered_begin(fh, ord, rank + 1, MPI_INT));
    KT_MPI(MPI_File_write_ordered_end(fh, ord, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    KT_EQ_INT(cnt, rank + 1);
    KT_MPI(MPI_File_get_position_shared(fh, &pos));
    KT_EQ_INT(pos, start + (MPI_Offset)size * (size + 1));
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int fd = open(path, O_RDONLY);
        int n = size * (size + 1) / 2, *o = malloc(2 * n * sizeof(int));
        KT_EQ_INT(pread(fd, o, 2 * n * sizeof(int), (off_t)start * 4), 2 * n * (long long)sizeof(int));
        close(fd);
        for (int pass = 0, k = 0; pass < 2; pass++)
            for (int r = 0; r < size; r++)
                for (int i = 0; i <= r; i++, k++) KT_EQ_INT(o[k], 500000 + r * 100 + i);
        free(o);
    }
    KT_MPI(MPI_File_seek_shared(fh, start, MPI_SEEK_SET));
    int rd[64];
    KT_MPI(MPI_File_read_ordered(fh, rd, rank + 1, MPI_INT, &st));
    for (int i = 0; i <= rank; i++) KT_EQ_INT(rd[i], 500000 + rank * 100 + i);
    memset(rd, 0, sizeof rd);
    KT_MPI(MPI_File_read_ordered_begin(fh, rd, rank + 1, MPI_INT));
    KT_MPI(MPI_File_read_ordered_end(fh, rd, &st));
    for (int i = 0; i <= rank; i++) KT_EQ_INT(rd[i], 500000 + rank * 100 + i);
    KT_MPI(MPI_File_seek_shared(fh, start, MPI_SEEK_SET));
    MPI_Request rq;
    KT_MPI(MPI_File_iread_shared(fh, rd, 1, MPI_INT, &rq));
    KT_MPI(MPI_Wait(&rq, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    KT_EQ_INT(cnt, 1);
    KT_MPI(MPI_File_iwrite_shared(fh, rd, 0, MPI_INT, &rq));
    KT_MPI(MPI_Wait(&rq, &st));

    /* 4. atomic mode: all ranks write BIG ints over the same range at once */
    int flag;
    KT_MPI(MPI_File_get_atomicity(fh, &flag));
    KT_EQ_INT(flag, 0);
    KT_MPI(MPI_File_set_atomicity(fh, 1));
    KT_MPI(MPI_File_get_atomicity(fh, &flag));
    KT_EQ_INT(flag, 1);
    MPI_Datatype one, sparse;
    MPI_Type_contiguous(1, MPI_INT, &one);
    MPI_Type_create_resized(one, 0, 8, &sparse);
    MPI_Type_commit(&sparse);
    KT_MPI(MPI_File_set_view(fh, 1 << 20, MPI_INT, sparse, "native", MPI_INFO_NULL));
    int atomic = getenv("IO_SHARED_NONATOMIC") ? 0 : 1;
    KT_MPI(MPI_File_set_atomicity(fh, atomic));
    int *big = malloc(BIG * sizeof(int));
    for (int round = 0; round < 10; round++) {
        for (int i = 0; i < BIG; i++) big[i] = rank + 1 + 100 * round;
        MPI_Barrier(MPI_COMM_WORLD);
        KT_MPI(MPI_File_write_at(fh, 0, big, BIG, MPI_INT, &st));
        MPI_Barrier(MPI_COMM_WORLD);
        KT_MPI(MPI_File_read_at(fh, 0, big, BIG, MPI_INT, &st));
        for (int i = 1; i < BIG; i++)
            if (big[i] != big[0]) KT_FAIL("atomic write interleaved: word %d is %d, word 0 %d", i, big[i], big[0]);
        int who = big[0] - 100 * round;
        KT_CHECK(who >= 1 && who <= size, "one rank's data");
    }
    free(big);
    MPI_Type_free(&one);
    MPI_Type_free(&sparse);
    KT_MPI(MPI_File_set_atomicity(fh, 0));
    KT_MPI(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) KT_MPI(MPI_File_delete(path, MPI_INFO_NULL));
    MPI_Finalize();
    if (rank == 0) printf("io_shared: ok at %d ranks\n", size);
    return 0;
}
