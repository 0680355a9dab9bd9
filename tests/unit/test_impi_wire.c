/* Unit test of the IMPI wire format (framework/core/impi_wire.c, kumi/impi.h),
 * in process: the start-up commands byte for byte against the example of
 * ../shared/impi/PROTOCOL.md §1.13 and §1.8 (big-endian, codes = ASCII),
 * every prefix of a good frame is "more", the strict refusals (unknown
 * command or label, wrong lengths, commands in the wrong direction, a
 * length beyond the limit seen from the header alone), the AUTH reply and
 * keys, my label contributions, the job tables built from the replies (3
 * clients; the derived minima, first host / proc, version lists, the
 * refusals: XSIZE disagreement, H_NPROCS against C_NPROCS, TAGUB bound,
 * partial mask, a label twice or out of order), host ids (IPv4-compatible
 * and -mapped), and the 128-byte packet header at the sheet's offsets. */
#include <kumi/impi.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include "ut.h"

static uint8_t buf[4096];
static char err[300];

static int parse(const uint8_t *b, size_t n, int dir, struct kumi_impi_frame *f)
{
    err[0] = 0;
    return kumi_impi_frame_parse(b, n, dir, 0, f, err, sizeof err);
}

/* every proper prefix of a good frame is "more", the whole is its size */
static struct kumi_impi_frame f;
static void check_prefixes(const uint8_t *b, size_t n, int dir, const char *what)
{
    for (size_t k = 0; k < n; k++) {
        int r = parse(b, k, dir, &f);
        CHECK(r == KUMI_IMPI_MORE, "%s: prefix of %zu of %zu bytes gave %d (%s)", what, k, n, r, err);
    }
    CHECK_INT(parse(b, n, dir, &f), (int)n);
}

static size_t hex(const char *s, uint8_t *out)
{
    size_t n = 0;
    unsigned v;
    while (*s) {
        if (*s == ' ' || *s == '|') {
            s++;
            continue;
        }
        sscanf(s, "%2x", &v);
        out[n++] = (uint8_t)v;
        s += 2;
    }
    return n;
}

static void test_frames(void)
{
    uint8_t want[64];
    size_t n;

    UT_CASE("AUTH");
    CHECK_INT(kumi_impi_enc_auth(buf, 3), 12);
    n = hex("41 55 54 48 | 00 00 00 04 | 00 00 00 03", want);
    CHECK(!memcmp(buf, want, n), "AUTH bytes");
    check_prefixes(buf, 12, KUMI_IMPI_C2S, "AUTH");
    CHECK_INT(parse(buf, 12, KUMI_IMPI_C2S, &f), 12);
    CHECK_INT(f.cmd, KUMI_IMPI_CMD_AUTH);
    CHECK_INT(f.auth_mask, 3);
    CHECK_INT(f.auth_oldkey, 0);
    CHECK_INT(parse(buf, 12, KUMI_IMPI_S2C, &f), KUMI_IMPI_BAD);
    CHECK_HAS(err, "AUTH", "never sent by a server");
    kumi_impi_put32(buf + 8, 0x4);     /* no known mechanism */
    CHECK_INT(parse(buf, 12, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);
    CHECK_HAS(err, "neither NONE", "KEY");
    /* the draft's old form: an 8-byte key */
    kumi_impi_enc_cmd(buf, KUMI_IMPI_CMD_AUTH, 8);
    kumi_impi_put64(buf + 8, 0x0102030405060708ull);
    CHECK_INT(parse(buf, 16, KUMI_IMPI_C2S, &f), 16);
    CHECK_INT(f.auth_oldkey, 1);
    CHECK(f.auth_key == 0x0102030405060708ull, "old key %llx", (unsigned long long)f.auth_key);
    kumi_impi_enc_cmd(buf, KUMI_IMPI_CMD_AUTH, 5);
    CHECK_INT(parse(buf, 8, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);
    CHECK_HAS(err, "AUTH with 5 payload bytes");

    UT_CASE("server AUTH reply, keys");
    int32_t which, len;
    kumi_impi_enc_server_auth(buf, KUMI_IMPI_AUTH_KEY, 8);
    n = hex("00 00 00 01 00 00 00 08", want);
    CHECK(!memcmp(buf, want, n), "server auth bytes");
    CHECK_INT(kumi_impi_dec_server_auth(buf, 3, &which, &len, err, sizeof err), 0);
    CHECK_INT(which, 1);
    CHECK_INT(len, 8);
    CHECK_INT(kumi_impi_dec_server_auth(buf, 1, &which, &len, err, sizeof err), -1);
    CHECK_HAS(err, "did not offer");
    kumi_impi_enc_server_auth(buf, 2, 0);
    CHECK_INT(kumi_impi_dec_server_auth(buf, 0, &which, &len, err, sizeof err), -1);
    CHECK_HAS(err, "mechanism 2");
    uint64_t key = 0;
    CHECK_INT(kumi_impi_parse_key("12345", &key), 0);
    CHECK(key == 12345, "key");
    CHECK_INT(kumi_impi_parse_key("0xffffffffffffffff", &key), 0);
    CHECK(key == UINT64_MAX, "hex key");
    CHECK_INT(kumi_impi_parse_key("18446744073709551616", &key), -1);
    CHECK_INT(kumi_impi_parse_key("-1", &key), 0);    /* LAM: atoll */
    CHECK(key == UINT64_MAX, "-1 as a key");
    CHECK_INT(kumi_impi_parse_key("-", &key), -1);
    CHECK_INT(kumi_impi_parse_key("-0x5", &key), -1);
    CHECK_INT(kumi_impi_parse_key("-9223372036854775809", &key), -1);
    CHECK_INT(kumi_impi_parse_key("", &key), -1);
    CHECK_INT(kumi_impi_parse_key("12x", &key), -1);

    UT_CASE("IMPI");
    kumi_impi_enc_impi(buf, 1);
    n = hex("49 4D 50 49 | 00 00 00 04 | 00 00 00 01", want);
    CHECK(!memcmp(buf, want, n), "IMPI bytes");
    check_prefixes(buf, 12, KUMI_IMPI_C2S, "IMPI");
    CHECK_INT(f.value, 1);
    kumi_impi_enc_impi(buf, 3);
    CHECK_INT(parse(buf, 12, KUMI_IMPI_S2C, &f), 12);
    CHECK_INT(f.value, 3);
    kumi_impi_enc_impi(buf, 32);
    CHECK_INT(parse(buf, 12, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);
    CHECK_HAS(err, "rank 32");
    CHECK_INT(parse(buf, 12, KUMI_IMPI_S2C, &f), 12);
    kumi_impi_enc_impi(buf, 0);
    CHECK_INT(parse(buf, 12, KUMI_IMPI_S2C, &f), KUMI_IMPI_BAD);
    kumi_impi_enc_impi(buf, -1);
    CHECK_INT(parse(buf, 12, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);
    kumi_impi_enc_cmd(buf, KUMI_IMPI_CMD_IMPI, 8);
    CHECK_INT(parse(buf, 8, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);

    UT_CASE("COLL C2S (sheet 1.13)");
    memset(buf + 12, 0, 8);
    CHECK_INT(kumi_impi_enc_coll_hdr(buf, KUMI_IMPI_C2S, KUMI_IMPI_C_VERSION, 0, 8), 12);
    n = hex("43 4F 4C 4C | 00 00 00 0C | 00 00 10 00 | 00 00 00 00 00 00 00 00", want);
    CHECK(!memcmp(buf, want, n), "COLL C_VERSION bytes");
    check_prefixes(buf, 20, KUMI_IMPI_C2S, "COLL");
    CHECK_INT(f.label, KUMI_IMPI_C_VERSION);
    CHECK_INT(f.ndata, 8);
    CHECK_PTR(f.data, buf + 12);
    kumi_impi_enc_coll_hdr(buf, KUMI_IMPI_C2S, KUMI_IMPI_C_NHOSTS, 0, 4);
    kumi_impi_put32(buf + 12, 1);
    n = hex("43 4F 4C 4C | 00 00 00 08 | 00 00 11 00 | 00 00 00 01", want);
    CHECK(!memcmp(buf, want, n), "COLL C_NHOSTS bytes");
    CHECK_INT(parse(buf, 16, KUMI_IMPI_C2S, &f), 16);
    /* wrong sizes */
    kumi_impi_enc_coll_hdr(buf, KUMI_IMPI_C2S, KUMI_IMPI_C_NHOSTS, 0, 8);
    CHECK_INT(parse(buf, 20, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);
    CHECK_HAS(err, "C_NHOSTS", "8 bytes, expected 4");
    kumi_impi_enc_coll_hdr(buf, KUMI_IMPI_C2S, KUMI_IMPI_H_IPV6, 0, 20);
    CHECK_INT(parse(buf, 32, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);
    CHECK_HAS(err, "H_IPV6");
    kumi_impi_enc_coll_hdr(buf, KUMI_IMPI_C2S, KUMI_IMPI_P_PID, 0, 0);
    CHECK_INT(parse(buf, 12, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);
    kumi_impi_enc_coll_hdr(buf, KUMI_IMPI_C2S, KUMI_IMPI_C_VERSION, 0, 12);
    CHECK_INT(parse(buf, 24, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);
    /* an unknown label is refused as soon as it is there */
    kumi_impi_enc_coll_hdr(buf, KUMI_IMPI_C2S, 0x1700, 0, 4);
    CHECK_INT(parse(buf, 12, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);
    CHECK_HAS(err, "unknown label 0x1700");
    kumi_impi_enc_coll_hdr(buf, KUMI_IMPI_C2S, KUMI_IMPI_NO_LABEL, 0, 4);
    CHECK_INT(parse(buf, 16, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);
    /* a huge length: refused from the header alone */
    kumi_impi_enc_cmd(buf, KUMI_IMPI_CMD_COLL, 0xffffffffu);
    CHECK_INT(parse(buf, 8, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);
    CHECK_HAS(err, "more than the limit");
    kumi_impi_enc_cmd(buf, KUMI_IMPI_CMD_COLL, 3);
    CHECK_INT(parse(buf, 8, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);
    kumi_impi_enc_cmd(buf, KUMI_IMPI_CMD_COLL, 1000);
    CHECK_INT(kumi_impi_frame_parse(buf, 8, KUMI_IMPI_C2S, 100, &f, err, sizeof err), KUMI_IMPI_BAD);

    UT_CASE("COLL S2C (sheet 1.8 example)");
    n = hex("43 4F 4C 4C 00 00 00 14 00 00 11 00 00 00 00 07 00 00 00 03 00 00 00 02 00 00 00 02", buf);
    CHECK_INT(n, 28);
    check_prefixes(buf, n, KUMI_IMPI_S2C, "COLL reply");
    CHECK_INT(f.mask, 7);
    CHECK_INT(f.ndata, 12);
    CHECK_INT(kumi_impi_get32(f.data + 8), 2);
    CHECK_INT(parse(buf, n, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);   /* C2S: 16 bytes of C_NHOSTS */
    kumi_impi_put32(buf + 12, 3);                                /* two clients, 12 bytes */
    CHECK_INT(parse(buf, n, KUMI_IMPI_S2C, &f), KUMI_IMPI_BAD);
    CHECK_HAS(err, "12 bytes for 2 clients");
    /* versions {0.0}, {0.0,0.1}, {0.0,0.1}: len 48, five records */
    kumi_impi_enc_coll_hdr(buf, KUMI_IMPI_S2C, KUMI_IMPI_C_VERSION, 7, 40);
    CHECK_INT(kumi_impi_get32(buf + 4), 48);
    memset(buf + 16, 0, 40);
    CHECK_INT(parse(buf, 56, KUMI_IMPI_S2C, &f), 56);

    UT_CASE("DONE, FINI");
    kumi_impi_enc_cmd(buf, KUMI_IMPI_CMD_DONE, 0);
    n = hex("44 4F 4E 45 00 00 00 00", want);
    CHECK(!memcmp(buf, want, n), "DONE bytes");
    check_prefixes(buf, 8, KUMI_IMPI_C2S, "DONE");
    check_prefixes(buf, 8, KUMI_IMPI_S2C, "DONE");
    kumi_impi_enc_cmd(buf, KUMI_IMPI_CMD_DONE, 4);
    CHECK_INT(parse(buf, 12, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);
    CHECK_INT(parse(buf, 12, KUMI_IMPI_S2C, &f), 12);           /* a server's payload is skipped */
    kumi_impi_enc_cmd(buf, KUMI_IMPI_CMD_FINI, 0);
    check_prefixes(buf, 8, KUMI_IMPI_C2S, "FINI");
    CHECK_INT(parse(buf, 8, KUMI_IMPI_S2C, &f), KUMI_IMPI_BAD);
    kumi_impi_enc_cmd(buf, KUMI_IMPI_CMD_FINI, 1);
    CHECK_INT(parse(buf, 8, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);

    UT_CASE("unknown commands, two frames");
    memcpy(buf, "GET / HTTP/1.0\r\n", 16);
    CHECK_INT(parse(buf, 16, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);
    CHECK_HAS(err, "unknown command 0x47455420");
    CHECK_INT(parse(buf, 4, KUMI_IMPI_C2S, &f), KUMI_IMPI_BAD);   /* known from 4 bytes */
    CHECK_INT(parse(buf, 3, KUMI_IMPI_C2S, &f), KUMI_IMPI_MORE);
    kumi_impi_enc_cmd(buf, KUMI_IMPI_CMD_DONE, 0);
    kumi_impi_enc_cmd(buf + 8, KUMI_IMPI_CMD_FINI, 0);
    CHECK_INT(parse(buf, 16, KUMI_IMPI_C2S, &f), 8);
    CHECK_INT(f.cmd, KUMI_IMPI_CMD_DONE);
    CHECK_INT(kumi_impi_frame_parse(buf, 16, 3, 0, &f, err, sizeof err), KUMI_IMPI_BAD);
    CHECK(!strcmp(kumi_impi_cmd_name(KUMI_IMPI_CMD_COLL), "COLL") && !kumi_impi_cmd_name(0), "names");
}

/* three clients: 1, 2 and 1 hosts; host j of client k has k+j+1 procs */
static struct kumi_impi_host hosts[3][2];
static struct kumi_impi_proc procs[3][8];
static struct kumi_impi_mine mine[3];

static void make_mine(void)
{
    static const int nh[3] = { 1, 2, 1 };
    for (int k = 0; k < 3; k++) {
        int np = 0;
        for (int j = 0; j < nh[k]; j++) {
            uint8_t a[4] = { 10, (uint8_t)k, (uint8_t)j, 1 };
            kumi_impi_hostid_set(hosts[k][j].id, AF_INET, a);
            hosts[k][j].port = 5000 + 10 * k + j;
            hosts[k][j].nprocs = k + j + 1;
            hosts[k][j].ackmark = 10 - (uint32_t)k;
            hosts[k][j].hiwater = 20 + (uint32_t)k;
            for (int p = 0; p < k + j + 1; p++, np++) {
                memcpy(procs[k][np].id, hosts[k][j].id, 16);
                procs[k][np].pid = 100 * k + np;
            }
        }
        mine[k] = (struct kumi_impi_mine){ .datalen = 1000 * (3 - k), .tagub = 40000 + k, .xsize = k == 1 ? 1024 : -1,
                                           .maxlinear = -1, .nhosts = nh[k], .nprocs = np,
                                           .hosts = hosts[k], .procs = procs[k] };
    }
}

/* what the server would send back for label: the concatenation in client order */
static size_t reply(uint32_t label, uint8_t *out)
{
    size_t n = 0;
    for (int k = 0; k < 3; k++)
        n += kumi_impi_label_encode(label, &mine[k], out + n);
    return n;
}

static int build(struct kumi_impi_job *job, int skip)
{
    memset(job, 0, sizeof *job);
    job->nclients = 3;
    for (int i = 0; i < KUMI_IMPI_NLABELS; i++) {
        if (i == skip)
            continue;
        size_t n = reply(kumi_impi_label_order[i], buf);
        if (kumi_impi_job_add(job, kumi_impi_label_order[i], 7, buf, n, err, sizeof err) != 0)
            return -1;
    }
    return kumi_impi_job_finish(job, err, sizeof err);
}

static void test_job(void)
{
    struct kumi_impi_job job;
    make_mine();

    UT_CASE("my contributions");
    CHECK_INT(kumi_impi_label_encode(KUMI_IMPI_C_VERSION, &mine[0], buf), 8);
    CHECK_INT(kumi_impi_label_encode(KUMI_IMPI_H_PORT, &mine[1], buf), 8);
    CHECK_INT(kumi_impi_get32(buf + 4), 5011);
    CHECK_INT(kumi_impi_label_encode(KUMI_IMPI_P_PID, &mine[1], NULL), 8 * 5);
    CHECK_INT(kumi_impi_label_encode(KUMI_IMPI_C_COLL_XSIZE, &mine[0], buf), 4);
    CHECK_INT(kumi_impi_get32(buf), 0xffffffffu);
    CHECK_INT(kumi_impi_label_encode(0x4242, &mine[0], buf), 0);
    for (int i = 0; i < KUMI_IMPI_NLABELS; i++) {
        uint32_t l = kumi_impi_label_order[i];
        size_t n = kumi_impi_label_encode(l, &mine[1], buf);
        CHECK(kumi_impi_label_check(l, n, 0, err, sizeof err) == 0, "label %s: %s", kumi_impi_label_name(l), err);
    }
    CHECK_INT(kumi_impi_label_check(KUMI_IMPI_H_PORT, 8, 3, err, sizeof err), -1);
    CHECK_HAS(err, "expected 3 hosts");

    UT_CASE("the job of 3 clients");
    CHECK(build(&job, -1) == 0, "build: %s", err);
    CHECK_INT(job.nhosts, 4);
    CHECK_INT(job.nprocs, 1 + 2 + 3 + 3);
    CHECK_INT(job.pk_maxlen, 1000);
    CHECK_INT(job.tag_ub, 40000);
    CHECK_INT(job.xsize, 1024);
    CHECK_INT(job.maxlinear, 4);
    CHECK_INT(job.ackmark, 8);
    CHECK_INT(job.hiwater, 20);
    CHECK_INT(job.first_host[2], 3);
    CHECK_INT(job.first_proc_of_client[2], 6);
    CHECK_INT(job.host_first_proc[3], 6);
    CHECK_INT(job.host_first_proc[4], 9);
    CHECK_INT(job.hosts[2].port, 5011);
    CHECK_INT(job.procs[7].pid, 201);
    uint8_t a4[16];
    CHECK_INT(kumi_impi_hostid_get(job.procs[7].id, a4), AF_INET);
    CHECK(a4[0] == 10 && a4[1] == 2 && a4[2] == 0 && a4[3] == 1, "proc 7 address");
    UT_CASE("lookups");
    for (int p = 0; p < job.nprocs; p++)
        CHECK(kumi_impi_job_find_proc(&job, job.procs[p].id, job.procs[p].pid) == p, "find proc %d", p);
    CHECK_INT(kumi_impi_job_find_proc(&job, job.procs[7].id, 999), -1);
    CHECK_INT(kumi_impi_job_find_proc(&job, job.procs[0].id, job.procs[7].pid), -1);
    static const int host_of[9] = { 0, 1, 1, 2, 2, 2, 3, 3, 3 };
    for (int p = 0; p < 9; p++)
        CHECK(kumi_impi_job_proc_host(&job, p) == host_of[p], "host of proc %d: %d", p, kumi_impi_job_proc_host(&job, p));
    CHECK_INT(kumi_impi_job_proc_host(&job, 9), -1);
    CHECK_INT(kumi_impi_job_proc_host(&job, -1), -1);
    CHECK_INT(kumi_impi_job_host_client(&job, 0), 0);
    CHECK_INT(kumi_impi_job_host_client(&job, 2), 1);
    CHECK_INT(kumi_impi_job_host_client(&job, 3), 2);
    CHECK_INT(kumi_impi_job_host_client(&job, 4), -1);
    kumi_impi_job_free(&job);
    UT_CASE("job refusals");
    procs[2][1].pid = procs[2][2].pid;   /* two procs of one host id with one pid */
    CHECK(build(&job, -1) != 0, "a repeated (P_IPV6, P_PID) accepted");
    CHECK_HAS(err, "procs 7 and 8 have the same P_IPV6 and P_PID 202");
    kumi_impi_job_free(&job);
    procs[2][1].pid = 201;

    UT_CASE("job refusals");
    mine[2].xsize = 2048;
    CHECK(build(&job, -1) != 0, "xsize disagreement accepted");
    CHECK_HAS(err, "C_COLL_XSIZE", "disagree", "1024, 1024, 2048");
    kumi_impi_job_free(&job);
    mine[2].xsize = -1;
    mine[1].maxlinear = 8;
    CHECK(build(&job, -1) != 0, "maxlinear disagreement accepted");
    CHECK_HAS(err, "C_COLL_MAXLINEAR");
    kumi_impi_job_free(&job);
    mine[1].maxlinear = -1;
    mine[0].tagub = 100;
    CHECK(build(&job, -1) != 0 && strstr(err, "less than 32767"), "tagub 100 accepted: %s", err);
    kumi_impi_job_free(&job);
    mine[0].tagub = 32767;
    hosts[1][1].nprocs = 7;            /* C_NPROCS says 5 */
    CHECK(build(&job, -1) != 0, "H_NPROCS against C_NPROCS");
    CHECK_HAS(err, "client 1", "C_NPROCS says 5");
    kumi_impi_job_free(&job);
    hosts[1][1].nprocs = 3;
    hosts[0][0].ackmark = 30;
    CHECK(build(&job, -1) != 0, "ackmark above hiwater");
    CHECK_HAS(err, "ackmark 30 above hiwater 20");
    kumi_impi_job_free(&job);
    hosts[0][0].ackmark = 10;
    CHECK(build(&job, 5) != 0, "a missing label");
    CHECK_HAS(err, "C_COLL_XSIZE never came");
    kumi_impi_job_free(&job);
    CHECK(build(&job, -1) == 0, "restored: %s", err);
    size_t n = reply(KUMI_IMPI_C_NHOSTS, buf);
    CHECK_INT(kumi_impi_job_add(&job, KUMI_IMPI_C_NHOSTS, 7, buf, n, err, sizeof err), -1);
    CHECK_HAS(err, "came twice");
    kumi_impi_job_free(&job);
    memset(&job, 0, sizeof job);
    job.nclients = 3;
    n = reply(KUMI_IMPI_H_PORT, buf);
    CHECK_INT(kumi_impi_job_add(&job, KUMI_IMPI_H_PORT, 7, buf, n, err, sizeof err), -1);
    CHECK_HAS(err, "H_PORT before C_NHOSTS");
    n = reply(KUMI_IMPI_C_NHOSTS, buf);
    CHECK_INT(kumi_impi_job_add(&job, KUMI_IMPI_C_NHOSTS, 3, buf, 8, err, sizeof err), -1);
    CHECK_HAS(err, "client mask 0x3, expected 0x7");
    CHECK_INT(kumi_impi_job_add(&job, KUMI_IMPI_C_NHOSTS, 7, buf, n - 4, err, sizeof err), -1);
    /* versions: {0.0}, {0.0, 0.1}, {0.0} */
    memset(buf, 0, 32);
    kumi_impi_put32(buf + 20, 1);
    CHECK_INT(kumi_impi_job_add(&job, KUMI_IMPI_C_VERSION, 7, buf, 32, err, sizeof err), 0);
    CHECK_INT(job.c_version_max_minor[1], 1);
    kumi_impi_job_free(&job);
    memset(&job, 0, sizeof job);
    job.nclients = 3;
    kumi_impi_put32(buf + 4, 1);       /* {0.1, ...}: does not start with 0.0 */
    CHECK_INT(kumi_impi_job_add(&job, KUMI_IMPI_C_VERSION, 7, buf, 32, err, sizeof err), -1);
    CHECK_HAS(err, "does not start with 0.0");
    memset(buf, 0, 32);
    CHECK_INT(kumi_impi_job_add(&job, KUMI_IMPI_C_VERSION, 7, buf, 32, err, sizeof err), -1);
    CHECK_HAS(err, "more version lists");
    kumi_impi_job_free(&job);
}

static void test_hostid(void)
{
    UT_CASE("host ids");
    uint8_t id[16], a[16], v4[4] = { 192, 0, 2, 7 };
    kumi_impi_hostid_set(id, AF_INET, v4);
    static const uint8_t compat[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 192, 0, 2, 7 };
    CHECK(!memcmp(id, compat, 16), "IPv4-compatible embedding");
    CHECK_INT(kumi_impi_hostid_get(id, a), AF_INET);
    CHECK(!memcmp(a, v4, 4), "v4 back");
    id[10] = id[11] = 0xff;            /* IPv4-mapped, as META */
    CHECK_INT(kumi_impi_hostid_get(id, a), AF_INET);
    CHECK(!memcmp(a, v4, 4), "mapped v4 back");
    struct in6_addr six;
    inet_pton(AF_INET6, "fd00::17", &six);
    kumi_impi_hostid_set(id, AF_INET6, &six);
    CHECK_INT(kumi_impi_hostid_get(id, a), AF_INET6);
    CHECK(!memcmp(a, &six, 16), "v6 back");
    inet_pton(AF_INET6, "::1", &six);
    kumi_impi_hostid_set(id, AF_INET6, &six);
    CHECK_INT(kumi_impi_hostid_get(id, a), AF_INET6);
}

static void test_packet(void)
{
    UT_CASE("packet header");
    struct kumi_impi_packet pk, q;
    memset(&pk, 0, sizeof pk);
    pk.type = KUMI_IMPI_PK_DATASYNC;
    pk.len = 100;
    for (int i = 0; i < 16; i++)
        pk.src_host[i] = (uint8_t)i, pk.dest_host[i] = (uint8_t)(0x80 + i);
    pk.src_pid = -2;
    pk.dest_pid = 0x1122334455667788ll;
    pk.srqid = 0xa1;
    pk.drqid = 0xa2;
    pk.msglen = 1000;
    pk.lsrank = 7;
    pk.tag = -5;
    pk.cid = 0x0102030405060708ull;
    pk.seqnum = 9;
    pk.count = -1;
    pk.dtype = 0xdd;
    pk.reserved = 0xee;
    kumi_impi_packet_encode(&pk, buf);
    /* offsets of the sheet's table */
    CHECK_INT(kumi_impi_get32(buf + 0), 1);
    CHECK_INT(kumi_impi_get32(buf + 4), 100);
    CHECK_INT(buf[8], 0);
    CHECK_INT(buf[23], 15);
    CHECK(kumi_impi_get64(buf + 24) == (uint64_t)-2, "src pid");
    CHECK_INT(buf[32], 0x80);
    CHECK(kumi_impi_get64(buf + 48) == 0x1122334455667788ull, "dest pid");
    CHECK_INT(buf[48], 0x11);
    CHECK(kumi_impi_get64(buf + 56) == 0xa1 && kumi_impi_get64(buf + 64) == 0xa2, "rqids");
    CHECK(kumi_impi_get64(buf + 72) == 1000, "msglen");
    CHECK_INT(kumi_impi_get32(buf + 80), 7);
    CHECK_INT((int32_t)kumi_impi_get32(buf + 84), -5);
    CHECK_INT(buf[88], 1);
    CHECK_INT(buf[95], 8);
    CHECK(kumi_impi_get64(buf + 96) == 9 && kumi_impi_get64(buf + 104) == UINT64_MAX, "seqnum, count");
    CHECK(kumi_impi_get64(buf + 112) == 0xdd && kumi_impi_get64(buf + 120) == 0xee, "dtype, reserved");
    for (size_t k = 0; k < KUMI_IMPI_PACKET_SIZE; k++)
        CHECK(kumi_impi_packet_parse(buf, k, 0, &q, err, sizeof err) == KUMI_IMPI_MORE, "prefix %zu", k);
    CHECK_INT(kumi_impi_packet_parse(buf, 200, 4000, &q, err, sizeof err), 128);
    CHECK(!memcmp(&q, &pk, sizeof q), "round trip");
    CHECK_INT(kumi_impi_packet_payload(&q), 100);
    CHECK_INT(kumi_impi_packet_parse(buf, 128, 99, &q, err, sizeof err), KUMI_IMPI_BAD);
    CHECK_HAS(err, "DATASYNC", "100 data bytes", "maximum 99");
    pk.msglen = 50;
    kumi_impi_packet_encode(&pk, buf);
    CHECK_INT(kumi_impi_packet_parse(buf, 128, 0, &q, err, sizeof err), KUMI_IMPI_BAD);
    CHECK_HAS(err, "message of 50 bytes");
    /* control packets: LAM writes pk_len 128 and sends no payload */
    pk.type = KUMI_IMPI_PK_SYNCACK;
    pk.len = 128;
    kumi_impi_packet_encode(&pk, buf);
    CHECK_INT(kumi_impi_packet_parse(buf, 128, 64, &q, err, sizeof err), 128);
    CHECK_INT(kumi_impi_packet_payload(&q), 0);
    kumi_impi_put32(buf, 8);
    CHECK_INT(kumi_impi_packet_parse(buf, 4, 0, &q, err, sizeof err), KUMI_IMPI_BAD);
    CHECK_HAS(err, "unknown packet type 8");
    CHECK(!strcmp(kumi_impi_packet_type_name(KUMI_IMPI_PK_FINI), "FINI") && !kumi_impi_packet_type_name(8), "names");
}

int main(void)
{
    test_frames();
    test_job();
    test_hostid();
    test_packet();
    return ut_done("impi_wire");
}
