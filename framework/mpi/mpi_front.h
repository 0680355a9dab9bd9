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


/* ---------------------------------------------------- intercommunicators */
/* (mpi/intercomm.c) What comm_create.c calls for c->inter. */
/* MPI_Comm_dup(_with_info) / idup: info = the new communicator's hints (copied; NULL: none). */
int kumi_intercomm_dup(struct kumi_comm *comm, struct kumi_info *info, MPI_Comm *newcomm, const char *fn);
int kumi_intercomm_split(struct kumi_comm *comm, int color, int key, MPI_Comm *newcomm);
/* MPI_Comm_create on an intercommunicator (group: a subgroup of the local group). */
int kumi_intercomm_create_sub(struct kumi_comm *comm, const struct kumi_group *group, MPI_Comm *newcomm);
int kumi_intercomm_compare(struct kumi_comm *c1, struct kumi_comm *c2, int *result);

#endif
