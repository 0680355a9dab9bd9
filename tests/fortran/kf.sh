# Helpers of the Fortran and wrapper tests (sourced by tests/scripts/fortran_*.sh).
# kf_wrappers: copies of the configured mpicc / mpicxx / mpif90 pointed at the
# build tree (includedir, libdir) in $KF_DIR, so the tests use the real
# wrapper scripts before `make install`.  kf_build SRC OUT: build a Fortran
# test program with that mpif90.  Exit 77 (skip) if Fortran support was not built.
set -u
KF_DIR=$top_builddir/tests/fortran
mkdir -p "$KF_DIR"
kf_wrappers() {
    local w
    for w in mpicc mpicxx mpif90; do
        [ -f "$top_builddir/tools/wrappers/$w" ] || continue
        sed -e "s|^includedir=.*|includedir=\"$top_builddir/framework/include -I$top_srcdir/framework/include -I$top_builddir/framework/fortran\"|" \
            -e "s|^libdir=.*|libdir=\"$top_builddir/framework/.libs\"|" \
            -e "s|^ldflags=\"-L\$libdir -Wl,-rpath,\$libdir|ldflags=\"-L$top_builddir/framework/fortran/.libs -Wl,-rpath,$top_builddir/framework/fortran/.libs -L\$libdir -Wl,-rpath,\$libdir|" \
            "$top_builddir/tools/wrappers/$w" > "$KF_DIR/$w"
        chmod +x "$KF_DIR/$w"
    done
}
kf_need_fortran() {
    if [ ! -f "$top_builddir/framework/fortran/.libs/libmpifort.so" ] || [ ! -f "$top_builddir/framework/fortran/mpi.mod" ]; then
        echo "Fortran support not built (no gfortran at configure time)"; exit 77
    fi
    kf_wrappers
}
kf_build() { # source (in tests/fortran), output
    "$KF_DIR/mpif90" -g -O1 -o "$KF_DIR/$2" "$top_srcdir/tests/fortran/$1" || { echo "FAIL: cannot build $1"; exit 1; }
}
kf_run() { # mpiexec arguments
    (cd "$KF_DIR" && env -u LD_LIBRARY_PATH "$MPIEXEC" --timeout 120 "$@")
}
