/* ompi_cxx: a program of Open MPI's C++ bindings (namespace MPI, built with mpicxx.openmpi)
 * that runs on Kumi through libmpi.so.40 and libmpi_cxx.so.40 (components/abi/ompi).
 * Checks: the library is Kumi; MPI::COMM_WORLD Get_rank/Get_size; Send/Recv with MPI::Status;
 * Bcast; Allreduce with MPI::SUM and with user MPI::Ops (two alive at once, 200 created and freed, 100 alive at once); Create_contiguous; Split, Dup,
 * Create_cart (Get_coords, Shift); Grequest::Start and Create_keyval with C++ callbacks; virtual calls on MPI::COMM_WORLD through a reference;
 * a C++ error handler from Comm::Create_errhandler, 40 of them with 40 functions; MPI::ERRORS_THROW_EXCEPTIONS: bad calls throw MPI::Exception with the right class, caught (also
 * from Spawn of a program that does not exist); ERRORS_RETURN again. */
#include <mpi.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#ifndef CXX_NAME
#define CXX_NAME "ompi_cxx"
#endif

static int bad = 0;
#define CHECK(c, ...) do { if (!(c)) { std::printf("rank %d: FAILED %s: ", rank, #c); std::printf(__VA_ARGS__); \
    std::printf("\n"); bad++; } } while (0)

static void user_max(const void *in, void *inout, int len, const MPI::Datatype &dt)
{
    const int *a = (const int *)in;
    int *b = (int *)inout;
    if (dt != MPI::INT) { std::fprintf(stderr, "user_max: datatype is not MPI::INT\n"); std::abort(); }
    for (int i = 0; i < len; i++) if (a[i] > b[i]) b[i] = a[i];
}

/* virtual calls through a reference: the predefined object's vptr (set by libmpi_cxx.so.40) */
static int __attribute__((noinline)) size_of(const MPI::Comm &c) { return c.Get_size(); }

/* a generalized request whose C++ callbacks see the extra state and fill the status */
static int greq_freed;
static int greq_query(void *extra, MPI::Status &st)
{
    st.Set_source(*(int *)extra);
    st.Set_tag(77);
    st.Set_cancelled(false);
    st.Set_elements(MPI::BYTE, 0);
    return MPI::SUCCESS;
}
static int greq_free(void *extra) { greq_freed = *(int *)extra; return MPI::SUCCESS; }
static int greq_cancel(void *, bool) { return MPI::SUCCESS; }

/* attribute callbacks in C++: the copy callback sees the old communicator as an object of its
 * class (virtual calls work), the delete callback runs at Free */
static int copies, deletes;
static int attr_copy(const MPI::Comm &old, int, void *extra, void *in, void *out, bool &flag)
{
    copies += *(int *)extra + (old.Get_size() == MPI::COMM_WORLD.Get_size() ? 0 : 1000);
    *(void **)out = (char *)in + 1;
    flag = true;
    return MPI::SUCCESS;
}
static int attr_delete(MPI::Comm &, int, void *, void *extra)
{
    deletes += *(int *)extra;
    return MPI::SUCCESS;
}

static void user_min(const void *in, void *inout, int len, const MPI::Datatype &)
{
    const int *a = (const int *)in;
    int *b = (int *)inout;
    for (int i = 0; i < len; i++) if (a[i] < b[i]) b[i] = a[i];
}

/* each C++ op adds its own constant: 100 alive at once, every one still right */
template <int K> static void add_k(const void *in, void *inout, int len, const MPI::Datatype &)
{
    const int *a = (const int *)in;
    int *b = (int *)inout;
    for (int i = 0; i < len; i++) b[i] = a[i] + b[i] + K;
}
typedef void (OpFn)(const void *, void *, int, const MPI::Datatype &);
static OpFn *const add_fns[4] = { add_k<0>, add_k<1>, add_k<2>, add_k<3> };
/* 40 C++ error handler functions, each counting its own calls */
static int ehk_calls[40];
template <int K> static void eh_k(MPI::Comm &, int *, ...) { ehk_calls[K]++; }
typedef void (EhFn)(MPI::Comm &, int *, ...);
#define EH4(k) eh_k<k>, eh_k<k + 1>, eh_k<k + 2>, eh_k<k + 3>
static EhFn *const eh_fns[40] = { EH4(0), EH4(4), EH4(8), EH4(12), EH4(16), EH4(20), EH4(24), EH4(28), EH4(32), EH4(36) };

/* a C++ error handler: gets the communicator as an object of its class and the code */
static int eh_calls, eh_class, eh_size;
static void my_eh(MPI::Comm &c, int *code, ...)
{
    eh_calls++;
    MPI_Error_class(*code, &eh_class);
    eh_size = c.Get_size();
}

int main(int argc, char **argv)
{
    MPI::Init(argc, argv);
    int rank = MPI::COMM_WORLD.Get_rank();
    int size = MPI::COMM_WORLD.Get_size();
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(ver, &len);
    if (!std::strstr(ver, "Kumi")) { std::printf("not Kumi: %s\n", ver); MPI::Finalize(); return 1; }
    CHECK(MPI::Is_initialized(), "Is_initialized");
    CHECK(size_of(MPI::COMM_WORLD) == size && size_of(MPI::COMM_SELF) == 1, "virtual Get_size");

    /* point to point with a status */
    if (size >= 2) {
        int v[3] = {rank, 7, 9};
        if (rank == 0) {
            MPI::COMM_WORLD.Send(v, 3, MPI::INT, 1, 42);
        } else if (rank == 1) {
            int r[3] = {0, 0, 0};
            MPI::Status st;
            MPI::COMM_WORLD.Recv(r, 3, MPI::INT, MPI::ANY_SOURCE, MPI::ANY_TAG, st);
            CHECK(st.Get_source() == 0 && st.Get_tag() == 42 && st.Get_count(MPI::INT) == 3, "status %d %d %d",
                  st.Get_source(), st.Get_tag(), st.Get_count(MPI::INT));
            CHECK(r[0] == 0 && r[1] == 7 && r[2] == 9, "recv %d %d %d", r[0], r[1], r[2]);
        }
        MPI::Status st;
        MPI::COMM_WORLD.Sendrecv_replace(v, 1, MPI::INT, (rank + 1) % size, 5, (rank + size - 1) % size, 5, st);
        CHECK(v[0] == (rank + size - 1) % size && st.Get_source() == (rank + size - 1) % size, "sendrecv %d", v[0]);
    }
    /* Bcast, Allreduce */
    double d = rank == size - 1 ? 3.5 : 0;
    MPI::COMM_WORLD.Bcast(&d, 1, MPI::DOUBLE, size - 1);
    CHECK(d == 3.5, "bcast %g", d);
    int s = 0, one = rank + 1;
    MPI::COMM_WORLD.Allreduce(&one, &s, 1, MPI::INT, MPI::SUM);
    CHECK(s == size * (size + 1) / 2, "allreduce sum %d", s);
    /* user op */
    MPI::Op op;
    op.Init(user_max, true);
    int mine[2] = {rank * 10, -rank}, mx[2];
    MPI::COMM_WORLD.Allreduce(mine, mx, 2, MPI::INT, op);
    CHECK(mx[0] == (size - 1) * 10 && mx[1] == 0, "user op %d %d", mx[0], mx[1]);
    /* a second user op alive at once, with another function, also nonblocking */
    MPI::Op op2;
    op2.Init(user_min, true);
    int mn[2] = {7, 7}, mx2[2] = {0, 0};
    MPI_Request rq;   /* (the MPI-2 C++ bindings have no nonblocking collectives) */
    MPI_Iallreduce(mine, mn, 2, MPI_INT, op2, MPI_COMM_WORLD, &rq);
    MPI::COMM_WORLD.Allreduce(mine, mx2, 2, MPI::INT, op);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECK(mn[0] == 0 && mn[1] == -(size - 1), "second user op %d %d", mn[0], mn[1]);
    CHECK(mx2[0] == (size - 1) * 10 && mx2[1] == 0, "first user op again %d %d", mx2[0], mx2[1]);
    op2.Free();
    op.Free();
    /* many ops created and freed */
    for (int k = 0; k < 200; k++) {
        MPI::Op t;
        t.Init(k % 2 ? user_min : user_max, true);
        int v = rank, r = -1;
        MPI::COMM_WORLD.Allreduce(&v, &r, 1, MPI::INT, t);
        if (r != (k % 2 ? 0 : size - 1)) { CHECK(false, "op %d: %d", k, r); break; }
        t.Free();
    }
    /* derived datatype */
    MPI::Datatype pair = MPI::INT.Create_contiguous(2);
    pair.Commit();
    CHECK(pair.Get_size() == 8, "contiguous size %d", pair.Get_size());
    int pv[4] = {rank, rank, rank, rank};
    if (rank == 0) { pv[0] = 11; pv[1] = 12; pv[2] = 13; pv[3] = 14; }
    MPI::COMM_WORLD.Bcast(pv, 2, pair, 0);
    CHECK(pv[0] == 11 && pv[3] == 14, "bcast pair %d %d", pv[0], pv[3]);
    pair.Free();
    /* Split, Dup */
    MPI::Intracomm half = MPI::COMM_WORLD.Split(rank % 2, -rank);
    CHECK(half.Get_size() == (size + 1 - rank % 2) / 2, "split size %d", half.Get_size());
    int hs = 0;
    half.Allreduce(&one, &hs, 1, MPI::INT, MPI::SUM);
    int want = 0;
    for (int r = rank % 2; r < size; r += 2) want += r + 1;
    CHECK(hs == want, "split allreduce %d want %d", hs, want);
    /* key -rank: reverse order within each half */
    int above = 0;
    for (int r = rank + 2; r < size; r += 2) above++;
    CHECK(half.Get_rank() == above, "split rank %d want %d", half.Get_rank(), above);
    MPI::Intracomm dup = MPI::COMM_WORLD.Dup();
    CHECK(MPI::Comm::Compare(dup, MPI::COMM_WORLD) == MPI::CONGRUENT, "dup compare");
    dup.Free();
    half.Free();
    /* Cartesian topology */
    int dims[2] = {0, 0};
    MPI::Compute_dims(size, 2, dims);
    bool periods[2] = {true, false};
    MPI::Cartcomm cart = MPI::COMM_WORLD.Create_cart(2, dims, periods, false);
    CHECK(cart.Get_topology() == MPI::CART, "topology");
    int coords[2];
    cart.Get_coords(cart.Get_rank(), 2, coords);
    CHECK(coords[0] * dims[1] + coords[1] == cart.Get_rank(), "coords %d %d", coords[0], coords[1]);
    int src, dst;
    cart.Shift(0, 1, src, dst);
    CHECK(dst == ((coords[0] + 1) % dims[0]) * dims[1] + coords[1], "shift dst %d", dst);
    cart.Free();
    /* keyvals with C++ callbacks */
    static int kextra = 1;
    int kv = MPI::Comm::Create_keyval(attr_copy, attr_delete, &kextra);
    MPI::Intracomm a = MPI::COMM_WORLD.Dup();
    static char base[4];
    a.Set_attr(kv, base);
    MPI::Intracomm b = a.Dup();
    void *got = 0;
    CHECK(b.Get_attr(kv, &got) && got == base + 1, "copied attribute %p (base %p)", got, (void *)base);
    CHECK(copies == 1, "copy callback %d", copies);
    b.Free();
    a.Free();
    CHECK(deletes == 2, "delete callback %d", deletes);
    MPI::Comm::Free_keyval(kv);
    /* generalized request */
    int gx = 1000 + rank;
    /* (through an object: MPICH's header has Start as a member function, Open MPI's as a static one) */
    MPI::Grequest gr = MPI::Grequest().Start(greq_query, greq_free, greq_cancel, &gx);
    gr.Complete();
    MPI::Status gst;
    gr.Wait(gst);
    CHECK(gst.Get_source() == 1000 + rank && gst.Get_tag() == 77, "grequest status %d %d", gst.Get_source(),
          gst.Get_tag());
    CHECK(greq_freed == 1000 + rank, "grequest free %d", greq_freed);
    /* a C++ error handler */
    {
        MPI::Errhandler eh = MPI::Comm::Create_errhandler(my_eh);
        MPI::Intracomm d = MPI::COMM_WORLD.Dup();
        d.Set_errhandler(eh);
        d.Send(&one, 1, MPI::INT, size + 5, 0);
        CHECK(eh_calls == 1 && eh_class == MPI::ERR_RANK && eh_size == size, "C++ error handler %d %d %d", eh_calls,
              eh_class, eh_size);
        d.Free();
        eh.Free();
    }
    /* many C++ ops alive at once, each with its function (no pool of trampolines to run out of) */
    {
        enum { NOPS = 100 };
        MPI::Op *ops = new MPI::Op[NOPS];
        for (int k = 0; k < NOPS; k++) ops[k].Init(add_fns[k % 4], true);
        for (int k = NOPS - 1; k >= 0; k -= 7) {
            int one = 1, r = -1;
            MPI::COMM_WORLD.Allreduce(&one, &r, 1, MPI::INT, ops[k]);
            if (r != size + (size - 1) * (k % 4)) { CHECK(false, "op %d of %d alive: %d", k, NOPS, r); break; }
        }
        for (int k = 0; k < NOPS; k++) ops[k].Free();
        delete[] ops;
    }
    /* and 40 C++ error handler functions at once, each called for its own communicator */
    {
        enum { NEH = 40 };
        MPI::Errhandler *ehs = new MPI::Errhandler[NEH];
        for (int k = 0; k < NEH; k++) ehs[k] = MPI::Comm::Create_errhandler(eh_fns[k]);
        MPI::Intracomm d = MPI::COMM_WORLD.Dup();
        for (int k = NEH - 1; k >= 0; k -= 3) {
            d.Set_errhandler(ehs[k]);
            d.Send(&one, 1, MPI::INT, size + 9, 0);
            if (ehk_calls[k] != 1) { CHECK(false, "error handler %d of %d: %d calls", k, NEH, ehk_calls[k]); break; }
        }
        d.Free();
        for (int k = 0; k < NEH; k++) ehs[k].Free();
        delete[] ehs;
    }
    /* exceptions */
    MPI::COMM_WORLD.Set_errhandler(MPI::ERRORS_THROW_EXCEPTIONS);
    bool thrown = false;
    try {
        MPI::COMM_WORLD.Send(&one, 1, MPI::INT, size + 5, 0);
    } catch (MPI::Exception &e) {
        thrown = true;
        CHECK(e.Get_error_class() == MPI::ERR_RANK, "exception class %d", e.Get_error_class());
        CHECK(std::strlen(e.Get_error_string()) > 0, "exception string");
    }
    CHECK(thrown, "no exception for a bad rank");
    thrown = false;
    try {
        MPI::COMM_WORLD.Bcast(&one, -1, MPI::INT, 0);
    } catch (MPI::Exception &e) {
        thrown = e.Get_error_class() == MPI::ERR_COUNT;
    }
    CHECK(thrown, "no ERR_COUNT exception for a negative count");
    /* dynamic processes: spawning a program that does not exist fails with
     * MPI::ERR_SPAWN at every rank, thrown through the C frames */
    thrown = false;
    try {
        MPI::Intercomm ic = MPI::COMM_WORLD.Spawn("/nonexistent/kumi-no-such-program", (const char **)0, 1,
                                                  MPI::INFO_NULL, 0);
    } catch (MPI::Exception &e) {
        thrown = e.Get_error_class() == MPI::ERR_SPAWN;
    }
    CHECK(thrown, "no ERR_SPAWN exception from Spawn of a program that does not exist");
    MPI::COMM_WORLD.Set_errhandler(MPI::ERRORS_RETURN);
    int rc = MPI_Send(&one, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
    CHECK(rc != MPI_SUCCESS, "ERRORS_RETURN");

    int all = 0;
    MPI::COMM_WORLD.Allreduce(&bad, &all, 1, MPI::INT, MPI::SUM);
#ifdef CXX_EXTRA
    CXX_EXTRA(rank, size);   /* (an ABI's own checks: tests/abi/mpich_cxx.cc) */
    MPI::COMM_WORLD.Allreduce(&bad, &all, 1, MPI::INT, MPI::SUM);
#endif
    if (rank == 0 && all == 0) std::printf(CXX_NAME ": %d ranks ok\n", size);
    MPI::Finalize();
    return all != 0;
}
