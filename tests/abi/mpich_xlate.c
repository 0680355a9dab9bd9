/* mpich_xlate: tests/abi/ompi_xlate.c built with Debian's mpicc.mpich and run on Kumi through the
 * MPICH ABI shim (components/abi/mpich: libmpich.so.12); tests/scripts/abi_mpich_progs.sh runs it.
 * Every check of ompi_xlate.c, with the MPICH header's constants, then what is MPICH's own:
 * integer handles of the right kind (HANDLE_GET_MPI_KIND, bits 26-29) for the objects the
 * program creates, handle table entries given back when objects are freed and requests
 * complete (persistent requests keep theirs), the same handle for the same object, the 20-byte
 * MPI_Status with a count beyond 32 bits, MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY (data symbols),
 * sessions. */
#define XLATE_NAME "mpich_xlate"
#define XLATE_DIR "/abi/mpich"
#define XLATE_LIB "libmpich.so.12"
static void mpich_extra(void);
#define XLATE_EXTRA mpich_extra
#include "ompi_xlate.c"

#define KIND(h) (((unsigned)(h) >> 26) & 0xf)
#define INDEX(h) ((unsigned)(h) & 0x3ffffff)

static void mpich_extra(void)
{
    EQ(sizeof(MPI_Status), 20);
    EQ(sizeof(MPI_Comm), 4);
    /* the program's own objects: handles with the kind bits of the predefined ones */
    MPI_Comm dup;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    EQ(KIND(dup), KIND(MPI_COMM_WORLD));
    CHECK(dup != MPI_COMM_WORLD && dup != MPI_COMM_NULL, "dup");
    MPI_Datatype t;
    OK(MPI_Type_contiguous(3, MPI_INT, &t));
    EQ(KIND(t), KIND(MPI_INT));
    OK(MPI_Type_commit(&t));
    EQ(MPI_Type_f2c(MPI_Type_c2f(t)), t);   /* identity macros */
    MPI_Group g1, g2;
    OK(MPI_Comm_group(dup, &g1));
    OK(MPI_Comm_group(dup, &g2));
    EQ(KIND(g1), KIND(MPI_GROUP_EMPTY));
    int cmp = -1;
    OK(MPI_Group_compare(g1, g2, &cmp));
    EQ(cmp, MPI_IDENT);
    OK(MPI_Group_free(&g1));
    OK(MPI_Group_size(g2, &cmp));           /* the other reference still works */
    EQ(cmp, size);
    OK(MPI_Group_free(&g2));
    EQ(g2, MPI_GROUP_NULL);
    /* requests: entries go back on completion, so handles stay few (a request's index is its low
     * 22 bits: bits 22-25 are the slot's generation, components/abi/mkshim_handles.py) */
    unsigned maxidx = 0;
    int buf = 0, rb = -1;
    for (int i = 0; i < 20000; i++) {
        MPI_Request r[2];
        OK(MPI_Irecv(&rb, 1, MPI_INT, rank, i & 0x7fff, dup, &r[0]));
        OK(MPI_Isend(&i, 1, MPI_INT, rank, i & 0x7fff, dup, &r[1]));
        EQ(KIND(r[0]), KIND(MPI_REQUEST_NULL));
        if ((INDEX(r[0]) & 0x3fffff) > maxidx) maxidx = INDEX(r[0]) & 0x3fffff;
        if (i & 1) OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        else { OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE)); int f = 0; while (!f) OK(MPI_Test(&r[0], &f, MPI_STATUS_IGNORE)); }
        EQ(r[0], MPI_REQUEST_NULL);
        EQ(r[1], MPI_REQUEST_NULL);
        EQ(rb, i);
    }
    CHECK(maxidx < 4096, "request handles are not reused (index %u)", maxidx);
    /* persistent: the handle stays across completions until MPI_Request_free */
    MPI_Request ps, pr;
    OK(MPI_Send_init(&buf, 1, MPI_INT, rank, 5, dup, &ps));
    OK(MPI_Recv_init(&rb, 1, MPI_INT, rank, 5, dup, &pr));
    MPI_Request ps0 = ps;
    for (int i = 0; i < 3; i++) {
        buf = 100 + i;
        OK(MPI_Start(&pr));
        OK(MPI_Start(&ps));
        MPI_Status st;
        OK(MPI_Wait(&pr, &st));
        OK(MPI_Wait(&ps, MPI_STATUS_IGNORE));
        EQ(ps, ps0);
        EQ(rb, 100 + i);
        EQ(st.MPI_SOURCE, rank);
        EQ(st.MPI_TAG, 5);
    }
    OK(MPI_Request_free(&ps));
    OK(MPI_Request_free(&pr));
    EQ(ps, MPI_REQUEST_NULL);
    /* a count beyond 32 bits in the 20-byte status */
    MPI_Status st;
    MPI_Count big = ((MPI_Count)5 << 32) + 7, got = 0;
    OK(MPI_Status_set_elements_x(&st, MPI_BYTE, big));
    OK(MPI_Get_elements_x(&st, MPI_BYTE, &got));
    EQ(got, big);
    OK(MPI_Status_set_cancelled(&st, 1));
    int flag = 0;
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "cancelled with a large count");
    OK(MPI_Get_elements_x(&st, MPI_BYTE, &got));
    EQ(got, big);
    /* MPI_UNWEIGHTED: a data symbol of the library */
    int src = (rank + size - 1) % size, dst = (rank + 1) % size;
    MPI_Comm ring;
    OK(MPI_Dist_graph_create_adjacent(dup, 1, &src, MPI_UNWEIGHTED, 1, &dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring));
    int indeg = -1, outdeg = -1, weighted = -1;
    OK(MPI_Dist_graph_neighbors_count(ring, &indeg, &outdeg, &weighted));
    EQ(indeg, 1);
    EQ(outdeg, 1);
    EQ(weighted, 0);
    EQ(KIND(ring), KIND(MPI_COMM_WORLD));
    OK(MPI_Comm_free(&ring));
    EQ(ring, MPI_COMM_NULL);
    /* a freed handle is invalid afterwards (its entry was given back) */
    MPI_Comm stale = dup;
    OK(MPI_Comm_free(&dup));
    EQ(dup, MPI_COMM_NULL);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    ERRCLASS(MPI_Comm_size(stale, &cmp), MPI_ERR_COMM);
    ERRCLASS(MPI_Comm_size((MPI_Comm)0x44000077, &cmp), MPI_ERR_COMM);
    OK(MPI_Type_free(&t));
    EQ(t, MPI_DATATYPE_NULL);
    /* sessions (MPICH 4 has them): int handles of their own kind */
    MPI_Session ses;
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &ses));
    EQ(KIND(ses), KIND(MPI_SESSION_NULL));
    int np = 0;
    OK(MPI_Session_get_num_psets(ses, MPI_INFO_NULL, &np));
    CHECK(np >= 2, "%d process sets", np);
    MPI_Group wg;
    OK(MPI_Group_from_session_pset(ses, "mpi://WORLD", &wg));
    OK(MPI_Group_size(wg, &np));
    EQ(np, size);
    MPI_Comm sc;
    OK(MPI_Comm_create_from_group(wg, "kumi.abi.mpich", MPI_INFO_NULL, MPI_ERRORS_RETURN, &sc));
    OK(MPI_Allreduce(&rank, &np, 1, MPI_INT, MPI_SUM, sc));
    EQ(np, size * (size - 1) / 2);
    OK(MPI_Comm_free(&sc));
    OK(MPI_Group_free(&wg));
    OK(MPI_Session_finalize(&ses));
    EQ(ses, MPI_SESSION_NULL);
}
