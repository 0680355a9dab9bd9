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
 * a power of two plus one (p2p_shmem_cal_snap) in [P2P_SHMEM_CAL_FLOOR,
 * eager + 1] (eager + 1: no message the ring could take eagerly is pulled).  why (may be NULL) receives the
 * reason in one line. */
#define P2P_SHMEM_CAL_FLOOR (4 * 1024 + 1)
/* The switch for a crossing at x bytes: the power of two nearest x on a log
 * scale, plus one (1 for x <= 1). */
size_t p2p_shmem_cal_snap(double x);
size_t p2p_shmem_cal_choose(const struct p2p_shmem_cal *c, size_t eager, char *why, size_t whylen);

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
