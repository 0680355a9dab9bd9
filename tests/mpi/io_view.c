/* MPI-IO views and collective I/O: many ranks write small interleaved pieces
 * through a vector filetype (two-phase aggregation, small cb_buffer_size so
 * that it takes many windows), the file is checked byte for byte with POSIX
 * reads and read back collectively; resized filetypes with a displacement
 * and holes (the holes keep what was there); split collectives; non-blocking
 * calls completed by MPI_Wait / MPI_Test; external32 (big-endian) and a user
 * data representation (MPI_Register_datarep). */
#include "kt.h"
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

static int rank, size;
static char path[256];

#define NB 1000      /* blocks per rank */
#define BL 3         /* ints per block */

static void check_posix_interleaved(MPI_Offset disp)
{
    /* block b of rank r is at disp + ((b * size) + r) * BL ints */
    int fd = open(path, O_RDONLY);
    KT_CHECK(fd >= 0, "posix open");
    size_t n = (size_t)NB * size * BL;
    int *all = malloc(n * sizeof(int));
    KT_EQ_INT(pread(fd, all, n * sizeof(int), (off_t)disp), (long long)(n * sizeof(int)));
    for (int b = 0; b < NB; b++)
        for (int r = 0; r < size; r++)
            for (int i = 0; i < BL; i++) {
                int want = r * 1000000 + b * BL + i, got = all[((size_t)b * size + r) * BL + i];
                if (got != want) KT_FAIL("block %d of rank %d word %d: %d, expected %d", b, r, i, got, want);
            }
    free(all);
    close(fd);
}

static int rd_calls, wr_calls;
/* "swapped": ints stored byte-reversed, 4 bytes each */
static int swap_read(void *ubuf, MPI_Datatype dt, int count, void *fbuf, MPI_Offset pos, void *extra)
{
    (void)dt; (void)extra;
    rd_calls++;
    unsigned char *u = (unsigned char *)ubuf + pos * 4, *f = fbuf;
    for (int i = 0; i < count; i++)
        for (int j = 0; j < 4; j++) u[4 * i + j] = f[4 * i + 3 - j];
    return MPI_SUCCESS;
}
static int swap_write(void *ubuf, MPI_Datatype dt, int count, void *fbuf, MPI_Offset pos, void *extra)
{
    (void)dt; (void)extra;
    wr_calls++;
    unsigned char *u = (unsigned char *)ubuf + pos * 4, *f = fbuf;
    for (int i = 0; i < count; i++)
        for (int j = 0; j < 4; j++) f[4 * i + 3 - j] = u[4 * i + j];
    return MPI_SUCCESS;
}
static int swap_extent(MPI_Datatype dt, MPI_Aint *ext, void *extra)
{
    (void)extra;
    int s;
    MPI_Type_size(dt, &s);
    *ext = s;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int id = (int)getpid();
    MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "kumi_io_view_%d.dat", id);

    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_buffer_size", "1000");    /* many windows */
    if (argc > 1) MPI_Info_set(info, "cb_nodes", argv[1]);
    MPI_File fh;
    KT_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    MPI_Info_free(&info);
    if (getenv("IO_EXPECT_CB_NODES")) {    /* the default: one aggregator per host */
        MPI_Info used;
        char v[32];
        int flag;
        KT_MPI(MPI_File_get_info(fh, &used));
        MPI_Info_get(used, "cb_nodes", sizeof v - 1, v, &flag);
        KT_CHECK(flag && !strcmp(v, getenv("IO_EXPECT_CB_NODES")), "cb_nodes is %s", flag ? v : "unset");
        MPI_Info_free(&used);
    }

    /* 1. vector filetype: NB blocks of BL ints, stride size*BL, displaced by rank */
    MPI_Datatype vec, ft;
    MPI_Type_vector(NB, BL, size * BL, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, (MPI_Aint)NB * size * BL * sizeof(int), &ft);
    MPI_Type_commit(&ft);
    MPI_Offset disp = 64;
    KT_MPI(MPI_File_set_view(fh, disp + (MPI_Offset)rank * BL * sizeof(int), MPI_INT, ft, "native", MPI_INFO_NULL));
    {
        MPI_Offset d; MPI_Datatype e, f; char rep[MPI_MAX_DATAREP_STRING];
        KT_MPI(MPI_File_get_view(fh, &d, &e, &f, rep));
        KT_EQ_INT(d, disp + (MPI_Offset)rank * BL * sizeof(int));
        KT_CHECK(e == MPI_INT && !strcmp(rep, "native"), "get_view");
        MPI_Type_free(&f);
        MPI_Offset bo;
        KT_MPI(MPI_File_get_byte_offset(fh, BL + 1, &bo));   /* second block, second int */
        KT_EQ_INT(bo, d + (MPI_Offset)size * BL * 4 + 4);
    }
    int *buf = malloc(NB * BL * sizeof(int)), *in = malloc(NB * BL * sizeof(int));
    for (int i = 0; i < NB * BL; i++) buf[i] = rank * 1000000 + i;
    MPI_Status st;
    int cnt;
    KT_MPI(MPI_File_write_all(fh, buf, NB * BL, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    KT_EQ_INT(cnt, NB * BL);
    MPI_Offset pos;
    KT_MPI(MPI_File_get_position(fh, &pos));
    KT_EQ_INT(pos, NB * BL);
    KT_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    check_posix_interleaved(disp);
    /* collective read back, at an explicit offset, with the split form */
    memset(in, 0, NB * BL * sizeof(int));
    KT_MPI(MPI_File_read_at_all(fh, 0, in, NB * BL, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    KT_EQ_INT(cnt, NB * BL);
    for (int i = 0; i < NB * BL; i++) KT_EQ_INT(in[i], buf[i]);
    memset(in, 0, NB * BL * sizeof(int));
    KT_MPI(MPI_File_seek(fh, BL, MPI_SEEK_SET));
    KT_MPI(MPI_File_read_all_begin(fh, in, (NB - 1) * BL, MPI_INT));
    KT_ERRCLASS(MPI_File_read_all_begin(fh, in, 1, MPI_INT), MPI_ERR_OTHER);
    KT_MPI(MPI_File_read_all_end(fh, in, &st));
    KT_ERRCLASS(MPI_File_read_all_end(fh, in, &st), MPI_ERR_OTHER);
    MPI_Get_count(&st, MPI_INT, &cnt);
    KT_EQ_INT(cnt, (NB - 1) * BL);
    for (int i = 0; i < (NB - 1) * BL; i++) KT_EQ_INT(in[i], buf[i + BL]);
    /* independent read through the view, and a derived memory type */
    {
        MPI_Datatype mem;
        MPI_Type_vector(2, 1, 2, MPI_INT, &mem);
        MPI_Type_commit(&mem);
        int two[3] = { -1, -1, -1 };
        KT_MPI(MPI_File_read_at(fh, BL - 1, two, 1, mem, &st));
        KT_EQ_INT(two[0], buf[BL - 1]);
        KT_EQ_INT(two[1], -1);
        KT_EQ_INT(two[2], buf[BL]);
        MPI_Type_free(&mem);
    }

    /* 2. rewrite through the split and non-blocking forms; the data changes */
    for (int i = 0; i < NB * BL; i++) buf[i] = rank * 1000000 + i;
    for (int i = 0; i < NB * BL; i++) buf[i] += 0;
    KT_MPI(MPI_File_write_at_all_begin(fh, 0, buf, NB * BL / 2, MPI_INT));
    KT_MPI(MPI_File_write_at_all_end(fh, buf, &st));
    MPI_Request rq;
    KT_MPI(MPI_File_iwrite_at_all(fh, NB * BL / 2, buf + NB * BL / 2, NB * BL - NB * BL / 2, MPI_INT, &rq));
    KT_MPI(MPI_Wait(&rq, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    KT_EQ_INT(cnt, NB * BL - NB * BL / 2);
    MPI_Barrier(MPI_COMM_WORLD);
    check_posix_interleaved(disp);
    memset(in, 0, NB * BL * sizeof(int));
    KT_MPI(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    KT_MPI(MPI_File_iread(fh, in, NB * BL, MPI_INT, &rq));
    int done = 0;
    while (!done) KT_MPI(MPI_Test(&rq, &done, &st));
    KT_CHECK(rq == MPI_REQUEST_NULL, "a completed file request is freed");
    MPI_Get_count(&st, MPI_INT, &cnt);
    KT_EQ_INT(cnt, NB * BL);
    for (int i = 0; i < NB * BL; i++) KT_EQ_INT(in[i], buf[i]);
    {   /* through the view past the end of the file (sieved reads): only what is there */
        int *two = malloc(2 * NB * BL * sizeof(int));
        KT_MPI(MPI_File_read_at(fh, 0, two, 2 * NB * BL, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &cnt);
        KT_EQ_INT(cnt, NB * BL);
        for (int i = 0; i < NB * BL; i++) KT_EQ_INT(two[i], buf[i]);
        KT_MPI(MPI_File_read_at(fh, NB * BL - 2, two, 2 * NB * BL, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &cnt);
        KT_EQ_INT(cnt, 2);
        KT_EQ_INT(two[1], buf[NB * BL - 1]);
        free(two);
    }
    KT_MPI(MPI_File_iread_at(fh, 0, in, 1, MPI_INT, &rq));
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    KT_MPI(MPI_File_iread_all(fh, in, 1, MPI_INT, &rq));
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    KT_MPI(MPI_File_iwrite(fh, buf, 0, MPI_INT, &rq));
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    KT_MPI(MPI_File_iwrite_all(fh, buf, 0, MPI_INT, &rq));
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));

    /* 3. holes keep their bytes: every rank writes 2-int blocks every 4 ints of its own region */
    KT_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MPI_Offset region = 4096 + (MPI_Offset)rank * 400;
    {
        int pat[100];
        for (int i = 0; i < 100; i++) pat[i] = -7;
        KT_MPI(MPI_File_write_at(fh, region, pat, 100, MPI_INT, &st));
        MPI_Datatype two, hole;
        MPI_Type_contiguous(2, MPI_INT, &two);
        MPI_Type_create_resized(two, 0, 16, &hole);
        MPI_Type_commit(&hole);
        KT_MPI(MPI_File_set_view(fh, region, MPI_INT, hole, "native", MPI_INFO_NULL));
        int d[50];
        for (int i = 0; i < 50; i++) d[i] = rank * 100 + i;
        KT_MPI(MPI_File_write_all(fh, d, 50, MPI_INT, &st));
        KT_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
        MPI_Barrier(MPI_COMM_WORLD);
        int fd = open(path, O_RDONLY);
        KT_EQ_INT(pread(fd, pat, 400, (off_t)region), 400);
        close(fd);
        for (int i = 0; i < 100; i++) {
            int want = (i % 4) < 2 ? rank * 100 + (i / 4) * 2 + (i % 4) : -7;
            if (pat[i] != want) KT_FAIL("hole test word %d: %d, expected %d", i, pat[i], want);
        }
        MPI_Type_free(&two);
        MPI_Type_free(&hole);
    }

    /* 4. external32: big-endian in the file */
    {
        KT_MPI(MPI_File_set_view(fh, 8192, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
        MPI_Aint ext;
        KT_MPI(MPI_File_get_type_extent(fh, MPI_LONG, &ext));
        KT_EQ_INT(ext, 4);    /* MPI_LONG is 4 bytes in external32 */
        int x[2] = { 0x01020304 + rank, -2 };
        KT_MPI(MPI_File_write_at(fh, 2 * rank, x, 2, MPI_INT, &st));
        double dv = 1.5;
        if (rank == 0) {
            KT_MPI(MPI_File_set_view(fh, 9000, MPI_DOUBLE, MPI_DOUBLE, "external32", MPI_INFO_NULL));
        } else KT_MPI(MPI_File_set_view(fh, 9000, MPI_DOUBLE, MPI_DOUBLE, "external32", MPI_INFO_NULL));
        if (rank == 0) KT_MPI(MPI_File_write_at(fh, 0, &dv, 1, MPI_DOUBLE, &st));
        MPI_Barrier(MPI_COMM_WORLD);
        unsigned char b[8];
        int fd = open(path, O_RDONLY);
        KT_EQ_INT(pread(fd, b, 8, 8192 + 8 * rank), 8);
        KT_CHECK(b[0] == 1 && b[1] == 2 && b[2] == 3 && b[3] == 4 + rank, "external32 int is big-endian");
        KT_CHECK(b[4] == 0xff && b[5] == 0xff && b[6] == 0xff && b[7] == 0xfe, "external32 -2");
        KT_EQ_INT(pread(fd, b, 8, 9000), 8);
        KT_CHECK(b[0] == 0x3f && b[1] == 0xf8 && b[7] == 0, "external32 double 1.5 is big-endian");
        close(fd);
        KT_MPI(MPI_File_set_view(fh, 8192, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
        int y[2] = { 0, 0 };
        KT_MPI(MPI_File_read_at(fh, 2 * ((rank + 1) % size), y, 2, MPI_INT, &st));
        KT_EQ_INT(y[0], 0x01020304 + (rank + 1) % size);
        KT_EQ_INT(y[1], -2);
    }

    /* 5. a user data representation */
    {
        KT_MPI(MPI_Register_datarep("swapped", swap_read, swap_write, swap_extent, NULL));
        KT_ERRCLASS(MPI_Register_datarep("swapped", swap_read, swap_write, swap_extent, NULL), MPI_ERR_DUP_DATAREP);
        KT_MPI(MPI_File_set_view(fh, 10000, MPI_INT, MPI_INT, "swapped", MPI_INFO_NULL));
        int x = 0x0a0b0c0d + rank, y = 0;
        KT_MPI(MPI_File_write_at(fh, rank, &x, 1, MPI_INT, &st));
        KT_CHECK(wr_calls == 1, "write conversion called");
        MPI_Barrier(MPI_COMM_WORLD);
        unsigned char b[4];
        int fd = open(path, O_RDONLY);
        KT_EQ_INT(pread(fd, b, 4, 10000 + 4 * rank), 4);
        close(fd);
        int native = 0x0a0b0c0d + rank;
        unsigned char *nb = (unsigned char *)&native;
        KT_CHECK(b[0] == nb[3] && b[3] == nb[0], "user datarep stored swapped");
        KT_MPI(MPI_File_read_at(fh, rank, &y, 1, MPI_INT, &st));
        KT_EQ_INT(y, x);
        KT_CHECK(rd_calls == 1, "read conversion called");
    }
    KT_MPI(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Type_free(&vec);
    MPI_Type_free(&ft);
    free(buf);
    free(in);
    MPI_Finalize();
    if (rank == 0) printf("io_view: ok at %d ranks\n", size);
    return 0;
}
