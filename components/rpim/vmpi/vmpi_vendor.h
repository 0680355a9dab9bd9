/* The vendor MPI as rpim/vmpi and p2p/vmpi see it (static functions only:
 * each of the two components that includes this gets its own copy).
 *
 * The vendor's library (Open MPI's libmpi.so.40, MPICH's libmpich.so.12) is
 * loaded by rpim/vmpi with dlmopen(LM_ID_NEWLM): a link-map namespace of its
 * own, so that its MPI_* symbols (and those of everything it loads) never
 * meet Kumi's own MPI_*, in either direction.
 *
 * One glibc limit had to be worked around (glibc 2.36, Debian 12): a
 * dlopen(..., RTLD_GLOBAL) made by code inside a dlmopen namespace crashes
 * in the dynamic loader (add_to_global: the namespace has no main search
 * list; glibc bug 18684), and Open MPI opens its MCA components exactly so
 * (opal's dl framework).  Stripping RTLD_GLOBAL alone is not enough either
 * (the components then miss libopen-pal's symbols: a "shim first" library
 * becomes the namespace's global scope).  What works: the vendor library is
 * the first object of the namespace (so its dependency list, libmpi +
 * libopen-pal + ..., is the global scope every later object of the namespace
 * resolves against), and the `dlopen` import of every object of the
 * namespace is redirected (its GOT slot rewritten, x86_64 and aarch64) to
 * vmpi_dlopen() below, which opens the file in that namespace with
 * dlmopen(namespace, file, mode & ~RTLD_GLOBAL) and then redirects the
 * imports of what that loaded in turn.  RTLD_DEEPBIND dlopen was not used:
 * it keeps the vendor's references inside its library, but Kumi's MPI_* would
 * still be what the vendor's MCA components and anything dlsym(RTLD_DEFAULT)
 * find first.
 *
 * Vendor handles are passed as uintptr_t (Open MPI: pointers; MPICH: ints,
 * which the x86_64/aarch64 calling conventions pass in the same registers or
 * 8-byte stack slots), requests are kept in zeroed 8-byte slots (MPICH writes
 * 4 of them), statuses in 64-byte buffers read at the vendor's offsets.
 *
 * rpim/vmpi hands the loaded namespace to p2p/vmpi through the environment
 * variable KUMI_INTERNAL_VMPI = "pid:lmid:hdrcomm:paycomm:library" (the two
 * communicators are duplicates of the vendor's MPI_COMM_WORLD made for
 * p2p/vmpi); a process that inherits the variable ignores it (another pid).
 */
#ifndef KUMI_VMPI_VENDOR_H
#define KUMI_VMPI_VENDOR_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define VMPI_ENV "KUMI_INTERNAL_VMPI"

#define VMPI_FN static __attribute__((unused))

typedef uintptr_t vmpi_h;           /* a vendor handle (communicator, datatype, ...) */

struct vmpi_vendor {
    const char *name;                   /* "Open MPI", "MPICH" */
    char path[512];                     /* the library as loaded */
    void *lib;                          /* its dlmopen handle */
    Lmid_t lmid;
    vmpi_h world, byte, errors_return;
    int any_source, any_tag;
    int st_source, st_tag, st_error;    /* offsets in MPI_Status */
    int (*Init_thread)(int *, char ***, int, int *);
    int (*Initialized)(int *);
    int (*Finalized)(int *);
    int (*Finalize)(void);
    int (*Abort)(vmpi_h, int);
    int (*Comm_rank)(vmpi_h, int *);
    int (*Comm_size)(vmpi_h, int *);
    int (*Comm_dup)(vmpi_h, void *);
    int (*Comm_set_errhandler)(vmpi_h, vmpi_h);
    int (*Allgather)(const void *, int, vmpi_h, void *, int, vmpi_h, vmpi_h);
    int (*Allgatherv)(const void *, int, vmpi_h, void *, const int *, const int *, vmpi_h, vmpi_h);
    int (*Bcast)(void *, int, vmpi_h, int, vmpi_h);
    int (*Isend)(const void *, int, vmpi_h, int, int, vmpi_h, void *);
    int (*Irecv)(void *, int, vmpi_h, int, int, vmpi_h, void *);
    int (*Iprobe)(int, int, vmpi_h, int *, void *);
    int (*Test)(void *, int *, void *);
    int (*Cancel)(void *);
    int (*Get_count)(const void *, vmpi_h, int *);
    int (*Error_string)(int, char *, int *);
};

/* A vendor MPI_Status (Open MPI: 24 bytes, MPICH: 20). */
typedef union { char b[64]; uint64_t align; } vmpi_status;

static inline int vmpi_st_int(const struct vmpi_vendor *v, const vmpi_status *st, int off)
{
    int x;
    (void)v;
    memcpy(&x, st->b + off, sizeof x);
    return x;
}

/* ------------------------------------------------ the dlopen redirection */
static Lmid_t vmpi_ns_lmid;
static void *vmpi_ns_root;
VMPI_FN void vmpi_redirect_all(void);

/* What the namespace's objects call instead of dlopen (see the top). */
VMPI_FN void *vmpi_dlopen(const char *file, int mode)
{
    struct link_map *root = NULL;
    if (!file) {
        /* "the program": the vendor library stands for it, with a reference of
         * its own (hwloc dlcloses the handle: the library must stay) */
        if (dlinfo(vmpi_ns_root, RTLD_DI_LINKMAP, &root) != 0 || !root) return NULL;
        file = root->l_name;
        mode = RTLD_LAZY | RTLD_NOLOAD;
    }
    void *h = dlmopen(vmpi_ns_lmid, file, mode & ~RTLD_GLOBAL);
    if (h) vmpi_redirect_all();
    return h;
}

VMPI_FN uintptr_t vmpi_dyn_addr(uintptr_t p, uintptr_t base)
{
    return p < base ? p + base : p;     /* ld.so relocates most d_ptr entries in place */
}

#if defined(__x86_64__)
#define VMPI_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define VMPI_R_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define VMPI_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define VMPI_R_GLOB_DAT R_AARCH64_GLOB_DAT
#endif

/* Rewrites object l's GOT slots for `dlopen`; returns how many. */
VMPI_FN int vmpi_redirect_one(struct link_map *l)
{
#ifdef VMPI_R_JUMP_SLOT
    uintptr_t base = l->l_addr, symtab = 0, strtab = 0, jmprel = 0, rela = 0;
    size_t pltsz = 0, relasz = 0;
    int n = 0;
    long pg = sysconf(_SC_PAGESIZE);
    if (!l->l_ld) return 0;
    for (ElfW(Dyn) *d = l->l_ld; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: symtab = vmpi_dyn_addr(d->d_un.d_ptr, base); break;
        case DT_STRTAB: strtab = vmpi_dyn_addr(d->d_un.d_ptr, base); break;
        case DT_JMPREL: jmprel = vmpi_dyn_addr(d->d_un.d_ptr, base); break;
        case DT_PLTRELSZ: pltsz = d->d_un.d_val; break;
        case DT_RELA: rela = vmpi_dyn_addr(d->d_un.d_ptr, base); break;
        case DT_RELASZ: relasz = d->d_un.d_val; break;
        default: break;
        }
    }
    if (!symtab || !strtab || pg <= 0) return 0;
    for (int part = 0; part < 2; part++) {
        const ElfW(Rela) *r = (const ElfW(Rela) *)(part ? rela : jmprel);
        size_t cnt = (part ? relasz : pltsz) / sizeof *r;
        for (size_t i = 0; r && i < cnt; i++) {
            unsigned long t = ELF64_R_TYPE(r[i].r_info);
            if (t != VMPI_R_JUMP_SLOT && t != VMPI_R_GLOB_DAT) continue;
            const ElfW(Sym) *s = (const ElfW(Sym) *)symtab + ELF64_R_SYM(r[i].r_info);
            if (strcmp((const char *)strtab + s->st_name, "dlopen") != 0) continue;
            void **slot = (void **)(base + r[i].r_offset);
            if (*slot == (void *)vmpi_dlopen) continue;
            /* RELRO pages are read-only now: a GOT page holds no code */
            if (mprotect((void *)((uintptr_t)slot & ~(uintptr_t)(pg - 1)), (size_t)pg, PROT_READ | PROT_WRITE) != 0)
                continue;
            *slot = (void *)vmpi_dlopen;
            n++;
        }
    }
    return n;
#else
    (void)l;
    return 0;
#endif
}

VMPI_FN void vmpi_redirect_all(void)
{
    struct link_map *l = NULL;
    if (!vmpi_ns_root || dlinfo(vmpi_ns_root, RTLD_DI_LINKMAP, &l) != 0 || !l) return;
    while (l->l_prev) l = l->l_prev;
    for (; l; l = l->l_next) vmpi_redirect_one(l);
}

/* ------------------------------------------------ symbols and constants */
VMPI_FN int vmpi_resolve(struct vmpi_vendor *v, char *err, size_t errlen)
{
#define VMPI_SYM(f) do { *(void **)&v->f = dlsym(v->lib, "MPI_" #f); \
        if (!v->f) { snprintf(err, errlen, "%s has no MPI_%s", v->path, #f); return -1; } } while (0)
    VMPI_SYM(Init_thread); VMPI_SYM(Initialized); VMPI_SYM(Finalized); VMPI_SYM(Finalize);
    VMPI_SYM(Abort); VMPI_SYM(Comm_rank); VMPI_SYM(Comm_size); VMPI_SYM(Comm_dup);
    VMPI_SYM(Comm_set_errhandler); VMPI_SYM(Allgather); VMPI_SYM(Allgatherv); VMPI_SYM(Bcast);
    VMPI_SYM(Isend); VMPI_SYM(Irecv); VMPI_SYM(Iprobe); VMPI_SYM(Test); VMPI_SYM(Cancel);
    VMPI_SYM(Get_count); VMPI_SYM(Error_string);
#undef VMPI_SYM
    if (dlsym(v->lib, "kumi_world_rank")) {
        snprintf(err, errlen, "%s is Kumi's own library, not a vendor MPI", v->path);
        return -1;
    }
    void *w = dlsym(v->lib, "ompi_mpi_comm_world");
    if (w) {                                    /* Open MPI: handles are addresses of objects */
        void *b = dlsym(v->lib, "ompi_mpi_byte"), *e = dlsym(v->lib, "ompi_mpi_errors_return");
        if (!b || !e) { snprintf(err, errlen, "%s: an Open MPI without ompi_mpi_byte", v->path); return -1; }
        v->name = "Open MPI";
        v->world = (vmpi_h)w; v->byte = (vmpi_h)b; v->errors_return = (vmpi_h)e;
        v->any_source = -1; v->any_tag = -1;
        v->st_source = 0; v->st_tag = 4; v->st_error = 8;
        return 0;
    }
    if (dlsym(v->lib, "MPII_Version_device")) {
        v->name = "MPICH";                      /* integer handles, mpich/mpi.h */
        v->world = 0x44000000; v->byte = 0x4c00010d; v->errors_return = 0x54000001;
        v->any_source = -2; v->any_tag = -1;
        v->st_source = 8; v->st_tag = 12; v->st_error = 16;
        return 0;
    }
    snprintf(err, errlen, "%s is neither Open MPI nor MPICH (no ompi_mpi_comm_world, no MPII_Version_device)", v->path);
    return -1;
}

/* Loads the vendor library into a new namespace (rpim/vmpi). */
VMPI_FN int vmpi_load(struct vmpi_vendor *v, const char *path, char *err, size_t errlen)
{
    memset(v, 0, sizeof *v);
    snprintf(v->path, sizeof v->path, "%s", path);
    v->lib = dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL);
    if (!v->lib) {
        const char *e = dlerror();
        snprintf(err, errlen, "dlmopen(LM_ID_NEWLM, \"%s\") failed: %s", path, e ? e : "?");
        return -1;
    }
    if (dlinfo(v->lib, RTLD_DI_LMID, &v->lmid) != 0) {
        snprintf(err, errlen, "dlinfo(RTLD_DI_LMID) of %s failed", path);
        return -1;
    }
    vmpi_ns_lmid = v->lmid;
    vmpi_ns_root = v->lib;
    vmpi_redirect_all();
    return vmpi_resolve(v, err, errlen);
}

/* Finds the namespace rpim/vmpi loaded (p2p/vmpi); hdr and pay receive the
 * two communicators made for p2p.  0, or -1 with a reason. */
VMPI_FN int vmpi_attach(struct vmpi_vendor *v, vmpi_h *hdr, vmpi_h *pay, char *err, size_t errlen)
{
    const char *e = getenv(VMPI_ENV);
    long pid;
    long lm;
    unsigned long long h, p;
    int off = 0;
    memset(v, 0, sizeof *v);
    if (!e || sscanf(e, "%ld:%ld:%llx:%llx:%n", &pid, &lm, &h, &p, &off) != 4 || off <= 0 || pid != (long)getpid()) {
        snprintf(err, errlen, "rpim/vmpi did not join a vendor MPI job (start with mpirun.openmpi or "
                 "MPI_COMPONENTS=rpim=vmpi)");
        return -1;
    }
    snprintf(v->path, sizeof v->path, "%s", e + off);
    v->lmid = (Lmid_t)lm;
    v->lib = dlmopen(v->lmid, v->path, RTLD_LAZY | RTLD_NOLOAD);
    if (!v->lib) {
        snprintf(err, errlen, "the vendor library %s is not loaded in namespace %ld", v->path, lm);
        return -1;
    }
    *hdr = (vmpi_h)h;
    *pay = (vmpi_h)p;
    return vmpi_resolve(v, err, errlen);
}

/* Which vendor launcher started this process (its default library), or
 * NULL: Open MPI's mpirun (OMPI_COMM_WORLD_RANK) or a PMI-1 launcher such as
 * MPICH's Hydra (PMI_RANK with PMI_FD or PMI_PORT); never a rank of Kumi's
 * mpiexec (KUMI_RANK: rpim/fork's). */
static inline const char *vmpi_launcher(void)
{
    if (getenv("KUMI_RANK")) return NULL;
    if (getenv("OMPI_COMM_WORLD_RANK")) return "libmpi.so.40";
    if (getenv("PMI_RANK") && (getenv("PMI_FD") || getenv("PMI_PORT"))) return "libmpich.so.12";
    return NULL;
}

/* The vendor's text for an error code. */
static inline const char *vmpi_errstr(const struct vmpi_vendor *v, int code, char *buf, int len)
{
    int l = len;
    if (!v->Error_string || v->Error_string(code, buf, &l) != 0) snprintf(buf, (size_t)len, "error %d", code);
    return buf;
}

#endif
