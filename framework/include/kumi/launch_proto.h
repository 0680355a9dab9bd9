/* The launcher's wire protocol: the control channel between mpiexec
 * (tools/mpiexec/control.c, the server) and the rpim components inside the
 * ranks (components/rpim/fork/rpim_fork.c, the client).  The one place that
 * defines it; both sides include this header.
 *
 * Every message is a frame:
 *     u32 len   (big endian: number of bytes that follow, type included)
 *     u8  type
 *     payload   (len - 1 bytes; integers are u32/i32 big endian,
 *               strings are u32 length + bytes, no NUL)
 *   rank -> mpiexec
 *     HELLO    1  secret[KUMI_LAUNCH_SECRET_LEN] (hex chars of
 *                 KUMI_JOB_SECRET), u32 rank, u32 pid
 *     PUT      2  str key, str value
 *     FENCE    3  (empty)
 *     ABORT    4  i32 errorcode, str message
 *     FINALIZE 5  (empty)
 *     SPAWN    6  u32 ncmds, ncmds x { str program, u32 argc, argc x str
 *                 (arguments after the program), u32 maxprocs, u32 ninfo,
 *                 ninfo x { str key, str value } }, u32 nenv, nenv x str
 *                 (KEY=VALUE for every child): start a new job (see below)
 *     CKPT_READY 7 u32 seq, u32 ok (1: ready, the rank holds its library
 *                 lock; 0: refused), str reason (empty when ok)
 *     CKPT_DONE  8 u32 seq, u32 ok, str text (ok: the image's file name,
 *                 relative to the checkpoint directory; else the reason)
 *   mpiexec -> rank
 *     HELLO_OK      0x81 (empty)
 *     HELLO_REFUSED 0x82 u32 reason (KUMI_LAUNCH_REFUSED_*), str text;
 *                   mpiexec then closes the connection
 *     FENCE_DONE    0x83 u32 count, count x { u32 rank, str key, str value }
 *     ABORT_OK      0x84 (empty)
 *     FINALIZE_OK   0x85 (empty)
 *     SPAWN_DONE    0x86 u32 result (KUMI_LAUNCH_SPAWN_*), str message
 *                   (empty when result is OK), str child job id (decimal,
 *                   empty when nothing started), u32 n, n x u32 result of
 *                   each child in the order of the commands (n: the total
 *                   maxprocs)
 *     CKPT          0x87 u32 seq, u32 flags (KUMI_LAUNCH_CKPT_*), str dir
 *                   (absolute): a checkpoint request (see below)
 *     CKPT_GO       0x88 u32 seq, u32 go (1: every rank is ready, go on;
 *                   0: some rank refused, release and answer CKPT_DONE
 *                   with ok 0)
 * A connection must send a correct HELLO first, within
 * KUMI_LAUNCH_HELLO_TIMEOUT seconds; otherwise (or on any malformed frame)
 * it is closed.  mpiexec keeps a bounded number of connections that have not
 * presented the secret yet and closes the oldest of them to make room for a
 * new one; a rank whose connection was closed before any answer connects
 * again (strangers flooding the port cannot keep a rank out).
 *
 * The connection stays open for the whole life of the rank: when it closes
 * without FINALIZE, the launcher is gone and the rank ends (rpim/fork watches
 * it from a thread), after removing the job's shared-memory objects.
 *
 * SPAWN (MPI_Comm_spawn / _multiple; the rank side is kumi_rpim_spawn in
 * kumi/rpim.h): mpiexec starts the children of every command as ONE new job
 * (its own MPI_COMM_WORLD of the total maxprocs, ranks in command order,
 * its own job id, secret and control bookkeeping), all or nothing: when a
 * command's program cannot be found or the children cannot be placed,
 * nothing starts, every child gets that command's failure (or
 * KUMI_LAUNCH_SPAWN_NOT_STARTED when another command failed), and result
 * says why.  SPAWN_DONE comes once the children were started (forked), not
 * once they called MPI_Init.  Info keys understood (others are ignored):
 * host, add-host (comma lists of host[:slots]), hostfile, add-hostfile,
 * file (hostfile), wdir, path (search path for the program).
 *
 * CKPT (coordinated checkpoint, framework/mpi/ckpt.c): mpiexec sends it to
 * every rank at once, unsolicited (a rank's client may read it while it
 * waits for the answer to one of its own requests: it keeps it for its
 * checkpoint thread).  Each rank answers CKPT_READY; once all did, mpiexec
 * sends CKPT_GO to all (go 0 when one refused or is gone).  After a go the
 * ranks exchange counts with PUT / FENCE (keys "ckpt.*") until every channel
 * is empty, release their transports, write their images into dir, wire up
 * again (another FENCE) unless flags has KUMI_LAUNCH_CKPT_STOP, and answer
 * CKPT_DONE.  mpiexec then writes dir/manifest (tools/mpiexec/ckpt.c).
 *
 * Shared-memory objects of a job (every component follows this rule):
 * POSIX names start with "/kumi.<KUMI_JOBID>." (files
 * /dev/shm/kumi.<jobid>.*; named semaphores /dev/shm/sem.kumi.<jobid>.*).
 * kumi_launch_shm_cleanup() removes those of them that belong to the
 * caller's user (another user's file with such a name is left alone: it is
 * not the job's); mpiexec calls it when the job ends, a rank whose launcher
 * died calls it before it exits.
 */
#ifndef KUMI_LAUNCH_PROTO_H
#define KUMI_LAUNCH_PROTO_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* message types */
#define KUMI_LAUNCH_MSG_HELLO          1
#define KUMI_LAUNCH_MSG_PUT            2
#define KUMI_LAUNCH_MSG_FENCE          3
#define KUMI_LAUNCH_MSG_ABORT          4
#define KUMI_LAUNCH_MSG_FINALIZE       5
#define KUMI_LAUNCH_MSG_HELLO_OK       0x81
#define KUMI_LAUNCH_MSG_HELLO_REFUSED  0x82
#define KUMI_LAUNCH_MSG_FENCE_DONE     0x83
#define KUMI_LAUNCH_MSG_ABORT_OK       0x84
#define KUMI_LAUNCH_MSG_FINALIZE_OK    0x85
#define KUMI_LAUNCH_MSG_SPAWN          6
#define KUMI_LAUNCH_MSG_SPAWN_DONE     0x86
#define KUMI_LAUNCH_MSG_CKPT_READY     7
#define KUMI_LAUNCH_MSG_CKPT_DONE      8
#define KUMI_LAUNCH_MSG_CKPT           0x87
#define KUMI_LAUNCH_MSG_CKPT_GO        0x88

/* CKPT flags */
#define KUMI_LAUNCH_CKPT_STOP          1   /* --checkpoint-and-stop: the ranks do not wire up again */

/* results of SPAWN (whole request and per child) */
#define KUMI_LAUNCH_SPAWN_OK           0
#define KUMI_LAUNCH_SPAWN_NOT_FOUND    1   /* program not found */
#define KUMI_LAUNCH_SPAWN_NOT_EXEC     2   /* program not executable */
#define KUMI_LAUNCH_SPAWN_NO_SLOTS     3   /* not enough free slots on the hosts given */
#define KUMI_LAUNCH_SPAWN_BAD_INFO     4   /* an info value mpiexec cannot use (unknown host, bad wdir) */
#define KUMI_LAUNCH_SPAWN_UNSUPPORTED  5   /* this launcher cannot spawn (e.g. ranks behind proxies) */
#define KUMI_LAUNCH_SPAWN_FAILED       6   /* fork/pipe failed, mpiexec stopping, ... */
#define KUMI_LAUNCH_SPAWN_NOT_STARTED  7   /* this child's command was fine, another one failed */
#define KUMI_LAUNCH_SPAWN_BAD_REQUEST  8   /* malformed SPAWN */

/* reasons of HELLO_REFUSED */
#define KUMI_LAUNCH_REFUSED_SECRET     1   /* wrong job secret */
#define KUMI_LAUNCH_REFUSED_RANK       2   /* rank out of range */
#define KUMI_LAUNCH_REFUSED_TWICE      3   /* that rank has already connected */

/* layout and limits */
#define KUMI_LAUNCH_HDR_LEN            5                 /* u32 len + u8 type */
#define KUMI_LAUNCH_SECRET_LEN         32                /* hex characters */
#define KUMI_LAUNCH_HELLO_LEN          (KUMI_LAUNCH_SECRET_LEN + 8)   /* HELLO payload */
#define KUMI_LAUNCH_MAX_FRAME          (64 * 1024)       /* largest frame a rank may send */
#define KUMI_LAUNCH_MAX_REPLY          (512u * 1024 * 1024) /* largest frame mpiexec may send */
#define KUMI_LAUNCH_HELLO_TIMEOUT      3.0               /* seconds to present the secret */
#define KUMI_LAUNCH_SHM_DIR            "/dev/shm"

static inline void kumi_launch_put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static inline uint32_t kumi_launch_get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Unlink /dev/shm/kumi.<jobid>.* and /dev/shm/sem.kumi.<jobid>.* owned by
 * this process's effective user (never another user's).  Returns how
 * many were removed.  (Plain POSIX calls only: the header compiles in
 * strict C99/C11 too.) */
static inline int kumi_launch_shm_cleanup(long jobid)
{
    char pfx[2][64];
    size_t pl[2];
    snprintf(pfx[0], sizeof pfx[0], "kumi.%ld.", jobid);
    snprintf(pfx[1], sizeof pfx[1], "sem.kumi.%ld.", jobid);
    pl[0] = strlen(pfx[0]);
    pl[1] = strlen(pfx[1]);
    uid_t me = geteuid();
    int removed = 0;
    /* Rescan until a pass removes nothing: unlinking while reading a
     * directory may make readdir skip entries. */
    for (int pass = 0; pass < 8; pass++) {
        DIR *d = opendir(KUMI_LAUNCH_SHM_DIR);
        if (!d) return removed;
        int here = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            for (int k = 0; k < 2; k++)
                if (strncmp(de->d_name, pfx[k], pl[k]) == 0 && de->d_name[pl[k]]) {
                    char path[sizeof KUMI_LAUNCH_SHM_DIR + 256];
                    struct stat st;
                    snprintf(path, sizeof path, "%s/%s", KUMI_LAUNCH_SHM_DIR, de->d_name);
                    if (lstat(path, &st) != 0 || st.st_uid != me) break;   /* not ours: not touched */
                    if (unlink(path) == 0) here++;
                    break;
                }
        }
        closedir(d);
        removed += here;
        if (!here) break;
    }
    return removed;
}

#endif
