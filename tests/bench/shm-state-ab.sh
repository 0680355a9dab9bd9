#!/bin/bash
# shm-state-ab: tests/bench/shm-ab.sh's interleaved A/B of two build trees, with MPICH side by side and
# the machine's state told per round (issue 22 item 2: on a shared virtual machine the ring's copies
# across cores are fast or 3 x slower, minute by minute, at the same load).  Each round: a probe
# (build A, mpibench lat 0 and 16384 B), mpibench -m MODES -s SIZES on A, on B and on MPICH
# (mpicc.mpich, mpiexec.mpich -n 2 -bind-to core, as tests/bench/run-bench.sh), the probe again.
# A round is "fast" when both probes give 16 KiB under 2.6 us, "slow" when both are over 4 us and
# 0 B under 0.45 us (slow, not a loaded machine: then every figure is off), else "mixed" or "loaded".
# Prints the medians per state and configuration, B / A and B / MPICH.
# Usage: tests/bench/shm-state-ab.sh BUILD_A BUILD_B [ROUNDS (12)]
#   SIZES (default 4097,8191,8192,8193,12287,16384,16385,32768,65535,65536), MODES (lat,bibw),
#   SCALE (0.3), KEEP=1 keeps the outputs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
A=$1 B=$2 R=${3:-12} X=${SCALE:-0.3}
S=${SIZES:-4097,8191,8192,8193,12287,16384,16385,32768,65535,65536} M=${MODES:-lat,bibw}
O=$(mktemp -d) || exit 1
if [ -n "${KEEP:-}" ]; then echo "shm-state-ab: outputs kept in $O"; else trap 'rm -rf "$O"' EXIT; fi
for t in A B; do
    b=${!t}
    ${CC:-cc} -std=gnu11 -O2 -I"$b/framework/include" -I"$here/../../framework/include" -o "$O/mb.$t" \
        "$here/mpibench.c" -L"$b/framework/.libs" -Wl,-rpath,"$b/framework/.libs" -lmpi || exit 1
done
have_mpich=0
command -v mpicc.mpich > /dev/null && mpicc.mpich -O2 -o "$O/mb.M" "$here/mpibench.c" && have_mpich=1
kumi() { # T ARGS...: mpibench of tree T
    local t=$1 b=${!1}; shift
    KUMI_INTERNAL_NO_PKGLIBDIR=1 KUMI_COMPONENT_PATH=$(ls -d "$b"/components/*/*/.libs | tr '\n' ':') \
    LD_LIBRARY_PATH=$b/framework/.libs timeout 300 env -u MPI_COMPONENTS "$b/tools/mpiexec/mpiexec" -n 2 \
        --bind-to core -x LD_PRELOAD="$b/framework/.libs/libmpi.so.0" "$O/mb.$t" "$@"
}
probe() { kumi A -m lat -s 0,16384 -r 3 -x 0.2 2>&1 | awk '/^lat/{printf "%s ", $4}'; }
for ((i = 0; i < R; i++)); do
    p1=$(probe)
    kumi A -m "$M" -s "$S" -r 3 -x "$X" > "$O/A.$i" 2>&1
    kumi B -m "$M" -s "$S" -r 3 -x "$X" > "$O/B.$i" 2>&1
    [ $have_mpich = 1 ] && timeout 300 mpiexec.mpich -n 2 -bind-to core "$O/mb.M" -m "$M" -s "$S" -r 3 -x "$X" > "$O/M.$i" 2>&1
    p2=$(probe)
    echo "$i $p1 $p2" >> "$O/state"
done
awk '
    FILENAME ~ /state$/ { s = ($3 < 2.6 && $5 < 2.6) ? "fast" : ($3 > 4 && $5 > 4 && $2 < 0.45 && $4 < 0.45 && $3 < 12 && $5 < 12) ? "slow" : ($3 > 12 || $5 > 12) ? "loaded" : "mixed"
                          st[$1] = s; ns[s]++; next }
    { n = split(FILENAME, p, "/"); split(p[n], q, "."); c = q[1]; r = q[2] }
    /^(lat|bibw|bw|rate) / { k = $1 " " $2; v[st[r], c, k] = v[st[r], c, k] " " $4; unit[$1] = $7; if (!(k in seen)) { seen[k] = 1; ko[++nk] = k } }
    function med(s,  a, m, i, j, x) { m = split(s, a, " "); if (!m) return 0
        for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
    END { split("fast slow mixed loaded", ss, " ")
        for (t = 1; t <= 4; t++) { s = ss[t]; if (!ns[s]) continue
            printf "%s state: %d round%s (medians)\n%-12s %10s %10s %10s %7s %7s\n", s, ns[s], (ns[s] > 1 ? "s" : ""), "figure", "A", "B", "MPICH", "B/A", "B/MPICH"
            for (j = 1; j <= nk; j++) { k = ko[j]; a = med(v[s, "A", k]); b = med(v[s, "B", k]); m = med(v[s, "M", k]); split(k, kk, " ")
                printf "%-12s %10.4g %10.4g %10.4g %7.3f %7.3f  %s\n", k " B", a, b, m, a ? b / a : 0, m ? b / m : 0, unit[kk[1]] } } }
' "$O/state" "$O"/[ABM].*
