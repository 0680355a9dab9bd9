/* Processes of other jobs as peers (MPI_Comm_accept / connect / join).
 *
 * Peer numbers: the world ranks 0 .. n-1, then the processes of other jobs
 * in the order they became peers (kumi_req_add_peer).  A process of another
 * job is known by (job, rank): its job's identity (kumi_req_job_uid, from
 * the job secret, which the processes of the job share and nobody else
 * knows) and its rank in that job.  It becomes a peer once, the first time
 * a connection names it; later connections (another MPI_Comm_connect to the
 * same job) find the same peer number, so that the per-peer sequence
 * numbers of both sides stay in step.  Added peers stay until MPI_Finalize
 * (MPI_Comm_disconnect does not drop them: a later connection may name
 * them again, and their transport connections are cheap when idle).
 *
 * The transport is the one of p2p contract 1.5 (p2p/tcp): it reaches the
 * process at the address card the roots exchanged and authenticates its
 * connections with the key the roots agreed, never with the job secret. */
#include "request/request.h"
#include <kumi/jobkey.h>
#include <kumi/rpim.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

struct xpeer { uint64_t job; int rank; int peer; };
static struct xpeer *xpeers;        /* the added peers, in the order added */
static int nxpeers, capxpeers;

uint64_t kumi_req_job_uid(void)
{
    static uint64_t uid;
    if (uid) return uid;
    const char *sec = kumi_jobkey_secret(), *iu = getenv(KUMI_ENV_IMPI_UID);
    if (iu && *iu) {
        /* an IMPI job: every client's launch has a secret of its own; the
         * identity all of them share is mpiexec's hash of the server's
         * replies (MPI_Intercomm_create names the members by it) */
        uid = strtoull(iu, NULL, 16);
    } else if (sec) {
        static const char label[] = "kumi dpm job identity";
        const void *parts[1] = { label };
        size_t lens[1] = { sizeof label - 1 };
        unsigned char mac[KUMI_JOBKEY_MAC];
        kumi_jobkey_hmac(sec, strlen(sec), parts, lens, 1, mac);
        memcpy(&uid, mac, sizeof uid);
    } else if (getrandom(&uid, sizeof uid, 0) != (ssize_t)sizeof uid) {
        uid = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&uid;
    }
    if (!uid) uid = 1;
    return uid;
}

int kumi_req_xjob_card(const char *fn, char *buf, size_t len)
{
    const struct kumi_p2p_ops *ops = kumi_req_xjob_transport();
    if (!ops)
        return kumi_error(MPI_ERR_OTHER, "%s: no transport in use reaches processes of other jobs "
                          "(p2p/tcp is needed: see MPI_COMPONENTS)", fn);
    return ops->xjob_card(buf, len);
}

void kumi_req_peer_id(int peer, uint64_t *job, int *rank)
{
    if (peer >= 0 && peer < kumi_world_size()) {
        *job = kumi_req_job_uid();
        *rank = peer;
        return;
    }
    for (int i = 0; i < nxpeers; i++)
        if (xpeers[i].peer == peer) {
            *job = xpeers[i].job;
            *rank = xpeers[i].rank;
            return;
        }
    *job = 0;
    *rank = -1;
}

int kumi_req_peer_of(uint64_t job, int rank)
{
    if (job == kumi_req_job_uid()) return rank >= 0 && rank < kumi_world_size() ? rank : -1;
    for (int i = 0; i < nxpeers; i++)
        if (xpeers[i].job == job && xpeers[i].rank == rank) return xpeers[i].peer;
    return -1;
}

bool kumi_req_peer_before(int a, int b)
{
    uint64_t ja, jb;
    int ra, rb;
    kumi_req_peer_id(a, &ja, &ra);
    kumi_req_peer_id(b, &jb, &rb);
    return ja != jb ? ja < jb : ra < rb;
}

int kumi_req_xpeer(const char *fn, uint64_t job, int rank, const char *card, const unsigned char *key,
                   uint64_t key_id, int *peer)
{
    int err = MPI_SUCCESS;
    if (job == kumi_req_job_uid()) {
        if (rank < 0 || rank >= kumi_world_size())
            return kumi_error(MPI_ERR_INTERN, "%s: a process of this job with rank %d (of %d)", fn, rank,
                              kumi_world_size());
        *peer = rank;
        return MPI_SUCCESS;
    }
    for (int i = 0; i < nxpeers; i++)
        if (xpeers[i].job == job && xpeers[i].rank == rank) {
            *peer = xpeers[i].peer;
            return MPI_SUCCESS;
        }
    const struct kumi_p2p_ops *ops = kumi_req_xjob_transport();
    if (!ops)
        return kumi_error(MPI_ERR_OTHER, "%s: no transport in use reaches processes of other jobs "
                          "(p2p/tcp is needed: see MPI_COMPONENTS)", fn);
    if (nxpeers == capxpeers) {
        int cap = capxpeers ? 2 * capxpeers : 16;
        struct xpeer *t = realloc(xpeers, (size_t)cap * sizeof *t);
        if (!t) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
        xpeers = t;
        capxpeers = cap;
    }
    int p = kumi_req_add_peer(ops, &err);
    if (p < 0) return err;
    struct kumi_p2p_xpeer x;
    memset(&x, 0, sizeof x);
    x.my_job = kumi_req_job_uid();
    x.my_rank = kumi_world_rank();
    x.job = job;
    x.rank = rank;
    x.card = card;
    memcpy(x.key, key, sizeof x.key);
    x.key_id = key_id;
    err = ops->xjob_add(p, &x);
    memset(&x, 0, sizeof x);
    if (err != MPI_SUCCESS) {
        kumi_req_peer_unusable(p);
        return err;
    }
    xpeers[nxpeers].job = job;
    xpeers[nxpeers].rank = rank;
    xpeers[nxpeers++].peer = p;
    *peer = p;
    return MPI_SUCCESS;
}

void kumi_req_xjob_finalize(void)
{
    free(xpeers);
    xpeers = NULL;
    nxpeers = capxpeers = 0;
}
