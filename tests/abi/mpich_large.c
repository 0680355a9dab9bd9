/* mpich_large: MPI 4.0's large-count C procedures (MPI_X_c), built with Debian's mpicc.mpich
 * (MPICH 4.0 exports them from libmpich.so.12) and run on Kumi through the shim
 * (tests/scripts/abi_mpich_progs.sh).  Counts of MPI_Count (beyond INT_MAX where nothing is
 * moved: a type of 3 * 2^30 bytes, its size, extent and a status's count), MPI_Aint
 * displacements of the v-collectives, MPICH's handles and status through point-to-point,
 * nonblocking, persistent, collective and RMA forms, pack, and a bad count refused with
 * MPICH's error class.  Prints "mpich_large: N ranks ok". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_check.h"

static int rank, size;
/* a large-count user reduction (MPI_Op_create_c): elementwise max of 2 * a + b, the count an MPI_Count */
static MPI_Count op_calls, op_len;
static void maxish(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt)
{
    int *a = in, *b = inout;
    op_calls++;
    op_len = *len;
    if (*dt != MPI_INT) return;
    for (MPI_Count i = 0; i < *len; i++) b[i] = 2 * a[i] + b[i];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    CHECK(strstr(lib, "Kumi") != NULL, "not Kumi: %.60s", lib);

    /* a type beyond INT_MAX bytes (nothing is sent with it) */
    const MPI_Count big = 3LL << 30;
    MPI_Datatype t;
    OK(MPI_Type_contiguous_c(big, MPI_BYTE, &t));
    OK(MPI_Type_commit(&t));
    MPI_Count sz = 0, lb = -1, ext = 0, tlb = -1, text = 0;
    OK(MPI_Type_size_c(t, &sz));
    CHECK(sz == big, "MPI_Type_size_c: %lld", (long long)sz);
    OK(MPI_Type_get_extent_c(t, &lb, &ext));
    CHECK(lb == 0 && ext == big, "MPI_Type_get_extent_c: %lld %lld", (long long)lb, (long long)ext);
    OK(MPI_Type_get_true_extent_c(t, &tlb, &text));
    CHECK(tlb == 0 && text == big, "MPI_Type_get_true_extent_c");
    int isz = 0;
    OK(MPI_Type_size(t, &isz));
    CHECK(isz == MPI_UNDEFINED, "MPI_Type_size of 3 GiB: %d, not MPICH's MPI_UNDEFINED", isz);
    MPI_Status st;
    OK(MPI_Status_set_elements_x(&st, MPI_BYTE, big));
    MPI_Count got = 0;
    OK(MPI_Get_count_c(&st, MPI_BYTE, &got));
    CHECK(got == big, "MPI_Get_count_c of a status set to 3 GiB: %lld", (long long)got);
    OK(MPI_Get_elements_c(&st, MPI_BYTE, &got));
    CHECK(got == big, "MPI_Get_elements_c");
    OK(MPI_Type_free(&t));
    /* vector with MPI_Count stride, hvector with MPI_Count stride in bytes */
    MPI_Datatype v;
    OK(MPI_Type_vector_c(3, 2, 4, MPI_INT, &v));
    OK(MPI_Type_size_c(v, &sz));
    CHECK(sz == 24, "MPI_Type_vector_c size %lld", (long long)sz);
    OK(MPI_Type_get_extent_c(v, &lb, &ext));
    CHECK(ext == 40, "MPI_Type_vector_c extent %lld", (long long)ext);
    OK(MPI_Type_free(&v));

    /* point to point: a ring, blocking and nonblocking, the status's count */
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int out[8], in[8];
    for (int i = 0; i < 8; i++) out[i] = rank * 100 + i;
    memset(in, 0, sizeof in);
    OK(MPI_Sendrecv_c(out, 8, MPI_INT, next, 7, in, 8, MPI_INT, prev, 7, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 7, "MPI_Sendrecv_c status");
    OK(MPI_Get_count_c(&st, MPI_INT, &got));
    CHECK(got == 8 && in[7] == prev * 100 + 7, "MPI_Sendrecv_c data / count %lld", (long long)got);
    MPI_Request rq[2];
    memset(in, 0, sizeof in);
    OK(MPI_Irecv_c(in, 8, MPI_INT, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Isend_c(out, 5, MPI_INT, next, 8, MPI_COMM_WORLD, &rq[1]));
    MPI_Status sts[2];
    OK(MPI_Waitall(2, rq, sts));
    OK(MPI_Get_count_c(&sts[0], MPI_INT, &got));
    CHECK(got == 5 && sts[0].MPI_SOURCE == prev && in[4] == prev * 100 + 4, "MPI_Isend_c / Irecv_c");
    MPI_Request self_rq = MPI_REQUEST_NULL;
    if (rank == 0) OK(MPI_Issend_c(out, 3, MPI_INT, 0, 9, MPI_COMM_SELF, &self_rq));
    /* persistent */
    OK(MPI_Send_init_c(out, 4, MPI_INT, next, 10, MPI_COMM_WORLD, &rq[1]));
    OK(MPI_Recv_init_c(in, 4, MPI_INT, prev, 10, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Startall(2, rq));
    OK(MPI_Waitall(2, rq, sts));
    CHECK(in[3] == prev * 100 + 3, "persistent _c");
    OK(MPI_Request_free(&rq[0]));
    OK(MPI_Request_free(&rq[1]));
    if (rank == 0) {
        OK(MPI_Recv_c(in, 8, MPI_INT, 0, 9, MPI_COMM_SELF, &st));
        OK(MPI_Get_count_c(&st, MPI_INT, &got));
        CHECK(got == 3 && in[2] == 2, "MPI_Issend_c / MPI_Recv_c to self");
        OK(MPI_Wait(&self_rq, MPI_STATUS_IGNORE));
    }

    /* buffered sends: a buffer for two messages by MPICH's MPI_BSEND_OVERHEAD, attached and
     * detached with the large-count forms (the shim attaches one of Kumi's size) */
    MPI_Count bsz = 2 * (4 * sizeof(int) + MPI_BSEND_OVERHEAD), dsz = 0;
    char *bbuf = malloc((size_t)bsz);
    void *dbuf = NULL;
    OK(MPI_Buffer_attach_c(bbuf, bsz));
    OK(MPI_Bsend_c(out, 4, MPI_INT, next, 12, MPI_COMM_WORLD));
    OK(MPI_Bsend_c(out + 4, 4, MPI_INT, next, 13, MPI_COMM_WORLD));
    OK(MPI_Recv_c(in, 4, MPI_INT, prev, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(in[3] == prev * 100 + 3, "MPI_Bsend_c 1");
    OK(MPI_Recv_c(in, 4, MPI_INT, prev, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(in[3] == prev * 100 + 7, "MPI_Bsend_c 2");
    OK(MPI_Buffer_detach_c(&dbuf, &dsz));
    CHECK(dbuf == bbuf && dsz == bsz, "MPI_Buffer_detach_c: %p %lld, not the program's %p %lld", dbuf, (long long)dsz,
          (void *)bbuf, (long long)bsz);
    free(bbuf);

    /* collectives: bcast, allreduce, alltoallv with MPI_Count counts and MPI_Aint displacements */
    long long b = rank == 0 ? 4242 : 0;
    OK(MPI_Bcast_c(&b, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD));
    CHECK(b == 4242, "MPI_Bcast_c");
    int s = rank + 1, r = 0;
    OK(MPI_Allreduce_c(&s, &r, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(r == size * (size + 1) / 2, "MPI_Allreduce_c %d", r);
    s = rank;
    OK(MPI_Allreduce_c(MPI_IN_PLACE, &s, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    CHECK(s == size - 1, "MPI_Allreduce_c in place");
    MPI_Op uop;
    OK(MPI_Op_create_c(maxish, 1, &uop));
    int ov[3] = { 1, 2, 3 }, orr[3] = { 0, 0, 0 };
    OK(MPI_Reduce_c(ov, orr, 3, MPI_INT, uop, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        /* each combination doubles one side and adds the other: 2^k - 1 + 1 ... at least size times v */
        CHECK(size == 1 || (op_calls > 0 && op_len == 3), "MPI_Op_create_c: called %lld times, len %lld",
              (long long)op_calls, (long long)op_len);
        CHECK(orr[0] >= size && orr[2] == 3 * orr[0], "MPI_Op_create_c: result %d %d %d", orr[0], orr[1], orr[2]);
    }
    OK(MPI_Op_free(&uop));
    int *sb = malloc(sizeof(int) * 2 * size), *rb = malloc(sizeof(int) * 2 * size);
    MPI_Count *sc = malloc(sizeof(MPI_Count) * size), *rc = malloc(sizeof(MPI_Count) * size);
    MPI_Aint *sd = malloc(sizeof(MPI_Aint) * size), *rd = malloc(sizeof(MPI_Aint) * size);
    for (int i = 0; i < size; i++) {
        sc[i] = 2; rc[i] = 2; sd[i] = 2 * (size - 1 - i); rd[i] = 2 * i;   /* sent in reverse order */
        sb[2 * (size - 1 - i)] = rank * 1000 + i;
        sb[2 * (size - 1 - i) + 1] = -(rank * 1000 + i);
    }
    OK(MPI_Alltoallv_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++)
        CHECK(rb[2 * i] == i * 1000 + rank && rb[2 * i + 1] == -(i * 1000 + rank), "MPI_Alltoallv_c from %d", i);
    MPI_Request cr;
    memset(rb, 0, sizeof(int) * 2 * size);
    OK(MPI_Iallgather_c(&rank, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD, &cr));
    OK(MPI_Wait(&cr, MPI_STATUS_IGNORE));
    for (int i = 0; i < size; i++) CHECK(rb[i] == i, "MPI_Iallgather_c");
    for (int i = 0; i < size; i++) { rc[i] = 1; rd[i] = size - 1 - i; }
    OK(MPI_Gatherv_c(&rank, 1, MPI_INT, rb, rc, rd, MPI_INT, 0, MPI_COMM_WORLD));
    if (rank == 0)
        for (int i = 0; i < size; i++) CHECK(rb[size - 1 - i] == i, "MPI_Gatherv_c");

    /* RMA: a window of MPI_Aint size, put and get with MPI_Count counts */
    int *base = NULL;
    MPI_Win w;
    OK(MPI_Win_allocate_c(sizeof(int) * 4, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w));
    memset(base, 0, sizeof(int) * 4);
    OK(MPI_Win_fence(0, w));
    int pv[2] = { rank, rank + 10 };
    OK(MPI_Put_c(pv, 2, MPI_INT, next, 1, 2, MPI_INT, w));
    OK(MPI_Win_fence(0, w));
    CHECK(base[1] == prev && base[2] == prev + 10, "MPI_Put_c");
    int gv[2] = { -1, -1 };
    OK(MPI_Get_c(gv, 2, MPI_INT, prev, 1, 2, MPI_INT, w));
    OK(MPI_Win_fence(0, w));
    CHECK(gv[0] == (prev + size - 1) % size, "MPI_Get_c");
    OK(MPI_Win_free(&w));

    /* pack with MPI_Count sizes and positions */
    MPI_Count psz = 0, pos = 0;
    OK(MPI_Pack_size_c(4, MPI_INT, MPI_COMM_WORLD, &psz));
    CHECK(psz >= 16, "MPI_Pack_size_c %lld", (long long)psz);
    char pbuf[256];
    OK(MPI_Pack_c(out, 4, MPI_INT, pbuf, sizeof pbuf, &pos, MPI_COMM_WORLD));
    CHECK(pos == 16, "MPI_Pack_c position %lld", (long long)pos);
    int back[4];
    MPI_Count upos = 0;
    OK(MPI_Unpack_c(pbuf, pos, &upos, back, 4, MPI_INT, MPI_COMM_WORLD));
    CHECK(upos == 16 && back[3] == out[3], "MPI_Unpack_c");

    /* a negative count: MPICH's MPI_ERR_COUNT through MPI_ERRORS_RETURN */
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int e = MPI_Send_c(out, -1, MPI_INT, next, 11, MPI_COMM_WORLD), cls = -1;
    MPI_Error_class(e, &cls);
    CHECK(e != MPI_SUCCESS && cls == MPI_ERR_COUNT, "MPI_Send_c with count -1: class %d, not MPI_ERR_COUNT (%d)", cls,
          MPI_ERR_COUNT);

    free(sb); free(rb); free(sc); free(rc); free(sd); free(rd);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpich_large: %d ranks ok\n", size);
    MPI_Finalize();
    return 0;
}
