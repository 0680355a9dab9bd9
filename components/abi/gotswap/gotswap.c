/*
 * gotswap.c: the runtime GOT swap of kumi_gotswap.h.
 *
 * One pass (gs_scan) walks the loaded objects with dl_iterate_phdr and, for
 * each object that a request matches, reads the object's file with libelf
 * (gs_parse: program headers -> PT_DYNAMIC -> relocation tables, dynamic
 * symbols and strings, all through elf_getdata_rawchunk, so stripped section
 * headers do not matter), then rewrites the slots (gs_write).  The work is
 * done inside the dl_iterate_phdr callback: the loader cannot unmap the object
 * meanwhile.  Only dlsym / dlopen calls (resolving a lazy slot's target) are
 * made after the walk.
 *
 * Requests are either one explicit swap (kumi_got_swap*) or the rule set.  For
 * the rules, every object seen is remembered with how many rules it has had
 * applied; objects new since the last pass get all rules, known ones only the
 * rules added since.  When the loader reports an unload (dlpi_subs changed) the
 * memory of objects is dropped and every rule is applied again (idempotent),
 * since a new object may sit where an old one was.
 *
 * dl_iterate_phdr reports the caller's namespace only: the namespaces made
 * by dlmopen through the hook are walked along their link maps (gs_walk_ns,
 * inside a dl_iterate_phdr callback so that the loader's lock on the lists is
 * held), their program headers located from the file (gs_lm_info).
 *
 * No dl* function that takes the loader's lock (dlopen, dlsym, dlclose) is
 * called with gs_lock held: a constructor running inside dlopen (loader lock
 * held) may call kumi_got_rule_add and wait for gs_lock.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kumi_gotswap.h"

#define GS_API __attribute__((visibility("default")))

#if defined(__x86_64__)
#define GS_MACHINE EM_X86_64
#define GS_JUMP_SLOT R_X86_64_JUMP_SLOT
#define GS_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define GS_MACHINE EM_AARCH64
#define GS_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define GS_GLOB_DAT R_AARCH64_GLOB_DAT
#else
#define GS_MACHINE EM_NONE /* every call fails with KUMI_GOT_EUNSUPPORTED */
#define GS_JUMP_SLOT 0
#define GS_GLOB_DAT 0
#endif

/* ------------------------------------------------------------------ errors */

static __thread char gs_msg[512];

static int gs_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int gs_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(gs_msg, sizeof gs_msg, fmt, ap);
    va_end(ap);
    return code;
}

GS_API const char *kumi_got_error(void) { return gs_msg; }

GS_API const char *kumi_got_strerror(int code)
{
    switch (code) {
    case KUMI_GOT_EINVAL: return "invalid argument";
    case KUMI_GOT_ENOOBJ: return "no loaded object matches";
    case KUMI_GOT_EELF: return "cannot read the object's ELF file";
    case KUMI_GOT_EPROT: return "cannot make the GOT page writable";
    case KUMI_GOT_ENOMEM: return "out of memory";
    case KUMI_GOT_EUNSUPPORTED: return "unsupported architecture or relocation format";
    default: return code >= 0 ? "success" : "unknown error";
    }
}

/* --------------------------------------------------------- ELF file reading */

struct gs_load { GElf_Addr vaddr, memsz, filesz; GElf_Off off; };

struct gs_slot {               /* one JUMP_SLOT / GLOB_DAT relocation */
    const char *sym;           /* its symbol's name (in the strtab chunk) */
    GElf_Addr off;             /* r_offset: slot = load base + off */
    unsigned type;
    int lazy_known;            /* JUMP_SLOT: file_val read from the file */
    uint64_t file_val;         /* the slot's value in the file (lazy: PLT stub - base) */
};

struct gs_elf {
    int fd;
    Elf *elf;
    struct gs_load *loads;
    size_t nloads;
    struct gs_slot *slots;
    size_t nslots;
    const char *runpath, *rpath;  /* DT_RUNPATH / DT_RPATH, NULL when absent */
};

static void gs_elf_free(struct gs_elf *e)
{
    if (e->elf) elf_end(e->elf);
    if (e->fd >= 0) close(e->fd);
    free(e->loads);
    free(e->slots);
    memset(e, 0, sizeof *e);
    e->fd = -1;
}

/* File offset of [vaddr, vaddr+size) when it lies in one PT_LOAD's file part. */
static int gs_off(const struct gs_elf *e, GElf_Addr vaddr, GElf_Xword size, GElf_Off *off)
{
    for (size_t i = 0; i < e->nloads; i++) {
        const struct gs_load *l = &e->loads[i];
        if (vaddr >= l->vaddr && size <= l->filesz && vaddr - l->vaddr <= l->filesz - size) {
            *off = l->off + (vaddr - l->vaddr);
            return 0;
        }
    }
    return -1;
}

static Elf_Data *gs_chunk(struct gs_elf *e, GElf_Addr vaddr, GElf_Xword size, Elf_Type t)
{
    GElf_Off off;
    if (size == 0 || gs_off(e, vaddr, size, &off) != 0) return NULL;
    return elf_getdata_rawchunk(e->elf, (int64_t)off, size, t);
}

static int gs_add_table(struct gs_elf *e, const char *path, GElf_Addr vaddr, GElf_Xword size,
                        GElf_Xword ent, size_t *cap, GElf_Xword *maxsym)
{
    if (size == 0) return 0;
    size_t fsz = gelf_fsize(e->elf, ELF_T_RELA, 1, EV_CURRENT);
    if (ent != 0 && ent != fsz)
        return gs_fail(KUMI_GOT_EELF, "%s: relocation entries of %lu bytes (expected %zu)", path,
                       (unsigned long)ent, fsz);
    Elf_Data *d = gs_chunk(e, vaddr, size, ELF_T_RELA);
    if (!d) return gs_fail(KUMI_GOT_EELF, "%s: relocation table at 0x%lx outside the file: %s", path,
                           (unsigned long)vaddr, elf_errmsg(-1));
    size_t n = d->d_size / fsz;
    for (size_t i = 0; i < n; i++) {
        GElf_Rela r;
        if (!gelf_getrela(d, (int)i, &r)) break;
        unsigned type = (unsigned)GELF_R_TYPE(r.r_info);
        if (type != GS_JUMP_SLOT && type != GS_GLOB_DAT) continue;
        if (GELF_R_SYM(r.r_info) == 0) continue;
        if (e->nslots == *cap) {
            size_t nc = *cap ? 2 * *cap : 64;
            void *p = realloc(e->slots, nc * sizeof *e->slots);
            if (!p) return gs_fail(KUMI_GOT_ENOMEM, "out of memory reading %s", path);
            e->slots = p;
            *cap = nc;
        }
        struct gs_slot *s = &e->slots[e->nslots++];
        memset(s, 0, sizeof *s);
        s->off = r.r_offset;
        s->type = type;
        s->sym = (const char *)(uintptr_t)GELF_R_SYM(r.r_info);   /* index for now */
        if (GELF_R_SYM(r.r_info) > *maxsym) *maxsym = GELF_R_SYM(r.r_info);
    }
    return 0;
}

static pthread_once_t gs_version_once = PTHREAD_ONCE_INIT;
static int gs_version_ok;
static void gs_init_version(void) { gs_version_ok = elf_version(EV_CURRENT) != EV_NONE; }

/* Reads the dynamic relocations of `path`.  With mem_phdr, checks the file
 * against the loaded object's program headers first. */
static int gs_parse(const char *path, const ElfW(Phdr) *mem_phdr, size_t mem_phnum, struct gs_elf *e)
{
    memset(e, 0, sizeof *e);
    e->fd = -1;
    if (GS_MACHINE == EM_NONE) return gs_fail(KUMI_GOT_EUNSUPPORTED, "gotswap: unsupported architecture");
    pthread_once(&gs_version_once, gs_init_version);
    if (!gs_version_ok) return gs_fail(KUMI_GOT_EELF, "gotswap: libelf version mismatch");
    e->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (e->fd < 0) return gs_fail(KUMI_GOT_EELF, "%s: cannot open: %s", path, strerror(errno));
    e->elf = elf_begin(e->fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    if (!e->elf || elf_kind(e->elf) != ELF_K_ELF || !gelf_getehdr(e->elf, &eh)) {
        int en = elf_errno();
        return gs_fail(KUMI_GOT_EELF, "%s: not an ELF file%s%s", path, en ? ": " : "", en ? elf_errmsg(en) : "");
    }
    if (gelf_getclass(e->elf) != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) || eh.e_machine != GS_MACHINE)
        return gs_fail(KUMI_GOT_EUNSUPPORTED, "%s: ELF class %d machine %d is not this process's", path,
                       gelf_getclass(e->elf), eh.e_machine);
    size_t phnum;
    if (elf_getphdrnum(e->elf, &phnum) != 0)
        return gs_fail(KUMI_GOT_EELF, "%s: no program headers: %s", path, elf_errmsg(-1));
    if (mem_phdr && mem_phnum != phnum)
        return gs_fail(KUMI_GOT_EELF, "%s: the file has %zu program headers, the loaded object %zu "
                       "(file replaced since it was loaded?)", path, phnum, mem_phnum);
    e->loads = calloc(phnum ? phnum : 1, sizeof *e->loads);
    if (!e->loads) return gs_fail(KUMI_GOT_ENOMEM, "out of memory reading %s", path);
    GElf_Phdr dyn = {0};
    int have_dyn = 0;
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e->elf, (int)i, &ph))
            return gs_fail(KUMI_GOT_EELF, "%s: bad program header %zu: %s", path, i, elf_errmsg(-1));
        if (mem_phdr && (mem_phdr[i].p_type != ph.p_type || mem_phdr[i].p_vaddr != ph.p_vaddr ||
                         mem_phdr[i].p_memsz != ph.p_memsz))
            return gs_fail(KUMI_GOT_EELF, "%s: program header %zu differs from the loaded object's "
                           "(file replaced since it was loaded?)", path, i);
        if (ph.p_type == PT_LOAD)
            e->loads[e->nloads++] = (struct gs_load){ph.p_vaddr, ph.p_memsz, ph.p_filesz, ph.p_offset};
        else if (ph.p_type == PT_DYNAMIC) {
            dyn = ph;
            have_dyn = 1;
        }
    }
    if (!have_dyn) return 0;      /* a static object: nothing is imported */
    Elf_Data *dd = elf_getdata_rawchunk(e->elf, (int64_t)dyn.p_offset, dyn.p_filesz, ELF_T_DYN);
    if (!dd) return gs_fail(KUMI_GOT_EELF, "%s: cannot read PT_DYNAMIC: %s", path, elf_errmsg(-1));
    GElf_Addr symtab = 0, strtab = 0, rela = 0, jmprel = 0;
    GElf_Xword strsz = 0, relasz = 0, relaent = 0, pltrelsz = 0, pltrel = DT_RELA, relsz = 0;
    GElf_Xword syment = gelf_fsize(e->elf, ELF_T_SYM, 1, EV_CURRENT);
    GElf_Xword runpath = (GElf_Xword)-1, rpath = (GElf_Xword)-1;
    size_t ndyn = dd->d_size / gelf_fsize(e->elf, ELF_T_DYN, 1, EV_CURRENT);
    for (size_t i = 0; i < ndyn; i++) {
        GElf_Dyn d;
        if (!gelf_getdyn(dd, (int)i, &d) || d.d_tag == DT_NULL) break;
        switch (d.d_tag) {
        case DT_SYMTAB: symtab = d.d_un.d_ptr; break;
        case DT_STRTAB: strtab = d.d_un.d_ptr; break;
        case DT_STRSZ: strsz = d.d_un.d_val; break;
        case DT_SYMENT: syment = d.d_un.d_val; break;
        case DT_RELA: rela = d.d_un.d_ptr; break;
        case DT_RELASZ: relasz = d.d_un.d_val; break;
        case DT_RELAENT: relaent = d.d_un.d_val; break;
        case DT_JMPREL: jmprel = d.d_un.d_ptr; break;
        case DT_PLTRELSZ: pltrelsz = d.d_un.d_val; break;
        case DT_PLTREL: pltrel = d.d_un.d_val; break;
        case DT_RELSZ: relsz = d.d_un.d_val; break;
        case DT_RUNPATH: runpath = d.d_un.d_val; break;
        case DT_RPATH: rpath = d.d_un.d_val; break;
        default: break;
        }
    }
    if (relsz != 0 || (pltrelsz != 0 && pltrel != DT_RELA))
        return gs_fail(KUMI_GOT_EUNSUPPORTED, "%s: REL relocations are not supported (RELA only)", path);
    Elf_Data *sd = strsz ? gs_chunk(e, strtab, strsz, ELF_T_BYTE) : NULL;
    if (!sd) return gs_fail(KUMI_GOT_EELF, "%s: no dynamic string table", path);
    const char *str = sd->d_buf;
    if (runpath < strsz) e->runpath = str + runpath;
    if (rpath < strsz) e->rpath = str + rpath;
    size_t cap = 0;
    GElf_Xword maxsym = 0;
    int rc = gs_add_table(e, path, rela, relasz, relaent, &cap, &maxsym);
    /* GNU ld may count .rela.plt inside DT_RELASZ: read it only once */
    if (rc == 0 && !(pltrelsz && jmprel >= rela && jmprel + pltrelsz <= rela + relasz))
        rc = gs_add_table(e, path, jmprel, pltrelsz, 0, &cap, &maxsym);
    if (rc != 0 || e->nslots == 0) return rc;
    if (syment != gelf_fsize(e->elf, ELF_T_SYM, 1, EV_CURRENT))
        return gs_fail(KUMI_GOT_EELF, "%s: odd DT_SYMENT %lu", path, (unsigned long)syment);
    Elf_Data *symd = gs_chunk(e, symtab, (maxsym + 1) * syment, ELF_T_SYM);
    if (!symd) return gs_fail(KUMI_GOT_EELF, "%s: dynamic symbol table outside the file", path);
    for (size_t i = 0; i < e->nslots; i++) {
        struct gs_slot *s = &e->slots[i];
        GElf_Sym sym;
        if (!gelf_getsym(symd, (int)(uintptr_t)s->sym, &sym) || sym.st_name >= strsz ||
            !memchr(str + sym.st_name, 0, strsz - sym.st_name))
            return gs_fail(KUMI_GOT_EELF, "%s: bad dynamic symbol %lu", path, (unsigned long)(uintptr_t)s->sym);
        s->sym = str + sym.st_name;
        GElf_Off off;
        if (s->type == GS_JUMP_SLOT && gs_off(e, s->off, sizeof(uint64_t), &off) == 0 &&
            pread(e->fd, &s->file_val, sizeof s->file_val, (off_t)off) == (ssize_t)sizeof s->file_val)
            s->lazy_known = 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- writing */

struct gs_maps { char *buf; };   /* a copy of /proc/self/maps, NULL when unreadable */

static void gs_maps_read(struct gs_maps *m)
{
    m->buf = NULL;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    size_t cap = 16384, len = 0;
    char *b = malloc(cap + 1);
    for (;;) {
        if (!b) break;
        if (len == cap) {
            char *nb = realloc(b, 2 * cap + 1);
            if (!nb) { free(b); b = NULL; break; }
            b = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, b + len, cap - len);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        len += (size_t)r;
    }
    close(fd);
    if (b) b[len] = 0;
    m->buf = b;
}

/* Protection of the page holding addr from the maps copy, -1 when not found. */
static int gs_maps_prot(const struct gs_maps *m, uintptr_t addr)
{
    if (!m->buf) return -1;
    for (const char *p = m->buf; *p; ) {
        unsigned long lo, hi;
        char perm[5];
        if (sscanf(p, "%lx-%lx %4s", &lo, &hi, perm) == 3 && addr >= lo && addr < hi)
            return (perm[0] == 'r' ? PROT_READ : 0) | (perm[1] == 'w' ? PROT_WRITE : 0) |
                   (perm[2] == 'x' ? PROT_EXEC : 0);
        const char *nl = strchr(p, '\n');
        if (!nl) break;
        p = nl + 1;
    }
    return -1;
}

/* Without /proc: the segment's flags, read-only inside PT_GNU_RELRO. */
static int gs_phdr_prot(const struct dl_phdr_info *info, uintptr_t addr)
{
    int prot = -1;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (addr < lo || addr >= hi) continue;
        if (ph->p_type == PT_LOAD && prot < 0)
            prot = (ph->p_flags & PF_R ? PROT_READ : 0) | (ph->p_flags & PF_W ? PROT_WRITE : 0) |
                   (ph->p_flags & PF_X ? PROT_EXEC : 0);
    }
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_GNU_RELRO && addr >= lo && addr < lo + ph->p_memsz && prot > 0)
            prot &= ~PROT_WRITE;
    }
    return prot;
}

static int gs_write(const struct gs_maps *m, const struct dl_phdr_info *info, const char *path,
                    void **slot, void *val)
{
    uintptr_t a = (uintptr_t)slot;
    int prot = gs_maps_prot(m, a);
    if (prot < 0) prot = gs_phdr_prot(info, a);
    if (prot < 0) return gs_fail(KUMI_GOT_EELF, "%s: slot %p is not mapped", path, (void *)slot);
    if (prot & PROT_WRITE) {
        __atomic_store_n(slot, val, __ATOMIC_RELEASE);
        return 0;
    }
    uintptr_t page = a & ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
    size_t len = (size_t)sysconf(_SC_PAGESIZE);
    if (mprotect((void *)page, len, prot | PROT_READ | PROT_WRITE) != 0)
        return gs_fail(KUMI_GOT_EPROT, "%s: mprotect(%p, PROT_WRITE) of slot %p: %s", path, (void *)page,
                       (void *)slot, strerror(errno));
    __atomic_store_n(slot, val, __ATOMIC_RELEASE);
    if (mprotect((void *)page, len, prot) != 0)
        return gs_fail(KUMI_GOT_EPROT, "%s: restoring the protection of %p: %s", path, (void *)page,
                       strerror(errno));
    return 0;
}

/* --------------------------------------------------------- object walking */

struct gs_req {                 /* one swap to do */
    const char *pattern;        /* NULL: every object */
    const char *symbol;
    void *target;
    int internal;               /* the dlopen hooks: errors are not reported */
    /* results */
    int changed;
    int found;                  /* a slot was found: old is set */
    void *old;
    int old_lazy;               /* old is a lazy PLT stub: resolve it after the walk */
    char old_path[PATH_MAX];
    Lmid_t old_lmid;            /* its namespace; old_scope: the namespace's first object */
    char old_scope[PATH_MAX];   /* ("" for this library's namespace: its global scope) */
};

/* The namespace being walked (set with gs_lock held). */
static Lmid_t gs_cur_lmid = LM_ID_BASE;
static const char *gs_cur_scope;

static int gs_self_marker;      /* an address inside this library */

static int gs_is_self(const struct dl_phdr_info *info)
{
    uintptr_t a = (uintptr_t)&gs_self_marker;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && a >= lo && a < lo + ph->p_memsz) return 1;
    }
    return 0;
}

/* The file of a loaded object: the main program's name is "" (the first
 * object); the vdso's name is no path.  Returns 0 with the path, -1 to skip. */
static int gs_path_of(const struct dl_phdr_info *info, int first, char *path, size_t size)
{
    const char *n = info->dlpi_name;
    if (n && n[0]) {
        if (!strchr(n, '/')) return -1;     /* linux-vdso.so.1: no file */
        snprintf(path, size, "%s", n);
        return 0;
    }
    if (!first) return -1;
    ssize_t l = readlink("/proc/self/exe", path, size - 1);
    if (l <= 0) return -1;
    path[l] = 0;
    return 0;
}

/* Another copy of this library (loaded with dlmopen in another namespace):
 * hooking its dlopen would make the two hooks call each other. */
static int gs_is_gotswap(const char *path)
{
    const char *b = strrchr(path, '/');
    return strncmp(b ? b + 1 : path, "libkumi_gotswap.so", 18) == 0;
}

static int gs_match(const char *pattern, const char *path, int is_main)
{
    if (!pattern) return 1;
    if (!pattern[0]) return is_main;
    if (strchr(pattern, '/')) return fnmatch(pattern, path, 0) == 0;
    const char *b = strrchr(path, '/');
    return fnmatch(pattern, b ? b + 1 : path, 0) == 0;
}

/* Applies the requests reqs[0..nreq) to one object: parse once, then every
 * request.  Returns 0 or the first error of a non-internal request (the
 * errors of the internal ones, the dlopen hooks, leave no message). */
static int gs_apply_object(struct dl_phdr_info *info, const char *path, struct gs_req **reqs, size_t nreq,
                           const struct gs_maps *maps)
{
    struct gs_elf e;
    int err = 0;
    int user = 0;
    for (size_t i = 0; i < nreq; i++) user |= !reqs[i]->internal;
    char saved[sizeof gs_msg];
    if (!user) memcpy(saved, gs_msg, sizeof saved);
    int rc = gs_parse(path, info->dlpi_phdr, info->dlpi_phnum, &e);
    if (rc != 0) {
        gs_elf_free(&e);
        if (!user) memcpy(gs_msg, saved, sizeof saved);
        return user ? rc : 0;
    }
    for (size_t k = 0; k < e.nslots; k++) {
        const struct gs_slot *s = &e.slots[k];
        for (size_t i = 0; i < nreq; i++) {
            struct gs_req *r = reqs[i];
            if (strcmp(s->sym, r->symbol) != 0) continue;
            int inside = 0;
            for (size_t j = 0; j < e.nloads; j++)
                if (s->off >= e.loads[j].vaddr && s->off + sizeof(void *) <= e.loads[j].vaddr + e.loads[j].memsz)
                    inside = 1;
            if (!inside || (s->off % sizeof(void *)) != 0) {
                if (!r->internal && !err)
                    err = gs_fail(KUMI_GOT_EELF, "%s: relocation of %s at 0x%lx is not an aligned slot "
                                  "of the object", path, r->symbol, (unsigned long)s->off);
                continue;
            }
            void **slot = (void **)(info->dlpi_addr + s->off);
            void *cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
            if (!r->found) {
                r->found = 1;
                r->old = cur;
                r->old_lazy = s->lazy_known && (uintptr_t)cur == info->dlpi_addr + s->file_val;
                snprintf(r->old_path, sizeof r->old_path, "%s", path);
                r->old_lmid = gs_cur_lmid;
                snprintf(r->old_scope, sizeof r->old_scope, "%s", gs_cur_scope ? gs_cur_scope : "");
            }
            if (cur == r->target) continue;
            int w = gs_write(maps, info, path, slot, r->target);
            if (w == 0) r->changed++;
            else if (!r->internal && !err) err = w;
        }
    }
    gs_elf_free(&e);
    return err;
}

/* The rule set and what the objects have had of it. */
struct gs_known { uintptr_t addr; const void *phdr; size_t applied; };

static pthread_mutex_t gs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gs_req *gs_rules;
static size_t gs_nrules, gs_caprules;
static struct gs_known *gs_objs;
static size_t gs_nobjs, gs_capobjs;
static unsigned long long gs_adds, gs_subs;
static int gs_hooked;

struct gs_walk {
    struct gs_req *one;         /* an explicit swap, or NULL: the rules */
    uintptr_t only_addr;        /* with only_name: exactly this object (a handle) */
    const char *only_name;
    struct gs_maps maps;
    const struct link_map *extra;   /* also walk this object's namespace (a handle's) */
    Lmid_t extra_lmid;
    int matched;                /* objects that one matched */
    int err;
    int index;
};

/* Namespaces made by dlmopen through the hook: dl_iterate_phdr shows the
 * caller's namespace only, so their link maps are walked, from one object of
 * each that gotswap keeps open (so that the list it walks stays valid). */
struct gs_ns { Lmid_t id; void *keep; const struct link_map *lm; };
static struct gs_ns *gs_nss;
static size_t gs_nns, gs_capns;
static Lmid_t gs_own_lmid = LM_ID_BASE;
static pthread_once_t gs_lmid_once = PTHREAD_ONCE_INIT;

static void gs_init_lmid(void)
{
    Dl_info di;
    struct link_map *lm = NULL;
    Lmid_t id;
    if (dladdr1(&gs_self_marker, &di, (void **)&lm, RTLD_DL_LINKMAP) && lm && dlinfo(lm, RTLD_DI_LMID, &id) == 0)
        gs_own_lmid = id;
}

static struct gs_known *gs_known_find(uintptr_t addr, const void *phdr, int add)
{
    for (size_t i = 0; i < gs_nobjs; i++)
        if (gs_objs[i].addr == addr && gs_objs[i].phdr == phdr) return &gs_objs[i];
    if (!add) return NULL;
    if (gs_nobjs == gs_capobjs) {
        size_t nc = gs_capobjs ? 2 * gs_capobjs : 32;
        void *p = realloc(gs_objs, nc * sizeof *gs_objs);
        if (!p) return NULL;
        gs_objs = p;
        gs_capobjs = nc;
    }
    gs_objs[gs_nobjs] = (struct gs_known){addr, phdr, 0};
    return &gs_objs[gs_nobjs++];
}

/* One object: first says it is the main program (the first of our namespace). */
static void gs_visit(struct gs_walk *w, struct dl_phdr_info *info, int first)
{
    if (gs_is_self(info)) return;
    char path[PATH_MAX];
    if (gs_path_of(info, first, path, sizeof path) != 0) return;
    int rc = 0;
    if (w->one) {
        if (w->only_name) {
            if (info->dlpi_addr != w->only_addr || strcmp(info->dlpi_name ? info->dlpi_name : "", w->only_name) != 0)
                return;
        } else if (!gs_match(w->one->pattern, path, first))
            return;
        w->matched++;
        rc = gs_apply_object(info, path, &w->one, 1, &w->maps);
    } else {
        struct gs_known *k = gs_known_find(info->dlpi_addr, info->dlpi_phdr, 1);
        if (!k) {
            if (!w->err) w->err = gs_fail(KUMI_GOT_ENOMEM, "out of memory");
            return;
        }
        size_t from = k->applied;
        k->applied = gs_nrules;
        struct gs_req *want[gs_nrules ? gs_nrules : 1];
        size_t n = 0;
        int other_copy = gs_is_gotswap(path);   /* e.g. in another namespace: never hooked */
        for (size_t i = from; i < gs_nrules; i++)
            if (gs_match(gs_rules[i].pattern, path, first) && !(gs_rules[i].internal && other_copy))
                want[n++] = &gs_rules[i];
        if (n) rc = gs_apply_object(info, path, want, n, &w->maps);
    }
    if (rc && !w->err) w->err = rc;
}

static int gs_walk_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct gs_walk *w = arg;
    int first = w->index++ == 0;
    if (first && w->one == NULL &&
        size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        if (info->dlpi_subs != gs_subs) gs_nobjs = 0;   /* something left: start over */
        gs_adds = info->dlpi_adds;
        gs_subs = info->dlpi_subs;
    }
    gs_visit(w, info, first);
    return 0;
}

/* The program headers of a loaded object from its link map: where its file
 * says they are, checked to be mapped (gs_parse then compares them). */
static int gs_lm_info(const struct link_map *lm, const struct gs_maps *maps, struct dl_phdr_info *info)
{
    if (!lm->l_name || !lm->l_name[0]) return -1;
    int fd = open(lm->l_name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    size_t phnum = 0;
    int rc = -1;
    if (elf && gelf_getehdr(elf, &eh) && elf_getphdrnum(elf, &phnum) == 0 && phnum > 0) {
        GElf_Xword need = (GElf_Xword)phnum * sizeof(ElfW(Phdr));
        for (size_t i = 0; i < phnum; i++) {
            GElf_Phdr ph;
            if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD) continue;
            if (eh.e_phoff < ph.p_offset || eh.e_phoff + need > ph.p_offset + ph.p_filesz) continue;
            uintptr_t a = lm->l_addr + ph.p_vaddr + (eh.e_phoff - ph.p_offset);
            if (maps->buf && (!(gs_maps_prot(maps, a) & PROT_READ) || gs_maps_prot(maps, a + need - 1) < 0 ||
                              !(gs_maps_prot(maps, a + need - 1) & PROT_READ)))
                break;
            memset(info, 0, sizeof *info);
            info->dlpi_addr = lm->l_addr;
            info->dlpi_name = lm->l_name;
            info->dlpi_phdr = (const ElfW(Phdr) *)a;
            info->dlpi_phnum = (ElfW(Half))phnum;
            rc = 0;
            break;
        }
    }
    if (elf) elf_end(elf);
    close(fd);
    return rc;
}

static void gs_walk_ns(struct gs_walk *w, const struct link_map *any, Lmid_t id)
{
    const struct link_map *l = any;
    while (l->l_prev) l = l->l_prev;
    gs_cur_lmid = id;
    gs_cur_scope = l->l_name;
    for (; l; l = l->l_next) {
        struct dl_phdr_info info;
        if (gs_lm_info(l, &w->maps, &info) == 0) gs_visit(w, &info, 0);
    }
    gs_cur_lmid = gs_own_lmid;
    gs_cur_scope = NULL;
}

/* Under dl_iterate_phdr, which holds the loader's lock on the lists. */
static int gs_ns_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct gs_walk *w = arg;
    for (size_t i = 0; i < gs_nns; i++) gs_walk_ns(w, gs_nss[i].lm, gs_nss[i].id);
    if (w->extra) gs_walk_ns(w, w->extra, w->extra_lmid);
    return 1;
}

static void gs_walk_all(struct gs_walk *w)   /* with gs_lock held */
{
    gs_cur_lmid = gs_own_lmid;
    gs_cur_scope = NULL;
    dl_iterate_phdr(gs_walk_cb, w);
    if (gs_nns || w->extra) dl_iterate_phdr(gs_ns_cb, w);
}

/* A lazy slot still held its PLT stub: name what the loader would bind. */
static void gs_resolve_old(struct gs_req *r)
{
    if (!r->found || !r->old_lazy) return;
    void *p = NULL;
    if (r->old_scope[0]) {                     /* another namespace: from its first object */
        void *h = dlmopen(r->old_lmid, r->old_scope, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            p = dlsym(h, r->symbol);
            dlclose(h);
        }
    } else
        p = dlsym(RTLD_DEFAULT, r->symbol);   /* the global scope first */
    if (!p) {
        void *h = r->old_lmid == LM_ID_BASE ? dlopen(r->old_path, RTLD_LAZY | RTLD_NOLOAD)
                                            : dlmopen(r->old_lmid, r->old_path, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            p = dlsym(h, r->symbol);          /* then the object's own scope */
            dlclose(h);
        }
    }
    if (p) r->old = p;
}

static int gs_swap(struct gs_req *r, const char *desc, void **old_target, uintptr_t only_addr,
                   const char *only_name, const struct link_map *extra, Lmid_t extra_lmid)
{
    pthread_once(&gs_lmid_once, gs_init_lmid);
    if (!r->symbol || !r->symbol[0] || !r->target) {
        if (old_target) *old_target = NULL;
        return gs_fail(KUMI_GOT_EINVAL, "kumi_got_swap: %s", !r->symbol || !r->symbol[0] ?
                       "symbol is NULL or empty" : "new_target is NULL");
    }
    struct gs_walk w = {.one = r, .only_addr = only_addr, .only_name = only_name, .extra = extra,
                        .extra_lmid = extra_lmid};
    gs_msg[0] = 0;
    pthread_mutex_lock(&gs_lock);
    gs_maps_read(&w.maps);
    gs_walk_all(&w);
    free(w.maps.buf);
    pthread_mutex_unlock(&gs_lock);
    gs_resolve_old(r);
    if (old_target) *old_target = r->found ? r->old : NULL;
    if (w.matched == 0)
        return gs_fail(KUMI_GOT_ENOOBJ, "kumi_got_swap: no loaded object matches %s", desc);
    return w.err ? w.err : r->changed;
}

GS_API int kumi_got_swap(const char *object_pattern, const char *symbol, void *new_target, void **old_target)
{
    struct gs_req r = {.pattern = object_pattern, .symbol = symbol, .target = new_target};
    char desc[PATH_MAX + 16];
    snprintf(desc, sizeof desc, "'%s'", object_pattern ? object_pattern : "(any)");
    return gs_swap(&r, desc, old_target, 0, NULL, NULL, 0);
}

GS_API int kumi_got_swap_handle(void *dl_handle, const char *symbol, void *new_target, void **old_target)
{
    struct link_map *lm = NULL;
    if (!dl_handle || dlinfo(dl_handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm) {
        if (old_target) *old_target = NULL;
        return gs_fail(KUMI_GOT_EINVAL, "kumi_got_swap_handle: not a dlopen handle%s%s",
                       dl_handle ? ": " : "", dl_handle ? dlerror() : "");
    }
    struct gs_req r = {.symbol = symbol, .target = new_target};
    char desc[PATH_MAX + 16];
    snprintf(desc, sizeof desc, "the handle of '%s'", lm->l_name);
    pthread_once(&gs_lmid_once, gs_init_lmid);
    Lmid_t id = gs_own_lmid;
    dlinfo(dl_handle, RTLD_DI_LMID, &id);
    return gs_swap(&r, desc, old_target, lm->l_addr, lm->l_name, id != gs_own_lmid ? lm : NULL, id);
}

/* --------------------------------------------------------------- rules */

static int gs_rules_scan(void)   /* with gs_lock held */
{
    struct gs_walk w = {0};
    size_t before[gs_nrules ? gs_nrules : 1];
    for (size_t i = 0; i < gs_nrules; i++) before[i] = (size_t)gs_rules[i].changed;
    gs_maps_read(&w.maps);
    gs_walk_all(&w);
    free(w.maps.buf);
    int n = 0;
    for (size_t i = 0; i < gs_nrules; i++)
        if (!gs_rules[i].internal) n += gs_rules[i].changed - (int)before[i];
    return w.err ? w.err : n;
}

static int gs_rule_put(const char *pattern, const char *symbol, void *target, int internal)
{
    for (size_t i = 0; i < gs_nrules; i++) {
        struct gs_req *r = &gs_rules[i];
        if (strcmp(r->symbol, symbol) == 0 &&
            ((!r->pattern && !pattern) || (r->pattern && pattern && strcmp(r->pattern, pattern) == 0))) {
            if (r->target == target) return 0;
            /* replaced: it must reach every object again, so it moves to the end */
            struct gs_req keep = *r;
            memmove(r, r + 1, (gs_nrules - i - 1) * sizeof *r);
            gs_rules[gs_nrules - 1] = keep;
            r = &gs_rules[gs_nrules - 1];
            r->target = target;
            for (size_t k = 0; k < gs_nobjs; k++)
                if (gs_objs[k].applied > i) gs_objs[k].applied = i;
            return 0;
        }
    }
    if (gs_nrules == gs_caprules) {
        size_t nc = gs_caprules ? 2 * gs_caprules : 16;
        void *p = realloc(gs_rules, nc * sizeof *gs_rules);
        if (!p) return gs_fail(KUMI_GOT_ENOMEM, "out of memory");
        gs_rules = p;
        gs_caprules = nc;
    }
    struct gs_req *r = &gs_rules[gs_nrules];
    memset(r, 0, sizeof *r);
    r->pattern = pattern ? strdup(pattern) : NULL;
    r->symbol = strdup(symbol);
    r->target = target;
    r->internal = internal;
    if ((pattern && !r->pattern) || !r->symbol) {
        free((char *)r->pattern);
        free((char *)r->symbol);
        return gs_fail(KUMI_GOT_ENOMEM, "out of memory");
    }
    gs_nrules++;
    return 0;
}

GS_API int kumi_got_rules_add(const struct kumi_got_rule *rules, size_t n)
{
    if (n > 0 && !rules) return gs_fail(KUMI_GOT_EINVAL, "kumi_got_rules_add: rules is NULL");
    for (size_t i = 0; i < n; i++)
        if (!rules[i].symbol || !rules[i].symbol[0] || !rules[i].target)
            return gs_fail(KUMI_GOT_EINVAL, "kumi_got_rules_add: rule %zu: %s", i,
                           !rules[i].symbol || !rules[i].symbol[0] ? "symbol is NULL or empty" : "target is NULL");
    gs_msg[0] = 0;
    pthread_once(&gs_lmid_once, gs_init_lmid);
    pthread_mutex_lock(&gs_lock);
    int rc = 0;
    if (!gs_hooked) {
        rc = gs_rule_put(NULL, "dlopen", (void *)kumi_got_dlopen, 1);
        if (rc == 0) rc = gs_rule_put(NULL, "dlmopen", (void *)kumi_got_dlmopen, 1);
        if (rc == 0) gs_hooked = 1;
    }
    for (size_t i = 0; i < n && rc == 0; i++) rc = gs_rule_put(rules[i].pattern, rules[i].symbol, rules[i].target, 0);
    if (rc == 0) rc = gs_rules_scan();
    pthread_mutex_unlock(&gs_lock);
    return rc;
}

GS_API int kumi_got_rule_add(const char *pattern, const char *symbol, void *target)
{
    struct kumi_got_rule r = {pattern, symbol, target};
    int rc = kumi_got_rules_add(&r, 1);
    if (rc == KUMI_GOT_EINVAL) gs_fail(rc, "kumi_got_rule_add: %s", !symbol || !symbol[0] ?
                                       "symbol is NULL or empty" : "target is NULL");
    return rc;
}

GS_API void kumi_got_rules_clear(void)
{
    pthread_mutex_lock(&gs_lock);
    size_t keep = 0;
    for (size_t i = 0; i < gs_nrules; i++) {
        if (gs_rules[i].internal) {
            gs_rules[keep++] = gs_rules[i];
            continue;
        }
        free((char *)gs_rules[i].pattern);
        free((char *)gs_rules[i].symbol);
    }
    gs_nrules = keep;
    for (size_t k = 0; k < gs_nobjs; k++)
        if (gs_objs[k].applied > keep) gs_objs[k].applied = keep;
    pthread_mutex_unlock(&gs_lock);
}

/* Quick test whether anything was loaded or unloaded since the last scan. */
static int gs_count_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    int *changed = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        *changed = info->dlpi_adds != gs_adds || info->dlpi_subs != gs_subs;
    else
        *changed = 1;
    return 1;   /* the first object is enough */
}

GS_API int kumi_got_rules_apply(void)
{
    gs_msg[0] = 0;
    pthread_once(&gs_lmid_once, gs_init_lmid);
    pthread_mutex_lock(&gs_lock);
    int rc = 0;
    if (gs_nrules > 0) {
        int changed = 1;
        dl_iterate_phdr(gs_count_cb, &changed);
        if (changed) rc = gs_rules_scan();
    }
    pthread_mutex_unlock(&gs_lock);
    return rc;
}

/* ---------------------------------------------------------- the dlopen hook */

/* The directory of a loaded object's file ($ORIGIN), "" when unknown. */
static void gs_origin(const struct link_map *lm, char *out, size_t size)
{
    out[0] = 0;
    char p[PATH_MAX];
    if (lm && lm->l_name && lm->l_name[0]) snprintf(p, sizeof p, "%s", lm->l_name);
    else {
        ssize_t l = readlink("/proc/self/exe", p, sizeof p - 1);
        if (l <= 0) return;
        p[l] = 0;
    }
    char *s = strrchr(p, '/');
    if (!s) return;
    *s = 0;
    snprintf(out, size, "%s", p[0] ? p : "/");
}

/* Copies src to dst, $ORIGIN / ${ORIGIN} replaced by origin; -1 if too long. */
static int gs_expand(const char *src, size_t n, const char *origin, char *dst, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; i < n; ) {
        const char *rep = NULL;
        size_t skip = 0;
        if (strncmp(src + i, "$ORIGIN", 7) == 0) { rep = origin; skip = 7; }
        else if (strncmp(src + i, "${ORIGIN}", 9) == 0) { rep = origin; skip = 9; }
        if (rep) {
            size_t l = strlen(rep);
            if (o + l >= size) return -1;
            memcpy(dst + o, rep, l);
            o += l;
            i += skip;
        } else {
            if (o + 1 >= size) return -1;
            dst[o++] = src[i++];
        }
    }
    dst[o] = 0;
    return 0;
}

struct gs_opener { int base; Lmid_t lmid; };

static void *gs_do_open(const struct gs_opener *op, const char *file, int mode)
{
    return op->base ? dlopen(file, mode) : dlmopen(op->lmid, file, mode);
}

/* Tries dir/file for each directory of a ':' separated list. */
static void *gs_try_dirs(const struct gs_opener *op, const char *list, const char *origin, const char *file,
                         int mode)
{
    if (!list) return NULL;
    for (const char *p = list; ; ) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char dir[PATH_MAX], path[PATH_MAX];
        if (n == 0) snprintf(dir, sizeof dir, ".");
        else if (gs_expand(p, n, origin, dir, sizeof dir) != 0) dir[0] = 0;
        if (dir[0] && (size_t)snprintf(path, sizeof path, "%s/%s", dir, file) < sizeof path &&
            access(path, R_OK) == 0) {
            void *h = gs_do_open(op, path, mode);
            if (h) return h;
        }
        if (!end) break;
        p = end + 1;
    }
    return NULL;
}

/* dlopen(file, mode) as the object holding `caller` would have done it: in
 * its namespace, with $ORIGIN its folder, with its DT_RPATH (before
 * LD_LIBRARY_PATH) or DT_RUNPATH (after). */
static void *gs_open_as(const void *caller, const struct gs_opener *given, const char *file, int mode)
{
    struct gs_opener op = given ? *given : (struct gs_opener){1, LM_ID_BASE};
    Dl_info di;
    struct link_map *lm = NULL;
    if (!dladdr1(caller, &di, (void **)&lm, RTLD_DL_LINKMAP)) lm = NULL;
    if (!given && lm) {
        Lmid_t id;
        if (dlinfo(lm, RTLD_DI_LMID, &id) == 0 && id != LM_ID_BASE) op = (struct gs_opener){0, id};
    }
    if (!file) return gs_do_open(&op, file, mode);
    char origin[PATH_MAX], name[PATH_MAX];
    gs_origin(lm, origin, sizeof origin);
    if (strstr(file, "$ORIGIN") || strstr(file, "${ORIGIN}")) {
        if (gs_expand(file, strlen(file), origin, name, sizeof name) == 0) file = name;
    }
    if (strchr(file, '/')) return gs_do_open(&op, file, mode);
    void *h = gs_do_open(&op, file, mode | RTLD_NOLOAD);   /* already loaded: as dlopen would */
    if (h) return h;
    char cpath[PATH_MAX];
    if (!lm || gs_path_of(&(struct dl_phdr_info){.dlpi_name = lm->l_name}, !lm->l_name[0], cpath,
                          sizeof cpath) != 0)
        return gs_do_open(&op, file, mode);
    struct gs_elf e;
    int rc = gs_parse(cpath, NULL, 0, &e);
    const char *lib = getauxval(AT_SECURE) ? NULL : getenv("LD_LIBRARY_PATH");
    if (rc == 0 && e.runpath) {
        h = gs_try_dirs(&op, lib, origin, file, mode);
        if (!h) h = gs_try_dirs(&op, e.runpath, origin, file, mode);
    } else if (rc == 0 && e.rpath) {
        h = gs_try_dirs(&op, e.rpath, origin, file, mode);
    }
    gs_elf_free(&e);
    return h ? h : gs_do_open(&op, file, mode);
}

static void gs_ns_note(void *h);

static void (*gs_load_hook)(void *);
static void *gs_load_hook_arg;

GS_API int kumi_got_set_load_hook(void (*fn)(void *arg), void *arg)
{
    gs_msg[0] = 0;
    pthread_once(&gs_lmid_once, gs_init_lmid);
    pthread_mutex_lock(&gs_lock);
    int rc = 0;
    if (!gs_hooked) {   /* the dlopen hook, as the first rule installs it */
        rc = gs_rule_put(NULL, "dlopen", (void *)kumi_got_dlopen, 1);
        if (rc == 0) rc = gs_rule_put(NULL, "dlmopen", (void *)kumi_got_dlmopen, 1);
        if (rc == 0) gs_hooked = 1;
        if (rc == 0) rc = gs_rules_scan();
    }
    if (rc >= 0) {
        __atomic_store_n(&gs_load_hook_arg, arg, __ATOMIC_RELAXED);
        __atomic_store_n(&gs_load_hook, fn, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&gs_lock);
    return rc < 0 ? rc : 0;
}

static void gs_after_load(void)
{
    int saved = errno;
    void (*hook)(void *) = __atomic_load_n(&gs_load_hook, __ATOMIC_ACQUIRE);
    if (hook) hook(__atomic_load_n(&gs_load_hook_arg, __ATOMIC_RELAXED));   /* without the lock: it may add rules */
    kumi_got_rules_apply();
    errno = saved;
}

GS_API void *kumi_got_dlopen(const char *file, int mode)
{
    void *h = gs_open_as(__builtin_return_address(0), NULL, file, mode);
    if (h) {
        gs_ns_note(h);          /* a caller in another namespace opens there */
        gs_after_load();
    }
    return h;
}

/* Remembers the namespace of h (dlmopen'ed) when it is not ours. */
static void gs_ns_note(void *h)
{
    pthread_once(&gs_lmid_once, gs_init_lmid);
    Lmid_t id;
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LMID, &id) != 0 || id == gs_own_lmid || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
        return;
    pthread_mutex_lock(&gs_lock);
    int known = 0;
    for (size_t i = 0; i < gs_nns; i++) known |= gs_nss[i].id == id;
    pthread_mutex_unlock(&gs_lock);
    if (known) return;
    /* no dl* call with gs_lock held: a constructor inside dlopen may wait for it */
    void *keep = dlmopen(id, lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!keep) return;
    pthread_mutex_lock(&gs_lock);
    for (size_t i = 0; i < gs_nns; i++) known |= gs_nss[i].id == id;
    if (!known && gs_nns == gs_capns) {
        size_t nc = gs_capns ? 2 * gs_capns : 4;
        void *p = realloc(gs_nss, nc * sizeof *gs_nss);
        if (p) {
            gs_nss = p;
            gs_capns = nc;
        }
    }
    int added = !known && gs_nns < gs_capns;
    if (added) gs_nss[gs_nns++] = (struct gs_ns){id, keep, lm};
    pthread_mutex_unlock(&gs_lock);
    if (!added) dlclose(keep);
}

GS_API void *kumi_got_dlmopen(long lmid, const char *file, int mode)
{
    struct gs_opener op = {lmid == LM_ID_BASE, (Lmid_t)lmid};
    void *h = gs_open_as(__builtin_return_address(0), &op, file, mode);
    if (h) {
        gs_ns_note(h);
        gs_after_load();
    }
    return h;
}
