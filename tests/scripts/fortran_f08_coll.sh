#!/bin/bash
# Fortran 2008 (use mpi_f08), the program of fortran_coll: collectives with MPI_IN_PLACE, a user op of the f08 form, a vector datatype, a nonblocking collective; at 1, 2 and 4 ranks.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build f08_coll.f90 f08_coll
kf_run -n 1 ./f08_coll && kf_run -n 2 ./f08_coll && kf_run -n 4 ./f08_coll
