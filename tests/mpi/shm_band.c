/* p2p/shmem, the 8-64 KiB band: its switch points are parameters
 * (p2p_shmem_eager_limit, p2p_shmem_cma_min, p2p_shmem_pipeline_min,
 * p2p_shmem_pipeline_chunk, read here through MPI_T), and each message
 * takes the protocol they say: towards a peer that can read the sender with
 * CMA (p2p_shmem_cma_status says "single copy ..."), a message of at least
 * cma_min bytes goes by rendezvous (pulled in one copy), a smaller one
 * eagerly up to eager_limit (cma_min 0: nothing pulled); without CMA,
 * eagerly up to eager_limit (pipelined through the ring from pipeline_min
 * on), rendezvous above.  The rendezvous counter
 * (p2p_rendezvous_sends) tells which was used.  Sizes on both sides of each
 * switch point, received expected (blocking) and unexpected (the receive
 * posted after the whole message could have arrived), both directions,
 * values checked.  -n 2. */
#include "kt.h"
#include <unistd.h>

static MPI_T_pvar_session ses;
static MPI_T_pvar_handle rndv;

static unsigned long cvar_size(const char *name)
{
    int i, count;
    unsigned long v = 0;
    MPI_T_cvar_handle h;
    KT_MPI(MPI_T_cvar_get_index(name, &i));
    KT_MPI(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
    KT_MPI(MPI_T_cvar_read(h, &v));
    KT_MPI(MPI_T_cvar_handle_free(&h));
    return v;
}

static void cvar_string(const char *name, char *buf, int len)
{
    int i, count;
    MPI_T_cvar_handle h;
    KT_MPI(MPI_T_cvar_get_index(name, &i));
    KT_MPI(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
    KT_CHECK(count <= len, "%s: %d characters", name, count);
    KT_MPI(MPI_T_cvar_read(h, buf));
    KT_MPI(MPI_T_cvar_handle_free(&h));
}

static unsigned long long rndv_count(void)
{
    unsigned long long v = 0;
    KT_MPI(MPI_T_pvar_read(ses, rndv, &v));
    return v;
}

static unsigned char val(int src, size_t n, size_t i)
{
    return (unsigned char)(src * 29 + n * 3 + i * 11 + (i >> 8));
}

static void fill(unsigned char *b, size_t n, int src)
{
    for (size_t i = 0; i < n; i++) b[i] = val(src, n, i);
}

static void check(const unsigned char *b, size_t n, int src, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != val(src, n, i))
            KT_FAIL("%s: %zu-byte message from rank %d: byte %zu is %d, expected %d", what, n, src, i, b[i],
                    val(src, n, i));
}

int main(int argc, char **argv)
{
    int provided, rank, size, count;
    KT_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 2, "run with -n 2");

    unsigned long eager = cvar_size("p2p_shmem_eager_limit");
    /* the switch in use: p2p_shmem_cma_min, or measured at start-up when that is 0 */
    unsigned long cma_set = cvar_size("p2p_shmem_cma_min");
    unsigned long cma_min = cvar_size("p2p_shmem_cma_min_effective");
    unsigned long pipe_min = cvar_size("p2p_shmem_pipeline_min");
    unsigned long chunk = cvar_size("p2p_shmem_pipeline_chunk");
    char status[1024] = "";
    cvar_string("p2p_shmem_cma_status", status, (int)sizeof status);
    int cma = strncmp(status, "single copy", 11) == 0;
    if (cma_set) KT_CHECK(cma_min == cma_set, "p2p_shmem_cma_min %lu set, %lu in use", cma_set, cma_min);
    if (!cma) KT_CHECK(cma_min == cma_set, "no CMA, yet p2p_shmem_cma_min_effective is %lu", cma_min);
    /* measured: 0 where a pull costs more per byte than the ring's copies
     * (nothing pulled: rendezvous through the ring above the eager limit),
     * else above the floor (4097), the eager limit too */
    if (cma && !cma_set)
        KT_CHECK(cma_min == 0 || cma_min > 4096, "measured p2p_shmem_cma_min_effective %lu: neither 0 nor above "
                 "4096", cma_min);
    /* what the sender does with n bytes (p2p_shmem_eager_limit()) */
    unsigned long limit = cma && cma_min && cma_min <= eager ? cma_min - 1 : eager;
    if (rank == 0)
        printf("eager_limit %lu cma_min %lu (set %lu) pipeline_min %lu pipeline_chunk %lu; %s: eager up to %lu\n", eager,
               cma_min, cma_set, pipe_min, chunk, cma ? "CMA" : "no CMA", limit);

    int i;
    KT_MPI(MPI_T_pvar_session_create(&ses));
    KT_MPI(MPI_T_pvar_get_index("p2p_rendezvous_sends", MPI_T_PVAR_CLASS_COUNTER, &i));
    KT_MPI(MPI_T_pvar_handle_alloc(ses, i, NULL, &rndv, &count));
    KT_MPI(MPI_T_pvar_start(ses, rndv));

    size_t sizes[32];
    int ns = 0;
    /* each rank measured its own switch (the sender's applies): both sides of both */
    unsigned long mins[2];
    KT_MPI(MPI_Allgather(&cma_min, 1, MPI_UNSIGNED_LONG, mins, 1, MPI_UNSIGNED_LONG, MPI_COMM_WORLD));
    const unsigned long points[] = { mins[0], mins[1], pipe_min, eager, 8192, 16384, 65536 };
    for (int k = 0; k < 7; k++) {
        if (points[k] > 1) sizes[ns++] = points[k] - 1;
        sizes[ns++] = points[k];
        sizes[ns++] = points[k] + 1;
    }
    sizes[ns++] = pipe_min + 3 * chunk + 5;       /* several pieces and a short last one */
    sizes[ns++] = 40000;
    size_t maxn = 0;
    for (int k = 0; k < ns; k++)
        if (sizes[k] > maxn) maxn = sizes[k];
    unsigned char *sb = malloc(maxn + 1), *rb = malloc(maxn + 64);
    KT_CHECK(sb && rb);

    /* a receiver says whether it can read a sender at the end of its
     * MPI_Init (until then its peers send inline) */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int dir = 0; dir < 2; dir++) {
        int from = dir, to = 1 - dir;
        for (int late = 0; late < 2; late++)
            for (int k = 0; k < ns; k++) {
                size_t n = sizes[k];
                if (rank == from) {
                    MPI_Request r;
                    unsigned long long before = rndv_count();
                    fill(sb, n, from);
                    KT_MPI(MPI_Isend(sb, (int)n, MPI_BYTE, to, k, MPI_COMM_WORLD, &r));
                    unsigned long long after = rndv_count();
                    int want = n > limit;
                    KT_CHECK((after - before == 1) == want, "%zu bytes went %s, expected %s (eager up to %lu)", n,
                             after - before ? "by rendezvous" : "eagerly", want ? "rendezvous" : "eager", limit);
                    KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
                } else if (rank == to) {
                    MPI_Status st;
                    int cnt = -1;
                    if (late) usleep(2000);            /* the message arrives first */
                    memset(rb, 0xee, n + 64);
                    KT_MPI(MPI_Recv(rb, (int)n + 64, MPI_BYTE, from, k, MPI_COMM_WORLD, &st));
                    MPI_Get_count(&st, MPI_BYTE, &cnt);
                    KT_EQ_INT(cnt, n);
                    check(rb, n, from, late ? "unexpected" : "expected");
                    for (int j = 0; j < 64; j++) KT_CHECK(rb[n + j] == 0xee, "wrote past the message");
                }
            }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    KT_MPI(MPI_T_pvar_handle_free(ses, &rndv));
    KT_MPI(MPI_T_pvar_session_free(&ses));
    free(sb);
    free(rb);
    MPI_Finalize();
    KT_MPI(MPI_T_finalize());
    return 0;
}
