#!/bin/bash
# conf_wrapper_order: the compiler wrappers put Kumi's library folder before
# the user's arguments (issue 16 item 12a).  A build that passes its own -L
# to a folder holding another MPI's libmpi.so (Debian's Python passes
# -L/usr/lib/x86_64-linux-gnu) must still link Kumi's libmpi, not the other
# one without a word.  The "other MPI" here is a libmpi.so made by the test
# (soname libmpi.so.99, its own MPI_Init), in a folder given with -L: the
# program built by mpicc must need Kumi's libmpi and run on Kumi.
. "$top_srcdir/tests/fortran/kf.sh"
fail() { echo "FAIL: $*"; exit 1; }
[ -f "$top_builddir/tools/wrappers/mpicc" ] || fail "wrappers not configured"
kf_wrappers
command -v readelf > /dev/null || { echo "no readelf"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/other"
cat > "$tmp/other.c" <<'EOC'
int MPI_Init(int *argc, char ***argv) { (void)argc; (void)argv; return 99; }
int MPI_Finalize(void) { return 99; }
int MPI_Get_library_version(char *v, int *l) { v[0] = 'X'; v[1] = 0; *l = 1; return 99; }
EOC
${CC:-cc} -shared -fPIC -Wl,-soname,libmpi.so.99 -o "$tmp/other/libmpi.so" "$tmp/other.c" ||
    fail "cannot build the stand-in libmpi.so"
cat > "$tmp/which.c" <<'EOC'
#include <mpi.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int l = 0;
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
    MPI_Get_library_version(v, &l);
    printf("%s\n", strstr(v, "Kumi") ? "Kumi" : v);
    MPI_Finalize();
    return 0;
}
EOC
for w in mpicc mpicxx; do
    [ -x "$KF_DIR/$w" ] || continue
    src=$tmp/which.c
    if [ $w = mpicxx ]; then
        command -v "$(sed -n 's/^compiler=.*:-\(.*\)}}}$/\1/p' "$KF_DIR/$w")" > /dev/null 2>&1 || continue
        cp "$tmp/which.c" "$tmp/which.cc"; src=$tmp/which.cc
    fi
    # the user's -L comes first on the command line, as a build system puts it
    "$KF_DIR/$w" -L"$tmp/other" -o "$tmp/which_$w" "$src" || fail "$w cannot build the program"
    need=$(readelf -d "$tmp/which_$w" | sed -n 's/.*(NEEDED).*\[\(libmpi[^]]*\)\].*/\1/p')
    [ "$need" = "$(readelf -d "$top_builddir/framework/.libs/libmpi.so" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')" ] ||
        fail "$w -L$tmp/other linked '$need', not Kumi's libmpi: $("$KF_DIR/$w" -show -L"$tmp/other" x.c)"
    out=$(kf_run -n 1 "$tmp/which_$w") || fail "the program built by $w does not run"
    [ "$out" = Kumi ] || fail "the program built by $w ran on '$out', not Kumi"
    echo "$w: Kumi's libmpi wins over -L$tmp/other ($need)"
done
out=$("$KF_DIR/mpicc" -show -L/somewhere x.c)
case "$out" in *"-Wl,-rpath,"*" -L/somewhere x.c -lmpi") ;; *) fail "mpicc -show order: $out" ;; esac
exit 0
