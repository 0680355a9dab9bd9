#!/bin/bash
# The io_uring schedule engine (KUMI_BASE_SCHED_ENGINE=uring, issue 21 item 1) over tcp
# (p2p=self,tcp) at 2, 3 and 4 ranks: the non-blocking and persistent collective tests and
# the CAD ring check their values, and each rank must have moved messages through io_uring
# (its KUMI_VERBOSE summary); sched_uring shows data arriving while the root stays outside
# MPI (asleep), sched_uring_busy while it computes; with kumi_base_sched_uring_unavailable=1
# the engine falls back to the loop engine
# with one KUMI_VERBOSE line per rank and the data does not move without the root.
# sched_uring_stream: messages around the size of a connection's stream receive buffer, many
# in flight, expected and unexpected: every byte checked, and the engine's summary must show
# messages received whole with their header and headers split between two receives.
# sched_uring_calc: the completion thread (kumi_base_sched_uring_thread=1, the default)
# finishes an MPI_Iallreduce's CALC and the sends after it while rank 0 sleeps or computes
# outside MPI (the other ranks report through files, no timing); with the thread off the
# ranks must not finish while rank 0 stays out (the check the test makes can fail); with one
# double ("small") rank 0's thread must have slept on the ring and taken over from there (its summary);
# "loop", 32 KiB operations started and computed through one after another, with
# kumi_base_sched_uring_hold=0 (the thread takes over whenever the application stays out): some doze of a
# completion thread, the application out of the library, must have ended at a completion on the ring.
# sched_uring_hold: the same at 2 ranks with the default (hold 1): both ranks compute, every CPU of
# the host is busy and the peer is at a loopback address, so the completion threads must hold off (their
# KUMI_VERBOSE=2 lines: held off on every rank, at most 30 take-overs in 300 operations, 260-280 per rank
# with hold 0; at most 15 dozes a thread, its looks every kumi_base_sched_uring_hold_doze_us: 30-35 with
# the 4 ms dozes), with 32 KiB and with 1 MiB messages; over a connection to the host's own non-loopback
# address (p2p_tcp_if_include, where the host has one: a wire to the engine) the same with 4 KiB
# messages (nothing there for the thread: the sends written whole by their start, the receives in the
# socket's buffer, no send after the CALC), but more than 300 take-overs of the 600 runs with 1 MiB ones
# (sends left to the ring, receives larger than the socket takes in unread; 350-580 here, 55-210 when a
# start did not end the thread's held doze) (engine.c, "When the uring thread holds off").
# sched_uring_direct: 40000-byte MPI_Ibcast rounds (rank 0 the root of the first half, rank 1 of the
# second), each with a computation, a wait and a barrier:
# rank 0 must have written (nearly) every send by its start call (its summary).
# sched_uring_gather: the same program, 1 MiB in the pipelined broadcast (segments of 64 KiB) at 2
# and 3 ranks, every byte checked: the root's segments are ready together (tuned's pipeline in a
# schedule) and rank 0 must have written them in gathered sends (its summary: sched/uring.c, flush_sends).
# sched_uring_calc loop1: 300 one-double MPI_Iallreduce computed through at 2 ranks, hold 0 (the
# threads take the operations over from the ring): no rank's completion thread may doze 150 times or more (its KUMI_VERBOSE=2 line; 30-33 now, 365-799 when every
# take-over from the ring brought the dozes back to 50 us: engine.c, "A take-over from the ring").
# Skipped (77) where liburing's headers are not installed (Debian: liburing-dev); where they
# are, Kumi must have been built with the engine.  Where io_uring is disabled on the host
# (sysctl kernel.io_uring_disabled), the fall-back is checked instead.
set -u
echo '#include <liburing.h>' | ${CC:-cc} -E - >/dev/null 2>&1 || { echo "SKIP: liburing-dev is not installed"; exit 77; }
lib=$top_builddir/framework/.libs/libmpi.so
ldd "$lib" 2>/dev/null | grep -q liburing || echo "libmpi is not linked with liburing: configure did not find it?"
export MPI_COMPONENTS=p2p=self,tcp KUMI_BASE_SCHED_ENGINE=uring
fail=0
run() {   # run NAME N PROG ARGS...: values checked by PROG; io_uring must have carried messages on every rank
    local name=$1 n=$2; shift 2
    out=$(cd "$TESTBIN" && KUMI_VERBOSE=1 timeout 150 "$MPIEXEC" --timeout 120 -n "$n" "$@" 2>&1)
    rc=$?
    used=$(echo "$out" | grep -cE 'sched_engine=uring: [1-9][0-9]* sends, [1-9][0-9]* receives')
    if [ $rc -ne 0 ] || [ "$used" -ne "$n" ]; then
        echo "$out" | grep -v '^kumi\[' | tail -20
        echo "FAIL $name -n $n: exit $rc, $used of $n ranks moved messages through io_uring"
        fail=1
    else
        echo "ok $name -n $n ($(echo "$out" | grep -E 'sched_uring(_busy)?: [0-9]+ ranks got|sched_uring_calc \(' || echo values checked))"
    fi
    # the CAD ring's forwarding (receive a chunk, send it on) is a chain: linked SQEs
    if [ "$name" = cad_ring ] && [ "$n" -ge 3 ]; then
        linked=$(echo "$out" | sed -n 's/.*, \([0-9]*\) sends linked behind their receive.*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
        [ "$linked" -gt 0 ] || { echo "FAIL cad_ring -n $n: no send was linked behind its receive"; fail=1; }
        echo "   cad_ring -n $n: $linked sends linked behind their receive"
    fi
    # an 8-byte MPI_Iallreduce while rank 0 stays out: its completion thread had nothing to
    # submit and slept on the ring until the messages came (engine.c, "The uring engine's thread")
    if [ "$name" = sched_uring_calc_small ]; then
        wakes=$(echo "$out" | grep '^kumi\[0\]' | sed -n 's/.*; \([0-9]*\) completion-thread take-overs from the ring.*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
        [ "$wakes" -gt 0 ] || { echo "FAIL sched_uring_calc small -n $n: rank 0's thread never took over from its sleep on the ring"; fail=1; }
        echo "   sched_uring_calc small -n $n: rank 0's thread took over $wakes times from the ring"
    fi
    # operations started while the completion thread dozed between them, the application then
    # computing: some doze watched the ring and ended at a completion (engine.c, esleep_wait);
    # required at 2 ranks (tens to hundreds a run; at 4 ranks on 2 cores as few as 2)
    if [ "$name" = sched_uring_calc_loop ]; then
        dw=$(echo "$out" | sed -n 's/.*, \([0-9]*\) dozes ended by a completion.*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
        [ "$dw" -gt 0 ] || [ "$n" -gt 2 ] ||
            { echo "FAIL sched_uring_calc loop -n $n: no doze of a completion thread ended at a completion"; fail=1; }
        echo "   sched_uring_calc loop -n $n: $dw dozes ended by a completion"
    fi
    # the stream receive: small messages whole with their header, headers split between two receives
    if [ "$name" = sched_uring_stream ]; then
        whole=$(echo "$out" | sed -n 's/.*, \([0-9]*\) received whole with their header.*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
        split=$(echo "$out" | sed -n 's/.*, \([0-9]*\) headers split between two receives.*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
        [ "$whole" -gt 0 ] && [ "$split" -gt 0 ] ||
            { echo "FAIL sched_uring_stream -n $n: $whole messages received whole with their header, $split headers split"; fail=1; }
        echo "   sched_uring_stream -n $n: $whole messages received whole with their header, $split headers split"
    fi
    # sends written by their start call: the budget is renewed at every entry of the application
    # (the root's MPI_Wait of a request already complete runs no progress round; renewed by
    # progress rounds alone, every second 40000-byte send waited in the submission queue)
    if [ "$name" = sched_uring_gather ]; then
        g=$(echo "$out" | grep '^kumi\[0\]' | sed -n 's/.*, \([0-9]*\) in \([0-9]*\) gathers,.*/\1 \2/p')
        set -- $g
        [ "${2:-0}" -gt 0 ] && [ "${1:-0}" -ge $((${2:-0} * 2)) ] ||
            { echo "FAIL sched_uring_gather -n $n: rank 0 wrote ${1:-?} sends in ${2:-?} gathered sends"; fail=1; }
        echo "   sched_uring_gather -n $n: rank 0 wrote ${1:-?} sends in ${2:-?} gathered sends"
    fi
    if [ "$name" = sched_uring_direct ]; then
        sw=$(echo "$out" | grep '^kumi\[0\]' | sed -n 's/.*: \([0-9]*\) sends, .*, \([0-9]*\) sent whole by their start call.*/\1 \2/p')
        set -- $sw
        [ "${1:-0}" -gt 0 ] && [ $((${2:-0} * 10)) -ge $((${1:-0} * 9)) ] ||
            { echo "FAIL sched_uring_direct -n $n: rank 0 wrote ${2:-?} of ${1:-?} sends whole by their start call (expected 90 % or more)"; fail=1; }
        echo "   sched_uring_direct -n $n: rank 0 wrote ${2:-?} of ${1:-?} sends whole by their start call"
    fi
}
if [ "$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)" != 0 ]; then
    echo "io_uring is disabled on this host: checking the fall-back only"
    out=$(cd "$TESTBIN" && KUMI_VERBOSE=1 timeout 150 "$MPIEXEC" -n 2 ./sched_uring noprogress 2>&1) || { echo "$out"; exit 1; }
    echo "$out" | grep -q 'io_uring_setup failed' || { echo "$out"; echo "no fall-back line"; exit 1; }
    exit 0
fi
for n in 2 3 4; do
    run sched_uring "$n" ./sched_uring progress
    run sched_uring_busy "$n" ./sched_uring_busy
    run sched_uring_calc "$n" ./sched_uring_calc sleep
    run sched_uring_calc "$n" ./sched_uring_calc busy
    # hold 0: the check is the thread's sleep on the ring; on a host that looks busy (more runnable
    # tasks than CPUs, as under CI's load) it would hold off instead and take over by its dozes
    # (failed once so in CI: 0 take-overs from the ring, values right; the hold: sched_uring_hold)
    KUMI_BASE_SCHED_URING_HOLD=0 run sched_uring_calc_small "$n" ./sched_uring_calc sleep small
    KUMI_BASE_SCHED_URING_HOLD=0 run sched_uring_calc_loop "$n" ./sched_uring_calc busy loop
    for t in nbc_basic nbc_persist cad_ring sched_uring_stream; do run "$t" "$n" "./$t"; done
done
run sched_uring_direct 2 ./sched_uring_direct
for n in 2 3; do
    run sched_uring_gather "$n" --param coll_tuned_bcast_algorithm=pipeline --param coll_tuned_segment_size=65536 \
        ./sched_uring_direct 20 1048576
done
out=$(cd "$TESTBIN" && KUMI_BASE_SCHED_URING_HOLD=0 KUMI_VERBOSE=2 timeout 150 "$MPIEXEC" --timeout 120 -n 2 ./sched_uring_calc busy loop1 2>&1)
rc=$?
dz=$(echo "$out" | sed -n 's/.*sched_engine=uring: the progress thread took [0-9]* schedule runs over, dozed \([0-9]*\) times.*/\1/p' | sort -n | tail -1)
if [ $rc -ne 0 ] || [ -z "$dz" ] || [ "$dz" -ge 150 ]; then
    echo "$out" | grep -v '^kumi\[' | tail -20
    echo "FAIL sched_uring_calc loop1 -n 2: exit $rc, a completion thread dozed ${dz:-?} times (expected under 150)"
    fail=1
else
    echo "ok sched_uring_calc loop1 -n 2: the completion threads dozed at most $dz times in 300 operations"
fi
# hold_check WHAT WANT DOUBLES [VAR=VALUE...]: "sched_uring_calc busy loop DOUBLES" at 2 ranks with that
# environment; WANT yes: every rank's completion thread held off, at most 30 take-overs and 15 dozes a
# rank; no: none held, some taken over; wire: more than 300 take-overs in all (across a wire the thread
# holds off between operations, when nothing is there for it to do, but takes an operation over whose
# bytes it keeps moving) (the KUMI_VERBOSE=2 lines: "took N schedule runs over, ...; held off N times")
hold_check() {
    local what=$1 want=$2 dbl=$3 rc held owns hranks ok=
    shift 3
    out=$(cd "$TESTBIN" && env "$@" KUMI_VERBOSE=2 timeout 150 "$MPIEXEC" --timeout 120 -n 2 ./sched_uring_calc busy loop $dbl 2>&1)
    rc=$?
    read -r held owns hranks towns dozes <<< "$(echo "$out" |
        sed -n 's/.*sched_engine=uring: the progress thread took \([0-9]*\) schedule runs over, dozed \([0-9]*\) times.*; held off \([0-9]*\) times.*/\3 \1 \2/p' |
        awk '{ h += $1; if ($1 > 0) r++; if ($2 > m) m = $2; t += $2; if ($3 > d) d = $3 }
             END { print h + 0, m + 0, r + 0, t + 0, d + 0 }')"
    if [ "$want" = yes ]; then [ "$hranks" -eq 2 ] && [ "$owns" -le 30 ] && [ "$dozes" -le 15 ] && ok=1
    elif [ "$want" = wire ]; then [ "$towns" -gt 300 ] && ok=1
    else [ "$held" -eq 0 ] && [ "$owns" -gt 0 ] && ok=1; fi
    if [ $rc -ne 0 ] || [ -z "$ok" ]; then
        echo "$out" | grep -v '^kumi\[' | tail -20
        echo "FAIL sched_uring_hold $what -n 2: exit $rc, $hranks of 2 ranks held off ($held times), $towns take-overs in all, at most $owns a rank, at most $dozes dozes (expected $(case $want in yes) echo 'every rank, at most 30 take-overs and 15 dozes' ;; wire) echo 'over 300 take-overs in all' ;; *) echo 'none held, some take-overs' ;; esac))"
        fail=1
    else
        echo "ok sched_uring_hold $what -n 2: $hranks of 2 ranks held off ($held times), $towns take-overs in all, at most $owns a rank, at most $dozes dozes in 300 operations"
    fi
}
hold_check "over loopback" yes 4096
hold_check "over loopback, 1 MiB" yes 131072
hold_check "over loopback, switched off" no 4096 KUMI_BASE_SCHED_URING_HOLD=0
# through the host's own non-loopback address (a wire, to the engine): 4 KiB messages (an exchange and a
# CALC at 2 ranks; more than the stream receive takes with the header, less than the socket takes in
# unread) leave the thread nothing to do (held); 1 MiB ones (their sends left to the ring, receives
# larger than the socket takes in unread, and a second phase of sends after the CALC) are taken over
ifc=$(ip -4 -o addr show scope global 2>/dev/null | awk '{ print $2; exit }')
if [ -n "$ifc" ]; then
    hold_check "over $ifc, 4 KiB" yes 512 KUMI_P2P_TCP_IF_INCLUDE="$ifc"
    hold_check "over $ifc, 1 MiB" wire 131072 KUMI_P2P_TCP_IF_INCLUDE="$ifc"
else echo "   sched_uring_hold over a non-loopback address: skipped (no global IPv4 address on this host)"; fi
run nbc_types 3 ./nbc_types
run nbc_multi 4 ./nbc_multi
# the engine's connections to loopback use kumi_base_sched_uring_loopback_cc (reno by default,
# as the tcp transport's; the system's BBR held 1 MiB messages back), the system's when empty
ccs() {   # the congestion controls of the engine's connections (KUMI_VERBOSE=2 lines), sorted
    (cd "$TESTBIN" && KUMI_VERBOSE=2 timeout 150 "$MPIEXEC" --timeout 120 -n 2 "$@" ./nbc_basic 2>&1) |
        sed -n 's/.*sched_engine=uring: connection with rank [0-9]* up (congestion control \([a-z0-9_?]*\)).*/\1/p' | sort | uniq -c | tr -s ' ' | tr '\n' ';'
}
cc=$(ccs)
case "$cc" in " 2 reno;") echo "ok loopback congestion control: $cc" ;;
              *) echo "FAIL loopback congestion control: expected reno on both ends, got '$cc'"; fail=1 ;; esac
sys=$(cat /proc/sys/net/ipv4/tcp_congestion_control 2> /dev/null)
if [ -n "$sys" ] && [ "$sys" != reno ]; then
    cc=$(ccs --param kumi_base_sched_uring_loopback_cc=)
    case "$cc" in " 2 $sys;") echo "ok loopback congestion control empty: $cc" ;;
                  *) echo "FAIL kumi_base_sched_uring_loopback_cc= : expected $sys on both ends, got '$cc'"; fail=1 ;; esac
fi
# without the completion thread the CALC waits for rank 0's next MPI call
out=$(cd "$TESTBIN" && KUMI_BASE_SCHED_URING_THREAD=0 timeout 150 "$MPIEXEC" --timeout 120 -n 2 \
      ./sched_uring_calc sleep noprogress 2>&1)
if [ $? -ne 0 ]; then echo "$out" | tail -20; echo "FAIL sched_uring_calc noprogress"; fail=1
else echo "ok sched_uring_calc without the thread: $(echo "$out" | grep -E 'sched_uring_calc \(')"; fi
# fall-back: one line per rank, the loop engine (no movement without the root), values right
for n in 2 3; do
    out=$(cd "$TESTBIN" && KUMI_VERBOSE=1 KUMI_BASE_SCHED_URING_UNAVAILABLE=1 timeout 150 "$MPIEXEC" --timeout 120 \
          -n "$n" ./sched_uring noprogress 2>&1)
    rc=$?
    lines=$(echo "$out" | grep -c 'io_uring is unavailable.*collectives use the loop engine')
    if [ $rc -ne 0 ] || [ "$lines" -ne "$n" ] || echo "$out" | grep -q 'sends,.*receives'; then
        echo "$out" | tail -20
        echo "FAIL fall-back -n $n: exit $rc, $lines fall-back lines for $n ranks"
        fail=1
    else
        echo "ok fall-back -n $n"
    fi
done
exit $fail
