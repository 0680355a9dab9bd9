#!/bin/bash
# spawn_rpim: the launcher side of MPI_Comm_spawn (kumi_rpim_spawn, SPAWN on
# mpiexec's control channel, tools/mpiexec/spawn.c), through
# tests/mpi/spawn_rpim.c.  A parent job of 2 ranks spawns 3 children of one
# command, then 1+2 of two commands: the children form their own world
# (sizes, ranks in command order, KUMI_APPNUM, allreduce), see the request's
# variables and KUMI_SPAWNED / KUMI_PARENT_JOBID, and a job id of their own;
# --tag-output names the spawned job; a program that does not exist fails
# the request (MPI_ERR_SPAWN for every child, nothing started) while the
# parent goes on; info keys wdir, path, host (slots; another host refused);
# the job's -host slots; children outliving the parent; a child's non-zero
# exit (reported, mpiexec exits with it, the parent goes on); a child's
# MPI_Abort (everything stops); a singleton cannot spawn; the same through
# per-host proxies (--launcher fork: parent and children behind proxies);
# nothing left running.  (Across hosts: launch_hosts_spawn.sh.)
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}"
P=$TESTBIN/spawn_rpim
[ -x "$P" ] || { echo "FAIL: spawn_rpim not built (kumi_rpim_spawn missing?)"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$tmp/out"; echo "--- stderr"; cat "$tmp/err"; exit 1; }
run() { # mpiexec arguments...: status in $rc, output in $tmp/out, $tmp/err, seconds in $took
    local t0=$SECONDS
    timeout 90 "$MPIEXEC" "$@" > "$tmp/out" 2> "$tmp/err" < /dev/null
    rc=$?
    took=$((SECONDS - t0))
    [ $rc -ne 124 ] || fail "mpiexec $*: hung (timeout 90)"
}
must() { # description, mpiexec arguments...
    local what=$1
    shift
    run "$@"
    [ $rc -eq 0 ] || fail "$what: exit status $rc"
    echo "ok: $what"
}
children() { # the children's lines, sorted by rank: "TAG RANK SIZE APPNUM SUM"
    sed -n 's/^\(\[[^]]*\]<stdout>: \)\{0,1\}child \([a-z]*\) rank \([0-9]*\) of \([0-9]*\) appnum \([0-9-]*\) sum \([0-9]*\) .*/\2 \3 \4 \5 \6/p' \
        "$tmp/out" | sort -k2n | tr '\n' ';'
}
parents_ok() { # both parent ranks went on after the spawn
    grep -q "^parent 0: goes on ok" "$tmp/out" && grep -q "^parent 1: goes on ok" "$tmp/out"
}

# one command, 3 children
must "one command of 3" -n 2 "$P" one 3
[ "$(children)" = "one 0 3 0 3;one 1 3 0 3;one 2 3 0 3;" ] || fail "children: $(children)"
parents_ok || fail "parent ranks did not go on"
cj=$(sed -n 's/^parent: child job \([0-9]*\) .*/\1/p' "$tmp/out")
[ -n "$cj" ] || fail "no child job id"
[ "$(grep -c "^child .* job $cj " "$tmp/out")" = 3 ] || fail "the children's KUMI_JOBID is not the job id the parent got ($cj)"
pj=$(sed -n 's/^child .* parent \([0-9]*\) job .*/\1/p' "$tmp/out" | sort -u)
[ -n "$pj" ] && [ "$pj" != "$cj" ] || fail "KUMI_PARENT_JOBID '$pj' (child job $cj)"
grep -q "names no parameter" "$tmp/err" && fail "the children's variables are taken for unknown parameters"

# two commands: 1 + 2, one world, ranks in command order
must "two commands of 1 and 2" -n 2 "$P" multi 1 2
[ "$(children)" = "a 0 3 0 3;b 1 3 1 3;b 2 3 1 3;" ] || fail "children: $(children)"
parents_ok || fail "parent ranks did not go on"

# --tag-output: the spawned job's lines are tagged [<job>.1,<rank>]
must "tag output" -n 2 --tag-output "$P" multi 2 1
grep -Eq '^\[[0-9]+\.1,2\]<stdout>: child b rank 2 of 3' "$tmp/out" || fail "no [job.1,2] tag on the child's line"
grep -Eq '^\[[0-9]+,0\]<stdout>: parent: child job' "$tmp/out" || fail "the parent's tags changed"

# a program that does not exist: MPI_ERR_SPAWN, nothing started, the parent goes on
must "missing program" -n 2 "$P" missing
grep -q "parent: missing program refused: .*cannot find program '/nonexistent/kumi_spawn_prog'" "$tmp/out" ||
    fail "no refusal naming the missing program"
grep -q "parent: good + missing program refused: .*kumi_no_such_program_in_path" "$tmp/out" ||
    fail "good + missing: no refusal"
grep -q "^child" "$tmp/out" && fail "children started although the request failed"
parents_ok || fail "parent ranks did not go on"

# bad arguments: MPI_ERR_ARG (a request over the frame limit included); NULL errcodes and job id
must "bad arguments" -n 2 "$P" badargs
grep -q "^parent: bad arguments refused" "$tmp/out" || fail "bad arguments: no success line"
[ "$(children)" = "nulls 0 1 0 0;" ] || fail "NULL errcodes: children $(children)"

# info keys: wdir, path, host
mkdir -p "$tmp/wd"
must "info wdir" -n 2 "$P" info "wdir=$tmp/wd" 2
[ "$(grep -c "^child info .* cwd $(cd "$tmp/wd" && pwd -P) host " "$tmp/out")" = 2 ] || fail "wdir: children not started in $tmp/wd"
must "info path" -n 2 "$P" info "path=/nonexistent:$TESTBIN" 1
[ "$(children)" = "info 0 1 0 0;" ] || fail "path: $(children)"
must "info host (this host, slots enough)" -n 2 "$P" info "host=localhost:5" 3
[ "$(children)" = "info 0 3 0 3;info 1 3 0 3;info 2 3 0 3;" ] || fail "host: $(children)"
must "info host (this host, too few slots)" -n 2 "$P" infofail "host=localhost:4" 3
grep -q "refused: .*free slot" "$tmp/out" || fail "too few slots: no refusal"
must "info host (too few slots, --oversubscribe)" -n 2 --oversubscribe "$P" info "host=localhost:4" 3
must "info host (another host)" -n 2 "$P" infofail "host=kumi-no-such-host" 1
grep -q "refused: .*kumi-no-such-host" "$tmp/out" || fail "another host: no refusal naming it"
grep -q "^child" "$tmp/out" && fail "children started on a refused host"
# the job's own slots (-host): 2 used by the parent, 3 more needed
must "job slots (-host localhost:4)" -host localhost:4 -n 2 "$P" infofail wdir=/ 3
grep -q "refused: .*2 free slots on the job's hosts" "$tmp/out" || fail "job slots: no refusal"
must "job slots (-host localhost:5)" -host localhost:5 -n 2 "$P" info wdir=/ 3
grep -q "universe 5 " "$tmp/out" || fail "MPI_UNIVERSE_SIZE of the children is not the job's 5 slots"

# children outlive the parent: mpiexec waits for them
must "children outlive the parent" -n 2 "$P" then sleep 3
[ $took -ge 3 ] || fail "mpiexec did not wait for the children ($took s)"
[ "$(grep -c '^child then' "$tmp/out")" = 2 ] || fail "children's lines missing"

# a child's non-zero exit: reported, mpiexec exits with it, the parent goes on
run -n 2 "$P" then exit 3
[ $rc -eq 3 ] || fail "child exit 3: mpiexec exit status $rc"
grep -q "rank 0 .* of spawned job [0-9]*\.1 exited with status 3" "$tmp/err" || fail "child exit: no message"
parents_ok || fail "child exit: the parent did not go on"
echo "ok: a child's exit status 3"

# a child's MPI_Abort stops everything: the parent does not finish its wait
SPAWN_PARENT_WAIT=30 run -n 2 -x SPAWN_PARENT_WAIT "$P" then abort 5
[ $rc -eq 5 ] || fail "child abort 5: mpiexec exit status $rc"
[ $took -lt 20 ] || fail "child abort: the parent job was not stopped ($took s)"
grep -q "finished after the wait" "$tmp/out" && fail "child abort: the parent ran on"
grep -q "rank 0 of spawned job [0-9]*\.1 called MPI_Abort(MPI_COMM_WORLD, 5)" "$tmp/err" || fail "child abort: no message"
echo "ok: a child's MPI_Abort ends every job"

# a singleton cannot spawn (no mpiexec): MPI_ERR_SPAWN, it goes on
timeout 30 env -u KUMI_RANK "$P" missing > "$tmp/out" 2> "$tmp/err" || fail "singleton: exit status $?"
grep -q "refused: .*singleton" "$tmp/out" || fail "singleton: no refusal"
echo "ok: singleton"

# --launcher fork: the parent's ranks behind proxies (the request travels
# through them), the children behind proxies of their own
must "--launcher fork: two commands" -n 2 --launcher fork --tag-output "$P" multi 1 2
[ "$(children)" = "a 0 3 0 3;b 1 3 1 3;b 2 3 1 3;" ] || fail "--launcher fork: children: $(children)"
grep -Eq '^\[[0-9]+\.1,1\]<stdout>: child b rank 1 of 3' "$tmp/out" || fail "--launcher fork: tags"
grep -Eq '^\[[0-9]+,1\]<stdout>: parent 1: goes on ok' "$tmp/out" || fail "--launcher fork: parent rank 1"
must "--launcher fork: missing program" -n 2 --launcher fork "$P" missing
grep -q "parent: missing program refused" "$tmp/out" || fail "--launcher fork: no refusal"
run -n 2 --launcher fork "$P" then exit 3
[ $rc -eq 3 ] || fail "--launcher fork: child exit 3: mpiexec exit status $rc"
parents_ok || fail "--launcher fork: child exit: the parent did not go on"
SPAWN_PARENT_WAIT=30 run -n 2 --launcher fork -x SPAWN_PARENT_WAIT "$P" then abort 6
[ $rc -eq 6 ] && [ $took -lt 20 ] || fail "--launcher fork: child abort 6: exit status $rc after $took s"
echo "ok: --launcher fork: exit status and MPI_Abort of children"

sleep 0.5
pgrep -f "$P" && fail "processes left"
exit 0
