#!/bin/bash
# p2p/tcp shared connections (p2p_tcp_share_connections, on by default): a rank that
# has not opened a connection to a peer answers it over the connection the
# peer opened, so a 2-rank exchange that rank 0 starts uses one connection
# (rank 0 connects, rank 1 adopts it), and everything arrives whole and in
# order over it (tcp_share: ping-pongs, sizes around the staging buffer,
# eager and rendezvous, windows both ways at once); with the parameter off
# each rank opens its own, as before.  The log (KUMI_VERBOSE=3) says which.
set -u
fail() { echo "FAIL: $*"; exit 1; }
export MPI_COMPONENTS="p2p=self,tcp"

info=$("$KUMI_INFO" --param p2p tcp --parsable 2>&1) || fail "kumi_info --param p2p tcp failed: $info"
echo "$info" | grep -qx "param:p2p_tcp_share_connections:value:true" ||
    fail "p2p_tcp_share_connections is not listed as on by default: $(echo "$info" | grep share_connections)"

count() { # pattern, text
    printf '%s\n' "$2" | grep -c -- "$1"
}

out=$(KUMI_VERBOSE=3 timeout 120 "$MPIEXEC" -n 2 "$TESTBIN/tcp_share" 500 2>&1) || fail "shared: $out"
echo "$out" | grep -q "tcp_share: ok" || fail "shared: no ok line: $out"
c0=$(count "kumi\[0\]: p2p/tcp: connected to rank 1" "$out")
c1=$(count "kumi\[1\]: p2p/tcp: connected to rank 0" "$out")
a1=$(count "kumi\[1\]: p2p/tcp: sending to rank 0 over the connection it opened" "$out")
echo "shared: rank 0 opened $c0, rank 1 opened $c1 and adopted $a1"
[ "$c0" = 1 ] && [ "$c1" = 0 ] && [ "$a1" = 1 ] ||
    fail "expected one connection, opened by rank 0 and adopted by rank 1: $(echo "$out" | grep 'p2p/tcp: \(conn\|acc\|send\)')"

out=$(KUMI_VERBOSE=3 timeout 120 "$MPIEXEC" -n 2 --param p2p_tcp_share_connections=0 "$TESTBIN/tcp_share" 500 2>&1) ||
    fail "not shared: $out"
echo "$out" | grep -q "tcp_share: ok" || fail "not shared: no ok line: $out"
c1=$(count "kumi\[1\]: p2p/tcp: connected to rank 0" "$out")
a1=$(count "over the connection it opened" "$out")
echo "not shared: rank 1 opened $c1 and adopted $a1"
[ "$c1" = 1 ] && [ "$a1" = 0 ] || fail "p2p_tcp_share_connections=0: rank 1 should open its own connection"

# a connecting rank that does not share and an accepting one that does (the
# connecting side always reads what it opened); then more ranks (some open
# their own connection first, e.g. in the barrier) with tiny socket
# buffers, and everything rendezvous
dir=$(mktemp -d "${TMPDIR:-/tmp}/tcp_share.XXXXXX")
trap 'rm -rf "$dir"' EXIT
printf '#!/bin/sh\n[ "$KUMI_RANK" = 0 ] && export KUMI_P2P_TCP_SHARE_CONNECTIONS=0\nexec "$@"\n' > "$dir/mixed.sh"
chmod +x "$dir/mixed.sh"
out=$(KUMI_VERBOSE=3 timeout 120 "$MPIEXEC" -n 2 "$dir/mixed.sh" "$TESTBIN/tcp_share" 200 2>&1) ||
    fail "rank 0 not sharing, rank 1 sharing: $out"
echo "$out" | grep -q "tcp_share: ok" || fail "mixed: no ok line: $out"
[ "$(count "kumi\[1\]: p2p/tcp: sending to rank 0 over" "$out")" = 1 ] || fail "mixed: rank 1 did not adopt rank 0's connection"
out=$(timeout 120 "$MPIEXEC" -n 4 --param p2p_tcp_sndbuf=4k --param p2p_tcp_rcvbuf=4k "$TESTBIN/tcp_share" 200 2>&1) ||
    fail "4 ranks, 4 KiB socket buffers: $out"
echo "$out" | grep -q "tcp_share: ok" || fail "4 ranks, small buffers: no ok line: $out"
out=$(timeout 120 "$MPIEXEC" -n 3 --param p2p_tcp_eager_limit=0 "$TESTBIN/tcp_share" 200 2>&1) ||
    fail "3 ranks, eager limit 0: $out"
echo "$out" | grep -q "tcp_share: ok" || fail "3 ranks, eager limit 0: no ok line: $out"

# one connection alone brings rank 1 its messages: progress reads it
# directly and asks epoll every 16th round only (counted with strace -c on
# rank 1; skipped without strace or ptrace)
if command -v strace >/dev/null && strace -f -c -o /dev/null true 2>/dev/null; then
    printf '#!/bin/sh\n[ "$KUMI_RANK" = 1 ] && exec strace -f -c -e trace=readv,epoll_wait -o "%s/rank1" "$@"\nexec "$@"\n' "$dir" > "$dir/st.sh"
    chmod +x "$dir/st.sh"
    out=$(timeout 120 "$MPIEXEC" -n 2 "$dir/st.sh" "$TESTBIN/tcp_share" 300 2>&1) || fail "under strace: $out"
    echo "$out" | grep -q "tcp_share: ok" || fail "under strace: no ok line: $out"
    rv=$(awk '$NF == "readv" { print $4 }' "$dir/rank1"); ew=$(awk '$NF == "epoll_wait" { print $4 }' "$dir/rank1")
    echo "rank 1: ${rv:-0} readv, ${ew:-0} epoll_wait"
    [ "${rv:-0}" -gt $((4 * ${ew:-0})) ] || fail "rank 1 asked epoll before reading (${rv:-0} readv, ${ew:-0} epoll_wait)"
else
    echo "no strace: the direct read of a lone connection not counted"
fi
echo "ok"
exit 0
