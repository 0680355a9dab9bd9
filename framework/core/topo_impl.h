/* What the topology files share (core/topo.c describes the object). */
#ifndef KUMI_TOPO_IMPL_H
#define KUMI_TOPO_IMPL_H

#include "core/core.h"

struct kumi_topo {
    int kind;                       /* MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH */
    /* Cartesian */
    int ndims;
    int *dims, *periods, *coords;   /* coords: this process's */
    /* graph */
    int nnodes, nedges;
    int *index, *edges;
    /* distributed graph */
    bool weighted;
    int *inw, *outw;                /* weights of in / out edges (weighted only) */
    /* the neighbourhood, every kind */
    int nin, nout;
    int *in, *out, *rtag, *stag;    /* rtag/stag: NULL means offsets 0 */
};

#define TRY(x) do { int rc_ = (x); if (rc_ != MPI_SUCCESS) return rc_; } while (0)

int kumi_topo_nomem(const char *fn);
int *kumi_topo_ints(size_t n);
int *kumi_topo_ints_dup(const int *a, size_t n);
void kumi_topo_destroy(struct kumi_topo *t);
int kumi_topo_need(const char *fn, struct kumi_comm *c, int kind, struct kumi_topo **t);
int kumi_topo_need_intra(const char *fn, const char *arg, const struct kumi_comm *c);
int kumi_topo_need_ptr(const char *fn, const char *arg, const void *p);
int kumi_topo_attach(struct kumi_comm *c, struct kumi_topo *t, MPI_Comm *newcomm);
struct kumi_topo *kumi_topo_cart_new(int ndims, const int *dims, const int *periods, int rank);
int kumi_topo_cart_check(const char *fn, const struct kumi_comm *c, int ndims, const int *dims,
                      const int *periods, int *n);
int kumi_topo_graph_check(const char *fn, const struct kumi_comm *c, int nnodes, const int *index,
                       const int *edges);
int kumi_topo_check_ranks(const char *fn, const char *arg, const int *a, int n, const struct kumi_comm *c);
int kumi_topo_check_weights(const char *fn, const char *arg, const int *w, int n, int *given);
struct kumi_topo *kumi_topo_dist_new(int nin, int nout, bool weighted);

#endif
