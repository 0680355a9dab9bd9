/* conf_mprobe_stress: matched probes under MPI_THREAD_MULTIPLE (issue 16
 * item 6: a client that received pickled objects with MPI_Mprobe /
 * MPI_Get_count / MPI_Mrecv saw "negative count" and undecodable bytes).
 *
 * Phase 1 leaves synchronous sends behind: on a duplicate of
 * MPI_COMM_WORLD every rank MPI_Issend's two messages (1 KiB, 1 MiB) to the
 * next rank, which never receives them, and the communicator is freed.
 * Phase 2, on a new duplicate (which may get the freed one's context id),
 * where each rank first leaves MPI_Issend's to itself that it cancelled and
 * freed after an MPI_Test (mpi4py's testISSendCancel): every rank sends every rank (itself included) NMSG messages of mixed sizes
 * (0 B to 3 MiB, across the eager / rendezvous limits of every transport)
 * with MPI_Isend and MPI_Issend, while two threads per rank receive them with
 * MPI_Mprobe or MPI_Improbe (MPI_ANY_SOURCE, MPI_ANY_TAG), MPI_Get_count and
 * MPI_Get_count_c, and MPI_Mrecv / MPI_Imrecv / MPI_Mrecv_c.  Every matched
 * message must have a count that is defined, not negative, and the size its
 * (source, tag) implies; every byte is checked; no message comes twice and
 * none from phase 1.  Phase 3: the phase-1 sends are cancelled (they must be:
 * nobody received them) and nothing is left anywhere. */
#include "kt.h"
#include <pthread.h>
#include <stdint.h>

#define NMSG 24
#define NTHR 2
static const int sizes[] = { 0, 1, 7, 64, 1000, 4096, 12000, 32768, 65535, 65536, 65537, 131072,
                             262144, 300001, 1 << 20, 3 << 20 };
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define POISON_TAG 999

static int rank, nranks;
static MPI_Comm comm;
static int *seen;                       /* [src * NMSG + tag] */
static int claimed, total;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* Size of message tag from src: every size occurs, in an order that differs per sender. */
static int size_of(int src, int tag) { return sizes[(tag * 5 + src * 3) % NSIZES]; }
static unsigned char byte_of(int src, int tag, int i) { return (unsigned char)(i * 31 + src * 7 + tag * 13 + 5); }

static void *receiver(void *arg)
{
    int id = (int)(intptr_t)arg, k = 0;
    for (;;) {
        pthread_mutex_lock(&mu);
        int mine = claimed < total ? ++claimed : 0;      /* a message that is surely still to come */
        pthread_mutex_unlock(&mu);
        if (!mine) break;
        MPI_Message msg = MPI_MESSAGE_NULL;
        MPI_Status st;
        int flag = 0, count = -12345, iprobe = (k + id) % 2;
        MPI_Count ccount = -12345;
        if (iprobe) {
            while (!flag) KT_MPI(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &msg, &st));
        } else {
            KT_MPI(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &msg, &st));
        }
        KT_CHECK(msg != MPI_MESSAGE_NULL && msg != MPI_MESSAGE_NO_PROC, "matched probe gave no message");
        int src = st.MPI_SOURCE, tag = st.MPI_TAG;
        KT_CHECK(src >= 0 && src < nranks, "source %d", src);
        KT_CHECK(tag != POISON_TAG, "a message from rank %d that was cancelled, or sent on a freed communicator, "
                 "was matched", src);
        KT_CHECK(tag >= 0 && tag < NMSG, "tag %d from rank %d", tag, src);
        KT_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
        KT_MPI(MPI_Get_count_c(&st, MPI_BYTE, &ccount));
        int want = size_of(src, tag);
        KT_CHECK(count != MPI_UNDEFINED && count >= 0, "MPI_Get_count of a matched message from rank %d tag %d: %d",
                 src, tag, count);
        KT_CHECK(ccount >= 0 && ccount == count, "MPI_Get_count_c %lld, MPI_Get_count %d", (long long)ccount, count);
        KT_CHECK(count == want, "message from rank %d tag %d: count %d, sent %d bytes", src, tag, count, want);
        unsigned char *buf = malloc((size_t)count + 1);
        KT_CHECK(buf, "malloc");
        MPI_Status rst;
        switch (k % 3) {
        case 0: KT_MPI(MPI_Mrecv(buf, count, MPI_BYTE, &msg, &rst)); break;
        case 1: {
            MPI_Request rq;
            KT_MPI(MPI_Imrecv(buf, count, MPI_BYTE, &msg, &rq));
            KT_MPI(MPI_Wait(&rq, &rst));
            break;
        }
        default: KT_MPI(MPI_Mrecv_c(buf, ccount, MPI_BYTE, &msg, &rst)); break;
        }
        KT_CHECK(msg == MPI_MESSAGE_NULL, "the message handle was not set to MPI_MESSAGE_NULL");
        int got = -1;
        KT_MPI(MPI_Get_count(&rst, MPI_BYTE, &got));
        KT_CHECK(got == want && rst.MPI_SOURCE == src && rst.MPI_TAG == tag,
                 "received %d bytes from rank %d tag %d, probed %d bytes from rank %d tag %d", got, rst.MPI_SOURCE,
                 rst.MPI_TAG, want, src, tag);
        for (int i = 0; i < count; i++)
            if (buf[i] != byte_of(src, tag, i))
                KT_FAIL("message from rank %d tag %d (%d bytes): byte %d is %d, expected %d", src, tag, count, i,
                        buf[i], byte_of(src, tag, i));
        free(buf);
        pthread_mutex_lock(&mu);
        int dup = seen[src * NMSG + tag]++;
        pthread_mutex_unlock(&mu);
        KT_CHECK(!dup, "message from rank %d tag %d received twice", src, tag);
        k++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, flag;
    KT_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    KT_CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided (%d)", provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int next = (rank + 1) % nranks;

    /* Phase 1: synchronous sends nobody receives, on a communicator then freed. */
    MPI_Comm old;
    MPI_Request poison[2];
    static char pbuf[2][1 << 20];
    memset(pbuf, 0x5a, sizeof pbuf);
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &old));
    KT_MPI(MPI_Issend(pbuf[0], 1024, MPI_BYTE, next, POISON_TAG, old, &poison[0]));
    KT_MPI(MPI_Issend(pbuf[1], 1 << 20, MPI_BYTE, next, POISON_TAG, old, &poison[1]));
    MPI_Barrier(MPI_COMM_WORLD);
    KT_MPI(MPI_Comm_free(&old));

    /* Phase 2: the stress, on a new communicator where each rank first
     * leaves behind synchronous sends to itself that it probed (MPI_Test:
     * the message is there), cancelled and freed, as mpi4py's
     * testISSendCancel does: a cancel to oneself is decided before MPI_Cancel
     * returns, so no matched probe below may see them. */
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    for (int i = 0; i < 3; i++) {
        MPI_Request r1;
        int n = i == 0 ? 0 : i == 1 ? 1024 : 1 << 20;
        KT_MPI(MPI_Issend(pbuf[1], n, MPI_BYTE, rank, POISON_TAG, comm, &r1));
        KT_MPI(MPI_Test(&r1, &flag, MPI_STATUS_IGNORE));
        KT_CHECK(!flag, "an MPI_Issend to oneself that nobody received completed");
        KT_MPI(MPI_Cancel(&r1));
        KT_MPI(MPI_Request_free(&r1));
    }
    seen = calloc((size_t)nranks * NMSG, sizeof *seen);
    total = nranks * NMSG;
    pthread_t th[NTHR];
    for (int t = 0; t < NTHR; t++) pthread_create(&th[t], NULL, receiver, (void *)(intptr_t)t);
    unsigned char **sb = malloc((size_t)nranks * NMSG * sizeof *sb);
    MPI_Request *rq = malloc((size_t)nranks * NMSG * sizeof *rq);
    int nrq = 0;
    for (int tag = 0; tag < NMSG; tag++)
        for (int j = 0; j < nranks; j++) {
            int dest = (rank + j) % nranks, n = size_of(rank, tag);
            unsigned char *b = sb[nrq] = malloc((size_t)n + 1);
            for (int i = 0; i < n; i++) b[i] = byte_of(rank, tag, i);
            if ((tag + j) % 3 == 0) KT_MPI(MPI_Issend(b, n, MPI_BYTE, dest, tag, comm, &rq[nrq]));
            else KT_MPI(MPI_Isend(b, n, MPI_BYTE, dest, tag, comm, &rq[nrq]));
            nrq++;
        }
    KT_MPI(MPI_Waitall(nrq, rq, MPI_STATUSES_IGNORE));
    for (int t = 0; t < NTHR; t++) pthread_join(th[t], NULL);
    for (int i = 0; i < nrq; i++) free(sb[i]);
    for (int s = 0; s < nranks; s++)
        for (int tag = 0; tag < NMSG; tag++)
            KT_CHECK(seen[s * NMSG + tag] == 1, "message from rank %d tag %d received %d times", s, tag,
                     seen[s * NMSG + tag]);
    MPI_Barrier(comm);

    /* Phase 3: the leftover sends are cancelled; nothing is left. */
    for (int i = 0; i < 2; i++) {
        MPI_Status st;
        KT_MPI(MPI_Cancel(&poison[i]));
        KT_MPI(MPI_Wait(&poison[i], &st));
        KT_MPI(MPI_Test_cancelled(&st, &flag));
        KT_CHECK(flag, "the MPI_Issend of phase 1 that nobody received (%d bytes) was not cancelled",
                 i ? 1 << 20 : 1024);
    }
    MPI_Barrier(comm);
    KT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE));
    KT_CHECK(!flag, "a message is left over");
    KT_MPI(MPI_Comm_free(&comm));
    free(seen); free(sb); free(rq);
    if (rank == 0) printf("conf_mprobe_stress: ok (%d ranks, %d messages each)\n", nranks, total);
    MPI_Finalize();
    return 0;
}
