/* Helpers of the Fortran glue (libmpifort): the generated kf_glue.c and the
 * hand-written kf_support.c.  The glue uses only the public C API (PMPI_*,
 * MPI_<Handle>_c2f / _f2c), like a program would. */
#ifndef KUMI_KF_SUPPORT_H
#define KUMI_KF_SUPPORT_H

#include <mpi.h>
#include <stddef.h>
#include <stdlib.h>

#define KUMI_EXPORT __attribute__((visibility("default")))

/* Sentinels: Fortran COMMON blocks (gfortran: block name + '_') whose
 * addresses stand for MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE, ...
 * (mkfortran.py's SENTINELS declares the Fortran side). */
extern MPI_Fint kumi_fc_bottom_, kumi_fc_in_place_, kumi_fc_buffer_automatic_;
extern MPI_Fint kumi_fc_status_ignore_[MPI_F_STATUS_SIZE], kumi_fc_statuses_ignore_[MPI_F_STATUS_SIZE];
extern MPI_Fint kumi_fc_errcodes_ignore_[1], kumi_fc_unweighted_[1], kumi_fc_weights_empty_[1];
extern char kumi_fc_argv_null_[1], kumi_fc_argvs_null_[1];

static inline void *kf_buf(void *p)
{
    if (p == (void *)&kumi_fc_bottom_) return MPI_BOTTOM;
    if (p == (void *)&kumi_fc_in_place_) return MPI_IN_PLACE;
    if (p == (void *)&kumi_fc_buffer_automatic_) return MPI_BUFFER_AUTOMATIC;
    return p;
}
#define KF_BUF(p) kf_buf((void *)(p))
#define KF_STATUS(p) ((p) == kumi_fc_status_ignore_ ? MPI_STATUS_IGNORE : (MPI_Status *)(void *)(p))
#define KF_STATUSES(p) ((p) == kumi_fc_statuses_ignore_ ? MPI_STATUSES_IGNORE : (MPI_Status *)(void *)(p))
#define KF_ERRCODES(p) ((p) == kumi_fc_errcodes_ignore_ ? MPI_ERRCODES_IGNORE : (int *)(p))
#define KF_WEIGHTS(p) ((p) == kumi_fc_unweighted_ ? MPI_UNWEIGHTED : \
                       (p) == kumi_fc_weights_empty_ ? MPI_WEIGHTS_EMPTY : (int *)(p))

/* Strings: a C copy of a Fortran input string without its trailing blanks;
 * a buffer for an output string; copying it out blank-padded (NULL: out of memory). */
char *kf_str_in(const char *f, size_t len);
char *kf_str_buf(size_t len);
void kf_str_out(const char *c, char *f, size_t len);

/* Out of memory in the glue: an MPI_ERR_NO_MEM code (after COMM_WORLD's handler). */
int kf_nomem(const char *fn);
/* An address-sized result v for the default INTEGER *out (the removed MPI-1
 * calls): stored, or an MPI_ERR_ARG code naming the argument (after
 * COMM_WORLD's handler) when it does not fit. */
int kf_narrow(const char *fn, const char *arg, MPI_Aint v, MPI_Fint *out);
/* Number of ranks a communicator's per-peer arrays have (remote size for an
 * intercommunicator); 0 for an invalid one (the call then reports it). */
int kf_comm_peers(MPI_Comm comm);

#endif
