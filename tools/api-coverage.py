#!/usr/bin/env python3
"""Which MPI procedures does a built libmpi export?

usage: tools/api-coverage.py [--lib PATH/libmpi.so] [--data data/mpi-procedures.json]
                             [--abi data/mpi-abi-1.0.json] [--missing-only] [--check]

Reads the MPI 4.1 API data (the same file the bindings are generated from,
with the removed MPI-1 procedures of data/mpi-removed.json beside it), the
MPI 5.0 additions of the standard ABI facts, and the dynamic symbols of the
library (nm -D).  A procedure counts as exported when both MPI_<Name> and
PMPI_<Name> are.  The summary answers "every MPI-4.1 procedure exported, and
every large-count form":

  in scope      MPI-4.1 procedures (deprecated ones included), MPI-IO
                (MPI_File_*, MPI_Register_datarep*) included; their
                large-count (_c) forms; the MPI 5.0 procedures of the
                standard ABI; the removed MPI-1 procedures; the MPI_T tools
                interface (MPI_T_*); dynamic processes (spawn, ports, connect
                / accept / join / disconnect, get_parent, name publishing)

Lists what is missing (in scope; --missing-only lists nothing else), then the
summary.  --check: exit status 1 if anything in scope is missing.
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'framework', 'bindings'))
from mpiapi import load_api  # noqa: E402

DYNAMIC = re.compile(r'^MPI_(Comm_spawn(_multiple)?|Open_port|Close_port|Comm_accept|Comm_connect|Comm_join|'
                     r'Comm_disconnect|Comm_get_parent|Publish_name|Lookup_name|Unpublish_name)$')


def chapter(name):
    """The chapter counted apart of a procedure (its int-count name), or None."""
    if DYNAMIC.match(name):
        return 'dynamic processes'
    if name.startswith('MPI_T_'):
        return 'MPI_T'
    return None


def exported(lib):
    out = subprocess.run(['nm', '-D', '--defined-only', lib], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split() and 'MPI_' in line.split()[-1]}


def cname(c):
    return c.replace('\\ldots', '...').split('(')[0].split()[-1]


def main():
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--lib', default=os.path.join(top, '_build', 'framework', '.libs', 'libmpi.so'))
    ap.add_argument('--data', default=os.path.join(top, 'data', 'mpi-procedures.json'))
    ap.add_argument('--abi', default=os.path.join(top, 'data', 'mpi-abi-1.0.json'))
    ap.add_argument('--missing-only', action='store_true', help='list only what is missing')
    ap.add_argument('--check', action='store_true', help='exit status 1 if anything in scope is missing')
    a = ap.parse_args()
    if not os.path.exists(a.lib):
        sys.exit('api-coverage: %s not found (build first, or pass --lib)' % a.lib)
    have = exported(a.lib)
    api = load_api(a.data)
    abi = json.load(open(a.abi))
    # group -> [names]; groups in scope: main, large, abi5, removed; out: the chapters
    groups = {}
    seen = set()

    def add(group, name):
        if name not in seen:
            seen.add(name)
            groups.setdefault(group, []).append(name)

    for p in api['procedures']:
        if not p.get('c'):
            continue
        name = cname(p['c'])
        ch = chapter(name)
        if p.get('removed'):
            add('removed', name)
            continue
        add(ch or 'main', name)
        if p.get('c_large'):
            add((ch + ' (large-count)') if ch else 'large', cname(p['c_large']))
    for f in abi.get('functions_not_in_procedures_json', []):
        name = cname(f)
        ch = chapter(name[:-2] if name.endswith('_c') else name)
        add(ch or 'abi5', name)
    ok = lambda n: n in have and 'P' + n in have  # noqa: E731
    titles = [('main', 'MPI-4.1 procedures outside dynamic processes and MPI_T'),
              ('dynamic processes', 'dynamic processes (MPI-4.1 chapter 11)'),
              ('MPI_T', 'the MPI_T tools interface (MPI-4.1 chapter 15)'),
              ('large', 'their large-count (_c) forms'),
              ('abi5', 'MPI 5.0 procedures of the standard ABI 1.0'),
              ('removed', 'removed MPI-1 procedures (data/mpi-removed.json)')]
    in_scope = [g for g, _ in titles]
    missing = 0
    for g in in_scope:
        for n in sorted(groups.get(g, [])):
            if not ok(n):
                missing += 1
                print('missing (%s): %s' % (g, n))
    if not a.missing_only:
        print('== in scope')
        for g, title in titles:
            names = groups.get(g, [])
            print('%-66s %4d of %4d exported' % (title + ':', sum(ok(n) for n in names), len(names)))
        rest = sorted(g for g in groups if g not in in_scope)
        if rest:
            print('== out of scope (not checked)')
            for g in rest:
                names = groups[g]
                print('%-66s %4d of %4d exported' % (g + ':', sum(ok(n) for n in names), len(names)))
        print('in scope: %s' % ('everything exported' if not missing else '%d missing' % missing))
    if a.check and missing:
        sys.exit(1)


if __name__ == '__main__':
    main()
