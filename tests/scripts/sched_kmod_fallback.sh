#!/bin/bash
# The kernel-module schedule engine (KUMI_BASE_SCHED_ENGINE=kmod, issue 21 item 2) where it
# cannot run: without /dev/kumi_kacc (this machine's kernel loads no modules) -- or, where the
# KACC module is loaded, with a library that expects another ABI version
# (KUMI_BASE_SCHED_KMOD_ABI) -- every rank says so in one KUMI_VERBOSE line and the
# collectives run on the loop engine with the right values (nbc_basic, nbc_persist, cad_ring
# check them).  The engine inside the VM: tests/scripts/kmod_vm.sh (long).
set -u
export MPI_COMPONENTS=p2p=self,tcp KUMI_BASE_SCHED_ENGINE=kmod
if [ -e /dev/kumi_kacc ]; then
    export KUMI_BASE_SCHED_KMOD_ABI=999
    want="the KACC module does not match: the module's ABI is version [0-9]*, this library's 999; collectives use the loop engine"
else
    want="kumi_base_sched_engine=kmod: /dev/kumi_kacc: No such file or directory; collectives use the loop engine"
fi
fail=0
for t in nbc_basic:2 nbc_persist:3 cad_ring:2; do
    prog=${t%%:*} n=${t#*:}
    out=$(cd "$TESTBIN" && KUMI_VERBOSE=1 timeout 150 "$MPIEXEC" --timeout 120 -n "$n" "./$prog" 2>&1)
    rc=$?
    lines=$(echo "$out" | grep -c "$want")
    if [ $rc -ne 0 ] || [ "$lines" -ne "$n" ] || echo "$out" | grep -q 'schedule runs in the kernel'; then
        echo "$out" | grep -v '^kumi\[.*\]: \(rank\|p2p\|registry\|coll\)' | tail -15
        echo "FAIL $prog -n $n: exit $rc, $lines of $n ranks said they fall back"
        fail=1
    else
        echo "ok $prog -n $n: loop engine, values right"
    fi
done
# the parameter lists the engine
"$KUMI_INFO" --all 2>/dev/null | grep -q 'sched_engine.*kmod' || { echo "FAIL: kumi_info does not list the kmod engine"; fail=1; }
exit $fail
