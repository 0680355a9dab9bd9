#!/bin/bash
# Benchmarks: Kumi next to Debian's Open MPI and MPICH, in one run, same program
# (tests/bench/mpibench.c, tests/bench/overlap.c for the overlap configuration,
# tests/bench/collbench.c for coll2 and coll4 and tests/bench/rmabench.c for
# rma, built with each implementation's own compiler), same sizes, same
# iteration counts, several repetitions, medians.
#
#   make bench                     (from the build tree), or
#   top_builddir=BUILD tests/bench/run-bench.sh
#
# Configurations (2 ranks, one per core, unless said otherwise):
#   shm      default transports: Kumi's default MPI_COMPONENTS, Open MPI's
#            default (vader), MPICH's default (ch4:ucx shared memory)
#   tcp      TCP forced: Kumi MPI_COMPONENTS="p2p=self,tcp", Open MPI
#            --mca pml ob1 --mca btl tcp,self, MPICH UCX_TLS=tcp,self MPIR_CVAR_NOLOCAL=1
#   oversub  4 ranks on the cores there are (2 here): ring exchange, no binding,
#            Open MPI --oversubscribe; each run has a time limit
#   tcpsys   system calls per message over TCP (tcp-syscalls.sh): mpibench under
#            strace -c, rate 8 B, bw 64 KiB / 1 MiB, bibw 16 KiB; writes on the
#            sending rank, reads on the receiving one (counts, not times)
#   ofi      Kumi's p2p/ofi on libfabric's "tcp;ofi_rxm" provider
#            (MPI_COMPONENTS="p2p=self,ofi"), next to Kumi's own p2p/tcp ("kumitcp")
#            and MPICH over UCX's TCP transport, as in the tcp configuration
#   overlap  non-blocking collectives next to computation (overlap.c):
#            MPI_Iallreduce and MPI_Ibcast, MPI_Test every k compute iterations
#            (k = 0, 1, 10, 100); Kumi with each schedule engine (loop, and
#            thread: KUMI_BASE_SCHED_ENGINE=thread; uring over tcp where built), Open MPI, MPICH; default
#            transports, bound as in shm
#   coll2    blocking collectives (collbench.c): MPI_Bcast, MPI_Allreduce,
#            MPI_Allgather, MPI_Alltoall at 8 B, 64 KiB, 1 MiB and MPI_Barrier,
#            on MPI_COMM_WORLD; default components, bound as in shm
#   coll4    the same with 4 ranks on the cores there are (2 here): no binding,
#            Open MPI --oversubscribe, as in oversub; fewer iterations.  Every
#            library's runs are bimodal there: the kernel leaves all 4 ranks on
#            one core while the other is busy with another session (autogroup:
#            the launch weighs as one task), ~2x the time of a 2 + 2 spread;
#            the per-run values are in the raw outputs (tests/bench/coll-ab.sh
#            DIST=1 prints such distributions for two Kumi builds)
#   coll     both, coll2 and coll4
#   launch   launch time across hosts made of network namespaces with sshd
#            (launch-bench.sh): hello world at 8, 64, 256 ranks over 1, 4, 8
#            hosts, Kumi's mpiexec next to Open MPI's mpirun and MPICH's Hydra,
#            repetitions interleaved, and Kumi / the better of the two
#   abi      the foreign-ABI shims (abi-bench.sh): tests/abi/callcost.c native and
#            built with mpicc.openmpi (through the libmpi.so.40 shim), on Kumi:
#            MPI_Comm_rank, MPI_Recv from MPI_PROC_NULL, 8 B ping-pong (no peers)
#   npb      NAS-style kernels CG, MG, FT, IS, LU (tests/bench/npb, written from the NPB
#            specification; npb-bench.sh) at 4 ranks, class A (S when quick), built with
#            Kumi's mpif90 / mpicc and with mpif90.openmpi / mpicc.openmpi (run through the
#            Open MPI shim): times, ratio, verification (KUMI_NPB_CLASS, KUMI_NPB_KERNELS,
#            KUMI_NPB_LU_ITERS, KUMI_NPB_RANKS: see npb-bench.sh)
#   match    matching that scales (match-bench.sh, tests/bench/matchbench.c):
#            8 B ping-pong latency alone, with 1000 other communicators each
#            holding a posted receive, and with 100,000 messages of another
#            communicator in the unexpected queues; Kumi, Open MPI, MPICH
#   mem      memory per rank (mem-bench.sh, tests/bench/membench.c): VmRSS and
#            Pss of a rank after start-up at 2, 16 and 64 ranks on this host
#   wan      all-to-all over the wide-area lab (wan-bench.sh): two clusters of
#            network namespaces behind a 100 Mbit/s bottleneck at 0, 5, 10 ms,
#            NAS IS-like and FT-like all-to-all, pacing/sockrate on vs off,
#            bottleneck drops counted; Open MPI over the same namespaces
#            (mpirun through tests/bench/netns-rsh.sh; needs root / namespaces)
#   impi     IMPI vs native tcp over the same lab (impi-bench.sh): one rank per
#            cluster, latency at 8 B and bandwidth at 64 KiB / 4 MiB of
#            p2p/impi (two IMPI clients, every packet through each launch's
#            IMPI host) and of p2p/tcp, ratios (Kumi only; needs namespaces)
#   ckpt     coordinated checkpoint and restart (ckpt-job-bench.sh): 4 ranks
#            of 10 / 100 / 1000 MiB (quick: 10 / 100), GB/s of image written
#            next to dd in the same run, restart time, and the slowdown of a
#            run with --ckpt but no request (Kumi only)
#   rma      one-sided latency (rmabench.c): MPI_Put, MPI_Get, MPI_Accumulate
#            (MPI_DOUBLE, MPI_SUM) at 8 B and 64 KiB and MPI_Fetch_and_op
#            (MPI_INT64_T) to rank 1 of a window from MPI_Win_allocate, each
#            followed by MPI_Win_flush, in a passive-target epoch
#            (MPI_Win_lock shared) of rank 0, while rank 1 waits in MPI_Barrier;
#            default components, bound as in shm
#   io       MPI-IO (io-bench.sh): collective write and read of a 3-D
#            block-distributed array of doubles (tests/bench/iobench.c; 1 GiB
#            at 4 ranks, KUMI_BENCH_IO_MIB / KUMI_BENCH_IO_RANKS change it),
#            each implementation with its defaults (Open MPI: OMPIO, MPICH: ROMIO)
#   kacc     the CPU a non-blocking collective takes from the computation
#            (kacc-bench.sh, KACC's experiment; overlap.c with 4x4 and 40x40
#            matrix products): MPI_Iallreduce, MPI_Ibcast tree and pipelined at
#            8 B, 64 KiB, 1 MiB over TCP, Kumi's loop (MPI_Test every k
#            products), thread, uring and kmod (where loaded) engines, Open
#            MPI (LibNBC), MPICH: total time, overlap, share of the
#            computation lost, CPU, completion time
#   kaccvm   the same inside a QEMU (TCG) VM with 2 vCPUs booting Debian's kernel
#            with the KACC module (kacc-bench.sh vm, through tests/scripts/kmod_vm.sh):
#            loop (k = 0, 1, 16), thread, uring and kmod engines (k = 0), the
#            module's counters; KUMI_BENCH_KACCVM_REPS rounds (default 3); about 10 min;
#            skipped with the reason where QEMU, the kernel image or its headers are missing
#   kaccwire the same with the 2 ranks on a wire in the VM (two network namespaces,
#            a veth pair, tbf at KUMI_BENCH_KACCWIRE_RATE, default 300mbit: to the VM's
#            CPUs what 10 Gbit/s is to the host's) as KACC's were: the kmod target
#            (>= 50 % overlap for the 1 MiB allreduce); KUMI_BENCH_KACCWIRE_REPS
#            rounds (default 3; the overlap against the blocking operation varies with its
#            length between launches); about 10 min
# The configuration scripts (match, mem, io, kacc, kaccvm, kaccwire) share their frame:
# tests/bench/bench-common.sh.
# Binding: Open MPI --bind-to core, MPICH -bind-to core, Kumi mpiexec --bind-to core
# when its --help lists it, otherwise each rank is started under taskset -c RANK.
# Output: one table per configuration and metric with Kumi's value, each peer's
# value and Kumi's ratio to it, the issue's targets (met / NOT MET) and a summary.
# The raw outputs and the tables stay in $KUMI_BENCH_OUT (default
# $top_builddir/tests/bench-logs).
#
# Environment:
#   KUMI_BENCH_QUICK=1      smoke run: 3 repetitions, iteration counts / 10, short limits
#                           (overlap: 5 measurements per run instead of 9; coll4: / 4)
#   KUMI_BENCH_REPS=N       repetitions per size (default 5)
#   KUMI_BENCH_SIZES=a,b,.. byte counts (default: 0, powers of two to 4 MiB, 4/8/12/16/64 KiB +-1)
#   KUMI_BENCH_CONFIGS="shm tcp tcpsys ofi oversub overlap coll rma abi io kacc kaccvm kaccwire launch npb match mem wan impi ckpt"   which configurations
#   KUMI_BENCH_OVERLAP_SIZES=a,b,..   byte counts of the overlap configuration
#                           (default: overlap.c's 8,1024,65536,1048576,4194304)
#   KUMI_BENCH_COLL_SIZES=a,b,..   byte counts of coll2 and coll4 (per rank block;
#                           default: collbench.c's 8,65536,1048576)
#   KUMI_BENCH_PEERS="ompi mpich"          which peers (none: Kumi only)
#   KUMI_BENCH_KACC_REPS=N  launches of each kacc case (default 3; KUMI_BENCH_REPS does not apply
#                           there): the engines' medians differ by less than 3 launches spread;
#                           KUMI_BENCH_KACCVM_REPS, KUMI_BENCH_KACCWIRE_REPS the same for kaccvm and
#                           kaccwire (default 3 each: one launch in the VM decided a row by its noise)
#   KUMI_BENCH_KEEP=1       the configurations built on bench-common.sh (kacc, io, match, mem) keep their
#                           launches' raw outputs in $KUMI_BENCH_OUT/CONFIG.work
#   KUMI_BENCH_TIMEOUT=S    limit of one 2-rank run, and of one coll4 run (default 240 s)
#   KUMI_BENCH_OVERSUB_TIMEOUT=S   limit of one oversub run (default 30 s)
#   KUMI_BENCH_OVERSUB_NP=N the rank count of oversub and coll4 (default 4; e.g. 8: 8 ranks
#                           on the cores there are; the configurations keep their names)
#   KUMI_BENCH_INSTALL=1    install openmpi-bin libopenmpi-dev mpich libmpich-dev
#                           with apt-get when missing (root only)
# A peer that is not installed is skipped; the script never waits forever.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=$(cd "${top_builddir:-$top_srcdir/_build}" && pwd) || exit 1   # absolute (the VM configurations need it)
quick=${KUMI_BENCH_QUICK:-0}
reps=${KUMI_BENCH_REPS:-$([ "$quick" = 1 ] && echo 3 || echo 5)}
sizes=${KUMI_BENCH_SIZES:-default}
ovl_sizes=${KUMI_BENCH_OVERLAP_SIZES:-default}
coll_sizes=${KUMI_BENCH_COLL_SIZES:-default}
configs=${KUMI_BENCH_CONFIGS:-shm tcp tcpsys ofi oversub overlap coll rma abi io kacc kaccvm kaccwire launch npb match mem wan impi ckpt}
configs=$(echo "$configs" | sed 's/\bcoll\b/coll2 coll4/')    # coll: both rank counts
want_peers=${KUMI_BENCH_PEERS:-ompi mpich}
limit=${KUMI_BENCH_TIMEOUT:-$([ "$quick" = 1 ] && echo 60 || echo 240)}
olimit=${KUMI_BENCH_OVERSUB_TIMEOUT:-$([ "$quick" = 1 ] && echo 10 || echo 30)}
onp=${KUMI_BENCH_OVERSUB_NP:-4}
case $onp in ''|*[!0-9]*) echo "run-bench: KUMI_BENCH_OVERSUB_NP=$onp: expected a rank count"; exit 2 ;; esac
# Iteration scale per configuration (the same for every implementation):
# TCP is slower, so fewer iterations keep the run within a few minutes; so are
# oversubscribed collectives (MPICH's ranks poll without yielding: ~10 ms a
# collective at 4 ranks on 2 cores).
if [ "$quick" = 1 ]; then scale_shm=0.1 scale_tcp=0.025 scale_ring=0.1 scale_coll4=0.01
else scale_shm=1 scale_tcp=0.25 scale_ring=1 scale_coll4=0.04; fi
# overlap.c's own repetitions (every launch gives medians; the table takes the
# median of those over the launches)
ovl_reps=$([ "$quick" = 1 ] && echo 5 || echo 9)
ncpu=$(nproc 2>/dev/null || echo 2)
out=${KUMI_BENCH_OUT:-$top_builddir/tests/bench-logs}
mkdir -p "$out" || exit 1
rm -f "$out"/*.txt "$out"/*.err "$out"/*.status "$out"/*.secs "$out"/targets
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mpiexec=$top_builddir/tools/mpiexec/mpiexec
kumi_info=$top_builddir/tools/kumi_info/kumi_info
[ -x "$mpiexec" ] || { echo "run-bench: $mpiexec not built (run make first)"; exit 1; }
KUMI_COMPONENT_PATH=$(ls -d "$top_builddir"/components/*/*/.libs 2>/dev/null | tr '\n' ':')
export KUMI_COMPONENT_PATH=${KUMI_COMPONENT_PATH%:}
export KUMI_INTERNAL_NO_PKGLIBDIR=1        # the build tree's components, not installed ones

if [ "${KUMI_BENCH_INSTALL:-0}" = 1 ]; then
    if [ "$(id -u)" = 0 ]; then
        dpkg -s openmpi-bin libopenmpi-dev mpich libmpich-dev >/dev/null 2>&1 || {
            echo "installing openmpi-bin libopenmpi-dev mpich libmpich-dev"
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev mpich libmpich-dev >/dev/null ||
                echo "run-bench: apt-get install failed; peers that are missing are skipped"
        }
    else
        echo "run-bench: KUMI_BENCH_INSTALL=1 needs root; peers that are missing are skipped"
    fi
fi

# ---- build the benchmark with each implementation ----
src=$here/mpibench.c
kumi_cc() {
    ${CC:-cc} -std=gnu11 -O2 -I"$top_builddir/framework/include" -I"$top_srcdir/framework/include" \
        -o "$2" "$1" -L"$top_builddir/framework/.libs" -Wl,-rpath,"$top_builddir/framework/.libs" -lmpi
}
kumi_cc "$src" "$work/mpibench.kumi" || { echo "run-bench: building mpibench with Kumi failed"; exit 1; }
impls=(kumi)
declare -A name ovl_built coll_built rma_built
# the io_uring schedule engine is there when libmpi links liburing
uring_built() { ldd "$top_builddir/framework/.libs/libmpi.so" 2>/dev/null | grep -q liburing; }
name[kumi]=Kumi; name[ompi]="Open MPI"; name[mpich]=MPICH; name[kumitcp]="Kumi p2p/tcp"
name[kumithr]="Kumi thread"; name[kumiuring]="Kumi uring"
want_overlap=0 want_coll=0 want_rma=0
case " $configs " in *" overlap "*) want_overlap=1 ;; esac
case " $configs " in *" coll2 "*|*" coll4 "*) want_coll=1 ;; esac
case " $configs " in *" rma "*) want_rma=1 ;; esac
if [ $want_overlap = 1 ]; then
    if kumi_cc "$here/overlap.c" "$work/overlap.kumi" 2> "$out/build.overlap.kumi.err"; then
        cp "$work/overlap.kumi" "$work/overlap.kumithr"
        cp "$work/overlap.kumi" "$work/overlap.kumiuring"
    else
        echo "skipping the overlap configuration: building overlap.c with Kumi failed (see $out/build.overlap.kumi.err)"
        configs=$(echo "$configs" | sed 's/\boverlap\b//'); want_overlap=0
    fi
fi
if [ $want_coll = 1 ] && ! kumi_cc "$here/collbench.c" "$work/collbench.kumi" 2> "$out/build.collbench.kumi.err"; then
    echo "skipping the coll2 and coll4 configurations: building collbench.c with Kumi failed (see $out/build.collbench.kumi.err)"
    configs=$(echo "$configs" | sed 's/\bcoll[24]\b//g'); want_coll=0
fi
if [ $want_rma = 1 ] && ! kumi_cc "$here/rmabench.c" "$work/rmabench.kumi" 2> "$out/build.rmabench.kumi.err"; then
    echo "skipping the rma configuration: building rmabench.c with Kumi failed (see $out/build.rmabench.kumi.err)"
    configs=$(echo "$configs" | sed 's/\brma\b//'); want_rma=0
fi
for p in $want_peers; do
    case $p in
    ompi) cc_=mpicc.openmpi run_=mpirun.openmpi ;;
    mpich) cc_=mpicc.mpich run_=mpirun.mpich ;;
    none) continue ;;
    *) echo "run-bench: unknown peer '$p' (ompi, mpich)"; continue ;;
    esac
    if ! command -v $cc_ >/dev/null || ! command -v $run_ >/dev/null; then
        echo "skipping ${name[$p]}: $cc_ / $run_ not installed (KUMI_BENCH_INSTALL=1 installs it)"
        continue
    fi
    if $cc_ -O2 -o "$work/mpibench.$p" "$src" 2> "$out/build.$p.err"; then impls+=("$p")
    else echo "skipping ${name[$p]}: $cc_ failed (see $out/build.$p.err)"; continue; fi
    if [ $want_overlap = 1 ]; then
        if $cc_ -O2 -o "$work/overlap.$p" "$here/overlap.c" 2> "$out/build.overlap.$p.err"; then ovl_built[$p]=1
        else echo "skipping ${name[$p]} in the overlap configuration: $cc_ overlap.c failed (see $out/build.overlap.$p.err)"; fi
    fi
    if [ $want_coll = 1 ]; then
        if $cc_ -O2 -o "$work/collbench.$p" "$here/collbench.c" 2> "$out/build.collbench.$p.err"; then coll_built[$p]=1
        else echo "skipping ${name[$p]} in coll2 and coll4: $cc_ collbench.c failed (see $out/build.collbench.$p.err)"; fi
    fi
    if [ $want_rma = 1 ]; then
        if $cc_ -O2 -o "$work/rmabench.$p" "$here/rmabench.c" 2> "$out/build.rmabench.$p.err"; then rma_built[$p]=1
        else echo "skipping ${name[$p]} in rma: $cc_ rmabench.c failed (see $out/build.rmabench.$p.err)"; fi
    fi
done

# The implementations a configuration compares: Kumi first.
cfg_impls() {
    local i
    case $1 in
    ofi) echo kumi kumitcp; for i in "${impls[@]}"; do [ "$i" = mpich ] && echo mpich; done ;;
    overlap) echo kumi kumithr; uring_built && echo kumiuring; for i in "${impls[@]}"; do [ "$i" != kumi ] && [ -n "${ovl_built[$i]:-}" ] && echo "$i"; done ;;
    coll2|coll4) echo kumi; for i in "${impls[@]}"; do [ "$i" != kumi ] && [ -n "${coll_built[$i]:-}" ] && echo "$i"; done ;;
    rma) echo kumi; for i in "${impls[@]}"; do [ "$i" != kumi ] && [ -n "${rma_built[$i]:-}" ] && echo "$i"; done ;;
    *) echo "${impls[@]}" ;;
    esac
}
cp "$work/mpibench.kumi" "$work/mpibench.kumitcp"
ofi_ok=0
"$kumi_info" --parsable 2>/dev/null | grep -q '^component:p2p:ofi:status:available' && ofi_ok=1
case " $configs " in *" ofi "*) [ $ofi_ok = 1 ] || {
    echo "skipping the ofi configuration: p2p/ofi is not available in this build (kumi_info)"
    configs=$(echo "$configs" | sed 's/\bofi\b//'); } ;; esac

# Kumi's binding: mpiexec --bind-to core when available (part of issue 4), else taskset.
if "$mpiexec" --help 2>&1 | grep -q -- '--bind-to'; then
    kumi_bind=(--bind-to core); kumi_bind_how="mpiexec --bind-to core"
elif command -v taskset >/dev/null; then
    printf '#!/bin/sh\nexec taskset -c $((KUMI_RANK %% %d)) "$@"\n' "$ncpu" > "$work/bind.sh"
    chmod +x "$work/bind.sh"
    kumi_bind=("$work/bind.sh"); kumi_bind_how="taskset -c RANK (mpiexec has no --bind-to yet)"
else
    kumi_bind=(); kumi_bind_how="unbound (no --bind-to, no taskset)"
fi
if "$kumi_info" --parsable 2>/dev/null | grep -q '^component:p2p:shmem:'; then shm_kumi="Kumi"
else shm_kumi="Kumi (no shmem yet: self,tcp)"; fi
root_opt=(); [ "$(id -u)" = 0 ] && root_opt=(--allow-run-as-root)

# Repetitions are separate launches, interleaved (Kumi, Open MPI, MPICH, Kumi, ...),
# so that a change of load on the host hits every implementation alike; each
# launch measures every size once (mpibench -r 1); the tables give the median
# over the launches.
# launch CONFIG IMPL ROUND: one run of mpibench (overlap for the overlap
# configuration, collbench for coll2 and coll4, rmabench for rma), into
# $out/CONFIG.IMPL.ROUND.{txt,err,status}
launch() {
    local cfg=$1 impl=$2 round=$3 np=2 t=$limit cmd=() args=() prog=mpibench
    case $cfg in
    overlap) args=(-s "$ovl_sizes" -r "$ovl_reps"); prog=overlap ;;
    shm) args=(-s "$sizes" -r 1 -x "$scale_shm") ;;
    tcp|ofi) args=(-s "$sizes" -r 1 -x "$scale_tcp") ;;
    oversub) args=(-m ring -r 1 -x "$scale_ring"); np=$onp; t=$olimit ;;
    coll2) args=(-s "$coll_sizes" -r 1 -x "$scale_shm"); prog=collbench ;;
    coll4) args=(-s "$coll_sizes" -r 1 -x "$scale_coll4"); prog=collbench; np=$onp ;;
    rma) args=(-r 1 -x "$scale_shm"); prog=rmabench ;;
    esac
    case $impl/$cfg in
    kumi/shm) cmd=(env -u MPI_COMPONENTS "$mpiexec" -n 2 "${kumi_bind[@]}") ;;
    kumi/tcp) cmd=(env MPI_COMPONENTS="p2p=self,tcp" "$mpiexec" -n 2 "${kumi_bind[@]}") ;;
    kumi/oversub|kumi/coll4) cmd=(env -u MPI_COMPONENTS "$mpiexec" -n "$np") ;;
    kumi/coll2|kumi/rma) cmd=(env -u MPI_COMPONENTS "$mpiexec" -n 2 "${kumi_bind[@]}") ;;
    kumi/ofi) cmd=(env MPI_COMPONENTS="p2p=self,ofi" "KUMI_P2P_OFI_PROVIDER=tcp;ofi_rxm" "$mpiexec" -n 2 "${kumi_bind[@]}") ;;
    kumitcp/ofi) cmd=(env MPI_COMPONENTS="p2p=self,tcp" "$mpiexec" -n 2 "${kumi_bind[@]}") ;;
    kumi/overlap) cmd=(env -u MPI_COMPONENTS KUMI_BASE_SCHED_ENGINE=loop "$mpiexec" -n 2 "${kumi_bind[@]}") ;;
    kumithr/overlap) cmd=(env -u MPI_COMPONENTS KUMI_BASE_SCHED_ENGINE=thread "$mpiexec" -n 2 "${kumi_bind[@]}") ;;
    kumiuring/overlap) cmd=(env MPI_COMPONENTS="p2p=self,tcp" KUMI_BASE_SCHED_ENGINE=uring "$mpiexec" -n 2 "${kumi_bind[@]}") ;;
    mpich/ofi) cmd=(env "UCX_TLS=tcp,self" MPIR_CVAR_NOLOCAL=1 mpirun.mpich -bind-to core -n 2) ;;
    ompi/shm|ompi/overlap|ompi/coll2|ompi/rma) cmd=(mpirun.openmpi "${root_opt[@]}" --bind-to core -n 2) ;;
    ompi/tcp) cmd=(mpirun.openmpi "${root_opt[@]}" --bind-to core --mca pml ob1 --mca btl "tcp,self" -n 2) ;;
    ompi/oversub|ompi/coll4) cmd=(mpirun.openmpi "${root_opt[@]}" --oversubscribe -n "$np") ;;
    mpich/shm|mpich/overlap|mpich/coll2|mpich/rma) cmd=(mpirun.mpich -bind-to core -n 2) ;;
    mpich/tcp) cmd=(env "UCX_TLS=tcp,self" MPIR_CVAR_NOLOCAL=1 mpirun.mpich -bind-to core -n 2) ;;
    mpich/oversub|mpich/coll4) cmd=(mpirun.mpich -n "$np") ;;
    esac
    local f=$out/$cfg.$impl.$round start end rc
    start=$(date +%s.%N)
    timeout -k 5 "$t" "${cmd[@]}" "$work/$prog.$impl" "${args[@]}" > "$f.txt" 2> "$f.err" < /dev/null
    rc=$?
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f\n", b - a }' > "$f.secs"
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo "timeout (>${t}s)" > "$f.status"
    elif [ $rc -ne 0 ]; then echo "failed (exit $rc)" > "$f.status"
    elif ! grep -q '^# done' "$f.txt"; then echo "incomplete output" > "$f.status"
    else echo "ok" > "$f.status"; fi
}

# merge_overlap FILE...: overlap.c's outputs, per operation, size and k the
# median over the launches of each column (t_blk, t_cmp, t_tot, overlap, cpu,
# and from overlap.c's format 2 lost, t_done, t_nbc).
merge_overlap() {
    awk 'FNR == 1 { head = $0 }
         $1 == "ovl" && NF >= 9 {
             k = $2 " " $3 " " $4
             if (!(k in cnt)) order[++nk] = k
             c = ++cnt[k]
             if (NF > nf) nf = NF
             for (j = 5; j <= NF; j++) val[k, j, c] = $j
         }
         END {
             print head
             for (i = 1; i <= nk; i++) {
                 k = order[i]; c = cnt[k]; line = "ovl " k
                 for (j = 5; j <= nf; j++) {
                     for (a = 2; a <= c; a++)      # insertion sort, c is small
                         for (b = a; b > 1 && val[k, j, b - 1] > val[k, j, b]; b--) {
                             t = val[k, j, b]; val[k, j, b] = val[k, j, b - 1]; val[k, j, b - 1] = t
                         }
                     med = c % 2 ? val[k, j, (c + 1) / 2] : (val[k, j, c / 2] + val[k, j, c / 2 + 1]) / 2
                     line = line sprintf(" %.4g", med)
                 }
                 print line
             }
             print "# done"
         }' "$@"
}

# merge CONFIG IMPL: the launches' results into $out/CONFIG.IMPL.{txt,status}:
# per metric and size the median, minimum and maximum over the launches.
merge() {
    local cfg=$1 impl=$2 r st=ok secs n=0 files=()
    for r in $(seq "$reps"); do
        [ -f "$out/$cfg.$impl.$r.status" ] || continue
        files+=("$out/$cfg.$impl.$r.txt"); n=$((n + 1))
        local s; s=$(cat "$out/$cfg.$impl.$r.status")
        [ "$st" = ok ] && [ "$s" != ok ] && st=$s
    done
    secs=$(cat "$out/$cfg.$impl".*.secs 2>/dev/null | awk '{ t += $1 } END { printf "%.0f", t }')
    [ "$n" -lt "$reps" ] && [ "$st" = ok ] && st="only $n of $reps runs"
    echo "$st" > "$out/$cfg.$impl.status"
    if [ "$cfg" = overlap ]; then
        merge_overlap "${files[@]}"
    else
        awk 'FNR == 1 { head = $0 }
             /^#/ { next }
             NF == 7 {
                 k = $1 " " $2
                 if (!(k in cnt)) { order[++nk] = k; it[k] = $3; un[k] = $7 }
                 val[k, ++cnt[k]] = $4
             }
             END {
                 print head
                 for (i = 1; i <= nk; i++) {
                     k = order[i]; c = cnt[k]
                     for (a = 2; a <= c; a++)      # insertion sort, c is small
                         for (b = a; b > 1 && val[k, b - 1] > val[k, b]; b--) {
                             t = val[k, b]; val[k, b] = val[k, b - 1]; val[k, b - 1] = t
                         }
                     med = c % 2 ? val[k, (c + 1) / 2] : (val[k, c / 2] + val[k, c / 2 + 1]) / 2
                     printf "%s %s %.4g %.4g %.4g %s\n", k, it[k], med, val[k, 1], val[k, c], un[k]
                 }
                 print "# done"
             }' "${files[@]}"
    fi > "$out/$cfg.$impl.txt"
    printf "  %-8s %-9s %-26s %5ss in %d runs\n" "$cfg" "$impl" "$st" "$secs" "$n"
}

echo "== Kumi benchmarks: ${impls[*]}; configurations: $configs; $reps interleaved runs each (median); $ncpu cores"
echo "   Kumi binding: $kumi_bind_how; raw outputs in $out"
echo "   load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null) (other work on the host skews the numbers)"
for cfg in $configs; do
    case $cfg in abi|io|kacc|kaccvm|kaccwire|launch|npb|match|mem|wan|impi|ckpt|tcpsys) continue ;; esac   # abi-, io-, kacc-, launch-, npb-, match-, mem-, wan-, impi-, ckpt-job-bench.sh measure them, below
    for r in $(seq "$reps"); do
        for impl in $(cfg_impls "$cfg"); do
            # after a timeout or a failure, that implementation's remaining runs are skipped
            prev=$out/$cfg.$impl.$((r - 1)).status
            [ "$r" -gt 1 ] && { [ -f "$prev" ] && [ "$(cat "$prev")" = ok ] || continue; }
            launch "$cfg" "$impl" "$r"
        done
    done
    for impl in $(cfg_impls "$cfg"); do merge "$cfg" "$impl"; done
done

# ---- tables ----
# table CFG METRIC TITLE DIR TARGET
#   DIR: low (lower is better: latency) or high (bandwidth, rate)
#   TARGET: "" or KIND:SIZES:LABEL (several separated by ';'), SIZES "all" or a comma
#   list of byte counts and ranges A-B (A <= bytes <= B):
#     best   Kumi at least as good as the better peer
#     ompi   Kumi at least as good as Open MPI (any peer's name: mpich, kumitcp)
#     PEERxF (bestx0.9, ompix1.1, ...): Kumi's value against F times PEER's (best: the better
#            peer): low, at most F x (latency 0.9x the better, within 1.1x of Open MPI); high,
#            at least F x (bibw 0.9x)
table() {
    local cfg=$1 metric=$2 title=$3 dir=$4 target=$5 files=() labels=() i ci
    read -r -a ci <<< "$(cfg_impls "$cfg" | tr '\n' ' ')"
    [ ${#ci[@]} -gt 1 ] || target=""   # nothing to compare with
    for impl in "${ci[@]}"; do
        files+=("$out/$cfg.$impl.txt")
        local l=${name[$impl]}
        [ "$impl" = kumi ] && [ "$cfg" = shm ] && l=$shm_kumi
        [ "$impl" = kumi ] && [ "$cfg" = ofi ] && l="Kumi p2p/ofi (provider tcp;ofi_rxm)"
        [ "$impl" = kumi ] && { [ "${cfg%[24]}" = coll ] || [ "$cfg" = rma ]; } && l="Kumi (default components)"
        local st; st=$(cat "$out/$cfg.$impl.status" 2>/dev/null || echo missing)
        [ "$st" = ok ] || l="$l [$st]"
        labels+=("$l")
    done
    grep -q "^$metric " "${files[0]}" 2>/dev/null || return 0
    local unit; unit=$(awk -v m="$metric" '$1 == m { print $7; exit }' "${files[0]}")
    echo
    if [ "$dir" = low ]; then echo "-- $title ($unit; lower is better; ratio = Kumi / peer, below 1.00 Kumi is faster)"
    else echo "-- $title ($unit; higher is better; ratio = Kumi / peer, above 1.00 Kumi is faster)"; fi
    for i in "${!ci[@]}"; do echo "   ${ci[$i]}: ${labels[$i]}"; done
    [ -n "$target" ] && echo "$target" | tr ';' '\n' |
        awk -F: -v n="$(echo "$target" | tr ';' '\n' | wc -l)" '{ printf "   target%s: %s\n", (n > 1 ? NR : ""), $3 }'
    local names; names=$(IFS=,; echo "${ci[*]}")
    awk -v metric="$metric" -v dir="$dir" -v target="$target" -v names="$names" -v cfg="$cfg" \
        -v tfile="$out/targets" '
        FNR == 1 { f++ }
        $1 == metric { v[f, $2] = $4; if (f == 1) { sz[++ns] = $2 } }
        END {
            n = split(names, nm, ",")
            nt = (target == "") ? 0 : split(target, tgs, ";")
            for (t = 1; t <= nt; t++) {
                split(tgs[t], tg, ":")
                kind[t] = tg[1]; lab[t] = tg[3]; met[t] = 0; tot[t] = 0
                nsel = split(tg[2], tl, ",")
                all[t] = (tg[2] == "all")
                nrg[t] = 0
                for (i = 1; i <= nsel; i++)
                    if (tl[i] ~ /^[0-9]+-[0-9]+$/) { split(tl[i], rg, "-"); nrg[t]++; rlo[t, nrg[t]] = rg[1] + 0; rhi[t, nrg[t]] = rg[2] + 0 }
                    else insel[t, tl[i] + 0] = 1
                fac[t] = 1
                if (kind[t] ~ /^[a-z]+x[0-9.]+$/) { fac[t] = substr(kind[t], index(kind[t], "x") + 1) + 0; kind[t] = substr(kind[t], 1, index(kind[t], "x") - 1) }
            }
            printf "%10s %12s", "bytes", nm[1]
            for (j = 2; j <= n; j++) printf " %12s %10s", nm[j], "kumi/" nm[j]
            for (t = 1; t <= nt; t++) printf "  %-8s", "target" (nt > 1 ? t : "")
            printf "\n"
            for (i = 1; i <= ns; i++) {
                s = sz[i]; k = v[1, s] + 0
                printf "%10d %12.4g", s, k
                best = ""; delete pv
                for (j = 2; j <= n; j++) {
                    if ((j, s) in v) {
                        p = v[j, s] + 0; pv[nm[j]] = p
                        printf " %12.4g %10s", p, (p > 0 ? sprintf("%.2f", k / p) : "-")
                        if (nm[j] != "kumitcp" && (best == "" || (dir == "low" ? p < best : p > best))) best = p
                    } else printf " %12s %10s", "-", "-"
                }
                for (t = 1; t <= nt; t++) {
                    sel = all[t] || ((t, s + 0) in insel)
                    for (r = 1; r <= nrg[t] && !sel; r++) sel = s + 0 >= rlo[t, r] && s + 0 <= rhi[t, r]
                    if (!sel) { printf "  %-8s", ""; continue }
                    if (kind[t] == "best") ref = best
                    else ref = (kind[t] in pv) ? pv[kind[t]] : ""
                    if (ref == "" || !((1, s) in v)) { printf "  %-8s", "n/a"; continue }
                    ok = (dir == "low") ? (k <= ref * fac[t]) : (k >= ref * fac[t])
                    tot[t]++; met[t] += ok
                    printf "  %-8s", ok ? "met" : "NOT MET"
                }
                printf "\n"
            }
            for (t = 1; t <= nt; t++) if (tot[t] > 0) printf "%s|%s|%d|%d\n", cfg, lab[t], met[t], tot[t] >> tfile
        }' "${files[@]}"
}

# cliff CFG: latency across the eager limits of common implementations, lat(N+1) / lat(N-1)
cliff() {
    local cfg=$1 files=() names ci
    read -r -a ci <<< "$(cfg_impls "$cfg" | tr '\n' ' ')"
    for impl in "${ci[@]}"; do files+=("$out/$cfg.$impl.txt"); done
    grep -q "^lat 4095 " "${files[0]}" 2>/dev/null || return 0
    names=$(IFS=,; echo "${ci[*]}")
    echo
    echo "-- $cfg: latency step across common eager limits, lat(N+1) / lat(N-1) (1.00 = smooth;"
    echo "   target for Kumi: no cliff, <= 1.25 at every N)"
    awk -v names="$names" -v cfg="$cfg" -v tfile="$out/targets" '
        FNR == 1 { f++ }
        $1 == "lat" { v[f, $2] = $4 }
        END {
            n = split(names, nm, ",")
            printf "%10s", "N"
            for (j = 1; j <= n; j++) printf " %10s", nm[j]
            printf "  target\n"
            split("4096 8192 12288 16384 65536", ns, " ")
            met = 0; tot = 0
            for (i = 1; i <= 5; i++) {
                s = ns[i]; printf "%10d", s
                for (j = 1; j <= n; j++) {
                    if ((j, s - 1) in v && (j, s + 1) in v && v[j, s - 1] > 0) printf " %10.2f", v[j, s + 1] / v[j, s - 1]
                    else printf " %10s", "-"
                }
                if ((1, s - 1) in v && (1, s + 1) in v && v[1, s - 1] > 0) {
                    ok = v[1, s + 1] / v[1, s - 1] <= 1.25; tot++; met += ok
                    printf "  %s", ok ? "met" : "NOT MET"
                }
                printf "\n"
            }
            if (tot > 0) printf "%s|no latency cliff at the eager limits|%d|%d\n", cfg, met, tot >> tfile
        }' "${files[@]}"
}

# table_overlap OP TITLE TARGET: one table of the overlap configuration.  Per
# size a "blk" row (the blocking operation's time, in the t_tot columns), then a
# row per k with every implementation's t_tot, overlap and cpu, and the ratio
# of Kumi thread's t_tot to each peer's.
#   TARGET: "" or a ;-list of KIND:BYTES:LABEL, checked on the row BYTES, k = 0:
#     ovl50    Kumi thread's overlap >= 50 %
#     ompi10   Kumi thread's t_tot below Open MPI's t_tot with k = 10
table_overlap() {
    local op=$1 title=$2 target=$3 files=() labels=() ci impl i
    read -r -a ci <<< "$(cfg_impls overlap | tr '\n' ' ')"
    for impl in "${ci[@]}"; do
        files+=("$out/overlap.$impl.txt")
        local l=${name[$impl]}
        [ "$impl" = kumi ] && l="Kumi, loop engine (the default)"
        [ "$impl" = kumithr ] && l="Kumi, thread engine (KUMI_BASE_SCHED_ENGINE=thread)"
        [ "$impl" = kumiuring ] && l="Kumi, uring engine over tcp (KUMI_BASE_SCHED_ENGINE=uring, p2p=self,tcp)"
        local st; st=$(cat "$out/overlap.$impl.status" 2>/dev/null || echo missing)
        [ "$st" = ok ] || l="$l [$st]"
        labels+=("$l")
    done
    grep -q "^ovl $op " "${files[@]}" 2>/dev/null || return 0
    echo
    echo "-- $title"
    echo "   per size: blk = the blocking operation alone (us); per k (MPI_Test every k compute iterations of"
    echo "   ~1 us, 0 = never): t_tot = start, compute as long as blk, MPI_Wait (us, lower is better);"
    echo "   ovl = share of the shorter of communication and compute that was hidden (%, 100 = all);"
    echo "   cpu = CPU time the communication took from the process (us, progress thread included)"
    [ ${#ci[@]} -gt 2 ] && echo "   ratio = Kumi thread's t_tot / the peer's (below 1.00 Kumi thread is faster)"
    for i in "${!ci[@]}"; do echo "   ${ci[$i]}: ${labels[$i]}"; done
    [ -n "$target" ] && echo "$target" | tr ';' '\n' |
        awk -F: -v n="$(echo "$target" | tr ';' '\n' | wc -l)" '{ printf "   target%s: %s\n", (n > 1 ? NR : ""), $3 }'
    local names; names=$(IFS=,; echo "${ci[*]}")
    awk -v op="$op" -v target="$target" -v names="$names" -v tfile="$out/targets" '
        function num(x) {      # at most 7 characters
            x += 0
            return (x >= 1000 && x < 1e6) || (x <= -1000 && x > -1e5) ? sprintf("%.0f", x) : sprintf("%.4g", x)
        }
        FNR == 1 { f++ }
        $1 == "ovl" && $2 == op {
            b = $3 + 0; k = $4 + 0
            if (!(b in hasb)) { hasb[b] = 1; sz[++ns] = b }
            if (!(k in hask)) { hask[k] = 1; kk[++nk] = k }
            blk[f, b] = $5; tot[f, b, k] = $7; ovl[f, b, k] = $8; cpu[f, b, k] = $9
        }
        END {
            for (a = 2; a <= ns; a++) for (c = a; c > 1 && sz[c - 1] > sz[c]; c--) { t = sz[c]; sz[c] = sz[c - 1]; sz[c - 1] = t }
            for (a = 2; a <= nk; a++) for (c = a; c > 1 && kk[c - 1] > kk[c]; c--) { t = kk[c]; kk[c] = kk[c - 1]; kk[c - 1] = t }
            n = split(names, nm, ",")
            thr = 0; ompi = 0; np = 0
            for (j = 1; j <= n; j++) {
                if (nm[j] == "kumithr") thr = j
                else if (nm[j] != "kumi" && nm[j] != "kumiuring") peer[++np] = j
                if (nm[j] == "ompi") ompi = j
            }
            nt = (target == "") ? 0 : split(target, tgs, ";")
            for (t = 1; t <= nt; t++) {
                split(tgs[t], tg, ":")
                kind[t] = tg[1]; tsize[t] = tg[2] + 0; lab[t] = tg[3]
            }
            printf "%8s %4s", "", ""
            for (j = 1; j <= n; j++) printf "  %-20s", nm[j]
            printf "\n%8s %4s", "bytes", "k"
            for (j = 1; j <= n; j++) printf "  %7s %4s %7s", "t_tot", "ovl%", "cpu"
            for (p = 1; p <= np; p++) printf " %10s", "thr/" nm[peer[p]]
            for (t = 1; t <= nt; t++) printf "  %-8s", "target" (nt > 1 ? t : "")
            printf "\n"
            for (i = 1; i <= ns; i++) {
                b = sz[i]
                printf "%8d %4s", b, "blk"
                for (j = 1; j <= n; j++) printf "  %7s %4s %7s", ((j, b) in blk) ? num(blk[j, b]) : "-", "", ""
                for (p = 1; p <= np; p++) {
                    q = peer[p]
                    printf " %10s", (thr && (thr, b) in blk && (q, b) in blk && blk[q, b] > 0) ? sprintf("%.2f", blk[thr, b] / blk[q, b]) : "-"
                }
                printf "\n"
                for (x = 1; x <= nk; x++) {
                    k = kk[x]
                    printf "%8s %4d", "", k
                    for (j = 1; j <= n; j++) {
                        if ((j, b, k) in tot) printf "  %7s %4.0f %7s", num(tot[j, b, k]), ovl[j, b, k], num(cpu[j, b, k])
                        else printf "  %7s %4s %7s", "-", "-", "-"
                    }
                    for (p = 1; p <= np; p++) {
                        q = peer[p]
                        printf " %10s", (thr && (thr, b, k) in tot && (q, b, k) in tot && tot[q, b, k] > 0) ? sprintf("%.2f", tot[thr, b, k] / tot[q, b, k]) : "-"
                    }
                    for (t = 1; t <= nt; t++) {
                        if (b != tsize[t] || k != 0) { printf "  %-8s", ""; continue }
                        ok = -1
                        if (kind[t] == "ovl50" && thr && (thr, b, 0) in ovl) ok = ovl[thr, b, 0] >= 50
                        if (kind[t] == "ompi10" && thr && ompi && (thr, b, 0) in tot && (ompi, b, 10) in tot)
                            ok = tot[thr, b, 0] < tot[ompi, b, 10]
                        if (ok < 0) { printf "  %-8s", "n/a"; continue }
                        printf "  %-8s", ok ? "met" : "NOT MET"
                        printf "overlap|%s|%d|1\n", lab[t], ok >> tfile
                    }
                    printf "\n"
                }
            }
        }' "${files[@]}" | sed 's/ *$//'
}

# coll_tables CFG: a table per collective of collbench.c, with the target at
# 8 B, 64 KiB and 1 MiB (the barrier's one row: size 0)
coll_tables() {
    local cfg=$1 t="no slower than the better of Open MPI and MPICH" s="8,65536,1048576"
    table "$cfg" bcast "$cfg: MPI_Bcast (MPI_BYTE, root 0)" low "best:$s:Bcast $t"
    table "$cfg" allreduce "$cfg: MPI_Allreduce (MPI_DOUBLE, MPI_SUM, bytes / 8 elements)" low "best:$s:Allreduce $t"
    table "$cfg" allgather "$cfg: MPI_Allgather (MPI_BYTE, bytes per rank)" low "best:$s:Allgather $t"
    table "$cfg" alltoall "$cfg: MPI_Alltoall (MPI_BYTE, bytes per pair of ranks)" low "best:$s:Alltoall $t"
    table "$cfg" barrier "$cfg: MPI_Barrier" low "best:0:Barrier $t"
}

# ofi_floor: the provider's own latency without MPI (tests/bench/fi_pingpong.c), median of 5
ofi_floor() {
    ${CC:-cc} -O2 -o "$work/fi_pingpong" "$here/fi_pingpong.c" -lfabric 2> "$out/build.fi_pingpong.err" || {
        echo; echo "-- (fi_pingpong not built: see $out/build.fi_pingpong.err)"; return 0; }
    echo
    echo "-- libfabric tcp;ofi_rxm without MPI (fi_pingpong, one-way us, median of 5): the floor under p2p/ofi"
    for b in 64 4096; do
        local v
        v=$(for r in 1 2 3 4 5; do FI_PINGPONG_PROVIDER="tcp;ofi_rxm" timeout 60 "$work/fi_pingpong" "$b" 2>/dev/null |
              awk '{ print $(NF - 2) }'; done | sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "-" }')
        printf "%10d %12s\n" "$b" "$v"
    done
}

for cfg in $configs; do
    case $cfg in
    shm)
        echo; echo "==== shared memory, 2 ranks, one per core (default transports)"
        # issue 22's: 0-64 B latency <= 0.9x the better peer, 0-8 B message rate >= it, the
        # 8-64 KiB band's latency within 1.1x and bi-directional bandwidth >= 0.9x of it
        table shm lat "shm: latency (ping-pong, one way)" low "best:0,1,2,4,8,16,32,64:0-64 B latency <= the better of Open MPI and MPICH;bestx0.9:0-64:0-64 B latency <= 0.9x the better peer;bestx1.1:8192-65536:8-64 KiB latency within 1.1x of the better peer"
        table shm bw "shm: uni-directional bandwidth" high "best:1048576,4194304:1 MiB and 4 MiB bandwidth >= the better of the two"
        table shm bibw "shm: bi-directional bandwidth" high "bestx0.9:8192-65536:8-64 KiB bi-directional bandwidth >= 0.9x the better peer"
        table shm rate "shm: message rate (window of 128)" high "best:0-8:0-8 B message rate >= the better peer"
        cliff shm ;;
    tcp)
        echo; echo "==== TCP forced, 2 ranks, one per core"
        table tcp lat "tcp: latency (ping-pong, one way)" low "ompix1.1:all:latency within 1.1x of Open MPI"
        # issue 22's: bandwidth at 64 KiB - 4 MiB >= Open MPI's, small-message rate >= 0.95x Open MPI's
        table tcp bw "tcp: uni-directional bandwidth" high "ompi:all:bandwidth >= Open MPI;ompi:65536-4194304:64 KiB - 4 MiB bandwidth >= Open MPI"
        table tcp bibw "tcp: bi-directional bandwidth" high ""
        table tcp rate "tcp: message rate (window of 128)" high "ompix0.95:0-8:0-8 B message rate >= 0.95x Open MPI"
        cliff tcp ;;
    tcpsys)
        echo; echo "==== system calls per message over TCP (tests/bench/tcp-syscalls.sh)"
        top_srcdir=$top_srcdir top_builddir=$top_builddir KUMI_BENCH_OUT=$out \
            KUMI_BENCH_QUICK=$quick KUMI_BENCH_TIMEOUT=$limit KUMI_BENCH_PEERS="$want_peers" bash "$here/tcp-syscalls.sh" ;;
    oversub)
        echo; echo "==== oversubscribed: $onp ranks on $ncpu cores, ring exchange (MPI_Sendrecv), no binding"
        table oversub ring "oversub: time per ring step" low "ompi:all:no slower than Open MPI --oversubscribe"
        # how the ranks wait (load-independent enough to compare on a busy machine): sleeps and yields
        table oversub ringsleep "oversub: voluntary context switches (sleeps) per rank and ring step" low ""
        table oversub ringyield "oversub: involuntary context switches (yields, preemptions) per rank and ring step" low "" ;;
    ofi)
        echo; echo "==== p2p/ofi on libfabric's tcp;ofi_rxm provider, 2 ranks, one per core"
        table ofi lat "ofi: latency (ping-pong, one way)" low "mpich:all:latency no higher than MPICH over UCX tcp;kumitcpx1.5:all:latency within 1.5x of Kumi's p2p/tcp"
        table ofi bw "ofi: uni-directional bandwidth" high "mpich:all:bandwidth no lower than MPICH over UCX tcp;kumitcpx0.666667:all:bandwidth at least Kumi's p2p/tcp / 1.5"
        table ofi bibw "ofi: bi-directional bandwidth" high ""
        table ofi rate "ofi: message rate (window of 128)" high ""
        cliff ofi
        ofi_floor ;;
    overlap)
        echo; echo "==== overlap of non-blocking collectives with computation, 2 ranks, one per core (default transports)"
        table_overlap iallreduce "overlap: MPI_Iallreduce (MPI_DOUBLE, MPI_SUM)" \
            "ovl50:1048576:Iallreduce 1 MiB k=0 with the Kumi thread engine overlaps >= 50 %;ompi10:1048576:Iallreduce 1 MiB t_tot of Kumi thread with k=0 < Open MPI with k=10"
        table_overlap ibcast "overlap: MPI_Ibcast (MPI_BYTE, root 0)" "" ;;
    coll2)
        echo; echo "==== blocking collectives, 2 ranks, one per core (default components; time per operation, slowest rank)"
        coll_tables coll2 ;;
    coll4)
        echo; echo "==== blocking collectives, $onp ranks on $ncpu cores, no binding (default components; time per operation, slowest rank)"
        coll_tables coll4 ;;
    rma)
        echo; echo "==== one-sided communication, 2 ranks, one per core (default components; time per operation + flush at rank 0, rank 1 in MPI_Barrier)"
        t="no slower than the better of Open MPI and MPICH"
        table rma put "rma: MPI_Put + MPI_Win_flush (same host, passive target)" low "best:8,65536:Put 8 B and 64 KiB $t"
        table rma get "rma: MPI_Get + MPI_Win_flush (same host, passive target)" low "best:8,65536:Get 8 B and 64 KiB $t"
        table rma acc "rma: MPI_Accumulate + MPI_Win_flush (MPI_DOUBLE, MPI_SUM, bytes / 8 elements; same host, passive target)" low ""
        table rma fop "rma: MPI_Fetch_and_op + MPI_Win_flush (one MPI_INT64_T, MPI_SUM; same host, passive target)" low "" ;;
    abi)
        echo; echo "==== foreign-ABI shims: per-call cost, native vs through each shim (tests/bench/abi-bench.sh)"
        top_srcdir=$top_srcdir top_builddir=$top_builddir KUMI_BENCH_OUT=$out KUMI_BENCH_REPS=$reps \
            KUMI_BENCH_QUICK=$quick KUMI_BENCH_TIMEOUT=$limit bash "$here/abi-bench.sh" ;;
    io)
        echo; echo "==== MPI-IO: collective I/O of a 3-D block-distributed array (tests/bench/io-bench.sh)"
        top_srcdir=$top_srcdir top_builddir=$top_builddir KUMI_BENCH_OUT=$out KUMI_BENCH_REPS=$reps \
            KUMI_BENCH_QUICK=$quick KUMI_BENCH_TIMEOUT=$limit KUMI_BENCH_PEERS="$want_peers" bash "$here/io-bench.sh" ;;
    kacc)
        echo; echo "==== the CPU a non-blocking collective takes from the computation (tests/bench/kacc-bench.sh)"
        top_srcdir=$top_srcdir top_builddir=$top_builddir KUMI_BENCH_OUT=$out KUMI_BENCH_REPS=${KUMI_BENCH_KACC_REPS:-$([ "$quick" = 1 ] && echo 1 || echo 3)} \
            KUMI_BENCH_QUICK=$quick KUMI_BENCH_TIMEOUT=$limit KUMI_BENCH_PEERS="$want_peers" bash "$here/kacc-bench.sh" ;;
    kaccvm)
        echo; echo "==== the same inside a QEMU VM with the KACC kernel module (tests/bench/kacc-bench.sh vm)"
        top_srcdir=$top_srcdir top_builddir=$top_builddir KUMI_BENCH_OUT=$out \
            KUMI_BENCH_REPS=${KUMI_BENCH_KACCVM_REPS:-$([ "$quick" = 1 ] && echo 1 || echo 3)} \
            KUMI_BENCH_QUICK=$quick KUMI_BENCH_TIMEOUT=$limit bash "$here/kacc-bench.sh" vm ;;
    kaccwire)
        echo; echo "==== the same in the VM with the two ranks on a wire (tests/bench/kacc-bench.sh wire)"
        top_srcdir=$top_srcdir top_builddir=$top_builddir KUMI_BENCH_OUT=$out \
            KUMI_BENCH_REPS=${KUMI_BENCH_KACCWIRE_REPS:-$([ "$quick" = 1 ] && echo 1 || echo 3)} \
            KUMI_BENCH_QUICK=$quick KUMI_BENCH_TIMEOUT=$limit bash "$here/kacc-bench.sh" wire ;;
    launch)
        echo; echo "==== launch time across hosts made of namespaces (tests/bench/launch-bench.sh)"
        top_srcdir=$top_srcdir top_builddir=$top_builddir KUMI_BENCH_OUT=$out \
            KUMI_BENCH_REPS=$([ "$quick" = 1 ] && echo 1 || echo 3) KUMI_BENCH_TIMEOUT=$limit bash "$here/launch-bench.sh" ;;
    npb)
        echo; echo "==== NAS-style kernels, native vs built with Open MPI's wrappers through the shim (tests/bench/npb-bench.sh)"
        top_srcdir=$top_srcdir top_builddir=$top_builddir KUMI_BENCH_OUT=$out KUMI_BENCH_REPS=$reps \
            KUMI_BENCH_QUICK=$quick KUMI_BENCH_TIMEOUT=$limit bash "$here/npb-bench.sh" ;;
    match)
        echo; echo "==== matching that scales: latency with other communicators' receives and unexpected messages (tests/bench/match-bench.sh)"
        top_srcdir=$top_srcdir top_builddir=$top_builddir KUMI_BENCH_OUT=$out KUMI_BENCH_REPS=$reps \
            KUMI_BENCH_QUICK=$quick KUMI_BENCH_TIMEOUT=$limit KUMI_BENCH_PEERS="$want_peers" bash "$here/match-bench.sh" ;;
    mem)
        echo; echo "==== memory per rank after start-up (tests/bench/mem-bench.sh)"
        top_srcdir=$top_srcdir top_builddir=$top_builddir KUMI_BENCH_OUT=$out \
            KUMI_BENCH_QUICK=$quick KUMI_BENCH_TIMEOUT=$limit KUMI_BENCH_PEERS="$want_peers" bash "$here/mem-bench.sh" ;;
    wan)
        echo; echo "==== all-to-all over the wide-area lab, pacing/sockrate off vs on, Open MPI (tests/bench/wan-bench.sh)"
        top_srcdir=$top_srcdir top_builddir=$top_builddir KUMI_BENCH_OUT=$out KUMI_BENCH_QUICK=$quick KUMI_BENCH_PEERS="$want_peers" \
            bash "$here/wan-bench.sh" ;;
    impi)
        echo; echo "==== IMPI vs native tcp across the wide-area lab (tests/bench/impi-bench.sh)"
        top_srcdir=$top_srcdir top_builddir=$top_builddir KUMI_BENCH_OUT=$out KUMI_BENCH_QUICK=$quick \
            bash "$here/impi-bench.sh" ;;
    ckpt)
        echo; echo "==== coordinated checkpoint and restart of 4 ranks against the image size, next to dd; the cost of --ckpt (tests/bench/ckpt-job-bench.sh)"
        sizes="10 100 1000"; [ "$quick" = 1 ] && sizes="10 100"
        top_srcdir=$top_srcdir top_builddir=$top_builddir CKPT_BENCH_SIZES=$sizes CKPT_BENCH_REPS=$reps \
            bash "$here/ckpt-job-bench.sh" ;;
    esac
done

echo
echo "==== targets (measured here; benchmarks, not tests)"
if [ -f "$out/targets" ]; then
    while IFS='|' read -r cfg label met tot; do
        if [ "$met" = "$tot" ]; then r="met"; else r="NOT MET"; fi
        printf "  %-8s %-70s %-8s (%s of %s rows)\n" "$cfg" "$label" "$r" "$met" "$tot"
    done < "$out/targets"
else
    echo "  (no peer results to compare with)"
fi
[ ${#impls[@]} -gt 1 ] || [ "$want_peers" = none ] || echo "no peer MPI installed: KUMI_BENCH_INSTALL=1 (root) or apt-get install openmpi-bin libopenmpi-dev mpich libmpich-dev"
# Kumi's own runs must have worked; a peer's failure is reported, not fatal.
bad=0
for cfg in $configs; do
    for impl in kumi $([ "$cfg" = overlap ] && echo kumithr); do
        st=$(cat "$out/$cfg.$impl.status" 2>/dev/null || echo missing)
        [ "$st" = ok ] || { echo "run-bench: ${name[$impl]} $cfg run: $st (see $out/$cfg.$impl.*.err)"; bad=1; }
    done
done
exit $bad
