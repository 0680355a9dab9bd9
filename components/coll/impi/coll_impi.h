/* coll/impi: shared declarations of coll_impi.c (component, communicator
 * tables, the IMPI standard's Barrier / Bcast / Reduce) and coll_impi_own.c
 * (the operations whose algorithm the standard's text we have does not
 * give: Kumi's own, built from the same blocks). */
#ifndef COLL_IMPI_H
#define COLL_IMPI_H

#include <kumi/coll.h>
#include <kumi/kumi.h>

/* Tags of the inter-client messages, on the communicator's collective
 * context (pt2pt context id + 1, which is LAM's reading of the final
 * standard's section 4.3; MPI_COMM_WORLD: pk_cid 1).  The values are LAM's
 * impi.h (fact sheet §5.2); allgather(v), allreduce and reduce_scatter have
 * none there and are built from the operations that do. */
enum {
    IMPI_BARRIER_TAG = 110,
    IMPI_BCAST_TAG = 120,
    IMPI_GATHER_TAG = 130,
    IMPI_GATHERV_TAG = 140,
    IMPI_SCATTER_TAG = 150,
    IMPI_SCATTERV_TAG = 160,
    IMPI_ALLTOALL_TAG = 170,
    IMPI_ALLTOALLV_TAG = 180,
    IMPI_REDUCE_TAG = 190,
    IMPI_SCAN_TAG = 200,
    IMPI_DUP_TAG = 210,
    IMPI_MERGE_TAG = 220,
};

/* One communicator spanning several IMPI clients (fact sheet §5.1). */
struct impi_comm {
    struct impi_comm *next;
    MPI_Comm comm;
    int size, me;
    int *client;                /* [size]: IMPI client of each rank */
    int nm;                     /* masters = clients spanned */
    int *master;                /* [nm]: comm rank of master n (ascending) */
    int mnum_of_client[32];     /* client -> master number, -1: not in comm */
    int *grp_off;               /* [nm + 1]: ranks local to master n: grp_rank[grp_off[n] ..] */
    int *grp_rank;              /* [size]: by master number, ascending comm rank in each */
    int *lidx;                  /* [size]: index of a rank among its client's (0: the master) */
    int maxlinear;              /* linear global phase when nm <= maxlinear */
    int built;
    MPI_Comm local;             /* my client's ranks (MPI_COMM_NULL: I am alone) */
};

extern long long coll_impi_verbose;

struct impi_comm *coll_impi_get(MPI_Comm comm, int *rc);

/* sheet §5.1's utility functions */
static inline int impi_local_master_num(const struct impi_comm *e, int r) { return e->mnum_of_client[e->client[r]]; }
static inline int impi_are_local(const struct impi_comm *e, int a, int b) { return e->client[a] == e->client[b]; }
static inline int impi_is_master(const struct impi_comm *e, int r) { return e->master[impi_local_master_num(e, r)] == r; }
static inline int impi_master_num(const struct impi_comm *e, int r) { return impi_is_master(e, r) ? impi_local_master_num(e, r) : -1; }
static inline int impi_nlocal(const struct impi_comm *e, int n) { return e->grp_off[n + 1] - e->grp_off[n]; }

/* helpers (coll_impi.c) */
char *coll_impi_tmp(size_t count, MPI_Datatype dt, void **mem);
MPI_Aint coll_impi_ext(MPI_Datatype dt);
int coll_impi_nomem(const char *what);

/* the standard's operations, used by the others too */
int coll_impi_barrier(MPI_Comm comm);
int coll_impi_bcast(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm);
int coll_impi_reduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op, int root,
                     MPI_Comm comm);

/* context ids (coll_impi.c): IMPI_max_cid; take n new ids above all (the
 * maximum over the participants); the IMPI client of a job-wide rank (-1:
 * not a rank of this IMPI job) */
uint64_t coll_impi_max_cid(void);
int coll_impi_cid_take(uint64_t all, int n);
int coll_impi_client_of_job(int w);

/* coll_impi_own.c: not from the standard's text (README) */
int coll_impi_applies_inter(MPI_Comm local, int rn, const int rjob[]);
int coll_impi_agree_inter(int kind, MPI_Comm local, int leader, MPI_Comm inter,
                          int (*xchg)(void *arg, const uint64_t *mine, uint64_t *theirs, int n), void *arg,
                          uint64_t extra, uint64_t *rextra, int nctx, int32_t ctx[]);
int coll_impi_allreduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int coll_impi_gather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                     MPI_Datatype rdt, int root, MPI_Comm comm);
int coll_impi_gatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[],
                      const MPI_Aint displs[], MPI_Datatype rdt, int root, MPI_Comm comm);
int coll_impi_scatter(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                      MPI_Datatype rdt, int root, MPI_Comm comm);
int coll_impi_scatterv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint displs[], MPI_Datatype sdt,
                       void *rbuf, MPI_Count rcount, MPI_Datatype rdt, int root, MPI_Comm comm);
int coll_impi_allgather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                        MPI_Datatype rdt, MPI_Comm comm);
int coll_impi_allgatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[],
                         const MPI_Aint displs[], MPI_Datatype rdt, MPI_Comm comm);
int coll_impi_alltoall(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                       MPI_Datatype rdt, MPI_Comm comm);
int coll_impi_alltoallv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[], MPI_Datatype sdt,
                        void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[], MPI_Datatype rdt,
                        MPI_Comm comm);
int coll_impi_reduce_scatter(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dt, MPI_Op op,
                             MPI_Comm comm);
int coll_impi_reduce_scatter_block(const void *sbuf, void *rbuf, MPI_Count rcount, MPI_Datatype dt, MPI_Op op,
                                   MPI_Comm comm);
int coll_impi_scan(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

#endif
