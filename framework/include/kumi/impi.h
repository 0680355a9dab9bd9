/* kumi/impi.h: the IMPI (Interoperable MPI, protocol version 0.0) wire
 * format and the client side of the start-up exchange with an IMPI server.
 * Exported by libmpi (framework/core/impi_wire.c: pure encoders / parsers,
 * no I/O; framework/core/impi_client.c: the socket side).  Users: the
 * impi_server tool, the client side of mpiexec, p2p/impi and coll/impi.
 * The facts come from ../shared/impi/PROTOCOL.md (the "sheet", cited as
 * "sheet §N"); where the sheet marks a gap the choice made here says so.
 *
 * Every integer on the wire is big-endian two's complement of fixed width;
 * nothing here ever copies a native struct to the wire.
 *
 * Start-up (sheet §1.5), one client's view:
 *   -> AUTH{len 4} mask           <- {which, len}      [-> 8-byte key if which == KEY]
 *   -> IMPI{len 4} rank           <- IMPI{len 4} nclients   (once every client is in)
 *   for each label L (sheet §1.9 order):
 *   -> COLL{len 4+n} L data       <- COLL{len 8+m} L mask data(all clients, client order)
 *   -> DONE{0}                    <- DONE{0}                 (once every client sent DONE)
 *   ... the job runs ...
 *   -> FINI{0}                    (no reply; the server exits after every FINI)
 *
 * Parsers are strict: a frame is taken only when it is complete and well
 * formed for its direction (known command, exact payload length, label
 * payload a whole number of elements, lengths under a limit).  They return
 * the number of bytes the frame takes (> 0), KUMI_IMPI_MORE when the bytes
 * so far are a proper prefix of a well-formed frame (read more), or
 * KUMI_IMPI_BAD with a message in err.  They never read past `avail`. */
#ifndef KUMI_IMPI_H
#define KUMI_IMPI_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <kumi/kumi.h>

/* ---- constants (sheet §1.4, §1.6, §1.9, §3.4, §3.7) ---- */
#define KUMI_IMPI_CMD_AUTH 0x41555448u   /* "AUTH" */
#define KUMI_IMPI_CMD_IMPI 0x494D5049u   /* "IMPI" */
#define KUMI_IMPI_CMD_COLL 0x434F4C4Cu   /* "COLL" */
#define KUMI_IMPI_CMD_DONE 0x444F4E45u   /* "DONE" */
#define KUMI_IMPI_CMD_FINI 0x46494E49u   /* "FINI" */
#define KUMI_IMPI_CMD_HDR  8u            /* IMPI_Cmd {Int4 cmd; Int4 len} */

#define KUMI_IMPI_AUTH_NONE 0            /* mechanism numbers = bit numbers of the mask */
#define KUMI_IMPI_AUTH_KEY  1
#define KUMI_IMPI_AUTH_MASK_ALL 0x3u     /* the mechanisms this code knows */

#define KUMI_IMPI_NO_LABEL          0x0000u
#define KUMI_IMPI_C_VERSION         0x1000u
#define KUMI_IMPI_C_NHOSTS          0x1100u
#define KUMI_IMPI_C_NPROCS          0x1200u
#define KUMI_IMPI_C_DATALEN         0x1300u  /* draft: IMPI_C_PKTLEN (sheet §7.1) */
#define KUMI_IMPI_C_TAGUB           0x1400u
#define KUMI_IMPI_C_COLL_XSIZE      0x1500u
#define KUMI_IMPI_C_COLL_MAXLINEAR  0x1600u
#define KUMI_IMPI_H_IPV6            0x2000u
#define KUMI_IMPI_H_PORT            0x2100u
#define KUMI_IMPI_H_NPROCS          0x2200u
#define KUMI_IMPI_H_ACKMARK         0x2300u
#define KUMI_IMPI_H_HIWATER         0x2400u
#define KUMI_IMPI_P_IPV6            0x3000u
#define KUMI_IMPI_P_PID             0x3100u
#define KUMI_IMPI_NLABELS           14       /* the labels above but NO_LABEL */

#define KUMI_IMPI_MAX_CLIENTS       32       /* the client mask is 32 bits (sheet §1.1) */
#define KUMI_IMPI_MIN_TAG_UB        32767
#define KUMI_IMPI_MAX_TAG_UB        2147483647
#define KUMI_IMPI_MIN_DATALEN       1
#define KUMI_IMPI_COLL_XSIZE_DEFAULT     1024
#define KUMI_IMPI_COLL_MAXLINEAR_DEFAULT 4

#define KUMI_IMPI_PK_DATA       0
#define KUMI_IMPI_PK_DATASYNC   1
#define KUMI_IMPI_PK_PROTOACK   2
#define KUMI_IMPI_PK_SYNCACK    3
#define KUMI_IMPI_PK_CANCEL     4
#define KUMI_IMPI_PK_CANCELYES  5
#define KUMI_IMPI_PK_CANCELNO   6
#define KUMI_IMPI_PK_FINI       7
#define KUMI_IMPI_PACKET_SIZE   128u     /* IMPI_Packet header (sheet §3.3) */
#define KUMI_IMPI_HOSTID_LEN    16u      /* IPv6-sized host identifier */

/* parser results besides a frame size */
#define KUMI_IMPI_MORE  0
#define KUMI_IMPI_BAD   (-1)

/* Upper bound this code accepts for one COLL payload (a guard against a
 * length that would make a reader allocate without end): 64 MiB is room for
 * a P_IPV6 label of four million procs. */
#define KUMI_IMPI_MAX_PAYLOAD (64u << 20)

/* ---- big-endian primitives ---- */
static inline void kumi_impi_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline uint32_t kumi_impi_get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}
static inline void kumi_impi_put64(uint8_t *p, uint64_t v)
{
    kumi_impi_put32(p, (uint32_t)(v >> 32)); kumi_impi_put32(p + 4, (uint32_t)v);
}
static inline uint64_t kumi_impi_get64(const uint8_t *p)
{
    return (uint64_t)kumi_impi_get32(p) << 32 | kumi_impi_get32(p + 4);
}

/* ---- context ids (sheet §5.2; coll/impi, p2p/impi) ----
 * pk_cid is IMPI's 64-bit context id; Kumi's are int32 pairs (ctx, ctx + 1).
 *   MPI_COMM_WORLD           Kumi ctx 0 / 1        <-> pk_cid 0 / 1
 *   a communicator made by IMPI's rule over a parent spanning clients
 *   (MPI_Comm_create / dup / split, coll/impi): IMPI cid C (its collective
 *   context C + 1)           Kumi ctx KUMI_CTX_IMPI + C (+ 1) <-> pk_cid C (+ 1)
 *   any other Kumi context (Kumi-only: sub-communicators, partitioned
 *   channels, ...)           Kumi ctx X            <-> pk_cid KUMI_IMPI_CID_PRIVATE | X
 * so the Kumi context of an IMPI communicator follows from its IMPI cid on
 * every process of every client, and a packet that arrives before its
 * communicator exists here is kept as unexpected under the right context. */
#define KUMI_CTX_IMPI            0x20000000          /* also in core/ids.h */
#define KUMI_IMPI_CID_KUMI_LIMIT 0x10000000u         /* IMPI cids Kumi can hold */
#define KUMI_IMPI_CID_PRIVATE    0x8000000000000000ull

static inline uint64_t kumi_impi_cid_of_ctx(int32_t ctx)
{
    if (ctx == 0 || ctx == 1) return (uint64_t)ctx;
    if (ctx >= KUMI_CTX_IMPI && ctx < KUMI_CTX_IMPI + (int32_t)KUMI_IMPI_CID_KUMI_LIMIT)
        return (uint64_t)(ctx - KUMI_CTX_IMPI);
    return KUMI_IMPI_CID_PRIVATE | (uint32_t)ctx;
}
/* 0 and *ctx, or -1: a cid Kumi cannot hold */
static inline int kumi_impi_ctx_of_cid(uint64_t cid, int32_t *ctx)
{
    if (cid & KUMI_IMPI_CID_PRIVATE) *ctx = (int32_t)(uint32_t)cid;
    else if (cid < 2) *ctx = (int32_t)cid;
    else if (cid < KUMI_IMPI_CID_KUMI_LIMIT) *ctx = KUMI_CTX_IMPI + (int32_t)cid;
    else return -1;
    return 0;
}

/* ---- pacing of a launch's shared host connections (mpiexec --impi-client,
 * pacing/sockrate) ----
 * One per IMPI host in the memfd of KUMI_INTERNAL_IMPI_PACING (kumi/rpim.h):
 * the launch's ranks count their paced calls on the connection to that host
 * (a rank counts once from its paced call until the connection's send queue
 * has drained after it), and the rate goes back to unlimited only when the
 * count drops to zero, so that one communicator's call that ends never
 * lifts the rate another communicator's call still needs.  lock: robust,
 * process-shared, held only to change inflight and set the rate with it
 * (never while waiting for anything). */
struct kumi_impi_pacing {
    pthread_mutex_t lock;
    int32_t inflight;
    int32_t pad;
};

/* ---- names ---- */
/* "AUTH", ... or NULL for an unknown command. */
KUMI_EXPORT const char *kumi_impi_cmd_name(uint32_t cmd);
/* "C_VERSION", ..., or NULL for an unknown label. */
KUMI_EXPORT const char *kumi_impi_label_name(uint32_t label);
/* "DATA", ..., or NULL. */
KUMI_EXPORT const char *kumi_impi_packet_type_name(uint32_t type);

/* ---- labels (sheet §1.9) ---- */
enum kumi_impi_scope { KUMI_IMPI_SCOPE_CLIENT = 'C', KUMI_IMPI_SCOPE_HOST = 'H', KUMI_IMPI_SCOPE_PROC = 'P' };
/* Scope and element size (bytes) of a known label; -1 for an unknown one.
 * C-scope labels carry exactly one element, except C_VERSION (>= 1
 * elements of 8 bytes); H / P labels one element per host / proc. */
KUMI_EXPORT int kumi_impi_label_info(uint32_t label, int *scope, size_t *elem);
/* The labels in the order clients send them (sheet §1.9). */
KUMI_EXPORT extern const uint32_t kumi_impi_label_order[KUMI_IMPI_NLABELS];
/* Is n bytes a well-formed contribution of one client to label?  0 yes; -1
 * with a message.  count (0 = unknown) is the client's number of hosts (H
 * labels) or procs (P labels) when known. */
KUMI_EXPORT int kumi_impi_label_check(uint32_t label, size_t n, uint32_t count, char *err, size_t errlen);

/* ---- start-up frames ---- */
enum kumi_impi_dir { KUMI_IMPI_C2S = 1, KUMI_IMPI_S2C = 2 };

struct kumi_impi_frame {
    uint32_t cmd;               /* KUMI_IMPI_CMD_* */
    uint32_t len;               /* payload bytes after the 8-byte header */
    /* decoded payload, by cmd */
    uint32_t auth_mask;         /* AUTH, negotiated form (len 4) */
    int auth_oldkey;            /* AUTH of the draft's old text (len 8): key below, no reply */
    uint64_t auth_key;
    int32_t value;              /* IMPI: rank (C2S) or size (S2C) */
    uint32_t label;             /* COLL */
    uint32_t mask;              /* COLL S2C: clients that contributed */
    const uint8_t *data;        /* COLL: contribution(s), points into the parsed buffer */
    size_t ndata;
};

/* Parse one frame at buf[0..avail) sent in direction dir.  maxpayload (0 =
 * KUMI_IMPI_MAX_PAYLOAD) bounds a COLL payload.  Checks: a known command
 * allowed in that direction (FINI and AUTH only C2S); AUTH len 4 (a mask
 * with a known bit) or 8 (old-text key); IMPI len 4; COLL len >= 4 (C2S) or
 * 8 (S2C) with a known label whose data is a whole number of elements; DONE
 * and FINI len 0 (a server's DONE may carry a payload, which is skipped:
 * LAM tolerates it).  IMPI rank / size and the COLL mask are not checked
 * against a client count here (the caller knows it). */
KUMI_EXPORT int kumi_impi_frame_parse(const uint8_t *buf, size_t avail, int dir, size_t maxpayload,
                                      struct kumi_impi_frame *f, char *err, size_t errlen);

/* Encoders: write into out (room for the sizes given) and return the size. */
KUMI_EXPORT size_t kumi_impi_enc_cmd(uint8_t out[8], uint32_t cmd, uint32_t len);
KUMI_EXPORT size_t kumi_impi_enc_auth(uint8_t out[12], uint32_t mask);              /* AUTH{4} mask */
KUMI_EXPORT size_t kumi_impi_enc_impi(uint8_t out[12], int32_t rank_or_size);       /* IMPI{4} v */
/* COLL header: C2S 12 bytes (cmd, 4+n, label), S2C 16 bytes (cmd, 8+n, label,
 * mask); the n data bytes follow.  Returns the header size. */
KUMI_EXPORT size_t kumi_impi_enc_coll_hdr(uint8_t out[16], int dir, uint32_t label, uint32_t mask, size_t n);

/* The AUTH negotiation's raw messages (no IMPI_Cmd header, sheet §1.6). */
KUMI_EXPORT size_t kumi_impi_enc_server_auth(uint8_t out[8], int32_t which, int32_t len);
/* 8 bytes -> which, len.  Fails (-1, message) unless which is NONE or KEY
 * (and the mask offered it: mask 0 skips that check); len is not checked
 * (its meaning was not found, sheet §1.6). */
KUMI_EXPORT int kumi_impi_dec_server_auth(const uint8_t in[8], uint32_t offered, int32_t *which, int32_t *len,
                                          char *err, size_t errlen);

/* A 64-bit key as text: decimal (LAM's IMPI_AUTH_KEY, read with atoll: a
 * negative number stands for its two's complement bits) or 0x hex.  0 / -1. */
KUMI_EXPORT int kumi_impi_parse_key(const char *text, uint64_t *key);

/* ---- what one client contributes, and the job every client learns ---- */
struct kumi_impi_host {
    uint8_t id[KUMI_IMPI_HOSTID_LEN];   /* H_IPV6 */
    int32_t port;                       /* H_PORT: the dance listener */
    int32_t nprocs;                     /* H_NPROCS */
    uint32_t ackmark, hiwater;          /* H_ACKMARK, H_HIWATER */
};
struct kumi_impi_proc {
    uint8_t id[KUMI_IMPI_HOSTID_LEN];   /* P_IPV6 */
    int64_t pid;                        /* P_PID (8 bytes, sheet §7.2) */
};
struct kumi_impi_mine {                 /* one client's contribution */
    int32_t datalen;                    /* C_DATALEN (>= 1) */
    int32_t tagub;                      /* C_TAGUB (32767 .. 2^31-1) */
    int32_t xsize, maxlinear;           /* -1 = default */
    int nhosts, nprocs;
    const struct kumi_impi_host *hosts; /* nhosts */
    const struct kumi_impi_proc *procs; /* nprocs, host 0's first */
};
struct kumi_impi_job {
    int nclients;
    uint32_t mask[KUMI_IMPI_NLABELS];   /* client mask of each label's reply */
    int32_t c_nhosts[KUMI_IMPI_MAX_CLIENTS], c_nprocs[KUMI_IMPI_MAX_CLIENTS];
    int32_t c_datalen[KUMI_IMPI_MAX_CLIENTS], c_tagub[KUMI_IMPI_MAX_CLIENTS];
    int32_t c_xsize[KUMI_IMPI_MAX_CLIENTS], c_maxlinear[KUMI_IMPI_MAX_CLIENTS];
    uint32_t c_version_max_minor[KUMI_IMPI_MAX_CLIENTS];  /* highest 0.x a client lists */
    int nhosts, nprocs;
    int first_host[KUMI_IMPI_MAX_CLIENTS + 1], first_proc_of_client[KUMI_IMPI_MAX_CLIENTS + 1];
    struct kumi_impi_host *hosts;       /* nhosts, client order */
    struct kumi_impi_proc *procs;       /* nprocs: MPI_COMM_WORLD order */
    int *host_first_proc;               /* nhosts + 1 */
    int *proc_index;                    /* nprocs: procs ordered by (P_IPV6, P_PID), for lookups */
    /* derived (sheet §1.10) */
    int32_t pk_maxlen, tag_ub, xsize, maxlinear;
    uint32_t ackmark, hiwater;
    unsigned seen;                      /* bit i: label kumi_impi_label_order[i] taken */
};

/* Encode my contribution to label (one of the 14): returns its size and
 * writes it to out if out != NULL (call once with NULL for the size). */
KUMI_EXPORT size_t kumi_impi_label_encode(uint32_t label, const struct kumi_impi_mine *m, uint8_t *out);
/* Take the server's reply to label into job (job zeroed and nclients set
 * before the first call).  Checks the data against what earlier labels said
 * (C labels: 4 bytes per contributing client; H / P: sums of C_NHOSTS /
 * C_NPROCS; versions ascending and listing 0.0; bounds of TAGUB, DATALEN).
 * 0, or -1 with a message.  kumi_impi_job_finish checks that every label
 * came, agrees XSIZE / MAXLINEAR, builds the derived tables; 0 / -1. */
KUMI_EXPORT int kumi_impi_job_add(struct kumi_impi_job *job, uint32_t label, uint32_t mask,
                                  const uint8_t *data, size_t n, char *err, size_t errlen);
KUMI_EXPORT int kumi_impi_job_finish(struct kumi_impi_job *job, char *err, size_t errlen);
KUMI_EXPORT void kumi_impi_job_free(struct kumi_impi_job *job);
/* Lookups in a finished job.  The global proc (= MPI_COMM_WORLD rank) whose
 * IMPI_Proc is (id, pid), compared bytewise as announced (sheet §3.1), or -1;
 * kumi_impi_job_finish refuses two procs with the same pair (P_PID must be
 * unique among procs of one P_IPV6, sheet §1.9).  The host of global proc p,
 * the client of host h (-1 when out of range). */
KUMI_EXPORT int kumi_impi_job_find_proc(const struct kumi_impi_job *job, const uint8_t id[16], int64_t pid);
KUMI_EXPORT int kumi_impi_job_proc_host(const struct kumi_impi_job *job, int p);
KUMI_EXPORT int kumi_impi_job_host_client(const struct kumi_impi_job *job, int h);

/* Host identifiers (sheet §6.3): IPv4 goes in as IPv4-compatible (12 zero
 * bytes + address, as LAM); both that and IPv4-mapped (::ffff:a.b.c.d, as
 * META) come out as IPv4.  family: AF_INET (addr 4 bytes) / AF_INET6 (16). */
KUMI_EXPORT void kumi_impi_hostid_set(uint8_t id[16], int family, const void *addr);
/* AF_INET with 4 bytes in addr, or AF_INET6 with 16. */
KUMI_EXPORT int kumi_impi_hostid_get(const uint8_t id[16], void *addr);

/* ---- packet header (sheet §3.3) ---- */
struct kumi_impi_packet {
    uint32_t type, len;
    uint8_t src_host[16];  int64_t src_pid;
    uint8_t dest_host[16]; int64_t dest_pid;
    uint64_t srqid, drqid, msglen;
    int32_t lsrank, tag;
    uint64_t cid, seqnum;
    int64_t count;
    uint64_t dtype, reserved;
};
KUMI_EXPORT void kumi_impi_packet_encode(const struct kumi_impi_packet *pk, uint8_t out[128]);
/* Parse a header at buf[0..avail): KUMI_IMPI_MORE under 128 bytes, else 128
 * or KUMI_IMPI_BAD: unknown type; a DATA / DATASYNC whose pk_len exceeds
 * maxdata (the agreed IMPI_Pk_maxlen; 0 = no bound) or its pk_msglen.
 * pk_len of other types is kept as sent but means nothing (LAM writes 128
 * and sends no payload, sheet §3.5): use kumi_impi_packet_payload. */
KUMI_EXPORT int kumi_impi_packet_parse(const uint8_t *buf, size_t avail, uint32_t maxdata,
                                       struct kumi_impi_packet *pk, char *err, size_t errlen);
/* Bytes of user data that follow the header: pk_len for DATA / DATASYNC, 0 else. */
KUMI_EXPORT uint32_t kumi_impi_packet_payload(const struct kumi_impi_packet *pk);

/* ---- client side of the start-up exchange (impi_client.c) ---- */
struct kumi_impi_client {
    int fd;
    int rank, size;             /* my client rank; number of clients (after kumi_impi_client_impi) */
    int timeout_ms;             /* bound of each wait for the server (<= 0: none) */
    long long key_sent_ms;      /* when this client sent its key (monotonic ms; 0: not sent) */
    char server[80];            /* "host:port" as given */
    char err[320];              /* the last error */
};
/* Connect to "a.b.c.d:port", "[v6]:port" or "name:port", within timeout_ms
 * (<= 0: no bound, then also for every later wait).  0 / -1 (c->err). */
KUMI_EXPORT int kumi_impi_client_connect(struct kumi_impi_client *c, const char *hostport, int timeout_ms);
/* AUTH: offer mask (bits 1<<KUMI_IMPI_AUTH_NONE, 1<<KUMI_IMPI_AUTH_KEY) and
 * send key when the server picks KEY.  *chosen (may be NULL) gets the
 * server's choice. */
KUMI_EXPORT int kumi_impi_client_auth(struct kumi_impi_client *c, uint32_t mask, uint64_t key, int *chosen);
/* IMPI: send my rank, wait for the number of clients (c->size). */
KUMI_EXPORT int kumi_impi_client_impi(struct kumi_impi_client *c, int rank);
/* One COLL round: send n bytes for label, wait for that label's reply (a
 * reply for another label is an error: the rounds are sequential).  The
 * reply's data is malloc'ed into *out (free it), its size *nout. */
KUMI_EXPORT int kumi_impi_client_coll(struct kumi_impi_client *c, uint32_t label, const void *data, size_t n,
                                      uint32_t *mask, uint8_t **out, size_t *nout);
/* Every label of mine in the sheet's order into job (then finished). */
KUMI_EXPORT int kumi_impi_client_labels(struct kumi_impi_client *c, const struct kumi_impi_mine *m,
                                        struct kumi_impi_job *job);
/* DONE, wait for the server's DONE. */
KUMI_EXPORT int kumi_impi_client_done(struct kumi_impi_client *c);
/* FINI (no reply) and close. */
KUMI_EXPORT int kumi_impi_client_fini(struct kumi_impi_client *c);
/* Close without FINI (the server takes it for a dead client). */
KUMI_EXPORT void kumi_impi_client_close(struct kumi_impi_client *c);

/* The job file that mpiexec --impi-client writes for its ranks
 * (KUMI_INTERNAL_IMPI_JOB; tools/mpiexec/impi.c): "KIMP", this launch's
 * client, the number of clients, then each label's reply (label, client
 * mask, length, data), taken into a finished job.  0, or -1 with err set
 * (job freed).  myclient may be NULL. */
KUMI_EXPORT int kumi_impi_job_read(const char *path, struct kumi_impi_job *job, int *myclient, char *err,
                                   size_t errlen);

#endif
