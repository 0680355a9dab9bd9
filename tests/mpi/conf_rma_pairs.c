/* conf_rma_pairs: accumulate-type operations on the padded pair types
 * (issue 16 item 14): MPI_SHORT_INT, MPI_LONG_INT, MPI_DOUBLE_INT,
 * MPI_LONG_DOUBLE_INT (and the unpadded MPI_2INT, MPI_FLOAT_INT), with
 * MPI_Accumulate, MPI_Get_accumulate, MPI_Fetch_and_op and MPI_Put / MPI_Get,
 * MAXLOC / MINLOC / REPLACE / NO_OP, on windows from MPI_Win_allocate (a host
 * segment: direct) and MPI_Win_create (CMA), and by active messages where the
 * list runs it with kumi_base_rma_direct=false.  The target's elements must
 * be exactly the expected (value, index) pairs, the bytes around and between
 * the window's elements (the padding included) untouched, fetched values
 * exact, and nothing may corrupt the heap (the old code wrote past its
 * buffers).  Phases are separated by barriers so that every result is known. */
#include "kt.h"
#include <stddef.h>

#define N 5

#define DEFINE(NAME, VT)                                                                  \
    typedef struct { VT v; int i; } NAME##_t;                                             \
    static void run_##NAME(MPI_Datatype mt, int flavor, int rank, int size)               \
    {                                                                                     \
        NAME##_t *base, *mem = NULL;                                                      \
        MPI_Win w;                                                                        \
        size_t bytes = (N + 2) * sizeof(NAME##_t);   /* a guard element each side */       \
        if (flavor == 0) {                                                                \
            KT_MPI(MPI_Win_allocate((MPI_Aint)bytes, sizeof(NAME##_t), MPI_INFO_NULL,     \
                                    MPI_COMM_WORLD, &base, &w));                          \
        } else {                                                                          \
            KT_MPI(MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &mem));                 \
            base = mem;                                                                   \
            KT_MPI(MPI_Win_create(base, (MPI_Aint)bytes, sizeof(NAME##_t), MPI_INFO_NULL, \
                                  MPI_COMM_WORLD, &w));                                   \
        }                                                                                 \
        memset(base, 0x5A, bytes);                   /* padding and guards: 0x5A */        \
        for (int k = 1; k <= N; k++) { base[k].v = (VT)0; base[k].i = -1; }              \
        NAME##_t o[N], res[N], want;                                                      \
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));                                              \
        /* 1. every rank: MAXLOC of (rank + k, rank) into elements 1..N of rank 0 */      \
        for (int k = 0; k < N; k++) { o[k].v = (VT)(rank + k); o[k].i = rank; }           \
        KT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w));                                   \
        KT_MPI(MPI_Accumulate(o, N, mt, 0, 1, N, mt, MPI_MAXLOC, w));                     \
        KT_MPI(MPI_Win_unlock(0, w));                                                     \
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));                                              \
        /* 2. Get_accumulate MINLOC of (k, rank): fetches the maxima, leaves k, 0 */     \
        for (int k = 0; k < N; k++) { o[k].v = (VT)k; o[k].i = rank; }                    \
        memset(res, 0, sizeof res);                                                       \
        KT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w));                                   \
        KT_MPI(MPI_Get_accumulate(o, N, mt, res, N, mt, 0, 1, N, mt, MPI_MINLOC, w));     \
        KT_MPI(MPI_Win_unlock(0, w));                                                     \
        for (int k = 0; k < N; k++) {                                                     \
            int okmax = res[k].v == (VT)(size - 1 + k) && res[k].i == size - 1;           \
            int okmin = res[k].v == (VT)k;           /* another rank's MINLOC came first */ \
            KT_CHECK(okmax || okmin, "%s/%d: Get_accumulate fetched (%g, %d) at %d",       \
                     #NAME, flavor, (double)res[k].v, res[k].i, k);                      \
        }                                                                                 \
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));                                              \
        if (rank == 0)                                                                    \
            for (int k = 0; k < N; k++) {                                                 \
                want.v = (VT)k; want.i = 0;          /* equal values: the lowest index */  \
                KT_CHECK(base[k + 1].v == want.v && base[k + 1].i == want.i,              \
                         "%s/%d: element %d is (%g, %d), expected (%g, 0)", #NAME, flavor, \
                         k, (double)base[k + 1].v, base[k + 1].i, (double)want.v);        \
            }                                                                             \
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));                                              \
        /* 3. Fetch_and_op: rank r MAXLOC (100 + r, r) into element 1; NO_OP reads */    \
        NAME##_t one = { (VT)(100 + rank), rank }, got;                                   \
        KT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w));                                   \
        KT_MPI(MPI_Fetch_and_op(&one, &got, mt, 0, 1, MPI_MAXLOC, w));                    \
        KT_MPI(MPI_Win_unlock(0, w));                                                     \
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));                                              \
        KT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w));                                   \
        KT_MPI(MPI_Fetch_and_op(NULL, &got, mt, 0, 1, MPI_NO_OP, w));                     \
        KT_MPI(MPI_Win_unlock(0, w));                                                     \
        KT_CHECK(got.v == (VT)(100 + size - 1) && got.i == size - 1,                      \
                 "%s/%d: Fetch_and_op NO_OP read (%g, %d)", #NAME, flavor, (double)got.v, got.i); \
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));                                              \
        /* 4. the last rank: REPLACE element 2, Put element 3, Get them back */           \
        if (rank == size - 1) {                                                           \
            NAME##_t r2 = { (VT)7, 70 }, r3 = { (VT)8, 80 }, back[2];                     \
            KT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w));                            \
            KT_MPI(MPI_Accumulate(&r2, 1, mt, 0, 2, 1, mt, MPI_REPLACE, w));              \
            KT_MPI(MPI_Put(&r3, 1, mt, 0, 3, 1, mt, w));                                  \
            KT_MPI(MPI_Win_flush(0, w));                                                  \
            KT_MPI(MPI_Get(back, 2, mt, 0, 2, 2, mt, w));                                 \
            KT_MPI(MPI_Win_unlock(0, w));                                                 \
            KT_CHECK(back[0].v == (VT)7 && back[0].i == 70 && back[1].v == (VT)8 &&       \
                     back[1].i == 80, "%s/%d: Get gave (%g,%d) (%g,%d)", #NAME, flavor,   \
                     (double)back[0].v, back[0].i, (double)back[1].v, back[1].i);         \
        }                                                                                 \
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));                                              \
        if (rank == 0) {                                                                  \
            KT_CHECK(base[2].v == (VT)7 && base[2].i == 70 && base[3].v == (VT)8 &&       \
                     base[3].i == 80, "%s/%d: REPLACE / Put left (%g,%d) (%g,%d)", #NAME, \
                     flavor, (double)base[2].v, base[2].i, (double)base[3].v, base[3].i); \
            /* the guards and the padding are untouched */                                \
            const unsigned char *g0 = (const unsigned char *)&base[0];                    \
            const unsigned char *g1 = (const unsigned char *)&base[N + 1];                \
            for (size_t b = 0; b < sizeof(NAME##_t); b++)                                 \
                KT_CHECK(g0[b] == 0x5A && g1[b] == 0x5A, "%s/%d: guard byte %zu changed", \
                         #NAME, flavor, b);                                               \
            size_t pad0 = offsetof(NAME##_t, i) > sizeof(VT) ? sizeof(VT) : 0;            \
            size_t pad1 = offsetof(NAME##_t, i) + sizeof(int);                            \
            for (int k = 1; k <= N; k++) {                                                \
                const unsigned char *e = (const unsigned char *)&base[k];                 \
                for (size_t b = pad1; b < sizeof(NAME##_t); b++)                          \
                    KT_CHECK(e[b] == 0x5A, "%s/%d: padding byte %zu of element %d written", \
                             #NAME, flavor, b, k);                                        \
                if (pad0)                                                                 \
                    for (size_t b = pad0; b < offsetof(NAME##_t, i); b++)                 \
                        KT_CHECK(e[b] == 0x5A, "%s/%d: inner padding byte %zu of element %d written", \
                                 #NAME, flavor, b, k);                                    \
            }                                                                             \
        }                                                                                 \
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));                                              \
        KT_MPI(MPI_Win_free(&w));                                                         \
        if (mem) KT_MPI(MPI_Free_mem(mem));                                               \
    }

DEFINE(short_int, short)
DEFINE(long_int, long)
DEFINE(double_int, double)
DEFINE(ldouble_int, long double)
DEFINE(two_int, int)
DEFINE(float_int, float)

int main(int argc, char **argv)
{
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int f = 0; f < 2; f++) {
        run_short_int(MPI_SHORT_INT, f, rank, size);
        run_long_int(MPI_LONG_INT, f, rank, size);
        run_double_int(MPI_DOUBLE_INT, f, rank, size);
        run_ldouble_int(MPI_LONG_DOUBLE_INT, f, rank, size);
        run_two_int(MPI_2INT, f, rank, size);
        run_float_int(MPI_FLOAT_INT, f, rank, size);
    }
    if (rank == 0) printf("pair types ok on %d ranks\n", size);
    KT_MPI(MPI_Finalize());
    return 0;
}
