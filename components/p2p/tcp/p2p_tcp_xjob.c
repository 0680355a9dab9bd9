/* p2p/tcp, processes of other jobs (p2p contract 1.5: xjob_card, xjob_add),
 * for MPI_Comm_accept / connect / join.  See p2p_tcp.c for the design.
 *
 * Card: "<host id> <address list>" (the list as in "p2p.tcp.addr").  A job
 * on one host listens on loopback addresses only, and wireup() closes the
 * listeners where every peer of the job is reached before tcp; the first
 * card asked for in such a process opens listeners on every chosen address
 * (loopback and the others) again: a process of another job may be on
 * another host.  The listeners stay until MPI_Finalize.
 *
 * Peers: xjob_add gives an added peer number (>= the world size) an entry of
 * its own (never moved: epoll points at it).  Connections to and from it
 * use the same handshake as inside the job (p2p_tcp.c), with three changes:
 * the connecting side sends XHELLO = HELLO + {its job, the key's id}; the
 * ranks are ranks in each side's own job; the proofs are HMACs under the key
 * the two roots agreed (never the job's key), over the nonces and both
 * sides' (job, rank):
 *   HMAC(key, what nonce_a nonce_c rank_c rank_a job_c job_a).
 * An accepted XHELLO whose (job, rank, key id) names no added peer is
 * dropped at once: a stray connection cannot pose as a peer, and a process
 * of another job never becomes a peer of the job (its HELLO would need the
 * job's key). */
#define _GNU_SOURCE
#include "p2p_tcp.h"

extern char p2p_tcp_published[KUMI_KVS_VAL_MAX];
static char xcard[2 * KUMI_KVS_VAL_MAX];   /* this process's card, once made */

void p2p_tcp_xproof(const struct kumi_p2p_xpeer *x, const char *what, const unsigned char *nonce_a,
                    const unsigned char *nonce_c, int connecting, unsigned char out[KUMI_JOBKEY_MAC])
{
    int32_t rank_c = connecting ? x->my_rank : x->rank, rank_a = connecting ? x->rank : x->my_rank;
    uint64_t job_c = connecting ? x->my_job : x->job, job_a = connecting ? x->job : x->my_job;
    const void *parts[7] = { what, nonce_a, nonce_c, &rank_c, &rank_a, &job_c, &job_a };
    size_t lens[7] = { strlen(what) + 1, P2P_TCP_NONCE, P2P_TCP_NONCE, 4, 4, 8, 8 };
    kumi_jobkey_hmac(x->key, sizeof x->key, parts, lens, 7, out);
}

struct p2p_tcp_peer *p2p_tcp_xfind(uint64_t job, int32_t rank, uint64_t key_id)
{
    for (int i = p2p_tcp_size; i < p2p_tcp_npeers; i++) {
        struct p2p_tcp_peer *p = p2p_tcp_peers[i];
        if (p && p->xjob && p->x.job == job && p->x.rank == rank && p->x.key_id == key_id) return p;
    }
    return NULL;
}

/* Listen on every chosen address (not only loopback), besides what is open. */
static int p2p_tcp_xlisten(char *val, size_t len)
{
    struct kumi_netif ifs[P2P_TCP_MAXADDR];
    char err[256];
    size_t off = 0;
    int fl = KUMI_NETIF_KEEP_LO, n;
    const char *fam = p2p_tcp_family;
    if (!fam || !*fam || !strcmp(fam, "any") || !strcmp(fam, "both") || !strcmp(fam, "prefer_ipv4"))
        fl |= KUMI_NETIF_V4 | KUMI_NETIF_V6;
    else if (!strcmp(fam, "prefer_ipv6")) fl |= KUMI_NETIF_V4 | KUMI_NETIF_V6 | KUMI_NETIF_PREFER6;
    else if (!strcmp(fam, "ipv4") || !strcmp(fam, "4")) fl |= KUMI_NETIF_V4;
    else fl |= KUMI_NETIF_V6 | KUMI_NETIF_PREFER6;
    n = kumi_netif_choose(ifs, P2P_TCP_MAXADDR, p2p_tcp_if_include, p2p_tcp_if_exclude, fl, err, sizeof err);
    if (n <= 0) return kumi_error(MPI_ERR_OTHER, "p2p/tcp: no address to listen on for processes of other jobs%s%s",
                                  n < 0 ? ": p2p_tcp_if_" : "", n < 0 ? err : "");
    val[0] = 0;
    for (int i = 0; i < n && p2p_tcp_nlis < P2P_TCP_MAXADDR; i++) {
        char ip[KUMI_NETIF_ADDRSTR];
        struct kumi_netif *f = &ifs[i];
        int port = p2p_tcp_listen_on(&f->addr.sa), k;
        if (port < 0) continue;
        if (f->addr.sa.sa_family == AF_INET6) f->addr.in6.sin6_port = htons((uint16_t)port);
        else f->addr.in4.sin_port = htons((uint16_t)port);
        kumi_netif_format(&f->addr.sa, 1, ip, sizeof ip);
        k = snprintf(val + off, len - off, "%s%s", off ? "," : "", ip);
        if (k < 0 || (size_t)k >= len - off) {
            val[off] = 0;
            break;
        }
        off += (size_t)k;
    }
    if (!val[0]) return kumi_error(MPI_ERR_OTHER, "p2p/tcp: cannot listen for processes of other jobs: %s",
                                   strerror(errno));
    kumi_log(2, "p2p/tcp: listening for processes of other jobs on %s", val);
    return MPI_SUCCESS;
}

int p2p_tcp_xjob_card(char *buf, size_t len)
{
    if (p2p_tcp_epfd < 0) return kumi_error(MPI_ERR_OTHER, "p2p/tcp: not running");
    if (!xcard[0]) {
        char val[KUMI_KVS_VAL_MAX];
        const char *host = kumi_host_id();
        if (p2p_tcp_nlis == 0 || p2p_tcp_onehost) {
            int rc = p2p_tcp_xlisten(val, sizeof val);
            if (rc != MPI_SUCCESS) return rc;
        } else {
            snprintf(val, sizeof val, "%s", p2p_tcp_published);
        }
        snprintf(xcard, sizeof xcard, "%s %s", host && *host && !strchr(host, ' ') ? host : "-", val);
    }
    if (strlen(xcard) >= len) return kumi_error(MPI_ERR_INTERN, "p2p/tcp: address card longer than %zu", len);
    memcpy(buf, xcard, strlen(xcard) + 1);
    return MPI_SUCCESS;
}

int p2p_tcp_xjob_add(int peer, const struct kumi_p2p_xpeer *x)
{
    const char *sp = x->card ? strchr(x->card, ' ') : NULL;
    const char *myhost = kumi_host_id();
    char host[KUMI_KVS_VAL_MAX];
    if (!sp || (size_t)(sp - x->card) >= sizeof host || peer < p2p_tcp_size)
        return kumi_error(MPI_ERR_INTERN, "p2p/tcp: bad address card of a process of another job");
    memcpy(host, x->card, (size_t)(sp - x->card));
    host[sp - x->card] = 0;
    if (peer >= p2p_tcp_npeers) {
        struct p2p_tcp_peer **t = realloc(p2p_tcp_peers, (size_t)(peer + 1) * sizeof *t);
        if (!t) return kumi_error(MPI_ERR_NO_MEM, "p2p/tcp: out of memory");
        p2p_tcp_peers = t;
        for (int i = p2p_tcp_npeers; i <= peer; i++) t[i] = NULL;
        p2p_tcp_npeers = peer + 1;
    }
    if (p2p_tcp_peers[peer]) return kumi_error(MPI_ERR_INTERN, "p2p/tcp: peer %d added twice", peer);
    struct p2p_tcp_peer *p = calloc(1, sizeof *p);
    if (!p) return kumi_error(MPI_ERR_NO_MEM, "p2p/tcp: out of memory");
    p->kind = P2P_TCP_K_OUT;
    p->rank = peer;
    p->fd = -1;
    p->state = P2P_TCP_OUT_NONE;
    p->xjob = 1;
    p->x = *x;
    p->x.card = NULL;
    int same = myhost && !strcmp(host, myhost);
    p2p_tcp_parse_addrs(p, sp + 1, same, 0);
    if (p->naddrs <= 0) {
        free(p->addrs);
        free(p);
        return kumi_error(MPI_ERR_OTHER, "p2p/tcp: no usable address in the card of rank %d of another job (%s)",
                          (int)x->rank, sp + 1);
    }
    p2p_tcp_peers[peer] = p;
    kumi_log(2, "p2p/tcp: peer %d is rank %d of job %016llx at %s (%s host)", peer, (int)x->rank,
             (unsigned long long)x->job, sp + 1, same ? "same" : "other");
    return MPI_SUCCESS;
}
