#!/bin/bash
# abi_ompi_fortran: Fortran programs built with Open MPI's mpif90 (mpif90.openmpi: mpif.h and
# `use mpi`, linked against libmpi_mpifh.so.40) run unmodified on Kumi through the Fortran
# shim (components/abi/ompi-fortran: libmpi_mpifh.so.40 over the C shim libmpi.so.40), with
# the shims chosen by Kumi's mpiexec (KUMI_ABI_DIR: this build's two libraries), at 1, 2 and
# 4 ranks: tests/abi/ompi_fortran.f90 as `use mpi` and as mpif.h (checks that the library is
# Kumi, and handles, statuses, MPI_ANY_SOURCE, MPI_STATUS(ES)_IGNORE, LOGICALs, strings,
# 1-based indices, MPI_IN_PLACE, MPI_BOTTOM, derived types, Comm_split/dup/free, error
# classes with MPI_ERRORS_RETURN, a Fortran error handler), and Kumi's own Fortran tests that
# Open MPI's mpif90 compiles: fortran_coll.f (fixed form, mpif.h, a Fortran user op),
# fortran_jacobi.f90 (Cartesian topology; the same result at every size), misc3_buffers.f90,
# fortran_attr.f90 (MPI_TAG_UB, keyvals with Fortran copy / delete procedures, MPI_COMM_DUP_FN)
# fortran_errh.f90 and fortran_removed.f (MPI-1's MPI_ADDRESS, MPI_TYPE_STRUCT with MPI_LB /
# MPI_UB, MPI_TYPE_EXTENT, MPI_KEYVAL_CREATE, MPI_ERRHANDLER_SET, ...) (every procedure of Open
# MPI's library is provided: no program stops at load); tests/abi/ompi_fortran_mixed.f90 with its C part
# (handles passed between C and Fortran: MPI_X_c2f / f2c agree with mpif.h); and that
# data/abi/ompi-fortran.json is what the probe derives (tests/scripts/abi_fortran_common.inc);
# tests/abi/ompi_fortran_sizeof.f90: MPI_SIZEOF on every type (which makes the program need
# libmpi_usempif08.so.40: this build's, over the Fortran shim) and the TYPE(C_PTR) forms
# (MPI_ALLOC_MEM_CPTR, MPI_WIN_ALLOCATE(_SHARED)_CPTR, MPI_WIN_SHARED_QUERY_CPTR).
# MPI_COMM_SPAWN / _MULTIPLE at 1 and 2 ranks (Kumi's fortran_spawn.f90 and tests/abi/abi_spawn.f90:
# string arrays, the sentinels mpi_fortran_argv(s)_null_ and mpi_fortran_errcodes_ignore_).
# (`use mpi_f08` programs: abi_ompi_f08.sh.)
# Without the shims (mpiexec --abi standard: Open MPI's own libraries) the Kumi check fails.
set -u
abi=ompi
FC=${OMPIFC:-mpif90.openmpi} CC=${OMPICC:-mpicc.openmpi} FCPKGS="openmpi-bin, libopenmpi-dev"
FSONAME=libmpi_mpifh.so.40 FLIB=/usr/lib/x86_64-linux-gnu/libmpi_mpifh.so.40
CSHIM=$top_builddir/components/abi/ompi/.libs/libmpi.so.40
FSHIM=$top_builddir/components/abi/ompi-fortran/.libs/libmpi_mpifh.so.40
SHIMLINKS="C:libmpi.so.40 F:libmpi_mpifh.so.40"
. "$top_srcdir/tests/scripts/abi_fortran_common.inc"
fortran_setup
# libmpi_usempif08.so.40: what a `use mpi` program that calls MPI_SIZEOF needs
F08SHIM=$top_builddir/components/abi/ompi-fortran/.libs/libmpi_usempif08.so.40
[ -f "$F08SHIM" ] || fail "no $F08SHIM (components/abi/ompi-fortran)"
ln -s "$F08SHIM" "$work/abi/ompi/libmpi_usempif08.so.40"
fortran_build_common
ffc sizeof "$top_srcdir/tests/abi/ompi_fortran_sizeof.f90"
readelf -d "$work/sizeof" | grep -q 'NEEDED.*\[libmpi_usempif08\.so\.40\]' || fail "sizeof does not need libmpi_usempif08.so.40"
fortran_checks "sizeof:ompi_fortran_sizeof"
