#!/bin/bash
# Run Kumi's whole test suite (builds first if needed).  Ends with "N passed, N failed".
#   ./check.sh              make check: multi-process tests through mpiexec (about 10 minutes on 2 cores)
#   ./check.sh --long       also the long suites (make check-long), the KACC module's VM test included
#   ./check.sh --gpu        the GPU test set only (tests/gpu/run-gpu.sh): needs nvcc and an NVIDIA GPU, skips otherwise
set -uo pipefail
top=$(cd "$(dirname "$0")" && pwd)
BUILDDIR=${BUILDDIR:-$top/_build}
export BUILDDIR
CONFIGURE_FLAGS=${CONFIGURE_FLAGS:---enable-werror} "$top/install.sh" || { echo "0 passed, 1 failed"; exit 1; }
if [ "${1:-}" = --gpu ]; then
    PREFIX=${PREFIX:-$top/_install} "$top/tests/gpu/run-gpu.sh"
    exit $?
fi
# What only the tests need: the foreign MPIs whose ABIs Kumi translates (their
# wrappers build the foreign binaries of the ABI tests, and tools/abi-probe.py
# re-derives data/abi from them), Slurm with munge for the Slurm lab of
# tests/scripts/slurmlab.sh (srun --mpi=pmix; libpmix-dev is install.sh's), and
# sshd for the tests of mpiexec across hosts (tests/scripts/netlab.sh), and Debian's mpi4py
# (built against Open MPI) that tests/scripts/abi_mpi4py.sh runs through the Open MPI shim.
# KUMI_SKIP_APT=1 skips it, as for install.sh.
test_pkgs=(openmpi-bin libopenmpi-dev mpich libmpich-dev slurmctld slurmd slurm-client munge openssh-server python3-mpi4py)
# --long: the KACC kernel module's VM test (tests/scripts/kmod_vm.sh) builds the module
# against Debian's kernel headers and boots Debian's kernel under QEMU.
[ "${1:-}" = --long ] && test_pkgs+=(build-essential linux-headers-amd64 linux-image-amd64 qemu-system-x86 busybox-static cpio)
if [ "${KUMI_SKIP_APT:-0}" != 1 ]; then
    missing=()
    for p in "${test_pkgs[@]}"; do dpkg -s "$p" > /dev/null 2>&1 || missing+=("$p"); done
    if [ ${#missing[@]} -gt 0 ]; then
        SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
        echo "== installing Debian packages for the tests: ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" > /dev/null ||
            echo "== (could not install them: the tests that need them say so and skip)"
    fi
fi
target=check
[ "${1:-}" = --long ] && target=check-long
log=$BUILDDIR/tests/check.out
mkdir -p "$BUILDDIR/tests"
make -C "$BUILDDIR/tests" --no-print-directory "$target" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
echo "${summary:-0 passed, 1 failed}"
exit "$rc"
