#!/bin/bash
# NAS-style kernels through the Open MPI ABI shim (issue 17), the "npb" configuration of
# run-bench.sh (which runs this script; it can also run alone): the five kernels of
# tests/bench/npb (CG, MG, FT, IS, LU: written for Kumi from the NPB specification, not NASA's
# code; see the README there) built with Kumi's own mpif90 / mpicc and with Debian's
# mpif90.openmpi / mpicc.openmpi, both run on Kumi at 4 ranks by Kumi's mpiexec, which picks
# the Open MPI shim (libmpi.so.40, libmpi_mpifh.so.40 of this build, in KUMI_ABI_DIR) for the
# second by itself.  Launches are interleaved (kernel by kernel, the two builds one after the
# other, which first alternating from round to round); the table gives the best and the median
# time of each, the ratio (shim / native) of the best times and the median of the rounds'
# ratios (each round's two launches ran close together, so a load that comes and goes on the
# host hits both alike), both builds' verification and whether both printed the same result
# line.  Target: the Open MPI build within 2 % of Kumi's own (the best times).  Other work on
# the host moves these numbers by more than 2 %: the load average is printed before and after.
#
# Env: top_srcdir, top_builddir, KUMI_BENCH_OUT (default $top_builddir/tests/bench-logs),
#      KUMI_BENCH_REPS (launches per kernel and build, default 5), KUMI_BENCH_QUICK=1 (class S),
#      KUMI_BENCH_TIMEOUT (limit of one launch, default 240 s),
#      KUMI_NPB_CLASS (S, W or A; default A, S when quick), KUMI_NPB_KERNELS (default
#      "cg mg ft is lu"), KUMI_NPB_RANKS (default 4), KUMI_NPB_LU_ITERS (LU's iterations;
#      default the class's: 250 at class A), KUMI_NPB_MPIF90 / KUMI_NPB_MPICC (Kumi's wrappers
#      to use, e.g. an installed _install/bin/mpif90; default the build tree's, made as the
#      Fortran tests make them), KUMI_NPB_FLAGS (compiler flags of both builds, default
#      "-O2 -falign-functions=64"; see build() below).
# Appends its targets to $KUMI_BENCH_OUT/targets (run-bench.sh's summary) and writes
# $KUMI_BENCH_OUT/npb.kumi.status (ok, or why not).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/_build}
out=${KUMI_BENCH_OUT:-$top_builddir/tests/bench-logs}
reps=${KUMI_BENCH_REPS:-5}
quick=${KUMI_BENCH_QUICK:-0}
limit=${KUMI_BENCH_TIMEOUT:-240}
cls=${KUMI_NPB_CLASS:-$([ "$quick" = 1 ] && echo S || echo A)}
kernels=${KUMI_NPB_KERNELS:-cg mg ft is lu}
np=${KUMI_NPB_RANKS:-4}
lu_iters=${KUMI_NPB_LU_ITERS:-}
src=$here/npb
mpiexec=$top_builddir/tools/mpiexec/mpiexec
mkdir -p "$out" || exit 1
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
status() { echo "$1" > "$out/npb.kumi.status"; }
if [ -z "${KUMI_COMPONENT_PATH:-}" ]; then    # alone: this build tree's components
    KUMI_COMPONENT_PATH=$(ls -d "$top_builddir"/components/*/*/.libs 2>/dev/null | tr '\n' ':')
    export KUMI_COMPONENT_PATH=${KUMI_COMPONENT_PATH%:} KUMI_INTERNAL_NO_PKGLIBDIR=1
fi

# Kumi's wrappers: the given ones, or the build tree's (tests/fortran/kf.sh's copies)
if [ -n "${KUMI_NPB_MPIF90:-}" ]; then
    kfc=$KUMI_NPB_MPIF90 kcc=${KUMI_NPB_MPICC:-$(dirname "$KUMI_NPB_MPIF90")/mpicc}
else
    [ -f "$top_builddir/framework/fortran/.libs/libmpifort.so" ] ||
        { echo "npb: Kumi's Fortran support is not built (no gfortran at configure time): not measured"; status "no Fortran"; exit 0; }
    # shellcheck source=../fortran/kf.sh
    . "$top_srcdir/tests/fortran/kf.sh"
    kf_wrappers
    kfc=$KF_DIR/mpif90 kcc=$KF_DIR/mpicc
fi
# build VARIANT FC CC: every kernel, with $flags, into $work/KERNEL.VARIANT.
# Both builds compile the same source to the same instructions (callgrind: LU's relax() and
# norms() are instruction for instruction alike), but the two `mpi` modules give the code
# before them other sizes, so their hot functions start at other offsets in a cache line:
# at -O2 alone LU's relax() started on a cache line in Kumi's build and 32 bytes into one in
# the Open MPI build, and the worse placement alone made LU's compute 5-9 % slower (CPU time
# of the relax loops, interleaved, 1 and 4 ranks; with the placements swapped the gap moved to
# the other build), which the shim has nothing to do with.  -falign-functions=64 starts every
# function of both builds on a cache line, so the ratio measures the MPI library.
flags=${KUMI_NPB_FLAGS:--O2 -falign-functions=64}
build() {
    local v=$1 fc=$2 cc=$3 k
    for k in $kernels; do
        # shellcheck disable=SC2086   # $flags: several words
        if [ "$k" = is ]; then "$cc" $flags -o "$work/$k.$v" "$src/is.c"
        else "$fc" $flags -o "$work/$k.$v" "$src/$k.f90"; fi > "$out/build.npb.$k.$v.err" 2>&1 ||
            { echo "npb: building $k with $fc / $cc failed (see $out/build.npb.$k.$v.err)"; return 1; }
    done
}
build native "$kfc" "$kcc" || { status "build failed"; exit 1; }
variants=(native)
cshim=$top_builddir/components/abi/ompi/.libs/libmpi.so.40
fshim=$top_builddir/components/abi/ompi-fortran/.libs/libmpi_mpifh.so.40
if ! command -v mpif90.openmpi > /dev/null 2>&1 || ! command -v mpicc.openmpi > /dev/null 2>&1; then
    echo "npb: mpif90.openmpi / mpicc.openmpi not installed (Debian: openmpi-bin libopenmpi-dev): the shim is not measured"
elif [ ! -f "$cshim" ] || [ ! -f "$fshim" ]; then
    echo "npb: the Open MPI shims ($cshim, $fshim) are not built: not measured"
else
    mkdir -p "$work/abi/ompi"
    ln -s "$cshim" "$work/abi/ompi/libmpi.so.40"
    ln -s "$fshim" "$work/abi/ompi/libmpi_mpifh.so.40"
    build ompi mpif90.openmpi mpicc.openmpi && variants+=(ompi)
fi

# one launch: $out/npb.KERNEL.VARIANT.ROUND.{txt,err}; prints "TIME VERIFIED"
launch() {
    local k=$1 v=$2 r=$3 args=("$cls") f
    [ "$k" = lu ] && [ -n "$lu_iters" ] && args+=("$lu_iters")
    f=$out/npb.$k.$v.$r
    KUMI_ABI_DIR=$work/abi LD_LIBRARY_PATH=$top_builddir/framework/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        timeout -k 5 "$limit" "$mpiexec" -n "$np" "$work/$k.$v" "${args[@]}" > "$f.txt" 2> "$f.err" < /dev/null
    echo "rc=$?" >> "$f.err"
}
load0=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
for ((r = 1; r <= reps; r++)); do
    for k in $kernels; do
        if [ $((r % 2)) = 1 ]; then for v in "${variants[@]}"; do launch "$k" "$v" "$r"; done
        else for ((i = ${#variants[@]} - 1; i >= 0; i--)); do launch "$k" "${variants[$i]}" "$r"; done; fi
    done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)

# per kernel and build: the times of the launches that verified and ran on Kumi, and the result lines
time1() { # FILE: its time if it verified on Kumi
    [ -f "$1" ] && grep -q '^library: Kumi' "$1" && sed -n 's/^kernel=.* time= *\([0-9.]*\) verified=yes.*/\1/p' "$1"
}
times() { # K V: the times, one a line
    local f
    for f in "$out/npb.$1.$2".*.txt; do time1 "$f"; done
}
pairs() { # K: per round, shim time / native time
    local r a b
    for ((r = 1; r <= reps; r++)); do
        a=$(time1 "$out/npb.$1.native.$r.txt"); b=$(time1 "$out/npb.$1.ompi.$r.txt")
        [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { if (a > 0) printf "%.4f\n", b / a }'
    done
}
stat_() { sort -n | awk -v w="$1" '{ v[NR] = $1 } END { if (!NR) print "-"; else if (w == "min") print v[1]; else print v[int((NR + 1) / 2)] }'; }
verdict() { # K V: "yes" if every launch verified on Kumi, else what went wrong
    local f n=0 bad=""
    for f in "$out/npb.$1.$2".*.txt; do
        n=$((n + 1))
        if ! grep -q '^kernel=.*verified=yes' "$f"; then bad="failed"
        elif ! grep -q '^library: Kumi' "$f"; then bad="not on Kumi"; fi
    done
    [ $n -gt 0 ] || bad="no run"
    echo "${bad:-yes}"
}
sizes() { case $1/$cls in
    cg/S) echo "na=1400" ;; cg/W) echo "na=7000" ;; cg/A) echo "na=14000" ;;
    mg/S) echo "32^3" ;; mg/W) echo "128^3" ;; mg/A) echo "256^3" ;;
    ft/S) echo "64^3" ;; ft/W) echo "128x128x32" ;; ft/A) echo "256x256x128" ;;
    is/S) echo "2^16 keys" ;; is/W) echo "2^20 keys" ;; is/A) echo "2^23 keys" ;;
    lu/S) echo "12^3 ${lu_iters:-50} it" ;; lu/W) echo "33^3 ${lu_iters:-300} it" ;; lu/A) echo "64^3 ${lu_iters:-250} it" ;;
    esac; }
bad=0
{
    echo "-- NAS-style kernels (tests/bench/npb: written from the NPB specification, not NASA's code), class $cls,"
    echo "   $np ranks on $(nproc 2>/dev/null || echo 2) cores, Kumi's mpiexec; seconds (the kernel's timed part), best and median of $reps interleaved launches;"
    echo "   'native': built with Kumi's mpif90 / mpicc; 'shim': built with mpif90.openmpi / mpicc.openmpi, run through libmpi.so.40 + libmpi_mpifh.so.40;"
    echo "   both built with $flags;"
    echo "   ratio: shim / native of the best times, and (median) the median of the rounds' ratios; load average before the runs $load0, after $load1"
    printf "  %-6s %-5s %5s %-20s %10s %10s %10s %10s %8s %8s %-13s %s\n" kernel class ranks size "native" "(median)" \
        "shim" "(median)" "ratio" "(median)" "verified" "same result"
    for k in $kernels; do
        K=$(echo "$k" | tr a-z A-Z)
        nb=$(times "$k" native | stat_ min); nm=$(times "$k" native | stat_ med)
        vn=$(verdict "$k" native)
        if [ "${#variants[@]}" -gt 1 ]; then
            sb=$(times "$k" ompi | stat_ min); sm=$(times "$k" ompi | stat_ med)
            vs=$(verdict "$k" ompi)
            rb=$(awk -v a="$sb" -v b="$nb" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.3f", a / b; else print "-" }')
            rm_=$(pairs "$k" | stat_ med)
            [ "$rm_" = - ] || rm_=$(printf "%.3f" "$rm_")
            same=$(cat "$out/npb.$k.native".*.txt "$out/npb.$k.ompi".*.txt 2>/dev/null | grep '^result:' | sort -u | wc -l)
            [ "$same" = 1 ] && same=yes || same="NO ($same different)"
            met=$(awk -v r="$rb" 'BEGIN { print (r != "-" && r + 0 <= 1.02) ? 1 : 0 }')
            [ "$vs" = yes ] && [ "$same" = yes ] || met=0
            echo "npb|$K class $cls, $np ranks: the mpif90.openmpi build within 2 % of Kumi's own (best)|$met|1" >> "$out/targets"
        else
            sb=- sm=- rb=- rm_=- vs=- same=-
        fi
        printf "  %-6s %-5s %5s %-20s %10s %10s %10s %10s %8s %8s %-13s %s\n" "$K" "$cls" "$np" "$(sizes "$k")" \
            "$nb" "($nm)" "$sb" "($sm)" "$rb" "($rm_)" "$vn/$vs" "$same"
    done
    [ "${#variants[@]}" -gt 1 ] || echo "  (the Open MPI build was not measured: see above)"
} | tee "$out/npb.txt"
grep -q "failed\|not on Kumi\|no run\|NO (" "$out/npb.txt" && bad=1
if [ $bad = 0 ]; then status ok; else status "a kernel failed or did not verify (see $out/npb.*.err)"; fi
exit 0
