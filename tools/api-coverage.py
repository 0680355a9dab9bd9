#!/usr/bin/env python3
"""Which MPI procedures of the API data does a built libmpi export?

usage: tools/api-coverage.py [--lib PATH/libmpi.so] [--data data/mpi-procedures.json]
                             [--missing-only] [--with-large] [--with-deprecated]

Reads the MPI 4.1 API data (the same file the bindings are generated from)
and the dynamic symbols of the library (nm -D), and prints, per procedure,
whether MPI_<Name> is exported; then a summary.  By default the large-count
(_c) variants and deprecated procedures are counted separately, so the main
number answers "what of MPI-4.1 can a program call".
"""
import argparse
import json
import os
import subprocess
import sys


def exported(lib):
    out = subprocess.run(['nm', '-D', '--defined-only', lib], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split() and line.split()[-1].startswith('MPI_')}


def main():
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--lib', default=os.path.join(top, '_build', 'framework', '.libs', 'libmpi.so'))
    ap.add_argument('--data', default=os.path.join(top, 'data', 'mpi-procedures.json'))
    ap.add_argument('--missing-only', action='store_true', help='list only what is missing')
    ap.add_argument('--with-large', action='store_true', help='also list missing _c (large-count) variants')
    ap.add_argument('--with-deprecated', action='store_true', help='also list missing deprecated procedures')
    a = ap.parse_args()
    if not os.path.exists(a.lib):
        sys.exit('api-coverage: %s not found (build first, or pass --lib)' % a.lib)
    have = exported(a.lib)
    api = json.load(open(a.data))
    rows = []                     # (name, kind) kind: main / large / deprecated
    for p in api['procedures']:
        c = p.get('c')
        if not c:
            continue
        name = c.split('(')[0].split()[-1]
        rows.append((name, 'deprecated' if p.get('deprecated') else 'main'))
        if p.get('c_large'):
            rows.append((name + '_c', 'large'))
    total = {k: 0 for k in ('main', 'large', 'deprecated')}
    done = dict(total)
    missing = {k: [] for k in total}
    for name, kind in rows:
        total[kind] += 1
        if name in have:
            done[kind] += 1
        else:
            missing[kind].append(name)
    show = ['main'] + (['large'] if a.with_large else []) + (['deprecated'] if a.with_deprecated else [])
    for kind in show:
        if not a.missing_only:
            print('== %s procedures exported: %d of %d' % (kind, done[kind], total[kind]))
        for n in sorted(missing[kind]):
            print('missing%s: %s' % ('' if kind == 'main' else ' (%s)' % kind, n))
    print('MPI-4.1 procedures: %d of %d exported; large-count variants: %d of %d; deprecated: %d of %d'
          % (done['main'], total['main'], done['large'], total['large'], done['deprecated'], total['deprecated']))


if __name__ == '__main__':
    main()
