/* Datatype constructors: size, extent, true extent, envelope and contents
 * against hand-computed values; Pack/Unpack round trips and byte images;
 * element counts of partial messages; reductions on derived types; errors. */
#include "kt.h"
#include <stddef.h>
#include <stdint.h>

static void chk(MPI_Datatype t, MPI_Count size, MPI_Aint lb, MPI_Aint ext, MPI_Aint tlb, MPI_Aint text, int line)
{
    int s; MPI_Aint a, b; MPI_Count cs, cl, ce;
    KT_MPI(MPI_Type_size(t, &s));
    if (s != size) KT_FAIL("line %d: size %d, expected %lld", line, s, (long long)size);
    KT_MPI(MPI_Type_size_x(t, &cs));
    KT_EQ_INT(cs, size);
    KT_MPI(MPI_Type_get_extent(t, &a, &b));
    if (a != lb || b != ext) KT_FAIL("line %d: lb/extent %ld/%ld, expected %ld/%ld", line, (long)a, (long)b, (long)lb, (long)ext);
    KT_MPI(MPI_Type_get_extent_x(t, &cl, &ce));
    KT_EQ_INT(cl, lb); KT_EQ_INT(ce, ext);
    KT_MPI(MPI_Type_get_true_extent(t, &a, &b));
    if (a != tlb || b != text) KT_FAIL("line %d: true lb/extent %ld/%ld, expected %ld/%ld", line, (long)a, (long)b, (long)tlb, (long)text);
    KT_MPI(MPI_Type_get_true_extent_c(t, &cl, &ce));
    KT_EQ_INT(cl, tlb); KT_EQ_INT(ce, text);
}
#define CHK(t, s, lb, e, tlb, te) chk(t, s, lb, e, tlb, te, __LINE__)

/* envelope and contents: ints / addrs / types as expected */
static void env(MPI_Datatype t, int comb, int ni, const int *iv, int na, const MPI_Aint *av, int nt,
                const MPI_Datatype *tv, int line)
{
    int a, b, c, k;
    KT_MPI(MPI_Type_get_envelope(t, &a, &b, &c, &k));
    if (k != comb || a != ni || b != na || c != nt)
        KT_FAIL("line %d: envelope %d/%d/%d comb %d, expected %d/%d/%d comb %d", line, a, b, c, k, ni, na, nt, comb);
    int ints[64]; MPI_Aint addrs[64]; MPI_Datatype types[64];
    KT_MPI(MPI_Type_get_contents(t, 64, 64, 64, ints, addrs, types));
    for (int i = 0; i < ni; i++) if (ints[i] != iv[i]) KT_FAIL("line %d: ints[%d] = %d, expected %d", line, i, ints[i], iv[i]);
    for (int i = 0; i < na; i++) if (addrs[i] != av[i]) KT_FAIL("line %d: addrs[%d] = %ld, expected %ld", line, i, (long)addrs[i], (long)av[i]);
    for (int i = 0; i < nt; i++) {
        if (types[i] != tv[i]) KT_FAIL("line %d: types[%d] differs", line, i);
        int x, y, z, kk;
        MPI_Type_get_envelope(types[i], &x, &y, &z, &kk);
        if (kk != MPI_COMBINER_NAMED) KT_MPI(MPI_Type_free(&types[i]));
    }
}
#define ENV(t, comb, ni, iv, na, av, nt, tv) env(t, comb, ni, iv, na, av, nt, tv, __LINE__)

/* Pack count elements of t from a buffer of bytes 0,1,2,... and compare with
 * the expected byte offsets (the type map); unpack into a poisoned buffer. */
static void packcheck(MPI_Datatype t, int count, const int *offs, int noffs, int span, int base, int line)
{
    unsigned char *src = malloc((size_t)span), *dst = malloc((size_t)span), *pk = malloc((size_t)noffs + 8);
    for (int i = 0; i < span; i++) src[i] = (unsigned char)(i * 7 + 1);
    int sz, pos = 0;
    KT_MPI(MPI_Pack_size(count, t, MPI_COMM_WORLD, &sz));
    if (sz != noffs) KT_FAIL("line %d: Pack_size %d, expected %d", line, sz, noffs);
    KT_MPI(MPI_Pack(src + base, count, t, pk, noffs + 8, &pos, MPI_COMM_WORLD));
    KT_EQ_INT(pos, noffs);
    for (int i = 0; i < noffs; i++)
        if (pk[i] != src[base + offs[i]]) KT_FAIL("line %d: packed byte %d is %d, expected byte at offset %d (%d)",
                                                  line, i, pk[i], offs[i], src[base + offs[i]]);
    memset(dst, 0xee, (size_t)span);
    pos = 0;
    KT_MPI(MPI_Unpack(pk, noffs, &pos, dst + base, count, t, MPI_COMM_WORLD));
    KT_EQ_INT(pos, noffs);
    char *hit = calloc((size_t)span, 1);
    for (int i = 0; i < noffs; i++) hit[base + offs[i]] = 1;
    for (int i = 0; i < span; i++)
        if (hit[i] ? dst[i] != src[i] : dst[i] != 0xee) KT_FAIL("line %d: unpacked byte %d is %d", line, i - base, dst[i]);
    free(hit); free(src); free(dst); free(pk);
}

/* offsets of count elements: runs of (offset, len) of one element, extent */
static int mkoffs(int *o, int count, MPI_Aint ext, const int *runs, int nruns)
{
    int n = 0;
    for (int e = 0; e < count; e++)
        for (int r = 0; r < nruns; r++)
            for (int b = 0; b < runs[2 * r + 1]; b++) o[n++] = (int)(e * ext) + runs[2 * r] + b;
    return n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    static int offs[1 << 16];
    int n;
    MPI_Datatype t, u, w;

    /* contiguous */
    KT_MPI(MPI_Type_contiguous(3, MPI_INT, &t));
    CHK(t, 12, 0, 12, 0, 12);
    { int iv[] = { 3 }; MPI_Datatype tv[] = { MPI_INT }; ENV(t, MPI_COMBINER_CONTIGUOUS, 1, iv, 0, NULL, 1, tv); }
    KT_MPI(MPI_Type_commit(&t));
    { int r[] = { 0, 12 }; n = mkoffs(offs, 2, 12, r, 1); packcheck(t, 2, offs, n, 64, 0, __LINE__); }
    MPI_Type_free(&t);
    KT_CHECK(t == MPI_DATATYPE_NULL);

    /* vector */
    KT_MPI(MPI_Type_vector(3, 2, 4, MPI_INT, &t));
    CHK(t, 24, 0, 40, 0, 40);
    { int iv[] = { 3, 2, 4 }; MPI_Datatype tv[] = { MPI_INT }; ENV(t, MPI_COMBINER_VECTOR, 3, iv, 0, NULL, 1, tv); }
    KT_MPI(MPI_Type_commit(&t));
    { int r[] = { 0, 8, 16, 8, 32, 8 }; n = mkoffs(offs, 3, 40, r, 3); packcheck(t, 3, offs, n, 200, 0, __LINE__); }
    /* reduction on a vector of doubles leaves the holes alone */
    MPI_Type_free(&t);
    KT_MPI(MPI_Type_vector(4, 1, 2, MPI_DOUBLE, &t));
    KT_MPI(MPI_Type_commit(&t));
    {
        double in[16], io[16];
        for (int i = 0; i < 16; i++) { in[i] = i; io[i] = 100 + i; }
        KT_MPI(MPI_Reduce_local(in, io, 2, t, MPI_SUM));
        for (int i = 0; i < 16; i++) {
            int hit = (i <= 6 && i % 2 == 0) || (i >= 7 && i <= 13 && i % 2 == 1);   /* extent 7 doubles */
            double want = hit ? 100 + 2 * i : 100 + i;
            if (io[i] != want) KT_FAIL("reduce_local on vector: io[%d] = %g, expected %g", i, io[i], want);
        }
    }
    MPI_Type_free(&t);

    /* vector with a negative stride: blocks at 0, -8, -16 */
    KT_MPI(MPI_Type_vector(3, 1, -2, MPI_INT, &t));
    CHK(t, 12, -16, 20, -16, 20);
    KT_MPI(MPI_Type_commit(&t));
    { int r[] = { 0, 4, -8, 4, -16, 4 }; n = mkoffs(offs, 1, 20, r, 3); packcheck(t, 1, offs, n, 64, 32, __LINE__); }
    MPI_Type_free(&t);

    /* hvector */
    KT_MPI(MPI_Type_create_hvector(2, 3, 20, MPI_SHORT, &t));
    CHK(t, 12, 0, 26, 0, 26);
    { int iv[] = { 2, 3 }; MPI_Aint av[] = { 20 }; MPI_Datatype tv[] = { MPI_SHORT };
      ENV(t, MPI_COMBINER_HVECTOR, 2, iv, 1, av, 1, tv); }
    KT_MPI(MPI_Type_commit(&t));
    { int r[] = { 0, 6, 20, 6 }; n = mkoffs(offs, 3, 26, r, 2); packcheck(t, 3, offs, n, 100, 0, __LINE__); }
    MPI_Type_free(&t);

    /* indexed */
    {
        int bl[] = { 2, 1, 3 }, dp[] = { 4, 0, 7 };
        KT_MPI(MPI_Type_indexed(3, bl, dp, MPI_DOUBLE, &t));
        CHK(t, 48, 0, 80, 0, 80);
        int iv[] = { 3, 2, 1, 3, 4, 0, 7 }; MPI_Datatype tv[] = { MPI_DOUBLE };
        ENV(t, MPI_COMBINER_INDEXED, 7, iv, 0, NULL, 1, tv);
        KT_MPI(MPI_Type_commit(&t));
        int r[] = { 32, 16, 0, 8, 56, 24 }; n = mkoffs(offs, 2, 80, r, 3); packcheck(t, 2, offs, n, 200, 0, __LINE__);
        MPI_Type_free(&t);
    }
    /* hindexed: extent == size, but not contiguous (order) */
    {
        int bl[] = { 1, 2 }; MPI_Aint dp[] = { 8, 0 };
        KT_MPI(MPI_Type_create_hindexed(2, bl, dp, MPI_INT, &t));
        CHK(t, 12, 0, 12, 0, 12);
        int iv[] = { 2, 1, 2 }; MPI_Datatype tv[] = { MPI_INT };
        ENV(t, MPI_COMBINER_HINDEXED, 3, iv, 2, dp, 1, tv);
        KT_MPI(MPI_Type_commit(&t));
        int r[] = { 8, 4, 0, 8 }; n = mkoffs(offs, 3, 12, r, 2); packcheck(t, 3, offs, n, 64, 0, __LINE__);
        MPI_Type_free(&t);
    }
    /* indexed_block, hindexed_block */
    {
        int dp[] = { 0, 3, 6 };
        KT_MPI(MPI_Type_create_indexed_block(3, 2, dp, MPI_INT, &t));
        CHK(t, 24, 0, 32, 0, 32);
        int iv[] = { 3, 2, 0, 3, 6 }; MPI_Datatype tv[] = { MPI_INT };
        ENV(t, MPI_COMBINER_INDEXED_BLOCK, 5, iv, 0, NULL, 1, tv);
        KT_MPI(MPI_Type_commit(&t));
        int r[] = { 0, 8, 12, 8, 24, 8 }; n = mkoffs(offs, 2, 32, r, 3); packcheck(t, 2, offs, n, 100, 0, __LINE__);
        MPI_Type_free(&t);
        MPI_Aint hd[] = { 0, 16 };
        KT_MPI(MPI_Type_create_hindexed_block(2, 1, hd, MPI_DOUBLE, &t));
        CHK(t, 16, 0, 24, 0, 24);
        int iv2[] = { 2, 1 }; MPI_Datatype tv2[] = { MPI_DOUBLE };
        ENV(t, MPI_COMBINER_HINDEXED_BLOCK, 2, iv2, 2, hd, 1, tv2);
        MPI_Type_free(&t);
    }
    /* struct with gaps and the alignment epsilon */
    {
        struct s1 { char c; double d; int i[2]; };
        int bl[] = { 1, 1, 2 };
        MPI_Aint dp[] = { offsetof(struct s1, c), offsetof(struct s1, d), offsetof(struct s1, i) };
        MPI_Datatype ty[] = { MPI_CHAR, MPI_DOUBLE, MPI_INT };
        KT_MPI(MPI_Type_create_struct(3, bl, dp, ty, &t));
        CHK(t, 17, 0, (MPI_Aint)sizeof(struct s1), 0, (MPI_Aint)sizeof(struct s1));
        int iv[] = { 3, 1, 1, 2 };
        ENV(t, MPI_COMBINER_STRUCT, 4, iv, 3, dp, 3, ty);
        KT_MPI(MPI_Type_commit(&t));
        int r[] = { 0, 1, 8, 8, 16, 8 }; n = mkoffs(offs, 3, 24, r, 3); packcheck(t, 3, offs, n, 100, 0, __LINE__);
        /* elements of partial messages */
        MPI_Status st;
        int c;
        MPI_Count cc;
        KT_MPI(MPI_Status_set_elements(&st, t, 3));              /* char, double, int: 13 bytes */
        KT_MPI(MPI_Get_elements(&st, t, &c)); KT_EQ_INT(c, 3);
        KT_MPI(MPI_Get_count(&st, t, &c)); KT_EQ_INT(c, MPI_UNDEFINED);
        KT_MPI(MPI_Get_elements(&st, MPI_BYTE, &c)); KT_EQ_INT(c, 13);
        KT_MPI(MPI_Status_set_elements(&st, t, 6));              /* one element + char + double */
        KT_MPI(MPI_Get_elements_x(&st, t, &cc)); KT_EQ_INT(cc, 6);
        KT_MPI(MPI_Get_elements(&st, MPI_BYTE, &c)); KT_EQ_INT(c, 26);
        KT_MPI(MPI_Status_set_elements_x(&st, t, 8));
        KT_MPI(MPI_Get_count(&st, t, &c)); KT_EQ_INT(c, 2);
        KT_MPI(MPI_Get_elements_c(&st, t, &cc)); KT_EQ_INT(cc, 8);
        KT_MPI(MPI_Status_set_elements(&st, MPI_INT, 5));        /* 20 bytes */
        KT_MPI(MPI_Get_elements(&st, t, &c)); KT_EQ_INT(c, MPI_UNDEFINED);  /* 17 + 3 bytes: ends inside the double */
        MPI_Type_free(&t);

        struct s2 { double d; char c; };
        int bl2[] = { 1, 1 }; MPI_Aint dp2[] = { 0, 8 }; MPI_Datatype ty2[] = { MPI_DOUBLE, MPI_CHAR };
        KT_MPI(MPI_Type_create_struct(2, bl2, dp2, ty2, &t));
        CHK(t, 9, 0, 16, 0, 9);
        KT_MPI(MPI_Type_contiguous(2, t, &u));
        CHK(u, 18, 0, 32, 0, 25);
        MPI_Type_free(&u);
        /* resized part: no epsilon */
        KT_MPI(MPI_Type_create_resized(MPI_DOUBLE, 0, 9, &u));
        MPI_Datatype ty3[] = { u, MPI_CHAR };
        KT_MPI(MPI_Type_create_struct(2, bl2, dp2, ty3, &w));
        CHK(w, 9, 0, 9, 0, 9);
        MPI_Type_free(&w); MPI_Type_free(&u); MPI_Type_free(&t);
    }
    /* resized */
    KT_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &u));
    KT_MPI(MPI_Type_create_resized(u, -4, 20, &t));
    CHK(t, 8, -4, 20, 0, 12);
    { MPI_Aint av[] = { -4, 20 }; MPI_Datatype tv[] = { u }; ENV(t, MPI_COMBINER_RESIZED, 0, NULL, 2, av, 1, tv); }
    KT_MPI(MPI_Type_commit(&t));
    { int r[] = { 0, 4, 8, 4 }; n = mkoffs(offs, 3, 20, r, 2); packcheck(t, 3, offs, n, 100, 8, __LINE__); }
    /* dup */
    KT_MPI(MPI_Type_dup(t, &w));
    CHK(w, 8, -4, 20, 0, 12);
    { MPI_Datatype tv[] = { t }; ENV(w, MPI_COMBINER_DUP, 0, NULL, 0, NULL, 1, tv); }
    MPI_Type_free(&t);                          /* w keeps its parts alive */
    MPI_Type_free(&u);
    KT_MPI(MPI_Type_commit(&w));
    { int r[] = { 0, 4, 8, 4 }; n = mkoffs(offs, 2, 20, r, 2); packcheck(w, 2, offs, n, 100, 8, __LINE__); }
    MPI_Type_free(&w);

    /* subarray, C and Fortran order */
    {
        int sz[] = { 4, 5 }, sub[] = { 2, 3 }, st[] = { 1, 2 };
        KT_MPI(MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &t));
        CHK(t, 24, 0, 80, 28, 32);
        int iv[] = { 2, 4, 5, 2, 3, 1, 2, MPI_ORDER_C }; MPI_Datatype tv[] = { MPI_INT };
        ENV(t, MPI_COMBINER_SUBARRAY, 8, iv, 0, NULL, 1, tv);
        KT_MPI(MPI_Type_commit(&t));
        int r[] = { 28, 12, 48, 12 }; n = mkoffs(offs, 2, 80, r, 2); packcheck(t, 2, offs, n, 200, 0, __LINE__);
        MPI_Type_free(&t);
        KT_MPI(MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_FORTRAN, MPI_INT, &t));
        CHK(t, 24, 0, 80, 36, 40);
        KT_MPI(MPI_Type_commit(&t));
        int r2[] = { 36, 8, 52, 8, 68, 8 }; n = mkoffs(offs, 1, 80, r2, 3); packcheck(t, 1, offs, n, 100, 0, __LINE__);
        MPI_Type_free(&t);
        KT_ERRCLASS(MPI_Type_create_subarray(2, sz, sz, st, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    }
    /* darray: block x block on a 2x2 grid (rank 1: rows 0-1, columns 3-5), cyclic(2) */
    {
        int gs[] = { 4, 6 }, di[] = { MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK },
            da[] = { MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG }, ps[] = { 2, 2 };
        KT_MPI(MPI_Type_create_darray(4, 1, 2, gs, di, da, ps, MPI_ORDER_C, MPI_INT, &t));
        CHK(t, 24, 0, 96, 12, 36);
        int iv[] = { 4, 1, 2, 4, 6, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG,
                     MPI_DISTRIBUTE_DFLT_DARG, 2, 2, MPI_ORDER_C };
        MPI_Datatype tv[] = { MPI_INT };
        ENV(t, MPI_COMBINER_DARRAY, 12, iv, 0, NULL, 1, tv);
        MPI_Type_free(&t);
        int g1[] = { 10 }, d1[] = { MPI_DISTRIBUTE_CYCLIC }, a1[] = { 2 }, p1[] = { 3 };
        KT_MPI(MPI_Type_create_darray(3, 1, 1, g1, d1, a1, p1, MPI_ORDER_C, MPI_INT, &t));
        CHK(t, 16, 0, 40, 8, 32);
        KT_MPI(MPI_Type_commit(&t));
        int r[] = { 8, 8, 32, 8 }; n = mkoffs(offs, 1, 40, r, 2); packcheck(t, 1, offs, n, 64, 0, __LINE__);
        MPI_Type_free(&t);
        int p2[] = { 2 };
        KT_ERRCLASS(MPI_Type_create_darray(3, 1, 1, g1, d1, a1, p2, MPI_ORDER_C, MPI_INT, &t), MPI_ERR_ARG);
    }
    /* large-count constructors and the _c envelope */
    {
        KT_MPI(MPI_Type_vector_c(3, 2, 4, MPI_INT, &t));
        CHK(t, 24, 0, 40, 0, 40);
        MPI_Count ni, na, nl, nt; int comb;
        KT_MPI(MPI_Type_get_envelope_c(t, &ni, &na, &nl, &nt, &comb));
        KT_EQ_INT(comb, MPI_COMBINER_VECTOR); KT_EQ_INT(ni, 0); KT_EQ_INT(na, 0); KT_EQ_INT(nl, 3); KT_EQ_INT(nt, 1);
        MPI_Count lc[3]; MPI_Datatype ty[1];
        KT_MPI(MPI_Type_get_contents_c(t, 0, 0, 3, 1, NULL, NULL, lc, ty));
        KT_EQ_INT(lc[0], 3); KT_EQ_INT(lc[1], 2); KT_EQ_INT(lc[2], 4);
        KT_CHECK(ty[0] == MPI_INT);
        int a, b, c;
        KT_ERRCLASS(MPI_Type_get_envelope(t, &a, &b, &c, &comb), MPI_ERR_TYPE);
        MPI_Type_free(&t);
        MPI_Count bl[] = { 1, 2 }, dp[] = { 8, 0 };
        MPI_Datatype tys[] = { MPI_INT, MPI_SHORT };
        KT_MPI(MPI_Type_create_struct_c(2, bl, dp, tys, &t));
        CHK(t, 8, 0, 12, 0, 12);
        MPI_Type_free(&t);
        KT_MPI(MPI_Type_get_envelope_c(MPI_INT, &ni, &na, &nl, &nt, &comb));
        KT_EQ_INT(comb, MPI_COMBINER_NAMED);
    }
    /* match_size, f90 types, value_index */
    {
        KT_MPI(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &t)); KT_CHECK(t == MPI_REAL8);
        KT_MPI(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &t)); KT_CHECK(t == MPI_INTEGER4);
        KT_MPI(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &t)); KT_CHECK(t == MPI_COMPLEX16);
        KT_ERRCLASS(MPI_Type_match_size(MPI_TYPECLASS_REAL, 3, &t), MPI_ERR_ARG);
        KT_MPI(MPI_Type_create_f90_real(10, MPI_UNDEFINED, &t));
        KT_MPI(MPI_Type_create_f90_real(10, MPI_UNDEFINED, &u));
        KT_CHECK(t == u);
        int s; KT_MPI(MPI_Type_size(t, &s)); KT_EQ_INT(s, 8);
        int iv[] = { 10, MPI_UNDEFINED };
        ENV(t, MPI_COMBINER_F90_REAL, 2, iv, 0, NULL, 0, NULL);
        KT_ERRCLASS(MPI_Type_free(&t), MPI_ERR_TYPE);
        KT_MPI(MPI_Type_create_f90_integer(5, &t));
        KT_MPI(MPI_Type_size(t, &s)); KT_EQ_INT(s, 4);
        KT_MPI(MPI_Type_create_f90_complex(4, 30, &t));
        KT_MPI(MPI_Type_size(t, &s)); KT_EQ_INT(s, 8);
        KT_MPI(MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, &t)); KT_CHECK(t == MPI_DOUBLE_INT);
    }
    /* errors */
    {
        int x = 0, bl[] = { 1 }, dp[] = { 0 };
        KT_ERRCLASS(MPI_Type_vector(-1, 1, 1, MPI_INT, &t), MPI_ERR_COUNT);
        KT_ERRCLASS(MPI_Type_contiguous(2, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE);
        t = MPI_INT;
        KT_ERRCLASS(MPI_Type_free(&t), MPI_ERR_TYPE);
        KT_ERRCLASS(MPI_Type_indexed(1, NULL, dp, MPI_INT, &t), MPI_ERR_ARG);
        KT_ERRCLASS(MPI_Type_indexed(1, (int[]){ -1 }, dp, MPI_INT, &t), MPI_ERR_ARG);
        MPI_Datatype bad[] = { MPI_DATATYPE_NULL };
        MPI_Aint ad[] = { 0 };
        KT_ERRCLASS(MPI_Type_create_struct(1, bl, ad, bad, &t), MPI_ERR_TYPE);
        int ints[4]; MPI_Aint addrs[4]; MPI_Datatype tys[4];
        KT_ERRCLASS(MPI_Type_get_contents(MPI_INT, 4, 4, 4, ints, addrs, tys), MPI_ERR_ARG);
        /* an uncommitted type: fine for constructors and queries, not for communication */
        KT_MPI(MPI_Type_contiguous(2, MPI_INT, &u));
        KT_MPI(MPI_Type_vector(2, 1, 2, u, &t));
        int s; KT_MPI(MPI_Type_size(t, &s)); KT_EQ_INT(s, 16);
        KT_ERRCLASS(MPI_Send(&x, 1, u, MPI_PROC_NULL, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
        int pos = 0; char pk[64];
        KT_ERRCLASS(MPI_Pack(&x, 1, u, pk, 64, &pos, MPI_COMM_WORLD), MPI_ERR_TYPE);
        KT_MPI(MPI_Type_commit(&u));
        KT_ERRCLASS(MPI_Pack(ints, 2, u, pk, 8, &pos, MPI_COMM_WORLD), MPI_ERR_TRUNCATE);
        pos = 0;
        KT_ERRCLASS(MPI_Unpack(pk, 4, &pos, ints, 1, u, MPI_COMM_WORLD), MPI_ERR_TRUNCATE);
        MPI_Aint xs;
        KT_ERRCLASS(MPI_Pack_external_size("native", 1, MPI_INT, &xs), MPI_ERR_ARG);
        MPI_Type_free(&t); MPI_Type_free(&u);
    }
    MPI_Finalize();
    return 0;
}
