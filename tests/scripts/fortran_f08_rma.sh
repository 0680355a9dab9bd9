#!/bin/bash
# Fortran 2008 (use mpi_f08): one-sided communication, MPI_Win_allocate and
# MPI_Alloc_mem giving TYPE(C_PTR), a refused section through the window error handler; 2 and 3 ranks.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build f08_rma.f90 f08_rma
kf_run -n 2 ./f08_rma && kf_run -n 3 ./f08_rma
