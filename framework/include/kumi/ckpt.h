/* ckpt: writing the image of one process for checkpoint/restart (issue 20).
 *
 * A back end saves the calling process, as it is at the call, so that a
 * restart program resumes it later, possibly on another host of the same
 * kind: the coordinator (a later component, components/ckpt/coord) brings
 * the job to a consistent cut, makes every transport release what cannot be
 * saved (sockets, shared memory, endpoints, the progress thread), and then
 * calls write() in each rank.  At most one back end runs per job (the
 * available one of highest priority; ckpt/image is built in, a CRIU one is
 * optional).
 *
 *   write(path, flags, err, errlen)
 *       writes the image of this process to `path` (a directory: a file
 *       name of the back end's choice inside it), complete or not at all
 *       (written to a temporary name and renamed).  Returns
 *       KUMI_CKPT_WRITTEN in the process that goes on, and a second time,
 *       in a restarted process, KUMI_CKPT_RESTARTED (like setjmp); -1 with
 *       a one-line reason in err when nothing was written (e.g. a thread the
 *       back end cannot stop).  Signals are blocked during
 *       the call.  flags: KUMI_CKPT_FSYNC.
 *   info(path, fd, err, errlen)
 *       checks an image (it is complete, undamaged, of this back end and
 *       this architecture) and describes it on fd; 0, or -1 and the reason.
 *   restart_program
 *       the program that restarts an image: run as `PROGRAM IMAGE` (from the
 *       installation's bin/ or the component's build folder); the process it
 *       becomes is the saved one, with its pid changed, fds 0-2 its own,
 *       and sockets, pipes, eventfds, epoll fds... replaced by placeholders
 *       on which any I/O fails with EBADF: the transports and the progress
 *       engine close and re-create them (re-wire).
 *   restart_env()
 *       after write() returned KUMI_CKPT_RESTARTED: the environment the
 *       restart program ran with ("NAME=VALUE" strings, NULL-terminated):
 *       the new launcher's (ranks' addresses, job secret...), since environ
 *       is the saved one; NULL in a process that was not restarted.
 */
#ifndef KUMI_CKPT_H
#define KUMI_CKPT_H

#include <stddef.h>
#include <kumi/kumi.h>
#include <kumi/component.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KUMI_CKPT_CONTRACT_MAJOR 1
#define KUMI_CKPT_CONTRACT_MINOR 0
#define KUMI_CKPT_OPS_HDR \
    KUMI_OPS_HDR(struct kumi_ckpt_ops, KUMI_CKPT_CONTRACT_MAJOR, KUMI_CKPT_CONTRACT_MINOR)
#define KUMI_CKPT_OPS_MIN_SIZE sizeof(struct kumi_ckpt_ops)

#ifndef KUMI_CKPT_WRITTEN
#define KUMI_CKPT_WRITTEN 0
#define KUMI_CKPT_RESTARTED 1
#define KUMI_CKPT_FSYNC 1
#endif

struct kumi_ckpt_ops {
    struct kumi_ops_hdr hdr;  /* KUMI_CKPT_OPS_HDR */
    int (*write)(const char *path, int flags, char *err, size_t errlen);
    int (*info)(const char *path, int fd, char *err, size_t errlen);
    const char *restart_program;
    const char *const *(*restart_env)(void);
};

/* Whether coordinated checkpoints are enabled in this job (parameter
 * kumi_ckpt_enable, set by mpiexec --ckpt). */
KUMI_EXPORT int kumi_ckpt_enabled(void);

/* A component whose state lives in shared memory that several ranks write
 * (coll/sm's segments) registers these with kumi_ckpt_hook_add (at most 8
 * tables; -1 when full) and removes them at its close.  The coordinator
 * calls them holding the library lock, in the checkpoint thread:
 *   quiesce   at the start of the checkpoint, before the cut's first
 *             exchange (so every rank's is done before any image is
 *             written): nothing of this process may write the shared
 *             memory until resume (threads sleeping without the lock);
 *   lead      in a restarted process, after the transports' wire-up: make
 *             the shared memory again (the owner of each: a new name from
 *             the new job's id and secret, mapped at the old address over
 *             the image's private copy);
 *   join      after the launcher's fence that follows lead: the others map
 *             it; a comm whose ranks are no longer on one host is given up
 *             (0 or -1 with the reason in why: the job is then aborted);
 *   unlink    after the next fence: the owners unlink the names;
 *   resume    at the end of every checkpoint (continue, restart, or a cut
 *             that failed).
 * Any may be NULL. */
struct kumi_ckpt_hook {
    void (*quiesce)(void);
    int (*lead)(char *why, size_t len);
    int (*join)(char *why, size_t len);
    void (*unlink)(void);
    void (*resume)(void);
};
KUMI_EXPORT int kumi_ckpt_hook_add(const struct kumi_ckpt_hook *h);
KUMI_EXPORT void kumi_ckpt_hook_remove(const struct kumi_ckpt_hook *h);

/* The coordinator (framework/mpi/ckpt.c), called by the launcher client's
 * checkpoint thread (rpim/fork: the thread that watches the control
 * connection) when a checkpoint request (kumi/launch_proto.h: CKPT) comes:
 *   kumi_ckpt_prepare(why, len)
 *       takes the library lock and checks that this rank can be
 *       checkpointed now; 1: ready (the lock stays held), 0: not (the lock
 *       is released, the reason in why).
 *   kumi_ckpt_serve()
 *       after prepare returned 1, while the launcher's GO (every rank
 *       ready) is awaited: progress for the other ranks, at once (the lock
 *       held).  A rank not ready yet may wait for this one's answer: its
 *       RMA epoch on a target of another host ends with the target's reply.
 *   kumi_ckpt_run(go, flags, dir, out, outlen)
 *       after prepare returned 1: go 0 releases the lock (another rank
 *       refused).  Otherwise brings the job to a consistent cut with the
 *       other ranks (the launcher's key exchange), releases the transports,
 *       writes this rank's image into dir, wires the transports up again
 *       unless flags has KUMI_LAUNCH_CKPT_STOP, and releases the lock.
 *       1: written (out: the image's file name in dir), 0: failed (out:
 *       the reason); 2: this is a process restarted from its image
 *       (mpiexec --restart): the environment's KUMI_* variables are the new
 *       job's, the lock is held and the transports are released; the
 *       launcher client joins the new launcher, then calls
 *       kumi_ckpt_resume (no CKPT_DONE: the new mpiexec asked nothing).
 *   kumi_ckpt_resume(out, outlen)
 *       wires the transports up again (the launcher's fence) and releases
 *       the lock; 1 (a failure ends the job). */
KUMI_EXPORT int kumi_ckpt_prepare(char *why, size_t len);
KUMI_EXPORT void kumi_ckpt_serve(void);
KUMI_EXPORT int kumi_ckpt_run(int go, unsigned flags, const char *dir, char *out, size_t outlen);
KUMI_EXPORT int kumi_ckpt_resume(char *out, size_t outlen);

#ifdef __cplusplus
}
#endif
#endif
