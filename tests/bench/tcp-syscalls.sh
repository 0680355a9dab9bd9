#!/bin/bash
# System calls per message over TCP (issue 22 item 3: "no extra system calls
# per message"), the "tcpsys" configuration of run-bench.sh (which runs this
# script; it can also run alone): tests/bench/mpibench.c on 2 ranks over TCP
# (Kumi MPI_COMPONENTS=p2p=self,tcp, Open MPI --mca pml ob1 --mca btl tcp,self,
# MPICH UCX_TLS=tcp,self), each rank under strace -f -c, for four cases: the
# message rate at 8 B (window of 128), bandwidth at 64 KiB and 1 MiB, and
# bi-directional bandwidth at 16 KiB.  Every implementation runs the same
# program with the same iteration counts, so the counts compare directly;
# they do not depend on the load of the host as times do (polls do: they
# are not counted, nor reads that find nothing).  Per case and implementation:
# the calls that write (sendmsg, sendto, write, writev) on rank 0, the calls
# that read (readv, read, recvmsg, recvfrom) and got bytes on rank 1, and the
# messages rank 0 sent.
# Strace slows every process: no times are reported.
#
# Env: top_srcdir, top_builddir, KUMI_BENCH_OUT (default $top_builddir/tests/bench-logs),
#      KUMI_BENCH_QUICK=1 (scale 0.1 instead of 0.5), KUMI_BENCH_TIMEOUT (one launch,
#      default 240 s), KUMI_BENCH_PEERS ("ompi mpich").  One launch per case and
#      implementation (counts barely vary).  Writes $KUMI_BENCH_OUT/tcpsys.txt and
#      appends the target (Kumi's writes per message <= the best peer's) to targets.
set -u
. "$(dirname "$0")/bench-common.sh"
bench_setup tcpsys 1 1
command -v strace > /dev/null || { echo "tcpsys: strace is not installed: skipped"; bench_status ok; exit 0; }
scale=$([ "$quick" = 1 ] && echo 0.1 || echo 0.5)
bench_build mpibench

# Each rank under strace, its summary in $work/st.IMPL.CASE.RANK
cat > "$work/st.sh" <<'WRAP'
#!/bin/bash
r=${KUMI_RANK:-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-x}}}
exec strace -f -c -o "$ST_PREFIX.$r" "$@"
WRAP
chmod +x "$work/st.sh"

declare -A args=([rate8]="-m rate -s 8" [bw64k]="-m bw -s 65536" [bw1m]="-m bw -s 1048576" [bibw16k]="-m bibw -s 16384")
cases="rate8 bw64k bw1m bibw16k"
# messages rank 0 sends in each case (mpibench's iteration counts; warm-up included)
msgs() {
    awk -v c="$1" -v s="$scale" 'function sc(b) { v = b * s; return v < 2 ? 2 : int(v) }
        function cl(v, lo, hi) { return v < lo ? lo : v > hi ? hi : v }
        function win(n) { return int(cl(int(16777216 / n), 4, 64)) }
        function its(n) { return sc(cl(int(33554432 / (n * win(n))), 5, 100)) }
        function tot(w, i) { return w * (i + int(i / 10) + 1) }
        BEGIN { if (c == "rate8") print tot(128, sc(50)); else if (c == "bw64k") print tot(win(65536), its(65536));
                else if (c == "bw1m") print tot(win(1048576), its(1048576)); else print tot(win(16384), its(16384)) }'
}
count() {   # FILE SYSCALLS...: the calls of those names in a strace -c summary
    local f=$1; shift
    awk -v names=" $* " '$1 ~ /^[0-9.]+$/ && index(names, " " $NF " ") { n += $4 } END { print n + 0 }' "$f" 2>/dev/null
}
reads() {   # FILE SYSCALLS...: as count, less those that failed: a read that finds
            # nothing (EAGAIN) is a poll (p2p/tcp reads a lone connection without
            # asking epoll first), and polls are not counted
    local f=$1; shift
    awk -v names=" $* " '$1 ~ /^[0-9.]+$/ && index(names, " " $NF " ") { n += $4 - (NF == 6 ? $5 : 0) } END { print n + 0 }' "$f" 2>/dev/null
}
for c in $cases; do
    for i in "${impls[@]}"; do
        export ST_PREFIX=$work/st.$i.$c
        case $i in
        kumi) MPI_COMPONENTS=p2p=self,tcp bench_launch kumi 2 bind "$work/st.sh" "$work/mpibench.kumi" ${args[$c]} -r 1 -x "$scale" ;;
        ompi) OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self bench_launch ompi 2 bind "$work/st.sh" "$work/mpibench.ompi" ${args[$c]} -r 1 -x "$scale" ;;
        mpich) UCX_TLS=tcp,self MPIR_CVAR_NOLOCAL=1 bench_launch mpich 2 bind "$work/st.sh" "$work/mpibench.mpich" ${args[$c]} -r 1 -x "$scale" ;;
        esac > "$work/out.$i.$c" || echo "tcpsys: $(bench_name "$i") $c failed (see $out/tcpsys.$i.err)"
    done
done
[ -s "$work/st.kumi.rate8.0" ] || { bench_status "runs failed"; exit 1; }
{
    echo "-- system calls over TCP, 2 ranks (strace -c; mpibench -x $scale; rank 0 sends, rank 1 receives)"
    printf "  %-10s %-8s %9s %12s %12s %10s %10s\n" "" case messages "writes r0" "reads r1" "writes/msg" "reads/msg"
    for c in $cases; do
        m=$(msgs $c)
        for i in "${impls[@]}"; do
            w=$(count "$work/st.$i.$c.0" sendmsg sendto write writev)
            r=$(reads "$work/st.$i.$c.1" readv read recvmsg recvfrom)
            [ -s "$work/st.$i.$c.0" ] || { w=-; r=-; }
            echo "$w" > "$work/$i.$c.wpm"
            printf "  %-10s %-8s %9s %12s %12s %10s %10s\n" "$(bench_name "$i")" "$c" "$m" "$w" "$r" \
                "$(awk -v a="$w" -v m="$m" 'BEGIN { if (a ~ /^[0-9]+$/) printf "%.3f", a / m; else print "-" }')" \
                "$(awk -v a="$r" -v m="$m" 'BEGIN { if (a ~ /^[0-9]+$/) printf "%.3f", a / m; else print "-" }')"
        done
    done
    if [ ${#impls[@]} -gt 1 ]; then
        met=0 tot=0
        for c in $cases; do
            tot=$((tot + 1))
            k=$(cat "$work/kumi.$c.wpm"); b=$(bench_best low "$c.wpm")
            awk -v k="$k" -v b="$b" 'BEGIN { exit !(k ~ /^[0-9]+$/ && (b == 0 || k <= b)) }' && met=$((met + 1))
        done
        echo "tcpsys|writes per message on rank 0 <= the best peer's (rate 8 B, bw 64 KiB / 1 MiB, bibw 16 KiB)|$met|$tot" >> "$out/targets"
    fi
} | tee "$out/tcpsys.txt"
bench_status ok
