#!/bin/bash
# Fortran 2008 (use mpi_f08): a program replacing MPI_Send_f08 / MPI_Allreduce_f08
# (the profiling interface) sees its calls and passes them on through PMPI_; 1 and 3 ranks.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build f08_profile.f90 f08_profile
kf_run -n 1 ./f08_profile && kf_run -n 3 ./f08_profile
