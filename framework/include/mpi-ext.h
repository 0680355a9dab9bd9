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

#ifdef __cplusplus
}
#endif
#endif
