/* RMA operations under every synchronisation mode, checked by value.
 *
 *   rma_ops [create|allocate|shared|dynamic]    (default: every flavour)
 *
 * Per flavour and mode (fence, post-start-complete-wait, lock, lock_all):
 *   - Put of a block into the right neighbour's window, Get of the left
 *     neighbour's block, checked against the values its owner wrote;
 *   - Accumulate (MPI_SUM) from every rank onto one location of every rank:
 *     the result is exact (the sum of all contributions, for several rounds);
 *   - Get_accumulate, Fetch_and_op and Compare_and_swap on a counter of rank
 *     0: every fetched value is distinct and the final value is the sum;
 *   - a derived (strided vector) target datatype, and a derived origin type;
 *   - the R* forms, completed with MPI_Wait before the epoch ends;
 *   - dynamic windows: 40 regions per rank (more than a same-host origin
 *     checks in the target's table), Put / Accumulate / Get in three;
 * (Win_allocate_shared only when every rank is on one host.)
 * With RMA_OPS_MIXED set, odd ranks use active messages only (parameter
 * kumi_base_rma_direct=false) and even ranks the direct path, so locks are
 * granted by both sides of the lock word and accumulates of both paths meet.
 * And bad arguments: a wrong target rank (MPI_ERR_RANK), a displacement
 * outside the window (MPI_ERR_RMA_RANGE) and an operation outside an access
 * epoch (MPI_ERR_RMA_SYNC), with MPI_ERRORS_RETURN on the window; dynamic
 * windows: outside the attached memory (MPI_ERR_RMA_RANGE from the call or
 * from the unlock). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 64                            /* ints per block */
#define WIN_INTS (4 * N + 16)

static int rank, size, errs;
static const char *flavor_name;
static const char *mode_name;

#define CHECK(cond, ...)                                                                          \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            if (errs++ < 20) {                                                                    \
                fprintf(stderr, "rank %d [%s/%s] line %d: ", rank, flavor_name, mode_name, __LINE__); \
                fprintf(stderr, __VA_ARGS__);                                                     \
                fputc('\n', stderr);                                                              \
            }                                                                                     \
        }                                                                                         \
    } while (0)

enum { M_FENCE, M_PSCW, M_LOCK, M_LOCKALL, NMODES };
static const char *mode_names[] = { "fence", "pscw", "lock", "lockall" };

/* value that rank r stores at index i of its block */
static int val(int r, int i) { return r * 1000 + i; }

struct win { MPI_Win w; int *mem; MPI_Aint base_disp; void *dynmem; };
static MPI_Aint *bases;                 /* dynamic windows: every rank's attached address */

static struct win make_win(const char *flavor)
{
    struct win x = { MPI_WIN_NULL, NULL, 0, NULL };
    MPI_Aint bytes = WIN_INTS * sizeof(int);
    if (!strcmp(flavor, "create")) {
        x.mem = calloc(WIN_INTS, sizeof(int));
        MPI_Win_create(x.mem, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &x.w);
    } else if (!strcmp(flavor, "allocate")) {
        MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &x.mem, &x.w);
        memset(x.mem, 0, (size_t)bytes);
    } else if (!strcmp(flavor, "shared")) {
        MPI_Win_allocate_shared(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &x.mem, &x.w);
        memset(x.mem, 0, (size_t)bytes);
    } else {
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &x.w);
        x.mem = calloc(WIN_INTS, sizeof(int));
        x.dynmem = x.mem;
        MPI_Win_attach(x.w, x.mem, bytes);
        MPI_Aint a;
        MPI_Get_address(x.mem, &a);
        MPI_Allgather(&a, 1, MPI_AINT, bases, 1, MPI_AINT, MPI_COMM_WORLD);
    }
    MPI_Win_set_errhandler(x.w, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    return x;
}

static void free_win(struct win *x, const char *flavor)
{
    if (!strcmp(flavor, "dynamic")) MPI_Win_detach(x->w, x->mem);
    MPI_Win_free(&x->w);
    if (!strcmp(flavor, "create") || !strcmp(flavor, "dynamic")) free(x->mem);
}

/* Displacement of int index i of rank r's window memory, as an origin names it. */
static MPI_Aint disp_of(const char *flavor, int r, int i)
{
    if (!strcmp(flavor, "dynamic")) return bases[r] + (MPI_Aint)i * (MPI_Aint)sizeof(int);
    return i;
}

static MPI_Group world_group, left_right;

/* Open an access (and exposure) epoch to the neighbours / everyone. */
static void open_epoch(MPI_Win w, int mode, int target_all)
{
    switch (mode) {
    case M_FENCE: MPI_Win_fence(0, w); break;
    case M_PSCW:
        MPI_Win_post(target_all ? world_group : left_right, 0, w);
        MPI_Win_start(target_all ? world_group : left_right, 0, w);
        break;
    case M_LOCK: break;                 /* per operation, below */
    case M_LOCKALL: MPI_Win_lock_all(0, w); break;
    }
}

static void close_epoch(MPI_Win w, int mode)
{
    switch (mode) {
    case M_FENCE: MPI_Win_fence(0, w); break;
    case M_PSCW: MPI_Win_complete(w); MPI_Win_wait(w); break;
    case M_LOCK: break;
    case M_LOCKALL: MPI_Win_unlock_all(w); break;
    }
    MPI_Barrier(MPI_COMM_WORLD);       /* everybody's epochs are over: read own memory */
}

static void lock_if(int mode, int type, int target, MPI_Win w) { if (mode == M_LOCK) MPI_Win_lock(type, target, 0, w); }
static void unlock_if(int mode, int target, MPI_Win w) { if (mode == M_LOCK) MPI_Win_unlock(target, w); }

static void test_put_get(const char *flavor, int mode)
{
    struct win x = make_win(flavor);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int src[N], got[N];
    for (int i = 0; i < N; i++) { src[i] = val(rank, i); x.mem[2 * N + i] = val(rank, i + 7); }
    MPI_Barrier(MPI_COMM_WORLD);
    /* Put my block at [0, N) of the right neighbour; Get the left neighbour's [2N, 3N) */
    open_epoch(x.w, mode, 0);
    lock_if(mode, MPI_LOCK_EXCLUSIVE, right, x.w);
    int rc = MPI_Put(src, N, MPI_INT, right, disp_of(flavor, right, 0), N, MPI_INT, x.w);
    CHECK(rc == MPI_SUCCESS, "MPI_Put returned %d", rc);
    unlock_if(mode, right, x.w);
    lock_if(mode, MPI_LOCK_SHARED, left, x.w);
    rc = MPI_Get(got, N, MPI_INT, left, disp_of(flavor, left, 2 * N), N, MPI_INT, x.w);
    CHECK(rc == MPI_SUCCESS, "MPI_Get returned %d", rc);
    unlock_if(mode, left, x.w);
    close_epoch(x.w, mode);
    for (int i = 0; i < N; i++) {
        CHECK(x.mem[i] == val(left, i), "put: mem[%d] = %d, expected %d", i, x.mem[i], val(left, i));
        CHECK(got[i] == val(left, i + 7), "get: got[%d] = %d, expected %d", i, got[i], val(left, i + 7));
    }
    /* derived target type: every second int of [N, 3N) on the right neighbour, from a contiguous
       origin; and a derived origin type (every third int of a buffer) into a contiguous target */
    MPI_Datatype vec, ovec;
    MPI_Type_vector(N, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_vector(N / 2, 1, 3, MPI_INT, &ovec);
    MPI_Type_commit(&ovec);
    int strided[3 * N];
    for (int i = 0; i < 3 * N; i++) strided[i] = -1 - i;
    for (int i = 0; i < N / 2; i++) strided[3 * i] = val(rank, 500 + i);
    memset(x.mem, 0, WIN_INTS * sizeof(int));
    MPI_Barrier(MPI_COMM_WORLD);
    open_epoch(x.w, mode, 0);
    lock_if(mode, MPI_LOCK_EXCLUSIVE, right, x.w);
    rc = MPI_Put(src, N, MPI_INT, right, disp_of(flavor, right, N), 1, vec, x.w);
    CHECK(rc == MPI_SUCCESS, "MPI_Put (vector target) returned %d", rc);
    rc = MPI_Put(strided, 1, ovec, right, disp_of(flavor, right, 3 * N + 8), N / 2, MPI_INT, x.w);
    CHECK(rc == MPI_SUCCESS, "MPI_Put (vector origin) returned %d", rc);
    unlock_if(mode, right, x.w);
    close_epoch(x.w, mode);
    for (int i = 0; i < N; i++) {
        CHECK(x.mem[N + 2 * i] == val(left, i), "vector put: mem[%d] = %d, expected %d", N + 2 * i,
              x.mem[N + 2 * i], val(left, i));
        CHECK(x.mem[N + 2 * i + 1] == 0, "vector put wrote a hole: mem[%d] = %d", N + 2 * i + 1, x.mem[N + 2 * i + 1]);
    }
    for (int i = 0; i < N / 2; i++)
        CHECK(x.mem[3 * N + 8 + i] == val(left, 500 + i), "vector origin: mem[%d] = %d, expected %d",
              3 * N + 8 + i, x.mem[3 * N + 8 + i], val(left, 500 + i));
    /* Get through the vector type back from the left neighbour (its own holes are 0) */
    int back[N];
    open_epoch(x.w, mode, 0);
    lock_if(mode, MPI_LOCK_SHARED, left, x.w);
    rc = MPI_Get(back, N, MPI_INT, left, disp_of(flavor, left, N), 1, vec, x.w);
    CHECK(rc == MPI_SUCCESS, "MPI_Get (vector target) returned %d", rc);
    unlock_if(mode, left, x.w);
    close_epoch(x.w, mode);
    int ll = (left + size - 1) % size;
    for (int i = 0; i < N; i++)
        CHECK(back[i] == val(ll, i), "vector get: back[%d] = %d, expected %d", i, back[i], val(ll, i));
    MPI_Type_free(&vec);
    MPI_Type_free(&ovec);
    free_win(&x, flavor);
}

static void test_accumulate(const char *flavor, int mode)
{
    struct win x = make_win(flavor);
    const int rounds = 5;
    /* every rank adds (rank+1)*(k+1) to index 4N+1 of every rank, and element-wise a
       block of N to [0, N) of every rank; also MPI_REPLACE-free MPI_MAX on index 4N+2 */
    int contrib[N];
    for (int i = 0; i < N; i++) contrib[i] = rank + i;
    for (int k = 0; k < rounds; k++) {
        open_epoch(x.w, mode, 1);
        for (int t = 0; t < size; t++) {
            int one = (rank + 1) * (k + 1);
            lock_if(mode, MPI_LOCK_SHARED, t, x.w);
            int rc = MPI_Accumulate(&one, 1, MPI_INT, t, disp_of(flavor, t, 4 * N + 1), 1, MPI_INT, MPI_SUM, x.w);
            CHECK(rc == MPI_SUCCESS, "MPI_Accumulate returned %d", rc);
            rc = MPI_Accumulate(contrib, N, MPI_INT, t, disp_of(flavor, t, 0), N, MPI_INT, MPI_SUM, x.w);
            CHECK(rc == MPI_SUCCESS, "MPI_Accumulate (block) returned %d", rc);
            int mx = rank * 10 + k;
            rc = MPI_Accumulate(&mx, 1, MPI_INT, t, disp_of(flavor, t, 4 * N + 2), 1, MPI_INT, MPI_MAX, x.w);
            CHECK(rc == MPI_SUCCESS, "MPI_Accumulate (max) returned %d", rc);
            unlock_if(mode, t, x.w);
        }
        close_epoch(x.w, mode);
    }
    int sumr = size * (size + 1) / 2, sumk = rounds * (rounds + 1) / 2;
    CHECK(x.mem[4 * N + 1] == sumr * sumk, "accumulate: %d, expected %d", x.mem[4 * N + 1], sumr * sumk);
    for (int i = 0; i < N; i++) {
        int want = rounds * (size * (size - 1) / 2 + size * i);
        CHECK(x.mem[i] == want, "accumulate block: mem[%d] = %d, expected %d", i, x.mem[i], want);
    }
    CHECK(x.mem[4 * N + 2] == (size - 1) * 10 + rounds - 1, "max: %d, expected %d", x.mem[4 * N + 2],
          (size - 1) * 10 + rounds - 1);

    /* fetching atomics on rank 0's counter at 4N+3: every rank adds 1, rounds times, with
       Fetch_and_op (and Get_accumulate): the fetched values are all distinct */
    int *seen = calloc((size_t)(size * rounds * 2), sizeof(int)), mine[2 * 5], nmine = 0;
    for (int k = 0; k < rounds; k++) {
        open_epoch(x.w, mode, 1);
        int one = 1, old = -1;
        lock_if(mode, MPI_LOCK_EXCLUSIVE, 0, x.w);
        int rc = MPI_Fetch_and_op(&one, &old, MPI_INT, 0, disp_of(flavor, 0, 4 * N + 3), MPI_SUM, x.w);
        CHECK(rc == MPI_SUCCESS, "MPI_Fetch_and_op returned %d", rc);
        unlock_if(mode, 0, x.w);
        int old2 = -1;
        lock_if(mode, MPI_LOCK_SHARED, 0, x.w);
        rc = MPI_Get_accumulate(&one, 1, MPI_INT, &old2, 1, MPI_INT, 0, disp_of(flavor, 0, 4 * N + 3), 1, MPI_INT,
                                MPI_SUM, x.w);
        CHECK(rc == MPI_SUCCESS, "MPI_Get_accumulate returned %d", rc);
        unlock_if(mode, 0, x.w);
        close_epoch(x.w, mode);
        mine[nmine++] = old;
        mine[nmine++] = old2;
    }
    int *all = malloc((size_t)(size * nmine) * sizeof(int));
    MPI_Allgather(mine, nmine, MPI_INT, all, nmine, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size * nmine; i++) {
        CHECK(all[i] >= 0 && all[i] < size * nmine, "fetched value %d out of range", all[i]);
        if (all[i] >= 0 && all[i] < size * nmine) {
            CHECK(!seen[all[i]], "value %d fetched twice", all[i]);
            seen[all[i]] = 1;
        }
    }
    if (rank == 0) CHECK(x.mem[4 * N + 3] == size * nmine, "counter %d, expected %d", x.mem[4 * N + 3], size * nmine);
    free(all);
    free(seen);

    /* compare-and-swap: rank 0's slot 4N+4 starts at -1; every rank tries to swap -1 -> rank;
       exactly one wins and everybody fetched either -1 (the winner) or the winner's rank */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) x.mem[4 * N + 4] = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    open_epoch(x.w, mode, 1);
    int cmp = -1, res = -7;
    lock_if(mode, MPI_LOCK_EXCLUSIVE, 0, x.w);
    int rc = MPI_Compare_and_swap(&rank, &cmp, &res, MPI_INT, 0, disp_of(flavor, 0, 4 * N + 4), x.w);
    CHECK(rc == MPI_SUCCESS, "MPI_Compare_and_swap returned %d", rc);
    unlock_if(mode, 0, x.w);
    close_epoch(x.w, mode);
    int winner = -2;
    if (rank == 0) winner = x.mem[4 * N + 4];
    MPI_Bcast(&winner, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int wins = res == -1, nwins;
    MPI_Allreduce(&wins, &nwins, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(nwins == 1, "%d ranks won the compare-and-swap", nwins);
    CHECK(winner >= 0 && winner < size, "compare-and-swap left %d", winner);
    CHECK(res == -1 ? winner == rank : res == winner, "compare-and-swap fetched %d (winner %d)", res, winner);
    free_win(&x, flavor);
}

static void test_requests(const char *flavor, int mode)
{
    if (mode != M_LOCK && mode != M_LOCKALL) return;   /* R* operations need a passive epoch */
    struct win x = make_win(flavor);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int src[N], got[N], acc = rank + 1;
    for (int i = 0; i < N; i++) { src[i] = val(rank, i); x.mem[2 * N + i] = val(rank, i + 3); }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Request rq[4];
    if (mode == M_LOCKALL) MPI_Win_lock_all(0, x.w);
    else { MPI_Win_lock(MPI_LOCK_SHARED, right, 0, x.w); if (left != right) MPI_Win_lock(MPI_LOCK_SHARED, left, 0, x.w); }
    MPI_Rput(src, N, MPI_INT, right, disp_of(flavor, right, 0), N, MPI_INT, x.w, &rq[0]);
    MPI_Rget(got, N, MPI_INT, left, disp_of(flavor, left, 2 * N), N, MPI_INT, x.w, &rq[1]);
    MPI_Raccumulate(&acc, 1, MPI_INT, right, disp_of(flavor, right, 4 * N + 5), 1, MPI_INT, MPI_SUM, x.w, &rq[2]);
    int old = -1;
    MPI_Rget_accumulate(&acc, 1, MPI_INT, &old, 1, MPI_INT, left, disp_of(flavor, left, 4 * N + 6), 1, MPI_INT,
                        MPI_SUM, x.w, &rq[3]);
    int rc = MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
    CHECK(rc == MPI_SUCCESS, "MPI_Waitall of R* requests returned %d", rc);
    for (int i = 0; i < N; i++) CHECK(got[i] == val(left, i + 3), "rget: got[%d] = %d", i, got[i]);
    if (mode == M_LOCKALL) MPI_Win_unlock_all(x.w);
    else { MPI_Win_unlock(right, x.w); if (left != right) MPI_Win_unlock(left, x.w); }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) CHECK(x.mem[i] == val(left, i), "rput: mem[%d] = %d", i, x.mem[i]);
    CHECK(x.mem[4 * N + 5] == left + 1, "raccumulate: %d, expected %d", x.mem[4 * N + 5], left + 1);
    CHECK(x.mem[4 * N + 6] == right + 1, "rget_accumulate target: %d, expected %d", x.mem[4 * N + 6], right + 1);
    CHECK(old == 0, "rget_accumulate fetched %d, expected 0", old);
    free_win(&x, flavor);
}

static void test_errors(const char *flavor)
{
    mode_name = "errors";
    struct win x = make_win(flavor);
    int v = 1, cls, rc;
    /* outside an epoch */
    rc = MPI_Put(&v, 1, MPI_INT, 0, disp_of(flavor, 0, 0), 1, MPI_INT, x.w);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RMA_SYNC, "put outside an epoch: class %d, expected MPI_ERR_RMA_SYNC", cls);
    MPI_Win_fence(0, x.w);
    rc = MPI_Put(&v, 1, MPI_INT, size, 0, 1, MPI_INT, x.w);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RANK, "put to rank %d: class %d, expected MPI_ERR_RANK", size, cls);
    if (strcmp(flavor, "dynamic")) {
        rc = MPI_Put(&v, 1, MPI_INT, 0, WIN_INTS, 1, MPI_INT, x.w);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_RMA_RANGE, "put past the end: class %d, expected MPI_ERR_RMA_RANGE", cls);
        rc = MPI_Get(&v, 1, MPI_INT, 0, -1, 1, MPI_INT, x.w);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_RMA_RANGE, "get before the start: class %d, expected MPI_ERR_RMA_RANGE", cls);
    }
    rc = MPI_Accumulate(&v, 1, MPI_INT, 0, disp_of(flavor, 0, 0), 1, MPI_INT, MPI_OP_NULL, x.w);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "accumulate with MPI_OP_NULL: class %d, expected MPI_ERR_OP", cls);
    MPI_Win_fence(0, x.w);
    rc = MPI_Win_unlock(0, x.w);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RMA_SYNC, "unlock without lock: class %d, expected MPI_ERR_RMA_SYNC", cls);
    rc = MPI_Win_complete(x.w);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RMA_SYNC, "complete without start: class %d, expected MPI_ERR_RMA_SYNC", cls);
    rc = MPI_Win_lock(12345, 0, 0, x.w);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_LOCKTYPE, "lock type 12345: class %d, expected MPI_ERR_LOCKTYPE", cls);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, x.w);
    if (!strcmp(flavor, "dynamic")) {
        /* outside the memory rank 0 attached: the error comes from the call (same host: checked at the
           origin) or from the unlock (active messages: checked at the target) */
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, x.w);
        int rc1 = MPI_Put(&v, 1, MPI_INT, 0, bases[0] + WIN_INTS * (MPI_Aint)sizeof(int) + 64, 1, MPI_INT, x.w);
        int rc2 = MPI_Win_unlock(0, x.w), c2;
        MPI_Error_class(rc1, &cls);
        MPI_Error_class(rc2, &c2);
        CHECK(cls == MPI_ERR_RMA_RANGE || (rc1 == MPI_SUCCESS && c2 == MPI_ERR_RMA_RANGE),
              "put outside the attached memory: classes %d (put) and %d (unlock), expected MPI_ERR_RMA_RANGE", cls, c2);
    }
    free_win(&x, flavor);
}

/* A dynamic window with more regions per rank than a same-host origin can
 * check in the target's table (rma.h: KUMI_WIN_DYN_MAX): puts, gets and
 * accumulates into the first, a middle and the last region still land. */
#define NREG 40
static void test_many_regions(void)
{
    flavor_name = "dynamic";
    mode_name = "many regions";
    MPI_Win w;
    int reg[NREG][4];
    MPI_Aint *addr = malloc(sizeof(MPI_Aint) * NREG * (size_t)size), mine[NREG];
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    for (int i = 0; i < NREG; i++) {
        for (int k = 0; k < 4; k++) reg[i][k] = 0;
        MPI_Win_attach(w, reg[i], sizeof reg[i]);
        MPI_Get_address(reg[i], &mine[i]);
    }
    MPI_Allgather(mine, NREG, MPI_AINT, addr, NREG, MPI_AINT, MPI_COMM_WORLD);
    int right = (rank + 1) % size, one = 1;
    const int pick[3] = { 0, NREG / 2, NREG - 1 };
    MPI_Win_lock_all(0, w);
    for (int j = 0; j < 3; j++) {
        int v = val(rank, pick[j]);
        MPI_Put(&v, 1, MPI_INT, right, addr[right * NREG + pick[j]], 1, MPI_INT, w);
        for (int t = 0; t < size; t++)
            MPI_Accumulate(&one, 1, MPI_INT, t, addr[t * NREG + pick[j]] + 2 * (MPI_Aint)sizeof(int), 1, MPI_INT,
                           MPI_SUM, w);
    }
    MPI_Win_unlock_all(w);
    MPI_Barrier(MPI_COMM_WORLD);
    int left = (rank + size - 1) % size, got[3];
    MPI_Win_lock_all(0, w);
    for (int j = 0; j < 3; j++)
        MPI_Get(&got[j], 1, MPI_INT, right, addr[right * NREG + pick[j]] + 2 * (MPI_Aint)sizeof(int), 1, MPI_INT, w);
    MPI_Win_unlock_all(w);
    for (int j = 0; j < 3; j++) {
        CHECK(reg[pick[j]][0] == val(left, pick[j]), "region %d: put left %d, expected %d", pick[j],
              reg[pick[j]][0], val(left, pick[j]));
        CHECK(reg[pick[j]][2] == size, "region %d: the accumulates left %d, expected %d", pick[j], reg[pick[j]][2],
              size);
        CHECK(got[j] == size, "region %d of rank %d: got %d, expected %d", pick[j], right, got[j], size);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < NREG; i++) MPI_Win_detach(w, reg[i]);
    MPI_Win_free(&w);
    free(addr);
}

int main(int argc, char **argv)
{
    /* RMA_OPS_MIXED=1: odd ranks use active messages only (as an origin on another host
       would), even ranks the direct path, on the same windows */
    const char *jr = getenv("KUMI_RANK");
    if (getenv("RMA_OPS_MIXED") && jr && atoi(jr) % 2) setenv("KUMI_BASE_RMA_DIRECT", "0", 1);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    int nb[2] = { (rank + 1) % size, (rank + size - 1) % size };
    MPI_Group_incl(world_group, nb[0] == nb[1] ? 1 : 2, nb, &left_right);
    const char *flavors[] = { "create", "allocate", "shared", "dynamic" };
    bases = malloc((size_t)size * sizeof *bases);
    /* shared windows need every rank on one host */
    MPI_Comm node;
    int nnode;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nnode);
    MPI_Comm_free(&node);
    for (int f = 0; f < 4; f++) {
        if (argc > 1 && strcmp(argv[1], flavors[f])) continue;
        if (!strcmp(flavors[f], "shared") && nnode != size) {
            if (rank == 0) printf("rma_ops: the ranks span hosts: no shared windows\n");
            continue;
        }
        flavor_name = flavors[f];
        for (int mode = 0; mode < NMODES; mode++) {
            mode_name = mode_names[mode];
            test_put_get(flavor_name, mode);
            test_accumulate(flavor_name, mode);
            test_requests(flavor_name, mode);
        }
        test_errors(flavor_name);
        if (!strcmp(flavors[f], "dynamic")) test_many_regions();
    }
    MPI_Group_free(&left_right);
    MPI_Group_free(&world_group);
    int all;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf("rma_ops: %d ranks OK\n", size);
    free(bases);
    MPI_Finalize();
    return all != 0;
}
