#!/bin/bash
# Pipelined blocking MPI_Bcast / MPI_Reduce / MPI_Allreduce on device buffers
# (framework/mpi/coll_accel.c) with the stand-in driver
# (tests/scripts/lib/fakecuda.c: asynchronous copies run only when their
# event is waited for): tests/mpi/gpu_coll_pipe at 1-4 ranks with pieces of
# an odd size (65537 bytes), over tcp, with the default parameters on 16 MiB
# (8 pieces of 2 MiB), with kumi_base_accel_coll_pipeline=0 (whole
# staging, no pieces), and with a driver without streams (FAKECUDA_NOSTREAM:
# the same pieces, copied synchronously), and with rank 1 of 3 on other parameters (another
# chunk; the pipeline off): the processes do not agree (key kumi.cpipe), so every one stages
# whole (no pieces anywhere; cutting at different places would mismatch the messages).  The
# program checks every value and the pieces each call ran (MPI_T counter accel_coll_pieces).
# The same with the non-blocking calls (nb: MPI_Ibcast ... MPI_Wait; the root of a broadcast
# must return before it read the whole device buffer: nb-early, pieces of 256 KiB above the
# eager limit) and the persistent ones (pers: each
# started twice), on the loop, thread and io_uring schedule engines, over tcp, without
# streams, and mixed (no pieces anywhere).
set -u
. "$(dirname "$0")/lib/fakecuda.sh"
fakecuda_setup gpu_coll_pipe
run() { # NP THRESHOLD CHUNK N SYNC [mpiexec args...]
    local np=$1 t=$2 c=$3 n=$4 y=$5; shift 5
    (cd "$TESTBIN" && "$MPIEXEC" --timeout 240 -x KUMI_ACCEL_CUDA_LIBRARY="$TMP/libcuda.so.1" \
        -x KUMI_BASE_ACCEL_COLL_PIPELINE=$t -x KUMI_BASE_ACCEL_COLL_CHUNK=$c "$@" -n "$np" ./gpu_coll_pipe $t $c $n $y) \
        > "$TMP/run" 2>&1
}
# rank 1 with NAME=VALUE, the others with the job's parameters; the program expects no pieces
run_mixed() { # NAME=VALUE [mpiexec args...]
    local m=$1; shift
    (cd "$TESTBIN" && "$MPIEXEC" --timeout 240 -x KUMI_ACCEL_CUDA_LIBRARY="$TMP/libcuda.so.1" "$@" \
        -x KUMI_BASE_ACCEL_COLL_PIPELINE=100000 -x KUMI_BASE_ACCEL_COLL_CHUNK=65537 -x MIXED="$m" -n 3 \
        /bin/sh -c '[ "$KUMI_RANK" = 1 ] && export "$MIXED"; exec ./gpu_coll_pipe 0 65537 300007') > "$TMP/run" 2>&1
}
for a in "1 100000 65537 300007" "2 100000 65537 300007" "3 100000 65537 300007" "4 100000 65537 300007" \
         "3 100000 65537 200001 tcp" "2 4194304 2097152 4194305" "3 0 65537 300007" "3 100000 65537 300007 nostream" \
         "1 100000 65537 300007 nb" "2 100000 65537 300007 nb" "3 100000 65537 300007 nb" "4 100000 65537 300007 nb" \
         "2 100000 65537 300007 pers" "4 100000 65537 300007 pers" "3 100000 65537 200001 nb-tcp" \
         "3 100000 65537 300007 nb-thread" "3 100000 65537 300007 pers-thread" "3 100000 65537 300007 nb-uring" \
         "3 100000 65537 300007 nb-nostream" "3 0 65537 300007 nb" "2 4194304 2097152 4194305 nb" \
         "2 100000 262147 300007 nb-early" "4 100000 262147 300007 nb-early"; do
    set -- $a
    extra=()
    case "${5:-}" in nb*) extra+=(-x GPU_COLL_FORM=nb) ;; pers*) extra+=(-x GPU_COLL_FORM=pers) ;; esac
    case "${5:-}" in *early) extra+=(-x GPU_COLL_EARLY=1) ;; esac
    case "${5:-}" in *tcp|*uring) extra+=(-x MPI_COMPONENTS=p2p=self,tcp) ;; esac
    case "${5:-}" in *nostream) extra+=(-x FAKECUDA_NOSTREAM=1) ;; esac
    case "${5:-}" in *thread) extra+=(-x KUMI_BASE_SCHED_ENGINE=thread) ;; esac
    case "${5:-}" in *uring) extra+=(-x KUMI_BASE_SCHED_ENGINE=uring) ;; esac
    what="gpu_coll_pipe at $1 ranks, threshold $2, chunk $3, $4 elements${5:+, $5}"
    if run "$1" "$2" "$3" "$4" "$(case "${5:-}" in *nostream) echo sync ;; esac)" "${extra[@]}"; then ok "$what"
    else fail "$what:"; sed 's/^/    /' "$TMP/run" | tail -15; fi
done
for m in KUMI_BASE_ACCEL_COLL_CHUNK=131072 KUMI_BASE_ACCEL_COLL_PIPELINE=0 nb:KUMI_BASE_ACCEL_COLL_PIPELINE=0; do
    what="gpu_coll_pipe at 3 ranks, rank 1 with $m: no pieces anywhere, every value right"
    if [ "${m#nb:}" != "$m" ] && run_mixed "${m#nb:}" -x GPU_COLL_FORM=nb; then ok "$what"
    elif [ "${m#nb:}" = "$m" ] && run_mixed "$m"; then ok "$what"
    else fail "$what:"; sed 's/^/    /' "$TMP/run" | tail -15; fi
done
[ "$failures" -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$failures check(s) failed"; exit 1
