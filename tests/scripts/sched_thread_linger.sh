#!/bin/bash
# Thread engine (issue 22 item 4): an application that waits at once for its non-blocking collectives
# and stays out of the library for 8 ms between them (sched_thread_wake part 5; parts 1-3 let the thread
# fall asleep on purpose, part 4 runs them 1 ms apart) finds the progress thread dozing at its starts:
# no start pays a FUTEX_WAKE (and the thread's switch-in in the middle of the collective).  The
# thread lingers 3 x kumi_base_sched_thread_doze_max_us (12 ms) after the last start, not 5 ms.
# Checked with the thread's own count (KUMI_VERBOSE=2: "woken by N starts"): before, the thread fell
# asleep 5 ms after each start and each of part 5's 100 starts woke it (about 100 in all); now the
# parts 1-3 (3 rounds after 0.3 s asleep, 2 starts each at most) and the odd late doze on a loaded
# host: at most 40.  With kumi_base_sched_thread_doze_max_us=1000 (linger 5 ms again) the count must
# exceed it (the program's switch bounds, made for 4 ms dozes, not checked then): the check can fail.
set -u
run() {  # run ARG EXTRA_ENV...: prints rank 0's "woken by N starts" count, or FAIL
    local arg=$1; shift
    out=$(cd "$TESTBIN" && env KUMI_VERBOSE=2 KUMI_BASE_SCHED_ENGINE=thread KUMI_BASE_PROGRESS_SLEEP_MS=60000 "$@" \
          timeout 150 "$MPIEXEC" --timeout 120 -n 2 ./sched_thread_wake $arg 2>&1)
    rc=$?
    n=$(echo "$out" | sed -n 's/^kumi\[0\]: .*was woken by \([0-9]*\) starts.*/\1/p' | head -1)
    if [ $rc -ne 0 ] || [ -z "$n" ]; then
        echo "$out" | tail -20 >&2
        echo "FAIL: sched_thread_wake exit $rc, no summary of rank 0's progress thread" >&2
        echo FAIL
        return
    fi
    echo "$n"
}
n=$(run bound)
[ "$n" = FAIL ] && exit 1
short=$(run nobound KUMI_BASE_SCHED_THREAD_DOZE_MAX_US=1000)
[ "$short" = FAIL ] && exit 1
echo "rank 0's progress thread woken by $n starts (linger 12 ms), by $short with a 1 ms doze cap (linger 5 ms)"
[ "$n" -le 40 ] || { echo "FAIL: woken by $n starts (at most 40): the starts 8 ms apart found it asleep"; exit 1; }
[ "$short" -gt 40 ] || { echo "FAIL: with a 5 ms linger only $short starts woke it (more than 40 expected): the check cannot fail"; exit 1; }
echo ok
