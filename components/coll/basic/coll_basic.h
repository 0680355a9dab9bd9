/* coll/basic: what coll_basic.c and coll_basic_inter.c share (private to the component). */
#ifndef COLL_BASIC_H
#define COLL_BASIC_H
#include <mpi.h>
#include <kumi/coll.h>
#include <stddef.h>

/* A temporary for count elements of dt: returns the pointer to use as the
 * buffer; *mem receives what to free. NULL when out of memory. */
char *coll_basic_tmp(size_t count, MPI_Datatype dt, void **mem);
/* MPI_ERR_NO_MEM with a message naming what. */
int coll_basic_nomem(const char *what);
/* The table for an intercommunicator (coll_basic_inter.c). */
int coll_basic_inter_query(MPI_Comm comm, int *priority, struct kumi_coll_fns *fns);

#endif
