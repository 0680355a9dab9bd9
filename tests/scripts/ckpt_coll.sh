#!/bin/bash
# Checkpoints of jobs whose small collectives run on coll/sm's shared-memory
# segments (issue 20; components/coll/sm/coll_sm.c "checkpoints",
# framework/mpi/ckpt.c).  tests/mpi/ckpt_coll runs small blocking
# collectives on MPI_COMM_WORLD and on a split communicator in a loop, with
# uneven computation between them (ranks wait inside collectives), 4 ranks
# on one host:
#  1. checkpoint-and-continue twice at random times: both written, coll/sm's
#     segments in use at each (its KUMI_VERBOSE line), the result bit for bit
#     the uninterrupted run's;
#  2. --checkpoint-and-stop at a random time, then mpiexec --restart (the
#     segments made again under the new job's names): the same result; with
#     p2p over shmem and over tcp, and with the thread schedule engine;
# after every job nothing of it left in /dev/shm.
set -u
. "$(dirname "$0")/lib/ckpt_frame.sh"
ckpt_setup ckpt_coll ckptcoll
export KUMI_CKPT_RESTART_PROGRAM=$top_builddir/components/ckpt/image/kumi_restart
NP=4 ITERS=${CKPT_ITERS:-3000}
# coll/sm ran (each rank has a segment of MPI_COMM_WORLD and one of its half)
# and kept them through each checkpoint: its KUMI_VERBOSE line, once per rank
# and checkpoint
sm_used() { # WHAT LOG COUNT
    local n b; n=$(grep -c "coll/sm: 2 segments kept through the checkpoint" "$2")
    b=$(grep -c "coll/sm: 2 segments kept through the checkpoint ([1-9]" "$2")
    [ "$n" = "$3" ] && ok "$1: coll/sm's segments in use at the checkpoint ($n lines; $b with a collective in progress)" \
        || { show "$2"; fail "$1: $n of $3 lines of coll/sm's segments kept through the checkpoint"; }
}
ckpt_hook_continued() { sm_used continue "$1" $((NP * 2)); }
ckpt_hook_stopped() { sm_used "$1 (stopped)" "$2" $NP; }
ckpt_hook_restarted() { # NAME LOG: every rank's segments made again under the new job's names
    local made; made=$(grep -c "coll/sm: restart: 2 segments shared again, 0 given up" "$2")
    [ "$made" = $NP ] && ok "$1: every rank's two segments shared again at the restart" \
        || { show "$2"; fail "$1: $made of $NP ranks said they shared their 2 segments again"; }
}

ckpt_reference $ITERS
# 1. checkpoint-and-continue twice
ckpt_continue 400 $ITERS
# 2. stop at a random time, restart
ckpt_stop_restart shmem -- $ITERS
ckpt_stop_restart tcp MPI_COMPONENTS=p2p=self,tcp -- $ITERS
ckpt_stop_restart thread KUMI_BASE_SCHED_ENGINE=thread -- $ITERS
ckpt_finish
