"""Reading the MPI API data (shared by mkmpih.py and mkbindings.py).

Errata: ERRATA below replaces prototypes the API data gets wrong.  And in
the API data the large-count prototypes (c_large) lose the '*' of
output parameters (e.g. "int MPI_Type_size_c(MPI_Datatype datatype,
MPI_Count size)"; the standard has "MPI_Count *size").  fixed_large() restores
it: a c_large parameter is a pointer when the same-named parameter of the
int-count prototype is one, and the counts MPI_Type_get_envelope_c returns
are pointers.
"""
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
