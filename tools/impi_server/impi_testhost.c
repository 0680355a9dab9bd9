/* impi_testhost: a made-up foreign IMPI implementation for
 * tests/scripts/impi_foreign.sh (not installed): IMPI client K with one host
 * of one proc, written from the fact sheet alone, that checks Kumi's packets
 * byte for byte (big-endian headers, external32 payloads) and answers as the
 * protocol says.  Kumi runs tests/mpi/impi_foreign as the other client (client
 * 0, -kumi-procs N ranks); its rank 0 (MPI_COMM_WORLD) talks to this proc
 * (world rank ME below), and so does its rank 1 when N > 1.
 *
 *   impi_testhost -server HOST:PORT -rank K [-datalen N] [-timeout S] [-kumi-procs N]
 *
 * Start-up: Kumi's client must be ONE IMPI host holding its N procs, as an
 * implementation with one agent per machine expects (C_NHOSTS 1, H_NPROCS N,
 * the procs' P_IPV6 that host's address); the job's IMPI_Tag_ub is this
 * side's 32767 (Kumi checks that MPI_TAG_UB says so).  The dance makes one
 * connection, to Kumi's host, and every packet of both Kumi procs comes on
 * it, told apart by pk_src (flow control per proc pair).
 *
 * The exchange (the script of impi_foreign.c, in this order):
 *   <- DATA tag 5: MPI_INT {1, -2, 0x01020304}: bytes 00000001 fffffffe 01020304
 *   <- DATA tag 6: MPI_DOUBLE {1.5, -0.0}: 3ff8000000000000 8000000000000000
 *   <- DATASYNC tag 7 (MPI_Ssend of 1 MPI_SHORT 0x0102)   -> SYNCACK (srqid echoed)
 *   <- DATASYNC tag 8, a long message of 3 * datalen bytes of MPI_INT i:
 *      first packet datalen bytes                          -> SYNCACK, drqid 0x4b554d49
 *      the rest as DATA packets with that drqid
 *   -> DATA tag 9: MPI_INT {7, -8} big-endian; -> DATA tag 10: MPI_DOUBLE {-2.25}
 *   -> a long message, tag 11, 2 * datalen bytes of MPI_INT 1000 + i: DATASYNC
 *      first packet <- SYNCACK (srqid 77)  -> the rest with its drqid
 *   -> CANCEL for srqid 999 (no such message)              <- CANCELNO
 *   <- DATA tag 12: MPI_INT {42} (before or after the CANCELNO)
 *   with N > 1, in any order with the last two: <- DATA tag 13 from rank 1:
 *   MPI_INT {0x11223344}; then -> DATA tag 14 to rank 1: MPI_INT {-5}
 *   MPI_Finalize's barrier by IMPI's algorithm (coll/impi, two masters:
 *      linear): -> DATA cid 1 tag 110, empty, to rank 0; <- the same from rank 0
 *   both: FINI; then FINI to the server.
 * Every counted packet in either direction follows ackmark / hiwater: this
 * side sends a PROTOACK after every ackmark packets read and checks that
 * Kumi never has more than hiwater unacknowledged.  Exit 0, or 1 with a
 * message naming the first difference. */
#include "impi_testfhost.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int K = -1, ME = -1, PEER = 0, fd = -1, timeout_s = 30, NK = 1;
static struct kumi_impi_job job;
/* flow control per proc pair (this proc and Kumi's rank p) */
#define MAXK 8
static uint32_t recvd[MAXK], unacked_in[MAXK], sent_unacked[MAXK], acks_sent, acks_got;
static uint64_t seq, out_cid;

#define DIE(...) do { fprintf(stderr, "impi_testhost: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static void rd(void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        struct pollfd pf = { .fd = fd, .events = POLLIN };
        if (poll(&pf, 1, timeout_s * 1000) <= 0) DIE("timed out reading from Kumi's host");
        ssize_t r = recv(fd, (char *)p + got, n - got, 0);
        if (r <= 0) DIE("Kumi's host closed the connection");
        got += (size_t)r;
    }
}

static void wr(const void *p, size_t n)
{
    if (send(fd, p, n, MSG_NOSIGNAL) != (ssize_t)n) DIE("write to Kumi's host failed");
}

static void pk_in(struct kumi_impi_packet *pk, uint8_t *buf, size_t cap);

/* Before a counted packet to rank to: while hiwater are unacknowledged, read
 * Kumi's PROTOACKs (nothing else may come then in this script). */
static void credit(int to)
{
    while (sent_unacked[to] >= job.hiwater) {
        uint8_t h[128];
        char err[200];
        struct kumi_impi_packet pk;
        rd(h, 128);
        if (kumi_impi_packet_parse(h, 128, 0, &pk, err, sizeof err) != 128)
            DIE("while waiting for credit: %s", err);
        if (pk.type != KUMI_IMPI_PK_PROTOACK)
            DIE("while waiting for credit: a %s packet, not a PROTOACK", kumi_impi_packet_type_name(pk.type));
        int from = kumi_impi_job_find_proc(&job, pk.src_host, pk.src_pid);
        if (from < 0 || from >= NK) DIE("a PROTOACK from proc %d", from);
        acks_got++;
        sent_unacked[from] = sent_unacked[from] > job.ackmark ? sent_unacked[from] - job.ackmark : 0;
    }
}

static void pk_out_to(int to, uint32_t type, uint32_t len, uint64_t msglen, int tag, uint64_t srqid, uint64_t drqid,
                      const void *data)
{
    struct kumi_impi_packet pk;
    uint8_t h[128];
    memset(&pk, 0, sizeof pk);
    pk.type = type;
    pk.len = len;
    memcpy(pk.src_host, job.procs[ME].id, 16);
    pk.src_pid = job.procs[ME].pid;
    memcpy(pk.dest_host, job.procs[to].id, 16);
    pk.dest_pid = job.procs[to].pid;
    pk.srqid = srqid;
    pk.drqid = drqid;
    pk.msglen = msglen;
    pk.lsrank = ME;
    pk.tag = tag;
    pk.cid = out_cid;                             /* 0: MPI_COMM_WORLD */
    if (type != KUMI_IMPI_PK_PROTOACK) pk.seqnum = seq++;
    if (type != KUMI_IMPI_PK_PROTOACK && type != KUMI_IMPI_PK_FINI) {
        credit(to);
        sent_unacked[to]++;
    }
    kumi_impi_packet_encode(&pk, h);
    wr(h, 128);
    if (len) wr(data, len);
}

static void pk_out(uint32_t type, uint32_t len, uint64_t msglen, int tag, uint64_t srqid, uint64_t drqid,
                   const void *data)
{
    pk_out_to(PEER, type, len, msglen, tag, srqid, drqid, data);
}

static int last_from;                             /* Kumi's rank that sent the last packet pk_in returned */

/* The next packet that is not a PROTOACK (those are counted), its payload in buf. */
static void pk_in(struct kumi_impi_packet *pk, uint8_t *buf, size_t cap)
{
    for (;;) {
        uint8_t h[128];
        char err[200];
        rd(h, 128);
        if (kumi_impi_packet_parse(h, 128, (uint32_t)job.pk_maxlen, pk, err, sizeof err) != 128)
            DIE("a bad packet header from Kumi: %s", err);
        uint32_t n = kumi_impi_packet_payload(pk);
        if (n > cap) DIE("a payload of %u bytes, room for %zu", n, cap);
        if (n) rd(buf, n);
        if (pk->type == KUMI_IMPI_PK_FINI) return;
        int from = kumi_impi_job_find_proc(&job, pk->src_host, pk->src_pid);
        if (from < 0 || from >= NK || kumi_impi_job_find_proc(&job, pk->dest_host, pk->dest_pid) != ME)
            DIE("a %s packet with pk_src / pk_dest not one of Kumi's ranks 0-%d -> rank %d",
                kumi_impi_packet_type_name(pk->type), NK - 1, ME);
        if (pk->type == KUMI_IMPI_PK_PROTOACK) {
            acks_got++;
            sent_unacked[from] = sent_unacked[from] > job.ackmark ? sent_unacked[from] - job.ackmark : 0;
            continue;
        }
        last_from = from;
        if (++unacked_in[from] > job.hiwater)
            DIE("Kumi's rank %d sent %u packets without a PROTOACK (hiwater %u)", from, unacked_in[from], job.hiwater);
        if (++recvd[from] % job.ackmark == 0) {          /* sheet §4.6, per proc pair */
            unacked_in[from] -= job.ackmark;
            pk_out_to(from, KUMI_IMPI_PK_PROTOACK, 0, 0, -1, 0, 0, NULL);
            acks_sent++;
        }
        return;
    }
}

static void expect(const struct kumi_impi_packet *pk, uint32_t type, int tag, uint64_t msglen, uint32_t len,
                   const char *what)
{
    if (pk->type != type || pk->tag != tag || pk->msglen != msglen || pk->len != len || pk->cid != 0 ||
        (type <= KUMI_IMPI_PK_DATASYNC && pk->lsrank != PEER))
        DIE("%s: got %s tag %d msglen %llu len %u cid %llu lsrank %d; expected %s tag %d msglen %llu len %u cid 0 "
            "lsrank %d", what, kumi_impi_packet_type_name(pk->type), pk->tag, (unsigned long long)pk->msglen,
            pk->len, (unsigned long long)pk->cid, pk->lsrank, kumi_impi_packet_type_name(type), tag,
            (unsigned long long)msglen, len, PEER);
}

static void bytes_eq(const uint8_t *got, const uint8_t *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) DIE("%s: byte %zu is %02x, external32 says %02x", what, i, got[i], want[i]);
}

int main(int argc, char **argv)
{
    const char *server = NULL;
    int datalen = 1000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-server")) server = argv[i + 1];
        else if (!strcmp(argv[i], "-rank")) K = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-datalen")) datalen = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-timeout")) timeout_s = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-kumi-procs")) NK = atoi(argv[i + 1]);
        else DIE("unknown option %s", argv[i]);
    }
    if (NK < 1 || NK > MAXK) DIE("-kumi-procs: 1 to %d", MAXK);
    if (!server || K < 1) DIE("usage: impi_testhost -server HOST:PORT -rank K (K >= 1: Kumi is client 0)");
    struct kumi_impi_client c;
    int myhost;
    const struct impi_tf_args ta = { "impi_testhost", server, K, timeout_s, datalen, 2, 4, 4242 };
    int *hfd = impi_tf_start(&ta, &c, &job, &myhost);
    ME = job.first_proc_of_client[K];
    if (job.nclients != 2 || job.c_nprocs[0] != NK) DIE("expected Kumi as client 0 with %d ranks", NK);
    /* Kumi's client: one host holding all its procs (C_NHOSTS, H_NPROCS, P_IPV6) */
    if (job.c_nhosts[0] != 1 || job.nhosts != 2 || job.hosts[0].nprocs != NK)
        DIE("Kumi's client announced C_NHOSTS %d (hosts in the job %d, H_NPROCS of its first %d); expected one "
            "IMPI host holding its %d procs", job.c_nhosts[0], job.nhosts, job.hosts[0].nprocs, NK);
    for (int p = 0; p < NK; p++)
        if (memcmp(job.procs[p].id, job.hosts[0].id, 16) != 0) DIE("P_IPV6 of Kumi's proc %d is not its host's", p);
    if (job.tag_ub != 32767) DIE("IMPI_Tag_ub %d, expected this side's 32767", job.tag_ub);
    printf("impi_testhost: world rank %d of %d, packets of %d bytes, ackmark %u, hiwater %u\n", ME, job.nprocs,
           job.pk_maxlen, job.ackmark, job.hiwater);
    fflush(stdout);

    fd = hfd[kumi_impi_job_proc_host(&job, PEER)];

    struct kumi_impi_packet pk;
    size_t cap = (size_t)job.pk_maxlen + 64;
    uint8_t *b = malloc(cap);
    pk_in(&pk, b, cap);
    expect(&pk, KUMI_IMPI_PK_DATA, 5, 12, 12, "MPI_Send of 3 MPI_INT");
    static const uint8_t ints[12] = { 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4 };
    bytes_eq(b, ints, 12, "MPI_INT payload");
    pk_in(&pk, b, cap);
    expect(&pk, KUMI_IMPI_PK_DATA, 6, 16, 16, "MPI_Send of 2 MPI_DOUBLE");
    static const uint8_t dbl[16] = { 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0 };
    bytes_eq(b, dbl, 16, "MPI_DOUBLE payload");
    pk_in(&pk, b, cap);
    expect(&pk, KUMI_IMPI_PK_DATASYNC, 7, 2, 2, "MPI_Ssend of 1 MPI_SHORT");
    bytes_eq(b, (const uint8_t[]){ 1, 2 }, 2, "MPI_SHORT payload");
    pk_out(KUMI_IMPI_PK_SYNCACK, 0, 2, 7, pk.srqid, 0, NULL);

    /* a long message: DATASYNC first packet, SYNCACK with our handle, the rest as DATA */
    uint64_t total = 3 * (uint64_t)job.pk_maxlen, got = 0;
    pk_in(&pk, b, cap);
    expect(&pk, KUMI_IMPI_PK_DATASYNC, 8, total, (uint32_t)job.pk_maxlen, "first packet of a long message");
    for (;;) {
        for (uint32_t i = 0; i < pk.len; i += 4) {
            uint32_t v = (uint32_t)((got + i) / 4);
            uint8_t w4[4];
            kumi_impi_put32(w4, v);
            bytes_eq(b + i, w4, 4, "long message payload");
        }
        got += pk.len;
        if (got == pk.len) pk_out(KUMI_IMPI_PK_SYNCACK, 0, total, 8, pk.srqid, 0x4b554d49, NULL);
        if (got >= total) break;
        pk_in(&pk, b, cap);
        if (pk.type != KUMI_IMPI_PK_DATA || pk.drqid != 0x4b554d49 || pk.msglen != total || pk.tag != 8)
            DIE("the rest of the long message: %s drqid %#llx msglen %llu tag %d", kumi_impi_packet_type_name(pk.type),
                (unsigned long long)pk.drqid, (unsigned long long)pk.msglen, pk.tag);
    }

    /* this side sends: ints, a double, a long message, a cancel */
    uint8_t o[16];
    kumi_impi_put32(o, 7);
    kumi_impi_put32(o + 4, (uint32_t)-8);
    pk_out(KUMI_IMPI_PK_DATA, 8, 8, 9, 0, 0, o);
    double d = -2.25;
    uint64_t db;
    memcpy(&db, &d, 8);
    kumi_impi_put64(o, db);
    pk_out(KUMI_IMPI_PK_DATA, 8, 8, 10, 0, 0, o);
    uint64_t ltotal = 2 * (uint64_t)job.pk_maxlen;
    uint8_t *lm = malloc(ltotal);
    for (uint64_t i = 0; i < ltotal / 4; i++) kumi_impi_put32(lm + 4 * i, (uint32_t)(1000 + i));
    pk_out(KUMI_IMPI_PK_DATASYNC, (uint32_t)job.pk_maxlen, ltotal, 11, 77, 0, lm);
    pk_in(&pk, b, cap);
    if (pk.type != KUMI_IMPI_PK_SYNCACK || pk.srqid != 77 || !pk.drqid)
        DIE("expected a SYNCACK for srqid 77 with Kumi's drqid, got %s srqid %llu drqid %llu",
            kumi_impi_packet_type_name(pk.type), (unsigned long long)pk.srqid, (unsigned long long)pk.drqid);
    uint64_t drqid = pk.drqid;
    for (uint64_t off = (uint64_t)job.pk_maxlen; off < ltotal; off += (uint64_t)job.pk_maxlen)
        pk_out(KUMI_IMPI_PK_DATA, (uint32_t)job.pk_maxlen, ltotal, 11, 77, drqid, lm + off);
    pk_out(KUMI_IMPI_PK_CANCEL, 0, 0, 0, 999, 0, NULL);
    int cancel_no = 0, last = 0, from1 = 0;
    for (int k = 0; k < 2 + (NK > 1); k++) {       /* CANCELNO, tag 12 (and rank 1's tag 13), in any order */
        pk_in(&pk, b, cap);
        if (last_from == 1) {
            if (pk.type != KUMI_IMPI_PK_DATA || pk.tag != 13 || pk.msglen != 4 || pk.len != 4 || pk.cid != 0 ||
                pk.lsrank != 1)
                DIE("from rank 1: got %s tag %d msglen %llu len %u cid %llu lsrank %d; expected DATA tag 13 of 4 "
                    "bytes on cid 0 from rank 1", kumi_impi_packet_type_name(pk.type), pk.tag,
                    (unsigned long long)pk.msglen, pk.len, (unsigned long long)pk.cid, pk.lsrank);
            bytes_eq(b, (const uint8_t[]){ 0x11, 0x22, 0x33, 0x44 }, 4, "rank 1's MPI_INT");
            from1++;
        } else if (pk.type == KUMI_IMPI_PK_CANCELNO && pk.srqid == 999) {
            cancel_no++;
        } else {
            expect(&pk, KUMI_IMPI_PK_DATA, 12, 4, 4, "the last message");
            bytes_eq(b, (const uint8_t[]){ 0, 0, 0, 42 }, 4, "the last MPI_INT");
            last++;
        }
    }
    if (cancel_no != 1 || last != 1 || from1 != (NK > 1))
        DIE("expected a CANCELNO for srqid 999 and the last message%s", NK > 1 ? " and rank 1's" : "");
    if (NK > 1) {
        uint8_t m5[4];
        kumi_impi_put32(m5, (uint32_t)-5);
        pk_out_to(1, KUMI_IMPI_PK_DATA, 4, 4, 14, 0, 0, m5);
    }
    if (!acks_got || !acks_sent) DIE("no PROTOACK went (%u sent, %u received)", acks_sent, acks_got);

    /* MPI_Finalize's barrier over MPI_COMM_WORLD by IMPI's algorithm
     * (coll/impi; sheet §5.8, two masters: linear): this proc, master 1,
     * sends an empty message to rank 0 (Kumi's client's master) on the
     * collective context (cid + 1 = 1, as LAM's IMPI collectives) with
     * IMPI_BARRIER_TAG 110 and waits for rank 0's answer in kind (Kumi's
     * other ranks meet in their client's local phase, not on the wire); then
     * FINI both ways (sheet §6.1; Kumi's host sends its FINI once all its
     * procs are through) */
    out_cid = 1;
    pk_out_to(0, KUMI_IMPI_PK_DATA, 0, 0, 110, 0, 0, NULL);
    pk_in(&pk, b, cap);
    if (pk.type != KUMI_IMPI_PK_DATA || pk.cid != 1 || pk.tag != 110 || pk.len != 0 || pk.msglen != 0 ||
        last_from != 0)
        DIE("in MPI_Finalize: a %s packet tag %d cid %llu len %u from rank %d, expected the IMPI barrier's empty "
            "message (cid 1, tag 110) from rank 0", kumi_impi_packet_type_name(pk.type), pk.tag,
            (unsigned long long)pk.cid, pk.len, last_from);
    pk_out(KUMI_IMPI_PK_FINI, 0, 0, -1, 0, 0, NULL);
    pk_in(&pk, b, cap);
    if (pk.type != KUMI_IMPI_PK_FINI)
        DIE("after MPI_Finalize's barrier: a %s packet tag %d cid %llu, expected FINI", kumi_impi_packet_type_name(pk.type),
            pk.tag, (unsigned long long)pk.cid);
    printf("impi_testhost: all checks passed (%u packets from Kumi's rank 0, %u from rank 1, one connection; "
           "PROTOACKs %u sent %u received)\n", recvd[0], NK > 1 ? recvd[1] : 0, acks_sent, acks_got);
    fflush(stdout);
    for (int h = 0; h < myhost; h++) close(hfd[h]);
    if (kumi_impi_client_fini(&c) != 0) DIE("%s", c.err);
    return 0;
}
