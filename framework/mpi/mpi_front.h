/* The MPI front ends (framework/mpi): the MPI functions that need the request
 * layer, schedules or windows (point-to-point, partitioned and generalized
 * requests, buffered-send buffers, collectives, intercommunicators, sessions,
 * MPI_Init / MPI_Finalize).  Layers, lowest first (each includes only those
 * below it; tests/scripts/struct_layers.sh checks it):
 *   include/ (the kumi headers, mpi.h) <- registry <- core <- request <- sched, rma <- mpi <- bindings */
#ifndef KUMI_MPI_FRONT_H
#define KUMI_MPI_FRONT_H

#include "core/core.h"
#include "core/check.h"
#include "request/request.h"

/* ---- partitioned.c, grequest.c: register their request kinds */
void kumi_part_register(void);
void kumi_ckpt_register_params(void);   /* ckpt.c */
void kumi_ckpt_init_done(void);
void kumi_ckpt_finalize_start(void);
void kumi_greq_register(void);
/* ---- gpu.c: MPI_Finalize stops the device proxies still running */
void kumi_gpu_finalize(void);
void kumi_gpu_register_params(void);


/* ---------------------------------------------------- collectives */
/* (mpi/coll.c) The int count and displacement arrays of the plain MPI forms
 * widened for the coll contract (MPI_Count / MPI_Aint, kumi/coll.h): up to
 * two count and two displacement arrays of n entries each; with n <=
 * KUMI_WIDEN_STACK (and parameter kumi_base_coll_widen_stack) they live in
 * the struct, on the caller's stack, else in one allocation (MPI_ERR_NO_MEM
 * naming fn when that fails).  kumi_widen_counts / _displs return the
 * widened copy of in[0..n) (NULL for NULL); kumi_widen_end frees. */
#define KUMI_WIDEN_STACK 64
struct kumi_widen {
    MPI_Count c[2 * KUMI_WIDEN_STACK];
    MPI_Aint a[2 * KUMI_WIDEN_STACK];
    MPI_Count *cn;          /* next free entries */
    MPI_Aint *an;
    void *heap;
    MPI_Datatype *types;    /* Alltoallw's type arrays with the ignored entries replaced */
};
int kumi_widen_begin(struct kumi_widen *w, const char *fn, int n, int ncounts, int ndispls);
const MPI_Count *kumi_widen_counts(struct kumi_widen *w, const int *in, int n);
const MPI_Aint *kumi_widen_displs(struct kumi_widen *w, const int *in, int n);
void kumi_widen_end(struct kumi_widen *w);
void kumi_coll_register_params(void);
/* (mpi/coll_accel.c) the pipelined collectives on device buffers: parameters, pinned slots freed */
void kumi_cpipe_register_params(void);
void kumi_cpipe_finalize(void);       /* the pipeline's streams and slots */
void kumi_cpipe_stop(void);           /* the runtime stops: that and the agreement (coll_accel.c) */
int kumi_cpipe_publish(void);          /* at start-up, before the fence: key "kumi.cpipe" (coll_accel.c) */

/* rc = the blocking collective call (an expression over the coll table), run
 * to its end through truncated receives (kumi_coll_keep_trunc): its own
 * error, else the first truncation (MPI_ERR_TRUNCATE) of a message that
 * reached this rank.  The schedules of the non-blocking and persistent forms
 * do the same (sched/sched.c). */
#define KUMI_COLL_BLOCKING(rc, call)                                                    \
    do {                                                                                \
        int trunc_ = MPI_SUCCESS;                                                       \
        int *prev_ = kumi_coll_keep_trunc(&trunc_);                                     \
        (rc) = (call);                                                                  \
        kumi_coll_keep_trunc(prev_);                                                    \
        if ((rc) == MPI_SUCCESS) (rc) = trunc_;                                         \
    } while (0)


/* ---------------------------------------------------- dynamic processes */
/* (mpi/dpm_names.c) parameter kumi_dpm_name_dir of the name service. */
void kumi_dpm_register_params(void);
void kumi_dpm_register_connect_params(void);     /* (mpi/dpm_connect.c) kumi_dpm_timeout */
/* (mpi/dpm_port.c) connections through a port, for MPI_Comm_accept /
 * connect: accept (the process that opened port_name) or connect, checking
 * the port's token; then blobs both ways.  fn names the MPI procedure in
 * errors; timeout in seconds (< 0: none, not for connect). */
/* MPI_Open_port / MPI_Close_port without the error handler (error codes). */
int kumi_dpm_open_port(char *port_name);
int kumi_dpm_close_port(const char *port_name);
int kumi_dpm_port_accept(const char *fn, const char *port_name, double timeout, int *fd);
int kumi_dpm_port_connect(const char *fn, const char *port_name, double timeout, int *fd);
int kumi_dpm_send_blob(const char *fn, int fd, const void *buf, size_t len, double timeout);
int kumi_dpm_recv_blob(const char *fn, int fd, void **buf, size_t *len, double timeout);
/* (mpi/dpm_connect.c) MPI_Comm_accept / MPI_Comm_connect without the error
 * handler (for MPI_Comm_spawn's glue too): collective over the
 * intracommunicator comm; port is significant at root only; info may carry
 * "timeout" (seconds; accept: none by default, connect: parameter
 * kumi_dpm_timeout); fn names the MPI procedure in messages.  *newcomm: the
 * intercommunicator (local group: comm's; remote: the other side's).
 * Returns an error code (every process of comm gets the root's class). */
int kumi_dpm_accept(const char *fn, const char *port, MPI_Info info, int root, struct kumi_comm *comm,
                    MPI_Comm *newcomm);
int kumi_dpm_connect(const char *fn, const char *port, MPI_Info info, int root, struct kumi_comm *comm,
                     MPI_Comm *newcomm);
/* The same over a socket connected to the root of the other side (fd at
 * root only, not closed here; accept: 1 on one side, 0 on the other; the
 * roots exchange within kumi_dpm_timeout seconds). */
/* (mpi/dpm_spawn.c) MPI_Comm_spawn's other half: a child connects to its
 * parents at the end of MPI_Init (KUMI_DPM_PARENT_PORT); the parent
 * intercommunicator is forgotten when freed; kumi_dpm_spawn_timeout. */
int kumi_dpm_child_init(void);
void kumi_dpm_comm_freed(struct kumi_comm *c);
void kumi_dpm_register_spawn_params(void);
int kumi_dpm_bridge_fd(const char *fn, int fd, int accept, int root, struct kumi_comm *comm, MPI_Comm *newcomm);

/* ---------------------------------------------------- intercommunicators */
/* (mpi/intercomm.c) What comm_create.c calls for c->inter. */
/* MPI_Comm_dup(_with_info) / idup: info = the new communicator's hints (copied; NULL: none). */
int kumi_intercomm_dup(struct kumi_comm *comm, struct kumi_info *info, MPI_Comm *newcomm, const char *fn);
int kumi_intercomm_dup_finish(struct kumi_comm *ic, int32_t ctx, int32_t lctx, struct kumi_info *info,
                              MPI_Comm *newcomm, const char *fn);
int kumi_intercomm_split(struct kumi_comm *comm, int color, int key, MPI_Comm *newcomm);
/* MPI_Comm_create on an intercommunicator (group: a subgroup of the local group). */
int kumi_intercomm_create_sub(struct kumi_comm *comm, const struct kumi_group *group, MPI_Comm *newcomm);
int kumi_intercomm_compare(struct kumi_comm *c1, struct kumi_comm *c2, int *result);
/* MPI_Comm_accept / connect / join: the intercommunicator between lc's group
 * and the peers rworld[0..rsize) of another job (taken), the roots (lc rank
 * root) agreeing on its context over socket fd (xto seconds per exchange). */
int kumi_intercomm_bridge(struct kumi_comm *lc, int root, int fd, double xto, int rsize, int *rworld,
                          const char *fn, MPI_Comm *newintercomm);

/* ------------------------------------------------ buffered-send buffers */
/* (mpi/buffer.c) The implicit detaches: the buffer of comm (MPI_Comm_free),
 * those of the process, MPI_COMM_WORLD and MPI_COMM_SELF (MPI_Finalize);
 * each waits for its messages.  Error codes, no handler. */
int kumi_buffer_comm_free(struct kumi_comm *comm);
int kumi_buffers_finalize(void);

#endif
