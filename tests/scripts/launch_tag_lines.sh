#!/bin/bash
# launch_tag_lines: with --tag-output, lines longer than mpiexec's 64 KiB line
# buffer, written by several ranks at once, are never spliced: every output
# line carries a tag, and its text comes from the rank of that tag alone (a
# long line is cut into tagged lines).  Lines of normal length stay whole.
set -u
: "${MPIEXEC:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# rank r writes 6 lines of 200,000 times the letter a+r, and 50 short lines
w=$tmp/long_lines
cat > "$w" <<'SH'
#!/bin/bash
c=$(printf "\\$(printf '%03o' $((97 + KUMI_RANK)))")
long=$(head -c 200000 /dev/zero | tr '\0' "$c")
for i in 1 2 3 4 5 6; do
    echo "$long"
    for j in $(seq 8); do echo "short $c $i $j"; done
done
SH
chmod +x "$w"
"$MPIEXEC" --tag-output -n 4 "$w" > "$tmp/out" 2> "$tmp/err" < /dev/null
rc=$?
[ $rc -eq 0 ] || { cat "$tmp/err"; fail "mpiexec exited $rc"; }
awk '
    {
        if (!match($0, /^\[[0-9]+,[0-9]+\]<stdout>: /)) { bad++; if (bad < 4) print "untagged line (" length($0) " bytes): " substr($0, 1, 60); next }
        tag = substr($0, 1, RLENGTH); text = substr($0, RLENGTH + 1)
        r = tag; sub(/^\[[0-9]+,/, "", r); sub(/\].*/, "", r)
        c = sprintf("%c", 97 + r)
        if (text ~ /^short /) { if (substr(text, 7, 1) != c) { bad++; print "short line of rank " r " with " text }; short[r]++; next }
        t = text; gsub(c, "", t)
        if (t != "") { bad++; if (bad < 4) print "line of rank " r " holds another rank'"'"'s text (" length(text) " bytes)" }
        total[r] += length(text)
    }
    END {
        for (r = 0; r < 4; r++) {
            if (total[r] != 6 * 200000) { bad++; print "rank " r ": " total[r] + 0 " letters, expected 1200000" }
            if (short[r] != 48) { bad++; print "rank " r ": " short[r] + 0 " short lines, expected 48" }
        }
        exit bad ? 1 : 0
    }' "$tmp/out" || fail "--tag-output spliced long lines"
echo "launch_tag_lines: every line tagged and from one rank ($(wc -l < "$tmp/out") lines)"
exit 0
