/* Unit test of schedule building and sealing (framework/sched/sched.c), in
 * process, on a communicator object made by hand (nothing is sent).
 *
 * Sealing (kumi_sched_seal) turns the builder's edge list into the fixed
 * form an engine runs: START (node 0) before every node without a
 * predecessor, every node without a successor before END (node 1), the
 * successors of each node as one index array (CSR) in the order the edges
 * were made, npred per node; a cycle is MPI_ERR_ARG ("its dependencies form
 * a cycle").  Checked here: empty, chain, diamond, dangling nodes, cycles
 * (with and without a way in from START), sealing twice, building after
 * sealing, bad dependencies (self, START / END, out of range, -1 ignored),
 * bad node arguments (tag, rank), the tag slot rule of kumi_sched_create,
 * random DAGs (and the same with one back edge) against a naive model, and
 * that a schedule made from a destroyed one's kept arrays starts empty. */
#include "sched/sched.h"
#include "ut.h"
#include "ut_errors.h"

static struct kumi_comm comm;


static struct kumi_sched *mk(void)
{
    struct kumi_sched *s = NULL;
    int rc = kumi_sched_create(&comm, KUMI_SCHED_NBC, &s);
    CHECK(rc == MPI_SUCCESS && s, "kumi_sched_create failed: %s", msg(rc));
    return s;
}

/* succ list of node i as a string "a b c" */
static void succs(const struct kumi_sched *s, uint32_t i, char *out, size_t len)
{
    out[0] = '\0';
    for (uint32_t k = 0; k < s->node[i].nsucc; k++) {
        size_t l = strlen(out);
        snprintf(out + l, len - l, "%s%u", k ? " " : "", s->succ[s->node[i].first + k]);
    }
}
#define CHECK_SUCC(s, i, want) \
    do { char b_[256]; succs(s, i, b_, sizeof b_); \
         CHECK(!strcmp(b_, want), "successors of node %d are \"%s\", expected \"%s\"", (int)(i), b_, want); } while (0)
#define CHECK_NPRED(s, i, want) \
    CHECK((s)->node[i].npred == (uint32_t)(want), "npred of node %d is %u, expected %d", (int)(i), \
          (s)->node[i].npred, (int)(want))

static void test_shapes(void)
{
    UT_CASE("empty schedule");
    struct kumi_sched *s = mk();
    CHECK_INT(kumi_sched_seal(s), MPI_SUCCESS);
    CHECK(s->sealed, "sealed");
    CHECK_SUCC(s, 0, "1");
    CHECK_SUCC(s, 1, "");
    CHECK_NPRED(s, 1, 1);
    kumi_sched_destroy(s);

    UT_CASE("chain");
    s = mk();
    int a = kumi_sched_nop(s), b = kumi_sched_nop(s), c = kumi_sched_nop(s);
    CHECK(a == 2 && b == 3 && c == 4, "node indices %d %d %d, expected 2 3 4", a, b, c);
    kumi_sched_after(s, b, a);
    kumi_sched_after(s, c, b);
    CHECK_INT(kumi_sched_seal(s), MPI_SUCCESS);
    CHECK_SUCC(s, 0, "2");
    CHECK_SUCC(s, 2, "3");
    CHECK_SUCC(s, 3, "4");
    CHECK_SUCC(s, 4, "1");
    CHECK_NPRED(s, 2, 1);
    CHECK_NPRED(s, 3, 1);
    CHECK_NPRED(s, 4, 1);
    CHECK_NPRED(s, 1, 1);
    CHECK(s->nedge == 0, "the edge list is emptied at sealing (a small array stays for the next schedule)");
    kumi_sched_destroy(s);

    UT_CASE("a schedule made from a spare starts empty");
    s = mk();                           /* gets the chain's arrays (sched.c: spares) */
    CHECK(s->n == 2 && s->nedge == 0 && !s->sealed && s->nmem == 0 && s->ndts == 0 && s->nops == 0 &&
          s->err == MPI_SUCCESS && s->rhead == 0 && s->rtail == 0, "a fresh schedule: n %u, nedge %u, sealed %d",
          s->n, s->nedge, (int)s->sealed);
    CHECK_INT(kumi_sched_seal(s), MPI_SUCCESS);
    CHECK_SUCC(s, 0, "1");
    CHECK_NPRED(s, 1, 1);
    kumi_sched_destroy(s);

    UT_CASE("diamond, edges in making order");
    s = mk();
    int top = kumi_sched_nop(s), l = kumi_sched_nop(s), r = kumi_sched_nop(s), bot = kumi_sched_nop(s);
    kumi_sched_after(s, r, top);            /* made first: r comes first among top's successors */
    kumi_sched_after(s, l, top);
    int preds[3] = { l, -1, r };
    kumi_sched_after_all(s, bot, preds, 3);  /* -1 is skipped */
    CHECK_INT(kumi_sched_seal(s), MPI_SUCCESS);
    CHECK_SUCC(s, 0, "2");
    CHECK_SUCC(s, (uint32_t)top, "4 3");
    CHECK_SUCC(s, (uint32_t)l, "5");
    CHECK_SUCC(s, (uint32_t)r, "5");
    CHECK_SUCC(s, (uint32_t)bot, "1");
    CHECK_NPRED(s, bot, 2);
    CHECK_NPRED(s, 1, 1);
    kumi_sched_destroy(s);

    UT_CASE("dangling nodes");
    s = mk();
    int x = kumi_sched_nop(s), y = kumi_sched_nop(s), z = kumi_sched_nop(s);
    kumi_sched_after(s, z, x);              /* y has no edge at all */
    CHECK_INT(kumi_sched_seal(s), MPI_SUCCESS);
    CHECK_SUCC(s, 0, "2 3");                /* x and y come after START */
    CHECK_SUCC(s, (uint32_t)x, "4");
    CHECK_SUCC(s, (uint32_t)y, "1");        /* y and z go before END */
    CHECK_SUCC(s, (uint32_t)z, "1");
    CHECK_NPRED(s, 1, 2);
    CHECK_NPRED(s, y, 1);
    kumi_sched_destroy(s);

    UT_CASE("duplicate edge");
    s = mk();
    a = kumi_sched_nop(s);
    b = kumi_sched_nop(s);
    kumi_sched_after(s, b, a);
    kumi_sched_after(s, b, a);
    CHECK_INT(kumi_sched_seal(s), MPI_SUCCESS);
    CHECK_SUCC(s, (uint32_t)a, "3 3");      /* counted twice on both sides: still consistent */
    CHECK_NPRED(s, b, 2);
    kumi_sched_destroy(s);
}

static void test_errors(void)
{
    UT_CASE("cycle");
    struct kumi_sched *s = mk();
    int a = kumi_sched_nop(s), b = kumi_sched_nop(s), c = kumi_sched_nop(s);
    kumi_sched_after(s, b, a);
    kumi_sched_after(s, c, b);
    kumi_sched_after(s, b, c);              /* b -> c -> b; a is a root */
    int rc = kumi_sched_seal(s);
    CHECK(cls(rc) == MPI_ERR_ARG, "a cycle gives MPI_ERR_ARG, got class %d (%s)", cls(rc), msg(rc));
    CHECK_HAS(msg(rc), "collective schedule", "cycle");
    CHECK(!s->sealed, "a schedule with a cycle is not sealed");
    CHECK(kumi_sched_seal(s) == rc, "sealing again reports the same error");
    kumi_sched_destroy(s);

    UT_CASE("cycle with no way in");
    s = mk();
    a = kumi_sched_nop(s);
    b = kumi_sched_nop(s);
    kumi_sched_after(s, b, a);
    kumi_sched_after(s, a, b);              /* no node without a predecessor */
    rc = kumi_sched_seal(s);
    CHECK(cls(rc) == MPI_ERR_ARG, "a closed cycle gives MPI_ERR_ARG, got class %d (%s)", cls(rc), msg(rc));
    kumi_sched_destroy(s);

    UT_CASE("bad dependencies");
    const struct { int node, pred; } bad[] = { { 2, 2 }, { 2, 0 }, { 2, 1 }, { 0, 2 }, { 1, 2 }, { 3, 2 }, { 2, 7 } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s = mk();
        kumi_sched_nop(s);                  /* node 2 only */
        kumi_sched_after(s, bad[i].node, bad[i].pred);
        rc = kumi_sched_seal(s);
        CHECK(cls(rc) == MPI_ERR_ARG, "dependency %d -> %d: class %d, expected MPI_ERR_ARG", bad[i].pred,
              bad[i].node, cls(rc));
        char want[64];
        snprintf(want, sizeof want, "invalid dependency %d -> %d", bad[i].pred, bad[i].node);
        CHECK_HAS(msg(rc), want);
        kumi_sched_destroy(s);
    }
    s = mk();
    a = kumi_sched_nop(s);
    kumi_sched_after(s, a, -1);             /* -1: a failed builder call, ignored */
    kumi_sched_after(s, -1, a);
    CHECK_INT(kumi_sched_seal(s), MPI_SUCCESS);
    kumi_sched_destroy(s);

    UT_CASE("building after sealing");
    s = mk();
    a = kumi_sched_nop(s);
    CHECK_INT(kumi_sched_seal(s), MPI_SUCCESS);
    CHECK_INT(kumi_sched_seal(s), MPI_SUCCESS);    /* twice: nothing changes */
    CHECK_SUCC(s, 0, "2");
    CHECK_INT(kumi_sched_nop(s), -1);
    CHECK(cls(s->err) == MPI_ERR_OTHER, "a node after sealing: class %d", cls(s->err));
    CHECK_HAS(msg(s->err), "after the schedule was issued");
    kumi_sched_destroy(s);
    s = mk();
    a = kumi_sched_nop(s);
    b = kumi_sched_nop(s);
    kumi_sched_seal(s);
    kumi_sched_after(s, b, a);
    CHECK(cls(s->err) == MPI_ERR_OTHER, "a dependency after sealing: class %d", cls(s->err));
    CHECK_HAS(msg(s->err), "dependency was added after");
    kumi_sched_destroy(s);

    UT_CASE("bad node arguments");
    int buf[4];
    s = mk();
    CHECK_INT(kumi_sched_send(s, buf, 1, MPI_INT, 1, KUMI_SCHED_TAG_MAX + 1), -1);
    CHECK(cls(s->err) == MPI_ERR_TAG, "tag above KUMI_SCHED_TAG_MAX: class %d", cls(s->err));
    CHECK_HAS(msg(s->err), "node tag 4096");
    CHECK_INT(kumi_sched_nop(s), -1);       /* the first error sticks: nothing more is built */
    CHECK_INT(kumi_sched_seal(s), s->err);
    kumi_sched_destroy(s);
    s = mk();
    CHECK_INT(kumi_sched_recv(s, buf, 1, MPI_INT, comm.size, 0), -1);
    CHECK(cls(s->err) == MPI_ERR_RANK, "rank = size: class %d", cls(s->err));
    CHECK_HAS(msg(s->err), "invalid rank 4", "size 4");
    kumi_sched_destroy(s);
    s = mk();
    CHECK_INT(kumi_sched_send(s, buf, 1, MPI_INT, -5, 0), -1);
    CHECK(cls(s->err) == MPI_ERR_RANK, "rank -5: class %d", cls(s->err));
    kumi_sched_destroy(s);
    s = mk();
    CHECK_INT(kumi_sched_send(s, buf, 1, MPI_INT, MPI_PROC_NULL, 0), 2);
    CHECK_INT(kumi_sched_recv(s, buf, 1, MPI_INT, 3, KUMI_SCHED_TAG_MAX), 3);
    CHECK_INT(kumi_sched_copy(s, buf, 1, MPI_INT, buf + 1, 1, MPI_INT), 4);
    CHECK_INT(kumi_sched_send(s, buf, 1, MPI_DATATYPE_NULL, 1, 0), -1);
    CHECK(cls(s->err) == MPI_ERR_TYPE, "MPI_DATATYPE_NULL: class %d", cls(s->err));
    kumi_sched_destroy(s);

    UT_CASE("tag slots");
    /* the schedule that has a tag slot is alive when the slot comes round again */
    struct kumi_sched *first = mk(), *again = NULL;
    comm.nbc_seq += KUMI_SCHED_SLOTS_NBC - 1;
    rc = kumi_sched_create(&comm, KUMI_SCHED_NBC, &again);
    CHECK(rc != MPI_SUCCESS && again == NULL, "a slot in use is refused");
    CHECK_HAS(msg(rc), "still alive", "non-blocking collectives");
    kumi_sched_destroy(first);
    comm.nbc_seq += KUMI_SCHED_SLOTS_NBC - 1;
    rc = kumi_sched_create(&comm, KUMI_SCHED_NBC, &again);
    CHECK(rc == MPI_SUCCESS && again, "the slot is free again once its schedule is gone: %s", msg(rc));
    if (again) kumi_sched_destroy(again);
    CHECK_INT(comm.refcount, 1);            /* every schedule gave its reference back */
    CHECK(comm.scheds == NULL, "no schedule left on the communicator");
}

/* Random DAGs against a model: edges from a random permutation order (no
 * cycle), then the same plus one edge that closes a cycle. */
static void test_random(void)
{
    UT_CASE("random DAGs");
    int ndag = 300, ncyc = 0;
    for (int it = 0; it < ndag && !ut_failed; it++) {
        struct kumi_sched *s = mk();
        int n = (int)ut_range(0, 40), ne = n ? (int)ut_range(0, 3 * n) : 0;
        int perm[64], *from = malloc(sizeof(int) * (size_t)(ne + 1)), *to = malloc(sizeof(int) * (size_t)(ne + 1));
        for (int i = 0; i < n; i++) { perm[i] = i; kumi_sched_nop(s); }
        for (int i = n - 1; i > 0; i--) { int j = (int)ut_range(0, i), t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
        int m = 0;
        for (int e = 0; e < ne && n >= 2; e++) {
            int i = (int)ut_range(0, n - 2), j = (int)ut_range(i + 1, n - 1);
            from[m] = 2 + perm[i];
            to[m] = 2 + perm[j];
            kumi_sched_after(s, to[m], from[m]);
            m++;
        }
        bool cyc = m > 0 && ut_range(0, 2) == 0;
        if (cyc) {          /* close a cycle: from the end of an edge's path back to its start */
            int e = (int)ut_range(0, m - 1);
            kumi_sched_after(s, from[e], to[e]);
            ncyc++;
        }
        int rc = kumi_sched_seal(s);
        if (cyc) {
            CHECK(cls(rc) == MPI_ERR_ARG, "DAG %d with a back edge: class %d, expected MPI_ERR_ARG", it, cls(rc));
        } else {
            CHECK(rc == MPI_SUCCESS, "DAG %d (%d nodes, %d edges): %s", it, n, m, msg(rc));
            if (rc == MPI_SUCCESS) {
                uint32_t N = (uint32_t)n + 2;
                int *indeg = calloc(N, sizeof(int)), *outdeg = calloc(N, sizeof(int));
                int *seen = calloc(N * N, sizeof(int));
                for (int e = 0; e < m; e++) { outdeg[from[e]]++; indeg[to[e]]++; seen[from[e] * N + to[e]]++; }
                int roots = 0, sinks = 0;
                for (uint32_t i = 2; i < N; i++) {
                    int wantpred = indeg[i] ? indeg[i] : 1, wantsucc = outdeg[i] ? outdeg[i] : 1;
                    CHECK_NPRED(s, i, wantpred);
                    CHECK(s->node[i].nsucc == (uint32_t)wantsucc, "DAG %d: node %u has %u successors, expected %d",
                          it, i, s->node[i].nsucc, wantsucc);
                    if (!indeg[i]) roots++;
                    if (!outdeg[i]) sinks++;
                    /* the model's edges, in making order, then END for a sink */
                    uint32_t k = 0;
                    for (int e = 0; e < m; e++)
                        if ((uint32_t)from[e] == i) {
                            CHECK(k < s->node[i].nsucc && s->succ[s->node[i].first + k] == (uint32_t)to[e],
                                  "DAG %d: successor %u of node %u is not %d", it, k, i, to[e]);
                            k++;
                        }
                    if (!outdeg[i])
                        CHECK(s->node[i].nsucc == 1 && s->succ[s->node[i].first] == 1,
                              "DAG %d: sink %u does not go before END", it, i);
                }
                CHECK(s->node[0].nsucc == (uint32_t)(n ? roots : 1), "DAG %d: START has %u successors, expected %d", it,
                      s->node[0].nsucc, n ? roots : 1);
                CHECK_NPRED(s, 1, n ? sinks : 1);
                /* every node is reached from START in a topological order (what the engine runs) */
                uint32_t *pend = malloc(sizeof *pend * N), *q = malloc(sizeof *q * N), h = 0, t = 0;
                for (uint32_t i = 0; i < N; i++) pend[i] = s->node[i].npred;
                q[t++] = 0;
                while (h < t) {
                    uint32_t v = q[h++];
                    for (uint32_t k = 0; k < s->node[v].nsucc; k++)
                        if (--pend[s->succ[s->node[v].first + k]] == 0) q[t++] = s->succ[s->node[v].first + k];
                }
                CHECK(t == N && q[N - 1] == 1, "DAG %d: %u of %u nodes run, the last is %u (END is 1)", it, t, N,
                      t ? q[t - 1] : 0);
                free(pend); free(q); free(indeg); free(outdeg); free(seen);
            }
        }
        free(from); free(to);
        kumi_sched_destroy(s);
    }
    printf("random: %d schedules, %d with a cycle\n", ndag, ncyc);
}

int main(void)
{
    ut_seed(7);
    kumi_dt_init();
    kumi_errh_init();
    comm.magic = KUMI_MAGIC_COMM;
    comm.refcount = 1;
    comm.size = 4;
    comm.predefined = true;         /* never freed by kumi_comm_release */
    comm.handle = (MPI_Comm)&comm;
    test_shapes();
    test_errors();
    test_random();
    return ut_done("test_sched");
}
