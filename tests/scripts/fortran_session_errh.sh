#!/bin/bash
# Fortran (use mpi): MPI_SESSION_CREATE_ERRHANDLER's procedure called with the
# session and the code (a bad pset index, MPI_SESSION_CALL_ERRHANDLER); at 1 and 2 ranks.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build fortran_session_errh.f90 fortran_session_errh
kf_run -n 1 ./fortran_session_errh && kf_run -n 2 ./fortran_session_errh
