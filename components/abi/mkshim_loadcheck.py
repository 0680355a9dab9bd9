"""The load-time check of a generated Fortran shim (mkshim_fortran.py, mkshim_f08.py): C that
stops a program importing a procedure the shim does not translate yet, naming it, instead of
failing later at an unresolved symbol."""


def load_check_text(missing, prefix, lib, abi, what):
    """The C of the load-time check: the sorted symbols `missing`, and a constructor that stops a
    program importing any of them, naming them (also used by mkshim_f08.py)."""
    out = ['/* ---- at load: the program needs none of the procedures this library lacks */',
           'static const char *const %s_missing[] = {' % prefix]
    out.extend('    "%s",' % n for n in missing)
    out.append('};')
    out.append('''#include <link.h>
#include <stdio.h>
#include <unistd.h>
static int %(p)s_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }
static void %(p)s_scan_rela(const ElfW(Rela) *r, size_t bytes, const ElfW(Sym) *sym, const char *str, int *missing)
{
    for (size_t i = 0; r && i < bytes / sizeof *r; i++) {
        size_t k = ELF64_R_SYM(r[i].r_info);
        if (k == 0 || sym[k].st_shndx != SHN_UNDEF) continue;
        const char *n = str + sym[k].st_name;
        if (bsearch(&n, %(p)s_missing, sizeof %(p)s_missing / sizeof %(p)s_missing[0], sizeof %(p)s_missing[0], %(p)s_cmp)
            && (*missing)++ < 20)
            fprintf(stderr, "%(lib)s (Kumi's %(abi)s ABI): %%s is not provided yet\\n", n);
    }
}
static int %(p)s_scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    for (int p = 0; p < info->dlpi_phnum; p++) {
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
}
__attribute__((constructor)) static void %(p)s_load(void)
{
    int missing = 0;
    dl_iterate_phdr(%(p)s_scan_one, &missing);
    if (missing) {
        fprintf(stderr, "%(lib)s (Kumi's %(abi)s ABI): the program needs %%d %(what)s procedure(s) this library does not translate yet\\n", missing);
        _exit(127);
    }
}''' % {'lib': lib, 'abi': abi, 'p': prefix, 'what': what})
    return '\n'.join(out)
