#!/bin/bash
# mpit_names: kumi_info and MPI_T show the same names (issue 23 item 3).  The
# control variables an MPI program enumerates through MPI_T are exactly the
# parameters `kumi_info --parsable` lists (same components selected for
# both: a component registers some parameters only when it opens), its
# performance variables and categories are those `kumi_info --mpit` lists,
# and every framework and every component kumi_info lists is an MPI_T
# category (<framework>, <framework>_<component>).
. "$(dirname "$0")/registry_common.inc"
: "${MPIEXEC:=$top_builddir/tools/mpiexec/mpiexec}" "${TESTBIN:=$top_builddir/tests/mpi}"
[ -x "$TESTBIN/mpit_cvar" ] || { echo "FAIL: $TESTBIN/mpit_cvar not built (make check-programs)"; exit 1; }
export MPI_COMPONENTS="p2p=self,shmem,tcp"

"$KUMI_INFO" --parsable > "$TMP/info" 2> "$TMP/info.err" || fail "kumi_info exited $?"
sed -n 's/^param:\([^:]*\):.*/\1/p' "$TMP/info" | sort -u > "$TMP/ki.cvars"
sed -n 's/^component:\([^:]*\):\([^:]*\):status:.*/\1_\2/p' "$TMP/info" | sort -u > "$TMP/ki.comps"
sed -n 's/^framework:\([^:]*\):contract:.*/\1/p' "$TMP/info" | sort -u > "$TMP/ki.fws"
[ -s "$TMP/ki.cvars" ] && [ -s "$TMP/ki.comps" ] && [ -s "$TMP/ki.fws" ] || fail "kumi_info listed no parameters, components or frameworks"

(cd "$TESTBIN" && "$MPIEXEC" --timeout 60 -n 2 ./mpit_cvar "$TMP/mpit") > "$TMP/run" 2>&1 || { cat "$TMP/run"; fail "mpit_cvar failed"; }
sed -n 's/^cvar //p' "$TMP/mpit" | sort -u > "$TMP/t.cvars"
sed -n 's/^pvar //p' "$TMP/mpit" | sort -u > "$TMP/t.pvars"
sed -n 's/^category //p' "$TMP/mpit" | sort -u > "$TMP/t.cats"
"$KUMI_INFO" --mpit --parsable > "$TMP/mi" 2> "$TMP/mi.err" || fail "kumi_info --mpit exited $?"
sed -n 's/^pvar:\([^:]*\):class:.*/\1/p' "$TMP/mi" | sort -u > "$TMP/ki.pvars"
sed -n 's/^category:\([^:]*\):parent:.*/\1/p' "$TMP/mi" | sort -u > "$TMP/ki.cats"
for k in pvars cats; do
    [ -s "$TMP/t.$k" ] || fail "MPI_T listed no $k"
    if diff "$TMP/ki.$k" "$TMP/t.$k" > "$TMP/d"; then ok "kumi_info --mpit and MPI_T list the same $(wc -l < "$TMP/t.$k") $k"
    else fail "$k differ (< kumi_info --mpit, > MPI_T):"; sed 's/^/    /' "$TMP/d"; fi
done
grep -qx 'p2p_unexpected_queue_length' "$TMP/t.pvars" || fail "no pvar p2p_unexpected_queue_length"
grep -qx 'p2p_tcp_bytes_sent' "$TMP/t.pvars" || fail "no pvar p2p_tcp_bytes_sent"

if diff "$TMP/ki.cvars" "$TMP/t.cvars" > "$TMP/d"; then
    ok "the $(wc -l < "$TMP/t.cvars") control variables are kumi_info's parameters"
else
    fail "control variables differ from kumi_info's parameters (< kumi_info, > MPI_T):"; sed 's/^/    /' "$TMP/d"
fi
missing=$(sort -u "$TMP/ki.comps" "$TMP/ki.fws" | comm -23 - "$TMP/t.cats")
if [ -z "$missing" ]; then ok "every framework and component of kumi_info is a category"
else fail "no category for: $missing"; fi
grep -qx 'kumi_base' "$TMP/t.cats" || fail "no category kumi_base"
finish
