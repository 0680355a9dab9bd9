#!/bin/bash
# Benchmarks: Kumi next to Open MPI and MPICH (Debian packages) in the same run, as ratios.
#   make bench           (from the build tree), or
#   tests/bench/run-bench.sh   with top_builddir pointing at a build tree
# Ping-pong over TCP: Kumi MPI_COMPONENTS="p2p=self,tcp" vs Open MPI --mca btl tcp,self
# (and MPICH's ch4:ofi/ch3 default when present).  Peers missing: installs them if root
# and KUMI_BENCH_INSTALL=1, else skips them.  Output: a table, ratio = Kumi / peer
# (below 1 means Kumi is faster).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/_build}
sizes=${KUMI_BENCH_SIZES:-"0 1024 1048576"}
reps=${KUMI_BENCH_REPS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ "${KUMI_BENCH_INSTALL:-0}" = 1 ] && [ "$(id -u)" = 0 ]; then
    dpkg -s openmpi-bin libopenmpi-dev >/dev/null 2>&1 || \
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi

kumi_inc="-I$top_builddir/framework/include -I$top_srcdir/framework/include"
kumi_lib="-L$top_builddir/framework/.libs -Wl,-rpath,$top_builddir/framework/.libs -lmpi"
export KUMI_COMPONENT_PATH=$(ls -d "$top_builddir"/components/*/*/.libs | tr '\n' ':')
cc -O2 $kumi_inc -o "$work/pp_kumi" "$here/pingpong.c" $kumi_lib || exit 1

best() { # command... -> per size the best (minimum) latency and maximum bandwidth over $reps runs
    for r in $(seq "$reps"); do "$@" $sizes || return 1; done | \
        awk '{ if (!($1 in l) || $2 < l[$1]) l[$1] = $2; if ($3 > b[$1]) b[$1] = $3 }
             END { for (s in l) print s, l[s], b[s] }' | sort -n
}

echo "== ping-pong, 2 ranks on one host, best of $reps runs"
best env MPI_COMPONENTS="p2p=self,tcp" "$top_builddir/tools/mpiexec/mpiexec" -n 2 "$work/pp_kumi" > "$work/kumi.txt" || { echo "kumi run failed"; exit 1; }
peers=()
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
    mpicc.openmpi -O2 -o "$work/pp_ompi" "$here/pingpong.c" && \
    best mpirun.openmpi --allow-run-as-root --oversubscribe --mca btl tcp,self --mca pml ob1 -n 2 "$work/pp_ompi" > "$work/ompi.txt" 2>/dev/null && \
    peers+=("ompi:Open MPI (btl tcp,self)")
fi
if command -v mpicc.mpich >/dev/null && command -v mpirun.mpich >/dev/null; then
    mpicc.mpich -O2 -o "$work/pp_mpich" "$here/pingpong.c" && \
    best env UCX_TLS=tcp,self MPIR_CVAR_NOLOCAL=1 mpirun.mpich -n 2 "$work/pp_mpich" > "$work/mpich.txt" 2>/dev/null && \
    peers+=("mpich:MPICH (ucx tcp,self)")
fi
printf "%-10s %14s" "bytes" "Kumi tcp (us)"
for p in "${peers[@]}"; do printf " %28s %8s" "${p#*:} (us)" "ratio"; done; echo
while read -r s lat bw; do
    printf "%-10s %14.2f" "$s" "$lat"
    for p in "${peers[@]}"; do
        key=${p%%:*}
        plat=$(awk -v s="$s" '$1 == s { print $2 }' "$work/$key.txt")
        printf " %28.2f %8.2f" "$plat" "$(awk -v a="$lat" -v b="$plat" 'BEGIN { print (b > 0 ? a / b : 0) }')"
    done
    echo
done < "$work/kumi.txt"
echo "(ratio = Kumi latency / peer latency; below 1.00 Kumi is faster)"
[ ${#peers[@]} -gt 0 ] || echo "no peer MPI installed: apt-get install openmpi-bin libopenmpi-dev mpich libmpich-dev"
