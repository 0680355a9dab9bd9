/* Collective writes with the hint romio_cb_write (issue 23: the write path of
 * MPI_File_write_all): automatic (the default: two-phase aggregation when some
 * rank's pieces are small, each rank writing its own pieces when they are
 * large), enable (two-phase always), disable (never).  The hint is reflected
 * by MPI_File_get_info (it was always "enable"); a bad value leaves the
 * default.  For each setting, with small blocks (1000 B) and large ones
 * (384 KiB): the file is first filled with a background pattern by POSIX
 * writes; each rank's view is an interleaved vector filetype that leaves one
 * block of each tile to nobody (a hole, which keeps the background) and
 * starts past the beginning of the file; MPI_File_write_all, then the whole
 * file is checked byte for byte with POSIX reads, and read back through the
 * view with MPI_File_read_all.  Then MPI_File_write_at_all past the end of
 * the file (it grows; the gap reads as zeros).  Rank 0 writes nothing in the
 * last call (a rank without pieces takes part). */
#include "kt.h"
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

static int rank, size;
static char path[256];

static unsigned char pat(long fileoff) { return (unsigned char)(fileoff * 131 + (fileoff >> 9) * 7 + 3); }
static unsigned char bg(long fileoff) { return (unsigned char)(fileoff * 17 + 101); }

static void check_file(const char *want, int blk, long tot, long lead, long tile, long nblk, long grown)
{
    if (rank != 0) return;
    long len = grown > tot ? grown : tot;
    unsigned char *all = malloc((size_t)len + 1);
    int fd = open(path, O_RDONLY);
    KT_CHECK(all && fd >= 0, "posix open");
    KT_EQ_INT(pread(fd, all, (size_t)len + 1, 0), len);
    long bad = -1;
    unsigned char exp = 0;
    for (long i = 0; i < len && bad < 0; i++) {
        if (i < tot) {
            long in = i - lead, t = in / tile, b = (in % tile) / blk;
            exp = in >= 0 && t < nblk && b < size ? pat(i) : bg(i);
        } else {
            exp = i >= grown - (long)(size - 1) * blk ? pat(i) : 0;   /* rank 0's block there: zeros */
        }
        if (all[i] != exp) bad = i;
    }
    KT_CHECK(bad < 0, "romio_cb_write %s, %d B blocks: file byte %ld is %d, expected %d", want, blk, bad,
             bad < 0 ? 0 : all[bad], exp);
    close(fd);
    free(all);
}

static void one(const char *setting, int blk, int nblk)
{
    MPI_Info info;
    MPI_File fh;
    MPI_Info_create(&info);
    if (setting) MPI_Info_set(info, "romio_cb_write", setting);
    MPI_Info_set(info, "cb_nodes", "1");
    /* the background: a block of lead bytes, then nblk tiles of size + 1 blocks, then one block */
    long lead = 3 * blk / 2, tile = (long)(size + 1) * blk, tot = lead + nblk * tile + blk;
    if (rank == 0) {
        MPI_File_delete(path, MPI_INFO_NULL);
        unsigned char *b = malloc((size_t)tot);
        KT_CHECK(b != NULL, "memory");
        for (long i = 0; i < tot; i++) b[i] = bg(i);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        KT_CHECK(fd >= 0, "posix create");
        KT_EQ_INT(pwrite(fd, b, (size_t)tot, 0), tot);
        close(fd);
        free(b);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    KT_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh));
    MPI_Info_free(&info);

    /* the hint as used */
    MPI_Info used;
    char v[64];
    int flag;
    const char *want = setting && (!strcmp(setting, "enable") || !strcmp(setting, "disable")) ? setting : "automatic";
    KT_MPI(MPI_File_get_info(fh, &used));
    MPI_Info_get(used, "romio_cb_write", sizeof v - 1, v, &flag);
    KT_CHECK(flag && !strcmp(v, want), "romio_cb_write %s: reflected as %s (expected %s)",
             setting ? setting : "unset", flag ? v : "unset", want);
    MPI_Info_free(&used);

    /* rank r's blocks: r, r + size + 1, r + 2 (size + 1), ... of blk bytes,
     * from byte lead on; block size of each tile is nobody's */
    MPI_Datatype ft, ftr;
    MPI_Type_vector(nblk, blk, (int)tile, MPI_BYTE, &ft);
    MPI_Type_create_resized(ft, 0, tile * nblk, &ftr);
    MPI_Type_commit(&ftr);
    KT_MPI(MPI_File_set_view(fh, lead + (MPI_Offset)rank * blk, MPI_BYTE, ftr, "native", MPI_INFO_NULL));
    long n = (long)blk * nblk;
    unsigned char *out = malloc((size_t)n), *in = malloc((size_t)n);
    KT_CHECK(out && in, "memory");
    for (long i = 0; i < n; i++) out[i] = pat(lead + (i / blk) * tile + (long)rank * blk + i % blk);
    MPI_Status st;
    int cnt;
    KT_MPI(MPI_File_write_all(fh, out, (int)n, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    KT_EQ_INT(cnt, n);
    KT_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    KT_MPI(MPI_File_sync(fh));
    check_file(want, blk, tot, lead, tile, nblk, 0);

    /* read back through the view */
    memset(in, 0xee, (size_t)n);
    KT_MPI(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    KT_MPI(MPI_File_read_all(fh, in, (int)n, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    KT_EQ_INT(cnt, n);
    long bad = -1;
    for (long i = 0; i < n && bad < 0; i++)
        if (in[i] != out[i]) bad = i;
    KT_CHECK(bad < 0, "romio_cb_write %s, %d B blocks: read_all byte %ld", want, blk, bad);

    /* past the end: each rank but 0 writes block (rank) of the tile that
     * starts 2 tiles past the end (in the view's terms: offset 2 nblk + ...);
     * rank 0 writes nothing */
    KT_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    long gstart = tot + 2 * tile, grown = gstart + (long)size * blk;
    for (long i = 0; i < blk; i++) out[i] = pat(gstart + (long)rank * blk + i);
    KT_MPI(MPI_File_write_at_all(fh, gstart + (long)rank * blk, out, rank ? blk : 0, MPI_BYTE, &st));
    KT_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    KT_MPI(MPI_File_sync(fh));
    if (size > 1) check_file(want, blk, tot, lead, tile, nblk, grown);

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
    snprintf(path, sizeof path, "kumi_io_cbwrite_%d.dat", id);
    const char *settings[] = { NULL, "automatic", "enable", "disable", "bogus" };
    for (int s = 0; s < 5; s++) {
        one(settings[s], 1000, 7);
        one(settings[s], 384 << 10, 3);
    }
    if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Finalize();
    if (rank == 0) printf("io_cbwrite: ok at %d ranks\n", size);
    return 0;
}
