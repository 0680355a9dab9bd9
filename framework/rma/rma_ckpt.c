/* Checkpoints of jobs with RMA windows (issue 20; the coordinator is
 * mpi/ckpt.c).
 *
 * Epochs are completed first: a rank takes its checkpoint only while no
 * window of its has a passive-target epoch (lock, lock_all),
 * post-start-complete-wait epoch or waiting lock request open
 * (kumi_rma_ckpt_busy; the coordinator retries until then, up to
 * kumi_ckpt_lock_timeout).  Fence epochs need nothing: the operations of one
 * in progress are messages that the cut delivers and the target applies
 * (direct ones are complete at once), and the counts fence compares are in
 * memory.  Windows whose memory is registered with a transport (p2p/ofi)
 * keep their registrations' handles and keys through its ckpt_release and
 * next init (p2p contract 1.7); one without those entries is refused.
 * Windows with device memory (accel; rma_accel.c) are refused: an image
 * holds the public copy in host memory, not the device memory that is the
 * private copy, nor the device allocation and context behind the window's
 * base address.
 *
 * Another placement at restart (ranks on other hosts, or another number of
 * ranks per host): ranks of a window on different hosts before the
 * checkpoint reach each other with messages, also when they share a host
 * now, so hosts may be merged; but ranks that shared a host's segment (or
 * reached each other's memory with CMA) must share a host again: their
 * loads and stores, lock words and process ids assume it.  mpiexec
 * --restart refuses a placement that separates ranks of one host
 * (tools/mpiexec/ckpt.c: single-copy messages kept across the checkpoint
 * need it too); should the ranks find themselves apart all the same (host
 * names that do not tell hosts apart), kumi_rma_ckpt_placement refuses,
 * naming the window, the ranks and their hosts, before anything is made.
 * Converting such peers to messages would change the window's host-local
 * state (control blocks, region tables, MPI_Win_shared_query's pointers)
 * under the program.
 *
 * Checkpoint-and-continue keeps everything: the host segments stay mapped,
 * the processes are the same.  A restarted process (mpiexec --restart) has
 * its windows' host segments back as private copies at their addresses (the
 * image holds their contents), so a window of several ranks on one host no
 * longer shares them, and the process ids that CMA uses are new.  So after
 * the transports' wire-up, in three steps separated by the launcher's fence:
 *   1. the leader of each host (the window's lowest rank there) makes a new
 *      shared-memory file (named after the new job), writes its copy of the
 *      segment into it and maps it over the copy, at the same address;
 *   2. the others map it over their copies, writing back what is theirs
 *      (their control block, region table, window memory: what they wrote
 *      last), and take the new process ids of their host's ranks;
 *   3. the leaders unlink the names. */
#define _GNU_SOURCE
#include "rma/rma_impl.h"
#include <kumi/rpim.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>

static struct kumi_rma *wins;           /* every window's state (ck_next) */

void rma_ckpt_link(struct kumi_rma *m)
{
    m->ck_next = wins;
    wins = m;
}

void rma_ckpt_unlink(struct kumi_rma *m)
{
    for (struct kumi_rma **p = &wins; *p; p = &(*p)->ck_next)
        if (*p == m) {
            *p = m->ck_next;
            return;
        }
}

static const char *wname(const struct kumi_win *w)
{
    return w->name[0] ? w->name : "(no name)";
}

/* Device memory in a window (rma_accel.c): what it is, or NULL.  Refused:
 * the image of a process holds its host memory (the public copy) but not
 * the private copy on the device, nor the device allocation and the
 * context behind the window's base address. */
static const char *devmem_of(const struct kumi_win *w)
{
    if (w->devm) return "its memory (MPI_Win_create on a device buffer)";
    for (int i = 0; i < w->nregions; i++)
        if (w->regions[i].devm) return "memory attached to it (MPI_Win_attach of a device buffer)";
    return NULL;
}

int kumi_rma_ckpt_busy(char *why, size_t len)
{
    for (struct kumi_rma *m = wins; m; m = m->ck_next) {
        struct kumi_win *w = m->w;
        const char *e = NULL;
        int t = -1;
        if (w->fab_ops && !w->fab_ops->ckpt_release) {
            snprintf(why, len, "window %s: its memory is registered with the transport %s for remote access, "
                     "which a checkpoint cannot hold", wname(w), "p2p/ofi");
            return -1;
        }
        if ((e = devmem_of(w))) {
            snprintf(why, len, "window %s: %s is device memory (accel/%s), which a checkpoint image cannot hold "
                     "(it keeps host memory only: the device memory and its CUDA context would be gone at "
                     "restart)", wname(w), e, kumi_accel_name() ? kumi_accel_name() : "?");
            return -1;
        }
        if (m->lock_all) e = "a passive-target epoch (MPI_Win_lock_all)";
        else if (m->nstart >= 0) e = "an access epoch (MPI_Win_start)";
        else if (m->npost >= 0) e = "an exposure epoch (MPI_Win_post)";
        else if (m->lockq || m->ackq) e = "lock requests of other ranks not answered yet";
        else
            for (t = 0; t < w->size && !e; t++)
                if (m->lock[t]) e = "a passive-target epoch (MPI_Win_lock)";
        if (e) {
            snprintf(why, len, "window %s: %s is open", wname(w), e);
            return 1;
        }
    }
    return 0;
}

static int host_ranks(const struct kumi_win *w)
{
    int n = 0;
    for (int r = 0; r < w->size; r++) n += w->peers[r].local >= 0;
    return n;
}

/* a segment shared by several ranks of this host: its new name, or false */
static bool shared_seg(const struct kumi_win *w, char *name, size_t len)
{
    if (!w->seg || host_ranks(w) < 2) return false;
    const char *jobid = getenv("KUMI_JOBID");
    int leader = w->rma->local2rank[0];
    snprintf(name, len, "/kumi.%s.win.r%d.%d", jobid && *jobid ? jobid : "0", kumi_comm_world_rank(w->comm, leader),
             (int)w->comm->ctx);
    return true;
}

static bool am_leader(const struct kumi_win *w)
{
    return w->rma->local2rank[0] == w->rank;
}

int kumi_rma_ckpt_placement(char *why, size_t len)
{
    for (struct kumi_rma *m = wins; m; m = m->ck_next) {
        struct kumi_win *w = m->w;
        for (int r = 0; r < w->size; r++) {
            int wr = kumi_comm_world_rank(w->comm, r);
            if (r == w->rank || w->peers[r].local < 0 || kumi_same_host(wr)) continue;
            char h[KUMI_KVS_VAL_MAX] = "?";
            if (kumi_rpim_get(wr, "kumi.host", h, sizeof h) != MPI_SUCCESS) snprintf(h, sizeof h, "?");
            snprintf(why, len, "window %s: world ranks %d and %d shared a host when it was checkpointed (%s) and "
                     "are on different hosts now (%s, %s); restart the job with the ranks that shared a host "
                     "together again (-host / --hostfile: the manifest's ranks per host)", wname(w),
                     kumi_world_rank(), wr, w->seg ? "its memory in the host's shared segment"
                     : "reached with CMA by process id", kumi_hostname(), h);
            return -1;
        }
    }
    return 0;
}

int kumi_rma_ckpt_lead(char *why, size_t len)
{
    char name[160];
    for (struct kumi_rma *m = wins; m; m = m->ck_next) {
        struct kumi_win *w = m->w;
        if (!shared_seg(w, name, sizeof name) || !am_leader(w)) continue;
        int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 && errno == EEXIST) {          /* a leftover of this job's own failed restart */
            shm_unlink(name);
            fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        }
        const char *what = NULL;
        size_t done = 0;
        if (fd < 0) what = "shm_open";
        else if (ftruncate(fd, (off_t)w->seglen) != 0) what = "ftruncate";
        while (!what && done < w->seglen) {
            ssize_t k = pwrite(fd, (char *)w->seg + done, w->seglen - done, (off_t)done);
            if (k <= 0) what = "write";
            else done += (size_t)k;
        }
        if (!what && mmap(w->seg, w->seglen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
            what = "mmap";
        int e = errno;
        if (fd >= 0) close(fd);
        if (what) {
            if (fd >= 0) shm_unlink(name);
            snprintf(why, len, "window %s: cannot make its host segment %s again (%s: %s)", wname(w), name, what,
                     strerror(e));
            return -1;
        }
    }
    return 0;
}

/* what this rank owns in a host segment: its control block, its region
 * table (dynamic windows), its memory (Win_allocate[_shared]) */
struct part { void *p; size_t n; };
static int own_parts(const struct kumi_win *w, struct part *pt)
{
    int k = 0, me = w->peers[w->rank].local, nl = host_ranks(w);
    pt[k++] = (struct part){ (struct kumi_win_ctl *)w->seg + me, sizeof(struct kumi_win_ctl) };
    if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC)
        pt[k++] = (struct part){ (struct kumi_win_dyn *)((struct kumi_win_ctl *)w->seg + nl) + me,
                                 sizeof(struct kumi_win_dyn) };
    if (w->peers[w->rank].direct && w->wsize > 0) pt[k++] = (struct part){ w->peers[w->rank].direct, (size_t)w->wsize };
    return k;
}

int kumi_rma_ckpt_join(int (*pid_of)(int world_rank), char *why, size_t len)
{
    char name[160];
    for (struct kumi_rma *m = wins; m; m = m->ck_next) {
        struct kumi_win *w = m->w;
        for (int r = 0; r < w->size; r++)
            if (w->peers[r].local >= 0 && r != w->rank) {
                int pid = pid_of(kumi_comm_world_rank(w->comm, r));
                if (pid <= 0) {
                    snprintf(why, len, "window %s: no process id of rank %d of the restarted job", wname(w),
                             kumi_comm_world_rank(w->comm, r));
                    return -1;
                }
                w->peers[r].pid = pid;
            }
        if (!shared_seg(w, name, sizeof name) || am_leader(w)) continue;
        struct part pt[3];
        int np = own_parts(w, pt);
        size_t tot = 0;
        for (int i = 0; i < np; i++) tot += pt[i].n;
        char *save = malloc(tot ? tot : 1), *q = save;
        const char *what = NULL;
        struct stat st;
        int fd = -1, e = 0;
        if (!save) what = "out of memory";
        for (int i = 0; save && i < np; q += pt[i].n, i++) memcpy(q, pt[i].p, pt[i].n);
        if (!what && (fd = shm_open(name, O_RDWR, 0)) < 0) what = "shm_open";
        else if (!what && fstat(fd, &st) != 0) what = "fstat";
        else if (!what && (st.st_uid != geteuid() || (st.st_mode & 077) || (size_t)st.st_size < w->seglen)) {
            what = "the segment is not this job's (owner, mode or size)";
            errno = EPERM;
        } else if (!what &&
                   mmap(w->seg, w->seglen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
            what = "mmap";
        e = errno;
        if (fd >= 0) close(fd);
        if (!what)
            for (int i = 0, o = 0; i < np; o += (int)pt[i].n, i++) memcpy(pt[i].p, save + o, pt[i].n);
        free(save);
        if (what) {
            snprintf(why, len, "window %s: cannot map its host segment %s again (%s: %s)", wname(w), name, what,
                     strerror(e));
            return -1;
        }
    }
    return 0;
}

void kumi_rma_ckpt_unlink(void)
{
    char name[160];
    for (struct kumi_rma *m = wins; m; m = m->ck_next)
        if (shared_seg(m->w, name, sizeof name) && am_leader(m->w)) shm_unlink(name);
}
