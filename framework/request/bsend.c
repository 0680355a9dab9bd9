/* Buffered sends (MPI 4.1 sec. 3.6): the buffers (attach, detach, flush)
 * and the space allocator behind MPI_Bsend / MPI_Ibsend / MPI_Bsend_init
 * (the MPI functions are in mpi/buffer.c).
 *
 * Three kinds of buffer, each a struct kumi_bbuf: the MPI process's
 * (MPI_Buffer_attach, static here), a session's (MPI_Session_attach_buffer,
 * in struct kumi_session) and a communicator's (MPI_Comm_attach_buffer, in
 * struct kumi_comm).  A buffered send started on communicator c uses c's
 * buffer if one is attached, else the buffer of the session c derives from
 * if one is attached, else the process's (kumi_bbuf_for).
 *
 * A buffered message occupies its packed size plus MPI_BSEND_OVERHEAD bytes
 * of the attached buffer until it has gone out (first fit): exactly what the
 * standard tells the user to provide (MPI_Pack_size + MPI_BSEND_OVERHEAD per
 * message), so a buffer of that size always holds the message.  The
 * bookkeeping (struct kumi_bseg) lives outside the buffer; the overhead is
 * kept as slack.  If it does not fit the call fails with MPI_ERR_BUFFER and
 * nothing changes.  MPI_BUFFER_AUTOMATIC attaches a buffer without limit:
 * messages are then copied into memory of their own.
 *
 * Every message records the buffer it went into (so a detach, or a message
 * still in flight when its buffer is detached and another attached, never
 * mixes buffers) and a sequence number: a flush waits for the messages
 * buffered before it (number <= the buffer's count at the call), detach for
 * all.  MPI_*_iflush requests (kind KUMI_REQ_BFLUSH) wait in the buffer's
 * list and complete when the last such message goes out.
 *
 * Nothing is left half done: attach checks everything before it changes the
 * buffer, detach changes it only when it returns success, a message that
 * fails to start gives its space back. */
#include "request/request.h"
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct kumi_bseg {
    size_t off, len;                 /* in the attached buffer (len includes overhead) */
    void *mem;                       /* automatic mode: the copy */
    uint64_t seq;                    /* the buffer's seq when it was buffered */
    struct kumi_bbuf *owner;
    struct kumi_bseg *next;
};

/* An iflush request waiting (r->ext). */
struct bflush {
    struct kumi_req *r;
    struct kumi_bbuf *b;
    uint64_t mark;                   /* complete once no message of seq <= mark remains */
    struct bflush *next;
};

enum { BB_NONE, BB_USER, BB_AUTO };

static struct kumi_bbuf process_buf;

struct kumi_bbuf *kumi_bbuf_process(void) { return &process_buf; }

struct kumi_bbuf *kumi_bbuf_for(struct kumi_comm *c)
{
    if (c && c->bbuf.state) return &c->bbuf;
    if (c && c->session && c->session->bbuf.state) return &c->session->bbuf;
    return &process_buf;
}

int kumi_bbuf_attached(const struct kumi_bbuf *b) { return b->state != BB_NONE; }

int kumi_bbuf_attach(struct kumi_bbuf *b, const char *fn, const char *what, void *buffer, MPI_Count size)
{
    if (b->state)
        return kumi_error(MPI_ERR_BUFFER, "%s: a buffer is already attached to %s (%s); detach it first", fn, what,
                          b->state == BB_AUTO ? "MPI_BUFFER_AUTOMATIC" : "user memory");
    if (buffer == MPI_BUFFER_AUTOMATIC) {    /* size is irrelevant */
        b->state = BB_AUTO;
        b->base = NULL;
        b->size = 0;
        return MPI_SUCCESS;
    }
    if (size < 0 || (uint64_t)size > SIZE_MAX)
        return kumi_error(MPI_ERR_ARG, "%s: argument size is %lld, must not be negative", fn, (long long)size);
    if (!buffer && size > 0)
        return kumi_error(MPI_ERR_BUFFER, "%s: argument buffer is NULL with size %lld", fn, (long long)size);
    b->base = buffer;
    b->size = (size_t)size;
    b->state = BB_USER;
    return MPI_SUCCESS;
}

struct seqwait { struct kumi_bbuf *b; uint64_t mark; };

/* Smallest seq among b's messages (UINT64_MAX: none). */
static uint64_t min_seq(const struct kumi_bbuf *b)
{
    uint64_t m = UINT64_MAX;
    for (const struct kumi_bseg *s = b->segs; s; s = s->next)
        if (s->seq < m) m = s->seq;
    return m;
}

static int flushed(void *arg)
{
    struct seqwait *w = arg;
    return w->b->nsegs == 0 || min_seq(w->b) > w->mark;
}

int kumi_bbuf_flush(struct kumi_bbuf *b)
{
    struct seqwait w = { b, b->seq };
    if (!flushed(&w)) kumi_progress_wait(flushed, &w);
    return MPI_SUCCESS;
}

int kumi_bbuf_detach(struct kumi_bbuf *b, const char *fn, void *buffer_addr, MPI_Count *size, MPI_Count max)
{
    if (!b->state) {                 /* none: as if a buffer of size 0 (MPI_Buffer_detach always did) */
        if (buffer_addr) *(void **)buffer_addr = NULL;
        if (size) *size = 0;
        return MPI_SUCCESS;
    }
    if (b->state == BB_USER && (uint64_t)b->size > (uint64_t)max)
        return kumi_error(MPI_ERR_VALUE_TOO_LARGE, "%s: the attached buffer of %zu bytes is larger than argument "
                          "size can hold (use the _c form); it stays attached", fn, b->size);
    /* every message in it goes out first (new ones may come meanwhile from
     * other threads: wait until none is left) */
    while (b->nsegs) {
        kumi_bbuf_flush(b);
        if (b->nsegs) kumi_progress(0);
    }
    if (b->state == BB_AUTO) {
        if (buffer_addr) *(void **)buffer_addr = MPI_BUFFER_AUTOMATIC;
        if (size) *size = 0;
    } else {
        if (buffer_addr) *(void **)buffer_addr = b->base;
        if (size) *size = (MPI_Count)b->size;
    }
    b->base = NULL;
    b->size = 0;
    b->state = BB_NONE;
    return MPI_SUCCESS;
}

/* ---- MPI_*_iflush requests */
static void bflush_unlink(struct bflush *f)
{
    struct bflush **pp = (struct bflush **)&f->b->flushes;
    for (; *pp; pp = &(*pp)->next)
        if (*pp == f) { *pp = f->next; break; }
}

static void bflush_free(struct kumi_req *r)
{
    struct bflush *f = r->ext;
    if (!f) return;
    bflush_unlink(f);
    free(f);
    r->ext = NULL;
}

static const struct kumi_req_ops bflush_ops = { .name = "buffer flush", .free = bflush_free };

/* Complete the iflush requests of b whose messages have all gone out. */
static void bflush_check(struct kumi_bbuf *b)
{
    if (!b->flushes) return;
    uint64_t m = min_seq(b);
    struct bflush *f = b->flushes, *next;
    for (; f; f = next) {
        next = f->next;
        if (f->mark >= m) continue;
        struct kumi_req *r = f->r;
        bflush_unlink(f);
        free(f);
        r->ext = NULL;
        r->pending = 0;
        kumi_req_check_complete(r);  /* may free r (MPI_Request_free) */
    }
}

int kumi_bbuf_iflush(struct kumi_bbuf *b, struct kumi_comm *comm, const char *fn, MPI_Request *request)
{
    kumi_req_register_kind(KUMI_REQ_BFLUSH, &bflush_ops);
    struct kumi_req *r = kumi_req_new(KUMI_REQ_BFLUSH, comm, comm ? comm->ctx : 0, fn, true);
    struct bflush *f = r ? calloc(1, sizeof *f) : NULL;
    if (!f) {
        if (r) kumi_req_free(r);
        return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    }
    f->r = r;
    f->b = b;
    f->mark = b->seq;
    r->ext = f;
    f->next = b->flushes;
    b->flushes = f;
    bflush_check(b);                 /* nothing to wait for: complete at once */
    *request = (MPI_Request)r;
    return MPI_SUCCESS;
}

/* ---- the process's buffer: MPI_Buffer_attach(_c) / MPI_Buffer_detach(_c); fn names the call */
int kumi_bsend_attach(const char *fn, void *buffer, MPI_Count size)
{
    int rc = kumi_bbuf_attach(&process_buf, fn, "the MPI process", buffer, size);
    return rc ? kumi_err_handle(NULL, rc) : MPI_SUCCESS;
}

int kumi_bsend_detach(const char *fn, void *buffer_addr, MPI_Count *size, MPI_Count max)
{
    int rc = kumi_bbuf_detach(&process_buf, fn, buffer_addr, size, max);
    return rc ? kumi_err_handle(NULL, rc) : MPI_SUCCESS;
}

/* ---- space for one message */
static struct kumi_bseg *alloc_seg(struct kumi_bbuf *b, size_t need)
{
    struct kumi_bseg *s, **pp = &b->segs, *n;
    size_t off = 0;
    for (s = b->segs; s; pp = &s->next, s = s->next) {
        if (s->off - off >= need) break;
        off = s->off + s->len;
    }
    if (!s && (off > b->size || b->size - off < need)) return NULL;
    n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->off = off;
    n->len = need;
    n->next = s;
    *pp = n;
    return n;
}

int kumi_bsend_prepare(struct kumi_req *r)
{
    size_t bytes = r->count * r->dt->size;
    size_t need = bytes + MPI_BSEND_OVERHEAD;
    struct kumi_bbuf *b = kumi_bbuf_for(r->comm);
    struct kumi_bseg *s;
    void *dst;

    if (b->state == BB_AUTO) {
        s = calloc(1, sizeof *s);
        if (!s || !(s->mem = malloc(bytes ? bytes : 1))) {
            free(s);
            return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory buffering %zu bytes", r->fname, bytes);
        }
        s->next = b->segs;           /* no offsets: any order */
        b->segs = s;
        dst = s->mem;
    } else {
        if (!b->state)
            return kumi_error(MPI_ERR_BUFFER, "%s: no buffer attached (MPI_Buffer_attach, MPI_Comm_attach_buffer, "
                              "MPI_Session_attach_buffer) for a message of %zu bytes", r->fname, bytes);
        s = alloc_seg(b, need);
        if (!s) {
            kumi_progress(0);                   /* maybe some went out meanwhile */
            s = alloc_seg(b, need);
        }
        if (!s)
            return kumi_error(MPI_ERR_BUFFER, "%s: message of %zu bytes (+%d overhead) does not fit in the "
                              "attached buffer of %zu bytes%s", r->fname, bytes, MPI_BSEND_OVERHEAD, b->size,
                              b->nsegs ? " beside the buffered messages not yet sent" : "");
        dst = b->base + s->off;
    }
    s->owner = b;
    s->seq = ++b->seq;
    b->nsegs++;
    if (bytes) kumi_dt_pack(r->dt, r->buf, r->count, dst);
    r->pack = dst;
    r->bsend_seg = s;
    return MPI_SUCCESS;
}

void kumi_bsend_release(struct kumi_req *r)
{
    struct kumi_bseg *s = r->bsend_seg, **pp;
    if (!s) return;
    struct kumi_bbuf *b = s->owner;
    r->bsend_seg = NULL;
    r->pack = NULL;
    for (pp = &b->segs; *pp; pp = &(*pp)->next)
        if (*pp == s) { *pp = s->next; break; }
    free(s->mem);
    free(s);
    b->nsegs--;
    bflush_check(b);
}
