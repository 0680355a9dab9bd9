#!/bin/bash
# bindings_rules: the binding rules (data/kumi-bindings.json) hold against the
# API data and the sources: every pattern names a procedure of the API data,
# every parameter named exists, and no member of a family the generator
# forwards is also written by hand in framework/.  Also: the checks fire (a
# rule naming an unknown procedure, an unknown parameter, a narrowing
# forwarder, a forwarded member written by hand), a forwarder is generated
# where no source defines the member, and unchanged outputs are not rewritten.
set -u
: "${top_srcdir:?}"
py=${PYTHON3:-python3}
command -v "$py" > /dev/null 2>&1 || { echo "SKIP: no $py"; exit 77; }
gen=$top_srcdir/framework/bindings/mkbindings.py
rules=$top_srcdir/data/kumi-bindings.json
api=(--procedures "$top_srcdir/data/mpi-procedures.json" --abi "$top_srcdir/data/mpi-abi-1.0.json")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mapfile -t srcs < <(find "$top_srcdir/framework" -name '*.c' -not -path '*/fortran/*' -not -path '*/bindings/*' | sort)
[ ${#srcs[@]} -gt 10 ] || fail "no sources found under $top_srcdir/framework"

# 1. the rules hold for the tree
"$py" "$gen" "${api[@]}" --rules "$rules" --check "${srcs[@]}" > "$tmp/check.out" 2>&1 ||
    { head -20 "$tmp/check.out"; fail "mkbindings.py --check: $(wc -l < "$tmp/check.out") problems (above)"; }

# 2. the checks fire
edit() {   # edit OUT PYTHON-EXPRESSION-ON-d: a copy of the rules changed
    "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); $2; json.dump(d, open(sys.argv[2], 'w'))" \
        "$rules" "$1"
}
expect_error() {   # expect_error WHAT RULES MESSAGE-REGEX [SOURCES...]
    local what=$1 r=$2 re=$3; shift 3
    if "$py" "$gen" "${api[@]}" --rules "$r" --check "$@" > "$tmp/neg.out" 2>&1; then
        fail "$what: accepted"
    fi
    grep -Eq "$re" "$tmp/neg.out" || { cat "$tmp/neg.out"; fail "$what: not the expected message /$re/"; }
}
edit "$tmp/r1.json" "d['entries'][0]['procedures'].append('MPI_Sned')"
expect_error "unknown procedure" "$tmp/r1.json" "pattern 'MPI_Sned' matches no procedure"
edit "$tmp/r2.json" "d['entries'].append({'procedures': ['MPI_Send'], 'null_ok': ['commm']})"
expect_error "unknown parameter" "$tmp/r2.json" "MPI_Send has no parameter 'commm'"
edit "$tmp/r3.json" "d['entries'].append({'procedures': ['MPI_Recv'], 'nolock': True, 'anytime': True}); \
d['entries'].append({'procedures': ['MPI_Recv'], 'nolock': True})"
expect_error "property given twice" "$tmp/r3.json" "nolock given twice for MPI_Recv"
edit "$tmp/r4.json" "d['entries'].append({'procedures': ['MPI_Reduce_local_c'], 'forward': \
{'to': 'int kumi_x(const char *kfn, const void *inbuf, void *inoutbuf, int count, struct kumi_dt *datatype, struct kumi_op *op)'}})"
expect_error "narrowing forwarder" "$tmp/r4.json" "MPI_Reduce_local_c: parameter count is MPI_Count, kumi_x takes int \\(only widening"
printf 'int kumi_mpi_send_c(void)\n{\n    return 0;\n}\n' > "$tmp/byhand.c"
expect_error "forwarded member written by hand" "$rules" "MPI_Send_c: in family forwarded to kumi_pt2pt_send, defined by hand" "$tmp/byhand.c"

# 3. a forwarder is generated where no source defines the member, and only there
printf 'int kumi_mpi_send(const void *buf, int count, struct kumi_dt *datatype, int dest, int tag,\n    struct kumi_comm *comm)\n{\n    return 0;\n}\n' > "$tmp/one.c"
"$py" "$gen" "${api[@]}" --rules "$rules" --out-c "$tmp/b.c" --out-h "$tmp/k.h" "$tmp/one.c" 2> "$tmp/gen.err" ||
    { cat "$tmp/gen.err"; fail "generation failed"; }
grep -q '^int kumi_mpi_send(' "$tmp/b.c" && fail "a forwarder was generated for kumi_mpi_send, which the source defines"
grep -A2 '^int kumi_mpi_send_c(' "$tmp/b.c" |
    grep -q 'return kumi_pt2pt_send("MPI_Send_c", KUMI_MODE_STD, buf, count, datatype, dest, tag, comm);' ||
    fail "no forwarder kumi_mpi_send_c -> kumi_pt2pt_send in the generated bindings"
grep -A2 '^int kumi_mpi_ibcast(' "$tmp/b.c" |
    grep -q 'return kumi_coll_bcast("MPI_Ibcast", KUMI_FORM_NB, MPI_INFO_NULL, request, buffer, count, datatype, root, comm);' ||
    fail "no forwarder kumi_mpi_ibcast -> kumi_coll_bcast in the generated bindings"
grep -q '^KUMI_EXPORT int PMPI_Send_c(' "$tmp/b.c" || fail "no entry point PMPI_Send_c for the generated forwarder"
grep -q '^int kumi_pt2pt_send(const char \*kfn, int mode, ' "$tmp/k.h" || fail "kumi_impl.h does not declare kumi_pt2pt_send"

# 4. outputs are rewritten only when their content changes
touch -d '2001-01-01' "$tmp/b.c" "$tmp/k.h"
"$py" "$gen" "${api[@]}" --rules "$rules" --out-c "$tmp/b.c" --out-h "$tmp/k.h" "$tmp/one.c" || fail "generation failed"
[ "$(stat -c %Y "$tmp/b.c")" = "$(date -d 2001-01-01 +%s)" ] || fail "unchanged bindings.c was rewritten"
[ "$(stat -c %Y "$tmp/k.h")" = "$(date -d 2001-01-01 +%s)" ] || fail "unchanged kumi_impl.h was rewritten"
printf 'int kumi_mpi_abort(struct kumi_comm *comm, int errorcode)\n{\n    return 0;\n}\n' >> "$tmp/one.c"
"$py" "$gen" "${api[@]}" --rules "$rules" --out-c "$tmp/b.c" --out-h "$tmp/k.h" "$tmp/one.c" || fail "generation failed"
[ "$(stat -c %Y "$tmp/b.c")" != "$(date -d 2001-01-01 +%s)" ] || fail "changed bindings.c was not rewritten"
[ "$(stat -c %Y "$tmp/k.h")" = "$(date -d 2001-01-01 +%s)" ] || fail "unchanged kumi_impl.h was rewritten"
exit 0
