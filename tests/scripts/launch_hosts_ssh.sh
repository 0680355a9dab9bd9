#!/bin/bash
# launch_hosts_ssh: mpiexec across hosts made of namespaces (netlab.sh), each
# with its own sshd: one proxy per host over ssh.  2, 4 and 8 hosts; 64 ranks
# over 4 hosts; a ring, the collectives and RMA across hosts; placement
# (hostfile slots, --map-by node, -ppn) seen through --tag-output hostname;
# ranks on different hosts use a network transport, ranks of one host shmem;
# -x, -wdir, stdin to rank 0, exit codes and MPI_Abort through the proxies;
# the secret never on a command line; the launch agent with nsenter; and
# nothing left on the hosts (processes, /dev/shm) afterwards.
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}" "${top_srcdir:?}"
for p in p2p_ring coll_all rma_ops core_init launch_env launch_stdin launch_fail; do
    [ -x "$TESTBIN/$p" ] || { echo "SKIP: $p not built"; exit 77; }
done
. "$top_srcdir/tests/scripts/netlab.sh"
netlab_up 8 || { echo "FAIL: the lab does not come up"; exit 1; }
D=$NETLAB_DIR
cd "$TESTBIN" || exit 1
export MPIEXEC_TIMEOUT=120
fail() { echo "FAIL: $*"; exit 1; }
run() { # mpiexec arguments...: on the head h0, over the lab's ssh; output in $D/out, $D/err
    netlab_exec 0 "$MPIEXEC" --launch-agent "$NETLAB_SSH" "$@" > "$D/out" 2> "$D/err" < /dev/null
}
must() { # description, mpiexec arguments...
    local what=$1
    shift
    local t0=$SECONDS
    run "$@" || { cat "$D/out" "$D/err"; fail "$what: exit status $?"; }
    echo "ok: $what ($((SECONDS - t0)) s)"
}

# placement, seen through the ranks' host names
printf 'h1 slots=2\nh2:3 # MPICH form\n\n# comment\nh3\n' > "$D/hf"
must "hostfile placement" --hostfile "$D/hf" --tag-output hostname
got=$(sed -n 's/^\[[0-9]*,\([0-9]*\)\]<stdout>: /\1 /p' "$D/out" | sort -n | awk '{printf "%s ", $2}')
[ "$got" = "h1 h1 h2 h2 h2 h3 " ] || fail "hostfile placement: $got"
must "map-by node" --hostfile "$D/hf" -n 5 --map-by node --tag-output hostname
got=$(sed -n 's/^\[[0-9]*,\([0-9]*\)\]<stdout>: /\1 /p' "$D/out" | sort -n | awk '{printf "%s ", $2}')
[ "$got" = "h1 h2 h3 h1 h2 " ] || fail "map-by node: $got"
must "ppn" --hostfile "$NETLAB_DIR/hosts8" -ppn 2 -n 6 --tag-output hostname
got=$(sed -n 's/^\[[0-9]*,\([0-9]*\)\]<stdout>: /\1 /p' "$D/out" | sort -n | awk '{printf "%s ", $2}')
[ "$got" = "h1 h1 h2 h2 h3 h3 " ] || fail "ppn: $got"

# MPI programs across 2, 4 and 8 hosts
KUMI_VERBOSE=1 must "ring over 2 hosts" -host h1:2,h2:2 -x KUMI_VERBOSE=1 ./p2p_ring
grep -q "kumi\[0\]: p2p/shmem serves ranks 1$" "$D/err" || { cat "$D/err"; fail "rank 0: shmem must serve rank 1 (same host) only"; }
grep "kumi\[0\]: p2p/.* serves ranks 2-3" "$D/err" | grep -q -v shmem || { cat "$D/err"; fail "rank 0: ranks 2-3 (other host) not over a network transport"; }
must "collectives over 4 hosts" -host h1:2,h2:2,h3:2,h4:2 ./coll_all
must "RMA over 4 hosts" -host h1,h2,h3,h4 ./rma_ops
must "ring over 8 hosts" --hostfile "$NETLAB_DIR/hosts8" ./p2p_ring
KUMI_VERBOSE=2 must "collectives over 8 hosts, proxies started as a tree (--fanout 2)" --fanout 2 --hostfile "$NETLAB_DIR/hosts8" ./coll_all
grep -q "host h7: started by the proxy of host h3" "$D/err" || { grep "started" "$D/err"; fail "--fanout 2: h7 not started by h3"; }
# (over tcp: p2p/ofi's start-up costs about 0.4 s of CPU per rank on a
# multi-host job here (libfabric reads /proc/kallsyms), 64 x that on 2 cores)
must "64 ranks over 4 hosts" -host h1:16,h2:16,h3:16,h4:16 -x MPI_COMPONENTS="p2p=self,shmem,tcp" ./core_init
grep -q "ok (64 ranks)" "$D/out" || { cat "$D/out"; fail "64 ranks: no success line"; }

# environment, folder, stdin
mkdir -p "$D/wd"
must "-x and environment" -host h1:2,h2:2 -x LAB_X=one -x LAB_Y=two=2 ./launch_env LAB_X=one LAB_Y=two=2
must "-wdir" -host h1,h2 -wdir "$D/wd" --tag-output pwd
[ "$(grep -c "<stdout>: $D/wd$" "$D/out")" = 2 ] || { cat "$D/out"; fail "-wdir: ranks not in $D/wd"; }
seq 1 20000 > "$D/in"
netlab_exec 0 "$MPIEXEC" --launch-agent "$NETLAB_SSH" -host h2,h1:2 ./launch_stdin < "$D/in" > "$D/out" 2> "$D/err" ||
    { cat "$D/err"; fail "stdin: exit status $?"; }
cmp -s "$D/in" "$D/out" || fail "stdin: rank 0 on h2 did not get mpiexec's stdin"
echo "ok: stdin to rank 0"

# failures keep their exit codes
run -host h1:2,h2:2 ./launch_fail exit 3 7
rc=$?
[ $rc = 7 ] || { cat "$D/err"; fail "a rank's exit 7 on h2: mpiexec exit $rc"; }
grep -q "rank 3 .*exited with status 7" "$D/err" || { cat "$D/err"; fail "exit 7: no message naming rank 3"; }
run -host h1:2,h2:2 ./launch_fail abort 2 5
rc=$?
[ $rc = 5 ] || { cat "$D/err"; fail "MPI_Abort(5) on h2: mpiexec exit $rc"; }
grep -q "rank 2 called MPI_Abort" "$D/err" || { cat "$D/err"; fail "abort: no message"; }
echo "ok: exit codes and MPI_Abort through the proxies"

# the secret never on a command line: a job that runs while we look
netlab_bg 0 "$D/out" "$D/err" "$MPIEXEC" --launch-agent "$NETLAB_SSH" -host h1,h2 ./launch_fail hang
mp=$NETLAB_BG
sleep 3
for i in 1 2; do
    s=$(for p in $(netlab_ps "$i" | awk '$2 == "launch_fail" {print $1}'); do
            tr "\\0" "\\n" < "/proc/$p/environ" | grep -a -o "^KUMI_JOB_SECRET=[0-9a-f]*"; done | head -1)
    [ -n "$s" ] || fail "no rank of the hanging job on h$i"
    s=${s#KUMI_JOB_SECRET=}
    echo "$s" > "$D/secret"            # (a pattern file: on grep's own command line it would match itself)
    if grep -l -a -F -f "$D/secret" /proc/[0-9]*/cmdline 2> /dev/null | grep -q .; then
        fail "the job secret is on a command line: $(grep -l -a -F -f "$D/secret" /proc/[0-9]*/cmdline)"
    fi
done
# ...and no port of mpiexec open to the network: the head h0 runs nothing
# but mpiexec and its ssh clients, so any listening TCP socket there that is
# not on loopback would be mpiexec's (the proxies speak over ssh's stdio)
lis=$(netlab_exec 0 cat /proc/net/tcp /proc/net/tcp6 2> /dev/null |
      awk '$4 == "0A" && $2 !~ /^0100007F:/ && $2 !~ /^0{31}1:/ {print $2}')
[ -z "$lis" ] || fail "mpiexec listens on a network address during a job over ssh: $lis"
kill -TERM $mp
wait $mp
rc=$?
[ $rc = $((128 + 15)) ] || { cat "$D/err"; fail "SIGTERM to mpiexec: exit $rc"; }
echo "ok: secret not on any command line, no listening port on the head; SIGTERM forwarded"

# the launch agent without ssh (nsenter), and the parameter form
must "launch agent nsenter" --launch-agent "$D/agent" -host h3:2,h4:2 ./p2p_ring
netlab_exec 0 env KUMI_RPIM_SSH_AGENT="$NETLAB_SSH" "$MPIEXEC" -host h5,h6 ./core_init > "$D/out" 2> "$D/err" ||
    { cat "$D/err"; fail "KUMI_RPIM_SSH_AGENT: exit $?"; }
echo "ok: agent from KUMI_RPIM_SSH_AGENT"

# nothing left behind on any host
sleep 0.5
for ((i = 1; i <= 8; i++)); do
    left=$(netlab_ps "$i" | grep -v -E " (sshd|sleep)$"; netlab_exec "$i" ls /dev/shm)
    [ -z "$left" ] || fail "left on h$i: $left"
done
echo "ok: nothing left on the hosts"
exit 0
