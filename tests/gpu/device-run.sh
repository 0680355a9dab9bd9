#!/bin/bash
# Everything GPU in one short run, for a machine with an NVIDIA GPU (issue 24):
#   bash tests/gpu/device-run.sh [OUTDIR]
# 1. the machine: GPUs, driver, nvcc, cores;
# 2. Kumi built and installed (./install.sh; KUMI_SKIP_APT=1 unless
#    GPURUN_APT=1), skipped where $PREFIX/bin/mpiexec already runs;
# 3. the GPU test set (./check.sh --gpu: tests/gpu/run-gpu.sh);
# 4. the benchmark (make bench-gpu: run-gpu.sh --bench).
# Each step has a time limit (build 360 s, tests 300 s, benchmark 150 s; a
# test run 60 s, GPURUN_TIMEOUT), so the whole stays under 14 minutes
# (about 4 on a 16-core machine with Kumi to build).  Logs go to OUTDIR
# (default $OUT when set, else _build/gpu-run); what to paste is printed last
# (the summary, the benchmark's table) and kept in OUTDIR/summary.txt.
#
# A machine without autoconf / automake / libtool: run
#   bash tests/gpu/device-run.sh --prepare
# here first (a tree where ./autogen.sh ran): it packs autogen's outputs into
# _build-gpurun/autogen.tgz (ignored by git as _build*), which the run on the
# GPU machine unpacks when ./configure is missing; carry _build-gpurun along.
#
# A GPU machine without Kumi's build dependencies (libltdl, libelf, hwloc,
# libfabric headers; no package registry to install them from): run
#   bash tests/gpu/device-run.sh --bundle
# here, on a machine with nvcc (no GPU needed): Kumi built and installed into
# /tmp/kumigpu (build folder _build-gpu), the shared libraries it needs beyond
# the C library copied beside it (lib/deps), the GPU programs built with nvcc
# (run-gpu.sh --build), all in .gpubundle/ (ignored by git; about 35 MiB).
# Carry .gpubundle: the run on the GPU machine copies it back to /tmp/kumigpu,
# the same path, and builds nothing.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bprefix=/tmp/kumigpu
if [ "${1:-}" = --bundle ]; then
    cd "$top" || exit 1
    rm -rf "$bprefix" .gpubundle
    KUMI_SKIP_APT=1 PREFIX=$bprefix BUILDDIR=$top/_build-gpu ./install.sh > /tmp/gpubundle-install.log 2>&1 ||
        { tail -20 /tmp/gpubundle-install.log; echo "Kumi did not build (/tmp/gpubundle-install.log)"; exit 1; }
    mkdir -p "$bprefix/lib/deps"
    # every library a program or plugin of the install loads, but the C library's own and the compiler's
    find "$bprefix" -type f \( -name '*.so*' -o -perm -u+x \) -print0 | xargs -0 ldd 2> /dev/null |
        awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
        grep -vE '/(libc|libm|libdl|libpthread|librt|libresolv|ld-linux[^/]*|libgcc_s|libstdc\+\+)\.so' |
        grep -v "^$bprefix/" | xargs -r cp -L -t "$bprefix/lib/deps"
    find "$bprefix" -name '*.a' -delete
    PREFIX=$bprefix BUILDDIR=$top/.gpubundle/build "$top/tests/gpu/run-gpu.sh" --build || exit 1
    cp -a "$bprefix" .gpubundle/kumigpu
    echo "bundle: $(du -sh .gpubundle | cut -f1) in .gpubundle ($(ls "$bprefix/lib/deps" | wc -l) libraries in lib/deps): carry .gpubundle"
    exit
fi
if [ "${1:-}" = --prepare ]; then
    cd "$top" || exit 1
    [ -x configure ] || { echo "no ./configure here: run ./autogen.sh first"; exit 1; }
    mkdir -p _build-gpurun
    git ls-files --others --ignored --exclude-standard |
        grep -vE '^(_build|_install|autom4te\.cache/|\.gpu|.*\.(o|lo|la|so|a)$)' > _build-gpurun/autogen.list
    tar czf _build-gpurun/autogen.tgz -T _build-gpurun/autogen.list &&
        echo "packed $(wc -l < _build-gpurun/autogen.list) files of autogen's into _build-gpurun/autogen.tgz" \
             "($(du -k _build-gpurun/autogen.tgz | cut -f1) KiB): carry _build-gpurun"
    exit
fi
if [ ! -x "$top/configure" ] && [ -f "$top/_build-gpurun/autogen.tgz" ]; then
    # unpacked with the time of now (-m), so that neither install.sh nor make runs autotools again
    tar xzmf "$top/_build-gpurun/autogen.tgz" -C "$top" && echo "== unpacked _build-gpurun/autogen.tgz (autogen's outputs)"
fi
out=${1:-${OUT:-$top/_build/gpu-run}}
mkdir -p "$out"
bundle=
if [ -d "$top/.gpubundle/kumigpu" ]; then    # made by --bundle: copied back to its own path, nothing built
    rm -rf "$bprefix" && cp -a "$top/.gpubundle/kumigpu" "$bprefix" && bundle=yes
    export PREFIX=$bprefix BUILDDIR=$top/.gpubundle/build GPURUN_PREBUILT=1
    export LD_LIBRARY_PATH=$bprefix/lib/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
export PREFIX=${PREFIX:-$top/_install} BUILDDIR=${BUILDDIR:-$top/_build}
export GPURUN_TIMEOUT=${GPURUN_TIMEOUT:-60}
export PATH=$PATH:/usr/local/cuda/bin
sum=$out/summary.txt
: > "$sum"
say() { echo "$*" | tee -a "$sum"; }
t_all=$(date +%s)
step() { # NAME LIMIT CMD...: runs CMD under the limit, log in OUTDIR/NAME.log
    local name=$1 lim=$2 t0 rc
    shift 2
    t0=$(date +%s)
    timeout -k 5 "$lim" "$@" > "$out/$name.log" 2>&1
    rc=$?
    [ $rc -eq 124 ] && say "== $name: TIMED OUT after $lim s" || say "== $name: exit $rc in $(( $(date +%s) - t0 )) s"
    return $rc
}

say "== machine ($(date -u +%FT%TZ), commit $(git -C "$top" rev-parse --short HEAD 2> /dev/null || echo ?))"
{ nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1 || echo "nvidia-smi failed"; } |
    sed 's/^/   gpu: /' | tee -a "$sum"
say "   nvcc: $(nvcc --version 2> /dev/null | tail -2 | head -1 || echo none)"
say "   cores: $(nproc), $(uname -r)${bundle:+; Kumi from .gpubundle (built elsewhere)}"
# signals this shell was started with ignored (inherited across exec): an
# ignored SIGCHLD once made every mpiexec wait forever (it resets it now)
say "   ignored signals at start: $(awk '/^SigIgn/ { print $2 }' /proc/$$/status)"

# bounded: a launcher that hangs here would take the whole device call
if timeout -k 5 30 "$PREFIX/bin/mpiexec" -n 1 true > /dev/null 2>&1; then
    say "== build: $PREFIX/bin/mpiexec runs: not rebuilt"
else
    missing=
    for t in gcc make autoconf automake libtool python3 pkg-config; do command -v $t > /dev/null || missing="$missing $t"; done
    [ -n "$missing" ] && say "   missing build tools:$missing (install.sh may fail)"
    if [ "${GPURUN_APT:-0}" = 1 ]; then apt_env=(); else apt_env=(KUMI_SKIP_APT=1); fi
    if ! step build 360 env "${apt_env[@]}" "$top/install.sh"; then
        tail -30 "$out/build.log" | sed 's/^/   | /' | tee -a "$sum"
        say "== stopped: Kumi did not build ($(( $(date +%s) - t_all )) s)"
        exit 1
    fi
fi
timeout -k 5 30 "$PREFIX/bin/kumi_info" --parsable 2> /dev/null | grep '^component:accel:cuda:' | sed 's/^/   /' | tee -a "$sum"

step tests "${GPURUN_TESTS_LIMIT:-300}" "$top/tests/gpu/run-gpu.sh"
grep -E '^(PASS|FAIL|SKIP): |^# built|^[0-9]+ passed, ' "$out/tests.log" | sed 's/^/   /' | tee -a "$sum"
if grep -q '^FAIL' "$out/tests.log"; then
    say "   (the failures' last lines)"
    grep -A12 '^FAIL' "$out/tests.log" | head -80 | sed 's/^/   | /' | tee -a "$sum"
fi

step bench "${GPURUN_BENCH_LIMIT:-150}" "$top/tests/gpu/run-gpu.sh" --bench ||
    { grep -vE '^( *[0-9]|#)' "$out/bench.log" | tail -12 | sed 's/^/   | /' | tee -a "$sum"; }
grep -E '^( *[0-9]|#)' "$out/bench.log" | sed 's/^/   /' | tee -a "$sum"
# every program's whole log and build log, in one file (the summary keeps only their last lines)
(cd "$BUILDDIR/tests" 2> /dev/null && tar czf "$out/gpu-logs.tgz" gpu/*.log 2> /dev/null)
say "== all done in $(( $(date +%s) - t_all )) s; logs in $out (each program's whole log: gpu-logs.tgz)"
