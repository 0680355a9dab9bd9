#!/bin/bash
# shm-icount: instructions per call of the small-message paths on shared memory (issue 22 item 1),
# counted with callgrind, so independent of the machine's load (not part of make bench: run it by
# hand).  tests/bench/shm_icount.c at 2 ranks (p2p shmem), each under valgrind --tool=callgrind;
# prints the inclusive instruction count of each entry point divided by its number of calls.
# The ranks preload the tree's libmpi (mpiexec puts the library folder of the tree it was
# built in first on their LD_LIBRARY_PATH: for a copied build folder, the original's).
# KINDS="rate lat recv" (the default) chooses the runs; OMPI=1: the rate kind with Open MPI instead
# (mpicc.openmpi, btl vader; its Isend, Irecv and match callback), for comparison.
# Waitall of the receiver and the blocking receives include their waiting (spinning), which
# depends on timing: compare the other lines.  KEEP=1 keeps the callgrind files.  Usage: top_builddir=... tests/bench/shm-icount.sh [N [SIZE (bytes, 0-64; default 8)]]
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
B=${top_builddir:-$top_srcdir/_build}
N=${1:-200}
S=${2:-8}
command -v valgrind > /dev/null || { echo "shm-icount: no valgrind"; exit 77; }
O=$(mktemp -d) || exit 1
if [ -n "${KEEP:-}" ]; then echo "shm-icount: callgrind files kept in $O"; else trap 'rm -rf "$O"' EXIT; fi
${CC:-cc} -std=gnu11 -O2 -I"$B/framework/include" -I"$top_srcdir/framework/include" -o "$O/ic" \
    "$top_srcdir/tests/bench/shm_icount.c" -L"$B/framework/.libs" -Wl,-rpath,"$B/framework/.libs" -lmpi || exit 1
export KUMI_INTERNAL_NO_PKGLIBDIR=1 KUMI_COMPONENT_PATH=$(ls -d "$B"/components/*/*/.libs | tr '\n' ':')
incl() { # FILE FUNCTION: its inclusive instruction count
    callgrind_annotate --inclusive=yes --threshold=100 "$1" 2> /dev/null |
        awk -v f="$2" '{ g = $0; sub(/.*:/, "", g); sub(/ .*/, "", g); c = $1; gsub(/,/, "", c) }
                       g == f { print c; exit }'
}
per() { # FILE FUNCTION CALLS
    awk -v a="$(incl "$1" "$2")" -v n="$3" -v f="$2" 'BEGIN { printf "  %-22s %8.1f\n", f, (a == "" ? 0 : a) / n }'
}
calls() { # FILE FUNCTION: its number of calls
    callgrind_annotate --inclusive=yes --tree=calling --threshold=100 "$1" 2> /dev/null |
        awk -v f="$2" '/%\)  >   / { sub(/.*%\)  >   /, ""); g = $1; sub(/.*:/, "", g); c = $2; gsub(/[(x),]/, "", c)
                                       if (g == f) n += c }
                       END { print n + 0 }'
}
head -c 4096 /dev/zero > "$O/sent"
if [ -n "${OMPI:-}" ]; then   # the rate kind with Open MPI (btl vader), for comparison
    mpicc.openmpi -O2 -o "$O/io" "$top_srcdir/tests/bench/shm_icount.c" || exit 1
    root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
    timeout 900 mpirun.openmpi "${root[@]}" --oversubscribe -n 2 --mca btl self,vader valgrind --tool=callgrind \
        --callgrind-out-file="$O/om.%q{OMPI_COMM_WORLD_RANK}" "$O/io" "$N" rate "$S" "$O/sent" > "$O/run.log" 2>&1 ||
        { echo "shm-icount: Open MPI run failed"; tail -20 "$O/run.log"; exit 1; }
    echo "Open MPI rate (N=$N, $S B; instructions per call, inclusive; the match callback: per message received):"
    echo " rank 0"; per "$O/om.0" PMPI_Isend $((N * 128))
    echo " rank 1"; per "$O/om.1" PMPI_Irecv $((N * 128)); per "$O/om.1" mca_pml_ob1_recv_frag_callback_match $((N * 128))
    exit 0
fi
for kind in ${KINDS:-rate lat recv}; do
    LD_LIBRARY_PATH=$B/framework/.libs timeout 900 env -u MPI_COMPONENTS "$B/tools/mpiexec/mpiexec" -n 2 -x LD_PRELOAD="$B/framework/.libs/libmpi.so.0" \
        valgrind --tool=callgrind --callgrind-out-file="$O/cg.$kind.%q{KUMI_RANK}" "$O/ic" "$N" "$kind" "$S" "$O/sent" \
        > "$O/run.log" 2>&1 || { echo "shm-icount: $kind run failed"; tail -20 "$O/run.log"; exit 1; }
    echo "$kind (N=$N, $S B; instructions per call, inclusive):"
    if [ $kind = rate ]; then
        echo " rank 0"; per "$O/cg.$kind.0" PMPI_Isend $((N * 128)); per "$O/cg.$kind.0" PMPI_Waitall $N
        per "$O/cg.$kind.0" finish_many $((N * 128))
        echo " rank 1"; per "$O/cg.$kind.1" PMPI_Irecv $((N * 128)); per "$O/cg.$kind.1" kumi_p2p_incoming_whole $((N * 129))
        per "$O/cg.$kind.1" p2p_shmem_take_shorts $((N * 128)); per "$O/cg.$kind.1" finish_many $((N * 128))
        per "$O/cg.$kind.1" PMPI_Waitall $N; per "$O/cg.$kind.1" PMPI_Send $N
        echo " (per message: rank 0 Isend + finish_many, rank 1 Irecv + take_shorts + finish_many: the work"
        echo "  of each side without its waiting; take_shorts: the ring's SHORT records, the upcall included)"
    elif [ $kind = recv ]; then
        echo " rank 1 (the message is there when MPI_Recv starts)"; per "$O/cg.$kind.1" PMPI_Recv $N; per "$O/cg.$kind.1" PMPI_Send $N
        echo " rank 0 (waits: MPI_Recv per round of its wait loop, idle rounds; with MPI_Recv's fast path"
        echo "  (p2p_shmem_recv_inline) its polls, each; a line only where the run made such calls)"
        for f in req_done p2p_shmem_recv_inline; do
            n=$(calls "$O/cg.$kind.0" $f); [ "$n" -gt 0 ] && per "$O/cg.$kind.0" PMPI_Recv "$n" && echo "   (per $f call)"
        done
    else
        echo " rank 0"; per "$O/cg.$kind.0" PMPI_Send $N; per "$O/cg.$kind.0" PMPI_Recv $N
        echo " rank 1"; per "$O/cg.$kind.1" PMPI_Send $N; per "$O/cg.$kind.1" PMPI_Recv $N
    fi
done
