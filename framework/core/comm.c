/* Communicators: MPI_COMM_WORLD, MPI_COMM_SELF, dup, split, free, compare,
 * names, and context-id agreement.
 *
 * Context ids come in pairs (ctx for point-to-point, ctx+1 for
 * collectives).  A new communicator's id is agreed over its parent: every
 * rank contributes its mask of free ids, an allreduce with MPI_BAND keeps the
 * ids free everywhere, and the lowest one is taken.  Disjoint communicators
 * created by one split share an id, which is safe: a process belongs to only
 * one of them. */
#include "core/core.h"
#include "core/check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTX_PAIRS 4096
#define MASK_WORDS (CTX_PAIRS / 32)
static uint32_t ctx_free[MASK_WORDS];   /* bit set: pair free */

struct kumi_comm kumi_comm_world_obj, kumi_comm_self_obj;

void kumi_comm_init_ctx(void)
{
    for (int i = 0; i < MASK_WORDS; i++) ctx_free[i] = 0xffffffffu;
    ctx_free[0] &= ~3u;   /* pair 0: world, pair 1: self */
}

int kumi_ctx_alloc(struct kumi_comm *parent, int32_t *ctx)
{
    uint32_t mask[MASK_WORDS];
    int rc = parent->coll.allreduce(ctx_free, mask, MASK_WORDS, MPI_UINT32_T, MPI_BAND,
                                    (MPI_Comm)parent);
    if (rc) return rc;
    for (int w = 0; w < MASK_WORDS; w++) {
        if (!mask[w]) continue;
        int b = __builtin_ctz(mask[w]);
        ctx_free[w] &= ~(1u << b);
        *ctx = (int32_t)(2 * (w * 32 + b));
        return MPI_SUCCESS;
    }
    return kumi_error(MPI_ERR_INTERN, "no free context id left (%d communicators exist)", CTX_PAIRS);
}

void kumi_ctx_free(int32_t ctx)
{
    int pair = ctx / 2;
    if (pair > 1 && pair < CTX_PAIRS) ctx_free[pair / 32] |= 1u << (pair % 32);
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
    kumi_predef[(uintptr_t)MPI_COMM_WORLD] = &kumi_comm_world_obj;
    kumi_predef[(uintptr_t)MPI_COMM_SELF] = &kumi_comm_self_obj;
    int rc = kumi_coll_select(&kumi_comm_world_obj);
    if (!rc) rc = kumi_coll_select(&kumi_comm_self_obj);
    return rc;
}

int kumi_comm_create_obj(int rank, int size, int *world, int32_t ctx, struct kumi_comm *parent,
                         struct kumi_comm **out)
{
    struct kumi_comm *c = calloc(1, sizeof *c);
    if (!c) {
        free(world);
        return kumi_error(MPI_ERR_NO_MEM, "out of memory creating a communicator");
    }
    comm_setup(c, rank, size, world, ctx, parent ? parent->errh : kumi_errh_fatal);
    c->handle = (MPI_Comm)c;
    int rc = kumi_coll_select(c);
    if (rc) {
        kumi_comm_release(c);
        return rc;
    }
    *out = c;
    return MPI_SUCCESS;
}

void kumi_comm_release(struct kumi_comm *c)
{
    if (--c->refcount > 0 || c->predefined) return;
    kumi_ctx_free(c->ctx);
    kumi_errh_release(c->errh);
    free(c->world);
    c->magic = KUMI_MAGIC_DEAD;
    free(c);
}

void kumi_comm_finalize_predefined(void)
{
    kumi_errh_release(kumi_comm_world_obj.errh);
    kumi_errh_release(kumi_comm_self_obj.errh);
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

static int *copy_world(const struct kumi_comm *c)
{
    int *w = malloc(sizeof(int) * (size_t)c->size);
    if (w)
        for (int i = 0; i < c->size; i++) w[i] = kumi_comm_world_rank(c, i);
    return w;
}

int kumi_mpi_comm_dup(struct kumi_comm *comm, MPI_Comm *newcomm)
{
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "MPI_Comm_dup: argument newcomm is NULL");
    int32_t ctx;
    int rc = kumi_ctx_alloc(comm, &ctx);
    if (rc) return rc;
    int *w = NULL;
    if (comm->world || comm->size != kumi_world_size()) {
        if (!(w = copy_world(comm))) {
            kumi_ctx_free(ctx);
            return kumi_error(MPI_ERR_NO_MEM, "MPI_Comm_dup: out of memory");
        }
    }
    struct kumi_comm *c;
    rc = kumi_comm_create_obj(comm->rank, comm->size, w, ctx, comm, &c);
    if (rc) {
        kumi_ctx_free(ctx);
        return rc;
    }
    *newcomm = c->handle;
    return MPI_SUCCESS;
}

struct split_entry { int color, key, rank; };

static int split_cmp(const void *a, const void *b)
{
    const struct split_entry *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

int kumi_mpi_comm_split(struct kumi_comm *comm, int color, int key, MPI_Comm *newcomm)
{
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "MPI_Comm_split: argument newcomm is NULL");
    if (color < 0 && color != MPI_UNDEFINED)
        return kumi_error(MPI_ERR_ARG, "MPI_Comm_split: invalid color %d (argument color must be non-negative or MPI_UNDEFINED)", color);
    int n = comm->size;
    int mine[2] = { color, key };
    int *all = malloc(sizeof(int) * 2 * (size_t)n);
    struct split_entry *e = malloc(sizeof *e * (size_t)n);
    if (!all || !e) {
        free(all);
        free(e);
        return kumi_error(MPI_ERR_NO_MEM, "MPI_Comm_split: out of memory");
    }
    int rc = comm->coll.allgather(mine, 2, MPI_INT, all, 2, MPI_INT, (MPI_Comm)comm);
    int32_t ctx = 0;
    if (!rc) rc = kumi_ctx_alloc(comm, &ctx);
    if (rc) {
        free(all);
        free(e);
        return rc;
    }
    if (color == MPI_UNDEFINED) {
        kumi_ctx_free(ctx);
        free(all);
        free(e);
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    int m = 0;
    for (int r = 0; r < n; r++)
        if (all[2 * r] == color) {
            e[m].color = color;
            e[m].key = all[2 * r + 1];
            e[m].rank = r;
            m++;
        }
    qsort(e, (size_t)m, sizeof *e, split_cmp);
    int *w = malloc(sizeof(int) * (size_t)m);
    int myrank = -1;
    if (!w) rc = kumi_error(MPI_ERR_NO_MEM, "MPI_Comm_split: out of memory");
    else
        for (int i = 0; i < m; i++) {
            w[i] = kumi_comm_world_rank(comm, e[i].rank);
            if (e[i].rank == comm->rank) myrank = i;
        }
    free(all);
    free(e);
    struct kumi_comm *c = NULL;
    if (!rc) rc = kumi_comm_create_obj(myrank, m, w, ctx, comm, &c);
    if (rc) {
        kumi_ctx_free(ctx);
        return rc;
    }
    *newcomm = c->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_comm_free(MPI_Comm *comm)
{
    if (!comm) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Comm_free: argument comm is NULL"));
    struct kumi_comm *c = kumi_comm_get(*comm);
    if (!c) return kumi_err_handle(NULL, kumi_chk_bad_comm("MPI_Comm_free", "comm", *comm));
    if (c->predefined)
        return kumi_err_handle(c, kumi_error(MPI_ERR_COMM, "MPI_Comm_free: cannot free %s", c->name));
    kumi_comm_release(c);
    *comm = MPI_COMM_NULL;
    return MPI_SUCCESS;
}

static int int_cmp(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

int kumi_mpi_comm_compare(struct kumi_comm *comm1, struct kumi_comm *comm2, int *result)
{
    if (!result) return kumi_error(MPI_ERR_ARG, "MPI_Comm_compare: argument result is NULL");
    if (comm1 == comm2) { *result = MPI_IDENT; return MPI_SUCCESS; }
    if (comm1->size != comm2->size) { *result = MPI_UNEQUAL; return MPI_SUCCESS; }
    int n = comm1->size, same_order = 1;
    for (int i = 0; i < n; i++)
        if (kumi_comm_world_rank(comm1, i) != kumi_comm_world_rank(comm2, i)) { same_order = 0; break; }
    if (same_order) { *result = MPI_CONGRUENT; return MPI_SUCCESS; }
    /* same set of processes in another order? */
    int *a = copy_world(comm1), *b = copy_world(comm2);
    if (!a || !b) {
        free(a); free(b);
        return kumi_error(MPI_ERR_NO_MEM, "MPI_Comm_compare: out of memory");
    }
    qsort(a, (size_t)n, sizeof(int), int_cmp);
    qsort(b, (size_t)n, sizeof(int), int_cmp);
    *result = memcmp(a, b, sizeof(int) * (size_t)n) ? MPI_UNEQUAL : MPI_SIMILAR;
    free(a);
    free(b);
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
    snprintf(comm_name, MPI_MAX_OBJECT_NAME, "%s", comm->name);
    *resultlen = (int)strlen(comm_name);
    return MPI_SUCCESS;
}
