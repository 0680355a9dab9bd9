#!/bin/bash
# Fortran (use mpi): MPI_COMM_SPAWN and MPI_COMM_SPAWN_MULTIPLE with Fortran
# string arrays (tests/fortran/fortran_spawn.f90), at 1 and 2 parent ranks.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build fortran_spawn.f90 fortran_spawn
kf_run -n 1 ./fortran_spawn && kf_run -n 2 ./fortran_spawn
