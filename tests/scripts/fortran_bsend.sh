#!/bin/bash
# Fortran (use mpi): buffered sends, MPI_BUFFER_DETACH leaves BUFFER_ADDR alone, MPI_BUFFER_AUTOMATIC.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build fortran_bsend.f90 fortran_bsend
kf_run -n 2 ./fortran_bsend && kf_run -n 3 ./fortran_bsend
