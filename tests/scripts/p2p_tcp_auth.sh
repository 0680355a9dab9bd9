#!/bin/bash
# p2p/tcp and strangers on its port (issue 15, 9b).
# A 2-rank job over TCP (MPI_COMPONENTS=p2p=self,tcp, p2p_tcp_auth_timeout=2)
# keeps exchanging checked messages while a prober opens 500 connections to
# rank 0's listener over loopback: a third send nothing, a third send the
# first bytes of a hello and stop, a third send garbage; one more sends a
# well-formed hello and a wrong proof.  Then:
#  - rank 0's descriptors never grow by more than p2p_tcp_auth_max (64) + 2 + slack;
#  - every prober connection is closed by rank 0 within the timeout + 3 s,
#    and rank 0 sent nothing to any of them except the challenge that
#    answers the well-formed hello (then closed it at the wrong proof);
#  - rank 0's descriptors are back to where they were;
#  - the job ends with its checks passed and nothing on stderr.
set -u
command -v python3 >/dev/null || { echo "no python3"; exit 77; }
dir=$(mktemp -d /tmp/kumi-tcpauth.XXXXXX)
job_pid=
cleanup() { touch "$dir/go"; [ -n "$job_pid" ] && kill "$job_pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT

"$MPIEXEC" --timeout 150 -n 2 -x MPI_COMPONENTS=p2p=self,tcp --param p2p_tcp_auth_timeout=2 \
    "$TESTBIN/p2p_hold" "$dir" > "$dir/out" 2> "$dir/err" < /dev/null &
job_pid=$!
for i in $(seq 1 600); do
    [ -e "$dir/ready" ] && break
    kill -0 "$job_pid" 2>/dev/null || break
    sleep 0.1
done
[ -e "$dir/ready" ] || { cat "$dir/err"; echo "the job did not start"; exit 1; }
pid0=$(sed -n 's/^pid 0 //p' "$dir/ready")

python3 - "$pid0" <<'PY'
import os, sys, socket, struct, time, errno
pid = sys.argv[1]
def nfds():
    return len(os.listdir(f"/proc/{pid}/fd"))
sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests/scripts/lib"))
from proc_listeners import listeners
port = listeners(pid)[0][1] if listeners(pid) else None
if port is None:
    sys.exit("rank 0 has no TCP listener")
base = nfds()
print(f"rank 0 (pid {pid}) listens on port {port}; {base} descriptors before")
N = 500
socks = []
peak = base
t0 = time.time()
for i in range(N):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", port))
    except OSError as e:
        sys.exit(f"connect {i}: {e}")
    try:
        if i % 3 == 1:
            s.send(b"KUMH\x00")                       # the start of a hello, then silence
        elif i % 3 == 2:
            s.send(bytes((i * 37 + k) & 255 for k in range(64)))   # garbage
    except OSError:
        pass                                           # closed already: fine
    socks.append(s)
    if i % 25 == 0:
        peak = max(peak, nfds())
end = time.time() + 5
while time.time() < end:
    peak = max(peak, nfds())
    time.sleep(0.05)
print(f"{N} connections opened; rank 0 peaked at {peak} descriptors")
if peak > base + 64 + 16:
    sys.exit(f"rank 0 holds {peak} descriptors ({base} before): unauthenticated connections are not capped")
# a well-formed hello (rank 1's number, any nonce), then a wrong proof
h = socket.create_connection(("127.0.0.1", port), timeout=5)
h.send(struct.pack("=Ii", 0x4b554d48, 1) + os.urandom(16))
chal = b""
while len(chal) < 56:
    try:
        b = h.recv(56 - len(chal))
    except ConnectionResetError:
        b = b""
    if not b:
        break
    chal += b
if len(chal) != 56 or struct.unpack("=I", chal[:4])[0] != 0x4b554d43:
    sys.exit(f"a well-formed hello got {len(chal)} bytes back, not a 56-byte challenge")
h.send(os.urandom(32))
h.settimeout(5)
try:
    rest = h.recv(100)
except ConnectionResetError:
    rest = b""
if rest:
    sys.exit(f"rank 0 sent {len(rest)} bytes after a wrong proof")
print("well-formed hello: challenge, then closed at the wrong proof")
# all of them must be closed by now (auth timeout 2 s)
deadline = time.time() + 3
openleft = N
while time.time() < deadline:
    openleft = 0
    for s in socks:
        s.setblocking(False)
        try:
            d = s.recv(100)
            if d:
                sys.exit(f"rank 0 sent {len(d)} bytes to a stranger")
        except BlockingIOError:
            openleft += 1
        except (ConnectionResetError, BrokenPipeError):
            pass
    if openleft == 0:
        break
    time.sleep(0.2)
if openleft:
    sys.exit(f"{openleft} of {N} connections still open past the authentication deadline")
for s in socks:
    s.close()
time.sleep(0.5)
after = nfds()
print(f"all {N} closed by rank 0; {after} descriptors after")
if after > base + 2:
    sys.exit(f"rank 0 still holds {after} descriptors ({base} before)")
PY
rc=$?
touch "$dir/go"
wait "$job_pid"; jrc=$?; job_pid=
[ $rc -eq 0 ] || { echo "probe failed"; exit 1; }
[ $jrc -eq 0 ] || { cat "$dir/err"; echo "the job failed ($jrc)"; exit 1; }
grep '^ok ' "$dir/out" || { echo "the job printed no ok"; exit 1; }
[ ! -s "$dir/err" ] || { cat "$dir/err"; echo "output on stderr"; exit 1; }
exit 0
