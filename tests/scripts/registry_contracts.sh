#!/bin/bash
# Versioned component contracts (kumi/component.h).  kumi_info shows each
# framework's contract version and the one each component was built
# against; components built against an older, shorter table (p2p/old: p2p
# contract v1.0, ends at finalize; coll/old: coll v1.0, ends before
# comm_release) load and carry a real job, and the operations past the end
# of their tables are never called (they abort if they are); tables that
# break the contract (another major, shorter than the mandatory part, a
# capability flag without its operations, a newer coll minor, no send) are
# refused with a one-line reason, in kumi_info and at MPI_Init.
. "$(dirname "$0")/registry_common.inc"
: "${MPIEXEC:=$top_builddir/tools/mpiexec/mpiexec}"
: "${MPICC:=cc -I$top_builddir/framework/include -I$top_srcdir/framework/include -L$top_builddir/framework/.libs -Wl,-rpath,$top_builddir/framework/.libs}"
[ -x "$MPIEXEC" ] || { echo "SKIP: no mpiexec"; exit 77; }
if "$KUMI_INFO" --parsable 2>/dev/null | grep -q '^component:.*:path:(linked in)$'; then
    echo "SKIP: components are linked into libmpi (--disable-dlopen): no third-party loading"
    exit 77
fi
TP=$top_srcdir/tests/thirdparty
build() { # out src flags...
    local out=$1 src=$2; shift 2
    mkdir -p "$(dirname "$out")"
    # shellcheck disable=SC2086
    if ! $MPICC -std=gnu11 -Wall -Wextra -Werror -shared -fPIC "$@" -o "$out" "$src" > "$TMP/cc.log" 2>&1; then
        fail "cannot build $out:"; sed 's/^/    /' "$TMP/cc.log"; finish
    fi
}
OLD=$TMP/old
build "$OLD/kumi_p2p_old.so" "$TP/p2p_old.c"
build "$OLD/kumi_coll_old.so" "$TP/coll_old.c"
build "$TMP/p2p_major/kumi_p2p_old.so" "$TP/p2p_old.c" -DOLD_MAJOR=2
build "$TMP/p2p_short/kumi_p2p_old.so" "$TP/p2p_old.c" -DOLD_SIZE=8
build "$TMP/p2p_rma/kumi_p2p_old.so" "$TP/p2p_old.c" -DOLD_MINOR=1 -DOLD_CAPS=KUMI_P2P_CAP_RMA
build "$TMP/p2p_rget/kumi_p2p_old.so" "$TP/p2p_old.c" -DOLD_MINOR=2 -DOLD_CAPS=KUMI_P2P_CAP_RGET -DOLD_RGET=NULL
build "$TMP/p2p_nosend/kumi_p2p_old.so" "$TP/p2p_old.c" -DOLD_SEND=NULL
build "$TMP/p2p_newer/kumi_p2p_old.so" "$TP/p2p_old.c" -DOLD_MINOR=9
build "$TMP/coll_major/kumi_coll_old.so" "$TP/coll_old.c" -DOLD_MAJOR=2
build "$TMP/coll_newer/kumi_coll_old.so" "$TP/coll_old.c" -DOLD_MINOR=7 -DOLD_SIZE='sizeof(struct kumi_coll_ops)'
$MPICC -o "$TMP/prog" "$TP/old_prog.c" -lmpi > "$TMP/cc.log" 2>&1 || { fail "cannot build old_prog.c"; cat "$TMP/cc.log"; finish; }
ok "built p2p/old, coll/old, their broken variants and the test program"
base=${KUMI_COMPONENT_PATH:-}
cpath() { echo "${base:+$base:}$1"; }

# The contract versions this build has, from the headers.
ver() { # FW -> MAJOR.MINOR
    local h=$top_srcdir/framework/include/kumi/$1.h U; U=$(echo "$1" | tr a-z A-Z)
    echo "$(sed -n "s/^#define KUMI_${U}_CONTRACT_MAJOR \([0-9]*\).*/\1/p" "$h").$(sed -n "s/^#define KUMI_${U}_CONTRACT_MINOR \([0-9]*\).*/\1/p" "$h")"
}
RPIM=$(ver rpim) P2P=$(ver p2p) COLL=$(ver coll) PACING=$(ver pacing) CKPT=$(ver ckpt) ACCEL=$(ver accel)
[[ $RPIM =~ ^[0-9]+\.[0-9]+$ && $P2P =~ ^[0-9]+\.[0-9]+$ && $COLL =~ ^[0-9]+\.[0-9]+$ ]] \
    && ok "contract versions in the headers: rpim $RPIM, p2p $P2P, coll $COLL" \
    || { fail "no contract versions in kumi/{rpim,p2p,coll}.h ('$RPIM' '$P2P' '$COLL')"; finish; }
re() { echo "${1//./\\.}"; }

# kumi_info: frameworks with their contract, components with theirs
KUMI_COMPONENT_PATH=$(cpath "$OLD") "$KUMI_INFO" --parsable > "$TMP/p" 2> "$TMP/p.err"; rc=$?
[ $rc -eq 0 ] && [ ! -s "$TMP/p.err" ] && ok "kumi_info --parsable exits 0, silent" || fail "exit $rc: $(cat "$TMP/p.err")"
expect_line "$TMP/p" "^framework:rpim:contract:$(re "$RPIM")\$" "parsable: rpim contract"
expect_line "$TMP/p" "^framework:p2p:contract:$(re "$P2P")\$" "parsable: p2p contract"
expect_line "$TMP/p" "^framework:coll:contract:$(re "$COLL")\$" "parsable: coll contract"
n=$(grep -c '^framework:' "$TMP/p")
[ "$n" = 6 ] && ok "six frameworks listed (those with a contract header)" || { fail "$n frameworks listed:"; grep '^framework:' "$TMP/p"; }
expect_line "$TMP/p" "^component:p2p:tcp:contract:$(re "$P2P")\$" "parsable: p2p/tcp built against this library's p2p contract"
expect_line "$TMP/p" "^component:rpim:fork:contract:$(re "$RPIM")\$" "parsable: rpim/fork's contract"
expect_line "$TMP/p" '^component:p2p:old:contract:1\.0$' "parsable: p2p/old built against p2p contract 1.0"
expect_line "$TMP/p" '^component:p2p:old:status:available$' "p2p/old (a shorter table) is accepted"
expect_line "$TMP/p" '^component:coll:old:contract:1\.0$' "parsable: coll/old built against coll contract 1.0"
expect_line "$TMP/p" '^component:coll:old:status:available$' "coll/old (a shorter table) is accepted"
KUMI_COMPONENT_PATH=$(cpath "$OLD") "$KUMI_INFO" > "$TMP/h" 2>&1
expect_line "$TMP/h" "^ *Frameworks: rpim \(contract v$(re "$RPIM")\), p2p \(contract v$(re "$P2P")\), coll \(contract v$(re "$COLL")\), pacing \(contract v$(re "$PACING")\), ckpt \(contract v$(re "$CKPT")\), accel \(contract v$(re "$ACCEL")\)\$" "human: frameworks with their contracts"
expect_line "$TMP/h" '^ *Kumi p2p: old \(v0\.0\.1, contract v1\.0, priority 0\)$' "human: p2p/old with its contract"
expect_line "$TMP/h" "^ *Kumi coll: basic \(v[0-9.]+, contract v$(re "$COLL"), priority [0-9]+\)\$" "human: coll/basic with its contract"

# A real job over the old components: p2p/old carries each rank's messages to
# itself (eager and rendezvous), coll/old every barrier; communicators are freed.
KUMI_COMPONENT_PATH=$(cpath "$OLD") MPI_COMPONENTS="p2p=old,shmem,tcp" KUMI_COLL_OLD_TRACE=1 KUMI_VERBOSE=1 \
    "$MPIEXEC" --timeout 60 -n 3 "$TMP/prog" > "$TMP/out" 2> "$TMP/err"; rc=$?
[ $rc -eq 0 ] && [ "$(grep -c '^ok ' "$TMP/out")" = 3 ] && ok "job over p2p/old and coll/old: 3 ranks ok" \
    || { fail "job over p2p/old and coll/old: exit $rc"; sed 's/^/    /' "$TMP/out" "$TMP/err" | head -20; }
expect_no_line "$TMP/err" 'past the end' "no operation past the end of a shorter table was called"
n=$(grep -c 'p2p/old serves ranks [0-9]' "$TMP/err")
[ "$n" = 3 ] && ok "p2p/old served each rank's messages to itself" || { fail "p2p/old served $n ranks:"; sed 's/^/    /' "$TMP/err" | head; }
n=$(grep -c '^coll/old: barrier$' "$TMP/err")
[ "$n" = 3 ] && ok "coll/old ran the barriers" || { fail "coll/old ran barriers on $n ranks"; sed 's/^/    /' "$TMP/err" | head; }

# Refused tables: kumi_info shows the reason with both versions.
chk_refused() { # dir fw reason-regex what
    KUMI_COMPONENT_PATH=$(cpath "$1") "$KUMI_INFO" --parsable > "$TMP/r" 2> "$TMP/r.err"; local rc=$?
    [ $rc -eq 0 ] && ok "$4: kumi_info exits 0" || fail "$4: kumi_info exited $rc"
    expect_line "$TMP/r" "^component:$2:old:status:refused\$" "$4: refused"
    expect_line "$TMP/r" "^component:$2:old:reason:$3" "$4: reason"
}
chk_refused "$TMP/p2p_major" p2p "built against p2p contract v2\.0, this library has p2p contract v$(re "$P2P") \(another major version" "p2p table of another major"
chk_refused "$TMP/p2p_short" p2p "p2p ops table \(contract v1\.0\) is 8 bytes, shorter than the [0-9]+ bytes of the mandatory part of p2p contract v1\.x \(this library has v$(re "$P2P")\)" "p2p table shorter than the mandatory part"
chk_refused "$TMP/p2p_rma" p2p "p2p ops table \(contract v1\.1\) advertises KUMI_P2P_CAP_RMA but lacks mem_reg \(this library has p2p contract v$(re "$P2P")\)" "KUMI_P2P_CAP_RMA on a v1.1 table (no RMA operations)"
chk_refused "$TMP/p2p_rget" p2p "p2p ops table \(contract v1\.2\) advertises KUMI_P2P_CAP_RGET but lacks rget" "KUMI_P2P_CAP_RGET without rget"
chk_refused "$TMP/p2p_nosend" p2p "p2p ops table \(contract v1\.0\) lacks send, which every p2p transport must have" "p2p table without send"
chk_refused "$TMP/coll_major" coll "built against coll contract v2\.0, this library has coll contract v$(re "$COLL")" "coll table of another major"
chk_refused "$TMP/coll_newer" coll "built against coll contract v1\.7, newer than this library's coll contract v$(re "$COLL")" "coll table of a newer minor"
# a newer p2p minor is fine: the library ignores what it does not know
KUMI_COMPONENT_PATH=$(cpath "$TMP/p2p_newer") "$KUMI_INFO" --parsable > "$TMP/nw" 2>&1
expect_line "$TMP/nw" '^component:p2p:old:status:available$' "p2p table of a newer minor (longer) is accepted"
expect_line "$TMP/nw" '^component:p2p:old:contract:1\.9$' "... and shows the contract it was built against"

# At MPI_Init: the job runs and the refusal is reported once; selecting the
# refused component stops the job with the reason.
KUMI_COMPONENT_PATH=$(cpath "$TMP/p2p_major") "$MPIEXEC" --timeout 60 -n 2 "$TMP/prog" > "$TMP/out2" 2> "$TMP/err2"; rc=$?
[ $rc -eq 0 ] && [ "$(grep -c '^ok ' "$TMP/out2")" = 2 ] && ok "job runs with a refused p2p/old in the path" || fail "exit $rc: $(cat "$TMP/err2")"
n=$(grep -c "kumi_p2p_old.so refused: built against p2p contract v2\.0, this library has p2p contract v$(re "$P2P")" "$TMP/err2")
[ "$n" = 1 ] && ok "the refusal is reported once per job, with both versions" || { fail "reported $n times:"; cat "$TMP/err2"; }
KUMI_COMPONENT_PATH=$(cpath "$TMP/p2p_rma") MPI_COMPONENTS="p2p=old,shmem,tcp" "$MPIEXEC" --timeout 60 -n 2 "$TMP/prog" > "$TMP/out3" 2> "$TMP/err3"; rc=$?
[ $rc -ne 0 ] && ok "selecting a refused p2p/old: the job fails (exit $rc)" || fail "selecting a refused p2p/old: the job ran"
expect_line "$TMP/err3" "component 'old' in framework p2p cannot be used: .*kumi_p2p_old\.so refused: p2p ops table \(contract v1\.1\) advertises KUMI_P2P_CAP_RMA but lacks mem_reg" "MPI_Init names the refused component and why"
grep -q '^ok' "$TMP/out3" && fail "a rank ran despite the refused selection" || ok "no rank ran"
finish
