/* The pacing framework's glue (kumi/pacing.h): choose the pacing component,
 * call it around the blocking collectives (a component of contract 1.1 with
 * the hint of the coll component that runs the call: kumi_coll_pace_hint),
 * forward the transports' "socket opened" upcalls to it, let the progress
 * engine run its pending work, and
 * answer its questions about a peer's sockets through the transport that
 * serves the peer (p2p contract 1.4). */
#include "request/request.h"
#include "registry/registry.h"
#include <kumi/pacing.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const struct kumi_pacing_ops *pops;   /* the chosen component; NULL: none */
static const char *pname;
static int depth;                            /* blocking collectives under way */
static int paced;                            /* the outermost one called enter() with 1 */
bool kumi_pacing_has_pending;

void kumi_pacing_init(void)
{
    int n = 0;
    struct kumi_comp_entry **av = kumi_registry_available("pacing", &n);
    pops = NULL;
    depth = paced = 0;
    kumi_pacing_has_pending = false;
    for (int i = 0; av && i < n; i++) {
        const struct kumi_pacing_ops *ops = av[i]->comp ? av[i]->comp->ops : NULL;
        if (!ops) continue;
        int rc = ops->init ? ops->init() : MPI_SUCCESS;
        if (rc != MPI_SUCCESS) {
            kumi_log(1, "pacing: %s: not used in this job", av[i]->name);
            continue;
        }
        av[i]->status = KUMI_COMP_SELECTED;
        pops = ops;
        pname = av[i]->name;
        kumi_log(1, "pacing/%s selected", pname);
        break;
    }
}

void kumi_pacing_finalize(void)
{
    if (pops && pops->finalize) pops->finalize();
    pops = NULL;
    kumi_pacing_has_pending = false;
}

static void update_pending(void)
{
    kumi_pacing_has_pending = pops && pops->pending && pops->pending();
}

int kumi_pacing_enter(const char *coll, const struct kumi_comm *comm, MPI_Count count, const struct kumi_dt *dt)
{
    if (!pops) return 0;
    if (depth++ > 0) return 1;
    paced = 0;
    if (comm->inter || (!pops->enter && !pops->enter_hint)) return 1;
    if (pops->wants && !pops->wants(coll)) return 1;     /* no rank list for what is never paced */
    int stackw[64] = {0}, *w = stackw;   /* zeroed: gcc -Werror=maybe-uninitialized cannot see size <= 64 fills it */
    if (comm->size > 64 && !(w = malloc(sizeof *w * (size_t)comm->size))) return 1;
    int nw = kumi_world_size(), other = 0;
    for (int r = 0; r < comm->size; r++) other |= (w[r] = kumi_comm_world_rank(comm, r)) >= nw;
    /* a communicator with processes of other jobs is not paced (components know world ranks) */
    if (!other && pops->enter_hint) {
        /* what the coll component that runs the call will send (pacing contract 1.1, coll 1.2) */
        struct kumi_pace_hint h;
        size_t bytes = dt && count > 0 ? (size_t)count * kumi_dt_size((MPI_Datatype)dt) : 0;
        kumi_coll_pace_hint((MPI_Comm)comm, coll, bytes, 0, &h);
        paced = pops->enter_hint(coll, w, comm->size, &h) > 0;
    } else
        paced = !other && pops->enter && pops->enter(coll, w, comm->size) > 0;
    if (w != stackw) free(w);
    update_pending();
    return 1;
}

void kumi_pacing_leave(int token)
{
    if (!token || !pops || --depth > 0) return;
    if (paced && pops->leave) pops->leave();
    paced = 0;
    update_pending();
}

void kumi_pacing_progress(void)
{
    if (pops && pops->progress) pops->progress();
    update_pending();
}

KUMI_EXPORT void kumi_p2p_socket_opened(int peer, int fd)
{
    /* (a peer of another job is not paced: the components know world ranks) */
    if (pops && pops->socket_opened && peer < kumi_world_size()) pops->socket_opened(peer, fd);
}

KUMI_EXPORT int kumi_p2p_peer_sockets(int peer, int *fds, int max)
{
    const struct kumi_p2p_ops *ops = kumi_req_transport(peer);
    if (!ops || ops->hdr.size <= offsetof(struct kumi_p2p_ops, peer_sockets) || !ops->peer_sockets) return 0;
    return ops->peer_sockets(peer, fds, max);
}

KUMI_EXPORT int kumi_p2p_peer_sockaddr(int peer, struct sockaddr_storage *sa)
{
    const struct kumi_p2p_ops *ops = kumi_req_transport(peer);
    if (!ops || ops->hdr.size <= offsetof(struct kumi_p2p_ops, peer_sockaddr) || !ops->peer_sockaddr) return -1;
    return ops->peer_sockaddr(peer, sa);
}
