#!/bin/bash
# Fortran 2008 (use mpi_f08): the point-to-point program of fortran_p2p with
# TYPE(MPI_Status) components, ASYNCHRONOUS buffers, large-count specifics,
# calls without ierror; at 2 and 3 ranks.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build f08_p2p.f90 f08_p2p
kf_run -n 2 ./f08_p2p && kf_run -n 3 ./f08_p2p
