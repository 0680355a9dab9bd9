/* p2p/shmem segments: their names (the job-secret part), the checks a
 * segment passes before it is used (regular file of this user, mode 0600,
 * expected size, the inode its creator published), the layout helpers, and
 * attaching (mapping) a peer's segment on first use. */
#include "p2p_shmem.h"

/* The header: struct p2p_shmem_seghdr with canread[n], then from the next
 * cache line the receiver's verdicts on each sender's ring (the state
 * switch, p2p_shmem_cal.c: 0 fast, else slow), one 32-bit word per sender,
 * written only when a verdict changes. */
static size_t p2p_shmem_swoff(int n)
{
    return (sizeof(struct p2p_shmem_seghdr) + (size_t)n + 63) & ~(size_t)63;
}

size_t p2p_shmem_hdrsize(int n)
{
    size_t h = p2p_shmem_swoff(n) + 4 * (size_t)n;
    return (h + 4095) & ~(size_t)4095;
}

_Atomic uint32_t *p2p_shmem_swword(struct p2p_shmem_seghdr *seg, int sender)
{
    return (_Atomic uint32_t *)(void *)((char *)seg + p2p_shmem_swoff(seg->nranks)) + sender;
}

/* The unpredictable part of rank's names: 32 hex digits of an HMAC of the
 * job secret (what: "segment" or "doorbell").  -1 without a secret. */
int p2p_shmem_token(const char *what, int rank, char tok[33])
{
    char label[160];
    snprintf(label, sizeof label, "kumi p2p/shmem %s %s %d", what, p2p_shmem_jobid, rank);
    return kumi_jobkey_derive_hex(label, tok, 32);
}

void p2p_shmem_name(char *buf, size_t len, int rank)
{
    char tok[33];
    if (p2p_shmem_token("segment", rank, tok) != 0) tok[0] = 0;
    snprintf(buf, len, "/kumi.%s.%d.%s", p2p_shmem_jobid, rank, tok);
}

/* Is the segment open on fd the one rank made for this job?  (A regular file
 * of this user, not readable or writable by anyone else, of the size the
 * job's parameters give, and, for a peer's, the device and inode its creator
 * published.)  If not, says why in why. */
int p2p_shmem_check(int fd, const struct p2p_shmem_peer *p, char *why, size_t whylen)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, whylen, "fstat: %s", strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "not a regular file");
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, whylen, "owned by uid %u, not %u", (unsigned)st.st_uid, (unsigned)geteuid());
        return -1;
    }
    if (st.st_mode & 077) {
        snprintf(why, whylen, "mode %03o, not 600", (unsigned)(st.st_mode & 0777));
        return -1;
    }
    if ((size_t)st.st_size != p2p_shmem_seglen) {
        snprintf(why, whylen, "%lld bytes, not %zu", (long long)st.st_size, p2p_shmem_seglen);
        return -1;
    }
    if (p && ((unsigned long long)st.st_dev != p->segdev || (unsigned long long)st.st_ino != p->segino)) {
        snprintf(why, whylen, "not the file its rank created (inode %llu, not %llu)",
                 (unsigned long long)st.st_ino, p->segino);
        return -1;
    }
    return 0;
}

/* Open rank's segment and check it (p2p_shmem_check); -1 with why set, or
 * -2 when there is no such segment (any more: a rank that finished unlinks
 * its own, so this is no sign of an intruder). */
int p2p_shmem_open_peer(const struct p2p_shmem_peer *p, int rank, char *name, size_t namelen,
                        char *why, size_t whylen)
{
    int fd;
    p2p_shmem_name(name, namelen, rank);
    fd = shm_open(name, O_RDWR | O_NOFOLLOW, 0);
    if (fd < 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        return errno == ENOENT ? -2 : -1;
    }
    if (p2p_shmem_check(fd, p, why, whylen) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

struct p2p_shmem_ringctl *p2p_shmem_ring(struct p2p_shmem_seghdr *seg, int sender, char **data)
{
    char *base = (char *)seg + seg->hdrsize + (size_t)sender * (P2P_SHMEM_CTL + seg->ringsize);
    *data = base + P2P_SHMEM_CTL;
    return (struct p2p_shmem_ringctl *)base;
}

/* Map in the pages of a ring now (allocated if need be, and this process's
 * page tables filled): otherwise the first few thousand messages of a pair
 * each take a page fault every 64 cells.  Best effort: without
 * MADV_POPULATE_WRITE (Linux 5.14) the ring fills its pages as it goes. */
void p2p_shmem_prefault(struct p2p_shmem_ringctl *ctl)
{
#ifdef MADV_POPULATE_WRITE
    uintptr_t a = (uintptr_t)ctl & ~(uintptr_t)4095;
    size_t len = ((uintptr_t)ctl + P2P_SHMEM_CTL + p2p_shmem_ringsz - a + 4095) & ~(size_t)4095;
    if (madvise((void *)a, len, MADV_POPULATE_WRITE) != 0)
        kumi_log(3, "p2p/shmem: MADV_POPULATE_WRITE: %s", strerror(errno));
#else
    (void)ctl;
#endif
}

int p2p_shmem_attach(struct p2p_shmem_peer *p, int rank)
{
    char name[128], why[160];
    void *m;
    int fd;
    if (p->seg) return 0;
    if (p->attach_failed) return -1;
    /* the descriptor wire-up kept: the segment may have been unlinked since
     * (a rank that aborts removes the job's objects while the launcher is
     * still stopping the others), the file is still there for us */
    fd = p->segfd;
    p->segfd = -1;
    if (fd < 0) fd = p2p_shmem_open_peer(p, rank, name, sizeof name, why, sizeof why);
    if (fd < 0) {
        if (fd == -1)
            kumi_warn("p2p/shmem: segment /dev/shm%s of rank %d is not this job's (%s)", name, rank, why);
        p->attach_failed = 1;
        return -1;
    }
    m = mmap(NULL, p2p_shmem_seglen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        p->attach_failed = 1;
        return -1;
    }
    p->seg = m;
    p->seglen = p2p_shmem_seglen;
    if (p->seg->magic != P2P_SHMEM_MAGIC || p->seg->ringsize != p2p_shmem_ringsz) {
        munmap(m, p->seglen);
        p->seg = NULL;
        p->attach_failed = 1;
        return -1;
    }
    p->octl = p2p_shmem_ring(p->seg, p2p_shmem_me, &p->odata);
    p2p_shmem_prefault(p->octl);
    p->otail = atomic_load_explicit(&p->octl->tail, memory_order_relaxed);
    p->ohead = atomic_load_explicit(&p->octl->head, memory_order_acquire);
    return 0;
}
