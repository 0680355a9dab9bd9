#!/bin/bash
# Fortran 2008 (use mpi_f08), the program of fortran_errh: a user error handler of the f08 form, MPI_ERRORS_RETURN, a non-contiguous section refused with MPI_ERR_BUFFER; at 2 ranks.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build f08_errh.f90 f08_errh
kf_run -n 2 ./f08_errh
