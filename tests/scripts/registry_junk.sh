#!/bin/bash
# registry_junk: a component file that is not a valid shared object is refused
# with the dynamic loader's real reason (libltdl alone said "file not found"
# for a file that exists): kumi_info lists it as refused with that reason, and
# MPI_Init under KUMI_VERBOSE says the same.
. "$(dirname "$0")/registry_common.inc"
if "$KUMI_INFO" --parsable 2>/dev/null | grep -q '^component:.*:path:(linked in)$'; then
    echo "SKIP: components are linked into libmpi (--disable-dlopen): no third-party loading"
    exit 77
fi
JUNK=$TMP/junk
mkdir -p "$JUNK"
head -c 4096 /dev/urandom | tr -d "\177" > "$JUNK/kumi_p2p_junk.so"   # long enough for an ELF header: not one
head -c 64 /dev/zero > "$JUNK/kumi_coll_zero.so"
base=${KUMI_COMPONENT_PATH:-}
export KUMI_COMPONENT_PATH="${base:+$base:}$JUNK"
"$KUMI_INFO" --parsable > "$TMP/a" 2> "$TMP/a.err"
expect_line "$TMP/a" '^component:p2p:junk:reason:cannot load: .*(invalid ELF header|file too short|not a .*shared object)' \
    "junk file (random bytes) refused with the loader's reason"
expect_no_line "$TMP/a" '^component:p2p:junk:.*file not found' "junk file not called 'file not found'"
expect_line "$TMP/a" '^component:coll:zero:reason:cannot load: .*(invalid ELF header|file too short|not a .*shared object)' \
    "file of zeros refused with the loader's reason"
"$KUMI_INFO" > "$TMP/h" 2>&1
expect_line "$TMP/h" 'junk.*(invalid ELF header|file too short|not a .*shared object)' "kumi_info (human form) gives the reason"
# MPI_Init of a singleton: the refusal is reported under KUMI_VERBOSE
if [ -x "${TESTBIN:-}/launch_singleton" ]; then
    KUMI_VERBOSE=1 "$TESTBIN/launch_singleton" > "$TMP/s" 2>&1
    expect_line "$TMP/s" 'kumi_p2p_junk.so.*(invalid ELF header|file too short|not a .*shared object)' \
        "MPI_Init under KUMI_VERBOSE gives the reason"
    expect_no_line "$TMP/s" 'kumi_p2p_junk.so.*file not found' "MPI_Init does not say 'file not found'"
fi
finish
