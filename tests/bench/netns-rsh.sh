#!/bin/bash
# An rsh agent for Open MPI's launcher over network namespaces on this one
# machine (tests/bench/wan-bench.sh), instead of ssh:
#
#     mpirun.openmpi --mca plm_rsh_agent "$top_srcdir/tests/bench/netns-rsh.sh" ...
#
# mpirun calls it as `netns-rsh.sh [ssh options] HOST COMMAND...` to start its
# daemon (orted) on HOST.  HOST names a namespace through NETNS_RSH_MAP
# ("host1=/run/netns/NS1 host2=/run/netns/NS2", paths or names).  The command
# runs, like ssh's, through sh -c in that network namespace and in a new UTS
# namespace whose host name is HOST: each daemon then sees itself as a host of
# its own (Open MPI keys its session directories and shared-memory segments
# by host name, and puts ranks of one host name on one node).
set -u
while [ $# -gt 0 ]; do
    case $1 in
    -[1246AaCfgKkMNnqsTtVvXxYy]) shift ;;   # ssh's flags without an argument
    -[bcDeFIiJLlmOoPpRSWw]) shift 2 ;;      # ssh's options with one
    -*) shift ;;
    *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "netns-rsh.sh: usage: netns-rsh.sh HOST COMMAND..." >&2; exit 2; }
host=$1
shift
ns=
for m in ${NETNS_RSH_MAP:-}; do
    [ "${m%%=*}" = "$host" ] && ns=${m#*=}
done
[ -n "$ns" ] || { echo "netns-rsh.sh: host $host is not in NETNS_RSH_MAP ($NETNS_RSH_MAP)" >&2; exit 255; }
ns=${ns##*/}
# ssh hands the remote shell its arguments joined by spaces
exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$1" && shift && eval "$*"' netns-rsh "$host" "$*"
