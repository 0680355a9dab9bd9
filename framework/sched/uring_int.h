/* The io_uring engine's internals (sched/uring.c, sched/uring_conn.c):
 * the wire header, the operations in flight, the connections, and what the
 * two files share.  Only with liburing (KUMI_HAVE_LIBURING). */
#ifndef KUMI_SCHED_URING_INT_H
#define KUMI_SCHED_URING_INT_H
#include "sched/sched.h"
#ifdef KUMI_HAVE_LIBURING
#include <kumi/param.h>
#include <kumi/p2p.h>
#include <kumi/rpim.h>
#include <kumi/coll.h>
#include <kumi/netif.h>

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define UR_MAGIC 0x4b55524eu            /* "KURN" */
#define STREAM_BUF 4096                 /* a connection's stream receive buffer */

struct ur_hdr {
    uint32_t magic;
    int32_t ctx;
    int32_t tag;
    uint32_t pad;
    uint64_t len;
    uint8_t align[32];                  /* zero; 56 bytes in all: see "Framing" */
};

enum { OP_HDR = 1, OP_PAYLOAD, OP_SEND, OP_GATHER, OP_ACCEPT };

struct conn;

/* An io_uring operation in flight (the SQE's user data). */
struct uop {
    int kind;
    struct conn *c;
    struct uop *next;                   /* a connection's send queue, or a gather's sends */
    struct uop *batch;                  /* GATHER: the sends it writes (chained by next) */
    struct iovec *giov;                 /* GATHER: their headers and data */
    struct kumi_sched *s;               /* SEND, PAYLOAD of a posted receive */
    uint32_t node;
    struct ur_hdr h;
    struct iovec iov[2];
    struct msghdr msg;
    size_t total, done;                 /* SEND: bytes of header and data; PAYLOAD: of the data */
    void *tmp;                          /* packed data (SEND), or received data (PAYLOAD) */
    struct urecv *rv;                   /* PAYLOAD: the receive it fills (NULL: unexpected) */
    struct unex *ux;                    /* PAYLOAD of an unexpected message */
    struct uop *fwd;                    /* PAYLOAD: the SEND linked behind it */
    bool cancelled;                     /* SEND: its link broke; resubmitted after the payload */
    bool is_fwd;                        /* SEND linked behind a payload receive */
    uint8_t by;                         /* submitted by: 0 the application, 1 the completion thread */
    char *data;                         /* SEND: the data */
    size_t dlen;
};

/* A RECV node posted on a connection, not matched yet. */
struct urecv {
    struct urecv *next;
    struct kumi_sched *s;
    uint32_t node;
    int32_t ctx, tag;
    void *buf;                          /* where the data goes (user buffer, or tmp) */
    size_t cap;
    void *tmp;                          /* non-contiguous type: unpacked at the end */
    uint64_t len;                       /* the matched message's length */
    bool big;                           /* counted in nbig (see there) */
    bool wire;                          /* counted in nbig_wire (see there) */
};

/* A message that arrived before its RECV node was posted. */
struct unex {
    struct unex *next;
    int32_t ctx, tag;
    void *data;
    uint64_t len;
    bool complete;
    struct urecv *waiter;               /* matched while its payload still arrives */
};

enum { C_NONE, C_WAIT_ACCEPT, C_UP, C_CLOSED };

struct conn {
    int state;
    int fd;
    int peer;                           /* world rank */
    int sending;                        /* SEND operations in flight */
    struct uop *sq, *sqtail;            /* sends waiting for the connection */
    struct urecv *posted, *ptail;
    struct unex *unex, *utail;
    struct uop *hdr;                    /* the stream receive (headers and small payloads) */
    char *rbuf;                         /* its buffer (STREAM_BUF bytes) */
    size_t rlen;                        /* bytes in it not parsed yet (a partial header) */
    struct uop *payload;                /* the payload receive in flight */
    bool hdr_cancelled;                 /* its link broke: posted again after the payload */
    int lowat;                          /* SO_RCVLOWAT set for a payload (0: the default) */
    bool dirty;                         /* sends queued by a start call, not flushed yet (see flush_dirty) */
    struct conn *dnext;
    bool remote;                        /* up, to a peer that is not at a loopback address */
    size_t rcvroom;                     /* then: what its socket takes in unread (half its SO_RCVBUF at the start) */
};

/* uring.c: parameters, state, the ring's helpers, the operations */
extern int ur_with_thread;              /* kumi_base_sched_uring_thread */
extern const char *ur_loopback_cc;      /* kumi_base_sched_uring_loopback_cc */
extern int ur_nlocal, ur_nremote;       /* connections up to a peer at a loopback address, and to others (atomic) */
extern int ur_lfd;                      /* listening socket */
extern struct conn **ur_conns;          /* by world rank, made at first use */
extern int ur_nworld, ur_me;
extern int8_t *ur_usable;               /* by world rank: 0 unknown, 1 yes, -1 no */
extern struct uop ur_acc;               /* the accept operation (always posted) */
void ur_fatal_io(const char *what, int peer, int err);
void ur_submit(void);
struct io_uring_sqe *ur_get_sqe(void);
void ur_post_hdr(struct conn *c);
void ur_flush_sends(struct conn *c);

/* uring_conn.c: connections */
struct conn *ur_get_conn(int w);
bool ur_peer_usable(int w);
void ur_conn_up(struct conn *c, int fd);
void ur_post_accept(void);
void ur_accepted(int fd);
int ur_payload_flags(struct conn *c, size_t rest);
void ur_payload_over(struct conn *c);

#endif
#endif
