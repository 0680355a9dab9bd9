#!/bin/bash
# shm-ab: interleaved A/B timing of the small-message figures on shared memory (issue 22 item 1)
# between two build trees: mpibench (lat, rate, bibw at 0, 1, 8, 64 B) built against each, run
# alternately A, B, A, B ... ROUNDS times at 2 ranks bound to cores (each run the median of 3
# repetitions); prints the median of the
# rounds per figure and B / A.  On a loaded machine only the ratio means much.
# The ranks preload each tree's libmpi: mpiexec puts the library folder of the
# tree it was built in first on their LD_LIBRARY_PATH, which for a copied build
# folder is the original's.
# SIZES (default 0,1,8,64) and MODES (default lat,rate,bibw) choose other rows, e.g. SIZES=8192,16384,32768,65536
# MODES=lat,bibw for the 8-64 KiB band (issue 22 item 2).
# OMPI=1 adds Open MPI (mpibench built with mpicc.openmpi, mpirun.openmpi --bind-to core) to each
# round, as column O with B/O: the peer in the same minutes (the machine's state changes by the minute).
# Usage: tests/bench/shm-ab.sh BUILD_A BUILD_B [ROUNDS (default 7)] [SCALE (default 0.3)]
set -u
here=$(cd "$(dirname "$0")" && pwd)
A=$1 B=$2 R=${3:-7} X=${4:-0.3} SIZES=${SIZES:-0,1,8,64} MODES=${MODES:-lat,rate,bibw}
O=$(mktemp -d) || exit 1
if [ -n "${KEEP:-}" ]; then echo "shm-ab: outputs kept in $O"; else trap 'rm -rf "$O"' EXIT; fi
for t in A B; do
    b=${!t}
    ${CC:-cc} -std=gnu11 -O2 -I"$b/framework/include" -I"$here/../../framework/include" -o "$O/mb.$t" \
        "$here/mpibench.c" -L"$b/framework/.libs" -Wl,-rpath,"$b/framework/.libs" -lmpi || exit 1
done
if [ -n "${OMPI:-}" ]; then
    mpicc.openmpi -O2 -o "$O/mb.O" "$here/mpibench.c" || exit 1
fi
run() { # T ROUND
    if [ "$1" = O ]; then
        local root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
        timeout 300 mpirun.openmpi "${root[@]}" --bind-to core -n 2 "$O/mb.O" -m "$MODES" -s "$SIZES" -r 3 -x "$X" > "$O/out.O.$2" 2>&1
        return
    fi
    local b=${!1}
    KUMI_INTERNAL_NO_PKGLIBDIR=1 KUMI_COMPONENT_PATH=$(ls -d "$b"/components/*/*/.libs | tr '\n' ':') \
    LD_LIBRARY_PATH=$b/framework/.libs timeout 300 env -u MPI_COMPONENTS "$b/tools/mpiexec/mpiexec" -n 2 \
        --bind-to core -x LD_PRELOAD="$b/framework/.libs/libmpi.so.0" "$O/mb.$1" -m "$MODES" -s "$SIZES" -r 3 -x "$X" > "$O/out.$1.$2" 2>&1
}
for ((i = 0; i < R; i++)); do run A $i; run B $i; [ -n "${OMPI:-}" ] && run O $i; done
awk -v R="$R" -v S="$SIZES" -v M="$MODES" -v OM="${OMPI:-}" '
    FNR == 1 { n = split(FILENAME, p, "."); t = p[n - 1] }
    /^(lat|rate|bibw) / { v[t, $1 " " $2] = v[t, $1 " " $2] " " $4; unit[$1] = $7; keys[$1 " " $2] = 1 }
    function med(s,   a, n, i, j, x) { n = split(s, a, " "); for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END { printf "%-12s %12s %12s %8s%s  (medians of %d interleaved rounds)\n", "figure", "A", "B", "B/A",
                 OM ? sprintf(" %12s %8s", "O", "B/O") : "", R
          nm = split(M, ms, ","); nz = split(S, zs, ","); n = 0
          for (i = 1; i <= nm; i++) for (j = 1; j <= nz; j++) ks[++n] = ms[i] " " zs[j]
          for (i = 1; i <= n; i++) { k = ks[i]; if (!(k in keys)) continue; a = med(v["A", k]); b = med(v["B", k])
              o = OM ? med(v["O", k]) : 0
              split(k, kk, " "); printf "%-12s %12.4g %12.4g %8.3f%s  %s\n", k " B", a, b, a ? b / a : 0,
                                        OM ? sprintf(" %12.4g %8.3f", o, o ? b / o : 0) : "", unit[kk[1]] } }
' "$O"/out.*
