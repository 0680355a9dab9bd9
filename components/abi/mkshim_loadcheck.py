"""The load-time checks of the generated shims: C that walks the dynamic sections of the objects
loaded so far (dl_iterate_phdr) and names each undefined symbol the shim cannot serve, so that a
program needing one stops at load instead of failing later at an unresolved symbol.  One
template (elf_scan_text) serves the C shims (mkshim.py: an MPI_* / PMPI_* this library does not
export) and the Fortran shims (load_check_text, for mkshim_fortran.py and mkshim_f08.py: one of a
sorted list of procedures not translated yet)."""


def elf_scan_text(p, lib, abi, arg, count, wanted, skip=''):
    """The C of P_scan_rela (the undefined symbols of one relocation table) and P_scan_one (a
    dl_iterate_phdr callback: the object's RELA and JMPREL tables).  arg: the C declaration of
    the callback's argument as P_scan_rela takes it; count: the C lvalue counting the symbols
    found; wanted: a C condition on the symbol's name n (const char *) for one to report;
    skip: C statements at the start of P_scan_one (info, arg) that return 0 for an object not
    to scan."""
    return '''#include <link.h>
static void %(p)s_scan_rela(const ElfW(Rela) *r, size_t bytes, const ElfW(Sym) *sym, const char *str, %(arg)s)
{
    for (size_t i = 0; r && i < bytes / sizeof *r; i++) {
        size_t k = ELF64_R_SYM(r[i].r_info);
        if (k == 0 || sym[k].st_shndx != SHN_UNDEF) continue;
        const char *n = str + sym[k].st_name;
        if (%(wanted)s && %(count)s++ < 20)
            fprintf(stderr, "%(lib)s (Kumi's %(abi)s ABI): %%s is not provided yet\\n", n);
    }
}
static int %(p)s_scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
%(skip)s    for (int p = 0; p < info->dlpi_phnum; p++) {
        if (info->dlpi_phdr[p].p_type != PT_DYNAMIC) continue;
        const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[p].p_vaddr);
        const ElfW(Rela) *rela = NULL, *jmp = NULL;
        const ElfW(Sym) *sym = NULL;
        const char *str = NULL;
        size_t relasz = 0, jmpsz = 0;
        long pltrel = DT_RELA;
        for (; d->d_tag != DT_NULL; d++) {
            switch (d->d_tag) {   /* relocated by the loader: absolute addresses */
            case DT_RELA: rela = (const ElfW(Rela) *)d->d_un.d_ptr; break;
            case DT_RELASZ: relasz = d->d_un.d_val; break;
            case DT_JMPREL: jmp = (const ElfW(Rela) *)d->d_un.d_ptr; break;
            case DT_PLTRELSZ: jmpsz = d->d_un.d_val; break;
            case DT_PLTREL: pltrel = (long)d->d_un.d_val; break;
            case DT_SYMTAB: sym = (const ElfW(Sym) *)d->d_un.d_ptr; break;
            case DT_STRTAB: str = (const char *)d->d_un.d_ptr; break;
            }
        }
        if (!sym || !str || pltrel != DT_RELA) return 0;
        %(p)s_scan_rela(rela, relasz, sym, str, arg);
        %(p)s_scan_rela(jmp, jmpsz, sym, str, arg);
    }
    return 0;
}''' % {'p': p, 'lib': lib, 'abi': abi, 'arg': arg, 'count': count, 'wanted': wanted, 'skip': skip}


def load_check_text(missing, prefix, lib, abi, what):
    """The C of a Fortran shim's load-time check: the sorted symbols `missing`, and a constructor
    that stops a program importing any of them, naming them (also used by mkshim_f08.py)."""
    out = ['/* ---- at load: the program needs none of the procedures this library lacks */',
           'static const char *const %s_missing[] = {' % prefix]
    out.extend('    "%s",' % n for n in missing)
    out.append('};')
    out.append('''#include <stdio.h>
#include <unistd.h>
static int %(p)s_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }''' % {'p': prefix})
    out.append(elf_scan_text(prefix, lib, abi, 'int *missing', '(*missing)',
                             'bsearch(&n, %(p)s_missing, sizeof %(p)s_missing / sizeof %(p)s_missing[0], '
                             'sizeof %(p)s_missing[0], %(p)s_cmp)' % {'p': prefix}))
    out.append('''__attribute__((constructor)) static void %(p)s_load(void)
{
    int missing = 0;
    dl_iterate_phdr(%(p)s_scan_one, &missing);
    if (missing) {
        fprintf(stderr, "%(lib)s (Kumi's %(abi)s ABI): the program needs %%d %(what)s procedure(s) this library does not translate yet\\n", missing);
        _exit(127);
    }
}''' % {'lib': lib, 'abi': abi, 'p': prefix, 'what': what})
    return '\n'.join(out)
