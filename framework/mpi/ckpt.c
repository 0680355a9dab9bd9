/* Coordinated checkpoints of a whole job (issue 20): the coordinator.
 *
 * mpiexec relays a checkpoint request (SIGQUIT, kumi_ckpt PID) to every rank
 * over the control connection (kumi/launch_proto.h: CKPT); the launcher
 * client's thread that watches that connection (rpim/fork) calls
 * kumi_ckpt_prepare, answers READY, waits for mpiexec's GO (every rank
 * ready) and calls kumi_ckpt_run.  So the request reaches a rank whatever
 * its application threads do: blocked in MPI_Recv, computing outside MPI, or
 * inside a call.
 *
 * A job with checkpoints enabled (kumi_ckpt_enable, set by mpiexec --ckpt)
 * runs with the library lock off while no checkpoint is requested: the
 * entry points only count the calls inside the library (core/lock.c,
 * "Checkpoints"; a program at MPI_THREAD_MULTIPLE has the lock on anyway).
 * kumi_ckpt_prepare raises the lock's flag, so that calls from then on take
 * the lock, takes it, and waits (up to kumi_ckpt_lock_timeout) until the
 * calls that were inside without it have left, or, blocked in a wait, have
 * gone over to the lock at the wait's next yield or sleep (a blocking wait
 * releases the lock there, as at MPI_THREAD_MULTIPLE); a wait asleep in
 * poll() is woken at once (request/progress.c, kumi_progress_wake_ckpt: an
 * eventfd in its poll set), not at the end of its sleep
 * (kumi_base_progress_sleep_ms, 20 ms; a rank asleep in MPI_Recv was out
 * 12.5 ms after the request, median, 0.3 ms now).  Then no application
 * thread is inside the library until the checkpoint lowers the flag and
 * releases the lock.  Where membarrier(2) is missing (it closes the race of
 * an entry against the flag), the lock is on for the whole job instead.
 *
 * The cut.  Holding the lock, the ranks count what they handed to their
 * transports per peer and what arrived per peer (request.c), and exchange
 * the counts through the launcher (PUT "ckpt.*", FENCE), rounds after
 * rounds: in each, a rank progresses until it has received everything its
 * peers had sent it at the round's start; the cut is reached at the first
 * round in which no rank sent anything since the previous one.  Then no
 * byte is on its way on any channel: what arrived is in the library's
 * memory (the unexpected queue, posted receives that matched, rendezvous
 * requests waiting for their CTS or pull, schedules of collectives
 * blocking or not, at whatever step they are), which the image holds.
 * Nothing is replayed: a rendezvous transfer that had started is completed
 * by the rounds; one not matched yet stays an RTS in the receiver's
 * unexpected queue, its data in the sender's memory.
 *
 * Then every transport releases what an image cannot hold (p2p/tcp its
 * sockets, p2p/shmem its segment, unlinked from /dev/shm, and its doorbell
 * socket, p2p/ofi its libfabric endpoint, queue, address vector,
 * registrations, domain and fabric), the image back end (ckpt framework:
 * ckpt/image) writes this process into the checkpoint directory, and, for
 * checkpoint-and-continue, the transports wire up again (init, the
 * launcher's fence, wireup) and the lock is released: the job goes on.
 *
 * Components' shared memory (coll/sm's segments; kumi/ckpt.h: struct
 * kumi_ckpt_hook): quiesced before the cut, made again after a restart in
 * the steps of RMA's host segments below, resumed at the end.
 *
 * RMA windows: a rank waits (up to kumi_ckpt_lock_timeout, releasing the
 * lock in between) until no epoch but fence epochs is open on its windows;
 * a restarted process shares their host segments again (rma/rma_ckpt.c).
 *
 * Partitioned requests (mpi/partitioned.c) are completed as far as the
 * program made them ready, not saved and replayed: each partition a sender
 * made ready is an ordinary message of the request layer on the channel's
 * context (counted like any other), which the cut delivers into the posted
 * receive of its round or the unexpected queue; a partition not ready yet
 * is a flag in the sender's memory, sent when the program calls MPI_Pready
 * after the checkpoint or the restart.  The channel itself (both ends'
 * contexts, the partitioning each side learnt in the handshake, a handshake
 * message not matched yet) is request-layer state in process memory, the
 * same whatever transport carries it, so an inactive request (made, not
 * started yet, or completed) serves again once the transports wired up.
 *
 * Refused with a clear reason (the checkpoint is then not written, and the
 * job goes on):
 * processes of another job connected (spawn / connect / accept / join),
 * transports other than self, shmem, tcp and ofi (impi, vmpi; ofi with the
 * shm provider or one that chooses registration keys itself), the io_uring
 * and kernel-module schedule engines, a rank not between MPI_Init and
 * MPI_Finalize, no image back end.
 *
 * Restart (mpiexec --restart DIR): mpiexec starts the restart program on
 * every rank's image with a new job's environment (job id, secret, control
 * port); each process resumes here, in its checkpoint thread, with the lock
 * held and the transports released: it takes the new environment's KUMI_*
 * variables, the launcher client joins the new mpiexec (rpim/fork: a new
 * connection, HELLO), and kumi_ckpt_resume publishes the host keys again
 * and wires the transports up (new segment names and ports, from the new
 * job id and secret): the program goes on from the cut.  A process
 * restarted otherwise (kumi_restart IMAGE by hand) says so and exits. */
#include "mpi/mpi_front.h"
#include "registry/registry.h"
#include "request/request.h"
#include "sched/sched.h"
#include "rma/rma.h"
#include <kumi/ckpt.h>
#include <kumi/launch_proto.h>
#include <kumi/param.h>
#include <kumi/rpim.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long long ck_enable;                /* kumi_ckpt_enable */
static long long ck_lock_always;           /* kumi_ckpt_lock_always */
static long long ck_wake = 1;              /* kumi_ckpt_wake */
static double ck_lock_timeout = 10.0;      /* kumi_ckpt_lock_timeout */
static double ck_drain_timeout = 120.0;    /* kumi_ckpt_drain_timeout */
static const char *ck_restart_prog;        /* kumi_ckpt_restart_program (read by mpiexec) */
static volatile int ck_ready;               /* between MPI_Init's end and MPI_Finalize's start */
static unsigned ck_count;                  /* checkpoints this process went through */
static int ck_restarted;                   /* kumi_ckpt_resume in a restarted process */
static double ck_t_in;                     /* kumi_ckpt_prepare: seconds from the request to the lock */

void kumi_ckpt_register_params(void)
{
    kumi_param_register_int("kumi", "ckpt", "enable", 0,
                            "Coordinated checkpoints of the job (SIGQUIT to mpiexec, kumi_ckpt PID): "
                            "1 starts a checkpoint thread in every rank, which takes the library lock "
                            "when a checkpoint is requested and stops the job at a consistent cut "
                            "(set by mpiexec --ckpt)",
                            KUMI_LEVEL_USER, &ck_enable);
    kumi_param_register_int("kumi", "ckpt", "lock_always", 0,
                            "1: a job with checkpoints runs with the library lock on from MPI_Init to "
                            "MPI_Finalize (0: only while a checkpoint is requested)",
                            KUMI_LEVEL_DEV, &ck_lock_always);
    kumi_param_register_int("kumi", "ckpt", "wake", 1,
                            "1: a checkpoint request wakes a call asleep in poll() at once (0: the call "
                            "goes over to the lock at the end of its sleep, kumi_base_progress_sleep_ms; "
                            "for measurements)",
                            KUMI_LEVEL_DEV, &ck_wake);
    kumi_param_register_double("kumi", "ckpt", "lock_timeout", 10.0,
                               "Seconds a checkpoint waits for a rank's thread to leave the library "
                               "before the rank refuses the checkpoint",
                               KUMI_LEVEL_TUNER, &ck_lock_timeout);
    kumi_param_register_double("kumi", "ckpt", "drain_timeout", 120.0,
                               "Seconds a checkpoint waits for the channels of a rank to drain "
                               "before it fails",
                               KUMI_LEVEL_TUNER, &ck_drain_timeout);
    kumi_param_register_string("kumi", "ckpt", "restart_program", "",
                               "mpiexec --restart: the program that restarts an image (empty: the "
                               "installation's kumi_restart)",
                               KUMI_LEVEL_DEV, &ck_restart_prog);
}

KUMI_EXPORT int kumi_ckpt_enabled(void)
{
    return ck_enable != 0;
}

/* Components' shared memory (kumi/ckpt.h: struct kumi_ckpt_hook; coll/sm) */
#define CK_HOOKS 8
static const struct kumi_ckpt_hook *ck_hooks[CK_HOOKS];

KUMI_EXPORT int kumi_ckpt_hook_add(const struct kumi_ckpt_hook *h)
{
    for (int i = 0; i < CK_HOOKS; i++)
        if (__atomic_load_n(&ck_hooks[i], __ATOMIC_ACQUIRE) == h) return 0;
    for (int i = 0; i < CK_HOOKS; i++) {
        const struct kumi_ckpt_hook *none = NULL;
        if (__atomic_compare_exchange_n(&ck_hooks[i], &none, h, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return 0;
    }
    return -1;
}

KUMI_EXPORT void kumi_ckpt_hook_remove(const struct kumi_ckpt_hook *h)
{
    for (int i = 0; i < CK_HOOKS; i++) {
        const struct kumi_ckpt_hook *x = h;
        __atomic_compare_exchange_n(&ck_hooks[i], &x, NULL, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    }
}

#define EACH_HOOK(h) \
    for (int i_ = 0; i_ < CK_HOOKS; i_++) \
        for (const struct kumi_ckpt_hook *h = __atomic_load_n(&ck_hooks[i_], __ATOMIC_ACQUIRE); h; h = NULL)

static void hooks_resume(void)
{
    EACH_HOOK(h) if (h->resume) h->resume();
}

/* At the end of MPI_Init (no call inside: MPI_Init runs without the lock):
 * entry points count the calls from now on, or the lock is on for good. */
static void lock_setup(void)
{
    if (kumi_mt || (!ck_lock_always && kumi_lock_ck_setup())) return;
    if (ck_lock_always) {
        __atomic_store_n(&kumi_mt, true, __ATOMIC_SEQ_CST);
        return;
    }
    kumi_log(1, "checkpoints: membarrier(2) is not available: the library lock is on for the whole job");
    __atomic_store_n(&kumi_mt, true, __ATOMIC_SEQ_CST);
}

void kumi_ckpt_init_done(void)
{
    if (!ck_enable) return;
    lock_setup();
    __atomic_store_n(&ck_ready, 1, __ATOMIC_SEQ_CST);
}

/* The end of a checkpoint (or of its refusal): entries go without the lock
 * again, and those that took it meanwhile get it. */
static void release(void)
{
    kumi_lock_ck_lower();
    kumi_unlock_slow();
}

/* At the start of MPI_Finalize (the caller holds the lock). */
void kumi_ckpt_finalize_start(void)
{
    __atomic_store_n(&ck_ready, 0, __ATOMIC_SEQ_CST);
}

static const struct kumi_ckpt_ops *backend(const char **name)
{
    int n = 0;
    struct kumi_comp_entry **av = kumi_registry_available("ckpt", &n);
    for (int i = 0; av && i < n; i++)
        if (av[i]->comp && av[i]->comp->ops) {
            if (name) *name = av[i]->name;
            return av[i]->comp->ops;
        }
    return NULL;
}

KUMI_EXPORT int kumi_ckpt_prepare(char *why, size_t len)
{
    int me = kumi_world_rank();
    if (!ck_enable) {
        snprintf(why, len, "rank %d: checkpoints are not enabled in this job (start it with mpiexec --ckpt, "
                 "or set KUMI_CKPT_ENABLE=1)", me);
        return 0;
    }
    if (!__atomic_load_n(&ck_ready, __ATOMIC_SEQ_CST)) {   /* not initialized yet, or finalizing */
        snprintf(why, len, "rank %d is not between MPI_Init and MPI_Finalize", me);
        return 0;
    }
    double t_req = kumi_time(), end = t_req + ck_lock_timeout;
    char rw[400] = "";                     /* why an RMA epoch held the checkpoint back */
    for (;;) {
        kumi_lock_ck_raise();              /* calls from now on take the lock */
        if (ck_wake) kumi_progress_wake_ckpt();   /* one asleep in poll() goes over to it now */
        bool locked = false;
        /* the lock, then no call left inside without it */
        while (!(locked = locked || kumi_lock_try()) || kumi_lock_ck_inside() > 0) {
            const char *w = !__atomic_load_n(&ck_ready, __ATOMIC_SEQ_CST) ? "finalize"      /* MPI_Finalize started */
                            : kumi_time() > end ? "timeout" : NULL;
            if (w) {
                if (*w == 'f')
                    snprintf(why, len, "rank %d is not between MPI_Init and MPI_Finalize", me);
                else if (rw[0])                /* the time went waiting for an RMA epoch's end */
                    snprintf(why, len, "rank %d: %s for %g s (kumi_ckpt_lock_timeout; a checkpoint waits until "
                             "no RMA epoch but fence epochs is open)", me, rw, ck_lock_timeout);
                else
                    snprintf(why, len, "rank %d stayed inside the library for %g s (kumi_ckpt_lock_timeout)", me,
                             ck_lock_timeout);
                if (locked) release();
                else kumi_lock_ck_lower();
                return 0;
            }
            usleep(200);
        }
        /* RMA epochs other than fence epochs: the program goes on until it
         * is between them (rma/rma_ckpt.c) */
        int busy = __atomic_load_n(&ck_ready, __ATOMIC_SEQ_CST) ? kumi_rma_ckpt_busy(rw, sizeof rw) : 0;
        if (busy == 0) break;
        if (busy < 0 || kumi_time() > end) {
            if (busy < 0)
                snprintf(why, len, "rank %d: %s", me, rw);
            else
                snprintf(why, len, "rank %d: %s for %g s (kumi_ckpt_lock_timeout; a checkpoint waits until no "
                         "RMA epoch but fence epochs is open)", me, rw, ck_lock_timeout);
            release();
            return 0;
        }
        release();
        usleep(1000);
    }
    ck_t_in = kumi_time() - t_req;
    const char *e = kumi_sched_engine();
    if (!__atomic_load_n(&ck_ready, __ATOMIC_SEQ_CST))
        snprintf(why, len, "rank %d is not between MPI_Init and MPI_Finalize", me);
    else if (e && strcmp(e, "loop") != 0 && strcmp(e, "thread") != 0)
        snprintf(why, len, "rank %d: the schedule engine '%s' cannot be checkpointed "
                 "(kumi_base_sched_engine=loop or thread can)", me, e);
    else if (!backend(NULL))
        snprintf(why, len, "rank %d: no checkpoint back end (ckpt/image is built on x86_64 Linux only)", me);
    else {
        char w[400];
        if (kumi_req_ckpt_check(w, sizeof w) == 0) return 1;
        snprintf(why, len, "rank %d: %s", me, w);
    }
    release();
    return 0;
}

/* Between a successful prepare and the launcher's GO: another rank, not
 * ready yet, may wait for this one to answer (an RMA epoch it must close
 * first: passive-target lock, accumulate, unlock on a target of another
 * host go through the target's progress; on one host they are loads and
 * stores).  Messages this serves are counted as any (the cut's rounds). */
KUMI_EXPORT void kumi_ckpt_serve(void)
{
    for (int k = 0; k < 100 && kumi_progress(0) > 0; k++) { }
}

/* ---- the cut: counting rounds through the launcher's key exchange ---- */
#define CK_CHUNK 48                        /* counts per key (16 hex digits and a space each) */

static int put_counts(int round, int changed, const uint64_t *s, int n)
{
    char key[64], val[KUMI_KVS_VAL_MAX];
    int rc;
    snprintf(val, sizeof val, "%d %d", round, changed);
    if ((rc = kumi_rpim_put("ckpt.round", val))) return rc;
    for (int c = 0; c * CK_CHUNK < n; c++) {
        size_t l = 0;
        for (int p = c * CK_CHUNK; p < n && p < (c + 1) * CK_CHUNK; p++)
            l += (size_t)snprintf(val + l, sizeof val - l, "%" PRIx64 " ", s[p]);
        snprintf(key, sizeof key, "ckpt.sent.%d", c);
        if ((rc = kumi_rpim_put(key, val))) return rc;
    }
    return MPI_SUCCESS;
}

/* What rank p had sent to me (*sent) and whether it sent anything in the last round. */
static int get_counts(int p, int me, int round, uint64_t *sent, int *changed)
{
    char key[64], val[KUMI_KVS_VAL_MAX];
    int r = -1, ch = 1, rc;
    if ((rc = kumi_rpim_get(p, "ckpt.round", val, sizeof val))) return rc;
    if (sscanf(val, "%d %d", &r, &ch) != 2 || r != round)
        return kumi_error(MPI_ERR_INTERN, "checkpoint: rank %d is at round '%s', not %d", p, val, round);
    snprintf(key, sizeof key, "ckpt.sent.%d", me / CK_CHUNK);
    if ((rc = kumi_rpim_get(p, key, val, sizeof val))) return rc;
    char *q = val;
    for (int k = 0; k <= me % CK_CHUNK; k++) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(q, &end, 16);
        if (end == q || errno) return kumi_error(MPI_ERR_INTERN, "checkpoint: bad counts from rank %d", p);
        *sent = v;
        q = end;
    }
    *changed = ch;
    return MPI_SUCCESS;
}

static int cut(char *why, size_t len)
{
    int n = kumi_world_size(), me = kumi_world_rank(), rc;
    uint64_t *prev = calloc((size_t)n, sizeof *prev), *now = calloc((size_t)n, sizeof *now);
    uint64_t *expect = calloc((size_t)n, sizeof *expect);
    if (!prev || !now || !expect) {
        free(prev); free(now); free(expect);
        snprintf(why, len, "rank %d: out of memory", me);
        return -1;
    }
    double end = kumi_time() + ck_drain_timeout;
    int ok = -1;
    for (int round = 0;; round++) {
        for (int k = 0; k < 1000 && kumi_progress(0) > 0; k++) { }
        memcpy(now, kumi_req_ckpt_sent(), (size_t)n * sizeof *now);
        /* anything sent since the last round, or still inside a transport
         * (an acknowledgement in a ring, a payload arriving): another round */
        int changed = round == 0 || memcmp(now, prev, (size_t)n * sizeof *now) != 0 || !kumi_req_ckpt_idle();
        if ((rc = put_counts(round, changed, now, n)) || (rc = kumi_rpim_fence())) {
            snprintf(why, len, "rank %d: the launcher's key exchange failed (error %d)", me, rc);
            break;
        }
        int any = 0;
        for (int p = 0; p < n && !rc; p++) {
            int ch = 1;
            rc = get_counts(p, me, round, &expect[p], &ch);
            any |= ch;
        }
        if (rc) {
            snprintf(why, len, "rank %d: bad counts in the launcher's key table (error %d)", me, rc);
            break;
        }
        if (!any) {                        /* nobody sent anything since the last round: the cut */
            ok = 0;
            break;
        }
        /* receive everything sent to this rank before the round */
        for (;;) {
            const uint64_t *got = kumi_req_ckpt_recvd();
            int p;
            for (p = 0; p < n && got[p] >= expect[p]; p++) { }
            if (p == n) break;
            if (kumi_time() > end) {
                snprintf(why, len, "rank %d: the channels did not drain within %g s (kumi_ckpt_drain_timeout)",
                         me, ck_drain_timeout);
                goto out;
            }
            if (kumi_progress(0) == 0) sched_yield();
        }
        memcpy(prev, now, (size_t)n * sizeof *now);
    }
out:
    free(prev); free(now); free(expect);
    return ok;
}

KUMI_EXPORT int kumi_ckpt_run(int go, unsigned flags, const char *dir, char *out, size_t outlen)
{
    int me = kumi_world_rank();
    if (!go) {
        snprintf(out, outlen, "rank %d: cancelled (another rank refused)", me);
        release();
        return 0;
    }
    const char *bname = "?";
    const struct kumi_ckpt_ops *be = backend(&bname);
    double t0 = kumi_time();
    EACH_HOOK(h) if (h->quiesce) h->quiesce();
    if (cut(out, outlen) != 0) {
        hooks_resume();
        release();
        return 0;
    }
    double t1 = kumi_time();
    kumi_req_ckpt_release();
    char err[512];
    int w = be->write(dir, 0, err, sizeof err);
    double t2 = kumi_time();
    int ok = 1;
    if (w == KUMI_CKPT_RESTARTED) {
        /* A new process, started by mpiexec --restart through the restart
         * program: its environment is the new launcher's (rank addresses,
         * job id and secret, control port); environ is the saved one. */
        const char *const *env = be->restart_env ? be->restart_env() : NULL;
        int rank = -1, size = -1;
        for (int i = 0; env && env[i]; i++) {
            const char *eq = strchr(env[i], '=');
            if (!eq || strncmp(env[i], "KUMI_", 5) != 0) continue;
            char name[128];
            size_t nl = (size_t)(eq - env[i]);
            if (nl >= sizeof name) continue;
            memcpy(name, env[i], nl);
            name[nl] = 0;
            setenv(name, eq + 1, 1);
            if (!strcmp(name, "KUMI_RANK")) rank = atoi(eq + 1);
            if (!strcmp(name, "KUMI_SIZE")) size = atoi(eq + 1);
        }
        if (rank != me || size != kumi_world_size()) {
            char b[320];
            int l = snprintf(b, sizeof b, "rank %d: restarted from its checkpoint image %s (rank %d of %d) outside "
                             "mpiexec --restart of that checkpoint (KUMI_RANK %d, KUMI_SIZE %d); exiting\n", me,
                             dir, me, kumi_world_size(), rank, size);
            ssize_t wr = write(2, b, l > 0 && (size_t)l < sizeof b ? (size_t)l : 0);
            (void)wr;
            _exit(1);
        }
        ck_count++;
        ck_restarted = 1;
        kumi_host_forget();                /* perhaps another host: its own name and id, not the image's */
        lock_setup();                      /* a new process: membarrier's registration is gone */
        snprintf(out, outlen, "restarted");
        return 2;                          /* the launcher client joins the new job, then kumi_ckpt_resume */
    }
    if (w < 0) {
        snprintf(out, outlen, "rank %d: the image was not written: %s", me, err);
        ok = 0;
    } else {
        ck_count++;
        /* a name of its own per checkpoint (rank, job, count), so that the
         * images the manifest names stay until mpiexec replaces the manifest */
        char from[4200], to[4200];
        const char *jid = getenv("KUMI_JOBID");
        snprintf(from, sizeof from, "%s/image.%ld", dir, (long)getpid());
        snprintf(out, outlen, "image.r%d.j%s.c%u", me, jid && *jid ? jid : "0", ck_count);
        snprintf(to, sizeof to, "%s/%s", dir, out);
        if (rename(from, to) != 0) {
            snprintf(out, outlen, "rank %d: cannot rename %s to %s: %s", me, from, to, strerror(errno));
            unlink(from);
            ok = 0;
        } else
        kumi_log(1, "checkpoint %u: the library's calls out %.3f ms after the request, cut in %.3f s, image "
                 "%s/%s written by ckpt/%s in %.3f s", ck_count, ck_t_in * 1e3, t1 - t0, dir, out, bname, t2 - t1);
    }
    if ((flags & KUMI_LAUNCH_CKPT_STOP) && ok)
        return 1;                          /* the lock stays held: mpiexec ends the job after the manifest */
    return kumi_ckpt_resume(out, outlen) && ok;
}

/* A restarted process's windows (rma/rma_ckpt.c): their host segments
 * shared again, the process ids of their host's ranks new; every rank takes
 * part in the launcher's fences. */
static int pid_of(int world_rank)
{
    char v[32];
    return kumi_rpim_get(world_rank, "ckpt.pid", v, sizeof v) == 0 ? atoi(v) : -1;
}

static int rma_restarted(void)
{
    char v[32], why[400] = "";
    int rc, bad;
    ck_restarted = 0;
    snprintf(v, sizeof v, "%ld", (long)getpid());
    bad = kumi_rma_ckpt_placement(why, sizeof why);
    if (!bad) bad = kumi_rma_ckpt_lead(why, sizeof why);
    EACH_HOOK(h) if (!bad && h->lead) bad = h->lead(why, sizeof why);
    if ((rc = kumi_rpim_put("ckpt.pid", v)) || (rc = kumi_rpim_fence())) return rc;
    if (!bad) bad = kumi_rma_ckpt_join(pid_of, why, sizeof why);
    EACH_HOOK(h) if (!bad && h->join) bad = h->join(why, sizeof why);
    if ((rc = kumi_rpim_fence())) return rc;
    kumi_rma_ckpt_unlink();
    EACH_HOOK(h) if (h->unlink) h->unlink();
    if (bad) return kumi_error(MPI_ERR_OTHER, "restart of rank %d: %s", kumi_world_rank(), why);
    return MPI_SUCCESS;
}

/* After a checkpoint (or in a restarted process, once the launcher client
 * joined the new job): the transports wire up again, the lock is released. */
KUMI_EXPORT int kumi_ckpt_resume(char *out, size_t outlen)
{
    (void)out;
    (void)outlen;
    {
        int rc = kumi_rpim_put("kumi.host", kumi_hostname());   /* a new launcher's table lacks them */
        if (!rc) rc = kumi_rpim_put("kumi.hostid", kumi_host_id());
        if (!rc) rc = kumi_req_ckpt_rewire();
        if (!rc && ck_restarted) rc = rma_restarted();
        if (rc != MPI_SUCCESS) {
            /* the transports are gone: the job cannot go on */
            char m[MPI_MAX_ERROR_STRING];
            int l;
            kumi_mpi_error_string(rc, m, &l);
            kumi_abort_job(1, m);
        }
    }
    hooks_resume();
    release();
    return 1;
}
