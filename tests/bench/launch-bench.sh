#!/bin/bash
# launch-bench.sh: launch time across hosts made of network namespaces
# (tests/scripts/netlab.sh, each with its own sshd), for run-bench.sh's
# "launch" configuration (or alone).  The program is MPI_Init + MPI_Finalize
# (tests/mpi/core_init.c, built here); Kumi's mpiexec at 8, 64 and 256 ranks
# over 1 host (the head itself, no proxy), 4 and 8 hosts (one kumi_proxy
# per host over ssh), next to Open MPI's mpirun (plm_rsh_agent = the same
# ssh) over the same hosts, and MPICH's mpiexec (Hydra, -launcher ssh; its
# proxies reach the head over TCP, by the head's name h0 from each host's
# /etc/hosts).  Hydra's -launcher-exec is one file that it execs as is (no
# arguments: "ssh -F conf" fails with "execvp error on file ssh -F ...", and
# Hydra then hangs until killed), so it gets a two-line wrapper script.  Kumi's ranks use p2p self,shmem,tcp (p2p/ofi's
# start-up alone costs ~0.4 s of CPU per rank on a multi-host job here).
# The median of KUMI_BENCH_REPS runs (default 3) per cell; a run is limited
# to KUMI_BENCH_TIMEOUT seconds (default 120); KUMI_BENCH_LAUNCH_RANKS (8 64
# 256) and KUMI_BENCH_LAUNCH_HOSTS (1 4 8) choose the cells.  The last
# column is Kumi's time over the better of the other two.  Every host shares this
# machine's cores: the numbers show the launcher's cost, not a cluster's.
# Writes $KUMI_BENCH_OUT/launch.kumi.status (ok, or why not).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/_build}
out=${KUMI_BENCH_OUT:-$top_builddir/tests/bench-logs}
reps=${KUMI_BENCH_REPS:-3}
limit=${KUMI_BENCH_TIMEOUT:-120}
mkdir -p "$out" || exit 1
status() { echo "$1" > "$out/launch.kumi.status"; }
MPIEXEC=${KUMI_BENCH_MPIEXEC:-$top_builddir/tools/mpiexec/mpiexec}   # another build's, to compare
# In a build tree mpiexec is libtool's wrapper script (a bash that runs sed
# and sets LD_LIBRARY_PATH: 30-50 ms here, more than the difference to
# measure); the installed mpiexec is the program itself, so the bench runs
# the program behind the wrapper, with the wrapper's library path.
mpiexec_env=()
if grep -q "temporary wrapper script for" "$MPIEXEC" 2> /dev/null &&
    [ -x "$(dirname "$MPIEXEC")/.libs/$(basename "$MPIEXEC")" ]; then
    mpiexec_env=(env "LD_LIBRARY_PATH=$top_builddir/framework/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
    MPIEXEC=$(dirname "$MPIEXEC")/.libs/$(basename "$MPIEXEC")
fi
prog=$out/launch_hello
cc -O1 -I"$top_builddir/framework/include" -I"$top_srcdir/framework/include" -I"$top_srcdir/tests/mpi" \
    -o "$prog" "$top_srcdir/tests/mpi/core_init.c" -L"$top_builddir/framework/.libs" \
    -Wl,-rpath,"$top_builddir/framework/.libs" -lmpi 2> "$out/build.launch.err" ||
    { echo "launch: building core_init.c failed (see $out/build.launch.err)"; status "build failed"; exit 1; }
# MPICH's ranks: the same hello world, built with its mpicc, where it builds
mpich_prog=true
if command -v mpicc.mpich > /dev/null; then
    printf '#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n' \
        > "$out/launch_hello_other.c"
    mpicc.mpich -O1 -o "$out/launch_hello_mpich" "$out/launch_hello_other.c" 2>> "$out/build.launch.err" &&
        mpich_prog=$out/launch_hello_mpich
fi
(
    . "$top_srcdir/tests/scripts/netlab.sh"
    netlab_skip() { echo "launch: skipped: $*"; status ok; exit 0; }   # not a failure of Kumi
    netlab_up 8 || { status "the lab does not come up"; exit 1; }
    # Hydra's launcher: one executable, no arguments (see above)
    printf '#!/bin/sh\nexec %s "$@"\n' "$NETLAB_SSH" > "$out/netlab-ssh" && chmod +x "$out/netlab-ssh" ||
        { status "cannot write $out/netlab-ssh"; exit 1; }
    export KUMI_COMPONENT_PATH=${KUMI_COMPONENT_PATH:-$(ls -d "$top_builddir"/components/*/*/.libs | tr '\n' ':')}
    hosts() { # hosts ranks: "-host h1:q,h2:q,..." style list for Open MPI / Kumi
        local n=$1 r=$2 i l=
        for ((i = 1; i <= n; i++)); do l="$l${l:+,}h$i:$((r / n))"; done
        echo "$l"
    }
    one() { # command...: seconds, or "fail"
        local s e
        s=$(date +%s.%N)
        timeout "$limit" nsenter -t "${NETLAB_HOLD[0]}" -n -u -m --wd="$out" -- "$@" > "$out/launch.run.out" 2> "$out/launch.run.err" < /dev/null ||
            { echo fail; return; }
        e=$(date +%s.%N)
        echo "$e - $s" | bc
    }
    median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR == 0 || a[1] == "fail") print "-"; else printf "%.2f", a[int((NR + 1) / 2)]}'; }
    run1() { # impl ranks hosts: one run's seconds, "fail" or "n/a"
        local impl=$1 n=$2 h=$3
        case $impl in
        kumi) if [ "$h" = 1 ]; then
                  one "${mpiexec_env[@]}" "$MPIEXEC" -n "$n" -x MPI_COMPONENTS=p2p=self,shmem,tcp "$prog"
              else
                  one "${mpiexec_env[@]}" "$MPIEXEC" --launch-agent "$NETLAB_SSH" -host "$(hosts "$h" "$n")" \
                      -x MPI_COMPONENTS=p2p=self,shmem,tcp "$prog"
              fi ;;
        ompi) command -v mpirun.openmpi > /dev/null || { echo "n/a"; return; }
              if [ "$h" = 1 ]; then
                  one mpirun.openmpi --allow-run-as-root --oversubscribe -n "$n" true
              else
                  one mpirun.openmpi --allow-run-as-root --oversubscribe --mca plm_rsh_agent "$NETLAB_SSH" \
                      --host "$(hosts "$h" "$n")" -n "$n" true
              fi ;;
        mpich) command -v mpiexec.mpich > /dev/null || { echo "n/a"; return; }
              if [ "$h" = 1 ]; then
                  one mpiexec.mpich -n "$n" "$mpich_prog"
              else
                  one mpiexec.mpich -launcher ssh -launcher-exec "$out/netlab-ssh" -hosts "$(hosts "$h" "$n")" -n "$n" "$mpich_prog"
              fi ;;
        esac
    }
    # row ranks hosts: the three medians; the repetitions interleaved
    # (Kumi, Open MPI, MPICH, Kumi, ...) so that a slow moment of the
    # machine falls on all three alike; an implementation that failed once
    # is not run again for the row
    row() {
        local n=$1 h=$2 i impl v
        local -A t=([kumi]= [ompi]= [mpich]=)
        for ((i = 0; i < reps; i++)); do
            for impl in kumi ompi mpich; do
                [[ ${t[$impl]} == *fail* || ${t[$impl]} == *n/a* ]] && continue
                v=$(run1 "$impl" "$n" "$h")
                t[$impl]="${t[$impl]} $v"
            done
        done
        for impl in kumi ompi mpich; do
            if [[ ${t[$impl]} == *n/a* ]]; then echo "n/a"; else echo "$(echo "${t[$impl]}" | median)"; fi
        done | tr '\n' ' '
    }
    echo "launch time in seconds (median of $reps; '-' failed or timed out after $limit s)"
    echo "Kumi: hello world (MPI_Init + MPI_Finalize); Open MPI: /bin/true (no MPI), a lower bound of its own"
    [ "$mpich_prog" = true ] && echo "MPICH: /bin/true (its mpicc did not build the hello world)" ||
        echo "MPICH: the same hello world built with mpicc.mpich"
    echo "ratio: Kumi / the better of Open MPI and MPICH (<= 1.00: Kumi no slower)"
    ratio() { # kumi ompi mpich
        awk -v k="$1" -v o="$2" -v m="$3" 'function num(x) { return x ~ /^[0-9.]+$/ }
            BEGIN { b = -1; if (num(o)) b = o; if (num(m) && (b < 0 || m < b)) b = m
                    if (!num(k) || b <= 0) print "-"; else printf "%.2f", k / b }'
    }
    printf "  %-6s %-6s %10s %10s %10s %8s\n" ranks hosts Kumi "Open MPI" MPICH ratio
    for n in ${KUMI_BENCH_LAUNCH_RANKS:-8 64 256}; do
        for h in ${KUMI_BENCH_LAUNCH_HOSTS:-1 4 8}; do
            read -r k o m <<< "$(row "$n" "$h")"
            printf "  %-6s %-6s %10s %10s %10s %8s\n" "$n" "$h" "$k" "$o" "$m" "$(ratio "$k" "$o" "$m")"
        done
    done
    status ok
)
