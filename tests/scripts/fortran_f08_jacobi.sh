#!/bin/bash
# Fortran 2008 (use mpi_f08): the 2-D Jacobi program of fortran_jacobi (Cartesian
# communicator, vector halo types): the same probe values (bitwise) and sum (to 1e-12)
# at 1, 2 and 4 ranks, and the same output as the `use mpi` program.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build f08_jacobi.f90 f08_jacobi
for n in 1 2 4; do
    kf_run -n $n ./f08_jacobi > "$KF_DIR/f08_jacobi.$n" || { echo "FAIL: run at $n ranks"; cat "$KF_DIR/f08_jacobi.$n"; exit 1; }
    cat "$KF_DIR/f08_jacobi.$n"
done
[ "$(grep -c '^probe' "$KF_DIR/f08_jacobi.1")" = 3 ] || { echo "FAIL: no probe lines"; exit 1; }
for n in 2 4; do
    diff <(grep '^probe' "$KF_DIR/f08_jacobi.1") <(grep '^probe' "$KF_DIR/f08_jacobi.$n") || { echo "FAIL: probes differ at $n ranks"; exit 1; }
    paste <(grep '^sum' "$KF_DIR/f08_jacobi.1") <(grep '^sum' "$KF_DIR/f08_jacobi.$n") |
        awk '{ d = $2 - $4; if (d < 0) d = -d; if ($2 <= 0 || d > 1e-12 * $2) exit 1 }' ||
        { echo "FAIL: sums differ at $n ranks"; exit 1; }
done
echo "same result at 1, 2 and 4 ranks"
# and the same as the `use mpi` program (fortran_jacobi.f90) at 4 ranks
kf_build fortran_jacobi.f90 fortran_jacobi
kf_run -n 4 ./fortran_jacobi > "$KF_DIR/f08_jacobi.mpi" || { echo "FAIL: use mpi run"; exit 1; }
diff "$KF_DIR/f08_jacobi.mpi" "$KF_DIR/f08_jacobi.4" || { echo "FAIL: use mpi_f08 and use mpi differ"; exit 1; }
