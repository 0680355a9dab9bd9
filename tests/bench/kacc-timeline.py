#!/usr/bin/env python3
"""The kmod engine's timeline from a kaccvm console log (kacc-bench.sh vm with
KUMI_BENCH_KACCVM_TRACE=1: the module's trace, kmod/kacc_trace.c, of each kmod
launch, lines "KMODVM-TRACE: IMPL CASE NS CPU CTX EVENT A B").

Per schedule run of a context (START .. finish): when its nodes completed, when
the rank began to wait (its first poll: the compute's end in an overlapped run),
the bytes received and sent by then, the work items' queueing delay (a kick that
queued work to the work item's start) and their time on the rank's CPU and on
others.  Overlapped runs (the first poll at least --min-ms after START) are
summarised per IMPL (medians), and the median run's events are listed.
Overlapped runs: the rank did not poll (wait) before the run finished, at
least --min-ms after START (it computed all along: the run done under the
computation); "waited": the rank polled before the run finished (the
operation alone, the blocking one, or the compute ended first).
The kmod engine's wait polls with a timeout: a waiting rank polls every
~20 ms.

    kacc-timeline.py CONSOLE_LOG [--min-ms 20] [--impl IMPL] [--detail N]
"""
import argparse
import collections
import statistics

KIND = {1: 'start', 2: 'end', 3: 'S', 4: 'R', 5: 'C', 6: 'Y', 7: 'N'}
IOCTL = {1: 'VERSION', 2: 'ADD_SOCKET', 3: 'REGISTER', 4: 'START', 5: 'UNREGISTER', 6: 'NODE_DONE', 7: 'STATS',
         8: 'DIRECT_ID', 9: 'DIRECT_LINK', 10: 'START_TAG'}   # kmod/kumi_kacc_uapi.h


def med(v):
    return statistics.median(v) if v else float('nan')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('log')
    ap.add_argument('--min-ms', type=float, default=20.0)
    ap.add_argument('--impl')
    ap.add_argument('--detail', type=int, default=1)
    a = ap.parse_args()
    ev = collections.defaultdict(list)   # (impl, ctx) -> events
    ioctls = collections.defaultdict(lambda: collections.defaultdict(list))  # impl -> ioctl nr -> us
    for line in open(a.log, errors='replace'):
        f = line.split()
        if len(f) != 9 or f[0] != 'KMODVM-TRACE:':
            continue
        impl, _case, t, cpu, ctx, name, x, y = f[1], f[2], int(f[3]), int(f[4]), f[5], f[6], int(f[7]), int(f[8])
        if a.impl and impl != a.impl:
            continue
        ev[(impl, ctx)].append((t, cpu, name, x, y))
        if name == 'ioctl':
            ioctls[impl][x].append(y / 1e3)
    # the ioctls' time in the kernel (us, medians): a non-persistent collective pays REGISTER
    # (validation, pinning its buffers), START and UNREGISTER (unpinning) each time
    for impl, per in sorted(ioctls.items()):
        print(f'== {impl}: ioctls (median us in the kernel, count): ' +
              ', '.join(f'{IOCTL.get(nr, nr)} {med(v):.1f} ({len(v)})' for nr, v in sorted(per.items())))
    runs = collections.defaultdict(list)  # impl -> run dicts
    for (impl, ctx), es in ev.items():
        es.sort()
        r = None
        pend = None          # time of the first queued kick not yet started
        last = None          # the run finished last
        for t, cpu, name, x, y in es:
            if name == 'start':
                r = dict(ctx=ctx, t0=t, poll=None, after=None, nodes=[], recv=0, sent=0, recv_poll=None, sent_poll=None,
                         qdel=[], work_own=0, work_oth=0, nwork=0, eagain=0, ev=[], fin=None, cpu0=cpu)
                continue
            if r is None:
                if name == 'poll' and last is not None and last['poll'] is None and last['after'] is None:
                    last['after'] = (t - last['t0']) / 1e6      # the compute's end
                continue
            rel = (t - r['t0']) / 1e6
            r['ev'].append((rel, cpu, name, x, y))
            if name == 'poll' and r['poll'] is None:
                r['poll'] = rel
                r['recv_poll'], r['sent_poll'] = r['recv'], r['sent']
            elif name == 'node':
                r['nodes'].append((rel, KIND.get(y >> 24, '?') + str(y & 0xffffff)))
            elif name == 'recvd':
                r['recv'] += x
            elif name == 'sent':
                r['sent'] += x
                r['eagain'] += y
            elif name == 'kick' and y and pend is None:
                pend = t
            elif name == 'wbegin':
                if pend is not None:
                    r['qdel'].append((t - pend) / 1e6)
                pend = None
            elif name == 'wend':
                r['nwork'] += 1
                r['work_own' if x else 'work_oth'] += y / 1e6
            elif name == 'finish':
                r['fin'] = rel
                if r['poll'] is None:
                    r['recv_poll'], r['sent_poll'] = r['recv'], r['sent']
                runs[impl].append(r)
                last, r = r, None
    for impl, rs in sorted(runs.items()):
        ov = [r for r in rs if r['poll'] is None and r['fin'] >= a.min_ms]
        alone = [r for r in rs if r['poll'] is not None]
        print(f'== {impl}: {len(rs)} runs, {len(ov)} overlapped (done, at least {a.min_ms} ms after START, before'
              f' the rank waited), {len(alone)} waited')
        for label, sel in (('overlapped', ov), ('waited', alone)):
            if not sel:
                continue
            q = [d for r in sel for d in r['qdel']]
            fp = [r['poll'] if r['poll'] is not None else r['after'] for r in sel]
            print(f'  {label}: finish {med([r["fin"] for r in sel]):.1f} ms, first poll'
                  f' {med([x for x in fp if x is not None]):.1f} ms;'
                  f' by then recv {med([r["recv_poll"] for r in sel]) / 1024:.0f} KiB of {med([r["recv"] for r in sel]) / 1024:.0f},'
                  f' sent {med([r["sent_poll"] for r in sel]) / 1024:.0f} KiB of {med([r["sent"] for r in sel]) / 1024:.0f};'
                  f' work items {med([r["nwork"] for r in sel]):.0f}/run, {med([r["work_own"] for r in sel]):.1f} ms own CPU,'
                  f' {med([r["work_oth"] for r in sel]):.1f} ms other; queue delay median {med(q):.2f} ms,'
                  f' p90 {sorted(q)[int(len(q) * .9)] if q else float("nan"):.2f}, max {max(q) if q else float("nan"):.1f} ms;'
                  f' sends stopped by a full buffer {med([r["eagain"] for r in sel]):.0f}/run')
            byname = collections.defaultdict(list)
            for r in sel:
                for rel, n in r['nodes']:
                    byname[n].append(rel)
            print('    node done (median ms after START): ' +
                  ' '.join(f'{n}@{med(v):.1f}' for n, v in sorted(byname.items(), key=lambda kv: med(kv[1]))))
        for r in sorted(ov, key=lambda r: r['fin'])[len(ov) // 2:len(ov) // 2 + a.detail] if ov else []:
            print(f'  the median overlapped run (ctx {r["ctx"]}, CPU {r["cpu0"]} at START):')
            acc_r = acc_s = 0
            for rel, cpu, name, x, y in r['ev']:
                if name == 'recvd':
                    acc_r += x
                if name == 'sent':
                    acc_s += x
                extra = {'node': lambda: KIND.get(y >> 24, '?') + str(y & 0xffffff),
                         'recvd': lambda: f'+{x} ={acc_r // 1024}K', 'sent': lambda: f'+{x} ={acc_s // 1024}K' + (' EAGAIN' if y else ''),
                         'wend': lambda: f'{y / 1e6:.2f} ms {"own" if x else "other"}',
                         'kick': lambda: ['own', 'unbound', 'any', 'the waiting rank', 'the rank in an ioctl'][x] + ('' if y else ' (pending)')}.get(name, lambda: '')()
                print(f'    {rel:8.2f} cpu{cpu} {name} {extra}')


if __name__ == '__main__':
    main()
