/* What the files of p2p/tcp share: the wire format of the handshake, the
 * peer and connection state, and the helpers.
 *   p2p_tcp.c      the component: parameters, keys, interfaces, listeners,
 *                  init / wireup / progress / finalize, the ops table
 *   p2p_tcp_out.c  outgoing connections: connect, prove, send, flush
 *   p2p_tcp_in.c   accepted connections: authentication with a deadline,
 *                  receiving messages
 * (p2p_tcp.c's opening comment describes the design.) */
#ifndef P2P_TCP_H
#define P2P_TCP_H

#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/param.h>
#include <kumi/rpim.h>
#include <kumi/p2p.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>

#include <kumi/jobkey.h>
#include <kumi/netif.h>

#define P2P_TCP_MAGIC_HELLO 0x4b554d48u     /* "KUMH" */
#define P2P_TCP_MAGIC_CHAL  0x4b554d43u     /* "KUMC" */
#define P2P_TCP_MAGIC_XHELLO 0x4b554d58u    /* "KUMX": HELLO of a process of another job */
#define P2P_TCP_NONCE       16
#define P2P_TCP_HELLO_LEN   (8 + P2P_TCP_NONCE)
#define P2P_TCP_CHAL_LEN    (8 + P2P_TCP_NONCE + KUMI_JOBKEY_MAC)
#define P2P_TCP_PROOF_LEN   KUMI_JOBKEY_MAC
#define P2P_TCP_XHELLO_LEN  (P2P_TCP_HELLO_LEN + 16)   /* + its job, the key's id */
#define P2P_TCP_HSBUF       (P2P_TCP_XHELLO_LEN + P2P_TCP_PROOF_LEN)
/* The default eager limit, which is also the first fragment that a
 * rendezvous request carries (p2p_tcp.c's opening comment says why). */
#define P2P_TCP_EAGER_DEFAULT   ((size_t)512 * 1024)
#define P2P_TCP_BUFSZ       (16 * 1024)     /* staging buffer of a connection */
#define P2P_TCP_DIRECT_MIN  (8 * 1024)      /* remaining payload read straight into rx->dst */
#define P2P_TCP_READ_BUDGET (4u << 20)      /* bytes read from one connection per progress() */
#define P2P_TCP_MAXIOV      256     /* per sendmsg: up to 128 queued messages */
#define P2P_TCP_MAXEV       64
#define P2P_TCP_EPOLL_EVERY 16      /* reading the one connection directly: epoll every 16th round */
#define P2P_TCP_MAXADDR     32


enum { P2P_TCP_K_LISTEN = 1, P2P_TCP_K_OUT, P2P_TCP_K_IN, P2P_TCP_K_TIMER };

enum {
    P2P_TCP_OUT_NONE,        /* no connection yet */
    P2P_TCP_OUT_CONNECTING,  /* non-blocking connect under way */
    P2P_TCP_OUT_HELLO,       /* HELLO sent, waiting for the acceptor's CHAL */
    P2P_TCP_OUT_UP,
    P2P_TCP_OUT_CLOSED,      /* the peer closed it while nothing was queued */
    P2P_TCP_OUT_DEAD         /* lost or unreachable */
};

struct p2p_tcp_peer {            /* one per peer: the outgoing side */
    int kind;                    /* P2P_TCP_K_OUT (first: epoll tag) */
    int rank;                    /* the peer number (world rank, or an added peer) */
    int xjob;                    /* a process of another job (p2p contract 1.5): */
    struct kumi_p2p_xpeer x;     /* who (x.card not kept), the key of its connections */
    int fd;
    int state;
    uint32_t events;             /* registered epoll events */
    struct sockaddr_storage *addrs; /* in the order to try (IPv4, IPv6) */
    int naddrs, cur;
    double deadline;             /* of the current connect and handshake */
    unsigned char hello[P2P_TCP_CHAL_LEN];
    size_t hellooff;
    unsigned char nonce_c[P2P_TCP_NONCE];
    struct kumi_sendop *head, *tail;
    size_t nq;
    unsigned long wgen;          /* p2p_tcp_gen of the last direct write (batching) */
    struct p2p_tcp_peer *cnext;  /* on p2p_tcp_corked: a burst for the next progress() */
    int corked;
    int warned;
};

struct p2p_tcp_listener {
    int kind;                    /* P2P_TCP_K_LISTEN (first: epoll tag) */
    int fd;
};

extern size_t p2p_tcp_eager;
extern size_t p2p_tcp_batch;
extern int p2p_tcp_share;
extern unsigned long p2p_tcp_gen;
extern struct p2p_tcp_peer *p2p_tcp_corked;
extern size_t p2p_tcp_sndbuf, p2p_tcp_rcvbuf;
extern const char *p2p_tcp_if_include, *p2p_tcp_if_exclude, *p2p_tcp_family, *p2p_tcp_loopback_cc;
extern double p2p_tcp_connect_timeout, p2p_tcp_auth_timeout;
extern size_t p2p_tcp_auth_max;
extern struct p2p_tcp_listener p2p_tcp_lis[P2P_TCP_MAXADDR];
extern int p2p_tcp_nlis;
extern int p2p_tcp_timer_kind;
extern int p2p_tcp_epfd, p2p_tcp_tfd;
extern int p2p_tcp_me, p2p_tcp_size;
extern unsigned char p2p_tcp_key[KUMI_JOBKEY_MAC];
extern int p2p_tcp_self_first, p2p_tcp_shmem_first;
extern int p2p_tcp_onehost;
extern size_t p2p_tcp_npending;
extern double p2p_tcp_next_expiry;
extern unsigned long p2p_tcp_refused;
extern struct p2p_tcp_peer **p2p_tcp_peers;
extern int p2p_tcp_npeers;      /* entries of p2p_tcp_peers: the world, then added peers (NULL: not ours) */
extern struct p2p_tcp_in *p2p_tcp_ins;
extern struct kumi_netif p2p_tcp_ifs[P2P_TCP_MAXADDR];
extern int p2p_tcp_nifs;
extern size_t p2p_tcp_nqueued;
extern int p2p_tcp_nconnecting;
extern int p2p_tcp_in_progress;
extern char p2p_tcp_drop[64 * 1024];
extern int p2p_tcp_yield;

void p2p_tcp_accept(int lfd);
void p2p_tcp_connect_failed(struct p2p_tcp_peer *p);
void p2p_tcp_ep_add(int fd, uint32_t ev, void *ptr);
void p2p_tcp_ep_del(int fd);
void p2p_tcp_expire(void);
int p2p_tcp_handshaking(int state);
int p2p_tcp_in_attach(struct p2p_tcp_peer *p);
void p2p_tcp_in_close(struct p2p_tcp_in *c, int lost);
int p2p_tcp_in_event(struct p2p_tcp_in *c);
int p2p_tcp_in_only(void);
void p2p_tcp_lost_warn(int rank);
int p2p_tcp_nonce(unsigned char *out);
void p2p_tcp_out_event(struct p2p_tcp_peer *p, uint32_t ev);
void p2p_tcp_out_events(struct p2p_tcp_peer *p, uint32_t ev);
void p2p_tcp_proof(const char *what, const unsigned char *nonce_a, const unsigned char *nonce_c,
                          int32_t rank_c, int32_t rank_a, unsigned char out[KUMI_JOBKEY_MAC]);
int p2p_tcp_reaches(int peer);
void p2p_tcp_xproof(const struct kumi_p2p_xpeer *x, const char *what, const unsigned char *nonce_a,
                    const unsigned char *nonce_c, int connecting, unsigned char out[KUMI_JOBKEY_MAC]);
struct p2p_tcp_peer *p2p_tcp_xfind(uint64_t job, int32_t rank, uint64_t key_id);
int p2p_tcp_xjob_card(char *buf, size_t len);
int p2p_tcp_xjob_add(int peer, const struct kumi_p2p_xpeer *x);
void p2p_tcp_parse_addrs(struct p2p_tcp_peer *p, const char *list, int same_host, int onehost);
int p2p_tcp_listen_on(const struct sockaddr *addr);
int p2p_tcp_send(int peer, struct kumi_sendop *op);
void p2p_tcp_uncork(void);
void p2p_tcp_sockopts(int fd);
void p2p_tcp_loopback_opts(int fd, const struct sockaddr *sa);
const char *p2p_tcp_peer_addr(int peer, char *buf, size_t len);

#endif
