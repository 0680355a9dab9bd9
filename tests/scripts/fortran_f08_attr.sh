#!/bin/bash
# Fortran 2008 (use mpi_f08), the program of fortran_attr: keyvals with copy and delete procedures of the f08 abstract interfaces and the predefined MPI_COMM_DUP_FN; at 1 and 2 ranks.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build f08_attr.f90 f08_attr
kf_run -n 1 ./f08_attr && kf_run -n 2 ./f08_attr
