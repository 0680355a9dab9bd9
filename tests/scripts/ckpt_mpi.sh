#!/bin/bash
# Coordinated checkpoints of MPI jobs (issue 20; framework/mpi/ckpt.c,
# tools/mpiexec/ckpt.c, rpim/fork's checkpoint thread).  The program
# (tests/mpi/ckpt_job.c) mixes p2p with a derived datatype, a rendezvous
# message, a message waiting in the unexpected queue, a pending
# MPI_Iallreduce, collectives on a split communicator and computation.
#  1. mpiexec --ckpt without a request: the same result as without --ckpt.
#  2. checkpoint-and-continue three times (SIGQUIT at random times), 4 ranks
#     over shmem: every checkpoint written (manifest + 4 images, which
#     kumi_ckpt --info checks), the result bit for bit the uninterrupted one.
#  3. the same over tcp (MPI_COMPONENTS=p2p=self,tcp), requested with kumi_ckpt PID.
#  4. a rank blocked in MPI_Recv and one computing outside MPI at the request;
#     the ranks asleep in poll() woken by the request.
#  5. refused with a clear message, the job going on: an RMA window with a
#     passive-target epoch open the whole run (a checkpoint waits
#     kumi_ckpt_lock_timeout for the end of the epoch); a job without --ckpt.
#  6. --checkpoint-and-stop: exit 0 once written; a truncated image is reported
#     damaged by kumi_ckpt --info (exit 1).
#  7. kumi_ckpt refuses a process that is not mpiexec.
# After every job: nothing of it left in /dev/shm.
#  8. mpiexec --restart DIR after --checkpoint-and-stop at a random time (shmem,
#     tcp, 8 ranks), after checkpoint-and-continue and SIGKILL with the folder
#     moved elsewhere, of a restarted job; the same result bit for bit, a new
#     job id; --checkpoint-interval with the thread engine, SIGKILL, restart;
#     a rank blocked in MPI_Recv at a checkpoint-and-stop, restarted; a
#     truncated image, an image of another job in a rank's place and a
#     folder without manifest refused; 8 ranks over tcp too.
set -u
. "$(dirname "$0")/lib/ckpt_frame.sh"
ckpt_setup ckpt_job ckptmpi
NP=4 ITERS=${CKPT_ITERS:-300}

# run WHAT LOG ARGS...: in the foreground
run() {
    local what=$1 log=$2; shift 2
    KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 "$@" > "$log" 2>&1 < /dev/null
}

# the reference
run ref ref.log -n $NP "$PROG" $ITERS || { show ref.log; fail "reference run"; exit 1; }
REF=$(result ref.log)
[ -n "$REF" ] && ok "reference: result $REF" || { show ref.log; fail "no reference result"; exit 1; }
shm_clean reference ref.log

# 1. --ckpt, no request
run enabled en.log --ckpt -n $NP "$PROG" $ITERS
[ "$(result en.log)" = "$REF" ] && ok "--ckpt without a request: the same result" \
    || { show en.log; fail "--ckpt without a request: result '$(result en.log)'"; }

# 2/3. checkpoint-and-continue three times
continue_test() { # NAME HOW(signal|tool) [env...]
    local name=$1 how=$2; shift 2
    local dir=$TMP/ck_$name log=$TMP/$name.log
    mkdir -p "$dir"
    env "$@" KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --ckpt-dir "$dir" -n $NP "$PROG" $ITERS > "$log" 2>&1 < /dev/null &
    local pid=$!
    wait_for "$log" "iteration 0" 60 || { show "$log"; fail "$name: the job did not start"; kill -9 $pid; wait $pid; return; }
    local k
    for k in 1 2 3; do                        # at random times past iterations 20, 40, 60
        wait_for "$log" "^iteration $((k * 20))" 120
        sleep "0.0$((RANDOM % 9))"
        if [ "$how" = tool ]; then "$KCKPT" $pid > tool.out 2>&1 || { show tool.out; fail "$name: kumi_ckpt $pid"; }
        else kill -QUIT $pid; fi
        if ! wait_for "$log" "checkpoint $k \(written\|not written\)" 120; then
            show "$log"; fail "$name: checkpoint $k did not end"; break
        fi
        grep -q "checkpoint $k written to $dir: $NP images" "$log" && ok "$name: checkpoint $k written ($(sed -n "s/.*checkpoint $k written to [^:]*: //p" "$log"))" \
            || { show "$log"; fail "$name: checkpoint $k not written"; break; }
        grep -q "^iteration $((ITERS / 10 * 10))" "$log" && { echo "note: $name: the job was near its end at checkpoint $k"; }
    done
    wait $pid; local rc=$?
    [ $rc -eq 0 ] && ok "$name: the job went on to the end (exit 0)" || { show "$log"; fail "$name: exit $rc"; }
    [ "$(result "$log")" = "$REF" ] && ok "$name: result bit for bit the uninterrupted run's" \
        || { show "$log"; fail "$name: result '$(result "$log")', expected $REF"; }
    if "$KCKPT" --info "$dir" > info.out 2>&1; then
        [ "$(grep -c ': ok$' info.out)" = $NP ] && ok "$name: kumi_ckpt --info: manifest and $NP images check out" \
            || { show info.out; fail "$name: kumi_ckpt --info"; }
    else show info.out; fail "$name: kumi_ckpt --info exit non-zero"; fi
    shm_clean "$name" "$log"
}
continue_test shmem signal
continue_test tcp tool MPI_COMPONENTS=p2p=self,tcp

# 4. a rank blocked in MPI_Recv (and rank 0 outside MPI) at the request; the
#    ranks asleep in poll() (MPI_Recv, MPI_Barrier; sleeps of 5 s here) are
#    woken by the request: their calls go over to the lock in well under a
#    second, not at the end of their sleep
mkdir -p blk
touch go; run blockref bref.log -n $NP "$PROG" 20 block 5; rm -f go
BREF=$(result bref.log)
[ -n "$BREF" ] || { show bref.log; fail "block reference run"; }
KUMI_BASE_PROGRESS_SLEEP_MS=5000 KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --ckpt-dir blk -n $NP "$PROG" 20 block 5 \
    > block.log 2>&1 < /dev/null &
pid=$!
if wait_for block.log "^blocking" 60; then
    sleep 0.3
    kill -QUIT $pid
    if wait_for block.log "checkpoint 1 \(written\|not written\)" 120 && grep -q "checkpoint 1 written" block.log; then
        ok "blocked rank: checkpoint written while rank 1 waits in MPI_Recv and rank 0 computes outside MPI"
        lat=$(sed -n 's/^kumi\[[123]\].*checkpoint 1: the library.s calls out \([0-9.]*\) ms after the request.*/\1/p' block.log \
              | sort -g | tail -1)
        [ -n "$lat" ] && awk -v l="$lat" 'BEGIN { exit !(l < 1000) }' \
            && ok "blocked rank: the ranks asleep in MPI_Recv / MPI_Barrier out of the library $lat ms after the request (at most)" \
            || { show block.log; fail "blocked rank: the sleeping ranks left the library after '$lat' ms (their 5 s sleep not woken)"; }
    else show block.log; fail "blocked rank: no checkpoint"; fi
fi
touch go
wait $pid; rc=$?; rm -f go
[ $rc -eq 0 ] && [ "$(result block.log)" = "$BREF" ] && ok "blocked rank: the job ends with the same result" \
    || { show block.log; fail "blocked rank: exit $rc, result '$(result block.log)' (expected $BREF)"; }
shm_clean "blocked rank" block.log

# 5. refusals: the job goes on
refused() { # NAME PATTERN ARGS...
    local name=$1 pat=$2; shift 2
    KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 "$@" > ref_$name.log 2>&1 < /dev/null &
    local pid=$!
    wait_for ref_$name.log "iteration 0" 60 && sleep 0.2 && kill -QUIT $pid
    wait_for ref_$name.log "$pat" 60 && ok "$name: refused: $(grep -o -- "$pat.*" ref_$name.log | head -1)" \
        || { show ref_$name.log; fail "$name: no refusal message ($pat)"; }
    wait $pid; local rc=$?
    [ $rc -eq 0 ] && [ -n "$(result ref_$name.log)" ] && ok "$name: the job went on to the end" \
        || { show ref_$name.log; fail "$name: exit $rc"; }
    [ ! -e manifest ] || { fail "$name: a manifest was written"; rm -f manifest; }
}
# (five times the iterations: on a quiet machine 300 of them end within the
# lock timeout, and the refusal then names a rank past MPI_Finalize instead)
KUMI_CKPT_LOCK_TIMEOUT=0.5 refused window "not written: rank [0-9]*: window .* passive-target epoch (MPI_Win_lock) is open for" \
    --ckpt -n $NP "$PROG" $((ITERS * 5)) win
refused disabled "checkpoints are not enabled for this job" -n $NP "$PROG" $ITERS

# 6. checkpoint-and-stop
mkdir -p stop
KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --checkpoint-and-stop --ckpt-dir stop -n $NP "$PROG" 100000 > stop.log 2>&1 < /dev/null &
pid=$!
wait_for stop.log "iteration 10" 60 && kill -QUIT $pid
wait $pid; rc=$?
if [ $rc -eq 0 ] && grep -q "checkpoint 1 written" stop.log && ! grep -q "^result" stop.log; then
    ok "--checkpoint-and-stop: exit 0 once the checkpoint is written"
else show stop.log; fail "--checkpoint-and-stop: exit $rc"; fi
"$KCKPT" --info stop > sinfo.out 2>&1 && grep -q "^  ranks $NP$" sinfo.out && ok "--checkpoint-and-stop: kumi_ckpt --info checks the images" \
    || { show sinfo.out; fail "kumi_ckpt --info stop"; }
shm_clean "checkpoint-and-stop" stop.log
img=$(sed -n 's/^rank 1 .* image \([^ ]*\) .*/\1/p' stop/manifest)
if [ -n "$img" ] && [ -f "stop/$img" ]; then
    truncate -s $(( $(stat -c %s "stop/$img") / 2 )) "stop/$img"
    if "$KCKPT" --info stop > dinfo.out 2>&1; then show dinfo.out; fail "kumi_ckpt --info accepts a truncated image"
    else grep -q "rank 1: .*DAMAGED" dinfo.out && ok "a truncated image: $(grep DAMAGED dinfo.out | head -1 | sed 's/^ *//')" \
        || { show dinfo.out; fail "truncated image: no clear message"; }
    fi
else fail "no image of rank 1 in the manifest"; fi

# 8. restart (mpiexec --restart DIR): a new job (id, secret, ports, segment
#    names) from the images; the program goes on from the cut to the same result
export KUMI_CKPT_RESTART_PROGRAM=$top_builddir/components/ckpt/image/kumi_restart
restart_check() { # NAME DIR [env...]
    local name=$1 dir=$2; shift 2
    env "$@" KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --restart "$dir" > "rs_$name.log" 2>&1 < /dev/null; local rc=$?
    [ $rc -eq 0 ] && [ "$(result "rs_$name.log")" = "$REF" ] && ok "restart $name: exit 0, result bit for bit the uninterrupted run's" \
        || { show "rs_$name.log"; fail "restart $name: exit $rc, result '$(result "rs_$name.log")', expected $REF"; }
    local j0 j1; j0=$(sed -n 's/^jobid \([0-9]*\)$/\1/p' "$dir/manifest"); j1=$(jobid "rs_$name.log")
    [ -n "$j1" ] && [ "$j1" != "$j0" ] && ok "restart $name: a new job id ($j0 -> $j1)" || fail "restart $name: job id '$j0' -> '$j1'"
    shm_clean "restart $name" "rs_$name.log"
}
stop_at_random() { # NAME DIR NP [env...]: --checkpoint-and-stop at a random time
    local name=$1 dir=$2 np=$3; shift 3
    mkdir -p "$dir"
    env "$@" KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --checkpoint-and-stop --ckpt-dir "$dir" -n $np "$PROG" $ITERS > "st_$name.log" 2>&1 < /dev/null &
    local pid=$!
    wait_for "st_$name.log" "iteration $((RANDOM % 5 * 10))" 60 && sleep "0.0$((RANDOM % 9))" && kill -QUIT $pid
    wait $pid; local rc=$?
    [ $rc -eq 0 ] && grep -q "checkpoint 1 written" "st_$name.log" && ! grep -q "^result" "st_$name.log" \
        && ok "$name: stopped at $(grep '^iteration' "st_$name.log" | tail -1) with a checkpoint" \
        || { show "st_$name.log"; fail "$name: checkpoint-and-stop exit $rc"; return 1; }
    shm_clean "$name (stopped)" "st_$name.log"
}
stop_at_random shmem rs_shm $NP && restart_check shmem rs_shm
stop_at_random tcp rs_tcp $NP MPI_COMPONENTS=p2p=self,tcp && restart_check tcp rs_tcp MPI_COMPONENTS=p2p=self,tcp
REF4=$REF
run ref8 ref8.log -n 8 "$PROG" $ITERS && REF=$(result ref8.log)
stop_at_random shmem8 rs_shm8 8 && restart_check "8 ranks shmem" rs_shm8
stop_at_random tcp8 rs_tcp8 8 MPI_COMPONENTS=p2p=self,tcp && restart_check "8 ranks tcp" rs_tcp8 MPI_COMPONENTS=p2p=self,tcp
REF=$REF4
# continue, SIGKILL the job, restart from the last checkpoint, in another directory
mkdir -p kc
KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --ckpt-dir kc -n $NP "$PROG" $ITERS > kc.log 2>&1 < /dev/null &
pid=$!
wait_for kc.log "iteration 10" 60 && sleep "0.0$((RANDOM % 9))" && kill -QUIT $pid
if wait_for kc.log "checkpoint 1 written" 60; then
    kill -KILL $pid; wait $pid 2>/dev/null
    mkdir -p elsewhere && mv kc elsewhere/
    ok "continue, then SIGKILL to mpiexec at $(grep '^iteration' kc.log | tail -1)"
    sleep 2                                   # the ranks see their launcher gone, clean up and exit
    shm_clean "SIGKILLed job" kc.log
    restart_check "after SIGKILL, moved" elsewhere/kc
    # a restarted job checkpoints (and-stop) and restarts again
    mkdir -p again
    KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --checkpoint-and-stop --ckpt-dir again --restart elsewhere/kc > again.log 2>&1 < /dev/null &
    pid=$!
    sleep 0.3; kill -QUIT $pid; wait $pid
    if grep -q "checkpoint 1 written" again.log; then restart_check "of a restarted job" again
    else echo "note: the restarted job ended before its checkpoint"; fi
else show kc.log; fail "no checkpoint to kill and restart"; kill -9 $pid; fi
# --checkpoint-interval with the thread engine (a progress thread in every
# rank), SIGKILL, restart: the folder holds one checkpoint (4 images)
mkdir -p iv
KUMI_BASE_SCHED_ENGINE=thread KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --checkpoint-interval 0.25 --ckpt-dir iv -n $NP "$PROG" $ITERS > iv.log 2>&1 < /dev/null &
pid=$!
if wait_for iv.log "checkpoint 2 written" 120; then
    kill -KILL $pid; wait $pid 2>/dev/null; sleep 2
    # the manifest's images, and none of an earlier checkpoint (a next one,
    # cut short by the SIGKILL on a loaded machine, may have left its own)
    last=$(sed -n 's/^rank .* image image\.r[0-9]*\.j[0-9]*\.c\([0-9]*\) .*/\1/p' iv/manifest | sort -u)
    named=$(sed -n 's/^rank .* image \([^ ]*\) .*/\1/p' iv/manifest | while read -r i; do [ -f "iv/$i" ] && echo "$i"; done | wc -l)
    older=$(ls iv | grep '^image\.' | grep -v -E "\.c($last|$((${last:-0} + 1)))\$" | wc -l)
    [ "$named" = $NP ] && [ "$older" = 0 ] && ok "--checkpoint-interval: $(grep -c 'checkpoint [0-9]* written' iv.log) checkpoints, the folder holds the last one's $NP images" \
        || { ls iv; fail "--checkpoint-interval: $named of the manifest's images, $older of earlier checkpoints in the folder"; }
    restart_check "thread engine, interval" iv KUMI_BASE_SCHED_ENGINE=thread
else show iv.log; fail "--checkpoint-interval: no second checkpoint"; kill -9 $pid; fi
# a rank blocked in MPI_Recv at a --checkpoint-and-stop, restarted
mkdir -p bstop; rm -f go
KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --checkpoint-and-stop --ckpt-dir bstop -n $NP "$PROG" 20 block 5 > bstop.log 2>&1 < /dev/null &
pid=$!
wait_for bstop.log "^blocking" 60 && sleep 0.3 && kill -QUIT $pid
wait $pid
if grep -q "checkpoint 1 written" bstop.log; then
    touch go
    "$MPIEXEC" --timeout 300 --restart bstop > bstop_r.log 2>&1 < /dev/null; rc=$?
    [ $rc -eq 0 ] && [ "$(result bstop_r.log)" = "$BREF" ] && ok "blocked rank, stopped and restarted: the receive completes, the same result" \
        || { show bstop_r.log; fail "blocked rank restarted: exit $rc, result '$(result bstop_r.log)', expected $BREF"; }
    rm -f go
else show bstop.log; fail "blocked rank: no checkpoint-and-stop"; fi
# a damaged image: the restart fails with a clear message
cp -r rs_shm bad && img=$(sed -n 's/^rank 2 .* image \([^ ]*\) .*/\1/p' bad/manifest)
truncate -s 100000 "bad/$img"
"$MPIEXEC" --timeout 60 --restart bad > bad.log 2>&1 < /dev/null; rc=$?
[ $rc -ne 0 ] && grep -qi "truncated\|damaged\|checksum" bad.log && ok "restart from a truncated image: exit $rc, $(grep -i 'truncated\|damaged\|checksum' bad.log | head -1)" \
    || { show bad.log; fail "restart from a truncated image: exit $rc"; }
"$MPIEXEC" --restart "$TMP/nothing" > none.log 2>&1 < /dev/null && fail "--restart of a folder without a manifest" \
    || ok "$(head -1 none.log)"
# an image of another job (rank 2's of the tcp job) in the place of rank 2's:
# refused by the restart program before anything changes (the writer's pid
# and size are not the manifest's), the job ends with the message
cp -r rs_shm foreign && img=$(sed -n 's/^rank 2 .* image \([^ ]*\) .*/\1/p' foreign/manifest) \
    && oimg=$(sed -n 's/^rank 2 .* image \([^ ]*\) .*/\1/p' rs_tcp/manifest) && cp "rs_tcp/$oimg" "foreign/$img"
KUMI_VERBOSE=1 "$MPIEXEC" --timeout 60 --restart foreign > foreign.log 2>&1 < /dev/null; rc=$?
[ $rc -ne 0 ] && grep -q "an image of another job or program, refused" foreign.log && ! grep -q "^result" foreign.log \
    && ok "restart with an image of another job: exit $rc, $(grep -o 'written by process.*refused' foreign.log | head -1)" \
    || { show foreign.log; fail "restart with an image of another job: exit $rc, no clear refusal"; }
shm_clean "restart with an image of another job" foreign.log
"$KCKPT" --info foreign > finfo.out 2>&1 && { show finfo.out; fail "kumi_ckpt --info accepts an image of another job"; } \
    || { grep -q "rank 2: .*DAMAGED: written by process .* an image of another job or program" finfo.out \
        && ok "kumi_ckpt --info: $(grep 'rank 2:' finfo.out | sed 's/^ *//')" || { show finfo.out; fail "kumi_ckpt --info: an image of another job not named"; }; }

# 7. kumi_ckpt on a process that is not mpiexec
sleep 30 & spid=$!
if "$KCKPT" $spid > nm.out 2>&1; then fail "kumi_ckpt signalled a process that is not mpiexec"
else grep -q "not mpiexec" nm.out && ok "kumi_ckpt: $(cat nm.out)" || { show nm.out; fail "kumi_ckpt: unclear refusal"; }
fi
kill $spid 2>/dev/null; wait $spid 2>/dev/null

[ $failures -eq 0 ] && { echo "all passed"; exit 0; }
echo "$failures failure(s)"; exit 1
