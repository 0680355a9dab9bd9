#!/bin/bash
# kumi_info lists this build's four components with versions, in human and
# --parsable form; --help works; MPI_COMPONENTS errors list what exists.
. "$(dirname "$0")/registry_common.inc"

"$KUMI_INFO" > "$TMP/human" 2> "$TMP/human.err"; rc=$?
[ $rc -eq 0 ] && ok "kumi_info exits 0" || fail "kumi_info exited $rc"
[ -s "$TMP/human.err" ] && fail "kumi_info wrote to stderr: $(head -3 "$TMP/human.err")" || ok "no stderr output"
expect_line "$TMP/human" '^ *Kumi version: [0-9]+\.[0-9]+\.[0-9]+$' "human: Kumi version"
for c in rpim:fork p2p:self p2p:tcp coll:basic; do
    fw=${c%%:*}; nm=${c#*:}
    expect_line "$TMP/human" "^ *Kumi $fw: $nm \(v[0-9]+\.[0-9]+\.[0-9]+, contract v[0-9]+\.[0-9]+, priority -?[0-9]+\)$" "human: $fw/$nm with version"
done
expect_line "$TMP/human" '^ *status: available$' "human: a status line"

"$KUMI_INFO" --parsable > "$TMP/p" 2> "$TMP/p.err"; rc=$?
[ $rc -eq 0 ] && ok "--parsable exits 0" || fail "--parsable exited $rc"
expect_line "$TMP/p" '^version:kumi:[0-9]+\.[0-9]+\.[0-9]+$' "parsable: version"
expect_line "$TMP/p" '^path:pkglibdir:/' "parsable: pkglibdir"
for c in rpim:fork p2p:self p2p:tcp coll:basic; do
    expect_line "$TMP/p" "^component:$c:version:[0-9]+\.[0-9]+\.[0-9]+$" "parsable: $c version"
    expect_line "$TMP/p" "^component:$c:status:available$" "parsable: $c available"
    expect_line "$TMP/p" "^component:$c:path:/.*kumi_${c%%:*}_${c#*:}\.so$|^component:$c:path:\(linked in\)$" "parsable: $c path"
    expect_line "$TMP/p" "^component:$c:description:..." "parsable: $c description"
done
for fw in rpim p2p coll pacing ckpt accel; do expect_line "$TMP/p" "^framework:$fw:contract:[0-9]+\.[0-9]+$" "parsable: framework $fw with its contract"; done
expect_no_line "$TMP/p" "^framework:(abi):" "parsable: no framework without a contract header"
expect_line "$TMP/p" '^param:p2p_tcp_priority:value:-?[0-9]+$' "parsable: priority parameter of p2p/tcp"
expect_line "$TMP/p" '^param:kumi_base_verbose:source:default$' "parsable: kumi_base_verbose"
# accel/cuda: listed; without the NVIDIA driver unavailable, saying why
expect_line "$TMP/p" '^component:accel:cuda:version:[0-9]+\.[0-9]+\.[0-9]+$' "parsable: accel/cuda listed"
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    expect_line "$TMP/p" '^component:accel:cuda:status:unavailable$' "parsable: accel/cuda unavailable without libcuda.so.1"
    expect_line "$TMP/p" '^component:accel:cuda:reason:libcuda\.so\.1 not found' "parsable: accel/cuda says libcuda.so.1 is missing"
    expect_line "$TMP/human" 'libcuda\.so\.1 not found' "human: accel/cuda says libcuda.so.1 is missing"
fi
# every line is key:value
bad=$(grep -Evc '^[a-z_]+:[^:]*:' "$TMP/p"); [ "$bad" = 0 ] && ok "parsable: every line is key:...:value" || fail "parsable: $bad malformed lines"

"$KUMI_INFO" --help > "$TMP/help" 2>&1; rc=$?
[ $rc -eq 0 ] && ok "--help exits 0" || fail "--help exited $rc"
expect_line "$TMP/help" '--param FW COMP' "--help documents --param"
"$KUMI_INFO" --bogus > /dev/null 2>&1 && fail "unknown option accepted" || ok "unknown option refused"

# A selection keeps and excludes.
MPI_COMPONENTS="p2p=tcp" "$KUMI_INFO" --parsable > "$TMP/sel" 2>&1
expect_line "$TMP/sel" '^component:p2p:self:status:excluded$' "MPI_COMPONENTS=p2p=tcp excludes self"
expect_line "$TMP/sel" '^component:p2p:self:reason:excluded by MPI_COMPONENTS$' "exclusion reason"
expect_line "$TMP/sel" '^component:p2p:tcp:status:available$' "MPI_COMPONENTS=p2p=tcp keeps tcp"
MPI_COMPONENTS=" p2p = ^ tcp ; " "$KUMI_INFO" --parsable > "$TMP/sel2" 2>&1
expect_line "$TMP/sel2" '^component:p2p:tcp:status:excluded$' "p2p=^tcp excludes tcp (spaces allowed)"
expect_line "$TMP/sel2" '^component:p2p:self:status:available$' "p2p=^tcp keeps self"
expect_line "$TMP/sel2" '^component:coll:basic:status:available$' "other frameworks untouched"

# Errors: unknown component / framework, malformed items -> exit 1 and a message listing what exists.
MPI_COMPONENTS="p2p=tpc" "$KUMI_INFO" > "$TMP/e1" 2>&1; rc=$?
[ $rc -eq 1 ] && ok "unknown component: exit 1" || fail "unknown component: exit $rc"
expect_line "$TMP/e1" "unknown component 'tpc' in framework p2p \(available: [a-z, ]*self[a-z, ]*\)" "unknown component message lists the available ones"
expect_line "$TMP/e1" "available: .*tcp" "... including tcp"
MPI_COMPONENTS="p2p=tcp;p2q=tcp" "$KUMI_INFO" > "$TMP/e2" 2>&1; rc=$?
[ $rc -eq 1 ] && ok "unknown framework: exit 1" || fail "unknown framework: exit $rc"
expect_line "$TMP/e2" "unknown framework 'p2q' \(frameworks: rpim, p2p, coll, pacing, ckpt, accel\)" "unknown framework message lists frameworks"
MPI_COMPONENTS="p2p" "$KUMI_INFO" > "$TMP/e3" 2>&1; rc=$?
[ $rc -eq 1 ] && ok "item without '=': exit 1" || fail "item without '=': exit $rc"
expect_line "$TMP/e3" "MPI_COMPONENTS: 'p2p' is not framework=list" "malformed item message"
MPI_COMPONENTS="p2p=^self;p2p=tcp" "$KUMI_INFO" > "$TMP/e4" 2>&1; rc=$?
[ $rc -eq 1 ] && ok "framework given twice: exit 1" || fail "framework given twice: exit $rc"
MPI_COMPONENTS="p2p=tcp,^self" "$KUMI_INFO" > "$TMP/e5" 2>&1; rc=$?
[ $rc -eq 1 ] && ok "'^' inside a list: exit 1" || fail "'^' inside a list: exit $rc"
finish
