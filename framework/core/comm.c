/* Communicator objects: MPI_COMM_WORLD, MPI_COMM_SELF and the hidden
 * bootstrap communicator, creation of the object once its context id is
 * agreed (kumi_comm_create_obj: coll components chosen), release, the
 * context-id pairs free on this process, names, info, and the accessors
 * coll components use.  Making communicators (dup, split, create, ...) is in
 * mpi/comm_create.c, the context-id agreement and MPI_Comm_idup in
 * mpi/comm_agree.c.
 *
 * Context ids come in pairs (ctx for point-to-point, ctx+1 for
 * collectives); core/ids.h maps them.  Pair 0 is MPI_COMM_WORLD, pair 1
 * MPI_COMM_SELF, pair 2 the hidden whole-job "bootstrap" communicator that
 * carries the agreements of MPI_Comm_create_from_group (no parent
 * communicator; usable before MPI_Init). */
#include "core/core.h"
#include "core/check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTX_PAIRS KUMI_CTX_PAIRS
static uint32_t ctx_free[KUMI_CTX_MASK_WORDS];   /* bit set: pair free */

struct kumi_comm kumi_comm_world_obj, kumi_comm_self_obj;
static struct kumi_comm boot_obj;       /* whole job, identity, ctx KUMI_CTX_BOOT (never a user handle) */

static void intercomm_release(struct kumi_comm *c);

struct kumi_comm *kumi_comm_boot(void)
{
    return &boot_obj;
}

void kumi_ctx_mask(uint32_t *out)
{
    memcpy(out, ctx_free, sizeof ctx_free);
}

void kumi_ctx_take(int32_t ctx)
{
    int pair = ctx / 2;
    ctx_free[pair / 32] &= ~(1u << (pair % 32));
}

void kumi_comm_init_ctx(void)
{
    for (int i = 0; i < KUMI_CTX_MASK_WORDS; i++) ctx_free[i] = 0xffffffffu;
    ctx_free[0] &= ~7u;   /* pair 0: world, pair 1: self, pair 2: bootstrap */
}

void kumi_ctx_free(int32_t ctx)
{
    int pair = ctx / 2;
    if (pair > 2 && pair < CTX_PAIRS) ctx_free[pair / 32] |= 1u << (pair % 32);
}

static void comm_setup(struct kumi_comm *c, int rank, int size, int *world, int32_t ctx,
                       struct kumi_errhandler *errh)
{
    c->magic = KUMI_MAGIC_COMM;
    c->refcount = 1;
    c->rank = rank;
    c->size = size;
    c->world = world;
    c->ctx = ctx;
    c->errh = errh;
    kumi_errh_retain(errh);
}

int kumi_comm_init_predefined(void)
{
    int me = kumi_world_rank(), n = kumi_world_size();
    kumi_comm_init_ctx();
    comm_setup(&kumi_comm_world_obj, me, n, NULL, 0, kumi_errh_fatal);
    kumi_comm_world_obj.handle = MPI_COMM_WORLD;
    kumi_comm_world_obj.predefined = true;
    strcpy(kumi_comm_world_obj.name, "MPI_COMM_WORLD");
    int *w = malloc(sizeof(int));
    if (!w) return kumi_error(MPI_ERR_NO_MEM, "MPI_Init: out of memory");
    w[0] = me;
    comm_setup(&kumi_comm_self_obj, 0, 1, w, 2, kumi_errh_fatal);
    kumi_comm_self_obj.handle = MPI_COMM_SELF;
    kumi_comm_self_obj.predefined = true;
    strcpy(kumi_comm_self_obj.name, "MPI_COMM_SELF");
    memset(&boot_obj, 0, sizeof boot_obj);
    comm_setup(&boot_obj, me, n, NULL, KUMI_CTX_BOOT, kumi_errh_fatal);
    boot_obj.handle = (MPI_Comm)&boot_obj;
    boot_obj.predefined = true;
    strcpy(boot_obj.name, "(bootstrap)");
    kumi_group_init();
    kumi_predef[(uintptr_t)MPI_COMM_WORLD] = &kumi_comm_world_obj;
    kumi_predef[(uintptr_t)MPI_COMM_SELF] = &kumi_comm_self_obj;
    int rc = kumi_coll_select(&kumi_comm_world_obj);
    if (!rc) rc = kumi_coll_select(&kumi_comm_self_obj);
    return rc;
}

static int create_obj(int rank, int size, int *world, int32_t ctx, struct kumi_comm *parent, bool sub,
                      struct kumi_comm **out)
{
    struct kumi_comm *c = calloc(1, sizeof *c);
    if (!c) {
        free(world);
        return kumi_error(MPI_ERR_NO_MEM, "out of memory creating a communicator");
    }
    comm_setup(c, rank, size, world, ctx, parent ? parent->errh : kumi_errh_fatal);
    c->handle = (MPI_Comm)c;
    if (parent && parent->session) {    /* derived from a session's communicator: that session's */
        c->session = parent->session;
        kumi_session_ref(c->session);
    }
    if (sub) {                          /* before the components see it */
        c->sub = true;
        snprintf(c->name, sizeof c->name, "%s", "(sub-communicator)");
    }
    int rc = kumi_coll_select(c);
    if (rc) {
        kumi_comm_release(c);
        return rc;
    }
    *out = c;
    return MPI_SUCCESS;
}

int kumi_comm_create_obj(int rank, int size, int *world, int32_t ctx, struct kumi_comm *parent,
                         struct kumi_comm **out)
{
    return create_obj(rank, size, world, ctx, parent, false, out);
}

int kumi_comm_create_sub_obj(int rank, int size, int *world, int32_t ctx, struct kumi_comm **out)
{
    return create_obj(rank, size, world, ctx, NULL, true, out);
}

int *kumi_comm_world_copy(const struct kumi_comm *c)
{
    int *w = malloc(sizeof(int) * (size_t)c->size);
    if (w)
        for (int i = 0; i < c->size; i++) w[i] = kumi_comm_world_rank(c, i);
    return w;
}

/* The tail of every duplication, once the context id ctx is agreed: the
 * communicator object over comm's group, with hints ni (taken), comm's
 * error handler, a copy of its topology and its attributes (copy
 * callbacks).  On failure ctx and ni are given back. */
int kumi_comm_dup_finish(struct kumi_comm *comm, int32_t ctx, struct kumi_info *ni, MPI_Comm *newcomm,
                      const char *fn)
{
    int *w = NULL;
    if (comm->world || comm->size != kumi_world_size()) {
        if (!(w = kumi_comm_world_copy(comm))) {
            kumi_ctx_free(ctx);
            if (ni) kumi_info_release(ni);
            return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
        }
    }
    struct kumi_comm *c;
    int rc = kumi_comm_create_obj(comm->rank, comm->size, w, ctx, comm, &c);
    if (rc) {
        kumi_ctx_free(ctx);
        if (ni) kumi_info_release(ni);
        return rc;
    }
    c->info = ni;
    rc = kumi_topo_dup(comm, c);
    if (rc) {
        kumi_comm_release(c);
        return rc;
    }
    rc = kumi_attr_comm_dup(comm, c);
    if (rc) {
        kumi_comm_release(c);
        return rc;
    }
    *newcomm = c->handle;
    return MPI_SUCCESS;
}

void kumi_comm_release(struct kumi_comm *c)
{
    if (--c->refcount > 0 || c->predefined) return;
    kumi_coll_release(c);
    if (c->inter) intercomm_release(c);
    kumi_topo_free(c);
    kumi_ctx_free(c->ctx);
    kumi_errh_release(c->errh);
    if (c->info) kumi_info_release(c->info);
    free(c->world);
    kumi_session_unref(c->session);
    c->magic = KUMI_MAGIC_DEAD;
    free(c);
}

void kumi_session_ref(struct kumi_session *s)
{
    if (s) s->refs++;
}

void kumi_session_unref(struct kumi_session *s)
{
    if (s && --s->refs == 0) free(s);
}

/* What an intercommunicator owns besides a communicator's fields. */
static void intercomm_release(struct kumi_comm *c)
{
    free(c->remote_world);
    c->remote_world = NULL;
    c->remote_size = 0;
    if (c->local_comm) kumi_comm_release(c->local_comm);
    c->local_comm = NULL;
}

void kumi_comm_finalize_predefined(void)
{
    kumi_errh_release(kumi_comm_world_obj.errh);
    kumi_errh_release(kumi_comm_self_obj.errh);
    kumi_errh_release(boot_obj.errh);
    free(kumi_comm_self_obj.world);
    kumi_comm_self_obj.world = NULL;
}

/* ---------------------------------------------------- exported helpers */
int kumi_comm_rank(MPI_Comm comm)
{
    struct kumi_comm *c = kumi_comm_get(comm);
    return c ? c->rank : -1;
}

int kumi_comm_size(MPI_Comm comm)
{
    struct kumi_comm *c = kumi_comm_get(comm);
    return c ? c->size : -1;
}

int kumi_comm_job_rank(MPI_Comm comm, int r)
{
    struct kumi_comm *c = kumi_comm_get(comm);
    if (!c || r < 0 || r >= c->size) return -1;
    return kumi_comm_world_rank(c, r);
}

int kumi_comm_is_sub(MPI_Comm comm)
{
    struct kumi_comm *c = kumi_comm_get(comm);
    return c && c->sub;
}

void kumi_comm_sub_free(MPI_Comm *comm)
{
    struct kumi_comm *c = comm ? kumi_comm_get(*comm) : NULL;
    if (!c || !c->sub) return;
    kumi_comm_release(c);
    *comm = MPI_COMM_NULL;
}

/* ------------------------------------------------------- MPI functions */
int kumi_mpi_comm_rank(struct kumi_comm *comm, int *rank)
{
    if (!rank) return kumi_error(MPI_ERR_ARG, "MPI_Comm_rank: argument rank is NULL");
    *rank = comm->rank;
    return MPI_SUCCESS;
}

int kumi_mpi_comm_size(struct kumi_comm *comm, int *size)
{
    if (!size) return kumi_error(MPI_ERR_ARG, "MPI_Comm_size: argument size is NULL");
    *size = comm->size;
    return MPI_SUCCESS;
}

/* info objects (info.c) */
int kumi_comm_info_copy(struct kumi_info *from, struct kumi_info **to, const char *fn)
{
    *to = NULL;
    if (!from) return MPI_SUCCESS;
    if (!(*to = kumi_info_dup(from))) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory copying info", fn);
    return MPI_SUCCESS;
}

int kumi_comm_info_arg(MPI_Info h, struct kumi_info **out, const char *fn)
{
    *out = NULL;
    if (h == MPI_INFO_NULL) return MPI_SUCCESS;
    if (!(*out = kumi_info_get(h)))
        return kumi_error(MPI_ERR_INFO, "%s: argument info (%p) is not a valid info object", fn, (void *)h);
    return MPI_SUCCESS;
}

int kumi_mpi_comm_set_info(struct kumi_comm *comm, MPI_Info info)
{
    struct kumi_info *i, *ni;
    int rc = kumi_comm_info_arg(info, &i, "MPI_Comm_set_info");
    if (!rc) rc = kumi_comm_info_copy(i, &ni, "MPI_Comm_set_info");
    if (rc) return rc;
    if (comm->info) kumi_info_release(comm->info);
    comm->info = ni;
    return MPI_SUCCESS;
}

int kumi_mpi_comm_get_info(struct kumi_comm *comm, MPI_Info *info_used)
{
    if (!info_used) return kumi_error(MPI_ERR_ARG, "MPI_Comm_get_info: argument info_used is NULL");
    struct kumi_info *i = kumi_info_dup(comm->info);
    if (!i) return kumi_error(MPI_ERR_NO_MEM, "MPI_Comm_get_info: out of memory");
    int rc = kumi_info_set_value(i, "mpi_memory_alloc_kinds", kumi_memkinds_world());
    if (rc) {
        kumi_info_release(i);
        return rc;
    }
    *info_used = kumi_info_handle(i);
    return MPI_SUCCESS;
}

int kumi_mpi_comm_set_name(struct kumi_comm *comm, const char *comm_name)
{
    if (!comm_name) return kumi_error(MPI_ERR_ARG, "MPI_Comm_set_name: argument comm_name is NULL");
    snprintf(comm->name, sizeof comm->name, "%s", comm_name);
    return MPI_SUCCESS;
}

int kumi_mpi_comm_get_name(struct kumi_comm *comm, char *comm_name, int *resultlen)
{
    if (!comm_name || !resultlen)
        return kumi_error(MPI_ERR_ARG, "MPI_Comm_get_name: argument %s is NULL", comm_name ? "resultlen" : "comm_name");
    /* MPI 4.1 sec. 7.8: the null handle is predefined and has its name */
    snprintf(comm_name, MPI_MAX_OBJECT_NAME, "%s", comm ? comm->name : "MPI_COMM_NULL");
    *resultlen = (int)strlen(comm_name);
    return MPI_SUCCESS;
}

int kumi_comm_boot_barrier(void)
{
    if (!boot_obj.coll.barrier) {
        int rc = kumi_coll_select(&boot_obj);
        if (rc) return rc;
    }
    return boot_obj.coll.barrier((MPI_Comm)&boot_obj);
}

