/* MPI-IO basics: open / close / delete with the access modes and their
 * errors, explicit offsets and the individual pointer (checked byte for byte
 * with POSIX reads, and POSIX writes read back with MPI), size, preallocate,
 * group / amode / info hints, byte offsets, type extents, error handlers on
 * files (MPI_ERRORS_RETURN by default, user handlers, MPI_FILE_NULL). */
#include "kt.h"
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static int rank, size;
static char path[256];

static void name_file(const char *tag)
{
    int id = (int)getpid();
    MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "kumi_io_%s_%d.dat", tag, id);
}

static int handler_calls, handler_class;
static void file_handler(MPI_File *fh, int *code, ...)
{
    (void)fh;
    handler_calls++;
    MPI_Error_class(*code, &handler_class);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    name_file("basic");
    MPI_File fh;

    /* errors of open go to MPI_FILE_NULL's handler: MPI_ERRORS_RETURN by default */
    MPI_Errhandler eh;
    KT_MPI(MPI_File_get_errhandler(MPI_FILE_NULL, &eh));
    KT_CHECK(eh == MPI_ERRORS_RETURN, "the default file error handler is MPI_ERRORS_RETURN");
    MPI_Errhandler_free(&eh);
    KT_ERRCLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_NO_SUCH_FILE);
    KT_CHECK(fh == MPI_FILE_NULL, "a failed open gives MPI_FILE_NULL");
    KT_ERRCLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh), MPI_ERR_AMODE);
    KT_ERRCLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh), MPI_ERR_AMODE);
    KT_ERRCLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE, MPI_INFO_NULL, &fh), MPI_ERR_AMODE);
    KT_ERRCLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL | MPI_MODE_CREATE,
                              MPI_INFO_NULL, &fh), MPI_ERR_AMODE);
    KT_ERRCLASS(MPI_File_open(MPI_COMM_WORLD, "", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_BAD_FILE);
    KT_ERRCLASS(MPI_File_delete(path, MPI_INFO_NULL), MPI_ERR_NO_SUCH_FILE);
    KT_ERRCLASS(MPI_File_get_amode(MPI_FILE_NULL, &(int){0}), MPI_ERR_FILE);
    {   /* the message names the argument */
        int rc = MPI_File_get_amode(MPI_FILE_NULL, &(int){0}), len;
        char msg[MPI_MAX_ERROR_STRING];
        MPI_Error_string(rc, msg, &len);
        KT_CHECK(strstr(msg, "fh") && strstr(msg, "MPI_File_get_amode"), "message: %s", msg);
    }

    /* create, with hints */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_buffer_size", "4096");
    MPI_Info_set(info, "cb_nodes", "1");
    MPI_Info_set(info, "striping_unit", "65536");
    KT_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR, info, &fh));
    MPI_Info_free(&info);
    MPI_Info used;
    char v[64];
    int flag;
    KT_MPI(MPI_File_get_info(fh, &used));
    MPI_Info_get(used, "cb_buffer_size", sizeof v - 1, v, &flag);
    KT_CHECK(flag && !strcmp(v, "4096"), "cb_buffer_size reflected (%s)", flag ? v : "unset");
    MPI_Info_get(used, "cb_nodes", sizeof v - 1, v, &flag);
    KT_CHECK(flag && !strcmp(v, "1"), "cb_nodes reflected");
    MPI_Info_get(used, "striping_unit", sizeof v - 1, v, &flag);
    KT_CHECK(flag && !strcmp(v, "65536"), "striping_unit reflected");
    MPI_Info_free(&used);
    int amode;
    KT_MPI(MPI_File_get_amode(fh, &amode));
    KT_EQ_INT(amode, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR);
    MPI_Group g, wg;
    int cmp;
    KT_MPI(MPI_File_get_group(fh, &g));
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &cmp);
    KT_EQ_INT(cmp, MPI_IDENT);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    KT_MPI(MPI_File_get_errhandler(fh, &eh));
    KT_CHECK(eh == MPI_ERRORS_RETURN, "a new file gets MPI_FILE_NULL's handler");
    MPI_Errhandler_free(&eh);

    /* explicit offsets: rank r writes 100 ints at r*400 */
    int buf[100], in[100];
    for (int i = 0; i < 100; i++) buf[i] = rank * 1000 + i;
    MPI_Status st;
    int cnt;
    KT_MPI(MPI_File_write_at(fh, (MPI_Offset)rank * 400, buf, 100, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    KT_EQ_INT(cnt, 100);
    KT_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Offset sz;
    KT_MPI(MPI_File_get_size(fh, &sz));
    KT_EQ_INT(sz, 400 * size);
    {   /* POSIX sees the bytes */
        int fd = open(path, O_RDONLY);
        KT_CHECK(fd >= 0, "posix open");
        int peer = (rank + 1) % size;
        KT_EQ_INT(pread(fd, in, 400, (off_t)peer * 400), 400);
        for (int i = 0; i < 100; i++) KT_EQ_INT(in[i], peer * 1000 + i);
        close(fd);
    }
    /* the large-count forms */
    {
        MPI_Count cc;
        int big[4] = { 7, 8, 9, 10 }, back[4] = { 0 };
        MPI_Barrier(MPI_COMM_WORLD);      /* every rank checked the size */
        KT_MPI(MPI_File_write_at_c(fh, (MPI_Offset)size * 400 + 16 * rank, big, (MPI_Count)4, MPI_INT, &st));
        KT_MPI(MPI_Get_count_c(&st, MPI_INT, &cc));
        KT_EQ_INT(cc, 4);
        KT_MPI(MPI_File_read_at_c(fh, (MPI_Offset)size * 400 + 16 * rank, back, (MPI_Count)4, MPI_INT, &st));
        KT_EQ_INT(back[3], 10);
        MPI_Count ce;
        KT_MPI(MPI_File_get_type_extent_c(fh, MPI_INT, &ce));
        KT_EQ_INT(ce, 4);
        MPI_Barrier(MPI_COMM_WORLD);
        KT_MPI(MPI_File_set_size(fh, (MPI_Offset)size * 400));
    }
    /* read past the end: a short count */
    KT_MPI(MPI_File_read_at(fh, (MPI_Offset)(size * 400 - 40), in, 100, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    KT_EQ_INT(cnt, 10);

    /* individual pointer: seek, read, position */
    KT_MPI(MPI_File_seek(fh, (MPI_Offset)((rank + 1) % size) * 400 + 8, MPI_SEEK_SET));
    KT_MPI(MPI_File_read(fh, in, 3, MPI_INT, &st));
    KT_EQ_INT(in[0], ((rank + 1) % size) * 1000 + 2);
    KT_EQ_INT(in[2], ((rank + 1) % size) * 1000 + 4);
    MPI_Offset pos;
    KT_MPI(MPI_File_get_position(fh, &pos));
    KT_EQ_INT(pos, ((rank + 1) % size) * 400 + 20);
    KT_MPI(MPI_File_seek(fh, -4, MPI_SEEK_CUR));
    KT_MPI(MPI_File_get_position(fh, &pos));
    KT_EQ_INT(pos, ((rank + 1) % size) * 400 + 16);
    KT_MPI(MPI_File_seek(fh, -8, MPI_SEEK_END));
    KT_MPI(MPI_File_get_position(fh, &pos));
    KT_EQ_INT(pos, size * 400 - 8);
    KT_ERRCLASS(MPI_File_seek(fh, -1, MPI_SEEK_SET), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_File_read_at(fh, -1, in, 1, MPI_INT, &st), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_File_read_at(fh, 0, NULL, 1, MPI_INT, &st), MPI_ERR_BUFFER);
    KT_ERRCLASS(MPI_File_read_at(fh, 0, in, -1, MPI_INT, &st), MPI_ERR_COUNT);
    KT_ERRCLASS(MPI_File_read_at(fh, 0, in, 1, MPI_DATATYPE_NULL, &st), MPI_ERR_TYPE);
    KT_ERRCLASS(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "no-such-rep", MPI_INFO_NULL), MPI_ERR_UNSUPPORTED_DATAREP);

    /* byte offsets and type extents of the default view */
    MPI_Offset bo;
    KT_MPI(MPI_File_get_byte_offset(fh, 123, &bo));
    KT_EQ_INT(bo, 123);
    MPI_Aint ext;
    KT_MPI(MPI_File_get_type_extent(fh, MPI_DOUBLE, &ext));
    KT_EQ_INT(ext, 8);

    /* user error handler on the file */
    MPI_Errhandler mine;
    KT_MPI(MPI_File_create_errhandler(file_handler, &mine));
    KT_MPI(MPI_File_set_errhandler(fh, mine));
    MPI_File_seek(fh, 0, 12345);
    KT_EQ_INT(handler_calls, 1);
    KT_EQ_INT(handler_class, MPI_ERR_ARG);
    KT_MPI(MPI_File_call_errhandler(fh, MPI_ERR_OTHER));
    KT_EQ_INT(handler_calls, 2);
    KT_MPI(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN));

    /* set_size, preallocate */
    KT_MPI(MPI_File_set_size(fh, 100));
    KT_MPI(MPI_File_get_size(fh, &sz));
    KT_EQ_INT(sz, 100);
    KT_MPI(MPI_File_preallocate(fh, 5000));
    KT_MPI(MPI_File_get_size(fh, &sz));
    KT_EQ_INT(sz, 5000);
    KT_MPI(MPI_File_preallocate(fh, 10));
    KT_MPI(MPI_File_get_size(fh, &sz));
    KT_EQ_INT(sz, 5000);
    KT_MPI(MPI_File_close(&fh));
    KT_CHECK(fh == MPI_FILE_NULL, "close sets MPI_FILE_NULL");

    /* EXCL on an existing file; POSIX data read with MPI; read-only access checks */
    KT_ERRCLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY,
                              MPI_INFO_NULL, &fh), MPI_ERR_FILE_EXISTS);
    if (rank == 0) {
        int fd = open(path, O_WRONLY);
        unsigned char b[256];
        for (int i = 0; i < 256; i++) b[i] = (unsigned char)i;
        KT_EQ_INT(pwrite(fd, b, 256, 1000), 256);
        close(fd);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    KT_ERRCLASS(MPI_File_open(MPI_COMM_WORLD, "ufs:", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_BAD_FILE);
    KT_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    unsigned char rb[16];
    KT_MPI(MPI_File_read_at(fh, 1000 + 16 * rank, rb, 16, MPI_BYTE, &st));
    for (int i = 0; i < 16; i++) KT_EQ_INT(rb[i], (16 * rank + i) & 255);
    KT_ERRCLASS(MPI_File_write_at(fh, 0, rb, 1, MPI_BYTE, &st), MPI_ERR_ACCESS);
    KT_ERRCLASS(MPI_File_set_size(fh, 0), MPI_ERR_ACCESS);
    KT_MPI(MPI_File_close(&fh));

    /* APPEND: the pointers start at the end */
    KT_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_APPEND, MPI_INFO_NULL, &fh));
    KT_MPI(MPI_File_get_position(fh, &pos));
    KT_EQ_INT(pos, 5000);
    KT_MPI(MPI_File_get_position_shared(fh, &pos));
    KT_EQ_INT(pos, 5000);
    KT_ERRCLASS(MPI_File_read(fh, rb, 1, MPI_BYTE, &st), MPI_ERR_ACCESS);
    KT_MPI(MPI_File_close(&fh));

    /* SEQUENTIAL: only the shared pointer */
    KT_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
    KT_ERRCLASS(MPI_File_write_at(fh, 0, rb, 1, MPI_BYTE, &st), MPI_ERR_UNSUPPORTED_OPERATION);
    KT_ERRCLASS(MPI_File_seek(fh, 0, MPI_SEEK_SET), MPI_ERR_UNSUPPORTED_OPERATION);
    KT_ERRCLASS(MPI_File_write(fh, rb, 1, MPI_BYTE, &st), MPI_ERR_UNSUPPORTED_OPERATION);
    KT_MPI(MPI_File_write_shared(fh, rb, 1, MPI_BYTE, &st));
    KT_MPI(MPI_File_close(&fh));

    /* DELETE_ON_CLOSE */
    KT_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE | MPI_MODE_UNIQUE_OPEN,
                         MPI_INFO_NULL, &fh));
    KT_MPI(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    struct stat sb;
    KT_CHECK(stat(path, &sb) != 0, "MPI_MODE_DELETE_ON_CLOSE removed the file");

    /* MPI_File_delete; MPI_FILE_NULL's handler changed */
    KT_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    KT_MPI(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) KT_MPI(MPI_File_delete(path, MPI_INFO_NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    KT_MPI(MPI_File_set_errhandler(MPI_FILE_NULL, mine));
    handler_calls = 0;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    KT_EQ_INT(handler_calls, 1);
    KT_EQ_INT(handler_class, MPI_ERR_NO_SUCH_FILE);
    KT_MPI(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
    MPI_Errhandler_free(&mine);
    {   /* handle conversion */
        MPI_Fint fi = MPI_File_c2f(MPI_FILE_NULL);
        KT_CHECK(MPI_File_f2c(fi) == MPI_FILE_NULL, "c2f / f2c of MPI_FILE_NULL");
    }
    MPI_Finalize();
    if (rank == 0) printf("io_basic: ok at %d ranks\n", size);
    return 0;
}
