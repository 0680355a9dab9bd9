/* Request layer: the life of a request (the cache of freed ones, the
 * constructors, the kinds' operations, completion and freeing, the link of a
 * buffered send's user request to its internal one).  Split from request.c
 * (protocols, upcalls, transports). */
#include "request/request.h"
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ------------------------------------------------------------ requests */
/* Freed requests are kept for reuse (every blocking call makes one): the
 * allocator's free and trim showed up as a fifth of a small message's time.
 * Serialized like everything here (the library lock at MPI_THREAD_MULTIPLE). */
/* 256: a window of 128 non-blocking calls reuses its requests (at 64, half of
 * them were calloc'ed and freed each time, as costly as the send itself). */
#define REQ_CACHE_MAX 256
static struct kumi_req *req_cache;
static int req_cached;

/* Clear n bytes (a multiple of 8, p 8-byte aligned) with plain vector stores,
 * four to a round: the compiler turns a memset of a few hundred bytes into
 * "rep stos", whose start-up alone cost a tenth of a small message's time. */
static inline __attribute__((always_inline)) void zero_bytes(void *p, size_t n)
{
    char *c = p;
    size_t i = 0;
#if defined(__SSE2__)
    const __m128i z = _mm_setzero_si128();
    for (; i + 64 <= n; i += 64) {
        _mm_storeu_si128((__m128i *)(void *)(c + i), z);
        _mm_storeu_si128((__m128i *)(void *)(c + i + 16), z);
        _mm_storeu_si128((__m128i *)(void *)(c + i + 32), z);
        _mm_storeu_si128((__m128i *)(void *)(c + i + 48), z);
        __asm__ volatile("");             /* keeps the loop a loop, not a memset */
    }
    for (; i + 16 <= n; i += 16) {
        _mm_storeu_si128((__m128i *)(void *)(c + i), z);
        __asm__ volatile("");
    }
#endif
    for (; i + 8 <= n; i += 8) {
        uint64_t zero = 0;
        memcpy(c + i, &zero, 8);
        __asm__ volatile("");
    }
}

_Static_assert(offsetof(struct kumi_req, op) % 8 == 0 && offsetof(struct kumi_req, bsend_seg) % 8 == 0 &&
               sizeof(struct kumi_req) % 8 == 0, "zero_bytes clears whole 8-byte words");

static inline __attribute__((always_inline)) struct kumi_req *req_alloc(int kind, struct kumi_comm *comm, int32_t ctx)
{
    struct kumi_req *r = req_cache;
    if (r) {
        req_cache = r->qnext;
        req_cached--;
        /* op and dop (a third of the request) are filled where they are used
         * (kumi_req_start_send, do_cts): clearing them here cost a tenth of a
         * small message's time */
        zero_bytes(r, offsetof(struct kumi_req, op));
        zero_bytes((char *)r + offsetof(struct kumi_req, bsend_seg), sizeof *r - offsetof(struct kumi_req, bsend_seg));
    } else if (!(r = calloc(1, sizeof *r))) {
        return NULL;
    }
    r->magic = KUMI_MAGIC_REQ;
    r->kind = (uint8_t)kind;
    r->comm = comm;
    if (comm) comm->refcount++;
    r->ctx = ctx;
    r->wpeer = -1;
    kumi_req_status_clear(&r->status);
    return r;
}

struct kumi_req *kumi_req_alloc(int kind, struct kumi_comm *comm, int32_t ctx)
{
    return req_alloc(kind, comm, ctx);
}

/* ------------------------------------------------------------ kinds */
static const struct kumi_req_ops *kind_ops[KUMI_REQ_KINDS];

void kumi_req_register_kind(int kind, const struct kumi_req_ops *ops)
{
    if (kind > KUMI_REQ_RECV && kind < KUMI_REQ_KINDS) kind_ops[kind] = ops;
}

const struct kumi_req_ops *kumi_req_kind_ops(const struct kumi_req *r)
{
    return r->kind < KUMI_REQ_KINDS ? kind_ops[r->kind] : NULL;
}

struct kumi_req *kumi_req_msg(int kind, struct kumi_comm *comm, int32_t ctx, const char *fname,
                              void *buf, size_t count, struct kumi_dt *dt, int peer, int tag)
{
    struct kumi_req *r = req_alloc(kind, comm, ctx);
    if (!r) return NULL;
    r->fname = fname;
    r->buf = buf;
    r->count = count;
    r->dt = dt;
    if (dt && !dt->predefined) kumi_dt_retain(dt);        /* (a predefined type has no count) */
    r->peer = peer;
    r->tag = tag;
    return r;
}

struct kumi_req *kumi_req_internal(int kind, struct kumi_comm *comm, int32_t ctx, const char *fname,
                                   void *buf, size_t count, struct kumi_dt *dt, int peer, int tag,
                                   void (*on_complete)(struct kumi_req *r), void *ext, int idx)
{
    struct kumi_req *r = kumi_req_msg(kind, comm, ctx, fname, buf, count, dt, peer, tag);
    if (!r) return NULL;
    r->internal = true;
    r->on_complete = on_complete;
    r->ext = ext;
    r->cb_idx = idx;
    return r;
}

struct kumi_req *kumi_req_new(int kind, struct kumi_comm *comm, int32_t ctx, const char *fname, bool active)
{
    struct kumi_req *r = kumi_req_alloc(kind, comm, ctx);
    if (!r) return NULL;
    r->fname = fname;
    r->peer = MPI_PROC_NULL;
    r->active = active;
    r->pending = active ? 1 : 0;
    return r;
}

void kumi_req_free(struct kumi_req *r)
{
    if (!r) return;
    if (__builtin_expect(r->kind > KUMI_REQ_RECV, 0)) {
        const struct kumi_req_ops *ops = kumi_req_kind_ops(r);
        if (ops && ops->free) ops->free(r);
    }
    if (r->kind == KUMI_REQ_RECV && r->pseq) kumi_match_unpost(r);
    /* a plain send or receive has none of what follows: one test for all */
    if (__builtin_expect(((uintptr_t)r->bsend_req | (uintptr_t)r->bsend_owner | (uintptr_t)r->bsend_seg |
                          (uintptr_t)r->pack | (uintptr_t)r->xbuf | (uintptr_t)r->accel_stage |
                          (uintptr_t)r->partner | (uintptr_t)r->owned) == 0, 1))
        goto release;
    kumi_req_bsend_unlink(r);
    if (r->bsend_owner) {                  /* an internal buffered send that failed to start */
        r->bsend_owner->bsend_req = NULL;
        r->bsend_owner = NULL;
    }
    if (r->bsend_seg) kumi_bsend_release(r);
    if (r->pack) { free(r->pack); r->pack = NULL; }
    if (r->xbuf) { free(r->xbuf); r->xbuf = NULL; }
    if (r->accel_stage) {
        kumi_req_accel_forget(r);
        kumi_stage_end(r->accel_stage, false);
        free(r->accel_stage);
        r->accel_stage = NULL;
    }
    if (r->partner) {
        r->partner->parent = NULL;
        kumi_req_free(r->partner);
    }
    if (r->owned) free(r->owned);
release:
    if (r->comm) {
        if (r->comm->refcount > 1) r->comm->refcount--;   /* (what kumi_comm_release does then) */
        else kumi_comm_release(r->comm);
    }
    if (r->dt && !r->dt->predefined) kumi_dt_release(r->dt);
    r->magic = KUMI_MAGIC_DEAD;
    if (req_cached < REQ_CACHE_MAX) {
        r->qnext = req_cache;
        req_cache = r;
        req_cached++;
    } else {
        free(r);
    }
}

void kumi_req_check_complete(struct kumi_req *r)
{
    if (r->complete || r->pending > 0) return;
    /* a plain send or receive (no copy, no partner, no owner): one test */
    if (__builtin_expect(kumi_req_plain(r), 1)) {
        r->complete = true;
        if (kumi_mt) kumi_progress_wake();
        if (r->user_freed) kumi_req_free(r);
        return;
    }
    if (r->partner && !r->partner->complete) return;   /* Isendrecv: the send is not done yet */
    if (r->xbuf) kumi_req_ext32_finish(r);
    if (r->kind == KUMI_REQ_RECV && r->pack && r->dt && r->dt->size) {
        size_t got = (size_t)kumi_status_bytes(&r->status);
        kumi_dt_unpack_range(r->dt, r->pack, r->count, 0, got, r->buf);
    }
    if (r->kind == KUMI_REQ_SEND && r->pack && !r->bsend_seg) { free(r->pack); r->pack = NULL; }
    if (r->bsend_seg) { kumi_bsend_release(r); r->pack = NULL; }
    if (r->partner && r->status.MPI_ERROR == MPI_SUCCESS) r->status.MPI_ERROR = r->partner->status.MPI_ERROR;
    r->complete = true;
    if (kumi_mt) kumi_progress_wake();
    if (r->parent) {                   /* Isendrecv's send: its receive may be complete now */
        kumi_req_check_complete(r->parent);
        return;                        /* freed with its parent */
    }
    if (r->on_complete) {              /* internal part of a partitioned channel */
        r->on_complete(r);
        return;
    }
    if (r->bsend_owner) {              /* a buffered send's copy: its user request may wait for it */
        struct kumi_req *o = r->bsend_owner;
        if (!o->complete && o->pending > 0) {       /* MPI_Cancel of o: now decided */
            if (kumi_status_cancelled(&r->status)) o->status.MPI_internal[2] = 1;
            o->pending = 0;
            kumi_req_check_complete(o);             /* may free o, and r with it */
        }
        return;                        /* o's: freed with it, or when o starts again */
    }
    if (r->user_freed) kumi_req_free(r);
}

void kumi_req_bsend_link(struct kumi_req *r, struct kumi_req *b)
{
    kumi_req_bsend_unlink(r);
    r->bsend_req = b;
    b->bsend_owner = r;
    b->user_freed = false;
}

void kumi_req_bsend_unlink(struct kumi_req *r)
{
    struct kumi_req *b = r->bsend_req;
    if (!b) return;
    r->bsend_req = NULL;
    b->bsend_owner = NULL;
    if (b->complete) kumi_req_free(b);
    else b->user_freed = true;         /* frees itself once sent */
}

void kumi_req_release(struct kumi_req *r)
{
    if (r->complete || !r->active) kumi_req_free(r);
    else r->user_freed = true;
}

