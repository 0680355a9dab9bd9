#!/bin/bash
# ckpt/image: a program checkpoints itself (kumi_ckpt_image_write) at iteration K
# of its floating-point loop (static data, heap, stack, an anonymous mapping, a
# file it appends to), goes on to the end; `kumi_restart IMAGE` resumes it from
# K and must print the same checksum and leave the same file, bit for bit, as an
# uninterrupted run.  For a dynamically linked PIE and a -static program; twice
# from the same image; after the original was killed with SIGKILL; from an
# image that a restarted process wrote of itself.  A process
# with a second thread is refused; a damaged, truncated, foreign or empty image
# is refused by kumi_restart with a clear message and exit status 1.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
IMG=$top_builddir/components/ckpt/image
RESTART=$IMG/kumi_restart
LIB=$IMG/.libs/libkumi_ckpt_image_core.a
if [ ! -x "$RESTART" ] || [ ! -f "$LIB" ]; then
    # x86_64 Linux only (components/ckpt/image/configure.m4); there, not built is a failure
    [ "$(uname -m)-$(uname -s)" = x86_64-Linux ] || { echo "SKIP: ckpt/image is for x86_64 Linux"; exit 77; }
    echo "FAIL: ckpt/image (kumi_restart, libkumi_ckpt_image_core) not built: see configure's summary"; exit 1
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kumi-ckpt.XXXXXX")
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures+1)); }
ok() { echo "ok: $*"; }
show() { sed 's/^/    | /' "$1" | head -${2:-10}; }
CC=${CC:-cc}
SRC=$top_srcdir/tests/ckpt/ckpt_prog.c
CFLAGS="-std=gnu11 -O2 -Wall -I$top_srcdir/components/ckpt/image"
$CC $CFLAGS -o "$TMP/prog_dyn" "$SRC" "$LIB" -lm -lpthread 2> "$TMP/cc.err" || { show "$TMP/cc.err"; fail "cannot build the test program"; exit 1; }
progs=(dyn)
if $CC $CFLAGS -static -o "$TMP/prog_static" "$SRC" "$LIB" -lm -lpthread 2> "$TMP/ccs.err"; then progs+=(static)
else fail "cannot build the -static test program"; show "$TMP/ccs.err"; fi
readelf -h "$TMP/prog_dyn" | grep -q 'DYN' && ok "the dynamic test program is a PIE" || fail "prog_dyn is not a PIE"

N=60 K=20
cd "$TMP" || exit 1
reference() { # -> REF and ref.txt, for CKPT_THREADS as set
    rm -f ref.txt
    ./prog_dyn ref.txt $N $K unused none > ref.out 2>&1 || { show ref.out; fail "reference run"; exit 1; }
    REF=$(sed -n 's/^checksum //p' ref.out)
    [ -n "$REF" ] && ok "reference run${CKPT_THREADS:+ with threads}: checksum $REF, $(wc -l < ref.txt) lines" \
        || { fail "no reference checksum"; exit 1; }
}
reference

check_end() { # WHAT OUT FILE: the checksum and the file of a run that went to the end
    local sum; sum=$(sed -n 's/^checksum //p' "$2")
    [ "$sum" = "$REF" ] && ok "$1: checksum $sum" || { fail "$1: checksum '$sum', expected $REF"; show "$2"; }
    cmp -s "$3" ref.txt && ok "$1: the file is the uninterrupted run's, bit for bit" || { fail "$1: the file differs"; diff "$3" ref.txt | head -5; }
}
restart() { # WHAT IMAGE FILE (run from / : the image brings its own working directory)
    (cd / && CKPT_TEST_RESTART=new "$RESTART" "$TMP/$2" 9< /dev/null) > r.out 2> r.err; local rc=$?
    cat r.err >> r.out
    [ $rc -eq 0 ] && ok "$1: kumi_restart exits 0" || { fail "$1: kumi_restart exit $rc"; show r.out; }
    grep -q '^restarted (pid changed)$' r.out && ok "$1: the checkpoint call returned KUMI_CKPT_RESTARTED, with a new pid" \
        || { fail "$1: no 'restarted' line"; show r.out; }
    grep -q '^brk grew$' r.out && ok "$1: malloc extends the saved heap with brk" || fail "$1: $(grep brk r.out)"
    grep -q '^clock ok$' r.out && ok "$1: clock_gettime through the vDSO" || fail "$1: $(grep clock r.out)"
    grep -q '^signals handler-ran usr2-blocked$' r.out && ok "$1: signal handler and mask restored, raise() works" \
        || fail "$1: $(grep signals r.out)"
    grep -q '^restart env new, saved env (none)$' r.out && ok "$1: the restart's environment reaches the program" \
        || fail "$1: $(grep env r.out)"
    grep -q '^pipe reserved, fd 9 closed$' r.out && ok "$1: the pipe's fds hold placeholders (EBADF), the restart's own fd 9 is gone" \
        || fail "$1: $(grep pipe r.out)"
    grep -q '^cwd same$' r.out && ok "$1: working directory restored" || fail "$1: $(grep cwd r.out)"
    check_end "$1" r.out "$3"
}

variants=("${progs[@]}")
for p in "${progs[@]}"; do variants+=("$p+threads"); done
for v in "${variants[@]}"; do
    p=${v%+threads}
    if [ "$v" != "$p" ] && [ -z "${CKPT_THREADS:-}" ]; then export CKPT_THREADS=1; reference; fi
    p=$v; bin=./prog_${v%+threads}
    rm -f "out_$p.txt"
    $bin "out_$p.txt" $N $K "img_$p" run > run.out 2>&1; rc=$?
    [ $rc -eq 0 ] && ok "$p: checkpointing run exits 0" || { fail "$p: checkpointing run exit $rc"; show run.out; continue; }
    check_end "$p, checkpointing run" run.out "out_$p.txt"
    [ -s "img_$p" ] && ok "$p: image written ($(stat -c %s "img_$p") bytes)" || fail "$p: no image"
    ls img_$p.tmp.* > /dev/null 2>&1 && fail "$p: a temporary image is left" || ok "$p: no temporary image left"
    "$RESTART" --info "img_$p" > info.out 2>&1 && grep -q '^Kumi process image' info.out && grep -q '\[heap\]' info.out \
        && ok "$p: kumi_restart --info describes the image" || { fail "$p: --info"; show info.out; }
    restart "$p, restart" "img_$p" "out_$p.txt"
    restart "$p, second restart from the same image" "img_$p" "out_$p.txt"
    [ "$v" != "${v%+threads}" ] && grep workers r.out | sed 's/^/    /'
done
unset CKPT_THREADS
reference

# checkpoint-and-continue twice: the second image is written by the process restarted from the first
rm -f two.txt
./prog_dyn two.txt $N $K img_a run 40 img_b > two.out 2>&1 && check_end "two checkpoints" two.out two.txt || { fail "two checkpoints"; show two.out; }
rm -f img_b
restart "restart from the first of two images (it writes the second)" img_a two.txt
[ -s img_b ] && ok "the restarted process wrote an image of itself" || fail "no second image from the restarted process"
"$RESTART" img_b > r2.out 2>&1; rc=$?
[ $rc -eq 0 ] && grep -q '^restarted at 40$' r2.out && ok "an image of a restarted process restarts" || { fail "img_b: exit $rc"; show r2.out; }
check_end "restart of the image a restarted process wrote" r2.out two.txt

# the original killed with SIGKILL after writing its image
rm -f kill.txt; : > hang.out
./prog_dyn kill.txt $N $K img_kill hang > hang.out 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q written hang.out && break; sleep 0.1; done
grep -q written hang.out && ok "hanging run wrote its image" || fail "hanging run: $(cat hang.out)"
kill -9 $pid; wait $pid 2>/dev/null
restart "restart after SIGKILL" img_kill kill.txt

# a thread that cannot be stopped: the checkpoint fails cleanly, nothing written
./prog_dyn thr.txt $N $K img_thr blocker > thr.out 2>&1; rc=$?
[ $rc -eq 3 ] && grep -q '1 of 1 threads did not stop within 2 s (signal [0-9]* blocked?)' thr.out \
    && ok "a thread blocking every signal: refused: $(head -c 150 thr.out)" || { fail "blocker: exit $rc"; show thr.out; }
[ ! -e img_thr ] && ! ls img_thr.tmp.* > /dev/null 2>&1 && ok "blocker: no image, no temporary file" || fail "blocker: an image was left"

# damaged images: clear message, exit status 1, never a crash
bad() { # WHAT FILE REGEX
    "$RESTART" "$2" > bad.out 2>&1; local rc=$?
    [ $rc -eq 1 ] && grep -Eq "$3" bad.out && ok "$1: refused (exit 1): $(head -1 bad.out)" \
        || { fail "$1: exit $rc"; show bad.out; }
}
cp img_dyn flip; printf '\x55' | dd of=flip bs=1 seek=$(( $(stat -c %s flip) / 2 )) conv=notrunc status=none
bad "a flipped byte in the contents" flip 'damaged image: the checksum of its contents does not match'
cp img_dyn hdr; printf '\x07' | dd of=hdr bs=1 seek=40 conv=notrunc status=none
bad "a flipped byte in the header" hdr "damaged image: the header's checksum"
cp img_dyn ver; printf '\x63' | dd of=ver bs=1 seek=8 conv=notrunc status=none
bad "an image of another format version" ver 'image format version 99, this restart program reads version [0-9]+'
cp img_dyn trunc; truncate -s $(( $(stat -c %s trunc) / 3 )) trunc
bad "a truncated image" trunc 'truncated or extended image'
head -c 100 img_dyn > short
bad "an image cut inside its header" short 'shorter than the header'
cp prog_dyn foreign
bad "a program instead of an image" foreign 'not a Kumi process image'
: > empty
bad "an empty file" empty 'empty file'
bad "a missing file" nosuch 'No such file'
# the original run's file and the image must not have been touched by the refusals
cmp -s out_dyn.txt ref.txt && ok "refusals left the program's file alone" || fail "a refused restart changed out_dyn.txt"

# the component: listed by kumi_info in framework ckpt
if [ -x "${KUMI_INFO:-}" ]; then
    "$KUMI_INFO" --parsable > kinfo.out 2>&1
    grep -q '^component:ckpt:image:status:available$' kinfo.out && grep -q '^framework:ckpt:contract:' kinfo.out \
        && ok "kumi_info: framework ckpt, component ckpt/image available" || { fail "kumi_info"; grep ckpt kinfo.out | show /dev/stdin; }
fi

if [ "$failures" -eq 0 ]; then echo "all checks passed"; exit 0; fi
echo "$failures check(s) failed"; exit 1
