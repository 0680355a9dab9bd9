/* Collective reads with the hint romio_cb_read (issue 23: the read path of
 * MPI_File_read_all): automatic (the default: two-phase aggregation when some
 * rank's pieces are small, each rank reading its own pieces when they are
 * large), enable (two-phase always), disable (never).  The hint is reflected
 * by MPI_File_get_info; a bad value leaves the default.  For each setting, an
 * interleaved vector filetype with small blocks (1000 B) and with large ones
 * (384 KiB): MPI_File_write_all, then MPI_File_read_all of the same view,
 * checked byte for byte against the pattern (and against POSIX reads of the
 * file), and a collective read that runs past the end of the file: the status
 * counts the bytes that were there. */
#include "kt.h"
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

static int rank, size;
static char path[256];

static unsigned char pat(long fileoff) { return (unsigned char)(fileoff * 131 + (fileoff >> 9) * 7 + 3); }

static void one(const char *setting, int blk, int nblk)
{
    MPI_Info info;
    MPI_File fh;
    MPI_Info_create(&info);
    if (setting) MPI_Info_set(info, "romio_cb_read", setting);
    MPI_Info_set(info, "cb_nodes", "1");
    if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    KT_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    MPI_Info_free(&info);

    /* the hint as used */
    MPI_Info used;
    char v[64];
    int flag;
    const char *want = setting && (!strcmp(setting, "enable") || !strcmp(setting, "disable")) ? setting : "automatic";
    KT_MPI(MPI_File_get_info(fh, &used));
    MPI_Info_get(used, "romio_cb_read", sizeof v - 1, v, &flag);
    KT_CHECK(flag && !strcmp(v, want), "romio_cb_read %s: reflected as %s (expected %s)", setting ? setting : "unset",
             flag ? v : "unset", want);
    MPI_Info_free(&used);

    /* rank r's blocks: r, r + size, r + 2 size, ... of blk bytes */
    MPI_Datatype ft;
    MPI_Type_vector(nblk, blk, blk * size, MPI_BYTE, &ft);
    MPI_Datatype ftr;
    MPI_Type_create_resized(ft, 0, (MPI_Aint)blk * size * nblk, &ftr);
    MPI_Type_commit(&ftr);
    KT_MPI(MPI_File_set_view(fh, (MPI_Offset)rank * blk, MPI_BYTE, ftr, "native", MPI_INFO_NULL));
    long n = (long)blk * nblk;
    unsigned char *out = malloc((size_t)n), *in = malloc((size_t)n + 100);
    KT_CHECK(out && in, "memory");
    for (long i = 0; i < n; i++) out[i] = pat(((i / blk) * size + rank) * (long)blk + i % blk);
    MPI_Status st;
    int cnt;
    KT_MPI(MPI_File_write_all(fh, out, (int)n, MPI_BYTE, &st));
    KT_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    KT_MPI(MPI_File_sync(fh));

    /* the file, with POSIX */
    if (rank == 0) {
        long tot = n * size;
        unsigned char *all = malloc((size_t)tot);
        int fd = open(path, O_RDONLY);
        KT_CHECK(all && fd >= 0, "posix open");
        KT_EQ_INT(pread(fd, all, (size_t)tot, 0), tot);
        long bad = -1;
        for (long i = 0; i < tot && bad < 0; i++)
            if (all[i] != pat(i)) bad = i;
        KT_CHECK(bad < 0, "%s, %d B blocks: file byte %ld is %d, expected %d", want, blk, bad, bad < 0 ? 0 : all[bad],
                 bad < 0 ? 0 : pat(bad));
        close(fd);
        free(all);
    }

    /* read back through the view */
    memset(in, 0xee, (size_t)n + 100);
    KT_MPI(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    KT_MPI(MPI_File_read_all(fh, in, (int)n, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    KT_EQ_INT(cnt, n);
    long bad = -1;
    for (long i = 0; i < n && bad < 0; i++)
        if (in[i] != out[i]) bad = i;
    KT_CHECK(bad < 0, "%s, %d B blocks: read_all byte %ld is %d, expected %d", want, blk, bad, bad < 0 ? 0 : in[bad],
             bad < 0 ? 0 : out[bad]);

    /* past the end: the last rank's view ends at the end of the file, the
     * others' last block is followed by the other ranks' data; reading one
     * block more than was written gets the first blocks of the next tile for
     * nobody: the file ends there */
    memset(in, 0xee, (size_t)n + 100);
    KT_MPI(MPI_File_read_at_all(fh, (MPI_Offset)(nblk - 1) * blk, in, 2 * blk, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    KT_EQ_INT(cnt, blk);
    for (long i = 0; i < blk && bad < 0; i++)
        if (in[i] != out[(nblk - 1) * (long)blk + i]) bad = i;
    KT_CHECK(bad < 0, "%s, %d B blocks: the last block, byte %ld", want, blk, bad);

    KT_MPI(MPI_File_close(&fh));
    MPI_Type_free(&ft);
    MPI_Type_free(&ftr);
    free(out);
    free(in);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int id = (int)getpid();
    MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "kumi_io_cbread_%d.dat", id);
    const char *settings[] = { NULL, "automatic", "enable", "disable", "bogus" };
    for (int s = 0; s < 5; s++) {
        one(settings[s], 1000, 7);
        one(settings[s], 384 << 10, 3);
    }
    if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Finalize();
    if (rank == 0) printf("io_cbread: ok at %d ranks\n", size);
    return 0;
}
