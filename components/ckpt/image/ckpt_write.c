/* ckpt/image: writing the image of the calling process (see kumi_ckpt_image.h
 * and the format in ckpt_image.h).
 *
 * kumi_ckpt_image_write records the callee-saved registers like setjmp
 * (ckpt_save_regs below, returns_twice), stops the other threads in a
 * signal handler (SIGRTMAX-1, the program's own disposition is what the
 * image keeps) that records each one's registers the same way, then
 * gathers everything into a
 * scratch mapping of its own (never malloc: the heap is saved as it was at
 * the call, and the scratch mapping is left out of the image), blocks every
 * signal, and writes:
 *   - every mapping of /proc/self/smaps but [vsyscall] and the restart
 *     program's window: the contents of anonymous ones, of writable or
 *     modified (smaps "Anonymous" > 0, e.g. RELRO) private file mappings and
 *     of shared anonymous ones; read-only unmodified file mappings and
 *     shared file mappings by reference (path, offset, inode, size, mtime);
 *     [vdso] with its contents (the restart compares them), [vvar*] by place;
 *   - the working directory, the signal dispositions, mask and alternate
 *     stack, brk and the other prctl_mm_map fields (/proc/self/stat), auxv,
 *     the thread's rseq and robust-list registrations, FS/GS base;
 *   - the file descriptors: regular files, directories and devices other
 *     than terminals (path, offset, flags) are reopened at restart; sockets,
 *     pipes, terminals and others are recorded only (a file that is deleted
 *     is refused).
 * The image goes to PATH.tmp.PID, renamed to PATH once complete. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <asm/prctl.h>
#include <linux/futex.h>
#include <sys/auxv.h>

#include "ckpt_image.h"
#include "kumi_ckpt_image.h"

#if !defined(__x86_64__) || !defined(__linux__)
#error "ckpt/image supports x86_64 Linux only"
#endif

/* glibc >= 2.35 publishes where its rseq area is (weak: absent in older ones) */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

/* ------------------------------------------------------------ registers */
int ckpt_save_regs(struct ci_regs *r) __attribute__((returns_twice));
__asm__(".text\n"
        ".globl ckpt_save_regs\n"
        ".hidden ckpt_save_regs\n"
        ".type ckpt_save_regs,@function\n"
        "ckpt_save_regs:\n"
        "  movq %rbx, 0(%rdi)\n"
        "  movq %rbp, 8(%rdi)\n"
        "  movq %r12, 16(%rdi)\n"
        "  movq %r13, 24(%rdi)\n"
        "  movq %r14, 32(%rdi)\n"
        "  movq %r15, 40(%rdi)\n"
        "  leaq 8(%rsp), %rax\n"
        "  movq %rax, 48(%rdi)\n"
        "  movq (%rsp), %rax\n"
        "  movq %rax, 56(%rdi)\n"
        "  stmxcsr 64(%rdi)\n"
        "  fnstcw 68(%rdi)\n"
        "  xorl %eax, %eax\n"
        "  ret\n"
        ".size ckpt_save_regs, .-ckpt_save_regs\n");
_Static_assert(offsetof(struct ci_regs, rsp) == 48 && offsetof(struct ci_regs, rip) == 56 &&
               offsetof(struct ci_regs, mxcsr) == 64 && offsetof(struct ci_regs, fpucw) == 68,
               "ckpt_save_regs and kumi_restart's jump use these offsets");

/* ------------------------------------------------------------ scratch */
#define SCRATCH_SIZE (32ul << 20)
#define MAXREG 8192
#define MAXFD 4096

struct scratch {
    struct ci_header hdr;
    struct ci_state st;
    struct ci_region reg[MAXREG];
    struct ci_fd fds[MAXFD];
    uint32_t nreg, nfd, nthr;
    uint64_t nruns;
    struct ci_run *runs;          /* in text[], after the smaps text is no longer needed */
    char *err;
    size_t errlen;
    char text[];                  /* /proc/self/smaps, the rest of the mapping */
};
#define TEXT_MAX (SCRATCH_SIZE - sizeof(struct scratch))

static int fail(struct scratch *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct scratch *s, const char *fmt, ...)
{
    if (s->err && s->errlen) {
        int l = snprintf(s->err, s->errlen, "kumi_ckpt_image_write: ");
        va_list ap;
        va_start(ap, fmt);
        if (l >= 0 && (size_t)l < s->errlen) vsnprintf(s->err + l, s->errlen - (size_t)l, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* the whole file into buf (at most max - 1 bytes, NUL-terminated); length or -1 */
static ssize_t slurp(const char *path, char *buf, size_t max)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t n = 0;
    for (;;) {
        if (n + 1 >= max) { close(fd); errno = EFBIG; return -1; }
        ssize_t r = read(fd, buf + n, max - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) { close(fd); return -1; }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    return (ssize_t)n;
}

static int nthreads(void)
{
    char buf[4096];
    if (slurp("/proc/self/status", buf, sizeof buf) < 0) return -1;
    const char *t = strstr(buf, "\nThreads:");
    return t ? atoi(t + 9) : -1;
}

/* ------------------------------------------------------------ mappings */
static int is_special(const char *name)
{
    return name[0] == '[';
}

static int add_region(struct scratch *s, uint64_t lo, uint64_t hi, const struct ci_region *tmpl)
{
    if (lo >= hi) return 0;
    if (s->nreg == MAXREG) return fail(s, "more than %d mappings", MAXREG);
    struct ci_region *r = &s->reg[s->nreg++];
    *r = *tmpl;
    if (r->flags & CI_R_FILE) r->offset += lo - tmpl->start;
    r->start = lo;
    r->end = hi;
    return 0;
}

/* One line of smaps' header: "lo-hi perms offset dev inode   path" */
static int parse_mappings(struct scratch *s, uint64_t skip_lo, uint64_t skip_hi)
{
    ssize_t n = slurp("/proc/self/smaps", s->text, TEXT_MAX);
    if (n < 0) return fail(s, "cannot read /proc/self/smaps: %s", strerror(errno));
    char *p = s->text;
    struct ci_region cur;
    int have = 0;
    uint64_t anon_kb = 0;
    for (;;) {
        char *nl = strchr(p, '\n');
        char *line = p;
        if (nl) *nl = 0;
        unsigned long long lo, hi, off, ino;
        char perms[8];
        unsigned maj, mnr;
        int pos = 0;
        int is_hdr = *line && sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &lo, &hi, perms, &off, &maj, &mnr,
                                     &ino, &pos) >= 7;
        if (is_hdr || !nl) {          /* the previous mapping is complete */
            if (have) {
                if (anon_kb && (cur.flags & CI_R_FILE) && !(cur.flags & CI_R_SHARED)) cur.flags |= CI_R_SAVED;
                /* cut the scratch mapping out (the kernel may have merged it with a neighbour) */
                if (cur.end <= skip_lo || cur.start >= skip_hi) {
                    if (add_region(s, cur.start, cur.end, &cur)) return -1;
                } else {
                    if (add_region(s, cur.start, skip_lo > cur.start ? skip_lo : cur.start, &cur)) return -1;
                    if (add_region(s, skip_hi < cur.end ? skip_hi : cur.end, cur.end, &cur)) return -1;
                }
                have = 0;
            }
            if (!nl) break;
        }
        if (is_hdr) {
            const char *name = line + pos;
            anon_kb = 0;
            if (hi > 0x800000000000ull) { p = nl + 1; continue; }     /* [vsyscall] */
            if (ci_in_windows(lo, hi)) {
                /* kumi_restart's leftovers in a restarted process (anything else is refused) */
                if (ci_inside_windows(lo, hi) && (strstr(name, "kumi_restart") || !*name || !strcmp(name, "[heap]"))) {
                    p = nl + 1;
                    continue;
                }
                return fail(s, "mapping %llx-%llx %s lies in a window of the restart program ([%lx, %lx) or [%lx, %lx))",
                            lo, hi, name, CI_PROG_LO, CI_PROG_HI, CI_DATA_LO, CI_DATA_HI);
            }
            memset(&cur, 0, sizeof cur);
            cur.start = lo;
            cur.end = hi;
            cur.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
                       (perms[2] == 'x' ? PROT_EXEC : 0);
            if (perms[3] == 's') cur.flags |= CI_R_SHARED;
            if (strlen(name) >= CI_PATH) return fail(s, "mapping %llx-%llx: path too long", lo, hi);
            snprintf(cur.name, sizeof cur.name, "%s", name);
            size_t nl2 = strlen(name);
            int deleted = nl2 > 10 && !strcmp(name + nl2 - 10, " (deleted)");
            if (!strcmp(name, "[vdso]")) cur.flags |= CI_R_VDSO | CI_R_SAVED;
            else if (!strncmp(name, "[vvar", 5)) cur.flags |= CI_R_VVAR;
            else if (!*name || is_special(name) || deleted || !strncmp(name, "/dev/zero", 9) ||
                     !strncmp(name, "/SYSV", 5) || !strncmp(name, "/memfd:", 7)) {
                if (!strcmp(name, "[stack]")) cur.flags |= CI_R_STACK;
                if (!strcmp(name, "[heap]")) cur.flags |= CI_R_HEAP;
                if (cur.prot & PROT_READ) cur.flags |= CI_R_SAVED;
            } else {
                struct stat sb;
                if (name[0] != '/')
                    return fail(s, "mapping %llx-%llx of %s: a kernel object, which cannot be saved", lo, hi, name);
                if ((cur.flags & CI_R_SHARED) && (stat(name, &sb) != 0 || sb.st_ino != ino))
                    return fail(s, "shared mapping %llx-%llx: file %s is not the one mapped (replaced)", lo, hi, name);
                if (stat(name, &sb) != 0 || sb.st_ino != ino) {
                    /* replaced since it was mapped (e.g. a library upgraded): contents saved instead */
                    if (cur.prot & PROT_READ) cur.flags |= CI_R_SAVED;
                    have = 1;
                    p = nl + 1;
                    continue;
                }
                cur.flags |= CI_R_FILE;
                cur.offset = off;
                cur.dev = sb.st_dev;
                cur.ino = sb.st_ino;
                cur.size = (uint64_t)sb.st_size;
                cur.mtime_sec = sb.st_mtim.tv_sec;
                cur.mtime_nsec = sb.st_mtim.tv_nsec;
                if ((cur.prot & PROT_WRITE) && !(cur.flags & CI_R_SHARED)) cur.flags |= CI_R_SAVED;
            }
            if ((cur.flags & CI_R_SAVED) && !(cur.prot & PROT_READ)) cur.flags &= ~(uint32_t)CI_R_SAVED;
            have = 1;
        } else if (have && !strncmp(line, "Anonymous:", 10)) {
            anon_kb = strtoull(line + 10, NULL, 10);
        }
        p = nl + 1;
    }
    return 0;
}

/* ------------------------------------------------------------ fds */
static int fd_kind(const struct stat *sb)
{
    switch (sb->st_mode & S_IFMT) {
    case S_IFREG: return CI_FD_FILE;
    case S_IFDIR: return CI_FD_DIR;
    case S_IFSOCK: return CI_FD_SOCKET;
    case S_IFIFO: return CI_FD_PIPE;
    case S_IFCHR: return CI_FD_TTY;
    default: return CI_FD_OTHER;
    }
}

static int list_fds(struct scratch *s, int skip)
{
    int dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return fail(s, "cannot open /proc/self/fd: %s", strerror(errno));
    char buf[8192];
    for (;;) {
        long n = syscall(SYS_getdents64, dfd, buf, sizeof buf);
        if (n < 0) { int e = errno; close(dfd); return fail(s, "reading /proc/self/fd: %s", strerror(e)); }
        if (n == 0) break;
        for (long o = 0; o < n;) {
            struct dirent64 *d = (struct dirent64 *)(buf + o);
            o += d->d_reclen;
            if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
            int fd = atoi(d->d_name);
            if (fd == dfd || fd == skip) continue;
            if (s->nfd == MAXFD) { close(dfd); return fail(s, "more than %d file descriptors", MAXFD); }
            struct ci_fd *f = &s->fds[s->nfd];
            memset(f, 0, sizeof *f);
            struct stat sb;
            char link[64];
            snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
            if (fstat(fd, &sb) != 0) continue;
            ssize_t l = readlink(link, f->path, sizeof f->path - 1);
            if (l < 0 || (size_t)l >= sizeof f->path - 1) {
                close(dfd);
                return fail(s, "fd %d: cannot read its path", fd);
            }
            f->path[l] = 0;
            f->fd = fd;
            f->kind = fd_kind(&sb);
            f->flags = fcntl(fd, F_GETFL);
            f->fdflags = fcntl(fd, F_GETFD);
            f->dev = sb.st_dev;
            f->ino = sb.st_ino;
            if (f->kind == CI_FD_TTY && !isatty(fd)) f->kind = CI_FD_DEV;
            if (f->kind == CI_FD_FILE || f->kind == CI_FD_DIR || f->kind == CI_FD_DEV) {
                size_t pl = strlen(f->path);
                struct stat pb;
                if (f->path[0] != '/' || (pl > 10 && !strcmp(f->path + pl - 10, " (deleted)")) ||
                    stat(f->path, &pb) != 0 || pb.st_ino != sb.st_ino || pb.st_dev != sb.st_dev) {
                    close(dfd);
                    return fail(s, "fd %d refers to %s, which cannot be reopened by its path (deleted or "
                                "replaced); close it before the checkpoint", fd, f->path);
                }
                f->size = sb.st_size;
                f->offset = f->kind == CI_FD_FILE ? lseek(fd, 0, SEEK_CUR) : 0;
            }
            s->nfd++;
        }
    }
    close(dfd);
    return 0;
}

/* ------------------------------------------------------------ process state */
static int gather_state(struct scratch *s)
{
    struct ci_state *st = &s->st;
    if (!getcwd(st->cwd, sizeof st->cwd)) return fail(s, "getcwd: %s", strerror(errno));
    for (int sig = 1; sig < CI_NSIG; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP) continue;
        if (syscall(SYS_rt_sigaction, sig, NULL, &st->sig[sig], 8) != 0) memset(&st->sig[sig], 0, sizeof st->sig[sig]);
    }
    stack_t ss;
    if (sigaltstack(NULL, &ss) == 0) {
        st->altstack_sp = (uint64_t)(uintptr_t)ss.ss_sp;
        st->altstack_size = ss.ss_size;
        st->altstack_flags = ss.ss_flags & ~SS_ONSTACK;
    }
    syscall(SYS_arch_prctl, ARCH_GET_FS, &st->regs.fs_base);
    syscall(SYS_arch_prctl, ARCH_GET_GS, &st->regs.gs_base);
    /* /proc/self/stat: fields after the command's ')' start at field 3 */
    char buf[4096];
    if (slurp("/proc/self/stat", buf, sizeof buf) < 0) return fail(s, "cannot read /proc/self/stat");
    char *q = strrchr(buf, ')');
    if (!q) return fail(s, "cannot parse /proc/self/stat");
    uint64_t f[64] = { 0 };
    int i = 3;
    for (char *t = strtok(q + 1, " \n"); t && i < 64; t = strtok(NULL, " \n")) f[i++] = strtoull(t, NULL, 10);
    st->start_code = f[26]; st->end_code = f[27]; st->start_stack = f[28];
    st->start_data = f[45]; st->end_data = f[46]; st->start_brk = f[47];
    st->arg_start = f[48]; st->arg_end = f[49]; st->env_start = f[50]; st->env_end = f[51];
    st->brk = (uint64_t)syscall(SYS_brk, 0);
    ssize_t al = slurp("/proc/self/auxv", buf, sizeof buf);
    if (al > 0 && (size_t)al <= sizeof st->auxv) {
        memcpy(st->auxv, buf, (size_t)al);
        st->auxv_len = (uint32_t)al;
    }
    if (&__rseq_offset && &__rseq_size && __rseq_size) {
        st->rseq_addr = st->regs.fs_base + (uint64_t)__rseq_offset;
        st->rseq_len = __rseq_size < 32 ? 32 : __rseq_size;
        st->rseq_sig = 0x53053053;      /* RSEQ_SIG on x86 */
    }
    void *head = NULL;
    size_t hlen = 0;
    if (syscall(SYS_get_robust_list, 0, &head, &hlen) == 0) {
        st->robust_head = (uint64_t)(uintptr_t)head;
        st->robust_len = hlen;
    }
    /* glibc's cached thread id in its struct pthread, at fs_base */
    st->tid_off = -1;
    int tid = (int)syscall(SYS_gettid), found = 0;
    for (int off = 0; off < 2048; off += 4) {
        int v;
        memcpy(&v, (const char *)(uintptr_t)st->regs.fs_base + off, sizeof v);
        if (v == tid) { st->tid_off = off; found++; }
    }
    if (found != 1) st->tid_off = -1;
    return 0;
}

/* ------------------------------------------------------------ writing */
static int write_all(struct scratch *s, int fd, const void *p, size_t n, struct ci_hash *h, const char *what)
{
    const char *b = p;
    while (n) {
        size_t k = n > (64ul << 20) ? (64ul << 20) : n;
        ssize_t w = write(fd, b, k);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return fail(s, "writing %s: %s", what, w < 0 ? strerror(errno) : "short write");
        ci_hash_update(h, b, (size_t)w);
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ------------------------------------------------------------ other threads
 * Each other thread gets CKPT_SIG; its handler records the thread's kernel
 * state and registers into thr_slots (saved with the rest of the memory, and
 * written to the image's thread table), says so, and waits until the image
 * is written.  Restarted, the handler returns at once: its sigreturn
 * restores the thread's interrupted context from the frame on its stack. */
static struct ci_thread thr_slots[CI_MAXTHREADS];
static int thr_claimed, thr_saved, thr_left, thr_release;
static int64_t thr_tid_off;
static struct ci_ksigaction thr_oldact;

static int ckpt_sig(void)
{
    return SIGRTMAX - 1;
}

static void thread_handler(int sig)
{
    int saved_errno = errno;
    int i = __atomic_fetch_add(&thr_claimed, 1, __ATOMIC_SEQ_CST);
    if (i < CI_MAXTHREADS) {
        struct ci_thread *t = &thr_slots[i];
        memset(t, 0, sizeof *t);
        t->tid = syscall(SYS_gettid);
        syscall(SYS_arch_prctl, ARCH_GET_FS, &t->regs.fs_base);
        syscall(SYS_arch_prctl, ARCH_GET_GS, &t->regs.gs_base);
        syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &t->sigmask, 8);
        if (&__rseq_offset && &__rseq_size && __rseq_size) {
            t->rseq_addr = t->regs.fs_base + (uint64_t)__rseq_offset;
            t->rseq_len = __rseq_size < 32 ? 32 : __rseq_size;
            t->rseq_sig = 0x53053053;
        }
        void *head = NULL;
        size_t hlen = 0;
        if (syscall(SYS_get_robust_list, 0, &head, &hlen) == 0) {
            t->robust_head = (uint64_t)(uintptr_t)head;
            t->robust_len = hlen;
        }
        stack_t ss;
        if (sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE)) {
            t->altstack_sp = (uint64_t)(uintptr_t)ss.ss_sp;
            t->altstack_size = ss.ss_size;
            t->altstack_flags = ss.ss_flags & ~SS_ONSTACK;
        }
        int32_t v = 0;
        if (thr_tid_off >= 0) memcpy(&v, (const char *)(uintptr_t)t->regs.fs_base + thr_tid_off, sizeof v);
        t->tid_cached = thr_tid_off >= 0 && v == (int32_t)t->tid;
        if (ckpt_save_regs(&t->regs) != 0) {   /* restarted */
            errno = saved_errno;
            return;
        }
    }
    __atomic_add_fetch(&thr_saved, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&thr_release, __ATOMIC_SEQ_CST))
        syscall(SYS_futex, &thr_release, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    __atomic_add_fetch(&thr_left, 1, __ATOMIC_SEQ_CST);
    errno = saved_errno;
    (void)sig;
}

/* the tids of the other threads; their number, or -1 */
static int list_threads(int *tids, int max)
{
    int dfd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return -1;
    char buf[4096];
    int n = 0, self = (int)syscall(SYS_gettid);
    long r;
    while ((r = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0)
        for (long o = 0; o < r;) {
            struct dirent64 *d = (struct dirent64 *)(buf + o);
            o += d->d_reclen;
            int t = atoi(d->d_name);
            if (t <= 0 || t == self) continue;
            if (n == max) { close(dfd); return -1; }
            tids[n++] = t;
        }
    close(dfd);
    return r < 0 ? -1 : n;
}

static void release_threads(int n)
{
    __atomic_store_n(&thr_release, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, &thr_release, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
    for (int i = 0; i < 100000 && __atomic_load_n(&thr_left, __ATOMIC_SEQ_CST) < n; i++) {
        struct timespec ts = { 0, 100000 };
        nanosleep(&ts, NULL);
    }
    /* SIG_IGN first: it discards our signal still pending in a thread that did not stop */
    struct ci_ksigaction ign = { .handler = (uint64_t)(uintptr_t)SIG_IGN, .flags = 0, .restorer = 0, .mask = 0 };
    syscall(SYS_rt_sigaction, ckpt_sig(), &ign, NULL, 8);
    syscall(SYS_rt_sigaction, ckpt_sig(), &thr_oldact, NULL, 8);
}

/* Stop every other thread in thread_handler; 0 (s->nthr set), or -1 with the reason. */
static int stop_threads(struct scratch *s, int64_t tid_off)
{
    static int tids[CI_MAXTHREADS];
    int n = list_threads(tids, CI_MAXTHREADS - 1);
    if (n < 0) return fail(s, "cannot list this process's threads, or more than %d", CI_MAXTHREADS - 1);
    s->nthr = 0;
    if (n == 0) return 0;
    int sig = ckpt_sig();
    thr_claimed = thr_saved = thr_left = thr_release = 0;
    thr_tid_off = tid_off;
    struct sigaction sa;             /* through glibc: it supplies the restorer */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = thread_handler;
    sa.sa_flags = SA_RESTART;
    sigfillset(&sa.sa_mask);
    syscall(SYS_rt_sigaction, sig, NULL, &thr_oldact, 8);
    if (sigaction(sig, &sa, NULL) != 0) return fail(s, "sigaction(%d): %s", sig, strerror(errno));
    int sent = 0;
    for (int i = 0; i < n; i++)
        if (syscall(SYS_tgkill, getpid(), tids[i], sig) == 0) sent++;
    for (int i = 0; i < 20000 && __atomic_load_n(&thr_saved, __ATOMIC_SEQ_CST) < sent; i++) {
        struct timespec ts = { 0, 100000 };
        nanosleep(&ts, NULL);
    }
    int got = __atomic_load_n(&thr_saved, __ATOMIC_SEQ_CST);
    if (got < sent) {
        release_threads(got);
        return fail(s, "%d of %d threads did not stop within 2 s (signal %d blocked?)", sent - got, sent, sig);
    }
    int now = nthreads();
    if (now != sent + 1) {
        release_threads(got);
        return fail(s, "the threads changed during the checkpoint (%d, then %d)", sent + 1, now);
    }
    s->nthr = (uint32_t)sent;
    return 0;
}

/* The runs of the pages there (present or swapped) of private anonymous
 * regions; pages never touched read as zero after the restart anyway.  Gaps
 * under RUN_GAP are filled to keep the table short. */
#define RUN_GAP (16 * CI_PAGE)
static void compute_runs(struct scratch *s)
{
    uint64_t *ent = (uint64_t *)(void *)s->text;          /* the first MiB: pagemap entries */
    size_t maxent = (1ul << 20) / sizeof *ent;
    s->runs = (struct ci_run *)(void *)(s->text + (1ul << 20));
    size_t maxruns = (TEXT_MAX - (1ul << 20)) / sizeof(struct ci_run);
    s->nruns = 0;
    int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    for (uint32_t i = 0; i < s->nreg; i++) {
        struct ci_region *r = &s->reg[i];
        r->data_len = (r->flags & CI_R_SAVED) ? r->end - r->start : 0;
        if (pm < 0 || !(r->flags & CI_R_SAVED) || (r->flags & (CI_R_FILE | CI_R_SHARED | CI_R_VDSO))) continue;
        uint64_t first = s->nruns, sum = 0;
        int whole = 0;
        for (uint64_t a = r->start; a < r->end && !whole;) {
            size_t n = (r->end - a) / CI_PAGE;
            if (n > maxent) n = maxent;
            if (pread(pm, ent, n * sizeof *ent, (off_t)(a / CI_PAGE * sizeof *ent)) != (ssize_t)(n * sizeof *ent)) {
                whole = 1;
                break;
            }
            for (size_t k = 0; k < n; k++, a += CI_PAGE) {
                if (!(ent[k] & (3ull << 62))) continue;        /* neither present nor swapped */
                uint64_t off = a - r->start;
                struct ci_run *last = s->nruns > first ? &s->runs[s->nruns - 1] : NULL;
                if (last && off - (last->off + last->len) <= RUN_GAP) {
                    sum += off + CI_PAGE - (last->off + last->len);
                    last->len = off + CI_PAGE - last->off;
                } else if (s->nruns == maxruns) {
                    whole = 1;
                    break;
                } else {
                    s->runs[s->nruns++] = (struct ci_run){ off, CI_PAGE };
                    sum += CI_PAGE;
                }
            }
        }
        if (whole || (s->nruns - first == 1 && s->runs[first].len == r->end - r->start)) {
            s->nruns = first;                                 /* all of it */
            continue;
        }
        r->flags |= CI_R_RUNS;
        r->run_first = first;
        r->nruns = s->nruns - first;
        r->data_len = sum;
    }
    if (pm >= 0) close(pm);
}

static const char zeros[CI_PAGE];

__attribute__((noinline)) static int write_image(struct scratch *s, const char *path, int flags)
{
    char tmp[CI_PATH + 32];
    struct stat pb;
    char final[CI_PATH + 32];
    if (stat(path, &pb) == 0 && S_ISDIR(pb.st_mode))
        snprintf(final, sizeof final, "%s/image.%ld", path, (long)getpid());
    else
        snprintf(final, sizeof final, "%s", path);
    if (strlen(final) >= CI_PATH) return fail(s, "path too long: %s", path);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", final, (long)getpid());
    if (gather_state(s) || stop_threads(s, s->st.tid_off)) return -1;
    if (s->nthr) s->st.sig[ckpt_sig()] = thr_oldact;   /* the program's, not ours */
    int rc = -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        fail(s, "cannot create %s: %s", tmp, strerror(errno));
        goto out;
    }
    if (list_fds(s, fd)) goto out;
    if (parse_mappings(s, (uint64_t)(uintptr_t)s, (uint64_t)(uintptr_t)s + SCRATCH_SIZE)) goto out;
    compute_runs(s);

    struct ci_header *h = &s->hdr;
    memset(h, 0, sizeof *h);
    memcpy(h->magic, CI_MAGIC, 8);
    h->version = CI_VERSION;
    h->arch = CI_ARCH_X86_64;
    h->pid = getpid();
    h->time = time(NULL);
    const char *exe = (const char *)getauxval(AT_EXECFN);
    snprintf(h->program, sizeof h->program, "%s", exe ? exe : "?");
    h->nregions = s->nreg;
    h->nfds = s->nfd;
    h->state_off = sizeof *h;
    h->regions_off = h->state_off + sizeof s->st;
    h->fds_off = h->regions_off + s->nreg * sizeof(struct ci_region);
    h->threads_off = h->fds_off + s->nfd * sizeof(struct ci_fd);
    h->nthreads = s->nthr;
    h->runs_off = h->threads_off + s->nthr * sizeof(struct ci_thread);
    h->nruns = s->nruns;
    uint64_t at = h->runs_off + s->nruns * sizeof(struct ci_run);
    uint64_t off = (at + CI_PAGE - 1) & ~(CI_PAGE - 1);
    for (uint32_t i = 0; i < s->nreg; i++)
        if (s->reg[i].flags & CI_R_SAVED) {
            s->reg[i].data_off = off;
            off += s->reg[i].data_len;
        }
    h->total = off;

    struct ci_hash hs;
    ci_hash_init(&hs);
    struct ci_hash hdummy;
    ci_hash_init(&hdummy);
    if (write_all(s, fd, h, sizeof *h, &hdummy, "the header") || write_all(s, fd, &s->st, sizeof s->st, &hs, "the state") ||
        write_all(s, fd, s->reg, s->nreg * sizeof(struct ci_region), &hs, "the mappings") ||
        write_all(s, fd, s->fds, s->nfd * sizeof(struct ci_fd), &hs, "the fds") ||
        write_all(s, fd, thr_slots, s->nthr * sizeof(struct ci_thread), &hs, "the threads") ||
        write_all(s, fd, s->runs, s->nruns * sizeof(struct ci_run), &hs, "the runs"))
        goto out;
    if (write_all(s, fd, zeros, (size_t)(((at + CI_PAGE - 1) & ~(CI_PAGE - 1)) - at), &hs, "padding")) goto out;
    for (uint32_t i = 0; i < s->nreg; i++) {
        const struct ci_region *r = &s->reg[i];
        if (!(r->flags & CI_R_SAVED)) continue;
        char what[CI_PATH + 64];
        snprintf(what, sizeof what, "mapping %lx-%lx %s", (unsigned long)r->start, (unsigned long)r->end, r->name);
        /* The checksum must be of the bytes written.  Through a copy where memory may
         * change while we write: this very stack, the TLS block with the rseq area (the
         * kernel stores the cpu number there on a migration), shared mappings (other
         * processes); anything else is stable (one thread, signals blocked) and is written
         * from where it is and hashed right after, by chunks that are still in the cache. */
        uint64_t here = (uint64_t)(uintptr_t)&here, rs = s->st.rseq_addr;
        int moving = (here >= r->start && here < r->end) || (rs >= r->start && rs < r->end) ||
                     (r->flags & CI_R_SHARED) || s->nthr;    /* other threads' TLS: anywhere */
        size_t chunk = 1ul << 20;
        struct ci_run whole = { 0, r->end - r->start };
        const struct ci_run *rn = (r->flags & CI_R_RUNS) ? &s->runs[r->run_first] : &whole;
        uint64_t nrn = (r->flags & CI_R_RUNS) ? r->nruns : 1;
        for (uint64_t q = 0; q < nrn; q++) {
            uint64_t lo = r->start + rn[q].off, hi = lo + rn[q].len;
            for (uint64_t a = lo; a < hi; a += chunk) {
                size_t k = hi - a < chunk ? (size_t)(hi - a) : chunk;
                const void *src = (const void *)(uintptr_t)a;
                if (moving) src = memcpy(s->text, src, k);
                if (write_all(s, fd, src, k, &hs, what)) goto out;
            }
        }
    }
    h->checksum = ci_hash_final(&hs);
    h->hdr_sum = 0;
    h->hdr_sum = ci_sum(h, sizeof *h);
    if (pwrite(fd, h, sizeof *h, 0) != (ssize_t)sizeof *h) { fail(s, "writing the header: %s", strerror(errno)); goto out; }
    if ((flags & KUMI_CKPT_FSYNC) && fsync(fd) != 0) { fail(s, "fsync %s: %s", tmp, strerror(errno)); goto out; }
    if (close(fd) != 0) { fd = -1; fail(s, "closing %s: %s", tmp, strerror(errno)); goto out; }
    fd = -1;
    if (rename(tmp, final) != 0) { fail(s, "rename %s to %s: %s", tmp, final, strerror(errno)); goto out; }
    rc = 0;
out:
    if (fd >= 0) close(fd);
    if (rc && fd >= 0) unlink(tmp);
    if (s->nthr) release_threads((int)s->nthr);
    return rc;
}

/* the environment kumi_restart left at CI_RESTART_ENV, if it is mapped (mincore says) */
static const char *const *restart_env;
static void find_restart_env(void)
{
    unsigned char v;
    const struct ci_env *e = (const struct ci_env *)CI_RESTART_ENV;
    restart_env = NULL;
    if (mincore((void *)CI_RESTART_ENV, CI_PAGE, &v) == 0 && e->magic == CI_ENV_MAGIC) restart_env = e->vec;
}

const char *const *kumi_ckpt_image_restart_env(void)
{
    return restart_env;
}

int kumi_ckpt_image_write(const char *path, int flags, char *err, size_t errlen)
{
    if (err && errlen) err[0] = 0;
    if (!path || !*path) {
        if (err && errlen) snprintf(err, errlen, "kumi_ckpt_image_write: no path");
        return -1;
    }
    struct scratch *volatile s = mmap(NULL, SCRATCH_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s == MAP_FAILED) {
        if (err && errlen) snprintf(err, errlen, "kumi_ckpt_image_write: no memory for the scratch area: %s", strerror(errno));
        return -1;
    }
    s->err = err;
    s->errlen = errlen;
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    memcpy(&s->st.sigmask, &old, sizeof s->st.sigmask);
    if (ckpt_save_regs(&s->st.regs) != 0) {
        /* restarted: kumi_restart jumped here, with the saved signal mask (s is gone) */
        find_restart_env();
        return KUMI_CKPT_RESTARTED;
    }
    int rc = write_image(s, path, flags);
    sigprocmask(SIG_SETMASK, &old, NULL);
    munmap(s, SCRATCH_SIZE);
    return rc ? -1 : KUMI_CKPT_WRITTEN;
}

int kumi_ckpt_image_info(const char *path, int fd, char *err, size_t errlen)
{
    if (err && errlen) err[0] = 0;
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(f, &sb) != 0 || sb.st_size == 0) {
        close(f);
        snprintf(err, errlen, "%s: empty or unreadable", path);
        return -1;
    }
    void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, f, 0);
    close(f);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "%s: cannot map it: %s", path, strerror(errno));
        return -1;
    }
    int rc = ci_check(m, (size_t)sb.st_size, err, errlen);
    if (rc == 0) ci_describe(m, fd);
    munmap(m, (size_t)sb.st_size);
    return rc;
}
