#!/bin/bash
# The IMPI wire code under AddressSanitizer + UndefinedBehaviorSanitizer (issue 19 item 1):
#  1. tests/unit/test_impi_wire.c and test_impi_fuzz.c (300000 random / mutated frames)
#     built with framework/core/impi_wire.c alone, every input in a heap block of its size,
#     and test_impi_client.c with impi_client.c;
#  2. impi_server and impi_testclient built from their sources with the sanitizers;
#     a 3-client exchange passes;
#  3. the server fuzzed over its socket: rounds of servers (1-3 clients, with and without a
#     key, -timeout 1) fed connections carrying mutated start-up streams (bit flips, random
#     bytes, edge lengths, cuts, insertions; a valid prefix so that the label rounds are
#     reached) sent whole or in pieces, some reset: no sanitizer report, no crash (exit 0, 1,
#     or killed by the test at the end of its round).
# Skips (77) when the compiler cannot build with the sanitizers.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
CC=${CC:-cc}
dir=$(mktemp -d /tmp/kumi-impiasan.XXXXXX)
trap 'rm -rf "$dir"' EXIT
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
flags="-std=gnu11 -g -O1 -Wall -Wextra -Wno-unused-parameter $san -I$top_builddir/framework/include -I$top_srcdir/framework/include -I$top_srcdir/tests/unit"
echo 'int main(void){return 0;}' > "$dir/t.c"
$CC $san -o "$dir/t" "$dir/t.c" 2> /dev/null && "$dir/t" || { echo "no sanitizers in $CC"; exit 77; }
export ASAN_OPTIONS=exitcode=99:detect_leaks=1 UBSAN_OPTIONS=exitcode=99:print_stacktrace=1
core=$top_srcdir/framework/core
srv=$top_srcdir/tools/impi_server
fail() { echo "FAIL: $*"; exit 1; }

# shellcheck disable=SC2086
{ $CC $flags -o "$dir/t_wire" "$top_srcdir/tests/unit/test_impi_wire.c" "$core/impi_wire.c" &&
  $CC $flags -o "$dir/t_fuzz" "$top_srcdir/tests/unit/test_impi_fuzz.c" "$core/impi_wire.c" &&
  $CC $flags -o "$dir/t_client" "$top_srcdir/tests/unit/test_impi_client.c" "$core/impi_wire.c" "$core/impi_client.c" \
      "$core/netif.c" -lpthread &&
  $CC $flags -o "$dir/impi_server" "$srv/impi_server.c" "$core/impi_wire.c" "$core/netif.c" &&
  $CC $flags -o "$dir/impi_testclient" "$srv/impi_testclient.c" "$core/impi_wire.c" "$core/impi_client.c" "$core/netif.c"
} 2> "$dir/build.err" || { cat "$dir/build.err"; fail "the sanitizer build failed"; }

"$dir/t_wire" > "$dir/wire.out" 2>&1 || { cat "$dir/wire.out"; fail "test_impi_wire under the sanitizers"; }
"$dir/t_client" > "$dir/client.out" 2>&1 || { cat "$dir/client.out"; fail "test_impi_client under the sanitizers"; }
KUMI_FUZZ_ITER=300000 "$dir/t_fuzz" > "$dir/fuzz.out" 2>&1 || { cat "$dir/fuzz.out"; fail "test_impi_fuzz under the sanitizers"; }
tail -2 "$dir/fuzz.out"

# a clean 3-client exchange with the sanitized binaries
"$dir/impi_server" -n 3 -timeout 20 -portfile "$dir/pf" > /dev/null 2> "$dir/srv.err" &
spid=$!
for _ in $(seq 1 200); do [ -s "$dir/pf" ] && break; sleep 0.05; done
hp=$(cat "$dir/pf")
for r in 0 1 2; do
    "$dir/impi_testclient" -server "$hp" -rank $r -nhosts $((r + 1)) > "$dir/c$r.out" 2> "$dir/c$r.err" &
    eval "c$r=\$!"
done
# shellcheck disable=SC2154
for p in $c0 $c1 $c2; do wait "$p" || { cat "$dir"/c*.err; fail "a sanitized client failed"; }; done
wait $spid || { cat "$dir/srv.err"; fail "the sanitized server failed"; }
cmp -s "$dir/c0.out" "$dir/c2.out" || fail "the sanitized clients learnt different jobs"
echo "ok: a 3-client exchange with the sanitized server and clients"

command -v python3 > /dev/null || { echo "no python3: the socket fuzz is skipped"; exit 0; }
python3 - "$dir/impi_server" "$dir" <<'PY' || fail "the socket fuzz found a problem (above)"
import os, random, signal, socket, struct, subprocess, sys, time
srv, tmp = sys.argv[1], sys.argv[2]
seed = int(os.environ.get("KUMI_TEST_SEED", "19"))
rnd = random.Random(seed)
print(f"socket fuzz seed {seed} (KUMI_TEST_SEED replays it)")
LABELS = [(0x1000, 8), (0x1100, 4), (0x1200, 4), (0x1300, 4), (0x1400, 4), (0x1500, 4), (0x1600, 4),
          (0x2000, 16), (0x2100, 4), (0x2200, 4), (0x2300, 4), (0x2400, 4), (0x3000, 16), (0x3100, 8)]
VAL = {0x1000: b"\0" * 8, 0x1100: struct.pack(">i", 1), 0x1200: struct.pack(">i", 1), 0x1300: struct.pack(">i", 4096),
       0x1400: struct.pack(">i", 32767), 0x1500: struct.pack(">i", -1), 0x1600: struct.pack(">i", -1),
       0x2000: bytes(12) + bytes([127, 0, 0, 1]), 0x2100: struct.pack(">i", 4000), 0x2200: struct.pack(">i", 1),
       0x2300: struct.pack(">I", 10), 0x2400: struct.pack(">I", 20), 0x3000: bytes(12) + bytes([127, 0, 0, 1]),
       0x3100: struct.pack(">q", 77)}
def cmd(c, payload=b""):
    return struct.pack(">4sI", c, len(payload)) + payload
def stream(rank, key):
    s = cmd(b"AUTH", struct.pack(">I", 2 if key is not None else 1))
    if key is not None:
        s += struct.pack(">Q", key)
    s += cmd(b"IMPI", struct.pack(">i", rank))
    pre = len(s)
    for lab, _ in LABELS:
        s += cmd(b"COLL", struct.pack(">I", lab) + VAL[lab])
    return pre, s + cmd(b"DONE") + cmd(b"FINI")
EDGE = [0, 1, 3, 4, 7, 8, 0x7fffffff, 0x80000000, 0xffffffff, 64 << 20, (64 << 20) + 1]
def mutate(b, keep):
    b = bytearray(b)
    for _ in range(rnd.randint(1, 4)):
        if len(b) <= keep:
            break
        at = rnd.randrange(keep, len(b))
        k = rnd.randrange(6)
        if k == 0: b[at] ^= 1 << rnd.randrange(8)
        elif k == 1: b[at] = rnd.randrange(256)
        elif k == 2 and at + 4 <= len(b): b[at:at + 4] = struct.pack(">I", rnd.choice(EDGE))
        elif k == 3: del b[at:]
        elif k == 4: b[at:at] = bytes([rnd.randrange(256)])
        else: del b[at]
    return bytes(b)
bad = 0
t_end = time.time() + 8
kinds = {}
rounds = 0
while time.time() < t_end:
    rounds += 1
    n = rnd.randint(1, 3)
    key = rnd.choice([None, 7])
    pf = os.path.join(tmp, "fz.port")
    if os.path.exists(pf):
        os.unlink(pf)
    args = [srv, "-n", str(n), "-timeout", "1", "-portfile", pf] + (["-auth", "7"] if key is not None else [])
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(200):
        if os.path.exists(pf) or p.poll() is not None:
            break
        time.sleep(0.01)
    try:
        host, port = open(pf).read().strip().rsplit(":", 1)
    except OSError:
        p.kill(); p.wait()
        continue
    socks = []
    for c in range(rnd.randint(1, 8)):
        rank = rnd.randrange(n + 1)
        pre, s = stream(rank, key if rnd.random() < 0.9 else 8)
        # keep the valid AUTH+IMPI prefix half of the time, so that the labels are reached
        s = mutate(s, pre if rnd.random() < 0.5 else 0) if rnd.random() < 0.9 else s
        try:
            so = socket.create_connection((host, int(port)), timeout=1)
        except OSError:
            break
        try:
            if rnd.random() < 0.5:
                so.sendall(s)
            else:
                i = 0
                while i < len(s):
                    j = i + rnd.randint(1, 40); so.sendall(s[i:j]); i = j
            if rnd.random() < 0.2:     # reset instead of a clean close
                so.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                so.close()
            else:
                socks.append(so)
        except OSError:
            so.close()
    time.sleep(0.15)
    for so in socks:
        so.close()
    try:
        rc = p.wait(timeout=0.3)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM); rc = p.wait()
    err = p.stderr.read().decode(errors="replace")
    kinds[rc] = kinds.get(rc, 0) + 1
    for line in err.splitlines():
        w = line.split(":", 1)[-1].split()
        k = " ".join(x for x in w[:6] if not x[0].isdigit() and not x.startswith("("))
        kinds[k] = kinds.get(k, 0) + 1
    if "Sanitizer" in err or "runtime error" in err or rc not in (0, 1, -signal.SIGTERM):
        bad += 1
        print(f"round {rounds}: server -n {n} exit {rc}\n{err[-3000:]}")
        if bad > 2:
            break
print(f"{rounds} rounds of the socket fuzz, {bad} with a problem; exit statuses and messages seen:")
for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])[:25]:
    print(f"  {v:5d}  {k}")
sys.exit(1 if bad else 0)
PY
echo "ok: the IMPI wire code and impi_server are clean under ASan/UBSan"
