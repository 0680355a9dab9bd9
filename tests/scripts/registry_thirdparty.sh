#!/bin/bash
# A third-party component (tests/thirdparty/coll_demo.c) built outside the tree
# with MPICC-like flags into a temporary folder: KUMI_COMPONENT_PATH finds it,
# MPI_COMPONENTS selects it, broken files are refused with a reason.
. "$(dirname "$0")/registry_common.inc"
# A --disable-dlopen build links its components in and loads no others.
if "$KUMI_INFO" --parsable 2>/dev/null | grep -q '^component:.*:path:(linked in)$'; then
    echo "SKIP: components are linked into libmpi (--disable-dlopen): no third-party loading"
    exit 77
fi
: "${MPICC:=cc -I$top_builddir/framework/include -I$top_srcdir/framework/include}"
SRC=$top_srcdir/tests/thirdparty/coll_demo.c
PLUG=$TMP/plugins
BROKEN=$TMP/broken
mkdir -p "$PLUG" "$BROKEN/abi" "$BROKEN/sym" "$BROKEN/name" "$BROKEN/fw" "$BROKEN/junk"
build() { # out flags...
    local out=$1; shift
    # shellcheck disable=SC2086
    if ! $MPICC -std=gnu11 -Wall -Wextra -Werror -shared -fPIC "$@" -o "$out" "$SRC" > "$TMP/cc.log" 2>&1; then
        fail "cannot build $out:"; sed 's/^/    /' "$TMP/cc.log"; finish
    fi
}
build "$PLUG/kumi_coll_demo.so"
build "$BROKEN/abi/kumi_coll_demo.so" -DDEMO_ABI=99
build "$BROKEN/sym/kumi_coll_demo.so" -DDEMO_SYMBOL=kumi_coll_other_component
build "$BROKEN/name/kumi_coll_demo.so" -DDEMO_NAME='"other"'
build "$BROKEN/fw/kumi_gpu_demo.so" -DDEMO_SYMBOL=kumi_gpu_demo_component
echo "not an ELF file" > "$BROKEN/junk/kumi_coll_demo.so"
ok "built the demo component and broken variants outside the tree"
base=${KUMI_COMPONENT_PATH:-}
cpath() { echo "${base:+$base:}$1"; }

# found, available, with version, path, description and parameters
KUMI_COMPONENT_PATH=$(cpath "$PLUG") "$KUMI_INFO" --parsable > "$TMP/a" 2> "$TMP/a.err"; rc=$?
[ $rc -eq 0 ] && ok "kumi_info exits 0" || fail "kumi_info exited $rc"
[ -s "$TMP/a.err" ] && fail "stderr: $(cat "$TMP/a.err")"
expect_line "$TMP/a" '^component:coll:demo:version:1\.2\.3$' "demo listed with its version"
expect_line "$TMP/a" '^component:coll:demo:status:available$' "demo available"
expect_line "$TMP/a" "^component:coll:demo:path:$PLUG/kumi_coll_demo.so\$" "demo path"
expect_line "$TMP/a" '^component:coll:demo:description:Third-party example' "demo description"
expect_line "$TMP/a" '^component:coll:demo:priority:1$' "demo priority"
expect_line "$TMP/a" '^param:coll_demo_greeting:value:hello$' "demo's own parameter registered"
KUMI_COMPONENT_PATH=$(cpath "$PLUG") "$KUMI_INFO" > "$TMP/ah" 2>&1
expect_line "$TMP/ah" '^ *Kumi coll: demo \(v1\.2\.3, contract v[0-9]+\.[0-9]+, priority 1\)$' "human listing shows demo"
KUMI_COMPONENT_PATH=$(cpath "$PLUG") KUMI_COLL_DEMO_GREETING=bonjour "$KUMI_INFO" --parsable --param coll demo > "$TMP/g" 2>&1
expect_line "$TMP/g" '^param:coll_demo_greeting:value:bonjour$' "demo parameter set from the environment"
expect_no_line "$TMP/g" '^param:p2p_' "--param coll demo shows only coll/demo"

# open() may decline with a reason
KUMI_COMPONENT_PATH=$(cpath "$PLUG") KUMI_COLL_DEMO_UNAVAILABLE=yes "$KUMI_INFO" --parsable > "$TMP/u" 2>&1
expect_line "$TMP/u" '^component:coll:demo:status:unavailable$' "demo unavailable when it says so"
expect_line "$TMP/u" '^component:coll:demo:reason:switched off by parameter coll_demo_unavailable$' "unavailable reason"

# MPI_COMPONENTS keeps it (and basic), excludes the rest; ^demo excludes it
KUMI_COMPONENT_PATH=$(cpath "$PLUG") MPI_COMPONENTS="coll=demo,basic" "$KUMI_INFO" --parsable > "$TMP/s" 2>&1; rc=$?
[ $rc -eq 0 ] && ok "MPI_COMPONENTS=coll=demo,basic accepted" || fail "MPI_COMPONENTS=coll=demo,basic: exit $rc"
expect_line "$TMP/s" '^component:coll:demo:status:available$' "demo kept"
KUMI_COMPONENT_PATH=$(cpath "$PLUG") MPI_COMPONENTS="coll=demo" "$KUMI_INFO" --parsable > "$TMP/s2" 2>&1
expect_line "$TMP/s2" '^component:coll:basic:status:excluded$' "coll=demo excludes basic"
KUMI_COMPONENT_PATH=$(cpath "$PLUG") MPI_COMPONENTS="coll=^demo" "$KUMI_INFO" --parsable > "$TMP/s3" 2>&1
expect_line "$TMP/s3" '^component:coll:demo:status:excluded$' "coll=^demo excludes demo"
expect_line "$TMP/s3" '^component:coll:demo:reason:excluded by MPI_COMPONENTS$' "exclusion reason"
# without the folder, demo is an unknown name and the error lists what exists
MPI_COMPONENTS="coll=demo,basic" "$KUMI_INFO" > "$TMP/s4" 2>&1; rc=$?
[ $rc -eq 1 ] && ok "coll=demo without the plugin folder: exit 1" || fail "exit $rc"
expect_line "$TMP/s4" "unknown component 'demo' in framework coll \(available: [a-z, ]*\)" "error lists available coll components"

# broken files: refused with a one-line reason, never used
chk_refused() { # dir fw name reason-regex what
    KUMI_COMPONENT_PATH=$(cpath "$1") "$KUMI_INFO" --parsable > "$TMP/r" 2> "$TMP/r.err"; local rc=$?
    [ $rc -eq 0 ] && ok "$5: kumi_info exits 0" || fail "$5: kumi_info exited $rc"
    expect_line "$TMP/r" "^component:$2:$3:status:refused\$" "$5: refused"
    expect_line "$TMP/r" "^component:$2:$3:reason:$4" "$5: reason"
    expect_line "$TMP/r" "^component:$2:$3:path:$1/kumi_$2_$3.so\$" "$5: path"
}
chk_refused "$BROKEN/abi" coll demo "component ABI version 99, this library needs [0-9]+" "wrong ABI version"
chk_refused "$BROKEN/sym" coll demo "symbol kumi_coll_demo_component not found" "mismatched symbol"
chk_refused "$BROKEN/name" coll demo "names itself coll/other but the file name says coll/demo" "mismatched name inside"
KUMI_COMPONENT_PATH=$(cpath "$BROKEN/fw") "$KUMI_INFO" --parsable > "$TMP/fw" 2>&1
expect_line "$TMP/fw" "^component:gpu:demo:reason:unknown framework 'gpu' \(known: rpim, p2p, coll, pacing, ckpt, accel\)" "unknown framework refused"
chk_refused "$BROKEN/junk" coll demo "cannot load" "not a shared object"
# a refused file cannot be selected
KUMI_COMPONENT_PATH=$(cpath "$BROKEN/abi") MPI_COMPONENTS="coll=demo" "$KUMI_INFO" > "$TMP/rs" 2>&1; rc=$?
[ $rc -eq 1 ] && ok "selecting a refused component: exit 1" || fail "selecting a refused component: exit $rc"
expect_line "$TMP/rs" "component 'demo' in framework coll cannot be used: .*refused: component ABI version 99" "... with the refusal reason"

# duplicates: the first folder wins, the later file is refused as a duplicate
mkdir -p "$TMP/dup"; cp "$PLUG/kumi_coll_demo.so" "$TMP/dup/"
KUMI_COMPONENT_PATH=$(cpath "$PLUG:$TMP/dup") "$KUMI_INFO" --parsable > "$TMP/d" 2>&1
expect_line "$TMP/d" "^component:coll:demo:path:$PLUG/kumi_coll_demo.so\$" "first copy used"
expect_line "$TMP/d" "^component:coll:demo:reason:duplicate of $PLUG/kumi_coll_demo.so\$" "second copy refused as a duplicate"
n=$(grep -c '^component:coll:demo:status:available$' "$TMP/d")
[ "$n" = 1 ] && ok "only one demo available" || fail "$n demo entries available"
# the same folder twice is not a duplicate
KUMI_COMPONENT_PATH=$(cpath "$PLUG:$PLUG") "$KUMI_INFO" --parsable > "$TMP/d2" 2>&1
expect_no_line "$TMP/d2" "duplicate of $PLUG" "same folder listed twice: no duplicate"
finish
