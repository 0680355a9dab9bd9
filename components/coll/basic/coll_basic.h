/* coll/basic: what coll_basic.c and coll_basic_inter.c share (private to the component). */
#ifndef COLL_BASIC_H
#define COLL_BASIC_H
#include <mpi.h>
#include <kumi/coll.h>
#include <stddef.h>

/* A temporary for count elements of dt: returns the pointer to use as the
 * buffer; *mem receives what to free. NULL when out of memory. */
char *coll_basic_tmp(size_t count, MPI_Datatype dt, void **mem);
/* Bytes [*lo, *hi) relative to the buffer pointer touched by count elements of dt. */
void coll_basic_span(size_t count, MPI_Datatype dt, MPI_Aint *lo, MPI_Aint *hi);
/* MPI_ERR_NO_MEM with a message naming what. */
int coll_basic_nomem(const char *what);
/* A temporary for count elements of dt that lives as long as schedule s
 * (coll_basic_sched.c); NULL when out of memory (s then holds the error). */
char *coll_basic_sched_tmp(struct kumi_sched *s, size_t count, MPI_Datatype dt);
/* Schedule builders (non-blocking and persistent collectives): fill the i*
 * entries of the table for an intracommunicator (coll_basic_sched.c), an
 * intercommunicator (coll_basic_sched_inter.c), a topology's neighbourhood
 * (coll_basic_sched_neighbor.c). */
void coll_basic_sched_query(struct kumi_coll_fns *fns);
void coll_basic_sched_inter_query(struct kumi_coll_fns *fns);
void coll_basic_sched_neighbor_query(struct kumi_coll_fns *fns);
/* The table for an intercommunicator (coll_basic_inter.c). */
int coll_basic_inter_query(MPI_Comm comm, int *priority, struct kumi_coll_fns *fns);

#endif
