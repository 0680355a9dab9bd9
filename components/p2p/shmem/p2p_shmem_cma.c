/* p2p/shmem CMA: detecting at start-up whether process_vm_readv may be used,
 * and the receiver-pulled transfers (a CMA record read straight into the
 * receive buffer, the RGET rendezvous of rget() and pull()). */
#include "p2p_shmem.h"
#include "p2p_shmem_cal.h"

/* A pulled RTS waiting for its receive (handle given to the request layer). */
struct p2p_shmem_pull {
    uint32_t magic;
    int peer;
    size_t len;
    struct p2p_shmem_cmadesc d;
};
#define P2P_SHMEM_PULL_MAGIC 0x5348504cu     /* "SHPL" */

int p2p_shmem_yama(void)
{
    int v = -1;
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    if (f) {
        if (fscanf(f, "%d", &v) != 1) v = -1;
        fclose(f);
    }
    return v;
}

/* Start-up detection: may this process use process_vm_readv at all? */
int p2p_shmem_cma_detect(char *why, size_t whylen)
{
    uint64_t v = 0;
    struct iovec l = { &v, sizeof v }, r = { (void *)&p2p_shmem_probe, sizeof v };
    int scope;
    if (strcmp(p2p_shmem_cma_mode, "off") == 0) {
        snprintf(why, whylen, "off (p2p_shmem_cma=off): pipelined two-copy through the rings");
        return 0;
    }
    if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != (ssize_t)sizeof v || v != P2P_SHMEM_MAGIC) {
        snprintf(why, whylen, "refused (process_vm_readv: %s): pipelined two-copy through the rings",
                 strerror(errno));
        return 0;
    }
    scope = p2p_shmem_yama();
    if (scope >= 2) {
        snprintf(why, whylen, "refused (Yama ptrace_scope=%d): pipelined two-copy through the rings",
                 scope);
        return 0;
    }
    if (p2p_shmem_cma_min_set)
        snprintf(why, whylen, "single copy with process_vm_readv (CMA) for payloads >= %zu bytes%s",
                 p2p_shmem_cma_min_set, scope == 1 ? " (Yama scope 1: PR_SET_PTRACER_ANY)" : "");
    else
        snprintf(why, whylen, "single copy with process_vm_readv (CMA) for payloads >= "
                 "p2p_shmem_cma_min_effective bytes (measured at start-up)%s",
                 scope == 1 ? " (Yama scope 1: PR_SET_PTRACER_ANY)" : "");
    return 1;
}

/* p2p_shmem_cma_min: the user's value, else measured (p2p_shmem_cal.c)
 * once per process, the first time it has a peer to pull from (or for
 * kumi_info); SIZE_MAX (0 in p2p_shmem_cma_min_effective): nothing pulled. */
void p2p_shmem_cma_choose(int ncma)
{
    static int chosen;
    static size_t effective;
    char why[240];
    if (!chosen) {
        struct p2p_shmem_cal c;
        /* a cma_min the user sets holds throughout, unless p2p_shmem_cma_adapt
         * is set too (then the state switch still needs its reference) */
        int adapt_set = p2p_shmem_cma_adapt && kumi_param_is_default("p2p_shmem_cma_adapt") == 0;
        if (p2p_shmem_cma_min_set && (!adapt_set || !p2p_shmem_cma_ok)) {
            p2p_shmem_cma_min = p2p_shmem_cma_min_set;
            snprintf(why, sizeof why, "set by p2p_shmem_cma_min");
            chosen = 1;
        } else if (!p2p_shmem_cma_ok) {
            p2p_shmem_cma_min = SIZE_MAX;
            snprintf(why, sizeof why, "no CMA on this rank");
            chosen = 1;
        } else if (ncma <= 0) {
            p2p_shmem_cma_min = SIZE_MAX;         /* measured later if a peer appears (a restart) */
            snprintf(why, sizeof why, "no same-host peer to pull from");
        } else if (p2p_shmem_cal_measure(&c) != 0) {
            p2p_shmem_cma_min = p2p_shmem_cma_min_set ? p2p_shmem_cma_min_set : SIZE_MAX;
            snprintf(why, sizeof why, "process_vm_readv of this process failed: %s", strerror(errno));
            chosen = 1;
        } else {
            char how[200];
            p2p_shmem_cma_min = p2p_shmem_cal_choose(&c, how, sizeof how);
            snprintf(why, sizeof why, "%s; measured in %.0f us", how, c.took);
            if (p2p_shmem_cma_min_set) {
                p2p_shmem_cma_min = p2p_shmem_cma_min_set;
                snprintf(why, sizeof why, "set by p2p_shmem_cma_min; the state switch's reference "
                         "measured in %.0f us (p2p_shmem_cma_adapt set)", c.took);
            }
            chosen = 1;
            p2p_shmem_cal_job = c;
            /* the state switch's reference: one copy of BIG bytes in cache, per KiB */
            if (p2p_shmem_cma_adapt)
                p2p_shmem_sw_ref = c.cp[1] / 2.0 / (P2P_SHMEM_CAL_BIG / 1024.0);
        }
        effective = p2p_shmem_cma_min == SIZE_MAX ? 0 : p2p_shmem_cma_min;
        if (chosen || ncma > 0)
            kumi_log(1, "p2p/shmem: CMA from %zu bytes%s (%s)", effective,
                     effective ? "" : " (none: nothing pulled)", why);
    }
    kumi_param_register_size("p2p", "shmem", "cma_min_effective", effective,
                             "Read-only: the smallest message pulled with CMA in this process, "
                             "p2p_shmem_cma_min or, when that is 0, measured at start-up "
                             "(0: none; setting it changes nothing); towards a receiver whose "
                             "copies out of the ring turned slow, less (p2p_shmem_cma_adapt: "
                             "KUMI_VERBOSE=2 prints each change)",
                             KUMI_LEVEL_TUNER, &effective);
}

/* The pid to read the peer's memory from: the one of the wire-up (after a
 * restart from a checkpoint, a descriptor kept in the unexpected queue names
 * the pid it had before), else the descriptor's. */
static int p2p_shmem_cma_pid(int peer, const struct p2p_shmem_cmadesc *d)
{
    return p2p_shmem_peers && p2p_shmem_peers[peer].pid > 0 ? p2p_shmem_peers[peer].pid : d->pid;
}

/* Copy len bytes (at most rx->cap) of the peer's memory at d into rx, finish
 * rx and answer the sender.  */
static void p2p_shmem_cma_into(int peer, const struct p2p_shmem_cmadesc *d, size_t len, struct kumi_rx *rx)
{
    int ok = 1;
    int pid = p2p_shmem_cma_pid(peer, d);
    if (rx) {
        size_t want = rx->dst ? (len < rx->cap ? len : rx->cap) : 0;
        size_t got = 0;
        rx->got = 0;
        while (got < want) {
            struct iovec l = { rx->dst + got, want - got };
            struct iovec r = { (void *)(uintptr_t)(d->addr + got), want - got };
            ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
            if (n <= 0) {
                if (n < 0 && errno == EINTR) continue;
                ok = 0;
                kumi_warn("p2p/shmem: process_vm_readv from rank %d: %s", peer,
                          n < 0 ? strerror(errno) : "short read");
                break;
            }
            got += (size_t)n;
        }
        rx->got = rx->len;
        kumi_p2p_rx_done(rx);
    }
    p2p_shmem_send_ack(peer, d->cookie, ok);
}

int p2p_shmem_do_cma(int peer, struct p2p_shmem_peer *p, const struct p2p_shmem_rec *rec,
                     const struct p2p_shmem_cmadesc *d)
{
    (void)p;
    if (rec->hdr.kind == KUMI_HDR_RTS) {     /* read when a receive matches: pull() */
        struct p2p_shmem_pull *pl = malloc(sizeof *pl);
        struct kumi_hdr h = rec->hdr;
        if (!pl) {
            kumi_warn("p2p/shmem: out of memory for a rendezvous from rank %d; dropped", peer);
            p2p_shmem_send_ack(peer, d->cookie, 0);
            return 1;
        }
        pl->magic = P2P_SHMEM_PULL_MAGIC;
        pl->peer = peer;
        pl->len = (size_t)rec->hdr.len;
        pl->d = *d;
        h.rreq = (uint64_t)(uintptr_t)pl;
        kumi_p2p_incoming(peer, &h);
        return 1;
    }
    struct kumi_rx *rx = kumi_p2p_incoming(peer, &rec->hdr);
    if (rx) rx->len = (size_t)rec->hdr.paylen;
    p2p_shmem_cma_into(peer, d, (size_t)rec->hdr.paylen, rx);
    return 1;
}

int p2p_shmem_rget(int peer, size_t len)
{
    if (!p2p_shmem_reaches(peer)) return 0;
    struct p2p_shmem_peer *p = &p2p_shmem_peers[peer];
    if (len < p2p_shmem_peer_cma_min(p)) return 0;
    if (!p->seg && p2p_shmem_attach(p, peer) != 0) return 0;
    return p2p_shmem_peer_cma(p);
}

/* Pulls the request layer asked for, gathered into one process_vm_readv.
 * A window of rendezvous from one peer (mpibench's bibw of 64 KiB: 49 of 64
 * pulled) asks for its pulls one after the other while it flushes after a
 * round of progress; a system call per message pays the fixed cost of
 * process_vm_readv (about 1.2 us of the 5.3 a 64 KiB read takes here) each
 * time.  So pull() keeps up to P2P_SHMEM_PULL_BATCH of them from one peer
 * (counted in p2p_shmem_nqueued, so progress() and busy() see them) and the
 * request layer's pull_flush() at the end of its pass (p2p contract 1.10; the
 * next progress() for a library that does not call it) reads them with one
 * call of as many iovecs, then completes and answers them in order; a short
 * read falls back to one call each.  Once
 * they hold P2P_SHMEM_PULL_BYTES, they are read at once (the fixed cost is
 * paid off, and the first of them should not wait for many more bytes).
 * bibw, 2 ranks bound, 10th percentile of 100 windows (tests/bench/
 * bibw_counters.c), 5 interleaved rounds on a loaded machine, GB/s: 65535 B
 * 25.4 vs 20.6, 65536 B 25.7 vs 21.3, 65537 B 24.0 vs 20.0, 131072 B 21.7 vs
 * 17.3 (MPICH 18.6, 18.8, 11.0, 19.6); ping-pong latency unchanged. */
#define P2P_SHMEM_PULL_BATCH 16
#define P2P_SHMEM_PULL_BYTES ((size_t)512 << 10)
static struct {
    struct p2p_shmem_pull *pl;
    struct kumi_rx *rx;
} pull_batch[P2P_SHMEM_PULL_BATCH];
static int pull_n, pull_peer = -1;
static size_t pull_bytes;

int p2p_shmem_pulls_pending(void)
{
    return pull_n;
}

void p2p_shmem_pull_flush(void)
{
    struct iovec l[P2P_SHMEM_PULL_BATCH], r[P2P_SHMEM_PULL_BATCH];
    struct p2p_shmem_pull *pl[P2P_SHMEM_PULL_BATCH];
    struct kumi_rx *rx[P2P_SHMEM_PULL_BATCH];
    int n = pull_n, peer = pull_peer, pid;
    size_t total = 0;
    ssize_t got;
    if (n == 0) return;
    for (int i = 0; i < n; i++) {                /* taken out first: completions may pull again */
        pl[i] = pull_batch[i].pl;
        rx[i] = pull_batch[i].rx;
        size_t want = pl[i]->len < rx[i]->cap ? pl[i]->len : rx[i]->cap;
        l[i].iov_base = rx[i]->dst;
        l[i].iov_len = want;
        r[i].iov_base = (void *)(uintptr_t)pl[i]->d.addr;
        r[i].iov_len = want;
        total += want;
    }
    pull_n = 0;
    pull_bytes = 0;
    p2p_shmem_nqueued -= (size_t)n;
    pid = p2p_shmem_cma_pid(peer, &pl[0]->d);
    got = process_vm_readv(pid, l, (unsigned long)n, r, (unsigned long)n, 0);
    for (int i = 0; i < n; i++) {
        if (got == (ssize_t)total) {
            rx[i]->got = rx[i]->len;
            kumi_p2p_rx_done(rx[i]);
            p2p_shmem_send_ack(peer, pl[i]->d.cookie, 1);
        } else {                                     /* short or failed: one at a time, as before */
            p2p_shmem_cma_into(peer, &pl[i]->d, pl[i]->len, rx[i]);
        }
        free(pl[i]);
    }
}

void p2p_shmem_pull(int peer, uint64_t handle, struct kumi_rx *rx)
{
    struct p2p_shmem_pull *pl = (struct p2p_shmem_pull *)(uintptr_t)handle;
    if (!pl || pl->magic != P2P_SHMEM_PULL_MAGIC || pl->peer != peer) {
        kumi_warn("p2p/shmem: pull from rank %d of an unknown rendezvous", peer);
        return;
    }
    pl->magic = 0;
    if (!rx || !rx->dst || !p2p_shmem_seg) {
        p2p_shmem_cma_into(peer, &pl->d, pl->len, rx);   /* rx NULL (cancelled): only the answer */
        free(pl);
        return;
    }
    if (pull_n == P2P_SHMEM_PULL_BATCH || (pull_n && pull_peer != peer)) p2p_shmem_pull_flush();
    pull_batch[pull_n].pl = pl;
    pull_batch[pull_n].rx = rx;
    pull_n++;
    pull_peer = peer;
    pull_bytes += pl->len;
    p2p_shmem_nqueued++;
    if (pull_bytes >= P2P_SHMEM_PULL_BYTES) p2p_shmem_pull_flush();
}
