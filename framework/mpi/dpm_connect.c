/* Dynamic processes, connections: MPI_Comm_accept, MPI_Comm_connect (MPI-4.1
 * sec. 11.4.3) and MPI_Comm_join (sec. 11.8.4).
 *
 * Both sides are groups of processes (an intracommunicator and a root each;
 * join: one process each) that may belong to different jobs.  The protocol:
 *   1. every process of each group makes itself reachable by processes of
 *      other jobs (kumi_req_xjob_card: the p2p transport's address card) and
 *      the root gathers (job, rank, card) of its group;
 *   2. the roots connect: through the port (mpi/dpm_port.c: the accepting
 *      root opened it; the port's token is checked), or join's socket; the
 *      accepting side's root sends HELLO {"KUMIDPM1", a fresh 32-byte key
 *      and its id}, the other answers with its own magic; then both send
 *      their group's list (an error found so far travels instead, as a
 *      class and a message, so that both sides fail with it);
 *   3. each root broadcasts the outcome, the key and the other group's list
 *      in its group; every process adds the other group's processes as
 *      peers (kumi_req_xpeer: the transport authenticates their connections
 *      with the key, never with a job secret);
 *   4. each group reduces "every process added them" (the worst error
 *      class); the roots exchange that, and broadcast it: no process sends
 *      to the other group before every process of both groups can receive
 *      from it;
 *   5. the context id of the intercommunicator is agreed over both groups
 *      (mpi/intercomm.c, kumi_intercomm_bridge: each group's lowest free
 *      candidates, exchanged by the roots over the socket), then the
 *      intercommunicator is made; the roots close the connection (join
 *      leaves the user's socket open).
 * Time-outs: a connect waits at most "timeout" seconds (info key; default
 * the parameter kumi_dpm_timeout, 60) for the port's answer; an accept
 * waits for a connection as long as the info key says (default: without
 * limit, as the standard wants); once the roots are connected each exchange
 * between them must complete within kumi_dpm_timeout seconds.  On every
 * failure all processes of the group return the root's error class (the
 * message says what failed), and none is left waiting.
 *
 * MPI_Comm_join: each side sends 8 random bytes, its job identity and its
 * world rank over fd; the side whose triple is the larger (memcmp) acts as
 * the accepting one.  The socket must not carry anything else meanwhile. */
#define _GNU_SOURCE
#include <kumi/param.h>
#include "mpi/mpi_front.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double dpm_timeout = 60.0;

void kumi_dpm_register_connect_params(void)
{
    kumi_param_register_double("kumi", "dpm", "timeout", 60.0,
                               "Seconds MPI_Comm_connect waits for an MPI_Comm_accept on the port (info key "
                               "\"timeout\" overrides it), and that each exchange between the two roots of "
                               "MPI_Comm_accept / connect / join may take",
                               KUMI_LEVEL_USER, &dpm_timeout);
}

/* One process in the lists the roots exchange. */
struct xproc {
    uint64_t job;
    int32_t rank;
    int32_t err;                        /* this process could not be reached (its class) */
    char card[KUMI_XCARD_MAX];
};

/* What a root broadcasts in its group. */
struct xhdr {
    int32_t cls;                        /* MPI_SUCCESS, or the error class all return */
    int32_t rsize;                      /* processes in the other group */
    unsigned char key[KUMI_P2P_XKEY_LEN];
    uint64_t key_id;
    char msg[320];                      /* what failed */
};

#define HELLO_MAGIC "KUMIDPM1"

static int fail_hdr(struct xhdr *h, int rc)
{
    int len = 0;
    char s[MPI_MAX_ERROR_STRING];
    kumi_mpi_error_class(rc, &h->cls);
    if (h->cls == MPI_SUCCESS) h->cls = MPI_ERR_OTHER;
    s[0] = 0;
    kumi_mpi_error_string(rc, s, &len);
    snprintf(h->msg, sizeof h->msg, "%s", s);
    return rc;
}

/* info "timeout": seconds (*t unchanged when absent); an error when not a number. */
static int info_timeout(const char *fn, MPI_Info info, double *t)
{
    if (info == MPI_INFO_NULL) return MPI_SUCCESS;
    struct kumi_info *in = kumi_info_get(info);
    if (!in) return kumi_error(MPI_ERR_INFO, "%s: argument info is not a valid info object", fn);
    const char *v = kumi_info_value(in, "timeout");
    if (!v) return MPI_SUCCESS;
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end || d < 0)
        return kumi_error(MPI_ERR_INFO, "%s: info key \"timeout\" is \"%s\", not a number of seconds", fn, v);
    *t = d;
    return MPI_SUCCESS;
}

/* What the roots send first: this side's state so far; the accepting side
 * sends the key. */
struct xhello {
    char magic[8];                      /* HELLO_MAGIC */
    int32_t cls;                        /* MPI_SUCCESS, or this side failed: the class */
    int32_t n;                          /* processes in this side's group */
    unsigned char key[KUMI_P2P_XKEY_LEN];
    uint64_t key_id;
    char msg[240];
};

/* Root: step 2 over fd (accept: this side makes the key); my_rc: this
 * side's failure so far (the other side learns of it and fails too).  On
 * success the other group's list (malloc'ed) and its size; h gets key and id. */
static int roots_meet(const char *fn, int fd, int accept, int my_rc, struct xhdr *h, const struct xproc *mine,
                      int n, struct xproc **theirs, int *rn)
{
    struct xhello me, *them = NULL;
    size_t glen = 0;
    void *got = NULL;
    memset(&me, 0, sizeof me);
    memcpy(me.magic, HELLO_MAGIC, 8);
    me.n = n;
    if (my_rc) {
        struct xhdr t;
        memset(&t, 0, sizeof t);
        fail_hdr(&t, my_rc);
        me.cls = t.cls;
        snprintf(me.msg, sizeof me.msg, "%.*s", (int)sizeof me.msg - 1, t.msg);
    } else if (accept) {
        if (getrandom(h->key, sizeof h->key, 0) != (ssize_t)sizeof h->key ||
            getrandom(&h->key_id, sizeof h->key_id, 0) != (ssize_t)sizeof h->key_id) {
            my_rc = kumi_error(MPI_ERR_OTHER, "%s: getrandom: %s", fn, strerror(errno));
            me.cls = MPI_ERR_OTHER;
            snprintf(me.msg, sizeof me.msg, "getrandom failed");
        }
        memcpy(me.key, h->key, sizeof me.key);
        me.key_id = h->key_id;
    }
    int rc = kumi_dpm_send_blob(fn, fd, &me, sizeof me, dpm_timeout);
    memset(me.key, 0, sizeof me.key);
    if (!rc) rc = kumi_dpm_recv_blob(fn, fd, &got, &glen, dpm_timeout);
    if (rc) return my_rc ? my_rc : rc;
    them = got;
    if (glen != sizeof *them || memcmp(them->magic, HELLO_MAGIC, 8) || them->n <= 0) {
        free(got);
        return my_rc ? my_rc : kumi_error(MPI_ERR_PORT, "%s: the other side is not an MPI_Comm_%s of Kumi", fn,
                                          accept ? "connect" : "accept");
    }
    if (my_rc) {
        free(got);
        return my_rc;
    }
    if (them->cls != MPI_SUCCESS) {
        them->msg[sizeof them->msg - 1] = 0;
        rc = kumi_error(them->cls, "%s: the other side failed: %s", fn, them->msg);
        free(got);
        return rc;
    }
    if (!accept) {
        memcpy(h->key, them->key, sizeof h->key);
        h->key_id = them->key_id;
    }
    int cnt = them->n;
    memset(them->key, 0, sizeof them->key);
    free(got);
    got = NULL;
    /* the lists */
    rc = kumi_dpm_send_blob(fn, fd, mine, sizeof *mine * (size_t)n, dpm_timeout);
    if (!rc) rc = kumi_dpm_recv_blob(fn, fd, &got, &glen, dpm_timeout);
    if (rc) return rc;
    if (glen != sizeof(struct xproc) * (size_t)cnt) {
        free(got);
        return kumi_error(MPI_ERR_OTHER, "%s: the other root sent a bad list", fn);
    }
    *theirs = got;
    *rn = cnt;
    return MPI_SUCCESS;
}

/* The other root's outcome of a step (class; MPI_SUCCESS) for ours. */
static int roots_swap_class(const char *fn, int fd, int mine, int *theirs)
{
    int32_t m = mine;
    void *got = NULL;
    size_t glen = 0;
    int rc = kumi_dpm_send_blob(fn, fd, &m, sizeof m, dpm_timeout);
    if (!rc) rc = kumi_dpm_recv_blob(fn, fd, &got, &glen, dpm_timeout);
    if (!rc && glen != sizeof m) rc = kumi_error(MPI_ERR_OTHER, "%s: the other root sent a bad answer", fn);
    if (!rc) memcpy(&m, got, sizeof m);
    free(got);
    *theirs = m;
    return rc;
}

/* The whole protocol; at root: fd connected to the other root (< 0: port_rc
 * says why there is none).  Returns an error code. */
static int bridge(const char *fn, int fd, int port_rc, int accept, int root, struct kumi_comm *comm,
                  MPI_Comm *newcomm)
{
    int me = comm->rank, n = comm->size, rc = MPI_SUCCESS;
    struct xproc self, *all = NULL, *theirs = NULL;
    struct xhdr h;
    memset(&self, 0, sizeof self);
    memset(&h, 0, sizeof h);
    /* 1. (job, rank, card) of every process at the root */
    self.job = kumi_req_job_uid();
    self.rank = kumi_world_rank();
    int crc = kumi_req_xjob_card(fn, self.card, sizeof self.card);
    if (crc) kumi_mpi_error_class(crc, &self.err);
    if (me == root && !(all = malloc(sizeof *all * (size_t)n))) rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    int grc = comm->coll.gather(&self, (int)sizeof self, MPI_BYTE, all ? (void *)all : (void *)&self,
                                (int)sizeof self, MPI_BYTE, root, (MPI_Comm)comm);
    int rn = 0;
    if (me == root) {
        /* 2. the roots meet */
        if (!rc) rc = grc;
        if (!rc && port_rc) rc = port_rc;
        for (int i = 0; !rc && i < n; i++)
            if (all[i].err)
                rc = i == me ? crc : kumi_error(all[i].err, "%s: rank %d cannot be reached by processes of "
                                                "other jobs (p2p/tcp is needed)", fn, i);
        /* (an error so far goes to the other side too: it fails the same way) */
        if (fd >= 0) rc = roots_meet(fn, fd, accept, rc, &h, all, n, &theirs, &rn);
        if (rc) fail_hdr(&h, rc);
        h.rsize = rn;
    }
    free(all);
    /* 3. the outcome, the key and the other list in the group */
    int brc = comm->coll.bcast(&h, (int)sizeof h, MPI_BYTE, root, (MPI_Comm)comm);
    if (brc) {
        free(theirs);
        return rc ? rc : brc;
    }
    if (h.cls != MPI_SUCCESS) {
        free(theirs);
        return me == root ? rc : kumi_error(h.cls, "%s (at the root, rank %d)", h.msg, root);
    }
    rn = h.rsize;
    if (me != root && !(theirs = malloc(sizeof *theirs * (size_t)rn)))
        rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    brc = comm->coll.bcast(theirs ? (void *)theirs : (void *)&h, theirs ? (int)(sizeof *theirs * (size_t)rn) : 0,
                           MPI_BYTE, root, (MPI_Comm)comm);
    if (!rc) rc = brc;
    int *rworld = rc ? NULL : malloc(sizeof(int) * (size_t)rn);
    if (!rc && !rworld) rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    for (int i = 0; !rc && i < rn; i++) {
        theirs[i].card[sizeof theirs[i].card - 1] = 0;
        rc = kumi_req_xpeer(fn, theirs[i].job, theirs[i].rank, theirs[i].card, h.key, h.key_id, &rworld[i]);
    }
    free(theirs);
    memset(&h.key, 0, sizeof h.key);
    /* 4. did every process of both groups add the other's? */
    int cls = MPI_SUCCESS, worst = 0, other = MPI_SUCCESS;
    if (rc) kumi_mpi_error_class(rc, &cls);
    int arc = comm->coll.allreduce(&cls, &worst, 1, MPI_INT, MPI_MAX, (MPI_Comm)comm);
    if (arc && !rc) rc = arc;
    if (me == root) {
        int src = roots_swap_class(fn, fd, worst, &other);
        if (src) {
            if (!rc) rc = src;
            kumi_mpi_error_class(src, &other);
        }
    }
    int bad[2] = { worst, other };
    brc = comm->coll.bcast(bad, 2, MPI_INT, root, (MPI_Comm)comm);
    if (rc || brc || bad[0] || bad[1]) {
        free(rworld);
        if (rc) return rc;
        if (brc) return brc;
        if (bad[0]) return kumi_error(bad[0], "%s: a process of this group could not add the other group's processes",
                                      fn);
        return kumi_error(bad[1], "%s: the other group failed to connect to this one", fn);
    }
    /* 5. the context, the intercommunicator */
    return kumi_intercomm_bridge(comm, root, fd, dpm_timeout, rn, rworld, fn, newcomm);
}

/* The checks every process makes (the root's own ones go into the bridge,
 * so that the others learn of them). */
static int check_args(const char *fn, int root, struct kumi_comm *comm, MPI_Comm *newcomm)
{
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "%s: argument newcomm is NULL", fn);
    if (comm->inter) return kumi_error(MPI_ERR_COMM, "%s: argument comm is an intercommunicator", fn);
    if (root < 0 || root >= comm->size)
        return kumi_error(MPI_ERR_ROOT, "%s: invalid root %d in a comm of size %d", fn, root, comm->size);
    return MPI_SUCCESS;
}

int kumi_dpm_accept(const char *fn, const char *port, MPI_Info info, int root, struct kumi_comm *comm,
                    MPI_Comm *newcomm)
{
    double t = -1;
    int rc = check_args(fn, root, comm, newcomm), fd = -1;
    if (rc) return rc;
    if (comm->rank == root) {
        if (!port) rc = kumi_error(MPI_ERR_ARG, "%s: argument port_name is NULL", fn);
        else if (!(rc = info_timeout(fn, info, &t))) rc = kumi_dpm_port_accept(fn, port, t, &fd);
    }
    rc = bridge(fn, fd, rc, 1, root, comm, newcomm);
    if (fd >= 0) close(fd);
    return rc;
}

int kumi_dpm_connect(const char *fn, const char *port, MPI_Info info, int root, struct kumi_comm *comm,
                     MPI_Comm *newcomm)
{
    double t = dpm_timeout;
    int rc = check_args(fn, root, comm, newcomm), fd = -1;
    if (rc) return rc;
    if (comm->rank == root) {
        if (!port) rc = kumi_error(MPI_ERR_ARG, "%s: argument port_name is NULL", fn);
        else if (!(rc = info_timeout(fn, info, &t))) rc = kumi_dpm_port_connect(fn, port, t, &fd);
    }
    rc = bridge(fn, fd, rc, 0, root, comm, newcomm);
    if (fd >= 0) close(fd);
    return rc;
}

int kumi_dpm_bridge_fd(const char *fn, int fd, int accept, int root, struct kumi_comm *comm, MPI_Comm *newcomm)
{
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "%s: argument newcomm is NULL", fn);
    return bridge(fn, comm->rank == root ? fd : -1, MPI_SUCCESS, accept, root, comm, newcomm);
}

int kumi_mpi_comm_accept(const char *port_name, MPI_Info info, int root, struct kumi_comm *comm, MPI_Comm *newcomm)
{
    return kumi_dpm_accept("MPI_Comm_accept", port_name, info, root, comm, newcomm);
}

int kumi_mpi_comm_connect(const char *port_name, MPI_Info info, int root, struct kumi_comm *comm, MPI_Comm *newcomm)
{
    return kumi_dpm_connect("MPI_Comm_connect", port_name, info, root, comm, newcomm);
}

/* ------------------------------------------------------------ MPI_Comm_join */
static int do_join(int fd, MPI_Comm *intercomm)
{
    static const char fn[] = "MPI_Comm_join";
    if (!intercomm) return kumi_error(MPI_ERR_ARG, "%s: argument intercomm is NULL", fn);
    int type = 0;
    socklen_t tl = sizeof type;
    if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM)
        return kumi_error(MPI_ERR_ARG, "%s: argument fd (%d) is not a connected stream socket", fn, fd);
    unsigned char mine[20], *theirs = NULL;
    uint64_t job = kumi_req_job_uid();
    int32_t rank = kumi_world_rank();
    if (getrandom(mine, 8, 0) != 8) {
        uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 24);
        memcpy(mine, &x, 8);
    }
    memcpy(mine + 8, &job, 8);
    memcpy(mine + 16, &rank, 4);
    size_t len = 0;
    int rc = kumi_dpm_send_blob(fn, fd, mine, sizeof mine, dpm_timeout);
    if (!rc) rc = kumi_dpm_recv_blob(fn, fd, (void **)&theirs, &len, dpm_timeout);
    if (!rc && len != sizeof mine)
        rc = kumi_error(MPI_ERR_OTHER, "%s: the process at the other end of fd is not in an MPI_Comm_join", fn);
    int cmp = rc ? 0 : memcmp(mine, theirs, sizeof mine);
    free(theirs);
    if (rc) return rc;
    if (cmp == 0) return kumi_error(MPI_ERR_OTHER, "%s: fd is connected to this process itself", fn);
    return bridge(fn, fd, MPI_SUCCESS, cmp > 0, 0, KUMI_COMM_SELF, intercomm);
}

int kumi_mpi_comm_join(int fd, MPI_Comm *intercomm)
{
    return kumi_err_handle(NULL, do_join(fd, intercomm));
}
