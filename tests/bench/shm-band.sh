#!/bin/bash
# shm-band: interleaved timing of the 4-16 KiB band on shared memory (issue 22 item 2): mpibench
# (bibw and lat by default) at 2 ranks bound to cores, for several Kumi builds and parameter
# settings and for MPICH / Open MPI, run one after the other ROUNDS times (each launch measures
# every size once); prints the median over the rounds per figure and configuration, and each
# configuration's ratio to the first one.  On a loaded machine only the ratios mean much; with -b
# the best round instead of the median (the least disturbed one, from the best of each launch's -n repetitions: closer to a quiet machine's
# figure when other jobs take the cores part of the time).
# Kumi's ranks preload the tree's libmpi (mpiexec puts the library folder of the tree it was
# built in first on their LD_LIBRARY_PATH, which for a copied build folder is the original's).
# Usage: tests/bench/shm-band.sh [-r ROUNDS (7)] [-s SIZES (4096,8192,12288,16384)]
#            [-m METRICS (bibw,lat)] [-x SCALE (1)] [-n REPS in a launch (1)] [-b] [-w WINDOWS] CONFIG...
#   CONFIG: NAME=BUILD_DIR[,VAR=VALUE...] (a Kumi build; VAR=VALUE: environment, e.g.
#           KUMI_P2P_SHMEM_CMA_MIN=16385; a ; in VALUE stands for a comma), mpich, or ompi
#   -w WINDOWS: tests/bench/bandbest.c instead of mpibench: each window (bibw) or 10 round trips
#           (lat) timed on its own, the 10th percentile of WINDOWS of them (the windows in which
#           both ranks had a core: the figure of a quiet machine, on a loaded one); the lines
#           METRIC~med give the median window
# KEEP=1 keeps the outputs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
R=7 S=4096,8192,12288,16384 M=bibw,lat X=1 B=0 N=1 W=0
while getopts r:n:s:m:x:w:b o; do
    case $o in w) W=$OPTARG ;; r) R=$OPTARG ;; n) N=$OPTARG ;; s) S=$OPTARG ;; m) M=$OPTARG ;; x) X=$OPTARG ;; b) B=1 ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,14p' "$0"; exit 2; }
O=$(mktemp -d) || exit 1
if [ -n "${KEEP:-}" ]; then echo "shm-band: outputs kept in $O"; else trap 'rm -rf "$O"' EXIT; fi
prog=mpibench; [ "$W" -gt 0 ] && prog=bandbest
names=() i=0
for c in "$@"; do
    case $c in
    mpich) mpicc.mpich -O2 -o "$O/mb.$i" "$here/$prog.c" || exit 1; names+=(mpich) ;;
    ompi) mpicc.openmpi -O2 -o "$O/mb.$i" "$here/$prog.c" || exit 1; names+=(ompi) ;;
    *=*) b=${c#*=}; b=${b%%,*}
        ${CC:-cc} -std=gnu11 -O2 -I"$b/framework/include" -I"$here/../../framework/include" -o "$O/mb.$i" \
            "$here/$prog.c" -L"$b/framework/.libs" -Wl,-rpath,"$b/framework/.libs" -lmpi || exit 1
        names+=("${c%%=*}") ;;
    *) echo "shm-band: bad configuration '$c'"; exit 2 ;;
    esac
    i=$((i + 1))
done
root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
args=(-m "$M" -s "$S" -r "$N" -x "$X"); [ "$W" -gt 0 ] && args=(-m "$M" -s "$S" -w "$W")
run() { # INDEX ROUND
    local c=${cfgs[$1]} f=$O/out.$1.$2 b envs=()
    case $c in
    mpich) timeout 300 mpirun.mpich -bind-to core -n 2 "$O/mb.$1" "${args[@]}" > "$f" 2>&1 ;;
    ompi) timeout 300 mpirun.openmpi "${root[@]}" --bind-to core -n 2 "$O/mb.$1" "${args[@]}" > "$f" 2>&1 ;;
    *) b=${c#*=}
        IFS=, read -r -a envs <<< "$b"
        b=${envs[0]}; envs=("${envs[@]:1}"); envs=("${envs[@]//;/,}")
        env -u MPI_COMPONENTS KUMI_INTERNAL_NO_PKGLIBDIR=1 \
            KUMI_COMPONENT_PATH="$(ls -d "$b"/components/*/*/.libs | tr '\n' ':')" \
            LD_LIBRARY_PATH="$b/framework/.libs" "${envs[@]}" timeout 300 \
            "$b/tools/mpiexec/mpiexec" -n 2 --bind-to core -x LD_PRELOAD="$b/framework/.libs/libmpi.so.0" \
            "$O/mb.$1" "${args[@]}" > "$f" 2>&1 ;;
    esac
    grep -q '^# done' "$f" || { echo "shm-band: ${names[$1]} round $2 failed:"; tail -5 "$f"; }
}
cfgs=("$@")
for ((r = 0; r < R; r++)); do
    for ((i = 0; i < ${#cfgs[@]}; i++)); do run "$i" "$r"; done
done
printf '%s\n' "${names[@]}" > "$O/names"
awk -v R="$R" -v B="$B" -v W="$W" '
    FILENAME ~ /names$/ { nm[n++] = $1; next }
    FNR == 1 { k = split(FILENAME, p, "."); c = p[k - 1] }
    /^(lat|bw|bibw|rate) / { key = $1 " " $2; v[c, key] = v[c, key] " " (!B || W ? $4 : $1 == "lat" ? $5 : $6); unit[$1] = $7
        if (!(key in seen)) { seen[key] = 1; keys[nk++] = key }
        if (W) { key = $1 "~med " $2; v[c, key] = v[c, key] " " $6; unit[$1 "~med"] = $7      # the median window
                 if (!(key in seen)) { seen[key] = 1; keys[nk++] = key } } }
    function med(s,   a, m, i, j, x) { m = split(s, a, " "); if (!m) return 0
        for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
        if (B) return hi ? a[m] : a[1]
        return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
    END { printf "%s of %d interleaved rounds (ratio to %s in brackets)\n%-12s", B ? "best" : "medians", R, nm[0], "figure"
          for (i = 0; i < n; i++) printf " %18s", nm[i]; printf "\n"
          for (j = 0; j < nk; j++) { split(keys[j], kk, " "); printf "%-12s", keys[j] " B"
              hi = kk[1] != "lat"; base = med(v[0, keys[j]])
              for (i = 0; i < n; i++) { x = med(v[i, keys[j]]); printf " %10.4g (%5.2f)", x, base ? x / base : 0 }
              printf "  %s\n", unit[kk[1]] } }
' "$O/names" $(for ((r = 0; r < R; r++)); do for ((i = 0; i < ${#cfgs[@]}; i++)); do echo "$O/out.$i.$r"; done; done)
