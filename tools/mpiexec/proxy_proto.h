/* The link between mpiexec and a per-host proxy (kumi_proxy, proxy.c).
 *
 * The link is the launch channel itself: mpiexec starts the proxy through
 * the launch agent (ssh host kumi_proxy, rsh, a command the user names, or
 * directly for --launcher fork) and speaks to it over the agent's stdin and
 * stdout, so no port of mpiexec is open to the network and the job secret
 * reaches the host inside the channel (the START message), never on a
 * command line.  Frames as in kumi/launch_proto.h: u32 length (type
 * included, big endian), u8 type, payload; integers u32 big endian,
 * strings u32 length + bytes.
 *
 *   mpiexec -> proxy
 *     START    0x41  u32 hostidx, u32 nhosts, u32 nlocal, nlocal x u32 rank,
 *                    str secret, str jobid, str size, str wdir, u32 flags
 *                    (1: rank 0 is here and reads stdin; 2: -wdir given;
 *                    4: --report-bindings),
 *                    u32 argc, argc x str, u32 envc, envc x str,
 *                    str agent, str proxy path, u32 fork (for SPAWN),
 *                    u32 bind level (enum mx_bind_level), u32 overload
 *     GO       0x42  (empty) every host is ready: start the ranks
 *     SIGNAL   0x43  u32 signal, to every rank's process group
 *     STDIN    0x44  bytes for rank 0 (empty: end of input)
 *     PING     0x45  (empty) sent every second
 *     END      0x46  (empty) the job is over: kill what runs, flush, BYE
 *     SPAWN    0x47  u32 host, str name, u32 n, n x u32 host: start the
 *                    proxy of that host (a tree of proxies when there are
 *                    more hosts than --fanout), and forward to it what goes
 *                    to any of the n hosts (itself and those it starts)
 *     ROUTE    0x48  u32 host, frame: for that host (forwarded down)
 *     TORANK   0x49  u32 rank, frame: for that rank's control connection
 *                    (SPAWN_DONE)
 *   GO, SIGNAL, PING, END and FENCE_DONE go to the hosts mpiexec started;
 *   each proxy passes them to the proxies it started.
 *     FENCE_DONE 0x83 (KUMI_LAUNCH_MSG_FENCE_DONE, forwarded as is to the
 *                    host's ranks)
 *   proxy -> mpiexec
 *     READY    0x51  str host name (gethostname)
 *     STARTED  0x52  u32 rank, u32 pid
 *     OUT      0x53  u32 rank, u32 which (1 stdout, 2 stderr), bytes
 *                    (empty: end of that stream)
 *     FENCE    0x54  u32 nkv, nkv x { u32 rank, str key, str value },
 *                    u32 n, n x u32 rank: the host's puts since its last
 *                    fence, and the ranks that entered this fence (sent when
 *                    every rank of the host entered it or has exited)
 *     ABORT    0x55  u32 rank, u32 code (i32), str message
 *     EXIT     0x56  u32 rank, u32 wait status, u32 flags (1 connected,
 *                    2 finalized)
 *     PING     0x57  (empty) sent every second
 *     ERROR    0x58  str message (the proxy cannot go on)
 *     BYE      0x59  (empty) after END: nothing more will come
 *     FROM     0x5a  u32 host, frame: a frame of a host further down
 *                    (a proxy wraps what its children send, once)
 *     LOST     0x5b  str why (inside FROM): that host's proxy is gone
 *     SPAWNREQ 0x5c  u32 rank, bytes: a SPAWN payload that rank sent
 *                    (kumi/launch_proto.h); mpiexec answers with TORANK
 *     CKPT     0x5d  u32 rank, u32 type, bytes: a checkpoint answer of that
 *                    rank (type KUMI_LAUNCH_MSG_CKPT_READY / _DONE, the
 *                    payload as the rank sent it; the proxy answers READY
 *                    with ok 0 itself for a rank that has no control
 *                    connection or has finalized), or type 0 (empty): the
 *                    rank's connection closed (tools/mpiexec/ckpt.c)
 *   Checkpoints: CKPT and CKPT_GO reach the ranks as TORANK; each host's
 *   ranks write their images into the folder named in CKPT (a path every
 *   host sees: a shared file system).  Restart: START's optional tail
 *   u32 n, n x str gives each local rank (in START's order) its own
 *   argv[1] (kumi_restart IMAGE).
 * A side that hears nothing from the other for the host timeout (mpiexec
 * --host-timeout, 5 s by default; the proxy: twice that) takes the other as
 * gone: mpiexec stops the job naming the host and its ranks, the proxy kills
 * its ranks.  End of file on the link means the same at once. */
#ifndef KUMI_MPIEXEC_PROXY_PROTO_H
#define KUMI_MPIEXEC_PROXY_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <kumi/launch_proto.h>

#define MX_P_START    0x41
#define MX_P_GO       0x42
#define MX_P_SIGNAL   0x43
#define MX_P_STDIN    0x44
#define MX_P_PING     0x45
#define MX_P_END      0x46
#define MX_P_SPAWN    0x47
#define MX_P_ROUTE    0x48
#define MX_P_TORANK   0x49
#define MX_P_READY    0x51
#define MX_P_STARTED  0x52
#define MX_P_OUT      0x53
#define MX_P_FENCE    0x54
#define MX_P_ABORT    0x55
#define MX_P_EXIT     0x56
#define MX_P_PONG     0x57
#define MX_P_ERROR    0x58
#define MX_P_BYE      0x59
#define MX_P_FROM     0x5a
#define MX_P_LOST     0x5b
#define MX_P_SPAWNREQ 0x5c
#define MX_P_CKPT     0x5d

#define MX_LINK_MAX_FRAME  KUMI_LAUNCH_MAX_REPLY
#define MX_LINK_HIGH       (1024 * 1024)    /* stop feeding a link that holds this much */

struct mx_buf {
    char *data;
    size_t len, cap;     /* bytes held, allocated */
    size_t off;          /* bytes already consumed / written */
};

void mx_buf_reserve(struct mx_buf *b, size_t more);
void mx_buf_put(struct mx_buf *b, const void *p, size_t n);
void mx_buf_u32(struct mx_buf *b, uint32_t v);
void mx_buf_str(struct mx_buf *b, const char *s, size_t n);
void mx_buf_free(struct mx_buf *b);
void mx_frame_begin(struct mx_buf *b, int type, size_t plen);
/* Reader of a received payload: fails (returns -1) once past the end. */
struct mx_rd {
    const unsigned char *p;
    size_t n, pos;
    int bad;
};
uint32_t mx_rd_u32(struct mx_rd *r);
/* string: pointer into the payload, *len its length (NULL when bad) */
const char *mx_rd_str(struct mx_rd *r, size_t *len);
/* newly allocated NUL-terminated copy */
char *mx_rd_strdup(struct mx_rd *r);

/* A framed link over a read fd and a write fd (the same fd or two). */
struct mx_link {
    int rfd, wfd;
    struct mx_buf in, out;
    int eof;             /* read side closed or failed */
    int broken;          /* write side failed */
    double last_rx;      /* mx_now() of the last byte received */
};
/* Write what is queued without blocking; 0, or -1 when broken. */
int mx_link_flush(struct mx_link *l);
/* Read what is there without blocking; calls fn for each complete frame
 * (payload, length); returns -1 at EOF/error or when fn returns -1 or a
 * frame is too long. */
int mx_link_read(struct mx_link *l, double now, int (*fn)(void *arg, int type, const unsigned char *p, size_t n),
                 void *arg);
size_t mx_link_queued(const struct mx_link *l);
void mx_link_free(struct mx_link *l);

/* Launch agents: argv of "AGENT HOST PROXY" (%h in AGENT is the host; fork_mode: just PROXY) */
char **mx_agent_argv(const char *agent, const char *host, const char *proxy, int fork_mode);
void mx_agent_argv_free(char **av);
/* start it with pipes for its stdin (*wfd), stdout (*rfd) and stderr; pid or -1 */
pid_t mx_agent_start(char **av, int *rfd, int *wfd, int *errfd);

#endif
