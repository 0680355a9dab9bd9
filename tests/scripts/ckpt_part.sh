#!/bin/bash
# Checkpoints of jobs with partitioned requests (issue 20; framework/mpi/ckpt.c,
# framework/mpi/partitioned.c).  tests/mpi/ckpt_part keeps three pairs of
# persistent partitioned requests on a ring of 4 ranks: one started every
# iteration with its partitions made ready one by one (a checkpoint comes
# between MPI_Start and the completion, partitions delivered and not ready
# yet), one of rendezvous-sized partitions into a non-contiguous datatype
# started every 5th iteration (inactive at most checkpoints), one started for
# the first time after the last checkpoint (never started when the image was
# written: its channel, made at MPI_Psend_init / MPI_Precv_init, serves
# after the restart's new wire-up).
#  1. checkpoint-and-continue twice at random times (shmem): both written, the
#     result bit for bit the uninterrupted run's;
#  2. --checkpoint-and-stop at a random time, then mpiexec --restart: the same
#     result; over shmem and over tcp;
# after every job nothing of it left in /dev/shm.
set -u
. "$(dirname "$0")/lib/ckpt_frame.sh"
ckpt_setup ckpt_part ckptpart
export KUMI_CKPT_RESTART_PROGRAM=$top_builddir/components/ckpt/image/kumi_restart
ITERS=${CKPT_ITERS:-300}

ckpt_reference $ITERS
# 1. checkpoint-and-continue twice
ckpt_continue 40 $ITERS
# 2. stop at a random time, restart
ckpt_stop_restart shmem -- $ITERS
ckpt_stop_restart tcp MPI_COMPONENTS=p2p=self,tcp -- $ITERS
ckpt_finish
