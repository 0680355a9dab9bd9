#!/bin/bash
# launch_ssh_agent_param: the parameter rpim_ssh_agent (mpiexec's launch
# agent for the proxies of other hosts) is a registered parameter: kumi_info
# lists it (name, environment variable, help), and each way of setting it
# (--param rpim_ssh_agent=CMD, KUMI_RPIM_SSH_AGENT, a params.conf file)
# changes the command that starts the proxies.  The agent here is a script
# that notes the host it was asked for and runs the proxy on this machine.
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}" "${KUMI_INFO:?}"
[ -x "$TESTBIN/core_init" ] || { echo "SKIP: core_init not built"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$TESTBIN" || exit 1
export MPIEXEC_TIMEOUT=60

# kumi_info lists it
"$KUMI_INFO" --param rpim all > "$tmp/info" 2>&1 || { cat "$tmp/info"; fail "kumi_info --param rpim all"; }
grep -q 'parameter "rpim_ssh_agent"' "$tmp/info" || { cat "$tmp/info"; fail "kumi_info does not list rpim_ssh_agent"; }
grep -q 'environment KUMI_RPIM_SSH_AGENT' "$tmp/info" || fail "kumi_info: no environment variable for rpim_ssh_agent"
"$KUMI_INFO" -p > "$tmp/p" 2>&1
grep -q '^param:rpim_ssh_agent:help:.*proxy' "$tmp/p" || fail "kumi_info -p: no help for rpim_ssh_agent"
KUMI_RPIM_SSH_AGENT="myagent -x" "$KUMI_INFO" -p 2>&1 | grep -q '^param:rpim_ssh_agent:value:myagent -x$' ||
    fail "kumi_info -p: KUMI_RPIM_SSH_AGENT not shown as the value"
echo "ok: kumi_info lists rpim_ssh_agent"

# an agent that runs the proxy here
for a in A B C; do
    printf '#!/bin/sh\necho "$1" >> %s/seen%s\nshift\nexec "$@"\n' "$tmp" "$a" > "$tmp/agent$a"
    chmod +x "$tmp/agent$a"
done
run_ring() { # what, mpiexec options...
    local what=$1
    shift
    "$MPIEXEC" "$@" -host kx1:2,kx2:2 ./core_init > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/err"; fail "$what: exit $?"; }
}
run_ring "--param rpim_ssh_agent=" --param rpim_ssh_agent="$tmp/agentA"
[ "$(sort "$tmp/seenA" 2> /dev/null | tr '\n' ' ')" = "kx1 kx2 " ] || fail "--param rpim_ssh_agent: agent not used ($(cat "$tmp/seenA" 2>&1))"
echo "ok: --param rpim_ssh_agent"
KUMI_RPIM_SSH_AGENT="$tmp/agentB" run_ring "KUMI_RPIM_SSH_AGENT"
[ "$(sort "$tmp/seenB" 2> /dev/null | tr '\n' ' ')" = "kx1 kx2 " ] || fail "KUMI_RPIM_SSH_AGENT: agent not used"
echo "ok: KUMI_RPIM_SSH_AGENT"
# a params.conf file (~/.kumi/params.conf), as for every parameter
mkdir -p "$tmp/home/.kumi"
echo "rpim_ssh_agent = $tmp/agentC" > "$tmp/home/.kumi/params.conf"
HOME=$tmp/home run_ring "params.conf"
[ "$(sort "$tmp/seenC" 2> /dev/null | tr '\n' ' ')" = "kx1 kx2 " ] || fail "rpim_ssh_agent in ~/.kumi/params.conf: agent not used"
echo "ok: rpim_ssh_agent in params.conf"
# --launch-agent wins over the parameter
rm -f "$tmp/seenA" "$tmp/seenB"
KUMI_RPIM_SSH_AGENT="$tmp/agentB" run_ring "--launch-agent" --launch-agent "$tmp/agentA"
[ -s "$tmp/seenA" ] && [ ! -e "$tmp/seenB" ] || fail "--launch-agent should win over KUMI_RPIM_SSH_AGENT"
echo "ok: --launch-agent first"
