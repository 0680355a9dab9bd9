/* abi_io: MPI-IO through a foreign-ABI shim (built with mpicc.openmpi or mpicc.mpich; only
 * standard API, so the same source checks both shims).  argv[1]: a file name prefix in a
 * folder all ranks share.  Checks, with file contents compared byte for byte:
 * open/close (MPI_FILE_NULL after close), MPI_File_c2f/f2c, write_at_all and the status of a write
 * (MPI_Get_count), a view of a derived filetype set and got back (disp, etype == MPI_INT,
 * the filetype a new derived handle the caller frees, datarep "native"), read_all through the
 * view, MPI_DISPLACEMENT_CURRENT on a sequential file (and the native sentinel's value
 * rejected), the shared file pointer (write_ordered, read_shared), iread_at/iwrite_at
 * completed through MPI_Waitall with statuses, a file error handler (created, set, got back,
 * called with the program's file handle by MPI_File_call_errhandler and on a real error),
 * MPI_Register_datarep with user conversion and extent functions that get the program's
 * datatype handles. Prints "abi_io: N ranks ok". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, bad;
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "rank %d: line %d: ", rank, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); bad++; } } while (0)
#define OK(call) do { int rc_ = (call); if (rc_ != MPI_SUCCESS) { char s_[MPI_MAX_ERROR_STRING]; int l_; \
    MPI_Error_string(rc_, s_, &l_); fprintf(stderr, "rank %d: line %d: %s: %s\n", rank, __LINE__, #call, s_); \
    MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

static MPI_File eh_file;
static int eh_calls, eh_code;
static void file_eh(MPI_File *fh, int *code, ...)
{
    eh_file = *fh;
    eh_code = *code;
    eh_calls++;
}

/* "swapped": ints stored big-endian */
static int conv_dt_ok = 1, conv_calls, extent_calls;
static void swap4(char *d, const char *s, int n)
{
    for (int i = 0; i < n; i++)
        for (int b = 0; b < 4; b++) d[4 * i + b] = s[4 * i + 3 - b];
}
static int rep_read(void *userbuf, MPI_Datatype dt, int count, void *filebuf, MPI_Offset pos, void *extra)
{
    if (dt != MPI_INT || *(int *)extra != 4242) conv_dt_ok = 0;
    conv_calls++;
    swap4((char *)userbuf + 4 * pos, filebuf, count);
    return MPI_SUCCESS;
}
static int rep_write(void *userbuf, MPI_Datatype dt, int count, void *filebuf, MPI_Offset pos, void *extra)
{
    if (dt != MPI_INT || *(int *)extra != 4242) conv_dt_ok = 0;
    conv_calls++;
    swap4(filebuf, (char *)userbuf + 4 * pos, count);
    return MPI_SUCCESS;
}
static int rep_extent(MPI_Datatype dt, MPI_Aint *extent, void *extra)
{
    if (*(int *)extra != 4242) conv_dt_ok = 0;
    extent_calls++;
    if (dt != MPI_INT) { conv_dt_ok = 0; return MPI_ERR_TYPE; }
    *extent = 4;
    return MPI_SUCCESS;
}

static void readraw(const char *name, long off, void *buf, size_t n)
{
    FILE *f = fopen(name, "rb");
    CHECK(f, "fopen %s", name);
    if (!f) return;
    fseek(f, off, SEEK_SET);
    CHECK(fread(buf, 1, n, f) == n, "short read of %s", name);
    fclose(f);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2) { fprintf(stderr, "usage: abi_io PREFIX\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    char name[512], seqname[512], repname[512];
    snprintf(name, sizeof name, "%s.dat", argv[1]);
    snprintf(seqname, sizeof seqname, "%s.seq", argv[1]);
    snprintf(repname, sizeof repname, "%s.rep", argv[1]);
    MPI_Status st;
    int cnt;

    /* ---- open, write_at_all, status of a write */
    MPI_File fh = MPI_FILE_NULL;
    OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    CHECK(fh != MPI_FILE_NULL, "open gave MPI_FILE_NULL");
    /* Fortran integers of files: 0 for MPI_FILE_NULL (both ABIs), a round trip for a file */
    MPI_Fint ffh = MPI_File_c2f(fh);
    CHECK(MPI_File_c2f(MPI_FILE_NULL) == 0 && ffh != 0, "MPI_File_c2f: %d for MPI_FILE_NULL, %d for a file",
          (int)MPI_File_c2f(MPI_FILE_NULL), (int)ffh);
    CHECK(MPI_File_f2c(ffh) == fh && MPI_File_f2c(0) == MPI_FILE_NULL, "MPI_File_f2c does not give the file back");
    MPI_Offset sz = -1;
    OK(MPI_File_get_size(fh, &sz));
    int mine[4];
    for (int i = 0; i < 4; i++) mine[i] = rank * 100 + i;
    memset(&st, 0x55, sizeof st);
    OK(MPI_File_write_at_all(fh, (MPI_Offset)rank * 16, mine, 4, MPI_INT, &st));
    OK(MPI_Get_count(&st, MPI_INT, &cnt));
    CHECK(cnt == 4, "write_at_all status count %d, not 4", cnt);
    OK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_File_sync(fh));
    OK(MPI_File_get_size(fh, &sz));
    CHECK(sz == (MPI_Offset)size * 16, "size %lld after write_at_all, not %d", (long long)sz, size * 16);
    if (rank == 0) {
        int *all = malloc(16 * size);
        readraw(name, 0, all, 16 * size);
        for (int i = 0; i < 4 * size; i++) CHECK(all[i] == (i / 4) * 100 + i % 4, "file int %d is %d", i, all[i]);
        free(all);
    }

    /* ---- a view of a derived filetype: rank r's ints at r, r+size, r+2*size ... after base */
    const MPI_Offset base = (MPI_Offset)size * 16;
    MPI_Datatype one, ft;
    OK(MPI_Type_contiguous(1, MPI_INT, &one));
    OK(MPI_Type_create_resized(one, 0, (MPI_Aint)size * 4, &ft));
    OK(MPI_Type_commit(&ft));
    OK(MPI_File_set_view(fh, base + rank * 4, MPI_INT, ft, "native", MPI_INFO_NULL));
    MPI_Offset vd = -7;
    MPI_Datatype et = MPI_DATATYPE_NULL, ft2 = MPI_DATATYPE_NULL;
    char rep[MPI_MAX_DATAREP_STRING];
    memset(rep, 'x', sizeof rep);
    OK(MPI_File_get_view(fh, &vd, &et, &ft2, rep));
    CHECK(vd == base + rank * 4, "get_view disp %lld", (long long)vd);
    CHECK(et == MPI_INT, "get_view etype is not MPI_INT");
    CHECK(strcmp(rep, "native") == 0, "get_view datarep \"%.20s\"", rep);
    CHECK(ft2 != MPI_DATATYPE_NULL && ft2 != MPI_INT, "get_view filetype not a derived handle");
    int ni, na, nd, comb;
    OK(MPI_Type_get_envelope(ft2, &ni, &na, &nd, &comb));
    CHECK(comb != MPI_COMBINER_NAMED, "filetype given back as a predefined type");
    MPI_Aint lb, ext;
    OK(MPI_Type_get_extent(ft2, &lb, &ext));
    CHECK(lb == 0 && ext == (MPI_Aint)size * 4, "filetype extent %ld", (long)ext);
    OK(MPI_Type_free(&ft2));
    CHECK(ft2 == MPI_DATATYPE_NULL, "freed filetype not MPI_DATATYPE_NULL");
    int w3[3], r3[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) w3[k] = 1000 + rank * 10 + k;
    OK(MPI_File_write_all(fh, w3, 3, MPI_INT, &st));
    OK(MPI_Get_count(&st, MPI_INT, &cnt));
    CHECK(cnt == 3, "write_all count %d", cnt);
    MPI_Offset pos = -1;
    OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == 3, "position %lld after 3 etypes", (long long)pos);
    OK(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    OK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_File_sync(fh));
    OK(MPI_File_read_all(fh, r3, 3, MPI_INT, &st));
    OK(MPI_Get_count(&st, MPI_INT, &cnt));
    CHECK(cnt == 3 && r3[0] == w3[0] && r3[1] == w3[1] && r3[2] == w3[2], "read_all through the view: %d %d %d (%d)",
          r3[0], r3[1], r3[2], cnt);
    if (rank == 0) {
        int *all = malloc(12 * size);
        readraw(name, (long)base, all, 12 * size);
        for (int i = 0; i < 3 * size; i++)
            CHECK(all[i] == 1000 + (i % size) * 10 + i / size, "viewed file int %d is %d", i, all[i]);
        free(all);
    }
    OK(MPI_Type_free(&ft));
    OK(MPI_Type_free(&one));

    /* ---- iread_at / iwrite_at completed through MPI_Waitall (back to the plain byte view) */
    OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MPI_Request rq[2];
    int got[4] = {0}, w2[2] = {rank + 7000, rank + 8000};
    OK(MPI_File_iread_at(fh, (MPI_Offset)rank * 16, got, 4, MPI_INT, &rq[0]));
    const MPI_Offset tail = base + (MPI_Offset)size * 12;
    OK(MPI_File_iwrite_at(fh, tail + rank * 8, w2, 2, MPI_INT, &rq[1]));
    MPI_Status sts[2];
    memset(sts, 0x55, sizeof sts);
    OK(MPI_Waitall(2, rq, sts));
    CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL, "requests not freed by Waitall");
    OK(MPI_Get_count(&sts[0], MPI_INT, &cnt));
    CHECK(cnt == 4, "iread_at status count %d", cnt);
    OK(MPI_Get_count(&sts[1], MPI_BYTE, &cnt));
    CHECK(cnt == 8, "iwrite_at status count %d bytes", cnt);
    for (int i = 0; i < 4; i++) CHECK(got[i] == mine[i], "iread_at int %d: %d", i, got[i]);
    /* one more through MPI_Test */
    int flag = 0, one_int = -1;
    OK(MPI_File_iread_at(fh, tail + rank * 8 + 4, &one_int, 1, MPI_INT, &rq[0]));
    while (!flag) OK(MPI_Test(&rq[0], &flag, &st));
    CHECK(one_int == rank + 8000, "iread_at after iwrite_at: %d", one_int);

    /* ---- error handler on the file */
    MPI_Errhandler eh, eh2;
    OK(MPI_File_create_errhandler(file_eh, &eh));
    OK(MPI_File_set_errhandler(fh, eh));
    OK(MPI_File_get_errhandler(fh, &eh2));
    CHECK(eh2 == eh, "get_errhandler: not the handler set");
    OK(MPI_Errhandler_free(&eh2));
    OK(MPI_File_call_errhandler(fh, MPI_ERR_OTHER));
    CHECK(eh_calls == 1 && eh_file == fh && eh_code == MPI_ERR_OTHER,
          "call_errhandler: calls %d, same file %d, code %d", eh_calls, eh_file == fh, eh_code);
    int rc = MPI_File_read_at(fh, -5, got, 1, MPI_INT, &st);    /* a negative offset */
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && eh_calls == 2 && eh_file == fh, "bad offset: rc %d, calls %d", rc, eh_calls);
    CHECK(cls == MPI_ERR_ARG || cls == MPI_ERR_OTHER, "bad offset: class %d", cls);
    MPI_Error_class(eh_code, &cls);
    CHECK(cls == MPI_ERR_ARG || cls == MPI_ERR_OTHER, "handler code class %d", cls);
    OK(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN));
    OK(MPI_Errhandler_free(&eh));
    OK(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL, "close did not set MPI_FILE_NULL");

    /* ---- sequential file: shared pointer, MPI_DISPLACEMENT_CURRENT */
    OK(MPI_File_open(MPI_COMM_WORLD, seqname, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL,
                     MPI_INFO_NULL, &fh));
    OK(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN));
    int v2[2] = {rank * 2, rank * 2 + 1};
    OK(MPI_File_write_ordered(fh, v2, 2, MPI_INT, &st));
    OK(MPI_Get_count(&st, MPI_INT, &cnt));
    CHECK(cnt == 2, "write_ordered count %d", cnt);
    /* Kumi's own sentinel value (-1) is an invalid displacement in this ABI */
    rc = MPI_File_set_view(fh, -1, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    CHECK(rc != MPI_SUCCESS || -1 == MPI_DISPLACEMENT_CURRENT, "set_view with disp -1 succeeded");
    OK(MPI_File_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    OK(MPI_File_get_view(fh, &vd, &et, &ft2, rep));
    CHECK(vd == (MPI_Offset)size * 8, "view disp %lld after MPI_DISPLACEMENT_CURRENT", (long long)vd);
    CHECK(et == MPI_INT && ft2 == MPI_INT, "predefined etype/filetype not given back as MPI_INT");
    int s1 = 500 + rank;
    OK(MPI_File_write_ordered(fh, &s1, 1, MPI_INT, &st));
    OK(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_File_open(MPI_COMM_WORLD, seqname, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    int back = -1;
    OK(MPI_File_read_shared(fh, &back, 1, MPI_INT, &st));   /* one int per rank, in any order */
    OK(MPI_Get_count(&st, MPI_INT, &cnt));
    CHECK(cnt == 1 && back >= 0 && back < 2 * size, "read_shared: %d (%d)", back, cnt);
    OK(MPI_File_close(&fh));
    if (rank == 0) {
        int *all = malloc(12 * size);
        readraw(seqname, 0, all, 12 * size);
        for (int i = 0; i < 2 * size; i++) CHECK(all[i] == i, "sequential file int %d is %d", i, all[i]);
        for (int i = 0; i < size; i++) CHECK(all[2 * size + i] == 500 + i, "sequential file tail %d is %d", i, all[2 * size + i]);
        free(all);
    }

    /* ---- a user data representation */
    static int extra = 4242;
    OK(MPI_Register_datarep("abi_io_swapped", rep_read, rep_write, rep_extent, &extra));
    rc = MPI_Register_datarep("abi_io_swapped", rep_read, rep_write, rep_extent, &extra);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_DUP_DATAREP, "second registration: class %d", cls);
    OK(MPI_File_open(MPI_COMM_WORLD, repname, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    OK(MPI_File_set_view(fh, (MPI_Offset)rank * 12, MPI_INT, MPI_INT, "abi_io_swapped", MPI_INFO_NULL));
    OK(MPI_File_get_view(fh, &vd, &et, &ft2, rep));
    CHECK(strcmp(rep, "abi_io_swapped") == 0, "datarep name \"%.20s\"", rep);
    int uw[3] = {0x01020304 + rank, 0x0a0b0c0d, -2}, ur[3] = {0};
    OK(MPI_File_write_at(fh, 0, uw, 3, MPI_INT, &st));
    OK(MPI_Get_count(&st, MPI_INT, &cnt));
    CHECK(cnt == 3, "write with the user datarep: count %d", cnt);
    OK(MPI_File_read_at(fh, 0, ur, 3, MPI_INT, &st));
    CHECK(ur[0] == uw[0] && ur[1] == uw[1] && ur[2] == uw[2], "read back with the user datarep: %x %x %x",
          ur[0], ur[1], ur[2]);
    OK(MPI_File_close(&fh));
    CHECK(conv_dt_ok && conv_calls >= 2 && extent_calls >= 1,
          "conversion functions: handles/extra ok %d, %d conversions, %d extents", conv_dt_ok, conv_calls, extent_calls);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        unsigned char *raw = malloc(12 * size);
        readraw(repname, 0, raw, 12 * size);
        for (int r = 0; r < size; r++) {
            int vals[3] = {0x01020304 + r, 0x0a0b0c0d, -2};
            for (int k = 0; k < 3; k++) {
                unsigned v = (unsigned)vals[k];
                const unsigned char *b = raw + 12 * r + 4 * k;
                CHECK(b[0] == (v >> 24) && b[1] == ((v >> 16) & 255) && b[2] == ((v >> 8) & 255) && b[3] == (v & 255),
                      "user datarep bytes of rank %d int %d: %02x%02x%02x%02x", r, k, b[0], b[1], b[2], b[3]);
            }
        }
        free(raw);
    }

    int allbad = 0;
    MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && allbad == 0) printf("abi_io: %d ranks ok\n", size);
    MPI_Finalize();
    return allbad != 0;
}
