/* ckpt/image: checking and describing an image (the writer's info call and
 * kumi_restart share it). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "ckpt_image.h"

static int bad(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int terminated(const char *s, size_t n)
{
    return memchr(s, 0, n) != NULL;
}

int ci_check(const void *img, size_t len, char *err, size_t errlen)
{
    const struct ci_header *h = img;
    if (len < sizeof *h) return bad(err, errlen, "not a Kumi process image: %zu bytes, shorter than the header", len);
    if (memcmp(h->magic, CI_MAGIC, 8) != 0) return bad(err, errlen, "not a Kumi process image (no KUMIIMG magic)");
    if (h->version != CI_VERSION)       /* before the header's checksum: the header may have another shape */
        return bad(err, errlen, "image format version %u, this restart program reads version %u", h->version, CI_VERSION);
    struct ci_header hc = *h;
    hc.hdr_sum = 0;
    if (ci_sum(&hc, sizeof hc) != h->hdr_sum) return bad(err, errlen, "damaged image: the header's checksum does not match");
    if (h->arch != CI_ARCH_X86_64) return bad(err, errlen, "image of another architecture (ELF machine %u)", h->arch);
    if (h->total != len)
        return bad(err, errlen, "truncated or extended image: %zu bytes, the header says %llu", len,
                   (unsigned long long)h->total);
    if (h->state_off != sizeof *h || h->regions_off != h->state_off + sizeof(struct ci_state) ||
        h->nregions > 1000000 || h->nfds > 1000000 ||
        h->fds_off != h->regions_off + (uint64_t)h->nregions * sizeof(struct ci_region) ||
        h->fds_off + (uint64_t)h->nfds * sizeof(struct ci_fd) > len || h->nthreads >= CI_MAXTHREADS ||
        h->threads_off != h->fds_off + (uint64_t)h->nfds * sizeof(struct ci_fd) ||
        h->runs_off != h->threads_off + (uint64_t)h->nthreads * sizeof(struct ci_thread) || h->nruns > len ||
        h->runs_off + h->nruns * sizeof(struct ci_run) > len)
        return bad(err, errlen, "damaged image: inconsistent table offsets");
    if (ci_sum((const char *)img + sizeof *h, len - sizeof *h) != h->checksum)
        return bad(err, errlen, "damaged image: the checksum of its contents does not match");
    /* the checksum matches: what follows catches a writer's bug, not damage */
    const struct ci_state *st = (const void *)((const char *)img + h->state_off);
    if (!terminated(st->cwd, sizeof st->cwd) || !terminated(h->program, sizeof h->program))
        return bad(err, errlen, "damaged image: unterminated string");
    const struct ci_region *r = (const void *)((const char *)img + h->regions_off);
    uint64_t prev_end = 0;
    for (uint32_t i = 0; i < h->nregions; i++) {
        const struct ci_region *g = &r[i];
        if (!terminated(g->name, sizeof g->name) || g->start >= g->end || (g->start | g->end) & (CI_PAGE - 1) ||
            g->end > 0x800000000000ull || g->start < prev_end)
            return bad(err, errlen, "damaged image: mapping %u (%llx-%llx) is not page-aligned, ordered and in user space",
                       i, (unsigned long long)g->start, (unsigned long long)g->end);
        if (ci_in_windows(g->start, g->end))
            return bad(err, errlen, "the image has a mapping at %llx-%llx, inside a window of the restart program",
                       (unsigned long long)g->start, (unsigned long long)g->end);
        if ((g->flags & CI_R_SAVED) &&
            (g->data_off & (CI_PAGE - 1) || g->data_off > len || g->data_len > len - g->data_off ||
             (!(g->flags & CI_R_RUNS) && g->data_len != g->end - g->start)))
            return bad(err, errlen, "damaged image: contents of mapping %u outside the file", i);
        if (g->flags & CI_R_RUNS) {
            const struct ci_run *rn = (const void *)((const char *)img + h->runs_off);
            uint64_t sum = 0, prev = 0;
            if (g->run_first > h->nruns || g->nruns > h->nruns - g->run_first)
                return bad(err, errlen, "damaged image: runs of mapping %u outside the table", i);
            for (uint64_t k = g->run_first; k < g->run_first + g->nruns; k++) {
                if ((rn[k].off | rn[k].len) & (CI_PAGE - 1) || rn[k].off < prev || rn[k].len == 0 ||
                    rn[k].len > g->end - g->start || rn[k].off > g->end - g->start - rn[k].len)
                    return bad(err, errlen, "damaged image: run %llu of mapping %u", (unsigned long long)k, i);
                prev = rn[k].off + rn[k].len;
                sum += rn[k].len;
            }
            if (sum != g->data_len) return bad(err, errlen, "damaged image: runs of mapping %u do not add up", i);
        }
        prev_end = g->end;
    }
    const struct ci_fd *f = (const void *)((const char *)img + h->fds_off);
    for (uint32_t i = 0; i < h->nfds; i++)
        if (!terminated(f[i].path, sizeof f[i].path) || f[i].fd < 0)
            return bad(err, errlen, "damaged image: fd entry %u", i);
    return 0;
}

static const char *kind_name(int k)
{
    switch (k) {
    case CI_FD_FILE: return "file";
    case CI_FD_DIR: return "directory";
    case CI_FD_SOCKET: return "socket (a placeholder at restart)";
    case CI_FD_PIPE: return "pipe (a placeholder at restart)";
    case CI_FD_TTY: return "terminal (a placeholder at restart)";
    case CI_FD_DEV: return "device";
    default: return "other (a placeholder at restart)";
    }
}

void ci_describe(const void *img, int fd)
{
    const struct ci_header *h = img;
    const struct ci_state *st = (const void *)((const char *)img + h->state_off);
    const struct ci_region *r = (const void *)((const char *)img + h->regions_off);
    const struct ci_fd *f = (const void *)((const char *)img + h->fds_off);
    char tb[64];
    time_t t = (time_t)h->time;
    struct tm tm;
    strftime(tb, sizeof tb, "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&t, &tm));
    uint64_t saved = 0;
    for (uint32_t i = 0; i < h->nregions; i++)
        if (r[i].flags & CI_R_SAVED) saved += r[i].data_len;
    dprintf(fd, "Kumi process image, format %u, x86_64\n", h->version);
    dprintf(fd, "  program: %s (pid %lld), written %s\n", h->program, (long long)h->pid, tb);
    dprintf(fd, "  size: %llu bytes, %u mappings (%llu bytes of contents), %u file descriptors\n",
            (unsigned long long)h->total, h->nregions, (unsigned long long)saved, h->nfds);
    dprintf(fd, "  cwd: %s\n  resumes at rip %#llx, rsp %#llx, fs base %#llx\n", st->cwd,
            (unsigned long long)st->regs.rip, (unsigned long long)st->regs.rsp, (unsigned long long)st->regs.fs_base);
    dprintf(fd, "  threads: %u (the caller and %u more)\n", h->nthreads + 1, h->nthreads);
    dprintf(fd, "  brk %#llx-%#llx, rseq area %#llx, glibc's cached tid at fs%+lld\n", (unsigned long long)st->start_brk,
            (unsigned long long)st->brk, (unsigned long long)st->rseq_addr, (long long)st->tid_off);
    for (uint32_t i = 0; i < h->nregions; i++) {
        const struct ci_region *g = &r[i];
        char part[48] = "";
        if (g->flags & CI_R_RUNS)
            snprintf(part, sizeof part, " (%llu KiB in %llu runs)", (unsigned long long)g->data_len >> 10,
                     (unsigned long long)g->nruns);
        dprintf(fd, "  map %012llx-%012llx %c%c%c%c %-5s %s%s\n", (unsigned long long)g->start, (unsigned long long)g->end,
                g->prot & PROT_READ ? 'r' : '-', g->prot & PROT_WRITE ? 'w' : '-', g->prot & PROT_EXEC ? 'x' : '-',
                g->flags & CI_R_SHARED ? 's' : 'p',
                g->flags & CI_R_VVAR ? "kern" : g->flags & CI_R_SAVED ? "saved" : g->flags & CI_R_FILE ? "ref" : "empty",
                g->name, part);
    }
    for (uint32_t i = 0; i < h->nfds; i++) {
        if (f[i].kind == CI_FD_FILE)
            dprintf(fd, "  fd %d: file %s, offset %lld of %lld bytes%s\n", f[i].fd, f[i].path, (long long)f[i].offset,
                    (long long)f[i].size, f[i].fd <= 2 ? " (the restart's own fd is used)" : "");
        else
            dprintf(fd, "  fd %d: %s %s%s\n", f[i].fd, kind_name(f[i].kind), f[i].path,
                    f[i].fd <= 2 ? " (the restart's own fd is used)" : "");
    }
}
