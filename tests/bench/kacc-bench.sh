#!/bin/bash
# The CPU a non-blocking collective costs (issue 21 item 4: KACC's experiment),
# the "kacc" configuration of run-bench.sh (which runs this script; it can
# also run alone): tests/bench/overlap.c with a computation made of 4x4
# (fine granularity) or 40x40 (coarse) matrix products of doubles, next to
# MPI_Iallreduce (MPI_DOUBLE, MPI_SUM) and MPI_Ibcast (MPI_BYTE) as a tree
# (binomial) and pipelined (chain, 64 KiB segments) at 8 B, 64 KiB and 1 MiB,
# 2 ranks over TCP (KACC's transport; Kumi's uring and kmod engines work on
# sockets), bound one rank per core:
#   Kumi loop     KUMI_BASE_SCHED_ENGINE=loop: MPI_Test after every k products
#   Kumi thread   the progress thread (LibNBC's way)
#   Kumi uring    io_uring operations (where libmpi links liburing)
#   Kumi kmod     the KACC kernel module: where /dev/kumi_kacc exists (this
#                 host's kernel loads no modules: "not loaded here"; the
#                 module runs under QEMU in tests/scripts/kmod_vm.sh)
#   Open MPI      --mca pml ob1 --mca btl tcp,self; LibNBC, ibcast algorithm 2
#                 (binomial) or 3 (chain)
#   MPICH         UCX_TLS=tcp,self MPIR_CVAR_NOLOCAL=1; ibcast sched_binomial or
#                 tsp_ring (64 KiB chunks)
# each with MPI_Test every k products, k in KUMI_BENCH_KACC_K (default
# 0,1,16: 0 = never, the offloaded engines' way); built with each
# implementation's compiler; KUMI_BENCH_REPS interleaved launches (each the
# median of overlap.c's own repetitions), medians.  The compute lasts at
# least KUMI_BENCH_KACC_MIN_US (default 500 us), or as long as the blocking
# operation when that is longer.
# Columns: t_tot (start, compute, MPI_Wait: us), ovl (share of the shorter
# of communication and compute hidden), lost (share of the computation's time
# lost to the communication: the start call, the MPI_Test calls, a progress
# thread or kernel work on the rank's core; the worst rank), cpu (process CPU
# time the communication added, a progress thread included: us), t_done (the
# collective's completion as the ranks see it: the first MPI_Test reporting
# it or MPI_Wait's return: us; with k = 0 at least the compute's length),
# t_nbc (the non-blocking operation alone, start + MPI_Wait: us).
#
# Env: top_srcdir, top_builddir, KUMI_BENCH_OUT (default $top_builddir/tests/bench-logs),
#      KUMI_BENCH_REPS (default 3), KUMI_BENCH_QUICK=1 (1 launch, 3 inner repetitions),
#      KUMI_BENCH_TIMEOUT (one launch, default 240 s), KUMI_BENCH_PEERS ("ompi mpich"),
#      KUMI_BENCH_KACC_SIZES (default 8,65536,1048576), KUMI_BENCH_KACC_K (default 0,1,16),
#      KUMI_BENCH_KACC_KERNELS (default "mm4 mm40"), KUMI_BENCH_KACC_OPS
#      (default "iallreduce ibcast-tree ibcast-pipe"), KUMI_BENCH_KACC_MIN_US (default 500),
#      KUMI_BENCH_KACC_INNER (overlap.c's repetitions per launch, -r: default 7, 3 when quick).
# Appends its targets to $KUMI_BENCH_OUT/targets and writes $KUMI_BENCH_OUT/kacc.kumi.status.
set -u
. "$(dirname "$0")/bench-common.sh"
bench_setup kacc 1 3
sizes=${KUMI_BENCH_KACC_SIZES:-8,65536,1048576}
ks=${KUMI_BENCH_KACC_K:-0,1,16}
kernels=${KUMI_BENCH_KACC_KERNELS:-mm4 mm40}
ops=${KUMI_BENCH_KACC_OPS:-iallreduce ibcast-tree ibcast-pipe}
min_us=${KUMI_BENCH_KACC_MIN_US:-500}
inner=${KUMI_BENCH_KACC_INNER:-$([ "$quick" = 1 ] && echo 3 || echo 7)}
bench_build overlap

# Kumi's engines: one "implementation" each
peers_built=("${impls[@]:1}")
impls=(kumi-loop kumi-thread)
kmod_note=""
if ldd "$top_builddir/framework/.libs/libmpi.so" 2> /dev/null | grep -q liburing; then impls+=(kumi-uring)
else echo "kacc: the uring engine is not built (no liburing): no uring column"; fi
if [ -c /dev/kumi_kacc ]; then impls+=(kumi-kmod)
else kmod_note="Kumi kmod: not loaded here (no /dev/kumi_kacc: this host's kernel loads no modules; tests/scripts/kmod_vm.sh runs the module under QEMU)"; fi
impls+=("${peers_built[@]}")
bench_labels=([kumi-loop]="Kumi loop" [kumi-thread]="Kumi thread" [kumi-uring]="Kumi uring" [kumi-kmod]="Kumi kmod")

# bench_one IMPL KERNEL.OP ROUND: one launch over TCP, bound one rank per core;
# prints overlap.c's "ovl" lines with the operation renamed OP
bench_one() {
    local impl=$1 kernel=${2%%.*} op=${2#*.} prog=overlap.$1 oop e=()
    oop=${op%%-*}
    case $impl in
    kumi-*) prog=overlap.kumi
            e=(MPI_COMPONENTS="p2p=self,tcp" KUMI_BASE_SCHED_ENGINE="${impl#kumi-}")
            case $op in ibcast-tree) e+=(KUMI_COLL_TUNED_BCAST_ALGORITHM=binomial) ;;
                        ibcast-pipe) e+=(KUMI_COLL_TUNED_BCAST_ALGORITHM=pipeline KUMI_COLL_TUNED_SEGMENT_SIZE=65536) ;; esac ;;
    ompi)   e=(OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self)
            case $op in ibcast-tree) e+=(OMPI_MCA_coll_libnbc_ibcast_algorithm=2) ;;
                        ibcast-pipe) e+=(OMPI_MCA_coll_libnbc_ibcast_algorithm=3) ;; esac ;;
    mpich)  e=(UCX_TLS=tcp,self MPIR_CVAR_NOLOCAL=1)
            case $op in ibcast-tree) e+=(MPIR_CVAR_IBCAST_INTRA_ALGORITHM=sched_binomial) ;;
                        ibcast-pipe) e+=(MPIR_CVAR_IBCAST_INTRA_ALGORITHM=tsp_ring MPIR_CVAR_IBCAST_RING_CHUNK_SIZE=65536) ;; esac ;;
    esac
    ( export "${e[@]}"; bench_launch "$impl" 2 bind "$work/$prog" -s "$sizes" -k "$ks" -r "$inner" -c "$kernel" -o "$oop" -t "$min_us" ) |
        awk -v op="$op" '$1 == "ovl" && NF == 12 { $2 = op; print; ok = 1 } END { exit !ok }'
}
cases=()
for kernel in $kernels; do for op in $ops; do cases+=("$kernel.$op"); done; done
bench_rounds "${cases[@]}"

# merged IMPL CASE: per op, size and k the median over the launches of every column
merged() {
    [ -s "$work/$1.$2" ] || return 0
    awk '{ k = $2 " " $3 " " $4
           if (!(k in cnt)) order[++nk] = k
           c = ++cnt[k]
           for (j = 5; j <= NF; j++) val[k, j, c] = $j
           nf = NF }
         END {
           for (i = 1; i <= nk; i++) {
               k = order[i]; c = cnt[k]; line = k
               for (j = 5; j <= nf; j++) {
                   for (a = 2; a <= c; a++)
                       for (b = a; b > 1 && val[k, j, b - 1] + 0 > val[k, j, b] + 0; b--) {
                           t = val[k, j, b]; val[k, j, b] = val[k, j, b - 1]; val[k, j, b - 1] = t
                       }
                   line = line " " val[k, j, int((c + 1) / 2)]
               }
               print line
           }
         }' "$work/$1.$2"
}
[ -n "$(find "$work" -path "$work/kumi-loop.*" -type f -size +0 2>/dev/null)" ] || { bench_status "runs failed"; exit 1; }
ok=1
{
    echo "-- KACC: the CPU a non-blocking collective takes from the computation; 2 ranks over TCP, one per core;"
    echo "   compute >= $min_us us of matrix products; MPI_Test every k products (0: never); medians of $reps launches"
    echo "   t_tot, t_done, t_nbc, cpu: us; ovl, lost: %; see tests/bench/kacc-bench.sh for the columns"
    [ -n "$kmod_note" ] && echo "   $kmod_note"
    for c in "${cases[@]}"; do
        kernel=${c%%.*} op=${c#*.}
        echo
        echo "-- kacc: $op, ${kernel/mm/} x ${kernel/mm/} products"
        printf "  %8s  %-12s %5s %9s %9s %5s %5s %8s %9s %8s\n" bytes "" k t_cmp t_tot ovl lost cpu t_done t_nbc
        for sz in ${sizes//,/ }; do
            for i in "${impls[@]}"; do
                m=$(merged "$i" "$c")
                if [ -z "$m" ]; then
                    printf "  %8s  %-12s %5s %9s %9s\n" "$sz" "$(bench_name "$i")" - - failed
                    [ "${i%%-*}" = kumi ] && ok=0
                    continue
                fi
                echo "$m" | awk -v sz="$sz" -v l="$(bench_name "$i")" '$2 == sz {
                    printf "  %8s  %-12s %5s %9.4g %9.4g %5.0f %5.1f %8.4g %9.4g %8.4g\n", sz, l, $3, $5, $6, $7, $9, $8, $10, $11 }'
                echo "$m" | awk -v sz="$sz" '$2 == sz' > "$work/med.$i.${kernel}.$op.$sz"
            done
        done
    done
    # targets (issue 21): at the fine granularity, with k = 0, the uring (and kmod)
    # engine's computation loses less than the thread engine's, and the collective
    # completes no later than with the thread engine
    for e in uring kmod; do
        for op in $ops; do
            for sz in ${sizes//,/ }; do
                t=$work/med.kumi-thread.mm4.$op.$sz x=$work/med.kumi-$e.mm4.$op.$sz
                [ -s "$t" ] && [ -s "$x" ] || continue
                met=$(awk 'FNR == 1 { f++ } $3 == 0 { l[f] = $9; d[f] = $10 }
                           END { print (l[2] < l[1] || l[2] == 0) && d[2] <= d[1] ? 1 : 0 }' "$t" "$x")
                bench_target "$e engine, $op $sz B, 4x4 products, k=0: less CPU lost and done no later than thread" "$met"
            done
        done
    done
} | tee "$out/kacc.txt"
[ $ok = 1 ] && bench_status ok || bench_status "runs failed"
