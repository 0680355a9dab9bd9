/* pacing/probe: a pacing component that paces nothing and says what it is
 * told (test only).  For every blocking all-to-all (MPI_Alltoall, _v, _w)
 * it writes to stderr, once per call,
 *     pacing/probe[WORLD RANK]: COLL n=N fanout=F senders=LIST
 * where F and LIST are the coll component's hint (kumi/pacing.h, struct
 * kumi_pace_hint: F -1 unknown, 0 every peer at once, k at most k; LIST
 * "all" or the comm ranks that send across), or, built with -DPROBE_OLD
 * (a table of pacing contract v1.0, which ends before enter_hint),
 *     pacing/probe[WORLD RANK]: COLL n=N (contract 1.0: no hint)
 * from enter().  It returns 0 (nothing paced), so leave() is never due.
 *
 * tests/scripts/pacing_hint.sh builds it and runs jobs over it. */
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/pacing.h>

#include <stdio.h>
#include <string.h>

static int probe_init(void)
{
    return MPI_SUCCESS;
}

static int probe_wants(const char *coll)
{
    return !strncmp(coll, "alltoall", 8);
}

static int probe_enter(const char *coll, const int *wranks, int n)
{
    (void)wranks;
    fprintf(stderr, "pacing/probe[%d]: %s n=%d (contract 1.0: no hint)\n", kumi_world_rank(), coll, n);
    return 0;
}

#ifndef PROBE_OLD
static int probe_enter_hint(const char *coll, const int *wranks, int n, const struct kumi_pace_hint *h)
{
    char list[512] = "all";
    (void)wranks;
    if (h->nsenders >= 0) {
        size_t l = 0;
        list[0] = 0;
        for (int i = 0; i < h->nsenders && l + 16 < sizeof list; i++)
            l += (size_t)snprintf(list + l, sizeof list - l, "%s%d", i ? "," : "", h->senders[i]);
    }
    fprintf(stderr, "pacing/probe[%d]: %s n=%d fanout=%d senders=%s\n", kumi_world_rank(), coll, n, h->fanout,
            list);
    return 0;
}
#endif

static void probe_leave(void)
{
}

static const struct kumi_pacing_ops probe_ops = {
#ifdef PROBE_OLD
    .hdr = { (uint32_t)offsetof(struct kumi_pacing_ops, enter_hint), 1, 0 },
#else
    .hdr = KUMI_PACING_OPS_HDR,
    .enter_hint = probe_enter_hint,
#endif
    .init = probe_init,
    .enter = probe_enter,
    .leave = probe_leave,
    .wants = probe_wants,
};

KUMI_EXPORT const struct kumi_component kumi_pacing_probe_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "pacing", .name = "probe",
    .version = { 0, 0, 1 },
    .description = "Says the coll component's pace hints (test only)",
    .priority = 100,
    .ops = &probe_ops,
};
