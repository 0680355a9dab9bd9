#!/bin/bash
# Parameters: --param listing, environment and ~/.kumi/params.conf as sources
# (env wins), typed parsing (size suffixes), bad values keep the default with
# one warning, unknown KUMI_* variables are reported with a suggestion.
. "$(dirname "$0")/registry_common.inc"
P=p2p_tcp_eager_limit
get() { sed -n "s/^param:$P:$1://p" "$2"; }

"$KUMI_INFO" --param p2p tcp > "$TMP/h" 2>&1; rc=$?
[ $rc -eq 0 ] && ok "--param p2p tcp exits 0" || fail "--param p2p tcp exited $rc"
expect_line "$TMP/h" "parameter \"$P\" \(current value: \"[0-9]+\", source: default, level: [0-9] [a-z]+, type: size\)" "human: $P with value, source, level, type"
expect_line "$TMP/h" 'parameter "p2p_tcp_priority"' "human: priority parameter registered automatically"
expect_no_line "$TMP/h" 'parameter "p2p_self_' "--param p2p tcp shows only p2p/tcp"

"$KUMI_INFO" --parsable --param p2p tcp > "$TMP/d" 2>&1
def=$(get value "$TMP/d")
[ -n "$def" ] && [ "$(get source "$TMP/d")" = default ] && ok "default value $def, source default" || fail "default: value '$def' source '$(get source "$TMP/d")'"
[ "$(get type "$TMP/d")" = size ] && ok "type size" || fail "type '$(get type "$TMP/d")'"
[ "$(get default "$TMP/d")" = "$def" ] && ok "default field" || fail "default field '$(get default "$TMP/d")'"
[ "$(get envvar "$TMP/d")" = KUMI_P2P_TCP_EAGER_LIMIT ] && ok "envvar field" || fail "envvar field"
[ -n "$(get help "$TMP/d")" ] && ok "help text" || fail "no help text"

# environment, with a size suffix
KUMI_P2P_TCP_EAGER_LIMIT=3k "$KUMI_INFO" --parsable --param p2p tcp > "$TMP/e" 2>&1
[ "$(get value "$TMP/e")" = 3072 ] && ok "env 3k -> 3072" || fail "env 3k gave '$(get value "$TMP/e")'"
[ "$(get source "$TMP/e")" = env ] && ok "source env" || fail "source '$(get source "$TMP/e")'"
[ "$(get source_detail "$TMP/e")" = KUMI_P2P_TCP_EAGER_LIMIT ] && ok "source detail names the variable" || fail "source detail '$(get source_detail "$TMP/e")'"

# user file
mkdir -p "$HOME/.kumi"
cat > "$HOME/.kumi/params.conf" <<'CONF'
# a comment
p2p_tcp_eager_limit = 2m    # two MiB
p2p_tcp_if_include = "eth*"
kumi_base_verbose = 0
CONF
"$KUMI_INFO" --parsable --param all all > "$TMP/f" 2>&1
[ "$(get value "$TMP/f")" = 2097152 ] && ok "file 2m -> 2097152" || fail "file gave '$(get value "$TMP/f")'"
[ "$(get source "$TMP/f")" = file ] && ok "source file" || fail "source '$(get source "$TMP/f")'"
[ "$(get source_detail "$TMP/f")" = "$HOME/.kumi/params.conf" ] && ok "source detail is the file" || fail "file detail '$(get source_detail "$TMP/f")'"
expect_line "$TMP/f" '^param:p2p_tcp_if_include:value:eth\*$' "quoted string value from the file"
expect_line "$TMP/f" '^param:kumi_base_verbose:source:file$' "global parameter from the file"
# env wins over the file
KUMI_P2P_TCP_EAGER_LIMIT=4096 "$KUMI_INFO" --parsable --param p2p tcp > "$TMP/fe" 2>&1
[ "$(get value "$TMP/fe"):$(get source "$TMP/fe")" = 4096:env ] && ok "env wins over file" || fail "env+file gave '$(get value "$TMP/fe"):$(get source "$TMP/fe")'"
rm -f "$HOME/.kumi/params.conf"

# bad values: default kept, one warning naming the variable, exit still 0
KUMI_P2P_TCP_EAGER_LIMIT=abc "$KUMI_INFO" --parsable --param p2p tcp > "$TMP/b" 2> "$TMP/b.err"; rc=$?
[ $rc -eq 0 ] && ok "bad value: exit 0" || fail "bad value: exit $rc"
[ "$(get value "$TMP/b"):$(get source "$TMP/b")" = "$def:default" ] && ok "bad value keeps the default" || fail "bad value gave '$(get value "$TMP/b"):$(get source "$TMP/b")'"
n=$(grep -c 'KUMI_P2P_TCP_EAGER_LIMIT' "$TMP/b.err")
[ "$n" = 1 ] && ok "one warning naming the variable" || { fail "$n warnings naming KUMI_P2P_TCP_EAGER_LIMIT"; cat "$TMP/b.err"; }
KUMI_P2P_TCP_PRIORITY=12x "$KUMI_INFO" --parsable --param p2p tcp > "$TMP/b2" 2> "$TMP/b2.err"
expect_line "$TMP/b2.err" "KUMI_P2P_TCP_PRIORITY" "bad int warned about"
KUMI_P2P_TCP_PRIORITY=-7 "$KUMI_INFO" --parsable > "$TMP/b3" 2>&1
expect_line "$TMP/b3" '^component:p2p:tcp:priority:-7$' "priority parameter changes the component's priority"
KUMI_VERBOSE=abc "$KUMI_INFO" > /dev/null 2> "$TMP/b4.err"
expect_line "$TMP/b4.err" "KUMI_VERBOSE" "bad KUMI_VERBOSE warned about"
KUMI_BASE_VERBOSE=0 "$KUMI_INFO" --parsable --param kumi base > "$TMP/alias" 2>&1
expect_line "$TMP/alias" '^param:kumi_base_verbose:source_detail:KUMI_BASE_VERBOSE$' "KUMI_BASE_<NAME> accepted for framework kumi"

# unknown variables: a suggestion for a near miss; runtime variables are not reported
KUMI_P2P_TCP_EAGR_LIMIT=1 KUMI_NO_SUCH_THING=1 KUMI_TEST_WHATEVER=1 KUMI_INTERNAL_X=1 \
    "$KUMI_INFO" > /dev/null 2> "$TMP/u.err"
expect_line "$TMP/u.err" 'KUMI_P2P_TCP_EAGR_LIMIT is set but names no parameter \(did you mean KUMI_P2P_TCP_EAGER_LIMIT\?\)' "typo gets a suggestion"
expect_line "$TMP/u.err" 'KUMI_NO_SUCH_THING is set but names no parameter' "unknown variable reported"
expect_no_line "$TMP/u.err" 'KUMI_TEST_WHATEVER|KUMI_INTERNAL_X|KUMI_COMPONENT_PATH' "runtime variables not reported"
# a clean environment gives no warnings at all
"$KUMI_INFO" > /dev/null 2> "$TMP/clean.err"
[ -s "$TMP/clean.err" ] && fail "warnings in a clean environment: $(cat "$TMP/clean.err")" || ok "clean environment: silent"

# --param for something that does not exist: exit 1 with what exists
"$KUMI_INFO" --param p2p tpc > "$TMP/np" 2>&1; rc=$?
[ $rc -eq 1 ] && ok "--param p2p tpc: exit 1" || fail "--param p2p tpc: exit $rc"
expect_line "$TMP/np" "no component 'tpc' in framework p2p \(found: .*tcp" "--param of an unknown component lists the real ones"
finish
