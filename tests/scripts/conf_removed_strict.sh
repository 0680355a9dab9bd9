#!/bin/bash
# conf_removed_strict: mpi.h declares the removed MPI-1 procedures and MPI_LB /
# MPI_UB (issue 16 item 10; tests/mpi/conf_removed.c runs them) unless the
# program defines KUMI_NO_REMOVED, which gives strict MPI-3 and later: then
# each of them (and the MPI_Handler_function type) is undeclared (a call is
# an implicit declaration, an error here) while the calls that replace them
# still compile.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cc=${CC:-cc}
inc="-I$top_builddir/framework/include -I$top_srcdir/framework/include"
flags="-std=c11 -fsyntax-only -Werror=implicit-function-declaration"
uses=(
    'MPI_Aint a; return MPI_Address(p, &a);'
    'MPI_Aint a; return MPI_Type_extent(MPI_INT, &a);'
    'MPI_Aint a; return MPI_Type_lb(MPI_INT, &a);'
    'MPI_Aint a; return MPI_Type_ub(MPI_INT, &a);'
    'MPI_Datatype t; return MPI_Type_hvector(1, 1, 8, MPI_INT, &t);'
    'MPI_Datatype t; int b = 1; MPI_Aint d = 0; return MPI_Type_hindexed(1, &b, &d, MPI_INT, &t);'
    'MPI_Datatype t, y = MPI_INT; int b = 1; MPI_Aint d = 0; return MPI_Type_struct(1, &b, &d, &y, &t);'
    'MPI_Errhandler e; return MPI_Errhandler_create(h, &e);'
    'return MPI_Errhandler_set(MPI_COMM_WORLD, MPI_ERRORS_RETURN);'
    'MPI_Errhandler e; return MPI_Errhandler_get(MPI_COMM_WORLD, &e);'
    'return PMPI_Type_struct == 0;'
    'return MPI_LB == MPI_UB;'
    'MPI_Handler_function *g = h; return g == 0;'
)
n=0
for u in "${uses[@]}"; do
    n=$((n + 1))
    printf '#include <mpi.h>\nvoid h(MPI_Comm *c, int *e, ...) { (void)c; (void)e; }\nint f(void *p) { (void)p; %s }\n' "$u" > "$tmp/u$n.c"
    # shellcheck disable=SC2086
    $cc $flags $inc "$tmp/u$n.c" 2> "$tmp/err" || { cat "$tmp/err"; fail "does not compile: $u"; }
    # shellcheck disable=SC2086
    $cc $flags $inc -DKUMI_NO_REMOVED "$tmp/u$n.c" 2> "$tmp/err" && fail "compiles with KUMI_NO_REMOVED: $u"
    grep -Eq 'implicit declaration|undeclared|unknown type name' "$tmp/err" || { cat "$tmp/err"; fail "KUMI_NO_REMOVED: $u failed for another reason"; }
done
# the replacements and the deprecated (not removed) attribute calls stay
printf '#include <mpi.h>\nint f(void *p) { MPI_Aint a, b; int k; MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &k, 0);\n  MPI_Attr_put(MPI_COMM_WORLD, k, p); return MPI_Get_address(p, &a) + MPI_Type_get_extent(MPI_INT, &a, &b); }\n' > "$tmp/ok.c"
# shellcheck disable=SC2086
$cc $flags $inc -DKUMI_NO_REMOVED "$tmp/ok.c" 2> "$tmp/err" || { cat "$tmp/err"; fail "KUMI_NO_REMOVED hides more than the removed calls"; }
echo "conf_removed_strict: ok ($n uses)"
exit 0
