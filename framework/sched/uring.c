/* The io_uring engine of schedules (kumi_base_sched_engine = uring).
 *
 * A schedule's SEND and RECV nodes whose peer is reached over a socket
 * transport (kumi_p2p_peer_sockaddr() answers for it: tcp, not shmem or
 * self) become io_uring operations; every other node runs as in the loop
 * engine (sched.c).
 *
 * Connections.  The engine has its own TCP connection per pair of ranks, so
 * the tcp transport's stream (framed and matched by the request layer) is
 * never interleaved with the engine's bytes.  At start-up each rank listens
 * on a port of its own and publishes it (rpim key "sched.uring.port"); at
 * first use the lower world rank connects to the address the tcp transport
 * connects to for the peer (kumi_p2p_peer_sockaddr, p2p contract 1.4) with
 * that port and says who it is (4 bytes); the higher one accepts it in its
 * progress (the listening socket is polled with the transports), so
 * starting a collective never blocks on a peer that has not started it.
 * A pair uses the engine only if both ranks published a port: a rank whose
 * io_uring does not work keeps the tcp transport for everything.
 *
 * Framing.  Each message is a 56-byte header (magic, context, tag, length,
 * zeros) and its bytes.  56 bytes, as the tcp transport's header, because
 * the kernel's copy of a send into the socket (_copy_from_iter, into the
 * task's page fragment, which starts again at offset 0 once the peer has
 * read the last message) is several times slower when the data lands a few
 * bytes past the source's offset within its page: with 24 bytes, a buffer
 * malloc() returned for a large message (16 bytes into a page) landed 8
 * bytes ahead of it (a 1 MiB MPI_Iallreduce at 2 ranks over loopback: 4-15 x
 * 10^3 perf samples in the copy per 200 iterations against 1.4-2.8 x 10^3
 * with 56 bytes, t_nbc 1.1-2.2 ms against 0.46-0.54 ms; the thread engine's
 * tcp transport 1.5-1.9 x 10^3 outside an occasional slow launch).
 *
 * A send that finds its connection idle is written at once by the call
 * that made it ready (send_now: sendmsg MSG_DONTWAIT); the rest,
 * or a send behind others, is one IORING_OP_SENDMSG (header and data in two
 * iovecs, MSG_WAITALL); the sends of one connection go out in order: those
 * ready together are gathered into one SENDMSG (flush_sends), and a send
 * that becomes ready while the connection sends waits for it to end.
 * Each connection has one stream receive posted (STREAM_BUF bytes, no
 * MSG_WAITALL); when it completes (in the rank's next MPI call, or in
 * the completion thread) each header in it is matched against the RECV
 * nodes posted for that peer (context and tag, in posting order; a message
 * nobody waits for yet is received into a buffer of its own); a payload that
 * is in the buffer is copied out (a small message: one receive, one CQE), a
 * partial header waits there for the next receive, and the rest of a payload
 * that goes on past the buffer is received by the kernel straight into the
 * node's buffer (MSG_WAITALL), linked with the next stream receive.  Where
 * the DAG is a chain -- a RECV whose only successor is a SEND of the same
 * buffer that has no other predecessor (a broadcast tree's or a pipeline's
 * forwarding) -- the SEND is linked behind the payload receive, so the
 * kernel forwards the data as it lands, without the application (a payload
 * wholly in the stream buffer is forwarded by whoever parsed it).
 *
 * What moves without the application: every send once its node is ready,
 * chains of sends to one peer, the payload of a receive whose header was
 * seen, and the forwarding SEND linked to it.  What needs a CPU in user
 * space -- parsing the stream receive (once per message or less), starting
 * nodes whose predecessors completed (CALC, COPY, and sends after a CALC),
 * and the schedule's completion -- runs in the application's next MPI call, or in
 * the completion thread (kumi_base_sched_uring_thread, default 1).
 *
 * The completion thread is the thread engine's progress thread (engine.c),
 * started the same way (asleep, at MPI_Init) and sharing the library
 * with the application by the same rules (core/lock.c: below
 * MPI_THREAD_MULTIPLE the lock is off and the thread raises the entries'
 * flag while it owns the schedules; it takes over only once the
 * application has stayed out for kumi_base_sched_thread_delay_us, and parks
 * while the application is inside).  Its progress round is this file's
 * hook, complete(), and it sleeps in poll() on the ring's descriptor (fds())
 * with the transports', so it wakes when a completion arrives: once per
 * message, not per chunk of bytes as the thread engine reading a socket.
 * The ring and the engine's lists are touched only by whoever holds the
 * library (the application, or the thread under the raised flag), so no
 * schedule is progressed by two threads at once.  A request's retries run
 * as task work of the thread that submitted it: the receives the thread
 * posts (each header after a payload it reaped, the payloads of headers it
 * matched) are copied on the thread's time, not the computation's.
 *
 * Completions.  A socket receive that waits for data is completed by task
 * work the kernel queues on the rank's thread when the data comes.  With the
 * kernel's default notification an 8-byte MPI_Iallreduce waited at once cost
 * 0.1-1 ms instead of the loop engine's 5 us (Linux 6.18, 2 ranks over
 * loopback TCP): the waiting rank's CQE often appeared only at a later
 * scheduler tick (4 ms at HZ=250), although the rank was in the progress loop
 * the whole time (io_uring tracepoints: io_uring_task_add, then
 * io_uring_complete one tick later).  The ring is therefore set up with
 * IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG
 * (kumi_base_sched_uring_coop, default 1): pending task work raises
 * IORING_SQ_TASKRUN in the shared ring, io_uring_peek_cqe() sees it and
 * enters the kernel to run it, so every progress round reaps what arrived;
 * a rank asleep in poll() on the ring is still woken by the task work.
 * While the application computes the task work runs at its next entry into
 * the kernel (a system call or a tick), without an interrupt of its own.
 *
 * Non-contiguous datatypes are packed into (sends) or received through
 * (receives) a buffer of the engine.  Errors on the engine's sockets are
 * fatal, as a broken connection of the tcp transport is. */
#include "sched/sched.h"
#include <kumi/param.h>
#include <kumi/p2p.h>
#include <kumi/rpim.h>
#include <kumi/coll.h>
#include <kumi/netif.h>

static int simulate_unavailable;
static long long ring_entries = 256;
static int coop = 1;
int ur_with_thread = 1;
static int hold = 1;
int ur_nlocal, ur_nremote;              /* connections up to a peer at a loopback address, and to others */
const char *ur_loopback_cc;

void kumi_sched_uring_register_params(void)
{
    kumi_param_register_bool("kumi", "base", "sched_uring_unavailable", 0,
                             "Behave as if io_uring could not be used (tests the fall-back of "
                             "kumi_base_sched_engine=uring to the loop engine)",
                             KUMI_LEVEL_DEV, &simulate_unavailable);
    kumi_param_register_int("kumi", "base", "sched_uring_entries", 256,
                            "Submission queue entries of the io_uring engine's ring",
                            KUMI_LEVEL_TUNER, &ring_entries);
    kumi_param_register_bool("kumi", "base", "sched_uring_coop", 1,
                             "1: the ring is set up with IORING_SETUP_COOP_TASKRUN and TASKRUN_FLAG "
                             "(a completion pending in the kernel raises a flag the progress loop "
                             "reads, and is reaped at once); 0: the kernel's default notification (an "
                             "8-byte MPI_Iallreduce waited at once took 0.1-1 ms instead of 5 us)",
                             KUMI_LEVEL_TUNER, &coop);
    kumi_param_register_bool("kumi", "base", "sched_uring_thread", 1,
                             "1: a completion thread (the thread engine's progress thread) sleeps on the "
                             "ring while the application computes and, woken by a completion, matches "
                             "headers and starts CALC / COPY nodes and the sends after them; 0: those "
                             "steps wait for the application's next MPI call",
                             KUMI_LEVEL_TUNER, &ur_with_thread);
    kumi_param_register_bool("kumi", "base", "sched_uring_hold", 1,
                             "1: the completion thread takes nothing over while every CPU of the host is busy "
                             "and the engine's connections (one at least) all go to peers on this host "
                             "(loopback addresses): its work would be copies and reductions taken from a computing "
                             "process, which the application's next MPI call does as fast without the "
                             "thread's wake-ups; 0: it takes over whenever the application stays out",
                             KUMI_LEVEL_TUNER, &hold);
    kumi_param_register_string("kumi", "base", "sched_uring_loopback_cc", "reno",
                               "TCP congestion control (TCP_CONGESTION) of the io_uring engine's connections to "
                               "a loopback address (a peer on this host), as p2p_tcp_loopback_cc for the tcp "
                               "transport's; empty = the system's default (net.ipv4.tcp_congestion_control)",
                               KUMI_LEVEL_TUNER, &ur_loopback_cc);
}

bool kumi_sched_uring_thread(void)
{
    return ur_with_thread;
}

/* May the completion thread hold off while the host is busy (engine.c,
 * "When the uring thread holds off")?  Only with kumi_base_sched_uring_hold
 * 1 and once connections are up, every one of them to a peer at a loopback
 * address: not before the first (a peer not known yet, as the higher rank
 * of a pair before its accept).  Where a connection goes to a peer
 * elsewhere (its bytes cross a wire, which a take-over keeps busy while the
 * application computes), only while nothing the thread could do would put
 * bytes on a wire or let them come (wire_quiet): no SEND node of a running
 * schedule waits to be started (a broadcast tree's forwarding, the next
 * round of an allreduce at 4 ranks: kumi_sched_unsent), no send waits to
 * be submitted, and no posted receive from such a peer is larger than its
 * socket takes in unread (the rest of its bytes would stay on the sender's
 * side until this rank read the first ones).  A take-over then would only
 * match headers, copy payloads that the kernel holds already and run the
 * CALCs -- CPU work that the application's next MPI call does as fast: with
 * 2 ranks on 2 busy vCPUs over a 300 Mbit/s wire (kacc-bench.sh wire) the
 * engine without its thread lost 2-4 % of the computation at 8 B and 64 KiB
 * against 8-10 % with the take-overs, and completed sooner.  Read by the
 * thread without the library. */
static bool wire_quiet(void);

bool kumi_sched_uring_may_hold(void)
{
    if (!hold) return false;
    int nl = __atomic_load_n(&ur_nlocal, __ATOMIC_RELAXED), nr = __atomic_load_n(&ur_nremote, __ATOMIC_RELAXED);
    return nl + nr > 0 && (nr == 0 || wire_quiet());
}

#ifndef KUMI_HAVE_LIBURING
static bool wire_quiet(void) { return false; }
int kumi_sched_uring_init(void) { return -1; }
void kumi_sched_uring_stop(void) {}
bool kumi_sched_uring_take(struct kumi_sched *s, uint32_t i) { (void)s; (void)i; return false; }
bool kumi_sched_uring_quiet(void) { return false; }
unsigned long long kumi_sched_uring_declined(void) { return 0; }
bool kumi_sched_uring_cq_ready(void) { return false; }
int kumi_sched_uring_fd(void) { return -1; }
bool kumi_sched_uring_woke(void) { return false; }
bool kumi_sched_uring_big_recv(void) { return false; }
void kumi_sched_uring_doze_woke(void) {}
unsigned long kumi_sched_uring_thread_sends(void) { return 0; }
#else

#include "sched/uring_int.h"
static struct io_uring ring;
static bool up;
int ur_lfd = -1;                        /* listening socket */
struct conn **ur_conns;                 /* by world rank, made at first use */
int ur_nworld, ur_me;
int8_t *ur_usable;                      /* by world rank: 0 unknown, 1 yes, -1 no */
static int nflight;                     /* operations in flight */
static int flight_by[2];                /* of them submitted by the application [0], the thread [1] */
static unsigned long long declined;     /* SEND / RECV nodes left to the request layer (see kumi_sched_uring_quiet) */
static unsigned long long nenter, nenter_skip;     /* kernel entries to reap, and those skipped (KUMI_VERBOSE) */
static unsigned long long nringwake;    /* the completion thread found a completion on the ring (engine.c, ring_wait) */
static unsigned long long ndozewake;    /* a doze of the thread ended at a completion (engine.c, esleep_wait) */
static int nbig;                        /* posted receives whose payload goes past the stream buffer (atomic:
                                           read by the completion thread without the library) */
static int last_big;                    /* the last receive posted was such a one (atomic, as nbig) */
static int nbig_wire;                   /* posted receives from a peer across a wire larger than its socket
                                           takes in unread, or from a peer not connected yet (atomic, as nbig) */
static int nsq_sends;                   /* SENDMSG operations in the submission queue, not submitted yet
                                           (written with the library, read by the thread without it) */

static void sq_send_queued(void)
{
    __atomic_store_n(&nsq_sends, __atomic_load_n(&nsq_sends, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}
struct uop ur_acc = { .kind = OP_ACCEPT };
/* said at the end under KUMI_VERBOSE */
static unsigned long long nsends, nrecvs, nlinked, nunex, ndirect, nsmall, nsplit, ngather, ngathered;
static struct conn *dirty_conns;        /* connections whose queued sends wait for flush_dirty */
static int ndirty;                      /* how many (atomic: kumi_sched_uring_quiet reads it) */
static unsigned long thread_sends;      /* SEND nodes the completion thread started (engine.c reads it) */
#define DIRECT_BUDGET ((64 << 10) + sizeof(struct ur_hdr))
static size_t direct_left = DIRECT_BUDGET;     /* bytes send_now may still write (see there) */

static int complete(void);
static int fds(struct pollfd *f, int max);

void ur_fatal_io(const char *what, int peer, int err)
{
    kumi_err_fatal("kumi_base_sched_engine=uring: %s (rank %d) failed: %s", what, peer, strerror(err));
}

/* Submits what the submission queue holds.  Each operation's user data
 * records who submitted it: the kernel runs a socket operation's retries
 * (task work) on the submitting thread, so complete() enters the kernel to
 * run them only on that thread (see there). */
void ur_submit(void)
{
    unsigned khead = *ring.sq.khead, tail = ring.sq.sqe_tail;
    if (tail == khead) return;
    int who = kumi_lock_is_engine() ? 1 : 0;
    for (unsigned k = khead; k != tail; k++) {
        struct uop *o = (struct uop *)(uintptr_t)ring.sq.sqes[k & ring.sq.ring_mask].user_data;
        if (o == &ur_acc) continue;     /* (always posted: not counted) */
        o->by = (uint8_t)who;
        flight_by[who]++;
    }
    io_uring_submit(&ring);
    if (!io_uring_sq_ready(&ring)) __atomic_store_n(&nsq_sends, 0, __ATOMIC_RELAXED);
}

/* A linked chain must go to the kernel in one submission: room for n SQEs first. */
static void room(unsigned n)
{
    if (io_uring_sq_space_left(&ring) < n) ur_submit();
}

struct io_uring_sqe *ur_get_sqe(void)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    while (!sqe) {                      /* the queue is full: the kernel takes what is there */
        ur_submit();
        sqe = io_uring_get_sqe(&ring);
    }
    nflight++;
    return sqe;
}

int kumi_sched_uring_init(void)
{
    if (simulate_unavailable) {
        kumi_log(1, "kumi_base_sched_engine=uring: io_uring is unavailable (kumi_base_sched_uring_unavailable); "
                    "collectives use the loop engine");
        return -1;
    }
    unsigned entries = (unsigned)(ring_entries > 8 ? ring_entries : 8);
    int rc = -EINVAL;
#if defined(IORING_SETUP_COOP_TASKRUN) && defined(IORING_SETUP_TASKRUN_FLAG)
    if (coop) rc = io_uring_queue_init(entries, &ring, IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG);
#endif
    if (rc == -EINVAL) {                /* kernels before 5.19 know neither flag */
        if (coop) kumi_log(2, "kumi_base_sched_engine=uring: no IORING_SETUP_COOP_TASKRUN here; the default notification");
        rc = io_uring_queue_init(entries, &ring, 0);
    }
    if (rc < 0) {
        kumi_log(1, "kumi_base_sched_engine=uring: io_uring_setup failed (%s; see sysctl "
                    "kernel.io_uring_disabled); collectives use the loop engine", strerror(-rc));
        return -1;
    }
    int port;
    int fd = kumi_sched_listen(&port);
    if (fd < 0) {
        kumi_log(1, "kumi_base_sched_engine=uring: no listening socket (%s); collectives use the loop engine",
                 strerror(errno));
        io_uring_queue_exit(&ring);
        return -1;
    }
    char v[16];
    snprintf(v, sizeof v, "%d", port);
    if (kumi_rpim_put("sched.uring.port", v) != MPI_SUCCESS) {
        close(fd);
        io_uring_queue_exit(&ring);
        return -1;
    }
    ur_lfd = fd;
    ur_nlocal = ur_nremote = 0;
    ur_nworld = kumi_world_size();
    ur_me = kumi_world_rank();
    ur_conns = calloc((size_t)ur_nworld, sizeof *ur_conns);
    ur_usable = calloc((size_t)ur_nworld, 1);
    if (!ur_conns || !ur_usable) kumi_err_fatal("kumi_base_sched_engine=uring: out of memory");
    up = true;
    kumi_progress_set_hook(complete, fds);
    ur_post_accept();
    ur_submit();
    kumi_log(1, "kumi_base_sched_engine=uring: io_uring ring of %lld entries, listening on port %d, "
                "completion thread %s", ring_entries, port, ur_with_thread ? "on" : "off");
    return 0;
}

void kumi_sched_uring_stop(void)
{
    if (!up) return;
    kumi_log(1, "kumi_base_sched_engine=uring: %llu sends, %llu receives (%llu unexpected), %llu sends "
                "linked behind their receive, %llu sent whole by their start call, %llu in %llu gathers, %llu received "
                "whole with their header, %llu headers split between two receives; %llu kernel entries to reap, %llu "
                "skipped (task work of the other thread); %llu completion-thread take-overs from the ring, %llu dozes "
                "ended by a completion", nsends, nrecvs, nunex, nlinked, ndirect, ngathered, ngather, nsmall, nsplit,
             nenter, nenter_skip, nringwake, ndozewake);
    kumi_progress_set_hook(NULL, NULL);
    for (int i = 0; i < ur_nworld; i++)
        if (ur_conns[i]) {
            if (ur_conns[i]->fd >= 0) shutdown(ur_conns[i]->fd, SHUT_RDWR);
        }
    io_uring_queue_exit(&ring);         /* cancels what is in flight */
    for (int i = 0; i < ur_nworld; i++)
        if (ur_conns[i]) {
            if (ur_conns[i]->fd >= 0) close(ur_conns[i]->fd);
            free(ur_conns[i]->rbuf);
            free(ur_conns[i]);          /* leftovers of an unfinished job are not worth tracking */
        }
    free(ur_conns); ur_conns = NULL;
    free(ur_usable); ur_usable = NULL;
    close(ur_lfd);
    ur_lfd = -1;
    up = false;
    nbig = last_big = nbig_wire = nsq_sends = 0;
    dirty_conns = NULL;
    ndirty = 0;
    nflight = 0;
    flight_by[0] = flight_by[1] = 0;
}

/* ------------------------------------------------------------ operations */
/* The connection's stream receive: whatever the socket holds, up to what is
 * left of the buffer after a partial header (no MSG_WAITALL). */
static void prep_hdr(struct conn *c, struct io_uring_sqe *sqe)
{
    io_uring_prep_recv(sqe, c->fd, c->rbuf + c->rlen, STREAM_BUF - c->rlen, 0);
    io_uring_sqe_set_data(sqe, c->hdr);
}

void ur_post_hdr(struct conn *c)
{
    if (!c->hdr && !(c->hdr = calloc(1, sizeof *c->hdr))) kumi_err_fatal("kumi_base_sched_engine=uring: out of memory");
    if (!c->rbuf && !(c->rbuf = malloc(STREAM_BUF))) kumi_err_fatal("kumi_base_sched_engine=uring: out of memory");
    c->hdr->kind = OP_HDR;
    c->hdr->c = c;
    prep_hdr(c, ur_get_sqe());
}

static void prep_send(struct uop *o, struct io_uring_sqe *sqe)
{
    size_t off = o->done, h = sizeof o->h;    /* what is left of header + data */
    if (off < h) {
        o->iov[0].iov_base = (char *)&o->h + off;
        o->iov[0].iov_len = h - off;
        o->iov[1].iov_base = o->data;
        o->iov[1].iov_len = o->dlen;
        o->msg.msg_iovlen = 2;
    } else {
        o->iov[0].iov_base = o->data + (off - h);
        o->iov[0].iov_len = o->dlen - (off - h);
        o->msg.msg_iovlen = 1;
    }
    o->msg.msg_iov = o->iov;
    if (!sqe) return;                   /* (send_now: the message header only) */
    io_uring_prep_sendmsg(sqe, o->c->fd, &o->msg, MSG_WAITALL | MSG_NOSIGNAL);
    io_uring_sqe_set_data(sqe, o);
    sq_send_queued();
}

/* Submit the sends waiting on c: one SENDMSG, or, for several, one SENDMSG
 * gathering up to GATHER_MAX of them (each one's header and data: 2 iovecs),
 * so the kernel writes them all in one operation.  A linked chain of one
 * SENDMSG per message (before) let each start only once the one before it
 * completed, a round of task work on the submitting thread per message: a
 * pipelined 1 MiB MPI_Ibcast's 16 segments of 64 KiB took 1.6 x the
 * computation's time at k = 0 where one 1 MiB send took 1.3 (kacc bench). */
#define GATHER_MAX 64
void ur_flush_sends(struct conn *c)
{
    if (c->state != C_UP || c->sending || !c->sq) return;
    struct uop *o = c->sq, *p = o, *last = NULL;
    if (!o->next) {
        c->sq = c->sqtail = NULL;
        prep_send(o, ur_get_sqe());
        c->sending++;
        return;
    }
    int n = 0;
    for (; p && n < GATHER_MAX; p = p->next) n++;
    struct uop *g = calloc(1, sizeof *g);
    if (!g || !(g->giov = malloc(2 * (size_t)n * sizeof *g->giov)))
        kumi_err_fatal("kumi_base_sched_engine=uring: out of memory");
    g->kind = OP_GATHER;
    g->c = c;
    g->batch = o;
    size_t k = 0;
    for (p = o; n-- > 0; last = p, p = p->next) {
        prep_send(p, NULL);             /* what is left of its header and data */
        for (size_t j = 0; j < p->msg.msg_iovlen; j++)
            if (p->iov[j].iov_len) g->giov[k++] = p->iov[j];
        g->total += p->total - p->done;
        ngathered++;
    }
    last->next = NULL;
    c->sq = p;
    if (!p) c->sqtail = NULL;
    ngather++;
    g->msg.msg_iov = g->giov;
    g->msg.msg_iovlen = k;
    struct io_uring_sqe *sqe = ur_get_sqe();
    io_uring_prep_sendmsg(sqe, c->fd, &g->msg, MSG_WAITALL | MSG_NOSIGNAL);
    io_uring_sqe_set_data(sqe, g);
    sq_send_queued();
    c->sending++;
}

/* A start call queues its sends on the connection and leaves them there
 * (c on the dirty list); the progress round that submits the queue flushes
 * them first, so the sends a schedule's start makes ready together (a
 * pipeline's segments) go out as one gather, not the first alone and the
 * rest once it completed. */
static void mark_dirty(struct conn *c)
{
    if (c->dirty || c->state != C_UP || c->sending) return;
    c->dirty = true;
    c->dnext = dirty_conns;
    dirty_conns = c;
    __atomic_add_fetch(&ndirty, 1, __ATOMIC_RELAXED);
}

static void flush_dirty(void)
{
    while (dirty_conns) {
        struct conn *c = dirty_conns;
        dirty_conns = c->dnext;
        c->dirty = false;
        ur_flush_sends(c);
        __atomic_sub_fetch(&ndirty, 1, __ATOMIC_RELAXED);
    }
}

/* The first n bytes of m's iovecs went out. */
static void iov_advance(struct msghdr *m, size_t n)
{
    while (n && m->msg_iovlen) {
        struct iovec *v = m->msg_iov;
        if (n < v->iov_len) {
            v->iov_base = (char *)v->iov_base + n;
            v->iov_len -= n;
            return;
        }
        n -= v->iov_len;
        m->msg_iov++;
        m->msg_iovlen--;
    }
}

static size_t node_bytes(const struct kumi_sched_node *nd, struct kumi_dt **dtp)
{
    struct kumi_dt *dt = kumi_dt_get((MPI_Datatype)(uintptr_t)nd->dt);
    *dtp = dt;
    return dt ? (size_t)nd->count * dt->size : 0;
}

/* A send operation for SEND node i (not queued yet). */
static struct uop *make_send(struct kumi_sched *s, uint32_t i, struct conn *c)
{
    const struct kumi_sched_node *nd = &s->node[i];
    struct kumi_dt *dt;
    size_t bytes = node_bytes(nd, &dt);
    struct uop *o = calloc(1, sizeof *o);
    if (!o) kumi_err_fatal("kumi_base_sched_engine=uring: out of memory");
    o->kind = OP_SEND;
    nsends++;
    o->c = c;
    o->s = s;
    o->node = i;
    o->h.magic = UR_MAGIC;
    o->h.ctx = s->comm->ctx + 1;
    o->h.tag = s->tagbase + nd->tag;
    o->h.len = bytes;
    char *data;
    if (dt->contig || !bytes) {
        data = (char *)(uintptr_t)nd->buf + (bytes ? dt->true_lb : 0);
    } else {
        if (!(o->tmp = malloc(bytes))) kumi_err_fatal("kumi_base_sched_engine=uring: out of memory");
        kumi_dt_copy((const void *)(uintptr_t)nd->buf, (size_t)nd->count, (MPI_Datatype)(uintptr_t)nd->dt,
                     o->tmp, bytes, MPI_BYTE);
        data = o->tmp;
    }
    o->data = data;
    o->dlen = bytes;
    o->total = sizeof o->h + bytes;
    return o;
}

static void queue_send(struct conn *c, struct uop *o)
{
    if (c->sqtail) c->sqtail->next = o;
    else c->sq = o;
    c->sqtail = o;
}

/* The RECV node rv waits for has its message: finish it. */
static void recv_over(struct urecv *rv, int err)
{
    struct kumi_sched *s = rv->s;
    const struct kumi_sched_node *nd = &s->node[rv->node];
    if (err == MPI_SUCCESS && rv->tmp) {
        size_t n = rv->len < rv->cap ? (size_t)rv->len : rv->cap;
        kumi_dt_copy(rv->tmp, n, MPI_BYTE, (void *)(uintptr_t)nd->buf, (size_t)nd->count,
                     (MPI_Datatype)(uintptr_t)nd->dt);
    }
    free(rv->tmp);
    uint32_t i = rv->node;
    if (rv->big) __atomic_sub_fetch(&nbig, 1, __ATOMIC_RELAXED);
    if (rv->wire) __atomic_sub_fetch(&nbig_wire, 1, __ATOMIC_RELAXED);
    free(rv);
    kumi_sched_msg_done(s, i, err);
}

static int trunc_err(struct urecv *rv)
{
    return kumi_error(MPI_ERR_TRUNCATE, "%s: a message of %llu bytes from rank %d was truncated to %zu bytes "
                      "(the ranks disagree on counts or datatypes)", rv->s->req ? rv->s->req->fname : "collective",
                      (unsigned long long)rv->len, rv->s->node[rv->node].peer, rv->cap);
}

/* Deliver unexpected message u to receive rv (u's payload is complete). */
static void deliver_unex(struct unex *u, struct urecv *rv)
{
    rv->len = u->len;
    size_t n = u->len < rv->cap ? (size_t)u->len : rv->cap;
    if (n) memcpy(rv->buf, u->data, n);
    free(u->data);
    free(u);
    recv_over(rv, rv->len > rv->cap ? trunc_err(rv) : MPI_SUCCESS);
}

/* A message's payload is in (o: its receive, done or never submitted). */
static void payload_in(struct conn *c, struct uop *o)
{
    if (o->rv) {
        struct urecv *rv = o->rv;
        int err = MPI_SUCCESS;
        if (o->tmp) {                   /* truncated */
            if (rv->cap) memcpy(rv->buf, o->tmp, rv->cap);
            err = trunc_err(rv);
            free(o->tmp);
        }
        free(o);
        recv_over(rv, err);
    } else {
        struct unex *u = o->ux;
        free(o);
        u->complete = true;
        if (u->waiter) {                /* matched meanwhile */
            struct urecv *rv = u->waiter;
            struct unex **pp = &c->unex, *prev = NULL;
            while (*pp != u) { prev = *pp; pp = &(*pp)->next; }
            *pp = u->next;
            if (c->utail == u) c->utail = prev;
            deliver_unex(u, rv);
        }
    }
}

/* Header h of c: match it against the RECV nodes posted for the peer; the
 * operation that receives its payload (where: o->iov[0].iov_base).  With
 * linkable (the payload is not all in the stream buffer), *fwdp: the
 * forwarding SEND that can be linked behind its receive, or NULL. */
static struct uop *match_hdr(struct conn *c, const struct ur_hdr *hp, bool linkable, struct uop **fwdp)
{
    struct ur_hdr h = *hp;
    if (h.magic != UR_MAGIC) kumi_err_fatal("kumi_base_sched_engine=uring: bad frame from rank %d", c->peer);
    struct urecv *rv = c->posted, *prev = NULL;
    while (rv && !(rv->ctx == h.ctx && rv->tag == h.tag)) { prev = rv; rv = rv->next; }
    struct uop *o = calloc(1, sizeof *o);
    if (!o) kumi_err_fatal("kumi_base_sched_engine=uring: out of memory");
    o->kind = OP_PAYLOAD;
    o->c = c;
    o->total = h.len;
    char *dst;
    *fwdp = NULL;
    if (rv) {
        if (prev) prev->next = rv->next;
        else c->posted = rv->next;
        if (c->ptail == rv) c->ptail = prev;
        rv->len = h.len;
        o->rv = rv;
        if (h.len <= rv->cap) {
            dst = rv->buf;
            /* a chain: the RECV's one successor is a SEND of the same data, after nothing else */
            struct kumi_sched *s = rv->s;
            const struct kumi_sched_node *nd = &s->node[rv->node];
            if (linkable && !rv->tmp && nd->nsucc == 1 && s->uflag) {
                uint32_t j = s->succ[nd->first];
                const struct kumi_sched_node *sn = &s->node[j];
                int w = sn->kind == KUMI_SCHED_SEND && sn->npred == 1 && sn->buf == nd->buf &&
                        sn->count == nd->count && sn->dt == nd->dt && sn->peer != MPI_PROC_NULL
                        ? kumi_comm_peer_world(s->comm, sn->peer) : -1;
                if (w >= 0 && ur_peer_usable(w)) {
                    struct conn *oc = ur_get_conn(w);
                    if (oc->state == C_UP && !oc->sending && !oc->sq) {
                        struct uop *fwd = make_send(s, j, oc);
                        fwd->is_fwd = true;
                        if (kumi_lock_is_engine()) thread_sends++;
                        nlinked++;
                        s->uflag[j] = 1;
                        s->inflight++;
                        *fwdp = fwd;
                    }
                }
            }
        } else {                        /* truncated: receive it all, keep what fits */
            if (!(o->tmp = malloc(h.len))) kumi_err_fatal("kumi_base_sched_engine=uring: out of memory");
            dst = o->tmp;
        }
    } else {
        struct unex *u = calloc(1, sizeof *u);
        if (!u || (h.len && !(u->data = malloc(h.len)))) kumi_err_fatal("kumi_base_sched_engine=uring: out of memory");
        nunex++;
        u->ctx = h.ctx;
        u->tag = h.tag;
        u->len = h.len;
        if (c->utail) c->utail->next = u;
        else c->unex = u;
        c->utail = u;
        o->ux = u;
        dst = u->data;
    }
    o->iov[0].iov_base = dst;
    return o;
}

/* The stream receive of c brought bytes (c->rlen of them in c->rbuf): each
 * whole message in it (header and payload: a small message costs one
 * receive) is matched and delivered from the buffer; a message whose payload
 * goes on past the buffer has the rest received by the kernel straight into
 * its destination (MSG_WAITALL), the forwarding send [linked behind that],
 * then the next stream receive, in this order on the socket.  A partial
 * header stays at the buffer's start for the next receive. */
static void got_stream(struct conn *c)
{
    size_t off = 0;
    while (c->rlen - off >= sizeof(struct ur_hdr)) {
        struct ur_hdr h;
        memcpy(&h, c->rbuf + off, sizeof h);
        size_t avail = c->rlen - off - sizeof h;
        bool whole = h.len <= avail;
        struct uop *fwd;
        struct uop *o = match_hdr(c, &h, !whole, &fwd);
        char *dst = o->iov[0].iov_base;
        size_t n = whole ? (size_t)h.len : avail;
        if (n) memcpy(dst, c->rbuf + off + sizeof h, n);
        off += sizeof h + n;
        if (whole) {
            nsmall++;
            payload_in(c, o);           /* may start more nodes; c's buffer is not touched */
            continue;
        }
        /* the rest of the payload -> [forwarding send ->] next stream receive */
        c->rlen = 0;
        o->done = n;
        room(3);
        c->payload = o;
        size_t rest = (size_t)h.len - n;
        int fl = ur_payload_flags(c, rest);
        struct io_uring_sqe *sqe = ur_get_sqe();
        io_uring_prep_recv(sqe, c->fd, dst + n, rest, fl);
        io_uring_sqe_set_data(sqe, o);
        if (!(fl & MSG_WAITALL)) {      /* received in pieces: a short piece would not break a link,
                                           so what follows is posted once the payload is in, as
                                           after a broken link (done_op, OP_PAYLOAD) */
            if (fwd) {
                o->fwd = fwd;
                fwd->cancelled = true;
                fwd->c->sending++;
            }
            c->hdr_cancelled = true;
            return;
        }
        sqe->flags |= IOSQE_IO_LINK;
        if (fwd) {                      /* recv -> forwarding send, in the kernel */
            o->fwd = fwd;
            struct io_uring_sqe *s2 = ur_get_sqe();
            prep_send(fwd, s2);
            s2->flags |= IOSQE_IO_LINK;
            fwd->c->sending++;
        }
        ur_post_hdr(c);
        return;
    }
    c->rlen -= off;
    if (c->rlen) nsplit++;
    if (c->rlen && off) memmove(c->rbuf, c->rbuf + off, c->rlen);
    ur_post_hdr(c);
}

/* Completion of one operation. */
static void done_op(struct uop *o, int res)
{
    struct conn *c = o->c;
    switch (o->kind) {
    case OP_ACCEPT:
        ur_accepted(res);
        return;
    case OP_HDR:
        if (res == -ECANCELED && c->payload) { c->hdr_cancelled = true; return; }
        if (res == -ECANCELED || res == -EINTR || res == -EAGAIN) { prep_hdr(c, ur_get_sqe()); return; }
        if (res == 0 && c->rlen == 0) {     /* the peer closed it (it finalized) */
            kumi_log(2, "kumi_base_sched_engine=uring: rank %d closed its connection", c->peer);
            c->state = C_CLOSED;
            return;
        }
        if (res <= 0) ur_fatal_io("receive", c->peer, res < 0 ? -res : ECONNRESET);
        c->rlen += (size_t)res;
        got_stream(c);
        return;
    case OP_PAYLOAD:
        if (o->total) {
            if (res == -EINTR || res == -EAGAIN) res = 0;
            else if (res <= 0) ur_fatal_io("receive", c->peer, res < 0 ? -res : ECONNRESET);
            o->done += (size_t)res;
            if (o->done < o->total) {   /* short: the rest */
                struct io_uring_sqe *sqe = ur_get_sqe();
                io_uring_prep_recv(sqe, c->fd, (char *)o->iov[0].iov_base + o->done, o->total - o->done,
                                   ur_payload_flags(c, o->total - o->done));
                io_uring_sqe_set_data(sqe, o);
                return;
            }
        }
        if (c->payload == o) {
            c->payload = NULL;
            ur_payload_over(c);
            if (c->hdr_cancelled) { c->hdr_cancelled = false; prep_hdr(c, ur_get_sqe()); }
        }
        if (o->fwd && o->fwd->cancelled) { o->fwd->cancelled = false; prep_send(o->fwd, ur_get_sqe()); }
        payload_in(c, o);
        return;
    case OP_SEND:
        if (res == -ECANCELED && o->is_fwd) { o->cancelled = true; return; }   /* its payload receive broke the link */
        if (res == -EINTR || res == -EAGAIN) res = 0;
        else if (res < 0) ur_fatal_io("send", c->peer, -res);
        o->done += (size_t)res;
        if (o->done < o->total) {
            prep_send(o, ur_get_sqe());
            return;
        }
        c->sending--;
        struct kumi_sched *s = o->s;
        uint32_t i = o->node;
        free(o->tmp);
        free(o);
        ur_flush_sends(c);
        kumi_sched_msg_done(s, i, MPI_SUCCESS);
        return;
    case OP_GATHER: {
        if (res == -EINTR || res == -EAGAIN) res = 0;
        else if (res < 0) ur_fatal_io("send", c->peer, -res);
        o->done += (size_t)res;
        if (o->done < o->total) {
            iov_advance(&o->msg, (size_t)res);
            struct io_uring_sqe *sqe = ur_get_sqe();
            io_uring_prep_sendmsg(sqe, c->fd, &o->msg, MSG_WAITALL | MSG_NOSIGNAL);
            io_uring_sqe_set_data(sqe, o);
            sq_send_queued();
            return;
        }
        c->sending--;
        struct uop *b = o->batch;
        free(o->giov);
        free(o);
        ur_flush_sends(c);
        while (b) {
            struct uop *nx = b->next;
            struct kumi_sched *bs = b->s;
            uint32_t bi = b->node;
            free(b->tmp);
            free(b);
            kumi_sched_msg_done(bs, bi, MPI_SUCCESS);
            b = nx;
        }
        return;
    }
    }
}

/* Reap completions (the progress hook); returns how many.
 *
 * The completion queue is read in user space; the kernel is entered only
 * when it holds nothing and this thread has work to run there: a flag in
 * the ring (IORING_SQ_TASKRUN, kumi_base_sched_uring_coop) says task work
 * is pending, but not whose, and a socket operation's retries run on the
 * thread that submitted it.  io_uring_peek_cqe() entered at every empty
 * look while the flag was up, so an application waiting in MPI_Wait for
 * the completion thread's operations made a useless io_uring_enter at
 * every progress round (its own task work has nothing to run: the
 * thread's is run by the thread, which the task work wakes).  Now it
 * enters only while operations it submitted are in flight (flight_by). */
static int complete(void)
{
    if (!up) return 0;
    int n = 0;
    direct_left = DIRECT_BUDGET;
    int mine = kumi_lock_is_engine() ? 1 : 0;
    bool entered = false;
    for (;;) {
        struct io_uring_cqe *cqe = NULL;
        if (__io_uring_peek_cqe(&ring, &cqe, NULL) != 0 || !cqe) {
            unsigned fl = IO_URING_READ_ONCE(*ring.sq.kflags);
            if (entered || !(fl & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW))) break;
            if (!(fl & IORING_SQ_CQ_OVERFLOW) && flight_by[mine] == 0) { nenter_skip++; break; }
            entered = true;             /* once a round: the next round looks again */
            nenter++;
            io_uring_get_events(&ring);
            continue;
        }
        struct uop *o = io_uring_cqe_get_data(cqe);
        int res = cqe->res;
        io_uring_cqe_seen(&ring, cqe);
        nflight--;
        if (o != &ur_acc && flight_by[o->by] > 0) flight_by[o->by]--;
        done_op(o, res);
        n++;
    }
    flush_dirty();
    if (io_uring_sq_ready(&ring)) ur_submit();
    /* what the completions started (a send behind a CALC, a receive larger than its socket
     * takes in unread) may end a held doze of the thread (engine.c, kumi_sched_engine_ran) */
    if (n > 0 && !mine) kumi_sched_engine_ran();
    return n;
}

/* Descriptors to sleep on: the ring (readable when completions wait). */
static int fds(struct pollfd *f, int max)
{
    if (!up || max < 1) return 0;
    int n = 0;
    f[n].fd = ring.ring_fd;
    f[n].events = POLLIN;
    f[n++].revents = 0;
    return n;
}

/* ------------------------------------------------------------ the completion thread's sleep */
/* engine.c's progress thread, while the application computes and every
 * message of the running schedules is the kernel's (nothing waits in the
 * submission queue, no node went to the request layer: see
 * kumi_sched_uring_declined), sleeps on the ring itself, without the
 * library, and takes the schedules over only when a completion is there
 * (engine.c, "The uring engine's thread").  Without the library it reads
 * only the rings' indexes (the kernel's shared memory) and polls the
 * ring's descriptor; the ring is torn down only after the thread stopped. */
/* (see kumi_sched_uring_may_hold) */
static bool wire_quiet(void)
{
    return kumi_sched_unsent() == 0 && __atomic_load_n(&ndirty, __ATOMIC_RELAXED) == 0 &&
           __atomic_load_n(&nsq_sends, __ATOMIC_RELAXED) == 0 && __atomic_load_n(&nbig_wire, __ATOMIC_RELAXED) == 0;
}

bool kumi_sched_uring_quiet(void)
{
    return up && io_uring_sq_ready(&ring) == 0 && __atomic_load_n(&ndirty, __ATOMIC_RELAXED) == 0;
}

unsigned long long kumi_sched_uring_declined(void)
{
    return __atomic_load_n(&declined, __ATOMIC_RELAXED);
}

bool kumi_sched_uring_cq_ready(void)
{
    return up && io_uring_cq_ready(&ring) > 0;
}

int kumi_sched_uring_fd(void)
{
    return up ? ring.ring_fd : -1;
}

/* Before or after the thread's sleep on the ring (engine.c, ring_wait):
 * true when a completion waits (counted for the KUMI_VERBOSE summary).  The thread's
 * own task work (the retries of the operations it submitted) woke it and
 * ran on its way out of ppoll(). */
bool kumi_sched_uring_woke(void)
{
    if (!up || !io_uring_cq_ready(&ring)) return false;
    nringwake++;
    return true;
}

/* A receive is posted whose payload goes on past the stream buffer (once
 * its header is parsed the kernel receives the rest straight into place),
 * or the last one posted was such a one: between two operations, when the
 * completion thread begins a doze, none is posted, and the next operation
 * is taken to be like the last (engine.c, esleep_wait: only then does a
 * doze watch the ring). */
bool kumi_sched_uring_big_recv(void)
{
    return __atomic_load_n(&nbig, __ATOMIC_RELAXED) > 0 || __atomic_load_n(&last_big, __ATOMIC_RELAXED);
}

/* A doze of the completion thread (engine.c, esleep_wait) watched the ring
 * and ended at a completion (counted for the KUMI_VERBOSE summary; the
 * thread's own counter, read after it was joined). */
/* read by the completion thread itself, outside the library: its own count */
unsigned long kumi_sched_uring_thread_sends(void)
{
    return thread_sends;
}

void kumi_sched_uring_doze_woke(void)
{
    ndozewake++;
}

/* ------------------------------------------------------------ nodes */
/* A send that finds its connection idle (up, nothing in flight or queued
 * before it) is first written by the start call itself, without waiting:
 * one sendmsg(MSG_DONTWAIT), as the tcp transport's start does.  What the
 * socket takes at once goes out now, not when the completion thread next
 * submits (left in the submission queue, an 8-byte MPI_Iallreduce's send
 * waited for the thread's take-over, or for the peer's MPI_Wait, and its
 * completion was one more CQE to reap); the rest, if any, becomes the
 * io_uring operation as before, submitted by the thread (its retries are
 * the thread's task work).  True when all of it went out.
 *
 * At most DIRECT_BUDGET bytes are written so between two progress rounds
 * (complete() renews it) or two entries of the application into the
 * library (kumi_lock_app_entries): a 64 KiB message goes out whole, but a
 * start call does not copy a 1 MiB message, or a pipeline's 16 segments,
 * into the socket on the computation's time (kacc bench, 1 MiB at k = 0:
 * the computation lost 30-45 % with every send written by the start call,
 * 1-36 % with the thread writing them, on a loaded host); those go to the
 * ring as before.  (Renewed by progress rounds alone, the budget stayed
 * spent across calls that run none -- an MPI_Wait of a request already
 * complete, as a root's whose send went out whole -- and the next start
 * call left even an 8-byte send in the submission queue for the thread or
 * the next wait: 151 of 320 64 KiB MPI_Ibcast sends, 2 ranks, each
 * followed by 600 us of computation, a wait and a barrier.) */
static unsigned direct_gen;             /* kumi_lock_app_entries() when direct_left was renewed */
static bool send_now(struct conn *c, struct uop *o)
{
    if (!kumi_lock_is_engine()) {
        unsigned g = kumi_lock_app_entries();
        if (g != direct_gen) { direct_gen = g; direct_left = DIRECT_BUDGET; }
    }
    if (c->state != C_UP || c->sending || c->sq || o->total > direct_left) return false;
    prep_send(o, NULL);
    ssize_t r;
    do r = sendmsg(c->fd, &o->msg, MSG_DONTWAIT | MSG_NOSIGNAL); while (r < 0 && errno == EINTR);
    if (r < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK) ur_fatal_io("send", c->peer, errno);
        return false;
    }
    o->done = (size_t)r;
    direct_left -= o->done;
    if (o->done < o->total) return false;
    ndirect++;
    return true;
}

bool kumi_sched_uring_take(struct kumi_sched *s, uint32_t i)
{
    if (!up) return false;
    const struct kumi_sched_node *nd = &s->node[i];
    if (s->uflag && s->uflag[i]) return true;        /* linked ahead: in flight already */
    if (nd->peer == MPI_PROC_NULL) return false;
    int w = kumi_comm_peer_world(s->comm, nd->peer);
    if (!ur_peer_usable(w) || (!s->uflag && !(s->uflag = calloc(s->n, 1)))) {
        /* a request of the request layer: the thread must poll (read without the library lock) */
        __atomic_add_fetch(&declined, 1, __ATOMIC_RELAXED);
        return false;
    }
    struct conn *c = ur_get_conn(w);
    s->inflight++;
    if (nd->kind == KUMI_SCHED_SEND) {
        struct uop *o = make_send(s, i, c);
        if (kumi_lock_is_engine()) thread_sends++;
        if (send_now(c, o)) {           /* all of it taken by the socket: over */
            free(o->tmp);
            free(o);
            kumi_sched_msg_done(s, i, MPI_SUCCESS);
            return true;
        }
        queue_send(c, o);
        mark_dirty(c);
    } else {
        struct kumi_dt *dt;
        size_t bytes = node_bytes(nd, &dt);
        struct urecv *rv = calloc(1, sizeof *rv);
        if (!rv) kumi_err_fatal("kumi_base_sched_engine=uring: out of memory");
        nrecvs++;
        rv->s = s;
        rv->node = i;
        rv->ctx = s->comm->ctx + 1;
        rv->tag = s->tagbase + nd->tag;
        rv->cap = bytes;
        rv->big = bytes > STREAM_BUF - sizeof(struct ur_hdr);
        if (rv->big) __atomic_add_fetch(&nbig, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&last_big, rv->big, __ATOMIC_RELAXED);
        rv->wire = rv->big && (c->state != C_UP || (c->remote && bytes + sizeof(struct ur_hdr) > c->rcvroom));
        if (rv->wire) __atomic_add_fetch(&nbig_wire, 1, __ATOMIC_RELAXED);
        if (dt->contig || !bytes) {
            rv->buf = (char *)(uintptr_t)nd->buf + (bytes ? dt->true_lb : 0);
        } else {
            if (!(rv->tmp = malloc(bytes))) kumi_err_fatal("kumi_base_sched_engine=uring: out of memory");
            rv->buf = rv->tmp;
        }
        /* an unexpected message first (arrival order) */
        for (struct unex *u = c->unex, *prev = NULL; u; prev = u, u = u->next) {
            if (u->ctx != rv->ctx || u->tag != rv->tag || u->waiter) continue;
            if (!u->complete) { u->waiter = rv; return true; }
            if (prev) prev->next = u->next;
            else c->unex = u->next;
            if (c->utail == u) c->utail = prev;
            deliver_unex(u, rv);
            return true;
        }
        if (c->ptail) c->ptail->next = rv;
        else c->posted = rv;
        c->ptail = rv;
    }
    /* With the completion thread the start call leaves its sends queued on
     * their connection (mark_dirty) and anything else in the submission
     * queue: the thread flushes and submits them when it takes the schedule
     * over (or the application's next MPI call does, a wait at once), so
     * their retries -- the rest of a send the socket could not take at once
     * -- are the thread's task work, run when the socket is ready, instead of
     * the computing application's, run at its next scheduler tick. */
    if (!ur_with_thread) {
        flush_dirty();
        if (io_uring_sq_ready(&ring)) ur_submit();
    }
    return true;
}
#endif
