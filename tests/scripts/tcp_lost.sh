#!/bin/bash
# A rank that dies in the middle of a TCP transfer (small socket buffers keep
# it under way): the job ends (no hang), mpiexec names rank 1 as the failure,
# and rank 0 does not crash (see lost_common.inc).
set -u
. "$(dirname "$0")/lost_common.inc"
lost_check MPI_COMPONENTS="p2p=self,tcp" -- --param p2p_tcp_sndbuf=4k --param p2p_tcp_rcvbuf=4k
