#!/bin/bash
# p2p/tcp batching (p2p_tcp_batch_limit, off by default): with it a burst
# of small messages to one peer (a window of
# MPI_Isend) leaves in few system calls, not one sendmsg per message, and
# arrives complete and in order (tcp_many checks contents and the
# non-overtaking order); by default (0) every message is written
# at once and the job still passes.  The system calls are counted with
# strace -c on the sending rank (skipped without strace or ptrace).
set -u
fail() { echo "FAIL: $*"; exit 1; }
export MPI_COMPONENTS="p2p=self,tcp"
command -v strace >/dev/null || { echo "SKIP: no strace"; exit 77; }
strace -f -c -o /dev/null true 2>/dev/null || { echo "SKIP: strace cannot trace here"; exit 77; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/tcp_batch.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cat > "$dir/wrap.sh" <<WRAP
#!/bin/bash
if [ "\$KUMI_RANK" = 1 ]; then exec strace -f -c -e trace=sendmsg,sendto,write,writev -o "$dir/rank1" "\$@"; fi
exec "\$@"
WRAP
chmod +x "$dir/wrap.sh"

n=2000      # messages of 0..300 bytes from rank 1 to rank 0, in each of two rounds
out=$(timeout 120 "$MPIEXEC" -n 2 --param p2p_tcp_batch_limit=65536 "$dir/wrap.sh" "$TESTBIN/tcp_many" $n 2>&1) ||
    fail "tcp_many: $out"
echo "$out" | grep -q "tcp_many: ok" || fail "no ok line: $out"
[ -s "$dir/rank1" ] || fail "no strace summary of rank 1"
calls=$(awk '$NF == "sendmsg" { print $4 }' "$dir/rank1")
calls=${calls:-0}
echo "rank 1 sent $((2 * n)) messages with $calls sendmsg calls"
[ "$calls" -gt 0 ] || fail "strace counted no sendmsg of rank 1: $(cat "$dir/rank1")"
[ "$calls" -le $((2 * n / 8)) ] || fail "$calls sendmsg calls for $((2 * n)) messages in two windows: not batched"

out=$(timeout 120 "$MPIEXEC" -n 2 "$dir/wrap.sh" "$TESTBIN/tcp_many" $n 2>&1) || fail "default (no batching): $out"
echo "$out" | grep -q "tcp_many: ok" || fail "default (no batching): no ok line: $out"
calls=$(awk '$NF == "sendmsg" { print $4 }' "$dir/rank1")
echo "default: rank 1 sent $((2 * n)) messages with ${calls:-0} sendmsg calls"
[ "${calls:-0}" -ge "$n" ] || fail "batched by default (${calls:-0} sendmsg calls): a second MPI_Isend must leave at once"
echo "ok"
exit 0
