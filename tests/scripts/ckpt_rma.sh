#!/bin/bash
# Checkpoints of jobs with RMA windows (issue 20; framework/rma/rma_ckpt.c,
# framework/mpi/ckpt.c).  tests/mpi/ckpt_rma does fence epochs and
# lock / unlock epochs in a loop on two windows (MPI_Win_allocate: the host's
# shared segment; MPI_Win_create: CMA by process id), 4 ranks on one host:
#  1. checkpoint-and-continue twice at random times (shmem): both written, the
#     result bit for bit the uninterrupted run's;
#  2. --checkpoint-and-stop at a random time, then mpiexec --restart (the
#     segments shared again, new process ids): the same result; over shmem
#     and over tcp;
# after every job nothing of it left in /dev/shm.
set -u
. "$(dirname "$0")/lib/ckpt_frame.sh"
ckpt_setup ckpt_rma ckptrma
export KUMI_CKPT_RESTART_PROGRAM=$top_builddir/components/ckpt/image/kumi_restart
ITERS=${CKPT_ITERS:-200}

ckpt_reference $ITERS
# 1. checkpoint-and-continue twice
ckpt_continue 40 $ITERS
# 2. stop at a random time, restart
ckpt_stop_restart shmem -- $ITERS
ckpt_stop_restart tcp MPI_COMPONENTS=p2p=self,tcp -- $ITERS
ckpt_finish
