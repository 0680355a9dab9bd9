#!/bin/bash
# Fortran completeness (`use mpi`): explicit interfaces reject a wrong
# argument count or type at compile time and accept any choice buffer; the
# deprecated attribute calls, MPI_NEIGHBOR_ALLTOALLW, MPI_PCONTROL,
# MPI_INTERCOMM_CREATE_FROM_GROUPS, MPI_TYPE_SET_NAME; MPI_F_STATUS_IGNORE
# in C code called from Fortran.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
fail=0
# 1. must not compile
for bad in misc3_badargs misc3_badtype; do
    if "$KF_DIR/mpif90" -c -o "$KF_DIR/$bad.o" "$top_srcdir/tests/fortran/$bad.f90" > "$KF_DIR/$bad.log" 2>&1; then
        echo "FAIL: $bad.f90 compiled: the module has no explicit interface for MPI_COMM_SIZE"; fail=1
    elif ! grep -qi "error" "$KF_DIR/$bad.log"; then
        echo "FAIL: $bad.f90: no compiler error message"; cat "$KF_DIR/$bad.log"; fail=1
    else
        echo "ok: $bad.f90 rejected: $(grep -i -m1 error "$KF_DIR/$bad.log")"
    fi
done
# 2. choice buffers of every kind, without -fallow-argument-mismatch
"$KF_DIR/mpif90" -fc=gfortran -g -O1 -o "$KF_DIR/misc3_buffers" "$top_srcdir/tests/fortran/misc3_buffers.f90" ||
    { echo "FAIL: cannot build misc3_buffers.f90 (choice buffers)"; exit 1; }
kf_run -n 1 ./misc3_buffers || fail=1
kf_run -n 2 ./misc3_buffers || fail=1
# 3. deprecated attribute calls, neighborhood alltoallw, ...
kf_build misc3_deprecated.f90 misc3_deprecated
kf_run -n 1 ./misc3_deprecated || fail=1
kf_run -n 3 ./misc3_deprecated || fail=1
# 4. MPI_F_STATUS_IGNORE from C
"$KF_DIR/mpicc" -c -o "$KF_DIR/misc3_fstatus_c.o" "$top_srcdir/tests/fortran/misc3_fstatus_c.c" ||
    { echo "FAIL: cannot compile misc3_fstatus_c.c"; exit 1; }
"$KF_DIR/mpif90" -g -o "$KF_DIR/misc3_fstatus" "$top_srcdir/tests/fortran/misc3_fstatus.f90" "$KF_DIR/misc3_fstatus_c.o" ||
    { echo "FAIL: cannot build misc3_fstatus"; exit 1; }
kf_run -n 1 ./misc3_fstatus || fail=1
exit $fail
