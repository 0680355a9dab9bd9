#!/bin/bash
# The GPU parts build with nvcc: kumi_gpu.h's device side in a small kernel
# (warnings are errors), and every program of the GPU test set (tests/gpu/,
# run by ./check.sh --gpu on a machine with an NVIDIA GPU).  Nothing runs
# here: compiling needs no GPU.  Skips where nvcc is absent.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
NVCC=$(command -v nvcc || true)
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
if [ -z "$NVCC" ]; then echo "SKIP: nvcc not found (in PATH or /usr/local/cuda/bin): the CUDA parts are not compiled"; exit 77; fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kumi-gpubuild.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
INC=(-I"$top_builddir/framework/include" -I"$top_srcdir/framework/include")
failures=0
echo "nvcc: $("$NVCC" --version | tail -2 | head -1)"
cat > "$TMP/kern.cu" <<'CU'
#include <kumi_gpu.h>
/* every device call of the API, by thread 0 of each block */
__global__ void k(kumi_gpu_t g, double *buf, int n)
{
    if (threadIdx.x) return;
    int b = blockIdx.x, flag = 0;
    kumi_gpu_request r, s;
    kumi_gpu_status st;
    int e = kumi_gpu_irecv(g, b, buf, n, KUMI_GPU_DOUBLE, KUMI_GPU_ANY_SOURCE, KUMI_GPU_ANY_TAG, &r);
    e |= kumi_gpu_isend(g, b, buf + n, n, KUMI_GPU_DOUBLE, 0, b, &s);
    e |= kumi_gpu_test(g, b, &r, &flag, &st);
    e |= kumi_gpu_wait(g, b, &r, &st) | kumi_gpu_wait(g, b, &s, 0);
    e |= kumi_gpu_send(g, b, buf, n, KUMI_GPU_DOUBLE, 0, 1) | kumi_gpu_recv(g, b, buf, n, KUMI_GPU_DOUBLE, 0, 1, &st);
    e |= kumi_gpu_barrier(g, b) | kumi_gpu_bcast(g, b, buf, n, KUMI_GPU_DOUBLE, 0);
    e |= kumi_gpu_allreduce(g, b, KUMI_GPU_IN_PLACE, buf, n, KUMI_GPU_DOUBLE, KUMI_GPU_SUM);
    if (e) kumi_gpu_fail(g, b, e);
}
CU
for arch in "" "-arch=sm_75" "-arch=sm_90"; do
    if "$NVCC" $arch -c -Werror all-warnings -Xcompiler -Wall,-Wextra "${INC[@]}" -o "$TMP/kern.o" "$TMP/kern.cu" > "$TMP/out" 2>&1; then
        echo "ok: kumi_gpu.h's device API compiles under nvcc ${arch:-(default arch)}"
    else
        echo "FAIL: kumi_gpu.h under nvcc ${arch:-(default arch)}:"; sed 's/^/    /' "$TMP/out" | head -20; failures=$((failures+1))
    fi
done
# the header as plain C (the CPU device) and C++ (host code of a .cu) with the system compilers
for cc in "gcc -std=c11 -x c" "g++ -std=c++17 -x c++"; do
    if echo '#include <kumi_gpu.h>
int main(void) { return (int)sizeof(kumi_gpu_t) == 0; }' | $cc -Wall -Wextra -Werror "${INC[@]}" -o "$TMP/h" - > "$TMP/out" 2>&1; then
        echo "ok: kumi_gpu.h compiles with ${cc%% *}"
    else
        echo "FAIL: kumi_gpu.h with ${cc%% *}:"; sed 's/^/    /' "$TMP/out" | head -20; failures=$((failures+1))
    fi
done
for f in "$top_srcdir"/tests/gpu/*.cu; do
    if "$NVCC" -c -Werror all-warnings -Xcompiler -Wall,-Wextra "${INC[@]}" -o "$TMP/$(basename "$f").o" "$f" > "$TMP/out" 2>&1; then
        echo "ok: tests/gpu/$(basename "$f") compiles"
    else
        echo "FAIL: tests/gpu/$(basename "$f"):"; sed 's/^/    /' "$TMP/out" | head -20; failures=$((failures+1))
    fi
done
[ "$failures" -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$failures check(s) failed"; exit 1
