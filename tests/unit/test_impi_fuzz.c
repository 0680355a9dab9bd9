/* Fuzz test of the IMPI parsers (framework/core/impi_wire.c): random bytes
 * and mutated good frames (bit flips, random bytes, lengths set to edge
 * values, cuts, insertions, deletions) through kumi_impi_frame_parse in both
 * directions, kumi_impi_packet_parse, kumi_impi_dec_server_auth and the job
 * builder (kumi_impi_job_add / _finish).  Every input lies in a buffer of
 * exactly its size on the heap (so that tests/scripts/impi_wire_asan.sh,
 * which builds this with AddressSanitizer, catches any over-read).
 * Properties: a result is BAD, MORE or a size within the input; a frame taken
 * has the size its header says and its data inside it; the parse does not
 * depend on bytes after the frame; every proper prefix of a taken frame is
 * MORE (the parser never refuses what would have become good); a stream of
 * frames is consumed to the end or stopped by BAD / MORE.  KUMI_TEST_SEED
 * replays a run; KUMI_FUZZ_ITER sets the iterations (default 200000). */
#include <kumi/impi.h>
#include "ut.h"

static char err[300];
static long taken, bad, more;

static uint8_t *dup_exact(const uint8_t *b, size_t n)
{
    uint8_t *p = malloc(n ? n : 1);
    if (!p)
        exit(2);
    memcpy(p, b, n);
    return p;
}

static void check_frame(const uint8_t *b0, size_t n, int dir)
{
    struct kumi_impi_frame f;
    uint8_t *b = dup_exact(b0, n);
    int r = kumi_impi_frame_parse(b, n, dir, 0, &f, err, sizeof err);
    CHECK(r == KUMI_IMPI_BAD || r == KUMI_IMPI_MORE || (r >= 8 && (size_t)r <= n), "result %d for %zu bytes", r, n);
    if (r == KUMI_IMPI_BAD) {
        bad++;
        CHECK(err[0] != 0, "BAD without a message");
    } else if (r == KUMI_IMPI_MORE) {
        more++;
    } else {
        taken++;
        CHECK((size_t)r == 8 + (size_t)f.len, "size %d, header len %u", r, f.len);
        CHECK(kumi_impi_get32(b) == f.cmd, "cmd");
        if (f.cmd == KUMI_IMPI_CMD_COLL) {
            CHECK(f.data >= b + 12 && f.data + f.ndata == b + r, "COLL data outside the frame");
            CHECK(kumi_impi_label_name(f.label) != NULL, "unknown label 0x%x taken", f.label);
        }
        /* the same frame, with nothing after it, and every prefix */
        struct kumi_impi_frame g;
        uint8_t *c = dup_exact(b, (size_t)r);
        CHECK_INT(kumi_impi_frame_parse(c, (size_t)r, dir, 0, &g, err, sizeof err), r);
        for (size_t k = 0; k < (size_t)r; k += 1 + (k > 64 ? (size_t)r / 16 : 0)) {
            int q = kumi_impi_frame_parse(c, k, dir, 0, &g, err, sizeof err);
            CHECK(q == KUMI_IMPI_MORE, "prefix %zu of a good %d-byte frame gave %d (%s)", k, r, q, err);
        }
        free(c);
    }
    free(b);
}

static void check_packet(const uint8_t *b0, size_t n)
{
    struct kumi_impi_packet pk;
    uint8_t *b = dup_exact(b0, n);
    uint32_t maxdata = (uint32_t)ut_range(0, 70000);
    int r = kumi_impi_packet_parse(b, n, maxdata, &pk, err, sizeof err);
    CHECK(r == KUMI_IMPI_BAD || r == KUMI_IMPI_MORE || r == 128, "packet result %d", r);
    if (r == 128) {
        uint8_t o[128];
        kumi_impi_packet_encode(&pk, o);
        CHECK(!memcmp(o, b, 128), "packet does not encode back to its bytes");
        CHECK(pk.type <= KUMI_IMPI_PK_FINI, "type %u", pk.type);
        uint32_t pl = kumi_impi_packet_payload(&pk);
        CHECK(pl <= pk.msglen && (!maxdata || pl <= maxdata), "payload %u", pl);
    }
    free(b);
}

/* good frames to mutate: a whole client's start-up and a server's replies */
static uint8_t good[2][4096];
static size_t goodlen[2];

static void add(int side, const void *p, size_t n)
{
    memcpy(good[side] + goodlen[side], p, n);
    goodlen[side] += n;
}

static void make_good(void)
{
    uint8_t t[64];
    struct kumi_impi_host h[2] = { { .port = 1234, .nprocs = 1, .ackmark = 10, .hiwater = 20 },
                                   { .port = 1235, .nprocs = 2, .ackmark = 10, .hiwater = 20 } };
    struct kumi_impi_proc p[3] = { { .pid = 1 }, { .pid = 2 }, { .pid = 3 } };
    struct kumi_impi_mine m = { .datalen = 8192, .tagub = 32767, .xsize = -1, .maxlinear = -1, .nhosts = 2,
                                .nprocs = 3, .hosts = h, .procs = p };
    add(0, t, kumi_impi_enc_auth(t, 3));
    add(0, t, kumi_impi_enc_impi(t, 1));
    add(1, t, kumi_impi_enc_impi(t, 2));
    for (int i = 0; i < KUMI_IMPI_NLABELS; i++) {
        uint32_t l = kumi_impi_label_order[i];
        size_t n = kumi_impi_label_encode(l, &m, NULL);
        uint8_t d[128];
        kumi_impi_label_encode(l, &m, d);
        add(0, t, kumi_impi_enc_coll_hdr(t, KUMI_IMPI_C2S, l, 0, n));
        add(0, d, n);
        add(1, t, kumi_impi_enc_coll_hdr(t, KUMI_IMPI_S2C, l, 3, 2 * n));
        add(1, d, n);
        add(1, d, n);
    }
    add(0, t, kumi_impi_enc_cmd(t, KUMI_IMPI_CMD_DONE, 0));
    add(1, t, kumi_impi_enc_cmd(t, KUMI_IMPI_CMD_DONE, 0));
    add(0, t, kumi_impi_enc_cmd(t, KUMI_IMPI_CMD_FINI, 0));
}

/* consume a stream frame by frame; returns the frames taken */
static int stream(const uint8_t *b0, size_t n, int dir)
{
    struct kumi_impi_frame f;
    uint8_t *b = dup_exact(b0, n);
    size_t off = 0;
    int frames = 0;
    for (;;) {
        int r = kumi_impi_frame_parse(b + off, n - off, dir, 0, &f, err, sizeof err);
        if (r <= 0)
            break;
        off += (size_t)r;
        frames++;
        CHECK(off <= n, "stream overran");
    }
    free(b);
    return frames;
}

static const uint32_t edge[] = { 0, 1, 3, 4, 5, 7, 8, 12, 16, 0x7fffffff, 0x80000000u, 0xffffffffu,
                                 KUMI_IMPI_MAX_PAYLOAD, KUMI_IMPI_MAX_PAYLOAD + 1 };

static size_t mutate(uint8_t *b, size_t n, size_t cap)
{
    int k = (int)ut_range(1, 4);
    while (k--) {
        switch (ut_range(0, 6)) {
        case 0: if (n) b[ut_range(0, (long long)n - 1)] ^= (uint8_t)(1u << ut_range(0, 7)); break;
        case 1: if (n) b[ut_range(0, (long long)n - 1)] = (uint8_t)ut_rand(); break;
        case 2:                        /* a length or label field set to an edge value */
            if (n >= 8) {
                size_t at = (size_t)ut_range(0, (long long)(n - 4)) & ~(size_t)3;
                kumi_impi_put32(b + at, edge[ut_range(0, sizeof edge / sizeof *edge - 1)]);
            }
            break;
        case 3: if (n) n = (size_t)ut_range(0, (long long)n - 1); break;
        case 4:
            if (n < cap) {
                size_t at = (size_t)ut_range(0, (long long)n);
                memmove(b + at + 1, b + at, n - at);
                b[at] = (uint8_t)ut_rand();
                n++;
            }
            break;
        case 5:
            if (n) {
                size_t at = (size_t)ut_range(0, (long long)n - 1);
                memmove(b + at, b + at + 1, n - at - 1);
                n--;
            }
            break;
        case 6:                        /* a known command word somewhere */
            if (n >= 4) {
                static const uint32_t cmds[] = { KUMI_IMPI_CMD_AUTH, KUMI_IMPI_CMD_IMPI, KUMI_IMPI_CMD_COLL,
                                                 KUMI_IMPI_CMD_DONE, KUMI_IMPI_CMD_FINI };
                kumi_impi_put32(b + ut_range(0, (long long)n - 4), cmds[ut_range(0, 4)]);
            }
            break;
        }
    }
    return n;
}

static void fuzz_job(const uint8_t *b, size_t n)
{
    struct kumi_impi_job job;
    memset(&job, 0, sizeof job);
    job.nclients = (int)ut_range(0, 33);
    int steps = (int)ut_range(1, 20);
    for (int s = 0; s < steps; s++) {
        uint32_t l = ut_range(0, 9) ? kumi_impi_label_order[ut_range(0, KUMI_IMPI_NLABELS - 1)] : (uint32_t)ut_rand();
        uint32_t mask = ut_range(0, 3) ? (job.nclients >= 32 ? 0xffffffffu : (1u << (job.nclients > 0 ? job.nclients : 0)) - 1)
                                       : (uint32_t)ut_rand();
        size_t off = n ? (size_t)ut_range(0, (long long)n - 1) : 0;
        size_t len = (size_t)ut_range(0, (long long)(n - off));
        uint8_t *d = dup_exact(b + off, len);
        kumi_impi_job_add(&job, l, mask, d, len, err, sizeof err);
        free(d);
    }
    if (kumi_impi_job_finish(&job, err, sizeof err) == 0) {
        CHECK(job.pk_maxlen >= 1 && job.tag_ub >= KUMI_IMPI_MIN_TAG_UB, "finished job out of bounds");
        CHECK(job.ackmark <= job.hiwater, "ackmark above hiwater");
    }
    kumi_impi_job_free(&job);
}

int main(void)
{
    ut_seed(20261128);
    const char *it = getenv("KUMI_FUZZ_ITER");
    long iter = it && *it ? atol(it) : 200000;
    uint8_t b[8192];
    make_good();

    UT_CASE("good streams");
    CHECK_INT(stream(good[0], goodlen[0], KUMI_IMPI_C2S), 2 + KUMI_IMPI_NLABELS + 2);
    CHECK_INT(stream(good[1], goodlen[1], KUMI_IMPI_S2C), 1 + KUMI_IMPI_NLABELS + 1);

    UT_CASE("random and mutated frames");
    for (long i = 0; i < iter; i++) {
        int dir = (int)ut_range(1, 2);
        size_t n;
        switch (ut_range(0, 3)) {
        case 0:                        /* random bytes, often behind a known command word */
            n = (size_t)ut_range(0, 64);
            for (size_t k = 0; k < n; k++)
                b[k] = (uint8_t)ut_rand();
            if (n >= 8 && ut_range(0, 1))
                mutate(b, n, n);
            break;
        default: {                     /* a window of a good stream, mutated */
            int side = dir == KUMI_IMPI_C2S ? 0 : 1;
            size_t start = (size_t)ut_range(0, (long long)goodlen[side] - 1);
            if (ut_range(0, 2))        /* mostly at a frame boundary: walk frames */
                for (size_t off = 0, s = start; ; ) {
                    struct kumi_impi_frame f;
                    int r = kumi_impi_frame_parse(good[side] + off, goodlen[side] - off, dir, 0, &f, err, sizeof err);
                    if (r <= 0 || off + (size_t)r > s) {
                        start = off;
                        break;
                    }
                    off += (size_t)r;
                }
            n = goodlen[side] - start;
            if (n > 200)
                n = (size_t)ut_range(1, 200);
            memcpy(b, good[side] + start, n);
            n = mutate(b, n, sizeof b);
        }
        }
        check_frame(b, n, dir);
        if (i % 8 == 0)
            stream(b, n, dir);
        if (i % 4 == 0) {
            size_t pn = (size_t)ut_range(0, 160);
            for (size_t k = 0; k < pn; k++)
                b[k] = (uint8_t)ut_rand();
            if (pn >= 4 && ut_range(0, 1))
                kumi_impi_put32(b, (uint32_t)ut_range(0, 9));
            if (pn >= 8 && ut_range(0, 1))
                kumi_impi_put32(b + 4, (uint32_t)ut_range(0, 300));
            if (pn >= 80 && ut_range(0, 1))
                kumi_impi_put64(b + 72, (uint64_t)ut_range(0, 300));
            check_packet(b, pn);
            int32_t w, l;
            uint8_t *a = dup_exact(b, 8);
            kumi_impi_dec_server_auth(a, (uint32_t)ut_range(0, 4), &w, &l, err, sizeof err);
            free(a);
        }
        if (i % 16 == 0)
            fuzz_job(b, n);
    }
    printf("frames: %ld taken, %ld refused, %ld incomplete\n", taken, bad, more);
    CHECK(taken > iter / 50 && bad > iter / 10, "the mutations hardly reach both outcomes");
    return ut_done("impi_fuzz");
}
