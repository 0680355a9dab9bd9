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
 * cache).  The constants are fitted to ping-pong latency (tests/bench/
 * shm-band.sh -w 300 -m lat, 2 ranks bound, 10th percentile of the windows,
 * p2p_shmem_cma_min 8193 against 65537, 3 interleaved rounds, 2026-11-29),
 * us: 8193 B 3.30 pulled vs 2.73 through the ring, 10240 B 3.36 vs 2.99,
 * 12289 B 3.63 vs 3.85-4.16, 16385 B 3.92 vs 4.52-4.89, 24576 B 4.47 vs
 * 5.25-5.62, 32768 B 5.01 vs 6.43-6.90 (Open MPI, which pulls: 3.24, 3.30,
 * 3.56, 3.88, 4.44, 5.00; MPICH 2.78, 3.79, 4.05, 4.37, 4.94, 5.51).  The
 * paths cross at 12-15 KiB: the ring's copies cost 4.3 x the in-cache ones
 * (0.16 us/KiB against 0.037: the receiver's copy reads lines the sender's
 * core wrote), a pull about what the self read costs per byte (0.07 against
 * 0.064 us/KiB), and a lone pull 0.1 x the self read's fixed cost more (the
 * peer's address space, the RTS record and the ACK).  Latency alone decides:
 * a window of sends both ways (bibw) goes through the ring whatever cma_min
 * is, while it has room (p2p_shmem_stream_limit), and the pull is the
 * single copy that makes the 16-64 KiB latency Open MPI's.  (Before, 3.5 x
 * and 0.75, then 0.4 x to weigh bibw, put the switch at 27-42 KiB, where
 * latency at 16-32 KiB was 1.15-1.4 x Open MPI's.)
 *
 * The crossing itself is not stable: it is CMA's extra fixed cost divided by
 * the difference of two slopes of about the same size (4.3 x 0.037 against
 * 0.063-0.071 us/KiB), so a timing 10 % off moves it by a quarter or more,
 * and the self read's timings differ between processes by 20-30 % on a
 * shared (virtual) machine (12 processes, 2026-11-29: 1.48-1.99 us at 4 KiB,
 * 3.27-4.31 at 32, the copies within 0.13-0.17 / 1.15-1.36: crossings of
 * 14.6-20.9 KiB, launch to launch and rank to rank).  So the switch is the
 * power of two nearest the crossing on a log scale, plus one (crossings of
 * 11.3-22.6 KiB all give 16385; where a pull was cheap, about 3 KiB: the
 * floor, 4097): the same protocol for a size launch after launch unless the
 * machine changes by more than a factor of 1.4.  The sender alone
 * applies the switch (eager_limit, rget), the receiver follows what each
 * record says, so two ranks that chose differently still agree on every
 * message. */
#define _GNU_SOURCE
#include "p2p_shmem_cal.h"
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define P2P_SHMEM_CAL_XCORE 4.3
#define P2P_SHMEM_CAL_FIXED 0.1

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

size_t p2p_shmem_cal_choose(const struct p2p_shmem_cal *c, size_t eager, char *why, size_t whylen)
{
    const double span = (double)(P2P_SHMEM_CAL_BIG - P2P_SHMEM_CAL_SMALL);
    double br = (c->rd[1] - c->rd[0]) / span, bc = (c->cp[1] - c->cp[0]) / span;
    double ar = c->rd[0] - br * P2P_SHMEM_CAL_SMALL, ac = c->cp[0] - bc * P2P_SHMEM_CAL_SMALL;
    double fixed, slope, x;
    size_t n, top = eager + 1 > eager ? eager + 1 : eager;
    char tmp[8];
    if (!why) {
        why = tmp;
        whylen = sizeof tmp;
    }
    if (ar < 0) ar = 0;                          /* noise: no fixed cost is negative */
    if (ac < 0) ac = 0;
    if (br < 0) br = 0;
    fixed = (1 + P2P_SHMEM_CAL_FIXED) * ar - P2P_SHMEM_CAL_XCORE * ac;   /* CMA's extra fixed cost */
    slope = P2P_SHMEM_CAL_XCORE * bc - br;                               /* the ring's extra per byte */
    if (!(c->rd[0] > 0 && c->rd[1] > 0 && c->cp[1] > 0) || slope <= 0) {
        snprintf(why, whylen, "CMA never cheaper (read %.2f/%.2f us, copies %.2f/%.2f us at %d/%d KiB)",
                 c->rd[0], c->rd[1], c->cp[0], c->cp[1], P2P_SHMEM_CAL_SMALL / 1024, P2P_SHMEM_CAL_BIG / 1024);
        return top;
    }
    x = fixed / slope;
    n = p2p_shmem_cal_snap(x);
    if (n < P2P_SHMEM_CAL_FLOOR) n = P2P_SHMEM_CAL_FLOOR;
    if (n > top || x >= (double)eager) n = top;
    snprintf(why, whylen, "paths cross at %.0f bytes, taken as %zu (self read %.2f/%.2f us, ring copies "
             "%.2f/%.2f us at %d/%d KiB, x %.1f across cores)", x, n, c->rd[0], c->rd[1], c->cp[0], c->cp[1],
             P2P_SHMEM_CAL_SMALL / 1024, P2P_SHMEM_CAL_BIG / 1024, P2P_SHMEM_CAL_XCORE);
    return n;
}
