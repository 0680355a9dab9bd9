/* Dynamic processes, communicators: MPI_Comm_disconnect (MPI-4.1 sec. 11.8.2).
 *
 * MPI_Comm_disconnect works on any communicator the program created (intra
 * or inter): collective over it; the standard lets it be called only once
 * all communication on comm is complete and matched, so what is left is the
 * library's own traffic: a barrier over comm (no process goes on before
 * every process of both groups called it, so nothing of theirs is still
 * addressed to it), then the communicator is freed as by MPI_Comm_free and
 * the handle becomes MPI_COMM_NULL.  A predefined communicator is
 * MPI_ERR_COMM.
 * (MPI_Comm_get_parent: mpi/dpm_spawn.c.) */
#include "mpi/mpi_front.h"

int kumi_mpi_comm_disconnect(MPI_Comm *comm)
{
    static const char fn[] = "MPI_Comm_disconnect";
    if (!comm) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument comm is NULL", fn));
    struct kumi_comm *c = kumi_comm_get(*comm);
    if (!c) return kumi_err_handle(NULL, kumi_chk_bad_comm(fn, "comm", *comm));
    if (c->predefined)
        return kumi_err_handle(c, kumi_error(MPI_ERR_COMM, "%s: argument comm is %s, which cannot be disconnected",
                                             fn, c->name));
    int rc = kumi_coll_barrier(fn, KUMI_FORM_BLOCKING, MPI_INFO_NULL, NULL, c);
    if (rc) return kumi_err_handle(c, rc);
    return kumi_mpi_comm_free(comm);
}
