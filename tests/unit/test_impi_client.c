/* Unit test of the client side of the IMPI start-up (framework/core/impi_client.c),
 * in process, against a scripted fake server on a socketpair (a thread that
 * reads what the client must send, checks it byte for byte, and answers):
 * AUTH with KEY (the key on the wire) and NONE, a server choosing an unknown
 * or unoffered mechanism; IMPI (the size kept, a size not above the rank, a
 * wrong command, garbage); a COLL round (the reply's data and mask, a reply
 * for another label, a connection closed mid-reply); DONE with a payload
 * skipped; a silent server (the wait ends after timeout_ms with a message);
 * a whole label exchange with an echoing one-client server (the job built);
 * connect errors.  Every error names the server and the step. */
#include <kumi/impi.h>
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "ut.h"

enum { RD, WR, CLOSE, SLEEP, END };
struct step {
    int op;
    size_t n;
    const uint8_t *bytes;              /* RD: expected (NULL: anything), WR: to send */
};
struct fake {
    int fd;
    const struct step *steps;
    char bad[200];                     /* what the client sent wrong */
};

static void *run_fake(void *arg)
{
    struct fake *f = arg;
    for (const struct step *s = f->steps; s->op != END; s++) {
        if (s->op == RD) {
            uint8_t b[256];
            size_t got = 0;
            while (got < s->n) {
                ssize_t r = read(f->fd, b + got, s->n - got);
                if (r <= 0) {
                    snprintf(f->bad, sizeof f->bad, "client closed after %zu of %zu bytes", got, s->n);
                    return NULL;
                }
                got += (size_t)r;
            }
            if (s->bytes && memcmp(b, s->bytes, s->n))
                snprintf(f->bad, sizeof f->bad, "client sent other bytes (step %d)", (int)(s - f->steps));
        } else if (s->op == WR) {
            if (write(f->fd, s->bytes, s->n) != (ssize_t)s->n)
                snprintf(f->bad, sizeof f->bad, "write failed");
        } else if (s->op == CLOSE) {
            close(f->fd);
            f->fd = -1;
            return NULL;
        } else if (s->op == SLEEP) {
            usleep((useconds_t)s->n * 1000);
        }
    }
    return NULL;
}

static struct kumi_impi_client c;
static struct fake fk;
static pthread_t th;

static void start(const struct step *steps, int timeout_ms)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        exit(2);
    memset(&c, 0, sizeof c);
    c.fd = sv[0];
    c.timeout_ms = timeout_ms;
    c.rank = c.size = -1;
    snprintf(c.server, sizeof c.server, "fake:1");
    memset(&fk, 0, sizeof fk);
    fk.fd = sv[1];
    fk.steps = steps;
    pthread_create(&th, NULL, run_fake, &fk);
}

static void finish(void)
{
    kumi_impi_client_close(&c);
    pthread_join(th, NULL);
    if (fk.fd >= 0)
        close(fk.fd);
    CHECK(!fk.bad[0], "fake server: %s", fk.bad);
}

static const uint8_t auth3[] = { 'A', 'U', 'T', 'H', 0, 0, 0, 4, 0, 0, 0, 3 };
static const uint8_t auth1[] = { 'A', 'U', 'T', 'H', 0, 0, 0, 4, 0, 0, 0, 1 };
static const uint8_t choose_key[] = { 0, 0, 0, 1, 0, 0, 0, 8 };
static const uint8_t choose_none[] = { 0, 0, 0, 0, 0, 0, 0, 0 };
static const uint8_t choose_2[] = { 0, 0, 0, 2, 0, 0, 0, 0 };
static const uint8_t key[] = { 0, 0, 0, 0, 0x12, 0x34, 0xab, 0xcd };
static const uint8_t impi1[] = { 'I', 'M', 'P', 'I', 0, 0, 0, 4, 0, 0, 0, 1 };
static const uint8_t size2[] = { 'I', 'M', 'P', 'I', 0, 0, 0, 4, 0, 0, 0, 2 };
static const uint8_t size1[] = { 'I', 'M', 'P', 'I', 0, 0, 0, 4, 0, 0, 0, 1 };
static const uint8_t done0[] = { 'D', 'O', 'N', 'E', 0, 0, 0, 0 };
static const uint8_t done4[] = { 'D', 'O', 'N', 'E', 0, 0, 0, 4, 1, 2, 3, 4 };
static const uint8_t fini0[] = { 'F', 'I', 'N', 'I', 0, 0, 0, 0 };
static const uint8_t http[] = "HTTP/1.0 200 OK\r\n";
static const uint8_t nhosts_in[] = { 'C', 'O', 'L', 'L', 0, 0, 0, 8, 0, 0, 0x11, 0, 0, 0, 0, 3 };
static const uint8_t nhosts_out[] = { 'C', 'O', 'L', 'L', 0, 0, 0, 16, 0, 0, 0x11, 0, 0, 0, 0, 3,
                                      0, 0, 0, 1, 0, 0, 0, 3 };
static const uint8_t nprocs_out[] = { 'C', 'O', 'L', 'L', 0, 0, 0, 16, 0, 0, 0x12, 0, 0, 0, 0, 3,
                                      0, 0, 0, 1, 0, 0, 0, 3 };

static void test_auth_impi(void)
{
    int chosen = -1;
    UT_CASE("AUTH KEY");
    start((const struct step[]){ { RD, 12, auth3 }, { WR, 8, choose_key }, { RD, 8, key }, { END, 0, NULL } }, 2000);
    CHECK_INT(kumi_impi_client_auth(&c, 3, 0x1234abcd, &chosen), 0);
    CHECK_INT(chosen, KUMI_IMPI_AUTH_KEY);
    CHECK(c.key_sent_ms > 0, "key time");
    finish();

    UT_CASE("AUTH NONE");
    start((const struct step[]){ { RD, 12, auth1 }, { WR, 8, choose_none }, { END, 0, NULL } }, 2000);
    CHECK_INT(kumi_impi_client_auth(&c, 1, 0, &chosen), 0);
    CHECK_INT(chosen, KUMI_IMPI_AUTH_NONE);
    finish();

    UT_CASE("AUTH: bad choices");
    start((const struct step[]){ { RD, 12, auth1 }, { WR, 8, choose_key }, { END, 0, NULL } }, 2000);
    CHECK_INT(kumi_impi_client_auth(&c, 1, 0, &chosen), -1);
    CHECK_HAS(c.err, "IMPI server fake:1", "AUTH", "did not offer");
    finish();
    start((const struct step[]){ { RD, 12, auth3 }, { WR, 8, choose_2 }, { END, 0, NULL } }, 2000);
    CHECK_INT(kumi_impi_client_auth(&c, 3, 0, &chosen), -1);
    CHECK_HAS(c.err, "mechanism 2");
    finish();
    start((const struct step[]){ { END, 0, NULL } }, 2000);
    CHECK_INT(kumi_impi_client_auth(&c, 0, 0, &chosen), -1);
    CHECK_HAS(c.err, "no authentication mechanism enabled");
    finish();

    UT_CASE("IMPI");
    start((const struct step[]){ { RD, 12, impi1 }, { WR, 12, size2 }, { END, 0, NULL } }, 2000);
    CHECK_INT(kumi_impi_client_impi(&c, 1), 0);
    CHECK_INT(c.size, 2);
    CHECK_INT(c.rank, 1);
    finish();
    start((const struct step[]){ { RD, 12, impi1 }, { WR, 12, size1 }, { END, 0, NULL } }, 2000);
    CHECK_INT(kumi_impi_client_impi(&c, 1), -1);
    CHECK_HAS(c.err, "rank 1 is not below the number of clients 1");
    finish();
    start((const struct step[]){ { RD, 12, impi1 }, { WR, 8, done0 }, { END, 0, NULL } }, 2000);
    CHECK_INT(kumi_impi_client_impi(&c, 1), -1);
    CHECK_HAS(c.err, "expected the IMPI reply, got DONE");
    finish();
    start((const struct step[]){ { RD, 12, impi1 }, { WR, sizeof http - 1, http }, { END, 0, NULL } }, 2000);
    CHECK_INT(kumi_impi_client_impi(&c, 1), -1);
    CHECK_HAS(c.err, "bad reply", "unknown command");
    finish();
    /* a close at once after the key: the hint */
    start((const struct step[]){ { RD, 12, auth3 }, { WR, 8, choose_key }, { RD, 8, key }, { RD, 12, impi1 },
                                 { CLOSE, 0, NULL } }, 2000);
    CHECK_INT(kumi_impi_client_auth(&c, 3, 0x1234abcd, &chosen), 0);
    CHECK_INT(kumi_impi_client_impi(&c, 1), -1);
    CHECK_HAS(c.err, "closed the connection", "IMPI reply", "was the key right?");
    finish();
}

static void test_coll_done(void)
{
    uint8_t v[4] = { 0, 0, 0, 3 }, *out = NULL;
    uint32_t mask = 0;
    size_t n = 0;
    UT_CASE("COLL");
    start((const struct step[]){ { RD, 16, nhosts_in }, { WR, sizeof nhosts_out, nhosts_out }, { END, 0, NULL } }, 2000);
    CHECK_INT(kumi_impi_client_coll(&c, KUMI_IMPI_C_NHOSTS, v, 4, &mask, &out, &n), 0);
    CHECK_INT(mask, 3);
    CHECK_INT(n, 8);
    CHECK(out && out[3] == 1 && out[7] == 3, "reply data");
    free(out);
    finish();
    start((const struct step[]){ { RD, 16, nhosts_in }, { WR, sizeof nprocs_out, nprocs_out }, { END, 0, NULL } }, 2000);
    CHECK_INT(kumi_impi_client_coll(&c, KUMI_IMPI_C_NHOSTS, v, 4, &mask, &out, &n), -1);
    CHECK_HAS(c.err, "expected the reply to label C_NHOSTS, got label C_NPROCS");
    CHECK_PTR(out, NULL);
    finish();
    start((const struct step[]){ { RD, 16, nhosts_in }, { WR, 20, nhosts_out }, { CLOSE, 0, NULL } }, 2000);
    CHECK_INT(kumi_impi_client_coll(&c, KUMI_IMPI_C_NHOSTS, v, 4, &mask, &out, &n), -1);
    CHECK_HAS(c.err, "closed the connection while this client waited for the reply to label C_NHOSTS");
    finish();
    start((const struct step[]){ { END, 0, NULL } }, 2000);
    CHECK_INT(kumi_impi_client_coll(&c, KUMI_IMPI_C_NHOSTS, v, 3, &mask, &out, &n), -1);
    CHECK_HAS(c.err, "not sent", "C_NHOSTS");
    finish();

    UT_CASE("DONE, FINI");
    start((const struct step[]){ { RD, 8, done0 }, { WR, sizeof done4, done4 }, { RD, 8, fini0 }, { END, 0, NULL } }, 2000);
    CHECK_INT(kumi_impi_client_done(&c), 0);
    CHECK_INT(kumi_impi_client_fini(&c), 0);
    CHECK_INT(c.fd, -1);
    finish();

    UT_CASE("a silent server");
    start((const struct step[]){ { RD, 8, done0 }, { SLEEP, 800, NULL }, { END, 0, NULL } }, 300);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_INT(kumi_impi_client_done(&c), -1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double el = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECK(el >= 0.29 && el < 0.75, "gave up after %.2f s for a 0.3 s bound", el);
    CHECK_HAS(c.err, "waiting for the server's DONE", "nothing came for 300 ms");
    finish();
}

/* a one-client server that echoes every label with mask 1 */
static void *echo(void *arg)
{
    int fd = *(int *)arg;
    for (;;) {
        uint8_t h[12], d[4096], o[16];
        if (read(fd, h, 8) != 8)
            return NULL;
        uint32_t len = kumi_impi_get32(h + 4);
        if (kumi_impi_get32(h) != KUMI_IMPI_CMD_COLL || len > sizeof d)
            return NULL;
        size_t got = 0;
        while (got < len) {
            ssize_t r = read(fd, d + got, len - got);
            if (r <= 0)
                return NULL;
            got += (size_t)r;
        }
        size_t k = kumi_impi_enc_coll_hdr(o, KUMI_IMPI_S2C, kumi_impi_get32(d), 1, len - 4);
        if (write(fd, o, k) != (ssize_t)k || write(fd, d + 4, len - 4) != (ssize_t)(len - 4))
            return NULL;
    }
}

static void test_labels(void)
{
    UT_CASE("every label, one client");
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    memset(&c, 0, sizeof c);
    c.fd = sv[0];
    c.timeout_ms = 2000;
    c.rank = 0;
    c.size = 1;
    pthread_create(&th, NULL, echo, &sv[1]);
    struct kumi_impi_host h[2] = { { .port = 7000, .nprocs = 2, .ackmark = 5, .hiwater = 9 },
                                   { .port = 7001, .nprocs = 1, .ackmark = 6, .hiwater = 8 } };
    struct kumi_impi_proc p[3] = { { .pid = 11 }, { .pid = 12 }, { .pid = 13 } };
    uint8_t a[4] = { 192, 0, 2, 9 };
    kumi_impi_hostid_set(h[1].id, AF_INET, a);
    struct kumi_impi_mine m = { .datalen = 512, .tagub = 65535, .xsize = 100, .maxlinear = -1, .nhosts = 2,
                                .nprocs = 3, .hosts = h, .procs = p };
    struct kumi_impi_job job;
    CHECK(kumi_impi_client_labels(&c, &m, &job) == 0, "labels: %s", c.err);
    CHECK_INT(job.nhosts, 2);
    CHECK_INT(job.nprocs, 3);
    CHECK_INT(job.pk_maxlen, 512);
    CHECK_INT(job.tag_ub, 65535);
    CHECK_INT(job.xsize, 100);
    CHECK_INT(job.maxlinear, 4);
    CHECK_INT(job.ackmark, 5);
    CHECK_INT(job.hiwater, 8);
    CHECK_INT(job.hosts[1].port, 7001);
    CHECK(job.hosts && !memcmp(job.hosts[1].id, h[1].id, 16), "host id");
    CHECK_INT(job.procs[2].pid, 13);
    kumi_impi_job_free(&job);
    m.nprocs = 4;                      /* H_NPROCS sums to 3 */
    struct kumi_impi_proc p4[4] = { { .pid = 1 }, { .pid = 2 }, { .pid = 3 }, { .pid = 4 } };
    m.procs = p4;
    CHECK_INT(kumi_impi_client_labels(&c, &m, &job), -1);
    CHECK_HAS(c.err, "C_NPROCS says 4");
    kumi_impi_job_free(&job);
    kumi_impi_client_close(&c);
    pthread_join(th, NULL);
    close(sv[1]);
}

static void test_connect(void)
{
    UT_CASE("connect");
    CHECK_INT(kumi_impi_client_connect(&c, "nohostport", 1000), -1);
    CHECK_HAS(c.err, "nohostport", "not a host:port");
    /* a port nobody listens on: take one and close it */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t l = sizeof a;
    bind(s, (struct sockaddr *)&a, sizeof a);
    getsockname(s, (struct sockaddr *)&a, &l);
    close(s);
    char hp[64];
    snprintf(hp, sizeof hp, "127.0.0.1:%d", ntohs(a.sin_port));
    CHECK_INT(kumi_impi_client_connect(&c, hp, 1000), -1);
    CHECK_HAS(c.err, hp, "connect", "refused");
    CHECK_INT(kumi_impi_client_connect(&c, "", 1000), -1);
    CHECK_HAS(c.err, "no server address");
}

int main(void)
{
    test_auth_impi();
    test_coll_done();
    test_labels();
    test_connect();
    return ut_done("impi_client");
}
