/* p2p/shmem, a stream of messages of 8-16 KiB (or MIN..MAX bytes from the
 * command line), just above cma_min where that is 8193 (shm.list sets it;
 * measured, it may be higher): every rank
 * sends a window of 64 Isends of distinct sizes, tags and contents to every
 * other rank at once (interleaved streams at 3 ranks), some pulled with CMA,
 * the others sent eagerly while earlier ones are unanswered
 * (p2p_shmem_stream_limit; with p2p_shmem_stream_queue, queued behind a full
 * ring instead of pulled).  Each message must land in the receive MPI's
 * matching rules give it, whole and in order:
 *   phase 1: every receive posted before any send (a barrier between), in a
 *            shuffled order, specific, MPI_ANY_TAG and MPI_ANY_SOURCE ones
 *            mixed; the receive each message matches is computed here (the
 *            first posted open receive that matches it, messages of one
 *            source in the order sent) and checked exactly;
 *   phase 2: the messages sent first (unexpected), the receives posted late
 *            in a shuffled order (specific and MPI_ANY_SOURCE);
 * in both, one receive that no message matches is cancelled
 * (MPI_Test_cancelled), one receive is too small (MPI_ERR_TRUNCATE in its
 * status, the bytes that fit correct, nothing written past it), and no byte
 * is written past a receive's message. */
#include "kt.h"
#include <unistd.h>

#define W 64
static size_t min_n = 8193, max_n = 16384;   /* argv[1], argv[2] */
#define GUARD 64
#define TAGX 1000              /* tag of message k from rank s: s * TAGX + k */

static size_t msize(int s, int d, int k)
{
    return min_n + (size_t)((k * 131 + s * 17 + d * 7) % W) * (max_n - min_n) / (W - 1);
}

static unsigned char val(int s, int d, int k, size_t i)
{
    return (unsigned char)(s * 53 + d * 19 + k * 7 + i * 13 + (i >> 9));
}

struct rcv {
    int src, tag;                     /* as posted (MPI_ANY_* possible) */
    int want_s, want_k;               /* phase 1: the message it must get (-1: none) */
    size_t cap;
    unsigned char *buf;
};

static unsigned rnd_state = 12345;
static unsigned rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return rnd_state >> 8;
}

/* Read the control variable name into *val where it exists. */
static void cvar_read(const char *name, void *val)
{
    int idx, count;
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS) return;
    KT_MPI(MPI_T_cvar_handle_alloc(idx, NULL, &h, &count));
    KT_MPI(MPI_T_cvar_read(h, val));
    KT_MPI(MPI_T_cvar_handle_free(&h));
}

int main(int argc, char **argv)
{
    int rank, size, provided, count, idx;
    unsigned long stream_limit = 0, cma_min = 0;
    char status[1024] = "";
    MPI_T_pvar_session ses;
    MPI_T_pvar_handle rndv;
    KT_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    KT_MPI(MPI_Init(&argc, &argv));
    /* [MIN MAX [stream]]: the sizes; "stream": the parameters' defaults must
     * send a window of these partly eagerly through the ring (stream_limit
     * at least MAX; run with cma_min below MIN) */
    int want_stream = argc > 3 && strcmp(argv[3], "stream") == 0;
    /* "queue": as "stream", and p2p_shmem_stream_queue (set to at least MAX)
     * keeps the messages of a window that find the ring full in the ring's
     * queue instead of pulling them: no more than a quarter of them pulled */
    int want_queue = argc > 3 && strcmp(argv[3], "queue") == 0;
    unsigned long stream_queue = 0;
    want_stream |= want_queue;
    /* limit=N (after the three): the stream limit in use must be N */
    long want_limit = argc > 4 && strncmp(argv[4], "limit=", 6) == 0 ? strtol(argv[4] + 6, NULL, 0) : -1;
    if (argc > 2) {
        min_n = strtoul(argv[1], NULL, 0);
        max_n = strtoul(argv[2], NULL, 0);
        KT_CHECK(min_n > 0 && min_n < max_n, "sizes %s %s", argv[1], argv[2]);
    }
    cvar_read("p2p_shmem_stream_limit", &stream_limit);
    /* the limit in use (the default is bounded by the ring size) */
    cvar_read("p2p_shmem_stream_limit_effective", &stream_limit);
    cvar_read("p2p_shmem_stream_queue_effective", &stream_queue);
    KT_CHECK(want_limit < 0 || stream_limit == (unsigned long)want_limit,
             "p2p_shmem_stream_limit in use is %lu, not %ld", stream_limit, want_limit);
    /* the smallest message pulled (p2p_shmem_cma_min, or measured at start-up; 0: none) */
    cvar_read("p2p_shmem_cma_min_effective", &cma_min);
    KT_MPI(MPI_T_cvar_get_index("p2p_shmem_cma_status", &idx));
    {
        MPI_T_cvar_handle h;
        KT_MPI(MPI_T_cvar_handle_alloc(idx, NULL, &h, &count));
        KT_CHECK(count <= (int)sizeof status);
        KT_MPI(MPI_T_cvar_read(h, status));
        KT_MPI(MPI_T_cvar_handle_free(&h));
    }
    KT_MPI(MPI_T_pvar_session_create(&ses));
    KT_MPI(MPI_T_pvar_get_index("p2p_rendezvous_sends", MPI_T_PVAR_CLASS_COUNTER, &idx));
    KT_MPI(MPI_T_pvar_handle_alloc(ses, idx, NULL, &rndv, &count));
    KT_MPI(MPI_T_pvar_start(ses, rndv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2 && size <= 8, "run with 2 to 8 ranks");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rnd_state += (unsigned)rank * 7919u;

    int npeer = size - 1, nsend = npeer * W, nrecv = npeer * W + 1;   /* + the cancelled one */
    unsigned char **sbuf = calloc((size_t)nsend, sizeof *sbuf);
    struct rcv *rv = calloc((size_t)nrecv, sizeof *rv);
    MPI_Request *sreq = calloc((size_t)nsend, sizeof *sreq), *rreq = calloc((size_t)nrecv, sizeof *rreq);
    MPI_Status *rst = calloc((size_t)nrecv, sizeof *rst);
    int *order = calloc((size_t)nrecv, sizeof *order), *kind = calloc((size_t)nrecv, sizeof *kind);
    KT_CHECK(sbuf && rv && sreq && rreq && rst && order && kind);
    for (int j = 0; j < nsend; j++) KT_CHECK((sbuf[j] = malloc(max_n)) != NULL);
    for (int j = 0; j < nrecv; j++) KT_CHECK((rv[j].buf = malloc(max_n + GUARD)) != NULL);

    for (int phase = 1; phase <= 2; phase++) {
        /* the receives, in a shuffled order: entry j < npeer * W is
         * message k = j % W of the j / W-th other rank; the last is the one
         * that is cancelled.  Kinds: 0 specific, 1 MPI_ANY_SOURCE (the tag
         * says the message), 2 (phase 1) MPI_ANY_TAG (the next message of
         * that source that no earlier receive took: posted after the last
         * specific receive of its source, or that one would wait forever) */
        int trunc_j = (int)(rnd() % (unsigned)(npeer * W));
        for (int j = 0; j < nrecv; j++) {
            kind[j] = j == nrecv - 1 || j == trunc_j ? 0 : (int)(rnd() % 4);
            if (kind[j] == 3 || (kind[j] == 2 && phase == 2)) kind[j] = 0;
            order[j] = j;
        }
        for (int j = nrecv - 1; j > 0; j--) {
            int x = (int)(rnd() % (unsigned)(j + 1)), t = order[j];
            order[j] = order[x];
            order[x] = t;
        }
        {
            int nq = 0, *last = calloc((size_t)npeer, sizeof *last), *out = calloc((size_t)nrecv, sizeof *out);
            KT_CHECK(last && out);
            for (int x = 0; x < npeer; x++) last[x] = -1;
            for (int q = 0; q < nrecv; q++)
                if (order[q] < npeer * W && kind[order[q]] != 2) last[order[q] / W] = q;
            for (int q = 0; q < nrecv; q++) {
                int j = order[q];
                if (j < npeer * W && kind[j] == 2 && q < last[j / W]) continue;   /* later */
                out[nq++] = j;
                if (j < npeer * W && kind[j] != 2 && q == last[j / W])
                    for (int q2 = 0; q2 < q; q2++)
                        if (order[q2] < npeer * W && kind[order[q2]] == 2 && order[q2] / W == j / W)
                            out[nq++] = order[q2];
            }
            KT_EQ_INT(nq, nrecv);
            memcpy(order, out, (size_t)nrecv * sizeof *order);
            free(last);
            free(out);
        }
        for (int q = 0; q < nrecv; q++) {
            int j = order[q];
            struct rcv *r = &rv[q];
            r->want_s = r->want_k = -1;
            r->cap = max_n;
            if (j == nrecv - 1) {                       /* never matched: cancelled */
                r->src = (rank + 1) % size;
                r->tag = 999999;
                r->cap = 100;
                continue;
            }
            int s = j / W, k = j % W;
            s += s >= rank;                            /* the other ranks */
            r->src = kind[j] == 1 ? MPI_ANY_SOURCE : s;
            r->tag = kind[j] == 2 ? MPI_ANY_TAG : s * TAGX + k;
            if (j == trunc_j) r->cap = msize(s, rank, k) - 1 - (size_t)(rnd() % 4000);   /* too small */
        }
        if (phase == 1) {
            /* which receive each message matches: all are posted before any
             * message arrives; messages of one source arrive in the order
             * sent, those of different sources match disjoint receives */
            for (int s = 0; s < size; s++) {
                if (s == rank) continue;
                for (int k = 0; k < W; k++) {
                    int q;
                    for (q = 0; q < nrecv; q++) {
                        struct rcv *r = &rv[q];
                        if (r->want_s >= 0) continue;
                        if ((r->src == s || r->src == MPI_ANY_SOURCE) &&
                            (r->tag == s * TAGX + k || r->tag == MPI_ANY_TAG))
                            break;
                    }
                    KT_CHECK(q < nrecv, "no receive for message %d of rank %d", k, s);
                    rv[q].want_s = s;
                    rv[q].want_k = k;
                }
            }
        }
        for (int j = 0; j < nsend; j++) {
            int d = j % npeer, k = j / npeer;
            d += d >= rank;
            size_t n = msize(rank, d, k);
            for (size_t i = 0; i < n; i++) sbuf[j][i] = val(rank, d, k, i);
        }
        for (int q = 0; q < nrecv; q++) memset(rv[q].buf, 0xee, max_n + GUARD);

        if (phase == 1) {
            for (int q = 0; q < nrecv; q++)
                KT_MPI(MPI_Irecv(rv[q].buf, (int)rv[q].cap, MPI_BYTE, rv[q].src, rv[q].tag, MPI_COMM_WORLD,
                                 &rreq[q]));
            MPI_Barrier(MPI_COMM_WORLD);
        }
        /* the windows to all other ranks interleaved: k outer, destination inner */
        unsigned long long rv0 = 0, rv1 = 0;
        KT_MPI(MPI_T_pvar_read(ses, rndv, &rv0));
        for (int j = 0; j < nsend; j++) {
            int d = j % npeer, k = j / npeer;
            d += d >= rank;
            KT_MPI(MPI_Isend(sbuf[j], (int)msize(rank, d, k), MPI_BYTE, d, rank * TAGX + k, MPI_COMM_WORLD,
                             &sreq[j]));
        }
        KT_MPI(MPI_T_pvar_read(ses, rndv, &rv1));
        if (rank == 0)
            printf("phase %d: %llu of %d sends by rendezvous (CMA: %.11s from %lu, stream_limit %lu)\n", phase,
                   rv1 - rv0, nsend, status, cma_min, stream_limit);
        /* towards a receiver that pulls from min_n bytes on, a window goes
         * partly eagerly (an earlier pull unanswered) and partly by
         * rendezvous (the first) */
        if (strncmp(status, "single copy", 11) == 0 && cma_min && cma_min <= min_n && stream_limit >= min_n)
            KT_CHECK(rv1 - rv0 >= 1 && rv1 - rv0 < (unsigned long long)nsend,
                     "phase %d: %llu of %d sends by rendezvous", phase, rv1 - rv0, nsend);
        if (want_stream && strncmp(status, "single copy", 11) == 0) {
            KT_CHECK(cma_min && cma_min <= min_n && stream_limit >= max_n,
                     "cma_min %lu, stream_limit %lu: a stream of %zu..%zu bytes is not sent through the ring",
                     cma_min, stream_limit, min_n, max_n);
            /* the first of each window is pulled; then eagerly while the
             * message fits the room left in the ring, pulled again once it
             * is full: at least one message per destination went eagerly */
            KT_CHECK(rv1 - rv0 <= (unsigned long long)(nsend - npeer), "phase %d: %llu of %d sends by rendezvous",
                     phase, rv1 - rv0, nsend);
        }
        if (want_queue && strncmp(status, "single copy", 11) == 0) {
            /* the first of each window pulled, and one whose predecessors'
             * pulls were all answered when it was sent; the rest through
             * the ring (a 1 MiB ring holds about 18 of these: without the
             * queue, 46 or more of 64 per destination are pulled) */
            KT_CHECK(stream_queue >= max_n, "stream_queue in use %lu, below %zu", stream_queue, max_n);
            KT_CHECK(rv1 - rv0 <= (unsigned long long)(nsend / 4), "phase %d: %llu of %d sends by rendezvous "
                     "(stream_queue %lu)", phase, rv1 - rv0, nsend, stream_queue);
        }
        if (phase == 2) {
            int flag;
            for (int t = 0; t < 20; t++) {             /* let what can arrive arrive */
                MPI_Testall(nsend, sreq, &flag, MPI_STATUSES_IGNORE);
                usleep(1000);
            }
            for (int q = 0; q < nrecv; q++)
                KT_MPI(MPI_Irecv(rv[q].buf, (int)rv[q].cap, MPI_BYTE, rv[q].src, rv[q].tag, MPI_COMM_WORLD,
                                 &rreq[q]));
        }
        /* cancel the receive no message matches */
        int cq = -1;
        for (int q = 0; q < nrecv; q++)
            if (rv[q].tag == 999999) cq = q;
        KT_MPI(MPI_Cancel(&rreq[cq]));
        /* a message delivered to the wrong receive leaves another waiting:
         * fail after a deadline rather than hang */
        int rc = MPI_SUCCESS, done = 0;
        double t_end = kt_now() + 60;
        while (!done) {
            rc = MPI_Testall(nrecv, rreq, &done, rst);
            if (!done && kt_now() > t_end)
                KT_FAIL("phase %d: receives not all complete after 60 s (a message went to another receive, or "
                        "was lost)", phase);
        }
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &rc);
        KT_CHECK(rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS, "MPI_Waitall of the receives: error class %d", rc);
        KT_MPI(MPI_Waitall(nsend, sreq, MPI_STATUSES_IGNORE));

        int *seen = calloc((size_t)size * W, sizeof *seen), ntrunc = 0;
        KT_CHECK(seen != NULL);
        for (int q = 0; q < nrecv; q++) {
            struct rcv *r = &rv[q];
            int cancelled = 0, cnt = -1, cls = MPI_SUCCESS;
            MPI_Test_cancelled(&rst[q], &cancelled);
            if (q == cq) {
                KT_CHECK(cancelled, "phase %d: the receive that no message matches was not cancelled", phase);
                continue;
            }
            KT_CHECK(!cancelled, "phase %d: receive %d (source %d tag %d) cancelled", phase, q, r->src, r->tag);
            if (rc == MPI_ERR_IN_STATUS) MPI_Error_class(rst[q].MPI_ERROR, &cls);
            int s = rst[q].MPI_SOURCE, k = rst[q].MPI_TAG - s * TAGX;
            KT_CHECK(s >= 0 && s < size && s != rank && k >= 0 && k < W,
                     "phase %d: receive %d (source %d tag %d) got source %d tag %d", phase, q, r->src, r->tag, s,
                     rst[q].MPI_TAG);
            KT_CHECK(r->src == MPI_ANY_SOURCE || r->src == s, "phase %d: receive of source %d got rank %d's",
                     phase, r->src, s);
            KT_CHECK(r->tag == MPI_ANY_TAG || r->tag == rst[q].MPI_TAG, "phase %d: receive of tag %d got tag %d",
                     phase, r->tag, rst[q].MPI_TAG);
            if (phase == 1)
                KT_CHECK(s == r->want_s && k == r->want_k,
                         "phase 1: receive %d (source %d tag %d) got message %d of rank %d, expected message %d of "
                         "rank %d", q, r->src, r->tag, k, s, r->want_k, r->want_s);
            KT_CHECK(!seen[s * W + k], "phase %d: message %d of rank %d received twice", phase, k, s);
            seen[s * W + k] = 1;
            size_t n = msize(s, rank, k), got = n < r->cap ? n : r->cap;
            MPI_Get_count(&rst[q], MPI_BYTE, &cnt);
            if (n > r->cap) {
                ntrunc++;
                KT_CHECK(cls == MPI_ERR_TRUNCATE, "phase %d: %zu bytes into a %zu-byte receive: error class %d, "
                         "expected MPI_ERR_TRUNCATE", phase, n, r->cap, cls);
            } else {
                KT_CHECK(cls == MPI_SUCCESS, "phase %d: receive %d: error class %d", phase, q, cls);
                KT_EQ_INT(cnt, n);
            }
            for (size_t i = 0; i < got; i++)
                if (r->buf[i] != val(s, rank, k, i))
                    KT_FAIL("phase %d: message %d of rank %d (%zu bytes) in receive %d (source %d tag %d): byte "
                            "%zu is %d, expected %d", phase, k, s, n, q, r->src, r->tag, i, r->buf[i],
                            val(s, rank, k, i));
            for (size_t i = got; i < max_n + GUARD; i++)
                if (r->buf[i] != 0xee)
                    KT_FAIL("phase %d: message %d of rank %d (%zu bytes, receive of %zu): byte %zu written",
                            phase, k, s, n, r->cap, i);
        }
        KT_EQ_INT(ntrunc, 1);
        free(seen);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0) printf("shm_stream: %d ranks, 2 phases of %d x %d messages of %zu..%zu bytes: ok\n", size, W, npeer,
                          min_n, max_n);
    for (int j = 0; j < nsend; j++) free(sbuf[j]);
    for (int j = 0; j < nrecv; j++) free(rv[j].buf);
    free(sbuf); free(rv); free(sreq); free(rreq); free(rst); free(order); free(kind);
    KT_MPI(MPI_T_pvar_handle_free(ses, &rndv));
    KT_MPI(MPI_T_pvar_session_free(&ses));
    MPI_Finalize();
    KT_MPI(MPI_T_finalize());
    return 0;
}
