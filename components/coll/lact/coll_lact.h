/* coll/lact: latency-aware hierarchical collectives (private header).
 *
 * coll_lact_topo.c: the parameters, the cluster rules and the topology file
 * (parsed in open()), and the topology of one communicator (computed from
 * replicated data only, so every rank computes the same).
 * coll_lact.c: the component, the per-communicator table, the lazily made
 * sub-communicators and the algorithms. */
#ifndef COLL_LACT_H
#define COLL_LACT_H

#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/coll.h>

#include <stddef.h>

/* Levels of the hierarchy, fastest first. */
enum { LACT_NODE, LACT_NET, LACT_WAN, LACT_NLEVELS };

/* The topology of one communicator of p ranks.  Hosts are numbered by the
 * first comm rank on them, clusters by the first host in them, so host h's
 * leader (its lowest rank) is below host h+1's, and likewise for clusters.
 * The "hierarchical order" lists the ranks by cluster, then host, then comm
 * rank: the order in which the hierarchy combines or gathers them. */
struct lact_topo {
    int p, me;
    int nhosts, ncl;
    int *host_of;       /* [p] host of each rank */
    int *lidx;          /* [p] index of the rank among its host's ranks (its node-comm rank) */
    int *pos;           /* [p] place of the rank in the hierarchical order */
    int *hsize;         /* [nhosts] ranks on the host */
    int *hoff, *hrank;  /* ranks of host h: hrank[hoff[h] .. hoff[h+1]) in comm order */
    int *hcl;           /* [nhosts] cluster of the host */
    int *hcidx;         /* [nhosts] index of the host among its cluster's hosts (node-leaders rank) */
    int *coff, *chost;  /* hosts of cluster c: chost[coff[c] .. coff[c+1]) */
    int *cnranks;       /* [ncl] ranks in the cluster */
    int *crankoff;      /* [ncl] first place of the cluster in the hierarchical order */
    char **hname;       /* [nhosts] host names */
    char **cname;       /* [ncl] cluster names */
    int maxpn;          /* most ranks on one host */
    int contiguous;     /* every host's and cluster's ranks are consecutive comm ranks */
    int nlevels;        /* levels with more than one member somewhere */
    double lat[LACT_NLEVELS];   /* microseconds; WAN: the slowest link between the clusters */
    double bw[LACT_NLEVELS];    /* MB/s (bytes per microsecond); WAN: the slowest link */
};

/* Parameters (coll_lact_*). */
extern long long lact_ranks_per_host, lact_hosts_per_cluster, lact_verbose;
extern const char *lact_clusters, *lact_topology;
extern double lact_wan_latency_us, lact_wan_bandwidth;

void lact_register_params(void);
/* Parse the cluster rules and the topology file; KUMI_OK, or KUMI_UNAVAILABLE
 * after writing the first problem (naming the parameter or file:line) into why. */
int lact_config_load(char *why, size_t whylen);
void lact_config_free(void);

/* Compute comm's topology; KUMI_OK, or KUMI_UNAVAILABLE (a host name could not
 * be read; out of memory).  No communication. */
int lact_topo_build(MPI_Comm comm, struct lact_topo *t);
void lact_topo_free(struct lact_topo *t);
/* One line describing t (for coll_lact_verbose). */
void lact_topo_describe(const struct lact_topo *t, char *buf, size_t len);

#endif
