/* RMA synchronisation: fence, post-start-complete-wait, lock / unlock
 * (all), flush (local) (all) and MPI_Win_sync.  See rma.c. */
#define _GNU_SOURCE                     /* process_vm_readv / writev */
#include "rma/rma_impl.h"

struct waitcnt { struct kumi_rma *m; uint64_t want; };

struct cntwait { int *ctr; int want; };

struct wordwait { struct kumi_rma *m; struct kumi_win_ctl *c; int type; };

/* ---------------------------------------------------------- synchronisation */

static int local_done(void *arg)
{
    struct kumi_rma *m = arg;
    return m->local == 0;
}

void rma_wait_local(struct kumi_rma *m)
{
    if (m->local == 0) return;          /* direct operations complete at once */
    kumi_req_flush_ctl();
    kumi_progress_wait(local_done, m);
}

static int applied_reached(void *arg)
{
    struct waitcnt *c = arg;
    return c->m->applied_total >= c->want;
}

/* Operations other ranks addressed outside this rank's memory, reported at
 * its fence or Win_wait (as no ack told their origins). */
static int target_errors(struct kumi_rma *m)
{
    m->errors = 0;
    memset(m->rejected, 0, sizeof *m->rejected * (size_t)m->w->size);
    return m->first_err;
}

/* The error a target found in operations of this origin (acks), or one of mine. */
static int take_errors(struct kumi_rma *m, const char *fn)
{
    if (m->ack_errors) {
        m->ack_errors = 0;
        return kumi_error(MPI_ERR_RMA_RANGE, "%s: a target rejected an operation of this rank (displacement "
                          "outside the memory attached to its dynamic window)", fn);
    }
    if (m->fab_errors) {
        m->fab_errors = 0;
        return kumi_error(MPI_ERR_OTHER, "%s: a remote write or read of this rank's Put or Get failed in the "
                          "transport (p2p/ofi; KUMI_VERBOSE=1 says why)", fn);
    }
    return MPI_SUCCESS;
}

int kumi_mpi_win_fence(int assert, struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_fence";
    struct kumi_rma *m = win->rma;
    int rc;
    if (assert & ~(MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED))
        return kumi_error(MPI_ERR_ASSERT, "%s: invalid assert %#x", fn, assert);
    if (m->nstart >= 0 || m->npost >= 0)
        return kumi_error(MPI_ERR_RMA_SYNC, "%s: a rma_post-start-complete-wait epoch is open on this window", fn);
    for (int t = 0; t < win->size; t++)
        if (m->lock[t] || m->lock_all)
            return kumi_error(MPI_ERR_RMA_SYNC, "%s: a passive-target epoch (lock) is open on this window", fn);
    if (!(assert & MPI_MODE_NOPRECEDE)) {
        rma_wait_local(m);
        /* how many operations every origin sent me, in all */
        uint64_t want = 0;
        rc = win->comm->coll.reduce_scatter_block(m->sent, &want, 1, MPI_UINT64_T, MPI_SUM, (MPI_Comm)win->comm);
        if (rc) return rc;
        struct waitcnt c = { m, want };
        kumi_progress_wait(applied_reached, &c);
    }
    /* device memory (rma_accel.c): the epoch's updates are all in; my stores go public before anybody
       leaves the fence */
    if (__builtin_expect(win->ndev, 0) && (rc = kumi_rma_dev_sync(win, fn, assert))) return rc;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    rc = win->comm->coll.barrier((MPI_Comm)win->comm);
    if (rc) return rc;
    m->fence_epoch = !(assert & MPI_MODE_NOSUCCEED);
    if (m->errors) return target_errors(m);
    return MPI_SUCCESS;
}

/* The ranks of group g in the window's communicator (MPI_ERR_GROUP if one is not in it). */
static int group_ranks(struct kumi_win *w, const char *fn, MPI_Group group, int **out, int *n)
{
    struct kumi_group *g = kumi_group_get(group);
    if (!g) return kumi_error(MPI_ERR_GROUP, "%s: argument group is not a valid group", fn);
    int *r = malloc(((size_t)g->size + 1) * sizeof *r);
    if (!r) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    for (int i = 0; i < g->size; i++) {
        int wr = g->world[i], k;
        for (k = 0; k < w->size; k++)
            if (kumi_comm_world_rank(w->comm, k) == wr) break;
        if (k == w->size) {
            free(r);
            return kumi_error(MPI_ERR_GROUP, "%s: process %d of the group is not in the window's group", fn, i);
        }
        r[i] = k;
    }
    *out = r;
    *n = g->size;
    return MPI_SUCCESS;
}

int kumi_mpi_win_post(MPI_Group group, int assert, struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_post";
    struct kumi_rma *m = win->rma;
    if (assert & ~(MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT))
        return kumi_error(MPI_ERR_ASSERT, "%s: invalid assert %#x", fn, assert);
    if (m->npost >= 0) return kumi_error(MPI_ERR_RMA_SYNC, "%s: an exposure epoch is already open", fn);
    int rc;
    if (__builtin_expect(win->ndev, 0) && (rc = kumi_rma_dev_sync(win, fn, assert))) return rc;
    rc = group_ranks(win, fn, group, &m->post_ranks, &m->npost);
    if (rc) return rc;
    for (int i = 0; i < m->npost; i++) {
        struct rma_msg p = { .kind = M_POST, .origin = win->rank };
        if ((rc = rma_send_ctl(m, m->post_ranks[i], &p))) return rc;
    }
    kumi_req_flush_ctl();
    return MPI_SUCCESS;
}

static int posts_here(void *arg)
{
    struct kumi_rma *m = arg;
    for (int i = 0; i < m->nstart; i++)
        if (m->posts[m->start_ranks[i]] <= 0) return 0;
    return 1;
}

int kumi_mpi_win_start(MPI_Group group, int assert, struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_start";
    struct kumi_rma *m = win->rma;
    if (assert & ~MPI_MODE_NOCHECK) return kumi_error(MPI_ERR_ASSERT, "%s: invalid assert %#x", fn, assert);
    if (m->nstart >= 0) return kumi_error(MPI_ERR_RMA_SYNC, "%s: an access epoch is already open", fn);
    if (m->fence_epoch) m->fence_epoch = false;   /* a fence epoch ends where another kind begins */
    int *r, n;
    int rc = group_ranks(win, fn, group, &r, &n);
    if (rc) return rc;
    m->start_ranks = r;
    m->nstart = n;
    if (!(assert & MPI_MODE_NOCHECK)) {
        kumi_progress_wait(posts_here, m);
        for (int i = 0; i < n; i++) m->posts[r[i]]--;
    }
    return MPI_SUCCESS;
}

int kumi_mpi_win_complete(struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_complete";
    struct kumi_rma *m = win->rma;
    if (m->nstart < 0) return kumi_error(MPI_ERR_RMA_SYNC, "%s: no access epoch was started (MPI_Win_start)", fn);
    rma_wait_local(m);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);   /* direct stores before COMPLETE */
    int rc = MPI_SUCCESS;
    for (int i = 0; i < m->nstart && !rc; i++) {
        int t = m->start_ranks[i];
        struct rma_msg c = { .kind = M_COMPLETE, .origin = win->rank, .count = m->sent[t] };
        rc = rma_send_ctl(m, t, &c);
    }
    kumi_req_flush_ctl();
    free(m->start_ranks);
    m->start_ranks = NULL;
    m->nstart = -1;
    return rc;
}

static int exposure_over(void *arg)
{
    struct kumi_rma *m = arg;
    for (int i = 0; i < m->npost; i++) {
        int o = m->post_ranks[i];
        if (m->completes[o] <= 0 || m->applied[o] < m->complete_count[o]) return 0;
    }
    return 1;
}

static int end_exposure(struct kumi_rma *m, const char *fn)
{
    int rc;
    if (__builtin_expect(m->w->ndev, 0) && (rc = kumi_rma_dev_sync(m->w, fn, 0))) return rc;
    for (int i = 0; i < m->npost; i++) m->completes[m->post_ranks[i]]--;
    free(m->post_ranks);
    m->post_ranks = NULL;
    m->npost = -1;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (m->errors) return target_errors(m);
    return MPI_SUCCESS;
}

int kumi_mpi_win_wait(struct kumi_win *win)
{
    struct kumi_rma *m = win->rma;
    if (m->npost < 0)
        return kumi_error(MPI_ERR_RMA_SYNC, "MPI_Win_wait: no exposure epoch was posted (MPI_Win_post)");
    kumi_progress_wait(exposure_over, m);
    return end_exposure(m, "MPI_Win_wait");
}

int kumi_mpi_win_test(struct kumi_win *win, int *flag)
{
    struct kumi_rma *m = win->rma;
    if (!flag) return kumi_error(MPI_ERR_ARG, "MPI_Win_test: argument flag is NULL");
    if (m->npost < 0)
        return kumi_error(MPI_ERR_RMA_SYNC, "MPI_Win_test: no exposure epoch was posted (MPI_Win_post)");
    kumi_progress(0);
    *flag = exposure_over(m);
    return *flag ? end_exposure(m, "MPI_Win_test") : MPI_SUCCESS;
}

static int ctr_reached(void *arg)
{
    struct cntwait *c = arg;
    return *c->ctr >= c->want;
}

static int word_taken(void *arg)
{
    struct wordwait *x = arg;
    return rma_word_try_flagged(x->m, x->c, x->type);
}

static int lock_one(struct kumi_rma *m, int type, int t, int assert)
{
    m->lock[t] = type;
    m->lock_nocheck[t] = (assert & MPI_MODE_NOCHECK) != 0;
    m->lockw[t] = 0;
    if (m->lock_nocheck[t]) return MPI_SUCCESS;
    struct kumi_win_ctl *c = m->w->peers[t].ctl;
    if (kumi_rma_direct && c) {         /* same host: the target's lock word */
        m->lockw[t] = 1;
        if (!rma_word_try(c, type)) {
            struct wordwait x = { m, c, type };
            kumi_progress_wait(word_taken, &x);
        }
        return MPI_SUCCESS;
    }
    struct rma_msg l = { .kind = M_LOCK, .origin = m->w->rank, .arg = type };
    int want = m->granted[t] + 1;
    int rc = rma_send_ctl(m, t, &l);
    if (rc) { m->lock[t] = 0; return rc; }
    struct cntwait g = { &m->granted[t], want };
    kumi_req_flush_ctl();
    kumi_progress_wait(ctr_reached, &g);
    return MPI_SUCCESS;
}

/* Send UNLOCK or FLUSH (count of operations sent) and wait for the answer. */
static int sync_target(struct kumi_rma *m, int t, int kind)
{
    struct rma_msg u = { .kind = (uint32_t)kind, .origin = m->w->rank, .arg = m->lock[t], .count = m->sent[t] };
    int want = m->acks[t] + 1;
    int rc = rma_send_ctl(m, t, &u);
    if (rc) return rc;
    struct cntwait c = { &m->acks[t], want };
    kumi_req_flush_ctl();
    kumi_progress_wait(ctr_reached, &c);
    m->synced[t] = u.count;
    return MPI_SUCCESS;
}

/* Flush: the active messages sent to t since the last answer (direct
 * operations are complete already). */
static int flush_target(struct kumi_rma *m, int t)
{
    return m->sent[t] != m->synced[t] ? sync_target(m, t, M_FLUSH) : MPI_SUCCESS;
}

/* End the passive-target epoch to t (local operations are complete). */
static int unlock_target(struct kumi_rma *m, int t)
{
    int rc;
    if (m->lock_nocheck[t]) {
        rc = flush_target(m, t);
    } else if (m->lockw[t]) {
        rc = flush_target(m, t);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        rma_word_unlock(m, m->w->peers[t].ctl, m->lock[t]);
    } else {
        rc = sync_target(m, t, M_UNLOCK);
    }
    m->lock[t] = 0;
    m->lock_nocheck[t] = 0;
    m->lockw[t] = 0;
    return rc;
}

int kumi_mpi_win_lock(int lock_type, int rank, int assert, struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_lock";
    struct kumi_rma *m = win->rma;
    int rc = rma_check_target(win, fn, rank);
    if (rc) return rc;
    if (lock_type != MPI_LOCK_SHARED && lock_type != MPI_LOCK_EXCLUSIVE)
        return kumi_error(MPI_ERR_LOCKTYPE, "%s: invalid lock_type %d (MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE)", fn,
                          lock_type);
    if (assert & ~MPI_MODE_NOCHECK) return kumi_error(MPI_ERR_ASSERT, "%s: invalid assert %#x", fn, assert);
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    if (win->no_locks)
        return kumi_error(MPI_ERR_RMA_SYNC, "%s: the window was created with the info hint no_locks", fn);
    if (m->lock[rank] || m->lock_all)
        return kumi_error(MPI_ERR_RMA_SYNC, "%s: rank %d is already locked by this process", fn, rank);
    if (m->fence_epoch) m->fence_epoch = false;
    rc = lock_one(m, lock_type, rank, assert);
    if (!rc && rank == win->rank && __builtin_expect(win->ndev, 0)) rc = kumi_rma_dev_sync(win, fn, 0);
    return rc;
}

int kumi_mpi_win_unlock(int rank, struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_unlock";
    struct kumi_rma *m = win->rma;
    int rc = rma_check_target(win, fn, rank);
    if (rc) return rc;
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    if (!m->lock[rank] || m->lock_all)
        return kumi_error(MPI_ERR_RMA_SYNC, "%s: rank %d is not locked by this process (MPI_Win_lock)", fn, rank);
    rma_wait_local(m);
    if (rank == win->rank && __builtin_expect(win->ndev, 0)) rc = kumi_rma_dev_sync(win, fn, 0);  /* before the release */
    int e = unlock_target(m, rank);
    if (!rc) rc = e;
    return rc ? rc : take_errors(m, fn);
}

int kumi_mpi_win_lock_all(int assert, struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_lock_all";
    struct kumi_rma *m = win->rma;
    if (assert & ~MPI_MODE_NOCHECK) return kumi_error(MPI_ERR_ASSERT, "%s: invalid assert %#x", fn, assert);
    if (win->no_locks)
        return kumi_error(MPI_ERR_RMA_SYNC, "%s: the window was created with the info hint no_locks", fn);
    if (m->lock_all) return kumi_error(MPI_ERR_RMA_SYNC, "%s: this process holds a lock_all already", fn);
    for (int t = 0; t < win->size; t++)
        if (m->lock[t]) return kumi_error(MPI_ERR_RMA_SYNC, "%s: rank %d is locked by this process", fn, t);
    if (m->fence_epoch) m->fence_epoch = false;
    for (int t = 0; t < win->size; t++) {
        int rc = lock_one(m, MPI_LOCK_SHARED, t, assert);
        if (rc) return rc;
    }
    m->lock_all = true;
    return __builtin_expect(win->ndev, 0) ? kumi_rma_dev_sync(win, fn, 0) : MPI_SUCCESS;
}

int kumi_mpi_win_unlock_all(struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_unlock_all";
    struct kumi_rma *m = win->rma;
    int rc = MPI_SUCCESS;
    if (!m->lock_all) return kumi_error(MPI_ERR_RMA_SYNC, "%s: no MPI_Win_lock_all epoch is open", fn);
    rma_wait_local(m);
    if (__builtin_expect(win->ndev, 0)) rc = kumi_rma_dev_sync(win, fn, 0);   /* before the release */
    for (int t = 0; t < win->size; t++) {
        int e = unlock_target(m, t);
        if (e && !rc) rc = e;
    }
    m->lock_all = false;
    return rc ? rc : take_errors(m, fn);
}

static int passive_epoch(struct kumi_win *w, const char *fn, int rank)
{
    struct kumi_rma *m = w->rma;
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    if (!m->lock_all && !m->lock[rank])
        return kumi_error(MPI_ERR_RMA_SYNC, "%s: no passive-target epoch to rank %d is open (MPI_Win_lock)", fn,
                          rank);
    return MPI_SUCCESS;
}

int kumi_mpi_win_flush(int rank, struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_flush";
    int rc = rma_check_target(win, fn, rank);
    if (rc || (rc = passive_epoch(win, fn, rank))) return rc;
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    rma_wait_local(win->rma);
    rc = flush_target(win->rma, rank);
    return rc ? rc : take_errors(win->rma, fn);
}

int kumi_mpi_win_flush_all(struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_flush_all";
    struct kumi_rma *m = win->rma;
    int rc = MPI_SUCCESS;
    rma_wait_local(m);
    for (int t = 0; t < win->size; t++)
        if (m->lock_all || m->lock[t]) {
            int e = flush_target(m, t);
            if (e && !rc) rc = e;
        }
    return rc ? rc : take_errors(m, fn);
}

int kumi_mpi_win_flush_local(int rank, struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_flush_local";
    int rc = rma_check_target(win, fn, rank);
    if (rc || (rc = passive_epoch(win, fn, rank))) return rc;
    rma_wait_local(win->rma);
    return MPI_SUCCESS;
}

int kumi_mpi_win_flush_local_all(struct kumi_win *win)
{
    rma_wait_local(win->rma);
    return MPI_SUCCESS;
}

int kumi_mpi_win_sync(struct kumi_win *win)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    kumi_progress(0);                   /* and let operations of others in */
    return __builtin_expect(win->ndev, 0) ? kumi_rma_dev_sync(win, "MPI_Win_sync", 0) : MPI_SUCCESS;
}
