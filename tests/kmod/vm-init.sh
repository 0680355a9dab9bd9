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
        # the ranks share this kernel: their messages go as direct copies (kacc_direct.c), not on sockets
        r0=$(stat_of runs_done); b0=$(stat_of direct_bytes); u0=$(stat_of user_nodes); s=$(date +%s)
        out=$(KUMI_VERBOSE=${VERBOSE:-1} timeout 100 $MPIEXEC --timeout ${JOB_TIMEOUT:-90} -n $n ./$t 2>&1); rc=$?
        r1=$(stat_of runs_done); b1=$(stat_of direct_bytes); u1=$(stat_of user_nodes); e=$(date +%s)
        used=$(echo "$out" | grep -cE 'sched_engine=kmod: [1-9][0-9]* schedule runs in the kernel')
        # nbc_types (derived datatypes, a user-defined op): some node steps must be the ranks'
        steps=1; case " $USER_TESTS " in *" $t "*) [ $((u1 - u0)) -gt 0 ] || steps=0 ;; esac
        if [ $rc = 0 ] && [ "$used" = "$n" ] && [ $((r1 - r0)) -gt 0 ] && [ $((b1 - b0)) -gt 0 ] && [ $steps = 1 ]; then
            say "PASS $t-$n ($((e - s)) s; module: $((r1 - r0)) runs, $((b1 - b0)) bytes copied directly, $((u1 - u0)) node steps left to the ranks)"
        else
            echo "$out" | tail -25 | sed 's/^/KMODVM-OUT: /'
            say "FAIL $t-$n (exit $rc; $used of $n ranks ran schedules in the kernel; module: $((r1 - r0)) runs, $((b1 - b0)) bytes direct)"
        fi
    done
done
# the same tests with direct copies off (KUMI_BASE_SCHED_KMOD_DIRECT=0): every message on the
# pair's socket, the values (checked by the programs) the same
if [ -n "$NS" ]; then
    ki0=$(stat_of kick_ioctl)
    for t in $TESTS; do
        n=${NS%% *}
        r0=$(stat_of runs_done); b0=$(stat_of bytes_recv); d0=$(stat_of direct_bytes)
        out=$(KUMI_VERBOSE=1 KUMI_BASE_SCHED_KMOD_DIRECT=0 timeout 100 $MPIEXEC --timeout ${JOB_TIMEOUT:-90} -n $n ./$t 2>&1); rc=$?
        r1=$(stat_of runs_done); b1=$(stat_of bytes_recv); d1=$(stat_of direct_bytes)
        nd=$(echo "$out" | grep -cE 'sched_engine=kmod: [1-9][0-9]* schedule runs in the kernel, [0-9]* node steps done by the rank, 0 of its peers direct')
        if [ $rc = 0 ] && [ "$nd" = "$n" ] && [ $((r1 - r0)) -gt 0 ] && [ $((b1 - b0)) -gt 0 ] && [ "$d1" = "$d0" ]; then
            say "PASS $t-$n-direct-off ($((r1 - r0)) runs, $((b1 - b0)) bytes on sockets, 0 direct)"
        else
            echo "$out" | tail -25 | sed 's/^/KMODVM-OUT: /'
            say "FAIL $t-$n-direct-off (exit $rc; $nd of $n ranks with no direct peer; $((b1 - b0)) bytes on sockets, $((d1 - d0)) direct)"
        fi
    done
    # a peer's message that comes while the rank is in an ioctl (its own START) is run by that
    # ioctl before it returns (kumi_kacc.c, kick: kick_ioctl), not by a worker queued behind it
    ki=$(($(stat_of kick_ioctl) - ki0))
    if [ "$ki" -gt 0 ]; then say "PASS kick-ioctl ($ki kicks left to the rank's ioctl in the runs on sockets)"
    else say "FAIL kick-ioctl (no kick left to a rank's ioctl in the runs on sockets)"; fi
fi
# a rank killed while its schedules run: the module frees its context, sockets and pages
if [ -n "$NS" ] && [ -x ./nbc_persist ]; then
    k0=$(stat_of runs)
    # the job repeats its schedules until killed (a job that ends by itself could end before
    # the sampling below saw it at work, on a fast VM); the kill follows the sample that found
    # pages pinned at once (read again, the count of a job that frees and registers schedules
    # in turn could already be 0: a fast VM saw that)
    timeout 100 $MPIEXEC --timeout 90 -n 2 ./nbc_persist --until-killed > /tmp/kill.out 2>&1 &
    i=0 pinned=0 kr=0
    while [ $i -lt 400 ]; do
        kr=$(($(stat_of runs) - k0)); pinned=$(stat_of pinned_pages)
        [ $kr -ge 100 ] && [ "$pinned" != 0 ] && break
        sleep 0.05; i=$((i + 1))
    done
    victim=$(pidof nbc_persist | tr ' ' '\n' | sort -n | tail -1)
    [ -n "$victim" ] && kill -9 $victim
    wait
    i=0; while [ $i -lt 100 ] && { [ "$(stat_of contexts)" != 0 ] || [ "$(stat_of pinned_pages)" != 0 ]; }; do sleep 0.1; i=$((i + 1)); done
    if [ -n "$victim" ] && [ "$pinned" != 0 ] && [ "$(stat_of contexts)" = 0 ] && [ "$(stat_of pinned_pages)" = 0 ]; then
        say "PASS rank-killed-freed (a rank killed after $kr schedule runs, with $pinned pages pinned; contexts 0, pages 0 after)"
    else
        sed 's/^/KMODVM-OUT: /' /tmp/kill.out | tail -10
        say "FAIL rank-killed-freed (victim '$victim', after $kr schedule runs, pinned $pinned; now contexts $(stat_of contexts), pages $(stat_of pinned_pages))"
    fi
fi
# the kmod engine keeps a non-blocking collective's registration for the next one like it
# (kumi_base_sched_kmod_reuse): nbc_reuse's 600 rounds on the same buffers must reuse them
# (REGISTER far rarer than runs), its buffers mapped anew between operations must get their
# values (checked by the program), and with kumi_base_sched_kmod_reuse=0 every run registers
if [ -n "$NS" ] && [ -x ./nbc_reuse ]; then
    reuse_run() {
        g0=$(stat_of registered); r0=$(stat_of runs_done); k0=$(stat_of kick_rank); p0=$(stat_of progress_rank)
        out=$(KUMI_VERBOSE=1 timeout 100 $MPIEXEC --timeout 90 "$@" -n 2 ./nbc_reuse 2>&1); rc=$?
        g=$(($(stat_of registered) - g0)); r=$(($(stat_of runs_done) - r0))
        kr=$(($(stat_of kick_rank) - k0)); pr=$(($(stat_of progress_rank) - p0))
        reused=$(echo "$out" | sed -n 's/.*sched_engine=kmod: .* \([0-9][0-9]*\) registrations reused.*/\1/p' | sort -n | head -1)
    }
    reuse_run; rc1=$rc g1=$g r1=$r u1=${reused:-none} out1=$out kr1=$kr pr1=$pr
    reuse_run -x KUMI_BASE_SCHED_KMOD_REUSE=0; rc0=$rc g0r=$g r0r=$r u0=${reused:-none}
    if [ $rc1 = 0 ] && [ $rc0 = 0 ] && [ "$u1" != none ] && [ "$u1" -ge 500 ] && [ $((g1 * 5)) -lt "$r1" ] &&
       [ "$u0" = 0 ] && [ "$g0r" -ge "$r0r" ]; then
        say "PASS reg-reuse (nbc_reuse at 2 ranks: $r1 runs, $g1 registrations, $u1 reused by the rank that reused fewest; with kumi_base_sched_kmod_reuse=0: $r0r runs, $g0r registrations)"
    else
        echo "$out1" | tail -10 | sed 's/^/KMODVM-OUT: /'
        say "FAIL reg-reuse (exit $rc1 / $rc0; reuse on: $r1 runs, $g1 registrations, reused $u1; off: $r0r runs, $g0r registrations, reused $u0)"
    fi
    # work that arrives while a rank waits is handed to it (kick_rank) and run in its wait
    # (progress_rank), not by a worker; kumi_base_sched_kmod_wait_runs=0: never handed
    reuse_run -x KUMI_BASE_SCHED_KMOD_WAIT_RUNS=0; rcw=$rc krw=$kr prw=$pr
    if [ $rc1 = 0 ] && [ $rcw = 0 ] && [ "$kr1" -gt 0 ] && [ "$pr1" -gt 0 ] && [ "$krw" = 0 ]; then
        say "PASS wait-runs (nbc_reuse at 2 ranks: $kr1 kicks handed to a waiting rank, $pr1 runs by the ranks; with kumi_base_sched_kmod_wait_runs=0: $krw, $prw)"
    else
        say "FAIL wait-runs (exit $rc1 / $rcw; handed $kr1, run by the ranks $pr1; with wait_runs=0: handed $krw, run $prw)"
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
    "$PROBE" direct 2>&1 | sed 's/^/KMODVM: /'
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
    # LINK=RATE (kmod_vm.sh's KUMI_KMOD_VM_LINK): the 2 ranks on a wire.  Two network namespaces,
    # hosts h1 (10.77.0.1) and h2 (10.77.0.2), each held by a sleeping process, joined by a veth
    # pair; both ends send through tbf at RATE, so that the data takes time on the wire.
    # mpiexec runs in h1; a launch agent starts each host's proxy in its namespace, pinned to
    # vCPU 0 (h1) or 1 (h2): the proxy binds its rank within that.  Kumi takes each network
    # namespace for a host of its own (kumi_host_id), so the ranks talk over 10.77.0.0/24.
    run=
    if [ -n "${LINK:-}" ]; then
        lk=fail
        if insmod /mods/veth.ko && insmod /mods/sch_tbf.ko; then
            unshare -n sleep 1000000 & h1=$!
            unshare -n sleep 1000000 & h2=$!
            sleep 0.2
            # burst: 1 ms of the rate, at least 96 KiB.  A veth skb may be a 64 KiB TSO (GSO)
            # packet, which tbf counts with the headers of each of its ~45 segments (~68 KiB):
            # one larger than the burst tbf cuts into MSS-sized packets in software, each then
            # a trip through veth and the peer's TCP receive path (and an ACK) on the vCPUs --
            # the work of a real NIC (TSO, and GRO / LRO on the receiving side), which in TCG
            # took 2-4 times the CPU of the transfer itself from every engine (64 KiB, the
            # burst before: the kmod work items' time per 1 MiB allreduce 29 ms, at 256 KiB
            # 13 ms).  KUMI_KMOD_VM_LINK_BURST (bytes) overrides.
            bps=$(echo "$LINK" | awk '{ v = $1 + 0; u = tolower($1); sub(/^[0-9.]+/, "", u)
                    m = u ~ /^k/ ? 1e3 : u ~ /^m/ ? 1e6 : u ~ /^g/ ? 1e9 : 1; if (u ~ /bps$/) m *= 8
                    print int(v * m) }')
            burst=$((bps / 8 / 1000)); [ $burst -ge 98304 ] || burst=98304
            [ -z "${LINK_BURST:-}" ] || burst=$LINK_BURST
            if /usr/sbin/ip link add k1 type veth peer name k2 &&
               /usr/sbin/ip link set k1 netns $h1 && /usr/sbin/ip link set k2 netns $h2 &&
               nsenter -t $h1 -n /usr/sbin/ip addr add 10.77.0.1/24 dev k1 &&
               nsenter -t $h2 -n /usr/sbin/ip addr add 10.77.0.2/24 dev k2 &&
               nsenter -t $h1 -n /usr/sbin/ip link set k1 up && nsenter -t $h2 -n /usr/sbin/ip link set k2 up &&
               nsenter -t $h1 -n /usr/sbin/ip link set lo up && nsenter -t $h2 -n /usr/sbin/ip link set lo up &&
               nsenter -t $h1 -n /usr/sbin/tc qdisc add dev k1 root tbf rate "$LINK" burst $burst latency 100ms &&
               nsenter -t $h2 -n /usr/sbin/tc qdisc add dev k2 root tbf rate "$LINK" burst $burst latency 100ms &&
               nsenter -t $h1 -n ping -c 1 -W 5 10.77.0.2 > /dev/null; then
                lk=ok
            fi
        fi
        if [ $lk = ok ]; then
            printf '10.77.0.1 h1\n10.77.0.2 h2\n' >> /etc/hosts
            printf 'h1\nh2\n' > /tmp/kumi-hosts
            printf '#!/bin/sh\nh=$1; shift\ncase $h in h1) p=%s c=0 ;; h2) p=%s c=1 ;; *) echo "agent: no host $h" >&2; exit 255 ;; esac\nexec taskset -c $c nsenter -t $p -n "$@"\n' \
                $h1 $h2 > /bin/kumi-agent
            chmod +x /bin/kumi-agent
            run="nsenter -t $h1 -n"
            say "bench: link $LINK: veth h1 10.77.0.1 -- h2 10.77.0.2, tbf burst $burst B each way;" \
                "$(nsenter -t $h1 -n /usr/sbin/tc qdisc show dev k1 | head -1)"
        else
            say "FAIL bench-link ($LINK: veth / tbf / namespaces not set up)"
        fi
    fi
    hostargs=; [ -n "$run" ] && hostargs="--hostfile /tmp/kumi-hosts --launch-agent /bin/kumi-agent"
    # on the wire: each rank's network namespace and CPUs, seen once both run (a proxy
    # started through the agent does not report its bindings)
    where_ranks() {
        i=0
        while [ $i -lt 600 ]; do
            set -- $(pidof overlap)
            [ $# -ge 2 ] && break
            sleep 0.2; i=$((i + 1))
        done
        sleep 1
        for p in $(pidof overlap | tr ' ' '\n' | sort -n); do
            echo "$(readlink /proc/$p/ns/net) cpus $(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$p/status)"
        done | sort | tr '\n' ' '
    }
    # bytes the veth ends sent (tbf's counters): the launch's data went over the wire
    wire_bytes() {
        [ -n "$run" ] || { echo 0; return; }
        { nsenter -t $h1 -n /usr/sbin/tc -s qdisc show dev k1; nsenter -t $h2 -n /usr/sbin/tc -s qdisc show dev k2; } |
            awk '$1 == "Sent" { s += $2 } END { print s + 0 }'
    }
    while read -r impl case rest; do
        envs=${rest%%--*} args=${rest#*-- }
        # KACC_STEER=N: the module's steer parameter for this launch (kumi_kacc.c: 0 the rank's
        # CPU always, 1 a spare CPU while the rank computes, where the VM has more CPUs than ranks)
        steer=$(echo "$envs" | tr ' ' '\n' | sed -n 's/^KACC_STEER=//p')
        [ -z "$steer" ] || echo "$steer" > /sys/module/kumi_kacc/parameters/steer
        # KACC_P_NAME=VALUE: the module's parameter NAME for this launch (an A/B of the module's
        # ways in one boot); KACC_TRACE=1: its timeline (kacc_trace.c) for this launch, printed
        # after it as "KMODVM-TRACE: IMPL CASE NS CPU CTX EVENT A B"
        for kv in $(echo "$envs" | tr ' ' '\n' | sed -n 's/^KACC_P_//p'); do
            echo "${kv#*=}" > "/sys/module/kumi_kacc/parameters/${kv%%=*}"
        done
        # KACC_LINK_BURST=N: the wire's tbf burst for this launch (bytes; else the link's own)
        lb=$(echo "$envs" | tr ' ' '\n' | sed -n 's/^KACC_LINK_BURST=//p'); lb=${lb:-${burst:-}}
        if [ -n "$run" ] && [ "$lb" != "${cur_burst:-$burst}" ]; then
            nsenter -t $h1 -n /usr/sbin/tc qdisc change dev k1 root tbf rate "$LINK" burst $lb latency 100ms &&
                nsenter -t $h2 -n /usr/sbin/tc qdisc change dev k2 root tbf rate "$LINK" burst $lb latency 100ms &&
                cur_burst=$lb || say "FAIL bench-burst ($lb)"
        fi
        tr=$(echo "$envs" | tr ' ' '\n' | sed -n 's/^KACC_TRACE=//p')
        [ -z "$tr" ] || { echo "$tr" > /sys/module/kumi_kacc/parameters/trace; cat /proc/kumi_kacc_trace > /dev/null; }
        r0=$(stat_of runs_done); n0=$(stat_of nodes); u0=$(stat_of user_nodes); s=$(date +%s)
        wo0=$(stat_of work_us_own); wx0=$(stat_of work_us_other); wb0=$(wire_bytes); db0=$(stat_of direct_bytes)
        f0=$(stat_of direct_fused_bytes); fo0=$(stat_of direct_fused_out_bytes)
        bp=; [ -z "$run" ] || { where_ranks > /tmp/bind.out & bp=$!; }
        env KUMI_VERBOSE=1 $envs timeout ${BENCH_TIMEOUT:-300} $run $MPIEXEC --timeout $((${BENCH_TIMEOUT:-300} - 10)) \
            $hostargs --bind-to core -n 2 ./overlap $args < /dev/null > /tmp/bench.out 2>&1
        rc=$?
        r1=$(stat_of runs_done); n1=$(stat_of nodes); u1=$(stat_of user_nodes); e=$(date +%s)
        wo1=$(stat_of work_us_own); wx1=$(stat_of work_us_other); wb1=$(wire_bytes); db1=$(stat_of direct_bytes)
        f1=$(stat_of direct_fused_bytes); fo1=$(stat_of direct_fused_out_bytes)
        # on the wire: where the ranks ran, once per launch
        [ -z "$bp" ] || { kill $bp 2>/dev/null; wait $bp; echo "KMODVM-BENCHBIND: $impl $case $(cat /tmp/bind.out)"; }
        grep '^ovl ' /tmp/bench.out | sed "s/^/KMODVM-BENCH: $impl $case /"
        [ -z "$tr" ] || { echo 0 > /sys/module/kumi_kacc/parameters/trace; sed "s/^/KMODVM-TRACE: $impl $case /" /proc/kumi_kacc_trace; }
        [ $rc = 0 ] || tail -5 /tmp/bench.out | sed 's/^/KMODVM-OUT: /'
        # KUMI_VERBOSE=2 in the launch's environment (KUMI_BENCH_KACCVM_ENV): the engines' own lines too
        case " $envs " in *" KUMI_VERBOSE=2 "*) grep 'kumi_base_sched_engine=' /tmp/bench.out | sed "s/^/KMODVM-OUT: $impl $case /" ;; esac
        kruns=$(grep 'schedule runs in the kernel' /tmp/bench.out | sed -n 's/.*kmod: \([0-9]*\) schedule runs.*/\1/p' |
                awk '{ s += $1 } END { print s + 0 }')
        fb=$(grep -c 'collectives use the loop engine' /tmp/bench.out)
        echo "KMODVM-BENCHSTAT: $impl $case rc=$rc secs=$((e - s)) runs_done=$((r1 - r0)) nodes=$((n1 - n0))" \
             "user_nodes=$((u1 - u0)) ranks_kernel_runs=$kruns engine_fallbacks=$fb" \
             "work_us_own=$((wo1 - wo0)) work_us_other=$((wx1 - wx0)) wire_bytes=$((wb1 - wb0)) direct_bytes=$((db1 - db0))" \
             "direct_fused_bytes=$((${f1:-0} - ${f0:-0})) direct_fused_out_bytes=$((${fo1:-0} - ${fo0:-0}))"
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
