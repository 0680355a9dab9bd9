#!/bin/bash
# launch_args: --param NAME=VALUE and --param NAME VALUE (two arguments, as
# Open MPI's --mca name value) both set KUMI_<NAME> for the ranks; an option
# is never taken as a value silently (--param foo -n 2 once set foo to "-n"
# and ran "2" as the program); negative numbers are values.
set -u
: "${MPIEXEC:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
envbin=$(command -v env)
# expect_env "args..." VAR=VALUE: every one of 2 ranks sees VAR=VALUE
expect_env() {
    local want=$1; shift
    "$MPIEXEC" "$@" > "$tmp/o" 2> "$tmp/e" < /dev/null || { cat "$tmp/e"; fail "mpiexec $* exited $?"; }
    [ "$(grep -cx -- "$want" "$tmp/o")" -eq 2 ] || { grep KUMI_ "$tmp/o"; fail "mpiexec $*: ranks do not see $want"; }
    echo "ok: mpiexec $* -> $want"
}
# expect_refused "message regex" args...
expect_refused() {
    local re=$1; shift
    "$MPIEXEC" "$@" > "$tmp/o" 2> "$tmp/e" < /dev/null
    local rc=$?
    [ $rc -eq 1 ] || { cat "$tmp/o" "$tmp/e"; fail "mpiexec $*: exit $rc, expected 1 (refused)"; }
    grep -Eq -- "$re" "$tmp/e" || { cat "$tmp/e"; fail "mpiexec $*: message does not match /$re/"; }
    [ -s "$tmp/o" ] && fail "mpiexec $*: started something: $(head -3 "$tmp/o")"
    echo "ok: mpiexec $* refused: $(head -1 "$tmp/e")"
}
expect_env KUMI_BASE_VERBOSE=0 --param base_verbose=0 -n 2 "$envbin"
expect_env KUMI_BASE_VERBOSE=0 --param base_verbose 0 -n 2 "$envbin"
expect_env KUMI_BASE_VERBOSE=0 --mca base_verbose 0 -n 2 "$envbin"
expect_env KUMI_BASE_VERBOSE=0 --param=base_verbose=0 -n 2 "$envbin"
# the full name kumi_info lists (framework "kumi"): the same variable, not KUMI_KUMI_BASE_VERBOSE
expect_env KUMI_BASE_VERBOSE=0 --param kumi_base_verbose=0 -n 2 "$envbin"
expect_env KUMI_BASE_EAGER_BUDGET=65536 --param kumi_base_eager_budget 65536 -n 2 "$envbin"
expect_env KUMI_BASE_VERBOSE=-1 --param base_verbose -1 -n 2 "$envbin"
expect_env KUMI_BASE_VERBOSE=--x --param base_verbose=--x -n 2 "$envbin"
expect_env KUMI_BASE_VERBOSE=a=b --param base_verbose a=b -n 2 "$envbin"
expect_refused "--param base_verbose needs a value, not the option '-n'" --param base_verbose -n 2 "$envbin"
expect_refused "--param base_verbose needs a value, not the option '--tag-output'" -n 2 --param base_verbose --tag-output "$envbin"
expect_refused "--param needs a parameter name, not the option '-n'" --param -n 2 "$envbin"
expect_refused "--param needs NAME=VALUE or NAME VALUE" -n 2 --param
expect_refused "--param base_verbose needs a value" -n 2 --param base_verbose
expect_refused "-x needs a value, not the option '-n'" -x -n 2 "$envbin"
expect_refused "--timeout needs a value, not the option '-n'" --timeout -n 2 "$envbin"
exit 0
