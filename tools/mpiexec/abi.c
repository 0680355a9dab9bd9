/* mpiexec: which MPI ABI a program needs, from its ELF dynamic section.
 *
 * The program's DT_NEEDED names, and those of the libraries it names that
 * are found (transitively, breadth first, at most MX_ABI_MAX_OBJECTS objects
 * and MX_ABI_MAX_DEPTH levels: a program linked against a library that is
 * linked against libmpi.so.40), decide:
 *
 *   libmpi.so.40 and its Fortran/C++ companions      ompi
 *   libmpich.so.12, libmpi.so.12 and companions      mpich
 *   libmpi_abi.so.1, Kumi's libmpi.so.0, libmpifort.so.0   standard
 *   any other version of those library names         unsupported (libmpi.so.1
 *     and libmpi.so.20 of Open MPI 1.x-3.x, libmpich.so.3 of MPICH2,
 *     libmpi_f77.so.*, libfmpich.so.*, ...)
 *   none of them                                     none (run as is)
 *
 * libmpi.so.0 is both Kumi's library and that of Open MPI 1.0-1.4.  The
 * file the loader would take (searched like ld.so does: DT_RPATH, then
 * LD_LIBRARY_PATH, DT_RUNPATH, /etc/ld.so.conf's folders, the default
 * folders) is Kumi's when its dynamic symbol table defines
 * kumi_abi_MPI_Init (the private entry every Kumi libmpi exports for the
 * shims); a libmpi.so.0 found without it is foreign, hence unsupported.
 * One that is not found at all counts as Kumi's (the loader then reports
 * it missing anyway).  An unversioned libmpi.so is judged the same way.
 *
 * The reader is a small hand-written one of the ELF program headers and
 * PT_DYNAMIC (plus the section headers for the .dynsym check) rather than
 * libelf: libelf is an optional dependency of the build (configure's
 * HAVE_LIBELF, for abi/gotswap), and mpiexec must choose the ABI on every
 * system Kumi builds on; reading DT_NEEDED/DT_RPATH/DT_RUNPATH needs about
 * a hundred lines.  Only ELF files of the machine's class and byte order
 * are read (others cannot load Kumi's libraries anyway): the rest, scripts
 * included, are "none".  Everything read is bounded (string tables 16 MiB,
 * symbol tables 64 MiB, 256 DT_NEEDED per object). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "abi.h"
#include "abi_detect.h"

#define MX_ABI_MAX_OBJECTS 128
#define MX_ABI_MAX_DEPTH   8
#define MX_ABI_MAX_NEEDED  256
#define MX_ABI_KUMI_MARK   "kumi_abi_MPI_Init"

#if __SIZEOF_POINTER__ == 8
#define MX_ELFCLASS ELFCLASS64
#else
#define MX_ELFCLASS ELFCLASS32
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MX_ELFDATA ELFDATA2LSB
#else
#define MX_ELFDATA ELFDATA2MSB
#endif

/* ElfW(...) of link.h: the native class */
struct elf_obj {
    char *needed[MX_ABI_MAX_NEEDED];
    int nneeded;
    char *rpath, *runpath;
    int kumi;            /* defines kumi_abi_MPI_Init (only when asked) */
};

static void elf_obj_free(struct elf_obj *o)
{
    for (int i = 0; i < o->nneeded; i++) free(o->needed[i]);
    free(o->rpath);
    free(o->runpath);
    memset(o, 0, sizeof *o);
}

static void scopy(char *d, size_t n, const char *s)
{
    size_t l = strnlen(s, n - 1);
    memcpy(d, s, l);
    d[l] = 0;
}

static int pread_all(int fd, void *buf, size_t n, off_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

static void *read_range(int fd, off_t off, size_t n, size_t max, off_t fsize)
{
    if (n == 0 || n > max || off < 0 || off > fsize || (off_t)n > fsize - off) return NULL;
    char *b = malloc(n + 1);
    if (!b) return NULL;
    if (pread_all(fd, b, n, off) < 0) {
        free(b);
        return NULL;
    }
    b[n] = 0;
    return b;
}

/* Does the object define `name` in its dynamic symbol table? */
static int defines_symbol(int fd, const ElfW(Ehdr) *eh, off_t fsize, const char *name)
{
    if (!eh->e_shoff || eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shnum == 0 || eh->e_shnum > 4096) return 0;
    ElfW(Shdr) *sh = read_range(fd, (off_t)eh->e_shoff, (size_t)eh->e_shnum * sizeof *sh, 4096 * sizeof *sh, fsize);
    if (!sh) return 0;
    int found = 0;
    for (int i = 0; i < eh->e_shnum && !found; i++) {
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_entsize != sizeof(ElfW(Sym)) || sh[i].sh_link >= eh->e_shnum)
            continue;
        const ElfW(Shdr) *st = &sh[sh[i].sh_link];
        ElfW(Sym) *sym = read_range(fd, (off_t)sh[i].sh_offset, sh[i].sh_size, 64u << 20, fsize);
        char *str = read_range(fd, (off_t)st->sh_offset, st->sh_size, 16u << 20, fsize);
        if (sym && str) {
            size_t ns = sh[i].sh_size / sizeof *sym;
            for (size_t k = 0; k < ns && !found; k++)
                if (sym[k].st_name < st->sh_size && sym[k].st_shndx != SHN_UNDEF &&
                    strcmp(str + sym[k].st_name, name) == 0)
                    found = 1;
        }
        free(sym);
        free(str);
    }
    free(sh);
    return found;
}

/* Read path's DT_NEEDED, DT_RPATH, DT_RUNPATH.  0, or -1 when it is not
 * an ELF object of this machine's class and byte order (or unreadable). */
static int elf_read(const char *path, struct elf_obj *o, int want_mark)
{
    memset(o, 0, sizeof *o);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = -1;
    struct stat stb;
    ElfW(Ehdr) eh;
    ElfW(Phdr) *ph = NULL;
    ElfW(Dyn) *dyn = NULL;
    char *str = NULL;
    if (fstat(fd, &stb) < 0 || !S_ISREG(stb.st_mode) || stb.st_size < (off_t)sizeof eh) goto out;
    off_t fsize = stb.st_size;
    if (pread_all(fd, &eh, sizeof eh, 0) < 0) goto out;
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != MX_ELFCLASS ||
        eh.e_ident[EI_DATA] != MX_ELFDATA || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
        eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum == 0 || eh.e_phnum > 4096)
        goto out;
    ph = read_range(fd, (off_t)eh.e_phoff, (size_t)eh.e_phnum * sizeof *ph, 4096 * sizeof *ph, fsize);
    if (!ph) goto out;
    rc = 0;                              /* an ELF object; no PT_DYNAMIC: static, needs nothing */
    const ElfW(Phdr) *pd = NULL;
    for (int i = 0; i < eh.e_phnum; i++)
        if (ph[i].p_type == PT_DYNAMIC) pd = &ph[i];
    if (!pd || pd->p_filesz < sizeof(ElfW(Dyn))) goto out;
    dyn = read_range(fd, (off_t)pd->p_offset, pd->p_filesz, 1u << 20, fsize);
    if (!dyn) goto out;
    size_t nd = pd->p_filesz / sizeof *dyn;
    ElfW(Addr) strtab = 0;
    size_t strsz = 0;
    for (size_t i = 0; i < nd && dyn[i].d_tag != DT_NULL; i++) {
        if (dyn[i].d_tag == DT_STRTAB) strtab = dyn[i].d_un.d_ptr;
        else if (dyn[i].d_tag == DT_STRSZ) strsz = dyn[i].d_un.d_val;
    }
    /* DT_STRTAB is an address: the file offset is that of its PT_LOAD */
    off_t stroff = -1;
    for (int i = 0; i < eh.e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && strtab >= ph[i].p_vaddr && strtab - ph[i].p_vaddr < ph[i].p_filesz) {
            stroff = (off_t)(ph[i].p_offset + (strtab - ph[i].p_vaddr));
            break;
        }
    if (stroff < 0 || !(str = read_range(fd, stroff, strsz, 16u << 20, fsize))) goto out;
    for (size_t i = 0; i < nd && dyn[i].d_tag != DT_NULL; i++) {
        ElfW(Sxword) t = dyn[i].d_tag;
        if (t != DT_NEEDED && t != DT_RPATH && t != DT_RUNPATH) continue;
        if (dyn[i].d_un.d_val >= strsz) continue;
        char *s = strdup(str + dyn[i].d_un.d_val);
        if (!s) continue;
        if (t == DT_NEEDED && o->nneeded < MX_ABI_MAX_NEEDED) o->needed[o->nneeded++] = s;
        else if (t == DT_RPATH && !o->rpath) o->rpath = s;
        else if (t == DT_RUNPATH && !o->runpath) o->runpath = s;
        else free(s);
    }
    if (want_mark) o->kumi = defines_symbol(fd, &eh, fsize, MX_ABI_KUMI_MARK);
out:
    free(ph);
    free(dyn);
    free(str);
    close(fd);
    return rc;
}

/* ------------------------------------------------------------ search path */

static char **sysdirs;
static int nsysdirs, capsysdirs;

static void add_sysdir(const char *d)
{
    if (!d[0]) return;
    for (int i = 0; i < nsysdirs; i++)
        if (!strcmp(sysdirs[i], d)) return;
    if (nsysdirs == capsysdirs) {
        int nc = capsysdirs ? 2 * capsysdirs : 32;
        char **n = realloc(sysdirs, (size_t)nc * sizeof *n);
        if (!n) return;
        sysdirs = n;
        capsysdirs = nc;
    }
    char *s = strdup(d);
    if (s) sysdirs[nsysdirs++] = s;
}

/* the folders of /etc/ld.so.conf (and its includes), as ldconfig reads them */
static void read_ldconf(const char *file, int depth)
{
    if (depth > 4) return;
    FILE *f = fopen(file, "re");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "#\r\n")] = 0;
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        char *e = p + strlen(p);
        while (e > p && (e[-1] == ' ' || e[-1] == '\t')) *--e = 0;
        if (!*p) continue;
        if (!strncmp(p, "include", 7) && (p[7] == ' ' || p[7] == '\t')) {
            p += 7;
            while (*p == ' ' || *p == '\t') p++;
            char pat[PATH_MAX];
            if (p[0] == '/') scopy(pat, sizeof pat, p);
            else {   /* relative to the including file's folder */
                const char *sl = strrchr(file, '/');
                snprintf(pat, sizeof pat, "%.*s/%s", sl ? (int)(sl - file) : 1, sl ? file : ".", p);
            }
            glob_t g;
            if (glob(pat, 0, NULL, &g) == 0) {
                for (size_t i = 0; i < g.gl_pathc; i++) read_ldconf(g.gl_pathv[i], depth + 1);
                globfree(&g);
            }
            continue;
        }
        if (!strncmp(p, "hwcap", 5)) continue;
        add_sysdir(p);
    }
    fclose(f);
}

static void init_sysdirs(void)
{
    if (sysdirs) return;
    read_ldconf("/etc/ld.so.conf", 0);
#if __SIZEOF_POINTER__ == 8
    add_sysdir("/lib64");
    add_sysdir("/usr/lib64");
#endif
    add_sysdir("/lib");
    add_sysdir("/usr/lib");
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static void dirname_of(const char *path, char *out, size_t len)
{
    const char *sl = strrchr(path, '/');
    if (!sl) snprintf(out, len, ".");
    else if (sl == path) snprintf(out, len, "/");
    else snprintf(out, len, "%.*s", (int)(sl - path), path);
}

/* Look for name in a ':' (or ';') separated list; $ORIGIN is origin. */
static int search_list(const char *list, const char *origin, const char *name, char *out, size_t len)
{
    if (!list) return 0;
    const char *p = list;
    while (*p) {
        size_t l = strcspn(p, ":;");
        char dir[PATH_MAX];
        size_t k = 0;
        for (size_t i = 0; i < l && k + 1 < sizeof dir;) {
            if (p[i] == '$' && (!strncmp(p + i, "$ORIGIN", 7) || !strncmp(p + i, "${ORIGIN}", 9))) {
                size_t ol = strlen(origin);
                if (k + ol + 1 >= sizeof dir) break;
                memcpy(dir + k, origin, ol);
                k += ol;
                i += p[i + 1] == '{' ? 9 : 7;
            } else {
                dir[k++] = p[i++];
            }
        }
        dir[k] = 0;
        if (k == 0) snprintf(dir, sizeof dir, ".");   /* an empty entry: the current folder */
        if ((size_t)snprintf(out, len, "%s/%s", dir, name) < len && is_file(out)) return 1;
        p += l;
        if (*p) p++;
    }
    return 0;
}

/* Where the loader would find `name` needed by object o (at opath), in a
 * process whose program is prog (at progpath); 2 when found through a
 * DT_RPATH (which LD_LIBRARY_PATH does not override), 1 otherwise, 0 when
 * not found. */
static int resolve(const char *name, const struct elf_obj *o, const char *opath, const struct elf_obj *prog,
                   const char *progpath, const char *ldpath, char *out, size_t len)
{
    if (strchr(name, '/')) {
        snprintf(out, len, "%s", name);
        return is_file(out);
    }
    char origin[PATH_MAX], porigin[PATH_MAX];
    dirname_of(opath, origin, sizeof origin);
    dirname_of(progpath, porigin, sizeof porigin);
    if (!o->runpath) {
        if (search_list(o->rpath, origin, name, out, len)) return 2;
        if (prog != o && !prog->runpath && search_list(prog->rpath, porigin, name, out, len)) return 2;
    }
    if (search_list(ldpath, origin, name, out, len)) return 1;
    if (search_list(o->runpath, origin, name, out, len)) return 1;
    init_sysdirs();
    for (int i = 0; i < nsysdirs; i++)
        if ((size_t)snprintf(out, len, "%s/%s", sysdirs[i], name) < len && is_file(out)) return 1;
    return 0;
}

/* ------------------------------------------------------------ classification */

enum lib_kind { LIB_OTHER, LIB_OMPI, LIB_MPICH, LIB_STANDARD, LIB_KUMI_OR_FOREIGN, LIB_FOREIGN };

/* What kind of library `name` is; *index: its place in its ABI's libs[]
 * (-1: Kumi's own libmpi.so.0 / libmpifort.so.0) */
static enum lib_kind classify(const char *name, int *index)
{
    *index = -1;
    for (int a = 0; a < MX_NABIS; a++)
        for (int i = 0; mx_abis[a].libs[i]; i++)
            if (!strcmp(name, mx_abis[a].libs[i])) {
                *index = i;
                return mx_abis[a].abi == MX_ABI_OMPI ? LIB_OMPI
                     : mx_abis[a].abi == MX_ABI_MPICH ? LIB_MPICH : LIB_STANDARD;
            }
    if (!strcmp(name, "libmpifort.so.0")) return LIB_STANDARD;   /* Kumi's Fortran library */
    if (!strcmp(name, "libmpi.so.0") || !strcmp(name, "libmpi.so")) return LIB_KUMI_OR_FOREIGN;
    /* the library names of MPI implementations, any other version:
     * "libmpi_f77.so.1" is base "libmpi_f77", version ".1" */
    static const char *const bases[] = {
        "libmpi", "libmpich", "libmpi_abi", "libmpi_mpifh", "libmpi_usempif08", "libmpi_usempi",
        "libmpi_usempi_ignore_tkr", "libmpi_cxx", "libmpi_f77", "libmpi_f90", "libmpichfort", "libmpifort",
        "libmpicxx", "libmpichcxx", "libfmpich", "libmpichf90", NULL };
    const char *so = strstr(name, ".so");
    if (!so || (so[3] && so[3] != '.')) return LIB_OTHER;
    for (const char *p = so + 3; *p; p++)
        if (!(*p == '.' || (*p >= '0' && *p <= '9'))) return LIB_OTHER;
    for (int i = 0; bases[i]; i++)
        if (strlen(bases[i]) == (size_t)(so - name) && !strncmp(name, bases[i], (size_t)(so - name)))
            return LIB_FOREIGN;
    return LIB_OTHER;
}

int mx_abi_detect(const char *given, const char *ldpath, struct mx_abi_result *r)
{
    memset(r, 0, sizeof *r);
    r->abi = MX_ABI_NONE;
    /* the loader's $ORIGIN of the program is the folder of its real path */
    char progpath[PATH_MAX];
    if (!realpath(given, progpath)) scopy(progpath, sizeof progpath, given);
    struct {
        char *path;
        int depth;
    } q[MX_ABI_MAX_OBJECTS];
    int nq = 0, head = 0;
    struct elf_obj prog;
    if (elf_read(progpath, &prog, 0) < 0) return -1;
    q[nq].path = strdup(progpath);
    q[nq++].depth = 0;
    struct { char by[PATH_MAX]; char lib[256]; } first[3];   /* ompi, mpich, standard: first seen */
    int seen[3] = { 0, 0, 0 };
    unsigned mask[3] = { 0, 0, 0 }, rpath[3] = { 0, 0, 0 };
    int foreign = 0;

    while (head < nq && !foreign) {
        const char *opath = q[head].path;
        int depth = q[head].depth;
        struct elf_obj cur, *o = &cur;
        if (head == 0) o = &prog;
        else if (!q[head].path || elf_read(opath, &cur, 0) < 0) {
            head++;
            continue;
        }
        for (int i = 0; i < o->nneeded && !foreign; i++) {
            const char *nm = o->needed[i];
            int idx;
            enum lib_kind k = classify(nm, &idx);
            char found[PATH_MAX];
            int s = -1;
            if (k == LIB_KUMI_OR_FOREIGN) {
                if (resolve(nm, o, opath, &prog, progpath, ldpath, found, sizeof found)) {
                    struct elf_obj lib;
                    int kumi = elf_read(found, &lib, 1) == 0 && lib.kumi;
                    elf_obj_free(&lib);
                    if (!kumi) {
                        k = LIB_FOREIGN;
                        scopy(r->where, sizeof r->where, found);
                    } else {
                        k = LIB_STANDARD;
                    }
                } else {
                    k = LIB_STANDARD;
                }
            }
            switch (k) {
            case LIB_OMPI: s = 0; break;
            case LIB_MPICH: s = 1; break;
            case LIB_STANDARD: s = 2; break;
            case LIB_FOREIGN:
                foreign = 1;
                scopy(r->lib, sizeof r->lib, nm);
                scopy(r->by, sizeof r->by, head ? opath : "");
                break;
            default:
                /* an ordinary library: look inside it, once */
                if (depth + 1 < MX_ABI_MAX_DEPTH && nq < MX_ABI_MAX_OBJECTS &&
                    resolve(nm, o, opath, &prog, progpath, ldpath, found, sizeof found)) {
                    char *rp = realpath(found, NULL);
                    int dup = 0;
                    for (int j = 0; j < nq && rp && !dup; j++) dup = q[j].path && !strcmp(q[j].path, rp);
                    if (rp && !dup) {
                        q[nq].path = rp;
                        q[nq++].depth = depth + 1;
                    } else {
                        free(rp);
                    }
                }
                break;
            }
            if (s >= 0 && idx >= 0 && resolve(nm, o, opath, &prog, progpath, ldpath, found, sizeof found) == 2)
                rpath[s] |= 1u << idx;     /* LD_LIBRARY_PATH would not win: preload */
            if (s >= 0) {
                if (!seen[s]) {
                    seen[s] = 1;
                    scopy(first[s].lib, sizeof first[s].lib, nm);
                    scopy(first[s].by, sizeof first[s].by, head ? opath : "");
                }
                if (idx >= 0) mask[s] |= 1u << idx;
            }
        }
        if (o != &prog) elf_obj_free(o);
        head++;
    }
    r->nobjects = nq;
    for (int j = 0; j < nq; j++) free(q[j].path);
    elf_obj_free(&prog);

    if (foreign) {
        r->abi = MX_ABI_UNSUPPORTED;
        return 0;
    }
    if (seen[0] && seen[1]) {
        r->abi = MX_ABI_UNSUPPORTED;
        r->mixed = 1;
        scopy(r->lib, sizeof r->lib, first[0].lib);
        scopy(r->by, sizeof r->by, first[0].by);
        scopy(r->other, sizeof r->other, first[1].lib);
        scopy(r->other_by, sizeof r->other_by, first[1].by);
        return 0;
    }
    int s = seen[0] ? 0 : seen[1] ? 1 : seen[2] ? 2 : -1;
    if (s < 0) return 0;
    r->libmask = mask[s];
    r->rpathmask = rpath[s];
    r->abi = s == 0 ? MX_ABI_OMPI : s == 1 ? MX_ABI_MPICH : MX_ABI_STANDARD;
    scopy(r->lib, sizeof r->lib, first[s].lib);
    scopy(r->by, sizeof r->by, first[s].by);
    return 0;
}
