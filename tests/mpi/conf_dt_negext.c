/* conf_dt_negext: lower bound and extent of types built from types with a
 * negative extent (issue 16 item 15; MPI 4.1 sec. 5.1.7: lb is the least
 * lower bound of the copies, ub the greatest upper bound, where a copy's ub =
 * its lb + extent lies below its lb when the extent is negative).  The
 * expected values are the standard's (and MPICH's).  Then data: 3 ints sent
 * with contiguous(3, resized(int, 0, -4)) from the middle of an array go
 * out as a[0], a[-1], a[-2] and come back the same way. */
#include "kt.h"

struct want { const char *what; long lb, ext, tlb, tex; int size; };

static void check(MPI_Datatype t, const struct want *w)
{
    MPI_Aint lb, ext, tlb, tex;
    int sz;
    KT_MPI(MPI_Type_get_extent(t, &lb, &ext));
    KT_MPI(MPI_Type_get_true_extent(t, &tlb, &tex));
    KT_MPI(MPI_Type_size(t, &sz));
    KT_CHECK(lb == w->lb && ext == w->ext && tlb == w->tlb && tex == w->tex && sz == w->size,
             "%s: lb %ld extent %ld true lb %ld true extent %ld size %d; expected %ld %ld %ld %ld %d", w->what,
             (long)lb, (long)ext, (long)tlb, (long)tex, sz, w->lb, w->ext, w->tlb, w->tex, w->size);
}

int main(int argc, char **argv)
{
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Datatype r1, r2, t;
    KT_MPI(MPI_Type_create_resized(MPI_INT, 0, -4, &r1));
    KT_MPI(MPI_Type_create_resized(MPI_INT, -8, -4, &r2));
    static const struct want w[] = {
        { "resized(int, 0, -4)", 0, -4, 0, 4, 4 },
        { "resized(int, -8, -4)", -8, -4, 0, 4, 4 },
        { "contiguous(3, r1)", -8, 4, -8, 12, 12 },
        { "contiguous(3, r2)", -16, 4, -8, 12, 12 },
        { "vector(3, 2, -3, int)", -24, 32, -24, 32, 24 },
        { "vector(3, 2, 2, r1)", -20, 16, -20, 24, 24 },
        { "vector(2, 2, -2, r2)", -12, 8, -4, 16, 16 },
        { "hvector(3, 1, -16, double)", -32, 40, -32, 40, 24 },
        { "indexed({1,2}, {-5,3}, r1)", -16, 32, -16, 40, 12 },
        { "struct({1,2}, {-20,8}, {int,r2})", -20, 16, -20, 32, 12 },
        { "hindexed_block(2, 2, {-20,8}, r1)", -24, 28, -24, 36, 16 },
        { "resized(r1, 4, -12)", 4, -12, 0, 4, 4 },
    };
    int k = 0;
    check(r1, &w[k++]);
    check(r2, &w[k++]);
    KT_MPI(MPI_Type_contiguous(3, r1, &t)); check(t, &w[k++]); MPI_Type_free(&t);
    KT_MPI(MPI_Type_contiguous(3, r2, &t)); check(t, &w[k++]); MPI_Type_free(&t);
    KT_MPI(MPI_Type_vector(3, 2, -3, MPI_INT, &t)); check(t, &w[k++]); MPI_Type_free(&t);
    KT_MPI(MPI_Type_vector(3, 2, 2, r1, &t)); check(t, &w[k++]); MPI_Type_free(&t);
    KT_MPI(MPI_Type_vector(2, 2, -2, r2, &t)); check(t, &w[k++]); MPI_Type_free(&t);
    KT_MPI(MPI_Type_create_hvector(3, 1, -16, MPI_DOUBLE, &t)); check(t, &w[k++]); MPI_Type_free(&t);
    int bl[2] = { 1, 2 }, dp[2] = { -5, 3 };
    KT_MPI(MPI_Type_indexed(2, bl, dp, r1, &t)); check(t, &w[k++]); MPI_Type_free(&t);
    MPI_Aint ad[2] = { -20, 8 };
    MPI_Datatype ty[2] = { MPI_INT, r2 };
    KT_MPI(MPI_Type_create_struct(2, bl, ad, ty, &t)); check(t, &w[k++]); MPI_Type_free(&t);
    KT_MPI(MPI_Type_create_hindexed_block(2, 2, ad, r1, &t)); check(t, &w[k++]); MPI_Type_free(&t);
    KT_MPI(MPI_Type_create_resized(r1, 4, -12, &t)); check(t, &w[k++]); MPI_Type_free(&t);

    /* data through the type: element i at byte -4 i */
    int a[8], b[8], out[3];
    for (int i = 0; i < 8; i++) { a[i] = 100 + i; b[i] = -1; }
    KT_MPI(MPI_Type_contiguous(3, r1, &t));
    KT_MPI(MPI_Type_commit(&t));
    KT_MPI(MPI_Sendrecv(&a[5], 1, t, 0, 0, out, 3, MPI_INT, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE));
    KT_CHECK(out[0] == 105 && out[1] == 104 && out[2] == 103, "sent %d %d %d, expected 105 104 103", out[0],
             out[1], out[2]);
    KT_MPI(MPI_Sendrecv(out, 3, MPI_INT, 0, 1, &b[5], 1, t, 0, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE));
    KT_CHECK(b[5] == 105 && b[4] == 104 && b[3] == 103 && b[2] == -1 && b[6] == -1, "received into %d %d %d %d %d",
             b[2], b[3], b[4], b[5], b[6]);
    /* two of them in a row: the second starts one extent (4 bytes) after the first */
    int c2[6];
    KT_MPI(MPI_Sendrecv(&a[4], 2, t, 0, 2, c2, 6, MPI_INT, 0, 2, MPI_COMM_SELF, MPI_STATUS_IGNORE));
    KT_CHECK(c2[0] == 104 && c2[1] == 103 && c2[2] == 102 && c2[3] == 105 && c2[4] == 104 && c2[5] == 103,
             "two copies sent %d %d %d %d %d %d", c2[0], c2[1], c2[2], c2[3], c2[4], c2[5]);
    MPI_Type_free(&t);
    MPI_Type_free(&r1);
    MPI_Type_free(&r2);
    KT_MPI(MPI_Finalize());
    return 0;
}
