/* Making communicators: MPI_Comm_dup(_with_info), MPI_Comm_split,
 * MPI_Comm_split_type, MPI_Comm_create, MPI_Comm_create_group,
 * MPI_Comm_create_from_group (kumi_comm_from_group), MPI_Comm_free,
 * MPI_Comm_compare, and the sub-communicators of hierarchical coll
 * components (kumi_comm_sub_create).  Each new context id is agreed by
 * mpi/comm_agree.c; the object is made by core/comm.c. */
#include "mpi/mpi_front.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#ifdef KUMI_HAVE_HWLOC
#include <hwloc.h>
#endif



/* Duplicate comm: new context, same group, attributes copied (copy
 * callbacks), info hints = info (or comm's when use_comm_info). */
static int comm_dup(struct kumi_comm *comm, struct kumi_info *info, bool use_comm_info, MPI_Comm *newcomm,
                    const char *fn)
{
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "%s: argument newcomm is NULL", fn);
    if (comm->inter) return kumi_intercomm_dup(comm, use_comm_info ? comm->info : info, newcomm, fn);
    struct kumi_info *ni;
    int rc = kumi_comm_info_copy(use_comm_info ? comm->info : info, &ni, fn);
    if (rc) return rc;
    int32_t ctx;
    rc = kumi_ctx_alloc_comm(comm, &ctx);
    if (rc) {
        if (ni) kumi_info_release(ni);
        return rc;
    }
    return kumi_comm_dup_finish(comm, ctx, ni, newcomm, fn);
}

int kumi_mpi_comm_dup(struct kumi_comm *comm, MPI_Comm *newcomm)
{
    return comm_dup(comm, NULL, true, newcomm, "MPI_Comm_dup");
}

int kumi_mpi_comm_dup_with_info(struct kumi_comm *comm, MPI_Info info, MPI_Comm *newcomm)
{
    struct kumi_info *i;
    int rc = kumi_comm_info_arg(info, &i, "MPI_Comm_dup_with_info");
    return rc ? rc : comm_dup(comm, i, false, newcomm, "MPI_Comm_dup_with_info");
}

/* Sub-communicators for components (coll.h).  The context id is agreed by
 * point-to-point among the members only, in comm's collective context, with
 * a key of its own (low word 0x90000000 | key: apart from MPI_Comm_create_group's
 * tags, which are user tags >= 0 that do not reach 2^28 in practice). */
int kumi_comm_sub_create(MPI_Comm comm, int n, const int ranks[], int key, MPI_Comm *out)
{
    struct kumi_comm *p = kumi_comm_get(comm);
    if (out) *out = MPI_COMM_NULL;
    if (!p || p->inter || !out || n <= 0 || n > p->size || !ranks || key < 0 || key >= (1 << 24))
        return kumi_error(MPI_ERR_ARG, "kumi_comm_sub_create: invalid argument");
    int *w = malloc(sizeof(int) * (size_t)n), me = -1;
    if (!w) return kumi_error(MPI_ERR_NO_MEM, "kumi_comm_sub_create: out of memory");
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= p->size) {
            free(w);
            return kumi_error(MPI_ERR_RANK, "kumi_comm_sub_create: rank %d not in a communicator of size %d",
                              ranks[i], p->size);
        }
        if (ranks[i] == p->rank) me = i;
        w[i] = kumi_comm_world_rank(p, ranks[i]);
    }
    if (me < 0) {
        free(w);
        return kumi_error(MPI_ERR_RANK, "kumi_comm_sub_create: the caller is not among the ranks");
    }
    struct kumi_group *g = kumi_group_make(n, w);
    if (!g) return kumi_error(MPI_ERR_NO_MEM, "kumi_comm_sub_create: out of memory");
    int32_t ctx;
    int rc = kumi_ctx_alloc_group(p, g, ((uint64_t)(uint32_t)p->ctx << 32) | (0x90000000u | (uint32_t)key),
                                  &ctx);
    struct kumi_comm *c = NULL;
    if (!rc) {
        int *cw = malloc(sizeof(int) * (size_t)n);
        if (!cw) {
            kumi_ctx_free(ctx);
            rc = kumi_error(MPI_ERR_NO_MEM, "kumi_comm_sub_create: out of memory");
        } else {
            memcpy(cw, g->world, sizeof(int) * (size_t)n);
            rc = kumi_comm_create_sub_obj(me, n, cw, ctx, &c);
        }
    }
    kumi_group_release(g);
    if (rc) return rc;
    *out = c->handle;
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
    if (comm->inter) return kumi_intercomm_split(comm, color, key, newcomm);
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "MPI_Comm_split: argument newcomm is NULL");
    if (color < 0 && color != MPI_UNDEFINED)
        return kumi_error(MPI_ERR_ARG, "MPI_Comm_split: invalid color %d (argument color must be non-negative or MPI_UNDEFINED)", color);
    int n = comm->size;
    /* IMPI's rule (sheet §5.7) when a component's applies: the context id
     * first, then (colour, key, rank) triples; else (colour, key) pairs,
     * then Kumi's agreement */
    bool rule = kumi_ctx_rule_applies(comm);
    int nw = rule ? 3 : 2, mine[3] = { color, key, comm->rank };
    int *all = malloc(sizeof(int) * 3 * (size_t)n);
    struct split_entry *e = malloc(sizeof *e * (size_t)n);
    if (!all || !e) {
        free(all);
        free(e);
        return kumi_error(MPI_ERR_NO_MEM, "MPI_Comm_split: out of memory");
    }
    int32_t ctx = 0;
    int rc = rule ? kumi_ctx_alloc_comm(comm, &ctx) : MPI_SUCCESS;
    if (!rc) {
        rc = comm->coll.allgather(mine, nw, MPI_INT, all, nw, MPI_INT, (MPI_Comm)comm);
        if (rc && rule) kumi_ctx_free(ctx);
    }
    if (!rc && !rule) rc = kumi_ctx_alloc(comm, &ctx);
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
        if (all[nw * r] == color) {
            e[m].color = color;
            e[m].key = all[nw * r + 1];
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
    int rc;
    /* IMPI (sheet §5.6): MPI_Comm_free of a communicator whose context id
     * IMPI's rule gave is a barrier first (coll/impi's, over the clients) */
    if (!c->inter && c->ctx >= KUMI_CTX_IMPI && c->ctx < KUMI_CTX_PART_HS && (rc = c->coll.barrier(*comm)))
        return kumi_err_handle(c, rc);
    rc = kumi_attr_comm_free(c);
    if (rc) return kumi_err_handle(c, rc);
    rc = kumi_buffer_comm_free(c);      /* its buffer (MPI_Comm_attach_buffer): messages go out, detached */
    if (rc) return kumi_err_handle(c, rc);
    kumi_dpm_comm_freed(c);             /* MPI_Comm_get_parent: MPI_COMM_NULL from now on */
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
    if (comm1->inter || comm2->inter) return kumi_intercomm_compare(comm1, comm2, result);
    if (!result) return kumi_error(MPI_ERR_ARG, "MPI_Comm_compare: argument result is NULL");
    if (comm1 == comm2) { *result = MPI_IDENT; return MPI_SUCCESS; }
    if (comm1->size != comm2->size) { *result = MPI_UNEQUAL; return MPI_SUCCESS; }
    int n = comm1->size, same_order = 1;
    for (int i = 0; i < n; i++)
        if (kumi_comm_world_rank(comm1, i) != kumi_comm_world_rank(comm2, i)) { same_order = 0; break; }
    if (same_order) { *result = MPI_CONGRUENT; return MPI_SUCCESS; }
    /* same set of processes in another order? */
    int *a = kumi_comm_world_copy(comm1), *b = kumi_comm_world_copy(comm2);
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

/* ------------------------------------------------ create from groups */
/* 1 if every member of g is a rank of comm. */
static int group_in_comm(const struct kumi_group *g, const struct kumi_comm *comm)
{
    for (int i = 0; i < g->size; i++) {
        int found = 0;
        for (int j = 0; j < comm->size && !found; j++) found = kumi_comm_world_rank(comm, j) == g->world[i];
        if (!found) return 0;
    }
    return 1;
}

/* The communicator of group g (this process a member) with context ctx;
 * on failure the context is given back. */
static int comm_of_group(const struct kumi_group *g, int32_t ctx, struct kumi_comm *parent,
                         struct kumi_comm **out, const char *fn)
{
    int rc;
    int *w = malloc(sizeof(int) * (size_t)g->size);
    if (!w) {
        rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    } else {
        memcpy(w, g->world, sizeof(int) * (size_t)g->size);
        rc = kumi_comm_create_obj(g->rank, g->size, w, ctx, parent, out);
    }
    if (rc) kumi_ctx_free(ctx);
    return rc;
}

int kumi_mpi_comm_create(struct kumi_comm *comm, MPI_Group group, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_create";
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "%s: argument newcomm is NULL", fn);
    struct kumi_group *g = kumi_group_get(group);
    if (!g) return kumi_error(MPI_ERR_GROUP, "%s: argument group is not a valid group", fn);
    if (comm->inter) return kumi_intercomm_create_sub(comm, g, newcomm);
    /* MPI-3: the groups may differ between ranks when they are disjoint;
     * one agreement over comm gives all of them the same (safe) context. */
    int bad = !group_in_comm(g, comm);
    int32_t ctx;
    int rc = kumi_ctx_alloc_comm(comm, &ctx);
    if (rc) return rc;
    if (bad || g->rank == MPI_UNDEFINED) {
        kumi_ctx_free(ctx);
        *newcomm = MPI_COMM_NULL;
        return bad ? kumi_error(MPI_ERR_GROUP, "%s: argument group is not a subset of the group of comm", fn)
                   : MPI_SUCCESS;
    }
    struct kumi_comm *c;
    rc = comm_of_group(g, ctx, comm, &c, fn);
    if (rc) return rc;
    *newcomm = c->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_comm_create_group(struct kumi_comm *comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_create_group";
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "%s: argument newcomm is NULL", fn);
    struct kumi_group *g = kumi_group_get(group);
    if (!g) return kumi_error(MPI_ERR_GROUP, "%s: argument group is not a valid group", fn);
    if (comm->inter) return kumi_error(MPI_ERR_COMM, "%s: intercommunicators are not supported here yet", fn);
    if (!group_in_comm(g, comm))
        return kumi_error(MPI_ERR_GROUP, "%s: argument group is not a subset of the group of comm", fn);
    if (g->rank == MPI_UNDEFINED) {
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    int32_t ctx;
    int rc = kumi_ctx_alloc_group(comm, g, ((uint64_t)(uint32_t)comm->ctx << 32) | (uint32_t)tag, &ctx);
    if (rc) return rc;
    struct kumi_comm *c;
    rc = comm_of_group(g, ctx, comm, &c, fn);
    if (rc) return rc;
    *newcomm = c->handle;
    return MPI_SUCCESS;
}

/* Communicator of a group derived from a session (or any group), collective
 * over the group only; agreed through the bootstrap communicator with a key
 * made from the string tag. */
int kumi_comm_from_group(struct kumi_group *g, const char *stringtag, struct kumi_info *info,
                         struct kumi_errhandler *errh, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_create_from_group";
    if (g->rank == MPI_UNDEFINED) {
        *newcomm = MPI_COMM_NULL;
        return kumi_error(MPI_ERR_GROUP, "%s: the calling process is not a member of argument group", fn);
    }
    uint32_t h = 2166136261u;                   /* FNV-1a of the tag */
    for (const unsigned char *p = (const unsigned char *)stringtag; *p; p++) h = (h ^ *p) * 16777619u;
    int32_t ctx;
    int rc = kumi_ctx_alloc_group(NULL, g, KUMI_KEY_BOOT | (h & 0x7fffffffu), &ctx);
    if (rc) return rc;
    struct kumi_info *ni;
    rc = kumi_comm_info_copy(info, &ni, fn);
    if (rc) {
        kumi_ctx_free(ctx);
        return rc;
    }
    struct kumi_comm *c;
    rc = comm_of_group(g, ctx, NULL, &c, fn);
    if (rc) {
        if (ni) kumi_info_release(ni);
        return rc;
    }
    c->info = ni;
    if (g->session) {                   /* a session's communicator (its buffer for buffered sends) */
        c->session = g->session;
        kumi_session_ref(c->session);
    }
    if (errh) {
        kumi_errh_retain(errh);
        kumi_errh_release(c->errh);
        c->errh = errh;
    }
    *newcomm = c->handle;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------ split by type */
#define SPLIT_STR 256

/* color: the lowest world rank, among the processes of comm (both groups of
 * an intercommunicator), whose string equals mine (s NULL: undefined), so
 * that equal strings in the two groups of an intercommunicator get the same
 * color.  Also *nparts = number of distinct defined strings, *maxpart =
 * largest part (over both groups). */
static int color_by_string(struct kumi_comm *comm, const char *s, int *color, int *nparts, int *maxpart)
{
    struct kumi_comm *lc = comm->inter ? comm->local_comm : comm;
    int nl = comm->size, nr = comm->inter ? comm->remote_size : 0, n = nl + nr;
    char mine[SPLIT_STR];
    memset(mine, 0, sizeof mine);
    if (s) snprintf(mine + 1, sizeof mine - 1, "%s", s), mine[0] = 1;
    char *all = malloc((size_t)n * SPLIT_STR);
    int *world = malloc(sizeof(int) * (size_t)n);
    if (!all || !world) {
        free(all); free(world);
        return kumi_error(MPI_ERR_NO_MEM, "MPI_Comm_split_type: out of memory");
    }
    int rc = lc->coll.allgather(mine, SPLIT_STR, MPI_CHAR, all, SPLIT_STR, MPI_CHAR, (MPI_Comm)lc);
    if (!rc && nr)      /* an intercommunicator's allgather brings the remote group's */
        rc = comm->coll.allgather(mine, SPLIT_STR, MPI_CHAR, all + (size_t)nl * SPLIT_STR, SPLIT_STR, MPI_CHAR,
                                  (MPI_Comm)comm);
    if (rc) { free(all); free(world); return rc; }
    for (int r = 0; r < nl; r++) world[r] = kumi_comm_world_rank(comm, r);
    for (int r = 0; r < nr; r++) world[nl + r] = comm->remote_world[r];
    *color = MPI_UNDEFINED;
    *nparts = 0;
    *maxpart = 0;
    for (int r = 0; r < n; r++) {
        const char *e = all + (size_t)r * SPLIT_STR;
        if (!e[0]) continue;
        int first = r, low = world[r], cnt = 0;
        for (int q = 0; q < n; q++) {
            const char *f = all + (size_t)q * SPLIT_STR;
            if (f[0] && !strcmp(f + 1, e + 1)) {
                if (q < first) first = q;
                if (world[q] < low) low = world[q];
                cnt++;
            }
        }
        if (first == r) (*nparts)++;
        if (cnt > *maxpart) *maxpart = cnt;
        if (r == comm->rank) *color = low;
    }
    free(all);
    free(world);
    return MPI_SUCCESS;
}

/* Hardware resource types (MPI 4.1 sec. 7.4.2 and 11.x): the hwloc object
 * types Kumi splits by, outermost first.  MPI_Get_hw_resource_info names
 * them in URI form ("hwloc://Package"), and mpi_hw_resource_type takes that
 * form or the bare hwloc name; "mpi_shared_memory" is the standard's. */
static const char *const hw_types[] = { "Package", "NUMANode", "L3Cache", "L2Cache", "L1Cache", "Core", "PU" };
#define NHW_TYPES ((int)(sizeof hw_types / sizeof *hw_types))
#define HW_URI "hwloc://"

/* The hwloc type name of a mpi_hw_resource_type value (its URI form stripped). */
static const char *hw_type_name(const char *v)
{
    return v && !strncasecmp(v, HW_URI, strlen(HW_URI)) ? v + strlen(HW_URI) : v;
}

#ifdef KUMI_HAVE_HWLOC
static hwloc_topology_t topo;
static int topo_state;                          /* 0 not tried, 1 loaded, -1 failed */

static int topo_load(void)
{
    if (topo_state == 0) {
        topo_state = -1;
        if (hwloc_topology_init(&topo) == 0) {
            if (hwloc_topology_load(topo) == 0) topo_state = 1;
            else hwloc_topology_destroy(topo);
        }
    }
    return topo_state == 1;
}

/* Whether this machine has hwloc objects of type name (at *depth: NUMA
 * nodes have a special, negative one). */
static bool hw_depth(const char *type, int *depth)
{
    hwloc_obj_type_t t;
    if (!topo_load() || hwloc_type_sscanf(type, &t, NULL, 0) != 0) return false;
    *depth = hwloc_get_type_depth(topo, t);
    return *depth != HWLOC_TYPE_DEPTH_UNKNOWN && *depth != HWLOC_TYPE_DEPTH_MULTIPLE;
}

/* "host/type#index" of the object of hwloc type name that contains this
 * process's binding into buf; 0 if there is none (unknown type, or the
 * binding spans several such objects). */
static int hw_where(const char *type, char *buf, size_t len)
{
    int depth;
    if (!hw_depth(type, &depth)) return 0;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set) return 0;
    int found = 0;
    if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(set)) {
        unsigned nobj = (unsigned)hwloc_get_nbobjs_by_depth(topo, depth);
        for (unsigned i = 0; i < nobj; i++) {
            hwloc_obj_t o = hwloc_get_obj_by_depth(topo, depth, i);
            if (o && o->cpuset && hwloc_bitmap_isincluded(set, o->cpuset)) {
                snprintf(buf, len, "%s/%s#%u", kumi_host_id(), type, o->logical_index);
                found = 1;
                break;
            }
        }
    }
    hwloc_bitmap_free(set);
    return found;
}
#else
static bool hw_depth(const char *type, int *depth)
{
    (void)type; (void)depth;
    return false;
}

static int hw_where(const char *type, char *buf, size_t len)
{
    (void)type; (void)buf; (void)len;
    return 0;
}
#endif

/* MPI 4.1 MPI_Get_hw_resource_info: for each hardware resource type of this
 * machine, a key in URI form whose value says whether the calling process is
 * restricted (bound) to a single instance of it at the moment of the call:
 * "hwloc://Core" "true" for a process bound to one core. */
int kumi_mpi_get_hw_resource_info(MPI_Info *hw_info)
{
    static const char fn[] = "MPI_Get_hw_resource_info";
    if (!hw_info) return kumi_error(MPI_ERR_ARG, "%s: argument hw_info is NULL", fn);
    struct kumi_info *i = kumi_info_dup(NULL);
    if (!i) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    int rc = MPI_SUCCESS;
    for (int t = 0; t < NHW_TYPES && !rc; t++) {
        int depth;
        if (!hw_depth(hw_types[t], &depth)) continue;
        char key[64], where[SPLIT_STR];
        snprintf(key, sizeof key, HW_URI "%s", hw_types[t]);
        rc = kumi_info_set_value(i, key, hw_where(hw_types[t], where, sizeof where) ? "true" : "false");
    }
    if (rc) {
        kumi_info_release(i);
        return rc;
    }
    *hw_info = kumi_info_handle(i);
    return MPI_SUCCESS;
}

/* Where this process is at level type ("mpi_shared_memory": the host, as
 * kumi_host_id() tells hosts apart, like MPI_COMM_TYPE_SHARED). */
static const char *level_string(const char *type, char *buf, size_t len)
{
    if (!strcmp(type, "mpi_shared_memory")) {
        snprintf(buf, len, "%s", kumi_host_id());
        return buf;
    }
    return hw_where(hw_type_name(type), buf, len) ? buf : NULL;
}

static int split_with_info(struct kumi_comm *comm, int color, int key, const char *level, MPI_Comm *newcomm)
{
    int rc = kumi_mpi_comm_split(comm, color, key, newcomm);
    if (rc || *newcomm == MPI_COMM_NULL || !level) return rc;
    struct kumi_comm *c = kumi_comm_get(*newcomm);
    if (!c->info && !(c->info = kumi_info_dup(NULL))) return MPI_SUCCESS;
    kumi_info_set_value(c->info, "mpi_hw_resource_type", level);
    return MPI_SUCCESS;
}

int kumi_mpi_comm_split_type(struct kumi_comm *comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_split_type";
    static const char *const unguided[] = {     /* mpi_shared_memory, then hw_types in URI form */
        "mpi_shared_memory", HW_URI "Package", HW_URI "NUMANode", HW_URI "L3Cache", HW_URI "L2Cache",
        HW_URI "L1Cache", HW_URI "Core", HW_URI "PU" };
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "%s: argument newcomm is NULL", fn);
    struct kumi_info *inf;
    int rc = kumi_comm_info_arg(info, &inf, fn);
    if (rc) return rc;
    char buf[SPLIT_STR - 1];
    int color, nparts, maxpart, total = comm->size + (comm->inter ? comm->remote_size : 0);
    /* ranks passing MPI_UNDEFINED take part in the exchanges of the others' type
     * (an intercommunicator: of both groups; each group is split as by
     * MPI_Comm_split, the parts of the same type in the two groups joined) */
    int undef = split_type == MPI_UNDEFINED, type_all = split_type;
    if (comm->inter) {
        int type_remote = split_type;
        rc = comm->local_comm->coll.allreduce(&split_type, &type_all, 1, MPI_INT, MPI_MAX,
                                              (MPI_Comm)comm->local_comm);
        if (!rc) rc = comm->coll.allreduce(&split_type, &type_remote, 1, MPI_INT, MPI_MAX, (MPI_Comm)comm);
        if (type_remote > type_all) type_all = type_remote;
    } else {
        rc = comm->coll.allreduce(&split_type, &type_all, 1, MPI_INT, MPI_MAX, (MPI_Comm)comm);
    }
    if (rc) return rc;
    switch (type_all) {
    case MPI_UNDEFINED:
        return kumi_mpi_comm_split(comm, MPI_UNDEFINED, key, newcomm);
    case MPI_COMM_TYPE_SHARED:
        rc = color_by_string(comm, undef ? NULL : kumi_host_id(), &color, &nparts, &maxpart);
        return rc ? rc : split_with_info(comm, color, key, "mpi_shared_memory", newcomm);
    case MPI_COMM_TYPE_HW_GUIDED:
    case MPI_COMM_TYPE_RESOURCE_GUIDED: {
        const char *type = !undef && inf ? kumi_info_value(inf, "mpi_hw_resource_type") : NULL;
        rc = color_by_string(comm, type ? level_string(type, buf, sizeof buf) : NULL, &color, &nparts, &maxpart);
        return rc ? rc : split_with_info(comm, color, key, type, newcomm);
    }
    case MPI_COMM_TYPE_HW_UNGUIDED:
        /* the first level (outermost first) that splits comm into strictly smaller parts */
        for (size_t l = 0; l < sizeof unguided / sizeof *unguided; l++) {
            rc = color_by_string(comm, undef ? NULL : level_string(unguided[l], buf, sizeof buf), &color, &nparts,
                                 &maxpart);
            if (rc) return rc;
            if (nparts > 0 && maxpart < total) return split_with_info(comm, color, key, unguided[l], newcomm);
        }
        return kumi_mpi_comm_split(comm, MPI_UNDEFINED, key, newcomm);
    default:
        /* still collective: the others wait in the split */
        rc = kumi_mpi_comm_split(comm, MPI_UNDEFINED, key, newcomm);
        return rc ? rc : kumi_error(MPI_ERR_ARG, "%s: invalid split_type %d", fn, split_type);
    }
}


/* Non-blocking on intercommunicators too: request/comm_agree.c agrees over
 * both groups, kumi_intercomm_dup_finish builds the duplicate. */
static int comm_idup(struct kumi_comm *comm, struct kumi_info *info, bool use_comm_info, MPI_Comm *newcomm,
                     MPI_Request *request, const char *fn)
{
    if (!request) return kumi_error(MPI_ERR_ARG, "%s: argument request is NULL", fn);
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "%s: argument newcomm is NULL", fn);
    struct kumi_info *hints = use_comm_info ? comm->info : info;
    return kumi_comm_idup_start(comm, hints, newcomm, request, fn, kumi_intercomm_dup_finish);
}

int kumi_mpi_comm_idup(struct kumi_comm *comm, MPI_Comm *newcomm, MPI_Request *request)
{
    return comm_idup(comm, NULL, true, newcomm, request, "MPI_Comm_idup");
}

int kumi_mpi_comm_idup_with_info(struct kumi_comm *comm, MPI_Info info, MPI_Comm *newcomm, MPI_Request *request)
{
    if (!request) return kumi_error(MPI_ERR_ARG, "MPI_Comm_idup_with_info: argument request is NULL");
    struct kumi_info *i;
    int rc = kumi_comm_info_arg(info, &i, "MPI_Comm_idup_with_info");
    return rc ? rc : comm_idup(comm, i, false, newcomm, request, "MPI_Comm_idup_with_info");
}

