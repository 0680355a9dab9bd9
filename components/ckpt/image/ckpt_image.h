/* ckpt/image: the process image format, shared by the writer (ckpt_write.c,
 * inside the process being checkpointed) and the restart program
 * (kumi_restart.c).  Private to this component.
 *
 * An image file (x86_64 Linux only):
 *
 *   struct ci_header                     at 0
 *   struct ci_state                      at hdr.state_off
 *   struct ci_region[hdr.nregions]       at hdr.regions_off
 *   struct ci_fd[hdr.nfds]               at hdr.fds_off
 *   struct ci_thread[hdr.nthreads]       at hdr.threads_off (the threads but the caller)
 *   struct ci_run[hdr.nruns]             at hdr.runs_off
 *   region contents                      each at region.data_off (page aligned)
 *
 * hdr.checksum covers every byte after the header (ci_sum over
 * [sizeof header, hdr.total)), hdr.hdr_sum the header itself (with hdr_sum
 * zero).  The writer writes NAME.tmp.PID and renames it when complete.
 *
 * The restart program uses two windows of the address space that programs
 * leave alone: a static non-PIE executable linked at CI_PROG_LO (its text,
 * data and brk; below 2 GiB, as glibc's static startup code needs; above
 * where a non-PIE program's randomized brk starts, up to 1 GiB after its
 * data; kumi_restart runs without address randomization, so that its own
 * brk follows its data), and
 * CI_DATA_LO.. for its own stack, the image and the vDSO on its way.  Its
 * text stays mapped in the restarted process, so the writer leaves the
 * windows out of an image (and refuses a program that put something else
 * there), and an image with a region there is refused at restart. */
#ifndef KUMI_CKPT_IMAGE_FMT_H
#define KUMI_CKPT_IMAGE_FMT_H

#include <stddef.h>
#include <stdint.h>

#define CI_MAGIC "KUMIIMG\n"
#define CI_VERSION 2                       /* 2: thread table, page runs */
#define CI_ARCH_X86_64 62u                 /* EM_X86_64 */
#define CI_PAGE 4096ul
#define CI_PATH 512                        /* longer paths are refused at write time */
#define CI_NSIG 65                         /* signals 1..64 */

#define CI_PROG_LO 0x70000000ul             /* -Wl,-Ttext-segment (Makefile.am) */
#define CI_PROG_HI 0x7c000000ul
#define CI_DATA_LO 0x3a0000000000ul
#define CI_DATA_HI 0x3c0000000000ul
static inline int ci_in_windows(uint64_t lo, uint64_t hi)  /* overlaps one */
{
    return (lo < CI_PROG_HI && hi > CI_PROG_LO) || (lo < CI_DATA_HI && hi > CI_DATA_LO);
}
static inline int ci_inside_windows(uint64_t lo, uint64_t hi)  /* inside one */
{
    return (lo >= CI_PROG_LO && hi <= CI_PROG_HI) || (lo >= CI_DATA_LO && hi <= CI_DATA_HI);
}
#define CI_RESTART_STACK 0x3a8000000000ul  /* its own stack once it leaves the kernel's */
#define CI_RESTART_STACK_SIZE (1ul << 20)
#define CI_RESTART_TMP   0x3a9000000000ul  /* the current vDSO block on its way */
#define CI_RESTART_TSTACKS 0x3a8100000000ul /* small stacks the re-created threads start on */
#define CI_TSTACK_SIZE (64ul << 10)
#define CI_RESTART_IMAGE 0x3b0000000000ul  /* the image file, mapped read-only */
#define CI_RESTART_ENV   0x3a9800000000ul  /* kumi_restart's environment, left for the restarted process */
#define CI_ENV_MAGIC 0x564e45494d554b00ull  /* "\0KUMIENV" */
struct ci_env {                           /* at CI_RESTART_ENV, read-only */
    uint64_t magic, count, size;          /* size: of the whole block */
    const char *vec[];                    /* count pointers and NULL, then the strings */
};

/* The registers of the calling thread at the call of kumi_ckpt_image_write:
 * what the x86_64 System V ABI preserves across a call (the rest is dead
 * there), plus the thread pointers. */
struct ci_regs {
    uint64_t rbx, rbp, r12, r13, r14, r15;
    uint64_t rsp;                 /* after the return */
    uint64_t rip;                 /* the return address */
    uint32_t mxcsr;
    uint16_t fpucw, pad0;
    uint64_t fs_base, gs_base;
};

/* the kernel's struct sigaction (rt_sigaction), not glibc's */
struct ci_ksigaction {
    uint64_t handler, flags, restorer, mask;
};

struct ci_header {
    char magic[8];                /* CI_MAGIC */
    uint32_t version;             /* CI_VERSION */
    uint32_t arch;                /* CI_ARCH_X86_64 */
    uint64_t total;               /* file size */
    uint64_t checksum;            /* ci_sum of [sizeof header, total) */
    uint64_t state_off, regions_off, fds_off;
    uint32_t nregions, nfds;
    uint64_t threads_off;
    uint32_t nthreads, pad0;
    uint64_t runs_off, nruns;
    int64_t pid;                  /* of the writer */
    int64_t time;                 /* of the checkpoint, seconds since the epoch */
    char program[CI_PATH];        /* AT_EXECFN, for information */
    uint64_t hdr_sum;             /* ci_sum of this header with hdr_sum = 0 */
};

struct ci_state {
    struct ci_regs regs;
    char cwd[CI_PATH];
    uint64_t sigmask;
    struct ci_ksigaction sig[CI_NSIG];    /* [0] unused */
    uint64_t altstack_sp, altstack_size;
    int32_t altstack_flags, pad1;
    /* struct prctl_mm_map fields (from /proc/self/stat and brk(0)) */
    uint64_t start_code, end_code, start_data, end_data, start_brk, brk, start_stack;
    uint64_t arg_start, arg_end, env_start, env_end;
    uint64_t auxv[64];            /* /proc/self/auxv, pairs ending with AT_NULL */
    uint32_t auxv_len;            /* bytes */
    /* per-thread kernel registrations of glibc's, redone at restart */
    uint32_t rseq_len, rseq_sig, pad2;
    uint64_t rseq_addr;           /* 0: none */
    uint64_t robust_head, robust_len;
    /* glibc's struct pthread caches the thread id: its offset from fs_base,
     * found at write time as the one place holding gettid() (-1: not found) */
    int64_t tid_off;
    uint64_t rlimit_stack;
};

/* Another thread than the caller: stopped in the writer's signal handler,
 * which recorded what follows and then, like the caller, the registers at
 * a call (ckpt_save_regs); at restart it is re-created there, and the
 * handler's return (sigreturn) restores the whole interrupted context,
 * which the signal frame on the thread's stack holds. */
struct ci_thread {
    struct ci_regs regs;
    int64_t tid;                  /* at the checkpoint */
    uint64_t sigmask;             /* inside the handler */
    uint64_t rseq_addr;
    uint32_t rseq_len, rseq_sig;
    uint64_t robust_head, robust_len;
    uint64_t altstack_sp, altstack_size;
    int32_t altstack_flags;
    int32_t tid_cached;           /* 1: glibc's cached tid is at fs_base + state.tid_off */
};
#define CI_MAXTHREADS 256

enum {
    CI_R_SAVED = 1,               /* contents in the image */
    CI_R_FILE = 2,                /* file-backed: path, offset, dev, ino, mtime */
    CI_R_SHARED = 4,              /* MAP_SHARED */
    CI_R_STACK = 8,               /* [stack]: MAP_GROWSDOWN */
    CI_R_HEAP = 16,               /* [heap] */
    CI_R_VDSO = 32,               /* [vdso]: contents saved, compared at restart */
    CI_R_VVAR = 64,               /* [vvar], [vvar_vclock], ...: nothing saved */
    CI_R_RUNS = 128,              /* CI_R_SAVED: only the pages in runs (the others were never
                                     touched: zero), else the whole region */
};

/* pages of an anonymous region that are there (/proc/self/pagemap: present or
 * swapped), offsets in bytes from the region's start; the contents of a
 * region's runs follow each other from its data_off */
struct ci_run {
    uint64_t off, len;
};

struct ci_region {
    uint64_t start, end;
    uint32_t prot;                /* PROT_* */
    uint32_t flags;               /* CI_R_* */
    uint64_t offset;              /* file offset */
    uint64_t dev, ino, size;      /* of the file at write time */
    int64_t mtime_sec, mtime_nsec;
    uint64_t data_off;            /* CI_R_SAVED: where the contents start */
    uint64_t run_first, nruns;    /* CI_R_RUNS: its runs in the run table */
    uint64_t data_len;            /* CI_R_SAVED: bytes of contents in the image */
    char name[CI_PATH];           /* the path or [name] of /proc/self/maps */
};

enum { CI_FD_FILE = 1, CI_FD_DIR, CI_FD_SOCKET, CI_FD_PIPE, CI_FD_TTY, CI_FD_OTHER, CI_FD_DEV };

struct ci_fd {
    int32_t fd, kind;             /* CI_FD_* */
    int32_t flags, fdflags;       /* F_GETFL, F_GETFD */
    int64_t offset, size;         /* regular files */
    uint64_t dev, ino;
    char path[CI_PATH];           /* files and directories; a description otherwise */
};

/* A 64-bit checksum of its own (not cryptographic: it detects damage),
 * streaming: the result depends on the bytes only, not on how they were cut
 * into calls of ci_hash_update. */
struct ci_hash {
    uint64_t a, c, d, e, total;
    unsigned char tail[32];
    unsigned ntail;
};
#define CI_K1 0x9e3779b97f4a7c15ull
#define CI_K2 0xc2b2ae3d27d4eb4full
static inline void ci_hash_init(struct ci_hash *s)
{
    __builtin_memset(s, 0, sizeof *s);
    s->a = 0x4b554d49434b5054ull;
    s->c = s->a ^ CI_K1;
    s->d = s->a ^ CI_K2;
    s->e = ~s->a;
}
static inline void ci_hash_blocks(struct ci_hash *s, const unsigned char *b, size_t nblocks)
{
    uint64_t a = s->a, c = s->c, d = s->d, e = s->e;
    for (size_t i = 0; i < nblocks; i++, b += 32) {
        uint64_t w[4];
        __builtin_memcpy(w, b, 32);
        a = (a ^ w[0]) * CI_K1; a ^= a >> 29;
        c = (c ^ w[1]) * CI_K1; c ^= c >> 29;
        d = (d ^ w[2]) * CI_K1; d ^= d >> 29;
        e = (e ^ w[3]) * CI_K1; e ^= e >> 29;
    }
    s->a = a; s->c = c; s->d = d; s->e = e;
}
static inline void ci_hash_update(struct ci_hash *s, const void *p, size_t n)
{
    const unsigned char *b = p;
    s->total += n;
    if (s->ntail) {
        size_t k = 32 - s->ntail < n ? 32 - s->ntail : n;
        __builtin_memcpy(s->tail + s->ntail, b, k);
        s->ntail += (unsigned)k;
        b += k;
        n -= k;
        if (s->ntail < 32) return;
        ci_hash_blocks(s, s->tail, 1);
        s->ntail = 0;
    }
    ci_hash_blocks(s, b, n / 32);
    b += n & ~(size_t)31;
    n &= 31;
    __builtin_memcpy(s->tail, b, n);
    s->ntail = (unsigned)n;
}
static inline uint64_t ci_hash_final(const struct ci_hash *s)
{
    uint64_t h = s->a ^ (s->c * CI_K2) ^ ((s->d * CI_K2) << 1) ^ ((s->e * CI_K2) << 2) ^ s->total;
    for (unsigned i = 0; i < s->ntail; i++) h = (h ^ s->tail[i]) * CI_K2;
    return h ^ (h >> 31);
}
static inline uint64_t ci_sum(const void *p, size_t n)
{
    struct ci_hash s;
    ci_hash_init(&s);
    ci_hash_update(&s, p, n);
    return ci_hash_final(&s);
}

/* ckpt_common.c: check an image mapped at `img` of `len` bytes (header,
 * checksum, tables); 0, or -1 with the reason in err. */
int ci_check(const void *img, size_t len, char *err, size_t errlen);
/* a description of the image, on fd (for kumi_ckpt_image_info / --info) */
void ci_describe(const void *img, int fd);

#endif
