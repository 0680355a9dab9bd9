#!/bin/sh
# /init of the KACC test VM (tests/scripts/kmod_vm.sh): loads the module, runs Kumi's
# non-blocking / persistent collective tests and the CAD ring with the kmod engine over
# loopback TCP, the probe's checks (kacc_probe), unloads the module and powers off.
# Every verdict is a line "KMODVM: PASS name ..." or "KMODVM: FAIL name ..." on the console.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/shm /tmp
mount -t tmpfs tmpfs /dev/shm
# /tmp stays the initramfs's own directory (writable, in memory): a tmpfs
# mounted over it would hide Kumi's tree when the checkout lives under /tmp
# (CI clones into /tmp/ci-clone)
ip link set lo up
. /kmodvm.env                           # INST, TESTBIN, PROBE, NS, TESTS
say() { echo "KMODVM: $*"; }
stat_of() { sed -n "s/^$1 //p" /proc/kumi_kacc; }
say "kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs"
if insmod /mods/kumi-kacc.ko && [ -c /dev/kumi_kacc ]; then say "PASS insmod"; else say "FAIL insmod"; poweroff -f; fi
export MPI_COMPONENTS=p2p=self,tcp KUMI_BASE_SCHED_ENGINE=kmod LD_LIBRARY_PATH=$INST/lib HOME=/tmp
MPIEXEC=$INST/bin/mpiexec
cd "$TESTBIN"
for n in $NS; do
    for t in $TESTS; do
        case " $USER_TESTS " in *" $t "*) [ "$n" = "${NS%% *}" ] || continue ;; esac   # at the first size only
        r0=$(stat_of runs_done); b0=$(stat_of bytes_recv); u0=$(stat_of user_nodes); s=$(date +%s)
        out=$(KUMI_VERBOSE=${VERBOSE:-1} timeout 100 $MPIEXEC --timeout ${JOB_TIMEOUT:-90} -n $n ./$t 2>&1); rc=$?
        r1=$(stat_of runs_done); b1=$(stat_of bytes_recv); u1=$(stat_of user_nodes); e=$(date +%s)
        used=$(echo "$out" | grep -cE 'sched_engine=kmod: [1-9][0-9]* schedule runs in the kernel')
        # nbc_types (derived datatypes, a user-defined op): some node steps must be the ranks'
        steps=1; case " $USER_TESTS " in *" $t "*) [ $((u1 - u0)) -gt 0 ] || steps=0 ;; esac
        if [ $rc = 0 ] && [ "$used" = "$n" ] && [ $((r1 - r0)) -gt 0 ] && [ $((b1 - b0)) -gt 0 ] && [ $steps = 1 ]; then
            say "PASS $t-$n ($((e - s)) s; module: $((r1 - r0)) runs, $((b1 - b0)) bytes received, $((u1 - u0)) node steps left to the ranks)"
        else
            echo "$out" | tail -25 | sed 's/^/KMODVM-OUT: /'
            say "FAIL $t-$n (exit $rc; $used of $n ranks ran schedules in the kernel; module: $((r1 - r0)) runs, $((b1 - b0)) bytes)"
        fi
    done
done
# a rank killed while its schedules run: the module frees its context, sockets and pages
if [ -n "$NS" ] && [ -x ./nbc_persist ]; then
    k0=$(stat_of runs)
    timeout 100 $MPIEXEC --timeout 90 -n 2 ./nbc_persist > /tmp/kill.out 2>&1 &
    i=0; while [ $i -lt 200 ] && { [ $(($(stat_of runs) - k0)) -lt 100 ] || [ "$(stat_of pinned_pages)" = 0 ]; }; do
        sleep 0.05; i=$((i + 1)); done
    pinned=$(stat_of pinned_pages); kr=$(($(stat_of runs) - k0))
    victim=$(pidof nbc_persist | tr ' ' '\n' | sort -n | tail -1)
    [ -n "$victim" ] && kill -9 $victim
    wait
    i=0; while [ $i -lt 100 ] && { [ "$(stat_of contexts)" != 0 ] || [ "$(stat_of pinned_pages)" != 0 ]; }; do sleep 0.1; i=$((i + 1)); done
    if [ -n "$victim" ] && [ "$pinned" != 0 ] && [ "$(stat_of contexts)" = 0 ] && [ "$(stat_of pinned_pages)" = 0 ]; then
        say "PASS rank-killed-freed (a rank killed after $kr schedule runs, with $pinned pages pinned; contexts 0, pages 0 after)"
    else
        say "FAIL rank-killed-freed (victim '$victim', pinned $pinned; now contexts $(stat_of contexts), pages $(stat_of pinned_pages))"
    fi
fi
# an ABI the library does not expect: one line per rank, the loop engine, values right
if [ -n "$TESTS" ]; then
    r0=$(stat_of runs)
    out=$(KUMI_VERBOSE=1 KUMI_BASE_SCHED_KMOD_ABI=999 timeout 100 $MPIEXEC --timeout 90 -n 2 ./${TESTS%% *} 2>&1); rc=$?
    lines=$(echo "$out" | grep -c "the KACC module does not match: the module's ABI is version [0-9]*, this library's 999; collectives use the loop engine")
    if [ $rc = 0 ] && [ "$lines" = 2 ] && [ "$(stat_of runs)" = "$r0" ]; then say "PASS abi-mismatch-fallback"
    else echo "$out" | tail -10 | sed 's/^/KMODVM-OUT: /'; say "FAIL abi-mismatch-fallback (exit $rc, $lines lines)"; fi
fi
# the probe: the module alone (CALC / COPY / loopback messages), bad input, a killed owner
if [ -x "$PROBE" ]; then
    "$PROBE" selftest 2>&1 | sed 's/^/KMODVM: /'
    "$PROBE" fuzz 2>&1 | sed 's/^/KMODVM: /'
    "$PROBE" hang > /tmp/hang.out 2>&1 &
    hp=$!
    i=0; while [ $i -lt 50 ] && ! grep -q running /tmp/hang.out; do sleep 0.2; i=$((i + 1)); done
    if grep -q running /tmp/hang.out && ! rmmod kumi_kacc 2>/dev/null && [ -c /dev/kumi_kacc ]; then
        say "PASS rmmod-refused-while-running"
    else say "FAIL rmmod-refused-while-running ($(cat /tmp/hang.out))"; fi
    kill -9 $hp; wait $hp 2>/dev/null
fi
# the kaccvm benchmark (tests/bench/kacc-bench.sh through kmod_vm.sh, KUMI_KMOD_VM_BENCH_FILE):
# /kmodvm.bench holds one overlap.c launch a line, "IMPL CASE VAR=VALUE ... -- ARGS";
# numbers only, no verdict: its "ovl" lines, then the module's counters over the launch
if [ -s /kmodvm.bench ] && [ -x "$TESTBIN/overlap" ]; then
    say "bench: $(wc -l < /kmodvm.bench) launches of overlap; meltdown: $(cat /sys/devices/system/cpu/vulnerabilities/meltdown 2>/dev/null); cmdline: $(cat /proc/cmdline)"
    while read -r impl case rest; do
        envs=${rest%%--*} args=${rest#*-- }
        # KACC_STEER=N: the module's steer parameter for this launch (kumi_kacc.c: 0 the rank's
        # CPU always, 1 a spare CPU while the rank computes, where the VM has more CPUs than ranks)
        steer=$(echo "$envs" | tr ' ' '\n' | sed -n 's/^KACC_STEER=//p')
        [ -z "$steer" ] || echo "$steer" > /sys/module/kumi_kacc/parameters/steer
        r0=$(stat_of runs_done); n0=$(stat_of nodes); u0=$(stat_of user_nodes); s=$(date +%s)
        wo0=$(stat_of work_us_own); wx0=$(stat_of work_us_other)
        env $envs KUMI_VERBOSE=1 timeout ${BENCH_TIMEOUT:-300} $MPIEXEC --timeout $((${BENCH_TIMEOUT:-300} - 10)) \
            --bind-to core -n 2 ./overlap $args < /dev/null > /tmp/bench.out 2>&1
        rc=$?
        r1=$(stat_of runs_done); n1=$(stat_of nodes); u1=$(stat_of user_nodes); e=$(date +%s)
        wo1=$(stat_of work_us_own); wx1=$(stat_of work_us_other)
        grep '^ovl ' /tmp/bench.out | sed "s/^/KMODVM-BENCH: $impl $case /"
        [ $rc = 0 ] || tail -5 /tmp/bench.out | sed 's/^/KMODVM-OUT: /'
        kruns=$(grep 'schedule runs in the kernel' /tmp/bench.out | sed -n 's/.*kmod: \([0-9]*\) schedule runs.*/\1/p' |
                awk '{ s += $1 } END { print s + 0 }')
        fb=$(grep -c 'collectives use the loop engine' /tmp/bench.out)
        echo "KMODVM-BENCHSTAT: $impl $case rc=$rc secs=$((e - s)) runs_done=$((r1 - r0)) nodes=$((n1 - n0))" \
             "user_nodes=$((u1 - u0)) ranks_kernel_runs=$kruns engine_fallbacks=$fb" \
             "work_us_own=$((wo1 - wo0)) work_us_other=$((wx1 - wx0))"
    done < /kmodvm.bench
fi
cat /proc/kumi_kacc | sed 's/^/KMODVM-STAT: /'
if dmesg | grep -qE 'BUG|Oops|WARNING|general protection|kernel panic'; then
    dmesg | grep -E -A5 'BUG|Oops|WARNING|general protection' | head -40 | sed 's/^/KMODVM-DMESG: /'
    say "FAIL kernel-clean"
else say "PASS kernel-clean"; fi
if [ "$(stat_of contexts)" = 0 ] && [ "$(stat_of pinned_pages)" = 0 ]; then say "PASS nothing-left (contexts 0, pinned pages 0)"
else say "FAIL nothing-left (contexts $(stat_of contexts), pinned pages $(stat_of pinned_pages))"; fi
if rmmod kumi_kacc && [ ! -e /dev/kumi_kacc ]; then say "PASS rmmod"; else say "FAIL rmmod"; fi
say "DONE"
poweroff -f
