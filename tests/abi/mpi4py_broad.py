# mpi4py_broad: Debian's mpi4py (an Open MPI build) on Kumi through the libmpi.so.40 shim.
# Run by tests/scripts/abi_mpi4py.sh at 1, 2 and 4 ranks: argv[1] is a file name prefix in a
# folder the ranks share.  MPI4PY_BROAD_REFERENCE=1 skips the check that the library is Kumi
# (a reference run on Open MPI itself).  Each part checks results; any failure raises (the rank exits
# non-zero, mpiexec reports it).  Prints "mpi4py_broad: N ranks ok" at rank 0.
import os
import struct
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
prefix = sys.argv[1] if len(sys.argv) > 1 else '/tmp/mpi4py_broad'
right, left = (rank + 1) % size, (rank - 1) % size


def check(cond, what):
    if not cond:
        raise AssertionError('rank %d: %s' % (rank, what))


# ---- the library is Kumi
ver = MPI.Get_library_version()
check(os.environ.get('MPI4PY_BROAD_REFERENCE') == '1' or 'Kumi' in ver or 'kumi' in ver, 'library version %r is not Kumi' % ver[:60])
check(MPI.Get_version() >= (3, 1), 'MPI version %r' % (MPI.Get_version(),))

# ---- point to point: pickled objects, buffers, statuses
obj = {'rank': rank, 'list': list(range(rank + 3)), 'text': 'x' * rank}
got = comm.sendrecv(obj, dest=right, sendtag=7, source=left, recvtag=7)
check(got == {'rank': left, 'list': list(range(left + 3)), 'text': 'x' * left}, 'sendrecv of an object: %r' % (got,))
st = MPI.Status()
req = comm.isend(('hello', rank), dest=right, tag=11)
msg = comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
req.wait()
check(msg == ('hello', left) and st.Get_source() == left and st.Get_tag() == 11, 'recv with wildcards: %r %d %d'
      % (msg, st.Get_source(), st.Get_tag()))
sbuf = bytearray(struct.pack('4i', *[rank * 10 + i for i in range(4)]))
rbuf = bytearray(16)
comm.Sendrecv([sbuf, MPI.INT], dest=right, sendtag=3, recvbuf=[rbuf, MPI.INT], source=left, recvtag=3, status=st)
check(struct.unpack('4i', rbuf) == tuple(left * 10 + i for i in range(4)), 'Sendrecv of buffers')
check(st.Get_count(MPI.INT) == 4 and st.Get_count(MPI.BYTE) == 16, 'status count %d' % st.Get_count(MPI.INT))
check(st.Get_error() == MPI.SUCCESS, 'status error')

# ---- matched probe: mprobe / improbe
comm.send([rank] * 3, dest=right, tag=21)
m = comm.mprobe(source=left, tag=21, status=st)
check(st.Get_source() == left, 'mprobe status source')
check(m.recv() == [left] * 3, 'mrecv')
sreq = comm.Isend([sbuf, MPI.INT], dest=right, tag=22)
m = None
while m is None:
    m = comm.improbe(source=left, tag=22, status=st)
check(st.Get_count(MPI.INT) == 4, 'improbe count')
rb = bytearray(16)
m.Recv([rb, MPI.INT])
sreq.Wait()
check(rb == bytearray(struct.pack('4i', *[left * 10 + i for i in range(4)])), 'Mrecv of buffers')
check(comm.iprobe(source=MPI.ANY_SOURCE, tag=999) is False, 'iprobe found a message that was not sent')

# ---- collectives, MPI.IN_PLACE
check(comm.bcast('root' if rank == 0 else None, root=0) == 'root', 'bcast')
check(comm.allgather(rank) == list(range(size)), 'allgather')
check(comm.allreduce(rank, op=MPI.SUM) == size * (size - 1) // 2, 'allreduce of objects')
check(comm.reduce(rank + 1, op=MPI.PROD, root=0) == (eval('*'.join(str(i + 1) for i in range(size))) if rank == 0 else None),
      'reduce PROD')
buf = bytearray(struct.pack('3i', rank, rank * 2, 1))
comm.Allreduce(MPI.IN_PLACE, [buf, MPI.INT], op=MPI.SUM)
check(struct.unpack('3i', buf) == (size * (size - 1) // 2, size * (size - 1), size), 'Allreduce IN_PLACE')
g = bytearray(4 * size)
g[4 * rank:4 * rank + 4] = struct.pack('i', rank * 3)
comm.Allgather(MPI.IN_PLACE, [g, MPI.INT])
check(struct.unpack('%di' % size, g) == tuple(3 * i for i in range(size)), 'Allgather IN_PLACE')
a2a = comm.alltoall([(rank, j) for j in range(size)])
check(a2a == [(j, rank) for j in range(size)], 'alltoall')
mx = bytearray(struct.pack('i', rank))
comm.Reduce(MPI.IN_PLACE if rank == 0 else [mx, MPI.INT], [mx, MPI.INT] if rank == 0 else None, op=MPI.MAX, root=0)
if rank == 0:
    check(struct.unpack('i', mx)[0] == size - 1, 'Reduce IN_PLACE MAX')
check(comm.scan(1) == rank + 1, 'scan')
comm.Barrier()
ib = bytearray(struct.pack('i', rank))
r = comm.Iallreduce(MPI.IN_PLACE, [ib, MPI.INT], op=MPI.SUM)
r.Wait()
check(struct.unpack('i', ib)[0] == size * (size - 1) // 2, 'Iallreduce IN_PLACE')
sub = comm.Split(rank % 2, -rank)
check(sub.Get_size() == len(range(rank % 2, size, 2)) and sub.allgather(rank) == sorted(range(rank % 2, size, 2), reverse=True),
      'Split with keys')
sub.Free()
dup = comm.Dup()
check(MPI.Comm.Compare(dup, comm) == MPI.CONGRUENT, 'Compare dup')
dup.Set_name('mydup')
check(dup.Get_name() == 'mydup', 'comm name')
dup.Free()
check(dup == MPI.COMM_NULL, 'freed comm not COMM_NULL')

# ---- derived datatypes
vec = MPI.INT.Create_vector(3, 1, 2).Commit()
check(vec.Get_size() == 12 and vec.Get_extent() == (0, 20), 'vector size/extent %r' % (vec.Get_extent(),))
src = bytearray(struct.pack('5i', *[rank * 100 + i for i in range(5)]))
dst = bytearray(12)
comm.Sendrecv([src, 1, vec], dest=right, recvbuf=[dst, 3, MPI.INT], source=left)
check(struct.unpack('3i', dst) == (left * 100, left * 100 + 2, left * 100 + 4), 'vector send')
env = vec.Get_envelope()
check(env[3] == MPI.COMBINER_VECTOR, 'envelope combiner %r' % (env,))
vec.Free()
st_t = MPI.Datatype.Create_struct([1, 1], [0, 8], [MPI.INT, MPI.DOUBLE]).Commit()
check(st_t.Get_size() == 12 and st_t.Get_extent()[1] == 16, 'struct type')
st_t.Free()

# ---- user ops
def compose(inb, inoutb, dt):
    # (p, q) is x -> p*x + q; inout = in o inout: associative, not commutative
    a = memoryview(inb).cast('B').cast('i')
    b = memoryview(inoutb).cast('B').cast('i')
    for i in range(0, len(a), 2):
        b[i], b[i + 1] = a[i] * b[i], a[i] * b[i + 1] + a[i + 1]


op = MPI.Op.Create(compose, commute=False)
ob = bytearray(struct.pack('4i', 2, rank, 1, rank + 1))
res = bytearray(16)
comm.Allreduce([ob, MPI.INT], [res, MPI.INT], op=op)
exp = [1, 0, 1, 0]
for r_ in range(size):      # x0 o x1 o ... in rank order
    exp = [exp[0] * 2, exp[0] * r_ + exp[1], exp[2] * 1, exp[2] * (r_ + 1) + exp[3]]
check(list(struct.unpack('4i', res)) == exp, 'user op: %r not %r' % (struct.unpack('4i', res), exp))
check(not op.Is_commutative(), 'op commutativity')
op.Free()
check(comm.allreduce(rank, op=MPI.MAX) == size - 1, 'allreduce MAX')

# ---- error handlers and exceptions
check(comm.Get_errhandler() is not None, 'get errhandler')
comm.Set_errhandler(MPI.ERRORS_RETURN)
try:
    comm.Send([bytearray(4), MPI.INT], dest=size + 5)
    check(False, 'send to a bad rank did not raise')
except MPI.Exception as e:
    check(e.Get_error_class() == MPI.ERR_RANK, 'error class %d, not ERR_RANK' % e.Get_error_class())
    check(len(e.Get_error_string()) > 0, 'error string')
try:
    MPI.INT.Create_contiguous(-1)
    check(False, 'contiguous -1 did not raise')
except MPI.Exception as e:
    check(e.Get_error_class() in (MPI.ERR_COUNT, MPI.ERR_ARG), 'error class %d for count -1' % e.Get_error_class())
check(MPI.Get_error_class(MPI.ERR_TRUNCATE) == MPI.ERR_TRUNCATE, 'Get_error_class')
ec = MPI.Add_error_class()
MPI.Add_error_string(ec, 'my class')
REF = os.environ.get('MPI4PY_BROAD_REFERENCE') == '1'
check(MPI.Get_error_string(ec) == 'my class', 'Add_error_string %d' % ec)
check(REF or MPI.Get_error_class(ec) == ec, 'class of the added class %d' % ec)   # Open MPI 4.1 answers ERR_UNKNOWN
check(MPI.ERR_TRUNCATE == 15 and MPI.ANY_SOURCE == -1 and MPI.PROC_NULL == -2, 'Open MPI constants in mpi4py')

# ---- info
info = MPI.Info.Create()
info.Set('mykey', 'myvalue')
info['other'] = 'x' * 50
check(info.Get('mykey') == 'myvalue' and info['other'] == 'x' * 50 and info.Get_nkeys() == 2, 'info get')
check(sorted(info.keys()) == ['mykey', 'other'], 'info keys %r' % (info.keys(),))
i2 = info.Dup()
info.Delete('mykey')
check(info.Get('mykey') is None and i2.Get('mykey') == 'myvalue', 'info delete/dup')
info.Free()
i2.Free()

# ---- requests: Waitall, Testany, Waitany
reqs = [comm.Isend([struct.pack('i', rank * 7 + k), MPI.INT], dest=right, tag=30 + k) for k in range(3)]
bufs = [bytearray(4) for _ in range(3)]
rreqs = [comm.Irecv([bufs[k], MPI.INT], source=left, tag=30 + k) for k in range(3)]
sts = [MPI.Status() for _ in range(3)]
MPI.Request.Waitall(rreqs, sts)
check([struct.unpack('i', b)[0] for b in bufs] == [left * 7 + k for k in range(3)], 'Waitall data')
check([s.Get_tag() for s in sts] == [30, 31, 32] and all(s.Get_source() == left for s in sts), 'Waitall statuses')
done = 0
while done < 3:
    idx, flag = MPI.Request.Testany(reqs)
    if flag:
        if idx == MPI.UNDEFINED:
            break
        done += 1
MPI.Request.Waitall(reqs)
check(all(r == MPI.REQUEST_NULL for r in reqs), 'requests not freed')
r1 = comm.Irecv([bytearray(4), MPI.INT], source=MPI.PROC_NULL)
idx = MPI.Request.Waitany([r1], st)
check(idx == 0 and st.Get_source() == MPI.PROC_NULL, 'Waitany on PROC_NULL')

# ---- RMA: Win.Allocate, Put/Get/Accumulate with fences and locks
win = MPI.Win.Allocate(4 * size, disp_unit=4, comm=comm)
mem = win.tomemory() if hasattr(win, 'tomemory') else memoryview(win)
mem[:] = bytes(4 * size)
win.Fence()
win.Put([struct.pack('i', rank + 1), MPI.INT], right, target=rank)
win.Fence()
vals = struct.unpack('%di' % size, bytes(mem))
check(vals[left] == left + 1, 'Put with fences: %r' % (vals,))
win.Fence()
win.Accumulate([struct.pack('i', 10), MPI.INT], 0, target=0, op=MPI.SUM)
win.Fence()
if rank == 0:
    acc = struct.unpack('i', bytes(mem[0:4]))[0]
    check(acc == (1 if size == 1 else 0) + 10 * size, 'Accumulate with fences: %d' % acc)
gb = bytearray(4)
j = (left - 1) % size
win.Lock(left, MPI.LOCK_SHARED)
win.Get([gb, MPI.INT], left, target=j)
win.Unlock(left)
check(struct.unpack('i', gb)[0] == j + 1 + (10 if size == 1 else 0), 'Get under a lock: %d' % struct.unpack('i', gb)[0])
comm.Barrier()
win.Free()
win2 = MPI.Win.Allocate(8, disp_unit=8, comm=comm)
m2 = win2.tomemory() if hasattr(win2, 'tomemory') else memoryview(win2)
m2[:] = struct.pack('q', 0)
comm.Barrier()
win2.Lock(0, MPI.LOCK_SHARED)
win2.Accumulate([struct.pack('q', rank + 1), MPI.INT64_T], 0, op=MPI.SUM)
win2.Unlock(0)
comm.Barrier()
if rank == 0:
    win2.Lock(0, MPI.LOCK_SHARED)
    total = struct.unpack('q', bytes(m2))[0]
    win2.Unlock(0)
    check(total == size * (size + 1) // 2, 'Accumulate under locks: %d' % total)
win2.Free()

# ---- MPI-IO
fname = prefix + '.mpi4py.dat'
if rank == 0 and os.path.exists(fname):
    os.unlink(fname)
comm.Barrier()
fh = MPI.File.Open(comm, fname, MPI.MODE_CREATE | MPI.MODE_RDWR)
fh.Write_at_all(8 * rank, [struct.pack('2i', rank, -rank), MPI.INT])
fh.Sync()
comm.Barrier()
fh.Sync()
check(fh.Get_size() == 8 * size, 'file size %d' % fh.Get_size())
ft = MPI.INT.Create_resized(0, 4 * size).Commit()
fh.Set_view(8 * size + 4 * rank, MPI.INT, ft, 'native')
disp, et, ft2, rep = fh.Get_view()
check(disp == 8 * size + 4 * rank and et == MPI.INT and rep == 'native', 'Get_view %r %r' % (disp, rep))
check(not ft2.is_predefined and ft2.Get_extent() == (0, 4 * size), 'Get_view filetype')
ft2.Free()
fh.Write_all([struct.pack('2i', 100 + rank, 200 + rank), MPI.INT])
fh.Sync()
comm.Barrier()
fh.Sync()
fh.Seek(0)
rb = bytearray(8)
r = fh.Iread([rb, MPI.INT])
r.Wait(st)
check(struct.unpack('2i', rb) == (100 + rank, 200 + rank) and st.Get_count(MPI.INT) == 2, 'Iread through the view')
ft.Free()
fh.Set_errhandler(MPI.ERRORS_RETURN)
try:
    fh.Read_at(-4, [bytearray(4), MPI.INT])
    check(REF, 'read at a negative offset did not raise')     # Open MPI 4.1 reads nothing
except MPI.Exception as e:
    check(e.Get_error_class() in (MPI.ERR_ARG, MPI.ERR_IO), 'file error class %d' % e.Get_error_class())
fh.Close()
comm.Barrier()
if rank == 0:
    data = open(fname, 'rb').read()
    check(len(data) == 16 * size, 'file length %d' % len(data))
    check(struct.unpack('%di' % (2 * size), data[:8 * size]) == tuple(x for i in range(size) for x in (i, -i)),
          'write_at_all bytes')
    check(struct.unpack('%di' % (2 * size), data[8 * size:]) ==
          tuple(list(range(100, 100 + size)) + list(range(200, 200 + size))), 'viewed bytes')
    os.unlink(fname)

comm.Barrier()
if rank == 0:
    print('mpi4py_broad: %d ranks ok' % size, flush=True)
