/* Window objects (MPI-4.1 chapter 12.2 to 12.2.7): creation in the four
 * flavours, Win_free, attributes, names, info hints, error handlers, shared
 * segments and Win_shared_query, Win_attach / detach, Alloc_mem / Free_mem.
 * Operations and synchronisation are rma.c's (rma.h is the contract).
 *
 * Creation (collective over comm):
 *   1. arguments checked locally (the same bad argument on every rank gives
 *      the same error everywhere, before any communication);
 *   2. a private duplicate of comm (own context ids) for the window's traffic;
 *   3. allgather of {base, size, disp_unit, flags, pid, rkey} over it; the
 *      host of each rank comes from the key-value exchange ("kumi.hostid" of
 *      its job rank);
 *   4. one segment per host (below); Win_allocate / Win_allocate_shared
 *      then a second allgather of the bases (addresses in each owner's
 *      process) and keys; Win_create: a probe of each same-host peer's memory
 *      with process_vm_readv, so that rma.c knows where CMA works;
 *   5. kumi_rma_win_init (rma.c, collective), last.
 * A rank that fails locally after step 2 says so in the flags of the next
 * allgather, so that every rank returns an error instead of waiting.
 *
 * Segments.  The ranks of a window on one host share one segment: a control
 * block (struct kumi_win_ctl: lock words) per local rank, zeroed, then (Win_allocate
 * and Win_allocate_shared only) the local ranks' memory in comm-rank order, each part starting on a 64-byte boundary (a
 * page boundary with info alloc_shared_noncontig=true on any local rank), so
 * MPI_Win_allocate_shared memory is contiguous across ranks up to that
 * padding.  A host with one rank of the window maps anonymous shared memory
 * (no name).  Otherwise the lowest comm rank of the host creates
 * "/kumi.<jobid>.win.<token>" (O_CREAT | O_EXCL, mode 0600), where the token
 * is 32 hex characters of HMAC(job secret, "kumi win <jobid> <its job rank>
 * <context id of the window>") (kumi/jobkey.h): unique among the live
 * windows (the context id is), and unknown to other users, who therefore
 * cannot create it first; a job without a secret uses the job rank and the
 * context id themselves.  The other ranks check with fstat that the segment
 * they open belongs to this user, is private to it and is large enough
 * before they map it; otherwise the creation fails with an error naming
 * the segment.  mpiexec removes /dev/shm/kumi.<jobid>.* however the job
 * ends.  The creator reserves its pages
 * (posix_fallocate: a full /dev/shm is an error here, not SIGBUS later),
 * maps it; after an agreement the others map it; after a second one, when
 * every local rank has it mapped, the creator unlinks it.
 *
 * Transport RMA: a rank with a peer in the window served by a transport with
 * remote memory access (p2p/ofi) registers its window memory with it before
 * the allgather that carries its base (Win_create: the first, Win_allocate:
 * the second), and the record carries the key (REC_FAB); peers that reach it
 * through that transport then Put and Get with it.  Parameter
 * kumi_base_rma_fabric=false: no registration.
 *
 * Dynamic windows: regions attached by this rank are kept in w->regions
 * (non-overlapping; rma.c checks target accesses with kumi_win_region_ok). */
#define _GNU_SOURCE                     /* process_vm_readv / writev */
#include "core/core.h"
#include "core/check.h"
#include "rma/rma.h"
#include "request/request.h"
#include <kumi/rpim.h>
#include <kumi/jobkey.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define PART_ALIGN 64                   /* alignment of each rank's part of a segment */

/* ------------------------------------------------------------ helpers */
static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

static bool info_true(const struct kumi_info *i, const char *key)
{
    const char *v = kumi_info_value(i, key);
    return v && !strcasecmp(v, "true");
}

/* Hints the window code itself uses (others are kept and ignored). */
static void parse_hints(struct kumi_win *w)
{
    w->no_locks = info_true(w->info, "no_locks");
    w->same_disp_unit = info_true(w->info, "same_disp_unit");
}

static int get_info_arg(const char *fn, MPI_Info h, struct kumi_info **out)
{
    *out = NULL;
    if (h == MPI_INFO_NULL) return MPI_SUCCESS;
    if (!(*out = kumi_info_get(h)))
        return kumi_error(MPI_ERR_INFO, "%s: argument info (%p) is not a valid info object", fn, (void *)h);
    return MPI_SUCCESS;
}

int kumi_win_err_handle(struct kumi_win *w, int code)
{
    if (code == MPI_SUCCESS) return code;
    if (!w || !w->errh) return kumi_err_handle(NULL, code);
    return kumi_errh_invoke(w->errh, KUMI_ERRH_OBJ_WIN, w->handle, kumi_err_in(code, kumi_call));
}

bool kumi_win_region_ok(const struct kumi_win *w, uint64_t addr, uint64_t len)
{
    if (len == 0) return true;
    if (addr + len < addr) return false;
    for (int i = 0; i < w->nregions; i++) {
        const struct kumi_win_region *r = &w->regions[i];
        if (addr >= r->base && addr + len <= r->base + r->len) return true;
    }
    return false;
}

/* ----------------------------------------------------------- creation */
/* What each rank contributes to the allgathers of creation. */
struct win_rec {
    uint64_t base, size;
    int64_t disp_unit;
    uint64_t flags;
    int64_t pid;
    uint64_t raddr, rkey;               /* REC_FAB: the registration of base (struct kumi_p2p_rkey) */
    uint64_t probe;                     /* REC_CMA: an address of this process that peers read to test CMA */
};
#define REC_ERR      1u                 /* this rank failed locally */
#define REC_NONCONTIG 2u                /* alloc_shared_noncontig=true */
#define REC_CMA      4u                 /* this rank lets same-host peers use CMA on its memory */
#define REC_FAB      8u                 /* base is registered for remote access (raddr, rkey) */
#define REC_DEVICE  16u                 /* base is device memory (accel): base is its public copy (rma_accel.c) */
#define REC_WORDS ((int)(sizeof(struct win_rec) / sizeof(uint64_t)))

/* May same-host peers read and write this process's memory with
 * process_vm_readv / writev (CMA)?  With Yama ptrace_scope 1 only after
 * PR_SET_PTRACER_ANY (the ranks are siblings, not descendants), which this
 * sets; scope 2 and 3 forbid it.  Parameter kumi_base_rma_direct=false:
 * never (every operation on a Win_create window is an active message). */
static bool cma_allowed(void)
{
    static int verdict = -1;
    if (!kumi_rma_direct) return false;
    if (verdict < 0) {
        int scope = 0;
        FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
        if (f) {
            if (fscanf(f, "%d", &scope) != 1) scope = 0;
            fclose(f);
        }
        uint64_t v = 0, probe = 0x6b756d69;
        struct iovec l = { &v, sizeof v }, r = { &probe, sizeof probe };
        verdict = scope < 2 && process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)sizeof v && v == probe;
        if (verdict && scope == 1) prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    }
    return verdict;
}

/* Can this process read one byte at addr in process pid? */
static bool cma_probe(int pid, uint64_t addr)
{
    char c;
    struct iovec l = { &c, 1 }, r = { (void *)(uintptr_t)addr, 1 };
    return process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0) == 1;
}

/* Register this rank's window memory with the transport (the first with
 * remote memory access) that serves one of its peers in w; the record says
 * so.  A refusal is no error: those peers use active messages. */
static void fab_register(struct kumi_win *w, struct win_rec *me)
{
    if (!kumi_rma_fabric || w->flavor == MPI_WIN_FLAVOR_DYNAMIC || !w->base || w->wsize <= 0 || w->fab_mr) return;
    const struct kumi_p2p_ops *ops = NULL;
    for (int r = 0; r < w->size && !ops; r++) {
        const struct kumi_p2p_ops *o = r == w->rank ? NULL : kumi_req_transport(kumi_comm_world_rank(w->comm, r));
        if (o && (o->caps & KUMI_P2P_CAP_RMA)) ops = o;
    }
    if (!ops) return;
    struct kumi_p2p_rkey k;
    int rc = ops->mem_reg(w->base, (size_t)w->wsize, &w->fab_mr, &k);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        kumi_mpi_error_string(rc, msg, &len);
        kumi_log(2, "window: %s; its peers use active messages", msg);
        w->fab_mr = NULL;
        return;
    }
    kumi_log(2, "window: %zu bytes registered for remote access (transport RMA)", (size_t)w->wsize);
    w->fab_ops = ops;
    me->flags |= REC_FAB;
    me->raddr = k.addr;
    me->rkey = k.key;
}

/* Free everything a (possibly half-made) window holds; not collective. */
static void win_destroy(struct kumi_win *w)
{
    if (!w) return;
    if (w->fab_mr) w->fab_ops->mem_dereg(w->fab_mr);
    if (w->seg) munmap(w->seg, w->seglen);
    free(w->own);
    free(w->peers);
    kumi_rma_devmem_free(w->devm);
    for (int i = 0; i < w->nregions; i++) kumi_rma_devmem_free(w->regions[i].devm);
    free(w->regions);
    if (w->info) kumi_info_release(w->info);
    if (w->errh) kumi_errh_release(w->errh);
    if (w->comm) kumi_comm_release(w->comm);
    w->magic = KUMI_MAGIC_DEAD;
    free(w);
}

/* The window's private communicator: comm's group, a context of its own. */
static int win_comm(struct kumi_comm *comm, struct kumi_comm **out)
{
    int32_t ctx;
    int rc = kumi_ctx_alloc(comm, &ctx);
    if (rc) return rc;
    int *world = malloc(sizeof(int) * (size_t)comm->size);
    if (!world) {
        kumi_ctx_free(ctx);
        return kumi_error(MPI_ERR_NO_MEM, "out of memory creating a window");
    }
    for (int i = 0; i < comm->size; i++) world[i] = kumi_comm_world_rank(comm, i);
    rc = kumi_comm_create_obj(comm->rank, comm->size, world, ctx, NULL, out);
    if (rc) {
        kumi_ctx_free(ctx);
        return rc;
    }
    snprintf((*out)->name, sizeof (*out)->name, "(window)");
    return MPI_SUCCESS;
}

/* Index of each rank of comm among the ranks of its host that are in comm
 * (-1: another host than mine); *nlocal ranks on mine. */
static int host_map(const char *fn, const struct kumi_comm *comm, int *local, int *nlocal)
{
    char me[KUMI_KVS_VAL_MAX], h[KUMI_KVS_VAL_MAX];
    const char *mine = kumi_host_id();
    int n = 0;
    if (comm->size == 1) {
        local[0] = 0;
        *nlocal = 1;
        return MPI_SUCCESS;
    }
    if (kumi_rpim_get(kumi_comm_world_rank(comm, comm->rank), "kumi.hostid", me, sizeof me) == MPI_SUCCESS)
        mine = me;
    if (!mine) return kumi_error(MPI_ERR_INTERN, "%s: the host of this process is unknown", fn);
    for (int r = 0; r < comm->size; r++) {
        int same;
        if (r == comm->rank) same = 1;
        else if (kumi_comm_world_rank(comm, r) >= kumi_world_size()) same = 0;   /* another job's (dpm):
                                                                                     no shared segments */
        else if (!kumi_rpim_in_launch(kumi_comm_world_rank(comm, r))) same = 0;   /* another IMPI client's */
        else {
            int rc = kumi_rpim_get(kumi_comm_world_rank(comm, r), "kumi.hostid", h, sizeof h);
            if (rc) return kumi_error(MPI_ERR_INTERN, "%s: the host of rank %d (job rank %d) is unknown", fn, r,
                                      kumi_comm_world_rank(comm, r));
            same = !strcmp(h, mine);
        }
        local[r] = same ? n++ : -1;
    }
    *nlocal = n;
    return MPI_SUCCESS;
}

static int allgather_recs(struct kumi_win *w, struct win_rec *mine, struct win_rec *all)
{
    return w->comm->coll.allgather(mine, REC_WORDS, MPI_UINT64_T, all, REC_WORDS, MPI_UINT64_T,
                                   (MPI_Comm)w->comm);
}

static int any_error(const struct kumi_win *w, const struct win_rec *all)
{
    for (int r = 0; r < w->size; r++)
        if (all[r].flags & REC_ERR) return r;
    return -1;
}

static int agree(struct kumi_win *w, int err, int *any)
{
    return w->comm->coll.allreduce(&err, any, 1, MPI_INT, MPI_MAX, (MPI_Comm)w->comm);
}

/* Map this host's segment of window w and fill w->seg, w->seglen and, for
 * the ranks of this host, peers[r].ctl; with the ranks' memory in it
 * (Win_allocate[_shared]: their sizes are in all[]) also w->base and
 * peers[r].direct; ctl_only (Win_create, dynamic): control blocks only
 * (dynamic: and a region table per local rank, peers[r].dyn).
 * local: host_map().  Collective over w->comm.  On failure nothing stays
 * mapped. */
static int seg_setup(const char *fn, struct kumi_win *w, const struct win_rec *all, const int *local,
                     int nlocal, bool ctl_only)
{
    size_t pg = page_size(), align = PART_ALIGN;
    int leader = -1, err = 0, any = 0, rc;
    for (int r = 0; r < w->size; r++)
        if (local[r] >= 0) {
            if (leader < 0) leader = r;
            if (all[r].flags & REC_NONCONTIG) align = pg;
        }
    size_t ctlbytes = (size_t)nlocal * sizeof(struct kumi_win_ctl);
    size_t dynbytes = w->flavor == MPI_WIN_FLAVOR_DYNAMIC ? (size_t)nlocal * sizeof(struct kumi_win_dyn) : 0;
    size_t off = round_up(ctlbytes + dynbytes, align);
    size_t *offs = malloc(sizeof(size_t) * (size_t)w->size);
    if (!offs) err = 1;
    for (int r = 0; offs && r < w->size; r++) {
        if (local[r] < 0) continue;
        offs[r] = off;
        uint64_t sz = ctl_only ? 0 : all[r].size;
        if (sz > SIZE_MAX / 2 - off) err = 2;
        else off += round_up((size_t)sz, align);
    }
    size_t len = round_up(off > 0 ? off : 1, pg);
    char name[128], label[128], tok[33];
    const char *jobid = getenv("KUMI_JOBID");
    if (!jobid || !*jobid) jobid = "0";
    snprintf(label, sizeof label, "kumi win %s %d %d", jobid, kumi_comm_world_rank(w->comm, leader),
             (int)w->comm->ctx);
    if (kumi_jobkey_derive_hex(label, tok, 32) == 0)
        snprintf(name, sizeof name, "/kumi.%s.win.%s", jobid, tok);
    else
        snprintf(name, sizeof name, "/kumi.%s.win.%d.%d", jobid, kumi_comm_world_rank(w->comm, leader),
                 (int)w->comm->ctx);
    void *seg = MAP_FAILED;
    int fd = -1, e = 0;
    const char *what = "";

    /* phase 1: the creator (or a rank alone on its host) makes the memory */
    if (!err && nlocal == 1) {
        seg = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (seg == MAP_FAILED) { e = errno; what = "mmap"; err = 3; }
    } else if (!err && w->rank == leader) {
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 && errno == EEXIST) {      /* a leftover of a crashed creation here, if it is ours */
            char path[160];
            struct stat st;
            snprintf(path, sizeof path, "/dev/shm%s", name);
            if (lstat(path, &st) == 0 && st.st_uid != geteuid()) {
                errno = EEXIST;                /* another user's: not touched */
                what = "the name is taken by another user's file";
            } else {
                shm_unlink(name);
                fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
            }
        }
        if (fd < 0) { e = errno; if (!*what) what = "shm_open"; err = 3; }
        else if ((e = posix_fallocate(fd, 0, (off_t)len)) != 0) { what = "reserving /dev/shm space"; err = 3; }
        else if ((seg = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
            e = errno; what = "mmap"; err = 3;
        }
        if (fd >= 0) close(fd);
        if (err && fd >= 0) shm_unlink(name);
    }
    rc = agree(w, err, &any);
    if (rc || any) {
        if (seg != MAP_FAILED) munmap(seg, len);
        if (w->rank == leader && nlocal > 1 && !err) shm_unlink(name);
        free(offs);
        if (rc) return rc;
        if (err == 3)
            return kumi_error(MPI_ERR_NO_MEM, "%s: cannot make %zu bytes of shared memory %s (%s: %s)", fn, len,
                              nlocal > 1 ? name : "(anonymous)", what, strerror(e));
        if (err == 2) return kumi_error(MPI_ERR_SIZE, "%s: the window is too large", fn);
        if (err) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
        return kumi_error(MPI_ERR_NO_MEM, "%s: another rank could not make the window's memory", fn);
    }
    /* phase 2: the others of the host map it; then it can go from the name space */
    if (nlocal > 1 && w->rank != leader) {
        fd = shm_open(name, O_RDWR, 0);
        struct stat st;
        if (fd < 0) { e = errno; what = "shm_open"; err = 3; }
        else if (fstat(fd, &st) != 0) { e = errno; what = "fstat"; err = 3; }
        else if (st.st_uid != geteuid() || (st.st_mode & 077)) {
            e = EPERM; what = "the segment is not this job's (another owner, or open to others)"; err = 3;
        }
        else if ((size_t)st.st_size < len) { e = EINVAL; what = "segment size"; err = 3; }
        else if ((seg = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
            e = errno; what = "mmap"; err = 3;
        }
        if (fd >= 0) close(fd);
    }
    rc = agree(w, err, &any);
    if (nlocal > 1 && w->rank == leader) shm_unlink(name);
    if (rc || any) {
        if (seg != MAP_FAILED) munmap(seg, len);
        free(offs);
        if (rc) return rc;
        if (err)
            return kumi_error(MPI_ERR_NO_MEM, "%s: cannot map the window's shared memory %s (%s: %s)", fn, name, what,
                              strerror(e));
        return kumi_error(MPI_ERR_NO_MEM, "%s: another rank could not map the window's shared memory", fn);
    }
    w->seg = seg;
    w->seglen = len;
    for (int r = 0; r < w->size; r++) {
        if (local[r] < 0) continue;
        if (!ctl_only) w->peers[r].direct = (char *)seg + offs[r];
        w->peers[r].ctl = (struct kumi_win_ctl *)seg + local[r];
        if (dynbytes) w->peers[r].dyn = (struct kumi_win_dyn *)((char *)seg + ctlbytes) + local[r];
    }
    if (!ctl_only) w->base = w->peers[w->rank].direct;
    free(offs);
    return MPI_SUCCESS;
}

/* The four creation calls.  base: Win_create's memory; baseptr: where
 * Win_allocate[_shared] stores the address of this rank's memory. */
int kumi_win_make(const char *fn, int flavor, void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info,
                  struct kumi_comm *comm, void *baseptr, MPI_Win *win)
{
    bool alloc = flavor == MPI_WIN_FLAVOR_ALLOCATE || flavor == MPI_WIN_FLAVOR_SHARED;
    if (!win) return kumi_error(MPI_ERR_ARG, "%s: argument win is NULL", fn);
    if (alloc && !baseptr) return kumi_error(MPI_ERR_ARG, "%s: argument baseptr is NULL", fn);
    if (comm->inter) return kumi_error(MPI_ERR_COMM, "%s: argument comm is an intercommunicator", fn);
    if (size < 0) return kumi_error(MPI_ERR_SIZE, "%s: argument size is negative (%ld)", fn, (long)size);
    if (disp_unit <= 0 || disp_unit > INT_MAX)
        return kumi_error(MPI_ERR_DISP, "%s: argument disp_unit is %ld, not a positive int", fn, (long)disp_unit);
    struct kumi_info *inf;
    int rc = get_info_arg(fn, info, &inf);
    if (rc) return rc;

    int *local = malloc(sizeof(int) * (size_t)comm->size);
    struct win_rec *all = malloc(sizeof *all * (size_t)comm->size);
    struct kumi_win *w = calloc(1, sizeof *w);
    if (!local || !all || !w) {
        free(local); free(all); free(w);
        return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    }
    int nlocal = 0;
    rc = host_map(fn, comm, local, &nlocal);
    if (!rc && flavor == MPI_WIN_FLAVOR_SHARED && nlocal != comm->size) {
        int other = 0;
        while (other < comm->size && local[other] >= 0) other++;
        rc = kumi_error(MPI_ERR_RMA_SHARED, "%s: the ranks of comm are not all on one host (rank %d is on "
                        "another host than rank %d), so their memory cannot be shared", fn, other, comm->rank);
    }
    if (rc) {
        free(local); free(all); free(w);
        return rc;
    }

    w->magic = KUMI_MAGIC_WIN;
    w->handle = (MPI_Win)w;
    w->rank = comm->rank;
    w->size = comm->size;
    w->flavor = flavor;
    w->model = MPI_WIN_UNIFIED;
    w->wsize = flavor == MPI_WIN_FLAVOR_DYNAMIC ? 0 : size;
    w->disp_unit = (int)disp_unit;
    w->base = flavor == MPI_WIN_FLAVOR_CREATE ? base : NULL;
    w->errh = kumi_errh_fatal;
    kumi_errh_retain(w->errh);
    rc = win_comm(comm, &w->comm);
    if (rc) {
        w->comm = NULL;
        free(local); free(all);
        win_destroy(w);
        return rc;
    }
    /* from here every rank takes part in every exchange; local failures travel in the records */
    int err = 0, derr = 0;
    w->info = kumi_info_dup(inf);
    w->peers = calloc((size_t)w->size, sizeof *w->peers);
    if (!w->info || !w->peers) err = 1;
    else parse_hints(w);
    if (__builtin_expect(kumi_accel_on, 0) && !err && flavor == MPI_WIN_FLAVOR_CREATE && size > 0 &&
        kumi_accel_is_device(base)) {   /* the separate model: RMA reaches a public copy in host memory */
        if ((derr = kumi_rma_devmem_new(fn, base, (size_t)size, &w->devm))) err = 1;
        else { w->base = w->devm->pub; w->ndev = 1; }
    }
    struct win_rec me = {
        .base = (uint64_t)(uintptr_t)w->base, .size = (uint64_t)w->wsize, .disp_unit = w->disp_unit,
        .flags = (err ? REC_ERR : 0) | (w->info && info_true(w->info, "alloc_shared_noncontig") ? REC_NONCONTIG : 0) |
                 ((flavor == MPI_WIN_FLAVOR_CREATE || flavor == MPI_WIN_FLAVOR_DYNAMIC) && cma_allowed() ? REC_CMA : 0),
        .pid = (int64_t)getpid(),
        .probe = flavor == MPI_WIN_FLAVOR_DYNAMIC ? (uint64_t)(uintptr_t)&w->magic : (uint64_t)(uintptr_t)w->base };
    if (w->devm) me.flags |= REC_DEVICE;
    if (!err && flavor == MPI_WIN_FLAVOR_CREATE) fab_register(w, &me);
    rc = allgather_recs(w, &me, all);
    if (!rc && any_error(w, all) >= 0)
        rc = derr ? derr : kumi_error(MPI_ERR_NO_MEM, "%s: out of memory (rank %d)", fn, any_error(w, all));
    /* device memory in it (any rank's), or may be attached: MPI_WIN_SEPARATE for every rank */
    for (int r = 0; !rc && r < w->size; r++)
        if (all[r].flags & REC_DEVICE) w->model = MPI_WIN_SEPARATE;
    if (flavor == MPI_WIN_FLAVOR_DYNAMIC && kumi_accel_on) w->model = MPI_WIN_SEPARATE;
    if (!rc) rc = seg_setup(fn, w, all, local, nlocal, !alloc);
    if (!rc && alloc) {
        me.base = (uint64_t)(uintptr_t)w->base;
        fab_register(w, &me);
        rc = allgather_recs(w, &me, all);
    }
    if (!rc) {
        for (int r = 0; r < w->size; r++) {
            struct kumi_win_peer *p = &w->peers[r];
            p->base = flavor == MPI_WIN_FLAVOR_DYNAMIC ? 0 : all[r].base;
            p->size = flavor == MPI_WIN_FLAVOR_DYNAMIC ? UINT64_MAX : all[r].size;
            p->disp_unit = (int)all[r].disp_unit;
            p->local = local[r];
            p->pid = (int)all[r].pid;
            if ((flavor == MPI_WIN_FLAVOR_CREATE || flavor == MPI_WIN_FLAVOR_DYNAMIC) && r != w->rank &&
                local[r] >= 0 && p->size > 0 && (all[r].flags & REC_CMA) && (me.flags & REC_CMA))
                p->cma = cma_probe(p->pid, all[r].probe);
            if ((all[r].flags & REC_FAB) && r != w->rank && kumi_rma_fabric) {
                const struct kumi_p2p_ops *o = kumi_req_transport(kumi_comm_world_rank(w->comm, r));
                p->fab = o && (o->caps & KUMI_P2P_CAP_RMA);
                p->rkey = (struct kumi_p2p_rkey){ all[r].raddr, all[r].rkey };
            }
        }
        rc = kumi_rma_win_init(w);
    }
    free(local);
    free(all);
    if (rc) {
        win_destroy(w);
        return rc;
    }
    if (alloc) *(void **)baseptr = w->base;
    *win = w->handle;
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------- Win_free */
/* No resolved window argument: this call hands its own errors to handlers. */
int kumi_mpi_win_free(MPI_Win *win)
{
    static const char fn[] = "MPI_Win_free";
    if (!win) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument win is NULL", fn));
    struct kumi_win *w = kumi_win_get(*win);
    if (!w) return kumi_err_handle(NULL, kumi_chk_bad_win(fn, "win", *win));
    int rc = kumi_rma_win_fini(w, fn);
    if (rc) return kumi_win_err_handle(w, rc);      /* the window stays */
    /* RMA is over for this window: it goes even if a delete callback fails
     * (that error is still the call's; what it left is not freed) */
    rc = kumi_attr_delete_all(&w->attrs, KUMI_ATTR_WIN, w->handle);
    struct kumi_errhandler *errh = w->errh;
    kumi_errh_retain(errh);
    MPI_Win h = w->handle;
    win_destroy(w);
    *win = MPI_WIN_NULL;
    if (rc) rc = kumi_errh_invoke(errh, KUMI_ERRH_OBJ_WIN, h, kumi_err_in(rc, kumi_call));
    kumi_errh_release(errh);
    return rc;
}

/* ------------------------------------------------------ shared query */
/* MPI 4.1 sec. 12.2.3: any flavour may be queried.  A rank's memory that
 * this process can load and store (its own; a same-host rank's part of a
 * host segment: Win_allocate, Win_allocate_shared) is answered with its
 * address; memory that is not shared with this process (another host's, a
 * Win_create or dynamic window of another process) gives size 0 and a NULL
 * baseptr, not an error.  MPI_PROC_NULL: the first rank with memory of
 * non-zero size that this process can reach that way. */
static void *shared_addr(const struct kumi_win *w, int r)
{
    if (w->peers[r].direct) return w->peers[r].direct;
    if (r == w->rank && w->flavor != MPI_WIN_FLAVOR_DYNAMIC) return w->devm ? w->devm->dev : w->base;
    return NULL;
}

static int shared_query(const char *fn, struct kumi_win *w, int rank, MPI_Aint *size, MPI_Aint *disp_unit,
                        void *baseptr)
{
    if (!size || !disp_unit || !baseptr)
        return kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fn, !size ? "size" : !disp_unit ? "disp_unit" : "baseptr");
    if (rank != MPI_PROC_NULL && (rank < 0 || rank >= w->size))
        return kumi_error(MPI_ERR_RANK, "%s: invalid rank %d in a window of %d processes", fn, rank, w->size);
    if (rank == MPI_PROC_NULL) {
        rank = -1;
        for (int r = 0; r < w->size && rank < 0; r++)
            if (shared_addr(w, r) && w->peers[r].size > 0) rank = r;
        if (rank < 0) {
            *size = 0;
            *disp_unit = w->disp_unit;
            *(void **)baseptr = NULL;
            return MPI_SUCCESS;
        }
    }
    const struct kumi_win_peer *p = &w->peers[rank];
    void *addr = shared_addr(w, rank);
    *size = addr ? (MPI_Aint)p->size : 0;
    *disp_unit = p->disp_unit;
    *(void **)baseptr = addr;
    return MPI_SUCCESS;
}

int kumi_mpi_win_shared_query(struct kumi_win *win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)
{
    MPI_Aint du = 0;
    if (!disp_unit) return kumi_error(MPI_ERR_ARG, "MPI_Win_shared_query: argument disp_unit is NULL");
    int rc = shared_query("MPI_Win_shared_query", win, rank, size, &du, baseptr);
    if (!rc) *disp_unit = (int)du;
    return rc;
}

int kumi_mpi_win_shared_query_c(struct kumi_win *win, int rank, MPI_Aint *size, MPI_Aint *disp_unit,
                                void *baseptr)
{
    return shared_query("MPI_Win_shared_query_c", win, rank, size, disp_unit, baseptr);
}

/* ---------------------------------------------------- attach / detach */
/* Copy this rank's regions to its table in the host's segment (rma.h). */
static void dyn_publish(struct kumi_win *w)
{
    struct kumi_win_dyn *d = w->peers[w->rank].dyn;
    if (!d) return;
    uint32_t seq = atomic_load_explicit(&d->seq, memory_order_relaxed);
    atomic_store_explicit(&d->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    int n = w->nregions <= KUMI_WIN_DYN_MAX ? w->nregions : 0;
    for (int i = 0; i < n; i++) {
        atomic_store_explicit(&d->r[i].base, w->regions[i].base, memory_order_relaxed);
        atomic_store_explicit(&d->r[i].len, w->regions[i].len, memory_order_relaxed);
    }
    /* device memory attached: peers cannot reach its public copy at those addresses, so the table
       says "too many to list" and they use active messages (rma_accel.c) */
    atomic_store_explicit(&d->n, w->ndev ? KUMI_WIN_DYN_MAX + 1u : (uint32_t)w->nregions, memory_order_relaxed);
    atomic_store_explicit(&d->seq, seq + 2, memory_order_release);
}

int kumi_mpi_win_attach(struct kumi_win *win, void *base, MPI_Aint size)
{
    static const char fn[] = "MPI_Win_attach";
    struct kumi_win *w = win;
    if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return kumi_error(MPI_ERR_RMA_FLAVOR, "%s: the window was not made by MPI_Win_create_dynamic", fn);
    if (size < 0) return kumi_error(MPI_ERR_SIZE, "%s: argument size is negative (%ld)", fn, (long)size);
    if (!base && size > 0) return kumi_error(MPI_ERR_ARG, "%s: argument base is NULL", fn);
    uint64_t b = (uint64_t)(uintptr_t)base, l = (uint64_t)size;
    if (b + l < b) return kumi_error(MPI_ERR_RMA_ATTACH, "%s: base + size wraps around the address space", fn);
    for (int i = 0; i < w->nregions; i++) {
        const struct kumi_win_region *r = &w->regions[i];
        if (r->base == b || (l > 0 && r->len > 0 && b < r->base + r->len && r->base < b + l))
            return kumi_error(MPI_ERR_RMA_ATTACH, "%s: memory [%p, +%ld) overlaps a region already attached at "
                              "%p (%llu bytes)", fn, base, (long)size, (void *)(uintptr_t)r->base,
                              (unsigned long long)r->len);
    }
    if (w->nregions == w->cregions) {
        int c = w->cregions ? 2 * w->cregions : 8;
        struct kumi_win_region *t = realloc(w->regions, sizeof *t * (size_t)c);
        if (!t) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
        w->regions = t;
        w->cregions = c;
    }
    struct kumi_win_devmem *dm = NULL;  /* device memory: the separate model (rma_accel.c) */
    if (__builtin_expect(kumi_accel_on, 0) && size > 0 && kumi_accel_is_device(base)) {
        int rc = kumi_rma_devmem_new(fn, base, (size_t)size, &dm);
        if (rc) return rc;
        w->ndev++;
    }
    w->regions[w->nregions++] = (struct kumi_win_region){ b, l, dm };
    dyn_publish(w);
    return MPI_SUCCESS;
}

int kumi_mpi_win_detach(struct kumi_win *win, const void *base)
{
    static const char fn[] = "MPI_Win_detach";
    struct kumi_win *w = win;
    if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return kumi_error(MPI_ERR_RMA_FLAVOR, "%s: the window was not made by MPI_Win_create_dynamic", fn);
    uint64_t b = (uint64_t)(uintptr_t)base;
    for (int i = 0; i < w->nregions; i++)
        if (w->regions[i].base == b) {
            struct kumi_win_devmem *dm = w->regions[i].devm;
            if (dm) {                   /* the memory leaves the window: RMA updates go to the device first */
                int rc = kumi_rma_devmem_sync(dm, fn, false);
                if (rc) return rc;
                kumi_rma_devmem_free(dm);
                w->ndev--;
            }
            memmove(&w->regions[i], &w->regions[i + 1], sizeof *w->regions * (size_t)(w->nregions - i - 1));
            w->nregions--;
            dyn_publish(w);
            return MPI_SUCCESS;
        }
    return kumi_error(MPI_ERR_BASE, "%s: argument base (%p) is not the base of a region attached to the window "
                      "by this process", fn, base);
}

/* --------------------------------------------------------- group, name */
int kumi_mpi_win_get_group(struct kumi_win *win, MPI_Group *group)
{
    if (!group) return kumi_error(MPI_ERR_ARG, "MPI_Win_get_group: argument group is NULL");
    struct kumi_group *g = kumi_group_of_comm(win->comm);
    if (!g) return kumi_error(MPI_ERR_NO_MEM, "MPI_Win_get_group: out of memory");
    *group = g->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_win_set_name(struct kumi_win *win, const char *win_name)
{
    if (!win_name) return kumi_error(MPI_ERR_ARG, "MPI_Win_set_name: argument win_name is NULL");
    snprintf(win->name, sizeof win->name, "%s", win_name);
    return MPI_SUCCESS;
}

int kumi_mpi_win_get_name(struct kumi_win *win, char *win_name, int *resultlen)
{
    if (!win_name || !resultlen)
        return kumi_error(MPI_ERR_ARG, "MPI_Win_get_name: argument %s is NULL", win_name ? "resultlen" : "win_name");
    /* MPI 4.1 sec. 7.8: the null handle is predefined and has its name */
    snprintf(win_name, MPI_MAX_OBJECT_NAME, "%s", win ? win->name : "MPI_WIN_NULL");
    *resultlen = (int)strlen(win_name);
    return MPI_SUCCESS;
}

/* ----------------------------------------------------------------- info */
/* The hints in force are updated with info's (keys info does not name keep their values). */
int kumi_mpi_win_set_info(struct kumi_win *win, MPI_Info info)
{
    static const char fn[] = "MPI_Win_set_info";
    struct kumi_info *in;
    int rc = get_info_arg(fn, info, &in);
    if (rc) return rc;
    if (!in) return MPI_SUCCESS;
    struct kumi_info *ni = kumi_info_dup(win->info);
    if (!ni) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    int n = 0;
    kumi_mpi_info_get_nkeys(info, &n);
    for (int k = 0; k < n && !rc; k++) {
        char key[MPI_MAX_INFO_KEY + 1];
        kumi_mpi_info_get_nthkey(info, k, key);
        const char *v = kumi_info_value(in, key);
        if (v) rc = kumi_info_set_value(ni, key, v);
    }
    if (rc) {
        kumi_info_release(ni);
        return rc;
    }
    kumi_info_release(win->info);
    win->info = ni;
    parse_hints(win);
    return MPI_SUCCESS;
}

int kumi_mpi_win_get_info(struct kumi_win *win, MPI_Info *info_used)
{
    if (!info_used) return kumi_error(MPI_ERR_ARG, "MPI_Win_get_info: argument info_used is NULL");
    struct kumi_info *i = kumi_info_dup(win->info);
    if (!i) return kumi_error(MPI_ERR_NO_MEM, "MPI_Win_get_info: out of memory");
    int rc = kumi_info_set_value(i, "mpi_memory_alloc_kinds", kumi_memkinds_world());
    if (rc) {
        kumi_info_release(i);
        return rc;
    }
    *info_used = kumi_info_handle(i);
    return MPI_SUCCESS;
}

/* -------------------------------------------------------- error handlers */
/* No handle argument: errors go through kumi_err_handle(NULL, ...). */
int kumi_mpi_win_create_errhandler(MPI_Win_errhandler_function *win_errhandler_fn, MPI_Errhandler *errhandler)
{
    if (!win_errhandler_fn || !errhandler)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Win_create_errhandler: argument %s is NULL",
                                                errhandler ? "win_errhandler_fn" : "errhandler"));
    struct kumi_errhandler *e = NULL;
    int rc = kumi_errh_create(KUMI_ERRH_OBJ_WIN, (MPI_Comm_errhandler_function *)win_errhandler_fn, &e);
    if (rc) return kumi_err_handle(NULL, rc);
    *errhandler = e->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_win_set_errhandler(struct kumi_win *win, struct kumi_errhandler *errhandler)
{
    if (!kumi_errh_fits(errhandler, KUMI_ERRH_OBJ_WIN))
        return kumi_error(MPI_ERR_ARG, "MPI_Win_set_errhandler: argument errhandler was not created for windows");
    kumi_errh_retain(errhandler);
    kumi_errh_release(win->errh);
    win->errh = errhandler;
    return MPI_SUCCESS;
}

int kumi_mpi_win_get_errhandler(struct kumi_win *win, MPI_Errhandler *errhandler)
{
    if (!errhandler) return kumi_error(MPI_ERR_ARG, "MPI_Win_get_errhandler: argument errhandler is NULL");
    kumi_errh_retain(win->errh);
    *errhandler = win->errh->handle;
    return MPI_SUCCESS;
}

/* Returns MPI_SUCCESS when the handler returns (MPI 4.1 sec. 9.3.5). */
int kumi_mpi_win_call_errhandler(struct kumi_win *win, int errorcode)
{
    kumi_errh_invoke(win->errh, KUMI_ERRH_OBJ_WIN, win->handle, errorcode);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ attributes */
int kumi_mpi_win_create_keyval(MPI_Win_copy_attr_function *win_copy_attr_fn,
                               MPI_Win_delete_attr_function *win_delete_attr_fn, int *win_keyval, void *extra_state)
{
    return kumi_err_handle(NULL, kumi_attr_keyval_create("MPI_Win_create_keyval", KUMI_ATTR_WIN,
                                                         (kumi_attr_fn)win_copy_attr_fn,
                                                         (kumi_attr_fn)win_delete_attr_fn, extra_state, win_keyval));
}

int kumi_mpi_win_free_keyval(int *win_keyval)
{
    return kumi_err_handle(NULL, kumi_attr_keyval_free("MPI_Win_free_keyval", KUMI_ATTR_WIN, win_keyval));
}

int kumi_mpi_win_set_attr(struct kumi_win *win, int win_keyval, void *attribute_val)
{
    return kumi_attr_set("MPI_Win_set_attr", &win->attrs, KUMI_ATTR_WIN, win->handle, win_keyval, attribute_val);
}

/* The predefined keyvals: MPI_WIN_BASE gives the base address itself, the
 * others a pointer to the value held in the window. */
int kumi_mpi_win_get_attr(struct kumi_win *win, int win_keyval, void *attribute_val, int *flag)
{
    void *v = NULL;
    switch (win_keyval) {
    case MPI_WIN_BASE: v = win->devm ? win->devm->dev : win->base; break;
    case MPI_WIN_SIZE: v = &win->wsize; break;
    case MPI_WIN_DISP_UNIT: v = &win->disp_unit; break;
    case MPI_WIN_CREATE_FLAVOR: v = &win->flavor; break;
    case MPI_WIN_MODEL: v = &win->model; break;
    default:
        return kumi_attr_get("MPI_Win_get_attr", win->attrs, KUMI_ATTR_WIN, win_keyval, attribute_val, flag);
    }
    if (!attribute_val || !flag)
        return kumi_error(MPI_ERR_ARG, "MPI_Win_get_attr: argument %s is NULL", flag ? "attribute_val" : "flag");
    *(void **)attribute_val = v;
    *flag = 1;
    return MPI_SUCCESS;
}

int kumi_mpi_win_delete_attr(struct kumi_win *win, int win_keyval)
{
    return kumi_attr_delete("MPI_Win_delete_attr", &win->attrs, KUMI_ATTR_WIN, win->handle, win_keyval);
}

/* ------------------------------------------------- Alloc_mem / Free_mem */
/* Blocks given out by MPI_Alloc_mem, so that MPI_Free_mem can refuse others. */
#define MEM_BUCKETS 256
struct mem_block { struct mem_block *next; void *p; };
static struct mem_block *mem_tab[MEM_BUCKETS];

static unsigned mem_hash(const void *p)
{
    uintptr_t v = (uintptr_t)p >> 4;
    return (unsigned)((v ^ (v >> 8) ^ (v >> 16)) % MEM_BUCKETS);
}

int kumi_mpi_alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
    static const char fn[] = "MPI_Alloc_mem";
    struct kumi_info *inf;
    int rc = get_info_arg(fn, info, &inf);
    if (rc) return kumi_err_handle(NULL, rc);
    if (!baseptr) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument baseptr is NULL", fn));
    if (size < 0)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_SIZE, "%s: argument size is negative (%ld)", fn, (long)size));
    size_t align = PART_ALIGN;
    const char *a = kumi_info_value(inf, "mpi_minimum_memory_alignment");
    if (a) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(a, &end, 0);
        /* a power of two; anything else is a hint we cannot follow */
        if (!errno && end != a && !*end && v && !(v & (v - 1)) && v <= ((size_t)1 << 30) && v > align)
            align = (size_t)v;
    }
    struct mem_block *b = malloc(sizeof *b);
    void *p = NULL;
    if (!b || posix_memalign(&p, align, size ? (size_t)size : 1) != 0) {
        free(b);
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_NO_MEM, "%s: cannot allocate %ld bytes", fn, (long)size));
    }
    b->p = p;
    unsigned h = mem_hash(p);
    b->next = mem_tab[h];
    mem_tab[h] = b;
    *(void **)baseptr = p;
    return MPI_SUCCESS;
}

int kumi_mpi_free_mem(void *base)
{
    if (!base) return MPI_SUCCESS;
    for (struct mem_block **pp = &mem_tab[mem_hash(base)]; *pp; pp = &(*pp)->next)
        if ((*pp)->p == base) {
            struct mem_block *b = *pp;
            *pp = b->next;
            free(b->p);
            free(b);
            return MPI_SUCCESS;
        }
    return kumi_err_handle(NULL, kumi_error(MPI_ERR_BASE, "MPI_Free_mem: argument base (%p) was not returned by "
                                            "MPI_Alloc_mem (or was freed already)", base));
}
