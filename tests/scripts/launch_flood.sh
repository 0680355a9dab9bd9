#!/bin/bash
# launch_flood: another local user holds 300 idle connections open to
# mpiexec's control port (and opens a new one whenever mpiexec closes one)
# while a job of 8 ranks starts: every rank must still get in (MPI_Init) and
# the job must run correctly.  The stranger is the system user kumiprobe
# (created if missing) when we can switch users, else another process of ours.
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}"
[ -x "$TESTBIN/launch_orphan" ] || { echo "SKIP: launch_orphan not built"; exit 77; }
command -v python3 > /dev/null || { echo "SKIP: no python3 for the flooding client"; exit 77; }
tmp=$(mktemp -d) || exit 1
chmod 755 "$tmp"
prog=$tmp/launch_flood_u$$
cp "$TESTBIN/launch_orphan" "$prog" || exit 1
flooder=
cleanup() { [ -n "$flooder" ] && kill "$flooder" 2>/dev/null; pkill -KILL -f "$prog" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

as_other=()
if [ "$(id -u)" = 0 ]; then
    id kumiprobe > /dev/null 2>&1 || useradd -r -M -s /usr/sbin/nologin kumiprobe > /dev/null 2>&1
    if id kumiprobe > /dev/null 2>&1 && setpriv --reuid=kumiprobe --regid=kumiprobe --clear-groups true 2> /dev/null; then
        as_other=(setpriv --reuid=kumiprobe --regid=kumiprobe --clear-groups)
    fi
fi
# a python3 the stranger can run (root's may live in a private folder)
py=
if [ ${#as_other[@]} -gt 0 ]; then
    for c in /usr/bin/python3 /usr/local/bin/python3 "$(command -v python3)"; do
        [ -x "$c" ] && "${as_other[@]}" "$c" -c 'pass' 2> /dev/null && { py=$c; break; }
    done
    [ -n "$py" ] || as_other=()
fi
[ -n "$py" ] || py=python3
[ ${#as_other[@]} -gt 0 ] && who="user kumiprobe" || who="another process of this user"

cat > "$tmp/flood.py" <<'PY'
import socket, sys, time, select
port, n, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
conns, made, end = [], 0, time.time() + secs
while time.time() < end:
    while len(conns) < n:
        s = socket.socket()
        try:
            s.connect(("127.0.0.1", port))
        except OSError:
            s.close()
            time.sleep(0.01)
            break
        conns.append(s)
        made += 1
    r, _, _ = select.select(conns, [], [], 0.02)
    for s in r:                      # closed by mpiexec (or answered): open another
        try:
            d = s.recv(4096)
        except OSError:
            d = b""
        if not d:
            conns.remove(s)
            s.close()
print("flood: %d connections opened, %d held at the end" % (made, len(conns)))
PY

# ranks sleep 3 s before MPI_Init, so that the flood is in place first
"$MPIEXEC" -n 8 "$prog" late 3 > "$tmp/out" 2> "$tmp/err" < /dev/null &
mp=$!
port=
for _ in $(seq 200); do
    for p in $(pgrep -f "$prog"); do
        port=$(tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | sed -n 's/^KUMI_CONTROL=127.0.0.1://p')
        [ -n "$port" ] && break 2
    done
    sleep 0.02
done
[ -n "$port" ] || { kill $mp; fail "could not find the control port"; }
"${as_other[@]}" "$py" "$tmp/flood.py" "$port" 300 8 > "$tmp/flood" 2>&1 &
flooder=$!
timeout 60 tail --pid=$mp -f /dev/null
wait $mp
rc=$?
wait "$flooder" 2>/dev/null
flooder=
cat "$tmp/flood"
[ $rc -eq 0 ] || { cat "$tmp/err"; fail "job of 8 ranks under a flood of 300 connections from $who exited $rc"; }
grep -q 'late ok' "$tmp/out" || { cat "$tmp/out" "$tmp/err"; fail "the job did not finish its work"; }
grep -q 'connections opened' "$tmp/flood" || fail "the flooding client did not run"
echo "launch_flood: 8 ranks started and ran under a flood of 300 connections from $who"
exit 0
