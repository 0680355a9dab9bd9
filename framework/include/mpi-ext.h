/* mpi-ext.h: Kumi's extensions to MPI (include after, or instead of, mpi.h).
 *
 * The CAD API (KACC's "collective algorithm description"): build your own
 * non-blocking collective as a DAG of send, receive, reduction and copy
 * nodes, then run it as often as you like; Kumi progresses it like its own
 * non-blocking collectives (in the progress loop, or in a progress thread
 * with KUMI_BASE_SCHED_ENGINE=thread).
 *
 *   MPIX_Cad cad;
 *   MPIX_Cad_create(comm, &cad);
 *   MPIX_Cad_recv(cad, buf, n, MPI_DOUBLE, left, 0, &r);     // node r
 *   MPIX_Cad_send(cad, buf, n, MPI_DOUBLE, right, 0, &s);    // node s
 *   MPIX_Cad_connect(cad, r, s);                              // s runs after r
 *   MPIX_Cad_issue(cad);  ...  MPIX_Cad_wait(cad);            // as often as needed
 *   MPIX_Cad_free(&cad);
 *
 * A node starts when every node connected before it is done; nodes without
 * a predecessor start at issue.  Messages travel in the communicator's
 * collective context, apart from point-to-point traffic and from every other
 * collective or schedule.  Tags (0 .. MPIX_CAD_TAG_UB) tell apart messages
 * between the same two ranks in one schedule; with equal tags they match in
 * the order their nodes start.  Every rank of comm that takes part creates
 * its schedules on comm in the same order (as with collective calls).
 * Buffers are read and written while the schedule runs, not at creation.
 * Errors go to comm's error handler.
 *
 * MPI from inside GPU kernels (kumi_gpu.h has the device side and the
 * protocol): MPIX_Gpu_start starts a host proxy thread that serves the
 * requests of nblocks device blocks (point-to-point on comm; collectives of
 * block b with block b of every rank), each with at most depth requests
 * outstanding, through a ring of qsize entries (0: defaults 4 and 1024);
 * *dev is what the kernel gets (by value).  kind MPIX_GPU_CUDA places the
 * ring in host-mapped memory through the accel framework's cuda component;
 * MPIX_GPU_CPU in ordinary memory, for threads standing in for blocks.
 * Buffers: host-mapped, managed, or (kind MPIX_GPU_CUDA) device memory.  The proxy
 * thread calls MPI: MPIX_Gpu_start switches the library lock on (as
 * MPI_THREAD_MULTIPLE does), whatever level the application asked for.
 * MPIX_Gpu_stop (after the kernel ended) stops it: receives still pending are
 * cancelled; it returns the first failure a block reported with
 * kumi_gpu_fail, through comm's error handler.  MPI_Finalize stops proxies
 * left running.  Kind | MPIX_GPU_NOTHREAD starts no thread (nor switches
 * the library lock on): the caller serves the ring itself, each call of
 * MPIX_Gpu_progress taking the requests published, starting them and
 * completing those finished (*events: how many); kumi-gpucc --relaunch's
 * host loop (kumi_gpu_relaunch.h) works so, between kernel launches.
 *
 * MPIX_Query_cuda_support(): 1 when device buffers are supported at run time
 * (the accel/cuda component is usable in this process), as in Open MPI and MPICH.
 */
#ifndef KUMI_MPI_EXT_H
#define KUMI_MPI_EXT_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KUMI_MPIX_CAD 1
#define MPIX_CAD_TAG_UB 4095

typedef struct kumi_mpix_cad *MPIX_Cad;
#define MPIX_CAD_NULL ((MPIX_Cad)0)

int MPIX_Cad_create(MPI_Comm comm, MPIX_Cad *cad);
int MPIX_Cad_send(MPIX_Cad cad, const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                  int *node);
int MPIX_Cad_recv(MPIX_Cad cad, void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                  int *node);
/* inoutbuf[i] = inbuf[i] op inoutbuf[i] */
int MPIX_Cad_calc(MPIX_Cad cad, const void *inbuf, void *inoutbuf, MPI_Count count, MPI_Datatype datatype,
                  MPI_Op op, int *node);
int MPIX_Cad_copy(MPIX_Cad cad, const void *src, MPI_Count srccount, MPI_Datatype srctype, void *dst,
                  MPI_Count dstcount, MPI_Datatype dsttype, int *node);
/* Node `to` runs only after node `from` is done. */
int MPIX_Cad_connect(MPIX_Cad cad, int from, int to);
/* Start a run (the schedule is fixed at the first issue). */
int MPIX_Cad_issue(MPIX_Cad cad);
/* *flag = 1 when the run is over (or none was issued); MPIX_Cad_wait waits for it. */
int MPIX_Cad_test(MPIX_Cad cad, int *flag);
int MPIX_Cad_wait(MPIX_Cad cad);
/* Free (a running schedule first finishes its run). */
int MPIX_Cad_free(MPIX_Cad *cad);

#define KUMI_MPIX_GPU 1
typedef struct kumi_mpix_gpu *MPIX_Gpu;
#define MPIX_GPU_NULL ((MPIX_Gpu)0)
enum { MPIX_GPU_CPU = 0, MPIX_GPU_CUDA = 1 };
#define MPIX_GPU_NOTHREAD 0x100   /* | kind: no proxy thread; the caller serves with MPIX_Gpu_progress */
struct kumi_gpu;   /* kumi_gpu_t of kumi_gpu.h */
int MPIX_Gpu_start(MPI_Comm comm, int kind, int nblocks, int depth, int qsize, struct kumi_gpu *dev,
                   MPIX_Gpu *gpu);
int MPIX_Gpu_stop(MPIX_Gpu *gpu);
int MPIX_Gpu_progress(MPIX_Gpu gpu, int *events);

int MPIX_Query_cuda_support(void);

#ifdef __cplusplus
}
#endif
#endif
