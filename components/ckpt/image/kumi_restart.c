/* kumi_restart IMAGE: resume a process from an image of ckpt/image.
 *
 *   kumi_restart [-v] IMAGE     restart (this process becomes the saved one)
 *   kumi_restart --info IMAGE   check the image and describe it
 *
 * A static executable linked at CI_PROG_LO (ckpt_image.h), out of the way
 * of every mapping a program normally has.  Phase 1 (ordinary C) maps
 * the image read-only at CI_RESTART_IMAGE, checks it completely (checksums,
 * tables), checks this machine (the same vDSO as at the checkpoint, the
 * files mapped by reference unchanged, the open files and the working
 * directory there) and opens every file; any failure is a clear message and
 * exit status 1, before anything was changed.  Then it blocks every signal,
 * moves to a stack of its own inside its window and enters phase 2 (raw
 * system calls only: the C library's data outside the window disappears):
 *   1. unmap everything outside the window but the kernel's vDSO block;
 *   2. move the vDSO block ([vvar], [vvar_vclock], [vdso]: the same kernel,
 *      the same layout and contents, checked in phase 1) with mremap to
 *      where the image had it, so the saved program's pointers into it stay
 *      valid (patching them instead is not implemented);
 *   3. map every saved region at its address (MAP_FIXED: ASLR does not
 *      matter) with its contents and protections; file mappings by
 *      reference from their files;
 *   4. file descriptors: regular files and directories reopened at the same
 *      numbers, flags and offsets (a file opened for writing is cut back to
 *      its size at the checkpoint: what the program appended afterwards is
 *      written again by the restarted program), character devices other
 *      than terminals (/dev/null...) reopened; 0, 1 and 2 are always those of
 *      the restart (its launcher's); sockets, pipes, terminals and other
 *      kernel objects (eventfd, epoll...) are not restored (the transports
 *      re-wire after a restart): their numbers hold placeholders on which
 *      any I/O fails with EBADF, until the program closes them; nothing
 *      else the restart had open stays;
 *   5. cwd, signal dispositions, the alternate signal stack, the prctl_mm_map
 *      fields (brk, arg/env, auxv: the kernel's brk continues the saved
 *      heap), the thread's rseq area, robust list and glibc's cached tid;
 *   6. the other threads: clone()d with their FS base (glibc's cached tid
 *      set by CLONE_PARENT_SETTID, cleared at exit by CLONE_CHILD_CLEARTID
 *      for pthread_join), their rseq area, robust list and alternate stack,
 *      and sent back into the writer's signal handler like the caller (8.);
 *      the handler returns and sigreturn restores each one's full context.
 *      A thread that was in a system call re-issues it (SA_RESTART), but a
 *      timed sleep restarted through restart_syscall returns EINTR;
 *   7. its own environment stays at CI_RESTART_ENV for the restarted process
 *      (kumi_ckpt_image_restart_env: environ is the saved one);
 *   8. the jump (restart_jump): FS base, the signal mask, the callee-saved
 *      registers, rsp, and rax = 1 at the saved return address, so that
 *      kumi_ckpt_image_write returns KUMI_CKPT_RESTARTED.
 * What is not restored: child processes, timers and itimers, System V IPC,
 * the parent (the restarted process is whoever ran kumi_restart: its parent
 * is that one's), the pid and the tids (getpid() and gettid() are right:
 * glibc caches no pid since 2.25 and its cached tids are rewritten; a pid
 * the program saved itself, or names built from it such as /proc/PID paths
 * or per-pid shared-memory names, are stale; process-shared robust or PI
 * mutexes held at the checkpoint carry the old tid), /proc/self/exe (it
 * names kumi_restart, whose text stays mapped in its window, with the
 * environment block and its stacks: about 3 MiB the writer leaves out of
 * a later image). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <asm/prctl.h>
#include <linux/prctl.h>

#include "ckpt_image.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static int verbose;

/* ------------------------------------------------------------ raw system calls */
static inline long rsys(long n, long a, long b, long c, long d, long e, long f)
{
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}
#define RS(n, a, b, c, d, e, f) rsys((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

static size_t rlen(const char *s)
{
    size_t n = 0;
    while (s[n]) n++;
    return n;
}

/* phase 2: a message on fd 2 and exit 127 (the process is half-replaced) */
static __attribute__((noreturn)) void die2(const char *what, long rc)
{
    static const char pfx[] = "kumi_restart: fatal during the restore: ";
    char num[24];
    int i = sizeof num;
    unsigned long v = (unsigned long)(rc < 0 ? -rc : rc);
    num[--i] = '\n';
    do num[--i] = (char)('0' + v % 10); while ((v /= 10) && i > 1);
    if (rc < 0) num[--i] = '-';
    RS(SYS_write, 2, pfx, sizeof pfx - 1, 0, 0, 0);
    RS(SYS_write, 2, what, rlen(what), 0, 0, 0);
    RS(SYS_write, 2, " (error ", 8, 0, 0, 0);
    RS(SYS_write, 2, num + i, sizeof num - i - 1, 0, 0, 0);
    RS(SYS_write, 2, ")\n", 2, 0, 0, 0);
    RS(SYS_exit_group, 127, 0, 0, 0, 0, 0);
    __builtin_unreachable();
}

/* ------------------------------------------------------------ the restore plan */
struct plan {
    const struct ci_header *h;
    const struct ci_state *st;
    const struct ci_region *reg;
    const struct ci_fd *fds;
    size_t imglen;
    int *regfd;                   /* per region: the file to map, or -1 */
    int *fdtmp;                   /* per saved fd: the reopened file, or -1 */
    int tmpbase;
    int placeholder;              /* O_PATH of /, for the fds not restored */
    /* the current vDSO block */
    uint64_t cur_lo[8], cur_hi[8];
    char cur_name[8][16];
    int ncur;
    uint64_t saved_vdso_block_lo;   /* lowest of the saved [vvar*]/[vdso] */
    uint64_t cur_block_lo;
    struct ci_regs regs;          /* copied out of the image before it is unmapped */
    uint64_t sigmask;
};
static struct plan P;
static struct ci_thread thr[CI_MAXTHREADS];  /* copied out of the image */
static uint32_t nthr;
static char mapsbuf[1 << 20];     /* /proc/self/maps in phase 2 */

static int err1(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int err1(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("kumi_restart: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

/* the current /proc/self/maps entries named [vvar...] and [vdso] */
static int find_vdso_block(struct plan *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return err1("cannot read /proc/self/maps: %s", strerror(errno));
    char line[1024];
    p->ncur = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi;
        char name[256] = "";
        if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %255s", &lo, &hi, name) < 2) continue;
        if (strncmp(name, "[vvar", 5) && strcmp(name, "[vdso]")) continue;
        if (p->ncur == 8) break;
        p->cur_lo[p->ncur] = lo;
        p->cur_hi[p->ncur] = hi;
        snprintf(p->cur_name[p->ncur], sizeof p->cur_name[0], "%s", name);
        p->ncur++;
    }
    fclose(f);
    return 0;
}

/* The vDSO block of the image must be this kernel's: same entries, sizes,
 * relative places and vDSO contents. */
static int check_vdso(struct plan *p)
{
    if (find_vdso_block(p)) return 1;
    int n = 0;
    uint64_t slo = UINT64_MAX, clo = UINT64_MAX;
    for (uint32_t i = 0; i < p->h->nregions; i++)
        if (p->reg[i].flags & (CI_R_VDSO | CI_R_VVAR)) {
            n++;
            if (p->reg[i].start < slo) slo = p->reg[i].start;
        }
    for (int j = 0; j < p->ncur; j++)
        if (p->cur_lo[j] < clo) clo = p->cur_lo[j];
    if (n != p->ncur)
        return err1("the image has %d vDSO/vvar mappings, this kernel %d: restart under the kernel that wrote the image", n,
                    p->ncur);
    for (uint32_t i = 0; i < p->h->nregions; i++) {
        const struct ci_region *g = &p->reg[i];
        if (!(g->flags & (CI_R_VDSO | CI_R_VVAR))) continue;
        int j;
        for (j = 0; j < p->ncur; j++)
            if (!strcmp(p->cur_name[j], g->name)) break;
        if (j == p->ncur || p->cur_hi[j] - p->cur_lo[j] != g->end - g->start || p->cur_lo[j] - clo != g->start - slo)
            return err1("%s of the image (%llx-%llx) differs from this kernel's in size or place: restart under the "
                        "kernel that wrote the image", g->name, (unsigned long long)g->start, (unsigned long long)g->end);
        if ((g->flags & CI_R_VDSO) &&
            memcmp((const char *)p->h + g->data_off, (const void *)(uintptr_t)p->cur_lo[j], g->end - g->start))
            return err1("the vDSO of this kernel differs from the image's: restart under the kernel that wrote the image");
    }
    p->saved_vdso_block_lo = slo;
    p->cur_block_lo = clo;
    return 0;
}

static int same_file(const struct stat *sb, const struct ci_region *g)
{
    return (uint64_t)sb->st_ino == g->ino && (uint64_t)sb->st_size == g->size && sb->st_mtim.tv_sec == g->mtime_sec &&
           sb->st_mtim.tv_nsec == g->mtime_nsec;
}

/* open fd above every saved fd number */
static int park(struct plan *p, int fd)
{
    if (fd < 0) return fd;
    int t = fcntl(fd, F_DUPFD_CLOEXEC, p->tmpbase);
    close(fd);
    return t;
}

static int prepare(struct plan *p)
{
    const struct ci_header *h = p->h;
    /* our own mappings must be inside the window */
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return err1("cannot read /proc/self/maps");
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi;
        char name[256] = "";
        if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %255s", &lo, &hi, name) < 2) continue;
        if (ci_inside_windows(lo, hi) || hi > 0x800000000000ull) continue;
        if (!strncmp(name, "[vvar", 5) || !strcmp(name, "[vdso]") || !strcmp(name, "[stack]")) continue;
        if (strstr(line, "kumi_restart") || !strcmp(name, "[heap]")) {
            fclose(f);
            return err1("this kumi_restart is not linked inside its window (%llx-%llx %s); rebuild it", lo, hi, name);
        }
    }
    fclose(f);
    unsigned long fsb = 0;
    syscall(SYS_arch_prctl, ARCH_GET_FS, &fsb);
    if (!ci_inside_windows(fsb, fsb + 1))
        return err1("this kumi_restart's thread-local storage lies outside its window (%#lx)", fsb);
    if (check_vdso(p)) return 1;
    int maxfd = 2;
    for (uint32_t i = 0; i < h->nfds; i++)
        if (p->fds[i].fd > maxfd) maxfd = p->fds[i].fd;
    p->tmpbase = maxfd + 1;
    p->regfd = calloc(h->nregions + 1, sizeof(int));
    p->fdtmp = calloc(h->nfds + 1, sizeof(int));
    if (!p->regfd || !p->fdtmp) return err1("out of memory");
    /* files mapped by reference must be unchanged; modified ones (contents saved) are mapped from
     * the file when it is unchanged (so that /proc/self/maps names them), anonymously otherwise */
    for (uint32_t i = 0; i < h->nregions; i++) {
        const struct ci_region *g = &p->reg[i];
        p->regfd[i] = -1;
        if (!(g->flags & CI_R_FILE)) continue;
        int wr = (g->flags & CI_R_SHARED) && (g->prot & PROT_WRITE);
        int fd = open(g->name, (wr ? O_RDWR : O_RDONLY) | O_CLOEXEC);
        struct stat sb;
        int same = fd >= 0 && fstat(fd, &sb) == 0 && (same_file(&sb, g) || (g->flags & CI_R_SHARED));
        if (same && (g->flags & CI_R_SHARED) && (uint64_t)sb.st_ino != g->ino) same = 0;
        if (!same) {
            if (fd >= 0) close(fd);
            if (g->flags & CI_R_SAVED) continue;
            return err1("%s (mapped at %llx-%llx) %s since the checkpoint", g->name, (unsigned long long)g->start,
                        (unsigned long long)g->end, fd < 0 ? "cannot be opened" : "has changed");
        }
        if ((p->regfd[i] = park(p, fd)) < 0) return err1("no file descriptor for %s: %s", g->name, strerror(errno));
    }
    p->placeholder = park(p, open("/", O_PATH | O_CLOEXEC));
    if (p->placeholder < 0) return err1("cannot open / (O_PATH): %s", strerror(errno));
    for (uint32_t i = 0; i < h->nfds; i++) {
        const struct ci_fd *d = &p->fds[i];
        p->fdtmp[i] = -1;
        if (d->fd <= 2) continue;         /* the restart's own stdin, stdout, stderr */
        if (d->kind != CI_FD_FILE && d->kind != CI_FD_DIR && d->kind != CI_FD_DEV) {
            if (verbose && d->fd > 2) fprintf(stderr, "kumi_restart: fd %d (%s) gets a placeholder\n", d->fd, d->path);
            continue;
        }
        int fl = d->flags & (O_ACCMODE | O_APPEND | O_NONBLOCK | O_DIRECTORY | O_NOATIME | O_SYNC | O_DSYNC);
        int fd = open(d->path, fl | O_CLOEXEC);
        if (fd < 0) return err1("cannot reopen fd %d, %s: %s", d->fd, d->path, strerror(errno));
        struct stat sb;
        if (fstat(fd, &sb) != 0) return err1("fstat %s: %s", d->path, strerror(errno));
        if (d->kind == CI_FD_FILE) {
            if (sb.st_size < d->size)
                return err1("fd %d, %s: %lld bytes, shorter than at the checkpoint (%lld)", d->fd, d->path,
                            (long long)sb.st_size, (long long)d->size);
            if (sb.st_size > d->size && (d->flags & O_ACCMODE) != O_RDONLY && ftruncate(fd, d->size) != 0)
                return err1("cannot cut %s back to its size at the checkpoint: %s", d->path, strerror(errno));
            if (lseek(fd, d->offset, SEEK_SET) != d->offset)
                return err1("cannot seek %s to %lld: %s", d->path, (long long)d->offset, strerror(errno));
        }
        if ((p->fdtmp[i] = park(p, fd)) < 0) return err1("no file descriptor for %s: %s", d->path, strerror(errno));
    }
    struct stat cb;
    if (stat(p->st->cwd, &cb) != 0 || !S_ISDIR(cb.st_mode))
        return err1("the working directory of the image, %s, is not there", p->st->cwd);
    p->regs = p->st->regs;
    p->sigmask = p->st->sigmask;
    return 0;
}

/* ------------------------------------------------------------ phase 2 */
static uint64_t hex(const char **s)
{
    uint64_t v = 0;
    for (;; (*s)++) {
        char c = **s;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return v;
        v = v * 16 + (uint64_t)d;
    }
}

static void unmap_the_rest(void)
{
    long fd = RS(SYS_open, "/proc/self/maps", O_RDONLY, 0, 0, 0, 0);
    if (fd < 0) die2("open /proc/self/maps", fd);
    size_t n = 0;
    for (;;) {
        long r = RS(SYS_read, fd, mapsbuf + n, sizeof mapsbuf - 1 - n, 0, 0, 0);
        if (r < 0) die2("read /proc/self/maps", r);
        if (r == 0) break;
        n += (size_t)r;
        if (n >= sizeof mapsbuf - 1) die2("/proc/self/maps too long", 0);
    }
    RS(SYS_close, fd, 0, 0, 0, 0, 0);
    mapsbuf[n] = 0;
    for (const char *s = mapsbuf; *s;) {
        uint64_t lo = hex(&s);
        s++;
        uint64_t hi = hex(&s);
        const char *e = s;
        while (*e && *e != '\n') e++;
        int keep = ci_inside_windows(lo, hi) || hi > 0x800000000000ull;
        for (const char *q = s; q + 5 <= e; q++)
            if (!memcmp(q, "[vvar", 5) || !memcmp(q, "[vdso]", 6)) keep = 1;
        if (!keep) {
            long r = RS(SYS_munmap, lo, hi - lo, 0, 0, 0, 0);
            if (r) die2("munmap of the restart's own mappings", r);
        }
        s = *e ? e + 1 : e;
    }
}

static void move_vdso(struct plan *p)
{
    /* twice: first into the window (the current block may overlap the saved one's place) */
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < p->ncur; j++) {
            uint64_t len = p->cur_hi[j] - p->cur_lo[j];
            uint64_t to = pass == 0 ? CI_RESTART_TMP + (p->cur_lo[j] - p->cur_block_lo)
                                    : p->saved_vdso_block_lo + (p->cur_lo[j] - p->cur_block_lo);
            uint64_t from = pass == 0 ? p->cur_lo[j] : CI_RESTART_TMP + (p->cur_lo[j] - p->cur_block_lo);
            if (from == to) continue;
            long r = RS(SYS_mremap, from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to, 0);
            if (r != (long)to) die2(pass ? "mremap of the vDSO to its saved place" : "mremap of the vDSO", r);
        }
}

static void map_regions(struct plan *p)
{
    for (uint32_t i = 0; i < p->h->nregions; i++) {
        const struct ci_region *g = &p->reg[i];
        if (g->flags & (CI_R_VDSO | CI_R_VVAR)) continue;
        uint64_t len = g->end - g->start;
        int saved = (g->flags & CI_R_SAVED) != 0;
        int prot = saved ? PROT_READ | PROT_WRITE : (int)g->prot;
        long flags = MAP_FIXED | ((g->flags & CI_R_SHARED) ? MAP_SHARED : MAP_PRIVATE);
        long r;
        if (p->regfd[i] >= 0) {
            r = RS(SYS_mmap, g->start, len, prot, flags, p->regfd[i], g->offset);
        } else {
            flags |= MAP_ANONYMOUS;
            if (g->flags & CI_R_STACK) flags |= MAP_GROWSDOWN;
            if (saved && !(g->flags & CI_R_RUNS)) flags |= MAP_POPULATE;   /* about to be written whole */
            r = RS(SYS_mmap, g->start, len, prot, flags, -1, 0);
        }
        if (r != (long)g->start) die2(g->name[0] ? g->name : "an anonymous mapping", r);
        if (saved) {
            if (g->flags & CI_R_RUNS) {
                const struct ci_run *rn = (const void *)((const char *)p->h + p->h->runs_off);
                const char *src = (const char *)p->h + g->data_off;
                for (uint64_t k = g->run_first; k < g->run_first + g->nruns; k++) {
                    memcpy((void *)(uintptr_t)(g->start + rn[k].off), src, rn[k].len);
                    src += rn[k].len;
                }
            } else {
                memcpy((void *)(uintptr_t)g->start, (const char *)p->h + g->data_off, len);
            }
            if ((int)g->prot != prot && (r = RS(SYS_mprotect, g->start, len, g->prot, 0, 0, 0)) != 0)
                die2("mprotect", r);
        }
    }
    for (uint32_t i = 0; i < p->h->nregions; i++)
        if (p->regfd[i] >= 0) RS(SYS_close, p->regfd[i], 0, 0, 0, 0, 0);
}

static void close_from(unsigned lo, unsigned hi)
{
    if (RS(SYS_close_range, lo, hi, 0, 0, 0, 0) != 0)
        for (unsigned fd = lo; fd <= hi && fd < 65536; fd++) RS(SYS_close, fd, 0, 0, 0, 0, 0);
}

/* The saved fds at their numbers; those not restored (sockets, pipes, ...)
 * hold a placeholder, an O_PATH descriptor of / on which read, write, poll
 * or epoll fail with EBADF, so that their numbers are not handed to a file
 * the program opens before it closes them.  Nothing the restart had open
 * but 0, 1 and 2 stays. */
static void restore_fds(struct plan *p)
{
    close_from(3, (unsigned)p->tmpbase - 1);
    for (uint32_t i = 0; i < p->h->nfds; i++) {
        const struct ci_fd *d = &p->fds[i];
        if (d->fd <= 2) continue;
        int src = p->fdtmp[i] >= 0 ? p->fdtmp[i] : p->placeholder;
        long r = RS(SYS_dup3, src, d->fd, (d->fdflags & FD_CLOEXEC) ? O_CLOEXEC : 0, 0, 0, 0);
        if (r != d->fd) die2(d->path, r);
    }
    close_from((unsigned)p->tmpbase, ~0u);
}

static void restore_process(struct plan *p)
{
    const struct ci_state *st = p->st;
    long r;
    if ((r = RS(SYS_chdir, st->cwd, 0, 0, 0, 0, 0)) != 0) die2(st->cwd, r);
    for (int sig = 1; sig < CI_NSIG; sig++) {
        if (sig == 9 || sig == 19) continue;
        RS(SYS_rt_sigaction, sig, &st->sig[sig], 0, 8, 0, 0);
    }
    if (st->altstack_size) {
        stack_t ss = { .ss_sp = (void *)(uintptr_t)st->altstack_sp, .ss_size = st->altstack_size,
                       .ss_flags = st->altstack_flags };
        RS(SYS_sigaltstack, &ss, 0, 0, 0, 0, 0);
    }
    struct prctl_mm_map mm = {
        .start_code = st->start_code, .end_code = st->end_code, .start_data = st->start_data,
        .end_data = st->end_data, .start_brk = st->start_brk, .brk = st->brk, .start_stack = st->start_stack,
        .arg_start = st->arg_start, .arg_end = st->arg_end, .env_start = st->env_start, .env_end = st->env_end,
        .auxv = st->auxv_len ? (__u64 *)(uintptr_t)st->auxv : NULL, .auxv_size = st->auxv_len, .exe_fd = (uint32_t)-1,
    };
    r = RS(SYS_prctl, PR_SET_MM, PR_SET_MM_MAP, &mm, sizeof mm, 0, 0);
    if (r && verbose) {
        static const char m[] = "kumi_restart: PR_SET_MM_MAP refused: brk stays the restart's (malloc goes to mmap)\n";
        RS(SYS_write, 2, m, sizeof m - 1, 0, 0, 0);
    }
    /* the thread's kernel registrations: ours (in our TLS) go, the program's come back */
    unsigned long fsb = 0;
    RS(SYS_arch_prctl, ARCH_GET_FS, &fsb, 0, 0, 0, 0);
    extern const ptrdiff_t __rseq_offset __attribute__((weak));
    extern const unsigned int __rseq_size __attribute__((weak));
    if (&__rseq_offset && &__rseq_size && __rseq_size)
        RS(SYS_rseq, fsb + (unsigned long)__rseq_offset, __rseq_size < 32 ? 32 : __rseq_size, 1, 0x53053053, 0, 0);
    if (st->rseq_addr) {
        /* the kernel checks cpu_id_start / cpu_id on registration: reset as a fresh thread has them */
        uint32_t *a = (uint32_t *)(uintptr_t)st->rseq_addr;
        a[0] = 0;
        a[1] = (uint32_t)-1;
        RS(SYS_rseq, st->rseq_addr, st->rseq_len, 0, st->rseq_sig, 0, 0);
    }
    if (st->robust_head) RS(SYS_set_robust_list, st->robust_head, st->robust_len, 0, 0, 0, 0);
    long tid = RS(SYS_gettid, 0, 0, 0, 0, 0, 0);
    if (st->tid_off >= 0) {
        int32_t *t = (int32_t *)(uintptr_t)(st->regs.fs_base + (uint64_t)st->tid_off);
        *t = (int32_t)tid;
        RS(SYS_set_tid_address, t, 0, 0, 0, 0, 0);
    }
}

/* FS base, signal mask, registers, rax = 1, jump to the saved return address */
void restart_jump(const struct ci_regs *r, const uint64_t *mask) __attribute__((noreturn));
__asm__(".text\n"
        ".globl restart_jump\n"
        ".type restart_jump,@function\n"
        "restart_jump:\n"
        "  movq %rdi, %r15\n"
        "  movq %rsi, %r14\n"
        "  movl $158, %eax\n"             /* arch_prctl(ARCH_SET_FS, fs_base) */
        "  movl $0x1002, %edi\n"
        "  movq 72(%r15), %rsi\n"
        "  syscall\n"
        "  movl $14, %eax\n"              /* rt_sigprocmask(SIG_SETMASK, mask, NULL, 8) */
        "  movl $2, %edi\n"
        "  movq %r14, %rsi\n"
        "  xorl %edx, %edx\n"
        "  movl $8, %r10d\n"
        "  syscall\n"
        "  ldmxcsr 64(%r15)\n"
        "  fldcw 68(%r15)\n"
        "  movq 0(%r15), %rbx\n"
        "  movq 8(%r15), %rbp\n"
        "  movq 16(%r15), %r12\n"
        "  movq 24(%r15), %r13\n"
        "  movq 48(%r15), %rsp\n"
        "  movq 56(%r15), %rcx\n"
        "  movq 32(%r15), %r14\n"
        "  movq 40(%r15), %r15\n"
        "  movl $1, %eax\n"
        "  jmp *%rcx\n"
        ".size restart_jump, .-restart_jump\n");
_Static_assert(offsetof(struct ci_regs, fs_base) == 72, "restart_jump reads fs_base at 72");

/* long restart_clone(flags, stack, ptid, ctid, tls, fn, arg): the child runs fn(arg) on stack */
long restart_clone(unsigned long flags, void *stack, void *ptid, void *ctid, unsigned long tls, void (*fn)(void *),
                   void *arg);
__asm__(".text\n"
        ".globl restart_clone\n"
        ".type restart_clone,@function\n"
        "restart_clone:\n"
        "  movq 8(%rsp), %rax\n"
        "  subq $16, %rsi\n"
        "  movq %r9, 0(%rsi)\n"
        "  movq %rax, 8(%rsi)\n"
        "  movq %rcx, %r10\n"
        "  movl $56, %eax\n"             /* clone(flags, stack, ptid, ctid, tls) */
        "  syscall\n"
        "  testq %rax, %rax\n"
        "  jnz 1f\n"
        "  xorl %ebp, %ebp\n"
        "  popq %rax\n"
        "  popq %rdi\n"
        "  call *%rax\n"
        "  ud2\n"
        "1: ret\n"
        ".size restart_clone, .-restart_clone\n");

/* a re-created thread: its kernel registrations, then back into the writer's signal handler */
static void thread_start(void *arg)
{
    struct ci_thread *t = arg;
    if (t->rseq_addr) {
        uint32_t *a = (uint32_t *)(uintptr_t)t->rseq_addr;
        a[0] = 0;
        a[1] = (uint32_t)-1;
        RS(SYS_rseq, t->rseq_addr, t->rseq_len, 0, t->rseq_sig, 0, 0);
    }
    if (t->robust_head) RS(SYS_set_robust_list, t->robust_head, t->robust_len, 0, 0, 0, 0);
    if (t->altstack_size) {
        stack_t ss = { .ss_sp = (void *)(uintptr_t)t->altstack_sp, .ss_size = t->altstack_size,
                       .ss_flags = t->altstack_flags };
        RS(SYS_sigaltstack, &ss, 0, 0, 0, 0, 0);
    }
    restart_jump(&t->regs, &t->sigmask);
}

static void start_threads(struct plan *p)
{
    for (uint32_t i = 0; i < nthr; i++) {
        struct ci_thread *t = &thr[i];
        unsigned long flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
                              CLONE_SETTLS;
        void *tidp = NULL;
        if (t->tid_cached) {
            /* glibc's struct pthread: the new tid goes there, and is cleared (futex wake) at exit */
            tidp = (void *)(uintptr_t)(t->regs.fs_base + (uint64_t)p->st->tid_off);
            flags |= CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
        }
        char *stack = (char *)CI_RESTART_TSTACKS + (i + 1) * CI_TSTACK_SIZE;
        long r = restart_clone(flags, stack, tidp, tidp, t->regs.fs_base, thread_start, t);
        if (r < 0) die2("clone of a thread", r);
    }
}

void phase2(void) __attribute__((noreturn, used, noinline));
void phase2(void)
{
    struct plan *p = &P;
    unmap_the_rest();
    move_vdso(p);
    map_regions(p);
    restore_fds(p);
    restore_process(p);
    start_threads(p);
    RS(SYS_munmap, p->h, (p->imglen + CI_PAGE - 1) & ~(CI_PAGE - 1), 0, 0, 0, 0);
    restart_jump(&p->regs, &p->sigmask);
}

/* onto our own stack in the window, then phase2 */
static __attribute__((noreturn)) void enter_phase2(void *stack_top)
{
    __asm__ volatile("movq %0, %%rsp\n"
                     "xorl %%ebp, %%ebp\n"
                     "call phase2\n"
                     "ud2\n"
                     :
                     : "r"(stack_top)
                     : "memory");
    __builtin_unreachable();
}

/* our environment, for the restarted process (kumi_ckpt_image_restart_env) */
static int leave_env(void)
{
    extern char **environ;
    size_t n = 0, bytes = 0;
    for (char **e = environ; *e; e++, n++) bytes += strlen(*e) + 1;
    size_t size = sizeof(struct ci_env) + (n + 1) * sizeof(char *) + bytes;
    size = (size + CI_PAGE - 1) & ~(CI_PAGE - 1);
    struct ci_env *b = mmap((void *)CI_RESTART_ENV, size, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (b != (void *)CI_RESTART_ENV) return err1("cannot map the environment block: %s", strerror(errno));
    char *str = (char *)&b->vec[n + 1];
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(environ[i]) + 1;
        memcpy(str, environ[i], l);
        b->vec[i] = str;
        str += l;
    }
    b->vec[n] = NULL;
    b->count = n;
    b->size = size;
    b->magic = CI_ENV_MAGIC;
    mprotect(b, size, PROT_READ);
    return 0;
}

/* An image named in a checkpoint's manifest (mpiexec --restart: DIR/manifest
 * next to it) must be the one its rank wrote: the writer's pid and the size
 * in the header are the manifest's, and the rank is the one the new launcher
 * starts (KUMI_RANK).  So an image of another job or program put in its
 * place is refused here, before anything changes, instead of resuming a
 * foreign process in the job.  An image that no manifest names (kumi_restart
 * IMAGE by hand) is not checked. */
static int manifest_check(const char *path, const struct ci_header *h, size_t len)
{
    char dir[4096], line[4096 + 512], img[4096], host[256];
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    if (slash) snprintf(dir, sizeof dir, "%.*s/manifest", (int)(slash - path), path);
    else snprintf(dir, sizeof dir, "manifest");
    FILE *f = fopen(dir, "r");
    if (!f) return 0;
    int r, pid, rc = 0;
    long long bytes;
    if (!fgets(line, sizeof line, f) || strcmp(line, "kumi-checkpoint 1\n") != 0) {
        fclose(f);
        return 0;
    }
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "rank %d host %255s pid %d image %4095s bytes %lld", &r, host, &pid, img, &bytes) != 5 ||
            strcmp(img, base) != 0)
            continue;
        const char *kr = getenv("KUMI_RANK");
        if ((long long)h->pid != pid || (long long)len != bytes)
            rc = err1("%s: written by process %lld (%.*s), %zu bytes, but %s names it as rank %d's image, written "
                      "by process %d on %s, %lld bytes: an image of another job or program, refused", path,
                      (long long)h->pid, (int)sizeof h->program, h->program, len, dir, r, pid, host, bytes);
        else if (kr && *kr && atoi(kr) != r)
            rc = err1("%s: the image of rank %d (%s), started as rank %s", path, r, dir, kr);
        break;
    }
    fclose(f);
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: kumi_restart [-v] IMAGE | --info IMAGE\n");
    return 2;
}

int main(int argc, char **argv)
{
    int info = 0, a = 1;
    for (; a < argc && argv[a][0] == '-'; a++) {
        if (!strcmp(argv[a], "--info")) info = 1;
        else if (!strcmp(argv[a], "-v")) verbose = 1;
        else return usage();
    }
    if (a != argc - 1) return usage();
    /* our brk must follow our data, inside our window: no address randomization (once: it is inherited) */
    int pers = personality(0xffffffff);
    if (pers == -1) return err1("personality: %s", strerror(errno));
    if (!(pers & ADDR_NO_RANDOMIZE)) {
        if (personality((unsigned long)pers | ADDR_NO_RANDOMIZE) == -1) return err1("personality: %s", strerror(errno));
        execv("/proc/self/exe", argv);
        return err1("cannot execute /proc/self/exe again: %s", strerror(errno));
    }
    const char *path = argv[a];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return err1("%s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) return err1("%s: not a regular file", path);
    if (sb.st_size == 0) return err1("%s: empty file, not a Kumi process image", path);
    size_t len = (size_t)sb.st_size;
    /* populated: the checksum reads it all at once, without a fault per page */
    void *m = mmap((void *)CI_RESTART_IMAGE, len, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE | MAP_POPULATE, fd, 0);
    close(fd);
    if (m != (void *)CI_RESTART_IMAGE) return err1("%s: cannot map it at %#lx: %s", path, CI_RESTART_IMAGE, strerror(errno));
    char err[512];
    if (ci_check(m, len, err, sizeof err)) return err1("%s: %s", path, err);
    P.h = m;
    P.imglen = len;
    P.st = (const void *)((const char *)m + P.h->state_off);
    P.reg = (const void *)((const char *)m + P.h->regions_off);
    P.fds = (const void *)((const char *)m + P.h->fds_off);
    if (info) {
        ci_describe(m, 1);
        return 0;
    }
    if (manifest_check(path, P.h, len) || prepare(&P) || leave_env()) return 1;
    nthr = P.h->nthreads;
    memcpy(thr, (const char *)m + P.h->threads_off, nthr * sizeof *thr);
    if (nthr && mmap((void *)CI_RESTART_TSTACKS, nthr * CI_TSTACK_SIZE, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != (void *)CI_RESTART_TSTACKS)
        return err1("cannot map stacks for %u threads: %s", nthr, strerror(errno));
    void *stk = mmap((void *)CI_RESTART_STACK, CI_RESTART_STACK_SIZE, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (stk != (void *)CI_RESTART_STACK) return err1("cannot map a stack at %#lx: %s", CI_RESTART_STACK, strerror(errno));
    if (verbose) fprintf(stderr, "kumi_restart: %s checked, restoring %u mappings\n", path, P.h->nregions);
    fflush(NULL);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    enter_phase2((char *)stk + CI_RESTART_STACK_SIZE - 64);
}
