#!/bin/bash
# bindings_rules: the binding rules (data/kumi-bindings.json) hold against the
# API data and the sources: every pattern names a procedure of the API data,
# every parameter named exists, and no member of a family the generator
# forwards is also written by hand in framework/.  Also: the checks fire (a
# rule naming an unknown procedure, an unknown property, an unknown parameter,
# a bad Fortran length or sentinel kind, a 'significant' condition naming
# what the procedure lacks, a narrowing forwarder, a forwarded
# member written by hand), in all three generators that read the rules
# (mkbindings.py, mkfortran.py, mkmpih.py); a forwarder is generated where no
# source defines the member; unchanged outputs are not rewritten; and the
# Fortran glue and mpi.h follow the rules, not parameter names.
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
edit "$tmp/r0.json" "d['entries'][0]['nolokc'] = True"
expect_error "unknown property" "$tmp/r0.json" "entry 1 \\(library state and version queries\\): unknown properties nolokc"
edit "$tmp/r5.json" "d['entries'].append({'name': 'bad length', 'procedures': ['MPI_Graph_create'], 'fortran_lengths': {'edges': 'cnt'}})"
expect_error "bad Fortran length" "$tmp/r5.json" "entry [0-9]+ \\(bad length\\): length 'cnt' of edges is neither a parameter of MPI_Graph_create"
edit "$tmp/r6.json" "d['entries'].append({'procedures': ['MPI_Comm_spawn'], 'fortran_absent': {'argcc': '0'}})"
expect_error "unknown parameter (Fortran)" "$tmp/r6.json" "MPI_Comm_spawn has no parameter 'argcc' \\(fortran_absent\\)"
edit "$tmp/r7.json" "d['entries'].append({'procedures': ['MPI_Graph_create'], 'sentinel_arrays': {'edges': 'edge'}})"
expect_error "bad sentinel kind" "$tmp/r7.json" "sentinel kind 'edge' of edges is none of weights, errcodes"
edit "$tmp/r9.json" "d['entries'].append({'name': 'bad cond', 'procedures': ['MPI_Put'], 'significant': {'origin_count': 'count != 0'}})"
expect_error "condition naming a stranger" "$tmp/r9.json" "entry [0-9]+ \\(bad cond\\): condition 'count != 0' of origin_count names 'count', neither a parameter of MPI_Put"
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

# the Fortran and mpi.h generators refuse bad rules too (the build stops with the message)
fgen=$top_srcdir/framework/bindings/mkfortran.py
hgen=$top_srcdir/framework/bindings/mkmpih.py
"$py" "$gen" "${api[@]}" --rules "$rules" --out-c "$tmp/full.c" --out-h "$tmp/full.h" "${srcs[@]}" ||
    fail "generation of the full bindings failed"
fortran() {   # fortran RULES: mkfortran.py into $tmp/f.*
    "$py" "$fgen" "${api[@]}" --rules "$1" --bindings "$tmp/full.c" --bindings "$top_srcdir/framework/core/handles.c" \
        --out-c "$tmp/f.c" --out-h "$tmp/f.h" --out-mod "$tmp/f.f90"
}
mpih() {   # mpih RULES: mkmpih.py into $tmp/mpi.h
    "$py" "$hgen" "$top_srcdir/data/mpi-abi-1.0.json" "$top_srcdir/data/mpi-procedures.json" "$1" "${srcs[@]}" > "$tmp/mpi.h"
}
for r in r0 r1 r5; do
    fortran "$tmp/$r.json" > "$tmp/neg.out" 2>&1 && fail "mkfortran.py accepted the rules $r"
    grep -q "^mkfortran: .*$r.json: entry" "$tmp/neg.out" || { cat "$tmp/neg.out"; fail "mkfortran.py: no clear message for $r"; }
    mpih "$tmp/$r.json" 2> "$tmp/neg.out" && fail "mkmpih.py accepted the rules $r"
    grep -q "^mkmpih: .*$r.json: entry" "$tmp/neg.out" || { cat "$tmp/neg.out"; fail "mkmpih.py: no clear message for $r"; }
done
# the Fortran glue and mpi.h follow the rules: with them, MPI_Dist_graph_create's weights
# take the Fortran sentinels and are a pointer in mpi.h, MPI_Waitany's index counts from 1,
# MPI_Op_create is left to kf_support.c; without those rules none of it
fortran "$rules" || fail "mkfortran.py failed"
mpih "$rules" || fail "mkmpih.py failed"
grep -q 'KF_WEIGHTS(weights)' "$tmp/f.c" || fail "no KF_WEIGHTS(weights) in the Fortran glue"
grep -q '++\*index;' "$tmp/f.c" || fail "MPI_Waitany's index does not count from 1 in the Fortran glue"
grep -q 'pmpi_op_create_' "$tmp/f.c" && fail "the glue defines pmpi_op_create_, which kf_support.c writes"
grep -q '^int MPI_Dist_graph_create(.*const int \*weights' "$tmp/mpi.h" || fail "mpi.h: weights is not a pointer"
edit "$tmp/r8.json" "d['entries'] = [e for e in d['entries'] if not e.get('sentinel_arrays') and not e.get('fortran_one_based') \
and not e.get('fortran_by_hand')]"
fortran "$tmp/r8.json" > /dev/null || fail "mkfortran.py failed without the Fortran rules"
mpih "$tmp/r8.json" || fail "mkmpih.py failed without the sentinel rules"
grep -q 'KF_WEIGHTS' "$tmp/f.c" && fail "KF_WEIGHTS without a sentinel_arrays rule"
grep -q '++\*index;' "$tmp/f.c" && fail "a 1-based index without a fortran_one_based rule"
grep -q '^int MPI_Dist_graph_create(.*const int weights\[\]' "$tmp/mpi.h" || fail "mpi.h: weights is a pointer without a rule"

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
# 5. fast paths (rule 'fast'): where the rule says, the entry point tests one condition and
# otherwise goes on to the full one (kumi_full_<name>), whose checks are those of an entry
# point without the rule; elsewhere no fast path; a procedure that cannot have one is refused
fn_of() { awk -v f="$2" 'index($0, f) == 1 { p = 1 } p { print } p && /^}/ { exit }' "$1"; }
fn_of "$tmp/full.c" 'KUMI_EXPORT int PMPI_Send(' > "$tmp/send.c"
grep -q 'KUMI_FAST_ENTRY() &&' "$tmp/send.c" || fail "PMPI_Send has no fast path"
grep -q 'kumi_ok_dest(dest, k_comm)' "$tmp/send.c" || fail "PMPI_Send's fast path does not check dest"
grep -q 'return kumi_full_MPI_Send(buf, count, datatype, dest, tag, comm);' "$tmp/send.c" ||
    fail "PMPI_Send does not go on to kumi_full_MPI_Send"
fn_of "$tmp/full.c" 'static __attribute__((noinline)) int kumi_full_MPI_Send(' > "$tmp/send-full.c"
fn_of "$tmp/full.c" 'KUMI_EXPORT int PMPI_Ssend(' > "$tmp/ssend.c"
grep -q 'KUMI_FAST_ENTRY' "$tmp/ssend.c" && fail "PMPI_Ssend has a fast path without the rule"
# the full entry point checks as one without the rule (MPI_Ssend's, names aside)
diff <(grep -v 'kfn\[\]\|kumi_full_\|KUMI_EXPORT' "$tmp/send-full.c" | sed 's/kumi_mpi_send(/F(/') \
     <(grep -v 'kfn\[\]\|KUMI_EXPORT' "$tmp/ssend.c" | sed 's/kumi_mpi_ssend(/F(/') ||
    fail "kumi_full_MPI_Send does not check as MPI_Ssend does"
for r in Bcast Win_fence; do
    edit "$tmp/fast-$r.json" "d['entries'].append({'name': 'x', 'procedures': ['MPI_$r'], 'fast': True})"
    "$py" "$gen" "${api[@]}" --rules "$tmp/fast-$r.json" --out-c "$tmp/x.c" --out-h "$tmp/x.h" "${srcs[@]}" \
        > "$tmp/neg.out" 2>&1 && fail "a fast path for MPI_$r was accepted"
    grep -q "^mkbindings: MPI_$r: .*fast path" "$tmp/neg.out" || { cat "$tmp/neg.out"; fail "MPI_$r: no clear message"; }
done
exit 0
