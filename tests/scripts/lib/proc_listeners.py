"""The listening IPv4 TCP sockets a process holds, read from /proc (for the
test scripts: python3 proc_listeners.py PID prints "ip:port" lines)."""
import os
import socket
import struct
import sys


def listeners(pid):
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            t = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if t.startswith("socket:["):
            inodes.add(t[8:-1])
    out = []
    for line in open(f"/proc/{pid}/net/tcp").readlines()[1:]:
        f = line.split()
        if f[3] == "0A" and f[9] in inodes:
            ip, port = f[1].split(":")
            out.append((socket.inet_ntoa(struct.pack('<I', int(ip, 16))), int(port, 16)))
    return out


if __name__ == "__main__":
    for ip, port in listeners(sys.argv[1]):
        print(f"{ip}:{port}")
