/* kumi-gpucc --relaunch, run for real: each kernel runs persistent (a proxy
 * thread serves it while it waits inside) and relaunched (split by
 * kumi-gpucc, the host loop serves it between launches); the results must be
 * the same, and right.  At 1-4 ranks.
 *   stencil  the 1-D three-point stencil: halos by irecv/isend/wait from the
 *            edge blocks, grid.sync() between steps, a checksum by allreduce
 *   mix      blocking send/recv around a ring, bcast, allreduce, barrier, a
 *            kumi_gpu_test loop, __syncthreads(), a local array alive across
 *            the calls, an early return
 *   shapes   2-D blocks; calls in an if condition and an else-if chain, a
 *            const local and a brace-initialized array alive across calls,
 *            a for with two declarations, a while loop, a return inside a
 *            loop (both results compared, and with the expected values)
 *   failing  a block reports a failure: the relaunch returns it */
#include "rl_common.h"
namespace cg = cooperative_groups;

#define SB 4       /* stencil: blocks, threads, points per block, steps */
#define STH 8
#define SL 64
#define ST 20

__global__ void stencil(kumi_gpu_t g, double *u, double *v, int left, int right, double *sums, int *err)
{
    cg::grid_group grid = cg::this_grid();
    int blk = blockIdx.x, n = SB * SL;
    for (int t = 0; t < ST; t++) {
        if (threadIdx.x == 0) {
            kumi_gpu_request r, s;
            int e = 0;
            if (blk == 0) {
                e |= kumi_gpu_irecv(g, blk, &u[0], 1, KUMI_GPU_DOUBLE, left, 2, &r);
                e |= kumi_gpu_isend(g, blk, &u[1], 1, KUMI_GPU_DOUBLE, left, 1, &s);
                e |= kumi_gpu_wait(g, blk, &r, 0) | kumi_gpu_wait(g, blk, &s, 0);
            }
            if (blk == SB - 1) {
                e |= kumi_gpu_irecv(g, blk, &u[n + 1], 1, KUMI_GPU_DOUBLE, right, 1, &r);
                e |= kumi_gpu_isend(g, blk, &u[n], 1, KUMI_GPU_DOUBLE, right, 2, &s);
                e |= kumi_gpu_wait(g, blk, &r, 0) | kumi_gpu_wait(g, blk, &s, 0);
            }
            if (e) atomicOr(err, e);
        }
        grid.sync();
        for (int i = 1 + blk * SL + threadIdx.x; i <= (blk + 1) * SL; i += blockDim.x)
            v[i] = (u[i - 1] + u[i] + u[i + 1]) / 3.0;
        grid.sync();
        double *w = u; u = v; v = w;
    }
    if (threadIdx.x == 0) {
        double s = 0;
        for (int i = 1 + blk * SL; i <= (blk + 1) * SL; i++) s += u[i];
        sums[blk] = s;
        int e = kumi_gpu_allreduce(g, blk, KUMI_GPU_IN_PLACE, &sums[blk], 1, KUMI_GPU_DOUBLE, KUMI_GPU_SUM);
        if (e) atomicOr(err, e);
    }
}

#define MB 4       /* mix: blocks, threads, rounds */
#define MT 8
#define MR 6
__global__ void mix(kumi_gpu_t g, long long *buf, long long *out, int rank, int size, int *err)
{
    int blk = blockIdx.x;
    long long acc[3] = { 0, 0, 0 };
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    long long *mine = buf + blk * 8;
    for (int r = 0; r < MR; r++) {
        if (threadIdx.x == 0) {
            int e = 0;
            mine[0] = rank * 1000 + blk * 10 + r;
            if (rank % 2 == 0) {
                e |= kumi_gpu_send(g, blk, &mine[0], 1, KUMI_GPU_INT64, right, blk);
                e |= kumi_gpu_recv(g, blk, &mine[1], 1, KUMI_GPU_INT64, left, blk, 0);
            } else {
                kumi_gpu_status st;
                st.source = -5;
                e = kumi_gpu_recv(g, blk, &mine[1], 1, KUMI_GPU_INT64, left, blk, &st);
                if (st.source != left) e |= 1 << 8;
                e |= kumi_gpu_send(g, blk, &mine[0], 1, KUMI_GPU_INT64, right, blk);
            }
            acc[r % 3] += mine[1];
            mine[2] = rank * 7 + r;
            e |= kumi_gpu_bcast(g, blk, &mine[2], 1, KUMI_GPU_INT64, r % size);
            if (mine[2] != (r % size) * 7 + r) e |= 1 << 9;
            mine[3] = rank + 1;
            e |= kumi_gpu_allreduce(g, blk, KUMI_GPU_IN_PLACE, &mine[3], 1, KUMI_GPU_INT64, KUMI_GPU_SUM);
            acc[2] += mine[3];
            kumi_gpu_request q, q2;
            int flag = 0, polls = 0;
            e |= kumi_gpu_irecv(g, blk, &mine[4], 1, KUMI_GPU_INT64, right, 100 + blk, &q);
            e |= kumi_gpu_isend(g, blk, &mine[0], 1, KUMI_GPU_INT64, left, 100 + blk, &q2);
            do {
                int t = kumi_gpu_test(g, blk, &q, &flag, 0);
                e |= t;
                polls++;
            } while (!flag);
            e |= kumi_gpu_wait(g, blk, &q2, 0);
            acc[1] += mine[4] * 2;
            e |= kumi_gpu_barrier(g, blk);
            if (e) atomicOr(err, e);
        }
        __syncthreads();
        out[blk * MT + threadIdx.x] += mine[1] * (threadIdx.x + 1) + mine[3];
        __syncthreads();
    }
    if (threadIdx.x >= MT / 2) return;
    out[blk * MT + threadIdx.x] += acc[0] + acc[1] + acc[2];
}

#define HB 3       /* shapes: blocks; 4 x 2 threads each */
__global__ void shapes(kumi_gpu_t g, int *buf, long long *out, int rank, int size, int *err)
{
    const int blk = blockIdx.x, me = threadIdx.y * blockDim.x + threadIdx.x;
    int tab[4] = { 1, 2, 3, 4 };
    long long sum = 0;
    int *b = buf + blk * 4;
    for (int i = 0, j = 10; i < 3; i++, j += 10) {
        if (me == 0) {
            b[0] = rank + i;
            if (kumi_gpu_allreduce(g, blk, KUMI_GPU_IN_PLACE, &b[0], 1, KUMI_GPU_INT, KUMI_GPU_MAX) != 0)
                atomicOr(err, 1);
            else if (kumi_gpu_barrier(g, blk) != 0)
                atomicOr(err, 2);
            else
                tab[i] += b[0] * j;
        } else if (me == 7) {
            tab[i] -= j;
        }
        __syncthreads();
        sum += b[0] + tab[i];
        __syncthreads();
    }
    int k = 0;
    while (k < 2) {
        if (me == 0) {
            b[1] = rank == k % size ? 40 + k : -1;
            int e = kumi_gpu_bcast(g, blk, &b[1], 1, KUMI_GPU_INT, k % size);
            if (e || b[1] != 40 + k) atomicOr(err, 4);
        }
        k++;
        __syncthreads();
        sum += b[1];
        __syncthreads();           /* read by all before thread 0 writes again */
        if (me == 5 && k == 2) {   /* a return inside a loop (after the last barrier) */
            out[blk * 8 + me] = sum * 1000;
            return;
        }
    }
    out[blk * 8 + me] = sum + tab[0] * 100 + tab[1] * 10000 + tab[2] * 1000000 + tab[3];
}

__global__ void failing(kumi_gpu_t g, int *count)
{
    int blk = blockIdx.x;
    if (threadIdx.x == 0 && blk == 1) {
        int e = kumi_gpu_fail(g, blk, MPI_ERR_INTERN);
        if (e) atomicAdd(count, 1000);
    }
    __syncthreads();
    atomicAdd(count, 1);
}

static double init_val(long i) { return (double)((i * 7919) % 1000) / 10.0; }

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rl_device(rank);
    kumi_gpu_t g;
    MPIX_Gpu p;

    /* the stencil, both ways */
    int n = SB * SL;
    long N = (long)size * n;
    int left = rank > 0 ? rank - 1 : KUMI_GPU_PROC_NULL, right = rank < size - 1 ? rank + 1 : KUMI_GPU_PROC_NULL;
    double *res[2], *sums[2];
    int *err[2];
    for (int way = 0; way < 2; way++) {
        double *u = rl_alloc<double>(n + 2), *v = rl_alloc<double>(n + 2);
        sums[way] = rl_alloc<double>(SB);
        err[way] = rl_alloc<int>(1);
        for (int i = 1; i <= n; i++) u[i] = init_val((long)rank * n + i - 1);
        if (way == 0) {
            MPICHK(MPIX_Gpu_start(MPI_COMM_WORLD, RL_KIND, SB, 4, 64, &g, &p));
            rl_persistent(stencil, SB, STH, g, u, v, left, right, sums[way], err[way]);
            MPICHK(MPIX_Gpu_stop(&p));
        } else {
            MPICHK(stencil_relaunch(MPI_COMM_WORLD, SB, STH, 0, u, v, left, right, sums[way], err[way]));
        }
        res[way] = (ST % 2) ? v : u;
    }
    double *a = (double *)calloc(N + 2, sizeof(double)), *b = (double *)calloc(N + 2, sizeof(double));
    for (long i = 1; i <= N; i++) a[i] = init_val(i - 1);
    for (int t = 0; t < ST; t++) {
        for (long i = 1; i <= N; i++) b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0;
        double *w = a; a = b; b = w;
    }
    double total = 0;
    for (long i = 1; i <= N; i++) total += a[i];
    for (int way = 0; way < 2; way++) {
        const char *wn = way ? "relaunched" : "persistent";
        CHECK(*err[way] == 0, "stencil %s: a device call returned %d", wn, *err[way]);
        for (int i = 1; i <= n; i++)
            CHECK(res[way][i] == a[(long)rank * n + i], "stencil %s: point %d: %.17g, reference %.17g", wn, i,
                  res[way][i], a[(long)rank * n + i]);
        double cs = 0;   /* block k's allreduce: the sum of block k's points over the ranks */
        for (int k = 0; k < SB; k++) {
            cs += sums[way][k];
            CHECK(sums[way][k] == sums[0][k], "stencil: block %d's sums differ: %.17g persistent, %.17g relaunched", k,
                  sums[0][k], sums[way][k]);
        }
        CHECK(cs > 0 && (cs - total) / total < 1e-12 && (total - cs) / total < 1e-12,
              "stencil %s: checksum %.17g, reference %.17g", wn, cs, total);
    }

    /* mix, both ways */
    long long *out[2];
    for (int way = 0; way < 2; way++) {
        long long *buf = rl_alloc<long long>(MB * 8);
        out[way] = rl_alloc<long long>(MB * MT);
        err[way] = rl_alloc<int>(1);
        if (way == 0) {
            MPICHK(MPIX_Gpu_start(MPI_COMM_WORLD, RL_KIND, MB, 4, 64, &g, &p));
            rl_persistent(mix, MB, MT, g, buf, out[way], rank, size, err[way]);
            MPICHK(MPIX_Gpu_stop(&p));
        } else {
            MPICHK(mix_relaunch(MPI_COMM_WORLD, MB, MT, 0, buf, out[way], rank, size, err[way]));
        }
    }
    int mleft = (rank - 1 + size) % size, mright = (rank + 1) % size;
    for (int blk = 0; blk < MB; blk++)
        for (int t = 0; t < MT; t++) {
            long long want = 0, acc = 0, m3 = (long long)size * (size + 1) / 2;
            for (int r = 0; r < MR; r++) {
                long long m1 = mleft * 1000 + blk * 10 + r, m4 = mright * 1000 + blk * 10 + r;
                want += m1 * (t + 1) + m3;
                acc += m1 + m3 + 2 * m4;
            }
            if (t == 0) want += acc;   /* threads 1 .. MT/2-1 add their acc of zeros, the others returned */
            for (int way = 0; way < 2; way++) {
                CHECK(*err[way] == 0, "mix %s: a device call returned %#x", way ? "relaunched" : "persistent", *err[way]);
                CHECK(out[way][blk * MT + t] == want, "mix %s: block %d thread %d: %lld, expected %lld",
                      way ? "relaunched" : "persistent", blk, t, out[way][blk * MT + t], want);
            }
        }

    /* shapes, both ways */
    for (int way = 0; way < 2; way++) {
        int *buf = rl_alloc<int>(HB * 4);
        out[way] = rl_alloc<long long>(HB * 8);
        err[way] = rl_alloc<int>(1);
        if (way == 0) {
            MPICHK(MPIX_Gpu_start(MPI_COMM_WORLD, RL_KIND, HB, 4, 64, &g, &p));
            rl_persistent(shapes, HB, dim3(4, 2), g, buf, out[way], rank, size, err[way]);
            MPICHK(MPIX_Gpu_stop(&p));
        } else {
            MPICHK(shapes_relaunch(MPI_COMM_WORLD, HB, dim3(4, 2), 0, buf, out[way], rank, size, err[way]));
        }
    }
    for (int blk = 0; blk < HB; blk++)
        for (int me = 0; me < 8; me++) {
            long long sum = 0, want;
            int tab[4] = { 1, 2, 3, 4 };
            for (int i = 0, j = 10; i < 3; i++, j += 10) {
                if (me == 0) tab[i] += (size - 1 + i) * j;
                else if (me == 7) tab[i] -= j;
                sum += size - 1 + i + tab[i];
            }
            if (me == 5) want = (sum + 40 + 41) * 1000;
            else want = sum + 40 + 41 + tab[0] * 100 + tab[1] * 10000 + tab[2] * 1000000 + tab[3];
            for (int way = 0; way < 2; way++) {
                CHECK(*err[way] == 0, "shapes %s: a device call failed (%#x)", way ? "relaunched" : "persistent", *err[way]);
                CHECK(out[way][blk * 8 + me] == want, "shapes %s: block %d thread %d: %lld, expected %lld",
                      way ? "relaunched" : "persistent", blk, me, out[way][blk * 8 + me], want);
            }
        }

    /* a failure reported by a block comes back from the relaunch */
    int *count = rl_alloc<int>(1);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = failing_relaunch(MPI_COMM_WORLD, 3, 4, 0, count), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_INTERN, "failing: error class %d (code %d), expected MPI_ERR_INTERN", cls, rc);
    CHECK(*count == 12, "failing: %d threads ended (or the fail call itself failed), expected 12", *count);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("rl_kernels: %d ranks: stencil, mix, shapes, failing: persistent and relaunched agree: ok\n", size);
    MPI_Finalize();
    return 0;
}
