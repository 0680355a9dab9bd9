#!/usr/bin/env python3
"""Checks the layering of libmpi's sources (framework/*/), lowest first:

    include (framework/include: mpi.h, the kumi/ contracts; and the generated
             declarations kumi_impl.h and config.h)
      <- registry <- core <- request <- sched, rma <- mpi, mpit <- io <- bindings

1. #include lines: a file includes headers of its own folder or of lower
   layers only (sched and rma, on one level, include neither each other).
2. With --objects BUILDDIR/framework: the symbols an object file uses that
   another object of libmpi defines must come from its own layer or a lower
   one.  The services that every layer and every component may call are
   declared in kumi/kumi.h and kumi/param.h (logging, errors, parameters) and
   are exempt.  Pairs listed in --allow FILE (object -> symbol, with the
   reason) are known debts, reported but not failed; a listed pair that no
   longer occurs is reported so the list shrinks.

--inject FILE:HEADER pretends FILE includes HEADER (the self-test of
tests/scripts/struct_layers.sh).  Exit 0 when clean, 1 otherwise."""
import argparse, collections, os, re, subprocess, sys

LAYERS = {'include': 0, 'registry': 1, 'core': 2, 'request': 3, 'sched': 4, 'rma': 4, 'mpi': 5, 'mpit': 5, 'io': 6, 'bindings': 7}
INCLUDE_LEVEL = {'kumi_impl.h', 'config.h'}
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(path):
    parts = path.split('/')
    return parts[1] if len(parts) > 2 and parts[0] == 'framework' else None


def check_includes(top, inject, allow, seen):
    bad = []
    edges = collections.defaultdict(set)
    files = []
    for d in LAYERS:
        base = os.path.join(top, 'framework', d)
        if not os.path.isdir(base) or d == 'include':
            continue
        for f in sorted(os.listdir(base)):
            if f.endswith(('.c', '.h')):
                files.append('framework/%s/%s' % (d, f))
    extra = collections.defaultdict(list)
    for spec in inject:
        f, h = spec.split(':', 1)
        extra[f].append(h)
    for rel in files:
        me = folder_of(rel)
        with open(os.path.join(top, rel), errors='replace') as fh:
            incs = [(n + 1, m.group(1)) for n, line in enumerate(fh) if (m := INC.match(line))]
        incs += [(0, h) for h in extra.get(rel, [])]
        for line, h in incs:
            if h in INCLUDE_LEVEL or '/' not in h:
                continue               # generated declarations, or a header of the same folder
            d = h.split('/')[0]
            if d not in LAYERS:
                continue
            edges[me].add(d)
            if d != me and LAYERS[d] >= LAYERS[me]:
                pair = '%s includes %s' % (rel, h)
                if pair in allow and line:
                    seen.add(pair)
                    continue
                bad.append('%s:%s: includes "%s": %s (layer %d) may not include %s (layer %d)'
                           % (rel, line or 'injected', h, me, LAYERS[me], d, LAYERS[d]))
    return bad, edges


def nm_symbols(obj):
    out = subprocess.run(['nm', obj], capture_output=True, text=True, check=True).stdout
    defs, undefs = set(), set()
    for l in out.splitlines():
        p = l.split()
        if len(p) == 3 and p[1] in 'TDBRVW':
            defs.add(p[2])
        elif len(p) == 2 and p[0] == 'U':
            undefs.add(p[1])
    return defs, undefs


def service_names(top):
    names = set()
    for h in ('kumi.h', 'param.h'):
        with open(os.path.join(top, 'framework/include/kumi', h)) as fh:
            names.update(re.findall(r'\b(kumi_\w+)\s*\(', fh.read()))
            fh.seek(0)
            names.update(re.findall(r'extern\s+[\w\s\*]+\b(kumi_\w+)\s*;', fh.read()))
    return names


def check_symbols(top, objdir, allow, seen):
    owner = {}
    used = {}
    for d in LAYERS:
        libs = os.path.join(objdir, d, '.libs')
        if not os.path.isdir(libs):
            continue
        for f in sorted(os.listdir(libs)):
            src = os.path.join(top, 'framework', d, f[:-2] + '.c')
            if f.endswith('.o') and (d == 'bindings' or os.path.exists(src)):   # not a stale object
                key = '%s/%s' % (d, f)
                defs, undefs = nm_symbols(os.path.join(libs, f))
                for s in defs:
                    owner[s] = key
                used[key] = undefs
    exempt = service_names(top)
    bad, known = [], []
    for obj, syms in sorted(used.items()):
        me = obj.split('/')[0]
        for s in sorted(syms):
            o = owner.get(s)
            if not o or s in exempt:
                continue
            d = o.split('/')[0]
            if d != me and LAYERS[d] >= LAYERS[me]:
                pair = '%s -> %s' % (obj, s)
                msg = '%s calls %s, defined in %s (layer %s above %s)' % (obj, s, o, d, me)
                if pair in allow:
                    known.append(msg + '  [known: %s]' % allow[pair])
                    seen.add(pair)
                else:
                    bad.append(msg)
    return bad, known


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--top', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    ap.add_argument('--objects', help='the build tree\'s framework folder (object files)')
    ap.add_argument('--allow', help='known upward calls: lines "object -> symbol  # reason"')
    ap.add_argument('--inject', action='append', default=[])
    a = ap.parse_args()
    allow = {}
    if a.allow:
        for line in open(a.allow):
            line = line.strip()
            if line and not line.startswith('#'):
                pair, _, why = line.partition('#')
                allow[pair.strip()] = why.strip()
    seen = set()
    bad, edges = check_includes(a.top, a.inject, allow, seen)
    known = []
    if a.objects:
        b2, known = check_symbols(a.top, a.objects, allow, seen)
        bad += b2
    stale = sorted(p for p in set(allow) - seen if a.objects or ' includes ' in p)
    for m in known:
        print('known: ' + m)
    for m in stale:
        print('stale allow entry (no longer needed, remove it): ' + m)
    for m in bad:
        print('LAYER VIOLATION: ' + m)
    print('folders: ' + '; '.join('%s -> %s' % (k, ','.join(sorted(v - {k}))) for k, v in sorted(edges.items())))
    print('%d violation(s), %d known' % (len(bad), len(known)))
    return 1 if bad or stale else 0


if __name__ == '__main__':
    sys.exit(main())
