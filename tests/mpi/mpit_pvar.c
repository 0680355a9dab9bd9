/* MPI_T performance variables and events (MPI 4.1 sec. 15.3.7, 15.3.8): a
 * session reads the unexpected-queue length, which grows as messages
 * arrive unexpected and falls as they are received; the same bound to
 * MPI_COMM_WORLD; its peak (a high-water mark); the counter of unexpected
 * messages, of messages and bytes per transport, of rendezvous sends; the
 * posted-receive queue; the time in progress.  The event
 * p2p_unexpected_message calls a callback for each (at once with
 * MPI_T_CB_REQUIRE_MPI_RESTRICTED; deferred to the next MPI_T call for a
 * MPI_T_CB_REQUIRE_NONE one).  Errors: bad sessions, handles, indices,
 * writes and starts.  Ranks 0 and 1 (-n 2). */
#include "kt.h"
#include <unistd.h>

#define NMSG 5
#define TAG 7

static MPI_T_pvar_session ses;

static MPI_T_pvar_handle handle(const char *name, int cls, void *obj)
{
    int i, count;
    MPI_T_pvar_handle h;
    KT_MPI(MPI_T_pvar_get_index(name, cls, &i));
    KT_MPI(MPI_T_pvar_handle_alloc(ses, i, obj, &h, &count));
    KT_EQ_INT(count, 1);
    return h;
}

static unsigned long long rd(MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    KT_MPI(MPI_T_pvar_read(ses, h, &v));
    return v;
}

static int ev_now, ev_later, ev_bad, freed;
static void cb_now(MPI_T_event_instance in, MPI_T_event_registration reg, MPI_T_cb_safety s, void *ud)
{
    int src = -1, tag = -1, srcidx = -1;
    MPI_Count bytes = -1, ts = -1;
    (void)reg;
    struct { int s, t; MPI_Count b; } all;
    if (MPI_T_event_read(in, 0, &src) || MPI_T_event_read(in, 1, &tag) || MPI_T_event_read(in, 2, &bytes) ||
        MPI_T_event_get_timestamp(in, &ts) || MPI_T_event_get_source(in, &srcidx) || MPI_T_event_copy(in, &all))
        ev_bad++;
    if (s != MPI_T_CB_REQUIRE_MPI_RESTRICTED || ud != &ev_now || src != 1 || tag != TAG ||
        bytes != (MPI_Count)sizeof(int) || ts <= 0 || srcidx != 0 || all.s != 1 || all.t != TAG)
        ev_bad++;
    ev_now++;
}
static void cb_later(MPI_T_event_instance in, MPI_T_event_registration reg, MPI_T_cb_safety s, void *ud)
{
    int tag = -1;
    (void)reg; (void)ud;
    if (MPI_T_event_read(in, 1, &tag) || tag != TAG || s != MPI_T_CB_REQUIRE_NONE) ev_bad++;
    ev_later++;
}
static void cb_free(MPI_T_event_registration reg, MPI_T_cb_safety s, void *ud)
{
    (void)reg; (void)s;
    if (ud == &freed) freed++;
}

int main(int argc, char **argv)
{
    int provided;
    KT_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    KT_MPI(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 2, "run with -n 2");
    MPI_Comm world = MPI_COMM_WORLD;

    int n, i;
    KT_MPI(MPI_T_pvar_get_num(&n));
    KT_CHECK(n >= 9, "only %d pvars", n);
    KT_MPI(MPI_T_pvar_get_index("p2p_unexpected_queue_peak", MPI_T_PVAR_CLASS_HIGHWATERMARK, &i));
    int cls, bind, ro, cont, atomic;
    MPI_Datatype dt;
    KT_MPI(MPI_T_pvar_get_info(i, NULL, NULL, NULL, &cls, &dt, NULL, NULL, NULL, &bind, &ro, &cont, &atomic));
    KT_CHECK(cls == MPI_T_PVAR_CLASS_HIGHWATERMARK && dt == MPI_UNSIGNED_LONG_LONG && bind == MPI_T_BIND_NO_OBJECT &&
             ro && cont, "peak's info");
    KT_MPI(MPI_T_pvar_get_index("p2p_comm_unexpected_queue_length", MPI_T_PVAR_CLASS_LEVEL, &i));
    KT_MPI(MPI_T_pvar_get_info(i, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, &bind, NULL, NULL, NULL));
    KT_EQ_INT(bind, MPI_T_BIND_MPI_COMM);

    KT_MPI(MPI_T_pvar_session_create(&ses));
    MPI_T_pvar_handle uelen = handle("p2p_unexpected_queue_length", MPI_T_PVAR_CLASS_LEVEL, NULL);
    MPI_T_pvar_handle uepeak = handle("p2p_unexpected_queue_peak", MPI_T_PVAR_CLASS_HIGHWATERMARK, NULL);
    MPI_T_pvar_handle uecomm = handle("p2p_comm_unexpected_queue_length", MPI_T_PVAR_CLASS_LEVEL, &world);
    MPI_T_pvar_handle uetot = handle("p2p_unexpected_messages", MPI_T_PVAR_CLASS_COUNTER, NULL);
    MPI_T_pvar_handle posted = handle("p2p_posted_queue_length", MPI_T_PVAR_CLASS_LEVEL, NULL);
    MPI_T_pvar_handle rndv = handle("p2p_rendezvous_sends", MPI_T_PVAR_CLASS_COUNTER, NULL);
    MPI_T_pvar_handle ptime = handle("kumi_base_progress_time", MPI_T_PVAR_CLASS_TIMER, NULL);
    /* per transport: the sum over the transports found */
    MPI_T_pvar_handle tr[16];
    int ntr = 0;
    for (int k = 0; k < n && ntr < 16; k++) {
        char name[128];
        int len = sizeof name, c;
        KT_MPI(MPI_T_pvar_get_info(k, name, &len, NULL, &c, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
        size_t l = strlen(name);
        if (l > 11 && !strcmp(name + l - 11, "_bytes_sent")) {
            KT_EQ_INT(c, MPI_T_PVAR_CLASS_COUNTER);
            tr[ntr++] = handle(name, c, NULL);
        }
    }
    KT_CHECK(ntr >= 2, "only %d per-transport byte counters", ntr);
    KT_MPI(MPI_T_pvar_start(ses, MPI_T_PVAR_ALL_HANDLES));

    /* events: one registration called at once, one deferred */
    int ev;
    MPI_T_event_registration reg_now, reg_later;
    KT_MPI(MPI_T_event_get_index("p2p_unexpected_message", &ev));
    int nel = 3;
    MPI_Datatype eltypes[3];
    MPI_Aint eldisp[3];
    KT_MPI(MPI_T_event_get_info(ev, NULL, NULL, NULL, eltypes, eldisp, &nel, NULL, NULL, NULL, NULL, &bind));
    KT_CHECK(nel == 3 && eltypes[0] == MPI_INT && eltypes[2] == MPI_COUNT && bind == MPI_T_BIND_MPI_COMM,
             "event info");
    KT_MPI(MPI_T_event_handle_alloc(ev, &world, MPI_INFO_NULL, &reg_now));
    KT_MPI(MPI_T_event_register_callback(reg_now, MPI_T_CB_REQUIRE_THREAD_SAFE, MPI_INFO_NULL, &ev_now, cb_now));
    KT_MPI(MPI_T_event_handle_alloc(ev, &world, MPI_INFO_NULL, &reg_later));
    KT_MPI(MPI_T_event_register_callback(reg_later, MPI_T_CB_REQUIRE_NONE, MPI_INFO_NULL, NULL, cb_later));

    if (rank == 1) {
        for (int k = 0; k < NMSG; k++) KT_MPI(MPI_Send(&k, 1, MPI_INT, 0, TAG, MPI_COMM_WORLD));
        int go;
        KT_MPI(MPI_Recv(&go, 1, MPI_INT, 0, TAG + 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        static char big[1 << 20];
        KT_MPI(MPI_Send(big, sizeof big, MPI_CHAR, 0, TAG + 1, MPI_COMM_WORLD));
        unsigned long long sent = 0;
        for (int k = 0; k < ntr; k++) sent += rd(tr[k]);
        KT_CHECK(sent >= NMSG * sizeof(int) + sizeof big, "bytes sent per transport add up to %llu", sent);
        KT_CHECK(rd(rndv) >= 1, "no rendezvous counted for a 1 MiB send");
    } else {
        /* wait until the messages sit in the unexpected queue (Iprobe of another tag drives progress) */
        double t0 = MPI_Wtime();
        int flag;
        while (rd(uelen) < NMSG && MPI_Wtime() - t0 < 30)
            KT_MPI(MPI_Iprobe(1, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        KT_EQ_INT(rd(uelen), NMSG);
        KT_EQ_INT(rd(uecomm), NMSG);
        KT_CHECK(rd(uepeak) >= NMSG, "peak %llu", rd(uepeak));
        KT_CHECK(rd(uetot) >= NMSG, "unexpected counter %llu", rd(uetot));
        KT_EQ_INT(ev_now, NMSG);
        KT_EQ_INT(ev_bad, 0);
        KT_EQ_INT(ev_later, NMSG);          /* delivered by the MPI_T calls above */
        for (int k = 0; k < NMSG; k++) {
            int v;
            KT_MPI(MPI_Recv(&v, 1, MPI_INT, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            KT_EQ_INT(v, k);
            KT_EQ_INT(rd(uelen), NMSG - 1 - k);
        }
        KT_EQ_INT(rd(uecomm), 0);
        KT_CHECK(rd(uepeak) >= NMSG, "peak fell to %llu", rd(uepeak));
        KT_MPI(MPI_Send(&rank, 1, MPI_INT, 1, TAG + 3, MPI_COMM_WORLD));
        static char big[1 << 20];
        KT_MPI(MPI_Recv(big, sizeof big, MPI_CHAR, 1, TAG + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        /* counters: readreset gives the count and starts again from 0 */
        unsigned long long v;
        KT_MPI(MPI_T_pvar_readreset(ses, uetot, &v));
        KT_CHECK(v >= NMSG, "readreset %llu", v);
        KT_CHECK(rd(uetot) < v, "counter not reset");
        KT_CHECK(rd(uetot) == 0 || rd(uetot) < NMSG, "counter after reset");
    }
    /* the posted-receive queue */
    MPI_Request req;
    int x = 0;
    KT_MPI(MPI_Irecv(&x, 1, MPI_INT, 1 - rank, TAG + 2, MPI_COMM_WORLD, &req));
    KT_CHECK(rd(posted) >= 1, "posted queue length %llu with a receive posted", rd(posted));
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));         /* both posted before either sends */
    KT_MPI(MPI_Send(&rank, 1, MPI_INT, 1 - rank, TAG + 2, MPI_COMM_WORLD));
    KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    KT_EQ_INT(x, 1 - rank);
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* the timer counts while started */
    double t = 0, t2 = 0;
    KT_MPI(MPI_T_pvar_read(ses, ptime, &t));
    KT_CHECK(t > 0, "no time in progress: %g", t);
    KT_MPI(MPI_T_pvar_stop(ses, ptime));
    KT_MPI(MPI_T_pvar_read(ses, ptime, &t));
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    KT_MPI(MPI_T_pvar_read(ses, ptime, &t2));
    KT_CHECK(t2 == t, "stopped timer moved: %g -> %g", t, t2);

    /* errors */
    unsigned long long v = 1;
    KT_EQ_INT(MPI_T_pvar_start(ses, uelen), MPI_T_ERR_PVAR_NO_STARTSTOP);
    KT_EQ_INT(MPI_T_pvar_write(ses, uelen, &v), MPI_T_ERR_PVAR_NO_WRITE);
    KT_EQ_INT(MPI_T_pvar_reset(ses, uepeak), MPI_T_ERR_PVAR_NO_WRITE);
    KT_EQ_INT(MPI_T_pvar_read(ses, MPI_T_PVAR_HANDLE_NULL, &v), MPI_T_ERR_INVALID_HANDLE);
    KT_EQ_INT(MPI_T_pvar_read(ses, MPI_T_PVAR_ALL_HANDLES, &v), MPI_T_ERR_INVALID_HANDLE);
    KT_EQ_INT(MPI_T_pvar_read(MPI_T_PVAR_SESSION_NULL, uelen, &v), MPI_T_ERR_INVALID_SESSION);
    MPI_T_pvar_session other;
    KT_MPI(MPI_T_pvar_session_create(&other));
    KT_EQ_INT(MPI_T_pvar_read(other, uelen, &v), MPI_T_ERR_INVALID_HANDLE);   /* another session's */
    MPI_T_pvar_handle h;
    int count;
    KT_EQ_INT(MPI_T_pvar_handle_alloc(other, n, NULL, &h, &count), MPI_T_ERR_INVALID_INDEX);
    MPI_Comm nullc = MPI_COMM_NULL;
    KT_MPI(MPI_T_pvar_get_index("p2p_comm_unexpected_queue_length", MPI_T_PVAR_CLASS_LEVEL, &i));
    KT_EQ_INT(MPI_T_pvar_handle_alloc(other, i, &nullc, &h, &count), MPI_T_ERR_INVALID_HANDLE);
    KT_MPI(MPI_T_pvar_session_free(&other));
    KT_CHECK(other == MPI_T_PVAR_SESSION_NULL, "session not reset");
    KT_EQ_INT(MPI_T_pvar_session_free(&other), MPI_T_ERR_INVALID_SESSION);
    KT_EQ_INT(MPI_T_event_handle_alloc(ev + 1, &world, MPI_INFO_NULL, &reg_now), MPI_T_ERR_INVALID_INDEX);
    KT_EQ_INT(MPI_T_event_register_callback(reg_now, 12345, MPI_INFO_NULL, NULL, cb_now), MPI_T_ERR_INVALID);

    KT_MPI(MPI_T_pvar_handle_free(ses, &uelen));
    KT_EQ_INT(MPI_T_pvar_read(ses, uelen, &v), MPI_T_ERR_INVALID_HANDLE);
    KT_MPI(MPI_T_pvar_session_free(&ses));
    KT_MPI(MPI_T_event_handle_free(reg_now, &freed, cb_free));
    KT_MPI(MPI_T_event_handle_free(reg_later, &freed, cb_free));
    KT_EQ_INT(freed, 2);
    KT_EQ_INT(MPI_T_event_handle_free(reg_later, NULL, NULL), MPI_T_ERR_INVALID_HANDLE);
    KT_MPI(MPI_Finalize());
    KT_MPI(MPI_T_finalize());
    if (rank == 0) printf("mpit_pvar: ok\n");
    return 0;
}
