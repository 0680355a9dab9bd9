#!/bin/bash
# Fortran (use mpi): point-to-point, statuses, request arrays, strings.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build fortran_p2p.f90 fortran_p2p
kf_run -n 2 ./fortran_p2p && kf_run -n 3 ./fortran_p2p
