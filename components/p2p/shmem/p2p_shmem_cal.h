/* p2p/shmem: choosing p2p_shmem_cma_min at start-up (p2p_shmem_cal.c).
 * Self-contained (no component state), so tests/unit/test_shmem_cal.c can
 * include p2p_shmem_cal.c. */
#ifndef P2P_SHMEM_CAL_H
#define P2P_SHMEM_CAL_H
#include <stddef.h>

/* The two sizes timed, and what is timed at each (microseconds, the
 * minimum of P2P_SHMEM_CAL_REPS tries). */
#define P2P_SHMEM_CAL_SMALL 4096
#define P2P_SHMEM_CAL_BIG   32768
#define P2P_SHMEM_CAL_REPS  16
struct p2p_shmem_cal {
    double rd[2];      /* process_vm_readv of this process, SMALL and BIG bytes */
    double cp[2];      /* the ring's two copies of the same bytes (in, then out) */
    double took;       /* the whole measurement, microseconds */
};

/* Time both paths in this process.  0, or -1 when process_vm_readv fails
 * (CMA unusable: *c unchanged). */
int p2p_shmem_cal_measure(struct p2p_shmem_cal *c);
/* The smallest message worth pulling with CMA given the measurement c:
 * a power of two plus one (p2p_shmem_cal_snap), at least
 * P2P_SHMEM_CAL_FLOOR, above the eager limit too (the messages between go
 * by rendezvous through the ring), or SIZE_MAX where CMA costs more per
 * byte than the ring (nothing pulled).  why (may be NULL) receives the
 * reason in one line. */
#define P2P_SHMEM_CAL_FLOOR (4 * 1024 + 1)
/* The switch for a crossing at x bytes: the power of two nearest x on a log
 * scale, plus one (1 for x <= 1). */
size_t p2p_shmem_cal_snap(double x);
size_t p2p_shmem_cal_choose(const struct p2p_shmem_cal *c, char *why, size_t whylen);
/* The same with the ring's copies across cores costing xcore x the copies
 * in one core's cache (p2p_shmem_cal_choose: P2P_SHMEM_CAL_XCORE), the
 * crossing rounded to the nearest multiple of grid, plus one (0: snapped to
 * a power of two plus one, as p2p_shmem_cal_choose does). */
size_t p2p_shmem_cal_choose_x(const struct p2p_shmem_cal *c, double xcore, size_t grid, char *why, size_t whylen);

/* The switch that follows the machine's state (p2p_shmem_cal.c, "The
 * state"): the receiver times, now and then, its copy of a payload out of
 * a ring (the lines the sender's core wrote) and compares the least time of
 * a window of such copies with one copy in its own cache (ref, us per KiB,
 * from the start-up measurement); the ratio passes a verdict with
 * hysteresis: slow above P2P_SHMEM_SW_SLOW, fast again below
 * P2P_SHMEM_SW_FAST. */
#define P2P_SHMEM_SW_BYTES 8192        /* payloads timed: at least this many bytes */
#define P2P_SHMEM_SW_EVERY 16          /* one in this many of them while fast, */
#define P2P_SHMEM_SW_EVERY_SLOW 4      /* while slow (few then come through the ring) */
#define P2P_SHMEM_SW_PIECES 2          /* the first pieces of a streamed payload timed: 4 clock
                                        * readings a payload (35-100 ns each on the virtual machine) */
#define P2P_SHMEM_SW_WIN   8           /* samples per window (the least of them counts) */
#define P2P_SHMEM_SW_SLOW  3.5           /* defaults of p2p_shmem_cma_adapt_slow / _fast */
#define P2P_SHMEM_SW_FAST  2.3
#define P2P_SHMEM_SW_PROBE 32          /* slow: one message in this many still through the ring */
struct p2p_shmem_sw {
    double best;                       /* the least us per KiB of this window */
    unsigned n;                        /* samples in this window */
    unsigned skip;                     /* records of SW_BYTES or more since the last timed */
    unsigned verdict;                  /* 0 fast (or not known yet), else slow: the ratio x 100 */
    double last;                       /* the ratio of the last full window */
};
/* One sample: bytes copied out of the ring in us (ref: one copy in cache,
 * us per KiB); a window whose least ratio is above slow makes the verdict
 * slow, one below fast (at most two thirds of slow) fast again.  Returns 1
 * when the window closed and the verdict changed (s->verdict). */
int p2p_shmem_sw_add(struct p2p_shmem_sw *s, size_t bytes, double us, double ref, double slow, double fast);
/* Is this record (payload of bytes) one to time?  Counts it. */
static inline int p2p_shmem_sw_pick(struct p2p_shmem_sw *s, size_t bytes)
{
    if (bytes < P2P_SHMEM_SW_BYTES) return 0;
    if (++s->skip < (s->verdict ? P2P_SHMEM_SW_EVERY_SLOW : P2P_SHMEM_SW_EVERY)) return 0;
    s->skip = 0;
    return 1;
}
/* The ring's copies across cores against the in-cache ones (the factor
 * of p2p_shmem_cal_choose_x, P2P_SHMEM_CAL_XCORE at start-up), from a slow
 * verdict (the ratio x 100): P2P_SHMEM_SW_XCORE x the ratio; the crossing
 * rounded to P2P_SHMEM_SW_GRID (see p2p_shmem_cal.c, "The state"). */
#define P2P_SHMEM_SW_XCORE 1.15
#define P2P_SHMEM_SW_GRID  4096
/* The least slow switch: up to 12 KiB the ring (its eager send completes
 * at once) stayed ahead of a pull in the slow state's ping-pong (8193 B:
 * 4.3-5.1 us through the ring, MPICH 6.2-11.6; pulled from 8193 by the
 * verdicts of ratios over 6, 5.8-7.1) */
#define P2P_SHMEM_SW_FLOOR (12 * 1024 + 1)
static inline double p2p_shmem_sw_xcore(unsigned verdict)
{
    return P2P_SHMEM_SW_XCORE * verdict / 100.0;
}

/* The component's side (p2p_shmem_cma.c): p2p_shmem_cma_min_set is the
 * parameter as given (0: choose), p2p_shmem_cma_min the value in use
 * (SIZE_MAX until chosen, and where nothing is pulled). */
extern size_t p2p_shmem_cma_min_set;
/* Choose p2p_shmem_cma_min once per process (ncma: the same-host peers this
 * rank can read with CMA; 0: nothing measured, nothing pulled unless the
 * user set cma_min), say so under KUMI_VERBOSE and publish the value as the
 * read-only p2p_shmem_cma_min_effective. */
void p2p_shmem_cma_choose(int ncma);
#endif
