# bench-common.sh: the frame shared by the configuration scripts that
# run-bench.sh calls and that can also run alone (match-bench.sh,
# mem-bench.sh, io-bench.sh, kacc-bench.sh): the environment, one benchmark
# program built with each implementation's own compiler, launches through
# each one's launcher under a time limit, KUMI_BENCH_REPS rounds with the
# implementations interleaved (a change of load on the host hits them
# alike), medians, and the targets file.  Sourced (bash), not run.
#
#   bench_setup CFG QUICK_REPS REPS   the common variables (below); a work
#                                     directory removed on exit ($bench_on_exit:
#                                     more to run then)
#   bench_build PROG [ARGS...]        $here/PROG.c into $work/PROG.IMPL for Kumi
#                                     and each installed peer (ARGS: extra link
#                                     arguments, e.g. -lm); sets impls=(kumi ...)
#   bench_launch IMPL NP BIND CMD...  one launch of CMD on NP ranks (BIND: bind,
#                                     one rank per core, or nobind); stderr goes to
#                                     $out/CFG.IMPL.err (IMPL: kumi, ompi, mpich, or
#                                     kumi-SOMETHING: Kumi's launcher)
#   bench_rounds CASE...              $reps rounds; in each, every CASE for every
#                                     implementation of $impls in turn:
#                                     bench_one IMPL CASE ROUND (the script's own),
#                                     its stdout appended to $work/IMPL.CASE
#   bench_median [FIELD] < FILE       median of a column (default 1), "-" when empty
#   bench_med IMPL CASE [FIELD]       median of $work/IMPL.CASE, "failed" when empty
#   bench_best low|high EXT           the best value over the peers' $work/PEER.EXT
#                                     files (0 when none; kumi-* are not peers)
#   bench_target LABEL MET            a line "CFG|LABEL|MET|1" in $out/targets
#   bench_status TEXT                 $out/CFG.kumi.status
#   bench_name IMPL                   Kumi, Open MPI, MPICH, or ${bench_labels[IMPL]}
#                                     (an associative array the script may fill)
#
# Variables set: here (tests/bench), top_srcdir, top_builddir, out
# (KUMI_BENCH_OUT, default $top_builddir/tests/bench-logs), quick
# (KUMI_BENCH_QUICK), reps (KUMI_BENCH_REPS, default QUICK_REPS or REPS),
# limit (KUMI_BENCH_TIMEOUT, one launch, default 240 s), peers
# (KUMI_BENCH_PEERS, default "ompi mpich"; none: Kumi alone), mpiexec, work.

bench_setup() {
    bench_cfg=$1
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
    top_builddir=$(cd "${top_builddir:-$top_srcdir/_build}" && pwd)   # absolute: the VM's init cds to it
    out=${KUMI_BENCH_OUT:-$top_builddir/tests/bench-logs}
    quick=${KUMI_BENCH_QUICK:-0}
    reps=${KUMI_BENCH_REPS:-$([ "$quick" = 1 ] && echo "$2" || echo "$3")}
    limit=${KUMI_BENCH_TIMEOUT:-240}
    peers=${KUMI_BENCH_PEERS:-ompi mpich}
    mkdir -p "$out" || exit 1
    mpiexec=$top_builddir/tools/mpiexec/mpiexec
    work=$(mktemp -d) || exit 1
    bench_on_exit=${bench_on_exit:-}
    declare -gA bench_labels
    # KUMI_BENCH_KEEP=1: the launches' raw outputs stay in $out/$bench_cfg.work (one file per
    # implementation and case, a line per launch) for a look at the launches behind a median
    trap '[ "${KUMI_BENCH_KEEP:-0}" = 1 ] && rm -rf "$out/$bench_cfg.work" && cp -r "$work" "$out/$bench_cfg.work"
          rm -rf "$work"; eval "$bench_on_exit"' EXIT
}

bench_status() { echo "$1" > "$out/$bench_cfg.kumi.status"; }
bench_name() {
    if [ -n "${bench_labels[$1]:-}" ]; then echo "${bench_labels[$1]}"; return; fi
    case $1 in kumi) echo Kumi ;; ompi) echo "Open MPI" ;; mpich) echo MPICH ;; *) echo "$1" ;; esac
}
bench_target() { echo "$bench_cfg|$1|$2|1" >> "$out/targets"; }

bench_build() {
    local prog=$1 p cc_ run_
    shift
    ${CC:-cc} -std=gnu11 -O2 -I"$top_builddir/framework/include" -I"$top_srcdir/framework/include" \
        -o "$work/$prog.kumi" "$here/$prog.c" -L"$top_builddir/framework/.libs" \
        -Wl,-rpath,"$top_builddir/framework/.libs" -lmpi "$@" 2> "$out/build.$bench_cfg.kumi.err" || {
        echo "$bench_cfg: building $prog.c with Kumi failed (see $out/build.$bench_cfg.kumi.err)"
        bench_status "build failed"
        exit 1
    }
    impls=(kumi)
    for p in $peers; do
        case $p in ompi) cc_=mpicc.openmpi run_=mpirun.openmpi ;; mpich) cc_=mpicc.mpich run_=mpirun.mpich ;; *) continue ;; esac
        command -v $cc_ > /dev/null 2>&1 && command -v $run_ > /dev/null 2>&1 ||
            { echo "$bench_cfg: $(bench_name $p) not installed: skipped"; continue; }
        if $cc_ -O2 -o "$work/$prog.$p" "$here/$prog.c" "$@" 2> "$out/build.$bench_cfg.$p.err"; then impls+=("$p")
        else echo "$bench_cfg: building $prog.c with $cc_ failed (see $out/build.$bench_cfg.$p.err)"; fi
    done
}

bench_launch() {
    local impl=$1 np=$2 bind=$3 b=()
    shift 3
    case $impl in
    kumi | kumi-*)
        [ "$bind" = bind ] && b=(--bind-to core)
        timeout "$limit" "$mpiexec" "${b[@]}" -n "$np" "$@" ;;
    ompi)
        [ "$bind" = bind ] && b=(--bind-to core)
        timeout "$limit" mpirun.openmpi --allow-run-as-root --oversubscribe "${b[@]}" -n "$np" "$@" ;;
    mpich)
        [ "$bind" = bind ] && b=(-bind-to core)
        timeout "$limit" mpirun.mpich "${b[@]}" -n "$np" "$@" ;;
    *) echo "bench_launch: unknown implementation $impl" >&2; return 2 ;;
    esac 2>> "$out/$bench_cfg.$impl.err"
}

bench_rounds() {
    local r c i
    for ((r = 1; r <= reps; r++)); do
        for c in "$@"; do
            for i in "${impls[@]}"; do
                bench_one "$i" "$c" "$r" >> "$work/$i.$c" ||
                    echo "$bench_cfg: a $(bench_name "$i") run ($c) failed (see $out/$bench_cfg.$i.err)"
            done
        done
    done
}

bench_median() {
    awk -v f="${1:-1}" '{ print $f }' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'
}

bench_med() {
    if [ -s "$work/$1.$2" ]; then bench_median "${3:-1}" < "$work/$1.$2"; else echo failed; fi
}

bench_best() {
    local dir=$1 ext=$2 i best=0
    for i in "${impls[@]}"; do
        case $i in kumi | kumi-*) continue ;; esac
        [ -f "$work/$i.$ext" ] || continue
        best=$(awk -v a="$best" -v b="$(cat "$work/$i.$ext")" -v d="$dir" \
            'BEGIN { if (b !~ /^[0-9.eE+-]+$/) print a; else print (a == 0 || (d == "low" ? b < a : b > a)) ? b : a }')
    done
    echo "$best"
}
