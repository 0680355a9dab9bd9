/* kt_coll.h: what the collective tests coll_tuned and coll_lact share:
 * values from rank and index, two layouts of ints, and a non-commutative
 * reduction (2x2 integer matrix product mod KT_P, in rank order). */
#ifndef KT_COLL_H
#define KT_COLL_H
#include "kt.h"

#define KT_P 9973
#define KT_HOLE (-55)

/* Datum k of rank r's contribution in round seed. */
static inline int kt_val(int seed, int r, long k) { return seed * 7 + r * 100003 + (int)(k % 100000); }

/* INT: plain ints.  VEC: MPI_Type_vector(2, 1, 2, MPI_INT) (extent 3 ints):
 * ints 0 and 2 of every 3 carry data, int 1 is a hole that must stay
 * KT_HOLE.  Buffers hold n data ints (n even for VEC). */
struct kt_lay { MPI_Datatype t; int per; };

static inline void kt_lay_init(struct kt_lay *i, struct kt_lay *v)
{
    *i = (struct kt_lay){ MPI_INT, 1 };
    v->per = 2;
    KT_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &v->t));
    KT_MPI(MPI_Type_commit(&v->t));
}
static inline long kt_phys(const struct kt_lay *l, long j)
{
    return l->per == 1 ? j : (j / 2) * 3 + (j % 2) * 2;
}
/* A buffer for n data ints in layout l, every int (holes too) KT_HOLE. */
static inline int *kt_mk(const struct kt_lay *l, long n)
{
    long cells = l->per == 1 ? n : n / 2 * 3;
    int *b = malloc(sizeof(int) * (size_t)(cells + 1));
    KT_CHECK(b != NULL, "out of memory");
    for (long i = 0; i <= cells; i++) b[i] = KT_HOLE;
    return b;
}
static inline void kt_put(const struct kt_lay *l, int *b, long j, int v) { b[kt_phys(l, j)] = v; }
static inline int kt_get(const struct kt_lay *l, const int *b, long j) { return b[kt_phys(l, j)]; }
/* Elements of l for n data ints. */
static inline int kt_cnt(const struct kt_lay *l, long n) { return (int)(n / l->per); }
/* The first hole of a VEC buffer of n data ints that was written, or -1. */
static inline long kt_hole_written(const struct kt_lay *l, const int *b, long n)
{
    if (l->per == 2)
        for (long e = 0; e < n / 2; e++)
            if (b[e * 3 + 1] != KT_HOLE) return e * 3 + 1;
    return -1;
}

/* inout = in * inout (matrix product, in on the left), on 4 ints per element. */
static inline void kt_matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const int *a = in;
    int *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        int c0 = (a[0] * b[0] + a[1] * b[2]) % KT_P, c1 = (a[0] * b[1] + a[1] * b[3]) % KT_P;
        int c2 = (a[2] * b[0] + a[3] * b[2]) % KT_P, c3 = (a[2] * b[1] + a[3] * b[3]) % KT_P;
        b[0] = c0; b[1] = c1; b[2] = c2; b[3] = c3;
    }
}
/* Rank r's matrix for element k in round seed. */
static inline void kt_mat_of(int seed, int r, long k, int m[4])
{
    m[0] = (r + 2 + seed) % 7 + 1; m[1] = (int)((k + r) % 5);
    m[2] = (int)(k % 3); m[3] = (r * 3 + (int)(k % 11)) % 9 + 1;
}
/* The product x_lo ... x_hi of element k (inclusive; identity if empty). */
static inline void kt_mat_prod(int seed, int lo, int hi, long k, int out[4])
{
    out[0] = 1; out[1] = 0; out[2] = 0; out[3] = 1;
    for (int r = lo; r <= hi; r++) {
        int m[4], one = 1;
        kt_mat_of(seed, r, k, m);
        kt_matmul(out, m, &one, NULL);          /* m = out * m */
        memcpy(out, m, sizeof m);
    }
}
#endif
