/* Unit test of the matching layer (framework/request/match.c), in process:
 * the posted-receive queue and the unexpected-message queue, driven with
 * hand-made receives (struct kumi_req) and message headers (struct kumi_ue).
 *
 *  - order: the first posted receive that matches takes a message; a
 *    receive takes the earliest matching unexpected message;
 *  - MPI_ANY_SOURCE / MPI_ANY_TAG, and contexts never mix;
 *  - non-overtaking per (source, context): two messages from one source that
 *    both match a receive are taken in arrival order, whatever comes between
 *    them from other sources or contexts;
 *  - unexpected, then posted (the receive finds the queued message, probe
 *    leaves it there, the posted queue stays empty);
 *  - cancel: kumi_match_unpost from the head, the middle and the tail;
 *  - the sequence numbers per peer and the out-of-order diagnostic;
 *  - growing the peer tables (peers of another job, numbered after the
 *    world): the world's sequence numbers are kept, new peers start at 0;
 *  - a random sequence of posts, arrivals and cancels checked against a
 *    naive model of the two queues (fixed seed). */
#include "request/request.h"
#include "ut.h"
#include <unistd.h>

#define NWORLD 8

static struct kumi_req *mkreq(int32_t ctx, int src, int tag)
{
    struct kumi_req *r = calloc(1, sizeof *r);
    r->magic = KUMI_MAGIC_REQ;
    r->kind = KUMI_REQ_RECV;
    r->ctx = ctx;
    r->peer = src;
    r->tag = tag;
    return r;
}

static struct kumi_ue *mkue(int32_t ctx, int src, int tag, uint32_t seq)
{
    struct kumi_ue *u = calloc(1, sizeof *u);
    u->magic = KUMI_UE_MAGIC;
    u->wpeer = src;
    u->hdr.kind = KUMI_HDR_EAGER;
    u->hdr.ctx = ctx;
    u->hdr.src = src;
    u->hdr.tag = tag;
    u->hdr.seq = seq;
    u->hdr.sreq = 0x1000u + seq;
    u->arrived = true;
    return u;
}

static struct kumi_hdr hdr(int32_t ctx, int src, int tag)
{
    struct kumi_hdr h;
    memset(&h, 0, sizeof h);
    h.kind = KUMI_HDR_EAGER;
    h.ctx = ctx;
    h.src = src;
    h.tag = tag;
    return h;
}

/* Both queues must be empty between cases. */
static void check_empty(void)
{
    CHECK(kumi_match_unexpected(5, MPI_ANY_SOURCE, MPI_ANY_TAG, 0) == NULL, "unexpected queue not empty (ctx 5)");
    CHECK(kumi_match_unexpected(6, MPI_ANY_SOURCE, MPI_ANY_TAG, 0) == NULL, "unexpected queue not empty (ctx 6)");
}

static void test_posted_order(void)
{
    UT_CASE("posted order");
    struct kumi_req *a = mkreq(5, 1, 7), *b = mkreq(5, 1, 7), *c = mkreq(5, 1, 8);
    kumi_match_post(a);
    kumi_match_post(b);
    kumi_match_post(c);
    struct kumi_hdr h = hdr(5, 1, 7);
    CHECK_PTR(kumi_match_posted(&h), a);
    CHECK_PTR(kumi_match_posted(&h), b);
    CHECK_PTR(kumi_match_posted(&h), NULL);
    h.tag = 8;
    CHECK_PTR(kumi_match_posted(&h), c);
    CHECK_PTR(kumi_match_posted(&h), NULL);
    free(a); free(b); free(c);
}

static void test_wildcards(void)
{
    UT_CASE("MPI_ANY_SOURCE / MPI_ANY_TAG");
    struct kumi_req *r1 = mkreq(5, MPI_ANY_SOURCE, 3), *r2 = mkreq(5, 2, MPI_ANY_TAG),
                    *r3 = mkreq(5, MPI_ANY_SOURCE, MPI_ANY_TAG), *r4 = mkreq(6, 2, 3);
    kumi_match_post(r1);
    kumi_match_post(r2);
    kumi_match_post(r3);
    kumi_match_post(r4);
    struct kumi_hdr h;
    h = hdr(5, 2, 3); CHECK_PTR(kumi_match_posted(&h), r1);  /* r1 was posted first, r2 also matches */
    h = hdr(5, 2, 3); CHECK_PTR(kumi_match_posted(&h), r2);
    h = hdr(5, 4, 4); CHECK_PTR(kumi_match_posted(&h), r3);
    h = hdr(5, 4, 4); CHECK_PTR(kumi_match_posted(&h), NULL);
    h = hdr(7, 2, 3); CHECK_PTR(kumi_match_posted(&h), NULL);  /* no receive on context 7 */
    h = hdr(6, 2, 3); CHECK_PTR(kumi_match_posted(&h), r4);
    /* a specific source or tag is never a wildcard for the message */
    struct kumi_req *r5 = mkreq(5, 0, 0);
    kumi_match_post(r5);
    h = hdr(5, 1, 0); CHECK_PTR(kumi_match_posted(&h), NULL);
    h = hdr(5, 0, 1); CHECK_PTR(kumi_match_posted(&h), NULL);
    h = hdr(4, 0, 0); CHECK_PTR(kumi_match_posted(&h), NULL);
    h = hdr(5, 0, 0); CHECK_PTR(kumi_match_posted(&h), r5);
    free(r1); free(r2); free(r3); free(r4); free(r5);

    UT_CASE("wildcards in the unexpected queue");
    struct kumi_ue *u1 = mkue(5, 1, 9, 0), *u2 = mkue(5, 2, 3, 0), *u3 = mkue(6, 1, 3, 1);
    kumi_match_ue_append(u1);
    kumi_match_ue_append(u2);
    kumi_match_ue_append(u3);
    CHECK_PTR(kumi_match_unexpected(5, MPI_ANY_SOURCE, 3, 1), u2);
    CHECK_PTR(kumi_match_unexpected(5, MPI_ANY_SOURCE, 3, 1), NULL);
    CHECK_PTR(kumi_match_unexpected(6, 1, MPI_ANY_TAG, 1), u3);
    CHECK_PTR(kumi_match_unexpected(5, 1, MPI_ANY_TAG, 1), u1);
    check_empty();
    free(u1); free(u2); free(u3);
}

static void test_non_overtaking(void)
{
    UT_CASE("non-overtaking per (source, context)");
    /* From source 3 on context 5: tags 1, 2, 1, 2; in between, other sources and context 6. */
    struct kumi_ue *m[8];
    int tags[8] = { 1, 2, 9, 1, 1, 2, 4, 2 };
    int srcs[8] = { 3, 3, 4, 3, 3, 3, 3, 3 };
    int ctxs[8] = { 5, 5, 5, 6, 5, 5, 5, 5 };
    for (int i = 0; i < 8; i++) {
        m[i] = mkue(ctxs[i], srcs[i], tags[i], (uint32_t)i);
        kumi_match_ue_append(m[i]);
    }
    /* probe (remove = 0) sees the first and leaves it there */
    CHECK_PTR(kumi_match_unexpected(5, 3, MPI_ANY_TAG, 0), m[0]);
    CHECK_PTR(kumi_match_unexpected(5, 3, MPI_ANY_TAG, 0), m[0]);
    /* ANY_TAG from source 3 on context 5: in arrival order, skipping source 4 and context 6 */
    CHECK_PTR(kumi_match_unexpected(5, 3, MPI_ANY_TAG, 1), m[0]);
    CHECK_PTR(kumi_match_unexpected(5, 3, 2, 1), m[1]);
    CHECK_PTR(kumi_match_unexpected(5, MPI_ANY_SOURCE, 1, 1), m[4]);  /* m[3] is context 6 */
    CHECK_PTR(kumi_match_unexpected(5, 3, MPI_ANY_TAG, 1), m[5]);
    CHECK_PTR(kumi_match_unexpected(5, MPI_ANY_SOURCE, MPI_ANY_TAG, 1), m[2]);
    CHECK_PTR(kumi_match_unexpected(5, 3, MPI_ANY_TAG, 1), m[6]);
    CHECK_PTR(kumi_match_unexpected(5, 3, MPI_ANY_TAG, 1), m[7]);
    CHECK_PTR(kumi_match_unexpected(6, MPI_ANY_SOURCE, MPI_ANY_TAG, 1), m[3]);
    check_empty();
    for (int i = 0; i < 8; i++) free(m[i]);

    /* Posted side: two receives that both match; messages from one source go in order. */
    struct kumi_req *a = mkreq(5, MPI_ANY_SOURCE, MPI_ANY_TAG), *b = mkreq(5, 3, MPI_ANY_TAG);
    kumi_match_post(a);
    kumi_match_post(b);
    struct kumi_hdr h1 = hdr(5, 3, 1), h2 = hdr(5, 3, 2);
    CHECK_PTR(kumi_match_posted(&h1), a);
    CHECK_PTR(kumi_match_posted(&h2), b);
    free(a); free(b);
}

static void test_unexpected_then_posted(void)
{
    UT_CASE("unexpected, then posted");
    /* A message arrives before its receive: no receive matches, it is queued. */
    struct kumi_hdr h = hdr(5, 2, 11);
    CHECK_PTR(kumi_match_posted(&h), NULL);
    struct kumi_ue *u = mkue(5, 2, 11, 0);
    kumi_match_ue_append(u);
    CHECK(u->queued, "an appended message is marked queued");
    /* The receive comes: it looks at the unexpected queue first and takes the message. */
    struct kumi_req *r = mkreq(5, 2, 11);
    CHECK_PTR(kumi_match_unexpected(r->ctx, r->peer, r->tag, 0), u);   /* MPI_Iprobe */
    CHECK(u->queued, "a probed message stays queued");
    CHECK_PTR(kumi_match_unexpected(r->ctx, r->peer, r->tag, 1), u);
    CHECK(!u->queued, "a taken message is no longer queued");
    CHECK_PTR(kumi_match_unexpected(r->ctx, r->peer, r->tag, 1), NULL);
    /* removing it again (kumi_match_ue_remove) is harmless */
    kumi_match_ue_remove(u);
    /* nothing was posted: the next message with the same envelope is unexpected again */
    CHECK_PTR(kumi_match_posted(&h), NULL);
    /* a receive that found nothing is posted, and the next message takes it */
    kumi_match_post(r);
    CHECK_PTR(kumi_match_posted(&h), r);
    check_empty();
    free(u); free(r);
}

static void test_cancel(void)
{
    UT_CASE("cancel (unpost)");
    struct kumi_req *r[5];
    for (int i = 0; i < 5; i++) {
        r[i] = mkreq(5, 1, 7);
        kumi_match_post(r[i]);
    }
    CHECK_INT(kumi_match_unpost(r[2]), 1);      /* middle */
    CHECK_INT(kumi_match_unpost(r[2]), 0);      /* not there any more */
    CHECK_INT(kumi_match_unpost(r[0]), 1);      /* head */
    CHECK_INT(kumi_match_unpost(r[4]), 1);      /* tail */
    struct kumi_req *other = mkreq(5, 1, 7);
    CHECK_INT(kumi_match_unpost(other), 0);     /* never posted */
    struct kumi_hdr h = hdr(5, 1, 7);
    CHECK_PTR(kumi_match_posted(&h), r[1]);
    /* a receive posted after cancels goes behind the survivors */
    kumi_match_post(other);
    CHECK_PTR(kumi_match_posted(&h), r[3]);
    CHECK_PTR(kumi_match_posted(&h), other);
    CHECK_PTR(kumi_match_posted(&h), NULL);
    /* cancel of the only receive */
    kumi_match_post(r[0]);
    CHECK_INT(kumi_match_unpost(r[0]), 1);
    CHECK_PTR(kumi_match_posted(&h), NULL);
    for (int i = 0; i < 5; i++) free(r[i]);
    free(other);

    UT_CASE("cancel of a send (the receiver's side)");
    struct kumi_ue *a = mkue(5, 1, 7, 0), *b = mkue(5, 1, 7, 1), *c = mkue(5, 2, 7, 1);
    kumi_match_ue_append(a);
    kumi_match_ue_append(b);
    kumi_match_ue_append(c);
    CHECK_PTR(kumi_match_ue_find_cancel(1, 1, b->hdr.sreq), b);
    CHECK_PTR(kumi_match_ue_find_cancel(2, 1, c->hdr.sreq), c);
    CHECK_PTR(kumi_match_ue_find_cancel(1, 1, 0x9999), NULL);      /* other request cookie */
    CHECK_PTR(kumi_match_ue_find_cancel(3, 0, a->hdr.sreq), NULL); /* other peer */
    kumi_match_ue_remove(b);
    CHECK_PTR(kumi_match_ue_find_cancel(1, 1, b->hdr.sreq), NULL);
    CHECK_PTR(kumi_match_unexpected(5, 1, 7, 1), a);
    CHECK_PTR(kumi_match_unexpected(5, MPI_ANY_SOURCE, 7, 1), c);
    check_empty();
    free(a); free(b); free(c);
}

/* stderr of fn() (kumi_log writes there) */
static void capture_stderr(void (*fn)(void), char *out, size_t len)
{
    char path[] = "/tmp/kumi-ut-match-XXXXXX";
    int fd = mkstemp(path);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, out, len - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
}

static void seq_in_order(void)
{
    for (uint32_t s = 0; s < 5; s++) kumi_match_check_recv_seq(2, s);
}
static void seq_gap(void)
{
    kumi_match_check_recv_seq(3, 0);
    kumi_match_check_recv_seq(3, 2);
}
static void seq_gap_added(void)
{
    kumi_match_check_recv_seq(NWORLD + 500, 5);
}

static void test_seq(void)
{
    UT_CASE("sequence numbers");
    CHECK_INT(kumi_match_next_send_seq(1), 0);
    CHECK_INT(kumi_match_next_send_seq(1), 1);
    CHECK_INT(kumi_match_next_send_seq(2), 0);
    CHECK_INT(kumi_match_next_send_seq(1), 2);
    CHECK_INT(kumi_match_next_send_seq(NWORLD - 1), 0);
    int saved = kumi_verbose_level;
    kumi_verbose_level = 1;
    char buf[1024];
    capture_stderr(seq_in_order, buf, sizeof buf);
    CHECK(buf[0] == '\0', "messages in order: nothing printed, got \"%s\"", buf);
    capture_stderr(seq_gap, buf, sizeof buf);
    CHECK_HAS(buf, "rank 3 out of order", "seq 2", "expected 1");
    kumi_verbose_level = saved;
}

static void test_grow(void)
{
    UT_CASE("peers added beyond the world");
    uint32_t next1 = kumi_match_next_send_seq(1);      /* the world's counters go on */
    CHECK_INT(kumi_match_grow(NWORLD + 1000), MPI_SUCCESS);
    CHECK_INT(kumi_match_next_send_seq(1), next1 + 1);
    CHECK_INT(kumi_match_next_send_seq(NWORLD), 0);
    CHECK_INT(kumi_match_next_send_seq(NWORLD + 999), 0);
    CHECK_INT(kumi_match_next_send_seq(NWORLD + 999), 1);
    CHECK_INT(kumi_match_grow(NWORLD), MPI_SUCCESS);   /* never shrinks */
    CHECK_INT(kumi_match_next_send_seq(NWORLD + 999), 2);
    kumi_match_check_recv_seq(NWORLD + 500, 0);
    kumi_match_check_recv_seq(NWORLD + 500, 1);
    int saved = kumi_verbose_level;
    kumi_verbose_level = 1;
    char buf[1024];
    capture_stderr(seq_gap_added, buf, sizeof buf);
    CHECK_HAS(buf, "out of order", "seq 5", "expected 2");
    kumi_verbose_level = saved;
}

/* ---------------------------------------------------------------- model */
/* The request layer's use of the queues: an arriving message takes the first
 * matching posted receive, else it is queued; a new receive takes the
 * earliest matching queued message, else it is posted; a cancel unposts. */
#define MAXQ 4096
struct mmsg { int32_t ctx; int src, tag; struct kumi_ue *u; };
struct mrecv { int32_t ctx; int src, tag; struct kumi_req *r; };
static struct mmsg mq[MAXQ];
static struct mrecv rq[MAXQ];
static int nmq, nrq;

static int mmatch(int32_t ctx, int src, int tag, int32_t hctx, int hsrc, int htag)
{
    return ctx == hctx && (src == MPI_ANY_SOURCE || src == hsrc) && (tag == MPI_ANY_TAG || tag == htag);
}

static void test_random(void)
{
    UT_CASE("random posts, arrivals and cancels against a model");
    uint32_t seq[NWORLD] = { 0 };
    int steps = 20000, taken = 0, posted = 0, cancelled = 0;
    unsigned long long arrival = 0;
    for (int step = 0; step < steps && !ut_failed; step++) {
        int what = (int)ut_range(0, 10);
        int32_t ctx = (int32_t)ut_range(0, 1) + 20;
        if (what < 5) {                                  /* a message arrives */
            int src = (int)ut_range(0, NWORLD - 1), tag = (int)ut_range(0, 7);
            struct kumi_hdr h = hdr(ctx, src, tag);
            struct kumi_req *got = kumi_match_posted(&h);
            int want = -1;
            for (int i = 0; i < nrq && want < 0; i++)
                if (mmatch(rq[i].ctx, rq[i].src, rq[i].tag, ctx, src, tag)) want = i;
            CHECK_PTR(got, want >= 0 ? rq[want].r : NULL);
            if (want >= 0) {
                free(rq[want].r);
                memmove(&rq[want], &rq[want + 1], sizeof rq[0] * (size_t)(nrq - want - 1));
                nrq--;
                taken++;
            } else if (nmq < MAXQ) {
                struct kumi_ue *u = mkue(ctx, src, tag, seq[src]++);
                u->hdr.sreq = arrival++;
                kumi_match_ue_append(u);
                mq[nmq++] = (struct mmsg){ ctx, src, tag, u };
            }
        } else if (what < 10) {                          /* a receive is posted */
            int src = ut_range(0, 4) == 0 ? MPI_ANY_SOURCE : (int)ut_range(0, NWORLD - 1);
            int tag = ut_range(0, 4) == 0 ? MPI_ANY_TAG : (int)ut_range(0, 7);
            struct kumi_ue *got = kumi_match_unexpected(ctx, src, tag, 1);
            int want = -1;
            for (int i = 0; i < nmq && want < 0; i++)
                if (mmatch(ctx, src, tag, mq[i].ctx, mq[i].src, mq[i].tag)) want = i;
            CHECK_PTR(got, want >= 0 ? mq[want].u : NULL);
            if (want >= 0) {
                struct kumi_ue *u = mq[want].u;
                /* non-overtaking: no message that arrived earlier from the same (context,
                 * source) is still queued and matches this receive */
                for (int j = 0; j < want; j++)
                    CHECK(!(mq[j].ctx == u->hdr.ctx && mq[j].src == u->hdr.src &&
                            mmatch(ctx, src, tag, mq[j].ctx, mq[j].src, mq[j].tag)),
                          "message %llu from %d overtook message %llu", (unsigned long long)u->hdr.sreq,
                          u->hdr.src, (unsigned long long)mq[j].u->hdr.sreq);
                CHECK(!u->queued, "a taken message is still marked queued");
                free(u);
                memmove(&mq[want], &mq[want + 1], sizeof mq[0] * (size_t)(nmq - want - 1));
                nmq--;
                taken++;
            } else if (nrq < MAXQ) {
                struct kumi_req *r = mkreq(ctx, src, tag);
                kumi_match_post(r);
                rq[nrq++] = (struct mrecv){ ctx, src, tag, r };
                posted++;
            }
        } else if (nrq) {                                /* a posted receive is cancelled */
            int i = (int)ut_range(0, nrq - 1);
            CHECK_INT(kumi_match_unpost(rq[i].r), 1);
            CHECK_INT(kumi_match_unpost(rq[i].r), 0);
            free(rq[i].r);
            memmove(&rq[i], &rq[i + 1], sizeof rq[0] * (size_t)(nrq - i - 1));
            nrq--;
            cancelled++;
        }
    }
    /* drain: the queued messages come out in arrival order */
    while (nmq) {
        struct kumi_ue *got = kumi_match_unexpected(mq[0].ctx, mq[0].src, mq[0].tag, 1);
        CHECK_PTR(got, mq[0].u);
        if (got != mq[0].u) break;
        free(got);
        memmove(&mq[0], &mq[1], sizeof mq[0] * (size_t)(nmq - 1));
        nmq--;
    }
    while (nrq) {
        CHECK_INT(kumi_match_unpost(rq[nrq - 1].r), 1);
        free(rq[--nrq].r);
    }
    check_empty();
    printf("random: %d steps, %d matched, %d receives posted, %d cancelled\n", steps, taken, posted, cancelled);
}

int main(void)
{
    ut_seed(20261125);
    if (kumi_match_init(NWORLD) != MPI_SUCCESS) {
        fprintf(stderr, "kumi_match_init failed\n");
        return 1;
    }
    test_posted_order();
    test_wildcards();
    test_non_overtaking();
    test_unexpected_then_posted();
    test_cancel();
    test_seq();
    test_grow();
    test_random();
    kumi_match_finalize();
    return ut_done("test_match");
}
