#!/bin/bash
# Fortran 2008 (use mpi_f08): handles are distinct types, so passing a TYPE(MPI_Comm)
# where a TYPE(MPI_Datatype) is expected does not compile (while the same call with
# the datatype does: the program is otherwise right); nor does a constant as an
# INTENT(OUT) argument.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
src=$top_srcdir/tests/fortran/f08_typesafety.f90
if "$KF_DIR/mpif90" -c -o "$KF_DIR/f08_typesafety.o" "$src" > "$KF_DIR/f08_typesafety.log" 2>&1; then
    echo "FAIL: a TYPE(MPI_Comm) passed as the datatype compiled"; exit 1
fi
grep -q "no specific subroutine for the generic\|Type mismatch" "$KF_DIR/f08_typesafety.log" ||
    { echo "FAIL: the compiler refused it for another reason:"; cat "$KF_DIR/f08_typesafety.log"; exit 1; }
sed 's/MPI_Send(buf, 4, MPI_COMM_WORLD,/MPI_Send(buf, 4, MPI_INTEGER,/' "$src" > "$KF_DIR/f08_typesafety_ok.f90"
"$KF_DIR/mpif90" -o "$KF_DIR/f08_typesafety_ok" "$KF_DIR/f08_typesafety_ok.f90" ||
    { echo "FAIL: the corrected program does not compile"; exit 1; }
# an OUT argument (INTENT(OUT), as in the standard's binding) cannot be a constant
sed 's/MPI_Send(buf, 4, MPI_COMM_WORLD, 0, 0, MPI_COMM_WORLD)/MPI_Comm_rank(MPI_COMM_WORLD, 3)/' "$src" > "$KF_DIR/f08_intent.f90"
if "$KF_DIR/mpif90" -c -o "$KF_DIR/f08_intent.o" "$KF_DIR/f08_intent.f90" > "$KF_DIR/f08_intent.log" 2>&1; then
    echo "FAIL: a constant as MPI_Comm_rank's rank (INTENT(OUT)) compiled"; exit 1
fi
echo "PASS: the communicator as a datatype and a constant as an OUT argument are refused at compile time"
