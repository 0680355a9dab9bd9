#!/bin/bash
# abi_mpich_fortran: Fortran programs built with MPICH's mpif90 (mpif90.mpich: mpif.h and `use
# mpi`, linked against libmpichfort.so.12; Debian's `use mpi` imports the same mpi_xxx_ symbols
# as mpif.h, no module procedures) run unmodified on Kumi through the Fortran shim
# (components/abi/mpich-fortran: libmpichfort.so.12 over the C shim libmpich.so.12), with the
# shims chosen by Kumi's mpiexec (KUMI_ABI_DIR: this build's libraries), at 1, 2 and 4 ranks:
# the programs of abi_ompi_fortran.sh (tests/abi/ompi_fortran.f90 as `use mpi` and as mpif.h:
# the library is Kumi, handles, statuses of MPICH's 5 integers, MPI_ANY_SOURCE,
# MPI_STATUS(ES)_IGNORE, MPI_IN_PLACE and MPI_BOTTOM (in MPICH's COMMON blocks mpipriv1_ /
# mpipriv2_ at offsets), LOGICALs, strings, 1-based indices, derived types, errors; Kumi's
# fortran_coll.f, fortran_jacobi.f90, misc3_buffers.f90, fortran_attr.f90, fortran_errh.f90,
# fortran_removed.f; the mixed C / Fortran program, its C part built with mpicc.mpich);
# MPI_COMM_SPAWN / _MULTIPLE at 1 and 2 ranks (Kumi's fortran_spawn.f90 and tests/abi/abi_spawn.f90:
# string arrays, MPI_ARGV(S)_NULL and MPI_ERRCODES_IGNORE in MPICH's mpiprivc_ / mpipriv2_);
# tests/abi/mpich_fortran_sentinels.f90 (MPI_UNWEIGHTED, MPI_STATUSES_IGNORE, MPI_SIZEOF);
# that a program needing a procedure the shim lacks stops at load; that
# data/abi/mpich-fortran.json is what the probe derives; and that without the shims
# (MPICH's own libraries) the Kumi check fails (tests/scripts/abi_fortran_common.inc).
set -u
abi=mpich
FC=${MPICHFC:-mpif90.mpich} CC=${MPICHCC:-mpicc.mpich} FCPKGS="mpich, libmpich-dev"
FSONAME=libmpichfort.so.12 FLIB=/usr/lib/x86_64-linux-gnu/libmpichfort.so.12
CSHIM=$top_builddir/components/abi/mpich/.libs/libmpich.so.12
FSHIM=$top_builddir/components/abi/mpich-fortran/.libs/libmpichfort.so.12
SHIMLINKS="C:libmpich.so.12 C:libmpi.so.12 F:libmpichfort.so.12"
# a procedure the shim does not translate yet (sessions): a program that needs it stops at load
NEEDCALL='call MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, s, ierr)' NEEDSYM=mpi_session_init_
. "$top_srcdir/tests/scripts/abi_fortran_common.inc"
# MPICH's mpif.h does not declare the functions MPI_AINT_ADD / DIFF (Open MPI's does)
fortran_fix_mpifh() {
    sed -i 's/^  include "mpif.h"$/&\n  integer(kind=MPI_ADDRESS_KIND), external :: MPI_Aint_add, MPI_Aint_diff/' "$1"
}
fortran_setup
fortran_build_common
# the sentinels of the mpif.h program are MPICH's COMMON blocks
nm "$work/mpifh" | grep -q ' mpipriv1_$' || fail "the mpif.h program defines no mpipriv1_"
ffc sentinels "$top_srcdir/tests/abi/mpich_fortran_sentinels.f90"
fortran_checks "sentinels:mpich_fortran_sentinels"
