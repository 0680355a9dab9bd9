/* Groups: ordered sets of processes, each member named by its world rank.
 *
 * A group is an array group rank -> world rank.  Set operations translate
 * through a sorted copy of one operand (world rank, group rank), so every
 * operation is O(n log n).  An empty result is MPI_GROUP_EMPTY (predefined:
 * freeing it, or a handle to it, is harmless). */
#include "core/core.h"
#include "core/check.h"
#include <stdlib.h>
#include <string.h>

static struct kumi_group group_empty = {
    .magic = KUMI_MAGIC_GROUP, .refcount = 1, .size = 0, .rank = MPI_UNDEFINED, .world = NULL,
    .predefined = true, .handle = MPI_GROUP_EMPTY };

void kumi_group_init(void)
{
    kumi_predef[(uintptr_t)MPI_GROUP_EMPTY] = &group_empty;
}

/* A new group of n members world[0..n) (takes ownership of world).  n == 0:
 * MPI_GROUP_EMPTY.  NULL when out of memory (world freed). */
struct kumi_group *kumi_group_make(int n, int *world)
{
    if (n == 0) {
        free(world);
        group_empty.refcount++;
        return &group_empty;
    }
    struct kumi_group *g = calloc(1, sizeof *g);
    if (!g) {
        free(world);
        return NULL;
    }
    int me = kumi_world_rank();
    g->magic = KUMI_MAGIC_GROUP;
    g->refcount = 1;
    g->size = n;
    g->world = world;
    g->rank = MPI_UNDEFINED;
    for (int i = 0; i < n; i++)
        if (world[i] == me) { g->rank = i; break; }
    g->handle = (MPI_Group)g;
    return g;
}

void kumi_group_release(struct kumi_group *g)
{
    if (!g || --g->refcount > 0 || g->predefined) return;
    kumi_session_unref(g->session);
    free(g->world);
    g->magic = KUMI_MAGIC_DEAD;
    free(g);
}

/* The group of the ranks of c (its local group). */
struct kumi_group *kumi_group_of_comm(const struct kumi_comm *c)
{
    int *w = malloc(sizeof(int) * (size_t)(c->size ? c->size : 1));
    if (!w) return NULL;
    for (int i = 0; i < c->size; i++) w[i] = kumi_comm_world_rank(c, i);
    return kumi_group_derived(kumi_group_make(c->size, w), c->session);
}

struct kumi_group *kumi_group_derived(struct kumi_group *g, struct kumi_session *s)
{
    if (g && s && !g->predefined && !g->session) {
        g->session = s;
        kumi_session_ref(s);
    }
    return g;
}

/* ------------------------------------------------------ lookup helpers */
struct wr { int world, rank; };

static int wr_cmp(const void *a, const void *b)
{
    const struct wr *x = a, *y = b;
    return (x->world > y->world) - (x->world < y->world);
}

/* Sorted (world, rank) pairs of g; NULL for an empty group or no memory
 * (*nomem set). */
static struct wr *sorted(const struct kumi_group *g, int *nomem)
{
    *nomem = 0;
    if (g->size == 0) return NULL;
    struct wr *s = malloc(sizeof *s * (size_t)g->size);
    if (!s) { *nomem = 1; return NULL; }
    for (int i = 0; i < g->size; i++) { s[i].world = g->world[i]; s[i].rank = i; }
    qsort(s, (size_t)g->size, sizeof *s, wr_cmp);
    return s;
}

/* Rank in the group of s (n entries) of world rank w, or MPI_UNDEFINED. */
static int lookup(const struct wr *s, int n, int w)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (s[mid].world == w) return s[mid].rank;
        if (s[mid].world < w) lo = mid + 1;
        else hi = mid - 1;
    }
    return MPI_UNDEFINED;
}

/* Rank of world rank w in g (MPI_UNDEFINED if not a member); linear. */
int kumi_group_rank_of(const struct kumi_group *g, int w)
{
    for (int i = 0; i < g->size; i++)
        if (g->world[i] == w) return i;
    return MPI_UNDEFINED;
}

static int bad_group(const char *fn, const char *arg, MPI_Group h)
{
    if (h == MPI_GROUP_NULL) return kumi_error(MPI_ERR_GROUP, "%s: argument %s is MPI_GROUP_NULL", fn, arg);
    return kumi_error(MPI_ERR_GROUP, "%s: argument %s (%p) is not a valid group", fn, arg, (void *)h);
}

static int nomem(const char *fn)
{
    return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
}

#define GET_GROUP(var, h, fn, arg) \
    struct kumi_group *var = kumi_group_get(h); \
    if (!var) return kumi_err_handle(NULL, bad_group(fn, arg, h))
#define NULL_ARG(p, fn, arg) \
    if (!(p)) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fn, arg))

static int out_group(struct kumi_group *g, MPI_Group *newgroup, const char *fn)
{
    if (!g) return kumi_err_handle(NULL, nomem(fn));
    *newgroup = g->handle;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------- MPI functions */
int kumi_mpi_comm_group(struct kumi_comm *comm, MPI_Group *group)
{
    if (!group) return kumi_error(MPI_ERR_ARG, "MPI_Comm_group: argument group is NULL");
    struct kumi_group *g = kumi_group_of_comm(comm);
    if (!g) return nomem("MPI_Comm_group");
    *group = g->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_group_size(MPI_Group group, int *size)
{
    GET_GROUP(g, group, "MPI_Group_size", "group");
    NULL_ARG(size, "MPI_Group_size", "size");
    *size = g->size;
    return MPI_SUCCESS;
}

int kumi_mpi_group_rank(MPI_Group group, int *rank)
{
    GET_GROUP(g, group, "MPI_Group_rank", "group");
    NULL_ARG(rank, "MPI_Group_rank", "rank");
    *rank = g->rank;
    return MPI_SUCCESS;
}

int kumi_mpi_group_free(MPI_Group *group)
{
    NULL_ARG(group, "MPI_Group_free", "group");
    GET_GROUP(g, *group, "MPI_Group_free", "group");
    kumi_group_release(g);
    *group = MPI_GROUP_NULL;
    return MPI_SUCCESS;
}

int kumi_mpi_group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2, int ranks2[])
{
    static const char fn[] = "MPI_Group_translate_ranks";
    GET_GROUP(g1, group1, fn, "group1");
    GET_GROUP(g2, group2, fn, "group2");
    if (n < 0) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument n is %d, must not be negative", fn, n));
    if (n == 0) return MPI_SUCCESS;
    NULL_ARG(ranks1, fn, "ranks1");
    NULL_ARG(ranks2, fn, "ranks2");
    for (int i = 0; i < n; i++)
        if (ranks1[i] != MPI_PROC_NULL && (ranks1[i] < 0 || ranks1[i] >= g1->size))
            return kumi_err_handle(NULL, kumi_error(MPI_ERR_RANK, "%s: ranks1[%d] is %d, not a rank of group1 (size %d)",
                                                    fn, i, ranks1[i], g1->size));
    int oom;
    struct wr *s = sorted(g2, &oom);
    if (oom) return kumi_err_handle(NULL, nomem(fn));
    for (int i = 0; i < n; i++)
        ranks2[i] = ranks1[i] == MPI_PROC_NULL ? MPI_PROC_NULL : lookup(s, g2->size, g1->world[ranks1[i]]);
    free(s);
    return MPI_SUCCESS;
}

int kumi_mpi_group_compare(MPI_Group group1, MPI_Group group2, int *result)
{
    static const char fn[] = "MPI_Group_compare";
    GET_GROUP(g1, group1, fn, "group1");
    GET_GROUP(g2, group2, fn, "group2");
    NULL_ARG(result, fn, "result");
    if (g1->size != g2->size) { *result = MPI_UNEQUAL; return MPI_SUCCESS; }
    if (g1->size == 0 || !memcmp(g1->world, g2->world, sizeof(int) * (size_t)g1->size)) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    int oom;
    struct wr *s = sorted(g2, &oom);
    if (oom) return kumi_err_handle(NULL, nomem(fn));
    *result = MPI_SIMILAR;
    for (int i = 0; i < g1->size; i++)
        if (lookup(s, g2->size, g1->world[i]) == MPI_UNDEFINED) { *result = MPI_UNEQUAL; break; }
    free(s);
    return MPI_SUCCESS;
}

/* op: 0 union, 1 intersection, 2 difference */
static int setop(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup, int op, const char *fn)
{
    GET_GROUP(g1, group1, fn, "group1");
    GET_GROUP(g2, group2, fn, "group2");
    NULL_ARG(newgroup, fn, "newgroup");
    int oom;
    struct wr *s2 = sorted(g2, &oom);
    if (oom) return kumi_err_handle(NULL, nomem(fn));
    int *w = malloc(sizeof(int) * (size_t)(g1->size + g2->size + 1));
    if (!w) { free(s2); return kumi_err_handle(NULL, nomem(fn)); }
    int n = 0;
    for (int i = 0; i < g1->size; i++) {
        int in2 = lookup(s2, g2->size, g1->world[i]) != MPI_UNDEFINED;
        if (op == 0 || (op == 1 && in2) || (op == 2 && !in2)) w[n++] = g1->world[i];
    }
    free(s2);
    if (op == 0 && g2->size) {
        struct wr *s1 = sorted(g1, &oom);
        if (oom) { free(w); return kumi_err_handle(NULL, nomem(fn)); }
        for (int i = 0; i < g2->size; i++)
            if (lookup(s1, g1->size, g2->world[i]) == MPI_UNDEFINED) w[n++] = g2->world[i];
        free(s1);
    }
    return out_group(kumi_group_derived(kumi_group_make(n, w), g1->session), newgroup, fn);
}

int kumi_mpi_group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return setop(group1, group2, newgroup, 0, "MPI_Group_union");
}

int kumi_mpi_group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return setop(group1, group2, newgroup, 1, "MPI_Group_intersection");
}

int kumi_mpi_group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return setop(group1, group2, newgroup, 2, "MPI_Group_difference");
}

/* Check ranks[0..n) are valid and distinct ranks of g; mark them in seen
 * (g->size entries, zeroed). */
static int check_ranks(const char *fn, const struct kumi_group *g, int n, const int ranks[], char *seen)
{
    for (int i = 0; i < n; i++) {
        int r = ranks[i];
        if (r < 0 || r >= g->size)
            return kumi_error(MPI_ERR_RANK, "%s: ranks[%d] is %d, not a rank of group (size %d)", fn, i, r, g->size);
        if (seen[r])
            return kumi_error(MPI_ERR_RANK, "%s: rank %d appears twice in argument ranks", fn, r);
        seen[r] = 1;
    }
    return MPI_SUCCESS;
}

static int inclexcl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup, int excl, const char *fn)
{
    GET_GROUP(g, group, fn, "group");
    NULL_ARG(newgroup, fn, "newgroup");
    if (n < 0) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument n is %d, must not be negative", fn, n));
    if (n > g->size)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument n is %d, larger than the group (size %d)", fn, n, g->size));
    if (n > 0) NULL_ARG(ranks, fn, "ranks");
    char *seen = calloc((size_t)g->size + 1, 1);
    int *w = malloc(sizeof(int) * (size_t)(g->size + 1));
    if (!seen || !w) { free(seen); free(w); return kumi_err_handle(NULL, nomem(fn)); }
    int rc = check_ranks(fn, g, n, ranks, seen);
    if (rc) { free(seen); free(w); return kumi_err_handle(NULL, rc); }
    int m = 0;
    if (excl) {
        for (int i = 0; i < g->size; i++)
            if (!seen[i]) w[m++] = g->world[i];
    } else {
        for (int i = 0; i < n; i++) w[m++] = g->world[ranks[i]];
    }
    free(seen);
    return out_group(kumi_group_derived(kumi_group_make(m, w), g->session), newgroup, fn);
}

int kumi_mpi_group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    return inclexcl(group, n, ranks, newgroup, 0, "MPI_Group_incl");
}

int kumi_mpi_group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    return inclexcl(group, n, ranks, newgroup, 1, "MPI_Group_excl");
}

/* Expand ranges into a list of ranks (checked: valid, distinct). */
static int expand_ranges(const char *fn, const struct kumi_group *g, int n, int ranges[][3], int **out, int *nout)
{
    *out = NULL;
    *nout = 0;
    char *seen = calloc((size_t)g->size + 1, 1);
    int *list = malloc(sizeof(int) * (size_t)(g->size + 1));
    if (!seen || !list) { free(seen); free(list); return nomem(fn); }
    int m = 0, rc = MPI_SUCCESS;
    for (int i = 0; i < n && !rc; i++) {
        int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
        if (stride == 0) {
            rc = kumi_error(MPI_ERR_ARG, "%s: ranges[%d] has stride 0", fn, i);
            break;
        }
        if (first < 0 || first >= g->size || last < 0 || last >= g->size) {
            rc = kumi_error(MPI_ERR_RANK, "%s: ranges[%d] = (%d, %d, %d) names a rank outside the group (size %d)",
                            fn, i, first, last, stride, g->size);
            break;
        }
        if ((stride > 0 && first > last) || (stride < 0 && first < last)) continue;   /* empty range */
        for (long long r = first; stride > 0 ? r <= last : r >= last; r += stride) {
            if (seen[r]) {
                rc = kumi_error(MPI_ERR_RANK, "%s: rank %lld appears twice in argument ranges", fn, r);
                break;
            }
            seen[r] = 1;
            list[m++] = (int)r;
        }
    }
    free(seen);
    if (rc) { free(list); return rc; }
    *out = list;
    *nout = m;
    return MPI_SUCCESS;
}

static int range_inclexcl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup, int excl, const char *fn)
{
    GET_GROUP(g, group, fn, "group");
    NULL_ARG(newgroup, fn, "newgroup");
    if (n < 0) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument n is %d, must not be negative", fn, n));
    if (n > 0) NULL_ARG(ranges, fn, "ranges");
    int *list, m;
    int rc = expand_ranges(fn, g, n, ranges, &list, &m);
    if (rc) return kumi_err_handle(NULL, rc);
    int *w = malloc(sizeof(int) * (size_t)(g->size + 1));
    if (!w) { free(list); return kumi_err_handle(NULL, nomem(fn)); }
    int k = 0;
    if (excl) {
        char *drop = calloc((size_t)g->size + 1, 1);
        if (!drop) { free(list); free(w); return kumi_err_handle(NULL, nomem(fn)); }
        for (int i = 0; i < m; i++) drop[list[i]] = 1;
        for (int i = 0; i < g->size; i++)
            if (!drop[i]) w[k++] = g->world[i];
        free(drop);
    } else {
        for (int i = 0; i < m; i++) w[k++] = g->world[list[i]];
    }
    free(list);
    return out_group(kumi_group_derived(kumi_group_make(k, w), g->session), newgroup, fn);
}

int kumi_mpi_group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    return range_inclexcl(group, n, ranges, newgroup, 0, "MPI_Group_range_incl");
}

int kumi_mpi_group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    return range_inclexcl(group, n, ranges, newgroup, 1, "MPI_Group_range_excl");
}
