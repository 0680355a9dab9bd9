/* Unit test of p2p/shmem's choice of p2p_shmem_cma_min at start-up
 * (components/p2p/shmem/p2p_shmem_cal.c), in process: the crossover of the
 * two paths' lines for given timings (the measurements of two machines, a
 * CMA that never pays: nothing pulled, a crossover past the eager limit:
 * taken as it is, nonsense timings),
 * the rounding to a power of two plus one (one switch for the spread of
 * one machine's processes) and bounds of the result, and one real
 * measurement.  The
 * parameter set by the user and "no CMA" are checked by tests/mpi/shm_band
 * (shm_band_cma4k_2, shm_band_nocma_2). */
#include "p2p_shmem_cal.c"
#include "ut.h"
#include <errno.h>
#include <string.h>

static struct p2p_shmem_cal cal(double r0, double r1, double c0, double c1)
{
    struct p2p_shmem_cal c = { { r0, r1 }, { c0, c1 }, 0 };
    return c;
}

int main(void)
{
    char why[240];
    size_t n;
    const size_t eager = 64 * 1024;

    UT_CASE("slow CMA (8 KiB pulled in 3.25 us, ring ahead in latency to 32 KiB, in bibw to 24)");
    {
        struct p2p_shmem_cal c = cal(1.39, 3.39, 0.10, 1.13);
        n = p2p_shmem_cal_choose(&c, why, sizeof why);
        CHECK_INT(n, 32 * 1024 + 1);                                      /* crossing at 27 KiB */
        CHECK_HAS(why, "paths cross at", "taken as 32769", "self read 1.39/3.39");
    }
    UT_CASE("snapped to the nearest power of two on a log scale, plus one");
    {
        CHECK_INT(p2p_shmem_cal_snap(6000), 8193);
        CHECK_INT(p2p_shmem_cal_snap(8192), 8193);
        CHECK_INT(p2p_shmem_cal_snap(23000), 16385);                     /* 16 KiB x 1.414 = 23170 */
        CHECK_INT(p2p_shmem_cal_snap(23300), 32769);
        CHECK_INT(p2p_shmem_cal_snap(45000), 32769);                     /* 32 KiB x 1.414 = 46341 */
        CHECK_INT(p2p_shmem_cal_snap(46500), 65537);
        CHECK_INT(p2p_shmem_cal_snap(0), 1);
        CHECK_INT(p2p_shmem_cal_snap(-5), 1);
        CHECK_INT(p2p_shmem_cal_snap(1e300), ((size_t)1 << 40) + 1);
    }
    UT_CASE("one machine, twelve processes: one switch (timings of kumi_info runs, 2026-11-29)");
    {
        /* self read at 4/32 KiB and the ring's copies at 4/32 KiB: crossings of 27-42 KiB */
        static const double t[][4] = {
            { 1.82, 4.02, 0.15, 1.20 }, { 1.68, 3.61, 0.15, 1.20 }, { 1.50, 3.28, 0.13, 1.15 },
            { 1.53, 3.31, 0.13, 1.15 }, { 1.82, 4.03, 0.15, 1.19 }, { 1.71, 3.74, 0.15, 1.19 },
            { 1.51, 3.31, 0.13, 1.16 }, { 1.70, 3.72, 0.15, 1.18 }, { 1.67, 3.65, 0.15, 1.19 },
            { 1.48, 3.27, 0.13, 1.16 }, { 1.70, 3.67, 0.15, 1.20 }, { 1.99, 4.31, 0.17, 1.36 },
        };
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
            struct p2p_shmem_cal c = cal(t[i][0], t[i][1], t[i][2], t[i][3]);
            n = p2p_shmem_cal_choose(&c, why, sizeof why);
            CHECK(n == 32 * 1024 + 1, "process %zu chose %zu: %s", i, n, why);
        }
    }
    UT_CASE("fast CMA (8 KiB pulled in 1.31 us, ahead of the ring from about 6 KiB)");
    {
        struct p2p_shmem_cal c = cal(0.45, 0.95, 0.10, 1.13);
        n = p2p_shmem_cal_choose(&c, why, sizeof why);
        CHECK(n >= P2P_SHMEM_CAL_FLOOR && n <= 12 * 1024 + 1, "chose %zu: %s", n, why);
    }
    UT_CASE("free CMA: the floor, not below");
    {
        struct p2p_shmem_cal c = cal(0.01, 0.2, 0.10, 1.13);
        CHECK_INT(p2p_shmem_cal_choose(&c, why, sizeof why), P2P_SHMEM_CAL_FLOOR);
    }
    UT_CASE("CMA dearer per byte than the ring: nothing pulled, at any size");
    {
        struct p2p_shmem_cal c = cal(1.0, 20.0, 0.10, 1.13);
        CHECK(p2p_shmem_cal_choose(&c, why, sizeof why) == SIZE_MAX, "chose %zu", p2p_shmem_cal_choose(&c, NULL, 0));
        CHECK_HAS(why, "never cheaper", "the ring at every size");
        /* the AMD EPYC guest of 2026-11-30 (its kumi_info timings): 0.0575 us/KiB pulled against 3.5 x 0.0157 */
        c = cal(1.04, 2.65, 0.08, 0.52);
        CHECK(p2p_shmem_cal_choose(&c, why, sizeof why) == SIZE_MAX, "the EPYC guest: %s", why);
    }
    UT_CASE("crossover past the eager limit: taken as it is (rendezvous through the ring up to it)");
    {
        struct p2p_shmem_cal c = cal(1.39, 3.39, 0.10, 1.13);              /* crossing at 27 KiB */
        CHECK_INT(p2p_shmem_cal_choose(&c, why, sizeof why), 32 * 1024 + 1);
        c = cal(1.5, 3.5, 0.05, 0.68);                                   /* slopes 0.0698 and 3.5 x 0.0220 us/KiB: 238 KiB */
        n = p2p_shmem_cal_choose(&c, why, sizeof why);
        CHECK_INT(n, 256 * 1024 + 1);
        CHECK(n == p2p_shmem_cal_snap(n - 1), "%zu is not a power of two plus one", n);
    }
    UT_CASE("nonsense timings (zero, negative fits)");
    {
        struct p2p_shmem_cal c = cal(0, 0, 0, 0);
        CHECK(p2p_shmem_cal_choose(&c, why, sizeof why) == SIZE_MAX, "zero timings: %s", why);
        c = cal(3.0, 1.0, 0.10, 1.13);                                   /* reads got cheaper with size */
        n = p2p_shmem_cal_choose(&c, why, sizeof why);
        CHECK(n >= P2P_SHMEM_CAL_FLOOR && n <= eager + 1, "chose %zu: %s", n, why);
        c = cal(1.39, 3.39, 2.0, 1.0);                                   /* copies got cheaper with size */
        CHECK(p2p_shmem_cal_choose(&c, why, sizeof why) == SIZE_MAX, "copies cheaper with size: %s", why);
    }
    UT_CASE("a larger self read moves the switch up");
    {
        struct p2p_shmem_cal a = cal(1.0, 3.0, 0.10, 1.13), b = cal(1.5, 3.5, 0.10, 1.13);
        size_t na = p2p_shmem_cal_choose(&a, NULL, 0), nb = p2p_shmem_cal_choose(&b, NULL, 0);
        CHECK(nb > na, "fixed cost 1.5 us chose %zu, 1.0 us %zu", nb, na);
    }
    UT_CASE("the state switch: a window's least sample, a verdict with hysteresis");
    {
        struct p2p_shmem_sw sw;
        const double ref = 0.018;                         /* one copy in cache, us per KiB */
        memset(&sw, 0, sizeof sw);
        int changed = 0;
        /* fast state: copies out of the ring 1.4-2 x one in cache; a preempted sample does not count */
        for (int i = 0; i < 4 * P2P_SHMEM_SW_WIN; i++)
            changed |= p2p_shmem_sw_add(&sw, 16384, (i % 3 ? 1.6 : i % 5 == 0 ? 40.0 : 1.4) * ref * 16, ref, P2P_SHMEM_SW_SLOW, P2P_SHMEM_SW_FAST);
        CHECK(!changed && sw.verdict == 0, "fast state: verdict %u (last %.2f)", sw.verdict, sw.last);
        CHECK(sw.last > 1.3 && sw.last < 1.5, "fast state: the least of the window, %.2f", sw.last);
        /* one window with every sample slowed (a loaded core) but below the slow mark: stays fast */
        for (int i = 0; i < P2P_SHMEM_SW_WIN; i++)
            changed |= p2p_shmem_sw_add(&sw, 16384, (P2P_SHMEM_SW_SLOW - 0.5) * ref * 16, ref, P2P_SHMEM_SW_SLOW, P2P_SHMEM_SW_FAST);
        CHECK(!changed && sw.verdict == 0, "below the slow mark: verdict %u", sw.verdict);
        /* the slow state: 10 x; the verdict changes only when the window closes */
        for (int i = 0; i < P2P_SHMEM_SW_WIN - 1; i++)
            changed |= p2p_shmem_sw_add(&sw, 32768, 10.0 * ref * 32, ref, P2P_SHMEM_SW_SLOW, P2P_SHMEM_SW_FAST);
        CHECK(!changed && sw.verdict == 0, "slow before the window closed: verdict %u", sw.verdict);
        CHECK_INT(p2p_shmem_sw_add(&sw, 32768, 10.0 * ref * 32, ref, P2P_SHMEM_SW_SLOW, P2P_SHMEM_SW_FAST), 1);
        CHECK_INT(sw.verdict, 1000);
        /* between the two marks: no change either way (no oscillation) */
        for (int i = 0; i < 3 * P2P_SHMEM_SW_WIN; i++)
            changed |= p2p_shmem_sw_add(&sw, 16384, (P2P_SHMEM_SW_FAST + P2P_SHMEM_SW_SLOW) / 2 * ref * 16, ref, P2P_SHMEM_SW_SLOW, P2P_SHMEM_SW_FAST);
        CHECK(!changed && sw.verdict == 1000, "between the marks: verdict %u", sw.verdict);
        /* one fast sample in a window is enough to leave (the least counts) */
        for (int i = 0; i < P2P_SHMEM_SW_WIN; i++)
            changed |= p2p_shmem_sw_add(&sw, 16384, (i == 3 ? 1.5 : 9.0) * ref * 16, ref, P2P_SHMEM_SW_SLOW, P2P_SHMEM_SW_FAST);
        CHECK(changed && sw.verdict == 0, "fast again: verdict %u", sw.verdict);
        /* no reference (no start-up measurement), nonsense samples: nothing */
        memset(&sw, 0, sizeof sw);
        for (int i = 0; i < 2 * P2P_SHMEM_SW_WIN; i++) changed = p2p_shmem_sw_add(&sw, 16384, 100.0, 0, P2P_SHMEM_SW_SLOW, P2P_SHMEM_SW_FAST);
        for (int i = 0; i < 2 * P2P_SHMEM_SW_WIN; i++) changed |= p2p_shmem_sw_add(&sw, 16384, 0, ref, P2P_SHMEM_SW_SLOW, P2P_SHMEM_SW_FAST);
        CHECK(!changed && sw.verdict == 0 && sw.n == 0, "no reference: verdict %u, %u samples", sw.verdict, sw.n);
        /* picking: records below SW_BYTES never, one in SW_EVERY while fast, in SW_EVERY_SLOW while slow */
        int picked = 0;
        for (int i = 0; i < 8 * P2P_SHMEM_SW_EVERY; i++) picked += p2p_shmem_sw_pick(&sw, 16384);
        CHECK_INT(picked, 8);
        CHECK_INT(p2p_shmem_sw_pick(&sw, P2P_SHMEM_SW_BYTES - 1), 0);
        sw.verdict = 1000;
        picked = 0;
        for (int i = 0; i < 8 * P2P_SHMEM_SW_EVERY_SLOW; i++) picked += p2p_shmem_sw_pick(&sw, 16384);
        CHECK_INT(picked, 8);
    }
    UT_CASE("slow state: cma_min chosen again with the ratio measured (the second machine)");
    {
        /* its in-process timings (alike in both states) and the window ratios it measured in the job
         * (2026-11-29, lone messages of 8-32 KiB): fast 1.3-2.5, slow 4.4-8 (a verdict from 4.5-6.3) */
        struct p2p_shmem_cal c = cal(1.50, 3.28, 0.13, 1.15);
        CHECK_INT(p2p_shmem_cal_choose(&c, NULL, 0), 32 * 1024 + 1);
        n = p2p_shmem_cal_choose_x(&c, p2p_shmem_sw_xcore(500), P2P_SHMEM_SW_GRID, why, sizeof why);
        CHECK(n == 12 * 1024 + 1, "slow state (5 x) chose %zu: %s", n, why);
        CHECK_HAS(why, "x 5.8 across cores", "taken as 12289");
        n = p2p_shmem_cal_choose_x(&c, p2p_shmem_sw_xcore(450), P2P_SHMEM_SW_GRID, NULL, 0);
        CHECK(n == 12 * 1024 + 1, "slow state (4.5 x) chose %zu", n);
        n = p2p_shmem_cal_choose_x(&c, p2p_shmem_sw_xcore(740), P2P_SHMEM_SW_GRID, NULL, 0);
        CHECK(n == 8 * 1024 + 1, "slow state (7.4 x) chose %zu", n);
        /* just above the slow mark: below the start-up switch, but 16 KiB and more */
        n = p2p_shmem_cal_choose_x(&c, p2p_shmem_sw_xcore(360), P2P_SHMEM_SW_GRID, NULL, 0);
        CHECK(n > 16 * 1024 && n <= 32 * 1024 + 1, "slow state (3.6 x) chose %zu", n);
        /* the fast state's ratios: never below the start-up choice */
        CHECK(p2p_shmem_cal_choose_x(&c, p2p_shmem_sw_xcore(250), P2P_SHMEM_SW_GRID, NULL, 0) >= 32 * 1024 + 1,
              "a fast ring chose below the start-up switch");
        /* the power-of-two snap without a grid, as at start-up */
        CHECK_INT(p2p_shmem_cal_choose_x(&c, P2P_SHMEM_CAL_XCORE, 0, NULL, 0), 32 * 1024 + 1);
    }
    UT_CASE("measure");
    {
        struct p2p_shmem_cal c = cal(-1, -1, -1, -1);
        if (p2p_shmem_cal_measure(&c) != 0) {
            printf("process_vm_readv of this process refused (%s): measurement not checked\n", strerror(errno));
            CHECK(c.rd[0] == -1, "a failed measurement changed its result");
        } else {
            CHECK(c.rd[0] > 0 && c.rd[1] > 0 && c.cp[0] > 0 && c.cp[1] > 0, "timings %.3f %.3f %.3f %.3f",
                  c.rd[0], c.rd[1], c.cp[0], c.cp[1]);
            CHECK(c.took >= c.rd[0] + c.rd[1] + c.cp[0] + c.cp[1], "took %.1f us", c.took);
            n = p2p_shmem_cal_choose(&c, why, sizeof why);
            CHECK(n >= P2P_SHMEM_CAL_FLOOR, "chose %zu", n);
            printf("this machine: %zu (%s; %.0f us)\n", n, why, c.took);
        }
    }
    printf("%d checks, %d failed\n", ut_checks, ut_failed);
    return ut_failed ? 1 : 0;
}
