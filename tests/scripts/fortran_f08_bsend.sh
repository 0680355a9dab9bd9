#!/bin/bash
# Fortran 2008 (use mpi_f08): the buffered-send program of fortran_bsend (attach,
# bsend, detach giving BUFFER_ADDR as a TYPE(C_PTR), MPI_BUFFER_AUTOMATIC); at 2 and 3 ranks.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build f08_bsend.f90 f08_bsend
kf_run -n 2 ./f08_bsend && kf_run -n 3 ./f08_bsend
