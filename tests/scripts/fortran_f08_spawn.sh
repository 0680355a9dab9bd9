#!/bin/bash
# Fortran 2008 (use mpi_f08): the spawn program of fortran_spawn (MPI_Comm_spawn,
# MPI_Comm_spawn_multiple with Fortran string arrays); at 1 and 2 parent ranks.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build f08_spawn.f90 f08_spawn
kf_run -n 1 ./f08_spawn && kf_run -n 2 ./f08_spawn
