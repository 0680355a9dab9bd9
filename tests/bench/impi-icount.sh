#!/bin/bash
# impi-icount: user-space instructions per MB of a large-message stream, p2p/impi vs Kumi's
# native tcp (issue 19: the IMPI path within 10 % of tcp for large messages), counted with
# valgrind --tool=callgrind (every rank's total Ir: user-space instructions), so independent of
# the machine's load (not part of make bench: run it by hand; no root, no lab: both on this
# host's loopback; perf stat's instructions:u is "not supported" in this machine's VM).
#   tcp   mpiexec -n 2, p2p=self,tcp;
#   impi  impi_server -n 2 and two `mpiexec -n 1 --impi-client K` (each host's only proc
#         reads its connection itself), MPI_BYTE: its external32 form is its native one.
# tests/bench/mpibench -m bw -s SIZE (4 MiB: windows of 4 messages) at -r 1 and -r 1+R: the
# difference of the instructions of both ranks (mpiexec not counted: with one proc a host
# relays nothing), over the difference of the bytes moved, is the cost of a MB with start-up and
# warm-up cancelled.  Blocking waits sleep at once (kumi_base_progress_spin / _yield 0), so
# that waiting for the socket costs next to nothing: the counts are the work per byte.
# Usage: top_builddir=... tests/bench/impi-icount.sh [R (default 3) [SIZE (default 4194304)]]
# Env: KUMI_COMPONENT_PATH (default: the build's components), KEEP=1 keeps the perf files.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
B=${top_builddir:-$top_srcdir/_build}
R=${1:-3}
S=${2:-4194304}
command -v valgrind > /dev/null || { echo "impi-icount: no valgrind"; exit 77; }
O=$(mktemp -d) || exit 1
if [ -n "${KEEP:-}" ]; then echo "impi-icount: callgrind files kept in $O"; else trap 'rm -rf "$O"' EXIT; fi
${CC:-cc} -std=gnu11 -O2 -I"$B/framework/include" -I"$top_srcdir/framework/include" -o "$O/mpibench" \
    "$here/mpibench.c" -L"$B/framework/.libs" -Wl,-rpath,"$B/framework/.libs" -lmpi || exit 1
export KUMI_INTERNAL_NO_PKGLIBDIR=1
export KUMI_COMPONENT_PATH=${KUMI_COMPONENT_PATH:-$(ls -d "$B"/components/*/*/.libs | tr '\n' ':')}
MPIEXEC=$B/tools/mpiexec/mpiexec SERVER=$B/tools/impi_server/impi_server
QUIET=(-x KUMI_BASE_PROGRESS_SPIN=0 -x KUMI_BASE_PROGRESS_SPIN_US=0 -x KUMI_BASE_PROGRESS_YIELD=0
       -x KUMI_BASE_PROGRESS_YIELD_US=0)
# each rank under callgrind, its file $O/<tag>.<rank>
cat > "$O/wrap" <<'EOF'
#!/bin/sh
f=$1; shift
exec valgrind --tool=callgrind --callgrind-out-file="$f.${KUMI_RANK:-x}" "$@"
EOF
chmod +x "$O/wrap"
sum() { # TAG -> instructions of every callgrind file $O/TAG.*
    cat "$O/$1".* 2> /dev/null | awk '$1 == "summary:" { s += $2 } END { printf "%.0f\n", s }'
}
run_tcp() { # TAG REPS
    timeout 300 "$MPIEXEC" --timeout 280 -n 2 -x MPI_COMPONENTS=p2p=self,tcp "${QUIET[@]}" \
        "$O/wrap" "$O/$1" "$O/mpibench" -m bw -s "$S" -r "$2" > "$O/$1.out" 2>&1
}
run_impi() { # TAG REPS
    rm -f "$O/port"
    timeout 300 "$SERVER" -n 2 -host 127.0.0.1 -portfile "$O/port" -timeout 60 > /dev/null 2>> "$O/$1.err" &
    local sp=$! hp
    for _ in $(seq 1 100); do [ -s "$O/port" ] && break; sleep 0.05; done
    hp=$(cat "$O/port" 2> /dev/null)
    timeout 290 "$MPIEXEC" --timeout 280 -n 1 --impi-client 1 --impi-server "$hp" "${QUIET[@]}" \
        "$O/wrap" "$O/$1.c1" "$O/mpibench" -m bw -s "$S" -r "$2" > /dev/null 2>> "$O/$1.err" &
    local pb=$!
    timeout 290 "$MPIEXEC" --timeout 280 -n 1 --impi-client 0 --impi-server "$hp" "${QUIET[@]}" \
        "$O/wrap" "$O/$1.c0" "$O/mpibench" -m bw -s "$S" -r "$2" > "$O/$1.out" 2>> "$O/$1.err"
    local rc=$?
    wait $pb || rc=1
    wait $sp
    return $rc
}
# bytes a run of REPS moves (mpibench's window and iteration counts, warm-up included)
iters=$(awk -v n="$S" 'function cl(v, lo, hi) { return v < lo ? lo : v > hi ? hi : v }
    BEGIN { w = cl(int(16777216 / n), 4, 64); it = cl(int(33554432 / (n * w)), 5, 100); if (it < 2) it = 2
            printf "%d %d\n", w, it + int(it / 10) + 1 }')
set -- $iters
win=$1 nwin=$2
mb=$(awk -v s="$S" -v w="$win" -v k="$nwin" -v r="$R" 'BEGIN { printf "%.3f", s * w * k * r / 1e6 }')
echo "impi-icount: mpibench bw $S B, window $win, $nwin windows a repetition; -r 1 vs -r $((R + 1)): $mb MB apart"
for path in tcp impi; do
    for reps in 1 $((R + 1)); do
        rm -f "$O/$path.$reps".*
        run_$path "$path.$reps" "$reps" || { echo "impi-icount: $path -r $reps failed"; tail -5 "$O/$path.$reps".out "$O/$path.$reps".err 2> /dev/null; exit 1; }
    done
    a=$(sum "$path.1") b=$(sum "$path.$((R + 1))")
    bw=$(awk '$1 == "bw" { print $4; exit }' "$O/$path.$((R + 1)).out")
    awk -v p="$path" -v a="$a" -v b="$b" -v mb="$mb" -v bw="$bw" \
        'BEGIN { printf "%-5s %14.0f instructions at -r 1, %14.0f at more: %10.0f per MB (bw %s MB/s)\n", p, a, b, (b - a) / mb, bw }' |
        tee -a "$O/res"
done
awk '{ v[$1] = $(NF - 5) } END { if (v["tcp"] > 0) printf "impi / tcp: %.2f x the instructions per MB\n", v["impi"] / v["tcp"] }' "$O/res"
