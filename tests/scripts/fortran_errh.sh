#!/bin/bash
# Fortran: user error handler, MPI_ERRORS_RETURN, error classes and strings.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build fortran_errh.f90 fortran_errh
kf_run -n 2 ./fortran_errh
