#!/bin/bash
# launch_output: stdout/stderr of every rank arrive complete, each line
# intact (no mixing inside a line), partial last lines are flushed, and
# --tag-output prefixes every line with [jobid,rank]<stdout>: / <stderr>:.
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}"
prog=$TESTBIN/launch_output
[ -x "$prog" ] || { echo "SKIP: $prog not built"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# check FILE TAG NRANKS LINES STEP: every line is "TAG r=R i=I PAYLOAD" with
# the payload launch_output.c writes; each (R, I) with I % STEP == 0 exactly once.
check() {
    awk -v tag="$2" -v nr="$3" -v nl="$4" -v step="$5" '
    { if (NF != 4 || $1 != tag || substr($2,1,2) != "r=" || substr($3,1,2) != "i=") { bad++; if (bad < 5) print "bad line: " $0; next }
      r = substr($2,3) + 0; i = substr($3,3) + 0; p = $4; n = 20 + i % 90
      c = sprintf("%c", 97 + (r * 7 + i) % 26)
      if (length(p) != n || gsub(c, "", p) != n) { bad++; if (bad < 5) print "bad payload: " $0; next }
      if (r < 0 || r >= nr || i < 0 || i >= nl || i % step) { bad++; next }
      if (seen[r " " i]++) { dup++; if (dup < 5) print "duplicate: " $0 } }
    END { want = nr * int((nl + step - 1) / step); got = length(seen)
          if (bad || dup || got != want) { print "bad=" bad+0 " dup=" dup+0 " distinct=" got " want=" want; exit 1 } }' "$1"
}

# 1. four ranks, many lines written in pieces
timeout 120 "$MPIEXEC" -n 4 "$prog" 3000 > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 0 ] || { tail -5 "$tmp/err"; fail "mpiexec -n 4 launch_output exited $rc"; }
[ "$(wc -l < "$tmp/out")" -eq 12000 ] || fail "stdout has $(wc -l < "$tmp/out") lines, expected 12000"
check "$tmp/out" LO 4 3000 1 || fail "stdout lines damaged"
[ "$(wc -l < "$tmp/err")" -eq 1200 ] || { head -3 "$tmp/err"; fail "stderr has $(wc -l < "$tmp/err") lines, expected 1200"; }
check "$tmp/err" LE 4 3000 10 || fail "stderr lines damaged"

# 2. a last line without newline is flushed at the end, byte for byte
timeout 60 "$MPIEXEC" -n 1 "$prog" 3 tail > "$tmp/out1" 2>/dev/null || fail "launch_output tail failed"
[ "$(tail -c 8 "$tmp/out1")" = "TAIL r=0" ] || fail "partial last line lost: '$(tail -c 20 "$tmp/out1")'"
[ "$(wc -l < "$tmp/out1")" -eq 3 ] || fail "tail run: $(wc -l < "$tmp/out1") newlines, expected 3"

# 3. --tag-output
timeout 60 "$MPIEXEC" --tag-output -n 2 "$prog" 200 tail > "$tmp/tout" 2> "$tmp/terr" || fail "--tag-output run failed"
[ "$(wc -l < "$tmp/tout")" -eq 402 ] || fail "--tag-output stdout has $(wc -l < "$tmp/tout") lines, expected 402"
grep -Evq '^\[[0-9]+,[01]\]<stdout>: (LO|TAIL) ' "$tmp/tout" && { grep -Ev '^\[[0-9]+,[01]\]<stdout>: ' "$tmp/tout" | head -3; fail "stdout line without tag"; }
grep -Evq '^\[[0-9]+,[01]\]<stderr>: LE ' "$tmp/terr" && { head -3 "$tmp/terr"; fail "stderr line without tag"; }
# the rank in the tag is the rank that wrote the line, the job id is one
awk '{ split($1, a, /[\[,\]]/); if ($3 != "r=" a[3]) bad++; ids[a[2]] = 1 }
     END { if (bad || length(ids) != 1) exit 1 }' "$tmp/tout" || fail "tag does not match the writing rank"
[ "$(grep -c 'TAIL r=' "$tmp/tout")" -eq 2 ] || fail "tagged partial lines missing"
sed 's/^\[[0-9]*,[01]\]<stdout>: //' "$tmp/tout" | grep -v '^TAIL' > "$tmp/tout2"
check "$tmp/tout2" LO 2 200 1 || fail "tagged stdout lines damaged"
sed 's/^\[[0-9]*,[01]\]<stderr>: //' "$tmp/terr" > "$tmp/terr2"
check "$tmp/terr2" LE 2 200 10 || fail "tagged stderr lines damaged"
echo "launch_output: ok"
exit 0
