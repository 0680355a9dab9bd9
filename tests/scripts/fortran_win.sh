#!/bin/bash
# Fortran (use mpi): MPI_WIN_ALLOCATE / MPI_ALLOC_MEM addresses and a window
# error handler (MPI_WIN_CREATE_ERRHANDLER); at 2 and 3 ranks.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build fortran_win.f90 fortran_win
kf_run -n 2 ./fortran_win && kf_run -n 3 ./fortran_win
