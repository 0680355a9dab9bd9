#!/bin/bash
# impi_server (issue 19 item 1) with made-up clients (tools/impi_server/impi_testclient,
# which runs the client side of kumi/impi.h) over loopback / this host's address:
#  1. 2 clients (1 and 2 hosts), no key, a stray connection sending HTTP first (refused,
#     the job goes on): host:port on stdout and in -portfile, every client learns the same
#     job (totals, minima, per-client / host / proc tables in client order), server exit 0;
#  2. 3 clients with -auth KEY, offering KEY, NONE+KEY, and the draft's old 8-byte key;
#  3. a wrong key: refused with a message naming it, the client says so, the server then
#     times out naming the missing client; NONE to a keyed server and KEY to an unkeyed
#     one refused;
#  4. a client that never comes (-timeout 2): exit 1 naming it, within the bound;
#  5. a client that dies mid-exchange (before C_NPROCS): the server names it, closes the
#     others (they report the label they waited for), exit 1; one that stalls (before
#     H_PORT): "no progress" naming it and the label the others wait for; one that dies
#     after the start-up without FINI: exit 1;
#  6. clients that disagree on C_COLL_XSIZE stop with the values; usage errors exit 2.
set -u
SERVER=$top_builddir/tools/impi_server/impi_server
CLIENT=$top_builddir/tools/impi_server/impi_testclient
[ -x "$SERVER" ] && [ -x "$CLIENT" ] || { echo "FAIL: impi_server or impi_testclient not built"; exit 1; }
dir=$(mktemp -d /tmp/kumi-impi.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$dir"; }
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# start_server NAME ARGS...: runs it in the background; sets hp (host:port) and spid
start_server() {
    local name=$1; shift
    rm -f "$dir/$name.port"
    timeout 60 "$SERVER" -portfile "$dir/$name.port" "$@" > "$dir/$name.sout" 2> "$dir/$name.serr" &
    spid=$!; pids+=("$spid")
    for _ in $(seq 1 100); do [ -s "$dir/$name.port" ] && break; sleep 0.05; done
    hp=$(cat "$dir/$name.port" 2>/dev/null)
    [ -n "$hp" ] || { fail "$name: no port file"; cat "$dir/$name.serr"; }
}
# client NAME RANK ARGS...: in the background, pid in cpid
client() {
    local name=$1 rank=$2; shift 2
    timeout 60 "$CLIENT" -server "$hp" -rank "$rank" "$@" > "$dir/$name.c$rank.out" 2> "$dir/$name.c$rank.err" &
    cpid=$!; pids+=("$cpid")
}
# expect_exit PID STATUS WHAT
expect_exit() {
    wait "$1"; local rc=$?
    [ "$rc" = "$2" ] || fail "$3: exit $rc, expected $2"
}
has() { # FILE TEXT WHAT
    grep -qF -- "$2" "$1" || { fail "$3: \"$2\" not in $(basename "$1"):"; sed 's/^/    | /' "$1"; }
}

# ---- 1. two clients, no key, a stray connection first ----
start_server two -n 2 -timeout 20
grep -Eq '^[0-9.]+:[0-9]+$' "$dir/two.sout" && [ "$(cat "$dir/two.sout")" = "$hp" ] ||
    fail "stdout \"$(cat "$dir/two.sout")\" is not the host:port of the port file ($hp)"
h=${hp%:*}; p=${hp##*:}
if exec 3<>"/dev/tcp/$h/$p"; then
    printf 'GET / HTTP/1.0\r\n\r\n' >&3
    cat <&3 > /dev/null          # the server closes it
    exec 3>&-
fi
client two 1 -nhosts 2; c1=$cpid
client two 0; c0=$cpid
expect_exit "$c0" 0 "two: client 0"
expect_exit "$c1" 0 "two: client 1"
expect_exit "$spid" 0 "two: server"
has "$dir/two.serr" "refused the connection from" "two: the stray connection"
has "$dir/two.serr" "unknown command 0x47455420" "two: the stray connection"
cmp -s "$dir/two.c0.out" "$dir/two.c1.out" || { fail "two: the clients learnt different jobs"; diff "$dir/two.c0.out" "$dir/two.c1.out"; }
for want in "nclients 2" "nhosts 3 nprocs 6" "pk_maxlen 4000 tag_ub 40000 xsize 1024 maxlinear 4 ackmark 10 hiwater 20" \
            "client 1: nhosts 2 nprocs 4 datalen 4001 tagub 40001 first_host 1 first_proc 2" \
            "host 2: id 10.1.1.1 port 20101 nprocs 2 ackmark 11 hiwater 21 first_proc 4" \
            "proc 5: id 10.1.1.1 pid 1003"; do
    has "$dir/two.c0.out" "$want" "two"
done
[ $fails = 0 ] && ok "2 clients: the same job on both, server exit 0, stray connection refused"

# ---- 2. three clients with a key: KEY, NONE+KEY, the old 8-byte key ----
start_server three -n 3 -auth 0x1234abcd -timeout 20 -v
client three 2 -nhosts 3 -auth 305441741; c2=$cpid
client three 0 -nhosts 1 -auth any:0x1234abcd; c0=$cpid
client three 1 -nhosts 2 -oldauth 305441741; c1=$cpid
expect_exit "$c0" 0 "three: client 0"
expect_exit "$c1" 0 "three: client 1"
expect_exit "$c2" 0 "three: client 2"
expect_exit "$spid" 0 "three: server"
cmp -s "$dir/three.c0.out" "$dir/three.c1.out" && cmp -s "$dir/three.c0.out" "$dir/three.c2.out" ||
    fail "three: the clients learnt different jobs"
for want in "nclients 3" "nhosts 6 nprocs 12" "client 2: nhosts 3 nprocs 6 datalen 4002 tagub 40002 first_host 3 first_proc 6" \
            "host 3: id 10.2.0.1 port 20200 nprocs 2 ackmark 12 hiwater 22 first_proc 6" \
            "host 5: id 10.2.2.1 port 20202" "proc 0: id 10.0.0.1 pid 0" "proc 11: id 10.2.2.1 pid 2005"; do
    has "$dir/three.c0.out" "$want" "three"
done
has "$dir/three.serr" "label P_PID: sent 96 bytes of 3 client(s) (mask 0x7)" "three: -v"
has "$dir/three.serr" "every client sent FINI" "three: -v"
[ $fails = 0 ] && ok "3 clients with a key (KEY, NONE+KEY, old-form key): the same job, exit 0"

# ---- 3. a wrong key ----
start_server key -n 2 -auth 42 -timeout 3
client key 0 -auth 42; c0=$cpid
client key 1 -auth 43; c1=$cpid
expect_exit "$c1" 1 "key: the client with the wrong key"
has "$dir/key.c1.err" "was the key right?" "key: client 1"
t0=$(date +%s)
expect_exit "$spid" 1 "key: server"
expect_exit "$c0" 1 "key: client 0"
has "$dir/key.serr" ": wrong key" "key: server"
has "$dir/key.serr" "client 1 never connected" "key: server"
has "$dir/key.c0.err" "closed the connection" "key: client 0"
start_server key2 -n 1 -auth 42 -timeout 2
client key2 0 -auth none; c0=$cpid
expect_exit "$c0" 1 "key2: client offering NONE"
expect_exit "$spid" 1 "key2: server"
has "$dir/key2.serr" "requires a key (-auth) but the client offers only NONE" "key2"
start_server key3 -n 1 -timeout 2
client key3 0 -auth 42; c0=$cpid
expect_exit "$c0" 1 "key3: client offering KEY"
expect_exit "$spid" 1 "key3: server"
has "$dir/key3.serr" "offers only KEY (mask 0x2) but this server has no key" "key3"
[ $fails = 0 ] && ok "a wrong key / no common mechanism: refused with a message, the server times out naming the client"

# ---- 4. a client that never comes ----
start_server never -n 2 -timeout 2
client never 0; c0=$cpid
t0=$(date +%s)
expect_exit "$spid" 1 "never: server"
t1=$(date +%s)
expect_exit "$c0" 1 "never: client 0"
has "$dir/never.serr" "waited 2 s: client 1 never connected (1 of 2 are in)" "never"
has "$dir/never.serr" "closed the connections of 1 client(s) to tell them" "never"
[ $((t1 - t0)) -le 6 ] || fail "never: the server took $((t1 - t0)) s for a 2 s timeout"
[ $fails = 0 ] && ok "a client that never comes: exit 1 after the timeout, naming it"

# ---- 5. a client that dies mid-exchange, one that stalls, one that dies after the start-up ----
start_server die -n 3 -timeout 20
client die 0; c0=$cpid
client die 1; c1=$cpid
client die 2 -die-at C_NPROCS; c2=$cpid
expect_exit "$spid" 1 "die: server"
expect_exit "$c2" 3 "die: client 2"
expect_exit "$c0" 1 "die: client 0"
expect_exit "$c1" 1 "die: client 1"
has "$dir/die.serr" "client 2 (" "die: server"
has "$dir/die.serr" "closed its connection before FINI" "die: server"
has "$dir/die.serr" "during the start-up" "die: server"
has "$dir/die.serr" "closed the connections of 2 client(s) to tell them" "die: server"
# (a client slower than the death sends C_NPROCS into a closed connection: it still names the label)
has "$dir/die.c0.err" "label C_NPROCS" "die: client 0"
has "$dir/die.c1.err" "label C_NPROCS" "die: client 1"

start_server stall -n 2 -timeout 2
client stall 0; c0=$cpid
client stall 1 -stall-at H_PORT; c1=$cpid
expect_exit "$spid" 1 "stall: server"
expect_exit "$c0" 1 "stall: client 0"
kill "$c1" 2>/dev/null
has "$dir/stall.serr" "no progress for 2 s during the start-up: client 1 (" "stall"
has "$dir/stall.serr" "while the others wait for label H_PORT" "stall"

start_server late -n 2 -timeout 20
client late 0; c0=$cpid
client late 1 -die-at FINI; c1=$cpid
expect_exit "$c0" 0 "late: client 0"
expect_exit "$c1" 3 "late: client 1"
expect_exit "$spid" 1 "late: server"
has "$dir/late.serr" "client 1 (" "late"
has "$dir/late.serr" "before FINI" "late"
has "$dir/late.serr" "after the start-up" "late"
[ $fails = 0 ] && ok "a client dying during / after the start-up or stalling: named, the others closed, exit 1"

# ---- 6. disagreeing clients, usage ----
start_server xsize -n 2 -timeout 20
client xsize 0 -xsize 1024; c0=$cpid
client xsize 1 -xsize 2048; c1=$cpid
expect_exit "$c0" 1 "xsize: client 0"
expect_exit "$c1" 1 "xsize: client 1"
expect_exit "$spid" 1 "xsize: server"
has "$dir/xsize.c0.err" "label C_COLL_XSIZE: the clients disagree (1024, 2048" "xsize"
"$SERVER" > /dev/null 2> "$dir/u1"; [ $? = 2 ] || fail "no -n: not exit 2"
has "$dir/u1" "the number of clients is missing" "usage"
"$SERVER" -n 33 > /dev/null 2> "$dir/u2"; [ $? = 2 ] || fail "-n 33: not exit 2"
has "$dir/u2" "1..32" "usage"
"$SERVER" -n 2 -auth 12ab > /dev/null 2> "$dir/u3"; [ $? = 2 ] || fail "-auth 12ab: not exit 2"
has "$dir/u3" "64-bit number" "usage"
"$SERVER" -n 2 -port 70000 > /dev/null 2> "$dir/u4"; [ $? = 2 ] || fail "-port 70000: not exit 2"
[ $fails = 0 ] && ok "disagreeing XSIZE stops both clients with the values; usage errors exit 2"

[ $fails = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all impi_server checks passed"
