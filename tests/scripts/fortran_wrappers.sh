#!/bin/bash
# The compiler wrappers mpicc, mpicxx, mpif90: -show / -showme, --showme:compile,
# --showme:link, no link flags with -c, KUMI_* / MPICH_* / OMPI_* overrides,
# and programs built with them (C, and Fortran where built) run under mpiexec
# with no LD_LIBRARY_PATH (the wrappers add an rpath).
. "$top_srcdir/tests/fortran/kf.sh"
fail() { echo "FAIL: $*"; exit 1; }
w=$top_builddir/tools/wrappers
[ -x "$w/mpicc" ] && [ -x "$w/mpicxx" ] || fail "wrappers not configured"

out=$("$w/mpicc" -show -O2 -o ring ring.c)
case "$out" in *" -O2 -o ring ring.c "*"-lmpi"*) ;; *) fail "mpicc -show: $out" ;; esac
case "$out" in *"-I"*include*) ;; *) fail "mpicc -show has no -I: $out" ;; esac
case "$out" in *"-Wl,-rpath,"*) ;; *) fail "mpicc -show has no rpath: $out" ;; esac
[ "$("$w/mpicc" -showme -c x.c)" = "$("$w/mpicc" --showme -c x.c)" ] || fail "-showme differs from --showme"
out=$("$w/mpicc" -show -c x.c)
case "$out" in *-lmpi*) fail "mpicc -c links: $out" ;; esac
out=$("$w/mpicc" --showme:compile)
case "$out" in -I*) ;; *) fail "--showme:compile: $out" ;; esac
case "$out" in *-lmpi*) fail "--showme:compile has link flags: $out" ;; esac
out=$("$w/mpicc" --showme:link)
case "$out" in *-lmpi*) ;; *) fail "--showme:link: $out" ;; esac
case "$out" in *-I*) fail "--showme:link has compile flags: $out" ;; esac
for v in KUMI_CC MPICH_CC OMPI_CC; do
    out=$(env "$v=my-cc" "$w/mpicc" -show x.c)
    [ "${out%% *}" = my-cc ] || fail "$v not honoured: $out"
done
[ "$(KUMI_CC=a MPICH_CC=b "$w/mpicc" -show x.c | cut -d' ' -f1)" = a ] || fail "KUMI_CC does not come first"
[ "$("$w/mpicc" -cc=other -show x.c | cut -d' ' -f1)" = other ] || fail "-cc= not honoured"
out=$(MPICH_CXX=my-cxx "$w/mpicxx" -show x.cc)
case "$out" in "my-cxx "*-lmpi*) ;; *) fail "mpicxx: $out" ;; esac
out=$(OMPI_CXX=my-cxx2 "$w/mpicxx" --showme:link)
case "$out" in *-lmpi*) ;; *) fail "mpicxx --showme:link: $out" ;; esac

# Build with build-tree copies of the wrappers and run without LD_LIBRARY_PATH.
kf_wrappers
cat > "$KF_DIR/w_hello.c" <<'EOC'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int r, n, s = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Allreduce(&r, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (r == 0) printf("sum %d\n", s);
    MPI_Finalize();
    return s == n * (n - 1) / 2 ? 0 : 1;
}
EOC
"$KF_DIR/mpicc" -o "$KF_DIR/w_hello" "$KF_DIR/w_hello.c" || fail "mpicc cannot build a program"
[ "$(kf_run -n 3 ./w_hello)" = "sum 3" ] || fail "C program built by mpicc"
if command -v "$(sed -n 's/^compiler=.*:-\(.*\)}}}$/\1/p' "$w/mpicxx")" > /dev/null 2>&1; then
    cp "$KF_DIR/w_hello.c" "$KF_DIR/w_hello.cc"
    "$KF_DIR/mpicxx" -o "$KF_DIR/w_hellocxx" "$KF_DIR/w_hello.cc" || fail "mpicxx cannot build a program"
    [ "$(kf_run -n 2 ./w_hellocxx)" = "sum 1" ] || fail "C++ program built by mpicxx"
fi
if [ -x "$w/mpif90" ] && [ -f "$top_builddir/framework/fortran/mpi.mod" ]; then
    out=$(MPICH_FC=my-fc "$w/mpif90" -show x.f90)
    case "$out" in "my-fc "*"-lmpifort -lmpi"*) ;; *) fail "mpif90 with MPICH_FC: $out" ;; esac
    case "$out" in *-fallow-argument-mismatch*) fail "gfortran-only flag given to another compiler: $out" ;; esac
    out=$(KUMI_FC=f1 OMPI_FC=f2 "$w/mpif90" -show x.f90)
    [ "${out%% *}" = f1 ] || fail "KUMI_FC not honoured: $out"
    out=$("$w/mpif90" --showme:compile)
    case "$out" in -I*) ;; *) fail "mpif90 --showme:compile: $out" ;; esac
    cat > "$KF_DIR/w_hello.f90" <<'EOF90'
program w_hello
  use mpi
  implicit none
  integer :: ierr, r, n, s
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, r, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, n, ierr)
  call MPI_ALLREDUCE(r, s, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (r == 0) print '(A,I0)', 'sum ', s
  call MPI_FINALIZE(ierr)
end program w_hello
EOF90
    "$KF_DIR/mpif90" -o "$KF_DIR/w_hellof" "$KF_DIR/w_hello.f90" || fail "mpif90 cannot build a program"
    [ "$(kf_run -n 3 ./w_hellof)" = "sum 3" ] || fail "Fortran program built by mpif90"
fi
echo "wrappers ok"
