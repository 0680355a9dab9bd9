/* The MPI front ends (framework/mpi): the MPI functions that need the request
 * layer, schedules or windows (point-to-point, partitioned and generalized
 * requests, buffered-send buffers, collectives, intercommunicators, sessions,
 * MPI_Init / MPI_Finalize).  Layers, lowest first (each includes only those
 * below it; tests/scripts/struct_layers.sh checks it):
 *   include/ (the kumi headers, mpi.h) <- registry <- core <- request <- sched, rma <- mpi <- bindings */
#ifndef KUMI_MPI_FRONT_H
#define KUMI_MPI_FRONT_H

#include "core/core.h"
#include "core/check.h"
#include "request/request.h"

/* ---- partitioned.c, grequest.c: register their request kinds */
void kumi_part_register(void);
void kumi_greq_register(void);

#endif
