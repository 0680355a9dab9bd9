#!/bin/bash
# Fortran: MPI-IO (explicit offsets, a collective write through a view, a file error handler).
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build fortran_io.f90 fortran_io
kf_run -n 3 ./fortran_io
