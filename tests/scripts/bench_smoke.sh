#!/bin/bash
# The benchmark programs (tests/bench/mpibench.c, tests/bench/collbench.c) build
# against Kumi, run every metric / collective at tiny sizes, and print their
# documented format with sane values (collbench's ibcast / iallreduce too); collbench
# fails on a wrong result; and
# run-bench.sh (what `make bench` runs) produces its tables with Kumi alone, as
# do the configuration scripts on tests/bench/bench-common.sh (match-, mem-,
# io-, kacc-bench.sh); overlap.c's matrix kernels give its format-2 lines.
set -u
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2086
$MPICC -std=gnu11 -O1 -Wall -Wextra -o "$work/mpibench" "$top_srcdir/tests/bench/mpibench.c" -lmpi 2> "$work/cc.err" ||
    fail "mpibench does not build: $(cat "$work/cc.err")"
[ -s "$work/cc.err" ] && fail "mpibench builds with warnings: $(cat "$work/cc.err")"

sizes=0,1,4095,4097,65537
out=$(timeout 120 "$MPIEXEC" -n 2 "$work/mpibench" -m lat,bw,bibw,rate -s $sizes -r 3 -x 0.005 2>&1) ||
    fail "mpibench run failed: $out"
echo "$out"
echo "$out" | head -1 | grep -Eq '^# mpibench 1 ranks=2 reps=3 scale=0.005 library=Kumi ' || fail "bad header line"
echo "$out" | tail -1 | grep -qx '# done' || fail "no '# done' line at the end"
# every data line: METRIC BYTES ITERS MEDIAN MIN MAX UNIT, min <= median <= max, unit per metric
echo "$out" | awk '
    /^#/ { next }
    NF != 7 { print "bad line: " $0; bad = 1; next }
    {
        u["lat"] = "us"; u["bw"] = "MB/s"; u["bibw"] = "MB/s"; u["rate"] = "Mmsg/s"
        if (!($1 in u) || u[$1] != $7) { print "bad metric or unit: " $0; bad = 1 }
        if ($2 !~ /^[0-9]+$/ || $3 !~ /^[0-9]+$/ || $3 < 2) { print "bad size or iteration count: " $0; bad = 1 }
        if (!($5 + 0 <= $4 + 0 && $4 + 0 <= $6 + 0)) { print "median not within min..max: " $0; bad = 1 }
        if ($5 + 0 <= 0) { print "non-positive value: " $0; bad = 1 }
        n[$1]++
    }
    END {
        if (n["lat"] != 5 || n["bw"] != 4 || n["bibw"] != 4 || n["rate"] != 4) {
            printf "line counts lat %d bw %d bibw %d rate %d, expected 5 4 4 4\n", n["lat"], n["bw"], n["bibw"], n["rate"]; bad = 1
        }
        exit bad
    }' || fail "mpibench output format"

# ring: all ranks take part
out=$(timeout 120 "$MPIEXEC" -n 3 "$work/mpibench" -m ring -r 1 -x 0.01 2>&1) || fail "ring run failed: $out"
echo "$out"
[ "$(echo "$out" | grep -Ec '^ring (8|65536) [0-9]+ [0-9.e+]+ [0-9.e+]+ [0-9.e+]+ us$')" = 2 ] || fail "ring lines"

# bad arguments: an error, not a hang or a crash
out=$(timeout 60 "$MPIEXEC" -n 2 "$work/mpibench" -s 12,x 2>&1)
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "bad size list: exit $rc"
echo "$out" | grep -q "bad size list" || fail "bad size list: no message: $out"

# collbench: every collective, 2 and 3 ranks (size 0: barrier only)
# shellcheck disable=SC2086
$MPICC -std=gnu11 -O1 -Wall -Wextra -o "$work/collbench" "$top_srcdir/tests/bench/collbench.c" -lmpi 2> "$work/cc.err" ||
    fail "collbench does not build: $(cat "$work/cc.err")"
[ -s "$work/cc.err" ] && fail "collbench builds with warnings: $(cat "$work/cc.err")"
for np in 2 3; do
    out=$(timeout 120 "$MPIEXEC" -n $np "$work/collbench" -s 0,1,8,4097 -r 3 -x 0.001 2>&1) ||
        fail "collbench run on $np ranks failed: $out"
    echo "$out"
    echo "$out" | head -1 | grep -Eq "^# collbench 1 ranks=$np reps=3 scale=0.001 library=Kumi " || fail "collbench: bad header line"
    echo "$out" | tail -1 | grep -qx '# done' || fail "collbench: no '# done' line at the end"
    # every data line: OP BYTES ITERS MEDIAN MIN MAX us, min <= median <= max
    echo "$out" | awk '
        /^#/ { next }
        NF != 7 || $7 != "us" { print "bad line: " $0; bad = 1; next }
        {
            if ($1 !~ /^(bcast|allreduce|allgather|alltoall|barrier)$/) { print "bad operation: " $0; bad = 1 }
            if ($2 !~ /^[0-9]+$/ || $3 !~ /^[0-9]+$/ || $3 < 5) { print "bad size or iteration count: " $0; bad = 1 }
            if (($1 == "barrier") != ($2 == 0)) { print "size 0 for barrier alone: " $0; bad = 1 }
            if (!($5 + 0 <= $4 + 0 && $4 + 0 <= $6 + 0)) { print "median not within min..max: " $0; bad = 1 }
            if ($5 + 0 <= 0) { print "non-positive value: " $0; bad = 1 }
            n[$1]++
        }
        END {
            if (n["bcast"] != 3 || n["allreduce"] != 3 || n["allgather"] != 3 || n["alltoall"] != 3 || n["barrier"] != 1) {
                printf "line counts bcast %d allreduce %d allgather %d alltoall %d barrier %d, expected 3 3 3 3 1\n",
                    n["bcast"], n["allreduce"], n["allgather"], n["alltoall"], n["barrier"]; bad = 1
            }
            exit bad
        }' || fail "collbench output format ($np ranks)"
done
# a wrong result (-f: the last rank spoils one element) is caught: a message and a failure
# the non-blocking ones waited at once (not in the default list)
out=$(timeout 120 "$MPIEXEC" -n 3 "$work/collbench" -m ibcast,iallreduce -s 8 -r 3 -x 0.001 2>&1) ||
    fail "collbench -m ibcast,iallreduce failed: $out"
for op in ibcast iallreduce; do
    echo "$out" | grep -Eq "^$op 8 [0-9]+ [0-9.e+-]+ [0-9.e+-]+ [0-9.e+-]+ us$" || fail "collbench: no $op line: $out"
done
for op in allreduce alltoall iallreduce; do
    out=$(timeout 60 "$MPIEXEC" -n 3 "$work/collbench" -m $op -s 4097 -r 1 -x 0.001 -f $op 2>&1)
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "collbench -f $op: exit $rc"
    echo "$out" | grep -q "collbench: $op 4097 bytes on 3 ranks: wrong result on rank 2 at element" ||
        fail "collbench -f $op: no message: $out"
    echo "$out" | grep -q "^$op " && fail "collbench -f $op: a wrong result was timed: $out"
done

# the driver of `make bench`, Kumi alone, tiny
out=$(KUMI_BENCH_PEERS=none KUMI_BENCH_QUICK=1 KUMI_BENCH_SIZES=0,4095,4097 KUMI_BENCH_REPS=1 \
      KUMI_BENCH_COLL_SIZES=8,4097 KUMI_BENCH_CONFIGS="shm tcp coll" KUMI_BENCH_OUT="$work/logs" \
      timeout 200 bash "$top_srcdir/tests/bench/run-bench.sh" 2>&1) ||
    fail "run-bench.sh failed: $out"
echo "$out"
for t in "shm: latency" "shm: uni-directional bandwidth" "tcp: bi-directional bandwidth" "tcp: message rate" \
         "coll2: MPI_Bcast" "coll2: MPI_Allreduce" "coll2: MPI_Allgather" "coll2: MPI_Alltoall" "coll2: MPI_Barrier" \
         "coll4: MPI_Bcast" "coll4: MPI_Allreduce" "coll4: MPI_Allgather" "coll4: MPI_Alltoall" "coll4: MPI_Barrier"; do
    echo "$out" | grep -q -- "-- $t" || fail "run-bench.sh: no table '$t'"
done
echo "$out" | grep -Eq '^ +4097 +[0-9.e+]+$' || fail "run-bench.sh: no row for 4097 bytes"
# table TITLE: the lines of one table
table() { echo "$out" | awk -v t="-- $1" 'index($0, t) == 1 { f = 1; next } /^(--|==)/ { f = 0 } f'; }
table "coll4: MPI_Alltoall" | grep -Eq '^ +4097 +[0-9.e+]+$' || fail "run-bench.sh: no coll4 alltoall row for 4097 bytes"
table "coll2: MPI_Barrier" | grep -Eq '^ +0 +[0-9.e+]+$' || fail "run-bench.sh: no coll2 barrier row"
# match-bench.sh (the match configuration), Kumi alone, small counts
out=$(KUMI_BENCH_PEERS=none KUMI_BENCH_QUICK=1 KUMI_BENCH_REPS=1 KUMI_BENCH_MATCH_COMMS=50 KUMI_BENCH_MATCH_UE=2000 \
      KUMI_BENCH_OUT="$work/mlogs" timeout 200 bash "$top_srcdir/tests/bench/match-bench.sh" 2>&1) ||
    fail "match-bench.sh failed: $out"
echo "$out"
echo "$out" | grep -Eq '^  Kumi +[0-9.]+ +[0-9.]+ \([0-9.]+x\) +[0-9.]+ \([0-9.]+x\)$' ||
    fail "match-bench.sh: no Kumi row with base, comms and ue latencies"
[ "$(cat "$work/mlogs/match.kumi.status")" = ok ] || fail "match-bench.sh: status not ok"
# mem-bench.sh (the mem configuration), Kumi alone, 2 and 3 ranks
out=$(KUMI_BENCH_PEERS=none KUMI_BENCH_QUICK=1 KUMI_BENCH_MEM_RANKS="2 3" KUMI_BENCH_OUT="$work/memlogs" \
      timeout 200 bash "$top_srcdir/tests/bench/mem-bench.sh" 2>&1) || fail "mem-bench.sh failed: $out"
echo "$out"
echo "$out" | grep -Eq '^  Kumi +[0-9.]+ / [0-9.]+ +[0-9.]+ / [0-9.]+$' || fail "mem-bench.sh: no Kumi row at 2 and 3 ranks"
[ "$(cat "$work/memlogs/mem.kumi.status")" = ok ] || fail "mem-bench.sh: status not ok"
# io-bench.sh (the io configuration), Kumi alone and with its two-phase writes and reads forced, 4 MiB
out=$(KUMI_BENCH_PEERS=none KUMI_BENCH_REPS=1 KUMI_BENCH_IO_MIB=4 KUMI_BENCH_IO_TWOPHASE=1 \
      KUMI_BENCH_OUT="$work/iologs" timeout 200 bash "$top_srcdir/tests/bench/io-bench.sh" 2>&1) || fail "io-bench.sh failed: $out"
echo "$out"
echo "$out" | grep -Eq '^  Kumi +[0-9.]+ +[0-9.]+$' || fail "io-bench.sh: no Kumi row"
echo "$out" | grep -Eq '^  Kumi \(romio_cb_\*=enable\) +[0-9.]+ +[0-9.]+$' || fail "io-bench.sh: no two-phase row"
[ "$(cat "$work/iologs/io.kumi.status")" = ok ] || fail "io-bench.sh: status not ok"
# overlap.c: the matrix kernels and the format-2 columns; a bad kernel is an error
# shellcheck disable=SC2086
$MPICC -std=gnu11 -O1 -Wall -Wextra -o "$work/overlap" "$top_srcdir/tests/bench/overlap.c" -lmpi 2> "$work/cc.err" ||
    fail "overlap does not build: $(cat "$work/cc.err")"
[ -s "$work/cc.err" ] && fail "overlap builds with warnings: $(cat "$work/cc.err")"
out=$(timeout 120 "$MPIEXEC" -n 2 "$work/overlap" -s 8,4096 -k 0,2 -r 1 -c mm4 -o ibcast -t 20 2>&1) || fail "overlap -c mm4 failed: $out"
echo "$out"
echo "$out" | head -1 | grep -q '^# overlap 2 ranks=2 reps=1 iter_us=[0-9.]* kernel=mm4 library=Kumi' || fail "overlap: bad header"
[ "$(echo "$out" | awk '$1 == "ovl" && $2 == "ibcast" && NF == 12 && $10 >= 0 && $10 <= 100 && $11 > 0 && $12 > 0' | wc -l)" = 4 ] ||
    fail "overlap: expected 4 ibcast lines of 12 fields"
echo "$out" | grep -q '^ovl iallreduce' && fail "overlap -o ibcast ran iallreduce"
out=$(timeout 60 "$MPIEXEC" -n 2 "$work/overlap" -c mm5 2>&1)
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "overlap -c mm5: exit $rc"
echo "$out" | grep -q "the compute kernel is vec, mm4 or mm40" || fail "overlap -c mm5: no message: $out"
# kacc-bench.sh (the kacc configuration), Kumi's engines alone, tiny
out=$(KUMI_BENCH_PEERS=none KUMI_BENCH_QUICK=1 KUMI_BENCH_REPS=1 KUMI_BENCH_KACC_SIZES=8,4096 KUMI_BENCH_KACC_K=0,4 \
      KUMI_BENCH_KACC_KERNELS=mm4 KUMI_BENCH_KACC_OPS="iallreduce ibcast-pipe" KUMI_BENCH_KACC_MIN_US=50 \
      KUMI_BENCH_OUT="$work/kacclogs" timeout 300 bash "$top_srcdir/tests/bench/kacc-bench.sh" 2>&1) ||
    fail "kacc-bench.sh failed: $out"
echo "$out"
for t in "kacc: iallreduce, 4 x 4 products" "kacc: ibcast-pipe, 4 x 4 products"; do
    echo "$out" | grep -q -- "-- $t" || fail "kacc-bench.sh: no table '$t'"
done
for e in loop thread; do
    [ "$(echo "$out" | grep -Ec "^ +(8|4096)  Kumi $e +(0|4) +[0-9.e+]+ +[0-9.e+]+ ")" = 8 ] ||
        fail "kacc-bench.sh: expected 8 rows of Kumi $e"
done
[ -c /dev/kumi_kacc ] || echo "$out" | grep -q "Kumi kmod: not loaded here" || fail "kacc-bench.sh: no word on kmod"
[ "$(cat "$work/kacclogs/kacc.kumi.status")" = ok ] || fail "kacc-bench.sh: status not ok"
# kacc-bench.sh wire and vm (the kaccwire and kaccvm configurations): their tables from a VM's console log
# (KUMI_BENCH_KACCVM_CONSOLE; no VM here): one launch per engine of allreduce and ibcast.
# kmod's launch computed longer (2100 us) and completed later (2120 us) than thread's
# (2000, 2050), but sooner against its own compute (d/cmp 1.010 against 1.025): "done no
# later than thread" compares d/cmp.  The ranks were on a wire (KUMI_BENCH_KACCVM_LINK): the
# header names it, the counters give the bytes on the wire (wire_MB) and the bindings
{
    echo "KMODVM: kernel 6.1.0-test, 2 CPUs"
    echo "KMODVM: bench: link 1gbit: veth h1 10.77.0.1 -- h2 10.77.0.2, tbf burst 125000 B each way; qdisc tbf 8001: root"
    for e in loop thread uring kmod; do
        for op in iallreduce ibcast; do
            if [ $e = kmod ]; then echo "KMODVM-BENCH: kumi-$e mm4.iallreduce,ibcast-tree ovl $op 1048576 0 100 2100 2120 95.0 30 1.0 2120 400"
            else echo "KMODVM-BENCH: kumi-$e mm4.iallreduce,ibcast-tree ovl $op 1048576 0 100 2000 2050 95.0 30 2.5 2050 400"; fi
        done
        echo "KMODVM-BENCHSTAT: kumi-$e mm4.iallreduce,ibcast-tree rc=0 secs=9 runs_done=$([ $e = kmod ] && echo 12 || echo 0) nodes=0 user_nodes=0 ranks_kernel_runs=0 engine_fallbacks=0 work_us_own=$([ $e = kmod ] && echo 70 || echo 0) work_us_other=$([ $e = kmod ] && echo 30 || echo 0) wire_bytes=$([ $e = kmod ] && echo 4200000 || echo 4300000)"
        echo "KMODVM-BENCHBIND: kumi-$e mm4.iallreduce,ibcast-tree net:[4026532200] cpus 0 net:[4026532300] cpus 1 "
    done
    echo "KMODVM-STAT: runs_done 12"
    echo "KMODVM: PASS insmod"
} > "$work/console.log"
# the same run's host and loopback tables (kacc, kaccvm) give the VM's slowdown: 1 MiB
# MPI_Iallreduce alone, loop engine, 200 us on the host, 6000 us in the VM: 30 times, so
# the 1gbit wire is to the vCPUs what 30 Gbit/s is to the host's CPUs
mkdir -p "$work/kaccvmlogs"
printf -- '-- kacc: iallreduce, 4 x 4 products\n   1048576  Kumi loop        0  500 700 0 10 191 695 1.371 200\n' > "$work/kaccvmlogs/kacc.txt"
printf -- '-- kaccvm: iallreduce, 4 x 4 products\n   1048576  Kumi loop        0  1.5e5 1.6e5 0 2 7000 1.6e5 1.05 6000\n' > "$work/kaccvmlogs/kaccvm.txt"
out=$(KUMI_BENCH_KACCVM_CONSOLE="$work/console.log" KUMI_BENCH_KACC_SIZES=1048576 KUMI_BENCH_KACC_KERNELS=mm4 \
      KUMI_BENCH_OUT="$work/kaccvmlogs" timeout 60 bash "$top_srcdir/tests/bench/kacc-bench.sh" wire 2>&1) ||
    fail "kacc-bench.sh wire failed: $out"
echo "$out"
for t in "kaccwire: iallreduce, 4 x 4 products" "kaccwire: ibcast-tree, 4 x 4 products" "kaccwire: the module's counters"; do
    echo "$out" | grep -q -- "-- $t" || fail "kacc-bench.sh wire: no table '$t'"
done
echo "$out" | grep -q "6000 us in the VM (kaccvm) and 200 us on the host (kacc): the VM does this work 30 times slower, so its 1gbit wire is, to the CPUs, a 30.0 Gbit/s link on the host" ||
    fail "kacc-bench.sh wire: no slowdown factor of the VM"
[ "$(echo "$out" | grep -Ec '^ +1048576  Kumi (loop|thread|uring) +0 +2000 +2050 +95 .* 2050 +1\.025 ')" = 6 ] &&
    [ "$(echo "$out" | grep -Ec '^ +1048576  Kumi kmod +0 +2100 +2120 +95 .* 2120 +1\.010 ')" = 2 ] ||
    fail "kacc-bench.sh vm: expected 8 rows with d/cmp"
echo "$out" | grep -Eq '^  Kumi kmod +1 +0 +12 .* 70 +30 +4\.2 +0\.0 +0\.0 +0\.0$' || fail "kacc-bench.sh vm: no counters of the kmod launches"
echo "$out" | grep -q '2 ranks over TCP (a veth pair between two network namespaces, tbf 1gbit each way, burst 125000 B) in a QEMU' ||
    fail "kacc-bench.sh vm: the wire is not named"
echo "$out" | grep -q 'the ranks (net namespace, CPUs): 4 launches: net:\[4026532200\] cpus 0 net:\[4026532300\] cpus 1' ||
    fail "kacc-bench.sh vm: the ranks' bindings on the wire are not shown"
grep -q '^kaccwire|kmod engine, iallreduce 1048576 B, 4x4 products, k=0: less CPU lost and done no later than thread .*|1|1$' \
    "$work/kaccvmlogs/targets" || fail "kacc-bench.sh wire: kmod's done/compute not compared: $(cat "$work/kaccvmlogs/targets")"
grep -q '^kaccwire|kmod engine, iallreduce 1 MiB, 4x4 products, k=0, on a 1gbit wire: overlap >= 50 % .*|1|1$' "$work/kaccvmlogs/targets" ||
    fail "kacc-bench.sh wire: no kmod overlap target met: $(cat "$work/kaccvmlogs/targets")"
# over loopback (the console names no link): the engines compared, no overlap target (the
# communication is the computing vCPUs' own work), and the reason printed
grep -v 'KMODVM: bench: link\|KMODVM-BENCHBIND' "$work/console.log" > "$work/console-lo.log"
out=$(KUMI_BENCH_KACCVM_CONSOLE="$work/console-lo.log" KUMI_BENCH_KACC_SIZES=1048576 KUMI_BENCH_KACC_KERNELS=mm4 \
      KUMI_BENCH_OUT="$work/kaccvmlo" timeout 60 bash "$top_srcdir/tests/bench/kacc-bench.sh" vm 2>&1) ||
    fail "kacc-bench.sh vm failed: $out"
echo "$out" | grep -q '2 ranks over TCP (loopback) in a QEMU' || fail "kacc-bench.sh vm: loopback not named"
# kaccwire whose link failed: its overlap target is there, not met, and says why
{ cat "$work/console-lo.log"; echo "KMODVM: FAIL bench-link (300mbit: veth / tbf / namespaces not set up)"; } > "$work/console-nolink.log"
KUMI_BENCH_KACCVM_CONSOLE="$work/console-nolink.log" KUMI_BENCH_KACC_SIZES=1048576 KUMI_BENCH_KACC_KERNELS=mm4 \
    KUMI_BENCH_OUT="$work/kaccnolink" timeout 60 bash "$top_srcdir/tests/bench/kacc-bench.sh" wire > /dev/null 2>&1
grep -q '^kaccwire|kmod engine, iallreduce 1 MiB, 4x4 products, k=0, on a wire: overlap >= 50 % (THE LINK WAS NOT SET UP)|0|1$' \
    "$work/kaccnolink/targets" || fail "kacc-bench.sh wire without its link: $(cat "$work/kaccnolink/targets" 2>&1)"
echo "$out" | grep -q 'the overlap target is measured on a wire, configuration kaccwire' || fail "kacc-bench.sh vm: no word on the overlap target"
grep -q '^kaccvm|kmod engine, iallreduce 1048576 B, 4x4 products, k=0: less CPU lost .*|1|1$' "$work/kaccvmlo/targets" &&
    ! grep -q 'overlap >= 50' "$work/kaccvmlo/targets" ||
    fail "kacc-bench.sh vm: loopback's targets: $(cat "$work/kaccvmlo/targets")"
echo "bench_smoke: ok"
