#!/bin/bash
# The KACC kernel module (kmod/, KUMI_BASE_SCHED_ENGINE=kmod; issue 21 items 2 and 3) in a
# virtual machine: this machine's kernel loads no modules, so the module is built against
# Debian's packaged kernel headers and tested under QEMU (TCG) booting that kernel with a
# busybox initramfs holding the module, Kumi's installed tree, the test programs and their
# shared libraries.  Inside (tests/kmod/vm-init.sh): 2 and 4 ranks of nbc_basic, nbc_persist,
# cad_ring and nbc_types over loopback TCP with the kmod engine (values checked by the
# programs; every rank ran schedules in the kernel; the module's counters moved; nbc_types,
# at 2 ranks only: its derived datatypes and user-defined op took node steps of the ranks), a
# rank killed while its schedules run (no context or pinned page left), nbc_reuse at 2 ranks
# (registrations of non-blocking collectives reused, their buffers pinned per run: values right
# on memory mapped anew; work handed to waiting ranks), work left to a rank's ioctl in the runs on
# sockets (kick-ioctl), the fall-back when the
# module's ABI is not the library's, the module alone (kacc_probe: CALC / COPY / messages,
# bad input and random node arrays refused, rmmod refused while a schedule runs, a killed
# owner's schedule freed), a clean kernel log and rmmod.  The host parses the verdicts
# ("KMODVM: PASS|FAIL ...") from the serial console.
#
# A long test: runs under `./check.sh --long` (KUMI_TEST_LONG=1), which installs the
# packages (build-essential linux-headers-amd64 linux-image-amd64 qemu-system-x86
# busybox-static cpio); skipped (77) with the reason where something is missing.
# KUMI_KMOD_VM_NS (default "2 4") and KUMI_KMOD_VM_TESTS choose the runs.
# The kaccvm benchmark (tests/bench/kacc-bench.sh) boots the same VM with
#   KUMI_KMOD_VM_BENCH_FILE=FILE  overlap.c launches, one a line ("IMPL CASE VAR=VALUE ... -- ARGS"),
#                                 run after the tests (tests/bench/overlap.c built with Kumi's mpicc)
#   KUMI_KMOD_VM_BENCH_ONLY=1     no tests and no probe: the launches only (the verdict: the
#                                 module loaded, the kernel clean, nothing left, rmmod)
#   KUMI_KMOD_VM_CONSOLE=FILE     the console log's copy (default test-logs/kmod_vm.console.log)
#   KUMI_KMOD_VM_LINK=RATE        the launches' 2 ranks on a wire: two network namespaces of the
#                                 VM ("hosts" h1, h2; mpiexec in h1, a proxy per host started by
#                                 a launch agent that enters the namespace, pinned to vCPU 0 / 1)
#                                 joined by a veth pair whose both ends send through a tbf
#                                 qdisc of RATE (tc's form: 1gbit, 200mbit); empty: loopback
#                                 (needs veth.ko and sch_tbf.ko of the kernel, ip and tc);
#                                 tbf's burst: 1 ms of RATE, at least 96 KiB (a whole 64 KiB TSO
#                                 packet: tests/kmod/vm-init.sh), or KUMI_KMOD_VM_LINK_BURST bytes
#   KUMI_KMOD_VM_TIMEOUT (default 400 s), KUMI_KMOD_VM_SMP (vCPUs, default 2),
#   KUMI_KMOD_VM_APPEND (more kernel parameters), KUMI_KMOD_VM_QEMU_OPTS (more QEMU options;
#   "-icount shift=3,sleep=off", a guest clock counting instructions, did not get past the
#   boot loader within 3 minutes on the loaded 2-core host: not usable as it is)
set -u
if [ "${KUMI_TEST_LONG:-0}" != 1 ]; then echo "SKIP: a long test (./check.sh --long)"; exit 77; fi
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=$(cd "${top_builddir:-$top_srcdir/_build}" && pwd) || exit 1    # absolute: the VM's init cds to it
KVER=${KVER:-$(dpkg-query -W -f='${Depends}' linux-headers-amd64 2>/dev/null | sed -n 's/.*linux-headers-\([^ ,]*\).*/\1/p')}
skip() { echo "SKIP: $*"; exit 77; }
[ -n "$KVER" ] && [ -d "/lib/modules/$KVER/build" ] || skip "no kernel headers (apt-get install linux-headers-amd64)"
[ -f "/boot/vmlinuz-$KVER" ] || skip "no kernel image /boot/vmlinuz-$KVER (apt-get install linux-image-amd64)"
command -v qemu-system-x86_64 >/dev/null || skip "no QEMU (apt-get install qemu-system-x86)"
[ -x /bin/busybox ] && file -L /bin/busybox 2>/dev/null | grep -q 'statically linked' ||
    ldd /bin/busybox 2>&1 | grep -q 'not a dynamic' || skip "no static busybox (apt-get install busybox-static)"
command -v cpio >/dev/null || skip "no cpio (apt-get install cpio)"
# Kumi's installed tree: the one of this build (install.sh puts it in $top_srcdir/_install)
INST=${KUMI_INSTALL_DIR:-$top_srcdir/_install}
[ -x "$INST/bin/mpiexec" ] && [ -f "$INST/lib/libmpi.so" ] || { echo "no installed Kumi in $INST (make install)"; exit 1; }
TESTBIN=${TESTBIN:-$top_builddir/tests/mpi}
TESTS=${KUMI_KMOD_VM_TESTS:-nbc_basic nbc_persist cad_ring nbc_types}
bench_only=${KUMI_KMOD_VM_BENCH_ONLY:-0}
benchf=${KUMI_KMOD_VM_BENCH_FILE:-}
[ "$bench_only" = 1 ] && TESTS=
[ -z "$benchf" ] || [ -s "$benchf" ] || { echo "no benchmark launches in '$benchf'"; exit 1; }
for t in $TESTS; do [ -x "$TESTBIN/$t" ] || { echo "no test program $TESTBIN/$t (make check-programs)"; exit 1; }; done

work=$(mktemp -d /tmp/kumi-kmodvm.XXXXXX)
trap 'rm -rf "$work"' EXIT
t0=$(date +%s)
# 1. the module, built out of the source tree
cp -r "$top_srcdir/kmod" "$work/kmod"
rm -f "$work"/kmod/*.o "$work"/kmod/*.ko "$work"/kmod/*.mod* "$work"/kmod/.*.cmd
if ! make -s -C "$work/kmod" KVER="$KVER" > "$work/build.log" 2>&1; then
    cat "$work/build.log"; echo "FAIL: the module does not build against $KVER"; exit 1
fi
if grep -E 'warning:' "$work/build.log"; then echo "FAIL: the module's build has warnings"; exit 1; fi
ko=$work/kmod/kumi-kacc.ko
# 2. the probe
${CC:-cc} -O2 -Wall -Werror -o "$work/kacc_probe" "$top_srcdir/tests/kmod/kacc_probe.c" || { echo "FAIL: kacc_probe"; exit 1; }
# 3. the initramfs: busybox, the module, Kumi's tree, the test programs, their libraries
root=$work/root
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,mods,lib64,usr/bin,usr/sbin,etc}
cp /bin/busybox "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
cp "$top_srcdir/tests/kmod/vm-init.sh" "$root/init"
chmod +x "$root/init"
cp "$ko" "$root/mods/"
mkdir -p "$root$INST" "$root$TESTBIN"
cp -a "$INST/." "$root$INST/"
rm -rf "$root$INST/include"
for t in $TESTS; do cp "$TESTBIN/$t" "$root$TESTBIN/"; done
# reg-reuse (vm-init.sh): the kmod engine's registrations kept for the next collective like it
if [ "$bench_only" != 1 ]; then
    [ -x "$TESTBIN/nbc_reuse" ] || { echo "no test program $TESTBIN/nbc_reuse (make check-programs)"; exit 1; }
    cp "$TESTBIN/nbc_reuse" "$root$TESTBIN/"
fi
[ "$bench_only" = 1 ] || cp "$work/kacc_probe" "$root/bin/kacc_probe"
if [ -n "$benchf" ]; then
    "$INST/bin/mpicc" -O2 -o "$root$TESTBIN/overlap" "$top_srcdir/tests/bench/overlap.c" || { echo "FAIL: overlap.c"; exit 1; }
    cp "$benchf" "$root/kmodvm.bench"
fi
link=${KUMI_KMOD_VM_LINK:-}
if [ -n "$link" ]; then
    # the wire: the kernel's veth and tbf modules, iproute2's ip and tc (busybox's lack
    # veth peers in namespaces and tbf)
    for m in drivers/net/veth.ko net/sched/sch_tbf.ko; do
        f=/lib/modules/$KVER/kernel/$m
        [ -f "$f" ] || [ -f "$f.xz" ] || { echo "FAIL: KUMI_KMOD_VM_LINK: no $f"; exit 1; }
        if [ -f "$f" ]; then cp "$f" "$root/mods/"; else xz -dc "$f.xz" > "$root/mods/$(basename "$f")"; fi
    done
    mkdir -p "$root/usr/sbin"
    for b in ip tc; do
        p=$(PATH=/usr/sbin:/sbin:$PATH command -v $b) || { echo "FAIL: KUMI_KMOD_VM_LINK: no $b (iproute2)"; exit 1; }
        cp "$p" "$root/usr/sbin/$b"
    done
fi
echo "root:x:0:0:root:/tmp:/bin/sh" > "$root/etc/passwd"
echo "127.0.0.1 localhost kmodvm" > "$root/etc/hosts"
echo kmodvm > "$root/etc/hostname"
libs=$( { find "$root$INST" "$root$TESTBIN" "$root/bin" "$root/usr/sbin" -type f \( -perm -u+x -o -name '*.so*' \) -print0 |
          xargs -0 ldd 2>/dev/null | grep -oE '/[^ ]+\.so[^ ]*' ; } | sort -u)
for l in $libs; do
    case "$l" in "$root"*) continue ;; esac
    [ -e "$l" ] || continue
    mkdir -p "$root$(dirname "$l")"
    cp -L "$l" "$root$l"
done
cat > "$root/kmodvm.env" <<EOF
INST=$INST
TESTBIN=$TESTBIN
PROBE=$([ "$bench_only" = 1 ] || echo /bin/kacc_probe)
NS="$([ "$bench_only" = 1 ] || echo "${KUMI_KMOD_VM_NS:-2 4}")"
TESTS="$TESTS"
USER_TESTS="nbc_types"
VERBOSE=${KUMI_KMOD_VM_VERBOSE:-1}
JOB_TIMEOUT=${KUMI_KMOD_VM_JOB_TIMEOUT:-90}
BENCH_TIMEOUT=${KUMI_KMOD_VM_BENCH_TIMEOUT:-300}
LINK=$link
LINK_BURST=${KUMI_KMOD_VM_LINK_BURST:-}
EOF
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) > "$work/initramfs.cpio.gz"
t1=$(date +%s)
echo "module built, initramfs $(du -h "$work/initramfs.cpio.gz" | cut -f1) ($((t1 - t0)) s); booting $KVER under QEMU (TCG)"
# 4. boot; the VM powers itself off.  The vCPUs are cores of one socket (one cache domain: the
# scheduler looks for an idle CPU there when it wakes the module's unbound work)
smp=${KUMI_KMOD_VM_SMP:-2}
timeout "${KUMI_KMOD_VM_TIMEOUT:-400}" qemu-system-x86_64 -accel tcg -cpu max -m 1024 -smp "$smp,sockets=1,cores=$smp" \
    -kernel "/boot/vmlinuz-$KVER" -initrd "$work/initramfs.cpio.gz" \
    -append "console=ttyS0 panic=-1 loglevel=3 quiet ${KUMI_KMOD_VM_APPEND:-}" -nographic -no-reboot -nodefaults -serial stdio \
    ${KUMI_KMOD_VM_QEMU_OPTS:-} \
    < /dev/null > "$work/console.log" 2>&1
qrc=$?
t2=$(date +%s)
mkdir -p "$top_builddir/tests/test-logs"
tr -d '\r' < "$work/console.log" > "${KUMI_KMOD_VM_CONSOLE:-$top_builddir/tests/test-logs/kmod_vm.console.log}"    # kept for a look
grep -a -E '^KMODVM' "$work/console.log" | grep -a -v -E '^KMODVM-BENCH' | tr -d '\r'
echo "VM: $((t2 - t1)) s (QEMU exit $qrc)"
npass=$(grep -a -c '^KMODVM: PASS' "$work/console.log")
nfail=$(grep -a -c '^KMODVM: FAIL' "$work/console.log")
if ! grep -a -q '^KMODVM: DONE' "$work/console.log"; then
    tail -40 "$work/console.log" | tr -d '\r'
    echo "FAIL: the VM did not finish (timeout or crash)"; exit 1
fi
# the tests at each size (nbc_types at the first only), again with direct copies off at the
# first size and kick-ioctl, the probe's 5 direct-copy checks, its runpin check, reg-reuse and wait-runs
nruns=$(( $(echo "${KUMI_KMOD_VM_NS:-2 4}" | wc -w) * $(echo "$TESTS" | wc -w) - 1 + $(echo "$TESTS" | wc -w) + 9 ))
# bench only: insmod, kernel-clean, nothing-left, rmmod
[ "$bench_only" = 1 ] && nruns=-5
if [ "$nfail" -gt 0 ] || [ "$npass" -lt $((nruns + 9)) ]; then
    # the failures again at the end, with the output the VM kept for them: a log shown by its
    # tail (CI's) then names what failed and why
    if [ "$nfail" -gt 0 ]; then
        echo "--- what failed in the VM:"
        grep -a -E '^KMODVM(-OUT|-DMESG)?: ' "$work/console.log" | grep -a -v -E '^KMODVM: PASS' |
            grep -a -B25 -E '^KMODVM: FAIL' | tr -d '\r' | tail -60
    fi
    names=$(grep -a '^KMODVM: FAIL' "$work/console.log" | awk '{ print $3 }' | tr -d '\r' | tr '\n' ' ')
    echo "FAIL: $nfail failed${names:+ (${names% })}, $npass passed in the VM (at least $((nruns + 9)) wanted)"; exit 1
fi
echo "ok: $npass checks passed in the VM"
