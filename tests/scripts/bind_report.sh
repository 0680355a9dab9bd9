#!/bin/bash
# bind_report: mpiexec's CPU binding as the ranks see it (sched_getaffinity,
# through tests/mpi/bind_check) against --report-bindings, for the default
# (one rank per core when ranks <= cores, unbound and silent otherwise),
# --bind-to core|package|hwthread|none, --oversubscribe, taskset, and errors.
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}"
[ -x "$TESTBIN/bind_check" ] || { echo "SKIP: bind_check not built"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; for f in out err; do [ -s "$tmp/$f" ] && sed "s/^/  $f| /" "$tmp/$f"; done; exit 1; }
chk="$TESTBIN/bind_check"

# expand "0-2,5" -> "0 1 2 5"
expand() { local IFS=, a; for a in $1; do if [[ $a == *-* ]]; then seq -s ' ' "${a%-*}" "${a#*-}"; else echo "$a"; fi; done | tr '\n' ' '; }
# run EXPECTED_STATUS mpiexec-args...: stdout in $tmp/out, stderr in $tmp/err
run() {
    local want=$1; shift
    timeout 60 "$MPIEXEC" "$@" > "$tmp/out" 2> "$tmp/err"
    local rc=$?
    [ $rc -eq "$want" ] || fail "mpiexec $*: status $rc, expected $want"
}
# cpus of rank R as the rank saw them / as reported
seen() { sed -n "s/^rank $1 cpus \([^ ]*\) env .*/\1/p" "$tmp/out"; }
reported() { sed -n "s/^mpiexec: rank $1 bound to [a-z]* [0-9]* (cpus \([^)]*\))$/\1/p" "$tmp/err"; }

# what mpiexec may use: its own affinity
run 0 --bind-to none -n 1 "$chk" unbound
all=$(seen 0)
[ -n "$all" ] || fail "no affinity line"
[ ! -s "$tmp/err" ] || fail "--bind-to none printed something"
ncpu=$(expand "$all" | wc -w)
# cores among them (sysfs; one per CPU when it has no topology)
ncores=$(for c in $(expand "$all"); do
    t=/sys/devices/system/cpu/cpu$c/topology
    if [ -r $t/core_id ]; then echo "$(cat $t/physical_package_id 2>/dev/null):$(cat $t/core_id)"; else echo "cpu$c"; fi
done | sort -u | wc -l)
echo "allowed cpus $all: $ncpu cpus, $ncores cores"

# 1 rank, reported, bound to one core
run 0 --report-bindings -n 1 "$chk" distinct
[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "-n 1: expected one report line"
grep -Eq '^mpiexec: rank 0 bound to core [0-9]+ \(cpus [0-9,-]+\)$' "$tmp/err" || fail "-n 1: report format"
[ "$(reported 0)" = "$(seen 0)" ] || fail "-n 1: reported $(reported 0), rank has $(seen 0)"

# ranks <= cores: by default each on its own core, silently; reported the same
if [ "$ncores" -ge 2 ]; then
    n=2
    run 0 -n $n "$chk" distinct
    [ ! -s "$tmp/err" ] || fail "default binding printed something"
    grep -q "env -" "$tmp/out" && fail "default -n $n: a rank is unbound"
    run 0 --report-bindings -n $n "$chk" distinct
    [ "$(grep -c '^mpiexec: rank [0-9]* bound to core' "$tmp/err")" -eq $n ] || fail "-n $n: expected $n report lines"
    for r in $(seq 0 $((n - 1))); do
        [ -n "$(seen $r)" ] && [ "$(reported $r)" = "$(seen $r)" ] || fail "-n $n rank $r: reported $(reported $r), has $(seen $r)"
    done
fi

# more ranks than cores: unbound by default and silent; reported as such
over=$((ncores + 2))
run 0 -n $over "$chk" unbound
[ ! -s "$tmp/err" ] || fail "oversubscribed default printed something"
for r in $(seq 0 $((over - 1))); do [ "$(seen $r)" = "$all" ] || fail "-n $over rank $r: cpus $(seen $r), expected $all"; done
run 0 --report-bindings -n $over "$chk" unbound
[ "$(grep -c "^mpiexec: rank [0-9]* not bound ($over processes, $ncores cores\{0,1\})$" "$tmp/err")" -eq $over ] ||
    fail "-n $over: expected $over 'not bound' lines"

# --bind-to none
run 0 --bind-to none --report-bindings -n 2 "$chk" unbound
[ "$(grep -c '^mpiexec: rank [01] not bound (--bind-to none)$' "$tmp/err")" -eq 2 ] || fail "--bind-to none report"
[ "$(seen 1)" = "$all" ] || fail "--bind-to none: rank 1 has $(seen 1)"

# --bind-to core with more ranks than cores: refused, nothing started
run 1 --bind-to core -n $over "$chk" any
grep -q "^mpiexec: --bind-to core: $over processes but only $ncores core" "$tmp/err" || fail "--bind-to core overload message"
[ ! -s "$tmp/out" ] || fail "--bind-to core overload started ranks"
# ... unless overloading is allowed: round-robin
run 0 --bind-to core --oversubscribe -n $over "$chk" wrap $ncores
run 0 --bind-to core:overload-allowed --report-bindings -n $over "$chk" wrap $ncores
# one rank more than cores: only the ranks of the doubled core are told they share it
run 0 --bind-to core --oversubscribe -n $((ncores + 1)) "$chk" wrap $ncores
[ "$(reported $ncores)" = "$(reported 0)" ] || fail "overload: rank $ncores not on rank 0's core"

# hwthread: one CPU each
run 0 --bind-to hwthread --report-bindings -n 1 "$chk" distinct
grep -Eq '^mpiexec: rank 0 bound to hwthread [0-9]+ \(cpus [0-9]+\)$' "$tmp/err" || fail "hwthread report"
[ "$(reported 0)" = "$(seen 0)" ] || fail "hwthread: reported $(reported 0), has $(seen 0)"

# package: the allowed CPUs of rank 0's package (a superset of its core)
run 0 --bind-to package --report-bindings -n 1 "$chk" any
grep -Eq '^mpiexec: rank 0 bound to package [0-9]+ \(cpus [0-9,-]+\)$' "$tmp/err" || fail "package report"
[ "$(reported 0)" = "$(seen 0)" ] || fail "package: reported $(reported 0), has $(seen 0)"
pk=$(seen 0)
run 0 --bind-to core -n 1 "$chk" any
for c in $(expand "$(seen 0)"); do [[ " $(expand "$pk") " == *" $c "* ]] || fail "package $pk lacks core cpu $c"; done

# the allowed set is respected (taskset): the last allowed CPU only
if command -v taskset > /dev/null && [ "$ncpu" -ge 2 ]; then
    last=$(expand "$all" | awk '{ print $NF }')
    timeout 60 taskset -c "$last" "$MPIEXEC" --report-bindings -n 1 "$chk" distinct > "$tmp/out" 2> "$tmp/err" || fail "taskset run"
    [ "$(seen 0)" = "$last" ] && [ "$(reported 0)" = "$last" ] || fail "taskset -c $last: rank has $(seen 0)"
    timeout 60 taskset -c "$last" "$MPIEXEC" -n 2 "$chk" unbound > "$tmp/out" 2> "$tmp/err" || fail "taskset -n 2 run"
    [ ! -s "$tmp/err" ] && [ "$(seen 1)" = "$last" ] || fail "taskset -c $last -n 2: rank 1 has $(seen 1)"
fi

# oversubscribed ranks that lead a session of their own (setsid, as MPICH's Hydra starts ranks):
# where sched_autogroup is on, their sched_yield() reaches no other rank, so a blocking wait
# yields for 10 us, not 2 ms, before it sleeps (request/progress.c; KUMI_VERBOSE=2's progress
# line); ranks in mpiexec's session keep the 2 ms
if command -v setsid > /dev/null; then
    ag=$(cat /proc/sys/kernel/sched_autogroup_enabled 2> /dev/null || echo 0)
    lone='progress: oversubscribed, leading a session of its own under sched_autogroup.*then yield 0 rounds and 10 us'
    KUMI_VERBOSE=2 timeout 60 "$MPIEXEC" -n $over setsid -w "$chk" unbound > "$tmp/out" 2> "$tmp/err" ||
        fail "-n $over setsid: status $?"
    n=$(grep "^kumi\[[0-9]*\]: $lone" "$tmp/err" | cut -d: -f1 | sort -u | wc -l)
    if [ "$ag" = 1 ]; then [ "$n" -eq $over ] || fail "-n $over, a session each: $n of $over ranks yield for 10 us"
    else [ "$n" -eq 0 ] || fail "sched_autogroup off: $n ranks yield for 10 us"; fi
    KUMI_VERBOSE=2 timeout 60 "$MPIEXEC" -n $over "$chk" unbound > "$tmp/out" 2> "$tmp/err" || fail "-n $over verbose: status $?"
    n=$(grep '^kumi\[[0-9]*\]: progress: oversubscribed: spin 2 rounds and 0 us idle, then yield 200 rounds and 2000 us' \
        "$tmp/err" | cut -d: -f1 | sort -u | wc -l)
    [ "$n" -eq $over ] || fail "-n $over in mpiexec's session: $n of $over ranks yield for 2 ms"
fi

# bad values
run 1 --bind-to nowhere -n 1 "$chk"
grep -q "^mpiexec: --bind-to: expected core, package, hwthread or none, not 'nowhere'" "$tmp/err" || fail "bad --bind-to message"
run 1 --bind-to core:sometimes -n 1 "$chk"
grep -q "unknown qualifier" "$tmp/err" || fail "bad qualifier message"
echo "bind_report: ok"
exit 0
