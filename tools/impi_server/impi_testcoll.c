/* impi_testcoll: a made-up foreign IMPI implementation for the collectives
 * (tests/scripts/impi_coll.sh; not installed): IMPI client K with one host
 * of one proc, written from the fact sheet (PROTOCOL.md §5), that takes
 * part in the collectives of tests/mpi/impi_coll_foreign (Kumi, client 0,
 * N ranks: world ranks 0 .. N-1, one IMPI host holding them all, whose one
 * connection carries every rank's packets; this proc: world rank F = N) by
 * the IMPI algorithms as this side implements them, checking every packet Kumi
 * sends it: type DATA, pk_cid 1 (MPI_COMM_WORLD's collective context: cid
 * + 1), the tag of the operation (IMPI_BARRIER_TAG 110, BCAST 120, ...),
 * the source, pk_lsrank, and the payload byte for byte (external32
 * big-endian integers) -- and that nothing else comes.
 *
 *   impi_testcoll -server HOST:PORT -rank K {-n N | -tree 1 | -comms 1} [-timeout S]
 *
 * -comms 1: two clients, Kumi's 3 ranks and this proc F = 3: communicators
 * made by IMPI's context-id rule and the traffic on them (see comms_script
 * below; impi_coll_foreign comms is Kumi's side).
 * -tree 1: five clients, this proc client 3 between Kumi's: the binomial
 * trees (see tree_script below).  -n N, the linear script:
 *
 * The script (N >= 2; two masters, so every global phase is linear):
 *   Barrier               -> 0 empty tag 110; <- 0 empty tag 110
 *   Bcast 3 ints, root 0  <- 0 tag 120 {1, -2, 0x01020304}
 *   Bcast, root 1         <- 1 tag 120 {11, -2, 0x01020304} (the root, not
 *                            its client's master, sends to the other masters)
 *   Bcast, root F         -> 0 tag 120 {F*10+1, -2, 0x01020304}
 *   Reduce SUM 2 ints, root 0 / root 1: -> root tag 190 {F+1, 100F}
 *   Reduce SUM, root F    <- 0 tag 190 {sum r+1, sum 100r over Kumi's ranks}
 *                            (the local phase of client 0 went first)
 *   Reduce non-commutative, root F: <- every Kumi rank r tag 190 {r+1}
 *                            (linear over all ranks, sheet §5.10)
 *   Allreduce SUM 1 int   -> 0 tag 190 {F+1}; <- 0 tag 120 {total}
 *   Gather 1 int, root 0  -> 0 tag 130 {F*7}
 *   Gather, root F        <- 0 tag 130 {0*7, 1*7, ..} (client 0's blocks
 *                            in one message from its master)
 *   Scatter 1 int, root 0 <- 0 tag 150 {F*3}
 *   Alltoall 1 int        -> r tag 170 {F*100+r}; <- r tag 170 {r*100+F}
 *   Scan SUM 1 int        <- N-1 tag 200 {sum r+1, r < N}
 *   MPI_Finalize's barrier as the first.
 * Then FINI both ways, FINI to the server.  PROTOACK every ackmark packets
 * read from a proc, never more than hiwater unacknowledged to one.  Exit 0,
 * or 1 naming the first difference. */
#include "impi_testfhost.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DIE(...) do { fprintf(stderr, "impi_testcoll: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

struct msg {
    struct msg *next;
    struct kumi_impi_packet pk;
    uint8_t *data;
};

static int K = -1, F = -1, NK = 0, NP = 0, tree = 0, comms = 0, timeout_s = 30;
static int my_lsrank = -1;                /* pk_lsrank of my DATA packets: my rank in the communicator */
static struct kumi_impi_job job;
static int *pfd;                          /* by world rank: the connection to its host */
static struct msg **q;                    /* by world rank: packets read, not yet expected */
static uint32_t *recvd, *sent_unacked;
static uint64_t seq;
static unsigned npk_in, nacks_out;

static void rd(int fd, void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        struct pollfd pf = { .fd = fd, .events = POLLIN };
        if (poll(&pf, 1, timeout_s * 1000) <= 0) DIE("timed out reading from Kumi");
        ssize_t r = recv(fd, (char *)p + got, n - got, 0);
        if (r <= 0) DIE("a Kumi host closed its connection");
        got += (size_t)r;
    }
}

static void pump(void);

static void pk_out(int dest, uint32_t type, uint32_t len, int tag, uint64_t cid, const void *data)
{
    struct kumi_impi_packet pk;
    uint8_t h[128];
    memset(&pk, 0, sizeof pk);
    pk.type = type;
    pk.len = len;
    memcpy(pk.src_host, job.procs[F].id, 16);
    pk.src_pid = job.procs[F].pid;
    memcpy(pk.dest_host, job.procs[dest].id, 16);
    pk.dest_pid = job.procs[dest].pid;
    pk.msglen = len;
    pk.lsrank = type == KUMI_IMPI_PK_DATA && my_lsrank >= 0 ? my_lsrank : F;
    pk.tag = tag;
    pk.cid = cid;
    if (type == KUMI_IMPI_PK_DATA) {
        pk.seqnum = seq++;
        while (sent_unacked[dest] >= job.hiwater) pump();       /* wait for a PROTOACK */
        sent_unacked[dest]++;
    }
    kumi_impi_packet_encode(&pk, h);
    if (send(pfd[dest], h, 128, MSG_NOSIGNAL) != 128 || (len && send(pfd[dest], data, len, MSG_NOSIGNAL) != (ssize_t)len))
        DIE("write to Kumi's rank %d failed", dest);
}

/* Read one packet from whichever Kumi host has one (one connection per
 * IMPI host, carrying the packets of all its procs, told apart by pk_src):
 * PROTOACKs and FINIs (one per host, sheet §6.1) are taken here, the rest
 * queued by source rank. */
static int *hconn, *hfini;                /* by host: the connection, FINI read */
static void pump(void)
{
    struct pollfd *pf = calloc((size_t)job.nhosts, sizeof *pf);
    for (int h = 0; h < job.nhosts; h++)
        pf[h] = (struct pollfd){ .fd = hconn[h] <= 0 || hfini[h] ? -1 : hconn[h], .events = POLLIN };
    if (poll(pf, (nfds_t)job.nhosts, timeout_s * 1000) <= 0) DIE("timed out waiting for Kumi's packets");
    for (int h = 0; h < job.nhosts; h++) {
        if (pf[h].fd < 0 || !(pf[h].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        uint8_t hd[128];
        char err[200];
        struct msg *m = calloc(1, sizeof *m);
        rd(hconn[h], hd, 128);
        if (kumi_impi_packet_parse(hd, 128, (uint32_t)job.pk_maxlen, &m->pk, err, sizeof err) != 128)
            DIE("a bad packet header from Kumi's IMPI host %d: %s", h, err);
        uint32_t n = kumi_impi_packet_payload(&m->pk);
        m->data = malloc(n ? n : 1);
        if (n) rd(hconn[h], m->data, n);
        if (m->pk.type == KUMI_IMPI_PK_FINI) {
            hfini[h] = 1;
            free(m->data);
            free(m);
            continue;
        }
        int r = kumi_impi_job_find_proc(&job, m->pk.src_host, m->pk.src_pid);
        if (r < 0 || r == F || kumi_impi_job_proc_host(&job, r) != h ||
            kumi_impi_job_find_proc(&job, m->pk.dest_host, m->pk.dest_pid) != F)
            DIE("a %s packet on IMPI host %d's connection with pk_src / pk_dest not one of its procs -> rank %d",
                kumi_impi_packet_type_name(m->pk.type), h, F);
        if (m->pk.type == KUMI_IMPI_PK_PROTOACK) {
            sent_unacked[r] = sent_unacked[r] > job.ackmark ? sent_unacked[r] - job.ackmark : 0;
            free(m->data);
            free(m);
            continue;
        }
        npk_in++;
        if (++recvd[r] % job.ackmark == 0) {                 /* sheet §4.6, per proc pair */
            pk_out(r, KUMI_IMPI_PK_PROTOACK, 0, -1, 0, NULL);
            nacks_out++;
        }
        struct msg **pp = &q[r];
        while (*pp) pp = &(*pp)->next;
        *pp = m;
    }
    free(pf);
}

/* The next message from Kumi's rank src must be DATA, cid 1, tag, and the
 * big-endian ints want[0..n). */
static void expect(int src, int tag, const int32_t *want, int n, const char *what)
{
    while (!q[src]) {
        if (hfini[kumi_impi_job_proc_host(&job, src)]) DIE("%s: rank %d's host sent FINI instead", what, src);
        pump();
    }
    struct msg *m = q[src];
    q[src] = m->next;
    const struct kumi_impi_packet *pk = &m->pk;
    if (pk->type != KUMI_IMPI_PK_DATA || pk->cid != 1 || pk->tag != tag || pk->lsrank != src ||
        pk->len != 4u * (uint32_t)n || pk->msglen != 4u * (uint64_t)n)
        DIE("%s: from rank %d got %s cid %llu tag %d lsrank %d len %u msglen %llu; expected DATA cid 1 tag %d lsrank %d "
            "len %d", what, src, kumi_impi_packet_type_name(pk->type), (unsigned long long)pk->cid, pk->tag, pk->lsrank,
            pk->len, (unsigned long long)pk->msglen, tag, src, 4 * n);
    for (int i = 0; i < n; i++)
        if ((int32_t)kumi_impi_get32(m->data + 4 * i) != want[i])
            DIE("%s: int %d from rank %d is %d (bytes %02x%02x%02x%02x), expected %d", what, i, src,
                (int32_t)kumi_impi_get32(m->data + 4 * i), m->data[4 * i], m->data[4 * i + 1], m->data[4 * i + 2],
                m->data[4 * i + 3], want[i]);
    printf("impi_testcoll: ok: %s: rank %d -> %d, cid 1, tag %d, %d ints\n", what, src, F, tag, n);
    free(m->data);
    free(m);
}

static void send_ints(int dest, int tag, const int32_t *v, int n)
{
    uint8_t b[64];
    for (int i = 0; i < n; i++) kumi_impi_put32(b + 4 * i, (uint32_t)v[i]);
    pk_out(dest, KUMI_IMPI_PK_DATA, 4u * (uint32_t)n, tag, 1, b);
}

static void finish(int *hfd, int myhost, struct kumi_impi_client *c);
static int tree_script(int *hfd, int myhost, struct kumi_impi_client *c);
static int comms_script(int *hfd, int myhost, struct kumi_impi_client *c);

static void barrier(const char *what)
{
    send_ints(0, 110, NULL, 0);
    expect(0, 110, NULL, 0, what);
}

int main(int argc, char **argv)
{
    const char *server = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-server")) server = argv[i + 1];
        else if (!strcmp(argv[i], "-rank")) K = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-n")) NK = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-tree")) tree = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-comms")) comms = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-timeout")) timeout_s = atoi(argv[i + 1]);
        else DIE("unknown option %s", argv[i]);
    }
    if (comms) NK = 3;
    if (!server || K < 1 || (!tree && (NK < 2 || NK > 12)))
        DIE("usage: impi_testcoll -server HOST:PORT -rank K {-n N | -tree 1} (K >= 1, 2 <= N <= 12)");
    struct kumi_impi_client c;
    int myhost;
    const struct impi_tf_args ta = { "impi_testcoll", server, K, timeout_s, 4096, 3, 5, 4343 };
    int *hfd = impi_tf_start(&ta, &c, &job, &myhost);
    F = job.first_proc_of_client[K];
    NP = job.nprocs;
    if (!tree && (job.nclients != 2 || job.c_nprocs[0] != NK || F != NK)) DIE("expected Kumi as client 0 with %d ranks", NK);
    if (tree && (job.nclients != 5 || K != 3 || job.c_nprocs[3] != 1 || NP > 16))
        DIE("-tree: expected 5 clients, this one client 3 of one proc");
    printf("impi_testcoll: world rank %d of %d, ackmark %u, hiwater %u\n", F, job.nprocs, job.ackmark, job.hiwater);
    fflush(stdout);
    pfd = calloc((size_t)NP, sizeof *pfd);
    q = calloc((size_t)NP, sizeof *q);
    recvd = calloc((size_t)NP, sizeof *recvd);
    sent_unacked = calloc((size_t)NP, sizeof *sent_unacked);
    hconn = hfd;
    hfini = calloc((size_t)job.nhosts, sizeof *hfini);
    for (int r = 0; r < NP; r++)
        if (r != F) pfd[r] = hfd[kumi_impi_job_proc_host(&job, r)];
    if (tree) return tree_script(hfd, myhost, &c);
    if (comms) return comms_script(hfd, myhost, &c);

    int32_t v[16];
    barrier("MPI_Barrier");
    /* Bcast */
    for (int root = 0; root <= F; root += (root == 1 ? F - 1 : 1)) {
        int32_t b[3] = { root * 10 + 1, -2, 0x01020304 };
        if (root == F) send_ints(0, 120, b, 3);
        else expect(root, 120, b, 3, root ? "MPI_Bcast from root 1 (not a master)" : "MPI_Bcast from root 0");
    }
    /* Reduce SUM */
    int32_t s1 = 0, s2 = 0, ssum = 0;
    for (int r = 0; r < NK; r++) s1 += r + 1, s2 += 100 * r;
    for (int root = 0; root <= F; root += (root == 1 ? F - 1 : 1)) {
        if (root == F) {
            int32_t w[2] = { s1, s2 };
            expect(0, 190, w, 2, "MPI_Reduce to root F: client 0's partial sum from its master");
        } else {
            int32_t w[2] = { F + 1, 100 * F };
            send_ints(root, 190, w, 2);
        }
    }
    /* Reduce non-commutative to root F: every rank sends directly */
    for (int r = NK - 1; r >= 0; r--) {
        v[0] = r + 1;
        expect(r, 190, v, 1, "MPI_Reduce (non-commutative) to root F");
    }
    /* Allreduce SUM */
    v[0] = F + 1;
    send_ints(0, 190, v, 1);
    ssum = s1 + F + 1;
    expect(0, 120, &ssum, 1, "MPI_Allreduce: the result from rank 0 (reduce to 0, bcast from 0)");
    /* Gather */
    v[0] = F * 7;
    send_ints(0, 130, v, 1);
    for (int r = 0; r < NK; r++) v[r] = r * 7;
    expect(0, 130, v, NK, "MPI_Gather to root F: client 0's blocks in one message");
    /* Scatter */
    v[0] = F * 3;
    expect(0, 150, v, 1, "MPI_Scatter from root 0");
    /* Alltoall */
    for (int r = 0; r < NK; r++) {
        v[0] = F * 100 + r;
        send_ints(r, 170, v, 1);
    }
    for (int r = 0; r < NK; r++) {
        v[0] = r * 100 + F;
        expect(r, 170, v, 1, "MPI_Alltoall");
    }
    /* Scan */
    v[0] = s1;
    expect(NK - 1, 200, v, 1, "MPI_Scan: the prefix from rank N-1");
    /* MPI_Finalize */
    barrier("MPI_Finalize's barrier");
    finish(hfd, myhost, &c);
    return 0;
}

/* FINI both ways with every Kumi host (one per IMPI host, sheet §6.1),
 * nothing else left over; FINI to the server. */
static void finish(int *hfd, int myhost, struct kumi_impi_client *c)
{
    for (int h = 0; h < job.nhosts; h++)
        if (h != myhost) {
            int r = 0;
            while (r < NP && (r == F || kumi_impi_job_proc_host(&job, r) != h)) r++;
            if (r < NP) pk_out(r, KUMI_IMPI_PK_FINI, 0, -1, 0, NULL);
        }
    for (;;) {
        int all = 1;
        for (int r = 0; r < NP; r++) {
            if (r == F) continue;
            if (q[r]) DIE("an unexpected %s packet from rank %d tag %d cid %llu", kumi_impi_packet_type_name(q[r]->pk.type),
                          r, q[r]->pk.tag, (unsigned long long)q[r]->pk.cid);
        }
        for (int h = 0; h < job.nhosts; h++)
            if (h != myhost) all &= hfini[h] != 0;
        if (all) break;
        pump();
    }
    printf("impi_testcoll: all checks passed (%u packets from Kumi, %u PROTOACKs sent)\n", npk_in, nacks_out);
    fflush(stdout);
    for (int h = 0; h < job.nhosts; h++)
        if (h != myhost && hfd[h] > 0) close(hfd[h]);
    if (kumi_impi_client_fini(c) != 0) DIE("%s", c->err);
}

/* -tree 1: clients of 2, 1, 2, 1 (this proc, F = world rank 5), 1 ranks:
 * masters M0..M4 = ranks 0, 2, 3, 5, 6, more than MAXLINEAR (4): the
 * binomial trees of sheet §5.8-§5.10.  This proc is master 3:
 *   Barrier: m = 3, hibit 1: parent M1 (3 & ~2): -> M1, <- M1, no children
 *   Bcast root 0: v = 3: <- M1 (its parent), no children
 *   Bcast root F: v = 0: -> M4, M0, M2 (children v = 1, 2, 4: (v + 3) % 5)
 *   Reduce SUM root 0: v = 3: bit 0 set: -> M2 (v 2), {F + 1}
 *   Reduce SUM root F: <- M4 {client 4's sum: 7}, <- M0 {clients 0 and 1
 *     (M1 sent to M0 first): 1 + 2 + 3}, <- M2 {client 2's: 4 + 5}
 *   MPI_Finalize's barrier as the first. */
static int tree_script(int *hfd, int myhost, struct kumi_impi_client *c)
{
    if (F != 5 || NP != 7) DIE("-tree: expected world rank 5 of 7, got %d of %d", F, NP);
    int M[5] = { 0, 2, 3, 5, 6 };
    int32_t b[3] = { 1, -2, 0x01020304 }, v[1];
    send_ints(M[1], 110, NULL, 0);
    expect(M[1], 110, NULL, 0, "MPI_Barrier (tree): from my parent M1");
    expect(M[1], 120, b, 3, "MPI_Bcast root 0 (tree): from my parent M1");
    b[0] = F * 10 + 1;
    send_ints(M[4], 120, b, 3);
    send_ints(M[0], 120, b, 3);
    send_ints(M[2], 120, b, 3);
    v[0] = F + 1;
    send_ints(M[2], 190, v, 1);
    v[0] = 7;
    expect(M[4], 190, v, 1, "MPI_Reduce root F (tree): client 4's sum from M4");
    v[0] = 1 + 2 + 3;
    expect(M[0], 190, v, 1, "MPI_Reduce root F (tree): clients 0 and 1 from M0");
    v[0] = 4 + 5;
    expect(M[2], 190, v, 1, "MPI_Reduce root F (tree): client 2's sum from M2");
    send_ints(M[1], 110, NULL, 0);
    expect(M[1], 110, NULL, 0, "MPI_Finalize's barrier (tree): from M1");
    finish(hfd, myhost, c);
    return 0;
}

/* ---- -comms 1 ---- */
/* The next message from Kumi's rank src must be DATA with this cid, tag,
 * pk_lsrank and payload. */
static void expect_on(int src, uint64_t cid, int tag, int lsrank, const uint8_t *want, uint32_t len, const char *what)
{
    while (!q[src]) {
        if (hfini[kumi_impi_job_proc_host(&job, src)]) DIE("%s: rank %d's host sent FINI instead", what, src);
        pump();
    }
    struct msg *m = q[src];
    q[src] = m->next;
    const struct kumi_impi_packet *pk = &m->pk;
    if (pk->type != KUMI_IMPI_PK_DATA || pk->cid != cid || pk->tag != tag || pk->lsrank != lsrank || pk->len != len ||
        pk->msglen != len)
        DIE("%s: from rank %d got %s cid %llu tag %d lsrank %d len %u; expected DATA cid %llu tag %d lsrank %d len %u",
            what, src, kumi_impi_packet_type_name(pk->type), (unsigned long long)pk->cid, pk->tag, pk->lsrank, pk->len,
            (unsigned long long)cid, tag, lsrank, len);
    if (len && memcmp(m->data, want, len))
        DIE("%s: the payload from rank %d differs (first byte %02x, expected %02x)", what, src, m->data[0], want[0]);
    printf("impi_testcoll: ok: %s: rank %d -> %d, cid %llu, tag %d, lsrank %d, %u bytes\n", what, src, F,
           (unsigned long long)cid, tag, lsrank, len);
    free(m->data);
    free(m);
}

static void send_on(int dest, uint64_t cid, int tag, int lsrank, const int32_t *v, int n)
{
    uint8_t b[64];
    for (int i = 0; i < n; i++) kumi_impi_put32(b + 4 * i, (uint32_t)v[i]);
    my_lsrank = lsrank;
    pk_out(dest, KUMI_IMPI_PK_DATA, 4u * (uint32_t)n, tag, cid, b);
    my_lsrank = -1;
}

static void expect_ints_on(int src, uint64_t cid, int tag, int lsrank, const int32_t *v, int n, const char *what)
{
    uint8_t b[64];
    for (int i = 0; i < n; i++) kumi_impi_put32(b + 4 * i, (uint32_t)v[i]);
    expect_on(src, cid, tag, lsrank, b, 4u * (uint32_t)n, what);
}

/* IMPI's context-id rule (sheet §5.5): maxcid = Allreduce(IMPI_max_cid,
 * MPI_MAX, IMPI_UINT8) over MPI_COMM_WORLD, which Kumi runs as an IMPI
 * Reduce to rank 0 and an IMPI Bcast from it (one IMPI_UINT8, big-endian,
 * on cid 1); new cid = maxcid + 1, its collectives maxcid + 2, which this
 * side too counts in IMPI_max_cid. */
static uint64_t max_cid = 1;
static uint64_t new_cid(const char *what)
{
    uint8_t b[8];
    kumi_impi_put64(b, max_cid);
    pk_out(0, KUMI_IMPI_PK_DATA, 8, 190, 1, b);
    char w[160];
    snprintf(w, sizeof w, "%s: the context-id Allreduce's result (IMPI_UINT8 %llu) from rank 0", what,
             (unsigned long long)max_cid);
    expect_on(0, 1, 120, 0, b, 8, w);   /* every process here has the same max_cid: the maximum is it */
    uint64_t c = max_cid + 1;
    max_cid = c + 1;
    return c;
}

/* Kumi: world ranks 0, 1, 2 (client 0); this proc F = 3 (client 1).
 *   MPI_Comm_dup(world) = d: cid 2 (3)
 *     rank 0 -> F tag 7 {4242} (lsrank 0); F -> rank 1 tag 8 {F*1000+8} (lsrank 3)
 *     MPI_Barrier(d): F <-> rank 0 on cid 3
 *   MPI_Comm_split(world, me % 2, -me) = s: cid 4 (5), first the cid, then
 *     the Allgather of (colour, key, rank) triples: Gather to 0 (tag 130,
 *     F's triple), Bcast from 0 (tag 120, all 12 ints); colour 1 = {F, 1}
 *     (F rank 0): MPI_Bcast from F -> rank 1 on cid 5 {55, -5};
 *     rank 1 -> F tag 9 {77} on cid 4, lsrank 1
 *   MPI_Comm_create(world, {1, 2, F}) = c: cid 6 (7); F (c rank 2) -> rank 2
 *     (c rank 1) tag 10 {99}; MPI_Barrier(c): F <-> rank 1 (c rank 0) on cid 7
 *   MPI_Comm_free(d), (s), (c): IMPI's barrier on cid 3, 5 (F is s's rank 0:
 *     first in, then out), 7 (sheet §5.6)
 *   MPI_Comm_dup(world) = d2: cid 8 (IMPI_max_cid is not lowered by the
 *     frees); rank 2 -> F tag 11 {2}, lsrank 2
 *   MPI_Finalize's barrier on cid 1. */
static int comms_script(int *hfd, int myhost, struct kumi_impi_client *c)
{
    if (F != 3 || NP != 4) DIE("-comms: expected world rank 3 of 4, got %d of %d", F, NP);
    int32_t v[12];
    uint64_t d = new_cid("MPI_Comm_dup");
    if (d != 2) DIE("internal: dup cid %llu", (unsigned long long)d);
    v[0] = 4242;
    expect_ints_on(0, d, 7, 0, v, 1, "MPI_Send on the dup");
    v[0] = F * 1000 + 8;
    send_on(1, d, 8, F, v, 1);
    send_on(0, d + 1, 110, F, NULL, 0);
    expect_ints_on(0, d + 1, 110, 0, NULL, 0, "MPI_Barrier on the dup");

    uint64_t s = new_cid("MPI_Comm_split");
    v[0] = 1, v[1] = -3, v[2] = F;
    my_lsrank = F;
    send_on(0, 1, 130, F, v, 3);
    int32_t all[12] = { 0, 0, 0, 1, -1, 1, 0, -2, 2, 1, -3, 3 };
    expect_ints_on(0, 1, 120, 0, all, 12, "MPI_Comm_split: the (colour, key, rank) triples of every rank");
    v[0] = 55, v[1] = -5;
    send_on(1, s + 1, 120, 0, v, 2);
    v[0] = 77;
    expect_ints_on(1, s, 9, 1, v, 1, "MPI_Send on the split's colour 1");

    uint64_t cc = new_cid("MPI_Comm_create");
    v[0] = 99;
    send_on(2, cc, 10, 2, v, 1);
    send_on(1, cc + 1, 110, 2, NULL, 0);
    expect_ints_on(1, cc + 1, 110, 0, NULL, 0, "MPI_Barrier on the created communicator");

    send_on(0, d + 1, 110, F, NULL, 0);
    expect_ints_on(0, d + 1, 110, 0, NULL, 0, "MPI_Comm_free of the dup: its barrier");
    expect_ints_on(1, s + 1, 110, 1, NULL, 0, "MPI_Comm_free of the split: its barrier");
    send_on(1, s + 1, 110, 0, NULL, 0);
    send_on(1, cc + 1, 110, 2, NULL, 0);
    expect_ints_on(1, cc + 1, 110, 0, NULL, 0, "MPI_Comm_free of the created communicator: its barrier");

    uint64_t d2 = new_cid("MPI_Comm_dup after the frees");
    v[0] = 2;
    expect_ints_on(2, d2, 11, 2, v, 1, "MPI_Send on the second dup");
    printf("impi_testcoll: context ids: dup %llu, split %llu, create %llu, dup %llu\n", (unsigned long long)d,
           (unsigned long long)s, (unsigned long long)cc, (unsigned long long)d2);
    barrier("MPI_Finalize's barrier");
    finish(hfd, myhost, c);
    return 0;
}
