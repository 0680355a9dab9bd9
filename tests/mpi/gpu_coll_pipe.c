/* Pipelined blocking MPI_Bcast / MPI_Reduce / MPI_Allreduce on device
 * buffers (mpi/coll_accel.c), run by tests/scripts/gpu_coll_fakecuda.sh with
 * the stand-in driver (asynchronous copies done only when an event is waited
 * for: a piece used before its copy ended would hold stale bytes) at 1-4
 * ranks.  Arguments: THRESHOLD CHUNK N [sync] — the job's
 * kumi_base_accel_coll_pipeline and kumi_base_accel_coll_chunk, the element
 * count of the large calls, and "sync" where the driver has no streams (the
 * same pieces with synchronous copies; else asynchronous copies must show).
 * Every call is checked against values computed here, and the pieces it ran
 * against the MPI_T counter accel_coll_pieces (ceil(elements / elements per
 * piece); 0 at or below the threshold, or for a datatype with gaps in a
 * reduction):
 *   Bcast of MPI_INT (every root; device buffers everywhere, then on every
 *   other rank only), of odd byte counts, and of a vector type on the odd
 *   ranks (packed; its gaps keep their bytes) against MPI_INT elsewhere, and
 *   of MPI_2INT on the odd ranks against MPI_INT (pieces of ints on all);
 *   Reduce (every root) and Allreduce with MPI_SUM, MPI_IN_PLACE on device
 *   and on host buffers, host and device buffers mixed; a non-commutative
 *   user op (2x2 matrix products of a contiguous type of 4 unsigned) that
 *   checks it gets whole elements, never more than a piece; a reduction on a
 *   vector type (whole staging, no pieces); small calls (no pieces).
 * With GPU_COLL_FORM=nb every call is the non-blocking one and MPI_Wait,
 * with GPU_COLL_FORM=pers the persistent one (_init, then MPI_Start and
 * MPI_Wait twice, once where in place: the pieces twice): the same pieces,
 * values and counts.  nb with GPU_COLL_EARLY set: the root of a broadcast
 * from device memory must return from MPI_Ibcast before it read the whole
 * buffer (copies between the pieces' messages, not all before them; the
 * script sets it with pieces above the eager limit of shared memory, whose
 * sends cannot end inside the call, and never over tcp, where they may).  Errors: with copies from the
 * device failing on rank 1 (the stand-in's fakecuda_fail_dtoh), an
 * Allreduce of device buffers in pieces returns MPI_ERR_OTHER there (its
 * request completes: no rank waits forever); afterwards the same call
 * (persistent: the same request, started again) gives the right sums.
 * nb and pers: three calls in pieces in flight at once (two Allreduce and a
 * Bcast on device buffers, MPI_Waitall; persistent: MPI_Startall). */
#include "kt_fakecuda.h"
#include <stdbool.h>

static int rank, size;
static long long thresh, chunk;
static MPI_T_pvar_handle pv;
static MPI_Datatype mat;
static size_t mat_per;                    /* elements of mat per piece */

static unsigned long long pieces0;
static int form, runs = 1;                 /* 0 blocking, 1 non-blocking, 2 persistent; runs of the last call */
static bool early;                         /* nb and GPU_COLL_EARLY: check the early return */
static void begin(void) { pieces0 = kt_pvar_read(pv); }
static unsigned long long want_pieces(size_t nel, size_t esz)
{
    size_t per = (size_t)chunk / esz ? (size_t)chunk / esz : 1;
    return nel * esz > (size_t)thresh && thresh > 0 && chunk > 0 && nel > per ? (nel + per - 1) / per : 0;
}
static void end(size_t nel, size_t esz, const char *what)
{
    unsigned long long got = kt_pvar_read(pv) - pieces0, want = want_pieces(nel, esz) * (unsigned)runs;
    if (got != want) KT_FAIL("%s: %llu pieces, expected %llu (%zu elements of %zu bytes)", what, got, want, nel, esz);
}

/* device or host memory of n bytes (dev), filled from h */
static void *put(int dev, const void *h, size_t n)
{
    if (!dev) { void *p = malloc(n); KT_CHECK(p); memcpy(p, h, n); return p; }
    void *d = kt_dalloc(n);
    kt_to_dev(d, h, n);
    return d;
}
static void get(int dev, void *h, const void *p, size_t n)
{
    if (dev) kt_to_host(h, p, n);
    else memcpy(h, p, n);
}
static void drop(int dev, void *p)
{
    if (dev) cuMemFree((uintptr_t)p);
    else free(p);
}

/* the call in the form of the run (persistent: started n times) */
static void finish(MPI_Request *r, int n)
{
    runs = n;
    for (int i = 0; i < n; i++) {
        if (form == 2) KT_MPI(MPI_Start(r));
        KT_MPI(MPI_Wait(r, MPI_STATUS_IGNORE));
    }
    if (form == 2) KT_MPI(MPI_Request_free(r));
}
static void xbcast(void *b, int n, MPI_Datatype t, int root)
{
    MPI_Request r;
    runs = 1;
    if (form == 0) KT_MPI(MPI_Bcast(b, n, t, root, MPI_COMM_WORLD));
    else if (form == 1) { KT_MPI(MPI_Ibcast(b, n, t, root, MPI_COMM_WORLD, &r)); finish(&r, 1); }
    else { KT_MPI(MPI_Bcast_init(b, n, t, root, MPI_COMM_WORLD, MPI_INFO_NULL, &r)); finish(&r, 2); }
}
/* once: in place somewhere (a second run would reduce the result again; the same on every rank) */
static void xreduce(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, int root, bool once)
{
    MPI_Request r;
    int k = once ? 1 : 2;
    runs = 1;
    if (form == 0 && root < 0) KT_MPI(MPI_Allreduce(sb, rb, n, t, op, MPI_COMM_WORLD));
    else if (form == 0) KT_MPI(MPI_Reduce(sb, rb, n, t, op, root, MPI_COMM_WORLD));
    else if (form == 1 && root < 0) { KT_MPI(MPI_Iallreduce(sb, rb, n, t, op, MPI_COMM_WORLD, &r)); finish(&r, 1); }
    else if (form == 1) { KT_MPI(MPI_Ireduce(sb, rb, n, t, op, root, MPI_COMM_WORLD, &r)); finish(&r, 1); }
    else if (root < 0) {
        KT_MPI(MPI_Allreduce_init(sb, rb, n, t, op, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
        finish(&r, k);
    } else {
        KT_MPI(MPI_Reduce_init(sb, rb, n, t, op, root, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
        finish(&r, k);
    }
}

static int ival(int r, size_t i) { return (int)(r * 1000003 + i * 7 + 1); }

static void mat_of(int r, size_t i, unsigned m[4])
{
    m[0] = 1u + (unsigned)r + (unsigned)i;
    m[1] = 2u * (unsigned)r + 1u;
    m[2] = (unsigned)(i % 7);
    m[3] = 3u + (unsigned)r * (unsigned)(i % 5);
}
static void mat_mul(const unsigned a[4], const unsigned b[4], unsigned c[4])
{
    unsigned t[4] = { a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                      a[2] * b[1] + a[3] * b[3] };
    memcpy(c, t, sizeof t);
}
static void mat_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    KT_CHECK(*dt == mat, "the op got another datatype");
    if (mat_per && (size_t)*len > mat_per) KT_FAIL("the op got %d elements, more than a piece (%zu)", *len, mat_per);
    unsigned *a = in, *b = inout;
    for (int i = 0; i < *len; i++) mat_mul(a + 4 * i, b + 4 * i, b + 4 * i);   /* inout = in . inout */
}

static void bcasts(size_t n)
{
    int *h = malloc(n * sizeof(int) * 2 + 64), *e = malloc(n * sizeof(int) * 2 + 64);
    KT_CHECK(h && e);
    for (int mix = 0; mix < 2; mix++)
        for (int root = 0; root < size; root++) {
            int dev = !mix || rank % 2 == 0;
            for (size_t i = 0; i < n; i++) h[i] = rank == root ? ival(root, i) : -1;
            void *b = put(dev, h, n * sizeof(int));
            begin();
            if (form == 1 && early && dev && rank == root && size > 1 && want_pieces(n, sizeof(int)) > 2) {
                unsigned long long s0[KT_NSTATS], s1[KT_NSTATS];
                MPI_Request r;
                kt_stats(s0);
                KT_MPI(MPI_Ibcast(b, (int)n, MPI_INT, root, MPI_COMM_WORLD, &r));
                kt_stats(s1);
                if (s1[KT_DTOH] - s0[KT_DTOH] >= n * sizeof(int))
                    KT_FAIL("MPI_Ibcast root %d read all %zu bytes from the device before it returned", root,
                            n * sizeof(int));
                finish(&r, 1);
            } else xbcast(b, (int)n, MPI_INT, root);
            end(n, sizeof(int), "MPI_Bcast of MPI_INT");
            get(dev, h, b, n * sizeof(int));
            for (size_t i = 0; i < n; i++)
                if (h[i] != ival(root, i)) KT_FAIL("MPI_Bcast root %d (mix %d): int %zu is %d", root, mix, i, h[i]);
            drop(dev, b);
        }
    /* odd byte counts */
    size_t nb = n * 4 + 3;
    unsigned char *c = (unsigned char *)h;
    for (int root = 0; root < size; root++) {
        for (size_t i = 0; i < nb; i++) c[i] = rank == root ? kt_pat(root, i, nb, 1) : 0;
        void *b = put(1, c, nb);
        begin();
        xbcast(b, (int)nb, MPI_BYTE, root);
        end(nb, 1, "MPI_Bcast of MPI_BYTE");
        get(1, c, b, nb);
        for (size_t i = 0; i < nb; i++)
            if (c[i] != kt_pat(root, i, nb, 1)) KT_FAIL("MPI_Bcast of %zu bytes from %d: byte %zu", nb, root, i);
        drop(1, b);
    }
    /* a vector type (every other int) on the odd ranks, MPI_INT elsewhere: the same pieces */
    MPI_Datatype vec;
    MPI_Type_vector((int)n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (int root = 0; root < size; root++) {
        int odd = rank % 2, m = odd ? 2 * (int)n : (int)n;
        for (int i = 0; i < m; i++) h[i] = rank == root ? ival(root, (size_t)(odd ? i / 2 : i)) : 0x5a5a;
        if (odd && rank == root) for (int i = 1; i < m; i += 2) h[i] = 0x5a5a;
        void *b = put(1, h, (size_t)m * sizeof(int));
        begin();
        xbcast(b, odd ? 1 : (int)n, odd ? vec : MPI_INT, root);
        end(n, sizeof(int), "MPI_Bcast of a vector / MPI_INT");
        get(1, e, b, (size_t)m * sizeof(int));
        for (int i = 0; i < m; i++) {
            int want = odd && i % 2 ? 0x5a5a : ival(root, (size_t)(odd ? i / 2 : i));
            if (e[i] != want) KT_FAIL("MPI_Bcast of a vector from %d: int %d is %d, expected %d", root, i, e[i], want);
        }
        drop(1, b);
    }
    MPI_Type_free(&vec);
    /* MPI_2INT on the odd ranks, MPI_INT elsewhere: pieces of ints on both */
    size_t mm = n & ~(size_t)1;
    for (int root = 0; root < size; root++) {
        for (size_t i = 0; i < mm; i++) h[i] = rank == root ? ival(root, i) : -1;
        void *b = put(1, h, mm * sizeof(int));
        begin();
        xbcast(b, rank % 2 ? (int)(mm / 2) : (int)mm, rank % 2 ? MPI_2INT : MPI_INT, root);
        end(mm, sizeof(int), "MPI_Bcast of MPI_2INT / MPI_INT");
        get(1, h, b, mm * sizeof(int));
        for (size_t i = 0; i < mm; i++)
            if (h[i] != ival(root, i)) KT_FAIL("MPI_Bcast of MPI_2INT / MPI_INT from %d: int %zu is %d", root, i, h[i]);
        drop(1, b);
    }
    free(h);
    free(e);
}

/* Reduce (root >= 0) or Allreduce (root -1) of MPI_SUM on ints: forms 0 device, 1 host and device mixed,
 * 2 in place on the device, 3 in place on host memory */
static void sums(size_t n)
{
    int *h = malloc(n * sizeof(int)), *r = calloc(n, sizeof(int));
    KT_CHECK(h && r);
    for (int root = -1; root < size; root++)
        for (int form = 0; form < 4; form++) {
            bool here = root < 0 || rank == root, inpl = form >= 2 && here;
            int sdev = form == 1 ? rank % 2 : form != 3, rdev = form == 1 ? rank % 2 == 0 : form != 3;
            for (size_t i = 0; i < n; i++) h[i] = ival(rank, i);
            void *sb = inpl ? NULL : put(sdev, h, n * sizeof(int));
            void *rb = put(rdev, inpl ? h : r, here ? n * sizeof(int) : 1);
            begin();
            xreduce(inpl ? MPI_IN_PLACE : sb, rb, (int)n, MPI_INT, MPI_SUM, root, form >= 2);
            end(n, sizeof(int), root < 0 ? "MPI_Allreduce" : "MPI_Reduce");
            if (here) {
                get(rdev, r, rb, n * sizeof(int));
                for (size_t i = 0; i < n; i++) {
                    int want = 0;
                    for (int k = 0; k < size; k++) want += ival(k, i);
                    if (r[i] != want) KT_FAIL("sum at root %d form %d: int %zu is %d, expected %d", root, form, i, r[i], want);
                }
            }
            if (sb) drop(sdev, sb);
            drop(rdev, rb);
        }
    free(h);
    free(r);
}

/* the non-commutative op: Reduce at every root and Allreduce, device buffers (in place at the root too) */
static void products(size_t n)
{
    size_t bytes = n * 16;
    unsigned *h = malloc(bytes), *r = malloc(bytes), *w = malloc(bytes);
    KT_CHECK(h && r && w);
    MPI_Op op;
    MPI_Op_create(mat_op, 0, &op);
    for (size_t i = 0; i < n; i++) {
        mat_of(0, i, w + 4 * i);
        for (int k = 1; k < size; k++) {
            unsigned m[4];
            mat_of(k, i, m);
            mat_mul(w + 4 * i, m, w + 4 * i);
        }
    }
    for (int root = -1; root < size; root++)
        for (int inpl = 0; inpl < 2; inpl++) {
            bool here = root < 0 || rank == root, ip = inpl && here;
            for (size_t i = 0; i < n; i++) mat_of(rank, i, h + 4 * i);
            void *sb = ip ? NULL : put(1, h, bytes), *rb = put(1, ip ? h : r, bytes);
            begin();
            xreduce(ip ? MPI_IN_PLACE : sb, rb, (int)n, mat, op, root, inpl);
            end(n, 16, "a non-commutative op");
            if (here) {
                get(1, r, rb, bytes);
                if (memcmp(r, w, bytes)) KT_FAIL("products at root %d (in place %d): not in rank order", root, inpl);
            }
            if (sb) drop(1, sb);
            drop(1, rb);
        }
    MPI_Op_free(&op);
    free(h);
    free(r);
    free(w);
}

/* two Allreduce and a Bcast in flight at once (nb, pers) */
static void several(size_t n)
{
    int *h = calloc(n, sizeof(int));
    KT_CHECK(h);
    for (size_t i = 0; i < n; i++) h[i] = ival(rank, i);
    void *s1 = put(1, h, n * sizeof(int)), *r1 = put(1, h, n * sizeof(int)), *r2 = put(rank % 2, h, n * sizeof(int));
    for (size_t i = 0; i < n; i++) h[i] = rank == 0 ? ival(7, i) : -1;
    void *b = put(1, h, n * sizeof(int));
    MPI_Request q[3];
    begin();
    if (form == 1) {
        KT_MPI(MPI_Iallreduce(s1, r1, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[0]));
        KT_MPI(MPI_Ibcast(b, (int)n, MPI_INT, 0, MPI_COMM_WORLD, &q[1]));
        KT_MPI(MPI_Iallreduce(MPI_IN_PLACE, r2, (int)n, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &q[2]));
        KT_MPI(MPI_Waitall(3, q, MPI_STATUSES_IGNORE));
    } else {
        KT_MPI(MPI_Allreduce_init(s1, r1, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]));
        KT_MPI(MPI_Bcast_init(b, (int)n, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]));
        KT_MPI(MPI_Allreduce_init(MPI_IN_PLACE, r2, (int)n, MPI_INT, MPI_MAX, MPI_COMM_WORLD, MPI_INFO_NULL, &q[2]));
        KT_MPI(MPI_Startall(3, q));
        KT_MPI(MPI_Waitall(3, q, MPI_STATUSES_IGNORE));
        for (int i = 0; i < 3; i++) KT_MPI(MPI_Request_free(&q[i]));
    }
    unsigned long long got = kt_pvar_read(pv) - pieces0;
    if (got != 3 * want_pieces(n, sizeof(int)))
        KT_FAIL("three calls in flight: %llu pieces, expected %llu", got, 3 * want_pieces(n, sizeof(int)));
    get(1, h, r1, n * sizeof(int));
    for (size_t i = 0; i < n; i++) {
        int want = 0;
        for (int k = 0; k < size; k++) want += ival(k, i);
        if (h[i] != want) KT_FAIL("three in flight: sum int %zu is %d, expected %d", i, h[i], want);
    }
    get(rank % 2, h, r2, n * sizeof(int));
    for (size_t i = 0; i < n; i++)
        if (h[i] != ival(size - 1, i)) KT_FAIL("three in flight: max int %zu is %d", i, h[i]);
    get(1, h, b, n * sizeof(int));
    for (size_t i = 0; i < n; i++)
        if (h[i] != ival(7, i)) KT_FAIL("three in flight: bcast int %zu is %d", i, h[i]);
    drop(1, s1);
    drop(1, r1);
    drop(rank % 2, r2);
    drop(1, b);
    free(h);
}

/* sums of ints on device buffers, every form, with device-to-host copies failing on rank 1 first */
static void errors(size_t n, void (*fail)(int))
{
    int *h = malloc(n * sizeof(int));
    KT_CHECK(h);
    for (size_t i = 0; i < n; i++) h[i] = ival(rank, i);
    void *sb = put(1, h, n * sizeof(int)), *rb = put(1, h, n * sizeof(int));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Request r = MPI_REQUEST_NULL;
    if (form == 2) KT_MPI(MPI_Allreduce_init(sb, rb, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    for (int round = 0; round < 2; round++) {
        if (rank == 1 && !round) fail(1);
        int rc;
        if (form == 0) rc = MPI_Allreduce(sb, rb, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        else {
            if (form == 1) rc = MPI_Iallreduce(sb, rb, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
            else rc = MPI_Start(&r);
            KT_CHECK(rc == MPI_SUCCESS, "starting the call failed (%d)", rc);
            rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        if (rank == 1 && !round) fail(0);
        int cls = -1;
        if (rc) MPI_Error_class(rc, &cls);
        if (rank == 1 && !round) {
            if (rc == MPI_SUCCESS || cls != MPI_ERR_OTHER)
                KT_FAIL("copies from the device failed: the call returned %d (class %d), not MPI_ERR_OTHER", rc, cls);
            continue;
        }
        KT_CHECK(rc == MPI_SUCCESS, "round %d: the call failed (class %d)", round, cls);
        if (!round) continue;
        get(1, h, rb, n * sizeof(int));
        for (size_t i = 0; i < n; i++) {
            int want = 0;
            for (int k = 0; k < size; k++) want += ival(k, i);
            if (h[i] != want) KT_FAIL("after the error: int %zu is %d, expected %d", i, h[i], want);
        }
    }
    if (form == 2) KT_MPI(MPI_Request_free(&r));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    drop(1, sb);
    drop(1, rb);
    free(h);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(argc > 3, "usage: gpu_coll_pipe THRESHOLD CHUNK N [sync]");
    int sync = argc > 4 && !strcmp(argv[4], "sync");   /* the driver has no streams (FAKECUDA_NOSTREAM) */
    const char *fm = getenv("GPU_COLL_FORM");
    form = fm && !strcmp(fm, "nb") ? 1 : fm && !strcmp(fm, "pers") ? 2 : 0;
    early = getenv("GPU_COLL_EARLY") != NULL;
    thresh = atoll(argv[1]);
    chunk = atoll(argv[2]);
    size_t n = (size_t)atol(argv[3]);
    kt_cuda_load();
    pv = kt_pvar("accel_coll_pieces");
    MPI_Type_contiguous(4, MPI_UNSIGNED, &mat);
    MPI_Type_commit(&mat);
    mat_per = chunk > 0 && thresh > 0 ? ((size_t)chunk / 16 ? (size_t)chunk / 16 : 1) : 0;   /* 0: no check */
    unsigned long long st0[KT_NSTATS], st1[KT_NSTATS];
    kt_stats(st0);
    bcasts(n);
    sums(n);
    products(n / 4 + 1);
    sums(7);                                      /* small: no pieces */
    void (*fail)(int);
    *(void **)&fail = dlsym(kt_cuda_load(), "fakecuda_fail_dtoh");
    KT_CHECK(fail, "the driver has no fakecuda_fail_dtoh");
    if (size > 1 && want_pieces(n, sizeof(int))) errors(n, fail);
    if (form) several(n);
    void *z = put(1, &rank, sizeof rank);         /* 0 elements: nothing moves, no pieces */
    begin();
    xbcast(z, 0, MPI_INT, 0);
    xreduce(MPI_IN_PLACE, z, 0, MPI_INT, MPI_SUM, -1, true);
    end(0, sizeof(int), "0 elements");
    int zv = -1;
    get(1, &zv, z, sizeof zv);
    KT_CHECK(zv == rank, "a call of 0 elements changed the buffer: %d", zv);
    drop(1, z);
    kt_stats(st1);
    if (sync && st1[KT_ASYNC] != st0[KT_ASYNC])
        KT_FAIL("%llu asynchronous copies without streams", st1[KT_ASYNC] - st0[KT_ASYNC]);
    if (!sync && thresh > 0 && chunk > 0 && (size_t)chunk < n && st1[KT_ASYNC] == st0[KT_ASYNC])
        KT_FAIL("no asynchronous copy: the pieces were not pipelined");
    /* a reduction on a type with gaps: staged whole, no pieces */
    MPI_Datatype vec;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    size_t m = n / 2 + 1;
    int *h = calloc(4 * m, sizeof(int));
    KT_CHECK(h);
    for (size_t i = 0; i < 4 * m; i++) h[i] = (int)i + rank;
    void *d = put(1, h, 4 * m * sizeof(int));
    begin();
    xreduce(MPI_IN_PLACE, d, (int)m, vec, MPI_SUM, -1, true);
    unsigned long long got = kt_pvar_read(pv) - pieces0;
    KT_CHECK(got == 0, "a vector type went in %llu pieces", got);
    get(1, h, d, 4 * m * sizeof(int));
    for (size_t i = 0; i < 4 * m; i++) {
        bool used = i < 3 * m && i % 3 != 1;        /* element j: ints 3j and 3j + 2 */
        int want = used ? size * (int)i + size * (size - 1) / 2 : (int)i + rank;
        if (h[i] != want) KT_FAIL("Allreduce of a vector: int %zu is %d, expected %d", i, h[i], want);
    }
    drop(1, d);
    free(h);
    MPI_Type_free(&vec);
    MPI_Type_free(&mat);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("gpu_coll_pipe: %d ranks, threshold %lld, chunk %lld, %zu elements: ok\n", size, thresh, chunk, n);
    MPI_Finalize();
    return 0;
}
