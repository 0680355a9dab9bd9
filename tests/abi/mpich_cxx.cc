/* mpich_cxx: tests/abi/ompi_cxx.cc built with Debian's mpicxx.mpich (MPICH's C++ bindings) and
 * run on Kumi through the MPICH ABI shim (libmpich.so.12) and its C++ companion
 * (components/abi/mpichcxx: libmpichcxx.so.12); tests/scripts/abi_mpich_cxx.sh runs it.
 * Every check of ompi_cxx.cc, then MPICH's own: what MPICH's library defines out of line
 * (Datatype::Pack / Unpack / Pack_size, Intercomm::Merge, Intracomm::Create_graph,
 * Datatype::Create_keyval with C++ callbacks, Win::Create_errhandler, MPI::Get_error_class,
 * Compute_dims, Alloc_mem), persistent and nonblocking requests with MPI::Status arrays, the
 * constants the library defines (MPI::ANY_SOURCE, MPI::ERR_RANK, MPI::IN_PLACE: MPICH's values),
 * exceptions from the out-of-line functions, and that the libraries in the process are Kumi's. */
#define CXX_NAME "mpich_cxx"
static void mpich_extra(int rank, int size);
#define CXX_EXTRA mpich_extra
#include "ompi_cxx.cc"

static int type_copies, type_deletes;
static int type_copy(const MPI::Datatype &old, int, void *extra, void *in, void *out, bool &flag)
{
    type_copies += *(int *)extra + (old.Get_size() == 8 ? 0 : 1000);
    *(void **)out = in;
    flag = true;
    return MPI::SUCCESS;
}
static int type_delete(MPI::Datatype &, int, void *, void *extra)
{
    type_deletes += *(int *)extra;
    return MPI::SUCCESS;
}
static int win_eh_calls, win_eh_class;
static void win_eh(MPI::Win &, int *code, ...)
{
    win_eh_calls++;
    win_eh_class = MPI::Get_error_class(*code);
}
static void mpich_extra(int rank, int size)
{
    /* the libraries of the process: Kumi's shim and C++ companion, MPICH's constants */
    {
        FILE *f = std::fopen("/proc/self/maps", "r");
        char line[4096];
        bool cxx = false, shim = false;
        while (f && std::fgets(line, sizeof line, f)) {
            if (std::strstr(line, "/abi/mpich") && std::strstr(line, "libmpichcxx.so.12")) cxx = true;
            if (std::strstr(line, "/abi/mpich") && std::strstr(line, "libmpich.so.12")) shim = true;
        }
        if (f) std::fclose(f);
        CHECK(cxx && shim, "Kumi's libmpichcxx.so.12 %d and libmpich.so.12 %d mapped", cxx, shim);
    }
    CHECK(MPI::ANY_SOURCE == MPI_ANY_SOURCE && MPI::PROC_NULL == MPI_PROC_NULL && MPI::ROOT == MPI_ROOT,
          "constants %d %d %d", MPI::ANY_SOURCE, MPI::PROC_NULL, MPI::ROOT);
    CHECK(MPI::ERR_RANK == MPI_ERR_RANK && MPI::ERR_UNSUPPORTED_OPERATION == MPI_ERR_UNSUPPORTED_OPERATION &&
          MPI::MAX_ERROR_STRING == MPI_MAX_ERROR_STRING, "error constants");
    CHECK(MPI::IN_PLACE == MPI_IN_PLACE && MPI::BOTTOM == MPI_BOTTOM, "IN_PLACE %p BOTTOM %p", MPI::IN_PLACE,
          MPI::BOTTOM);
    CHECK((MPI_Comm)MPI::COMM_WORLD == MPI_COMM_WORLD && (MPI_Datatype)MPI::DOUBLE == MPI_DOUBLE &&
          (MPI_Op)MPI::MAXLOC == MPI_MAXLOC && (MPI_Comm)MPI::COMM_NULL == MPI_COMM_NULL, "predefined handles");
    int v = 0, sv = 0;
    MPI::Get_version(v, sv);
    CHECK(v >= 3, "Get_version %d.%d", v, sv);
    CHECK(MPI::Get_error_class(MPI::ERR_TAG) == MPI::ERR_TAG, "Get_error_class");
    /* IN_PLACE through the bindings */
    int x = rank + 1;
    MPI::COMM_WORLD.Allreduce(MPI::IN_PLACE, &x, 1, MPI::INT, MPI::SUM);
    CHECK(x == size * (size + 1) / 2, "Allreduce IN_PLACE %d", x);

    /* Pack / Unpack / Pack_size (out of line in MPICH's library) */
    int in[3] = {rank, rank + 1, rank + 2}, back[3] = {0, 0, 0};
    int psize = MPI::INT.Pack_size(3, MPI::COMM_WORLD);
    CHECK(psize >= 12, "Pack_size %d", psize);
    char buf[256];
    int pos = 0;
    MPI::INT.Pack(in, 3, buf, sizeof buf, pos, MPI::COMM_WORLD);
    CHECK(pos == 12, "Pack position %d", pos);
    pos = 0;
    MPI::INT.Unpack(buf, sizeof buf, back, 3, pos, MPI::COMM_WORLD);
    CHECK(back[0] == rank && back[2] == rank + 2 && pos == 12, "Unpack %d %d %d", back[0], back[2], pos);

    /* nonblocking and persistent requests, MPI::Status arrays */
    {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        int out = rank * 3, got = -1;
        MPI::Request rq[2];
        rq[0] = MPI::COMM_WORLD.Irecv(&got, 1, MPI::INT, left, 8);
        rq[1] = MPI::COMM_WORLD.Isend(&out, 1, MPI::INT, right, 8);
        MPI::Status sts[2];
        MPI::Request::Waitall(2, rq, sts);
        CHECK(got == left * 3 && sts[0].Get_source() == left && sts[0].Get_tag() == 8 &&
              sts[0].Get_count(MPI::INT) == 1, "Irecv/Isend %d from %d tag %d", got, sts[0].Get_source(),
              sts[0].Get_tag());
        CHECK(rq[0] == MPI::REQUEST_NULL, "completed request");
        MPI::Prequest ps = MPI::COMM_WORLD.Send_init(&out, 1, MPI::INT, right, 9);
        MPI::Prequest pr = MPI::COMM_WORLD.Recv_init(&got, 1, MPI::INT, left, 9);
        for (int k = 0; k < 3; k++) {
            out = 100 * k + rank;
            got = -1;
            pr.Start();
            ps.Start();
            MPI::Status st;
            pr.Wait(st);
            ps.Wait();
            CHECK(got == 100 * k + left && st.Get_source() == left, "persistent round %d: %d", k, got);
        }
        ps.Free();
        pr.Free();
    }

    /* Datatype keyvals with C++ callbacks */
    {
        static int dextra = 5;
        int kv = MPI::Datatype::Create_keyval(type_copy, type_delete, &dextra);
        MPI::Datatype t = MPI::INT.Create_contiguous(2);
        static char tag;
        t.Set_attr(kv, &tag);
        MPI::Datatype t2 = t.Dup();
        void *got = 0;
        CHECK(t2.Get_attr(kv, &got) && got == &tag, "type attribute copied %p", got);
        CHECK(type_copies == 5, "type copy callback %d", type_copies);
        t2.Free();
        t.Free();
        CHECK(type_deletes == 10, "type delete callback %d", type_deletes);
        MPI::Datatype::Free_keyval(kv);
    }

    /* an intercommunicator, merged (Intercomm::Merge: out of line in MPICH's library) */
    if (size >= 2) {
        MPI::Intracomm half = MPI::COMM_WORLD.Split(rank % 2, rank);
        MPI::Intercomm ic = half.Create_intercomm(0, MPI::COMM_WORLD, rank % 2 ? 0 : 1, 3);
        CHECK(ic.Is_inter() && ic.Get_remote_size() == size - half.Get_size(), "intercomm remote size %d",
              ic.Get_remote_size());
        MPI::Intracomm m = ic.Merge(rank % 2 != 0);
        CHECK(m.Get_size() == size, "merged size %d", m.Get_size());
        int mr = m.Get_rank();
        int want = rank % 2 ? size / 2 + (size % 2) + rank / 2 : rank / 2;
        CHECK(mr == want, "merged rank %d want %d", mr, want);
        m.Free();
        ic.Free();
        half.Free();
    }

    /* a graph topology (Intracomm::Create_graph: out of line) */
    {
        int *index = new int[size], *edges = new int[2 * size];
        for (int i = 0; i < size; i++) {
            index[i] = 2 * (i + 1);
            edges[2 * i] = (i + 1) % size;
            edges[2 * i + 1] = (i + size - 1) % size;
        }
        MPI::Graphcomm g = MPI::COMM_WORLD.Create_graph(size, index, edges, false);
        CHECK(g.Get_topology() == MPI::GRAPH, "graph topology");
        CHECK(g.Get_neighbors_count(rank) == 2, "graph neighbours %d", g.Get_neighbors_count(rank));
        g.Free();
        delete[] index;
        delete[] edges;
    }

    /* a window's C++ error handler (Win::Create_errhandler) and Win::Call_errhandler */
    {
        int wbuf = 0;
        MPI::Win w = MPI::Win::Create(&wbuf, sizeof wbuf, sizeof wbuf, MPI::INFO_NULL, MPI::COMM_WORLD);
        MPI::Errhandler weh = MPI::Win::Create_errhandler(win_eh);
        w.Set_errhandler(weh);
        w.Call_errhandler(MPI::ERR_OTHER);
        CHECK(win_eh_calls == 1 && win_eh_class == MPI::ERR_OTHER, "window error handler %d %d", win_eh_calls,
              win_eh_class);
        w.Set_errhandler(MPI::ERRORS_THROW_EXCEPTIONS);
        bool thrown = false;
        try {
            w.Call_errhandler(MPI::ERR_ARG);
        } catch (MPI::Exception &e) {
            thrown = e.Get_error_code() == MPI::ERR_ARG;
        }
        CHECK(thrown, "window: no exception");
        weh.Free();
        w.Free();
    }

    /* exceptions from MPICH's out-of-line functions and from MPIX_CALLWORLD (MPI_COMM_WORLD's
     * handler) */
    MPI::COMM_WORLD.Set_errhandler(MPI::ERRORS_THROW_EXCEPTIONS);
    bool thrown = false;
    try {
        int dims[2] = {size + 1, 1};
        bool per[2] = {false, false};
        MPI::Cartcomm c = MPI::COMM_WORLD.Create_cart(2, dims, per, false);
    } catch (MPI::Exception &e) {
        thrown = true;
    }
    CHECK(thrown, "Create_cart larger than the communicator: no exception");
    thrown = false;
    try {
        MPI::Datatype t = MPI::INT.Create_contiguous(-1);
    } catch (MPI::Exception &e) {
        thrown = e.Get_error_class() == MPI::ERR_COUNT || e.Get_error_class() == MPI::ERR_ARG;
    }
    CHECK(thrown, "Create_contiguous(-1): no exception");
    thrown = false;
    try {
        MPI::Comm::Join(-1);
    } catch (MPI::Exception &e) {
        thrown = true;
    }
    CHECK(thrown, "Join: no exception");
    MPI::COMM_WORLD.Set_errhandler(MPI::ERRORS_RETURN);
    void *mem = MPI::Alloc_mem(64, MPI::INFO_NULL);
    CHECK(mem != 0, "Alloc_mem");
    std::memset(mem, 1, 64);
    MPI::Free_mem(mem);
    int dims[3] = {0, 0, 0};
    MPI::Compute_dims(size * 2, 3, dims);
    CHECK(dims[0] * dims[1] * dims[2] == size * 2, "Compute_dims %d %d %d", dims[0], dims[1], dims[2]);
    CHECK(MPI::Wtime() > 0 && MPI::Wtick() > 0, "Wtime");
}
