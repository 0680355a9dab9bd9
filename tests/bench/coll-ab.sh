#!/bin/bash
# coll-ab: interleaved A/B timing of small blocking collectives (issue 22 item 4) between two build
# trees: tests/bench/collbench.c built against each, run alternately A, B, A, B ... ROUNDS times
# (each run the median of 3 repetitions); prints the median of the rounds per operation and B / A.
# 2 ranks are bound to cores (--bind-to core), more ranks are not (as run-bench.sh's coll2 / coll4)
# unless BIND=core.
# On a loaded machine only the ratio means much.  EXTRA_A / EXTRA_B: VAR=VALUE words for one side's
# environment (e.g. EXTRA_B=KUMI_COLL_SM_BARRIER_LEAD=0 with A = B: a parameter's effect).  A build
# tree copied elsewhere still runs the original tree's libmpi (libtool's mpiexec wrapper puts its
# own framework/.libs first in LD_LIBRARY_PATH), though its own components: use built trees.
# DIST=1 also prints each side's per-launch values, sorted (a median hides a bimodal distribution:
# unbound ranks on 2 cores run ~2x faster when the kernel spreads them 2 + 2 than when it leaves all
# of them on one core, which it does while the other core is busy with another session: with
# sched_autogroup the launch's ranks weigh as one task there).
# Usage: tests/bench/coll-ab.sh BUILD_A BUILD_B [ROUNDS (7)] [SCALE (1)] [OPS (bcast,barrier)] [NP (2)] [BYTES (8)]
set -u
here=$(cd "$(dirname "$0")" && pwd)
A=$1 B=$2 R=${3:-7} X=${4:-1} OPS=${5:-bcast,barrier} NP=${6:-2} S=${7:-8}
O=$(mktemp -d) || exit 1
if [ -n "${KEEP:-}" ]; then echo "coll-ab: outputs kept in $O"; else trap 'rm -rf "$O"' EXIT; fi
for t in A B; do
    b=${!t}
    ${CC:-cc} -std=gnu11 -O2 -I"$b/framework/include" -I"$here/../../framework/include" -o "$O/cb.$t" \
        "$here/collbench.c" -L"$b/framework/.libs" -Wl,-rpath,"$b/framework/.libs" -lmpi || exit 1
done
bind=(--bind-to core); [ "$NP" -gt 2 ] && bind=()
# BIND=core: more ranks than cores are bound round robin too (--bind-to core --oversubscribe): the
# placement is then the same in every launch (unbound, the kernel's placement varies per launch)
[ "${BIND:-}" = core ] && [ "$NP" -gt 2 ] && bind=(--bind-to core --oversubscribe)
run() { # T ROUND
    local b=${!1} extra=EXTRA_$1
    # shellcheck disable=SC2086
    KUMI_INTERNAL_NO_PKGLIBDIR=1 KUMI_COMPONENT_PATH=$(ls -d "$b"/components/*/*/.libs | tr '\n' ':') \
    LD_LIBRARY_PATH=$b/framework/.libs timeout 300 env -u MPI_COMPONENTS ${!extra:-} "$b/tools/mpiexec/mpiexec" \
        -n "$NP" "${bind[@]}" "$O/cb.$1" -m "$OPS" -s "$S" -r 3 -x "$X" > "$O/out.$1.$2" 2>&1
}
for ((i = 0; i < R; i++)); do run A $i; run B $i; done
awk -v R="$R" '
    FNR == 1 { n = split(FILENAME, p, "."); t = p[n - 1] }
    /^[a-z]+ [0-9]+ / { v[t, $1 " " $2] = v[t, $1 " " $2] " " $4; if (!($1 " " $2 in keys)) order[++nk] = $1 " " $2; keys[$1 " " $2] = 1 }
    function med(s,   a, n, i, j, x) { n = split(s, a, " "); for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END { printf "%-16s %10s %10s %7s  (us per operation, medians of %d interleaved rounds)\n", "op bytes", "A", "B", "B/A", R
          for (i = 1; i <= nk; i++) { k = order[i]; a = med(v["A", k]); b = med(v["B", k])
              printf "%-16s %10.4g %10.4g %7.3f\n", k, a, b, a ? b / a : 0 } }
' "$O"/out.A.* "$O"/out.B.*
if [ -n "${DIST:-}" ]; then
    echo "per launch, sorted (us per operation):"
    for t in A B; do
        awk -v t="$t" '/^[a-z]+ [0-9]+ /{ k = $1 " " $2; if (!(k in v)) order[++n] = k; v[k] = v[k] " " $4 }
            END { for (i = 1; i <= n; i++) { k = order[i]; m = split(v[k], a, " ")
                      for (x = 2; x <= m; x++) { y = a[x]; for (j = x - 1; j >= 1 && a[j] + 0 > y + 0; j--) a[j + 1] = a[j]; a[j + 1] = y }
                      s = ""; for (x = 1; x <= m; x++) s = s " " a[x]; printf "%s %-16s%s\n", t, k, s } }' "$O"/out."$t".*
    done
fi
