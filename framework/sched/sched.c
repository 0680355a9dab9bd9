/* Collective schedules: building (kumi/sched.h), sealing, and the engine
 * that runs them in the MPI progress loop.
 *
 * Building appends nodes to a growing array and dependencies to an edge
 * list.  Sealing (at issue) adds START -> node for every node without a
 * predecessor and node -> END for every node without a successor, and turns
 * the edges into one array of successor indices (CSR, in the order the
 * edges were made): from then on the schedule is two flat arrays, which is
 * what another engine (a progress thread, io_uring, the kernel module) gets.
 *
 * The progress-loop engine keeps per node the number of predecessors not yet
 * done and a FIFO of ready nodes.  kumi_sched_advance() runs ready nodes:
 * COPY, CALC and NOP at once; SEND and RECV become internal point-to-point
 * requests in the communicator's collective context whose completion
 * callback marks the node done and advances again (the callback may run
 * inside a transport upcall: sends then queue, which the request layer
 * handles).  END completes the user's request.  Advancing is never
 * re-entered: a node that completes while it runs only queues its
 * successors.  An error (a failed start, a truncated receive) is kept and
 * reported by the request when END is reached; the rest still runs, so no
 * peer waits forever for a message this rank owes it.
 */
#include "sched/sched.h"
#include <stdlib.h>
#include <string.h>

static int sched_nomem(struct kumi_sched *s)
{
    if (s->err == MPI_SUCCESS) s->err = kumi_error(MPI_ERR_NO_MEM, "collective schedule: out of memory");
    return -1;
}

int kumi_sched_fail(struct kumi_sched *s, int err)
{
    if (s && s->err == MPI_SUCCESS) s->err = err;
    return -1;
}

MPI_Comm kumi_sched_comm(const struct kumi_sched *s)
{
    return (MPI_Comm)s->comm;
}

static bool grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap) return true;
    uint32_t nc = *cap ? *cap * 2 : 16;
    while (nc < need) nc *= 2;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p) return false;
    *arr = p;
    *cap = nc;
    return true;
}

static int new_node(struct kumi_sched *s, int kind)
{
    if (s->err != MPI_SUCCESS) return -1;
    if (s->sealed) return kumi_sched_fail(s, kumi_error(MPI_ERR_OTHER, "collective schedule: "
                                                        "a node was added after the schedule was issued"));
    if (s->n >= 0x7fffffffu || !grow((void **)&s->node, &s->cap, s->n + 1, sizeof *s->node))
        return sched_nomem(s);
    struct kumi_sched_node *nd = &s->node[s->n];
    memset(nd, 0, sizeof *nd);
    nd->kind = (uint8_t)kind;
    nd->peer = MPI_PROC_NULL;
    return (int)s->n++;
}

/* Keep dt alive as long as the schedule (user types may be freed meanwhile). */
static bool hold_dt(struct kumi_sched *s, MPI_Datatype h, const char *what)
{
    struct kumi_dt *dt = kumi_dt_get(h);
    if (!dt) {
        kumi_sched_fail(s, kumi_error(MPI_ERR_TYPE, "collective schedule: invalid datatype for %s", what));
        return false;
    }
    if (dt->predefined) return true;
    for (int i = 0; i < s->ndts; i++)
        if (s->dts[i] == dt) return true;
    uint32_t cap = (uint32_t)s->dtcap;
    if (!grow((void **)&s->dts, &cap, (uint32_t)s->ndts + 1, sizeof *s->dts)) { sched_nomem(s); return false; }
    s->dtcap = (int)cap;
    kumi_dt_retain(dt);
    s->dts[s->ndts++] = dt;
    return true;
}

static bool hold_op(struct kumi_sched *s, MPI_Op h)
{
    struct kumi_op *op = kumi_op_get(h);
    if (!op) {
        kumi_sched_fail(s, kumi_error(MPI_ERR_OP, "collective schedule: invalid op"));
        return false;
    }
    if (op->predefined) return true;
    for (int i = 0; i < s->nops; i++)
        if (s->ops[i] == op) return true;
    uint32_t cap = (uint32_t)s->opcap;
    if (!grow((void **)&s->ops, &cap, (uint32_t)s->nops + 1, sizeof *s->ops)) { sched_nomem(s); return false; }
    s->opcap = (int)cap;
    op->refcount++;
    s->ops[s->nops++] = op;
    return true;
}

static int msg_node(struct kumi_sched *s, int kind, const void *buf, size_t count, MPI_Datatype dt,
                    int peer, int tag)
{
    if (s->err != MPI_SUCCESS) return -1;
    if (tag < 0 || tag > KUMI_SCHED_TAG_MAX)
        return kumi_sched_fail(s, kumi_error(MPI_ERR_TAG, "collective schedule: node tag %d is outside "
                                             "0..%d", tag, KUMI_SCHED_TAG_MAX));
    if (peer != MPI_PROC_NULL && (peer < 0 || peer >= kumi_comm_peer_size(s->comm)))
        return kumi_sched_fail(s, kumi_error(MPI_ERR_RANK, "collective schedule: invalid rank %d in a "
                                             "communicator of size %d", peer, kumi_comm_peer_size(s->comm)));
    if (!hold_dt(s, dt, kind == KUMI_SCHED_SEND ? "a send" : "a receive")) return -1;
    int i = new_node(s, kind);
    if (i < 0) return -1;
    struct kumi_sched_node *nd = &s->node[i];
    nd->peer = peer;
    nd->tag = (uint16_t)tag;
    nd->buf = (uint64_t)(uintptr_t)buf;
    nd->count = count;
    nd->dt = (uint64_t)(uintptr_t)dt;
    return i;
}

int kumi_sched_send(struct kumi_sched *s, const void *buf, size_t count, MPI_Datatype dt, int peer, int tag)
{
    return msg_node(s, KUMI_SCHED_SEND, buf, count, dt, peer, tag);
}

int kumi_sched_recv(struct kumi_sched *s, void *buf, size_t count, MPI_Datatype dt, int peer, int tag)
{
    return msg_node(s, KUMI_SCHED_RECV, buf, count, dt, peer, tag);
}

int kumi_sched_calc(struct kumi_sched *s, const void *in, void *inout, size_t count, MPI_Datatype dt, MPI_Op op)
{
    if (s->err != MPI_SUCCESS || !hold_dt(s, dt, "a reduction") || !hold_op(s, op)) return -1;
    if (!kumi_op_valid_for(kumi_op_get(op), kumi_dt_get(dt)))
        return kumi_sched_fail(s, kumi_error(MPI_ERR_OP, "collective schedule: the op is not defined "
                                             "for the datatype"));
    int i = new_node(s, KUMI_SCHED_CALC);
    if (i < 0) return -1;
    struct kumi_sched_node *nd = &s->node[i];
    nd->buf = (uint64_t)(uintptr_t)in;
    nd->buf2 = (uint64_t)(uintptr_t)inout;
    nd->count = count;
    nd->dt = (uint64_t)(uintptr_t)dt;
    nd->dt2 = (uint64_t)(uintptr_t)op;
    return i;
}

int kumi_sched_copy(struct kumi_sched *s, const void *src, size_t scount, MPI_Datatype sdt, void *dst,
                    size_t dcount, MPI_Datatype ddt)
{
    if (s->err != MPI_SUCCESS || !hold_dt(s, sdt, "a copy") || !hold_dt(s, ddt, "a copy")) return -1;
    int i = new_node(s, KUMI_SCHED_COPY);
    if (i < 0) return -1;
    struct kumi_sched_node *nd = &s->node[i];
    nd->buf = (uint64_t)(uintptr_t)src;
    nd->count = scount;
    nd->dt = (uint64_t)(uintptr_t)sdt;
    nd->buf2 = (uint64_t)(uintptr_t)dst;
    nd->count2 = dcount;
    nd->dt2 = (uint64_t)(uintptr_t)ddt;
    return i;
}

int kumi_sched_nop(struct kumi_sched *s)
{
    return new_node(s, KUMI_SCHED_NOP);
}

void kumi_sched_after(struct kumi_sched *s, int node, int pred)
{
    if (node < 0 || pred < 0 || s->err != MPI_SUCCESS) return;
    if ((uint32_t)node >= s->n || (uint32_t)pred >= s->n || node == pred || node < 2 || pred < 2) {
        kumi_sched_fail(s, kumi_error(MPI_ERR_ARG, "collective schedule: invalid dependency %d -> %d",
                                      pred, node));
        return;
    }
    if (s->sealed) {
        kumi_sched_fail(s, kumi_error(MPI_ERR_OTHER, "collective schedule: a dependency was added after "
                                      "the schedule was issued"));
        return;
    }
    if (!grow((void **)&s->edge, &s->ecap, s->nedge + 1, sizeof *s->edge)) { sched_nomem(s); return; }
    s->edge[s->nedge].from = (uint32_t)pred;
    s->edge[s->nedge].to = (uint32_t)node;
    s->nedge++;
}

void kumi_sched_after_all(struct kumi_sched *s, int node, const int *preds, int n)
{
    for (int i = 0; i < n; i++) kumi_sched_after(s, node, preds[i]);
}

void *kumi_sched_alloc(struct kumi_sched *s, size_t bytes)
{
    if (s->err != MPI_SUCCESS) return NULL;
    uint32_t cap = (uint32_t)s->memcap;
    if (!grow((void **)&s->mem, &cap, (uint32_t)s->nmem + 1, sizeof *s->mem)) { sched_nomem(s); return NULL; }
    s->memcap = (int)cap;
    void *p = malloc(bytes ? bytes : 1);
    if (!p) { sched_nomem(s); return NULL; }
    s->mem[s->nmem++] = p;
    return p;
}

/* ------------------------------------------------------------ lifetime */
int kumi_sched_begin(struct kumi_comm *comm, const char *fn, bool persistent, MPI_Info info,
                     MPI_Request *request, struct kumi_sched **s)
{
    *s = NULL;
    if (!request) return kumi_error(MPI_ERR_ARG, "%s: argument request is NULL", fn);
    *request = MPI_REQUEST_NULL;
    if (persistent && info != MPI_INFO_NULL && !kumi_info_get(info))
        return kumi_error(MPI_ERR_INFO, "%s: argument info is not a valid info object", fn);
    return kumi_sched_create(comm, persistent ? KUMI_SCHED_PERSISTENT : KUMI_SCHED_NBC, s);
}

/* Spare schedules: a destroyed schedule keeps its arrays (nodes, edges,
 * successors, per-node run state, the lists of what it owns) for the next
 * one, so a repeated small non-blocking collective allocates nothing but its
 * request and scratch memory (building and sealing an 8-byte MPI_Iallreduce
 * took a dozen malloc / free pairs).  Under the library lock, like every
 * schedule. */
#define KUMI_SCHED_SPARES 4
static struct kumi_sched *spares[KUMI_SCHED_SPARES];
static int nspares;

static struct kumi_sched *sched_alloc(void)
{
    if (nspares == 0) return calloc(1, sizeof(struct kumi_sched));
    struct kumi_sched *o = spares[--nspares], k = { 0 };
    k.cap = o->cap; k.node = o->node;
    k.ecap = o->ecap; k.edge = o->edge;
    k.scap = o->scap; k.succ = o->succ;
    k.pcap = o->pcap; k.pending = o->pending; k.ready = o->ready;
    k.memcap = o->memcap; k.mem = o->mem;
    k.dtcap = o->dtcap; k.dts = o->dts;
    k.opcap = o->opcap; k.ops = o->ops;
    *o = k;
    return o;
}

static void sched_free_arrays(struct kumi_sched *s)
{
    free(s->mem); free(s->dts); free(s->ops);
    free(s->node); free(s->succ); free(s->edge);
    free(s->pending); free(s->ready);
}

void kumi_sched_spares_free(void)
{
    while (nspares > 0) {
        struct kumi_sched *s = spares[--nspares];
        sched_free_arrays(s);
        free(s);
    }
}

int kumi_sched_create(struct kumi_comm *comm, int space, struct kumi_sched **out)
{
    struct kumi_sched *s = sched_alloc();
    *out = NULL;
    if (!s) return kumi_error(MPI_ERR_NO_MEM, "collective schedule: out of memory");
    s->magic = KUMI_SCHED_MAGIC;
    s->comm = comm;
    /* Every rank issues the collectives of a communicator in the same order,
     * so the n-th one gets the same tag base everywhere. */
    uint32_t seq, slots;
    int32_t base;
    const char *kind;
    if (space == KUMI_SCHED_CAD) {
        seq = comm->cad_seq++; slots = KUMI_SCHED_SLOTS_CAD; base = KUMI_SCHED_TAG_CAD; kind = "CAD schedules";
    } else if (space == KUMI_SCHED_PERSISTENT) {
        seq = comm->pcoll_seq++; slots = KUMI_SCHED_SLOTS_PERS; base = KUMI_SCHED_TAG_PERS;
        kind = "persistent collectives";
    } else {
        seq = comm->nbc_seq++; slots = KUMI_SCHED_SLOTS_NBC; base = KUMI_SCHED_TAG_NBC;
        kind = "non-blocking collectives";
    }
    s->tagbase = base + (int32_t)((seq % slots) << 12);
    for (struct kumi_sched *o = comm->scheds; o; o = o->cnext)
        if (o->tagbase == s->tagbase) {
            sched_free_arrays(s);
            free(s);
            return kumi_error(MPI_ERR_OTHER, "collective schedule: %u %s were made on this communicator since "
                              "one that is still alive; they would share its message tags (free older "
                              "ones)", slots, kind);
        }
    s->cnext = comm->scheds;
    if (s->cnext) s->cnext->cprev = s;
    comm->scheds = s;
    comm->refcount++;
    if (new_node(s, KUMI_SCHED_START) != 0 || new_node(s, KUMI_SCHED_END) != 1) {
        kumi_sched_destroy(s);
        return kumi_error(MPI_ERR_NO_MEM, "collective schedule: out of memory");
    }
    *out = s;
    return MPI_SUCCESS;
}

/* SEND nodes of the running schedules not started yet (see kumi_sched_unsent):
 * written by the library's holder only, read by the uring engine's thread
 * without it */
static int unsent;

static void unsent_add(int d)
{
    __atomic_store_n(&unsent, __atomic_load_n(&unsent, __ATOMIC_RELAXED) + d, __ATOMIC_RELAXED);
}

int kumi_sched_unsent(void)
{
    return __atomic_load_n(&unsent, __ATOMIC_RELAXED);
}

void kumi_sched_destroy(struct kumi_sched *s)
{
    if (!s) return;
    if (s->unsent) unsent_add(-(int)s->unsent);    /* (freed before its run's end) */
    if (s->on_destroy) s->on_destroy(s->on_destroy_arg);
    kumi_sched_kmod_free(s);
    for (int i = 0; i < s->nmem; i++) free(s->mem[i]);
    for (int i = 0; i < s->ndts; i++) kumi_dt_release(s->dts[i]);
    for (int i = 0; i < s->nops; i++) kumi_op_release(s->ops[i]);
    free(s->uflag);
    s->uflag = NULL;
    if (s->cprev) s->cprev->cnext = s->cnext;
    else s->comm->scheds = s->cnext;
    if (s->cnext) s->cnext->cprev = s->cprev;
    kumi_comm_release(s->comm);
    s->magic = KUMI_MAGIC_DEAD;
    if (nspares < KUMI_SCHED_SPARES && s->cap <= 4096) {
        spares[nspares++] = s;         /* its arrays serve the next schedule */
        return;
    }
    sched_free_arrays(s);
    free(s);
}

/* Edges to CSR: START before every node without a predecessor, every node
 * without a successor before END (an empty schedule: START -> END). */
static int seal(struct kumi_sched *s)
{
    uint32_t n = s->n;
    /* per node: successors to come, and whether START / END is added;
     * on the stack for a small schedule */
    uint32_t small[3 * 64], *outdeg = small;
    if (n > 64 && !(outdeg = malloc((size_t)n * 3 * sizeof *outdeg))) return sched_nomem(s);
    uint32_t *root = outdeg + n, *sink = root + n;
    memset(outdeg, 0, (size_t)n * 3 * sizeof *outdeg);
    uint32_t pcap = s->pcap;
    if (!grow((void **)&s->pending, &s->pcap, n, sizeof *s->pending)) goto nomem;
    if (s->pcap != pcap || !s->ready) { /* ready: the same capacity as pending */
        uint32_t *r = realloc(s->ready, (size_t)s->pcap * sizeof *r);
        if (!r) { s->pcap = 0; goto nomem; }
        s->ready = r;
    }
    bool forward = true;                 /* every edge goes to a later node: no cycle */
    for (uint32_t e = 0; e < s->nedge; e++) {
        outdeg[s->edge[e].from]++;
        s->node[s->edge[e].to].npred++;
        forward &= s->edge[e].from < s->edge[e].to;
    }
    for (uint32_t i = 2; i < n; i++) {
        if (s->node[i].npred == 0) { root[i] = 1; s->node[i].npred = 1; outdeg[0]++; }
        if (outdeg[i] == 0) { sink[i] = 1; outdeg[i] = 1; s->node[1].npred++; }
    }
    if (n == 2) { outdeg[0] = 1; s->node[1].npred = 1; }
    uint32_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        s->node[i].first = total;
        s->node[i].nsucc = 0;
        total += outdeg[i];
    }
    if (!grow((void **)&s->succ, &s->scap, total ? total : 1, sizeof *s->succ)) goto nomem;
#define SUCC(f, t) (s->succ[s->node[f].first + s->node[f].nsucc++] = (t))
    for (uint32_t i = 2; i < n; i++)
        if (root[i]) SUCC(0, i);
    if (n == 2) SUCC(0, 1);
    for (uint32_t e = 0; e < s->nedge; e++) SUCC(s->edge[e].from, s->edge[e].to);
    for (uint32_t i = 2; i < n; i++)
        if (sink[i]) SUCC(i, 1);
#undef SUCC
    if (outdeg != small) free(outdeg);
    /* a cycle would never reach END: every node must come out of a topological
     * order (the builders' edges all go forward, which is one: no search) */
    uint32_t seen = forward ? n : 0, *q = s->ready;
    if (!forward)
        for (uint32_t i = 0; i < n; i++) s->pending[i] = s->node[i].npred;
    q[0] = 0;
    for (uint32_t h = 0, t = 1; !forward && h < t; h++, seen++)
        for (uint32_t k = 0; k < s->node[q[h]].nsucc; k++) {
            uint32_t j = s->succ[s->node[q[h]].first + k];
            if (--s->pending[j] == 0) q[t++] = j;
        }
    if (seen != n)
        return kumi_sched_fail(s, kumi_error(MPI_ERR_ARG, "collective schedule: its dependencies form a cycle"));
    s->nedge = 0;                        /* a small edge array stays for a next schedule (spares) */
    if (s->ecap > 256) {
        free(s->edge);
        s->edge = NULL;
        s->ecap = 0;
    }
    s->sealed = true;
    return 0;
nomem:
    if (outdeg != small) free(outdeg);
    return sched_nomem(s);
}

int kumi_sched_seal(struct kumi_sched *s)
{
    if (s->err == MPI_SUCCESS && !s->sealed) seal(s);
    return s->err;
}

/* ------------------------------------------------------------ the engine */
static void advance(struct kumi_sched *s);

static void push_ready(struct kumi_sched *s, uint32_t i)
{
    s->ready[s->rtail++] = i;
}

static void node_done(struct kumi_sched *s, uint32_t i)
{
    const struct kumi_sched_node *nd = &s->node[i];
    for (uint32_t k = 0; k < nd->nsucc; k++) {
        uint32_t j = s->succ[nd->first + k];
        if (--s->pending[j] == 0) push_ready(s, j);
    }
}

static void run_error(struct kumi_sched *s, int rc)
{
    if (s->rerr == MPI_SUCCESS) s->rerr = rc;
}

/* A SEND or RECV node that another engine ran (sched/uring.c) is over. */
void kumi_sched_msg_done(struct kumi_sched *s, uint32_t i, int err)
{
    if (err != MPI_SUCCESS) run_error(s, err);
    s->inflight--;
    node_done(s, i);
    advance(s);
}

/* A SEND or RECV request of node cb_idx completed. */
static void sub_done(struct kumi_req *r)
{
    struct kumi_sched *s = r->ext;
    uint32_t i = (uint32_t)r->cb_idx;
    int e = r->status.MPI_ERROR;
    if (e == MPI_ERR_TRUNCATE)
        e = kumi_error(MPI_ERR_TRUNCATE, "%s: a message of %llu bytes from rank %d was truncated to %zu bytes "
                       "(the ranks disagree on counts or datatypes)", s->req ? s->req->fname : "collective",
                       (unsigned long long)r->msglen, r->status.MPI_SOURCE, r->rx.cap);
    if (e != MPI_SUCCESS) run_error(s, e);
    kumi_req_free(r);
    s->inflight--;
    node_done(s, i);
    advance(s);
}

static void start_msg(struct kumi_sched *s, uint32_t i)
{
    const struct kumi_sched_node *nd = &s->node[i];
    bool send = nd->kind == KUMI_SCHED_SEND;
    struct kumi_comm *c = s->comm;
    if (send && s->unsent) {
        s->unsent--;
        unsent_add(-1);
    }
    if (kumi_sched_uring_take(s, i)) return;       /* the io_uring engine runs it */
    struct kumi_req *r = kumi_req_internal(send ? KUMI_REQ_SEND : KUMI_REQ_RECV, c, c->ctx + 1, s->req->fname,
                                           (void *)(uintptr_t)nd->buf, (size_t)nd->count,
                                           kumi_dt_get((MPI_Datatype)(uintptr_t)nd->dt), nd->peer,
                                           s->tagbase + nd->tag, sub_done, s, (int)i);
    if (!r) {
        run_error(s, kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", s->req->fname));
        node_done(s, i);
        return;
    }
    s->inflight++;
    int rc = send ? kumi_req_start_send(r) : kumi_req_start_recv(r);   /* may complete at once */
    if (rc != MPI_SUCCESS) {             /* a failed start never calls sub_done */
        s->inflight--;
        run_error(s, rc);
        kumi_req_free(r);
        node_done(s, i);
    }
}

static void finish(struct kumi_sched *s)
{
    struct kumi_req *r = s->req;
    if (s->unsent) {                     /* (an error ended it early) */
        unsent_add(-(int)s->unsent);
        s->unsent = 0;
    }
    kumi_sched_engine_finished();
    r->status.MPI_ERROR = s->rerr;
    r->pending = 0;
    kumi_req_check_complete(r);          /* may free r (and s) if the user freed the request */
}

void kumi_sched_engine_done(struct kumi_sched *s, int err)
{
    if (s->rerr == MPI_SUCCESS) s->rerr = err;
    finish(s);
}

static void advance(struct kumi_sched *s)
{
    if (s->busy) return;
    s->busy = true;
    while (s->rhead < s->rtail) {
        uint32_t i = s->ready[s->rhead++];
        const struct kumi_sched_node *nd = &s->node[i];
        int rc;
        switch (nd->kind) {
        case KUMI_SCHED_SEND:
        case KUMI_SCHED_RECV:
            start_msg(s, i);
            break;
        case KUMI_SCHED_CALC:
            rc = kumi_op_reduce((MPI_Op)(uintptr_t)nd->dt2, (const void *)(uintptr_t)nd->buf,
                                (void *)(uintptr_t)nd->buf2, (size_t)nd->count, (MPI_Datatype)(uintptr_t)nd->dt);
            if (rc != MPI_SUCCESS) run_error(s, rc);
            node_done(s, i);
            break;
        case KUMI_SCHED_COPY:
            rc = kumi_dt_copy((const void *)(uintptr_t)nd->buf, (size_t)nd->count, (MPI_Datatype)(uintptr_t)nd->dt,
                              (void *)(uintptr_t)nd->buf2, (size_t)nd->count2, (MPI_Datatype)(uintptr_t)nd->dt2);
            if (rc != MPI_SUCCESS) run_error(s, rc);
            node_done(s, i);
            break;
        case KUMI_SCHED_END:
            s->busy = false;
            finish(s);                   /* every other node is done: nothing else is queued */
            return;
        default:                         /* START, NOP */
            node_done(s, i);
            break;
        }
    }
    s->busy = false;
}

static void run(struct kumi_sched *s)
{
    uint32_t ns = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        s->pending[i] = s->node[i].npred;
        ns += s->node[i].kind == KUMI_SCHED_SEND;
    }
    s->unsent = ns;
    if (ns) unsent_add((int)ns);
    s->rhead = s->rtail = 0;
    s->rerr = MPI_SUCCESS;
    s->inflight = 0;
    if (s->uflag) memset(s->uflag, 0, s->n);
    push_ready(s, 0);
    advance(s);
    kumi_req_flush_ctl();                /* sends queued by callbacks go out now */
}

int kumi_sched_start(struct kumi_req *r)
{
    struct kumi_sched *s = r->ext;
    r->active = true;
    r->complete = false;
    r->pending = 1;
    kumi_status_empty(&r->status);
    kumi_sched_engine_started();
    if (kumi_sched_kmod_start(s)) return MPI_SUCCESS;     /* the KACC module runs it */
    run(s);
    kumi_sched_engine_ran();
    return MPI_SUCCESS;
}

static void sched_req_free(struct kumi_req *r)
{
    kumi_sched_destroy(r->ext);
    r->ext = NULL;
}

/* erroneous (MPI 4.1 sec. 3.8.4): say so, change nothing */
static int sched_req_cancel(struct kumi_req *r)
{
    return kumi_error(MPI_ERR_REQUEST, "MPI_Cancel: the request of a collective operation (%s) cannot "
                      "be cancelled", r->fname);
}

static const struct kumi_req_ops sched_req_ops = {
    .name = "collective", .start = kumi_sched_start, .cancel = sched_req_cancel, .free = sched_req_free,
};

void kumi_sched_register(void)
{
    kumi_req_register_kind(KUMI_REQ_COLL, &sched_req_ops);
}

int kumi_sched_issue(struct kumi_sched *s, int rc, bool persistent, const char *fname, MPI_Request *request)
{
    if (rc == MPI_SUCCESS) rc = kumi_sched_seal(s);
    struct kumi_req *r = NULL;
    if (rc == MPI_SUCCESS && !(r = kumi_req_new(KUMI_REQ_COLL, s->comm, s->comm->ctx + 1, fname, false)))
        rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory for a request", fname);
    if (rc != MPI_SUCCESS) {
        kumi_sched_destroy(s);
        return rc;
    }
    r->persistent = persistent;
    r->ext = s;
    s->req = r;
    *request = (MPI_Request)r;
    if (!persistent) kumi_sched_start(r);
    return MPI_SUCCESS;
}
