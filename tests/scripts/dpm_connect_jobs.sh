#!/bin/bash
# dpm_connect_jobs: MPI_Comm_accept / MPI_Comm_connect / MPI_Comm_join between
# two separately started jobs (issue 23; tests/mpi/conf_dpm_connect.c does the
# checks: point-to-point both ways, collectives on the intercommunicator,
# merge, disconnect):
#   2 + 3 processes and 1 + 1, transports as chosen by default;
#   3 + 2 with MPI_COMPONENTS=p2p=self,shmem,tcp: inside each job shmem
#     (checked in KUMI_VERBOSE's table), across the jobs tcp (the added peers
#     logged), even though tcp closed its listeners at start-up;
#   3 + 2 with p2p=self,tcp only, where the server's rank 0 also poses as a
#     process of another job on its own listeners (closed unanswered); 2 + 3 with coll/basic only;
#   2 + a singleton (a program started without mpiexec) connecting;
#   1 + 1 through MPI_Comm_join over a TCP connection the programs open;
#   a job without p2p/tcp accepting: both sides fail with an error that
#     names p2p/tcp, nobody hangs.
set -u
: "${TESTBIN:?}" "${MPIEXEC:?}"
prog=$TESTBIN/conf_dpm_connect
[ -x "$prog" ] || { echo "FAIL: $prog not built"; exit 1; }
top=$(mktemp -d /tmp/kumi-dpm-connect.XXXXXX) || exit 1
trap 'rm -rf "$top"' EXIT
mkdir "$top/names"
export KUMI_DPM_NAME_DIR=$top/names
cd "$TESTBIN" || exit 1
fail=0

# pair NAME "SERVER-MPIEXEC-ARGS" SERVER-MODE "CLIENT-MPIEXEC-ARGS" CLIENT-MODE
# (CLIENT-MPIEXEC-ARGS "singleton": the client runs without mpiexec)
pair() {
    local name=$1 sargs=$2 smode=$3 cargs=$4 cmode=$5 d=$top/$1 src crc
    mkdir "$d"
    # shellcheck disable=SC2086
    "$MPIEXEC" --timeout 100 $sargs ./conf_dpm_connect "$smode" "$d" > "$d/server.out" 2>&1 &
    local spid=$!
    if [ "$cargs" = singleton ]; then       # started without mpiexec
        timeout 100 ./conf_dpm_connect "$cmode" "$d" > "$d/client.out" 2>&1
    else
        # shellcheck disable=SC2086
        "$MPIEXEC" --timeout 100 $cargs ./conf_dpm_connect "$cmode" "$d" > "$d/client.out" 2>&1
    fi
    crc=$?
    wait $spid
    src=$?
    if [ $src -ne 0 ] || [ $crc -ne 0 ]; then
        sed 's/^/    server| /' "$d/server.out" | tail -30
        sed 's/^/    client| /' "$d/client.out" | tail -30
        echo "FAIL: $name: server exited $src, client $crc"
        fail=1
        return 1
    fi
    grep -q "conf_dpm_connect $smode: ok" "$d/server.out" && grep -q "conf_dpm_connect $cmode: ok" "$d/client.out" ||
        { echo "FAIL: $name: no ok line"; fail=1; return 1; }
    echo "$name: ok"
}

pair 2x3 "-n 2" server "-n 3" client
pair 1x1 "-n 1" server "-n 1" client
if pair shmem "-x DPM_STRAY=1 -x KUMI_VERBOSE=2 -x MPI_COMPONENTS=p2p=self,shmem,tcp -n 3" server \
        "-x MPI_COMPONENTS=p2p=self,shmem,tcp -n 2" client; then
    o=$top/shmem/server.out
    for r in 0 1 2; do
        grep -q "^kumi\[$r\]: p2p/shmem serves ranks" "$o" && ! grep -q "^kumi\[$r\]: p2p/tcp serves" "$o" ||
            { grep "serves" "$o"; echo "FAIL: shmem: rank $r does not reach its job over shmem only"; fail=1; }
        n=$(grep -c "^kumi\[$r\]: p2p/tcp: peer [0-9]* is rank [01] of job" "$o")
        [ "$n" = 2 ] || { grep "p2p/tcp" "$o"; echo "FAIL: shmem: rank $r added $n tcp peers, not 2"; fail=1; }
    done
fi
pair tcp "-x DPM_STRAY=1 -x MPI_COMPONENTS=p2p=self,tcp -n 3" server "-x MPI_COMPONENTS=p2p=self,tcp -n 2" client
pair basic "-x MPI_COMPONENTS=coll=basic -n 2" server "-x MPI_COMPONENTS=coll=basic -n 3" client
pair singleton "-n 2" server singleton client
pair join "-n 1" jserver "-n 1" jclient
pair notcp "-x MPI_COMPONENTS=p2p=self,shmem -n 2" notcp "-n 2" client-fail
[ -z "$(ls -A "$top/names")" ] || { ls -la "$top/names"; echo "FAIL: names left in the service directory"; fail=1; }
[ $fail = 0 ] && echo "dpm_connect_jobs: ok"
exit $fail
