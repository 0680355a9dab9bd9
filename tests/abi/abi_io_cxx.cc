// abi_io_cxx: MPI-IO through the C++ bindings (namespace MPI) of a foreign ABI, built with
// mpicxx.openmpi (libmpi_cxx.so.40) or mpicxx.mpich (libmpichcxx.so.12).  argv[1]: a file
// name prefix in a folder the ranks share.  Checks File::Open, Write_at_all and its status,
// Set_view with a derived filetype / Get_view, Write_all / Seek / Read_all through the view,
// File::Create_errhandler with a C++ handler (called with the program's file by
// Call_errhandler), MPI::ERRORS_THROW_EXCEPTIONS on a file (MPI::Exception of the right
// class; MPICH only: Open MPI 4.1 throws none for files), MPI::Register_datarep with C++ conversion and extent functions, File::Close, and
// the file contents byte for byte.  Prints "abi_io_cxx: N ranks ok".
#include <mpi.h>
#include <cstdio>
#include <cstring>
#include <cstdlib>

static int rank, size, bad;
#define CHECK(c, ...) do { if (!(c)) { std::fprintf(stderr, "rank %d: line %d: ", rank, __LINE__); \
    std::fprintf(stderr, __VA_ARGS__); std::fputc('\n', stderr); bad++; } } while (0)

static int eh_calls, eh_code;
static MPI_File eh_file;
static void file_eh(MPI::File &f, int *code, ...)
{
    eh_calls++;
    eh_code = *code;
    eh_file = f;
}

// MPICH's conversion and extent functions return an int, Open MPI's (the standard's) nothing
// (and their position is a long); MPICH's mpicxx.h does not declare MPI::Register_datarep,
// which its library defines: declared here as the library has it
#ifdef MPICH_VERSION
typedef int conv_ret;
typedef long conv_pos;
#define CONV_RETURN return MPI::SUCCESS
namespace MPI {
void Register_datarep(const char *, int (*)(void *, Datatype &, int, void *, long, void *),
                      int (*)(void *, Datatype &, int, void *, long, void *), int (*)(const Datatype &, long &, void *), void *);
}
#else
typedef void conv_ret;
typedef MPI::Offset conv_pos;
#define CONV_RETURN return
#endif
static int conv_ok = 1, conv_calls;
static void swap4(char *d, const char *s, int n)
{
    for (int i = 0; i < n; i++)
        for (int b = 0; b < 4; b++) d[4 * i + b] = s[4 * i + 3 - b];
}
static conv_ret rep_read(void *u, MPI::Datatype &dt, int count, void *fb, conv_pos pos, void *extra)
{
    if (dt != MPI::INT || *(int *)extra != 99) conv_ok = 0;
    conv_calls++;
    swap4((char *)u + 4 * pos, (const char *)fb, count);
    CONV_RETURN;
}
static conv_ret rep_write(void *u, MPI::Datatype &dt, int count, void *fb, conv_pos pos, void *extra)
{
    if (dt != MPI::INT || *(int *)extra != 99) conv_ok = 0;
    conv_calls++;
    swap4((char *)fb, (const char *)u + 4 * pos, count);
    CONV_RETURN;
}
static conv_ret rep_extent(const MPI::Datatype &dt, MPI::Aint &extent, void *extra)
{
    if (dt != MPI::INT || *(int *)extra != 99) conv_ok = 0;
    extent = 4;
    CONV_RETURN;
}

int main(int argc, char **argv)
{
    MPI::Init(argc, argv);
    rank = MPI::COMM_WORLD.Get_rank();
    size = MPI::COMM_WORLD.Get_size();
    if (argc < 2) MPI::COMM_WORLD.Abort(2);
    char name[512], rname[512];
    std::snprintf(name, sizeof name, "%s.cdat", argv[1]);
    std::snprintf(rname, sizeof rname, "%s.crep", argv[1]);

    MPI::File f = MPI::File::Open(MPI::COMM_WORLD, name, MPI::MODE_CREATE | MPI::MODE_RDWR, MPI::INFO_NULL);
    CHECK(f != MPI::FILE_NULL, "Open gave FILE_NULL");
    int mine[4];
    for (int i = 0; i < 4; i++) mine[i] = rank * 100 + i;
    MPI::Status st;
    f.Write_at_all((MPI::Offset)rank * 16, mine, 4, MPI::INT, st);
    CHECK(st.Get_count(MPI::INT) == 4, "Write_at_all count %d", st.Get_count(MPI::INT));

    const MPI::Offset base = (MPI::Offset)size * 16;
    MPI::Datatype ft = MPI::INT.Create_resized(0, (MPI::Aint)size * 4);
    ft.Commit();
    f.Set_view(base + rank * 4, MPI::INT, ft, "native", MPI::INFO_NULL);
    // (Open MPI's inline File::Get_view gives nothing back: the C call, on the C++ object's handle)
    MPI_Offset disp = -1;
    MPI_Datatype et, ft2;
    char rep[MPI_MAX_DATAREP_STRING];
    MPI_File_get_view(f, &disp, &et, &ft2, rep);
    CHECK(disp == base + rank * 4 && et == MPI_INT && std::strcmp(rep, "native") == 0, "Get_view: %lld \"%s\"",
          (long long)disp, rep);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(ft2, &lb, &ext);
    CHECK(ext == (MPI_Aint)size * 4, "Get_view filetype extent %ld", (long)ext);
    MPI_Type_free(&ft2);
    int w3[3], r3[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) w3[k] = 1000 + rank * 10 + k;
    f.Write_all(w3, 3, MPI::INT);
    f.Sync();
    MPI::COMM_WORLD.Barrier();
    f.Sync();
    f.Seek(0, MPI_SEEK_SET);   // (Open MPI's MPI::SEEK_SET is stdio's SEEK_SET, 0, not its MPI_SEEK_SET)
    f.Read_all(r3, 3, MPI::INT, st);
    CHECK(st.Get_count(MPI::INT) == 3 && r3[0] == w3[0] && r3[1] == w3[1] && r3[2] == w3[2], "Read_all through the view: %d %d %d (%d)", r3[0], r3[1], r3[2], st.Get_count(MPI::INT));
    ft.Free();

    MPI::Errhandler eh = MPI::File::Create_errhandler(file_eh);
    f.Set_errhandler(eh);
    f.Call_errhandler(MPI::ERR_OTHER);
    CHECK(eh_calls == 1 && eh_code == MPI::ERR_OTHER && eh_file == (MPI_File)f, "Call_errhandler: %d calls, code %d",
          eh_calls, eh_code);
    eh.Free();
    f.Set_errhandler(MPI::ERRORS_THROW_EXCEPTIONS);
    bool thrown = false;
    f.Set_view(0, MPI::BYTE, MPI::BYTE, "native", MPI::INFO_NULL);
    try {
        f.Read_at(-8, r3, 1, MPI::INT);
    } catch (MPI::Exception &e) {
        thrown = true;
        CHECK(e.Get_error_class() == MPI::ERR_ARG, "exception class %d", e.Get_error_class());
    }
#ifdef MPICH_VERSION
    CHECK(thrown, "Read_at at a negative offset did not throw");
#else
    (void)thrown;   // Open MPI 4.1's own library does not throw for files either
#endif
    f.Close();
    CHECK(f == MPI::FILE_NULL, "Close did not make FILE_NULL");

    static int extra = 99;
    MPI::Register_datarep("abi_io_cxx_swapped", rep_read, rep_write, rep_extent, &extra);
    MPI::File g = MPI::File::Open(MPI::COMM_WORLD, rname, MPI::MODE_CREATE | MPI::MODE_RDWR, MPI::INFO_NULL);
    g.Set_view((MPI::Offset)rank * 8, MPI::INT, MPI::INT, "abi_io_cxx_swapped", MPI::INFO_NULL);
    int uw[2] = {0x01020304 + rank, -3}, ur[2] = {0, 0};
    g.Write_at(0, uw, 2, MPI::INT);
    g.Read_at(0, ur, 2, MPI::INT);
    CHECK(ur[0] == uw[0] && ur[1] == uw[1], "read back with the user datarep");
    CHECK(conv_ok && conv_calls >= 2, "conversion functions: ok %d, %d calls", conv_ok, conv_calls);
    g.Close();
    MPI::COMM_WORLD.Barrier();

    if (rank == 0) {
        FILE *fp = std::fopen(name, "rb");
        int all[256] = {0};
        size_t n = fp ? std::fread(all, 4, 7 * size, fp) : 0;
        if (fp) std::fclose(fp);
        CHECK(n == (size_t)(7 * size), "file length");
        for (int i = 0; i < 4 * size; i++) CHECK(all[i] == (i / 4) * 100 + i % 4, "file int %d: %d", i, all[i]);
        for (int i = 0; i < 3 * size; i++)
            CHECK(all[4 * size + i] == 1000 + (i % size) * 10 + i / size, "viewed int %d: %d", i, all[4 * size + i]);
        unsigned char raw[2048];
        fp = std::fopen(rname, "rb");
        n = fp ? std::fread(raw, 1, 8 * size, fp) : 0;
        if (fp) std::fclose(fp);
        CHECK(n == (size_t)(8 * size), "datarep file length");
        for (int r = 0; r < size && n == (size_t)(8 * size); r++) {
            unsigned v = 0x01020304u + r;
            CHECK(raw[8 * r] == (v >> 24) && raw[8 * r + 3] == (v & 255) && raw[8 * r + 4] == 0xff && raw[8 * r + 7] == 0xfd,
                  "user datarep bytes of rank %d", r);
        }
    }
    int allbad = 0;
    MPI::COMM_WORLD.Allreduce(&bad, &allbad, 1, MPI::INT, MPI::SUM);
    if (rank == 0 && allbad == 0) std::printf("abi_io_cxx: %d ranks ok\n", size);
    MPI::Finalize();
    return allbad != 0;
}
