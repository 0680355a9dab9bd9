/* (mpi/coll_accel.c) Device buffers of collectives staged through host
 * memory; see the file's comment.  In a collective's MPI function, with
 * kumi_accel_on:
 *     struct kumi_cstager g = { fn, mode };
 *     kumi_cstage...(&g, &sendbuf, span, ...);       buffers replaced by host copies
 *     if (g.rc) { kumi_cstage_finish(&g, g.rc, NULL); return g.rc; }
 *     rc = <the call>;  return kumi_cstage_finish(&g, rc, request);
 * A span is [lo, hi) in bytes from the buffer's address (any false: empty). */
#ifndef KUMI_COLL_ACCEL_H
#define KUMI_COLL_ACCEL_H

struct kumi_cspan {
    MPI_Aint lo, hi;
    bool any;
    bool holes;       /* blocks at displacements: a written buffer is filled first */
};
struct kumi_cstager {
    const char *fn;
    enum kumi_form mode;
    int rc;                                   /* the first error */
    struct kumi_stage *head, *tail;           /* the staged buffers */
};

struct kumi_cspan kumi_cspan_n(MPI_Count count, const struct kumi_dt *dt);
struct kumi_cspan kumi_cspan_v(int n, const MPI_Count *counts, const MPI_Aint *displs, const struct kumi_dt *dt);
struct kumi_cspan kumi_cspan_w(int n, const MPI_Count *counts, const MPI_Aint *displs, const MPI_Datatype *types);
void kumi_cstage(struct kumi_cstager *g, const void **buf, struct kumi_cspan sp, bool fill, bool back);
void kumi_cstage_out(struct kumi_cstager *g, void **buf, struct kumi_cspan sp, bool fill);
void kumi_cstage_rooted(struct kumi_cstager *g, struct kumi_comm *comm, int root, bool to_root,
                        const void **sbuf, struct kumi_cspan ssp,
                        void **rbuf, struct kumi_cspan rsp, const struct kumi_dt *rdt);
void kumi_cstage_all(struct kumi_cstager *g, const void **sbuf, struct kumi_cspan ssp, void **rbuf,
                     struct kumi_cspan rsp, bool rgaps);
bool kumi_cstage_gaps(const struct kumi_dt *dt);
bool kumi_cstage_gaps_w(int n, const MPI_Datatype *types);
int kumi_cstage_refuse(struct kumi_cstager *g, const void *sbuf, void *rbuf);
int kumi_cstage_finish(struct kumi_cstager *g, int rc, MPI_Request *request);
/* kumi_cstage_finish where something was staged; else rc (g may be NULL) */
static inline int kumi_cstage_done(struct kumi_cstager *g, int rc, MPI_Request *request)
{
    return g && __builtin_expect(g->head != NULL, 0) ? kumi_cstage_finish(g, rc, request) : rc;
}
#define KUMI_CSTAGER(fn, mode) { (fn), (mode), 0, NULL, NULL }

/* Pipelined collectives (coll_accel.c; with kumi_accel_on): true when the
 * call ran in pieces (blocking) or its schedule of pieces was issued
 * (non-blocking: *f->request; persistent: made), *rc its result; false: run
 * it as usual. */
struct kumi_cpform {
    enum kumi_form mode;
    MPI_Info info;                        /* persistent forms */
    MPI_Request *request;                 /* non-blocking and persistent forms */
};
bool kumi_cpipe_bcast(const char *fn, const struct kumi_cpform *f, void *buf, MPI_Count count, struct kumi_dt *dt,
                      int root, struct kumi_comm *comm, int *rc);
bool kumi_cpipe_reduce(const char *fn, const struct kumi_cpform *f, bool all, const void *sbuf, void *rbuf,
                       MPI_Count count, struct kumi_dt *dt, struct kumi_op *op, int root, struct kumi_comm *comm,
                       int *rc);

#endif
