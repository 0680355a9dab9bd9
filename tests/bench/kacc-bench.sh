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
#   Kumi uring    io_uring operations (where libmpi links liburing), with the completion thread
#   Kumi uring-nt the same without it (kumi_base_sched_uring_thread=0): KUMI_BENCH_KACC_URING0=1
#                 on the host, kumi-uring0 in KUMI_BENCH_KACCVM_IMPLS
#   Kumi uring-nh the thread taking over even on a busy host (kumi_base_sched_uring_hold=0):
#                 KUMI_BENCH_KACC_URINGNH=1 on the host, kumi-uringnh in KUMI_BENCH_KACCVM_IMPLS
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
# it or MPI_Wait's return: us; with k = 0 at least the compute's length), d/cmp
# (t_done / t_cmp of the same launch, then the median: the targets compare this, since
# the compute's length itself varies between launches), t_nbc (the non-blocking operation alone, start + MPI_Wait: us).
#
# Env: top_srcdir, top_builddir, KUMI_BENCH_OUT (default $top_builddir/tests/bench-logs),
#      KUMI_BENCH_REPS (default 3), KUMI_BENCH_QUICK=1 (1 launch, 3 inner repetitions),
#      KUMI_BENCH_TIMEOUT (one launch, default 240 s), KUMI_BENCH_PEERS ("ompi mpich"),
#      KUMI_BENCH_KACC_SIZES (default 8,65536,1048576), KUMI_BENCH_KACC_K (default 0,1,16),
#      KUMI_BENCH_KACC_KERNELS (default "mm4 mm40"), KUMI_BENCH_KACC_OPS
#      (default "iallreduce ibcast-tree ibcast-pipe"), KUMI_BENCH_KACC_ENGINES (Kumi's engines on
#      the host, default "loop thread uring"; "thread uring": the uring-vs-thread targets alone),
#      KUMI_BENCH_KACC_MIN_US (default 500),
#      KUMI_BENCH_KACC_INNER (overlap.c's repetitions per launch, -r: default 7, 3 when quick).
#
# "kacc-bench.sh vm" is the kaccvm configuration: the same launches inside a QEMU (TCG)
# VM with KUMI_BENCH_KACCVM_SMP vCPUs (default 2: one per rank) booting Debian's kernel
# with the KACC module, one boot
# (tests/scripts/kmod_vm.sh with KUMI_KMOD_VM_BENCH_ONLY=1; skipped with the reason
# where QEMU, the kernel image or its headers are missing), of KUMI_BENCH_KACCVM_IMPLS
# (default "kumi-loop kumi-thread kumi-uring kumi-kmod"; kumi-kmodrank is the kmod engine
# with the module's steer=0: progress work always on the rank's CPU, where kumi-kmod has
# steer=1: on a spare CPU while the rank computes, when the VM has more vCPUs than ranks;
# kumi-kmodnr is the kmod engine registering every non-blocking collective anew
# (kumi_base_sched_kmod_reuse=0, where kumi-kmod reuses the registration of the one before);
# kumi-kmodnw the kmod engine whose waiting ranks never run the module's work themselves (a
# worker on their CPU always: kumi_base_sched_kmod_wait_runs=0);
# kumi-kmod copies directly between the ranks' pages over loopback, kumi-kmodsock through the
# sockets, see kmod_direct below; IMPL+bN: IMPL with the wire's tbf burst N bytes for its launches
# (the link's default: 1 ms of the rate, at least 64 KiB); kumi-kmodb: the kmod engine with the module parameters of
# KUMI_BENCH_KACCVM_B_PARAMS, against kumi-kmod's KUMI_BENCH_KACCVM_A_PARAMS: an A/B in one boot): loop (MPI_Test
# every k products, k in KUMI_BENCH_KACC_K), thread, uring and kmod engines (k in
# KUMI_BENCH_KACCVM_K, default 0), KUMI_BENCH_REPS rounds (default 1) of every case
# and engine in turn (one launch for the allreduce and a broadcast), overlap.c's repetitions 3 (1 when quick), operations
# "iallreduce ibcast-tree" by default, the compute as long for every engine
# (KUMI_BENCH_KACCVM_CMP_US, per size, default 5000,20000,150000 us: overlap.c -T;
# a blocking 8 B allreduce takes 1-3 us on every engine on a quiet host, but 0.03-5 ms
# on every engine, loop included, with or without coll/sm, when the host is loaded:
# the vCPU threads wait for the host's scheduler); then the module's counters (schedule runs done
# in the kernel, node steps, node steps left to the ranks: the per-node fall-back, the
# work items' microseconds on the ranks' own CPUs and on others) per engine and
# /proc/kumi_kacc at the end.  TCG runs the guest 10-50 times slower
# than the host and the host's load shows in it: the VM's numbers compare the
# engines with each other, not with the host's.  KUMI_BENCH_KACCVM_TIMEOUT: the whole
# VM (default 1500 s); KUMI_BENCH_TIMEOUT: one launch in it.  The console and the
# VM script's output stay in $KUMI_BENCH_OUT/CFG.console.log and CFG.vm.log (CFG kaccvm,
# kaccwire); KUMI_BENCH_KACCVM_CONSOLE=FILE makes the tables from such a console log, no VM.
# KUMI_BENCH_KACCVM_QEMU_OPTS: more QEMU options (kmod_vm.sh's KUMI_KMOD_VM_QEMU_OPTS).
# KUMI_BENCH_KACCVM_ENV="VAR=VALUE ...": more environment for every launch in the VM (e.g. the
# progress engine's KUMI_BASE_PROGRESS_SPIN=0 ...: blocking waits that sleep at once).
# KUMI_BENCH_KACCVM_LINK=RATE (tc's form: 1gbit, 200mbit; empty, the default: loopback)
# puts the 2 ranks on a wire, as KACC's were: two network namespaces of the VM joined by a
# veth pair, each end sending through a tbf qdisc of RATE, one rank in each (a host of its
# own for Kumi), mpiexec starting them through a launch agent (kmod_vm.sh KUMI_KMOD_VM_LINK).
# Over loopback every byte is the vCPUs' work (copies, the TCP stack), which nothing hides;
# on the wire the transfer also takes time during which the computation can run.  tbf's burst:
# 1 ms of RATE, at least 96 KiB (a whole 64 KiB TSO packet passes; a smaller burst makes tbf cut
# each into MSS-sized packets in software, NIC work that cost the vCPUs 2-4 times the transfer's
# own CPU: tests/kmod/vm-init.sh), or KUMI_BENCH_KACCVM_BURST bytes.
# "kacc-bench.sh wire" is the kaccwire configuration: kaccvm with the ranks on a wire of
# KUMI_BENCH_KACCWIRE_RATE (default 300mbit; KUMI_BENCH_KACCVM_LINK, when set, wins).  The
# kmod engine's overlap target (>= 50 % for the 1 MiB allreduce) is the wire's: over loopback
# both vCPUs compute and the communication is their own work, with no CPU left to hide it on
# (1 MiB MPI_Iallreduce alone, kmod, loopback, direct copies: t_nbc 3.1-3.5 ms of which
# 2.5 ms the module's work on the rank's own vCPU, kacc-timeline.py).  Why 300 Mbit/s: the
# VM does the communication's CPU work about 30 times slower than the host (the loop engine's
# 1 MiB MPI_Iallreduce alone over loopback: 6.1 ms in the VM, 0.19 ms on the host; the table
# prints the factor of the run when kacc and kaccvm ran before), so to the vCPUs 300 Mbit/s
# is what 10 Gbit/s Ethernet is to the host's CPUs; at 1gbit (30 Gbit/s to the host's CPUs)
# the TCP stack's own work in TCG (about 10 ms of vCPU time for the 1 MiB allreduce) is longer
# than the transfer, and no engine overlaps anything.
# Appends its targets to $KUMI_BENCH_OUT/targets and writes $KUMI_BENCH_OUT/kacc.kumi.status
# (kaccvm.kumi.status, kaccwire.kumi.status).
set -u
. "$(dirname "$0")/bench-common.sh"
case ${1:-} in
vm)   bench_setup kaccvm 1 1; vmmode=1; vm_link=${KUMI_BENCH_KACCVM_LINK:-} ;;
wire) bench_setup kaccwire 1 1; vmmode=1; vm_link=${KUMI_BENCH_KACCVM_LINK:-${KUMI_BENCH_KACCWIRE_RATE:-300mbit}} ;;
*)    bench_setup kacc 1 3; vmmode=0; vm_link="" ;;
esac
sizes=${KUMI_BENCH_KACC_SIZES:-8,65536,1048576}
ks=${KUMI_BENCH_KACC_K:-0,1,16}
kernels=${KUMI_BENCH_KACC_KERNELS:-mm4 mm40}
if [ $vmmode = 1 ]; then ops=${KUMI_BENCH_KACC_OPS:-iallreduce ibcast-tree}
else ops=${KUMI_BENCH_KACC_OPS:-iallreduce ibcast-tree ibcast-pipe}; fi
min_us=${KUMI_BENCH_KACC_MIN_US:-500}
if [ $vmmode = 1 ]; then inner=${KUMI_BENCH_KACC_INNER:-$([ "$quick" = 1 ] && echo 1 || echo 3)}
else inner=${KUMI_BENCH_KACC_INNER:-$([ "$quick" = 1 ] && echo 3 || echo 7)}; fi
bench_labels=([kumi-loop]="Kumi loop" [kumi-thread]="Kumi thread" [kumi-uring]="Kumi uring" [kumi-kmod]="Kumi kmod"
              [kumi-kmodrank]="Kumi kmod@rk" [kumi-kmodsock]="Kumi kmod/sk" [kumi-kmodb]="Kumi kmod B" [kumi-kmodnr]="Kumi kmod-nr" [kumi-kmodnw]="Kumi kmod-nw"
              [kumi-uring0]="Kumi uring-nt" [kumi-uringnh]="Kumi uring-nh")
# the kmod engine's direct copies (kmod/kacc_direct.c: a pair of ranks on one kernel, one copy
# between their pinned pages, no socket): on over loopback; off on a wire (KUMI_BENCH_KACCVM_LINK),
# where the two namespaces stand for two hosts (they share the VM's kernel: direct copies would
# skip the wire).  KUMI_BENCH_KACCVM_DIRECT=0|1 overrides; kumi-kmodsock: always the sockets
kmod_direct=${KUMI_BENCH_KACCVM_DIRECT:-$([ -n "$vm_link" ] && echo 0 || echo 1)}
# an A/B of the module's parameters in one boot: kumi-kmod's launches set KUMI_BENCH_KACCVM_A_PARAMS,
# kumi-kmodb's KUMI_BENCH_KACCVM_B_PARAMS ("NAME=VALUE ...", /sys/module/kumi_kacc/parameters/NAME);
# KUMI_BENCH_KACCVM_TRACE=1: the module's timeline of each kmod launch in the console log
# (kmod/kacc_trace.c; tests/bench/kacc-timeline.py reads it)
kmod_a="" kmod_b=""
for kv in ${KUMI_BENCH_KACCVM_A_PARAMS:-}; do kmod_a+=" KACC_P_$kv"; done
for kv in ${KUMI_BENCH_KACCVM_B_PARAMS:-}; do kmod_b+=" KACC_P_$kv"; done
[ "${KUMI_BENCH_KACCVM_TRACE:-0}" = 1 ] && { kmod_a+=" KACC_TRACE=1"; kmod_b+=" KACC_TRACE=1"; }
kmod_note=""
where="2 ranks over TCP, one per core"

# kumi_env IMPL OP: the environment of a Kumi engine's launch for OP
kumi_env() {
    # IMPL+bN (kaccvm on a wire): IMPL with the link's tbf burst N bytes for its launches
    case $1 in *+b*) echo "KACC_LINK_BURST=${1##*+b}"; set -- "${1%+b*}" "$2" ;; esac
    case $1 in
    kumi-kmod)     echo MPI_COMPONENTS=p2p=self,tcp KUMI_BASE_SCHED_ENGINE=kmod KACC_STEER=1 KUMI_BASE_SCHED_KMOD_DIRECT=$kmod_direct $kmod_a ;;
    kumi-kmodb)    echo MPI_COMPONENTS=p2p=self,tcp KUMI_BASE_SCHED_ENGINE=kmod KACC_STEER=1 KUMI_BASE_SCHED_KMOD_DIRECT=$kmod_direct $kmod_b ;;
    kumi-kmodsock) echo MPI_COMPONENTS=p2p=self,tcp KUMI_BASE_SCHED_ENGINE=kmod KACC_STEER=1 KUMI_BASE_SCHED_KMOD_DIRECT=0 ;;
    kumi-kmodrank) echo MPI_COMPONENTS=p2p=self,tcp KUMI_BASE_SCHED_ENGINE=kmod KACC_STEER=0 KUMI_BASE_SCHED_KMOD_DIRECT=$kmod_direct ;;
    kumi-kmodnr)   echo MPI_COMPONENTS=p2p=self,tcp KUMI_BASE_SCHED_ENGINE=kmod KACC_STEER=1 KUMI_BASE_SCHED_KMOD_DIRECT=$kmod_direct KUMI_BASE_SCHED_KMOD_REUSE=0 ;;
    kumi-kmodnw)   echo MPI_COMPONENTS=p2p=self,tcp KUMI_BASE_SCHED_ENGINE=kmod KACC_STEER=1 KUMI_BASE_SCHED_KMOD_DIRECT=$kmod_direct KUMI_BASE_SCHED_KMOD_WAIT_RUNS=0 ;;
    kumi-uring0)   echo MPI_COMPONENTS=p2p=self,tcp KUMI_BASE_SCHED_ENGINE=uring KUMI_BASE_SCHED_URING_THREAD=0 ;;
    kumi-uringnh)  echo MPI_COMPONENTS=p2p=self,tcp KUMI_BASE_SCHED_ENGINE=uring KUMI_BASE_SCHED_URING_HOLD=0 ;;
    *)             echo MPI_COMPONENTS=p2p=self,tcp KUMI_BASE_SCHED_ENGINE=${1#kumi-} ;;
    esac
    case $2 in ibcast-tree) echo KUMI_COLL_TUNED_BCAST_ALGORITHM=binomial ;;
               ibcast-pipe) echo KUMI_COLL_TUNED_BCAST_ALGORITHM=pipeline KUMI_COLL_TUNED_SEGMENT_SIZE=65536 ;; esac
}

# bench_one IMPL KERNEL.OP ROUND: one launch over TCP, bound one rank per core;
# prints overlap.c's "ovl" lines with the operation renamed OP
bench_one() {
    local impl=$1 kernel=${2%%.*} op=${2#*.} prog=overlap.$1 oop e=()
    oop=${op%%-*}
    case $impl in
    kumi-*) prog=overlap.kumi
            read -r -a e <<< "$(kumi_env "$impl" "$op" | tr '\n' ' ')" ;;
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
if [ $bench_cfg = kacc ]; then
    bench_build overlap
    # Kumi's engines: one "implementation" each
    peers_built=("${impls[@]:1}")
    engines=" ${KUMI_BENCH_KACC_ENGINES:-loop thread uring} "
    impls=()
    for e in loop thread; do [[ $engines = *" $e "* ]] && impls+=(kumi-$e); done
    if ldd "$top_builddir/framework/.libs/libmpi.so" 2> /dev/null | grep -q liburing; then
        [[ $engines = *" uring "* ]] && impls+=(kumi-uring)
        [ "${KUMI_BENCH_KACC_URING0:-0}" = 1 ] && impls+=(kumi-uring0)
        [ "${KUMI_BENCH_KACC_URINGNH:-0}" = 1 ] && impls+=(kumi-uringnh)
    else echo "kacc: the uring engine is not built (no liburing): no uring column"; fi
    if [ -c /dev/kumi_kacc ]; then impls+=(kumi-kmod)
    else kmod_note="Kumi kmod: not loaded here (no /dev/kumi_kacc: this host's kernel loads no modules; configuration kaccvm runs it in a VM)"; fi
    impls+=("${peers_built[@]}")
    bench_rounds "${cases[@]}"
else
    # kaccvm: the launches in the VM, $reps rounds of every case and engine in turn, one boot
    # (tests/scripts/kmod_vm.sh); their "ovl" lines into $work/IMPL.CASE as bench_rounds writes them
    read -r -a impls <<< "${KUMI_BENCH_KACCVM_IMPLS:-kumi-loop kumi-thread kumi-uring kumi-kmod}"
    vm_smp=${KUMI_BENCH_KACCVM_SMP:-2}
    vm_ks=${KUMI_BENCH_KACCVM_K:-0}     # the offloaded engines' test intervals (loop: $ks)
    vm_cmp=${KUMI_BENCH_KACCVM_CMP_US:-5000,20000,150000}   # the compute's length per size, every engine alike
    # one launch runs the allreduce and one broadcast (its environment chooses the broadcast's
    # algorithm): the VM starts a job in about 10 s
    groups=()
    for op in $ops; do
        case $op in
        iallreduce) g=${groups[0]:-}; groups[0]=${g:+$g,}$op ;;
        *) case " ${groups[*]} " in *" iallreduce "*) groups[0]=iallreduce,$op ;; *) groups+=("$op") ;; esac ;;
        esac
    done
    for ((r = 1; r <= reps; r++)); do
        for kernel in $kernels; do
            for g in "${groups[@]}"; do
                oops=$(echo "$g" | sed 's/-[a-z]*//g')
                b=$(echo "$g" | tr ',' '\n' | grep ibcast); b=${b:-iallreduce}
                for i in "${impls[@]}"; do
                    k=$vm_ks; [ "${i%+b*}" = kumi-loop ] && k=$ks
                    echo "$i $kernel.$g $(kumi_env $i "$b" | tr '\n' ' ')${KUMI_BENCH_KACCVM_ENV:+$KUMI_BENCH_KACCVM_ENV }-- -s $sizes -k $k -r $inner -c $kernel -o $oops -T $vm_cmp"
                done
            done
        done
    done > "$work/launches"
    vmlimit=${KUMI_BENCH_KACCVM_TIMEOUT:-1500}
    t0=$(date +%s)
    if [ -n "${KUMI_BENCH_KACCVM_CONSOLE:-}" ]; then     # the tables of an earlier run's console log
        [ "$KUMI_BENCH_KACCVM_CONSOLE" -ef "$out/$bench_cfg.console.log" ] || cp "$KUMI_BENCH_KACCVM_CONSOLE" "$out/$bench_cfg.console.log"
        rc=0
    else
        echo "$bench_cfg: $(wc -l < "$work/launches") launches of overlap.c in a QEMU (TCG) VM with $vm_smp vCPUs (limit $vmlimit s)"
        KUMI_KMOD_VM_QEMU_OPTS=${KUMI_BENCH_KACCVM_QEMU_OPTS:-} \
        KUMI_TEST_LONG=1 KUMI_KMOD_VM_BENCH_ONLY=1 KUMI_KMOD_VM_LINK=$vm_link KUMI_KMOD_VM_LINK_BURST=${KUMI_BENCH_KACCVM_BURST:-} KUMI_KMOD_VM_BENCH_FILE="$work/launches" KUMI_KMOD_VM_SMP=$vm_smp \
            KUMI_KMOD_VM_CONSOLE="$out/$bench_cfg.console.log" KUMI_KMOD_VM_TIMEOUT=$vmlimit KUMI_KMOD_VM_BENCH_TIMEOUT=$limit \
            top_srcdir=$top_srcdir top_builddir=$top_builddir bash "$top_srcdir/tests/scripts/kmod_vm.sh" > "$out/$bench_cfg.vm.log" 2>&1
        rc=$?
    fi
    vm_secs=$(($(date +%s) - t0))
    if [ $rc = 77 ]; then
        echo "$bench_cfg: skipped: $(sed -n 's/^SKIP: //p' "$out/$bench_cfg.vm.log" | head -1)"
        bench_status "skipped: $(sed -n 's/^SKIP: //p' "$out/$bench_cfg.vm.log" | head -1)"
        exit 0
    fi
    [ $rc = 0 ] || { echo "$bench_cfg: the VM run failed (exit $rc; see $out/$bench_cfg.vm.log, $out/$bench_cfg.console.log)"; tail -5 "$out/$bench_cfg.vm.log"; }
    if [ ! -s "$out/$bench_cfg.console.log" ]; then    # nothing to make tables of
        bench_status "runs failed: the VM left no console log (exit $rc)"
        exit 0
    fi
    # "KMODVM-BENCH: IMPL KERNEL.OP,OP ovl OP ...": into $work/IMPL.KERNEL.OP, OP the case's name
    awk '$1 == "KMODVM-BENCH:" && $4 == "ovl" && NF == 15 {
             kernel = $3; sub(/\..*/, "", kernel); g = $3; sub(/^[^.]*\./, "", g); n = split(g, o, ",")
             for (j = 1; j <= n; j++) { b = o[j]; sub(/-.*/, "", b); if (b == $5) op = o[j] }
             $5 = op; line = $4; for (j = 5; j <= NF; j++) line = line " " $j; print line >> (w "/" $2 "." kernel "." op) }' \
        w="$work" "$out/$bench_cfg.console.log"
    kver=$(sed -n 's/.*KMODVM: kernel \([^,]*\),.*/\1/p' "$out/$bench_cfg.console.log" | head -1)
    ncpu=$(sed -n 's/.*KMODVM: kernel [^,]*, \([0-9]*\) CPUs.*/\1/p' "$out/$bench_cfg.console.log" | head -1)
    wire=$(sed -n 's/.*KMODVM: bench: link \([^:]*\):.*/\1/p' "$out/$bench_cfg.console.log" | head -1)
    wburst=$(sed -n 's/.*KMODVM: bench: link [^:]*:.*tbf burst \([0-9]*\) B.*/\1/p' "$out/$bench_cfg.console.log" | head -1)
    onwire=0 wrate=$wire; [ -n "$wire" ] && onwire=1    # wrate: the link's rate (tc's form)
    if [ -n "$wire" ]; then wire="a veth pair between two network namespaces, tbf $wire each way${wburst:+, burst $wburst B}"
    elif grep -q 'KMODVM: FAIL bench-link' "$out/$bench_cfg.console.log"; then wire="loopback: THE LINK WAS NOT SET UP"
    else wire=loopback; fi
    case " ${impls[*]} " in *" kumi-kmod "*|*" kumi-kmodrank "*|*" kumi-kmodb "*|*" kumi-kmodnr "*|*" kumi-kmodnw "*)
        if [ "$kmod_direct" = 1 ]; then kmod_note="Kumi kmod: direct copies between the ranks' pinned pages (the pair shares the VM's kernel; no socket, not the wire); see direct_MB"
        else kmod_note="Kumi kmod: through the pair's sockets (direct copies off: KUMI_BASE_SCHED_KMOD_DIRECT=0)"; fi ;;
    esac
    where="2 ranks over TCP ($wire) in a QEMU TCG VM, ${ncpu:-$vm_smp} vCPUs, one rank per vCPU, Linux $kver; $(sed -n 's/^VM: \([0-9]*\) s.*/\1/p' "$out/$bench_cfg.vm.log" 2> /dev/null) s in the VM, $vm_secs s in all${KUMI_BENCH_KACCVM_QEMU_OPTS:+; QEMU $KUMI_BENCH_KACCVM_QEMU_OPTS}"
fi

# merged IMPL CASE: per op, size and k the median over the launches of every column
merged() {
    [ -s "$work/$1.$2" ] || return 0
    awk '{ k = $2 " " $3 " " $4
           $(NF + 1) = $6 > 0 ? $11 / $6 : 0      # t_done / t_cmp of this launch
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
[ -n "$(find "$work" -path "$work/kumi-*.*" -type f -size +0 2>/dev/null)" ] || { bench_status "runs failed"; exit 1; }
{
    echo "-- KACC: the CPU a non-blocking collective takes from the computation; $where;"
    if [ $vmmode = 1 ]; then echo "   compute of matrix products: $vm_cmp us (per size, the same for every engine); MPI_Test every k products (0: never); medians of $reps launches"
    else echo "   compute >= $min_us us of matrix products; MPI_Test every k products (0: never); medians of $reps launches"; fi
    echo "   t_tot, t_done, t_nbc, cpu: us; ovl, lost: %; see tests/bench/kacc-bench.sh for the columns"
    [ -n "$kmod_note" ] && echo "   $kmod_note"
    for c in "${cases[@]}"; do
        kernel=${c%%.*} op=${c#*.}
        echo
        echo "-- $bench_cfg: $op, ${kernel/mm/} x ${kernel/mm/} products"
        printf "  %8s  %-12s %5s %9s %9s %5s %5s %8s %9s %6s %8s\n" bytes "" k t_cmp t_tot ovl lost cpu t_done d/cmp t_nbc
        for sz in ${sizes//,/ }; do
            for i in "${impls[@]}"; do
                m=$(merged "$i" "$c")
                if [ -z "$m" ]; then
                    printf "  %8s  %-12s %5s %9s %9s\n" "$sz" "$(bench_name "$i")" - - failed
                    [ "${i%%-*}" = kumi ] && touch "$work/failed"
                    continue
                fi
                echo "$m" | awk -v sz="$sz" -v l="$(bench_name "$i")" '$2 == sz {
                    printf "  %8s  %-12s %5s %9.4g %9.4g %5.0f %5.1f %8.4g %9.4g %6.3f %8.4g\n", sz, l, $3, $5, $6, $7, $9, $8, $10, $12, $11 }'
                echo "$m" | awk -v sz="$sz" '$2 == sz' > "$work/med.$i.${kernel}.$op.$sz"
            done
        done
    done
    # targets (issue 21): at the fine granularity, with k = 0, the uring (and kmod)
    # engine's computation loses less than the thread engine's, and the collective
    # completes no later than with the thread engine: t_done against the compute of the same
    # launch (d/cmp, the median over the launches of t_done / t_cmp), since the compute's own
    # length varies between launches (in the VM by up to 8 %) and t_done includes it at k = 0
    for e in uring kmod; do
        for op in $ops; do
            for sz in ${sizes//,/ }; do
                t=$work/med.kumi-thread.mm4.$op.$sz x=$work/med.kumi-$e.mm4.$op.$sz
                [ -s "$t" ] && [ -s "$x" ] || continue
                met=$(awk 'FNR == 1 { f++ } $3 == 0 { l[f] = $9; d[f] = $12 }
                           END { print (l[2] < l[1] || l[2] == 0) && d[2] <= d[1] ? 1 : 0 }' "$t" "$x")
                bench_target "$e engine, $op $sz B, 4x4 products, k=0: less CPU lost and done no later than thread (t_done / t_cmp)" "$met"
            done
        done
    done
    if [ $vmmode = 1 ]; then
        # in the VM, the kmod engine hides at least half of the 1 MiB allreduce (k = 0).  The
        # blocking operation that ovl compares with takes different times on different engines
        # in the VM, so the target asks the same of the overlap against the engine's own
        # non-blocking operation alone, t_nbc: (t_nbc + t_cmp - t_tot) / min(t_nbc, t_cmp)
        echo
        for kernel in $kernels; do
            for i in "${impls[@]}"; do
                x=$work/med.$i.$kernel.iallreduce.1048576
                [ -s "$x" ] && awk -v l="$(bench_name "$i")" -v c="$kernel" '$3 == 0 {
                    m = $5 < $11 ? $5 : $11; o = m > 0 ? ($11 + $5 - $6) / m * 100 : 0; o = o < 0 ? 0 : o > 100 ? 100 : o
                    printf "   %s, iallreduce 1 MiB, %s, k=0: overlap %.0f %% against t_blk, %.0f %% against t_nbc\n", l, c, $7, o }' "$x"
            done
            x=$work/med.kumi-kmod.$kernel.iallreduce.1048576
            [ -s "$x" ] || continue
            if [ $onwire = 0 ]; then        # kaccwire without its wire: the target not measured
                [ $bench_cfg = kaccwire ] && bench_target "kmod engine, iallreduce 1 MiB, ${kernel/mm/}x${kernel/mm/} products, k=0, on a wire: overlap >= 50 % (THE LINK WAS NOT SET UP)" 0
                continue
            fi
            bench_target "kmod engine, iallreduce 1 MiB, ${kernel/mm/}x${kernel/mm/} products, k=0, on a $wrate wire: overlap >= 50 % (against t_blk and t_nbc)" \
                "$(awk '$3 == 0 { m = $5 < $11 ? $5 : $11; o = m > 0 ? ($11 + $5 - $6) / m * 100 : 0; ok = $7 >= 50 && o >= 50 }
                        END { print ok + 0 }' "$x")"
        done
        if [ $onwire = 0 ] && [ $bench_cfg = kaccwire ]; then
            echo "   THE LINK WAS NOT SET UP (see $out/$bench_cfg.console.log): the ranks talked over loopback, no overlap on a wire was measured"
        elif [ $onwire = 0 ]; then
            # over loopback the two vCPUs both compute and the communication is their own work
            # (the module's copies and reductions, the TCP stack): no CPU is left for it to
            # overlap with, so the target is the wire's (configuration kaccwire)
            echo "   over loopback the communication is the computing vCPUs' own work (copies, reductions, the TCP" \
                 "stack: nothing else runs it), so it cannot hide behind the computation; the overlap target is" \
                 "measured on a wire, configuration kaccwire"
        else
            # what the wire stands for: the VM runs this work many times slower than the host, so a
            # wire of R in it has the ratio of wire to CPU speed of a much faster one on the host:
            # the factor, when this run also measured the host (kacc) and the VM's loopback (kaccvm),
            # is the loop engine's 1 MiB MPI_Iallreduce alone (t_nbc, loopback) in the VM over the host
            t_host=$(awk '/^-- kacc: iallreduce, 4 x 4/ { s = 1; next } /^-- / { s = 0 }
                          s && $1 == 1048576 && $2 == "Kumi" && $3 == "loop" && $4 == 0 { print $NF; exit }' "$out/kacc.txt" 2> /dev/null)
            t_vm=$(awk '/^-- kaccvm: iallreduce, 4 x 4/ { s = 1; next } /^-- / { s = 0 }
                        s && $1 == 1048576 && $2 == "Kumi" && $3 == "loop" && $4 == 0 { print $NF; exit }' "$out/kaccvm.txt" 2> /dev/null)
            if [ -n "$t_host" ] && [ -n "$t_vm" ]; then
                awk -v h="$t_host" -v v="$t_vm" -v r="$wrate" 'BEGIN {
                    f = h > 0 ? v / h : 0; n = r + 0; u = tolower(r); sub(/^[0-9.]*/, "", u)
                    m = u == "gbit" ? 1e9 : u == "mbit" ? 1e6 : u == "kbit" ? 1e3 : u == "bit" ? 1 : 0
                    printf "   the wire: the loop engine'"'"'s 1 MiB MPI_Iallreduce alone over loopback took %.4g us in the VM (kaccvm) and %.4g us on the host (kacc):", v, h
                    if (m && f) printf " the VM does this work %.0f times slower, so its %s wire is, to the CPUs, a %.1f Gbit/s link on the host\n", f, r, f * n * m / 1e9
                    else printf " factor %.0f\n", f }'
            fi
        fi
        # the module's counters: per engine, the sums over its launches (schedule runs done in
        # the kernel, node steps, node steps left to the ranks: the per-node fall-back), then
        # /proc/kumi_kacc after the run
        echo
        echo "-- $bench_cfg: the module's counters over each engine's launches (sums), and at the end"
        printf "  %-12s %8s %6s %10s %12s %12s %9s %10s %10s %8s %9s %8s %8s\n" "" launches failed runs_done nodes user_nodes fallbacks \
               wk_us_own wk_us_oth wire_MB direct_MB fused_MB fuse_out
        for i in "${impls[@]}"; do
            awk -v i="$i" -v l="$(bench_name "$i")" '$1 == "KMODVM-BENCHSTAT:" && $2 == i {
                    n++; for (j = 4; j <= NF; j++) { split($j, kv, "="); v[kv[1]] += kv[2] }
                    if ($4 != "rc=0") f++ }
                END { printf "  %-12s %8d %6d %10d %12d %12d %9d %10d %10d %8.1f %9.1f %8.1f %8.1f\n", l, n, f, v["runs_done"],
                      v["nodes"], v["user_nodes"], v["engine_fallbacks"], v["work_us_own"], v["work_us_other"],
                      v["wire_bytes"] / 1e6, v["direct_bytes"] / 1e6, v["direct_fused_bytes"] / 1e6,
                      v["direct_fused_out_bytes"] / 1e6 }' "$out/$bench_cfg.console.log"
        done
        grep -q '^KMODVM-BENCHBIND:' "$out/$bench_cfg.console.log" &&
            echo "   wire_MB: bytes both veth ends sent (tbf's counters); the ranks (net namespace, CPUs): $(sed -n 's/^KMODVM-BENCHBIND: [^ ]* [^ ]* //p' "$out/$bench_cfg.console.log" | sort | uniq -c | sed 's/^ *\([0-9]*\) /\1 launches: /' | head -3 | tr '\n' ';')"
        echo "   fused_MB: direct bytes a CALC reduced straight from the sender's pages (kacc_direct.c); fuse_out:" \
             "of these, into the receive's own buffer (out = in op received)"
        echo "   /proc/kumi_kacc: $(sed -n 's/^KMODVM-STAT: //p' "$out/$bench_cfg.console.log" | tr '\n' ' ')"
        echo "   fallbacks: ranks whose engine fell back to loop (KUMI_VERBOSE line); the VM's verdicts:" \
             "$(grep -c '^KMODVM: PASS' "$out/$bench_cfg.console.log") passed, $(grep -c '^KMODVM: FAIL' "$out/$bench_cfg.console.log") failed"
    fi
} | tee "$out/$bench_cfg.txt"
[ -e "$work/failed" ] && bench_status "runs failed" || bench_status ok
