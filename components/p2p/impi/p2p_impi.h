/* p2p/impi: shared state of p2p_impi.c (set-up: job tables, the dance,
 * finalize, the component) and p2p_impi_io.c (packets in and out). */
#ifndef P2P_IMPI_H
#define P2P_IMPI_H

#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/impi.h>
#include <kumi/p2p.h>
#include <kumi/param.h>

/* One packet waiting for its host's connection. */
struct p2p_impi_opkt {
    struct p2p_impi_opkt *next;
    uint8_t hdr[KUMI_IMPI_PACKET_SIZE];
    const char *data;                 /* payload slice (the op's), len bytes */
    size_t len;
    size_t off;                       /* bytes of header + payload written */
    int dest;                         /* world rank charged by flow control, -1: not counted */
    bool started;                     /* counted against hiwater already */
    bool stalled;                     /* waited for a PROTOACK (counted once) */
    struct kumi_sendop *op;           /* its last packet: done() once written */
};

/* A long message arriving (its first packet went up as an RTS). */
struct p2p_impi_lrecv {
    struct p2p_impi_lrecv *next;
    int peer;
    uint64_t srqid, drqid;            /* drqid: our handle, given in the SYNCACK (the CTS's rreq) */
    uint64_t msglen, firstlen;
    struct kumi_hdr hdr;              /* the first packet's envelope */
    struct kumi_rx *rx;               /* the rest's, from the first DATA packet on */
};

/* A long message sent: its first packet went, the SYNCACK is awaited. */
struct p2p_impi_lsend {
    struct p2p_impi_lsend *next;
    int peer;
    uint64_t srqid;
};

/* The channel to this launch's IMPI host (the agent in mpiexec, which owns
 * the connections to the other hosts and relays packets by their pk_dest),
 * or, in the table p2p_impi_hosts, another IMPI host (its fields index ...
 * nprocs only: fd -1). */
struct p2p_impi_host {
    int fd;                           /* -1: none (the table's entries, or closed) */
    int index;                        /* global host rank */
    int client;
    int first, nprocs;                /* its procs: world ranks first ... first + nprocs - 1 */
    struct p2p_impi_opkt *qhead, *qtail;
    /* input */
    uint8_t *ibuf;
    size_t ilen, ioff;
    bool have_hdr;
    struct kumi_impi_packet pk;       /* the packet whose payload is being read */
    int pk_peer;
    uint32_t pay_left;
    struct kumi_rx *rx;               /* where this packet's payload goes (NULL: dropped) */
    struct p2p_impi_lrecv *lr;        /* continuation of this long message */
    bool fini_sent, fini_recv, eof;
    pthread_mutex_t *lock;            /* a host connection shared by the launch's ranks: held while
                                         a whole packet is written (NULL: the agent's channel) */
    bool locked;
};

/* Flow control per foreign proc (sheet §4.6), and what we owe it. */
struct p2p_impi_peer {
    uint32_t sent;                    /* packets to it not yet acknowledged */
    uint32_t recvd;                   /* packets from it since our last PROTOACK */
};

extern struct kumi_impi_job p2p_impi_job;
extern int p2p_impi_me, p2p_impi_myclient, p2p_impi_myhost;
extern struct p2p_impi_host *p2p_impi_hosts;          /* by global host rank (metadata) */
extern struct p2p_impi_host p2p_impi_chan;            /* the channel to my host's agent */
extern struct p2p_impi_peer *p2p_impi_peers;          /* by world rank */
extern struct p2p_impi_lrecv *p2p_impi_lrecvs;
extern struct p2p_impi_lsend *p2p_impi_lsends;
extern size_t p2p_impi_nqueued;                       /* packets queued on every host */
extern size_t p2p_impi_stat_pk_out, p2p_impi_stat_pk_in, p2p_impi_stat_acks_out, p2p_impi_stat_acks_in,
              p2p_impi_stat_stalls;
extern bool p2p_impi_finalizing;

/* p2p_impi_io.c */
int p2p_impi_send(int peer, struct kumi_sendop *op);
int p2p_impi_host_write(struct p2p_impi_host *h);     /* >0 if something went */
int p2p_impi_host_read(struct p2p_impi_host *h);      /* >0 if something came; -1 closed */
void p2p_impi_queue_fini(struct p2p_impi_host *h);
void p2p_impi_host_failed(struct p2p_impi_host *h, const char *why) __attribute__((noreturn));
/* Where packets to world rank peer go: the connection to its host, written
 * by this rank directly (under the host's lock), or the agent's channel. */
static inline struct p2p_impi_host *p2p_impi_out_of(int peer)
{
    int h = kumi_impi_job_proc_host(&p2p_impi_job, peer);
    return h >= 0 && p2p_impi_hosts[h].fd >= 0 ? &p2p_impi_hosts[h] : &p2p_impi_chan;
}

/* The IMPI host of world rank peer (metadata), or NULL. */
static inline struct p2p_impi_host *p2p_impi_host_of(int peer)
{
    int h = kumi_impi_job_proc_host(&p2p_impi_job, peer);
    return h >= 0 ? &p2p_impi_hosts[h] : NULL;
}

#endif
