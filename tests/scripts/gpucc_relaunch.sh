#!/bin/bash
# kumi-gpucc --relaunch (tools/kumi-gpucc, kumi_gpu_relaunch.h):
# 1. the transformation: tests/gpu/relaunch/rl_kernels.cu split where it waits
#    (so many split points per kernel, the locals in the state record, the
#    parameters never assigned not saved);
# 2. the generated code compiled for the CPU device (kumi_gpu_cpu.h) and run at
#    1-4 ranks: every kernel run persistent (proxy thread) and relaunched (the
#    host loop, MPIX_GPU_NOTHREAD + MPIX_Gpu_progress) gives the same, right
#    results; a failure reported by a block comes back from the relaunch;
# 3. the generated code compiled by nvcc for sm_80 and sm_90, and the
#    benchmark's (make bench-gpu) too (skipped, saying so, without nvcc);
# 4. input the tool refuses: an error naming the file, the line and the reason.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
: "${MPIEXEC:=$top_builddir/tools/mpiexec/mpiexec}"
TOOL=$top_srcdir/tools/kumi-gpucc
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kumi-gpucc.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures+1)); }
ok() { echo "ok: $*"; }
[ -f "$TOOL" ] || { echo "FAIL: no $TOOL"; exit 1; }
INC="-I$top_srcdir/framework/include -I$top_builddir/framework/include -I$top_srcdir/tests/gpu/relaunch"

# 1. the transformation
src=$top_srcdir/tests/gpu/relaunch/rl_kernels.cu
if python3 "$TOOL" --relaunch "$src" -o "$TMP/rl.cu" 2> "$TMP/err"; then
    ok "kumi-gpucc --relaunch rl_kernels.cu"
else
    fail "kumi-gpucc --relaunch rl_kernels.cu:"; cat "$TMP/err"; exit 1
fi
for want in "stencil split at 7 points" "mix split at 11 points" "shapes split at 7 points" "failing split at 2 points"; do
    grep -q -- "--relaunch: $want ----" "$TMP/rl.cu" && ok "$want" || fail "not '$want': $(grep -o 'relaunch: [a-z]* split at [0-9]* points' "$TMP/rl.cu" | tr '\n' ' ')"
done
# the stencil's state: its locals and the parameters it assigns (u, v swap), not those it only reads
st=$(sed -n '/^struct stencil__state {/,/^};/p' "$TMP/rl.cu")
for f in "int t_" "int blk_" "kumi_gpu_request r_" "double \*u_" "double \*v_"; do
    grep -q "$f" <<< "$st" || fail "stencil__state lacks '$f'"
done
for f in "left_" "right_" "err_" "g_" "w_"; do
    grep -q "$f" <<< "$st" && fail "stencil__state saves '$f' (never assigned, or dead at every split)"
done
ok "stencil__state: the locals alive at a split and the assigned parameters only"
# liveness: mix's `polls` (counted in the test loop, never read after it) is saved at the
# kumi_gpu_test inside the loop, not at the barrier after it; `q` neither
mixk=$(sed -n '/^__global__ void mix__relaunch/,/^}/p' "$TMP/rl.cu")
at() { grep -A4 "/\* line [0-9]*: $1 \*/" <<< "$mixk" | grep -m1 '__st->pc = '; }
at kumi_gpu_test | grep -q '__st->polls_[0-9]* = polls;' && ok "polls saved at the test in the loop" ||
    fail "polls not saved at the kumi_gpu_test in its loop: $(at kumi_gpu_test)"
at kumi_gpu_barrier | grep -q -e 'polls' -e '__st->q_' && fail "dead locals saved at the barrier: $(at kumi_gpu_barrier)" ||
    ok "the dead polls and q not saved at the barrier"
at kumi_gpu_barrier | grep -q '__st->acc_[0-9]*, acc' && ok "the array acc (alive) saved at the barrier" ||
    fail "acc not saved at the barrier: $(at kumi_gpu_barrier)"
grep -q '^static int stencil_relaunch(MPI_Comm comm, dim3 grid, dim3 block, int depth, double \*u, double \*v, int left, int right, double \*sums, int \*err)' "$TMP/rl.cu" &&
    ok "the host loop's signature: the kernel's parameters less kumi_gpu_t" || fail "stencil_relaunch's signature"
# the original kernels stay, unchanged
for k in stencil mix shapes failing; do
    grep -q "^__global__ void $k(kumi_gpu_t g" "$TMP/rl.cu" || fail "the persistent kernel $k is gone"
done
python3 "$TOOL" --relaunch --kernel mix "$src" > "$TMP/one.cu" 2>&1 &&
    [ "$(grep -c 'relaunch: [a-z]* split at' "$TMP/one.cu")" = 1 ] && ok "--kernel mix: that kernel only" || fail "--kernel mix"

# 2. for real, with the CPU device
if ${CXX:-g++} -std=c++17 -O1 -Wall -Wextra -Werror -pthread -x c++ -include kumi_gpu_cpu.h $INC "$TMP/rl.cu" -x none \
        -o "$TMP/rl_cpu" -L"$top_builddir/framework/.libs" -Wl,-rpath,"$top_builddir/framework/.libs" -lmpi 2> "$TMP/err"; then
    ok "the generated code builds for the CPU device (g++ -Wall -Wextra -Werror, kumi_gpu_cpu.h)"
    for np in 1 2 3 4; do
        if (cd "$TMP" && "$MPIEXEC" --timeout 120 -n $np ./rl_cpu) > "$TMP/run" 2>&1 && grep -q ': ok$' "$TMP/run"; then
            ok "$np ranks: $(grep ': ok$' "$TMP/run")"
        else
            fail "rl_kernels at $np ranks:"; sed 's/^/    /' "$TMP/run" | tail -15
        fi
    done
    # the host loop reads one summary per block, made by the block's last thread to return: a
    # thread that returns without saying where it stopped (here: the stencil's threads kept at
    # its first grid.sync() as the code generated before the summaries did) is an error of the
    # loop, said, not a relaunch that waits forever or ends the kernel early
    sed '0,/if (!kumi_rl_released(__rl, 1)) { kumi_rl_state(__rl, __tid, KUMI_RL_SYNC_GRID); return; }/s//if (!kumi_rl_released(__rl, 1)) return;/' \
        "$TMP/rl.cu" > "$TMP/rlbad.cu"
    if cmp -s "$TMP/rl.cu" "$TMP/rlbad.cu"; then
        fail "the not-released return of a grid.sync() not found in the generated code"
    elif ! ${CXX:-g++} -std=c++17 -O1 -pthread -x c++ -include kumi_gpu_cpu.h $INC "$TMP/rlbad.cu" -x none \
            -o "$TMP/rlbad" -L"$top_builddir/framework/.libs" -Wl,-rpath,"$top_builddir/framework/.libs" -lmpi 2> "$TMP/err"; then
        fail "the altered code does not build:"; head -10 "$TMP/err"
    elif (cd "$TMP" && "$MPIEXEC" --timeout 60 -n 2 ./rlbad) > "$TMP/run" 2>&1; then
        fail "a thread returning without its state went unnoticed: $(tail -3 "$TMP/run")"
    elif grep -q "kumi-gpucc relaunch: launch: a thread returned from the launch without saying where it stopped" "$TMP/run"; then
        ok "a thread returning without its state: $(grep -m1 'without saying' "$TMP/run")"
    else
        fail "a thread returning without its state: not the loop's error:"; tail -8 "$TMP/run" | sed 's/^/    /'
    fi
    # threads of one block at __syncthreads() and others at grid.sync(): nothing can release
    # them (on a GPU the kernel would hang); the host loop says so instead of waiting for ever
    cat > "$TMP/stall.cu" <<'EOF2'
#include "rl_common.h"
namespace cg = cooperative_groups;
__global__ void stall(kumi_gpu_t g, int *out)
{
    cg::grid_group grid = cg::this_grid();
    if (threadIdx.x == 0) kumi_gpu_barrier(g, blockIdx.x);
    if (threadIdx.x == 1) __syncthreads();
    else grid.sync();
    out[threadIdx.x] = 1;
}
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int *out = rl_alloc<int>(4);
    int rc = stall_relaunch(MPI_COMM_WORLD, 2, 4, 0, out);
    printf("stall_relaunch returned %d\n", rc);
    MPI_Finalize();
    return rc == MPI_SUCCESS;
}
EOF2
    if ! python3 "$TOOL" --relaunch "$TMP/stall.cu" -o "$TMP/stall_rl.cu" 2> "$TMP/err"; then
        fail "kumi-gpucc --relaunch stall.cu: $(cat "$TMP/err")"
    elif ! ${CXX:-g++} -std=c++17 -O1 -pthread -x c++ -include kumi_gpu_cpu.h $INC "$TMP/stall_rl.cu" -x none \
            -o "$TMP/stall" -L"$top_builddir/framework/.libs" -Wl,-rpath,"$top_builddir/framework/.libs" -lmpi 2> "$TMP/err"; then
        fail "stall.cu does not build:"; head -10 "$TMP/err"
    elif (cd "$TMP" && "$MPIEXEC" --timeout 60 -n 1 ./stall) > "$TMP/run" 2>&1 &&
            grep -q "kumi-gpucc relaunch: launch: every live thread waits at a barrier that cannot be released" "$TMP/run" &&
            grep -q "stall_relaunch returned [1-9]" "$TMP/run"; then
        ok "barriers that cannot be released: $(grep -m1 'cannot be released' "$TMP/run")"
    else
        fail "barriers that cannot be released: not the loop's error:"; tail -8 "$TMP/run" | sed 's/^/    /'
    fi
else
    fail "the generated code does not build for the CPU device:"; head -30 "$TMP/err"
fi

# 3. nvcc
NVCC=$(command -v nvcc || true)
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
if [ -z "$NVCC" ]; then
    echo "skip: nvcc not found (in PATH or /usr/local/cuda/bin): the generated code is not compiled for a GPU"
else
    # the test kernels for two targets; the benchmark (tests/gpu/bench_gpu.cu, make bench-gpu) as run-gpu.sh builds it
    python3 "$TOOL" --relaunch "$top_srcdir/tests/gpu/bench_gpu.cu" -o "$TMP/bench.cu" 2> "$TMP/err" ||
        fail "kumi-gpucc --relaunch bench_gpu.cu: $(cat "$TMP/err")"
    for f in "rl.cu -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90" "bench.cu"; do
        if "$NVCC" -c -Werror all-warnings -Xcompiler -Wall,-Wextra -I"$top_srcdir/tests/gpu" $INC $TMP/$f \
                -o "$TMP/cuda.o" > "$TMP/err" 2>&1; then
            ok "the generated ${f%%.cu*}.cu builds with nvcc ${f#*.cu} (warnings are errors)"
        else
            fail "nvcc -c $f:"; head -30 "$TMP/err"
        fi
    done
fi

# 4. refused input: each case a kernel, the line of the error, and what it says
refuse() { # NAME LINE REGEX  (the kernel on stdin)
    cat > "$TMP/$1.cu"
    if python3 "$TOOL" --relaunch "$TMP/$1.cu" -o "$TMP/$1.out" 2> "$TMP/$1.err"; then
        fail "$1: accepted"
    elif grep -Eq "^$TMP/$1.cu:$2: error: .*$3" "$TMP/$1.err"; then
        ok "$1: $(sed "s|^$TMP/||" "$TMP/$1.err")"
    else
        fail "$1: expected line $2, /$3/; got: $(cat "$TMP/$1.err")"
    fi
}
head='#include <kumi_gpu.h>
#define DOK(c) do { if (c) return; } while (0)'
refuse macro 5 'inside the arguments of DOK\(\.\.\.\).*does not expand macros' <<K
$head
__global__ void k(kumi_gpu_t g, int *b)
{
    DOK(kumi_gpu_send(g, 0, b, 1, KUMI_GPU_INT, 0, 0));
}
K
refuse whilecond 6 'in the condition of a while loop' <<K
$head
__global__ void k(kumi_gpu_t g, int *b)
{
    kumi_gpu_request r; int f = 0;
    while (kumi_gpu_test(g, 0, &r, &f, 0) == 0 && !f) {}
}
K
refuse shared 5 "__shared__ 'tile': shared memory does not survive a relaunch" <<K
$head
__global__ void k(kumi_gpu_t g, int *b)
{
    __shared__ int tile[32];
    kumi_gpu_barrier(g, 0);
    b[0] = tile[0];
}
K
refuse switch 5 'inside a switch statement' <<K
$head
__global__ void k(kumi_gpu_t g, int *b)
{
    switch (b[0]) {
    case 1: kumi_gpu_barrier(g, 0); break;
    }
}
K
refuse localbuf 6 "the buffer of kumi_gpu_send is the local 'x'" <<K
$head
__global__ void k(kumi_gpu_t g, int *b)
{
    int x = 3;
    kumi_gpu_send(g, 0, &x, 1, KUMI_GPU_INT, 0, 0);
}
K
refuse andand 5 "'&&' in an expression holding kumi_gpu_barrier" <<K
$head
__global__ void k(kumi_gpu_t g, int *b)
{
    b[0] = b[1] && kumi_gpu_barrier(g, 0);
}
K
refuse devfn 5 'kumi_gpu_barrier in the __device__ function helper' <<K
$head
__device__ void helper(kumi_gpu_t g)
{
    kumi_gpu_barrier(g, 0);
}
__global__ void k(kumi_gpu_t g, int *b) { helper(g); kumi_gpu_barrier(g, 0); }
K
refuse goto 7 'goto is not accepted' <<K
$head
__global__ void k(kumi_gpu_t g, int *b)
{
    kumi_gpu_barrier(g, 0);
again:
    goto again;
}
K
refuse nohandle 3 'kernel k: expected one parameter of type kumi_gpu_t' <<K
$head
__global__ void k(int *b)
{
    b[0] = kumi_gpu_barrier(*(kumi_gpu_t *)b, 0);
}
K
refuse shadow 8 "'x' declared at line 7 hides the 'x' of line 5" <<K
$head
__global__ void k(kumi_gpu_t g, int *b)
{
    int x = 1;
    if (b[0]) {
        int x = 2;
        kumi_gpu_barrier(g, 0);
        b[x] = 0;
    }
    b[x] = 1;
}
K
refuse syncwarp 6 'only __syncthreads\(\); as a statement of its own' <<K
$head
__global__ void k(kumi_gpu_t g, int *b)
{
    kumi_gpu_barrier(g, 0);
    __syncwarp();
}
K
refuse gridrank 7 "'grid' \(a cooperative group\) may only be used as grid.sync\(\)" <<K
$head
__global__ void k(kumi_gpu_t g, int *b)
{
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    kumi_gpu_barrier(g, 0);
    b[grid.thread_rank()] = 1;
}
K
refuse auto 5 "'auto p': the state record needs the type written out" <<K
$head
__global__ void k(kumi_gpu_t g, int *b)
{
    auto p = b + 1;
    kumi_gpu_barrier(g, 0);
    p[0] = 1;
}
K
refuse nested 5 'kumi_gpu_wait inside the arguments of kumi_gpu_wait' <<K
$head
__global__ void k(kumi_gpu_t g, kumi_gpu_request *r)
{
    kumi_gpu_wait(g, kumi_gpu_wait(g, 0, r, 0), r, 0);
}
K
refuse arity 5 'kumi_gpu_send takes 7 arguments, not 6' <<K
$head
__global__ void k(kumi_gpu_t g, int *b)
{
    kumi_gpu_send(g, 0, b, 1, KUMI_GPU_INT, 0);
}
K
refuse template 4 'a template kernel: kumi-gpucc does not instantiate templates' <<K
$head
template <int N>
__global__ void k(kumi_gpu_t g, int *b)
{
    kumi_gpu_barrier(g, 0);
}
K
echo '__global__ void k(int *b) { b[0] = 1; }' > "$TMP/none.cu"
python3 "$TOOL" --relaunch "$TMP/none.cu" > /dev/null 2> "$TMP/none.err" && fail "a file without kumi_gpu_* calls: accepted" ||
    { grep -q 'no __global__ kernel calls kumi_gpu_\*' "$TMP/none.err" && ok "a file without kumi_gpu_* calls: said so" ||
      fail "a file without kumi_gpu_* calls: $(cat "$TMP/none.err")"; }
python3 "$TOOL" "$TMP/none.cu" > /dev/null 2> "$TMP/use.err"; [ $? = 2 ] && grep -q usage "$TMP/use.err" &&
    ok "without --relaunch: usage, exit 2" || fail "without --relaunch: $(cat "$TMP/use.err")"

[ "$failures" -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$failures check(s) failed"; exit 1
