#!/bin/bash
# coll-place: small blocking collectives at NP ranks on one host, Kumi against Open MPI, under chosen
# rank placements (issue 22 item 4): tests/bench/collbench.c built with each library, launched
# alternately side after side ROUNDS times (each launch the median of 3 repetitions); prints per side
# and operation the median, the quartiles and (DIST=1) every launch's value, sorted: with more ranks
# than cores the kernel's placement varies per launch, so a median of few launches misleads.
# Sides (a list separated by spaces; kumi:MODE or ompi:MODE):
#   unbound     no binding (Kumi's default past one rank per core; Open MPI --oversubscribe)
#   core        bound to cores round robin (--bind-to core --oversubscribe): the same in every launch
#   map=C,C,..  rank i kept on CPU C_i with taskset (e.g. map=0,0,0,0: every rank on CPU 0;
#               map=0,1,0,1: two per CPU), whatever the kernel would do
#   session     unbound, each rank in a session of its own (its program run by `setsid -w`, as
#               MPICH's Hydra starts ranks): where sched_autogroup is on, every rank is then a
#               scheduling group of its own instead of one group per launch (README, mpiexec)
# Usage: tests/bench/coll-place.sh [BUILD (_build)] [ROUNDS (9)] [NP (4)] ["SIDES" ("kumi:unbound ompi:unbound")]
#                                  [OPS (bcast,allreduce,allgather,alltoall,barrier)] [BYTES (8)] [SCALE (0.2)]
# KEEP=1 keeps the outputs.  Open MPI sides are left out when mpicc.openmpi / mpirun.openmpi are missing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-$here/../../_build}" && pwd) || exit 1
R=${2:-9} NP=${3:-4} SIDES=${4:-kumi:unbound ompi:unbound} OPS=${5:-bcast,allreduce,allgather,alltoall,barrier}
S=${6:-8} X=${7:-0.2}
O=$(mktemp -d) || exit 1
if [ -n "${KEEP:-}" ]; then echo "coll-place: outputs kept in $O"; else trap 'rm -rf "$O"' EXIT; fi
${CC:-cc} -std=gnu11 -O2 -I"$B/framework/include" -I"$here/../../framework/include" -o "$O/cb.kumi" \
    "$here/collbench.c" -L"$B/framework/.libs" -Wl,-rpath,"$B/framework/.libs" -lmpi || exit 1
read -ra sides <<< "$SIDES"
if [[ " $SIDES" == *" ompi:"* ]]; then
    if command -v mpirun.openmpi > /dev/null && mpicc.openmpi -O2 -o "$O/cb.ompi" "$here/collbench.c" 2> "$O/cc.err"; then :
    else
        echo "coll-place: no Open MPI (mpicc.openmpi, mpirun.openmpi): its sides left out"
        for i in "${!sides[@]}"; do [[ ${sides[$i]} == ompi:* ]] && unset "sides[$i]"; done
    fi
fi
# the wrapper of map=: the rank's CPU from its rank (KUMI_RANK, OMPI_COMM_WORLD_RANK)
cat > "$O/pin" << 'EOF'
#!/bin/bash
r=${KUMI_RANK:-${OMPI_COMM_WORLD_RANK:-0}}
IFS=, read -ra m <<< "$COLL_PLACE_MAP"
exec taskset -c "${m[$r]:-${m[0]}}" "$@"
EOF
chmod +x "$O/pin"
root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
run() { # SIDE ROUND
    local lib=${1%%:*} mode=${1#*:} opt=() wrap=() env=()
    case $mode in
    unbound) [ "$lib" = kumi ] && opt=(--bind-to none) ;;
    core) opt=(--bind-to core --oversubscribe) ;;
    map=*) opt=(--bind-to none); wrap=("$O/pin"); env=(COLL_PLACE_MAP="${mode#map=}") ;;
    session) opt=(--bind-to none); wrap=(setsid -w) ;;
    *) echo "coll-place: unknown mode $mode"; exit 1 ;;
    esac
    if [ "$lib" = kumi ]; then
        env -u MPI_COMPONENTS KUMI_INTERNAL_NO_PKGLIBDIR=1 \
            KUMI_COMPONENT_PATH="$(ls -d "$B"/components/*/*/.libs | tr '\n' ':')" \
            LD_LIBRARY_PATH="$B/framework/.libs" "${env[@]}" timeout 300 "$B/tools/mpiexec/mpiexec" -n "$NP" \
            "${opt[@]}" "${wrap[@]}" "$O/cb.kumi" -m "$OPS" -s "$S" -r 3 -x "$X"
    else
        opt=(--oversubscribe --bind-to none)
        [ "$mode" = core ] && opt=(--map-by core:OVERSUBSCRIBE --bind-to core:overload-allowed)   # 0,2 | 1,3 as Kumi
        [ ${#env[@]} -gt 0 ] && opt+=(-x COLL_PLACE_MAP)
        env "${env[@]}" timeout 300 mpirun.openmpi "${root[@]}" -n "$NP" "${opt[@]}" "${wrap[@]}" "$O/cb.ompi" \
            -m "$OPS" -s "$S" -r 3 -x "$X"
    fi > "$O/out.$2.$1" 2>&1 || echo "coll-place: $1 launch $2 failed (status $?)"
}
for ((i = 0; i < R; i++)); do for s in "${sides[@]}"; do run "$s" "$i"; done; done
printf "%-16s %-10s %9s %9s %9s  (us per operation; %d launches each, NP=%d, %s B)\n" side op median q1 q3 "$R" "$NP" "$S"
for s in "${sides[@]}"; do
    awk -v t="$s" -v dist="${DIST:-}" '/^[a-z]+ [0-9]+ / { k = $1; if (!(k in v)) order[++n] = k; v[k] = v[k] " " $4 }
        function q(a, m, f,   x) { x = f * (m - 1) + 1; return a[int(x)] + (x - int(x)) * (a[int(x) + 1] - a[int(x)]) }
        END { for (i = 1; i <= n; i++) { k = order[i]; m = split(v[k], a, " ")
                  for (x = 2; x <= m; x++) { y = a[x]; for (j = x - 1; j >= 1 && a[j] + 0 > y + 0; j--) a[j + 1] = a[j]; a[j + 1] = y }
                  printf "%-16s %-10s %9.4g %9.4g %9.4g\n", t, k, q(a, m, 0.5), q(a, m, 0.25), q(a, m, 0.75)
                  if (dist) { s = ""; for (x = 1; x <= m; x++) s = s " " a[x]; printf "    %s\n", s } } }' "$O"/out.*."$s"
done
