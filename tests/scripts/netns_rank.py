#!/usr/bin/env python3
"""Run one rank of a job in a network namespace ("host"), for tests.

    netns_rank.py RANKS_PER_HOST NS0 NS1 ... -- PROGRAM ARGS...

mpiexec starts every rank on this machine, in its own network namespace; the
rank with KUMI_RANK=r runs in NS[r // RANKS_PER_HOST] (a path such as
/run/netns/NAME).  mpiexec's control channel listens on 127.0.0.1, which a
rank in another network namespace cannot reach, so a small relay (a child of
this script) listens on 127.0.0.1 inside the rank's namespace and forwards to
mpiexec's port in ours; KUMI_CONTROL points the rank at the relay.  The job
spans several hosts: KUMI_INTERNAL_NHOSTS is set to the number of namespaces.
The relay ends when the rank does.
"""
import ctypes
import os
import select
import socket
import sys

CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)


def setns(fd):
    if libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "setns: " + os.strerror(e))


def relay(lsock, ctl_port, rank_pid):
    """Child: accept in the rank's namespace, connect out from ours; ends
    when the rank has gone, or its last connection closed."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    pairs = {}
    had = False
    lsock.setblocking(False)
    while True:
        if not pairs and (had or os.getppid() != rank_pid):
            return
        rl = [lsock] + list(pairs)
        try:
            r, _, _ = select.select(rl, [], [], 0.5)
        except InterruptedError:
            continue
        for s in r:
            if s is lsock:
                try:
                    c, _ = lsock.accept()
                except BlockingIOError:
                    continue
                c.setblocking(True)
                # our own namespace is home_fd's: sockets made now live there
                o = socket.create_connection(("127.0.0.1", ctl_port))
                o.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                pairs[c] = o
                pairs[o] = c
                had = True
                continue
            other = pairs.get(s)
            if other is None:
                continue
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if data:
                try:
                    other.sendall(data)
                    continue
                except OSError:
                    pass
            for x in (s, other):
                pairs.pop(x, None)
                x.close()


def main():
    argv = sys.argv[1:]
    if argv[:1] == ["--relay"]:       # the relay, under a command line that names no test program
        relay(socket.socket(fileno=int(argv[1])), int(argv[2]), int(argv[3]))
        return
    if "--" not in argv or len(argv) < 4:
        sys.exit(__doc__)
    cut = argv.index("--")
    per_host = int(argv[0])
    nss = argv[1:cut]
    prog = argv[cut + 1:]
    rank = int(os.environ.get("KUMI_RANK", "0"))
    ns = nss[min(rank // per_host, len(nss) - 1)]
    ctl = os.environ.get("KUMI_CONTROL", "")
    host, _, port = ctl.rpartition(":")
    if host not in ("127.0.0.1", "localhost") or not port.isdigit():
        sys.exit("netns_rank.py: KUMI_CONTROL=%r is not 127.0.0.1:PORT" % ctl)

    home_fd = os.open("/proc/self/ns/net", os.O_RDONLY)
    ns_fd = os.open(ns, os.O_RDONLY)
    setns(ns_fd)                      # the relay's listener lives in the rank's namespace
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(8)
    lport = lsock.getsockname()[1]
    setns(home_fd)
    me = os.getpid()
    if os.fork() == 0:
        try:
            os.set_inheritable(lsock.fileno(), True)
            os.execv(sys.executable, [sys.executable, os.path.abspath(__file__), "--relay",
                                      str(lsock.fileno()), port, str(me)])
        finally:
            os._exit(1)
    lsock.close()
    setns(ns_fd)
    os.close(ns_fd)
    os.close(home_fd)
    os.environ["KUMI_CONTROL"] = "127.0.0.1:%d" % lport
    os.environ["KUMI_INTERNAL_NHOSTS"] = str(len(nss))
    os.execvp(prog[0], prog)


if __name__ == "__main__":
    main()
