/* coll_ops: every predefined reduction op on every datatype it applies to,
 * through MPI_Allreduce (and a few through Reduce / Reduce_local), checked
 * against an answer computed locally; MINLOC / MAXLOC with ties (the lower
 * index wins); pairs the standard does not define give MPI_ERR_OP. */
#include "kt.h"
#include <complex.h>
#include <stdbool.h>
#include <stdint.h>

enum store {
    S_SCHAR, S_UCHAR, S_SHORT, S_USHORT, S_INT, S_UINT, S_LONG, S_ULONG, S_LLONG, S_ULLONG,
    S_I8, S_U8, S_I16, S_U16, S_I32, S_U32, S_I64, S_U64, S_AINT, S_COUNT, S_OFFSET,
    S_FLOAT, S_DOUBLE, S_LDOUBLE, S_CFLOAT, S_CDOUBLE, S_CLDOUBLE, S_BOOL, S_BYTE
};
/* categories */
enum { C_INT = 1, C_FINT = 2, C_FLOAT = 4, C_COMPLEX = 8, C_LOGICAL = 16, C_BYTE = 32 };

struct tinfo { MPI_Datatype dt; const char *name; enum store st; int cat; };

#define T(dt, st, cat) { dt, #dt, st, cat }
static const struct tinfo types[] = {
    T(MPI_SIGNED_CHAR, S_SCHAR, C_INT), T(MPI_UNSIGNED_CHAR, S_UCHAR, C_INT),
    T(MPI_SHORT, S_SHORT, C_INT), T(MPI_UNSIGNED_SHORT, S_USHORT, C_INT),
    T(MPI_INT, S_INT, C_INT), T(MPI_UNSIGNED, S_UINT, C_INT),
    T(MPI_LONG, S_LONG, C_INT), T(MPI_UNSIGNED_LONG, S_ULONG, C_INT),
    T(MPI_LONG_LONG, S_LLONG, C_INT), T(MPI_UNSIGNED_LONG_LONG, S_ULLONG, C_INT),
    T(MPI_INT8_T, S_I8, C_INT), T(MPI_UINT8_T, S_U8, C_INT),
    T(MPI_INT16_T, S_I16, C_INT), T(MPI_UINT16_T, S_U16, C_INT),
    T(MPI_INT32_T, S_I32, C_INT), T(MPI_UINT32_T, S_U32, C_INT),
    T(MPI_INT64_T, S_I64, C_INT), T(MPI_UINT64_T, S_U64, C_INT),
    T(MPI_AINT, S_AINT, C_FINT), T(MPI_COUNT, S_COUNT, C_FINT), T(MPI_OFFSET, S_OFFSET, C_FINT),
    T(MPI_INTEGER, S_INT, C_FINT), T(MPI_INTEGER1, S_I8, C_FINT), T(MPI_INTEGER2, S_I16, C_FINT),
    T(MPI_INTEGER4, S_I32, C_FINT), T(MPI_INTEGER8, S_I64, C_FINT),
    T(MPI_FLOAT, S_FLOAT, C_FLOAT), T(MPI_DOUBLE, S_DOUBLE, C_FLOAT),
    T(MPI_LONG_DOUBLE, S_LDOUBLE, C_FLOAT), T(MPI_REAL, S_FLOAT, C_FLOAT),
    T(MPI_DOUBLE_PRECISION, S_DOUBLE, C_FLOAT), T(MPI_REAL4, S_FLOAT, C_FLOAT),
    T(MPI_REAL8, S_DOUBLE, C_FLOAT),
    T(MPI_C_FLOAT_COMPLEX, S_CFLOAT, C_COMPLEX), T(MPI_C_DOUBLE_COMPLEX, S_CDOUBLE, C_COMPLEX),
    T(MPI_C_LONG_DOUBLE_COMPLEX, S_CLDOUBLE, C_COMPLEX), T(MPI_COMPLEX, S_CFLOAT, C_COMPLEX),
    T(MPI_DOUBLE_COMPLEX, S_CDOUBLE, C_COMPLEX), T(MPI_COMPLEX8, S_CFLOAT, C_COMPLEX),
    T(MPI_COMPLEX16, S_CDOUBLE, C_COMPLEX),
    T(MPI_C_BOOL, S_BOOL, C_LOGICAL), T(MPI_LOGICAL, S_INT, C_LOGICAL),
#ifdef MPI_LOGICAL1   /* MPI 4.1; absent from MPICH 4.0's mpi.h (abi_mpich_progs) */
    T(MPI_LOGICAL1, S_I8, C_LOGICAL), T(MPI_LOGICAL2, S_I16, C_LOGICAL),
    T(MPI_LOGICAL4, S_I32, C_LOGICAL), T(MPI_LOGICAL8, S_I64, C_LOGICAL),
#endif
    T(MPI_BYTE, S_BYTE, C_BYTE),
};
#define NTYPES (int)(sizeof types / sizeof types[0])

struct oinfo { MPI_Op op; const char *name; int cats; };
static const struct oinfo ops[] = {
    { MPI_SUM, "MPI_SUM", C_INT | C_FINT | C_FLOAT | C_COMPLEX },
    { MPI_PROD, "MPI_PROD", C_INT | C_FINT | C_FLOAT | C_COMPLEX },
    { MPI_MAX, "MPI_MAX", C_INT | C_FINT | C_FLOAT },
    { MPI_MIN, "MPI_MIN", C_INT | C_FINT | C_FLOAT },
    { MPI_LAND, "MPI_LAND", C_INT | C_LOGICAL },
    { MPI_LOR, "MPI_LOR", C_INT | C_LOGICAL },
    { MPI_LXOR, "MPI_LXOR", C_INT | C_LOGICAL },
    { MPI_BAND, "MPI_BAND", C_INT | C_FINT | C_BYTE },
    { MPI_BOR, "MPI_BOR", C_INT | C_FINT | C_BYTE },
    { MPI_BXOR, "MPI_BXOR", C_INT | C_FINT | C_BYTE },
};
#define NOPS (int)(sizeof ops / sizeof ops[0])

static size_t st_size(enum store s)
{
    switch (s) {
    case S_SCHAR: case S_UCHAR: case S_I8: case S_U8: case S_BYTE: return 1;
    case S_SHORT: case S_USHORT: case S_I16: case S_U16: return 2;
    case S_INT: case S_UINT: case S_I32: case S_U32: return 4;
    case S_LONG: case S_ULONG: return sizeof(long);
    case S_LLONG: case S_ULLONG: case S_I64: case S_U64: case S_COUNT: case S_OFFSET: return 8;
    case S_AINT: return sizeof(MPI_Aint);
    case S_FLOAT: return sizeof(float);
    case S_DOUBLE: return sizeof(double);
    case S_LDOUBLE: return sizeof(long double);
    case S_CFLOAT: return sizeof(float _Complex);
    case S_CDOUBLE: return sizeof(double _Complex);
    case S_CLDOUBLE: return sizeof(long double _Complex);
    case S_BOOL: return sizeof(bool);
    }
    return 0;
}

static void st_put(enum store s, void *buf, size_t i, long double _Complex v)
{
    long double re = creall(v);
    switch (s) {
    case S_SCHAR: ((signed char *)buf)[i] = (signed char)re; break;
    case S_UCHAR: case S_BYTE: ((unsigned char *)buf)[i] = (unsigned char)re; break;
    case S_SHORT: ((short *)buf)[i] = (short)re; break;
    case S_USHORT: ((unsigned short *)buf)[i] = (unsigned short)re; break;
    case S_INT: ((int *)buf)[i] = (int)re; break;
    case S_UINT: ((unsigned *)buf)[i] = (unsigned)re; break;
    case S_LONG: ((long *)buf)[i] = (long)re; break;
    case S_ULONG: ((unsigned long *)buf)[i] = (unsigned long)re; break;
    case S_LLONG: ((long long *)buf)[i] = (long long)re; break;
    case S_ULLONG: ((unsigned long long *)buf)[i] = (unsigned long long)re; break;
    case S_I8: ((int8_t *)buf)[i] = (int8_t)re; break;
    case S_U8: ((uint8_t *)buf)[i] = (uint8_t)re; break;
    case S_I16: ((int16_t *)buf)[i] = (int16_t)re; break;
    case S_U16: ((uint16_t *)buf)[i] = (uint16_t)re; break;
    case S_I32: ((int32_t *)buf)[i] = (int32_t)re; break;
    case S_U32: ((uint32_t *)buf)[i] = (uint32_t)re; break;
    case S_I64: case S_COUNT: case S_OFFSET: ((int64_t *)buf)[i] = (int64_t)re; break;
    case S_U64: ((uint64_t *)buf)[i] = (uint64_t)re; break;
    case S_AINT: ((MPI_Aint *)buf)[i] = (MPI_Aint)re; break;
    case S_FLOAT: ((float *)buf)[i] = (float)re; break;
    case S_DOUBLE: ((double *)buf)[i] = (double)re; break;
    case S_LDOUBLE: ((long double *)buf)[i] = re; break;
    case S_CFLOAT: ((float _Complex *)buf)[i] = (float _Complex)v; break;
    case S_CDOUBLE: ((double _Complex *)buf)[i] = (double _Complex)v; break;
    case S_CLDOUBLE: ((long double _Complex *)buf)[i] = v; break;
    case S_BOOL: ((bool *)buf)[i] = re != 0; break;
    }
}

static long double _Complex st_get(enum store s, const void *buf, size_t i)
{
    switch (s) {
    case S_SCHAR: return ((const signed char *)buf)[i];
    case S_UCHAR: case S_BYTE: return ((const unsigned char *)buf)[i];
    case S_SHORT: return ((const short *)buf)[i];
    case S_USHORT: return ((const unsigned short *)buf)[i];
    case S_INT: return ((const int *)buf)[i];
    case S_UINT: return ((const unsigned *)buf)[i];
    case S_LONG: return ((const long *)buf)[i];
    case S_ULONG: return ((const unsigned long *)buf)[i];
    case S_LLONG: return ((const long long *)buf)[i];
    case S_ULLONG: return ((const unsigned long long *)buf)[i];
    case S_I8: return ((const int8_t *)buf)[i];
    case S_U8: return ((const uint8_t *)buf)[i];
    case S_I16: return ((const int16_t *)buf)[i];
    case S_U16: return ((const uint16_t *)buf)[i];
    case S_I32: return ((const int32_t *)buf)[i];
    case S_U32: return ((const uint32_t *)buf)[i];
    case S_I64: case S_COUNT: case S_OFFSET: return ((const int64_t *)buf)[i];
    case S_U64: return ((const uint64_t *)buf)[i];
    case S_AINT: return ((const MPI_Aint *)buf)[i];
    case S_FLOAT: return ((const float *)buf)[i];
    case S_DOUBLE: return ((const double *)buf)[i];
    case S_LDOUBLE: return ((const long double *)buf)[i];
    case S_CFLOAT: return ((const float _Complex *)buf)[i];
    case S_CDOUBLE: return ((const double _Complex *)buf)[i];
    case S_CLDOUBLE: return ((const long double _Complex *)buf)[i];
    case S_BOOL: return ((const bool *)buf)[i];
    }
    return 0;
}

/* The value rank r contributes at position i for op o (small enough that
 * no type overflows at 8+ ranks: products have at most three factors 2). */
static long double _Complex value(int o, int cat, int r, int i)
{
    MPI_Op op = ops[o].op;
    if (op == MPI_SUM) {
        long double re = (r + 2 * i) % 5 + 1;
        return cat == C_COMPLEX ? re + (long double)((r + i) % 3) * I : re;
    }
    if (op == MPI_PROD) {
        int two = (r + i) % 3 == 0 && r < 9;
        if (cat == C_COMPLEX) return (r + i) % 4 == 1 && r < 9 ? 1.0L * I : two ? 2 : 1;
        return two ? 2 : 1;
    }
    if (op == MPI_MAX || op == MPI_MIN) return (r * 7 + i * 3) % 11 + (cat == C_FLOAT ? 0.5L : 0);
    if (op == MPI_LAND) return cat == C_LOGICAL ? ((r + i) % 4 != 0) : ((r + i) % 4 != 0) * (1 + r % 3);
    if (op == MPI_LOR) return cat == C_LOGICAL ? ((r + i * 5) % 7 == 0) : ((r + i * 5) % 7 == 0) * 4;
    if (op == MPI_LXOR) return cat == C_LOGICAL ? ((r * i + r) % 3 == 1) : ((r * i + r) % 3 == 1) * (2 + r % 2);
    /* bitwise: 7-bit patterns */
    return (1u << ((r + i) % 7)) | ((unsigned)(r * 3 + i) & 0x11);
}

static long double _Complex reference(int o, int cat, int size, int i)
{
    MPI_Op op = ops[o].op;
    long double _Complex acc = value(o, cat, 0, i);
    for (int r = 1; r < size; r++) {
        long double _Complex v = value(o, cat, r, i);
        long double a = creall(acc), b = creall(v);
        if (op == MPI_SUM) acc = acc + v;
        else if (op == MPI_PROD) acc = acc * v;
        else if (op == MPI_MAX) acc = a > b ? a : b;
        else if (op == MPI_MIN) acc = a < b ? a : b;
        else if (op == MPI_LAND) acc = (a != 0) && (b != 0);
        else if (op == MPI_LOR) acc = (a != 0) || (b != 0);
        else if (op == MPI_LXOR) acc = (a != 0) != (b != 0);
        else if (op == MPI_BAND) acc = (unsigned)a & (unsigned)b;
        else if (op == MPI_BOR) acc = (unsigned)a | (unsigned)b;
        else acc = (unsigned)a ^ (unsigned)b;
    }
    if (size == 1 && (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR)) {
        /* a single operand is returned unchanged */
    }
    return acc;
}

static int rank, size;

static void test_pair(int o, int cat, const struct tinfo *t, int count)
{
    size_t es = st_size(t->st);
    char *in = calloc(1, es * (size_t)count + 1), *out = calloc(1, es * (size_t)count + 1);
    for (int i = 0; i < count; i++) st_put(t->st, in, (size_t)i, value(o, cat, rank, i));
    memset(out, 0x5a, es * (size_t)count);
    KT_MPI(MPI_Allreduce(in, out, count, t->dt, ops[o].op, MPI_COMM_WORLD));
    for (int i = 0; i < count; i++) {
        long double _Complex want = reference(o, cat, size, i), got = st_get(t->st, out, (size_t)i);
        if (cat == C_LOGICAL || ((ops[o].op == MPI_LAND || ops[o].op == MPI_LOR ||
                                  ops[o].op == MPI_LXOR) && size > 1)) {
            if ((creall(want) != 0) != (creall(got) != 0) || (size > 1 && creall(got) != 0 && creall(got) != 1))
                KT_FAIL("%s on %s: element %d is %Lg, expected %Lg", ops[o].name, t->name, i,
                        creall(got), creall(want));
        } else if (creall(got) != creall(want) || cimagl(got) != cimagl(want)) {
            KT_FAIL("%s on %s: element %d is %Lg%+Lgi, expected %Lg%+Lgi", ops[o].name, t->name, i,
                    creall(got), cimagl(got), creall(want), cimagl(want));
        }
    }
    /* in place, and Reduce to the last rank */
    memcpy(out, in, es * (size_t)count);
    KT_MPI(MPI_Allreduce(MPI_IN_PLACE, out, count, t->dt, ops[o].op, MPI_COMM_WORLD));
    for (int i = 0; i < count; i++) {
        long double _Complex want = reference(o, cat, size, i), got = st_get(t->st, out, (size_t)i);
        if ((creall(want) != 0) != (creall(got) != 0) ||
            (!(cat == C_LOGICAL || ((ops[o].op == MPI_LAND || ops[o].op == MPI_LOR ||
                                     ops[o].op == MPI_LXOR) && size > 1)) &&
             (creall(got) != creall(want) || cimagl(got) != cimagl(want))))
            KT_FAIL("%s on %s (MPI_IN_PLACE): element %d is %Lg, expected %Lg", ops[o].name,
                    t->name, i, creall(got), creall(want));
    }
    free(in);
    free(out);
}

/* ------------------------------------------------------ MINLOC / MAXLOC */
#define PAIR_TEST(NAME, DT, VT, IT)                                                       \
    static void pair_##NAME(int count)                                                    \
    {                                                                                     \
        struct { VT v; IT i; } *in = malloc(sizeof *in * (size_t)count),                  \
                              *mn = malloc(sizeof *mn * (size_t)count),                   \
                              *mx = malloc(sizeof *mx * (size_t)count);                   \
        /* values with many ties; indices not in rank order */                            \
        for (int k = 0; k < count; k++) {                                                 \
            in[k].v = (VT)((rank * 3 + k) % 4);                                           \
            in[k].i = (IT)((size - 1 - rank) * 2 + k % 3);                                \
        }                                                                                 \
        KT_MPI(MPI_Allreduce(in, mn, count, DT, MPI_MINLOC, MPI_COMM_WORLD));             \
        KT_MPI(MPI_Allreduce(in, mx, count, DT, MPI_MAXLOC, MPI_COMM_WORLD));             \
        for (int k = 0; k < count; k++) {                                                 \
            VT bmin = 0, bmax = 0; IT imin = 0, imax = 0;                                 \
            for (int r = 0; r < size; r++) {                                              \
                VT v = (VT)((r * 3 + k) % 4); IT ix = (IT)((size - 1 - r) * 2 + k % 3);   \
                if (r == 0 || v < bmin || (v == bmin && ix < imin)) { bmin = v; imin = ix; } \
                if (r == 0 || v > bmax || (v == bmax && ix < imax)) { bmax = v; imax = ix; } \
            }                                                                             \
            if (mn[k].v != bmin || mn[k].i != imin)                                       \
                KT_FAIL("MPI_MINLOC on " #DT ": element %d is (%g, %g), expected (%g, %g)", \
                        k, (double)mn[k].v, (double)mn[k].i, (double)bmin, (double)imin); \
            if (mx[k].v != bmax || mx[k].i != imax)                                       \
                KT_FAIL("MPI_MAXLOC on " #DT ": element %d is (%g, %g), expected (%g, %g)", \
                        k, (double)mx[k].v, (double)mx[k].i, (double)bmax, (double)imax); \
        }                                                                                 \
        /* Reduce to every root, in place at the root */                                  \
        for (int root = 0; root < size; root++) {                                         \
            if (rank == root) memcpy(mn, in, sizeof *in * (size_t)count);                 \
            KT_MPI(MPI_Reduce(rank == root ? MPI_IN_PLACE : (void *)in, mn, count, DT,    \
                              MPI_MAXLOC, root, MPI_COMM_WORLD));                         \
            if (rank == root)                                                             \
                for (int k = 0; k < count; k++)                                           \
                    KT_CHECK(mn[k].v == mx[k].v && mn[k].i == mx[k].i,                    \
                             "MPI_Reduce MAXLOC " #DT " root %d element %d", root, k);    \
        }                                                                                 \
        free(in); free(mn); free(mx);                                                     \
    }
PAIR_TEST(float_int, MPI_FLOAT_INT, float, int)
PAIR_TEST(double_int, MPI_DOUBLE_INT, double, int)
PAIR_TEST(long_int, MPI_LONG_INT, long, int)
PAIR_TEST(two_int, MPI_2INT, int, int)
PAIR_TEST(short_int, MPI_SHORT_INT, short, int)
PAIR_TEST(ldouble_int, MPI_LONG_DOUBLE_INT, long double, int)
PAIR_TEST(two_real, MPI_2REAL, float, float)
PAIR_TEST(two_double, MPI_2DOUBLE_PRECISION, double, double)
PAIR_TEST(two_integer, MPI_2INTEGER, int, int)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    int npairs = 0;
    for (int o = 0; o < NOPS; o++)
        for (int t = 0; t < NTYPES; t++) {
            int cat = types[t].cat;
            if (!(ops[o].cats & cat)) continue;
            /* Fortran / multi-language integers count as integers for logical ops too */
            test_pair(o, cat == C_FINT ? C_INT : cat, &types[t], 37);
            test_pair(o, cat == C_FINT ? C_INT : cat, &types[t], 1);
            npairs++;
        }
    KT_CHECK(npairs > 150, "only %d (op, type) pairs tested", npairs);

    for (int count = 1; count <= 33; count += 32) {
        pair_float_int(count); pair_double_int(count); pair_long_int(count);
        pair_two_int(count); pair_short_int(count); pair_ldouble_int(count);
        pair_two_real(count); pair_two_double(count); pair_two_integer(count);
    }

    /* zero count */
    int z = 7, zo = 9;
    KT_MPI(MPI_Allreduce(&z, &zo, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    KT_EQ_INT(zo, 9);

    /* pairs the standard does not define */
    int a[4] = { 1, 2, 3, 4 }, b[4];
    double d[2] = { 1, 2 }, e[2];
    KT_ERRCLASS(MPI_Allreduce(a, b, 2, MPI_INT, MPI_MAXLOC, MPI_COMM_WORLD), MPI_ERR_OP);
    KT_ERRCLASS(MPI_Allreduce(a, b, 2, MPI_2INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_OP);
    KT_ERRCLASS(MPI_Allreduce(d, e, 2, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP);
#ifdef KUMI_MPI /* Open MPI accepts arithmetic on MPI_BYTE; the standard does not */
    KT_ERRCLASS(MPI_Allreduce(a, b, 2, MPI_BYTE, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_OP);
#endif
    KT_ERRCLASS(MPI_Allreduce(d, e, 1, MPI_C_DOUBLE_COMPLEX, MPI_MAX, MPI_COMM_WORLD), MPI_ERR_OP);

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
