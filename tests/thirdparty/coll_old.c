/* coll/old: a collective component built against coll contract v1.0 (test
 * only).  Its table's header says v1.0 and its size ends before
 * comm_release (added in v1.1); the entry past that end holds a function
 * that aborts the process when called, standing for whatever follows a
 * shorter table in memory: a library that reads past hdr.size calls it
 * when a communicator is freed, and the job fails with a line naming it.
 *
 * It provides MPI_Barrier (a dissemination barrier over kumi_coll_sendrecv)
 * with a high priority, so it serves every barrier; with the parameter
 * coll_old_trace it writes "coll/old: barrier" once per process to stderr,
 * so a test can see it was used.
 *
 * tests/scripts/registry_contracts.sh builds it, and variants the registry
 * must refuse, through OLD_MAJOR, OLD_MINOR (1, 0) and OLD_SIZE (hdr.size;
 * default: the end of contract v1.0).
 */
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/param.h>
#include <kumi/coll.h>

#include <stdio.h>
#include <stdlib.h>

#ifndef OLD_MAJOR
#define OLD_MAJOR 1
#endif
#ifndef OLD_MINOR
#define OLD_MINOR 0
#endif
#ifndef OLD_SIZE
#define OLD_SIZE offsetof(struct kumi_coll_ops, comm_release)
#endif

static int old_trace, old_traced;

static void old_register(void)
{
    kumi_param_register_bool("coll", "old", "trace", 0, "Say once when coll/old runs a barrier (for testing)",
                             KUMI_LEVEL_DEV, &old_trace);
}

static int old_barrier(MPI_Comm comm)
{
    int me = kumi_comm_rank(comm), n = kumi_comm_size(comm);
    char s = 0, r = 0;
    if (old_trace && !old_traced) {
        old_traced = 1;
        fprintf(stderr, "coll/old: barrier\n");
    }
    for (int d = 1; d < n; d *= 2) {
        int rc = kumi_coll_sendrecv(&s, 1, MPI_BYTE, (me + d) % n, 77, &r, 1, MPI_BYTE, (me - d + n) % n, 77, comm);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

static int old_comm_query(MPI_Comm comm, int *priority, struct kumi_coll_fns *fns)
{
    if (kumi_comm_is_inter(comm)) return KUMI_UNAVAILABLE;
    *priority = 1000;
    fns->barrier = old_barrier;
    return KUMI_OK;
}

static void past_end_comm_release(MPI_Comm comm)
{
    (void)comm;
    fprintf(stderr, "coll/old: the library called comm_release, past the end of this coll contract v%d.%d table\n",
            OLD_MAJOR, OLD_MINOR);
    abort();
}

static const struct kumi_coll_ops old_ops = {
    .hdr = { (uint32_t)(OLD_SIZE), OLD_MAJOR, OLD_MINOR },
    .comm_query = old_comm_query,
    .comm_release = past_end_comm_release,     /* past the end of a v1.0 table */
};

KUMI_EXPORT const struct kumi_component kumi_coll_old_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "coll",
    .name = "old",
    .version = { 0, 0, 1 },
    .description = "Test component built against coll contract 1.0 (a barrier)",
    .priority = 0,
    .register_params = old_register,
    .ops = &old_ops,
};
