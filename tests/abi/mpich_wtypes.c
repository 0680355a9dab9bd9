/* mpich_wtypes: the MPICH shim's procedures with arrays of datatypes or a type's contents that
 * came late (issue 17): MPI_Alltoallw_init and MPI_Neighbor_alltoallw_init (MPI 4.0 persistent
 * collectives, arrays of MPICH's datatype handles, and their large-count forms _c), and
 * MPI_Type_get_envelope_c / MPI_Type_get_contents_c (the combiner in MPICH's numbering, the
 * datatypes as MPICH handles, MPI_ORDER_* / MPI_DISTRIBUTE_* in MPICH's values, for types made
 * by the int and by the large-count constructors).  Built with Debian's mpicc.mpich, run on
 * Kumi through the shim (tests/scripts/abi_mpich_progs.sh).  Prints "mpich_wtypes: N ranks ok". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_check.h"

static int rank, size;

/* alltoallw: rank r sends to each j the pair (r, j) as MPI_INT x 2, or as a contiguous type */
static void check_a2a(const int *rb, int n, int it)
{
    for (int j = 0; j < n; j++)
        CHECK(rb[2 * j] == j + it && rb[2 * j + 1] == rank, "alltoallw iteration %d: from %d got %d %d", it, j,
              rb[2 * j], rb[2 * j + 1]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = size;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int *sb = malloc(sizeof(int) * 2 * n), *rb = malloc(sizeof(int) * 2 * n);
    int *cnt = malloc(sizeof(int) * n), *dsp = malloc(sizeof(int) * n);
    MPI_Count *ccnt = malloc(sizeof(MPI_Count) * n);
    MPI_Aint *cdsp = malloc(sizeof(MPI_Aint) * n);
    MPI_Datatype *st = malloc(sizeof(MPI_Datatype) * n), *rt = malloc(sizeof(MPI_Datatype) * n), pair;
    OK(MPI_Type_contiguous(2, MPI_INT, &pair));
    OK(MPI_Type_commit(&pair));
    for (int j = 0; j < n; j++) {
        /* mixed: a predefined type with count 2 to even peers, the derived pair to odd ones */
        st[j] = j & 1 ? pair : MPI_INT;
        rt[j] = (rank & 1) ? pair : MPI_INT;
        cnt[j] = j & 1 ? 1 : 2;
        dsp[j] = (int)(sizeof(int) * 2 * j);
        ccnt[j] = cnt[j];
        cdsp[j] = dsp[j];
    }
    int *rcnt = malloc(sizeof(int) * n);
    MPI_Count *rccnt = malloc(sizeof(MPI_Count) * n);
    for (int j = 0; j < n; j++) rccnt[j] = rcnt[j] = (rank & 1) ? 1 : 2;
    for (int form = 0; form < 2; form++) {
        MPI_Request r;
        if (form == 0) OK(MPI_Alltoallw_init(sb, cnt, dsp, st, rb, rcnt, dsp, rt, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
        else OK(MPI_Alltoallw_init_c(sb, ccnt, cdsp, st, rb, rccnt, cdsp, rt, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
        /* the type arrays may change after the call: the schedule keeps its own copy */
        MPI_Datatype keep0 = st[0];
        st[0] = MPI_DATATYPE_NULL;
        for (int it = 0; it < 3; it++) {
            for (int j = 0; j < n; j++) { sb[2 * j] = rank + it; sb[2 * j + 1] = j; rb[2 * j] = rb[2 * j + 1] = -1; }
            OK(MPI_Start(&r));
            OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            check_a2a(rb, n, it);
        }
        st[0] = keep0;
        OK(MPI_Request_free(&r));
    }

    /* a ring (periodic 1-d Cartesian): two neighbours, left then right */
    MPI_Comm ring;
    int dims[1] = { size }, per[1] = { 1 };
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, per, 0, &ring));
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    for (int form = 0; form < 2; form++) {
        int s[2], rr[2], c2[2] = { 1, 1 };
        MPI_Count cc2[2] = { 1, 1 };
        MPI_Aint cd2[2] = { 0, sizeof(int) };
        MPI_Datatype t2[2] = { MPI_INT, MPI_INT };
        MPI_Request r;
        if (form == 0) OK(MPI_Neighbor_alltoallw_init(s, c2, cd2, t2, rr, c2, cd2, t2, ring, MPI_INFO_NULL, &r));
        else OK(MPI_Neighbor_alltoallw_init_c(s, cc2, cd2, t2, rr, cc2, cd2, t2, ring, MPI_INFO_NULL, &r));
        for (int it = 0; it < 3; it++) {
            s[0] = 100 * rank + it;        /* to the left */
            s[1] = 100 * rank + 50 + it;   /* to the right */
            rr[0] = rr[1] = -1;
            OK(MPI_Start(&r));
            OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            CHECK(rr[0] == 100 * left + 50 + it && rr[1] == 100 * right + it, "neighbor alltoallw form %d: %d %d", form,
                  rr[0], rr[1]);
        }
        OK(MPI_Request_free(&r));
    }
    OK(MPI_Comm_free(&ring));

    /* contents: a subarray (int constructor, then the large-count one), a darray, a struct */
    MPI_Count ni, na, nc, nd;
    int comb = -1, ints[64];
    MPI_Aint addrs[16];
    MPI_Count counts[16];
    MPI_Datatype types[8];
    int sizes[2] = { 8, 6 }, subs[2] = { 4, 3 }, starts[2] = { 1, 2 };
    MPI_Datatype sa, sac, da, stt;
    OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_DOUBLE, &sa));
    OK(MPI_Type_get_envelope_c(sa, &ni, &na, &nc, &nd, &comb));
    CHECK(comb == MPI_COMBINER_SUBARRAY && ni == 8 && na == 0 && nc == 0 && nd == 1, "subarray envelope_c: %d %lld %lld %lld %lld",
          comb, (long long)ni, (long long)na, (long long)nc, (long long)nd);
    OK(MPI_Type_get_contents_c(sa, 64, 16, 16, 8, ints, addrs, counts, types));
    CHECK(ints[0] == 2 && ints[1] == 8 && ints[3] == 4 && ints[6] == 2 && ints[7] == MPI_ORDER_FORTRAN && types[0] == MPI_DOUBLE,
          "subarray contents_c: ndims %d order %d (MPI_ORDER_FORTRAN %d) type 0x%x", ints[0], ints[7], MPI_ORDER_FORTRAN,
          (unsigned)types[0]);
    MPI_Count csizes[2] = { 8, 6 }, csubs[2] = { 4, 3 }, cstarts[2] = { 1, 2 };
    OK(MPI_Type_create_subarray_c(2, csizes, csubs, cstarts, MPI_ORDER_C, pair, &sac));
    OK(MPI_Type_get_envelope_c(sac, &ni, &na, &nc, &nd, &comb));
    CHECK(comb == MPI_COMBINER_SUBARRAY && nd == 1, "subarray_c envelope_c: %d", comb);
    CHECK(ni + nc == 8 && ni <= 64 && nc <= 16, "subarray_c envelope_c: %lld integers %lld counts", (long long)ni, (long long)nc);
    OK(MPI_Type_get_contents_c(sac, 64, 16, 16, 8, ints, addrs, counts, types));
    CHECK(ints[ni - 1] == MPI_ORDER_C && types[0] == pair, "subarray_c contents_c: order %d (MPI_ORDER_C %d) type 0x%x",
          ints[ni - 1], MPI_ORDER_C, (unsigned)types[0]);
    int gs[2] = { 16, 10 }, dist[2] = { MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC }, darg[2] = { MPI_DISTRIBUTE_DFLT_DARG, 2 },
        ps[2] = { 1, 1 };
    OK(MPI_Type_create_darray(1, 0, 2, gs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &da));
    OK(MPI_Type_get_envelope_c(da, &ni, &na, &nc, &nd, &comb));
    CHECK(comb == MPI_COMBINER_DARRAY && ni == 12 && nd == 1, "darray envelope_c: %d %lld", comb, (long long)ni);
    OK(MPI_Type_get_contents_c(da, 64, 16, 16, 8, ints, addrs, counts, types));
    CHECK(ints[5] == MPI_DISTRIBUTE_BLOCK && ints[6] == MPI_DISTRIBUTE_CYCLIC && ints[7] == MPI_DISTRIBUTE_DFLT_DARG &&
              ints[8] == 2 && ints[11] == MPI_ORDER_C && types[0] == MPI_INT,
          "darray contents_c: %d %d %d %d order %d", ints[5], ints[6], ints[7], ints[8], ints[11]);
    int bl[2] = { 1, 2 };
    MPI_Aint bd[2] = { 0, 16 };
    MPI_Datatype bt[2] = { pair, MPI_CHAR };
    OK(MPI_Type_create_struct(2, bl, bd, bt, &stt));
    OK(MPI_Type_get_envelope_c(stt, &ni, &na, &nc, &nd, &comb));
    CHECK(comb == MPI_COMBINER_STRUCT && nd == 2, "struct envelope_c: %d", comb);
    memset(types, 0, sizeof types);
    OK(MPI_Type_get_contents_c(stt, 64, 16, 16, 8, ints, addrs, counts, types));
    CHECK(types[0] == pair && types[1] == MPI_CHAR, "struct contents_c: types 0x%x 0x%x", (unsigned)types[0], (unsigned)types[1]);
    CHECK(ni + nc >= 3 && na + nc >= 2, "struct envelope_c counts");
    /* a predefined type: named, no contents */
    OK(MPI_Type_get_envelope_c(MPI_INT, &ni, &na, &nc, &nd, &comb));
    CHECK(comb == MPI_COMBINER_NAMED && ni == 0 && nd == 0, "MPI_INT envelope_c: %d", comb);
    int rc = MPI_Type_get_contents_c(MPI_INT, 64, 16, 16, 8, ints, addrs, counts, types), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && (cls == MPI_ERR_TYPE || cls == MPI_ERR_ARG), "contents_c of MPI_INT: class %d", cls);
    MPI_Type_free(&sa);
    MPI_Type_free(&sac);
    MPI_Type_free(&da);
    MPI_Type_free(&stt);
    MPI_Type_free(&pair);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("mpich_wtypes: %d ranks ok\n", size);
    MPI_Finalize();
    return 0;
}
