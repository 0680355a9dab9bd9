#!/bin/bash
# launch_abi_info: kumi_info lists the ABIs this Kumi runs programs of (issue
# 17 item 5): the native standard ABI, and the Open MPI / MPICH shims found
# in the abi dir (<pkglibdir>/abi, or KUMI_ABI_DIR as for mpiexec), "not
# built" when absent; human and --parsable forms.
. "$(dirname "$0")/registry_common.inc"
q() { printf '%s' "$1" | sed 's/[][\.*^$()+?{}|/]/\\&/g'; }   # a literal in a regex
A=$TMP/abi
mkdir -p "$A/ompi" "$A/mpich" "$A/standard" "$TMP/empty"
: > "$A/ompi/libmpi.so.40"
: > "$A/ompi/libmpi_mpifh.so.40"
: > "$A/standard/libmpi_abi.so.1"
qa=$(q "$A")

KUMI_ABI_DIR=$A "$KUMI_INFO" > "$TMP/h" 2> "$TMP/h.err" || fail "kumi_info exited $?"
[ -s "$TMP/h.err" ] && fail "kumi_info wrote to stderr: $(head -3 "$TMP/h.err")"
expect_line "$TMP/h" "^ *ABI shims \(KUMI_ABI_DIR\): $qa$" "human: the abi dir"
expect_line "$TMP/h" "^ *ABI: standard \(MPI 5\.0 ABI 1\.0, native: libmpi\.so\.0, libmpi_abi\.so\.1 at $qa/standard\)$" "human: standard, native"
expect_line "$TMP/h" "^ *ABI: ompi \(Open MPI 4\.x, libmpi\.so\.40, libmpi_mpifh\.so\.40\) at $qa/ompi$" "human: ompi with its libraries"
expect_line "$TMP/h" "^ *ABI: mpich \(MPICH 4\.x, libmpich\.so\.12\): not built \($qa/mpich/libmpich\.so\.12 missing\)$" "human: mpich not built"
expect_line "$TMP/h" "^ *ABI: ompi\+mpich \(Open MPI and MPICH in one process\): not built \($qa/libkumi_abimix\.so missing\)$" "human: ompi+mpich not built"

KUMI_ABI_DIR=$A "$KUMI_INFO" --parsable > "$TMP/p" 2> "$TMP/p.err" || fail "kumi_info --parsable exited $?"
expect_line "$TMP/p" "^path:abi_dir:$qa$" "parsable: abi_dir"
expect_line "$TMP/p" "^abi:standard:status:native$" "parsable: standard native"
expect_line "$TMP/p" "^abi:standard:version:1\.0$" "parsable: standard ABI version"
expect_line "$TMP/p" "^abi:ompi\+mpich:status:not built$" "parsable: ompi+mpich not built"
# with MPICH's shim and the GOT swap agent too: processes of both ABIs (tests/scripts/abi_mix.sh)
: > "$A/mpich/libmpich.so.12"
: > "$A/libkumi_abimix.so"
KUMI_ABI_DIR=$A "$KUMI_INFO" > "$TMP/h2" 2>&1 || fail "kumi_info exited $?"
expect_line "$TMP/h2" "^ *ABI: ompi\+mpich \(Open MPI and MPICH in one process: both shims, libkumi_abimix\.so\) at $qa$" "human: ompi+mpich"
KUMI_ABI_DIR=$A "$KUMI_INFO" --parsable > "$TMP/p2" 2>&1 || fail "kumi_info --parsable exited $?"
expect_line "$TMP/p2" "^abi:ompi\+mpich:status:available$" "parsable: ompi+mpich available"
rm -f "$A/mpich/libmpich.so.12" "$A/libkumi_abimix.so"
expect_line "$TMP/p" "^abi:standard:libraries:libmpi\.so\.0,libmpi_abi\.so\.1$" "parsable: standard libraries"
expect_line "$TMP/p" "^abi:ompi:status:available$" "parsable: ompi available"
expect_line "$TMP/p" "^abi:ompi:path:$qa/ompi$" "parsable: ompi path"
expect_line "$TMP/p" "^abi:ompi:libraries:libmpi\.so\.40,libmpi_mpifh\.so\.40$" "parsable: ompi libraries"
expect_line "$TMP/p" "^abi:ompi:description:Open MPI 4\.x$" "parsable: ompi description"
expect_line "$TMP/p" "^abi:mpich:status:not built$" "parsable: mpich not built"
bad=$(grep -Evc '^[a-z_]+:[^:]*:' "$TMP/p"); [ "$bad" = 0 ] && ok "parsable: every line is key:...:value" || fail "parsable: $bad malformed lines"

KUMI_ABI_DIR=$TMP/empty "$KUMI_INFO" --parsable > "$TMP/e" 2>&1
expect_line "$TMP/e" "^abi:ompi:status:not built$" "parsable: no shims: ompi not built"
expect_no_line "$TMP/e" "^abi:standard:path:" "parsable: no libmpi_abi.so.1: no standard path"
# without KUMI_ABI_DIR: <pkglibdir>/abi
"$KUMI_INFO" --parsable > "$TMP/d" 2>&1
pk=$(sed -n 's/^path:pkglibdir://p' "$TMP/d")
expect_line "$TMP/d" "^path:abi_dir:$(q "$pk")/abi$" "parsable: the abi dir is <pkglibdir>/abi by default"
"$KUMI_INFO" --help | grep -q KUMI_ABI_DIR && ok "--help names KUMI_ABI_DIR" || fail "--help does not name KUMI_ABI_DIR"
finish
