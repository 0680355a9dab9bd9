/* libmpi_usempif08.so.40 on Kumi (issue 17): Open MPI 4.x's mpifort links every program with
 * -lmpi_usempif08 first, so a `use mpi` program that calls MPI_SIZEOF takes its procedures
 * (mpi_sizeof_real64_r1_, ...) from there and needs this library, though Open MPI's
 * libmpi_mpifh.so.40 exports them too.  Here it stands for it: the procedures are those of Kumi's
 * libmpi_mpifh.so.40, which the program needs as well (its lookup finds them there).  The
 * mpi_f08 module (use mpi_f08), whose procedures Open MPI's library also holds, is not provided
 * yet: at load, a constructor stops a program that imports any symbol of it (a name with "f08"
 * in it that nothing loaded defines), naming them, rather than at its first call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct scan { const void *self_base; int missing; };

static void scan_rela(const ElfW(Rela) *r, size_t bytes, const ElfW(Sym) *sym, const char *str, struct scan *sc)
{
    for (size_t i = 0; r && i < bytes / sizeof *r; i++) {
        size_t k = ELF64_R_SYM(r[i].r_info);
        if (k == 0 || sym[k].st_shndx != SHN_UNDEF) continue;
        const char *n = str + sym[k].st_name;
        if (strstr(n, "f08") && !dlsym(RTLD_DEFAULT, n) && sc->missing++ < 10)
            fprintf(stderr, "libmpi_usempif08.so.40 (Kumi's Open MPI ABI): %s (use mpi_f08) is not provided yet\n", n);
    }
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct scan *sc = arg;
    (void)size;
    if ((const void *)info->dlpi_addr == sc->self_base) return 0;
    for (int p = 0; p < info->dlpi_phnum; p++) {
        if (info->dlpi_phdr[p].p_type != PT_DYNAMIC) continue;
        const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[p].p_vaddr);
        const ElfW(Rela) *rela = NULL, *jmp = NULL;
        size_t relasz = 0, jmpsz = 0;
        const ElfW(Sym) *sym = NULL;
        const char *str = NULL;
        for (; d->d_tag != DT_NULL; d++) {
            switch (d->d_tag) {   /* the loader has relocated these to addresses */
            case DT_RELA: rela = (const ElfW(Rela) *)d->d_un.d_ptr; break;
            case DT_RELASZ: relasz = d->d_un.d_val; break;
            case DT_JMPREL: jmp = (const ElfW(Rela) *)d->d_un.d_ptr; break;
            case DT_PLTRELSZ: jmpsz = d->d_un.d_val; break;
            case DT_SYMTAB: sym = (const ElfW(Sym) *)d->d_un.d_ptr; break;
            case DT_STRTAB: str = (const char *)d->d_un.d_ptr; break;
            }
        }
        if (!sym || !str) continue;
        scan_rela(rela, relasz, sym, str, sc);
        scan_rela(jmp, jmpsz, sym, str, sc);
    }
    return 0;
}

__attribute__((constructor)) static void usempif08_check(void)
{
    Dl_info self;
    struct scan sc = { NULL, 0 };
    if (dladdr((void *)usempif08_check, &self)) sc.self_base = self.dli_fbase;
    dl_iterate_phdr(scan_one, &sc);
    if (sc.missing) {
        fprintf(stderr, "libmpi_usempif08.so.40 (Kumi's Open MPI ABI): %d symbol(s) of the mpi_f08 module missing: "
                "programs of `use mpi_f08` do not run on Kumi yet (`use mpi` and mpif.h ones do)\n", sc.missing);
        exit(1);
    }
}
