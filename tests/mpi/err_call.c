/* err_call: errors raised inside components name the MPI call the user made
 * (issue 15 item 8), once, at the start of MPI_Error_string's text; an error
 * that surfaces later through a request names both calls ("MPI_Wait: request
 * of MPI_Ibcast: ...").  Under MPI_ERRORS_RETURN:
 *   - a blocking collective whose receive is truncated inside the collective
 *     component (MPI_Bcast, the root sends more than the others receive);
 *   - a non-blocking collective that fails the same way, seen at MPI_Wait and
 *     in MPI_Waitall's statuses;
 *   - a collective component that runs out of memory (this program's malloc,
 *     which interposes libmpi's, refuses large blocks while armed);
 *   - an RMA error found by the target (a Put outside the memory attached to
 *     a dynamic window, active messages: KUMI_BASE_RMA_DIRECT=0), reported at
 *     the target's MPI_Win_fence by the RMA framework;
 *   - an error class without a message (a bare code) gets one naming the call.
 * With an argument, one fatal case for tests/scripts/err_call_fatal.sh:
 *   "bcast": the truncated MPI_Bcast under MPI_ERRORS_ARE_FATAL;
 *   "unexpected": no memory at all while an unexpected message arrives (the
 *   request layer's fatal path, kumi_err_fatal), inside MPI_Iprobe. */
#include "kt.h"
#include <stdint.h>
#include <unistd.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
static volatile size_t fail_min = SIZE_MAX;    /* refuse blocks of at least this many bytes */

void *malloc(size_t n)
{
    return n >= fail_min ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
    return n * m >= fail_min ? NULL : __libc_calloc(n, m);
}

static int me, np;
static MPI_Comm pair;     /* ranks 0 and 1: collectives that fail on some ranks leave others waiting
                             (a rank whose parent failed forwards nothing), so only two take part */

static const char *text(int rc)
{
    static char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, s, &len);
    return s;
}

static int count_of(const char *s, const char *word)
{
    int n = 0;
    for (const char *p = strstr(s, word); p; p = strstr(p + 1, word)) n++;
    return n;
}

/* rc failed with class cls and its message starts with start, and names the
 * call(s) of start once each. */
static void expect(int rc, int cls, const char *start, const char *what)
{
    int c = -1;
    KT_CHECK(rc != MPI_SUCCESS, "%s: succeeded, expected an error", what);
    MPI_Error_class(rc, &c);
    const char *s = text(rc);
    KT_CHECK(c == cls, "%s: class %d (%s), expected %d", what, c, s, cls);
    KT_CHECK(!strncmp(s, start, strlen(start)), "%s: message '%s' does not start with '%s'", what, s, start);
    char calls[256];
    snprintf(calls, sizeof calls, "%s", start);
    for (char *tok = strtok(calls, ": "); tok; tok = strtok(NULL, ": "))
        if (!strncmp(tok, "MPI_", 4))
            KT_CHECK(count_of(s, tok) == 1, "%s: message '%s' names %s %d times", what, s, tok, count_of(s, tok));
}

static void truncated_bcast(void)
{
    MPI_Comm c;
    KT_MPI(MPI_Comm_dup(pair, &c));
    int buf[4] = { 1, 2, 3, 4 };
    int rc = MPI_Bcast(buf, me == 0 ? 4 : 1, MPI_INT, 0, c);
    if (me == 0) KT_MPI(rc);
    else expect(rc, MPI_ERR_TRUNCATE, "MPI_Bcast: ", "truncated MPI_Bcast");
    KT_MPI(MPI_Barrier(c));
    MPI_Comm_free(&c);
}

static void truncated_ibcast(void)
{
    MPI_Comm c;
    KT_MPI(MPI_Comm_dup(pair, &c));
    int buf[4] = { 1, 2, 3, 4 };
    MPI_Request rq;
    KT_MPI(MPI_Ibcast(buf, me == 0 ? 4 : 1, MPI_INT, 0, c, &rq));
    int rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
    if (me == 0) KT_MPI(rc);
    else expect(rc, MPI_ERR_TRUNCATE, "MPI_Wait: request of MPI_Ibcast: ", "MPI_Wait of a truncated MPI_Ibcast");

    /* the same in MPI_Waitall: the status of the request names both calls */
    MPI_Request rqs[2];
    MPI_Status st[2];
    int x = me, y = -1;
    KT_MPI(MPI_Ibcast(buf, me == 0 ? 4 : 1, MPI_INT, 0, c, &rqs[0]));
    KT_MPI(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, c, &rqs[1]));
    rc = MPI_Waitall(2, rqs, st);
    if (me == 0) {
        KT_MPI(rc);
    } else {
        expect(rc, MPI_ERR_IN_STATUS, "MPI_Waitall: ", "MPI_Waitall of a truncated MPI_Ibcast");
        expect(st[0].MPI_ERROR, MPI_ERR_TRUNCATE, "MPI_Waitall: request of MPI_Ibcast: ",
               "status of a truncated MPI_Ibcast in MPI_Waitall");
        KT_EQ_INT(st[1].MPI_ERROR, MPI_SUCCESS);
    }
    KT_EQ_INT(y, 1);
    KT_MPI(MPI_Barrier(c));
    MPI_Comm_free(&c);
}

static void component_nomem(void)
{
    /* both ranks need the same scratch memory, so both fail before they communicate */
    MPI_Comm c;
    KT_MPI(MPI_Comm_dup(pair, &c));
    enum { N = 1 << 18 };                       /* 1 MiB of int: coll/tuned needs scratch memory */
    int *x = __libc_malloc(N * sizeof *x), *y = __libc_malloc(N * sizeof *y);
    for (int i = 0; i < N; i++) x[i] = i;
    fail_min = 100000;
    int rc = MPI_Allreduce(x, y, N, MPI_INT, MPI_SUM, c);
    fail_min = SIZE_MAX;
    expect(rc, MPI_ERR_NO_MEM, "MPI_Allreduce: coll/", "MPI_Allreduce without memory");
    KT_CHECK(strstr(text(rc), "out of memory"), "'%s' does not say what failed", text(rc));
    KT_MPI(MPI_Barrier(c));
    MPI_Comm_free(&c);
    free(x);
    free(y);
}

static void rma_target_error(void)
{
    MPI_Win w;
    KT_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    KT_MPI(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    static int mem[4];
    KT_MPI(MPI_Win_attach(w, mem, sizeof mem));
    MPI_Aint base;
    KT_MPI(MPI_Get_address(mem, &base));
    MPI_Aint tbase = base;
    KT_MPI(MPI_Bcast(&tbase, 1, MPI_AINT, 1, MPI_COMM_WORLD));
    KT_MPI(MPI_Win_fence(0, w));
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));        /* the target is out of its first fence before the Put */
    int v = 7;
    if (me == 0) KT_MPI(MPI_Put(&v, 1, MPI_INT, 1, tbase + 4096 * 16, 1, MPI_INT, w));
    int rc = MPI_Win_fence(0, w);
    if (me == 1) expect(rc, MPI_ERR_RMA_RANGE, "MPI_Win_fence: RMA: ", "target's MPI_Win_fence after a bad Put");
    else if (rc != MPI_SUCCESS)      /* the origin learns of it when the target's answer is in */
        expect(rc, MPI_ERR_RMA_RANGE, "MPI_Win_fence: ", "origin's MPI_Win_fence after a bad Put");
    KT_MPI(MPI_Win_detach(w, mem));
    KT_MPI(MPI_Win_free(&w));
}

static void bare_class(void)
{
    /* MPI_Initialized reports a NULL flag with a bare class: the binding names it */
    int rc = MPI_Initialized(NULL);
    expect(rc, MPI_ERR_ARG, "MPI_Initialized: ", "MPI_Initialized(NULL)");
}

int main(int argc, char **argv)
{
    setenv("KUMI_BASE_RMA_DIRECT", "0", 1);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    KT_CHECK(np >= 2, "run with 2 ranks or more");
    if (argc > 1 && !strcmp(argv[1], "bcast")) {
        int buf[4] = { 1, 2, 3, 4 };
        MPI_Bcast(buf, me == 0 ? 4 : 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);            /* the root's part succeeds: it waits here */
        KT_FAIL("the truncated MPI_Bcast returned");
    }
    if (argc > 1 && !strcmp(argv[1], "unexpected")) {
        if (me == 0) {
            int big[64] = { 0 };
            MPI_Send(big, 64, MPI_INT, 1, 5, MPI_COMM_WORLD);
        } else {
            int flag = 0;
            fail_min = 1;                       /* no memory at all: not even for the envelope */
            for (int spins = 0; !flag && spins < 2000000; spins++)
                MPI_Iprobe(0, 5, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            fail_min = SIZE_MAX;
            KT_FAIL("the unexpected message arrived without memory and nothing failed");
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, me < 2 ? 0 : MPI_UNDEFINED, me, &pair));
    if (pair != MPI_COMM_NULL) {
        truncated_bcast();
        truncated_ibcast();
        component_nomem();
        MPI_Comm_free(&pair);
    }
    rma_target_error();
    bare_class();
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) printf("err_call: ok\n");
    MPI_Finalize();
    return 0;
}
