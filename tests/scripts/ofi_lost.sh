#!/bin/bash
# A rank that dies in the middle of a p2p/ofi rendezvous (rank 0 reads its
# 64 MiB in 64 KiB pieces with fi_read): the job ends (no hang), mpiexec names
# rank 1 as the failure, and rank 0 neither crashes nor completes the receive
# (see lost_common.inc).
set -u
"$KUMI_INFO" --parsable | grep -q '^component:p2p:ofi:status:available' ||
    { echo "SKIP: p2p/ofi not available here"; exit 77; }
. "$(dirname "$0")/lost_common.inc"
lost_check MPI_COMPONENTS="p2p=self,ofi" -- --param 'p2p_ofi_provider=tcp;ofi_rxm' --param p2p_ofi_read_chunk=64k
