#!/bin/bash
# Fortran (fixed form, mpif.h): bcast, allreduce with MPI_IN_PLACE, reduce, comm_split, a user op.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build fortran_coll.f fortran_coll
kf_run -n 1 ./fortran_coll && kf_run -n 4 ./fortran_coll
