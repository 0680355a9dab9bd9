#!/bin/bash
# Fortran (fixed form, mpif.h): the removed MPI-1 calls and the deprecated
# attribute calls, results checked (tests/fortran/fortran_removed.f); and the
# `use mpi` module has their interfaces (a free-form program that calls them
# with the right arguments compiles, one with a wrong argument does not).
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build fortran_removed.f fortran_removed
kf_run -n 2 ./fortran_removed || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/m.f90" <<'F90'
subroutine s(t, ierr)
  use mpi
  implicit none
  integer :: t, ierr, a, bl(2), dp(2), ty(2), nt
  double precision :: x(2)
  call MPI_ADDRESS(x, a, ierr)
  call MPI_TYPE_EXTENT(t, a, ierr)
  call MPI_TYPE_LB(t, a, ierr)
  call MPI_TYPE_UB(t, a, ierr)
  call MPI_TYPE_HVECTOR(2, 1, 16, t, nt, ierr)
  call MPI_TYPE_HINDEXED(2, bl, dp, t, nt, ierr)
  call MPI_TYPE_STRUCT(2, bl, dp, ty, nt, ierr)
  call MPI_ERRHANDLER_SET(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call MPI_ERRHANDLER_GET(MPI_COMM_WORLD, a, ierr)
end subroutine
F90
(cd "$tmp" && "$KF_DIR/mpif90" -c m.f90 -o m.o) || { echo "FAIL: use mpi: the removed calls do not compile"; exit 1; }
sed 's/call MPI_TYPE_LB(t, a, ierr)/call MPI_TYPE_LB(t, a)/' "$tmp/m.f90" > "$tmp/bad.f90"
if (cd "$tmp" && "$KF_DIR/mpif90" -c bad.f90 -o bad.o 2> /dev/null); then
    echo "FAIL: use mpi: MPI_TYPE_LB without IERROR compiles (no interface)"; exit 1
fi
exit 0
