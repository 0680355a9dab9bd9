#!/bin/bash
# p2p/tcp parameters: listed by kumi_info with their defaults, set from the
# environment, and effective (interface selection decides what works).
set -u
fail() { echo "FAIL: $*"; exit 1; }
export MPI_COMPONENTS="p2p=self,tcp"

info=$("$KUMI_INFO" --param p2p tcp --parsable 2>&1) || fail "kumi_info --param p2p tcp failed: $info"
for p in eager_limit batch_limit sndbuf rcvbuf if_include if_exclude family; do
    echo "$info" | grep -q "^param:p2p_tcp_$p:value:" || fail "parameter p2p_tcp_$p not listed"
done
echo "$info" | grep -qx "param:p2p_tcp_eager_limit:value:524288" || fail "default eager limit is not 512 KiB: $(echo "$info" | grep eager_limit:value)"
echo "$info" | grep -qx "param:p2p_tcp_loopback_cc:value:reno" || fail "default p2p_tcp_loopback_cc is not reno: $(echo "$info" | grep loopback_cc:value)"
echo "$info" | grep -qx "param:p2p_tcp_batch_limit:value:0" || fail "default batch limit is not 0 (off): $(echo "$info" | grep batch_limit:value)"
info=$(KUMI_P2P_TCP_EAGER_LIMIT=1k "$KUMI_INFO" --param p2p tcp --parsable 2>&1)
echo "$info" | grep -qx "param:p2p_tcp_eager_limit:value:1024" || fail "KUMI_P2P_TCP_EAGER_LIMIT=1k not taken: $(echo "$info" | grep eager_limit)"
echo "$info" | grep -qx "param:p2p_tcp_eager_limit:source:env" || fail "source of p2p_tcp_eager_limit should be env"
echo "$("$KUMI_INFO" --param p2p self --parsable 2>&1)" | grep -q "^param:p2p_self_eager_limit:value:" || fail "p2p_self_eager_limit not listed"

# loopback only
out=$(timeout 60 "$MPIEXEC" -n 3 --param p2p_tcp_if_include=lo "$TESTBIN/tcp_many" 200 2>&1) || fail "if_include=lo: $out"
echo "$out" | grep -q "tcp_many: ok" || fail "if_include=lo: no ok line: $out"

# everything but loopback, when this host has another IPv4 interface
if [ -r /proc/net/route ] && awk 'NR>1 && $1!="lo"{f=1} END{exit !f}' /proc/net/route; then
    out=$(timeout 60 "$MPIEXEC" -n 2 --param p2p_tcp_if_exclude=lo "$TESTBIN/tcp_sizes" 1048576 2>&1) || fail "if_exclude=lo: $out"
    echo "$out" | grep -q "tcp_sizes: ok" || fail "if_exclude=lo: no ok line: $out"
else
    echo "no IPv4 interface besides lo: if_exclude=lo not tried"
fi

# no interface left: tcp cannot start, so rank 1 is unreachable -> MPI_Init fails, quickly
out=$(timeout 60 "$MPIEXEC" -n 2 --param p2p_tcp_if_include=nosuchif0 "$TESTBIN/tcp_many" 10 2>&1)
rc=$?
[ $rc -ne 0 ] || fail "if_include=nosuchif0 should make the job fail: $out"
[ $rc -ne 124 ] || fail "if_include=nosuchif0: the job hung"
echo "$out" | grep -Eq "no transport reaches rank [01]" || fail "if_include=nosuchif0: unexpected message: $out"

# rendezvous for everything, tiny socket buffers
out=$(timeout 90 "$MPIEXEC" -n 3 --param p2p_tcp_eager_limit=0 --param p2p_tcp_sndbuf=8k --param p2p_tcp_rcvbuf=8k \
      "$TESTBIN/tcp_sizes" 2>&1) || fail "eager_limit=0 + small buffers: $out"
echo "$out" | grep -q "tcp_sizes: ok" || fail "eager_limit=0: no ok line: $out"
# congestion control of connections to loopback: reno by default (the sending
# side's socket; ss shows it), the system's with p2p_tcp_loopback_cc empty,
# and a name the kernel does not know is said at KUMI_VERBOSE=2, not fatal
if command -v ss > /dev/null 2>&1; then
    cc_of_job() {   # PARAMS...: the congestion controls of tcp_many's sockets while it runs
        timeout 60 "$MPIEXEC" -n 2 "$@" "$TESTBIN/tcp_many" 20000 > /dev/null 2>&1 &
        local job=$! seen="" i
        for ((i = 0; i < 50; i++)); do
            sleep 0.2
            seen=$(ss -tinp state established 2> /dev/null | grep -A1 '"tcp_many"' |
                   awk '!/users:/ && $1 ~ /^[a-z0-9_]+$/ {print $1}' | sort -u | tr '\n' ' ')
            case " $seen " in *" reno "*|*" cubic "*|*" bbr "*) [ -n "${seen// /}" ] && break ;; esac
        done
        wait $job || echo -n "job failed "
        echo "$seen"
    }
    cc=$(cc_of_job)
    case " $cc " in
    *"job failed"*) fail "tcp_many failed while its sockets were watched" ;;
    *" reno "*) ;;
    "  ") echo "no socket of tcp_many seen by ss (a loaded host?): not checked" ;;
    *) fail "no tcp_many socket uses reno by default (seen: $cc)" ;;
    esac
    sys=$(cat /proc/sys/net/ipv4/tcp_congestion_control 2> /dev/null)
    if [ -n "$sys" ] && [ "$sys" != reno ]; then
        cc=$(cc_of_job --param p2p_tcp_loopback_cc=)
        case " $cc " in *" reno "*) fail "p2p_tcp_loopback_cc= still sets reno (seen: $cc)" ;; esac
    fi
else
    echo "no ss: the congestion control of the sockets not checked"
fi
out=$(timeout 60 "$MPIEXEC" -n 2 -x KUMI_VERBOSE=2 --param p2p_tcp_loopback_cc=nosuchcc "$TESTBIN/tcp_many" 50 2>&1) ||
    fail "p2p_tcp_loopback_cc=nosuchcc: $out"
echo "$out" | grep -q 'p2p_tcp_loopback_cc "nosuchcc"' || fail "p2p_tcp_loopback_cc=nosuchcc not reported: $out"
echo "ok"
exit 0
