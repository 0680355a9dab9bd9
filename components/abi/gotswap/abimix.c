/* libkumi_abimix.so: the GOT swap agent of processes that mix Open MPI's and MPICH's ABIs on
 * Kumi (a program built with mpicc.openmpi linked with, or loading, a library built with
 * mpicc.mpich, or the other way round).  mpiexec preloads it when the program needs both
 * ABIs' libraries (tools/mpiexec: both shim folders on LD_LIBRARY_PATH), or when told
 * (--abi ompi+mpich, KUMI_ABI=ompi+mpich: plug-ins loaded later, which it cannot see).
 *
 * Both shims export MPI_Send & co; the loader binds every object's imports to the first
 * definition in the global scope, so the objects of the other ABI would call the wrong shim.
 * At start, and after every dlopen (gotswap's hook), the agent classifies each loaded object by
 * its file name and DT_NEEDED (Open MPI: libmpi.so.40, libmpi_mpifh.so.40, ...; MPICH:
 * libmpich.so.12, libmpi.so.12, libmpichfort.so.12, ...; both or neither: left alone) and, for
 * each MPI name it imports (MPI_*, PMPI_*, MPIX_*, mpi_*, pmpi_*, MPIR_*, the C++ MPI::), adds a
 * gotswap rule (kumi_got_rule_add, on the object's path) pointing it at its own ABI's
 * definition, where that differs from the global one.  KUMI_ABIMIX_VERBOSE=1 prints each swap
 * (2: also the frames looked at for each failed call's numbering).
 * Error codes: Kumi translates the code of a failed call through one hook per process
 * (kumi_abi_set_err_out); here the agent owns it (the shims leave it alone when
 * kumi_abimix_err_out is defined) and gives each failed call the numbering of the ABI that
 * called: the first frame on the stack, above Kumi, in an object of a known ABI (the address
 * ranges of the objects classified below), on the error path only.
 * Limits: those of gotswap (README "GOT swap"). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kumi_gotswap.h"

enum { MIX_NONE = 0, MIX_OMPI = 1, MIX_MPICH = 2 };
static const char *const mix_libs[3][8] = {
    { NULL },
    { "libmpi.so.40", "libmpi_mpifh.so.40", "libmpi_usempif08.so.40", "libmpi_usempi_ignore_tkr.so.40",
      "libmpi_usempi.so.40", "libmpi_cxx.so.40", NULL },
    { "libmpich.so.12", "libmpi.so.12", "libmpichfort.so.12", "libmpifort.so.12", "libmpicxx.so.12",
      "libmpichcxx.so.12", NULL },
};
static const char *const mix_name[3] = { "none", "Open MPI", "MPICH" };
static void *mix_handle[3][8];   /* the ABIs' libraries loaded in the process (RTLD_NOLOAD) */
static int mix_verbose;

static int mix_of_lib(const char *name)
{
    const char *b = strrchr(name, '/');
    b = b ? b + 1 : name;
    for (int a = MIX_OMPI; a <= MIX_MPICH; a++)
        for (int i = 0; mix_libs[a][i]; i++)
            if (!strcmp(b, mix_libs[a][i])) return a;
    return MIX_NONE;
}

static int mix_wanted(const char *n)
{
    static const char *const pfx[] = { "MPI_", "PMPI_", "MPIX_", "PMPIX_", "mpi_", "pmpi_", "mpix_", "pmpix_",
                                       "MPIR_", "_ZN3MPI", "_ZNK3MPI", NULL };
    for (int i = 0; pfx[i]; i++)
        if (!strncmp(n, pfx[i], strlen(pfx[i]))) return 1;
    return 0;
}

/* the object's own ABI: by its file name, else by what it needs */
struct mix_dyn {
    const ElfW(Rela) *rela, *jmp;
    size_t relasz, jmpsz;
    const ElfW(Sym) *sym;
    const char *str;
    int ok;
};

static int mix_classify(struct dl_phdr_info *info, const char *path, struct mix_dyn *d)
{
    memset(d, 0, sizeof *d);
    int by = mix_of_lib(path), seen[3] = { 0, 0, 0 };
    for (int p = 0; p < info->dlpi_phnum; p++) {
        if (info->dlpi_phdr[p].p_type != PT_DYNAMIC) continue;
        const ElfW(Dyn) *dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[p].p_vaddr);
        long pltrel = DT_RELA;
        for (const ElfW(Dyn) *x = dyn; x->d_tag != DT_NULL; x++) {
            switch (x->d_tag) {   /* relocated by the loader: absolute addresses */
            case DT_RELA: d->rela = (const ElfW(Rela) *)x->d_un.d_ptr; break;
            case DT_RELASZ: d->relasz = x->d_un.d_val; break;
            case DT_JMPREL: d->jmp = (const ElfW(Rela) *)x->d_un.d_ptr; break;
            case DT_PLTRELSZ: d->jmpsz = x->d_un.d_val; break;
            case DT_PLTREL: pltrel = (long)x->d_un.d_val; break;
            case DT_SYMTAB: d->sym = (const ElfW(Sym) *)x->d_un.d_ptr; break;
            case DT_STRTAB: d->str = (const char *)x->d_un.d_ptr; break;
            }
        }
        d->ok = d->sym && d->str && pltrel == DT_RELA;
        for (const ElfW(Dyn) *x = dyn; d->str && x->d_tag != DT_NULL; x++)
            if (x->d_tag == DT_NEEDED) seen[mix_of_lib(d->str + x->d_un.d_val)] = 1;
    }
    if (by) return by;
    if (seen[MIX_OMPI] && seen[MIX_MPICH]) return MIX_NONE;   /* can't tell: left to the loader */
    return seen[MIX_OMPI] ? MIX_OMPI : seen[MIX_MPICH] ? MIX_MPICH : MIX_NONE;
}

/* the definition of name in ABI a's libraries (NULL: none of them defines it) */
static void *mix_target(int a, const char *name)
{
    for (int i = 0; mix_libs[a][i]; i++) {
        if (!mix_handle[a][i]) mix_handle[a][i] = dlopen(mix_libs[a][i], RTLD_LAZY | RTLD_NOLOAD);
        if (!mix_handle[a][i]) continue;
        void *t = dlsym(mix_handle[a][i], name);
        Dl_info di;
        if (t && dladdr(t, &di) && di.dli_fname && mix_of_lib(di.dli_fname) == a) return t;
    }
    return NULL;
}

static void mix_escape(const char *in, char *out, size_t n)
{
    size_t k = 0;
    for (; *in && k + 2 < n; in++) {
        if (strchr("*?[]\\", *in)) out[k++] = '\\';
        out[k++] = *in;
    }
    out[k] = 0;
}

/* the rules of one scan, added in one call (gotswap reads each object once per call) */
static struct kumi_got_rule *mix_rules;
static size_t mix_nrules, mix_caprules;

static void mix_rela(const char *pattern, const struct mix_dyn *d, const ElfW(Rela) *r, size_t bytes, int a)
{
    for (size_t i = 0; r && i < bytes / sizeof *r; i++) {
        size_t k = ELF64_R_SYM(r[i].r_info);
        if (k == 0 || d->sym[k].st_shndx != SHN_UNDEF) continue;
        const char *n = d->str + d->sym[k].st_name;
        if (!mix_wanted(n)) continue;
        void *t = mix_target(a, n);
        if (!t || t == dlsym(RTLD_DEFAULT, n)) continue;   /* the loader's choice is right */
        if (mix_nrules == mix_caprules) {
            size_t c = mix_caprules ? 2 * mix_caprules : 256;
            struct kumi_got_rule *x = realloc(mix_rules, c * sizeof *x);
            if (!x) return;
            mix_rules = x;
            mix_caprules = c;
        }
        char *pc = strdup(pattern);
        if (!pc) return;
        mix_rules[mix_nrules++] = (struct kumi_got_rule){ pc, n, t };   /* n: the object's strings, mapped */
        if (mix_verbose) fprintf(stderr, "libkumi_abimix: %s: %s -> %s's\n", *pattern ? pattern : "(program)", n, mix_name[a]);
    }
}

/* ---- error codes in the caller's numbering: the address ranges of the objects of each ABI
 * (appended during scans, read lock-free by mix_err_out) and each shim's translation */
#define MIX_MAXRANGES 1024
static struct { uintptr_t lo, hi; int abi; } mix_ranges[MIX_MAXRANGES];
static size_t mix_nranges;
static int (*mix_err_fn[3])(int);

static void mix_range_add(struct dl_phdr_info *info, int a)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int p = 0; p < info->dlpi_phnum; p++) {
        if (info->dlpi_phdr[p].p_type != PT_LOAD) continue;
        uintptr_t b = info->dlpi_addr + info->dlpi_phdr[p].p_vaddr;
        if (b < lo) lo = b;
        if (b + info->dlpi_phdr[p].p_memsz > hi) hi = b + info->dlpi_phdr[p].p_memsz;
    }
    size_t n = mix_nranges;
    if (lo >= hi || n >= MIX_MAXRANGES) return;
    mix_ranges[n].lo = lo;
    mix_ranges[n].hi = hi;
    mix_ranges[n].abi = a;
    __atomic_store_n(&mix_nranges, n + 1, __ATOMIC_RELEASE);
}

/* Kumi's hook: code in the numbering of the first caller of a known ABI (else of Open MPI's shim,
 * else MPICH's, else Kumi's own) */
__attribute__((visibility("default"))) int kumi_abimix_err_out(int code)
{
    void *pcs[48];
    int n = backtrace(pcs, 48);
    size_t k = __atomic_load_n(&mix_nranges, __ATOMIC_ACQUIRE);
    for (int i = 1; i < n; i++) {
        uintptr_t pc = (uintptr_t)pcs[i];
        if (mix_verbose > 1) {
            Dl_info di;
            fprintf(stderr, "libkumi_abimix: error %d: frame %d %p %s\n", code, i, pcs[i],
                    dladdr(pcs[i], &di) && di.dli_fname ? di.dli_fname : "?");
        }
        for (size_t j = 0; j < k; j++)
            if (pc >= mix_ranges[j].lo && pc < mix_ranges[j].hi && mix_err_fn[mix_ranges[j].abi])
                return mix_err_fn[mix_ranges[j].abi](code);
    }
    int (*f)(int) = mix_err_fn[MIX_OMPI] ? mix_err_fn[MIX_OMPI] : mix_err_fn[MIX_MPICH];
    return f ? f(code) : code;
}

/* after a scan: the shims' translations, and the hook in Kumi's library (once both are there) */
static void mix_err_install(void)
{
    for (int a = MIX_OMPI; a <= MIX_MPICH; a++)
        if (!mix_err_fn[a]) mix_err_fn[a] = (int (*)(int))mix_target(a, "kumi_shim_err_out");
    static int installed;
    if (installed || (!mix_err_fn[MIX_OMPI] && !mix_err_fn[MIX_MPICH])) return;
    void *k = dlopen("libmpi.so.0", RTLD_LAZY | RTLD_NOLOAD);
    void (*set)(int (*)(int)) = k ? (void (*)(int (*)(int)))dlsym(k, "kumi_abi_set_err_out") : NULL;
    if (!set) return;   /* Kumi's library not loaded yet: at the next scan */
    set(kumi_abimix_err_out);
    installed = 1;
    if (mix_verbose) fprintf(stderr, "libkumi_abimix: error codes in each caller's numbering\n");
}

/* objects seen already (by load address) */
static uintptr_t *mix_done;
static size_t mix_ndone, mix_capdone;

static int mix_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    for (size_t i = 0; i < mix_ndone; i++)
        if (mix_done[i] == (uintptr_t)info->dlpi_phdr) return 0;
    if (mix_ndone == mix_capdone) {
        size_t c = mix_capdone ? 2 * mix_capdone : 64;
        uintptr_t *n = realloc(mix_done, c * sizeof *n);
        if (!n) return 0;
        mix_done = n;
        mix_capdone = c;
    }
    mix_done[mix_ndone++] = (uintptr_t)info->dlpi_phdr;
    char path[4096];
    const char *name = info->dlpi_name;
    if (!name || !*name) {   /* the program */
        ssize_t l = readlink("/proc/self/exe", path, sizeof path - 1);
        if (l <= 0) return 0;
        path[l] = 0;
        name = path;
    }
    if (name[0] != '/' || strstr(name, "linux-vdso")) return 0;
    struct mix_dyn d;
    int a = mix_classify(info, name, &d);
    if (a != MIX_NONE) mix_range_add(info, a);
    if (a == MIX_NONE || !d.ok) return 0;
    char pattern[8192];
    if (name == path) {
        pattern[0] = 0;      /* "": the main program */
    } else {
        mix_escape(name, pattern, sizeof pattern);
    }
    mix_rela(pattern, &d, d.rela, d.relasz, a);
    mix_rela(pattern, &d, d.jmp, d.jmpsz, a);
    return 0;
}

static void mix_scan(void *arg)
{
    (void)arg;
    static __thread int busy;   /* the agent's own dlopen (RTLD_NOLOAD) calls come back here */
    if (busy) return;
    busy = 1;
    mix_nrules = 0;
    dl_iterate_phdr(mix_one, NULL);
    if (mix_nrules > 0 && kumi_got_rules_add(mix_rules, mix_nrules) < 0)
        fprintf(stderr, "libkumi_abimix: %s\n", kumi_got_error());
    for (size_t i = 0; i < mix_nrules; i++) free((char *)mix_rules[i].pattern);
    mix_nrules = 0;
    mix_err_install();
    busy = 0;
}

__attribute__((constructor)) static void mix_start(void)
{
    const char *v = getenv("KUMI_ABIMIX_VERBOSE");
    mix_verbose = v && *v && strcmp(v, "0") ? atoi(v) > 1 ? 2 : 1 : 0;
    void *pc[2];
    backtrace(pc, 2);   /* loads the unwinder now, not first inside a failed MPI call */
    mix_scan(NULL);
    if (kumi_got_set_load_hook(mix_scan, NULL) < 0)   /* objects loaded later (dlopen) */
        fprintf(stderr, "libkumi_abimix: %s\n", kumi_got_error());
}
