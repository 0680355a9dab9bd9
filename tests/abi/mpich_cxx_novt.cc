/* mpich_cxx_novt: a program of MPICH's C++ bindings (built -O0 with mpicxx.mpich) that reaches the
 * communicators only through references (MPI::Comm &, MPI::Intracomm &) to MPI::COMM_WORLD and
 * never constructs one: it emits no copy of the methods it calls virtually, so every call goes
 * through the vtable of libmpichcxx.so.12 (components/abi/mpichcxx) to its own functions
 * (point to point, nonblocking, collectives, Split, Dup, names, errors; datatypes and windows
 * through references too).
 * tests/scripts/abi_mpich_cxx.sh runs it at 2 ranks; with the argument "missing" it then calls a
 * method that neither it nor the library has, which must stop it with a message naming the
 * method (the documented limit of the library's vtables). */
#include <mpi.h>
#include <cstdio>
#include <cstring>

static int bad;
#define CHECK(c, ...) do { if (!(c)) { std::printf("FAILED %s: ", #c); std::printf(__VA_ARGS__); std::printf("\n"); bad++; } } while (0)

static void work(const MPI::Comm &c, const MPI::Intracomm &ic)
{
    int rank = c.Get_rank(), size = c.Get_size();
    int v = rank + 1, s = 0, mx = -1;
    c.Allreduce(&v, &s, 1, MPI::INT, MPI::SUM);
    CHECK(s == size * (size + 1) / 2, "Allreduce %d", s);
    c.Reduce(&v, &mx, 1, MPI::INT, MPI::MAX, 0);
    CHECK(rank != 0 || mx == size, "Reduce %d", mx);
    double d = rank == 0 ? 2.5 : 0;
    c.Bcast(&d, 1, MPI::DOUBLE, 0);
    CHECK(d == 2.5, "Bcast %g", d);
    c.Barrier();
    if (size >= 2) {
        int x = 40 + rank, y = -1;
        if (rank == 0) {
            c.Send(&x, 1, MPI::INT, 1, 3);
        } else if (rank == 1) {
            MPI::Status st;
            c.Recv(&y, 1, MPI::INT, 0, 3, st);
            CHECK(y == 40 && st.Get_source() == 0 && st.Get_tag() == 3 && st.Get_count(MPI::INT) == 1,
                  "Recv %d from %d", y, st.Get_source());
            c.Send(&x, 1, MPI::INT, 0, 4);
        }
        if (rank == 0) {
            c.Recv(&y, 1, MPI::INT, 1, 4);
            CHECK(y == 41, "Recv without status %d", y);
        }
    }
    CHECK(ic.Get_size() == size, "through MPI::Intracomm &");
    CHECK(!c.Is_inter() && c.Get_topology() == MPI::UNDEFINED, "Is_inter, Get_topology");
    /* nonblocking, Sendrecv, more collectives, Split, Dup, names through the references */
    int right = (rank + 1) % size, left = (rank + size - 1) % size, got = -1, out = rank + 100;
    MPI::Request r1 = c.Irecv(&got, 1, MPI::INT, left, 6);
    MPI::Request r2 = c.Isend(&out, 1, MPI::INT, right, 6);
    MPI::Status st;
    r1.Wait(st);
    r2.Wait();
    CHECK(got == left + 100 && st.Get_source() == left, "Isend/Irecv %d", got);
    got = -1;
    c.Sendrecv(&out, 1, MPI::INT, right, 7, &got, 1, MPI::INT, left, 7, st);
    CHECK(got == left + 100 && st.Get_tag() == 7, "Sendrecv %d", got);
    int *all = new int[size];
    c.Allgather(&rank, 1, MPI::INT, all, 1, MPI::INT);
    for (int i = 0; i < size; i++) CHECK(all[i] == i, "Allgather [%d] %d", i, all[i]);
    for (int i = 0; i < size; i++) all[i] = -1;
    c.Gather(&rank, 1, MPI::INT, all, 1, MPI::INT, size - 1);
    if (rank == size - 1) for (int i = 0; i < size; i++) CHECK(all[i] == i, "Gather [%d] %d", i, all[i]);
    delete[] all;
    int pre = 0;
    ic.Scan(&v, &pre, 1, MPI::INT, MPI::SUM);
    CHECK(pre == (rank + 1) * (rank + 2) / 2, "Scan %d", pre);
    MPI::Intracomm half = ic.Split(rank % 2, rank);
    CHECK(half.Get_size() == (size + 1 - rank % 2) / 2, "Split size %d", half.Get_size());
    half.Free();
    MPI::Intracomm dd = ic.Dup();
    int cmp = MPI::Comm::Compare(dd, c);
    CHECK(cmp == MPI::CONGRUENT, "Dup: compare %d", cmp);
    dd.Free();
    char name[MPI_MAX_OBJECT_NAME];
    int len = 0;
    c.Get_name(name, len);
    CHECK(std::strcmp(name, "MPI_COMM_WORLD") == 0, "Get_name %s", name);
    /* errors: through the library's Call_errhandler */
    bool thrown = false;
    try {
        c.Send(&v, 1, MPI::INT, size + 3, 0);
    } catch (MPI::Exception &e) {
        thrown = e.Get_error_class() == MPI::ERR_RANK;
    }
    CHECK(thrown, "no exception from Send to a bad rank");
}

/* datatypes and windows through references (their vtables are the library's: MPICH defines
 * Datatype::Pack and Win::Call_errhandler out of line) */
static void types_and_windows(const MPI::Datatype &intt, MPI::Datatype &scratch, const MPI::Comm &c)
{
    int rank = c.Get_rank(), size = c.Get_size();
    MPI::Datatype v = intt.Create_vector(2, 1, 3);
    scratch = v;
    scratch.Commit();
    MPI::Aint lb = -1, ext = -1;
    scratch.Get_extent(lb, ext);
    CHECK(lb == 0 && ext == 4 * 4 && scratch.Get_size() == 8, "vector extent %ld size %d", (long)ext, scratch.Get_size());
    scratch.Set_name("kumi_vec");
    char name[MPI_MAX_OBJECT_NAME];
    int len = 0;
    scratch.Get_name(name, len);
    CHECK(std::strcmp(name, "kumi_vec") == 0, "type name %s", name);
    scratch.Free();
    int wbuf[2] = {-1, -1};
    MPI::Win w = MPI::Win::Create(wbuf, sizeof wbuf, sizeof(int), MPI::INFO_NULL, MPI::COMM_WORLD);
    MPI::Win &wr = w;
    wr.Fence(0);
    int val = rank;
    wr.Put(&val, 1, intt, (rank + 1) % size, 0, 1, intt);
    wr.Fence(0);
    CHECK(wbuf[0] == (rank + size - 1) % size, "Put through a Win & %d", wbuf[0]);
    wr.Lock(MPI::LOCK_SHARED, (rank + 1) % size, 0);
    int got = -1;
    wr.Get(&got, 1, intt, (rank + 1) % size, 0, 1, intt);
    wr.Unlock((rank + 1) % size);
    CHECK(got == rank, "Get through a Win & %d", got);
    wr.Free();
}

static void missing(const MPI::Comm &c)
{
    std::printf("calling Reduce_scatter_block\n");
    std::fflush(stdout);
    int a = 1, b = 0;
    c.Reduce_scatter_block(&a, &b, 1, MPI::INT, MPI::SUM);
    std::printf("Reduce_scatter_block returned %d\n", b);
}

int main(int argc, char **argv)
{
    MPI::Init(argc, argv);
    MPI::COMM_WORLD.Set_errhandler(MPI::ERRORS_THROW_EXCEPTIONS);
    work(MPI::COMM_WORLD, MPI::COMM_WORLD);
    MPI::Datatype scratch;
    types_and_windows(MPI::INT, scratch, MPI::COMM_WORLD);
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0 && all == 0) std::printf("mpich_cxx_novt: ok\n");
    std::fflush(stdout);
    if (argc > 1 && std::strcmp(argv[1], "missing") == 0) missing(MPI::COMM_WORLD);
    MPI::Finalize();
    return all != 0;
}
