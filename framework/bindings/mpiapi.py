"""Reading the MPI API data (shared by mkmpih.py and mkbindings.py).

Errata: ERRATA below replaces prototypes the API data gets wrong.  And in
the API data the large-count prototypes (c_large) lose the '*' of
output parameters (e.g. "int MPI_Type_size_c(MPI_Datatype datatype,
MPI_Count size)"; the standard has "MPI_Count *size").  fixed_large() restores
it: a c_large parameter is a pointer when the same-named parameter of the
int-count prototype is one, and the counts MPI_Type_get_envelope_c returns
are pointers.
"""
import json
import os
import re


def split_params(s):
    s = s.strip()
    if s in ('', 'void'):
        return []
    return [p.strip() for p in s.split(',')]


def parse_param(p):
    p = p.replace('\\ldots', '...')
    if p == '...':
        return {'type': '...', 'name': '', 'array': ''}
    m = re.match(r'(.*?)\s*\b(\w+)\s*((?:\[\s*\w*\s*\])*)$', p)
    if not m:
        raise SystemExit('mpiapi: cannot parse parameter %r' % p)
    return {'type': m.group(1).strip(), 'name': m.group(2), 'array': m.group(3) or ''}


def parse_proto(c):
    c = c.replace('\\ldots', '...').rstrip(';')
    m = re.match(r'(.*?)\b(MPI_\w+)\s*\((.*)\)$', c)
    if not m:
        raise SystemExit('mpiapi: cannot parse %r' % c)
    return m.group(1).strip(), m.group(2), [parse_param(p) for p in split_params(m.group(3))]


def param_text(p):
    if p['type'] == '...':
        return '...'
    t = p['type']
    return '%s %s%s' % (t, p['name'], p['array'])


def fixed_large(c, c_large):
    """The c_large prototype with the erratum above corrected."""
    _, _, small = parse_proto(c)
    ret, name, large = parse_proto(c_large)
    ptr = {p['name'] for p in small if p['type'].endswith('*') and not p['array']}
    for p in large:
        if p['array'] or p['type'].endswith('*'):
            continue
        if p['name'] in ptr or (name == 'MPI_Type_get_envelope_c' and p['name'].startswith('num_')):
            p['type'] += '*'
    return '%s %s(%s)' % (ret, name, ', '.join(param_text(p) for p in large))


# Prototypes the API data gets wrong, corrected from the standard's text.
ERRATA = {
    'MPI_Info_create_env': 'int MPI_Info_create_env(int argc, char *argv[], MPI_Info *info)',
}


def load_api(path):
    """The API data of path (mpi-procedures.json) with the removed MPI-1 procedures of
    mpi-removed.json beside it added (each has 'removed'; the file's constants, MPI_LB and
    MPI_UB, are in 'removed_constants')."""
    api = json.load(open(path))
    rpath = os.path.join(os.path.dirname(os.path.abspath(path)), 'mpi-removed.json')
    if os.path.exists(rpath):
        rem = json.load(open(rpath))
        api['procedures'] = api['procedures'] + rem['procedures']
        api['removed_constants'] = rem.get('constants', [])
    return api


# An implementation function: a line that starts with its return type and names
# kumi_mpi_<name>( (mkbindings.py writes an entry point for each, mkmpih.py declares it)
IMPL_RE = re.compile(r'^[A-Za-z_][\w \*]*?\bkumi_mpi_(\w+)\s*\(', re.M)


def impl_name(name):
    return 'kumi_mpi_' + name[4:].lower()


def implemented(procs, rules, sources):
    """The procedures of procs (name -> (ret, params, kinds)) that libmpi exports: those
    whose implementation kumi_mpi_<name> a source defines, the members of forwarded
    families (mkbindings.py generates their implementation) and those written by hand
    (c_by_hand).  mkbindings.py writes no entry point for a variadic procedure."""
    defined = set()
    for src in sources:
        defined |= {'kumi_mpi_' + m for m in IMPL_RE.findall(open(src).read())}
    out = set()
    for name, (_, params, _) in procs.items():
        r = rules.get(name, {})
        if r.get('c_by_hand'):
            out.add(name)
        elif any(p['type'] == '...' for p in params):
            continue
        elif impl_name(name) in defined or r.get('forward'):
            out.add(name)
    return out


def all_prototypes(api, abi):
    """[(c prototype text, c_params kinds by name)] for every procedure, corrected."""
    out = []
    for p in api['procedures']:
        kinds = {q['name']: q['kind'] for q in (p.get('c_params') or [])}
        if p.get('c'):
            c = p['c'].replace('\\ldots', '...')
            name = c.split('(')[0].split()[-1]
            out.append((ERRATA.get(name, c), kinds))
        if p.get('c_large'):
            out.append((fixed_large(p['c'], p['c_large']), kinds))
    for f in abi.get('functions_not_in_procedures_json', []):
        out.append((f.rstrip(';'), {}))
    return out
