"""Reading Kumi's binding rules (data/kumi-bindings.json; format in data/README.md).

rules = load_rules(path, procs) gives, for every procedure name of the API
data (procs: name -> (return type, parameters, kinds)), the merged properties
of the entries whose patterns match it.  A pattern is a procedure name with
optional globs (* ? [..]) and braces ({a,b} expands to a and b, nested or
repeated); it matches names regardless of case (MPI names differ by more than
case, as Fortran requires).  Anything the generator could not honour is an
error naming the entry: a pattern that matches no procedure, an unknown
property, a parameter the procedure does not have, a property given twice for
one procedure.
"""
import fnmatch
import json
import re

PROPS = {'name', 'note', 'procedures', 'anytime', 'nolock', 'null_ok', 'null_buffers', 'op_datatype',
         'ranks', 'any_tag', 'forward', 'significant', 'direct_return', 'fast',
         # read by mkfortran.py and mkmpih.py
         'fortran_by_hand', 'c_by_hand', 'fortran_lengths', 'fortran_absent', 'fortran_one_based',
         'sentinel_arrays'}
RANK_CHECKS = ('dest', 'source', 'root')
SENTINEL_KINDS = ('weights', 'errcodes')
# properties whose value is a list or an object keyed by parameter names of the procedure
PARAM_KEYED = ('null_ok', 'any_tag', 'ranks', 'fortran_lengths', 'fortran_absent', 'fortran_one_based',
               'sentinel_arrays', 'significant')
# what a condition of 'significant' may name besides the procedure's parameters
SIG_NAMES = re.compile(r'^(k_comm|k_win|kumi_sig_\w+|MPI_IN_PLACE|MPI_NO_OP|MPI_PROC_NULL|MPI_ROOT|sizeof)$')


class RuleError(Exception):
    pass


def expand_braces(pat):
    m = re.search(r'\{([^{}]*)\}', pat)
    if not m:
        return [pat]
    out = []
    for alt in m.group(1).split(','):
        out.extend(expand_braces(pat[:m.start()] + alt + pat[m.end():]))
    return out


def match(pattern, names):
    """The names (in their order) that pattern matches."""
    pats = [p.lower() for p in expand_braces(pattern)]
    return [n for n in names if any(fnmatch.fnmatchcase(n.lower(), p) for p in pats)]


def load_rules(path, procs):
    data = json.load(open(path))
    rules = {}
    names = list(procs)
    for i, e in enumerate(data.get('entries', [])):
        where = 'entry %d (%s)' % (i + 1, e.get('name', '?'))
        bad = set(e) - PROPS
        if bad:
            raise RuleError('%s: unknown properties %s' % (where, ', '.join(sorted(bad))))
        if not e.get('procedures'):
            raise RuleError('%s: no procedures' % where)
        members = []
        for pat in e['procedures']:
            got = match(pat, names)
            if not got:
                raise RuleError('%s: pattern %r matches no procedure of the API data' % (where, pat))
            members += [n for n in got if n not in members]
        for n in members:
            _, params, kinds = procs[n]
            pnames = {p['name'] for p in params}
            r = rules.setdefault(n, {})
            for k, v in e.items():
                if k in ('name', 'note', 'procedures'):
                    continue
                if k in r:
                    raise RuleError('%s: %s given twice for %s (also in %s)' % (where, k, n, r[k][1]))
                if k in ('fortran_by_hand', 'c_by_hand') and v is not True:
                    raise RuleError('%s: %s must be true, not %r' % (where, k, v))
                if k in PARAM_KEYED[3:] and not isinstance(v, dict):
                    raise RuleError('%s: %s must be an object keyed by parameter names' % (where, k))
                for pn in (v if k in PARAM_KEYED else []):
                    if pn not in pnames:
                        raise RuleError('%s: %s has no parameter %r (%s)' % (where, n, pn, k))
                if k == 'fortran_lengths':
                    for pn, ln in v.items():
                        if ln not in pnames and not re.fullmatch(r'kf_\w+\(k_\w+\)', str(ln)):
                            raise RuleError('%s: length %r of %s is neither a parameter of %s nor kf_<fn>(k_<handle>)'
                                            % (where, ln, pn, n))
                if k == 'fortran_one_based':
                    for pn, cnt in v.items():
                        if cnt is not True and cnt not in pnames:
                            raise RuleError('%s: %s of %s must be true (a scalar) or the parameter that counts '
                                            'the array' % (where, pn, n))
                if k == 'sentinel_arrays':
                    for pn, kind in v.items():
                        if kind not in SENTINEL_KINDS:
                            raise RuleError('%s: sentinel kind %r of %s is none of %s'
                                            % (where, kind, pn, ', '.join(SENTINEL_KINDS)))
                if k == 'ranks':
                    for pn, check in v.items():
                        if check not in RANK_CHECKS:
                            raise RuleError('%s: rank check %r is none of %s' % (where, check, ', '.join(RANK_CHECKS)))
                        if kinds.get(pn) != 'RANK':
                            raise RuleError('%s: %s parameter %r is not a rank in the API data' % (where, n, pn))
                if k == 'significant':
                    for pn, cond in v.items():
                        if not isinstance(cond, str) or not cond.strip():
                            raise RuleError('%s: condition of %s must be a C expression' % (where, pn))
                        for ident in re.findall(r'[A-Za-z_]\w*', re.sub(r'"[^"]*"', '', cond)):
                            if ident not in pnames and not SIG_NAMES.match(ident):
                                raise RuleError('%s: condition %r of %s names %r, neither a parameter of %s '
                                                'nor k_comm, k_win, kumi_sig_*, MPI_IN_PLACE, MPI_NO_OP, '
                                                'MPI_PROC_NULL, MPI_ROOT' % (where, cond, pn, ident, n))
                if k == 'any_tag':
                    for pn in v:
                        if kinds.get(pn) != 'TAG':
                            raise RuleError('%s: %s parameter %r is not a tag in the API data' % (where, n, pn))
                r[k] = (v, where)
    return {n: {k: v for k, (v, _) in r.items()} for n, r in rules.items()}
