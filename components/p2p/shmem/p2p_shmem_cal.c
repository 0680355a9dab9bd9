/* p2p/shmem: choosing p2p_shmem_cma_min at start-up, when the user left it
 * at 0.  A message of n bytes to a peer that can read the sender goes either
 * through the ring (copied in by the sender, out by the receiver: two
 * copies, the second across cores) or by a rendezvous the receiver pulls in
 * one process_vm_readv.  What CMA costs differs between machines far more
 * than a copy does (page pinning and system calls: virtual machines,
 * mitigations): 8 KiB pulled cost 1.31 us of latency on the machine the old
 * constant (8193) was chosen on, 3.25 on another, where the ring was faster
 * up to 32 KiB.  So each process times, once, a process_vm_readv of its own
 * memory and the ring's two copies, at 4 and 32 KiB (0.1-0.4 ms), fits a
 * line to each and puts the switch where the lines of the two paths cross:
 *
 *   CMA:  (1 + P2P_SHMEM_CAL_FIXED) * a_r + b_r * n
 *   ring: P2P_SHMEM_CAL_XCORE * (a_c + b_c * n)
 *
 * (a_r + b_r n: the self read; a_c + b_c n: the two copies in one core's
 * cache).  The constants come from mpibench on 2 bound ranks (2026-11-29,
 * the second machine).  The ring's copies cost 3.5 x the in-cache ones (the
 * receiver's copy reads lines the sender's core wrote; latency 8-32 KiB:
 * 0.14 us/KiB against 0.037), a pull about what the self read costs per
 * byte (0.063 against 0.071 us/KiB).  A lone pull also pays the peer's
 * address space, the RTS record and the wake-up: about 0.75 x the self
 * read's fixed cost more in latency, where the two paths crossed at 32 KiB
 * (4.69 us through the ring, 4.75 pulled); in a window both ways (bibw) that
 * is hidden, and the ring fell behind from 24-32 KiB (32 KiB: 10.8 against
 * 14.1 GB/s pulled; 16-24 KiB: alike).  P2P_SHMEM_CAL_FIXED = 0.4 puts the
 * switch between the two, at about 27 KiB there: latency as good as either
 * path's up to 24 KiB, bibw the pull's from 32 KiB.
 *
 * What this cannot see: the factor across cores is not a constant of the
 * machine.  On the same (virtual, shared) machine, in two states that came
 * and went minute by minute (load average 4-6 in both; the virtual CPUs
 * placed near each other on the host or not, we suppose), with the
 * in-process timings unchanged (self read 1.5/3.3 us, copies 0.13/1.15):
 * ping-pong through the ring 16385 B 1.4-1.5 us, 32768 B 2.1-2.5, 65535 B
 * 4.4, pulled 3.5, 4.6-5.0, 6.8 (MPICH 3.7, 4.8; Open MPI 3.7, 5.0, 7.2): the
 * ring ahead to 64 KiB (a factor of about 1.5); or through the ring 16385 B
 * 4.5-4.9 us, 32768 B 6.4-7.8, pulled 3.9, 5.0 (Open MPI 3.9, 5.0): the pull
 * ahead from 12 KiB (a factor of 4.3).  (tests/bench/shm-band.sh -w 200-300
 * -m lat, p2p_shmem_cma_min 16385 or 8193 against 65537, 2026-11-29.)  The
 * constants here keep the switch at 32769, where the first state's latency
 * is 0.45-0.55 x the peers' at 16-32 KiB and the second's 1.2-1.5 x; fitted
 * to the second (4.3, 0.1) the switch is 16385, 1.0-1.06 x the better peer
 * in both, but 2.3-2.6 x the first state's ring at 16-32 KiB.  Telling the
 * two apart needs a timing across the two ranks' cores, repeated (the state
 * changes within a job): the state switch below.
 *
 * The crossing itself is not stable: it is CMA's extra fixed cost divided by
 * the difference of two slopes of about the same size (3.5 x 0.037 against
 * 0.063-0.071 us/KiB), so a timing 10 % off moves it by a third or more, and
 * the self read's timings differ between processes by 20-30 % on a shared
 * (virtual) machine (12 processes, 2026-11-29: 1.48-1.99 us at 4 KiB,
 * 3.27-4.31 at 32, the copies within 0.13-0.17 / 1.15-1.36: crossings of
 * 27-42 KiB, launch to launch and rank to rank).  So the switch is the power
 * of two nearest the crossing on a log scale, plus one (crossings of 23-45
 * KiB all give 32769; about 6 KiB on the machine where a pull was cheap:
 * 8193, the old constant): the same protocol for a size launch after launch
 * unless the machine changes by more than a factor of 1.4.  The sender alone
 * applies the switch (eager_limit, rget), the receiver follows what each
 * record says, so two ranks that chose differently still agree on every
 * message.
 *
 * The crossing applies above the eager limit too: a message between the
 * eager limit and the switch goes by rendezvous through the ring (in
 * pieces, the receiver copying one out while the sender writes the next),
 * and where CMA costs more per byte than the ring's copies (the slope of
 * the pull at least P2P_SHMEM_CAL_XCORE x the copies') nothing is pulled.
 * Up to 2026-11-29 every message above the eager limit was pulled.  On the
 * AMD EPYC guest of 2026-11-30 (self read 1.03-1.04/2.59-2.65 us, copies
 * 0.07-0.08/0.51-0.52 us: never cheaper), through the ring against pulled,
 * 2 ranks bound (tests/bench/shm-band.sh, p2p_shmem_cma=off against the
 * default, 5 rounds): fast state 128 KiB 2.6-2.9 against 9.8-9.9 us, 1 MiB
 * 28.7-28.9 against 72.6-73.1 us (MPICH 73.5-77.9, Open MPI 79.0-84.8),
 * bi-directional bandwidth at 1 MiB 32-37 against 20-24 GB/s; in a run in
 * the slow state 1 MiB 45.3 against 74.1 us, bandwidth 1-4 MiB 1.9 x,
 * bi-directional 1-4 MiB 1.08-1.14 x, 256 KiB 0.73 x.
 *
 * The state (p2p_shmem_cma_adapt, p2p_shmem_sw_*; off by default since
 * 2026-11-30: measured with the ring's pieces of 4 KiB, where its copies
 * in the slow state lost to the pulls; with pieces of 16 KiB (p2p_shmem.c)
 * the ring stayed ahead there too, and the switch cost what the pulls
 * cost: the EPYC guest in the slow state, 0 B 0.23 us, six interleaved
 * runs of shm-band.sh -r 5, cma_adapt 1 against 0: latency 32 KiB 3.4-4.4
 * against 2.1-2.2 us, 64 KiB 6.3-6.4 against 3.3-3.4, 1 MiB 77.5-79.5
 * against 43.7-45.3 (MPICH 76-81, Open MPI 82-87), bi-directional
 * bandwidth 32-128 KiB 0.66-0.83 x; alike below 32 KiB and in the fast
 * state).  What follows is what it does when set.  The job's own traffic
 * shows the state: a receiver's copy of a payload out of the ring reads
 * lines the sender's core wrote, and costs what moving them between the two
 * cores costs now.  So the receiver times the first P2P_SHMEM_SW_PIECES
 * pieces of one in P2P_SHMEM_SW_EVERY streamed payloads of P2P_SHMEM_SW_BYTES
 * or more (a lone message's; the copies only, not the waits for the pieces;
 * a payload written whole is taken while both ranks copy a window, at 3.5-9
 * x in the fast state, or lands in a fresh buffer of the unexpected queue,
 * up to 30 x: not timed), takes the least of a window of P2P_SHMEM_SW_WIN
 * of them per KiB (a sample that lost its core counts for nothing unless
 * all of the window did) and divides it by one copy in its own cache (cp[1]
 * / 2 of the start-up measurement).  Measured on the shared virtual machine
 * above (2026-11-29, mpibench lat and bibw at 8-64 KiB, the state probed
 * with lat 0 B: 0.09 us fast, 0.28 slow): windows of 1.25-2.5 in the fast
 * state, 4.4-8 in the slow one; the verdict turns slow above 3.5 and fast
 * again below 2.3 (parameters cma_adapt_slow / _fast; between the two it
 * stays, so it does not oscillate).  The receiver publishes a verdict per
 * sender in its segment (one word, written when it changes: the ratio of
 * the window that turned it slow); the sender reads it in eager_limit (one
 * load of a line that stays in its cache).  Towards a slow receiver it
 * pulls from the crossing of this model with the ring's factor at
 * P2P_SHMEM_SW_XCORE x the ratio, rounded to P2P_SHMEM_SW_GRID, between
 * P2P_SHMEM_SW_FLOOR and the start-up choice (12289 at ratios 4.5-7 on that
 * machine, 16385-20481 at 3.5-4.3; p2p_shmem_cma_min_slow overrides it),
 * sends no stream through the ring, and sends one message in
 * P2P_SHMEM_SW_PROBE through the ring still so that the receiver goes on
 * timing it.  Measured there in the slow state (the ring at 16 KiB 10-40 us
 * then, as loaded; lat medians of 13-15 rounds, base / with the switch /
 * MPICH): 16384 B 14.6/6.8/7.5 and 40.4/18.4/18.7 us, 32768 B 40.0/5.8/5.8
 * and 85.4/19.6/22.6; bibw 16-64 KiB 1.0-2.9 against 9.5-17 GB/s (MPICH
 * 2.8-14.6).  The fast state's figures stay the base's (0.98-1.03 x). */
#define _GNU_SOURCE
#include "p2p_shmem_cal.h"
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define P2P_SHMEM_CAL_XCORE 3.5
#define P2P_SHMEM_CAL_FIXED 0.4

static double cal_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

int p2p_shmem_cal_measure(struct p2p_shmem_cal *c)
{
    const size_t sz[2] = { P2P_SHMEM_CAL_SMALL, P2P_SHMEM_CAL_BIG };
    const size_t ringlen = 2 * P2P_SHMEM_CAL_BIG;
    size_t len = 2 * P2P_SHMEM_CAL_BIG + ringlen, off = 0;
    double t0 = cal_now(), rd[2] = { 1e30, 1e30 }, cp[2] = { 1e30, 1e30 };
    unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return -1;
    unsigned char *src = m, *dst = m + P2P_SHMEM_CAL_BIG, *ring = m + 2 * P2P_SHMEM_CAL_BIG;
    memset(m, 0x5a, len);                       /* every page present, as a sender's buffer is */
    for (int rep = 0; rep < P2P_SHMEM_CAL_REPS; rep++)
        for (int k = 0; k < 2; k++) {
            struct iovec l = { dst, sz[k] }, r = { src, sz[k] };
            double a = cal_now();
            ssize_t got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
            double b = cal_now() - a;
            if (got != (ssize_t)sz[k]) {
                munmap(m, len);
                return -1;
            }
            if (b < rd[k]) rd[k] = b;
            a = cal_now();
            memcpy(ring + off, src, sz[k]);
            __asm__ __volatile__("" ::: "memory");
            memcpy(dst, ring + off, sz[k]);
            __asm__ __volatile__("" ::: "memory");
            b = cal_now() - a;
            if (b < cp[k]) cp[k] = b;
            off = (off + sz[k]) % ringlen;
            if (off + P2P_SHMEM_CAL_BIG > ringlen) off = 0;
        }
    munmap(m, len);
    for (int k = 0; k < 2; k++) {
        c->rd[k] = rd[k];
        c->cp[k] = cp[k];
    }
    c->took = cal_now() - t0;
    return 0;
}

size_t p2p_shmem_cal_snap(double x)
{
    size_t p = 1;
    if (!(x > 1)) return 1;
    if (x >= (double)((size_t)1 << 40)) return ((size_t)1 << 40) + 1;
    while ((double)p * 2 <= x) p *= 2;           /* p <= x < 2p */
    /* the nearer of p and 2p on a log scale: 2p from p * sqrt(2) */
    return (x * x >= 2.0 * (double)p * (double)p ? 2 * p : p) + 1;
}

size_t p2p_shmem_cal_choose(const struct p2p_shmem_cal *c, char *why, size_t whylen)
{
    return p2p_shmem_cal_choose_x(c, P2P_SHMEM_CAL_XCORE, 0, why, whylen);
}

size_t p2p_shmem_cal_choose_x(const struct p2p_shmem_cal *c, double xcore, size_t grid, char *why, size_t whylen)
{
    const double span = (double)(P2P_SHMEM_CAL_BIG - P2P_SHMEM_CAL_SMALL);
    double br = (c->rd[1] - c->rd[0]) / span, bc = (c->cp[1] - c->cp[0]) / span;
    double ar = c->rd[0] - br * P2P_SHMEM_CAL_SMALL, ac = c->cp[0] - bc * P2P_SHMEM_CAL_SMALL;
    double fixed, slope, x;
    size_t n;
    char tmp[8];
    if (!why) {
        why = tmp;
        whylen = sizeof tmp;
    }
    if (ar < 0) ar = 0;                          /* noise: no fixed cost is negative */
    if (ac < 0) ac = 0;
    if (br < 0) br = 0;
    fixed = (1 + P2P_SHMEM_CAL_FIXED) * ar - xcore * ac;   /* CMA's extra fixed cost */
    slope = xcore * bc - br;                               /* the ring's extra per byte */
    if (!(c->rd[0] > 0 && c->rd[1] > 0 && c->cp[1] > 0) || slope <= 0) {
        snprintf(why, whylen, "CMA never cheaper: the ring at every size (read %.2f/%.2f us, copies %.2f/%.2f us "
                 "at %d/%d KiB)", c->rd[0], c->rd[1], c->cp[0], c->cp[1], P2P_SHMEM_CAL_SMALL / 1024,
                 P2P_SHMEM_CAL_BIG / 1024);
        return SIZE_MAX;
    }
    x = fixed / slope;
    if (grid && x < (double)((size_t)1 << 40)) n = (size_t)((x + (double)grid / 2) / (double)grid) * grid + 1;
    else n = p2p_shmem_cal_snap(x);
    if (n < P2P_SHMEM_CAL_FLOOR) n = P2P_SHMEM_CAL_FLOOR;
    snprintf(why, whylen, "paths cross at %.0f bytes, taken as %zu (self read %.2f/%.2f us, ring copies "
             "%.2f/%.2f us at %d/%d KiB, x %.1f across cores)", x, n, c->rd[0], c->rd[1], c->cp[0], c->cp[1],
             P2P_SHMEM_CAL_SMALL / 1024, P2P_SHMEM_CAL_BIG / 1024, xcore);
    return n;
}

int p2p_shmem_sw_add(struct p2p_shmem_sw *s, size_t bytes, double us, double ref, double slow, double fast)
{
    double perk = us * 1024.0 / (double)bytes;
    unsigned v;
    if (!(ref > 0) || !(us > 0)) return 0;
    if (s->n == 0 || perk < s->best) s->best = perk;
    if (++s->n < P2P_SHMEM_SW_WIN) return 0;
    s->n = 0;
    s->last = s->best / ref;
    if (fast > slow * 2 / 3) fast = slow * 2 / 3;
    if (s->verdict ? s->last >= fast : s->last <= slow) return 0;
    v = s->verdict ? 0 : (unsigned)(s->last * 100.0 + 0.5);
    s->verdict = v;
    return 1;
}
