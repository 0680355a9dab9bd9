#!/bin/bash
# mpiexec sees its ranks end whatever signal state it starts with:
# 1. a library loaded before main starts threads that leave SIGCHLD
#    unblocked (as the CUDA driver's do, started by cuInit in a component's
#    open): such a thread may take SIGCHLD and drop it; mpiexec used to wait
#    for it forever (2 of 5 runs of `mpiexec -n 2 true` here); it now also
#    looks for exited children every 0.25 s;
# 2. SIGCHLD ignored by mpiexec's parent (kept across exec): the kernel would
#    reap the ranks itself and send nothing; mpiexec resets it, and its ranks
#    start with SIGCHLD at the default (their own waitpid works);
# both on this host and through proxies (--launcher fork).
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
: "${MPIEXEC:=$top_builddir/tools/mpiexec/mpiexec}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kumi-signals.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures+1)); }

cat > "$TMP/threads.c" << 'EOF'
#include <pthread.h>
#include <unistd.h>
static void *idle(void *a) { (void)a; for (;;) pause(); return 0; }
__attribute__((constructor)) static void start(void)
{
    pthread_t t;
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t, 0, idle, 0) == 0) pthread_detach(t);
}
EOF
${CC:-cc} -shared -fPIC -o "$TMP/threads.so" "$TMP/threads.c" -lpthread || { echo "FAIL: the helper does not build"; exit 1; }

# each run: the expected exit status, then the command; bounded by timeout(1)
run() { # NAME WANT CMD...
    local name=$1 want=$2 t0 rc
    shift 2
    t0=$(date +%s%N)
    timeout -k 2 20 "$@" > "$TMP/out" 2>&1
    rc=$?
    local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    if [ $rc -ne "$want" ]; then
        fail "$name: exit $rc, expected $want ($ms ms)"
        sed 's/^/    /' "$TMP/out" | tail -5
    elif [ $ms -gt 5000 ]; then
        fail "$name: $ms ms"
    else
        echo "ok: $name ($ms ms)"
    fi
}

for launcher in "" "--launcher fork"; do
    l=${launcher:-this host}
    for i in 1 2 3 4 5 6; do
        # shellcheck disable=SC2086
        run "$l: threads with SIGCHLD unblocked, run $i" 0 env LD_PRELOAD="$TMP/threads.so" "$MPIEXEC" $launcher -n 2 true
    done
    # shellcheck disable=SC2086
    run "$l: threads with SIGCHLD unblocked, a rank fails" 3 env LD_PRELOAD="$TMP/threads.so" \
        "$MPIEXEC" $launcher -n 2 sh -c 'exit 3'
    # shellcheck disable=SC2086
    run "$l: SIGCHLD ignored by the parent" 0 bash -c "trap '' CHLD; exec \"$MPIEXEC\" $launcher -n 2 true"
    # the ranks get SIGCHLD at the default: bit 17 of SigIgn (0x10000) clear
    # shellcheck disable=SC2086
    run "$l: a rank's SIGCHLD is at the default" 0 bash -c "trap '' CHLD; exec \"$MPIEXEC\" $launcher -n 1 \
        sh -c 'i=\$(sed -n \"s/^SigIgn:[[:space:]]*//p\" /proc/self/status); [ \$(( 0x\$i & 0x10000 )) -eq 0 ]'"
done
[ $failures -eq 0 ] || { echo "$failures failed"; exit 1; }
echo "all checks passed"
