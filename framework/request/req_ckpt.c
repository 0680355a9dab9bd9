/* Request layer: what coordinated checkpoints (framework/mpi/ckpt.c) ask of
 * the transports: whether they can be checkpointed, whether anything is
 * still on its way, letting go of what an image cannot hold, and wiring up
 * again.  The per-peer counts themselves are kept by request.c. */
#include "request/request.h"
#include "registry/registry.h"
#include <stdio.h>
#include <string.h>

/* self and tcp: busy() and finalize are exact; others need the 1.7 entries
 * (ckpt_quiet and ckpt_release). */
static int ckpt_capable(const char *n, const struct kumi_p2p_ops *ops)
{
    return !strcmp(n, "self") || !strcmp(n, "tcp") || (ops && ops->ckpt_quiet && ops->ckpt_release);
}

/* The p2p components of this installation that can be checkpointed, but
 * skip, as "a,b,c" (for a refusal's advice). */
static void ckpt_capable_names(char *buf, size_t len, const char *skip)
{
    struct kumi_comp_entry **e;
    int n = kumi_registry_entries(&e);
    size_t l = 0;
    buf[0] = 0;
    for (int i = 0; i < n && l < len; i++)
        if (e[i]->comp && !strcmp(e[i]->framework, "p2p") && (!skip || strcmp(e[i]->name, skip)) &&
            ckpt_capable(e[i]->name, e[i]->comp->ops))
            l += (size_t)snprintf(buf + l, len - l, "%s%s", l ? "," : "", e[i]->name);
}

/* Whether the transports and peers of this rank can be checkpointed: self
 * and tcp, and those with the contract's checkpoint entries (shmem; ofi
 * unless its ckpt_quiet says -1 for the provider in use) release everything
 * and wire up again. */
int kumi_req_ckpt_check(char *why, size_t len)
{
    int nworld = kumi_world_size(), npeers = kumi_req_npeers();
    if (npeers > nworld) {
        snprintf(why, len, "connected to %d process%s of another job (MPI_Comm_spawn / connect / accept / join): "
                 "not supported by checkpoints", npeers - nworld, npeers - nworld == 1 ? "" : "es");
        return -1;
    }
    for (int i = 0; i < kumi_req_ntransports(); i++) {
        const char *n;
        const struct kumi_p2p_ops *ops = kumi_req_transport_at(i, &n);
        char can[200];
        if (!ckpt_capable(n, ops)) {
            ckpt_capable_names(can, sizeof can, NULL);
            snprintf(why, len, "transport p2p/%s cannot be checkpointed (these can: %s; "
                     "select them with MPI_COMPONENTS=p2p=%s)", n, can, can);
            return -1;
        }
        if (ops->ckpt_quiet && ops->ckpt_quiet() < 0) {
            ckpt_capable_names(can, sizeof can, n);
            snprintf(why, len, "transport p2p/%s cannot be checkpointed with what it uses in this job "
                     "(p2p/ofi: the shm provider, or one that chooses registration keys itself); "
                     "without it: MPI_COMPONENTS=p2p=%s", n, can);
            return -1;
        }
    }
    return 0;
}

/* Nothing of this rank on its way: no payload arriving, nothing queued. */
int kumi_req_ckpt_idle(void)
{
    if (kumi_req_ckpt_rx_open() > 0 || kumi_req_ctl_pending()) return 0;
    for (int i = 0; i < kumi_req_ntransports(); i++) {
        const struct kumi_p2p_ops *ops = kumi_req_transport_at(i, NULL);
        if (ops->ckpt_quiet) {
            if (!ops->ckpt_quiet()) return 0;
        } else if (ops->busy && ops->busy()) {
            return 0;
        }
    }
    return 1;
}

/* Every transport lets go of what an image cannot hold (sockets, shared
 * memory, its descriptors); the request layer keeps its state. */
void kumi_req_ckpt_release(void)
{
    kumi_pacing_finalize();
    for (int i = kumi_req_ntransports() - 1; i >= 0; i--) {
        const struct kumi_p2p_ops *ops = kumi_req_transport_at(i, NULL);
        if (ops->ckpt_release) ops->ckpt_release();
        else if (ops->finalize) ops->finalize();
    }
    kumi_progress_setup(NULL, NULL, 0);
}

/* After kumi_req_ckpt_release: the same transports again (init, the
 * launcher's fence, wireup), each peer reached as before. */
int kumi_req_ckpt_rewire(void)
{
    int rc, ntr = kumi_req_ntransports();
    const struct kumi_p2p_ops *ops[KUMI_MAX_TRANSPORTS];
    const char *name[KUMI_MAX_TRANSPORTS];
    char names[512] = "";
    for (int i = 0; i < ntr; i++) {
        ops[i] = kumi_req_transport_at(i, &name[i]);
        size_t l = strlen(names);
        snprintf(names + l, sizeof names - l, "%s%s", l ? ", " : "", name[i]);
    }
    for (int i = 0; i < ntr; i++)
        if (ops[i]->init && (rc = ops[i]->init()) != MPI_SUCCESS)
            return kumi_error(rc, "checkpoint: p2p/%s: init failed when wiring up again", name[i]);
    if ((rc = kumi_rpim_fence()) != MPI_SUCCESS) return rc;
    for (int i = 0; i < ntr; i++)
        if (ops[i]->wireup && (rc = ops[i]->wireup()) != MPI_SUCCESS)
            return kumi_error(rc, "checkpoint: p2p/%s: wireup failed when wiring up again", name[i]);
    bool used[KUMI_MAX_TRANSPORTS] = { false };
    if ((rc = kumi_req_assign_peers(used, "checkpoint: wiring up again", names)) != MPI_SUCCESS) return rc;
    rc = kumi_progress_setup(ops, used, ntr);
    if (rc == MPI_SUCCESS) kumi_pacing_init();
    return rc;
}
